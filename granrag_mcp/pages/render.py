"""Pages of a PDF drawn as images with the boxes of a span marked, within a bound on their pixels."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from granrag_mcp.pages.boxes import Box, PageBox

MAX_SCALE = 4.0
"""Pixels per PDF point at most (288 dpi): a small crop is not drawn larger than a close reading needs."""
CROP_MARGIN = 0.04
"""Around a cropped region, this share of the page's width and height, so the lines beside it can be read."""
MARK = (255, 214, 0, 90)  # a highlighter's yellow, see-through, so the text under it stays legible
OUTLINE = (220, 30, 30, 255)
FORMULA_OUTLINE = (30, 90, 220, 255)  # a formula's region: its own colour, no fill, the printed mathematics as it is


@dataclass(frozen=True)
class PageImage:
    page: int  # 1-based
    png: bytes
    width: int
    height: int
    region: Box  # the part of the page the image shows, in fractions of the page (0, 0, 1, 1 uncropped)


def region_of(boxes: Sequence[Box], crop: bool) -> Box:
    """The part of the page to show: all of it, or the hull of the boxes with a margin."""
    if not crop or not boxes:
        return (0.0, 0.0, 1.0, 1.0)
    return (
        max(min(b[0] for b in boxes) - CROP_MARGIN, 0.0),
        max(min(b[1] for b in boxes) - CROP_MARGIN, 0.0),
        min(max(b[2] for b in boxes) + CROP_MARGIN, 1.0),
        min(max(b[3] for b in boxes) + CROP_MARGIN, 1.0),
    )


def render_pages(
    document: Any,
    pages: Sequence[int],
    boxes: Sequence[PageBox],
    max_pixels: int,
    crop: bool,
    formulas: Sequence[PageBox] = (),
) -> list[PageImage]:
    """Each of `pages` (1-based) drawn with its boxes marked and its `formulas` outlined; the images share
    `max_pixels` between them."""
    from PIL import Image, ImageDraw

    budget = max_pixels // max(len(pages), 1)
    images = []
    for number in pages:
        on_page = [b.box for b in boxes if b.page == number]
        formulas_here = [f.box for f in formulas if f.page == number]
        region = region_of(on_page + formulas_here, crop)
        page = document[number - 1]
        try:
            width, height = page.get_size()
            shown = (region[2] - region[0]) * width * (region[3] - region[1]) * height
            scale = min(math.sqrt(budget / shown) if shown > 0 else 1.0, MAX_SCALE)
            bitmap = page.render(scale=scale)
            picture = bitmap.to_pil().convert("RGBA")
        finally:
            page.close()
        full_w, full_h = picture.size
        overlay = Image.new("RGBA", picture.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for x0, y0, x1, y1 in on_page:
            draw.rectangle((x0 * full_w, y0 * full_h, x1 * full_w, y1 * full_h), fill=MARK, outline=OUTLINE, width=2)
        for x0, y0, x1, y1 in formulas_here:
            draw.rectangle((x0 * full_w, y0 * full_h, x1 * full_w, y1 * full_h), outline=FORMULA_OUTLINE, width=2)
        picture = Image.alpha_composite(picture, overlay).convert("RGB")
        cut = (
            math.floor(region[0] * full_w),
            math.floor(region[1] * full_h),
            math.ceil(region[2] * full_w),
            math.ceil(region[3] * full_h),
        )
        picture = picture.crop(cut)
        if picture.width * picture.height > budget:  # rounding up the crop may pass the bound by a row
            factor = math.sqrt(budget / (picture.width * picture.height))
            picture = picture.resize((max(int(picture.width * factor), 1), max(int(picture.height * factor), 1)))
        out = io.BytesIO()
        picture.save(out, format="PNG", optimize=True)
        images.append(PageImage(number, out.getvalue(), picture.width, picture.height, region))
    return images
