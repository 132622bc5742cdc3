"""PageRank by power iteration over a weighted undirected graph (scipy sparse), shared by the concept graph's
build (each concept's rank) and its queries (personalized PageRank from a query's concepts)."""

from __future__ import annotations

import numpy as np


def transition_matrix(n: int, source: np.ndarray, target: np.ndarray, weight: np.ndarray):  # noqa: ANN201
    """Column-stochastic scipy sparse matrix of a weighted undirected graph given by its directed arcs (each edge in
    both directions); a concept with no edge has an empty column (its rank is spread evenly, see `pagerank`)."""
    from scipy import sparse

    matrix = sparse.csr_matrix((weight.astype(np.float64), (target, source)), shape=(n, n))
    out = np.asarray(matrix.sum(axis=0)).ravel()
    out[out == 0] = 1.0
    return (matrix @ sparse.diags(1.0 / out)).tocsr()


def pagerank(  # noqa: ANN001 -- `transition`: a scipy sparse matrix from `transition_matrix`
    transition,
    restart: np.ndarray,
    alpha: float = 0.85,
    iterations: int = 100,
    tolerance: float = 1e-8,
    dangling: np.ndarray | None = None,
) -> np.ndarray:
    """(Personalized) PageRank by power iteration: `restart` is the teleport distribution; the rank of concepts
    with no edge (`dangling`, found from the matrix when not given) is spread by `restart` too, as networkx does."""
    restart = restart / restart.sum()
    if dangling is None:
        dangling = np.asarray(transition.sum(axis=0)).ravel() == 0
    rank = restart.copy()
    for _ in range(iterations):
        new = alpha * (transition @ rank + rank[dangling].sum() * restart) + (1 - alpha) * restart
        done = np.abs(new - rank).sum() < tolerance
        rank = new
        if done:
            break
    return rank
