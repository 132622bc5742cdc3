"""Candidate recall, miss categories and question specificity, on hand-made rankings."""

from __future__ import annotations

import pytest

from granrag_mcp.evaluation.misses import (
    MISS_CATEGORIES,
    Place,
    answer_places,
    by_specificity,
    candidate_recall,
    miss_category,
    miss_table,
    parent_rank,
    rank_of,
    rarest_document_count,
    specificity_bucket,
)
from granrag_mcp.records import Chunk

A, B = "a.txt", "b.txt"


def chunk(id: int, doc_id: str, level: str, seq: int, start: int, end: int, parent_id: int | None = None) -> Chunk:
    return Chunk(id, doc_id, level, seq, start, end, end - start, parent_id, "x" * (end - start))  # type: ignore[arg-type]


def test_rank_of_is_one_based_and_none_when_absent() -> None:
    ranking = [Place(B, 0), Place(A, 3), Place(A, 4)]
    assert rank_of(ranking, {Place(A, 3)}) == 2
    assert rank_of(ranking, {Place(A, 4), Place(A, 3)}) == 2  # overlapping chunks: the first of them counts
    assert rank_of(ranking, {Place(A, 5)}) is None
    assert rank_of(ranking, set()) is None


def test_a_miss_is_named_by_the_closest_chunk_its_top_held() -> None:
    answer = {Place(A, 5)}
    assert miss_category([Place(B, 5), Place(A, 9), Place(A, 4)], answer) == "neighbour"
    assert miss_category([Place(A, 6)], answer) == "neighbour"
    assert (
        miss_category([Place(B, 4), Place(A, 7)], answer) == "same document"
    )  # seq 4 of another paper is no neighbour
    assert miss_category([Place(B, 4), Place(B, 6)], answer) == "other documents"
    assert miss_category([], answer) == "other documents"
    assert miss_category([Place(A, 8)], {Place(A, 5), Place(A, 7)}) == "neighbour"  # of either overlapping chunk


def test_candidate_recall_counts_the_answer_at_each_depth() -> None:
    ranks = [1, 6, 25, None]
    recall = candidate_recall(ranks, depths=(5, 10, 40))
    assert recall == {"@5": 0.25, "@10": 0.5, "@40": 0.75, "any": 0.75}
    assert candidate_recall([]) == {"@5": 0.0, "@10": 0.0, "@20": 0.0, "@40": 0.0, "any": 0.0}


def test_miss_table_counts_only_misses_and_those_with_no_candidate() -> None:
    rankings = [
        [Place(A, 1), Place(A, 2)],  # hit at rank 2
        [Place(A, 4), Place(B, 1)],  # answer A/5 missing, its neighbour on top
        [Place(B, 1), Place(B, 2), Place(B, 3), Place(A, 9)],  # answer A/9 below k = 2
        [Place(B, 1)],  # answer A/1 nowhere
        [Place(B, 1)],  # no answer chunk: not counted
    ]
    answers = [{Place(A, 2)}, {Place(A, 5)}, {Place(A, 9)}, {Place(A, 1)}, set()]
    table = miss_table(rankings, answers, k=2)
    assert table == {"neighbour": 1, "same document": 0, "other documents": 2, "not among the candidates": 2}
    assert set(MISS_CATEGORIES) <= set(table)
    with pytest.raises(ValueError):
        miss_table(rankings, answers[:2], k=2)


def test_rarest_document_count_reads_the_rarest_term() -> None:
    documents = {A: frozenset({"virus", "camel", "study"}), B: frozenset({"virus", "study"}), "c": frozenset()}
    assert rarest_document_count(["study", "camel"], documents) == 1
    assert rarest_document_count(["study", "virus"], documents) == 2
    assert rarest_document_count(["unknown", "virus"], documents) == 0
    assert rarest_document_count([], documents) == 3


def test_specificity_buckets_split_the_loss_of_mrr() -> None:
    assert [specificity_bucket(n) for n in (0, 1, 2, 3, 4, 10, 11)] == ["1", "1", "2-3", "2-3", "4-10", "4-10", ">10"]
    ranks = [1, None, 2, 1]
    counts = [1, 20, 20, 3]
    table = by_specificity(ranks, counts, k=5)
    assert table[">10"] == {"questions": 2, "MRR@5": 0.25, "loss": 0.375}
    assert table["1"]["loss"] == 0.0 and "4-10" not in table
    assert sum(row["loss"] for row in table.values()) == pytest.approx(1 - (1 + 0 + 0.5 + 1) / 4)


def test_answer_places_are_every_chunk_holding_the_answers_first_character() -> None:
    mids = [chunk(1, A, "mid", 0, 0, 100), chunk(2, A, "mid", 1, 80, 200), chunk(3, B, "mid", 0, 0, 100)]
    assert answer_places(mids, A, 90) == {Place(A, 0), Place(A, 1)}  # where two chunks overlap, both
    assert answer_places(mids, A, 150) == {Place(A, 1)}
    assert answer_places(mids, B, 150) == set()  # past the end of every chunk of its document


def test_parent_rank_orders_parents_by_their_first_child() -> None:
    parents = {10: chunk(10, A, "broad", 0, 0, 100), 11: chunk(11, A, "broad", 1, 100, 200)}
    ranking = [
        chunk(1, A, "mid", 3, 100, 150, parent_id=11),
        chunk(2, A, "mid", 0, 0, 50, parent_id=10),
        chunk(3, A, "mid", 4, 150, 200, parent_id=11),  # its parent is already ranked: no new rank
        chunk(4, B, "mid", 0, 0, 50, parent_id=None),
    ]
    assert parent_rank(ranking, parents, A, 20) == 2
    assert parent_rank(ranking, parents, A, 120) == 1
    assert parent_rank(ranking, parents, B, 20) is None
    assert parent_rank(ranking[2:], parents, A, 20) is None  # the answer's parent has no child in the ranking
