"""Documents built to take a reader past its bounds: zip bombs, trees of a million elements, a sheet that
declares the largest size Excel allows, markup that made the HTML parser quadratic, a bookmark that made the PDF
section finder quadratic, and files that run a worker out of time or memory.

Each is skipped with one warning naming the limit and its variable, or read in linear time; the run commits the
rest. The work that once took minutes runs in a child process that a generous deadline kills, so a regression is
a failure, not a hung suite.
"""

from __future__ import annotations

import io
import logging
import multiprocessing
import zipfile
from collections.abc import Callable
from pathlib import Path
from queue import Empty

import openpyxl
import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.extract import extract_text
from granrag_mcp.indexing.formats import html, pdf, spreadsheet
from granrag_mcp.progress import Progress
from granrag_mcp.settings import LimitSettings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.indexing.formats.test_docx import build_docx
from tests.indexing.formats.test_epub import build_epub
from tests.indexing.formats.test_pptx import build_pptx
from tests.indexing.formats.test_spreadsheet import build_xlsx
from tests.reliability.support import fake_settings
from tests.reliability.test_hostile_files import corpus, stored

DEADLINE_S = 60.0
"""A bound no linear reading comes near on a loaded machine, and no quadratic one meets."""
BUILDERS = {".docx": build_docx, ".pptx": build_pptx, ".xlsx": build_xlsx, ".epub": build_epub}


def with_member(data: bytes, name: str, chunks: int, chunk: bytes = b"\0" * (1024 * 1024)) -> bytes:
    """The zip `data` with one more member of `chunks` copies of `chunk`, streamed into the archive."""
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive, archive.open(name, "w") as member:
        for _ in range(chunks):
            member.write(chunk)
    return buffer.getvalue()


def replaced(data: bytes, name: str, edit: Callable[[bytes], bytes]) -> bytes:
    """The zip `data` with member `name` rewritten by `edit`."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = source.read(info)
            target.writestr(info.filename, edit(body) if info.filename == name else body)
    return out.getvalue()


def extract_file(tmp_path: Path, name: str, data: bytes, limits: LimitSettings | None = None):
    path = tmp_path / name
    path.write_bytes(data)
    return extract_text(SourceFile(path, name, path.suffix), limits)


def _call(queue: multiprocessing.Queue, target: Callable, args: tuple) -> None:
    queue.put(target(*args))


def within_deadline(target: Callable, *args: object) -> object:
    """`target(*args)` in a child process, its result; a failure when it has not answered by DEADLINE_S."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_call, args=(queue, target, args), daemon=True)
    child.start()
    try:
        return queue.get(timeout=DEADLINE_S)  # before the join: a child exits only once its result is taken
    except Empty:
        pytest.fail(f"{target.__name__} still running after {DEADLINE_S:g} s: quadratic again")
    finally:
        child.kill()
        child.join()


# -- zip bombs --


@pytest.mark.parametrize("suffix", sorted(BUILDERS))
def test_a_part_that_unpacks_past_the_member_cap_skips_the_file(tmp_path: Path, suffix: str) -> None:
    """65 MiB of zeros in a few kilobytes: a 1.5 GiB image part was read whole by python-docx."""
    bomb = with_member(BUILDERS[suffix](), "media/image1.png", 65)
    assert len(bomb) < 1024 * 1024
    with pytest.raises(ExtractionError, match=r"unpacks to 68,157,440 bytes, over GRANRAG_MAX_ARCHIVE_MEMBER_BYTES"):
        extract_file(tmp_path, f"bomb{suffix}", bomb)


@pytest.mark.parametrize("suffix", sorted(BUILDERS))
def test_a_part_that_inflates_a_thousandfold_is_a_zip_bomb(tmp_path: Path, suffix: str) -> None:
    bomb = with_member(BUILDERS[suffix](), "media/fill.xml", 8)
    with pytest.raises(ExtractionError, match=r"a zip bomb\), over GRANRAG_MAX_COMPRESSION_RATIO \(200\)"):
        extract_file(tmp_path, f"bomb{suffix}", bomb)


def test_parts_that_unpack_past_the_archive_cap_together_skip_the_file(tmp_path: Path) -> None:
    data = build_docx()
    for number in range(3):
        data = with_member(data, f"media/part{number}.bin", 1, bytes(range(256)) * 4096)
    limits = LimitSettings(max_archive_bytes=2 * 1024 * 1024)
    with pytest.raises(ExtractionError, match="over GRANRAG_MAX_ARCHIVE_BYTES"):
        extract_file(tmp_path, "many.docx", data, limits)


def test_a_docx_of_many_empty_paragraphs_is_counted_before_python_docx_builds_it(tmp_path: Path) -> None:
    """3 million empty paragraphs in 542 KB took python-docx to 3.0 GB."""
    data = replaced(
        build_docx(), "word/document.xml", lambda xml: xml.replace(b"<w:body>", b"<w:body>" + b"<w:p/>" * 20_000)
    )
    limits = LimitSettings(max_xml_nodes=10_000)
    with pytest.raises(ExtractionError, match=r"more elements, over GRANRAG_MAX_XML_NODES \(10,000\)"):
        extract_file(tmp_path, "empty.docx", data, limits)
    assert "Annual report" in extract_file(tmp_path, "empty.docx", data).text  # under the default limit: read


def test_xml_nested_past_the_depth_limit_skips_the_file(tmp_path: Path) -> None:
    deep = b"<w:r>" * 300 + b"</w:r>" * 300
    data = replaced(build_docx(), "word/document.xml", lambda xml: xml.replace(b"<w:body>", b"<w:body>" + deep))
    with pytest.raises(ExtractionError, match=r"nests XML deeper, over GRANRAG_MAX_XML_DEPTH \(256\)"):
        extract_file(tmp_path, "deep.docx", data)


# -- declared sheet dimensions --


def far_cell_sheet() -> bytes:
    """A sheet declaring A1:XFD1048576 (the largest Excel allows) that holds a header, a row and one far cell:
    read by the declared size, every missing row before it was padded to 16,384 cells (about 18 minutes)."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Wide"
    sheet.append(["Name", "Port"])
    sheet.append(["Ann", "Lisbon"])
    sheet["XFD200000"] = "far away"  # the rows between were padded to the declared width
    buffer = io.BytesIO()
    workbook.save(buffer)

    def declare(xml: bytes) -> bytes:
        start = xml.index(b"<dimension ref=")
        end = xml.index(b"/>", start) + 2
        return xml[:start] + b'<dimension ref="A1:XFD1048576"/>' + xml[end:]

    return replaced(buffer.getvalue(), "xl/worksheets/sheet1.xml", declare)


def test_a_sheet_declaring_the_largest_dimensions_is_read_sparsely() -> None:
    extracted = within_deadline(spreadsheet.extract, Path("wide.xlsx"), far_cell_sheet())
    assert extracted.text == "Wide\n\nName: Ann; Port: Lisbon\ncolumn 16384: far away"


# -- quadratic markup --


def test_an_attribute_quote_never_closed_60000_times_is_read_in_linear_time() -> None:
    """html.parser took 173 s on 40,000 of these; a browser shows nothing, and so do we."""
    extracted = within_deadline(html.markup_text, "<html><body><p>Before.</p>" + "<a b='" * 60_000)
    assert extracted.text == "Before."


def test_a_hidden_list_of_300000_unclosed_items_is_read_in_linear_time() -> None:
    markup = "<html><body><ul hidden>" + "<li><a href=#>x</a>" * 300_000 + "</ul><p>After the list.</p>"
    assert within_deadline(html.markup_text, markup).text == "After the list."


def test_300000_unclosed_nested_tags_are_read_in_linear_time() -> None:
    extracted = within_deadline(html.markup_text, "<html><body>" + "<div><span>ab " * 300_000)
    assert extracted.text.count("ab") == 300_000


# -- the bookmark finder --


def test_a_bookmark_of_150000_words_over_a_page_of_360000_is_found_in_linear_time() -> None:
    """The title's pattern was tried at every position, each attempt running through most of the title."""
    page = "word " * 359_999 + "end"
    title = " ".join(["word"] * 149_999 + ["end"])
    found = within_deadline(pdf._sections, page, (0,), [(0, 1, title), (0, 2, "missing title")])
    assert [(s.start, s.level) for s in found] == [(5 * 210_000, 1)]
    assert found[0].title.startswith("word word") and found[0].title.endswith("end")


def test_a_bookmark_title_spans_line_breaks_and_runs_of_spaces() -> None:
    text = "Intro text.\n\nChapter\n  One begins here.\nChapter One again."
    [section] = pdf._sections(text, (0,), [(0, 1, "Chapter One")])
    assert (section.start, section.title) == (text.index("Chapter"), "Chapter")


# -- the worker's own limits --


def wide_rows(rows: int) -> bytes:
    """A sheet whose every row has a cell in the last column, XFD: each row really is 16,384 cells wide."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    for row in range(1, rows + 1):
        sheet.cell(row, 1, f"row {row}")
        sheet.cell(row, 16384, "far")
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def test_a_reader_past_its_time_limit_is_killed_and_the_run_commits_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = corpus(tmp_path / "docs", ["a.md", "c.md"])
    (docs / "b.xlsx").write_bytes(wide_rows(4000))
    settings = fake_settings(tmp_path / "store").model_copy(update={"extract_timeout": 2.0})
    with caplog.at_level(logging.WARNING):
        summary = fake_index([docs], settings, FakeEmbedder())
    assert summary.committed and summary.added == 2
    [(path, reason)] = summary.failed
    assert path == str(docs / "b.xlsx")
    assert reason.startswith("its extraction took over GRANRAG_EXTRACT_TIMEOUT (2 s); the reader was stopped")
    assert sorted(stored(settings.store)[0]) == ["a.md", "c.md"]
    assert f"skipped {docs / 'b.xlsx'}: its extraction took over GRANRAG_EXTRACT_TIMEOUT" in caplog.text
    assert not multiprocessing.active_children()  # the run ended its workers


def test_a_reader_past_its_memory_limit_is_stopped_and_the_run_commits_the_rest(tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", ["a.md", "c.md"])
    (docs / "b.txt").write_bytes(b"A line of text that repeats.\n" * (60 * 1024 * 1024 // 29))
    settings = fake_settings(tmp_path / "store").model_copy(update={"extract_memory_bytes": 160 * 1024 * 1024})
    summary = fake_index([docs], settings, FakeEmbedder())
    assert summary.committed and summary.added == 2
    [(path, reason)] = summary.failed
    assert path == str(docs / "b.txt")
    assert "needed more memory than GRANRAG_EXTRACT_MEMORY_BYTES (167,772,160) allows" in reason
    assert sorted(stored(settings.store)[0]) == ["a.md", "c.md"]


class Cancelled(Exception):
    pass


class StopWhileReading(Progress):
    """Stops the run (as a cancelled call's progress does) once a worker has been reading for a while."""

    def __init__(self) -> None:
        super().__init__(enabled=False)
        self.calls = 0

    def update(self, stage: str, done: int, total: int) -> None:
        if stage == "extracting documents":
            self.calls += 1
            if self.calls > 10:
                raise Cancelled


def test_a_cancelled_run_kills_the_worker_that_is_still_reading(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "slow.xlsx").write_bytes(wide_rows(4000))
    settings = fake_settings(tmp_path / "store")
    with pytest.raises(Cancelled):
        fake_index([docs], settings, FakeEmbedder(), progress=StopWhileReading())
    assert not multiprocessing.active_children()


def test_an_outline_keeps_its_first_headings_and_cuts_long_titles(tmp_path: Path) -> None:
    markdown = "".join(f"# Heading {n}\n\nText {n}.\n\n" for n in range(50)) + "# " + "long " * 400 + "\n\nEnd.\n"
    extracted = extract_file(tmp_path, "many.md", markdown.encode(), LimitSettings(max_sections=20))
    assert [s.title for s in extracted.sections] == [f"Heading {n}" for n in range(20)]
    [last] = extract_file(tmp_path, "many.md", markdown.encode()).sections[-1:]
    assert len(last.title) == 300 and last.title.endswith("…")


def test_a_sheet_larger_than_the_part_cap_is_read_row_by_row_not_skipped(tmp_path: Path) -> None:
    """A large table is not a bomb: openpyxl streams a sheet, so only its compression ratio is held to a limit."""
    workbook = openpyxl.Workbook()
    for n in range(30_000):
        workbook.active.append([f"crane {n * 7919 % 100003}", n])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with zipfile.ZipFile(buffer) as archive:
        assert archive.getinfo("xl/worksheets/sheet1.xml").file_size > 1024 * 1024
    limits = LimitSettings(max_archive_member_bytes=1024 * 1024, max_archive_bytes=1024 * 1024)
    extracted = extract_file(tmp_path, "table.xlsx", buffer.getvalue(), limits)
    assert extracted.text.endswith("(19999 more rows not indexed)")


def test_a_python_file_over_the_parse_cap_is_outlined_by_its_lines_without_a_syntax_tree(tmp_path: Path) -> None:
    """`ast.parse` took 2.4 GB on 5 MB of `x=[1,1,...]`: past the cap, definitions come from their lines."""
    source = (
        "class Crane:\n    def lift(self):\n        return 1\n\n\nasync def tide():\n    pass\n\nx = ["
        + "1," * 400
        + "1]\n"
    )
    over = extract_file(tmp_path, "gen.py", source.encode(), LimitSettings(max_python_parse_bytes=100))
    parsed = extract_file(tmp_path, "gen.py", source.encode())
    assert [(s.start, s.level, s.title) for s in over.sections] == [
        (s.start, s.level, s.title) for s in parsed.sections
    ]
    assert [s.title for s in over.sections] == ["class Crane", "def lift", "async def tide"]
