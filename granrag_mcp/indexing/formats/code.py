"""Source code files, by suffix: the file as text, a document of its own; in Python files the classes and functions
(methods beneath their class) are sections, found by the stdlib's own parser."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from granrag_mcp.indexing.formats.base import ExtractedText, Section
from granrag_mcp.indexing.formats.limits import active
from granrag_mcp.indexing.formats.plain import extract as extract_plain

SUFFIXES = (
    ".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala", ".go", ".rs", ".c", ".h",
    ".cpp", ".hpp", ".cc", ".cs", ".swift", ".rb", ".php", ".lua", ".r", ".jl", ".sh", ".sql",
)  # fmt: skip
"""Suffixes read as source code; configuration and data files (.json, .yaml) are left out."""
_PYTHON = {".py", ".pyi"}
_MAX_DEPTH = 2  # classes and functions, and the methods of a class; deeper definitions are details
# A definition's line, for files too large to parse: a class or function at the margin, or one indent in.
_DEFINITION_LINE = re.compile(r"^([ \t]*)(class|def|async[ \t]+def)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)


def python_definitions(text: str) -> tuple[Section, ...]:
    """The classes and functions of a Python text, at the offset of their `class` / `def` keyword; () when it does
    not parse."""
    try:
        tree = ast.parse(text)
    # Too deep or too odd: a file without sections. SystemError too: after one RecursionError, CPython 3.11 can
    # leave its syntax-tree depth count off, and every later parse in the process fails with it.
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return ()
    line_starts = [0]
    for line in text.split("\n")[:-1]:
        line_starts.append(line_starts[-1] + len(line) + 1)
    found: list[Section] = []
    todo: list[tuple[ast.AST, int]] = [(tree, 0)]
    while todo:
        node, depth = todo.pop()
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            keyword = {ast.ClassDef: "class", ast.FunctionDef: "def", ast.AsyncFunctionDef: "async def"}[type(child)]
            line_start = line_starts[child.lineno - 1]
            line_end = text.find("\n", line_start)
            line = text[line_start : line_end if line_end >= 0 else len(text)]
            title = f"{keyword} {child.name}"
            # col_offset counts UTF-8 bytes; the keyword's place in the line's characters is what an offset needs
            column = line.find(title)
            if column >= 0:
                found.append(Section(line_start + column, depth + 1, title))
            if depth + 1 < _MAX_DEPTH:
                todo.append((child, depth + 1))
    return tuple(sorted(found, key=lambda section: section.start))


def definition_lines(text: str) -> tuple[Section, ...]:
    """The classes and functions of a Python text by their lines alone, in linear time: a definition at the margin
    is level 1, an indented one level 2 when a class at the margin holds it; deeper ones, and lines inside strings
    that look like definitions, are what a file too large to parse gives up."""
    found: list[Section] = []
    in_class = False
    for match in _DEFINITION_LINE.finditer(text):
        indent, keyword, name = match.groups()
        keyword = "async def" if keyword.startswith("async") else keyword
        if not indent:
            found.append(Section(match.start(2), 1, f"{keyword} {name}"))
            in_class = keyword == "class"
        elif in_class and len(indent) <= 8:
            found.append(Section(match.start(2), 2, f"{keyword} {name}"))
    return tuple(found)


def extract(path: Path, data: bytes) -> ExtractedText:
    extracted = extract_plain(path, data)
    if path.suffix.lower() not in _PYTHON:
        return extracted
    cap = active().max_python_parse_bytes
    if cap and len(data) > cap:  # a syntax tree costs hundreds of times the file: read its definition lines
        return dataclasses.replace(extracted, sections=definition_lines(extracted.text))
    return dataclasses.replace(extracted, sections=python_definitions(extracted.text))
