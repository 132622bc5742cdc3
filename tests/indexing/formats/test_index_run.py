"""A folder of real files of every format goes through a whole index run: the good ones are added, the ones a
library chokes on are warnings (ExtractionError, listed in `failed`), and the run commits."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import index
from tests.indexing.formats.test_docx import build_docx
from tests.indexing.formats.test_epub import build_epub
from tests.indexing.formats.test_notebook import build_notebook
from tests.indexing.formats.test_pdf import build_pdf
from tests.indexing.formats.test_pptx import build_pptx
from tests.indexing.formats.test_spreadsheet import build_xlsx


def test_every_format_is_indexed_and_broken_files_are_warnings(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    good = {
        "report.pdf": build_pdf([["Quarterly numbers went up."], ["Page two text."]]),
        "report.docx": build_docx(),
        "deck.pptx": build_pptx(),
        "book.xlsx": build_xlsx(),
        "book.epub": build_epub(),
        "analysis.ipynb": build_notebook(),
        "table.csv": b"name,age\nBob,32\n",
        "notes.md": b"# Notes\n\nSome words.\n",
        "page.html": b"<h1>Page</h1><p>Words.</p>",
        "tool.py": b"def run():\n    return 1\n",
    }
    broken = {"scan.pdf": build_pdf([[]]), "broken.docx": b"PK\x03\x04", "broken.xlsx": b"x", "bad.ipynb": b"{"}
    for name, data in {**good, **broken}.items():
        (docs / name).write_bytes(data)
    summary = index(docs, tmp_path / "store")
    assert summary.committed
    assert summary.added == len(good)
    assert sorted(Path(path).name for path, _ in summary.failed) == sorted(broken)
    reasons = dict((Path(path).name, reason) for path, reason in summary.failed)
    assert "no text layer" in reasons["scan.pdf"]
