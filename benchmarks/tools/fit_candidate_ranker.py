"""Collect HRR's candidates and their features on a SQuAD file once (cached), then cross-validate and fit the
candidate ranker across articles.

    python benchmarks/tools/fit_candidate_ranker.py --squad ../shared/datasets/squad-v1.1-dev-a.json \
        --store /tmp/eval-store --cache /tmp/ranker-features.npz [--write granrag_mcp/retrieval/candidate_ranker.json]

The store must already hold the SQuAD corpus (`granrag-mcp eval --squad FILE --store DIR` builds it). A store
built with token vectors (GRANRAG_TOKEN_VECTORS=1) adds the MaxSim features; the figures then also show the
models without them, on the same questions. `--gbm` adds a gradient-boosted ranker (scikit-learn's
HistGradientBoostingClassifier) to the same cross-validation. `--fixed-reliance` marks the written ranker as one
whose embedding coefficients a store does not rescale (`CandidateRanker.adapts_reliance`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="features file (.npz), made if missing")
    parser.add_argument("--write", type=Path, help="write the ranker fitted on every question here")
    parser.add_argument("--name", default="linear-squad-a-v2")
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation of the logistic regression")
    parser.add_argument("--out", type=Path, help="write the cross-validation figures (JSON) here")
    parser.add_argument("--gbm", action="store_true", help="also cross-validate a gradient-boosted ranker")
    parser.add_argument("--questions", type=int, help="every k-th question, about this many (default all)")
    parser.add_argument(
        "--fixed-reliance",
        action="store_true",
        help="the written ranker keeps its embedding coefficients on every store (no adapted reliance factor)",
    )
    args = parser.parse_args()
    _common.offline_env()

    from granrag_mcp.evaluation.fit_ranker import Dataset, collect, cross_validate, fit_ranker
    from granrag_mcp.evaluation.qa import load_squad
    from granrag_mcp.retrieval.ranking.features import ALL_FEATURES, INSIDE_FEATURES
    from granrag_mcp.settings import Settings

    qa = load_squad(args.squad)
    questions = qa.questions
    if args.questions:  # spread over the file, so that every article keeps questions for the folds
        questions = questions[:: max(1, len(questions) // args.questions)]
    if args.cache.exists():
        data = Dataset.load(args.cache)
    else:
        from granrag_mcp.embedding.factory import make_embedder
        from granrag_mcp.engine import Engine
        from granrag_mcp.evaluation.strategies import CachedEmbedder

        settings = Settings(store=args.store, candidate_ranker="off")  # collecting needs no ranker
        embedder = CachedEmbedder(make_embedder(settings))
        view = Engine(settings, embedder=embedder).view()
        began = time.perf_counter()
        vectors = embedder.embed([q.question.strip() for q in questions])
        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - last[0] > 10:
                last[0] = time.perf_counter()
                print(f"{done}/{total} questions, {last[0] - began:.0f} s", file=sys.stderr, flush=True)

        data = collect(view, questions, vectors, progress)
        data.save(args.cache)
        print(f"collected in {time.perf_counter() - began:.0f} s", file=sys.stderr)
    hrr_features, chunk_features = data.feature_sets()
    figures = {
        "hrr": cross_validate(data, hrr_features, c=args.c),
        "chunks": cross_validate(data, chunk_features, c=args.c),
    }
    if data.has_tokens:
        figures["hrr without MaxSim"] = cross_validate(data, ALL_FEATURES, c=args.c)
        figures["chunks without MaxSim"] = cross_validate(data, INSIDE_FEATURES, c=args.c)
    if args.gbm:
        began = time.perf_counter()
        figures["hrr gradient-boosted"] = cross_validate(data, hrr_features, fit=fit_boosted)
        figures["hrr gradient-boosted"]["seconds"] = round(time.perf_counter() - began, 1)
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    if args.write:
        ranker = fit_ranker(
            data,
            args.name,
            f"SQuAD v1.1 dev, {args.squad.name} ({len(questions)} questions, "
            f"{len(set(data.groups.tolist()))} articles)",
            c=args.c,
        )
        if args.fixed_reliance:
            ranker = dataclasses.replace(ranker, adapts_reliance=False)
        ranker.write(args.write)
    return 0


class Boosted:
    """A gradient-boosted classifier behind the linear model's interface (`features`, `score`)."""

    def __init__(self, features, model) -> None:
        self.features = tuple(features)
        self.model = model

    def score(self, table):
        import numpy as np

        x = np.column_stack([np.asarray(table[name], dtype=np.float64) for name in self.features])
        return self.model.decision_function(x)


def fit_boosted(data, rows, features):
    """HistGradientBoostingClassifier on the head rows, as `fit_model` fits the logistic regression."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from granrag_mcp.retrieval.candidate_ranking import RANKED_HEAD
    from granrag_mcp.retrieval.ranking.features import KNOWN_FEATURES

    keep = rows & (data.position < RANKED_HEAD)
    x = data.features[keep][:, [KNOWN_FEATURES.index(f) for f in features]]
    model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, random_state=0)
    return Boosted(features, model.fit(x, data.mid_hit[keep]))


if __name__ == "__main__":
    raise SystemExit(main())
