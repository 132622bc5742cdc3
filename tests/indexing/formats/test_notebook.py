from __future__ import annotations

import json
from pathlib import Path

import pytest

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.formats import notebook


def build_notebook() -> bytes:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "\n", "We load data."]},
        {
            "cell_type": "code",
            "metadata": {},
            "execution_count": 1,
            "source": "import pandas\n# a comment, no heading",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["OUTPUT NOT INDEXED"]}],
        },
        {"cell_type": "raw", "metadata": {}, "source": "raw cell left out"},
        {"cell_type": "markdown", "metadata": {}, "source": "## Results\nFine."},
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document).encode()


def test_markdown_and_code_cells_in_order_outputs_left_out_headings_as_sections() -> None:
    extracted = notebook.extract(Path("a.ipynb"), build_notebook())
    assert extracted.text == (
        "# Analysis\n\nWe load data.\n\nimport pandas\n# a comment, no heading\n\n## Results\nFine."
    )
    assert [(s.start, s.level, s.title) for s in extracted.sections] == [
        (2, 1, "Analysis"),
        (extracted.text.index("Results"), 2, "Results"),
    ]


@pytest.mark.parametrize("data", [b"{not json", b'{"cells": 3}', b"[]"])
def test_a_file_that_is_no_notebook_is_an_extraction_error(data: bytes) -> None:
    with pytest.raises(ExtractionError, match="unreadable notebook"):
        notebook.extract(Path("a.ipynb"), data)
