"""Reading a page that has no text layer: Tesseract (from the OS packages, with its language data) run on the page's
image as a subprocess, its words kept with their boxes and in its reading order (blocks, paragraphs, lines).

Which pages need it is one rule (`needs_ocr`), shared by the extractor and by page_image, which reads the same page
again to place a hit's characters on the words they came from: Tesseract gives the same words for the same image.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

ENGINE = "tesseract"
INSTALL = "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-hin"
LANGUAGES = ("eng", "chi_sim", "hin")
"""The languages read, where their data is installed: the scripts the project's documents are written in."""
DPI = 300
"""Tesseract reads body text best with characters about 30 pixels high: 300 dpi for 10-12 point type."""
MIN_VISIBLE_CHARS = 16
"""A page whose text layer shows fewer characters than this is read from its image (a scan, a photo)."""
OMP_THREADS = "1"
"""Tesseract's OpenMP threads per page: pages run side by side in the extraction workers, and its threads fighting
for shared cores made a page four times slower than one thread alone."""
TIMEOUT_S = 120
"""One page's OCR at most: past it the page is skipped with a warning, never the run."""


class OcrError(Exception):
    """A page OCR could not read (the engine failed or timed out); the caller skips the page with a warning."""


@dataclass(frozen=True)
class Word:
    text: str
    box: tuple[float, float, float, float]  # fractions of the image from its top-left corner
    line: tuple[int, int, int]  # block, paragraph, line: the reading order Tesseract found


@lru_cache(maxsize=1)
def available_languages() -> tuple[str, ...]:
    """The languages of LANGUAGES whose data is installed; () where Tesseract is not."""
    binary = shutil.which(ENGINE)
    if binary is None:
        return ()
    try:
        listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    installed = {line.strip() for line in listed.splitlines()[1:]}
    return tuple(language for language in LANGUAGES if language in installed)


def missing() -> str | None:
    """One line saying what to install where OCR cannot run; None where it can."""
    if available_languages():
        return None
    return f"OCR is not available (Tesseract with its language data is not installed): {INSTALL}"


def visible_count(text: str) -> int:
    return sum(1 for char in text if not char.isspace() and char.isprintable())


def needs_ocr(text_layer: str) -> bool:
    """Whether a page's text layer is too thin to be its text (the page must also show an image: `has_image`)."""
    return visible_count(text_layer) < MIN_VISIBLE_CHARS


def has_image(page: Any) -> bool:
    """Whether a PDF page (pypdfium2) draws an image: a page of only a little text is not a scan."""
    import pypdfium2.raw

    return any(True for _ in page.get_objects(filter=[pypdfium2.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2))


def scanned(page: Any, text_layer: str) -> bool:
    """The rule for reading a PDF page by OCR: a thin text layer over an image."""
    return needs_ocr(text_layer) and has_image(page)


def read_image(image: Any) -> list[Word]:
    """The words of a PIL image, in reading order, with their boxes; OcrError where the engine fails."""
    languages = available_languages()
    if not languages:
        raise OcrError(missing() or "OCR is not available")
    width, height = image.size
    with tempfile.TemporaryDirectory(prefix="granrag-ocr-") as folder:
        source = Path(folder) / "page.png"
        image.convert("L").save(source)
        try:
            done = subprocess.run(
                [shutil.which(ENGINE) or ENGINE, str(source), "stdout", "-l", "+".join(languages), "tsv"],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                env={**os.environ, "OMP_THREAD_LIMIT": OMP_THREADS},
            )
        except subprocess.TimeoutExpired as error:
            raise OcrError(f"OCR took longer than {TIMEOUT_S} s") from error
        except OSError as error:
            raise OcrError(f"OCR could not start ({error})") from error
    if done.returncode != 0:
        raise OcrError(f"OCR failed ({done.stderr.strip().splitlines()[-1:] or done.returncode})")
    words = []
    for row in csv.DictReader(io.StringIO(done.stdout), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        left, top = int(row["left"]), int(row["top"])
        right, bottom = left + int(row["width"]), top + int(row["height"])
        line = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
        words.append(Word(text, (left / width, top / height, right / width, bottom / height), line))
    return words


def text_of(words: list[Word]) -> str:
    """The words as text: a space between words of a line, a line break between lines, a blank line between
    paragraphs."""
    out: list[str] = []
    last: tuple[int, int, int] | None = None
    for word in words:
        if last is not None:
            out.append(" " if word.line == last else "\n" if word.line[:2] == last[:2] else "\n\n")
        out.append(word.text)
        last = word.line
    return "".join(out)


def render_for_ocr(page: Any) -> Any:
    """A PDF page (pypdfium2) drawn at the resolution OCR reads best, as a PIL image."""
    return page.render(scale=DPI / 72).to_pil()


def char_boxes(words: list[Word]) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Each visible character of the words with a box: its word's height, and an equal share of its width."""
    out = []
    for word in words:
        chars = [char for char in word.text if not char.isspace() and char.isprintable()]
        x0, y0, x1, y1 = word.box
        step = (x1 - x0) / max(len(chars), 1)
        out += [(char, (x0 + n * step, y0, x0 + (n + 1) * step, y1)) for n, char in enumerate(chars)]
    return out
