"""One FAISS index per level: inner product on normalised vectors, keyed by stable int64 chunk ids.

The kind of index follows the level's size:

- below `ANN_THRESHOLD` vectors, an exact `IndexFlatIP`;
- from `ANN_THRESHOLD` on, an HNSW graph (approximate; its recall against exact search is measured by
  `benchmarks/suite/bench_scale_store.py`) whose vectors are stored as float16 (`IndexHNSWSQ` with `QT_fp16`): half the
  bytes of float32, which a graph search touches all over the file, for a recall within the noise of building
  the graph (benchmarks/results/scale_server.md). Its search breadth `efSearch` is set on every search, never
  taken from the file.

Both are wrapped in `IndexIDMap2`, so results and `reconstruct` speak chunk ids, and the kind is read back from
the file itself. An HNSW graph cannot delete nodes: `remove` marks the rows of removed ids as tombstones
(their id becomes -1 in the id map, which the file keeps) and searches skip them with an id selector. `write`
settles the kind first: a level that reached the threshold is converted to HNSW, one that fell below
`FLAT_BELOW` times the threshold goes back to flat (the gap keeps a level near the threshold from being rebuilt
on every run), and a graph whose tombstones exceed `TOMBSTONE_LIMIT` of its rows is rebuilt from its live
vectors. Every rebuild reads the vectors from the old index's own storage: nothing else keeps them, so a graph
that goes back to flat keeps its vectors at float16 precision (exact search over them, in float32).

`read` memory-maps the file where FAISS supports it (`IO_FLAG_MMAP_IFC`: the flat vectors and the HNSW graph
stay in the page cache, shared and reclaimable, instead of being copied into the process). The mapping is
read-only and a mapped index is never changed in place: the first `add` or `remove` replaces it with a private
copy read from the same file. Generations are immutable, so the mapped file never changes under a reader.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np

log = logging.getLogger(__name__)

Kind = Literal["flat", "hnsw"]
Storage = Literal["fp32", "fp16"]

ANN_THRESHOLD = 200_000
"""Vectors from which a level uses HNSW instead of exact search, whose cost per query grows with the level's size
(benchmarks/results/scale_store.md)."""
FLAT_BELOW = 0.9
"""An HNSW level goes back to exact search only below this fraction of the threshold."""
TOMBSTONE_LIMIT = 0.1
"""An HNSW graph is rebuilt from its live vectors when more than this fraction of its rows are removed ones."""

HNSW_M = 16
"""Graph degree (32 links per node on the bottom layer, 128 bytes per vector). Against M 32 on the same 1M vectors
it saves 128 MiB of what a server keeps resident, and with efSearch 512 instead of 256 recall@10 is as before
(0.9926 / 0.9932 against 0.9944 / 0.9926) for 0.5 ms more a search (benchmarks/results/scale_store.md)."""
HNSW_EF_CONSTRUCTION = 80
"""Breadth of the candidate list while the graph is built (FAISS's default is 40)."""
HNSW_EF_SEARCH = 512
"""Breadth of the candidate list per query (at least k): recall@10 0.99-0.993 at 1M vectors, p50 about 1 ms."""
HNSW_STORAGE: Storage = "fp16"
"""Encoding of the vectors inside a graph. float16 stores 2 bytes per dimension instead of 4 (about 1.0 instead of
1.7 GiB at 1M vectors of dimension 384, graph included); its rounding (relative 2^-11) changed 1 of 5,000
top-10 hits of the same 1M graph (benchmarks/results/scale_server.md). Flat indices always keep float32."""

BUILD_BATCH = 65_536  # rows copied at a time when an index is rebuilt from another's storage
TOMBSTONE = -1
_MMAP_FLAG = getattr(faiss, "IO_FLAG_MMAP_IFC", 0)
FAISS: Any = faiss
"""FAISS, for what its stubs do not declare (search parameters of HNSW, the fp16 scalar quantizer's signature)."""


@contextmanager
def search_threads(threads: int) -> Iterator[None]:
    """FAISS's OpenMP threads set to `threads` inside the block, then restored: one query at a time does less work
    than waking the thread pool costs (on a busy machine many times less), while graph builds want every core."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


class VectorIndex:
    def __init__(
        self,
        index: faiss.Index,
        *,
        threshold: int | None = None,
        ef_search: int | None = None,
        path: Path | None = None,
        mapped: bool = False,
    ) -> None:
        """Wrap an `IndexIDMap2` over `IndexFlatIP`, `IndexHNSWFlat` or a float16 `IndexHNSWSQ`. `path` and
        `mapped`: where a mapped index was read from, so that a change can first make a private copy."""
        # FAISS's stubs declare the SWIG base classes only (no `hnsw`, `id_map`, `storage`), so the indices are Any.
        self._index: Any = index if isinstance(index, faiss.IndexIDMap2) else FAISS.downcast_index(index)
        if not isinstance(self._index, faiss.IndexIDMap2):
            raise TypeError(f"expected an IndexIDMap2, got {type(self._index).__name__}")
        self._inner: Any = FAISS.downcast_index(self._index.index)
        self._kind, self._storage = _kind_and_storage(self._inner)
        self.threshold = max(1, ANN_THRESHOLD if threshold is None else int(threshold))
        self._ef_search = HNSW_EF_SEARCH if ef_search is None else int(ef_search)
        self._path = path
        self._mapped = mapped
        self._tombstones = 0
        if self._kind == "hnsw":
            self._inner.hnsw.efSearch = self._ef_search  # for direct FAISS use; `search` passes its own
            self._tombstones = int(np.count_nonzero(faiss.vector_to_array(self._index.id_map) == TOMBSTONE))
        self._live_only = faiss.IDSelectorRange(0, np.iinfo(np.int64).max)  # chunk ids are positive
        self._params: Any = None  # faiss.SearchParametersHNSW, which the stubs do not declare

    @classmethod
    def empty(cls, dimension: int, *, threshold: int | None = None, ef_search: int | None = None) -> VectorIndex:
        return cls(_flat(dimension), threshold=threshold, ef_search=ef_search)

    @classmethod
    def read(
        cls, path: Path, *, mmap: bool = True, threshold: int | None = None, ef_search: int | None = None
    ) -> VectorIndex:
        """Only call on a file whose checksum was verified: FAISS does not defend against corrupt bytes.

        With `mmap` (and a FAISS that supports it) the vectors and the graph are mapped read-only, not copied."""
        flags = _MMAP_FLAG if mmap else 0
        index = faiss.read_index(str(path), flags)
        return cls(index, threshold=threshold, ef_search=ef_search, path=Path(path), mapped=bool(flags))

    def write(self, path: Path) -> None:
        """Settle the kind for the current size, then write. Never write over the file this index maps."""
        if self._mapped and self._path is not None and Path(path).resolve() == self._path.resolve():
            raise ValueError(f"{path} is memory-mapped by this index and cannot be overwritten")
        self.settle()
        faiss.write_index(self._index, str(path))

    @property
    def ef_search(self) -> int:
        """HNSW search breadth (the candidate list is never shorter than k)."""
        return self._ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._ef_search = int(value)
        self._params = None
        if self._kind == "hnsw":
            self._inner.hnsw.efSearch = self._ef_search

    @property
    def kind(self) -> Kind:
        return self._kind

    @property
    def storage(self) -> Storage:
        """How the vectors are stored: always fp32 in a flat index; fp16 or (graphs written before it) fp32 in HNSW."""
        return self._storage

    @property
    def mapped(self) -> bool:
        return self._mapped

    @property
    def tombstones(self) -> int:
        return self._tombstones

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    def __len__(self) -> int:
        return int(self._index.ntotal) - self._tombstones

    def wanted_kind(self) -> Kind:
        """The kind this index should have at its size (with the gap below the threshold for HNSW)."""
        live = len(self)
        if self._kind == "hnsw":
            return "hnsw" if live >= self.threshold * FLAT_BELOW else "flat"
        return "hnsw" if live >= self.threshold else "flat"

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if not len(ids):
            return
        self._own()
        ids = np.asarray(ids, dtype=np.int64)
        if (ids < 0).any():
            raise ValueError("chunk ids must not be negative")
        # into a flat index this is a copy even past the threshold: `settle` builds the graph once, over all rows
        self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), ids)

    def remove(self, ids: np.ndarray) -> int:
        if not len(ids):
            return 0
        self._own()
        ids = np.asarray(ids, dtype=np.int64)
        if self._kind == "flat":
            return int(self._index.remove_ids(ids))
        id_map = faiss.vector_to_array(self._index.id_map)
        hit = np.isin(id_map, ids[ids >= 0])
        removed = int(np.count_nonzero(hit))
        if removed:
            id_map[hit] = TOMBSTONE
            faiss.copy_array_to_vector(id_map, self._index.id_map)
            self._index.construct_rev_map()
            self._tombstones += removed
            self._params = None
        return removed

    def settle(self) -> None:
        """Convert or compact so that the kind fits the size (see the module's doc)."""
        wanted = self.wanted_kind()
        if wanted != self._kind:
            log.info("converting a %s index of %d vectors to %s", self._kind, len(self), wanted)
            self._rebuild(wanted)
        elif self._kind == "hnsw" and self._tombstones > TOMBSTONE_LIMIT * self._index.ntotal:
            log.info("rebuilding an HNSW index: %d of its %d rows were removed", self._tombstones, self._index.ntotal)
            self._rebuild("hnsw")

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k nearest chunks; with `allowed` (chunk ids), the k nearest among those only, selected inside the
        search (a FAISS id selector) so that a filter never leaves fewer than k hits that exist."""
        k = min(k, len(self) if allowed is None else len(allowed))
        if k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32).reshape(1, -1)
        selector = None if allowed is None else faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64))
        if self._kind == "hnsw":
            params = self._search_params(k)
            if selector is not None:  # a chosen id is never a tombstone's -1: this selector also skips removed rows
                params = FAISS.SearchParametersHNSW(efSearch=max(self.ef_search, k))
                params.sel = selector
            scores, labels = self._index.search(query, k, params=params)
        elif selector is not None:
            scores, labels = self._index.search(query, k, params=FAISS.SearchParameters(sel=selector))
        else:
            scores, labels = self._index.search(query, k)
        return [(int(label), float(score)) for label, score in zip(labels[0], scores[0]) if label >= 0]

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        if not len(ids):
            return np.zeros((0, self.dimension))
        ids = np.asarray(ids, dtype=np.int64)
        if (ids < 0).any():
            raise ValueError("chunk ids must not be negative")
        return self._index.reconstruct_batch(ids)

    # internals

    def _search_params(self, k: int) -> Any:
        if k <= self.ef_search and self._params is not None:
            return self._params
        params = FAISS.SearchParametersHNSW(efSearch=max(self.ef_search, k))
        if self._tombstones:
            params.sel = self._live_only  # the id map translates it: rows whose id is -1 are skipped
        if k <= self.ef_search:
            self._params = params
        return params

    def _own(self) -> None:
        """Replace a mapped index by a private copy of the same (immutable, verified) file before changing it."""
        if not self._mapped:
            return
        assert self._path is not None
        owned = VectorIndex.read(self._path, mmap=False, threshold=self.threshold, ef_search=self.ef_search)
        self.__dict__.update(owned.__dict__)

    def _rows(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float32 vectors) in batches, decoded from this index's own storage (which may be mapped:
        it is only read)."""
        storage = self._inner if self._kind == "flat" else faiss.downcast_index(self._inner.storage)
        rows = int(self._index.ntotal)
        for begin in range(0, rows, BUILD_BATCH):
            yield begin, storage.reconstruct_n(begin, min(BUILD_BATCH, rows - begin))

    def _rebuild(self, kind: Kind) -> None:
        """A new index of `kind` over the live rows."""
        id_map = faiss.vector_to_array(self._index.id_map)
        fresh = _flat(self.dimension) if kind == "flat" else _hnsw(self.dimension)
        for begin, vectors in self._rows():
            ids = id_map[begin : begin + len(vectors)]
            live = ids != TOMBSTONE
            if live.any():
                fresh.add_with_ids(np.ascontiguousarray(vectors[live]), ids[live])
        self.__dict__.update(VectorIndex(fresh, threshold=self.threshold, ef_search=self.ef_search).__dict__)


def _flat(dimension: int) -> faiss.IndexIDMap2:
    return _id_map(faiss.IndexFlatIP(dimension))


def _hnsw(dimension: int) -> faiss.IndexIDMap2:
    inner = FAISS.IndexHNSWSQ(dimension, faiss.ScalarQuantizer.QT_fp16, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    return _id_map(inner)


def _kind_and_storage(inner: Any) -> tuple[Kind, Storage]:
    if isinstance(inner, faiss.IndexHNSWSQ):
        quantizer = FAISS.downcast_index(inner.storage).sq
        if quantizer.qtype == faiss.ScalarQuantizer.QT_fp16 and inner.metric_type == faiss.METRIC_INNER_PRODUCT:
            return "hnsw", "fp16"
    elif isinstance(inner, faiss.IndexFlat):
        return "flat", "fp32"
    raise TypeError(f"unsupported FAISS index {type(inner).__name__} inside the id map")


def _id_map(inner: Any) -> faiss.IndexIDMap2:
    """The id map owns the inner index (as one read from a file does), so no Python reference must keep it alive."""
    index = faiss.IndexIDMap2(inner)
    inner.this.disown()
    index.own_fields = True
    return index
