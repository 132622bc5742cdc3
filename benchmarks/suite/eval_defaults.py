"""Each default search against its own parts: search_narrow (sentences and mid), search_fused (mid) and hrr_search
with the store's adapted weights, against every list they fuse searched alone, by HR@5 and MRR@5. A default that
ranks below one of its own lists loses an agent what the list alone would have found.

    python benchmarks/suite/eval_defaults.py --squad FILE --store STORE [--within] [--forms half,short] [--questions N]

The store must hold the set's corpus (`granrag-mcp eval --squad FILE --store STORE` builds it). --within asks
every question inside its own document (a `doc_ids` filter), as an agent does who has chosen the document.
--forms adds, for each pseudo-query form named (`indexing/adapt.py` QUERY_FORMS), the defaults of an adaptation
made now by this checkout's code with that form, on the same store (the store's own adaptation is the first arm),
so all are measured in one run; and how well the form's pseudo-queries order each fusion's lists as the real
questions do (`agreement`: the share of list pairs in the same order, and whether the best list is the same). A question hits when a returned chunk holds the
answer's first character (`granrag_mcp.evaluation.metrics`); hrr_search is scored on the broad passages it returns.

`versus` sets each default beside every list of its tool, question by question: the mean gap in HR@5 and in
reciprocal rank (MRR@5) with its paired standard error, and a two-sided sign test over the questions where the two
differ; `below` names the defaults that fall below a list of their own level (`indexing/adapt.py` own_level_lists)
on either measure by more than `NOISE_Z` paired standard errors with a sign test under `SIGN_P`, so a gap within
the questions' noise is not called a loss.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402

K = 5
NOISE_Z = 2.0
"""Paired standard errors a default must fall below a list by before `below` names it (about a 95 % interval)."""
SIGN_P = 0.05
"""The sign test's p a loss must also fall under before `below` names it."""


def alone(names: tuple[str, ...], name: str) -> dict[str, float]:
    return {other: 1.0 if other == name else 0.0 for other in names}


def arms(view) -> dict[str, Callable[[object, str], list]]:
    """Every default and every list it fuses alone, by name ("tool @ level: list")."""
    from granrag_mcp.levels import FINEST, LEVELS, list_name
    from granrag_mcp.retrieval.hrr import HRR_LISTS, RESULT_LEVEL, hrr_search
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.rrf import rrf_weights, search_rrf

    out: dict[str, Callable] = {}
    for level in (FINEST, "mid", RESULT_LEVEL):
        if level not in LEVELS:
            continue
        pair = (list_name(level, "dense"), list_name(level, "lexical"))
        out[f"search_level @ {level}: default"] = lambda v, q, lv=level: search_level(v, q, lv, 10, lexical=None)
        for name in pair:
            out[f"search_level @ {level}: {name}"] = lambda v, q, lv=level, w=alone(pair, name): search_level(
                v, q, lv, 10, weights=w
            )
    fused = tuple(rrf_weights(view, level="mid"))
    out["search_fused @ mid: default"] = lambda v, q: search_rrf(v, q, 10)
    for name in fused:
        out[f"search_fused @ mid: {name}"] = lambda v, q, w=alone(fused, name): search_rrf(v, q, 10, weights=w)
    out[f"hrr_search @ {RESULT_LEVEL}: default"] = lambda v, q: hrr_search(v, q, K).hits
    for name in HRR_LISTS:
        out[f"hrr_search @ {RESULT_LEVEL}: {name}"] = lambda v, q, w=alone(HRR_LISTS, name): (
            hrr_search(v, q, K, weights=w).hits
        )
    return out


TOOL_OF_FUSION = {
    "level_narrow": "search_level @ narrow",
    "level_mid": "search_level @ mid",
    "level_broad": "search_level @ broad",
    "rrf": "search_fused @ mid",
    "hrr": "hrr_search @ broad",
}


def agreement(measured: dict, table: dict) -> dict:
    """Per fusion: the share of its lists' pairs the pseudo-queries order as the real questions' MRR@5 does, the
    best list by each, and the real MRR@5 lost by taking the pseudo-queries' best."""
    out = {}
    for fusion, tool in TOOL_OF_FUSION.items():
        pseudo = measured.get(fusion, {}).get("alone_mrr")
        real = {name: table.get(f"{tool}: {name}", {}).get(f"MRR@{K}") for name in pseudo or {}}
        if not pseudo or any(value is None for value in real.values()):
            continue
        names = sorted(pseudo)
        pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if real[a] != real[b]]
        same = sum(1 for a, b in pairs if (pseudo[a] - pseudo[b]) * (real[a] - real[b]) > 0)
        pseudo_best, real_best = max(names, key=pseudo.get), max(names, key=real.get)
        out[fusion] = {
            "pairs_in_order": round(same / len(pairs), 3) if pairs else 1.0,
            "pseudo_best": pseudo_best,
            "real_best": real_best,
            "regret_mrr": round(real[real_best] - real[pseudo_best], 4),
        }
    return out


def paired(default: list[int | None], other: list[int | None]) -> dict[str, float | int]:
    """The default's mean gain over another arm on the same questions in HR@K and in reciprocal rank at K, each with
    its paired standard error and a two-sided sign test over the questions where the two differ on it."""
    import numpy as np
    from scipy.stats import binomtest

    from granrag_mcp.indexing.fusion_shape import paired_noise

    def scores(ranks: list[int | None]) -> dict[str, np.ndarray]:
        kept = [r if r is not None and r <= K else None for r in ranks]
        return {
            "hr": np.array([0.0 if r is None else 1.0 for r in kept]),
            "mrr": np.array([0.0 if r is None else 1.0 / r for r in kept]),
        }

    mine, theirs = scores(default), scores(other)
    out: dict[str, float | int] = {}
    for measure in ("hr", "mrr"):
        gain = mine[measure] - theirs[measure]
        wins, losses = int((gain > 0).sum()), int((gain < 0).sum())
        out[f"{measure}{K}_gain"] = round(float(gain.mean()), 4)
        out[f"{measure}{K}_se"] = round(paired_noise(gain), 4)
        out[f"{measure}{K}_wins"], out[f"{measure}{K}_losses"] = wins, losses
        out[f"{measure}{K}_sign_p"] = round(float(binomtest(wins, wins + losses).pvalue), 4) if wins + losses else 1.0
    return out


def beyond_noise(gap: dict, measure: str) -> bool:
    """A loss on `measure` both tests call more than noise: below by more than `NOISE_Z` paired standard errors, and
    the sign test's p under `SIGN_P` (the standard error alone misjudges gaps made by a handful of questions)."""
    return gap[f"{measure}{K}_gain"] < -NOISE_Z * gap[f"{measure}{K}_se"] and gap[f"{measure}{K}_sign_p"] < SIGN_P


def versus(ranks: dict[str, list[int | None]]) -> tuple[dict[str, dict], list[str]]:
    """Every default (of the store's adaptation and of each form's) against each list of its tool (a form's also
    against the store's own default), and which of them fall below a list of their own level beyond the noise."""
    from granrag_mcp.indexing.adapt import own_level_lists

    fusion_of = {tool: fusion for fusion, tool in TOOL_OF_FUSION.items()}
    out: dict[str, dict] = {}
    below: list[str] = []
    for name, found in ranks.items():
        tool, _, arm = name.partition(": ")
        if not arm.startswith("default"):
            continue
        lists = {
            n.partition(": ")[2]: r for n, r in ranks.items() if n.startswith(tool + ": ") and ": default" not in n
        }
        own = own_level_lists(fusion_of.get(tool, ""), tuple(lists))
        out[name] = {other: {**paired(found, r), "own_level": other in own} for other, r in lists.items()}
        if arm != "default":  # an adaptation made now, beside the store's own on the same questions
            out[name]["stored default"] = {**paired(found, ranks[f"{tool}: default"]), "own_level": False}
        for other, gap in out[name].items():
            if gap["own_level"] and any(beyond_noise(gap, measure) for measure in ("hr", "mrr")):
                below.append(f"{name} < {other}")
    return out, below


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.qa_arguments(parser, questions=None)
    _common.result_arguments(parser, "defaults")
    parser.add_argument("--within", action="store_true", help="ask each question inside its own document")
    parser.add_argument("--forms", default="", help="pseudo-query forms to adapt with now, comma-separated")
    args = parser.parse_args()

    from granrag_mcp.evaluation.metrics import first_hit_rank, summarise
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.indexing.adapt import adapt
    from granrag_mcp.retrieval.filters import DocFilter
    from granrag_mcp.retrieval.view import View

    engine, embedder, _ = _common.warm_engine(args, reranker="embedding")
    questions = sample_questions(load_squad(args.squad).questions, args.questions, 0)
    stored = engine.view()
    views = {"stored": stored}
    measured = {}
    for form in [f for f in args.forms.split(",") if f]:
        snapshot = stored.snapshot
        plain = View(
            snapshot,
            embedder,
            stored.reranker,
            candidate_ranker=engine.candidate_rankers.for_snapshot(snapshot, use_adaptation=False),
        )
        adaptation = adapt(plain, form=form)
        measured[form] = adaptation.measured
        views[form] = View(
            snapshot,
            embedder,
            stored.reranker,
            candidate_ranker=engine.candidate_rankers.for_snapshot(snapshot, adaptation=adaptation),
            adaptation=adaptation,
        )
    searches = arms(stored)
    ranks: dict[str, list[int | None]] = {}
    for n, question in enumerate(questions):
        text = question.question.strip()
        for arm, view in _common.in_turn(list(views.items()), n):
            if args.within:
                view = view.filtered(DocFilter.of([question.doc_id]))
            for name, search in searches.items():
                if arm != "stored" and not name.endswith("default"):
                    continue  # a list alone does not depend on the adaptation
                spans = [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in search(view, text)][:K]
                key = name if arm == "stored" else f"{name} ({arm})"
                ranks.setdefault(key, []).append(first_hit_rank(spans, question.doc_id, question.answer_start))
    table = {name: {m: round(v, 4) for m, v in summarise(r, (K,)).items()} for name, r in ranks.items()}
    result = {
        "machine": _common.machine(),
        "set": args.squad.name,
        "questions": len(questions),
        "within_document": args.within,
        "store_counts": dict(stored.snapshot.manifest.counts),
        "table": table,
        "adapted_now": measured,
        "agreement": {form: agreement(found, table) for form, found in measured.items()},
    }
    result["versus"], result["below"] = versus(ranks)
    for name, row in table.items():
        print(f"{name:55s} HR@{K} {row[f'HR@{K}']:.3f}  MRR@{K} {row[f'MRR@{K}']:.3f}", file=sys.stderr)
    print(f"below an own-level list beyond the noise: {result['below'] or 'none'}", file=sys.stderr)
    _common.conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
