"""Similarity searches over the concept graph's vectors (concept names, community centroids), through FAISS on the
calling thread: a numpy product of the same size goes to a multi-threaded BLAS that waits for busy cores."""

from __future__ import annotations

import numpy as np

REFINE_FACTOR = 32  # concept names: candidates from the coarse codes, per name asked, scored again exactly
FLAT_BELOW = 4096  # fewer names than this are scanned exactly: the scan is short and nothing to train on


def refined_index(vectors: np.ndarray):  # noqa: ANN201 -- a FAISS index
    """An inner-product search that scans 8-bit codes of the vectors' leading half of principal components (an
    eighth of the bytes of the vectors) and scores its REFINE_FACTOR x k best candidates again on the float vectors:
    a flat index's answer (its top 5 and top 10 names on 400 of 400 SQuAD queries) from fewer bytes."""
    import faiss

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    dimension = vectors.shape[1]
    if len(vectors) < FLAT_BELOW or dimension < 8:
        flat = faiss.IndexFlatIP(dimension)
        flat.add(vectors)
        return flat
    coarse = dimension // 2
    codes = faiss.IndexPreTransform(
        faiss.PCAMatrix(dimension, coarse),
        faiss.IndexScalarQuantizer(coarse, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT),
    )
    codes.train(vectors)
    index = faiss.IndexRefineFlat(codes)
    index.k_factor = REFINE_FACTOR
    index.add(vectors)
    return index


def nearest(index, vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001 -- a FAISS index
    """Rows and inner products of the k nearest vectors of an index, best first."""
    k = min(k, index.ntotal)
    if k == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    scores, rows = index.search(np.ascontiguousarray(vector, dtype=np.float32)[None, :], k)
    return rows[0], scores[0]


def inner_products(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """The inner product of a vector with every row of a float32 C-ordered matrix, by FAISS's kernel: a flat
    index's scores without the k-best heap over every row that asking it for all of them costs."""
    import faiss

    vector = np.ascontiguousarray(vector, dtype=np.float32)
    out = np.empty(len(matrix), np.float32)
    rows, dimension = matrix.shape
    # exported by faiss's star import of its SWIG module, which mypy does not follow
    faiss.fvec_inner_products_ny(  # type: ignore[attr-defined]
        faiss.swig_ptr(out), faiss.swig_ptr(vector), faiss.swig_ptr(matrix), dimension, rows
    )
    return out
