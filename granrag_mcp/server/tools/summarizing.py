"""An extractive summary (`retrieval/summaries`) as the outline, section and graph tools return it: each chosen
sentence with its citation (document, pages, heading path), within the caller's token budget."""

from __future__ import annotations

from granrag_mcp.packing import TokenCounter
from granrag_mcp.retrieval import summaries
from granrag_mcp.retrieval.view import View
from granrag_mcp.server.schemas.structure import Summary, SummarySentence
from granrag_mcp.server.tools.presenting import cited_sentences


def presented(view: View, tokens: TokenCounter, summary: summaries.Summary, max_tokens: int) -> tuple[Summary, int]:
    """The summary's sentences with their citations, packed within `max_tokens` (they were chosen to fit it, so a
    cut is rare); and the tokens they use."""
    sentences, packing = cited_sentences(view, tokens, summary.sentences, max_tokens, SummarySentence)
    return Summary(sentences=sentences, of_sentences=summary.candidates, omitted=packing.omitted), packing.tokens_used
