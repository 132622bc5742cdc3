"""BM25 terms by language: English exactly as every store so far, Unicode-correct words, each language's stop
words and Snowball stemmer, character pairs for scripts without spaces, and a query analysed by every language."""

from __future__ import annotations

import pytest

from granrag_mcp.text.analysis import LEGACY, STOPWORDS, analyse, analysis_language, query_terms, stem, stopwords
from granrag_mcp.text.language import UNDETERMINED


def test_english_keeps_the_analysis_every_store_was_built_with() -> None:
    text = "The Studies of rivers, glass and buses: the farmers' 2 fields of 1990s rice."
    expected = ["study", "river", "glass", "buse", "farmer", "field", "1990", "rice"]
    assert analyse(text) == expected
    assert analyse(text, "en") == expected
    assert analyse(text, UNDETERMINED) == expected


def test_an_undetermined_or_unknown_language_is_analysed_as_english() -> None:
    assert analysis_language(None) == LEGACY
    assert analysis_language(UNDETERMINED) == LEGACY
    assert analysis_language("zh") == "zh"


@pytest.mark.parametrize(
    "text, language, expected",
    [
        # Latin: Spanish stop words dropped, Snowball stems ("inundaciones" and "inundación" meet).
        ("Las inundaciones del río", "es", ["inund", "rio"]),
        ("La inundación", "es", ["inund"]),
        # Cyrillic: Russian stop words and stems.
        ("Крестьяне сажают рис, когда вода уходит.", "ru", ["крестьян", "сажа", "рис", "вод", "уход"]),
        # Arabic: the article and the conjunction come off by the Arabic stemmer.
        ("يفيض النهر كل ربيع، ويزرع الفلاحون الأرز", "ar", ["يفيض", "نهر", "ربيع", "يزرع", "فلاح", "ارز"]),
        # Devanagari: a vowel sign stays inside its word ("किसान", not "क" "स" "न").
        ("किसान धान बोते हैं", "hi", ["किसान", "धान", "बोत"]),
        # CJK: overlapping pairs of each run, a Latin word inside kept whole.
        ("北京大学的NFL比赛", "zh", ["北京", "京大", "大学", "学的", "nfl", "比赛"]),
        ("東京", "ja", ["東京"]),
        # Thai: pairs of the run (no spaces between words), a vowel or tone mark kept on its consonant.
        ("ข้าวหอม", "th", ["ข้า", "าว", "วห", "หอ", "อม"]),
    ],
    ids=["latin-es", "latin-es-singular", "cyrillic", "arabic", "devanagari", "cjk", "japanese", "thai"],
)
def test_each_script_family_gets_its_terms(text: str, language: str, expected: list[str]) -> None:
    assert analyse(text, language) == expected


def test_a_lone_ideograph_is_its_own_term() -> None:
    assert analyse("水 和 火", "zh") == ["水", "和", "火"]


def test_stop_words_and_stems_are_chosen_by_language() -> None:
    assert stopwords("en") == STOPWORDS
    assert "и" in stopwords("ru") and "the" not in stopwords("ru")
    assert stopwords("zh") == frozenset()  # pairs never are the words of a stop-word list
    assert stem(["running"], "en") == ["run"]
    assert stem(["inundaciones"], "es") == ["inund"]
    assert stem(["北京"], "zh") == ["北京"]  # no stemmer: unchanged


def test_a_query_is_analysed_by_every_language_of_the_index_and_each_term_kept_once() -> None:
    terms = query_terms("Flüsse 北京大学 rivers", ["en", "de", "zh"])
    assert {"flüsse", "river", "fluss", "北京", "京大", "大学"} <= set(terms)
    assert len(terms) == len(set(terms))
    assert query_terms("rivers", [LEGACY]) == analyse("rivers")


def test_vietnamese_keeps_every_syllable() -> None:
    # Its stop-word list names content syllables too: each syllable is a term, as in the text.
    assert analyse("Năm 1990 thành phố có một triệu người", "vi") == [
        "năm",
        "1990",
        "thành",
        "phố",
        "có",
        "một",
        "triệu",
        "người",
    ]
