"""An extractive summary (`retrieval/summaries`) as the outline, section and graph tools return it: each chosen
sentence with its citation (document, pages, heading path), within the caller's token budget."""

from __future__ import annotations

from granrag_mcp.packing import TokenCounter, pack
from granrag_mcp.retrieval import summaries
from granrag_mcp.retrieval.citations import citation_line, cite_chunks
from granrag_mcp.retrieval.view import View
from granrag_mcp.server.schemas.structure import Summary, SummarySentence


def presented(view: View, tokens: TokenCounter, summary: summaries.Summary, max_tokens: int) -> Summary:
    """The summary's sentences with their citations, packed within `max_tokens` (they were chosen to fit it, so a
    cut is rare)."""
    chunks = summary.sentences
    packing = pack([c.text for c in chunks], max_tokens, tokens)
    cited = cite_chunks(view, chunks[: len(packing.pieces)])
    return Summary(
        sentences=[
            SummarySentence(
                chunk_id=c.public_id,
                doc_id=c.doc_id,
                start=c.start,
                end=c.end,
                citation=citation_line(c.doc_id, cited[c.id]),
                text=p.text,
                truncated=p.truncated,
            )
            for c, p in zip(chunks, packing.pieces)
        ],
        of_sentences=summary.candidates,
        omitted=packing.omitted,
    )
