"""The query-time personalized PageRank (conjugate gradients on the symmetric system) against a direct solve."""

from __future__ import annotations

import numpy as np
import pytest

from granrag_mcp.pagerank import pagerank, personalized_system, solve_personalized, transition_matrix

# a weighted triangle 0-1-2, a pendant 3 on 2, a path 5-6, and 4 with no edge
A, B = np.array([0, 0, 1, 2, 5]), np.array([1, 2, 2, 3, 6])
WEIGHT = np.array([1.0, 2.0, 3.0, 0.5, 1.5])
N, ALPHA = 7, 0.85
ARCS = (np.concatenate([A, B]), np.concatenate([B, A]), np.concatenate([WEIGHT] * 2))


def _direct(restart: np.ndarray) -> np.ndarray:
    """r = alpha (M r + r_dangling * teleport) + (1 - alpha) teleport, solved directly."""
    teleport = restart / restart.sum()
    matrix = transition_matrix(N, *ARCS).toarray() + np.outer(teleport, np.arange(N) == 4)
    return np.linalg.solve(np.eye(N) - ALPHA * matrix, (1 - ALPHA) * teleport)


@pytest.mark.parametrize(
    "restart",
    [np.ones(N), np.eye(N)[0], np.eye(N)[4], np.array([0.5, 0, 0, 1, 2, 0, 0.25]), np.eye(N)[5]],
    ids=["uniform", "one seed", "a seed with no edge", "weighted seeds", "another component"],
)
def test_the_system_solves_the_pagerank_equation(restart: np.ndarray) -> None:
    system = personalized_system(N, *ARCS, ALPHA)
    found = solve_personalized(system, restart, steps=50)  # single precision: equal to about 1e-7
    assert np.allclose(found, _direct(restart), rtol=1e-5, atol=1e-7) and abs(found.sum() - 1) < 1e-9
    # the power iteration converges to the same ranks
    exact = pagerank(transition_matrix(N, *ARCS), restart, ALPHA, 300, 1e-14)
    assert np.allclose(exact, found, rtol=1e-5, atol=1e-7)


def test_few_steps_already_rank_as_the_exact_answer() -> None:
    rng = np.random.default_rng(0)
    n = 300
    a, b = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    keep = a != b
    arcs = (np.concatenate([a[keep], b[keep]]), np.concatenate([b[keep], a[keep]]))
    weight = np.tile(rng.random(int(keep.sum())) + 0.1, 2)
    system = personalized_system(n, *arcs, weight, ALPHA)
    restart = np.zeros(n)
    restart[[3, 17, 40]] = [1.0, 0.8, 0.6]
    exact = pagerank(transition_matrix(n, *arcs, weight), restart, ALPHA, 500, 1e-15)
    found = solve_personalized(system, restart, steps=10)
    assert np.abs(found - exact).sum() < 0.85**20  # closer than 20 power iterations are bound to be
    assert list(np.argsort(-found)[:20]) == list(np.argsort(-exact)[:20])


def test_the_system_is_ordered_near_its_diagonal_and_answers_in_concept_order() -> None:
    # a path 0-1-...-199 with its concepts numbered at random: their own order puts neighbours far apart
    n = 200
    label = np.random.default_rng(1).permutation(n)
    a, b = label[:-1], label[1:]
    arcs = (np.concatenate([a, b]), np.concatenate([b, a]), np.ones(2 * (n - 1)))
    system = personalized_system(n, *arcs, ALPHA)
    rows, cols = system.matrix.nonzero()
    assert np.abs(rows - cols).max() == 1  # a path reordered is tridiagonal
    assert sorted(system.order.tolist()) == list(range(n)) and (system.order[system.position] == np.arange(n)).all()
    restart = np.zeros(n)
    restart[label[0]] = 1.0
    found = solve_personalized(system, restart, steps=200)
    exact = pagerank(transition_matrix(n, *arcs), restart, ALPHA, 500, 1e-15)
    assert np.allclose(found, exact, rtol=1e-4, atol=1e-7)
    assert (np.diff(found[label][2:30]) < 0).all()  # past the seed's neighbour, rank falls along the path
