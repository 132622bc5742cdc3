"""The formats an index run reads: one module per format, each with an `extract(path, data)`, behind one registry.

Discovery, the error that nothing could be indexed and the CLI help all read `EXTRACTORS`, so a new format is a
new module here and its line below (plus its test in tests/indexing/).
"""

from __future__ import annotations

from granrag_mcp.indexing.formats import html, pdf, plain
from granrag_mcp.indexing.formats.base import Extractor

EXTRACTORS: dict[str, Extractor] = {
    ".txt": plain.extract,
    ".md": plain.extract,
    ".pdf": pdf.extract,
    ".html": html.extract,
    ".htm": html.extract,
}
"""File suffix (lower case, with the dot) -> the extractor of that format, in the order messages list them."""


def format_list(conjunction: str = "or") -> str:
    """The suffixes for a message: ".txt, .md, .pdf, .html or .htm"."""
    *rest, last = EXTRACTORS
    return f"{', '.join(rest)} {conjunction} {last}"
