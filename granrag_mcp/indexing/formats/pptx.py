"""PowerPoint (.pptx, python-pptx): a slide is a page, its title a level-1 heading, then the text of its other
shapes (tables in the table form every format shares, `rows`; groups opened) and its speaker notes."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.archive import check_archive
from granrag_mcp.indexing.formats.base import ExtractedText
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.rows import row_lines

NOTES_LABEL = "Notes: "


def extract(path: Path, data: bytes) -> ExtractedText:
    import pptx  # only a run that reads a slide deck pays for importing it

    check_archive(path, data)  # python-pptx parses every related part whole: bounded before it opens any
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        builder = TextBuilder()
        for slide in presentation.slides:
            builder.start_page()
            title = slide.shapes.title
            title_id = title.shape_id if title is not None else None
            if title is not None and title.has_text_frame:
                builder.heading(title.text_frame.text, 1)
            for text in _shape_texts(shape for shape in slide.shapes if shape.shape_id != title_id):
                builder.block(text)
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = slide.notes_slide.notes_text_frame.text.strip()
                if notes:
                    builder.block(NOTES_LABEL + notes)
    except Exception as error:  # python-pptx and lxml raise many types on damaged files
        raise ExtractionError(path, f"unreadable PowerPoint file ({type(error).__name__}: {error})") from error
    return builder.build()


def _shape_texts(shapes: Iterable[Any]) -> Iterator[str]:
    """The text of each shape in slide order: text frames, tables row by row, the shapes inside a group."""
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None:  # a group
            yield from _shape_texts(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            # A cell merged over others is read once: the cells it spans read as empty.
            rows = [["" if cell.is_spanned else cell.text for cell in row.cells] for row in shape.table.rows]
            yield "\n".join(row_lines(rows))
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield shape.text_frame.text
