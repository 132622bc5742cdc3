"""Reading a page that has no text layer: Tesseract (from the OS packages, with its language data) run on the page's
image as a subprocess, its words kept with their boxes and in its reading order (blocks, paragraphs, lines).

Which pages need it is one rule (`needs_ocr`), shared by the extractor and by page_image, which reads the same page
again to place a hit's characters on the words they came from: Tesseract gives the same words for the same image.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
import shutil
import statistics
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
def installed_data() -> frozenset[str]:
    """Every language data Tesseract lists (osd, the orientation and script detector, among them); empty where
    Tesseract is not installed."""
    binary = shutil.which(ENGINE)
    if binary is None:
        return frozenset()
    try:
        listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in listed.splitlines()[1:])


def available_languages() -> tuple[str, ...]:
    """The languages of LANGUAGES whose data is installed; () where Tesseract is not."""
    return tuple(language for language in LANGUAGES if language in installed_data())


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


MIN_WORD_SHARE = 0.5
"""An invisible text layer (an earlier OCR's) is kept when at least this share of its words hold a letter or digit
run of two or more; below it the layer is garbage and the page is read again."""


def garbage(text_layer: str) -> bool:
    """Whether a text layer reads as noise rather than words: too few of its words hold two letters or digits."""
    words = text_layer.split()
    if not words:
        return True
    worded = sum(1 for word in words if sum(1 for char in word if char.isalnum()) >= 2)
    return worded / len(words) < MIN_WORD_SHARE


def invisible_only(page: Any) -> bool:
    """Whether every text object of a PDF page is drawn invisible: the hidden layer an OCR program lays on a scan."""
    import pypdfium2.raw

    modes = [
        pypdfium2.raw.FPDFTextObj_GetTextRenderMode(obj.raw)
        for obj in page.get_objects(filter=[pypdfium2.raw.FPDF_PAGEOBJ_TEXT], max_depth=2)
    ]
    return bool(modes) and all(mode == pypdfium2.raw.FPDF_TEXTRENDERMODE_INVISIBLE for mode in modes)


def scanned(page: Any, text_layer: str) -> bool:
    """The rule for reading a PDF page by OCR: an image under a thin text layer, or under an invisible layer of
    garbage."""
    if not has_image(page):
        return False
    return needs_ocr(text_layer) or (garbage(text_layer) and invisible_only(page))


FIRST_LANGUAGE = "eng"
"""Read first alone, since it is the commonest script and one language reads in half the time of three."""
CONFIDENT = 80.0
"""A page read in the first language with a mean word confidence (0-100) below this is in another script, or
mixes scripts: it is read again with every installed language."""


TRAINEDDATA: dict[str, tuple[str, ...]] = {
    "en": ("eng",),
    "zh": ("chi_sim", "eng"),
    "hi": ("hin", "eng"),
}
"""The Tesseract languages that read a document in each language (ISO 639-1, as `text.language` names it): its
own, and English beside another script, since such documents quote names, numbers and terms in Latin letters."""


def languages_for(language: str) -> tuple[str, ...] | None:
    """The installed Tesseract languages that read a document in `language`; None where its own is not installed
    or not known (the pages are then read by the first-language rule of `read_image`)."""
    installed = available_languages()
    wanted = TRAINEDDATA.get(language, ())
    if not wanted or wanted[0] not in installed:
        return None
    return tuple(name for name in wanted if name in installed)


def read_image(image: Any, languages: tuple[str, ...] | None = None) -> list[Word]:
    """The words of a PIL image, in reading order (`reading_order`), with their boxes; OcrError where the engine
    fails. Read in `languages` (the document's, `languages_for`) where given, else in the first language alone;
    a page either reads unsure (another script, or mixed scripts) is read again with every installed language. A
    page that still reads unsure and that the orientation detector finds turned (scanned sideways or upside down)
    is read upright, its boxes turned back onto the page as it is."""
    from PIL import ImageFilter

    installed = available_languages()
    if not installed:
        raise OcrError(missing() or "OCR is not available")
    with tempfile.TemporaryDirectory(prefix="granrag-ocr-") as folder:
        source = Path(folder) / "page.png"
        # A median of 3 pixels clears the speckle of a photo or a poor scan and keeps strokes of 300 dpi type.
        grey = image.convert("L").filter(ImageFilter.MedianFilter(3))
        grey.save(source)
        words, confidence = _read(source, languages, installed, grey.size)
        turn = _orientation(source) if confidence < CONFIDENT else 0
        if turn:
            upright = grey.rotate(-turn, expand=True, fillcolor=255)  # Tesseract's turn is clockwise, PIL's not
            upright.save(source)
            turned, turned_confidence = _read(source, languages, installed, upright.size)
            if turned_confidence > confidence:
                return [dataclasses.replace(w, box=turned_back(w.box, turn)) for w in reading_order(turned)]
    return reading_order(words)


def _read(
    source: Path, languages: tuple[str, ...] | None, installed: tuple[str, ...], size: tuple[int, int]
) -> tuple[list[Word], float]:
    first = languages or ((FIRST_LANGUAGE,) if FIRST_LANGUAGE in installed and len(installed) > 1 else installed)
    words, confidence = _tesseract(source, first, size)
    if set(first) != set(installed) and confidence < CONFIDENT:
        words, confidence = _tesseract(source, installed, size)
    return words, confidence


ORIENTATION_DATA = "osd"
MIN_ORIENTATION_CONFIDENCE = 2.0
"""Tesseract's orientation confidence below which a page is left as it is: a picture or a page of a few words
gives a guess, not a reading."""
_ROTATE = re.compile(r"^Rotate: (\d+)$", re.MULTILINE)
_ORIENTATION_CONFIDENCE = re.compile(r"^Orientation confidence: ([\d.]+)$", re.MULTILINE)


def _orientation(source: Path) -> int:
    """Degrees clockwise that turn the page upright (0, 90, 180 or 270), as Tesseract's detector finds them; 0
    where it is not installed, fails or is unsure."""
    if ORIENTATION_DATA not in installed_data():
        return 0
    try:
        done = subprocess.run(
            [shutil.which(ENGINE) or ENGINE, str(source), "stdout", "--psm", "0", "-l", ORIENTATION_DATA],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env={**os.environ, "OMP_THREAD_LIMIT": OMP_THREADS},
        )
    except (OSError, subprocess.SubprocessError):
        return 0
    turn, sure = _ROTATE.search(done.stdout), _ORIENTATION_CONFIDENCE.search(done.stdout)
    if done.returncode != 0 or turn is None or sure is None or float(sure.group(1)) < MIN_ORIENTATION_CONFIDENCE:
        return 0
    return int(turn.group(1)) % 360


def turned_back(box: tuple[float, float, float, float], turn: int) -> tuple[float, float, float, float]:
    """A box on the page turned `turn` degrees clockwise, placed on the page as it was (fractions of its size)."""
    x0, y0, x1, y1 = box
    corners = [(x0, y0), (x1, y1)]
    if turn == 90:
        corners = [(v, 1 - u) for u, v in corners]
    elif turn == 180:
        corners = [(1 - u, 1 - v) for u, v in corners]
    elif turn == 270:
        corners = [(1 - v, u) for u, v in corners]
    xs, ys = [x for x, _ in corners], [y for _, y in corners]
    return (min(xs), min(ys), max(xs), max(ys))


def _tesseract(source: Path, languages: tuple[str, ...], size: tuple[int, int]) -> tuple[list[Word], float]:
    """The words Tesseract reads in an image file, and their mean confidence (0 without words)."""
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
    width, height = size
    words, confidences = [], []
    for row in csv.DictReader(io.StringIO(done.stdout), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        left, top = int(row["left"]), int(row["top"])
        right, bottom = left + int(row["width"]), top + int(row["height"])
        line = (int(row["block_num"]), int(row["par_num"]), int(row["line_num"]))
        words.append(Word(text, (left / width, top / height, right / width, bottom / height), line))
        confidences.append(float(row.get("conf") or 0))
    return words, sum(confidences) / len(confidences) if confidences else 0.0


WIDE_BLOCK = 0.6
"""A block wider than this share of the page (a title, a full-width paragraph) spans the columns: it separates
bands of the page, each read column by column."""


def reading_order(words: list[Word]) -> list[Word]:
    """The words block by block in the order a person reads them: bands of the page top to bottom, split by the
    blocks that span the page's width; within a band, its columns left to right, each top to bottom. Tesseract
    finds the blocks but may list a column's lower part after the next column's upper part."""
    blocks: dict[int, list[Word]] = {}
    for word in words:
        blocks.setdefault(word.line[0], []).append(word)
    hull = {
        n: (min(w.box[0] for w in ws), min(w.box[1] for w in ws), max(w.box[2] for w in ws), max(w.box[3] for w in ws))
        for n, ws in blocks.items()
    }
    ordered: list[int] = []
    band: list[int] = []

    def close_band() -> None:
        columns: list[list[int]] = []  # blocks whose widths overlap, by their left edge
        for n in sorted(band, key=lambda n: hull[n][0]):
            if columns and hull[n][0] < max(hull[m][2] for m in columns[-1]):
                columns[-1].append(n)
            else:
                columns.append([n])
        ordered.extend(n for column in columns for n in sorted(column, key=lambda n: hull[n][1]))
        band.clear()

    for n in sorted(blocks, key=lambda n: hull[n][1]):
        if hull[n][2] - hull[n][0] > WIDE_BLOCK:
            close_band()
            ordered.append(n)
        else:
            band.append(n)
    close_band()
    return [word for n in ordered for word in blocks[n]]


def unspaced(before: str, after: str) -> bool:
    """Whether two characters are written without a space between them: Chinese and Japanese characters and their
    punctuation, which Tesseract returns as separate words."""
    return all(
        "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"
        for char in (before, after)
    )


def text_of(words: list[Word]) -> str:
    """The words as text: a space between words of a line (none between Chinese characters), a line break between
    lines, a blank line between paragraphs."""
    out: list[str] = []
    last: tuple[int, int, int] | None = None
    for word in words:
        if last is not None:
            same_line = word.line == last
            if not (same_line and unspaced(out[-1][-1], word.text[0])):
                out.append(" " if same_line else "\n" if word.line[:2] == last[:2] else "\n\n")
        out.append(word.text)
        last = word.line
    return "".join(out)


HEADING_SIZES: tuple[tuple[float, int], ...] = ((1.6, 1), (1.25, 2))
"""(times the height of the page's body text, heading level): a line whose words stand this much taller than most
of the page's words is a heading of that level, the tallest first."""
HEADING_WORDS = 12
"""A heading is a short line: a taller line of more words is a pull quote or a large-print paragraph."""


def headings(words: list[Word]) -> list[tuple[int, str]]:
    """(level, text) of each line of a page that stands taller than its body text (`HEADING_SIZES`), in reading
    order: the sizes a scan shows where a text PDF would have bookmarks or a Word file heading styles."""
    if not words:
        return []
    body = statistics.median(w.box[3] - w.box[1] for w in words)
    lines: dict[tuple[int, int, int], list[Word]] = {}
    for word in words:
        lines.setdefault(word.line, []).append(word)
    found = []
    for line in lines.values():
        if len(line) > HEADING_WORDS or not any(char.isalpha() for w in line for char in w.text):
            continue
        height = statistics.median(w.box[3] - w.box[1] for w in line)
        level = next((level for times, level in HEADING_SIZES if body > 0 and height >= times * body), None)
        if level is not None:
            found.append((level, text_of(line)))
    return found


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
