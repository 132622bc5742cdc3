"""Would a label-free change to HRR's first stage give hrr_search better candidates? Two are tried against HRR as
shipped (the setting `off`, always run first), each through HRR's whole candidate stage with the store's ranker:

- dense pseudo-relevance feedback (Rocchio in vector space, query-time only): the question's vector moved toward
  the stored vectors of the first m chunks of a list, q' = normalise(q + alpha * their mean). `--sources`: `mid`
  (the mid BM25 list, mid vectors), `sentence` (the sentence BM25 list, sentence vectors), `first` (the first m mids
  of HRR's own first fusion, run with q); `--alphas` and `--depths` (m) give the grid;
- a query-side linear adapter fitted on the store's own pseudo-queries (`retrieval/ranking/adapt.py` makes them; a
  fifth held out): a map W from a pseudo-query's vector to its target chunk's stored vector, q' = normalise(q W),
  by ridge regression shrunk toward identity or by in-batch-negative softmax from identity (`--adapter-kind`),
  one per `--shrinks` value; each row also gives the mid dense list's MRR@10 on the held-out pseudo-queries;
- BM25 expansion, the lexical counterpart of feedback: the BM25 lists search the question plus the
  `--expand-terms` terms that weigh most (term frequency over length, times idf) in the first `--expand-depths` mids
  of the mid BM25 list; the rest of HRR reads the question as it is.

`--apply dense`: q' searches the dense lists only, the reranker and the candidate ranker read q; `all`: q' replaces
q everywhere. For each setting it reports hrr_search's broad and mid HR@5 / MRR@5 and candidate recall at
5 / 10 / 20 / 40 (the answer's mid among the first k candidates).

    python benchmarks/experiment_first_stage.py --squad ../shared/datasets/covidqa-a.json --store COVID_STORE \
        --alphas 0.3,0.5,1 --depths 3,5 --sources mid,sentence,first --apply dense --name prf_covid_a_dense
    python benchmarks/experiment_first_stage.py --squad ../shared/datasets/covidqa-a.json --store COVID_STORE \
        --sources '' --shrinks 0,0.01 --adapter-kind softmax --apply dense --name adapter_softmax_covid_a

The store must hold the QA set's corpus (`granrag-mcp eval --squad FILE --store STORE` builds it). Nothing here is
used by the server; writes benchmarks/results/NAME.json unless --no-save.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import finish, git_revision, machine, offline_env

offline_env()


class FixedQueries:
    """An embedder whose query vectors are given (one per question text); passages go to the inner embedder."""

    def __init__(self, inner: Any, queries: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.name, self.dimension, self.max_tokens = inner.name, inner.dimension, inner.max_tokens
        self.queries = queries

    def embed(self, texts: Sequence[str], progress: Any = None, groups: Any = None) -> np.ndarray:
        return self.inner.embed(texts, progress=progress, groups=groups)

    def embed_queries(self, texts: Sequence[str], progress: Any = None) -> np.ndarray:
        return np.stack([self.queries[t] for t in texts])

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        return self.inner.windows(text, max_tokens=max_tokens)


def numbers(text: str, kind: type) -> list[Any]:
    return [kind(x) for x in text.split(",") if x]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--sample", type=int, help="a seeded sample of this many questions (default: all)")
    parser.add_argument("--alphas", default="0.3,0.5,1")
    parser.add_argument("--depths", default="3,5")
    parser.add_argument("--sources", default="mid,sentence")
    parser.add_argument("--shrinks", default="", help="query adapters to try: their shrinks toward identity")
    parser.add_argument("--adapter-queries", type=int, default=2000, help="pseudo-queries an adapter is fitted on")
    parser.add_argument("--adapter-kind", choices=("ridge", "softmax"), default="ridge")
    parser.add_argument("--epochs", type=int, default=5, help="the softmax adapter's epochs")
    parser.add_argument("--adapter-target", choices=("mid", "sentence"), default="mid")
    parser.add_argument("--expand-depths", default="", help="BM25 expansion: from the first m mids of its list")
    parser.add_argument("--expand-terms", default="", help="BM25 expansion: this many terms added to the question")
    parser.add_argument("--apply", choices=("all", "dense"), default="all", help="q' for everything or the dense lists")
    parser.add_argument("--name", default="prf", help="the result file's name under benchmarks/results")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.metrics import hit_rate, mrr
    from granrag_mcp.evaluation.misses import Place, answer_places, candidate_recall, parent_rank, rank_of
    from granrag_mcp.evaluation.qa import load_squad, sample_questions
    from granrag_mcp.evaluation.strategies import CachedEmbedder
    from granrag_mcp.levels import FINEST
    from granrag_mcp.retrieval.fusion import reciprocal_rank_fusion
    from granrag_mcp.retrieval.hrr import (
        CANDIDATE_DENSE,
        CANDIDATE_LEVEL,
        CANDIDATE_LEXICAL,
        HRR_FUSION,
        HRR_RRF_K,
        RESULT_LEVEL,
        SENTENCE_DENSE,
        SENTENCE_LEXICAL,
        hrr_candidates,
    )
    from granrag_mcp.retrieval.ranking.adapt import pseudo_queries
    from granrag_mcp.retrieval.ranking.features import CandidateReads
    from granrag_mcp.retrieval.ranking.rank import rank_hrr_candidates
    from granrag_mcp.retrieval.rerank import rerank_chunks
    from granrag_mcp.retrieval.view import ScoredChunk, View
    from granrag_mcp.settings import Settings
    from granrag_mcp.store.lexical import idf
    from granrag_mcp.text.analysis import analyse

    began = time.perf_counter()
    settings = Settings(store=args.store)
    embedder = CachedEmbedder(make_embedder(settings))
    base = Engine(settings, embedder=embedder).view()
    questions = sample_questions(load_squad(args.squad).questions, args.sample, 0)
    texts = [q.question.strip() for q in questions]
    plain = dict(zip(texts, embedder.embed_queries(texts)))
    candidates_level = base.catalog.chunks_of_level(CANDIDATE_LEVEL)
    parents = {c.id: c for c in base.catalog.chunks_of_level(RESULT_LEVEL)}
    answers = [answer_places(candidates_level, q.doc_id, q.answer_start) for q in questions]
    depths, alphas = numbers(args.depths, int), numbers(args.alphas, float)

    def feedback(source: str, text: str, m: int) -> np.ndarray:
        """The mean of the stored vectors of the first m chunks of the source list."""
        if source == "mid":
            ids, level = [i for i, _ in base.lexical(CANDIDATE_LEVEL, text, m)], CANDIDATE_LEVEL
        elif source == "sentence":
            ids, level = [i for i, _ in base.lexical(FINEST, text, m)], FINEST
        else:
            vector = plain[text]
            lists = {
                "sd": base.map_lists({"s": base.dense(FINEST, vector, 50)}, FINEST, CANDIDATE_LEVEL, vector)["s"],
                "sl": base.map_lists({"s": base.lexical(FINEST, text, 50)}, FINEST, CANDIDATE_LEVEL, vector)["s"],
                "ml": base.lexical(CANDIDATE_LEVEL, text, 20),
                "md": base.dense(CANDIDATE_LEVEL, vector, 20),
            }
            ids, level = [item.key for item in reciprocal_rank_fusion(lists, k=HRR_RRF_K)[:m]], CANDIDATE_LEVEL
        if not ids:
            return np.zeros_like(plain[text])
        return np.asarray(base.snapshot.vectors[level].reconstruct(np.array(ids)), dtype=np.float32).mean(axis=0)

    def candidates(view: View, text: str, moved: np.ndarray, searched: str | None = None) -> list[Any]:
        """HRR's candidate stage with `moved` searching the dense lists only and `searched` (default the question)
        the BM25 lists; the reranker and the candidate ranker read the question and its own vector."""
        vector, searched = plain[text], searched or text
        sentences = {
            SENTENCE_DENSE: view.dense(FINEST, moved, 50),
            SENTENCE_LEXICAL: view.lexical(FINEST, searched, 50),
        }
        evidence = {
            **view.map_lists(sentences, FINEST, CANDIDATE_LEVEL, vector),
            CANDIDATE_LEXICAL: view.lexical(CANDIDATE_LEVEL, searched, 20),
        }
        lists = {**evidence, CANDIDATE_DENSE: view.dense(CANDIDATE_LEVEL, moved, 20)}
        first = [item.key for item in reciprocal_rank_fusion(lists, k=HRR_RRF_K)[:20]]
        reads = CandidateReads(view)
        chunks = reads.chunks(first + [chunk_id for scored in evidence.values() for chunk_id, _ in scored])
        reranked = rerank_chunks(view, text, [chunks[i] for i in first if i in chunks], reads.sentence_vectors)
        final = {"rerank": [(h.chunk.id, h.score or 0.0) for h in reranked], **evidence}
        fused = reciprocal_rank_fusion(final, weights=view.fusion_weights(HRR_FUSION), k=HRR_RRF_K)
        chunks = reads.chunks([item.key for item in fused])
        out = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused]
        assert view.candidate_ranker is not None
        return rank_hrr_candidates(view, text, vector, out, view.candidate_ranker, reads=reads)

    def score(
        queries: dict[str, np.ndarray], dense_only: bool, expanded: dict[str, str] | None = None
    ) -> dict[str, Any]:
        view = View(
            base.snapshot,
            FixedQueries(embedder, plain if dense_only else queries),
            base.reranker,
            candidate_ranker=base.candidate_ranker,
            adaptation=base.adaptation,
        )
        mid_ranks, broad_ranks = [], []
        for q, text, answer in zip(questions, texts, answers):
            if dense_only:
                hits = candidates(view, text, queries[text], (expanded or {}).get(text))
            else:
                _, hits = hrr_candidates(view, text)
            chunks = [hit.chunk for hit in hits]
            mid_ranks.append(rank_of([Place(c.doc_id, c.seq) for c in chunks], answer))
            broad_ranks.append(parent_rank(chunks, parents, q.doc_id, q.answer_start))
        return {
            "broad": {"HR@5": round(hit_rate(broad_ranks, 5), 4), "MRR@5": round(mrr(broad_ranks, 5), 4)},
            "mid": {"HR@5": round(hit_rate(mid_ranks, 5), 4), "MRR@5": round(mrr(mid_ranks, 5), 4)},
            "candidate_recall": {k: round(v, 4) for k, v in candidate_recall(mid_ranks).items()},
        }

    def adapter(shrink: float) -> np.ndarray:
        """A 384 x 384 map fitted on the store's own pseudo-queries, shrunk toward identity: q' = normalise(q W).
        `ridge`: least squares of a pseudo-query's vector onto its target chunk's stored vector; `softmax`: `--epochs`
        epochs of in-batch-negative softmax (other pseudo-queries' targets are the negatives), from identity."""
        level = CANDIDATE_LEVEL if args.adapter_target == "mid" else FINEST
        x = np.asarray(embedder.embed_queries([p.text for p in fitted]), dtype=np.float64)
        ids = np.array([p.targets[level] for p in fitted])
        y = np.asarray(base.snapshot.vectors[level].reconstruct(ids), dtype=np.float64)
        y = y / np.linalg.norm(y, axis=1, keepdims=True)
        eye = np.eye(x.shape[1])
        if args.adapter_kind == "ridge":
            ridge = shrink * len(x) / x.shape[1]
            return np.linalg.solve(x.T @ x + ridge * eye, x.T @ y + ridge * eye)
        import torch

        torch.manual_seed(0)
        xs, ys, same = torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32), torch.tensor(ids)
        w = torch.nn.Parameter(torch.eye(x.shape[1]))
        optimiser = torch.optim.Adam([w], lr=1e-3)
        for _ in range(args.epochs):
            for batch in torch.randperm(len(xs)).split(128):
                q = torch.nn.functional.normalize(xs[batch] @ w, dim=1)
                logits = q @ ys[batch].T / 0.05
                clash = (same[batch][:, None] == same[batch][None, :]) & ~torch.eye(len(batch), dtype=torch.bool)
                logits = logits.masked_fill(clash, -1e4)
                loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
                loss = loss + shrink * ((w - torch.eye(x.shape[1])) ** 2).sum()
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        return w.detach().numpy().astype(np.float64)

    rows = []
    shrinks = numbers(args.shrinks, float)
    pseudo = pseudo_queries(base, args.adapter_queries, 1) if shrinks else []
    fitted, held_out = pseudo[: len(pseudo) * 4 // 5], pseudo[len(pseudo) * 4 // 5 :]

    def held_out_mrr(w: np.ndarray | None) -> float:
        """MRR@10 of the mid dense list on the pseudo-queries left out of the fit (does the map fit at all?)."""
        vectors = embedder.embed_queries([p.text for p in held_out])
        found = []
        for p, vector in zip(held_out, vectors):
            moved = vector if w is None else vector @ w
            ranked = [i for i, _ in base.dense(CANDIDATE_LEVEL, (moved / np.linalg.norm(moved)).astype(np.float32), 10)]
            target = p.targets[CANDIDATE_LEVEL]
            found.append(1.0 / (ranked.index(target) + 1) if target in ranked else 0.0)
        return round(float(np.mean(found)), 4) if found else 0.0

    for shrink in shrinks:
        fit_began = time.perf_counter()
        w = adapter(shrink)
        fit_seconds = time.perf_counter() - fit_began
        queries = {}
        for text in texts:
            moved = plain[text] @ w
            queries[text] = (moved / np.linalg.norm(moved)).astype(np.float32)
        row = {
            "source": f"adapter-{args.adapter_kind}-{args.adapter_target}",
            "pseudo_queries": len(pseudo),
            "shrink": shrink,
            "fit_seconds": round(fit_seconds, 1),
            "held_out_pseudo_mrr": {"identity": held_out_mrr(None), "adapter": held_out_mrr(w)},
            "apply": args.apply,
            **score(queries, args.apply == "dense"),
        }
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    settings_tried = [("off", 0, 0.0)] + [
        (source, m, alpha)
        for source in args.sources.split(",")
        if source
        for m in depths
        for alpha in alphas
        if alpha > 0
    ]
    for source, m, alpha in settings_tried:
        queries = {}
        for text in texts:
            moved = plain[text] if source == "off" else plain[text] + alpha * feedback(source, text, m)
            queries[text] = (moved / np.linalg.norm(moved)).astype(np.float32)
        row = {"source": source, "m": m, "alpha": alpha, "apply": args.apply, **score(queries, args.apply == "dense")}
        rows.append(row)
        print(row, file=sys.stderr, flush=True)

    expansions = [(m, t) for m in numbers(args.expand_depths, int) for t in numbers(args.expand_terms, int)]
    if expansions:
        mids = {c.id: analyse(c.text) for c in candidates_level}
        frequency = Counter(term for terms in mids.values() for term in set(terms))
        weight = {term: float(idf(len(mids), n)) for term, n in frequency.items()}
    for m, t in expansions:
        expanded = {}
        for text in texts:
            own = set(analyse(text))
            gathered: Counter[str] = Counter()
            for chunk_id, _ in base.lexical(CANDIDATE_LEVEL, text, m):
                terms = mids.get(chunk_id, [])
                for term, n in Counter(terms).items():
                    if term not in own:
                        gathered[term] += n / max(len(terms), 1) * weight.get(term, 0.0)
            expanded[text] = " ".join([text, *(term for term, _ in gathered.most_common(t))])
        row = {"source": "bm25-expansion", "m": m, "terms": t, "apply": "lexical", **score(plain, True, expanded)}
        rows.append(row)
        print(row, file=sys.stderr, flush=True)

    result = {
        "benchmark": "experiment_first_stage",
        "qa_set": args.squad.name,
        "questions": len(questions),
        "sample": args.sample,
        "ranker": base.candidate_ranker.name if base.candidate_ranker else None,
        "rows": rows,
        "seconds": round(time.perf_counter() - began, 1),
        "machine": machine(),
        "revision": git_revision(),
    }
    finish(args.name, result, save=not args.no_save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
