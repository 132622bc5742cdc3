"""Sentence boundaries in scripts beyond the cased alphabets: ideographic and fullwidth marks, the danda, Arabic and
Urdu marks, the Greek question mark, and the Thai segmenter's sentence ends; offsets stay exact."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from granrag_mcp.indexing.sentence_rules import thai
from granrag_mcp.indexing.sentences import split_sentences
from tests.indexing.test_sentences import assert_span_invariants, hang_guard


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


SCRIPTS = [
    pytest.param(
        "这条河每年春天都会泛滥。水退以后，农民就开始种水稻！你知道吗？知道；明白。",
        ["这条河每年春天都会泛滥。", "水退以后，农民就开始种水稻！", "你知道吗？", "知道；", "明白。"],
        id="chinese",
    ),
    pytest.param(
        "他说：“我来了。”然后走了。这个用英文写成.那个不是?对",
        ["他说：“我来了。”", "然后走了。", "这个用英文写成.", "那个不是?", "对"],
        id="chinese-quotes-and-latin-marks",
    ),
    pytest.param(
        "川は毎年春に氾濫します。水が引くと農家は米を植えます。",
        ["川は毎年春に氾濫します。", "水が引くと農家は米を植えます。"],
        id="japanese",
    ),
    pytest.param(
        "नदी हर वसंत में बाढ़ लाती है। पानी उतरने पर किसान धान बोते हैं॥ क्या यह सच है? हाँ.",
        ["नदी हर वसंत में बाढ़ लाती है।", "पानी उतरने पर किसान धान बोते हैं॥", "क्या यह सच है?", "हाँ."],
        id="hindi",
    ),
    pytest.param(
        "يفيض النهر كل ربيع، ويزرع الفلاحون الأرز. هل تعرف ذلك؟ نعم",
        ["يفيض النهر كل ربيع، ويزرع الفلاحون الأرز.", "هل تعرف ذلك؟", "نعم"],
        id="arabic",
    ),
    pytest.param(
        "دریا ہر بہار میں بھر جاتا ہے۔ کسان چاول لگاتے ہیں۔",
        ["دریا ہر بہار میں بھر جاتا ہے۔", "کسان چاول لگاتے ہیں۔"],
        id="urdu",
    ),
    pytest.param("Τι ώρα είναι; Είναι τρεις. Καλά", ["Τι ώρα είναι;", "Είναι τρεις.", "Καλά"], id="greek"),
    pytest.param(
        "Река разливается каждую весну. Крестьяне сажают рис! Правда? Да.",
        ["Река разливается каждую весну.", "Крестьяне сажают рис!", "Правда?", "Да."],
        id="russian",
    ),
    pytest.param(
        "ตลาดน้ำเปิดทุกเช้าวันเสาร์ แม่ค้าพายเรือขายผลไม้และขนม นักท่องเที่ยวมาถ่ายรูปจำนวนมาก",
        ["ตลาดน้ำเปิดทุกเช้าวันเสาร์ แม่ค้าพายเรือขายผลไม้และขนม", "นักท่องเที่ยวมาถ่ายรูปจำนวนมาก"],
        id="thai",
    ),
    pytest.param("ទន្លេជន់លិចរៀងរាល់ឆ្នាំ។ កសិករដាំស្រូវ។", ["ទន្លេជន់លិចរៀងរាល់ឆ្នាំ។", "កសិករដាំស្រូវ។"], id="khmer"),
]


@pytest.mark.parametrize(("text", "expected"), SCRIPTS)
def test_each_script_ends_its_sentences_at_its_own_marks(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected
    assert_span_invariants(text)


def test_a_semicolon_after_latin_letters_does_not_end_a_sentence() -> None:
    assert sentences("It rained; we stayed in. Then it stopped.") == ["It rained; we stayed in.", "Then it stopped."]


def test_offsets_stay_exact_inside_a_longer_text() -> None:
    text = "  第一句。 第二句！\n\nनदी बहती है। "
    assert split_sentences(text) == [(2, 6), (7, 11), (13, 25)]


def test_a_chinese_line_ending_in_a_full_stop_ends_its_sentence() -> None:
    assert sentences("第一行结束。\n第二行开始") == ["第一行结束。", "第二行开始"]


@pytest.mark.parametrize(
    "text", ["。" * 300_000, "ก " * 300_000, "।" * 300_000, "α;" * 200_000, ".中" * 300_000], ids=str.__len__
)
def test_pathological_script_input_does_not_hang(text: str) -> None:
    with hang_guard(seconds=120):
        split_sentences(text)


FRAGMENTS = ["。", "！", "？", "」", "”", "।", "॥", "؟", "۔", ";", "α", "中", "ก", "ข", " ", "\n", ".", "a", "A"]


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
@settings(max_examples=300)
def test_spans_are_ordered_stripped_and_cover_mixed_scripts(text: str) -> None:
    assert_span_invariants(text)


def test_a_greek_letter_as_a_symbol_in_english_does_not_make_a_question() -> None:
    text = "Cells were treated with tumor necrosis factor alpha (TNF-α; R&D system) for 6 h. Then they grew."
    assert sentences(text) == [
        "Cells were treated with tumor necrosis factor alpha (TNF-α; R&D system) for 6 h.",
        "Then they grew.",
    ]


def test_a_thai_space_ends_a_sentence_only_where_the_segmenter_says() -> None:
    # Two clauses of one sentence and a second sentence: a space parts all three, the segmenter the sentences.
    text = "แม่น้ำท่วมทุกฤดูใบไม้ผลิ ชาวนาปลูกข้าวเมื่อน้ำลดลง ในปี 1990 มีน้ำมาก"
    assert sentences(text) == ["แม่น้ำท่วมทุกฤดูใบไม้ผลิ ชาวนาปลูกข้าวเมื่อน้ำลดลง", "ในปี 1990 มีน้ำมาก"]
    assert thai.sentence_ends("ก ข") in ([1], [3], [])  # ends inside a run, never past it


def test_a_run_of_thai_longer_than_prose_is_cut_at_every_space() -> None:
    run = "ก " * (thai.LONGEST_SEGMENTED // 2) + "ข"
    assert list(thai.sentence_ends(run)) == list(range(2, len(run), 2))
