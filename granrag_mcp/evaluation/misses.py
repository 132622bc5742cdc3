"""Why a ranking misses: how deep its candidates hold the answer, where its first k went for each miss, and how
specific the missed questions are.

A miss at k is a question whose answer chunk is not among the first k of the ranking. Its category says what the
first k held instead: the chunk just before or after the answer's (`neighbour`: a boundary question), another chunk
of the answer's document (`same document`), or only other documents (`other documents`). A question's
*specificity* is the number of documents that hold its rarest term: a question whose every term is common names
no document, and no ranking of its words can tell which one it asks about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from granrag_mcp.evaluation.metrics import contains, first_hit_rank, hit_rate, mrr
from granrag_mcp.records import Chunk

MISS_CATEGORIES: tuple[str, ...] = ("neighbour", "same document", "other documents")
"""What a miss's first k held, the closest to the answer first."""
RECALL_DEPTHS: tuple[int, ...] = (5, 10, 20, 40)
"""The depths at which candidate recall is reported."""
SPECIFICITY_BUCKETS: tuple[tuple[str, int], ...] = (("1", 1), ("2-3", 3), ("4-10", 10), (">10", 2**31))
"""Buckets of the rarest term's document count: (label, upper bound inclusive)."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where a chunk is: its document and its position among the document's chunks of its level."""

    doc_id: str
    seq: int


Answer = Collection[Place]
"""The chunks of one level that hold an answer's first character: usually one, two where chunks overlap, none
where no chunk of the level covers it."""


def answer_places(chunks: Iterable[Chunk], doc_id: str, answer_start: int) -> set[Place]:
    """The places of the chunks (of one level) that hold the answer's first character."""
    return {Place(c.doc_id, c.seq) for c in chunks if contains((c.doc_id, c.start, c.end), doc_id, answer_start)}


def parent_rank(ranking: Iterable[Chunk], parents: Mapping[int, Chunk], doc_id: str, answer_start: int) -> int | None:
    """The rank of the first parent holding the answer, the parents in their first child's order in `ranking`
    (as hrr_search returns them), or None when none does."""
    order = [
        parents[i]
        for i in dict.fromkeys(c.parent_id for c in ranking if c.parent_id is not None and c.parent_id in parents)
    ]
    return first_hit_rank(((p.doc_id, p.start, p.end) for p in order), doc_id, answer_start)


def rank_of(ranking: Sequence[Place], answer: Answer) -> int | None:
    """1-based rank of the first of the answer's chunks in the ranking, None when none is there."""
    return next((n for n, place in enumerate(ranking, 1) if place in answer), None)


def miss_category(top: Sequence[Place], answer: Answer) -> str:
    """The MISS_CATEGORIES entry of a miss whose first k are `top` (which hold none of the answer's chunks)."""
    same_document = [place for place in top if any(place.doc_id == a.doc_id for a in answer)]
    if any(place.doc_id == a.doc_id and abs(place.seq - a.seq) == 1 for place in same_document for a in answer):
        return MISS_CATEGORIES[0]
    return MISS_CATEGORIES[1] if same_document else MISS_CATEGORIES[2]


def candidate_recall(ranks: Sequence[int | None], depths: Iterable[int] = RECALL_DEPTHS) -> dict[str, float]:
    """{"@d": share of questions whose answer chunk is among the first d candidates} for each depth, and "any":
    anywhere in the candidates."""
    out = {f"@{d}": hit_rate(ranks, d) for d in depths}
    out["any"] = sum(r is not None for r in ranks) / len(ranks) if ranks else 0.0
    return out


def miss_table(rankings: Sequence[Sequence[Place]], answers: Sequence[Answer], k: int = 5) -> dict[str, int]:
    """Counts of the misses at k by category, and how many of them have the answer's chunks nowhere in their
    ranking (`not among the candidates`, a subset of the categories' total). Questions whose answer has no chunk
    are left out."""
    counts: Counter[str] = Counter({name: 0 for name in MISS_CATEGORIES})
    absent = 0
    for ranking, answer in zip(rankings, answers, strict=True):
        if not answer:
            continue
        rank = rank_of(ranking, answer)
        if rank is not None and rank <= k:
            continue
        counts[miss_category(ranking[:k], answer)] += 1
        absent += rank is None
    return {**counts, "not among the candidates": absent}


def rarest_document_count(terms: Iterable[str], document_terms: Mapping[str, frozenset[str]]) -> int:
    """How many documents hold the question's rarest term (0 when one of its terms is in no document; the number
    of documents when it has no terms)."""
    counts = [sum(term in held for held in document_terms.values()) for term in set(terms)]
    return min(counts, default=len(document_terms))


def specificity_bucket(count: int) -> str:
    return next(label for label, bound in SPECIFICITY_BUCKETS if count <= bound)


def by_specificity(ranks: Sequence[int | None], counts: Sequence[int], k: int = 5) -> dict[str, dict[str, float]]:
    """Per specificity bucket: its questions, their MRR@k, and the share of the whole set's MRR@k lost on them
    (the buckets' losses add up to 1 - MRR@k)."""
    out: dict[str, dict[str, float]] = {}
    for label, _ in SPECIFICITY_BUCKETS:
        chosen = [r for r, c in zip(ranks, counts, strict=True) if specificity_bucket(c) == label]
        if chosen:
            score = mrr(chosen, k)
            out[label] = {"questions": len(chosen), f"MRR@{k}": score, "loss": len(chosen) * (1 - score) / len(ranks)}
    return out
