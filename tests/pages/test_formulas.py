"""Formula regions on PDF pages written here with reportlab (a Unicode font that holds the mathematical symbols):
a displayed formula and an inline one are found where they are printed; prose, numbers, a Greek sentence and a
year in brackets are not."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

from granrag_mcp.pages import formulas

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
PAGE_HEIGHT = A4[1]

PROSE = [
    "The survey of the valley counted every working mill in the spring.",
    "In 1990 the costs rose by 12 per cent (see Table 3), and -5 degrees was common.",
    "Η ομάδα περπάτησε στην όχθη του ποταμού και κατέγραψε ό,τι είδε.",
    "Rates were 3/4 of the year before [2], or so the minutes say.",
]
DISPLAYED = "E = ∑ᵢ ∫ ρ(x) · ∇φ dx ≤ ∞"
INLINE_BEFORE, INLINE, INLINE_AFTER = "The bound ", "α ≤ β² + √γ", " holds for every mill."


def write_page() -> tuple[bytes, dict[str, float]]:
    """One page: prose lines, a displayed formula, a line with an inline formula; the baseline of each (points)."""
    if not FONT.exists():
        pytest.skip(f"{FONT} is not installed")
    pdfmetrics.registerFont(TTFont("DejaVu", str(FONT)))
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    at: dict[str, float] = {}
    y = 780.0
    for n, line in enumerate(PROSE):
        sheet.setFont("DejaVu", 11)
        sheet.drawString(72, y, line)
        at[f"prose{n}"] = y
        y -= 40
    sheet.setFont("DejaVu", 14)
    sheet.drawString(150, y, DISPLAYED)
    at["displayed"] = y
    y -= 40
    sheet.setFont("DejaVu", 11)
    sheet.drawString(72, y, INLINE_BEFORE + INLINE + INLINE_AFTER)
    at["inline"] = y
    sheet.showPage()
    sheet.save()
    return buffer.getvalue(), at


def on_line(box: formulas.Box, baseline: float) -> bool:
    top, bottom = (1 - box[3]) * PAGE_HEIGHT, (1 - box[1]) * PAGE_HEIGHT
    return top - 4 <= baseline <= bottom


def test_formulas_are_found_where_they_are_printed_and_prose_is_not() -> None:
    data, at = write_page()
    document = pypdfium2.PdfDocument(data)
    try:
        found = formulas.formula_boxes(document[0])
    finally:
        document.close()
    assert len(found) == 2, found
    displayed = next(b for b in found if on_line(b, at["displayed"]))
    inline = next(b for b in found if on_line(b, at["inline"]))
    assert 150 / A4[0] - 0.01 < displayed[0] < 150 / A4[0] + 0.03 and displayed[2] > 0.4  # from its "=" on
    # the inline formula's box holds the formula, not the sentence around it
    assert inline[0] > 72 / A4[0] + 0.05 and inline[2] < 0.5
    for n in range(len(PROSE)):
        assert not any(on_line(b, at[f"prose{n}"]) for b in found), PROSE[n]


def test_math_fonts_and_symbols_are_strong_and_greek_or_digits_alone_are_weak() -> None:
    assert formulas.strength("x", "cmmi10") == 2 and formulas.strength("x", "abcdef+cmsy7") == 2
    assert formulas.strength("∑", "dejavusans") == 2 and formulas.strength("𝑥", "") == 2
    assert formulas.strength("α", "dejavusans") == 1 and formulas.strength("7", "helvetica") == 1
    assert formulas.strength("a", "helvetica") == 0


def test_a_fractions_parts_are_one_region() -> None:
    numerator, bar, denominator = (0.40, 0.30, 0.46, 0.32), (0.39, 0.325, 0.47, 0.33), (0.41, 0.335, 0.45, 0.355)
    elsewhere = (0.1, 0.6, 0.2, 0.62)
    merged = formulas.merged([numerator, bar, denominator, elsewhere])
    assert len(merged) == 2
    assert merged[0] == pytest.approx(
        (0.39 - formulas.PAD, 0.30 - formulas.PAD, 0.47 + formulas.PAD, 0.355 + formulas.PAD)
    )
