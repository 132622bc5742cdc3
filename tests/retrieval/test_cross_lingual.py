"""A question in another language and script than the documents searches by vectors alone: its BM25 lists are
empty and the candidate ranker's word features neutral; a question in the documents' own script keeps its words."""

from __future__ import annotations

import pytest

from granrag_mcp.levels import FINEST
from granrag_mcp.rerankers import EmbeddingReranker
from granrag_mcp.retrieval.cross_lingual import numbers_of, scripts_of, words_can_match
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.hrr import CROSS_LINGUAL_LISTS, hrr_candidates, hrr_search, hrr_weights
from granrag_mcp.retrieval.ranking.features import query_terms
from granrag_mcp.retrieval.view import View
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus

CHINESE = {
    "river.txt": "长江是中国最长的河流，全长六千三百公里。长江流经上海，在上海注入东海。NASA 的卫星拍摄了长江的照片。",
    "tea.txt": "茶叶起源于中国西南部。绿茶和红茶的制作方法不同。中国人喝茶已经有几千年的历史。",
    "dam.txt": "三峡大坝横跨长江。大坝于2006年建成，坝顶长2335米。水库淹没了许多村庄。",
}
ENGLISH_QUESTION = "How long is the Yangtze river according to NASA satellites?"
CHINESE_QUESTION = "长江有多长？"


@pytest.mark.parametrize(
    ("query", "languages", "matches"),
    [
        (ENGLISH_QUESTION, {"zh"}, False),  # English over Chinese: no word can match
        ("What is the capital of the Hindi speaking state?", {"hi"}, False),
        ("Which dynasty ruled Egypt in the tenth century?", {"ar"}, False),
        (CHINESE_QUESTION, {"en"}, False),  # and the other way round
        (CHINESE_QUESTION, {"zh"}, True),
        (ENGLISH_QUESTION, {"en"}, True),
        ("Who did John Elway play for in Super Bowl XXXIII?", {"en"}, True),  # read as Pidgin, but Latin script
        (ENGLISH_QUESTION, {"es"}, True),  # same script: names and numbers still match
        (ENGLISH_QUESTION, {"en", "zh"}, True),  # a mixed store holds the question's language
        ("NFL 的冠军是谁？", {"en"}, True),  # a Latin name inside a Chinese question keeps the words
        ("2016", {"zh"}, True),  # a number has no language: keep the words
        (ENGLISH_QUESTION, {"zh", "und"}, True),  # a document of untold language may be English
        (ENGLISH_QUESTION, {"zh", None}, True),  # a catalog older than languages
        (ENGLISH_QUESTION, set(), True),
    ],
)
def test_the_rule(query: str, languages: set[str | None], matches: bool) -> None:
    assert words_can_match(query, languages) is matches


def test_a_questions_numbers_are_its_digits() -> None:
    assert numbers_of("How long, in meters, was the dam finished in 2006: 2,335 or 2335.5?") == "2006 2,335 2335.5"
    assert numbers_of("How long is the Yangtze?") == ""


def test_an_english_question_over_chinese_text_matches_its_numbers(mixed: View) -> None:
    chinese = mixed.filtered(DocFilter.of(language="zh"))
    question = "What was finished in 2006?"
    assert not chinese.words_match(question)
    _, candidates = hrr_candidates(chinese, question)
    by_numbers = [h.chunk.doc_id for h in candidates if "mid_lexical" in h.sources]
    assert by_numbers and set(by_numbers) == {"zh/dam.txt"}  # the year, and no English word, matched


def test_scripts_are_the_letters_unicode_names() -> None:
    assert scripts_of("NASA 的卫星 2016") == {"LATIN", "CJK"}
    assert scripts_of("हिन्दी") == {"DEVANAGARI"}  # vowel signs are marks, not letters of another script
    assert scripts_of("42 !") == frozenset()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> View:
    root = tmp_path_factory.mktemp("cross")
    docs = write_corpus(root / "docs", repeat=3)  # English topics
    write_corpus(root / "docs" / "zh", CHINESE, repeat=3)
    index(docs, root / "store")
    embedder = FakeEmbedder()
    return View(Snapshot.open(root / "store"), embedder, EmbeddingReranker(embedder))


def test_the_store_holds_both_languages(mixed: View) -> None:
    assert {"en", "zh"} <= set(mixed.catalog.language_counts())


def test_an_english_question_over_chinese_documents_has_no_bm25_list(mixed: View) -> None:
    chinese = mixed.filtered(DocFilter.of(language="zh"))
    assert chinese.snapshot.lexical[FINEST].search(ENGLISH_QUESTION, 5, chinese.allowed(FINEST))  # "NASA" matches
    assert not chinese.words_match(ENGLISH_QUESTION)
    assert chinese.lexical(FINEST, ENGLISH_QUESTION, 5) == []
    assert chinese.lexical(FINEST, CHINESE_QUESTION, 5)  # the documents' own language keeps its list
    assert query_terms(chinese, ENGLISH_QUESTION).stems == []
    assert query_terms(chinese, CHINESE_QUESTION).stems
    hits = hrr_search(chinese, ENGLISH_QUESTION, 3).hits
    assert hits and all(h.chunk.doc_id.startswith("zh/") for h in hits)
    assert not any("lexical" in name for h in hits for name in h.sources)  # dense lists and the reranker only
    _, candidates = hrr_candidates(chinese, ENGLISH_QUESTION)
    assert {name for h in candidates for name in h.sources} <= set(CROSS_LINGUAL_LISTS)
    assert any("mid_dense" in h.sources for h in candidates)  # the mid dense list fused in the BM25 lists' place
    assert hrr_weights(chinese, query=ENGLISH_QUESTION) == dict.fromkeys(CROSS_LINGUAL_LISTS, 1.0)
    assert hrr_weights(chinese, query=CHINESE_QUESTION) == hrr_weights(chinese)


def test_the_same_question_over_the_mixed_store_keeps_its_words(mixed: View) -> None:
    assert mixed.words_match(ENGLISH_QUESTION)
    raw = mixed.snapshot.lexical[FINEST].search(ENGLISH_QUESTION, 5, None)
    assert mixed.lexical(FINEST, ENGLISH_QUESTION, 5) == raw and raw
    only = mixed.filtered(DocFilter.of(["zh/river.txt"]))
    assert only.searched_languages() == {"zh"} and only.lexical(FINEST, ENGLISH_QUESTION, 5) == []
