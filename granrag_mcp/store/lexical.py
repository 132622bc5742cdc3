"""A BM25 index over one level's chunk texts: a sparse chunk x term matrix of precomputed BM25 weights.

Scoring a query sums the columns of its terms, so a search costs a few sparse column reads. The matrix is kept
as its three CSC arrays in an uncompressed .npz, and a stored index is memory-mapped rather than read: at a
million chunks a level the arrays are ~125 MB, which would otherwise sit in the server's private memory. The
vocabulary is stored sorted, so a term is found by binary search in the mapped array, not through a dict of
every term (indices written before that keep their order and get the dict).
"""

from __future__ import annotations

import re
import struct
import zipfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

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


WEIGHT_TYPE = np.float16
"""Stored BM25 weights. They stay below 50 even at a billion chunks, which float16 holds to 3 significant digits
(Lucene keeps document lengths in one byte for the same reason), in half the bytes a search reads. Scores are
summed in float64. Indices written with float32 weights are read as they are."""


def row_type(rows: int) -> type[np.unsignedinteger] | type[np.signedinteger]:
    """The narrowest integer type for row numbers below `rows`: two bytes per posting for a level of at most
    65,536 chunks (broad and mid levels mostly are), else four."""
    if rows <= 2**16:
        return np.uint16
    return np.int32 if rows <= 2**31 else np.int64


MAP_FROM_BYTES = 32 * 2**20
"""Index files from this size on are memory-mapped (about 100k sentences); smaller ones are read into memory."""


class LexicalIndex:
    def __init__(
        self, ids: np.ndarray, vocabulary: np.ndarray, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
        term_dict: bool = True,
    ) -> None:
        """`data`, `indices`, `indptr`: the CSC arrays of the chunk x term weight matrix (column j = vocabulary[j]).

        Without `term_dict` (only for a sorted vocabulary) terms are found by binary search in `vocabulary`.
        """
        self.ids = ids
        self.vocabulary = vocabulary
        self.data, self.indices, self.indptr = data, indices, indptr
        self._term_index = {term: i for i, term in enumerate(vocabulary.tolist())} if term_dict else None

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
        vocabulary = np.array(sorted(term_index), dtype=str)
        column_of = np.empty(n_terms, dtype=np.int64)  # first-seen index -> index in the sorted vocabulary
        column_of[[term_index[term] for term in vocabulary.tolist()]] = np.arange(n_terms)
        tf = np.asarray(counts, dtype=np.float32)
        rows_arr = np.asarray(rows, dtype=np.int64)
        cols_arr = column_of[np.asarray(cols, dtype=np.int64)] if cols else np.zeros(0, dtype=np.int64)
        doc_freq = np.bincount(cols_arr, minlength=n_terms).astype(np.float32)
        idf = np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))
        avg_length = float(lengths.mean()) if n_docs and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths[rows_arr] / avg_length)
        weights = (idf[cols_arr] * tf * (k1 + 1.0) / (tf + norm)).astype(WEIGHT_TYPE)
        order = np.lexsort((rows_arr, cols_arr))  # column by column, rows ascending: the CSC layout
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols_arr, minlength=n_terms), out=indptr[1:])
        return cls(np.asarray(ids, dtype=np.int64), vocabulary, weights[order],
                   rows_arr[order].astype(row_type(n_docs)), indptr.astype(np.int32 if len(rows) < 2**31 else np.int64))

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
        """How many chunks hold each term (terms as `analyse` writes them); terms the index lacks are left out."""
        out = {}
        for term in set(terms):
            columns = self._columns([term])
            if columns:
                out[term] = int(self.indptr[columns[0] + 1] - self.indptr[columns[0]])
        return out

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        columns = self._columns(analyse(query))
        if not columns or k <= 0 or not len(self.ids):
            return []
        # The query terms' columns summed straight from the CSC arrays: only their pages of a mapped file are read.
        stored = np.concatenate([np.arange(self.indptr[c], self.indptr[c + 1]) for c in columns])
        scores = np.bincount(self.indices[stored], weights=self.data[stored], minlength=len(self.ids))
        scores = scores.astype(np.float32)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = candidates[np.lexsort((candidates, -scores[candidates]))]
        return [(int(self.ids[i]), float(scores[i])) for i in order]

    def write(self, path: Path) -> None:
        _write_aligned_npz(path, {
            "ids": self.ids,
            "vocabulary": self.vocabulary,
            "data": self.data,
            "indices": self.indices,
            "indptr": self.indptr,
            "shape": np.asarray([len(self.ids), len(self.vocabulary)], dtype=np.int64),
            "vocabulary_sorted": np.asarray(bool(np.all(self.vocabulary[:-1] <= self.vocabulary[1:]))),
        })

    @classmethod
    def read(cls, path: Path, map_from_bytes: int = MAP_FROM_BYTES) -> LexicalIndex:
        """The index in a file `write` made. From `map_from_bytes` on it is memory-mapped, else read into memory
        (a mapped search pays a page fault the first time it reads a page: 0.01-0.03 ms a search on SQuAD-A, not
        worth it for a small index)."""
        arrays = _mapped_npz(path) if path.stat().st_size >= map_from_bytes else None
        if arrays is None:
            with np.load(path, allow_pickle=False) as loaded:
                arrays = {name: loaded[name] for name in loaded.files}
            return cls(arrays["ids"], arrays["vocabulary"], arrays["data"], arrays["indices"], arrays["indptr"])
        sorted_flag = arrays.get("vocabulary_sorted")  # absent in indices written before the vocabulary was sorted
        return cls(arrays["ids"], arrays["vocabulary"], arrays["data"], arrays["indices"], arrays["indptr"],
                   term_dict=sorted_flag is None or not bool(sorted_flag))


_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, 22 bytes we skip, file name length, extra field length
_ZIP64_EXTRA = 20  # what zipfile adds to a local header written with force_zip64
_PADDING_FIELD = 0x6770  # an extra-field id no zip tool assigns; readers skip fields they do not know
_ALIGN = 64


def _write_aligned_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """What `np.savez` writes (an uncompressed zip of .npy files, which `np.load` reads), except that each
    member starts on a 64-byte boundary of the file, so its array can be mapped aligned: numpy is several times
    slower on unaligned arrays. The .npy header pads itself to 64 bytes, so the data is aligned too."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            start = archive.fp.tell() + _LOCAL_HEADER.size + len(info.filename.encode()) + _ZIP64_EXTRA
            padding = -(start + 4) % _ALIGN  # after the 4-byte id and length of the padding field itself
            info.extra = struct.pack("<HH", _PADDING_FIELD, padding) + bytes(padding)
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)


def _mapped_npz(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of an uncompressed .npz, each memory-mapped read-only where it lies in the file; None when a
    member is compressed or holds Python objects."""
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
    arrays: dict[str, np.ndarray] = {}
    with open(path, "rb") as handle:
        for member in members:
            if member.compress_type != zipfile.ZIP_STORED or not member.filename.endswith(".npy"):
                return None
            handle.seek(member.header_offset)
            signature, name_length, extra_length = _LOCAL_HEADER.unpack(handle.read(_LOCAL_HEADER.size))
            if signature != b"PK\x03\x04":
                return None
            handle.seek(member.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
            else:
                return None
            if dtype.hasobject or handle.tell() % _ALIGN:  # written before members were aligned: read instead
                return None
            name = member.filename.removesuffix(".npy")
            if int(np.prod(shape)) == 0:
                arrays[name] = np.zeros(shape, dtype=dtype)
            else:
                mapped = np.memmap(path, dtype=dtype, mode="r", offset=handle.tell(), shape=shape,
                                   order="F" if fortran else "C")
                arrays[name] = mapped.view(np.ndarray)  # the same pages, without memmap's cost on every slice
    return arrays
