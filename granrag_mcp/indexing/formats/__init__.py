"""The formats an index run reads: one module per format, each with an `extract(path, data)`, behind one registry.

Discovery, the error that nothing could be indexed, the CLI help, the tool descriptions and the README's table all
read `FORMATS`, so a new format is a new module here and its entry below (plus its test in tests/indexing/formats/).
"""

from __future__ import annotations

from dataclasses import dataclass

from granrag_mcp.indexing.formats import (
    code,
    delimited,
    docx,
    epub,
    html,
    image,
    markdown,
    notebook,
    pdf,
    plain,
    pptx,
    spreadsheet,
)
from granrag_mcp.indexing.formats.base import Extractor


@dataclass(frozen=True)
class Format:
    name: str  # as a person calls it
    suffixes: tuple[str, ...]  # lower case, with the dot
    extract: Extractor
    reader: str  # the library that reads it
    structure: str  # what of its layout a hit can cite: pages, sections


FORMATS: tuple[Format, ...] = (
    Format("Plain text", (".txt",), plain.extract, "stdlib", "-"),
    Format("Markdown", (".md", ".markdown"), markdown.extract, "markdown-it-py", "headings as sections"),
    Format(
        "PDF",
        (".pdf",),
        pdf.extract,
        "pypdfium2 (tables: pdfplumber, extra `pdf-tables`)",
        "pages; bookmarks as sections",
    ),
    Format("HTML", (".html", ".htm"), html.extract, "lxml (libxml2's HTML parser)", "h1-h6 as sections"),
    Format("Word", (".docx",), docx.extract, "python-docx", "Title and Heading styles as sections"),
    Format("PowerPoint", (".pptx",), pptx.extract, "python-pptx", "a slide a page, its title a section"),
    Format("Excel", (".xlsx",), spreadsheet.extract, "openpyxl", "a sheet a section"),
    Format("CSV / TSV", (".csv", ".tsv"), delimited.extract, "stdlib csv", "-"),
    Format("EPUB", (".epub",), epub.extract, "stdlib zipfile + lxml", "chapter headings as sections"),
    Format("Jupyter notebook", (".ipynb",), notebook.extract, "stdlib json", "markdown headings as sections"),
    Format("Image of pages", image.SUFFIXES, image.extract, "Pillow + Tesseract OCR", "a frame a page"),
    Format("Source code", code.SUFFIXES, code.extract, "stdlib (Python: ast)", "Python classes and functions"),
)

EXTRACTORS: dict[str, Extractor] = {suffix: fmt.extract for fmt in FORMATS for suffix in fmt.suffixes}
"""File suffix (lower case, with the dot) -> the extractor of that format, in the order messages list them."""


def format_list(conjunction: str = "or") -> str:
    """The suffixes for a message: ".txt, .md, ... or .sql"."""
    *rest, last = EXTRACTORS
    return f"{', '.join(rest)} {conjunction} {last}"


def format_names() -> str:
    """The formats by name for a tool description: "Plain text, Markdown, ... and Source code"."""
    *rest, last = (fmt.name for fmt in FORMATS)
    return f"{', '.join(rest)} and {last}"


def formats_table() -> str:
    """The supported formats as a Markdown table: the README holds it verbatim (a test compares them)."""
    lines = ["| format | suffixes | read with | structure kept |", "|---|---|---|---|"]
    for fmt in FORMATS:
        lines.append(f"| {fmt.name} | {' '.join(f'`{s}`' for s in fmt.suffixes)} | {fmt.reader} | {fmt.structure} |")
    return "\n".join(lines)
