"""A BM25 index over one level's chunk texts: a sparse chunk x term matrix of precomputed BM25 weights.

Scoring a query sums the columns of its terms, so a search costs a few sparse column reads. The matrix is kept
as its three CSC arrays, each a plain .npy file, and a large stored index is memory-mapped rather than read: at a
million chunks a level the arrays are ~125 MB, which would otherwise sit in the server's private memory. The
vocabulary is stored sorted, so a term is found by binary search in the mapped array, not through a dict of
every term.

Kept rather than the bm25s library, which computes the same scores from the same tokens: at a million chunks
(benchmarks/bench_lexical.py) this builds in about three quarters of the time at 60% of the peak memory, opens
in milliseconds with 75 MiB less resident memory (bm25s reads its whole vocabulary into a dict), and searches as
fast as bm25s's scoring alone (12 times faster than its `retrieve`).

Each chunk's terms come from `text/analysis` by its document's language; the index keeps the languages it was
analysed in, so a query is analysed the same ways. An index written before languages were told has no such file
and was analysed as English throughout.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from granrag_mcp.text.analysis import LEGACY, analyse, analysis_language, query_terms

WEIGHT_TYPE = np.float16
"""Stored BM25 weights. They stay below 50 even at a billion chunks, which float16 holds to 3 significant digits
(Lucene keeps document lengths in one byte for the same reason), in half the bytes a search reads. Scores are
summed in float64."""


def row_type(rows: int) -> type[np.unsignedinteger] | type[np.signedinteger]:
    """The narrowest integer type for row numbers below `rows`: two bytes per posting for a level of at most
    65,536 chunks (broad and mid levels mostly are), else four."""
    if rows <= 2**16:
        return np.uint16
    return np.int32 if rows <= 2**31 else np.int64


MAP_FROM_BYTES = 32 * 2**20
"""An index whose files reach this size together is memory-mapped (about 100k sentences); a smaller one is read
into memory."""


BM25_K1, BM25_B = 1.2, 0.75


def idf(n_docs: int | float, doc_freq: np.ndarray | float) -> np.ndarray:
    """BM25's inverse document frequency (Lucene's, never negative) of terms held by `doc_freq` of `n_docs` chunks."""
    return np.log1p((n_docs - np.asarray(doc_freq, dtype=np.float64) + 0.5) / (np.asarray(doc_freq) + 0.5))


def bm25_weights(
    tf: np.ndarray, lengths: np.ndarray, average: float, k1: float = BM25_K1, b: float = BM25_B
) -> np.ndarray:
    """BM25's saturated term frequency, tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)), for counts
    `tf` of terms in chunks of `lengths` terms (`tf` a vector beside `lengths`, or one row per chunk)."""
    norm = k1 * (1.0 - b + b * np.asarray(lengths) / average)
    if np.ndim(tf) == 2:
        norm = norm[:, None]
    return tf * (k1 + 1.0) / (tf + norm)


class LexicalIndex:
    def __init__(
        self,
        ids: np.ndarray,
        vocabulary: np.ndarray,
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        term_dict: bool = True,
        languages: Sequence[str] = (LEGACY,),
    ) -> None:
        """`data`, `indices`, `indptr`: the CSC arrays of the chunk x term weight matrix (column j = vocabulary[j]).

        `vocabulary` is sorted; without `term_dict` terms are found in it by binary search. `languages`: the
        analyses its terms came from, which a query is analysed by.
        """
        self.ids = ids
        self.languages = tuple(languages)
        self.vocabulary = vocabulary
        self.data, self.indices, self.indptr = data, indices, indptr
        self._term_index = {term: i for i, term in enumerate(vocabulary.tolist())} if term_dict else None

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(
        cls,
        ids: Sequence[int],
        texts: Sequence[str],
        k1: float = BM25_K1,
        b: float = BM25_B,
        languages: Sequence[str] | None = None,
    ) -> LexicalIndex:
        """The index of `texts` (chunk `ids`), each analysed by its language in `languages` (ISO 639-1 codes beside
        `texts`; all English when None)."""
        term_index: dict[str, int] = {}
        rows, cols, counts = [], [], []
        lengths = np.zeros(len(texts), dtype=np.float32)
        kinds = [analysis_language(language) for language in languages] if languages is not None else None
        for row, text in enumerate(texts):
            terms = analyse(text, kinds[row]) if kinds is not None else analyse(text)
            lengths[row] = len(terms)
            for term, count in Counter(terms).items():
                rows.append(row)
                cols.append(term_index.setdefault(term, len(term_index)))
                counts.append(count)
        n_docs, n_terms = len(texts), len(term_index)
        vocabulary = np.array(sorted(term_index), dtype=str)
        column_of = np.empty(n_terms, dtype=np.int64)  # first-seen index -> index in the sorted vocabulary
        column_of[[term_index[term] for term in vocabulary.tolist()]] = np.arange(n_terms)
        tf = np.asarray(counts, dtype=np.float32)
        rows_arr = np.asarray(rows, dtype=np.int64)
        cols_arr = column_of[np.asarray(cols, dtype=np.int64)] if cols else np.zeros(0, dtype=np.int64)
        doc_freq = np.bincount(cols_arr, minlength=n_terms).astype(np.float32)
        avg_length = float(lengths.mean()) if n_docs and lengths.mean() > 0 else 1.0
        saturated = bm25_weights(tf, lengths[rows_arr], avg_length, k1, b)
        weights = (idf(n_docs, doc_freq)[cols_arr] * saturated).astype(WEIGHT_TYPE)
        order = np.lexsort((rows_arr, cols_arr))  # column by column, rows ascending: the CSC layout
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols_arr, minlength=n_terms), out=indptr[1:])
        return cls(
            np.asarray(ids, dtype=np.int64),
            vocabulary,
            weights[order],
            rows_arr[order].astype(row_type(n_docs)),
            indptr.astype(np.int32 if len(rows) < 2**31 else np.int64),
            languages=sorted(set(kinds)) if kinds else (LEGACY,),
        )

    def _columns(self, terms: list[str]) -> list[int]:
        if self._term_index is not None:
            return sorted({self._term_index[t] for t in terms if t in self._term_index})
        width = self.vocabulary.dtype.itemsize // 4  # fixed-width UTF-32: no longer term can be in the vocabulary
        wanted = sorted({t for t in terms if len(t) <= width})
        if not wanted or not len(self.vocabulary):
            return []
        # In the vocabulary's own dtype: another width would make numpy convert the whole vocabulary per search.
        positions = np.searchsorted(self.vocabulary, np.array(wanted, dtype=self.vocabulary.dtype))
        return [int(p) for p, t in zip(positions, wanted) if p < len(self.vocabulary) and self.vocabulary[p] == t]

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each term (terms as `text.analysis.analyse` writes them); terms the index lacks are
        left out."""
        out = {}
        for term in set(terms):
            columns = self._columns([term])
            if columns:
                out[term] = int(self.indptr[columns[0] + 1] - self.indptr[columns[0]])
        return out

    def query_terms(self, query: str) -> list[str]:
        """The query's terms under every analysis the index was built with."""
        return query_terms(query, self.languages)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k best-scoring chunks; with `allowed` (chunk ids), the k best among those only."""
        columns = self._columns(self.query_terms(query))
        if not columns or k <= 0 or not len(self.ids):
            return []
        # The query terms' columns summed straight from the CSC arrays: only their pages of a mapped file are read.
        stored = np.concatenate([np.arange(self.indptr[c], self.indptr[c + 1]) for c in columns])
        scores = np.bincount(self.indices[stored], weights=self.data[stored], minlength=len(self.ids))
        scores = scores.astype(np.float32)
        candidates = np.flatnonzero(scores > 0)
        if allowed is not None:  # before the top k is taken: a filter must not leave fewer hits than exist
            candidates = candidates[np.isin(self.ids[candidates], allowed)]
        if len(candidates) > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [(int(self.ids[i]), float(scores[i])) for i in order]

    def write(self, path: Path) -> None:
        """Each array as a plain .npy file named after `path` (`array_files`): files any numpy reads, and ones
        `read` maps without parsing a container. `np.save` pads its header to 64 bytes, so a mapped array is
        aligned (numpy is several times slower on unaligned arrays)."""
        for name, target in zip(ARRAYS, array_files(path)):
            with open(target, "wb") as handle:
                np.save(handle, getattr(self, name), allow_pickle=False)
        if self.languages != (LEGACY,):  # an English index stays byte for byte what it was
            with open(languages_file(path), "wb") as handle:
                np.save(handle, np.array(self.languages, dtype=str), allow_pickle=False)

    @classmethod
    def read(cls, path: Path, map_from_bytes: int = MAP_FROM_BYTES) -> LexicalIndex:
        """The index `write` made at `path`. From `map_from_bytes` on (all its files together) it is memory-mapped
        and terms are found by binary search in the mapped vocabulary; below, it is read into memory with a
        dict of its terms (a mapped search pays a page fault the first time it reads a page: 0.01-0.03 ms a
        search on SQuAD-A, not worth it for a small index)."""
        files = array_files(path)
        mapped = sum(file.stat().st_size for file in files) >= map_from_bytes
        ids, vocabulary, data, indices, indptr = (_load(file, mapped) for file in files)
        analysed = languages_file(path)
        languages = np.load(analysed, allow_pickle=False).tolist() if analysed.is_file() else [LEGACY]
        return cls(ids, vocabulary, data, indices, indptr, term_dict=not mapped, languages=languages)


ARRAYS = ("ids", "vocabulary", "data", "indices", "indptr")
"""The arrays of a stored index, one .npy file each."""


def array_files(path: Path) -> list[Path]:
    """The files of the index named `path`: `<path>.<array>.npy` beside it, in the order of `ARRAYS`."""
    return [path.with_name(f"{path.name}.{name}.npy") for name in ARRAYS]


def languages_file(path: Path) -> Path:
    """The analyses a non-English index was built with (absent: English alone, as every index before them)."""
    return path.with_name(f"{path.name}.languages.npy")


def _load(file: Path, mapped: bool) -> np.ndarray:
    array = np.load(file, mmap_mode="r" if mapped else None, allow_pickle=False)
    return array.view(np.ndarray) if isinstance(array, np.memmap) else array  # memmap costs on every slice
