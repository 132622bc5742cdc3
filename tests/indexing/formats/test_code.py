from __future__ import annotations

from pathlib import Path

from granrag_mcp.indexing.formats import code
from tests.indexing.formats.sections import outline

SOURCE = '''"""Módule."""
import os


@decorator
class Store:
    def open(self):
        def helper():
            pass

    async def close(self):
        pass


def main():
    pass
'''


def test_python_classes_functions_and_methods_are_sections() -> None:
    extracted = code.extract(Path("store.py"), SOURCE.encode())
    assert extracted.text == SOURCE
    assert outline(extracted) == [(1, "class Store"), (2, "def open"), (2, "async def close"), (1, "def main")]
    assert extracted.sections[0].start == SOURCE.index("class Store")


def test_python_that_does_not_parse_is_still_a_document_without_sections() -> None:
    extracted = code.extract(Path("broken.py"), b"def broken(:\n    pass\n")
    assert extracted.text == "def broken(:\n    pass\n"
    assert extracted.sections == ()


def test_other_languages_are_text_without_sections() -> None:
    extracted = code.extract(Path("main.go"), b"package main\n\nfunc main() {}\n")
    assert extracted.text == "package main\n\nfunc main() {}\n"
    assert extracted.sections == ()
