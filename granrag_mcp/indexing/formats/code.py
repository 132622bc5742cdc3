"""Source code files, by suffix: the file as text, a document of its own; in Python files the classes and functions
(methods beneath their class) are sections, found by the stdlib's own parser."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from granrag_mcp.indexing.formats.base import ExtractedText, Section
from granrag_mcp.indexing.formats.plain import extract as extract_plain

SUFFIXES = (
    ".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala", ".go", ".rs", ".c", ".h",
    ".cpp", ".hpp", ".cc", ".cs", ".swift", ".rb", ".php", ".lua", ".r", ".jl", ".sh", ".sql",
)  # fmt: skip
"""Suffixes read as source code; configuration and data files (.json, .yaml) are left out."""
_PYTHON = {".py", ".pyi"}
_MAX_DEPTH = 2  # classes and functions, and the methods of a class; deeper definitions are details


def python_definitions(text: str) -> tuple[Section, ...]:
    """The classes and functions of a Python text, at the offset of their `class` / `def` keyword; () when it does
    not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # too deep or too odd: a file without sections
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


def extract(path: Path, data: bytes) -> ExtractedText:
    extracted = extract_plain(path, data)
    if path.suffix.lower() not in _PYTHON:
        return extracted
    return dataclasses.replace(extracted, sections=python_definitions(extracted.text))
