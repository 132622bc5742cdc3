"""Language identification: one code per text, the written language for regional varieties, "und" when unsure."""

from __future__ import annotations

import pytest

from granrag_mcp.text.language import UNDETERMINED, detect_language


@pytest.mark.parametrize(
    "text, code",
    [
        ("The river floods every spring, and the farmers plant rice when the water goes down.", "en"),
        ("Der Fluss tritt jeden Frühling über die Ufer, und die Bauern pflanzen danach ihren Reis.", "de"),
        ("Река разливается каждую весну, а крестьяне сажают рис, когда вода уходит.", "ru"),
        ("يفيض النهر كل ربيع، ويزرع الفلاحون الأرز عندما تنحسر المياه.", "ar"),
        ("नदी हर वसंत में बाढ़ लाती है, और पानी उतरने पर किसान धान बोते हैं।", "hi"),
        ("แม่น้ำท่วมทุกฤดูใบไม้ผลิ และชาวนาปลูกข้าวเมื่อน้ำลดลง", "th"),
        ("这条河每年春天都会泛滥，水退以后农民就开始种水稻。", "zh"),
        ("Το ποτάμι πλημμυρίζει κάθε άνοιξη και οι αγρότες φυτεύουν ρύζι όταν πέφτει το νερό.", "el"),
        ("川は毎年春に氾濫し、水が引くと農家は米を植えます。", "ja"),
    ],
)
def test_a_sentence_is_named_by_its_language(text: str, code: str) -> None:
    assert detect_language(text) == code


def test_a_chinese_question_is_chinese_not_a_regional_variety() -> None:
    # The identifier's own answer for short Mandarin questions is often Wu ("wuu"); the words are Chinese.
    assert detect_language("这座城市的人口有多少？") == "zh"


@pytest.mark.parametrize("text", ["", "   ", "42", "3.14 + 2", "—", "ok"])
def test_too_little_text_is_undetermined(text: str) -> None:
    assert detect_language(text) == UNDETERMINED


def test_a_long_document_is_judged_by_samples_across_it() -> None:
    english = "The committee met on Tuesday to discuss the budget for the new library. " * 200
    chinese = "委员会星期二开会讨论新图书馆的预算。" * 400
    assert detect_language(english + chinese) in {"en", "zh"}
    assert detect_language(chinese + english + chinese) == "zh"
