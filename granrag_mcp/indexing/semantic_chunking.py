"""Percentile semantic chunking of the mid level: a mid chunk ends where the topic changes.

Inside each broad chunk the sentences (the narrow chunks) are embedded once, and the cosine distance across every
gap between two sentences is measured, each side of the gap smoothed with one more sentence (a buffer of one, so
one odd sentence does not make a boundary). A mid chunk ends after every distance above the
document's percentile threshold of all its distances (95 by default; overrides by path pattern, such as
``**/math/**=90``). Then sizes are bounded: a group over `mid_tokens` is cut greedily at sentence starts, a group
under `semantic_min_tokens` joins the neighbour it is semantically nearer to (if that stays within the maximum),
and a broad chunk of one or two sentences gets fixed windows (there is nothing to compare). A long sentence that the
sentence rules part into clauses (narrow chunks of their own) stays whole in its mid chunk: the gaps between its
clauses are no boundaries and count in no percentile, so a mid chunk starts only where a sentence starts, unless
the sentence alone is longer than `mid_tokens`.

A document with headings is cut at them as well: every section start begins a new group, and only a section
shorter than `semantic_min_tokens` merges with its nearer neighbour (see `group_sentences`); the broad chunks
break at top-level sections as the fixed chunker's do.

The sentence vectors are the narrow level's own: the indexer stores them instead of embedding the sentences again,
so semantic chunking costs no extra model work.
"""

from __future__ import annotations

import fnmatch
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback, TokenReducer
from granrag_mcp.indexing.chunking import broad_windows, marked_sentence_spans
from granrag_mcp.outline import Section
from granrag_mcp.records import ChunkSpan
from granrag_mcp.settings import ChunkSettings, parse_override
from granrag_mcp.tokens import Tokenizer

SMOOTHING = 1  # neighbours on each side whose vectors are added to a sentence's before distances are measured


@dataclass
class SentencePlan:
    """A document cut into broad chunks and, inside each, its sentences (the future narrow chunks)."""

    broad: list[ChunkSpan]
    sentences: list[list[tuple[int, int, int]]]  # per broad chunk: (start, end, tokens), in order
    starts: list[list[int]] = field(default_factory=list)  # per broad chunk: sentences that begin a section
    joined: list[list[bool]] = field(default_factory=list)  # per broad chunk: a later clause of the sentence before

    @property
    def texts_count(self) -> int:
        return sum(len(s) for s in self.sentences)


def percentile_for(doc_id: str, settings: ChunkSettings) -> float:
    """The percentile of a document: the first override whose pattern matches its id, else the default.

    Patterns are shell globs over the document id (its path relative to the indexed folder, with '/'); a leading
    '**/' also matches at the top level.
    """
    for entry in settings.semantic_overrides:
        pattern, percentile = parse_override(entry)
        if fnmatch.fnmatchcase(doc_id, pattern) or fnmatch.fnmatchcase("/" + doc_id, pattern):
            return percentile
    return settings.semantic_percentile


def plan_document(
    text: str, tokenizer: Tokenizer, settings: ChunkSettings, sections: Sequence[Section] = ()
) -> SentencePlan:
    """Broad chunks as the fixed chunker makes them, and the sentences inside each (none across a section start,
    and with sections, which of them begin one)."""
    bounds = tokenizer.boundaries(text)
    section_starts = [s.start for s in sections]
    plan = SentencePlan([], [])
    for b_begin, b_end in broad_windows(bounds, settings, sections):
        start, end = int(bounds[b_begin]), int(bounds[b_end])
        if not text[start:end].strip():
            continue
        plan.broad.append(ChunkSpan("broad", len(plan.broad), start, end, b_end - b_begin, None))
        marked = list(marked_sentence_spans(text, start, end, tokenizer, settings.sentence_max_tokens, section_starts))
        sentences = [(a, b, tokens) for a, b, tokens, _ in marked]
        plan.sentences.append(sentences)
        plan.joined.append([later for *_, later in marked])
        if sections:
            firsts = [a for a, _, _ in sentences]
            found = {bisect_left(firsts, s) for s in section_starts if start < s < end}
            plan.starts.append(sorted(i for i in found if 0 < i < len(sentences)))
    return plan


def smoothed_distances(vectors: np.ndarray, buffer: int = SMOOTHING) -> np.ndarray:
    """Cosine distance across each gap between consecutive sentences, each side smoothed by `buffer` neighbours.

    Distance i compares sentences [i - buffer, i] with [i + 1, i + 1 + buffer]. The sides do not share sentences:
    windows centred on each sentence (i - 1..i + 1 against i..i + 2) overlap, so one change of topic raises three
    consecutive distances alike and the cut lands a sentence early or late.
    """
    n = len(vectors)
    if n < 2:
        return np.zeros(0, dtype=np.float32)
    cumulative = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0)])
    gaps = np.arange(n - 1)
    left = cumulative[gaps + 1] - cumulative[np.maximum(gaps - buffer, 0)]
    right = cumulative[np.minimum(gaps + 2 + buffer, n)] - cumulative[gaps + 1]
    left /= np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-12)
    right /= np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-12)
    return (1.0 - np.sum(left * right, axis=1)).astype(np.float32)


def boundaries(distances: np.ndarray, threshold: float, joined: Sequence[bool] = ()) -> list[int]:
    """Sentence indexes that start a new group: i + 1 for every distance i above the threshold, unless sentence
    i + 1 is a later clause of sentence i (`joined`)."""
    return [int(i) + 1 for i in np.flatnonzero(distances > threshold) if not (joined and joined[int(i) + 1])]


def pack(tokens: Sequence[int], begin: int, end: int, limit: int, joined: Sequence[bool] = ()) -> list[tuple[int, int]]:
    """Sentences [begin, end) cut greedily into runs of at most `limit` tokens (a longer sentence alone). A run
    ends before a later clause (`joined`) only where the whole sentence does not fit: it ends at the sentence's
    start instead when that keeps both runs within the limit."""
    runs, start, total = [], begin, 0
    for i in range(begin, end):
        if i > start and total + tokens[i] > limit:
            cut = i
            if joined and joined[i]:
                head = i
                while head > start and joined[head]:
                    head -= 1
                if head > start and sum(tokens[head : i + 1]) <= limit:
                    cut = head
            runs.append((start, cut))
            start, total = cut, sum(tokens[cut:i])
        total += tokens[i]
    if start < end:
        runs.append((start, end))
    return runs


def group_sentences(
    tokens: Sequence[int],
    distances: np.ndarray,
    threshold: float,
    max_tokens: int,
    min_tokens: int,
    starts: Sequence[int] = (),
    joined: Sequence[bool] = (),
) -> list[tuple[int, int]]:
    """Runs [start, end) of sentence indexes: cut at the boundaries, at most max_tokens, small runs merged.

    `starts`: sentences that begin a section. Every one starts a run, and small runs merge only within their
    section, except a whole section shorter than min_tokens, which then merges with its nearer neighbour.
    `joined`: sentences that are later clauses of the one before (a long sentence parted for the narrow level);
    no run starts at one unless the whole sentence is longer than max_tokens.
    """
    n = len(tokens)
    whole = n - sum(joined)  # sentences, each parted one counted once
    if whole <= 2 and not starts:
        return pack(tokens, 0, n, max_tokens, joined)  # too few sentences to compare: fixed windows
    cuts = sorted({0, *(boundaries(distances, threshold, joined) if whole > 2 else ()), *starts, n})
    runs = [run for a, b in zip(cuts, cuts[1:]) for run in pack(tokens, a, b, max_tokens, joined)]
    walls = {0, *starts, n}
    runs = _merge_small(runs, tokens, distances, max_tokens, min_tokens, walls, across=False)
    if starts:
        runs = _merge_small(runs, tokens, distances, max_tokens, min_tokens, walls, across=True)
    return runs


def _merge_small(
    runs: list[tuple[int, int]],
    tokens: Sequence[int],
    distances: np.ndarray,
    max_tokens: int,
    min_tokens: int,
    walls: set[int],
    across: bool,
) -> list[tuple[int, int]]:
    """Runs under min_tokens joined to their nearer neighbour while the maximum allows: within the walls (section
    starts), or with `across`, only whole sections (a run from wall to wall), across them."""
    size = lambda run: sum(tokens[run[0] : run[1]])  # noqa: E731
    changed = True
    while changed and len(runs) > 1:
        changed = False
        for i, run in enumerate(runs):
            if size(run) >= min_tokens or (across and not (run[0] in walls and run[1] in walls)):
                continue
            # The nearer neighbour is the one across the smaller distance; either must keep the maximum.
            options = []
            if i > 0 and size(runs[i - 1]) + size(run) <= max_tokens and (across or run[0] not in walls):
                options.append((float(distances[run[0] - 1]), i - 1))
            if i + 1 < len(runs) and size(runs[i + 1]) + size(run) <= max_tokens and (across or run[1] not in walls):
                options.append((float(distances[run[1] - 1]), i + 1))
            if not options:
                continue
            _, other = min(options)
            a, b = sorted((i, other))
            runs[a : b + 1] = [(runs[a][0], runs[b][1])]
            changed = True
            break
    return runs


def semantic_spans(
    text: str, plan: SentencePlan, vectors: np.ndarray, settings: ChunkSettings, percentile: float
) -> list[ChunkSpan]:
    """All chunks of one document (broad, then mid, then narrow), mids grouped by meaning.

    `vectors` holds one unit vector per planned sentence, in plan order; the narrow chunks come out in that order.
    """
    per_broad, offset = [], 0
    for sentences in plan.sentences:
        per_broad.append(vectors[offset : offset + len(sentences)])
        offset += len(sentences)
    distances = [smoothed_distances(v) for v in per_broad]
    joined = plan.joined or [[False] * len(sentences) for sentences in plan.sentences]
    # The threshold is a percentile of the gaps between sentences: a parted sentence's inner gaps are no candidates.
    between = [d[~np.asarray(j[1:], dtype=bool)] for d, j in zip(distances, joined)]
    every = np.concatenate(between) if between else np.zeros(0)
    threshold = float(np.percentile(every, percentile)) if len(every) else float("inf")
    mid: list[ChunkSpan] = []
    narrow: list[ChunkSpan] = []
    for n, (broad, sentences, dist) in enumerate(zip(plan.broad, plan.sentences, distances)):
        tokens = [t for _, _, t in sentences]
        starts = plan.starts[n] if plan.starts else ()
        runs = group_sentences(
            tokens, dist, threshold, settings.mid_tokens, settings.semantic_min_tokens, starts, joined[n]
        )
        for a, b in runs:
            mid_seq = len(mid)
            mid.append(ChunkSpan("mid", mid_seq, sentences[a][0], sentences[b - 1][1], sum(tokens[a:b]), broad.seq))
            for start, end, count in sentences[a:b]:
                narrow.append(ChunkSpan("narrow", len(narrow), start, end, count, mid_seq))
    return plan.broad + mid + narrow


SHARED_GROUP = -1
"""The embedding group of every document whose cut does not depend on its sentence vectors."""


def cut_uses_vectors(plan: SentencePlan, settings: ChunkSettings) -> bool:
    """Whether the document's mid boundaries depend on its sentence vectors. They do not in a broad chunk of one
    or two sentences (a parted one counted once) and no section start (fixed windows: nothing to compare), nor in
    one whose sentences together are under `semantic_min_tokens` (and within `mid_tokens`): every run of it is then
    too small and merges with a neighbour until one mid holds them all, whichever distances chose the order of the
    merges."""
    for n, sentences in enumerate(plan.sentences):
        if plan.starts and plan.starts[n]:
            return True
        total = sum(tokens for _, _, tokens in sentences)
        whole = len(sentences) - (sum(plan.joined[n]) if plan.joined else 0)  # as `group_sentences` counts them
        if whole > 2 and not (total < settings.semantic_min_tokens and total <= settings.mid_tokens):
            return True
    return False


def semantic_documents(
    documents: Sequence[tuple[str, str]],
    tokenizer: Tokenizer,
    settings: ChunkSettings,
    embedder: Embedder,
    progress: ProgressCallback | None = None,
    token_reduce: TokenReducer | None = None,
    sections: Sequence[Sequence[Section]] | None = None,
) -> list[tuple[list[ChunkSpan], np.ndarray, list[np.ndarray] | None]]:
    """(spans, sentence vectors in narrow order, token vectors) per (doc_id, text); all sentences embedded in one
    run. With `token_reduce`, the token vectors are each sentence's reduced ones, from the forwards that embedded
    the sentences (the embedder must give token vectors); without, None. `sections`: each document's headings."""
    headings = sections if sections is not None else [()] * len(documents)
    plans = [plan_document(text, tokenizer, settings, h) for (_, text), h in zip(documents, headings, strict=True)]
    return cut_planned(documents, plans, settings, embedder, progress, token_reduce)


def cut_planned(
    documents: Sequence[tuple[str, str]],
    plans: Sequence[SentencePlan],
    settings: ChunkSettings,
    embedder: Embedder,
    progress: ProgressCallback | None = None,
    token_reduce: TokenReducer | None = None,
) -> list[tuple[list[ChunkSpan], np.ndarray, list[np.ndarray] | None]]:
    """`semantic_documents` after planning: a parallel engine plans on its CPU tasks and cuts where the
    model is.

    A document's cut depends on its own sentence vectors alone, and those on its own sentences alone, so any
    grouping of documents cuts the same.
    """
    vectors, tokens = embed_planned(documents, plans, settings, embedder, progress, token_reduce)
    return cut_embedded(documents, plans, settings, vectors, tokens)


def embed_planned(
    documents: Sequence[tuple[str, str]],
    plans: Sequence[SentencePlan],
    settings: ChunkSettings,
    embedder: Embedder,
    progress: ProgressCallback | None = None,
    token_reduce: TokenReducer | None = None,
) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """Every planned sentence's vector (and with `token_reduce` its reduced token vectors), in plan order: the
    model's part of `cut_planned`, which an index run reports as its own stage."""
    texts = [text[s:e] for (_, text), plan in zip(documents, plans) for ss in plan.sentences for s, e, _ in ss]
    # Each document is batched on its own: a boundary near the percentile threshold would otherwise move with
    # the rounding that the documents embedded beside it bring (the local and parallel engines group them apart).
    # Documents whose cut uses no distance share one group, so many small files fill whole batches.
    groups = [
        n if cut_uses_vectors(plan, settings) else SHARED_GROUP
        for n, plan in enumerate(plans)
        for _ in range(plan.texts_count)
    ]
    if token_reduce is not None:
        return embedder.embed_tokens(  # type: ignore[attr-defined]
            texts, token_reduce, progress=progress, groups=groups
        )
    return embedder.embed(texts, progress=progress, groups=groups), None


def cut_embedded(
    documents: Sequence[tuple[str, str]],
    plans: Sequence[SentencePlan],
    settings: ChunkSettings,
    vectors: np.ndarray,
    tokens: list[np.ndarray] | None,
) -> list[tuple[list[ChunkSpan], np.ndarray, list[np.ndarray] | None]]:
    """Each document cut where its sentence vectors (`embed_planned`'s) say the topic changes."""
    out, offset = [], 0
    for (doc_id, text), plan in zip(documents, plans):
        mine = vectors[offset : offset + plan.texts_count]
        my_tokens = tokens[offset : offset + plan.texts_count] if tokens is not None else None
        offset += plan.texts_count
        out.append((semantic_spans(text, plan, mine, settings, percentile_for(doc_id, settings)), mine, my_tokens))
    return out
