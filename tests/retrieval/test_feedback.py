"""Pseudo-relevance feedback in vector space: the query vector moves toward the mean of its first hits (among the
chunks the view searches), and HRR moves it only for a question whose words cannot match the text."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.levels import FINEST
from granrag_mcp.rerankers import SentenceWindowReranker
from granrag_mcp.retrieval import hrr
from granrag_mcp.retrieval.feedback import Feedback, moved_query
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus

CHINESE = {
    "river.txt": "长江是中国最长的河流，全长六千三百公里。长江流经上海，在上海注入东海。",
    "tea.txt": "茶叶起源于中国西南部。绿茶和红茶的制作方法不同。中国人喝茶已经有几千年的历史。",
    "dam.txt": "三峡大坝横跨长江。大坝于2006年建成，坝顶长2335米。水库淹没了许多村庄。",
}


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> View:
    root = tmp_path_factory.mktemp("feedback")
    docs = write_corpus(root / "docs", repeat=3)
    write_corpus(root / "docs" / "zh", CHINESE, repeat=3)
    index(docs, root / "store")
    embedder = FakeEmbedder()
    return View(Snapshot.open(root / "store"), embedder, SentenceWindowReranker(embedder))


def first_hits_mean(view: View, vector: np.ndarray, hits: int) -> np.ndarray:
    found = [chunk_id for chunk_id, _ in view.dense(FINEST, vector, hits)]
    mean = view.snapshot.vectors[FINEST].reconstruct(np.array(found)).mean(axis=0)
    return mean / np.linalg.norm(mean)


def test_the_query_moves_toward_its_first_hits_and_stays_unit_length(view: View) -> None:
    vector = view.query_vector("How is green tea made?")
    moved = moved_query(view, vector, Feedback(FINEST, hits=3, weight=0.5))
    mean = first_hits_mean(view, vector, 3)
    assert np.linalg.norm(moved) == pytest.approx(1.0, abs=1e-5)
    assert float(moved @ mean) > float(vector @ mean)
    assert np.allclose(moved, (vector + 0.5 * mean) / np.linalg.norm(vector + 0.5 * mean), atol=1e-5)


def test_no_weight_leaves_the_query_where_it_is(view: View) -> None:
    vector = view.query_vector("How is green tea made?")
    assert np.array_equal(moved_query(view, vector, Feedback(FINEST, hits=3, weight=0.0)), vector)


def test_the_hits_come_from_the_searched_documents_only(view: View) -> None:
    chinese = view.filtered(DocFilter.of(language="zh"))
    vector = chinese.query_vector("How is green tea made?")
    moved = moved_query(chinese, vector, Feedback(FINEST, hits=3, weight=1.0))
    expected = vector + first_hits_mean(chinese, vector, 3)
    assert np.allclose(moved, expected / np.linalg.norm(expected), atol=1e-5)
    assert not np.allclose(moved, moved_query(view, vector, Feedback(FINEST, hits=3, weight=1.0)), atol=1e-3)


@pytest.mark.parametrize("values", [{"hits": 0}, {"weight": -0.1}])
def test_feedback_rejects_no_hits_and_a_negative_weight(values: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="feedback needs"):
        Feedback(FINEST, **{"hits": 3, "weight": 0.5, **values})  # type: ignore[arg-type]


def candidates(view: View, query: str) -> list[tuple[str, dict[str, float]]]:
    """Each candidate with the score every list gave it (the dense lists' and the reranker's are cosines)."""
    _, found = hrr.hrr_candidates(view, query)
    return [(hit.chunk.public_id, {name: c.score for name, c in hit.sources.items()}) for hit in found]


def test_hrr_moves_only_a_question_whose_words_cannot_match(view: View, monkeypatch: pytest.MonkeyPatch) -> None:
    chinese = view.filtered(DocFilter.of(language="zh"))
    own, across = "长江有多长？", "How long is the Yangtze river?"
    assert chinese.words_match(own) and not chinese.words_match(across)
    with_feedback = candidates(chinese, own), candidates(chinese, across)
    monkeypatch.setattr(hrr, "CROSS_LINGUAL_FEEDBACK", None)
    without = candidates(chinese, own), candidates(chinese, across)
    assert with_feedback[0] == without[0]  # a question in the text's language: exactly as before
    assert with_feedback[1] != without[1]
