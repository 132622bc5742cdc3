"""Scans read in the document's language: pages drawn here as images with a font from the OS (Chinese, Hindi) or
reportlab's own (English), saved as a PDF with no text layer at 150 dpi. The first page read tells the language;
the pages after it are read in that language's data alone, and read right. Skipped where Tesseract, the language's
data or a font that writes it is missing."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2
import pytest

from granrag_mcp.indexing.formats import pdf
from granrag_mcp.indexing.formats.scanned_pages import ScanReader
from granrag_mcp.pages import ocr
from granrag_mcp.progress import Progress, reading_pages
from tests.pages.test_ocr import FONTS

pytestmark = pytest.mark.skipif(ocr.missing() is not None, reason=ocr.missing() or "")

DPI = 150
A4 = (1240, 1754)  # pixels at 150 dpi

PAGES = {
    "zh": [
        [
            "北京是中国的首都，也是一座历史悠久的城市。",
            "长城是世界上最长的建筑之一，每年吸引很多游客。",
            "故宫位于北京的中心，过去是皇帝居住的地方。",
            "黄河和长江是中国最重要的两条河流。",
            "很多城市沿着河流发展，农业也依靠河水。",
            "茶叶在中国有几千年的历史，人们每天都喝茶。",
            "春节是中国最重要的节日，家人会一起吃饭。",
            "中秋节的时候，人们吃月饼，看月亮。",
            "中国的铁路网络很大，高速列车连接各个城市。",
            "学生们在学校学习语文、数学和历史。",
        ],
        [
            "上海是中国最大的城市，位于长江入海口。",
            "港口每天有很多船只进出，运送各种货物。",
            "杭州的西湖非常有名，湖边有很多古老的寺庙。",
        ],
    ],
    "hi": [
        [
            "भारत एक विशाल देश है और दिल्ली उसकी राजधानी है।",
            "गंगा नदी भारत की सबसे पवित्र नदी मानी जाती है।",
            "हिमालय पर्वत देश के उत्तर में स्थित है।",
            "भारत में बहुत सी भाषाएँ बोली जाती हैं।",
            "किसान खेतों में गेहूँ और चावल उगाते हैं।",
            "बच्चे विद्यालय में गणित और इतिहास पढ़ते हैं।",
            "त्योहारों के समय परिवार एक साथ भोजन करते हैं।",
        ],
        [
            "मुंबई भारत का सबसे बड़ा शहर है।",
            "यहाँ समुद्र के किनारे एक बड़ा बंदरगाह है।",
            "जयपुर को गुलाबी शहर भी कहा जाता है।",
        ],
    ],
    "en": [
        [
            "The harbour of Elwyn was rebuilt by Margaret Hale after the great flood of that spring.",
            "The roads to the harbour were slow to travel and the carts often broke their wheels.",
            "Fishermen brought their boats in before dawn and sold the catch on the quay.",
            "The town council met each month in the old hall above the market square.",
        ],
        ["Page two holds the mill of Marrow, rebuilt by Thomas Reed in the following year."],
    ],
}
EXPECTED = {"zh": ["上海是中国最大的城市", "西湖"], "hi": ["मुंबई", "बंदरगाह", "जयपुर"], "en": ["Thomas Reed", "Marrow"]}
LANGUAGES = {"zh": ("chi_sim", "eng"), "hi": ("hin", "eng"), "en": ("eng",)}
FONT_FILES = {"zh": FONTS["chinese"], "hi": FONTS["hindi"]}


def scan(language: str) -> bytes:
    """The language's pages drawn with a font that writes it, as a PDF of images only."""
    from PIL import Image, ImageDraw, ImageFont

    font_file = FONT_FILES.get(language)
    if font_file is not None and not font_file.exists():
        pytest.skip(
            f"no font that writes {language} to draw the test page with (apt-get install {font_file.parent.name})"
        )
    if LANGUAGES[language][0] not in ocr.available_languages():
        pytest.skip(f"Tesseract's {LANGUAGES[language][0]} data is not installed: {ocr.INSTALL}")
    font = ImageFont.truetype(str(font_file), 30) if font_file is not None else ImageFont.load_default(size=26)
    images = []
    for lines in PAGES[language]:
        picture = Image.new("RGB", A4, "white")
        draw = ImageDraw.Draw(picture)
        for row, line in enumerate(lines):
            draw.text((120, 150 + row * 60), line, font=font, fill="black")
        images.append(picture)
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", save_all=True, append_images=images[1:], resolution=DPI)
    return buffer.getvalue()


@pytest.mark.parametrize("language", ["zh", "hi", "en"])
def test_a_scan_is_read_in_the_language_its_first_page_tells(language: str) -> None:
    data = scan(language)
    document = pypdfium2.PdfDocument(data)
    try:
        reader = ScanReader(Path(f"{language}.pdf"), len(document))
        assert reader.languages is None
        reader.read(document, 0)
        assert reader.languages == LANGUAGES[language]
        second = reader.read(document, 1)
    finally:
        document.close()
    flat = "".join(second.split()) if language == "zh" else " ".join(second.split())
    assert all(part in flat for part in EXPECTED[language]), second
    extracted = pdf.extract(Path(f"{language}.pdf"), data)
    assert len(extracted.page_starts) == 2
    assert all(
        part.replace(" ", "") in extracted.text[extracted.page_starts[1] :].replace(" ", "")
        for part in EXPECTED[language]
    )


def test_a_document_language_without_its_data_reads_by_the_first_language_rule() -> None:
    assert ocr.languages_for("und") is None
    assert ocr.languages_for("sw") is None  # no Tesseract data named for it


class Recording(Progress):
    def __init__(self) -> None:
        super().__init__(enabled=False)
        self.seen: list[tuple[str, int, int]] = []

    def update(self, stage: str, done: int, total: int) -> None:
        self.seen.append((stage, done, total))


def test_an_index_run_tells_the_pages_of_a_scan_as_its_worker_reads_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.fakes import FakeEmbedder
    from tests.helpers import fake_index
    from tests.reliability.support import fake_settings

    folder = tmp_path / "scans"
    folder.mkdir()
    (folder / "harbour.pdf").write_bytes(scan("en"))
    progress = Recording()
    summary = fake_index([folder], fake_settings(tmp_path / "store"), FakeEmbedder(), progress=progress)
    assert (summary.added, summary.failed) == (1, [])
    stage = reading_pages("harbour.pdf")
    told = [done for name, done, total in progress.seen if name == stage]
    assert told and told[-1] == 2 and told == sorted(told), progress.seen  # the last page always, in order


def headed() -> bytes:
    """Two pages: a title in 22 point type, parts in 14, paragraphs in 10, as reportlab sets them."""
    from reportlab.lib.pagesizes import A4 as A4_POINTS
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4_POINTS)
    body = "The survey team walked the river bank and wrote down what they saw on the way."
    for title, parts in [("Field Report", ["Birds", "Plants"]), (None, ["Weather"])]:
        y = 760
        if title:
            sheet.setFont("Helvetica-Bold", 22)
            sheet.drawString(72, y, title)
            y -= 40
        for part in parts:
            sheet.setFont("Helvetica-Bold", 14)
            sheet.drawString(72, y, part)
            y -= 24
            sheet.setFont("Helvetica", 10)
            for _ in range(4):
                sheet.drawString(72, y, body)
                y -= 14
            y -= 16
        sheet.showPage()
    sheet.save()
    return buffer.getvalue()


def test_the_lines_of_a_scan_in_larger_type_are_its_headings() -> None:
    from tests.pages.test_ocr import scanned

    extracted = pdf.extract(Path("report.pdf"), scanned(headed()))
    found = [(section.level, section.title) for section in extracted.sections]
    assert found == [(1, "Field Report"), (2, "Birds"), (2, "Plants"), (2, "Weather")], found
    weather = next(s for s in extracted.sections if s.title == "Weather")
    assert weather.start >= extracted.page_starts[1]  # found on its own page


def test_a_scan_set_in_one_size_has_no_headings() -> None:
    from tests.indexing.formats.test_pdf import build_pdf
    from tests.pages.test_ocr import PAGES as TEXT_PAGES
    from tests.pages.test_ocr import scanned

    assert pdf.extract(Path("plain.pdf"), scanned(build_pdf(TEXT_PAGES))).sections == ()
