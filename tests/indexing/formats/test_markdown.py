from __future__ import annotations

from pathlib import Path

from granrag_mcp.indexing.formats import markdown
from tests.indexing.formats.sections import outline

NOTE = """# Title

Intro text.

Setext heading
--------------

```python
# not a heading, inside a code block
x = 1
```

> # quoted, part of the quote

### Deep *emphasis* ###
body
"""


def test_headings_are_sections_and_the_source_is_kept_whole() -> None:
    extracted = markdown.extract(Path("n.md"), NOTE.encode())
    assert extracted.text == NOTE
    assert outline(extracted) == [(1, "Title"), (2, "Setext heading"), (3, "Deep *emphasis*")]
    assert [s.start for s in extracted.sections] == [2, NOTE.index("Setext"), NOTE.index("Deep")]
    assert extracted.page_starts == ()


def test_a_text_without_headings_has_no_sections() -> None:
    assert markdown.extract(Path("n.md"), b"just text\n# \n").sections == ()
