from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.embedding import QUERY_CACHE_SIZE, cpu_has_native_bf16, plan_batches, resolve_precision

TEXTS = [
    "The Halvorsen Bridge opened to traffic in 1931.",
    "Its main span is 412 metres long.",
    "The Halvorsen Bridge opened to traffic in 1931.",  # a repeat, as broad overlaps produce
    "Suspension bridges hang their deck from cables draped between towers, and this sentence is longer.",
    "Short.",
]


def write_cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\nprocessor\t: 1\n")
    return path


@pytest.mark.parametrize(
    ("flags", "native"),
    [("fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni", True), ("fpu amx_tile amx_bf16", True),
     ("fpu sse2 avx2 avx512f avx512bw", False), ("", False)],
)
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path, flags: str, native: bool) -> None:
    assert cpu_has_native_bf16(write_cpuinfo(tmp_path, flags)) is native


def test_a_missing_cpuinfo_means_no_native_bf16(tmp_path: Path) -> None:
    assert cpu_has_native_bf16(tmp_path / "absent") is False


def test_explicit_precisions_are_kept_and_auto_follows_the_cpu() -> None:
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("bf16") == "bf16"
    assert resolve_precision("auto") == ("bf16" if cpu_has_native_bf16() else "fp32")


# --- the real bundled model ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp32():
    from granrag_mcp.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(precision="fp32")


@pytest.fixture(scope="module")
def bf16(fp32):
    from granrag_mcp.embedding import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(precision="bf16")


def test_batch_rows_follow_the_callers_order_and_repeats_get_the_same_vector(fp32) -> None:
    vectors = fp32.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), fp32.dimension)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    one_by_one = np.stack([fp32.embed([text])[0] for text in TEXTS])
    np.testing.assert_allclose(vectors, one_by_one, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) < 0.99  # different sentences, different vectors


@pytest.mark.parametrize("workers", [1, 3])
def test_small_batches_side_by_side_give_the_same_vectors(fp32, workers: int) -> None:
    whole = fp32.embed(TEXTS)
    size, parallel = fp32.batch_size, fp32.workers
    try:
        fp32.batch_size, fp32.workers = 2, workers
        done: list[tuple[int, int]] = []
        pieces = fp32.embed(TEXTS, progress=lambda n, total: done.append((n, total)))
    finally:
        fp32.batch_size, fp32.workers = size, parallel
    np.testing.assert_allclose(whole, pieces, atol=1e-5)
    assert done == [(2, 4), (4, 4)]  # four distinct texts in batches of two


def test_batches_group_similar_lengths_within_the_text_and_token_limits() -> None:
    lengths = [30, 5, 200, 6, 31, 7, 5000]
    batches = plan_batches(lengths, max_texts=2, max_tokens=100)
    assert batches == [[1, 3], [5, 0], [4], [2], [6]]  # shortest first; 200 and 5000 each exceed 100 alone
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in plan_batches(lengths, max_texts=10, max_tokens=100):
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 100
    assert plan_batches([], 4) == []


def test_bf16_vectors_stay_close_to_fp32(fp32, bf16) -> None:
    cosine = (fp32.embed(TEXTS) * bf16.embed(TEXTS)).sum(axis=1)
    assert cosine.min() > 0.999, cosine


def test_a_repeated_query_comes_from_the_cache_and_cannot_be_changed(fp32) -> None:
    first = fp32.embed(["how long is the main span"])[0]
    again = fp32.embed(["how long is the main span"])[0]
    assert np.shares_memory(first, again)
    with pytest.raises(ValueError):
        again[0] = 1.0
    for n in range(QUERY_CACHE_SIZE + 1):
        fp32.embed([f"query number {n}"])
    evicted = fp32.embed(["how long is the main span"])[0]
    assert not np.shares_memory(first, evicted)
    np.testing.assert_allclose(first, evicted, atol=1e-6)


def test_empty_input_gives_an_empty_matrix(fp32) -> None:
    assert fp32.embed([]).shape == (0, fp32.dimension)
