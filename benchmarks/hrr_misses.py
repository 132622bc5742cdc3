"""Where hrr_search misses on a QA set, and how much of it a ranking of the same candidates could win back.

    python benchmarks/hrr_misses.py --squad ../shared/datasets/covidqa-a.json --store STORE --name hrr_misses_covid_a

For every question it runs HRR's candidate stage as `hrr_search` does (the store's candidate ranker included) and
reports: candidate recall (the share of questions whose answer's mid chunk is among the first 5, 10, 20, 40
candidates, or anywhere), the misses at 5 by what the first five held instead (the neighbouring chunk, another
chunk of the answer's paper, only other papers), how many answers start where two mid chunks overlap, the broad
and mid HR@5 / MRR@5 with the candidates of the answer's own document only (a ceiling for any document prior), how
often the answer's document comes first by HRR's first candidate and by BM25 of the question against whole
documents (a document prior without labels), and broad MRR@5 by the question's specificity (how many documents
hold its rarest term). The store must hold the QA set's corpus (`granrag-mcp eval --squad FILE --store STORE`
builds it). Writes benchmarks/results/NAME.json unless --no-save.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import finish, git_revision, machine, offline_env

offline_env()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--sample", type=int, help="a seeded sample of this many questions (default: all)")
    parser.add_argument("--name", default="hrr_misses", help="the result file's name under benchmarks/results")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.metrics import hit_rate, mrr
    from granrag_mcp.evaluation.misses import (
        Place,
        answer_places,
        by_specificity,
        candidate_recall,
        miss_table,
        parent_rank,
        rank_of,
        rarest_document_count,
    )
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.retrieval.hrr import CANDIDATE_LEVEL, RESULT_LEVEL, hrr_candidates
    from granrag_mcp.settings import Settings
    from granrag_mcp.store.lexical import LexicalIndex
    from granrag_mcp.text.analysis import analyse

    began = time.perf_counter()
    settings = Settings(store=args.store)
    embedder = CachedEmbedder(make_embedder(settings))
    view = Engine(settings, embedder=embedder).view()
    questions = sample_questions(load_squad(args.squad).questions, args.sample, 0)
    embedder.embed([q.question.strip() for q in questions])
    candidates_level = view.catalog.chunks_of_level(CANDIDATE_LEVEL)
    parents = {c.id: c for c in view.catalog.chunks_of_level(RESULT_LEVEL)}
    texts = {info.doc_id: view.catalog.document_text(info.doc_id) or "" for info in view.catalog.documents()}
    documents = {doc_id: frozenset(analyse(text)) for doc_id, text in texts.items()}
    names = list(texts)
    whole = LexicalIndex.build(list(range(len(names))), list(texts.values()))  # BM25 of whole documents

    rankings, answers, mid_ranks, broad_ranks, own_mid, own_broad, specificity = [], [], [], [], [], [], []
    first_document = {"hrr_search": 0, "BM25 over whole documents": 0}
    for q in questions:
        _, hits = hrr_candidates(view, q.question)
        chunks = [hit.chunk for hit in hits]
        answer = answer_places(candidates_level, q.doc_id, q.answer_start)
        ranking = [Place(c.doc_id, c.seq) for c in chunks]
        rankings.append(ranking)
        answers.append(answer)
        mid_ranks.append(rank_of(ranking, answer))
        own = [c for c in chunks if c.doc_id == q.doc_id]
        own_mid.append(rank_of([Place(c.doc_id, c.seq) for c in own], answer))
        broad_ranks.append(parent_rank(chunks, parents, q.doc_id, q.answer_start))
        own_broad.append(parent_rank(own, parents, q.doc_id, q.answer_start))
        specificity.append(rarest_document_count(analyse(q.question), documents))
        first_document["hrr_search"] += bool(chunks) and chunks[0].doc_id == q.doc_id
        best = whole.search(q.question, 1)
        first_document["BM25 over whole documents"] += bool(best) and names[best[0][0]] == q.doc_id

    def figures(ranks: list) -> dict[str, float]:
        return {"HR@5": round(hit_rate(ranks, 5), 4), "MRR@5": round(mrr(ranks, 5), 4)}

    result = {
        "benchmark": "hrr_misses",
        "qa_set": args.squad.name,
        "questions": len(questions),
        "sample": args.sample,
        "ranker": view.candidate_ranker.name if view.candidate_ranker else None,
        "hrr": {"broad": figures(broad_ranks), "mid": figures(mid_ranks)},
        "candidate_recall": {k: round(v, 4) for k, v in candidate_recall(mid_ranks).items()},
        "misses_at_5": miss_table(rankings, answers, 5),
        "answers_in_overlapping_chunks": sum(len(answer) > 1 for answer in answers),
        "answer_document_only": {"broad": figures(own_broad), "mid": figures(own_mid)},
        "answer_document_first": {name: round(n / len(questions), 4) for name, n in first_document.items()},
        "broad_by_specificity": {
            label: {key: round(value, 4) for key, value in row.items()}
            for label, row in by_specificity(broad_ranks, specificity, 5).items()
        },
        "seconds": round(time.perf_counter() - began, 1),
        "machine": machine(),
        "revision": git_revision(),
    }
    finish(args.name, result, save=not args.no_save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
