"""A BM25 index over one level's chunk texts: a sparse chunk x term matrix of precomputed BM25 weights.

Scoring a query sums the columns of its terms, so a search costs a few sparse column reads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

_WORD = re.compile(r"\w\w+")
_STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves""".split()
)


def analyse(text: str) -> list[str]:
    """Lower-cased words of two or more characters, stopwords dropped, plural endings folded."""
    terms = []
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        terms.append(word)
    return terms


class LexicalIndex:
    def __init__(self, ids: np.ndarray, vocabulary: np.ndarray, matrix: sparse.csc_matrix) -> None:
        self.ids = ids
        self.vocabulary = vocabulary
        self._term_index = {term: i for i, term in enumerate(vocabulary.tolist())}
        self.matrix = matrix

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, ids: Sequence[int], texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> LexicalIndex:
        term_index: dict[str, int] = {}
        rows, cols, counts = [], [], []
        lengths = np.zeros(len(texts), dtype=np.float32)
        for row, text in enumerate(texts):
            terms = analyse(text)
            lengths[row] = len(terms)
            for term, count in Counter(terms).items():
                rows.append(row)
                cols.append(term_index.setdefault(term, len(term_index)))
                counts.append(count)
        n_docs, n_terms = len(texts), len(term_index)
        tf = np.asarray(counts, dtype=np.float32)
        rows_arr = np.asarray(rows, dtype=np.int64)
        cols_arr = np.asarray(cols, dtype=np.int64)
        doc_freq = np.bincount(cols_arr, minlength=n_terms).astype(np.float32)
        idf = np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))
        avg_length = float(lengths.mean()) if n_docs and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths[rows_arr] / avg_length)
        weights = idf[cols_arr] * tf * (k1 + 1.0) / (tf + norm)
        matrix = sparse.csc_matrix((weights, (rows_arr, cols_arr)), shape=(n_docs, n_terms), dtype=np.float32)
        vocabulary = np.array(sorted(term_index, key=term_index.__getitem__), dtype=str)
        return cls(np.asarray(ids, dtype=np.int64), vocabulary, matrix)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        columns = sorted({self._term_index[t] for t in analyse(query) if t in self._term_index})
        if not columns or k <= 0 or not len(self.ids):
            return []
        # Sum the query terms' columns straight from the CSC arrays (scipy's column slicing costs more than this).
        matrix = self.matrix
        stored = np.concatenate([np.arange(matrix.indptr[c], matrix.indptr[c + 1]) for c in columns])
        scores = np.bincount(matrix.indices[stored], weights=matrix.data[stored], minlength=len(self.ids))
        scores = scores.astype(np.float32)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [(int(self.ids[i]), float(scores[i])) for i in order]

    def write(self, path: Path) -> None:
        with open(path, "wb") as handle:
            np.savez(
                handle,
                ids=self.ids,
                vocabulary=self.vocabulary,
                data=self.matrix.data,
                indices=self.matrix.indices,
                indptr=self.matrix.indptr,
                shape=np.asarray(self.matrix.shape, dtype=np.int64),
            )

    @classmethod
    def read(cls, path: Path) -> LexicalIndex:
        with np.load(path, allow_pickle=False) as arrays:
            shape = tuple(int(x) for x in arrays["shape"])
            matrix = sparse.csc_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
            return cls(arrays["ids"], arrays["vocabulary"], matrix)
