"""The candidate ranker's features: what each candidate holds (the question's words and meaning in its
sentences) and what HRR's lists said of it. The features a model was fitted on are the features it is applied
to, so their names and computation live here only."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.levels import FINEST
from granrag_mcp.records import Chunk
from granrag_mcp.store.lexical import bm25_weights, idf
from granrag_mcp.text.analysis import LEGACY, analyse, analysis_language, ranker_terms
from granrag_mcp.text.analysis import stem as stem_words

WINDOWS = (1, 2, 3)
"""Runs of consecutive sentences the coverage features look at."""

LIST_FEATURES = ("hrr_position", "hrr_score", "rr_rerank", "rr_sentence_dense", "rr_sentence_lexical", "rr_mid_lexical")
"""What HRR's lists said of a candidate: its position, fused score, and reciprocal rank in each fused list."""
INSIDE_FEATURES = (
    "rerank_score",
    "rerank_gap",
    "dense_best",
    "dense_top3",
    "dense_gap",
    "cover_1",
    "cover_2",
    "cover_3",
    "cover_all",
    "cover_gap",
    "bm25_best",
    "bm25_gap",
    "bigram_best",
    "sentences",
)
"""What a candidate holds: the reranker's score, its sentences' cosines, coverage, BM25 and word pairs. A `_gap`
feature is the candidate's value minus the best value among the candidates of the same query."""
RANKED_FEATURES = (
    "rerank_score",
    "dense_best",
    "dense_top3",
    "cover_1",
    "cover_2",
    "cover_3",
    "cover_all",
    "bm25_best",
    "bigram_best",
)
RANK_FEATURES = tuple(f"rank_{name}" for name in RANKED_FEATURES)
"""Each RANKED_FEATURES value as 1 / (1 + its rank among the same query's candidates): the order a signal gives
carries from one corpus to another where its raw scale (cosines, BM25) does not."""
ALL_FEATURES = LIST_FEATURES + INSIDE_FEATURES + RANK_FEATURES
TOKEN_FEATURES = ("maxsim_best", "maxsim_top3", "maxsim_gap")
"""Late interaction, where the store holds token vectors: each sentence's MaxSim (the mean over the question's
tokens of the best cosine against the sentence's tokens), of the best sentence and the mean of the best three."""
KNOWN_FEATURES = ALL_FEATURES + TOKEN_FEATURES


def stem(words: Sequence[str]) -> list[str]:
    """English Snowball stems (PyStemmer), the stems of English text."""
    return stem_words(words, LEGACY)


STEM_CACHE_SIZE = 200_000
"""Sentences whose stems are remembered: agents and neighbouring questions meet the same sentences again, and
analysing them is most of the ranker's work. Keyed by chunk id and text together, since one process may open
several stores whose chunk ids name different sentences."""
_stem_cache: OrderedDict[tuple[int, str], list[str]] = OrderedDict()
_stem_lock = threading.Lock()


def sentence_stems(ids: Sequence[int], texts: Sequence[str], languages: Sequence[str] | None = None) -> list[list[str]]:
    """`ranker_terms(text, language)` of each sentence (English when `languages` is None): remembered ones
    reused."""
    keys = list(zip(ids, texts))
    language_of = dict(zip(keys, languages)) if languages is not None else {}
    with _stem_lock:
        known = {key: _stem_cache[key] for key in keys if key in _stem_cache}
    missing = [key for key in dict.fromkeys(keys) if key not in known]
    if missing:
        for key in missing:
            known[key] = ranker_terms(key[1], language_of.get(key, LEGACY))
        with _stem_lock:
            for key in missing:
                _stem_cache[key] = known[key]
            while len(_stem_cache) > STEM_CACHE_SIZE:
                _stem_cache.popitem(last=False)
    return [known[key] for key in keys]


@dataclass
class QueryTerms:
    stems: list[str]  # distinct stems in query order
    weights: np.ndarray  # IDF of each stem in the sentence index
    bigrams: list[tuple[str, str]]  # distinct pairs of consecutive stems (stopwords dropped)


def query_terms(view: Any, query: str) -> QueryTerms:
    """The query's stems under every language the sentence index was analysed in, each weighted by the IDF of its
    BM25 term there, and its pairs of consecutive stems."""
    index = view.snapshot.lexical[FINEST]
    n = len(index)
    weights: dict[str, float] = {}
    bigrams: dict[tuple[str, str], None] = {}
    # A query whose words cannot match the text has no terms: every word feature is then the same for every candidate.
    for language in index.languages if view.words_match(query) else ():
        terms = analyse(query, language)
        frequencies = index.document_frequencies(terms)
        stems = ranker_terms(query, language)
        for term, s in zip(terms, stems):
            df = frequencies.get(term, 0)
            weights[s] = max(weights.get(s, 0.0), float(idf(n, df)))
        bigrams.update(dict.fromkeys((a, b) for a, b in zip(stems, stems[1:]) if a != b))
    distinct = list(weights)
    return QueryTerms(distinct, np.array([weights[s] for s in distinct], dtype=np.float64), list(bigrams))


@dataclass
class Sentences:
    """The sentences of each candidate, flattened: texts, stored vectors, token counts, and where each candidate's
    run starts and ends."""

    texts: list[str]
    vectors: np.ndarray
    token_counts: np.ndarray
    bounds: list[tuple[int, int]]
    ids: list[int] | None = None  # their chunk ids, which let their stems be remembered
    languages: list[str] | None = None  # the analysis of each (its document's language); English when None

    def of(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        begin, end = self.bounds[n]
        return self.vectors[begin:end], self.token_counts[begin:end]


class CandidateReads:
    """What one query has read of its candidates: chunks, and each candidate's sentences (texts, stored vectors,
    token counts). Each is read once however many stages ask for it (HRR's reranker, then the candidate ranker)."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self._chunks: dict[int, Chunk] = {}
        self._members: dict[int, list[int]] = {}  # candidate id -> its sentence ids in document order
        self._sentences: dict[int, Chunk] = {}
        self._vectors: dict[int, np.ndarray] = {}
        self._doc_languages: dict[str, str] = {}

    def chunks(self, ids: Sequence[int]) -> dict[int, Chunk]:
        """The chunks of `ids` the catalog holds; one catalog query for those not read yet."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._chunks]
        if missing:
            self._chunks.update(self.view.catalog.chunks(missing))
        return {i: self._chunks[i] for i in ids if i in self._chunks}

    def sentences(self, chunks: Sequence[Chunk]) -> Sentences:
        """Every candidate's finest-level chunks in document order; the candidates not seen yet cost one catalog
        query per level crossed, one for the sentences' texts and one vector read."""
        new = list({c.id: c for c in chunks if c.id not in self._members}.values())
        if new:
            members = self.view.descendants([c.id for c in new], [c.level for c in new], FINEST)
            self._members.update(zip((c.id for c in new), members))
            every = [i for i in dict.fromkeys(i for ids in members for i in ids) if i not in self._sentences]
            if every:
                self._sentences.update(self.view.catalog.chunks(every))
                stored = self.view.snapshot.vectors[FINEST].reconstruct(np.array(every, dtype=np.int64))
                self._vectors.update(zip(every, np.asarray(stored, dtype=np.float32)))
        texts: list[str] = []
        rows: list[np.ndarray] = []
        counts: list[int] = []
        bounds: list[tuple[int, int]] = []
        sentence_ids: list[int] = []
        languages = self._languages(chunks)
        sentence_languages: list[str] = []
        for chunk in chunks:
            ids = [i for i in self._members[chunk.id] if i in self._sentences]
            bounds.append((len(texts), len(texts) + len(ids)))
            sentence_ids.extend(ids)
            sentence_languages.extend([languages[chunk.doc_id]] * len(ids))
            texts.extend(self._sentences[i].text for i in ids)
            rows.extend(self._vectors[i] for i in ids)
            counts.extend(self._sentences[i].token_count for i in ids)
        dimension = self.view.embedder.dimension
        vectors = (
            np.array(rows, dtype=np.float32).reshape(len(rows), -1) if rows else np.zeros((0, dimension), np.float32)
        )
        counted = np.array(counts, dtype=np.float32)
        return Sentences(texts, vectors, counted, bounds, sentence_ids, sentence_languages)

    def _languages(self, chunks: Sequence[Chunk]) -> dict[str, str]:
        """The analysis language of each candidate's document, read once per document."""
        missing = [d for d in dict.fromkeys(c.doc_id for c in chunks) if d not in self._doc_languages]
        if missing:
            told = self.view.catalog.languages(missing)
            self._doc_languages.update({d: analysis_language(told.get(d)) for d in missing})
        return self._doc_languages

    def sentence_vectors(self, chunks: Sequence[Chunk]) -> list[tuple[np.ndarray, np.ndarray]]:
        """`View.sentence_vectors` from these reads: each chunk's sentence vectors and token counts, in arrays of
        their own as that gives them."""
        self.sentences(chunks)
        out = []
        for chunk in chunks:
            ids = [i for i in self._members[chunk.id] if i in self._sentences]
            vectors = np.array([self._vectors[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)
            out.append((vectors, np.array([self._sentences[i].token_count for i in ids], dtype=np.float32)))
        return out


def candidate_sentences(view: Any, chunks: Sequence[Chunk]) -> Sentences:
    """Every candidate's finest-level chunks in document order, read in one catalog query and one vector read."""
    return CandidateReads(view).sentences(chunks)


def _window_max(rows: np.ndarray, width: int) -> np.ndarray:
    """For each run of `width` consecutive rows (one run if there are fewer), the elementwise max."""
    if len(rows) <= width:
        return rows.max(axis=0, keepdims=True)
    return np.max(np.stack([rows[i : len(rows) - width + 1 + i] for i in range(width)]), axis=0)


def inside_features(
    query: QueryTerms, vector: np.ndarray, sentences: Sentences, rerank_scores: Sequence[float]
) -> dict[str, np.ndarray]:
    """The features computed inside each candidate (see INSIDE_FEATURES), one value per candidate."""
    n = len(sentences.bounds)
    out = {name: np.zeros(n, dtype=np.float64) for name in INSIDE_FEATURES}
    out["rerank_score"][:] = rerank_scores
    total = float(query.weights.sum()) or 1.0
    column = {s: j for j, s in enumerate(query.stems)}
    pair = {b: j for j, b in enumerate(query.bigrams)}
    tf = np.zeros((len(sentences.texts), len(query.stems)), dtype=np.float64)
    pairs = np.zeros((len(sentences.texts), max(len(query.bigrams), 1)), dtype=bool)
    lengths = np.zeros(len(sentences.texts), dtype=np.float64)
    if sentences.ids is not None:
        analysed = sentence_stems(sentences.ids, sentences.texts, sentences.languages)
    else:
        languages = sentences.languages or [LEGACY] * len(sentences.texts)
        analysed = [ranker_terms(text, language) for text, language in zip(sentences.texts, languages)]
    for row, stems in enumerate(analysed):
        lengths[row] = len(stems)
        for s in stems:
            j = column.get(s)
            if j is not None:
                tf[row, j] += 1.0
        if pair:
            for b in zip(stems, stems[1:]):
                j = pair.get(b)
                if j is not None:
                    pairs[row, j] = True
    average = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
    bm25 = (bm25_weights(tf, lengths, average) @ query.weights) / total
    present = (tf > 0).astype(np.float64)
    cosines = sentences.vectors @ np.asarray(vector, dtype=np.float32) if len(sentences.texts) else np.zeros(0)
    for c, (begin, end) in enumerate(sentences.bounds):
        out["sentences"][c] = end - begin
        if end == begin:
            out["dense_best"][c] = out["dense_top3"][c] = -1.0
            continue
        rows = present[begin:end]
        for width in WINDOWS:
            out[f"cover_{width}"][c] = float((_window_max(rows, width) @ query.weights).max()) / total
        out["cover_all"][c] = float(rows.max(axis=0) @ query.weights) / total
        out["bm25_best"][c] = float(bm25[begin:end].max())
        if query.bigrams:
            out["bigram_best"][c] = float(_window_max(pairs[begin:end], 3).sum(axis=1).max()) / len(query.bigrams)
        ordered = np.sort(cosines[begin:end])[::-1]
        out["dense_best"][c] = float(ordered[0])
        out["dense_top3"][c] = float(ordered[:3].mean())
    for name, of in (
        ("rerank_gap", "rerank_score"),
        ("dense_gap", "dense_best"),
        ("cover_gap", "cover_3"),
        ("bm25_gap", "bm25_best"),
    ):
        out[name] = out[of] - (out[of].max() if n else 0.0)
    return out


def rank_features(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The RANK_FEATURES of one query's candidates from their RANKED_FEATURES (equal values: the earlier ranks
    first, as `order_by`)."""
    out: dict[str, np.ndarray] = {}
    for name in RANKED_FEATURES:
        values = np.asarray(table[name], dtype=np.float64)
        ranks = np.empty(len(values), dtype=np.float64)
        ranks[np.argsort(-values, kind="stable")] = np.arange(len(values), dtype=np.float64)
        out[f"rank_{name}"] = 1.0 / (1.0 + ranks)
    return out


def token_features(view: Any, query: str, sentences: Sentences) -> dict[str, np.ndarray]:
    """The MaxSim features of each candidate (see TOKEN_FEATURES), from the store's token vectors and the query's
    token vectors (from the forward that embedded the query)."""
    from granrag_mcp.store.token_vectors import maxsim

    stored = view.snapshot.token_vectors
    query_rows = view.query_tokens(query)
    if stored is None or query_rows is None or sentences.ids is None:
        raise InvalidInputError(
            "this candidate ranker uses token vectors, which the store does not hold: index with --token-vectors, "
            "or set GRANRAG_CANDIDATE_RANKER to auto or shipped"
        )
    rows, counts = stored.rows(sentences.ids)
    scores = maxsim(stored.project_query(query_rows), rows, counts)
    n = len(sentences.bounds)
    out = {name: np.full(n, -1.0) for name in TOKEN_FEATURES}
    for c, (begin, end) in enumerate(sentences.bounds):
        if end > begin:
            ordered = np.sort(scores[begin:end])[::-1]
            out["maxsim_best"][c] = float(ordered[0])
            out["maxsim_top3"][c] = float(ordered[:3].mean())
    out["maxsim_gap"] = out["maxsim_best"] - (out["maxsim_best"].max() if n else 0.0)
    return out


def list_features(candidates: Sequence[Any]) -> dict[str, np.ndarray]:
    """What HRR's fusion said of each candidate (ScoredChunks in HRR's order, with their contributions)."""
    n = len(candidates)
    out = {name: np.zeros(n, dtype=np.float64) for name in LIST_FEATURES}
    top = max((c.score or 0.0 for c in candidates), default=0.0) or 1.0
    for position, hit in enumerate(candidates):
        out["hrr_position"][position] = 1.0 / (1.0 + position)
        out["hrr_score"][position] = (hit.score or 0.0) / top
        for name, contribution in hit.sources.items():
            key = f"rr_{name}"
            if key in out:
                out[key][position] = 1.0 / contribution.rank
    return out


def order_by(scores: np.ndarray) -> list[int]:
    """Positions best first; equal scores keep their given order."""
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
