"""Jupyter notebooks (.ipynb, nbformat 4 JSON read with the stdlib): markdown and code cells in order, each a
block, outputs left out (they repeat data, not prose); the markdown cells' headings are sections."""

from __future__ import annotations

import json
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats.base import ExtractedText, normalise_newlines
from granrag_mcp.indexing.formats.builder import TextBuilder
from granrag_mcp.indexing.formats.markdown import headings

_KEPT_CELLS = {"markdown", "code"}


def _source(cell: dict[str, object]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(str(line) for line in source)
    return normalise_newlines(str(source))


def extract(path: Path, data: bytes) -> ExtractedText:
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
        cells = notebook["cells"] if isinstance(notebook, dict) else None
        if not isinstance(cells, list):
            raise ValueError("no list of cells (an nbformat 4 notebook has one)")
    except (ValueError, KeyError, UnicodeDecodeError) as error:
        raise ExtractionError(path, f"unreadable notebook ({type(error).__name__}: {error})") from error
    builder = TextBuilder()
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in _KEPT_CELLS:
            continue
        source = _source(cell)
        if cell["cell_type"] == "markdown":
            builder.embed(ExtractedText(source, False, sections=headings(source)))
        else:
            builder.block(source)
    return builder.build()
