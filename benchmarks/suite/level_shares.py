"""Each single-level fusion's dense share swept on a set's questions: HR@5, MRR@5 and MRR@10 of `search_narrow` /
`search_broad` at every share of `indexing/adapt.py` SHARES, at the fixed RRF constant and depths (a view without the
store's adaptation), as a reference's level shares are tuned (`granrag_mcp/retrieval/ranking/reference*.json`).

    python benchmarks/suite/level_shares.py --squad FILE --store STORE [--levels narrow,mid,broad] [--questions N]

The store must hold the set's corpus (`granrag-mcp eval --squad FILE --store STORE` builds it) and is searched with
its own model. A share tuned here on a set's questions is in-sample for that set.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402

DEPTH = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.qa_arguments(parser, questions=None)
    _common.result_arguments(parser, "level_shares")
    parser.add_argument("--levels", default="narrow,mid,broad", help="levels to sweep, comma-separated")
    args = parser.parse_args()

    from granrag_mcp.evaluation.metrics import first_hit_rank, summarise
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.indexing.adapt import SHARES, share_weights
    from granrag_mcp.levels import list_name
    from granrag_mcp.retrieval.level_search import search_level
    from granrag_mcp.retrieval.view import View

    engine, embedder, _ = _common.warm_engine(args)
    questions = sample_questions(load_squad(args.squad).questions, args.questions, 0)
    stored = engine.view()
    plain = View(stored.snapshot, embedder, stored.reranker)  # the fixed constant and depths: no adaptation
    sweep: dict[str, dict[str, dict[str, float]]] = {}
    for level in [lv for lv in args.levels.split(",") if lv]:
        names = (list_name(level, "dense"), list_name(level, "lexical"))
        for share in SHARES:
            weights = share_weights(names, share)
            ranks = []
            for question in questions:
                hits = search_level(plain, question.question.strip(), level, DEPTH, weights=weights)
                spans = [(h.chunk.doc_id, h.chunk.start, h.chunk.end) for h in hits][:DEPTH]
                ranks.append(first_hit_rank(spans, question.doc_id, question.answer_start))
            found = {m: round(v, 4) for m, v in summarise(ranks, (5, 10)).items() if m != "HR@10"}
            sweep.setdefault(level, {})[str(share)] = found
            print(f"{level:7s} share {share:.1f}  {found}", file=sys.stderr)
    best = {level: max(by_share, key=lambda s: by_share[s]["MRR@10"]) for level, by_share in sweep.items()}
    result = {
        "machine": _common.machine(),
        "set": args.squad.name,
        "model": stored.snapshot.manifest.identity.model,
        "questions": len(questions),
        "sweep": sweep,
        "best_share_by_mrr10": best,
    }
    _common.conclude(args, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
