"""The pages of one PDF that have no text layer, read by OCR (`pages.ocr`) one at a time: each drawn, read and let
go before the next, so a long scan holds one page image at a time; the run told of each page read
(`page_progress`); a page OCR fails on skipped with a warning naming it. The lines set in larger type are kept as
the scan's headings, its outline where it has no bookmarks.

The OCR languages follow the document: its first pages are read by the first-language rule of `ocr.read_image`
(English, or every installed language where English reads unsure), and once they hold enough text to tell its
language (`text.language`), the rest are read in that language's data alone, a pass and two languages fewer a page
for a Chinese or Hindi scan.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from granrag_mcp.indexing.formats.page_progress import page_read
from granrag_mcp.pages import ocr
from granrag_mcp.text.language import UNDETERMINED, detect_language

log = logging.getLogger(__name__)

LANGUAGE_SAMPLE_CHARS = 100
"""Visible characters OCR must have read before the document's language is told from them: a heading or a page
number says nothing of it, while a hundred (a few lines of Latin letters, a short paragraph of Chinese) tell it."""


class ScanReader:
    """Reads the pages of one PDF that need OCR, in the order asked, in the document's language once it is told."""

    def __init__(self, path: Path, pages: int) -> None:
        self.path, self.pages = path, pages
        self.languages: tuple[str, ...] | None = None  # None until told (or where they cannot be)
        self.headings: list[tuple[int, int, str]] = []  # (page from 0, level, title): the lines set in larger type
        self._sample: list[str] = []
        self._told = False

    def read(self, document: Any, number: int) -> str:
        """The text OCR reads on page `number` (from 0); "" (and a warning naming the page) where it cannot."""
        if ocr.missing() is not None:
            return ""
        page = document[number]
        try:
            words = ocr.read_image(ocr.render_for_ocr(page), self.languages)
            text = ocr.text_of(words)
            self.headings += [(number, level, title) for level, title in ocr.headings(words)]
        except ocr.OcrError as error:
            log.warning("%s: page %d skipped: %s", self.path, number + 1, error)
            text = ""
        finally:
            page.close()
        page_read(number + 1, self.pages)
        self._learn(text)
        return text

    def _learn(self, text: str) -> None:
        """Tell the document's language from the first pages read, once they hold `LANGUAGE_SAMPLE_CHARS`."""
        if self._told:
            return
        self._sample.append(text)
        sample = "\n".join(self._sample)
        if ocr.visible_count(sample) < LANGUAGE_SAMPLE_CHARS:
            return
        self._told = True
        language = detect_language(sample)
        self.languages = None if language == UNDETERMINED else ocr.languages_for(language)
        log.debug("%s: OCR reads in %s (language %s)", self.path, self.languages or "the first-language rule", language)
