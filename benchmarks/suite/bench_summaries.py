"""Extractive summaries (`granrag_mcp/retrieval/summaries.py`): how many of a span's key sentences the summary
holds within its budget, against lead sentences and random sentences at the same budget; and what summaries cost.

Key sentences come from the held questions, never from the system's output: a span's key sentences are the
sentences (the store's narrow chunks) that hold the start of the answer of one of its questions. Spans are whole
documents and, where a document has several paragraphs (SQuAD), each paragraph with questions. The budget is a
share of the span's tokens (the chunks' own counts); every method fills it the same way, taking sentences in its
own order while they fit. Coverage is the share of a span's distinct key sentences in its summary, averaged over
spans. `summary` is the technique as shipped (centrality, MMR and the lean to the span's opening), beside
centrality with MMR and without, `lead` (the first sentences) and `random` (the mean of five seeds);
`--lead-weights` adds the technique with other weights of the opening.

Cost: every document's and every community's summary made once, with the store's summaries cache empty, which is
what an index-time step would add to a run; `--index-json` (the output of `granrag-mcp index --json` for the same
store) puts it beside the run's stage times: the share of graph and summaries in the whole.

    python benchmarks/suite/bench_summaries.py --store STORE --squad SET.json [--index-json RUN.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks import _common  # noqa: E402

SHARES = (0.1, 0.2)
SEEDS = 5
COMMUNITY_BUDGET = 400


def _fill(order: list[int], tokens: np.ndarray, budget: int) -> set[int]:
    """The rows taken in `order` while their tokens fit the budget."""
    taken, left = set(), budget
    for row in order:
        if tokens[row] <= left:
            taken.add(row)
            left -= int(tokens[row])
    return taken


def _spans(text: str, doc_id: str, questions: list[Any]) -> list[tuple[str, int, int, list[int]]]:
    """(kind, start, end, answer starts) of the document and of each paragraph (blank-line separated) with a
    question, where the document has more than one."""
    starts = [q.answer_start for q in questions]
    out = [("document", 0, len(text), starts)]
    paragraphs, at = [], 0
    for part in text.split("\n\n"):
        paragraphs.append((at, at + len(part)))
        at += len(part) + 2
    if len(paragraphs) > 1:
        for begin, end in paragraphs:
            inside = [s for s in starts if begin <= s < end]
            if inside:
                out.append(("paragraph", begin, end, inside))
    return out


def coverage(view: Any, qa: Any, lead_weights: tuple[float, ...] = ()) -> dict[str, Any]:
    from granrag_mcp.levels import FINEST
    from granrag_mcp.retrieval.summaries import BALANCE, select, span_prior

    by_doc: dict[str, list[Any]] = {}
    for q in qa.questions:
        by_doc.setdefault(q.doc_id, []).append(q)
    methods = (
        "summary",
        "centrality_mmr",
        "centrality_only",
        *(f"centrality_lead_{w}" for w in lead_weights),
        "lead",
        "random",
    )
    scores: dict[str, dict[str, dict[str, list[float]]]] = {}
    counts: dict[str, int] = {}
    for doc_id, questions in sorted(by_doc.items()):
        positions = view.catalog.positions(doc_id, FINEST)
        if not positions:
            continue
        seen, rows = set(), []
        for chunk_id, start, end in positions:
            if (start, end) not in seen:
                seen.add((start, end))
                rows.append((start, end, chunk_id))
        rows.sort()
        ids = np.array([r[2] for r in rows], dtype=np.int64)
        chunks = view.catalog.chunks(ids.tolist())
        all_tokens = np.maximum(np.array([chunks[int(i)].token_count for i in ids]), 1)
        all_vectors = view.snapshot.vectors[FINEST].reconstruct(ids).astype(np.float32)
        starts = np.array([r[0] for r in rows])
        ends = np.array([r[1] for r in rows])
        for kind, begin, stop, answers in _spans(qa.documents[doc_id], doc_id, questions):
            inside = np.flatnonzero((starts >= begin) & (starts < stop))
            if len(inside) < 2:
                continue
            key = {int(r) for a in answers for r in inside if starts[r] <= a < max(ends[r], starts[r] + 1)}
            if not key:
                continue
            counts[kind] = counts.get(kind, 0) + 1
            vectors, tokens = all_vectors[inside], all_tokens[inside]
            for share in SHARES:
                budget = max(int(share * tokens.sum()), 1)
                chosen = {
                    "summary": _fill(select(vectors, tokens, budget, prior=span_prior(len(inside))), tokens, budget),
                    "centrality_mmr": _fill(select(vectors, tokens, budget, balance=BALANCE), tokens, budget),
                    "centrality_only": _fill(select(vectors, tokens, budget, balance=1.0), tokens, budget),
                    "lead": _fill(list(range(len(inside))), tokens, budget),
                }
                for weight in lead_weights:
                    order = select(vectors, tokens, budget, prior=span_prior(len(inside), weight))
                    chosen[f"centrality_lead_{weight}"] = _fill(order, tokens, budget)
                table = scores.setdefault(kind, {}).setdefault(f"{share:.0%}", {m: [] for m in methods})
                for method, taken in chosen.items():
                    table[method].append(len({int(inside[r]) for r in taken} & key) / len(key))
                random_cover = []
                for seed in range(SEEDS):
                    order = list(range(len(inside)))
                    random.Random(seed).shuffle(order)
                    taken = _fill(order, tokens, budget)
                    random_cover.append(len({int(inside[r]) for r in taken} & key) / len(key))
                table["random"].append(float(np.mean(random_cover)))
    return {
        kind: {
            "spans": counts[kind],
            **{
                share: {method: round(float(np.mean(values)), 3) for method, values in table.items()}
                for share, table in shares.items()
            },
        }
        for kind, shares in scores.items()
    }


def cost(view: Any, index_json: Path | None) -> dict[str, Any]:
    from granrag_mcp.retrieval import graph as techniques
    from granrag_mcp.retrieval import summaries

    documents = [d.doc_id for d in view.catalog.documents(None, 1_000_000, 0)]
    seconds = []
    for doc_id in documents:
        start = time.perf_counter()
        summaries.document_summary(view, doc_id, 400)
        seconds.append(time.perf_counter() - start)
    out: dict[str, Any] = {
        "documents": len(documents),
        "document_summaries_s": round(sum(seconds), 3),
        "document_summary_ms": _common.latency_summary(seconds),
    }
    try:
        graph, _ = techniques.graph_of(view)
    except Exception:  # a store without a graph has no communities to summarize
        graph = None
    if graph is not None:
        seconds = []
        for cluster in range(graph.n_clusters):
            start = time.perf_counter()
            summaries.community_summary(view, graph, cluster, COMMUNITY_BUDGET)
            seconds.append(time.perf_counter() - start)
        out["communities"] = graph.n_clusters
        out["community_summaries_s"] = round(sum(seconds), 3)
        out["community_summary_ms"] = _common.latency_summary(seconds)
    if index_json is not None:
        stages = json.loads(index_json.read_text())["seconds"]
        total = sum(stages.values())
        summary_s = out["document_summaries_s"] + out.get("community_summaries_s", 0.0)
        out["index_run_s"] = round(total, 1)
        out["graph_s"] = round(stages.get("graph", 0.0), 1)
        out["graph_share"] = round(stages.get("graph", 0.0) / total, 3)
        # as if the summaries were made at index time: the step added to the run
        out["graph_and_summaries_share_if_offline"] = round(
            (stages.get("graph", 0.0) + summary_s) / (total + summary_s), 3
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True, help="an index of the QA set's documents")
    parser.add_argument("--squad", type=Path, required=True, help="the QA set (SQuAD form) the store holds")
    parser.add_argument("--index-json", type=Path, help="`granrag-mcp index --json` output of the same store")
    parser.add_argument(
        "--lead-weights",
        type=float,
        nargs="*",
        default=[],
        help="also centrality plus this weight times the sentence's place (1 first, 0 last) in its span",
    )
    _common.result_arguments(parser, "summaries")
    args = parser.parse_args()
    _common.offline_env()
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.qa import load_squad
    from granrag_mcp.settings import Settings

    load_before = _common.load_average()
    engine = Engine(Settings(store=args.store), load_reranker_now=False)
    view = engine.view()
    result = {
        "set": args.squad.name,
        "store_chunks": dict(engine.live.snapshot().manifest.counts),
        "coverage": coverage(view, load_squad(args.squad), tuple(args.lead_weights)),
        "cost": cost(view, args.index_json),
        "load": [load_before, _common.load_average()],
        "machine": _common.machine(),
    }
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
