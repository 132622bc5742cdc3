"""Hierarchical chunking: broad token windows with overlap, mid windows nested in them, sentences nested in mids.

Mid windows end where a sentence starts (at most `mid_tokens` each), so sentences are not cut between mids.
A document with headings (`Section`s) is cut at them too: no sentence or mid chunk runs across a section start
(a section shorter than `semantic_min_tokens` stays with the text before it), and a broad chunk ends where a
top-level section starts, when one starts inside it. Without headings the chunks are exactly the token windows.

Broad chunk i covers tokens [i*(c-o), i*(c-o)+c). Every offset is a token boundary turned into an exact
character offset, so ``text[start:end]`` is the chunk.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence

import numpy as np

from granrag_mcp.indexing.sentences import sentence_clauses
from granrag_mcp.outline import Section
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


def chunk_document(
    text: str, tokenizer: Tokenizer, settings: ChunkSettings, sections: Sequence[Section] = ()
) -> list[ChunkSpan]:
    """All chunks of one document: broad, then mid, then narrow, each level in document order."""
    bounds = tokenizer.boundaries(text)
    starts = [s.start for s in sections]
    forced = forced_tokens(bounds, sections, settings.semantic_min_tokens)
    broad: list[ChunkSpan] = []
    mid: list[ChunkSpan] = []
    narrow: list[ChunkSpan] = []
    for b_begin, b_end in broad_windows(bounds, settings, sections):
        if not text[bounds[b_begin] : bounds[b_end]].strip():
            continue
        broad_seq = len(broad)
        broad.append(ChunkSpan("broad", broad_seq, int(bounds[b_begin]), int(bounds[b_end]), b_end - b_begin, None))
        for m_begin, m_end in mid_windows(text, bounds, b_begin, b_end, settings.mid_tokens, forced):
            start, end = int(bounds[m_begin]), int(bounds[m_end])
            if not text[start:end].strip():
                continue
            mid_seq = len(mid)
            mid.append(ChunkSpan("mid", mid_seq, start, end, m_end - m_begin, broad_seq))
            for s_start, s_end, s_tokens in sentence_spans(
                text, start, end, tokenizer, settings.sentence_max_tokens, starts
            ):
                narrow.append(ChunkSpan("narrow", len(narrow), s_start, s_end, s_tokens, mid_seq))
    return broad + mid + narrow


def token_at(bounds: np.ndarray, offset: int) -> int:
    """The token holding character `offset`."""
    return int(np.searchsorted(bounds, offset, side="right")) - 1


def broad_windows(
    bounds: np.ndarray, settings: ChunkSettings, sections: Sequence[Section]
) -> Iterator[tuple[int, int]]:
    """The broad token windows; with sections, a window ends where the last top-level section starting inside
    it begins (at least `semantic_min_tokens` in), and the next starts there without overlap."""
    n_tokens = len(bounds) - 1
    size, overlap = settings.broad_tokens, settings.broad_overlap
    top = min((s.level for s in sections), default=0)
    cuts = sorted({token_at(bounds, s.start) for s in sections if s.level == top} - {0})
    if not cuts:
        yield from token_windows(n_tokens, size, overlap)
        return
    begin = 0
    while begin < n_tokens:
        end = min(begin + size, n_tokens)
        last = bisect_right(cuts, end - 1) - 1
        if last >= 0 and cuts[last] >= begin + settings.semantic_min_tokens:
            yield begin, cuts[last]
            begin = cuts[last]
            continue
        yield begin, end
        if end == n_tokens:
            return
        begin = end - overlap


def forced_tokens(bounds: np.ndarray, sections: Sequence[Section], min_tokens: int) -> list[int]:
    """Tokens where a fixed mid window must end: each section start, but where the text before the next heading
    is shorter than `min_tokens` (a heading straight above a subheading), which stays with what precedes it."""
    tokens = [token_at(bounds, s.start) for s in sections]
    following = [*tokens[1:], len(bounds) - 1]
    return sorted({t for t, after in zip(tokens, following) if after - t >= min_tokens} - {0})


def mid_windows(
    text: str, bounds: np.ndarray, begin: int, end: int, size: int, forced: Sequence[int] = ()
) -> list[tuple[int, int]]:
    """Token ranges that tile [begin, end), each at most `size` tokens, cut where a sentence starts, and always
    at the `forced` tokens (section starts).

    Only a sentence longer than `size` tokens is cut inside, at the token limit, so a sentence is not split
    across two mid chunks (and so into two narrow chunks) merely because a fixed window ended in it; nor is a long
    sentence between its clauses.
    """
    offset = int(bounds[begin])
    cuts = []
    for (sentence_start, _), *_ in sentence_clauses(text[offset : int(bounds[end])]):
        token = token_at(bounds, offset + sentence_start)
        if begin < token < end:
            cuts.append(token)
    must = [t for t in forced if begin < t < end]
    if must:
        cuts = sorted(set(cuts) | set(must))
    windows = []
    current = begin
    while current < end:
        limit = current + size
        wall = must[bisect_right(must, current)] if must and must[-1] > current else end
        if wall <= limit:
            windows.append((current, wall))
            current = wall
            continue
        if limit >= end:
            windows.append((current, end))
            break
        last = bisect_right(cuts, limit) - 1
        following = cuts[last] if last >= 0 and cuts[last] > current else limit
        windows.append((current, following))
        current = following
    return windows


def sentence_spans(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int, section_starts: Sequence[int] = ()
) -> Iterator[tuple[int, int, int]]:
    """Sentence spans inside text[start:end]; a sentence over `max_tokens` is cut at token boundaries, and none
    runs across a section start."""
    for s_start, s_end, tokens, _ in marked_sentence_spans(text, start, end, tokenizer, max_tokens, section_starts):
        yield s_start, s_end, tokens


def marked_sentence_spans(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int, section_starts: Sequence[int] = ()
) -> Iterator[tuple[int, int, int, bool]]:
    """`sentence_spans`, each with whether it is a later clause of the sentence before it (a long sentence parted
    into clauses, `sentences.sentence_clauses`), which a mid chunk does not start at."""
    edges = [start, *(s for s in section_starts if start < s < end), end]
    for a, b in zip(edges, edges[1:]):
        yield from _sentence_pieces(text, a, b, tokenizer, max_tokens)


def _sentence_pieces(
    text: str, start: int, end: int, tokenizer: Tokenizer, max_tokens: int
) -> Iterator[tuple[int, int, int, bool]]:
    clauses = [(clause, n > 0) for sentence in sentence_clauses(text[start:end]) for n, clause in enumerate(sentence)]
    for (s_start, s_end), later_clause in clauses:
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
            # A clause's first piece stays with the clause before it; the later pieces of an over-long one may part.
            yield p_start, p_stop, p_end - p_begin, later_clause
            later_clause = False
