"""Hierarchical chunking: broad token windows with overlap, mid windows nested in them, sentences nested in mids.

Mid windows end where a sentence starts (at most `mid_tokens` each), so sentences are not cut between mids.

Broad chunk i covers tokens [i*(c-o), i*(c-o)+c). Every offset is a token boundary turned into an exact
character offset, so ``text[start:end]`` is the chunk.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

import numpy as np

from granrag_mcp.indexing.sentences import split_sentences
from granrag_mcp.records import ChunkSpan
from granrag_mcp.settings import ChunkSettings
from granrag_mcp.tokens import Tokenizer


def token_windows(n_tokens: int, size: int, overlap: int = 0) -> Iterator[tuple[int, int]]:
    """Token ranges [i*(size-overlap), i*(size-overlap)+size), clipped to n_tokens; none fully inside the previous."""
    stride = size - overlap
    begin = 0
    while begin < n_tokens:
        end = min(begin + size, n_tokens)
        yield begin, end
        if end == n_tokens:
            return
        begin += stride


def chunk_document(text: str, tokenizer: Tokenizer, settings: ChunkSettings) -> list[ChunkSpan]:
    """All chunks of one document: broad, then mid, then narrow, each level in document order."""
    bounds = tokenizer.boundaries(text)
    n_tokens = len(bounds) - 1
    broad: list[ChunkSpan] = []
    mid: list[ChunkSpan] = []
    narrow: list[ChunkSpan] = []
    for b_begin, b_end in token_windows(n_tokens, settings.broad_tokens, settings.broad_overlap):
        if not text[bounds[b_begin] : bounds[b_end]].strip():
            continue
        broad_seq = len(broad)
        broad.append(ChunkSpan("broad", broad_seq, int(bounds[b_begin]), int(bounds[b_end]), b_end - b_begin, None))
        for m_begin, m_end in mid_windows(text, bounds, b_begin, b_end, settings.mid_tokens):
            start, end = int(bounds[m_begin]), int(bounds[m_end])
            if not text[start:end].strip():
                continue
            mid_seq = len(mid)
            mid.append(ChunkSpan("mid", mid_seq, start, end, m_end - m_begin, broad_seq))
            for s_start, s_end, s_tokens in sentence_spans(text, start, end, tokenizer, settings.sentence_max_tokens):
                narrow.append(ChunkSpan("narrow", len(narrow), s_start, s_end, s_tokens, mid_seq))
    return broad + mid + narrow


def mid_windows(text: str, bounds: np.ndarray, begin: int, end: int, size: int) -> list[tuple[int, int]]:
    """Token ranges that tile [begin, end), each at most `size` tokens, cut where a sentence starts.

    Only a sentence longer than `size` tokens is cut inside, at the token limit, so a sentence is not split
    across two mid chunks (and so into two narrow chunks) merely because a fixed window ended in it.
    """
    offset = int(bounds[begin])
    cuts = []
    for sentence_start, _ in split_sentences(text[offset : int(bounds[end])]):
        token = int(np.searchsorted(bounds, offset + sentence_start, side="right")) - 1  # the token holding it
        if begin < token < end:
            cuts.append(token)
    windows = []
    current = begin
    while current < end:
        limit = current + size
        if limit >= end:
            windows.append((current, end))
            break
        last = bisect_right(cuts, limit) - 1
        following = cuts[last] if last >= 0 and cuts[last] > current else limit
        windows.append((current, following))
        current = following
    return windows


def sentence_spans(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int
) -> Iterator[tuple[int, int, int]]:
    """Sentence spans inside text[start:end]; a sentence over `max_tokens` is cut at token boundaries."""
    for s_start, s_end in split_sentences(text[start:end]):
        s_start += start
        s_end += start
        bounds = tokenizer.boundaries(text[s_start:s_end])
        n_tokens = len(bounds) - 1
        for p_begin, p_end in token_windows(n_tokens, max_tokens):
            p_start, p_stop = s_start + int(bounds[p_begin]), s_start + int(bounds[p_end])
            piece = text[p_start:p_stop]
            if not piece.strip():
                continue
            # Trim whitespace the cut left at the edges so the span is the sentence text proper.
            p_start += len(piece) - len(piece.lstrip())
            p_stop -= len(piece) - len(piece.rstrip())
            yield p_start, p_stop, p_end - p_begin
