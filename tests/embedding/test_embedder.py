import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.embedding import embedder as embedding
from granrag_mcp.embedding.embedder import (
    MAX_PADDING,
    QUERY_CACHE_SIZE,
    cpu_has_native_bf16,
    plan_batches,
    resolve_precision,
    torch_runs_avx512,
)

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
    [
        ("fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni", True),
        ("fpu amx_tile amx_bf16", True),
        ("fpu sse2 avx2 avx512f avx512bw", False),
        ("", False),
    ],
)
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path, flags: str, native: bool) -> None:
    assert cpu_has_native_bf16(write_cpuinfo(tmp_path, flags)) is native


def test_a_missing_cpuinfo_means_no_native_bf16(tmp_path: Path) -> None:
    assert cpu_has_native_bf16(tmp_path / "absent") is False


def test_an_arm_cpu_listing_bf16_among_its_features_is_left_at_fp32(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: 0x41\n")
    assert cpu_has_native_bf16(path) is False


def test_explicit_precisions_are_kept_and_auto_follows_the_cpu_and_torch() -> None:
    assert resolve_precision("fp32") == "fp32"
    assert resolve_precision("bf16") == "bf16"
    assert resolve_precision("auto") == ("bf16" if cpu_has_native_bf16() and torch_runs_avx512() else "fp32")


@pytest.mark.parametrize(
    ("native", "avx512", "expected"),
    [(True, True, "bf16"), (True, False, "fp32"), (False, True, "fp32"), (False, False, "fp32")],
)
def test_auto_is_bf16_only_where_cpu_and_torch_both_do_it_natively(monkeypatch, native, avx512, expected) -> None:
    monkeypatch.setattr(embedding, "cpu_has_native_bf16", lambda: native)
    monkeypatch.setattr(embedding, "torch_runs_avx512", lambda: avx512)
    assert resolve_precision("auto") == expected


@pytest.mark.parametrize(
    ("limit", "allowed"),
    [("AVX2", False), ("avx512_core", False), ("AVX512_CORE_BF16", True), ("AVX512_CORE_AMX", True), ("ALL", True)],
)
def test_a_onednn_limit_below_its_bf16_instructions_rules_bf16_out(monkeypatch, limit: str, allowed: bool) -> None:
    import torch

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", limit)
    assert torch_runs_avx512() is (allowed and torch.backends.cpu.get_cpu_capability() == "AVX512")


AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "FAISS_OPT_LEVEL": "avx2"}


def test_a_process_held_to_avx2_embeds_in_fp32_with_auto() -> None:
    # The fp32 path of `auto` is what an AVX2-only CPU runs; this holds torch to AVX2 on any machine to run it.
    script = (
        "from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder, torch_runs_avx512\n"
        "embedder = SentenceTransformerEmbedder(precision='auto')\n"
        "vector = embedder.embed(['a question about bridges'])[0]\n"
        "print(torch_runs_avx512(), embedder.precision, vector.dtype, round(float(vector @ vector), 4))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **AVX2_ONLY},
    )
    assert done.stdout.split() == ["False", "fp32", "float32", "1.0"], done.stderr[-2000:]


# --- the real bundled model ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp32():
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(precision="fp32")


@pytest.fixture(scope="module")
def bf16(fp32):
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

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
    # four distinct texts in batches of at most two
    assert done[-1] == (4, 4) and all(0 < b - a <= 2 for (a, _), (b, _) in zip([(0, 4), *done], done))


def test_batches_group_similar_lengths_within_the_text_and_token_limits() -> None:
    lengths = [30, 5, 200, 6, 31, 7, 5000]
    batches = plan_batches(lengths, max_texts=2, max_tokens=100)
    # shortest first; 7 does not pad up to 30; 200 and 5000 each exceed 100 alone
    assert batches == [[1, 3], [5], [0, 4], [2], [6]]
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in plan_batches(lengths, max_texts=10, max_tokens=100):
        padded, real = len(batch) * max(lengths[i] for i in batch), sum(lengths[i] for i in batch)
        assert len(batch) == 1 or (padded <= 100 and padded <= MAX_PADDING * real)
    assert plan_batches([], 4) == []


def test_grouped_batches_never_mix_groups_and_keep_every_text() -> None:
    lengths = [30, 5, 200, 6, 31, 7, 9, 12]
    groups = ["a", "b", "a", "b", "a", "b", "a", "b"]
    batches = plan_batches(lengths, max_texts=2, max_tokens=100, groups=groups)
    assert all(len({groups[i] for i in batch}) == 1 for batch in batches)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    rows_a = [i for i, g in enumerate(groups) if g == "a"]
    alone = plan_batches([lengths[i] for i in rows_a], max_texts=2, max_tokens=100)
    assert [b for b in batches if groups[b[0]] == "a"] == [[rows_a[i] for i in b] for b in alone]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_groups_vectors_are_the_same_bits_whatever_is_embedded_beside_it(fp32, bf16, precision: str) -> None:
    # Without groups, these sentences share batches with the others and come out a few ulps (bf16: ~1e-3) apart.
    embedder = fp32 if precision == "fp32" else bf16
    rng = np.random.default_rng(0)
    words = "river mountain sediment water valley erosion delta ocean rain forest city people history law".split()

    def sentence(most: int) -> str:
        return " ".join(rng.choice(words, int(rng.integers(5, most)))).capitalize() + "."

    mine = [sentence(40) for _ in range(40)]
    others = [sentence(60) for _ in range(300)]
    alone = embedder.embed(mine, progress=lambda n, total: None)
    beside = embedder.embed(others + mine, progress=lambda n, total: None, groups=[1] * 300 + [2] * 40)
    assert np.array_equal(beside[300:], alone)
    with pytest.raises(ValueError, match="one group per text"):
        embedder.embed(mine, groups=[1])


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


def test_calls_from_several_threads_at_once_get_the_single_threaded_results(fp32, monkeypatch) -> None:
    hot, passage = "how long is the main span", "The Halvorsen Bridge opened to traffic in 1931. " * 40
    cold = [[f"question {n} from caller {worker}" for n in range(80)] for worker in range(2)]
    everything = [hot, *(query for queries in cold for query in queries)]
    alone = dict(zip(everything, fp32.embed(everything)))  # one batch, so no query is in the cache yet
    batch_alone, windows_alone = fp32.embed(TEXTS), fp32.windows(passage, max_tokens=32)
    # A cache of one query: every new query evicts the one the other threads are looking up and reordering.
    monkeypatch.setattr(embedding, "QUERY_CACHE_SIZE", 1)
    cold_done = threading.Event()
    start = threading.Barrier(8)  # six threads repeat one query, two ask new ones

    def hot_caller(worker: int) -> list[bool]:
        start.wait()
        same = [fp32.windows(passage, max_tokens=32) == windows_alone]
        while not cold_done.is_set() and len(same) < 200_000:
            same.append(bool(np.allclose(fp32.embed([hot])[0], alone[hot], atol=1e-5)))
        same.append(bool(np.allclose(fp32.embed(TEXTS), batch_alone, atol=1e-5)))
        return same

    def cold_caller(worker: int) -> list[bool]:
        start.wait()
        return [bool(np.allclose(fp32.embed([query])[0], alone[query], atol=1e-5)) for query in cold[worker]]

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the interpreter between threads as often as it allows
    try:
        with ThreadPoolExecutor(8) as pool:
            hots = [pool.submit(hot_caller, worker) for worker in range(6)]
            colds = [pool.submit(cold_caller, worker) for worker in range(2)]
            try:
                cold_results = [same for future in colds for same in future.result()]
            finally:
                cold_done.set()
            hot_results = [same for future in hots for same in future.result()]
    finally:
        sys.setswitchinterval(switch)
    assert len(cold_results) == 160 and all(cold_results)
    assert len(hot_results) > 12 and all(hot_results)


def test_token_vectors_come_from_the_forward_that_embeds_the_text(fp32) -> None:
    texts = ["The quasar emits radio waves.", "Knead the dough for ten minutes before it rises overnight."] * 2
    from tokenizers import Tokenizer

    from granrag_mcp.settings import DEFAULT_MODEL

    word_pieces = Tokenizer.from_file(str(Path(embedding.resolve_model_location(DEFAULT_MODEL)) / "tokenizer.json"))
    word_pieces.no_padding()
    vectors, tokens = fp32.embed_tokens(texts, lambda states: states)
    np.testing.assert_allclose(vectors, fp32.embed(texts), atol=1e-5)
    for text, states in zip(texts, tokens):
        # One row per word piece of the text: [CLS], [SEP] and padding dropped.
        assert states.shape == (len(word_pieces.encode(text, add_special_tokens=False).ids), fp32.dimension)
    vector, states = fp32.query_tokens(texts[1])
    np.testing.assert_allclose(vector, vectors[1], atol=1e-5)
    np.testing.assert_allclose(states, tokens[1], atol=1e-4)
    assert fp32.query_tokens(texts[1])[1] is states  # remembered, not run again
    # A text's mean token vector points where its sentence vector does (the model mean-pools the same states,
    # [CLS] and [SEP] included), so these are the model's own outputs and not another layer's.
    assert float(embedding.normalise(states.mean(axis=0)) @ vector) > 0.9
