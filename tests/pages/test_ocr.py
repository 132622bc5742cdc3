"""OCR of pages without a text layer: PDFs written here with reportlab, drawn at 150 dpi and saved as images only
(no text layer), read back by Tesseract; skipped where it is not installed."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pdfplumber
import pypdfium2
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import pdf
from granrag_mcp.pages import ocr
from granrag_mcp.pages.boxes import span_boxes
from tests.indexing.formats.test_pdf import build_pdf

pytestmark = pytest.mark.skipif(ocr.missing() is not None, reason=ocr.missing() or "")

SCAN_DPI = 150


def scanned(data: bytes, dpi: int = SCAN_DPI) -> bytes:
    """The PDF's pages drawn at `dpi` and saved as a PDF of images: what a scanner gives, with no text layer."""
    document = pypdfium2.PdfDocument(data)
    try:
        images = [document[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(document))]
    finally:
        document.close()
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return buffer.getvalue()


PAGES = [
    ["The harbour of Elwyn was rebuilt by Margaret Hale after the flood.", "The roads were slow to travel."],
    ["Page two holds the mill of Marrow, rebuilt by Thomas Reed in spring."],
]


def test_a_scanned_pdf_is_read_page_by_page() -> None:
    text_pdf = build_pdf(PAGES)
    extracted = pdf.extract(Path("scan.pdf"), scanned(text_pdf))
    assert len(extracted.page_starts) == 2
    first, second = extracted.text[: extracted.page_starts[1]], extracted.text[extracted.page_starts[1] :]
    assert "Margaret Hale" in first and "Thomas Reed" in second


def test_a_page_of_a_little_real_text_is_not_read_by_ocr() -> None:
    extracted = pdf.extract(Path("short.pdf"), build_pdf([["Third page."]]))
    assert extracted.text == "Third page."


def test_the_words_ocr_reads_keep_their_boxes_for_page_image() -> None:
    text_pdf = build_pdf(PAGES)
    data = scanned(text_pdf)
    extracted = pdf.extract(Path("scan.pdf"), data)
    with pdfplumber.open(io.BytesIO(text_pdf)) as original:
        page = original.pages[1]
        truth = next(w for w in page.extract_words() if w["text"] == "Reed")
        box = [
            truth["x0"] / page.width,
            truth["top"] / page.height,
            truth["x1"] / page.width,
            truth["bottom"] / page.height,
        ]
    start = extracted.text.index("Reed")
    document = pypdfium2.PdfDocument(data)
    try:
        boxes = span_boxes(document, extracted.page_starts, extracted.text, 0, start, start + 4)
    finally:
        document.close()
    assert [b.page for b in boxes] == [2]
    found = boxes[0].box
    assert found[0] < box[2] and box[0] < found[2] and found[1] < box[3] and box[1] < found[3]


FONTS = {  # Debian's fonts-wqy-microhei and fonts-lohit-deva: a test draws its page with them
    "chinese": Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"),
    "hindi": Path("/usr/share/fonts/truetype/lohit-devanagari/Lohit-Devanagari.ttf"),
}


@pytest.mark.parametrize(
    ("language", "line", "expected"),
    [
        ("chinese", "北京是中国的首都，也是一座历史悠久的城市。", ["北京是中国的首都", "城市"]),
        ("hindi", "भारत एक विशाल देश है और दिल्ली उसकी राजधानी है।", ["भारत", "दिल्ली", "राजधानी"]),
    ],
)
def test_a_chinese_and_a_hindi_page_are_read(language: str, line: str, expected: list[str]) -> None:
    from PIL import Image, ImageDraw, ImageFont

    from granrag_mcp.indexing.formats import image

    if not FONTS[language].exists():
        pytest.skip(
            f"no {language} font to draw the test page with (apt-get install fonts-wqy-microhei fonts-lohit-deva)"
        )
    picture = Image.new("L", (1240, 400), 255)
    ImageDraw.Draw(picture).text((60, 100), line, font=ImageFont.truetype(str(FONTS[language]), 40), fill=0)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG")
    text = image.extract(Path(f"{language}.png"), buffer.getvalue()).text
    assert all(part in text for part in expected), text


def test_a_scan_ocr_reads_nothing_on_fails_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """A blank scanned page has no words: the file is skipped saying so, as a text PDF without text is."""
    blank = scanned(build_pdf([[""]]))
    with caplog.at_level(logging.WARNING), pytest.raises(ExtractionError, match="OCR read no text"):
        pdf.extract(Path("blank.pdf"), blank)


def test_a_page_ocr_fails_on_is_skipped_with_a_warning_naming_it(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ocr, "TIMEOUT_S", 0.001)  # no page can be read this fast: each one fails as a hung engine
    with caplog.at_level(logging.WARNING), pytest.raises(ExtractionError, match="OCR read no text"):
        pdf.extract(Path("slow.pdf"), scanned(build_pdf(PAGES)))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("slow.pdf: page 1 skipped: OCR took longer" in m for m in warned), warned
    assert any("slow.pdf: page 2 skipped" in m for m in warned), warned


def two_columns() -> bytes:
    """A page of two columns, each a paragraph of numbered sentences, left column first."""
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    for column, x in enumerate((60, 320)):
        for line in range(12):
            sheet.drawString(x, 760 - 16 * line, f"Column {'AB'[column]} line {line + 1} of the text.")
    sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def test_a_two_column_page_is_read_column_by_column() -> None:
    text = pdf.extract(Path("columns.pdf"), scanned(two_columns())).text
    assert text.index("Column A line 12") < text.index("Column B line 1 ")


def banded() -> bytes:
    """A title across the page, two columns under it, then a paragraph across the page and two more columns."""
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    sheet.setFont("Helvetica-Bold", 16)
    sheet.drawString(60, 790, "A title that runs across the whole width of the page above both columns")
    sheet.setFont("Helvetica", 11)
    for band, top in enumerate((750, 420)):
        for column, x in enumerate((60, 320)):
            for line in range(8):
                sheet.drawString(x, top - 16 * line, f"Band {band + 1} column {'AB'[column]} line {line + 1} here.")
    sheet.drawString(60, 560, "A paragraph set across the whole width of the page between the two bands of columns.")
    sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def test_a_page_of_bands_of_columns_is_read_band_by_band() -> None:
    text = " ".join(pdf.extract(Path("bands.pdf"), scanned(banded())).text.split())
    order = [
        "A title that runs",
        "Band 1 column A line 8",
        "Band 1 column B line 1 ",
        "Band 1 column B line 8",
        "A paragraph set across",
        "Band 2 column A line 1 ",
        "Band 2 column B line 8",
    ]
    assert [text.index(part) for part in order] == sorted(text.index(part) for part in order), text


def test_a_photographed_page_skewed_and_noisy_is_read() -> None:
    import random

    document = pypdfium2.PdfDocument(build_pdf(PAGES))
    try:
        picture = document[0].render(scale=200 / 72).to_pil().convert("L")
    finally:
        document.close()
    picture = picture.rotate(3, expand=True, fillcolor=255)
    rng = random.Random(1)
    noisy = picture.point(lambda v: v)  # a copy to speckle
    pixels = noisy.load()
    for _ in range(noisy.width * noisy.height // 50):
        x, y = rng.randrange(noisy.width), rng.randrange(noisy.height)
        pixels[x, y] = rng.choice((0, 255))
    buffer = io.BytesIO()
    noisy.convert("RGB").save(buffer, "PDF", resolution=200)
    text = " ".join(pdf.extract(Path("photo.pdf"), buffer.getvalue()).text.split())
    assert "Margaret Hale" in text and "flood" in text, text
    assert text.index("flood") < text.index("roads were slow"), text  # its lines in order, despite the skew


def with_invisible_layer(scan: bytes, text: str) -> bytes:
    """The scan's page image redrawn by reportlab under an invisible text layer holding `text`."""
    from reportlab.lib.utils import ImageReader

    document = pypdfium2.PdfDocument(scan)
    try:
        picture = document[0].render(scale=SCAN_DPI / 72).to_pil().convert("RGB")
    finally:
        document.close()
    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    sheet.drawImage(ImageReader(picture), 0, 0, *A4)
    layer = sheet.beginText(72, 780)
    layer.setTextRenderMode(3)
    layer.textLine(text)
    sheet.drawText(layer)
    sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def test_an_invisible_layer_of_garbage_is_read_again_and_a_good_one_kept() -> None:
    scan = scanned(build_pdf(PAGES[:1]))
    noise = with_invisible_layer(scan, "~ ;| ,' -- :: i ~ ' ;; | , ~~ :' |; - ' , ; | ~")
    assert "Margaret Hale" in pdf.extract(Path("noise.pdf"), noise).text
    earlier = with_invisible_layer(scan, "An earlier OCR layer that reads well enough to keep as it is.")
    assert (
        pdf.extract(Path("kept.pdf"), earlier).text == "An earlier OCR layer that reads well enough to keep as it is."
    )


@pytest.mark.skipif(
    "osd" not in ocr.installed_data(), reason="Tesseract's osd data is not installed: apt-get install tesseract-ocr-osd"
)
@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_page_scanned_turned_is_read_upright_and_its_boxes_stay_on_the_page_as_it_is(turn: int) -> None:
    document = pypdfium2.PdfDocument(build_pdf(PAGES))
    try:
        page = document[0].render(scale=SCAN_DPI / 72).to_pil().convert("L")
    finally:
        document.close()
    upright = next(w for w in ocr.read_image(page) if w.text == "Hale")
    turned = page.rotate(-turn, expand=True, fillcolor=255)  # the scan as it came: `turn` degrees clockwise off
    words = ocr.read_image(turned)
    assert "Margaret Hale" in ocr.text_of(words)
    # Where "Hale" stands on the turned page: its upright box turned the other way, as the scanner turned it.
    expected = ocr.turned_back(upright.box, (360 - turn) % 360)
    found = next(w for w in words if w.text == "Hale").box
    assert all(abs(a - b) < 0.02 for a, b in zip(found, expected)), (found, expected)


def test_a_box_turned_back_by_each_quarter() -> None:
    box = (0.1, 0.2, 0.3, 0.25)
    assert ocr.turned_back(box, 0) == box
    assert ocr.turned_back(box, 180) == pytest.approx((0.7, 0.75, 0.9, 0.8))
    assert ocr.turned_back(box, 90) == pytest.approx((0.2, 0.7, 0.25, 0.9))
    assert ocr.turned_back(ocr.turned_back(box, 90), 270) == pytest.approx(box)
