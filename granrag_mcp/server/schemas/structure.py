"""What the structure tools return: a document's outline, and one section with its text, within a token budget;
either may carry an extractive summary (its central sentences, each with its citation) in place of the text.

Titles come from the documents, so the readable text keeps them inside fences, as it keeps every document text.
"""

from __future__ import annotations

import json

from pydantic import Field

from granrag_mcp.retrieval.citations import pages_label
from granrag_mcp.server.schemas.results import (
    DATA_NOTICE,
    Budgeted,
    Pages,
    _Model,
    fence,
    fence_doc_id,
    fence_section,
)


class SummarySentence(_Model):
    chunk_id: str = Field(description="The sentence's narrow chunk id: expand_window or get_parent give its context.")
    doc_id: str
    start: int = Field(description="Character offset of the sentence in its document.")
    end: int
    citation: str = Field(description="Document, pages and heading path of the sentence.")
    text: str
    truncated: bool = False


class Summary(_Model):
    sentences: list[SummarySentence] = Field(
        description="The span's most central sentences, redundancy removed, in reading order, within the budget."
    )
    of_sentences: int = Field(description="Sentences of the span they were chosen from.")
    omitted: int = Field(0, description="Chosen sentences left out to fit max_tokens.")

    def as_text(self) -> str:
        head = f"summary: {len(self.sentences)} of {self.of_sentences} sentence(s)"
        blocks = [head + (f" | omitted {self.omitted}" if self.omitted else "")]
        blocks += [
            f"{s.chunk_id} | {s.citation} | chars {s.start}-{s.end}"
            f"{' | truncated to fit max_tokens' if s.truncated else ''}\n{fence(s.text)}"
            for s in self.sentences
        ]
        return "\n\n".join(blocks)


SUMMARY_DESCRIPTION = (
    "summary=true: the span's extractive summary (its central sentences with their citations) within max_tokens."
)


class OutlineEntry(_Model):
    number: int = Field(description="Position of the section in the document's outline, 0 first.")
    level: int = Field(description="Depth of its heading: 1 for a top-level one (a chapter, a slide, a sheet).")
    section: list[str] = Field(description="Its heading path, outermost first; the last one is its own title.")
    start: int = Field(description="Character offset of its heading in the document.")
    end: int = Field(description="Character offset where it ends (its subsections included).")
    pages: Pages = None
    tokens: int = Field(description="Tokens of the whole section (cl100k), its subsections included.")
    chunk_id: str | None = Field(
        None,
        description="Its first paragraph-level chunk: get_section(chunk_id, depth=level) returns this section; "
        "null when its text lies inside the chunk before it.",
    )
    chunks: int = Field(description="Paragraph-level chunks that start inside it.")


class OutlineResult(Budgeted):
    doc_id: str
    n_chars: int = Field(description="Characters of the document's text.")
    page_count: int | None = Field(None, description="Pages of the document; null where the format has no pages.")
    total: int = Field(description="Sections in the whole outline (before max_depth and offset).")
    offset: int = Field(description="Sections skipped, for paging.")
    sections: list[OutlineEntry] = Field(description="In reading order; empty for a document without headings.")
    summary: Summary | None = Field(
        None, description="summary=true: the whole document's extractive summary, within half of max_tokens."
    )

    def as_text(self) -> str:
        pages = f" | {self.page_count} page(s)" if self.page_count else ""
        head = (
            f"outline: {len(self.sections)} of {self.total} section(s) | offset {self.offset}{pages} | "
            f"generation {self.generation} | tokens_used {self.tokens_used} | omitted {self.omitted}"
        )
        summary = [self.summary.as_text()] if self.summary is not None else []
        if not self.sections:
            if summary:
                return "\n\n".join([head, DATA_NOTICE, fence_doc_id(self.doc_id), *summary, "no headings"])
            return f"{head}\n{fence_doc_id(self.doc_id)}\nno headings"
        lines = "\n".join(json.dumps(e.model_dump(mode="json"), ensure_ascii=False) for e in self.sections)
        return "\n\n".join([head, DATA_NOTICE, f"{fence_doc_id(self.doc_id)}\n{fence(lines, 'json')}", *summary])


class SectionResult(Budgeted):
    chunk_id: str = Field(description="The chunk you climbed from.")
    doc_id: str
    number: int = Field(description="Position of the section in the document's outline (see document_outline).")
    level: int = Field(description="Depth of its heading: 1 for a top-level one.")
    section: list[str] = Field(description="Its heading path, outermost first; the last one is its own title.")
    start: int = Field(description="Character offset of the section in its document.")
    end: int = Field(description="Character offset just past the returned text.")
    section_end: int = Field(description="Character offset where the whole section ends.")
    pages: Pages = None
    tokens: int = Field(description="Tokens of the whole section (cl100k), even when its text was truncated.")
    text: str = Field(description="The section's text from its heading, in reading order; empty with summary=true.")
    truncated: bool = Field(description="True when the text was cut to fit max_tokens.")
    chunk_ids: list[str] = Field(
        description="Its paragraph-level chunks within the returned text (with summary=true: all of them), in "
        "reading order (get_chunks opens them); `omitted` counts the ones past it."
    )
    summary: Summary | None = Field(None, description=SUMMARY_DESCRIPTION)

    def as_text(self) -> str:
        pages = f" | {pages_label(self.pages)}" if self.pages else ""
        head = (
            f"section {self.number} (level {self.level}) around {self.chunk_id} | chars {self.start}-{self.end} of "
            f"{self.start}-{self.section_end}{pages} | {self.tokens} tokens"
            f"{' | truncated to fit max_tokens' if self.truncated else ''} | generation {self.generation} | "
            f"tokens_used {self.tokens_used} | omitted {self.omitted}"
        )
        chunks = "chunks: " + (", ".join(self.chunk_ids) or "none")
        source = f"{fence_doc_id(self.doc_id)}{fence_section(self.section)}"
        if self.summary is not None:
            return "\n\n".join([head, DATA_NOTICE, source, self.summary.as_text(), chunks])
        return "\n\n".join([head, DATA_NOTICE, f"{source}\n{fence(self.text)}", chunks])
