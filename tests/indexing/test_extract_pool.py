"""The extraction pool with readers that tell their pages (as a scanned PDF read by OCR does): the run is told of
each page, the time limit runs from the last page read rather than from the document's start, and a warning a
reader logs in its worker reaches the run's log. The readers here are registered for made-up suffixes; the worker
imports them by name from this module, as it does a format registered at run time."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.extract_pool import ExtractionPool
from granrag_mcp.indexing.formats import EXTRACTORS
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.page_progress import page_read
from granrag_mcp.settings import LimitSettings

PAGES = 10
PAGE_SECONDS = 0.3
TIMEOUT = 2.0
"""Well over the time between two reports of pages (two pages at most, 0.6 s, on a loaded machine too), well
under the document's (`PAGES` x `PAGE_SECONDS` = 3 s)."""

log = logging.getLogger("granrag_mcp.tests.pages")


def paged(path: Path, data: bytes) -> ExtractedText:
    """A slow reader that tells each page as it reads it, and warns of its third, as OCR does of a page it skips."""
    for number in range(1, PAGES + 1):
        time.sleep(PAGE_SECONDS)
        if number == 3:
            log.warning("%s: page %d skipped: a test page", path, number)
        page_read(number, PAGES)
    return ExtractedText(text=data.decode(), replaced_bytes=False)


def silent(path: Path, data: bytes) -> ExtractedText:
    """The same reader without a word about its pages."""
    time.sleep(PAGES * PAGE_SECONDS)
    return ExtractedText(text=data.decode(), replaced_bytes=False)


def source(tmp_path: Path, suffix: str) -> SourceFile:
    path = tmp_path / f"doc{suffix}"
    path.write_text("some text")
    return SourceFile(path, path.name, suffix)


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXTRACTORS, ".paged", paged)
    monkeypatch.setitem(EXTRACTORS, ".silent", silent)


@pytest.mark.usefixtures("readers")
def test_a_reader_that_tells_its_pages_is_timed_from_its_last_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[int, int, int]] = []
    limits = LimitSettings(extract_timeout=TIMEOUT)
    with caplog.at_level(logging.WARNING), ExtractionPool(limits) as pool:
        [read] = pool.extract([source(tmp_path, ".paged")], pages=lambda *report: seen.append(report))
    assert isinstance(read, ExtractedText) and read.text == "some text"
    assert seen and seen[-1] == (0, PAGES, PAGES)  # the last page always, the others as often as they come
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)
    assert f"{tmp_path / 'doc.paged'}: page 3 skipped: a test page" in caplog.messages  # logged by the run


@pytest.mark.usefixtures("readers")
def test_a_reader_silent_about_its_pages_gets_the_limit_for_the_whole_document(tmp_path: Path) -> None:
    with ExtractionPool(LimitSettings(extract_timeout=TIMEOUT)) as pool:
        [read] = pool.extract([source(tmp_path, ".silent")])
    assert isinstance(read, ExtractionError)
    assert read.reason.startswith(f"its extraction took over GRANRAG_EXTRACT_TIMEOUT ({TIMEOUT:g} s); the reader")
