"""Would the candidate ranker gain from reading a candidate's neighbourhood, its paper, or its phrases? Features
computed without labels at query time, fitted on one QA set and scored on another (the cross-domain protocol),
beside a two-fold cross-validation across the test set's documents (in domain).

    python benchmarks/experiment_hrr_features.py \\
        --train ../shared/datasets/squad-v1.1-dev-a.json --train-store SQUAD_STORE --train-sample 2000 \\
        --test ../shared/datasets/covidqa-a.json --test-store COVID_STORE

Feature families added to the shipped ranker's features (`ALL_FEATURES`), one model each:
- `neighbours`: the previous and next mid chunk's `cover_3`, `bm25_best`, `dense_best` and reranker score (the
  answer one boundary away from the chunk the question's words land in);
- `document`: the rank of the candidate's document by BM25 of the question against whole documents (a paper
  prior);
- `position`: the candidate's place in its document (0 first, 1 last);
- `phrases`: the longest run of the question's words (stopwords kept) in one sentence, the share of its word
  pairs and triples found in one sentence, and their ranks among the candidates, plus whether that sentence is
  the candidate's first or last.
The stores must hold the sets' corpora (`granrag-mcp eval --squad FILE --store STORE` builds them). Nothing here
is used by the server; writes benchmarks/results/NAME.json unless --no-save.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path
from typing import Any

from _common import finish, git_revision, machine, offline_env

offline_env()

WORD = re.compile(r"\w+")
QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "when", "where", "why", "how"})
SIDES = ("prev", "next")
NEIGHBOUR_SIGNALS = ("cover_3", "bm25_best", "dense_best", "rerank_score")
PHRASES = ("phrase_run", "pairs_all", "triples_all")


def families(base: tuple[str, ...]) -> dict[str, list[str]]:
    neighbours = [f"{side}_{name}" for side in SIDES for name in NEIGHBOUR_SIGNALS]
    phrases = [*PHRASES, *(f"rank_{p}" for p in PHRASES), "phrase_first", "phrase_last"]
    return {
        "shipped features": list(base),
        "+ neighbours": [*base, *neighbours],
        "+ document": [*base, "document_rank"],
        "+ position": [*base, "position"],
        "+ phrases": [*base, *phrases],
        "+ all": [*base, *neighbours, "document_rank", "position", *phrases],
    }


def ranks_among(values: Any) -> Any:
    import numpy as np

    order = np.empty(len(values))
    order[np.argsort(-np.asarray(values), kind="stable")] = np.arange(len(values))
    return 1.0 / (1.0 + order)


def phrase_features(question: str, sentences: Any, stem: Any) -> dict[str, Any]:
    import numpy as np

    words = [w for w in stem(WORD.findall(question.lower())) if w not in QUESTION_WORDS]
    pairs, triples = set(zip(words, words[1:])), set(zip(words, words[1:], words[1:][1:]))
    n = len(sentences.bounds)
    out = {name: np.zeros(n) for name in (*PHRASES, "phrase_first", "phrase_last")}
    for c, (begin, end) in enumerate(sentences.bounds):
        best, at = 0, -1
        for j in range(begin, end):
            tokens = stem(WORD.findall(sentences.texts[j].lower()))
            run = [0] * (len(words) + 1)
            for token in tokens:  # the longest common run of words, by dynamic programming over the question
                run = [0] + [run[i] + 1 if token == w else 0 for i, w in enumerate(words)]
                if max(run) > best:
                    best, at = max(run), j - begin
            if pairs:
                out["pairs_all"][c] = max(out["pairs_all"][c], len(pairs & set(zip(tokens, tokens[1:]))) / len(pairs))
            if triples:
                found = len(triples & set(zip(tokens, tokens[1:], tokens[2:])))
                out["triples_all"][c] = max(out["triples_all"][c], found / len(triples))
        out["phrase_run"][c] = best / max(len(words), 1)
        out["phrase_first"][c] = float(at == 0)
        out["phrase_last"][c] = float(at == end - begin - 1)
    out.update({f"rank_{name}": ranks_among(out[name]) for name in PHRASES})
    return out


def collect(squad: Path, store: Path, sample: int | None) -> list[dict[str, Any]]:
    """Per question: the head of HRR's candidates (without the ranker) with every feature, and the labels."""
    import numpy as np
    import Stemmer

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.metrics import contains
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.retrieval.hrr import CANDIDATE_LEVEL, RESULT_LEVEL, hrr_candidates
    from granrag_mcp.retrieval.ranking.features import CandidateReads, inside_features, query_terms
    from granrag_mcp.retrieval.ranking.rank import RANKED_HEAD, hrr_table, reranker_scores
    from granrag_mcp.settings import Settings
    from granrag_mcp.store.lexical import LexicalIndex

    settings = Settings(store=store, candidate_ranker="off")
    embedder = CachedEmbedder(make_embedder(settings))
    view = Engine(settings, embedder=embedder).view()
    questions = sample_questions(load_squad(squad).questions, sample, 0)
    vectors = embedder.embed([q.question.strip() for q in questions])
    by_place = {(c.doc_id, c.seq): c for c in view.catalog.chunks_of_level(CANDIDATE_LEVEL)}
    parents = {c.id: c for c in view.catalog.chunks_of_level(RESULT_LEVEL)}
    length: dict[str, int] = {}
    for doc_id, seq in by_place:
        length[doc_id] = max(length.get(doc_id, 0), seq + 1)
    documents = [info.doc_id for info in view.catalog.documents()]
    whole = LexicalIndex.build(list(range(len(documents))), [view.catalog.document_text(d) or "" for d in documents])
    stemmer = Stemmer.Stemmer("english")
    rows = []
    for q, vector in zip(questions, vectors):
        _, candidates = hrr_candidates(view, q.question, ranked=False)
        head = candidates[:RANKED_HEAD]
        reads = CandidateReads(view)
        table = dict(hrr_table(view, q.question, vector, head, reads=reads)) if head else {}
        chunks = [hit.chunk for hit in head]
        sides = {side: [by_place.get((c.doc_id, c.seq + step)) for c in chunks] for side, step in zip(SIDES, (-1, 1))}
        around = list({c.id: c for side in sides.values() for c in side if c is not None}.values())
        if around:
            sentences = reads.sentences(around)
            scores = reranker_scores(view, q.question, vector, around, sentences)
            inside = inside_features(query_terms(view, q.question), vector, sentences, scores)
            at = {c.id: n for n, c in enumerate(around)}
            for side, found in sides.items():
                for name in NEIGHBOUR_SIGNALS:
                    table[f"{side}_{name}"] = np.array([inside[name][at[c.id]] if c else 0.0 for c in found])
        ordered = [documents[i] for i, _ in whole.search(q.question, len(documents))]
        place = {d: n for n, d in enumerate(ordered)}
        table["document_rank"] = np.array([1.0 / (1 + place.get(c.doc_id, len(documents))) for c in chunks])
        table["position"] = np.array([c.seq / max(length[c.doc_id] - 1, 1) for c in chunks])
        if head:
            table.update(phrase_features(q.question, reads.sentences(chunks), stemmer.stemWords))
        rows.append(
            {
                "document": q.doc_id,
                "table": table,
                "head": len(head),
                "mid_hit": [
                    contains((h.chunk.doc_id, h.chunk.start, h.chunk.end), q.doc_id, q.answer_start) for h in candidates
                ],
                "parent": [h.chunk.parent_id for h in candidates],
                "broad_hit": [
                    (p := parents.get(h.chunk.parent_id)) is not None
                    and contains((p.doc_id, p.start, p.end), q.doc_id, q.answer_start)
                    for h in candidates
                ],
            }
        )
    return rows


def matrix(row: dict[str, Any], features: list[str]) -> Any:
    import numpy as np

    return np.column_stack([np.asarray(row["table"].get(f, np.zeros(row["head"])), float) for f in features])


def figures(rows: list[dict[str, Any]], score: Any) -> dict[str, float]:
    """Broad and mid HR@5 / MRR@5 with each question's head ordered by `score(row)` (None: HRR's order)."""
    from granrag_mcp.evaluation.metrics import hit_rate, mrr
    from granrag_mcp.retrieval.ranking.features import order_by

    broad, mid = [], []
    for row in rows:
        order = list(range(len(row["mid_hit"])))
        if score is not None and row["head"]:
            order = order_by(score(row)) + order[row["head"] :]
        hits = [row["mid_hit"][i] for i in order]
        mid.append(hits.index(True) + 1 if True in hits else None)
        seen = list(dict.fromkeys((row["parent"][i], row["broad_hit"][i]) for i in order))
        broad.append(next((n for n, (_, hit) in enumerate(seen, 1) if hit), None))
    return {
        "broad MRR@5": round(mrr(broad, 5), 4),
        "broad HR@5": round(hit_rate(broad, 5), 4),
        "mid MRR@5": round(mrr(mid, 5), 4),
        "mid HR@5": round(hit_rate(mid, 5), 4),
    }


def fit(rows: list[dict[str, Any]], features: list[str]) -> Any:
    """A logistic regression (C = 1, standardised features) of mid_hit over the head rows; returns its scorer."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([matrix(r, features) for r in rows if r["head"]])
    y = np.concatenate([r["mid_hit"][: r["head"]] for r in rows if r["head"]])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    model = LogisticRegression(C=1.0, max_iter=3000).fit((x - mean) / scale, y)
    return lambda row: ((matrix(row, features) - mean) / scale) @ model.coef_[0] + model.intercept_[0]


def in_domain(rows: list[dict[str, Any]], features: list[str]) -> dict[str, float]:
    """Two folds across documents, seeds 0 and 1, as `fit_ranker.cross_validate`."""
    import numpy as np

    documents = sorted({r["document"] for r in rows})
    runs = []
    for seed in (0, 1):
        half = set(np.random.default_rng(seed).permutation(documents)[: len(documents) // 2].tolist())
        a = [r for r in rows if r["document"] in half]
        b = [r for r in rows if r["document"] not in half]
        on_b, on_a = figures(b, fit(a, features)), figures(a, fit(b, features))
        runs.append({k: (on_b[k] * len(b) + on_a[k] * len(a)) / len(rows) for k in on_b})
    return {k: round(float(np.mean([run[k] for run in runs])), 4) for k in runs[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, required=True, help="the SQuAD-format set the models are fitted on")
    parser.add_argument("--train-store", type=Path, required=True)
    parser.add_argument("--train-sample", type=int, help="a seeded sample of the training questions")
    parser.add_argument("--test", type=Path, required=True, help="the set they are scored on")
    parser.add_argument("--test-store", type=Path, required=True)
    parser.add_argument("--test-sample", type=int, help="a seeded sample of the test questions (default: all)")
    parser.add_argument("--name", default="hrr_features")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    from granrag_mcp.retrieval.ranking.features import ALL_FEATURES
    from granrag_mcp.retrieval.ranking.model import shipped_ranker

    began = time.perf_counter()
    train = collect(args.train, args.train_store, args.train_sample)
    test = collect(args.test, args.test_store, args.test_sample)
    shipped = shipped_ranker().hrr
    result: dict[str, Any] = {
        "experiment": "hrr_features",
        "train": f"{args.train.name} ({len(train)} questions)",
        "test": f"{args.test.name} ({len(test)} questions)",
        "HRR without the ranker": figures(test, None),
        "shipped ranker": figures(test, lambda row: shipped.score(row["table"])),
        "cross-domain (fitted on train, scored on test)": {},
        "in domain (two folds across the test set's documents)": {},
    }
    for name, features in families(ALL_FEATURES).items():
        result["cross-domain (fitted on train, scored on test)"][name] = figures(test, fit(train, features))
        result["in domain (two folds across the test set's documents)"][name] = in_domain(test, features)
    result.update(seconds=round(time.perf_counter() - began, 1), machine=machine(), revision=git_revision())
    finish(args.name, result, save=not args.no_save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
