"""Where a PDF page prints formulas, from its text layer: runs of a line's characters that are mathematical (by
their Unicode block, or set in a math font), merged with the runs above and below them that a fraction or a
stacked limit splits. A formula's characters come out of the text layer in an order that does not keep the
mathematics (no fraction bars, scripts on the line), so its region is kept as a box that the page image shows.

No engine that reads formulas into LaTeX qualifies here: those on PyPI (pix2tex, rapid-latex-ocr, texify, ...)
download their weights at run time, and nothing may."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from granrag_mcp.pages.boxes import Box, visible

STRONG_RANGES: tuple[tuple[int, int], ...] = (
    (0x1D62, 0x1D6A),  # subscript letters (i, r, u, v and Greek)
    (0x2070, 0x209F),  # superscripts and subscripts
    (0x2102, 0x2102),  # the letterlike symbols of number sets and script letters, not the prose ones (℃, №, ™)
    (0x210A, 0x2113),
    (0x2115, 0x2115),
    (0x2119, 0x211D),
    (0x2124, 0x2124),
    (0x212C, 0x212D),
    (0x212F, 0x2131),
    (0x2133, 0x2134),
    (0x2190, 0x21FF),  # arrows
    (0x2200, 0x22FF),  # mathematical operators
    (0x27C0, 0x27EF),  # miscellaneous mathematical symbols A
    (0x2980, 0x2AFF),  # miscellaneous mathematical symbols B, supplemental operators
    (0x1D400, 0x1D7FF),  # mathematical alphanumeric symbols
)
"""Characters that are mathematics wherever they stand."""
STRONG_CHARS = frozenset("±×÷√∞≈≠≤≥∑∏∫∂∇′″‖¹²³")
WEAK_CHARS = frozenset("=+<>^|/()[]{}_*·-0123456789")
"""Characters a formula holds, but prose too: they count towards a formula only beside a strong one."""
WEAK_RANGES: tuple[tuple[int, int], ...] = ((0x0391, 0x03C9),)  # Greek letters: a Greek sentence is not a formula
MATH_FONTS = ("cmmi", "cmsy", "cmex", "msam", "msbm", "math", "stix", "symbol", "esint", "rsfs", "eufm", "txsy", "pxsy")
"""Font names (lower case) whose characters are mathematics: TeX's math italic, symbols and extensions, AMS, STIX,
Cambria Math and the like, Adobe's Symbol."""
GAP = 3
"""Visible characters of prose a formula's run may hold between two mathematical ones ('x = a + b' keeps its x)."""
MIN_STRONG = 1
MIN_MATH = 4
"""A group is a formula when it holds this many strong characters and this many mathematical ones in all (so
'−12' in a sentence is not one)."""
PAD = 0.004
"""Around a formula's box, this share of the page's width and height, so its strokes are not cut."""


@dataclass
class _Char:
    strength: int  # 2 strong, 1 weak, 0 prose
    box: Box


def strength(char: str, font: str) -> int:
    code = ord(char)
    if any(name in font for name in MATH_FONTS) or char in STRONG_CHARS:
        return 2
    if any(low <= code <= high for low, high in STRONG_RANGES):
        return 2
    if char in WEAK_CHARS or any(low <= code <= high for low, high in WEAK_RANGES):
        return 1
    return 0


def formula_boxes(page: Any) -> list[Box]:
    """The regions of the page's formulas, in fractions of its width and height from its top-left corner."""
    import ctypes

    import pypdfium2.raw

    textpage = page.get_textpage()
    try:
        left, bottom, right, top = page.get_cropbox()
        width, height = (right - left) or 1.0, (top - bottom) or 1.0
        buffer = ctypes.create_string_buffer(128)
        chars: list[_Char] = []
        for i in range(textpage.count_chars()):
            char = chr(pypdfium2.raw.FPDFText_GetUnicode(textpage.raw, i))
            if not visible(char):
                continue
            size = pypdfium2.raw.FPDFText_GetFontInfo(textpage.raw, i, buffer, len(buffer), None)
            font = buffer.value.decode("latin-1").lower() if 0 < size <= len(buffer) else ""
            x0, y0, x1, y1 = textpage.get_charbox(i, loose=True)
            box = ((x0 - left) / width, (top - y1) / height, (x1 - left) / width, (top - y0) / height)
            chars.append(_Char(strength(char, font), box))
    finally:
        textpage.close()
    return merged([run for line in lines(chars) for run in runs(line)])


def lines(chars: Sequence[_Char]) -> list[list[_Char]]:
    """The characters in text order cut into lines: a character that does not overlap the line's height, or starts
    well left of the last one, starts a new line."""
    found: list[list[_Char]] = []
    for char in chars:
        line = found[-1] if found else None
        if line:
            last = line[-1].box
            overlap = min(last[3], char.box[3]) - max(last[1], char.box[1])
            if overlap > 0 and char.box[0] >= last[0] - 2 * (last[2] - last[0]):
                line.append(char)
                continue
        found.append([char])
    return found


def runs(line: Sequence[_Char]) -> list[Box]:
    """The formulas of one line: mathematical characters at most GAP prose characters apart, grouped, where a group
    holds enough of them; each as the hull of its characters (the prose between them included: a variable's
    letter)."""
    groups: list[list[int]] = []
    for i, char in enumerate(line):
        if not char.strength:
            continue
        if groups and i - groups[-1][-1] - 1 <= GAP:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [
        _hull([c.box for c in line[group[0] : group[-1] + 1]])
        for group in groups
        if len(group) >= MIN_MATH and sum(line[i].strength == 2 for i in group) >= MIN_STRONG
    ]


def merged(boxes: Sequence[Box]) -> list[Box]:
    """Boxes that overlap or stand one above the other within half a line's height, joined (a fraction's numerator,
    bar and denominator; a sum's limits), each padded."""
    pending = sorted(boxes, key=lambda b: (b[1], b[0]))
    out: list[Box] = []
    while pending:
        box = pending.pop(0)
        grown = True
        while grown:
            grown = False
            for other in list(pending):
                if _near(box, other):
                    box = _hull([box, other])
                    pending.remove(other)
                    grown = True
        out.append(box)
    return [(max(b[0] - PAD, 0.0), max(b[1] - PAD, 0.0), min(b[2] + PAD, 1.0), min(b[3] + PAD, 1.0)) for b in out]


def _near(a: Box, b: Box) -> bool:
    reach = 0.5 * max(a[3] - a[1], b[3] - b[1])
    return a[0] < b[2] and b[0] < a[2] and a[1] - reach < b[3] and b[1] - reach < a[3]


def _hull(boxes: Sequence[Box]) -> Box:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
