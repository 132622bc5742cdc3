import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from granrag_mcp.embedding import bert
from granrag_mcp.embedding.bert import (
    BATCH_LENGTH_STEP,
    QUERY_LENGTH_STEP,
    BertMeanEncoder,
    BertModule,
    readable_config,
)
from granrag_mcp.embedding.embedder import DEFAULT_MODEL, normalise, resolve_model_location
from granrag_mcp.embedding.encoders import MeanPoolingEncoder, load_encoder

BUNDLED = Path(resolve_model_location(DEFAULT_MODEL))
TEXTS = ["  The bridge opened in 1931.  ", "Short.", "word " * 400, "Zürich 漢字 🙂 émigré", "", "A B C " * 30]


def vectors(encoder, texts: list[str]) -> np.ndarray:
    with torch.inference_mode():
        return normalise(encoder.pooled(encoder.features(texts)).numpy())


def test_the_bundled_model_is_read_by_the_torch_only_encoder() -> None:
    assert isinstance(load_encoder(str(BUNDLED)), BertMeanEncoder)


def test_vectors_lengths_and_offsets_match_transformers() -> None:
    mine = load_encoder(str(BUNDLED))
    theirs = MeanPoolingEncoder(BUNDLED, max_tokens=256, lower_case=False)
    # One padded batch (mixed lengths, one truncated at 256 tokens, one empty) and each text alone.
    np.testing.assert_allclose(vectors(mine, TEXTS), vectors(theirs, TEXTS), atol=1e-5)
    for text in TEXTS:
        np.testing.assert_allclose(vectors(mine, [text]), vectors(theirs, [text]), atol=1e-5)
    assert mine.token_lengths(TEXTS) == theirs.token_lengths([t.strip() for t in TEXTS])
    assert mine.token_lengths(TEXTS)[2] == 256
    for text in ("Hello  Zürich, émigré!", "  leading and trailing  ", "word " * 300):
        assert mine.token_offsets(text) == theirs.token_offsets(text)


def test_a_single_text_is_padded_to_a_few_shapes_and_keeps_its_vector() -> None:
    encoder = load_encoder(str(BUNDLED))
    widths = set()
    for words in range(1, 40):
        text = "river " * words
        features = encoder.features([text])
        width = features["input_ids"].shape[1]
        assert width % QUERY_LENGTH_STEP == 0 or width == encoder.max_tokens
        assert int(features["attention_mask"].sum()) == encoder.token_lengths([text])[0]  # padding is masked
        widths.add(width)
    assert len(widths) <= 3  # 39 lengths, at most three shapes for torch to keep kernels for
    assert encoder.features(["word " * 400])["input_ids"].shape[1] == encoder.max_tokens  # never past the window
    batch = encoder.features(["river", "river " * 20])
    width, longest = batch["input_ids"].shape[1], encoder.token_lengths(["river " * 20])[0]
    assert width % BATCH_LENGTH_STEP == 0 and longest <= width < longest + BATCH_LENGTH_STEP  # rounded up, masked
    for text in ("Where is the bridge?", "river " * 17):  # padded alone, as in a batch of one length
        alone, in_batch = vectors(encoder, [text]), vectors(encoder, [text, "x " * 60])[:1]
        np.testing.assert_allclose(alone, in_batch, atol=1e-5)


@pytest.mark.parametrize(("precision", "dtype"), [("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_either_precision_runs_on_plain_torch_layers_with_weights_cast_once(precision: str, dtype) -> None:
    encoder = load_encoder(str(BUNDLED))
    encoder.set_precision(precision)
    kinds = {type(module) for module in encoder.module.modules()} - {BertModule, bert._Layer, nn.ModuleList}
    assert kinds == {nn.Linear, nn.LayerNorm, nn.Embedding}  # nothing that needs a CPU-specific kernel layout
    for layer in encoder.module.layers:
        assert {layer.qkv.weight.dtype, layer.up.weight.dtype, layer.down.weight.dtype} == {dtype}
    assert encoder.module.embedding_norm.weight.dtype == torch.float32  # norms and embeddings stay fp32

    plain = load_encoder(str(BUNDLED))
    with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
        got = vectors(encoder, TEXTS)
    cosine = (got * vectors(plain, TEXTS)).sum(axis=1)
    assert cosine.min() > (0.99999 if precision == "fp32" else 0.999), cosine


def test_a_checkpoint_saved_with_a_task_head_loads_with_its_own_shape(tmp_path: Path) -> None:
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64
    )
    BertForMaskedLM(config).save_pretrained(tmp_path)  # weights named "bert.encoder...", plus the head
    (tmp_path / "tokenizer.json").write_bytes((BUNDLED / "tokenizer.json").read_bytes())
    (tmp_path / "tokenizer_config.json").write_bytes((BUNDLED / "tokenizer_config.json").read_bytes())
    (tmp_path / "vocab.txt").write_bytes((BUNDLED / "vocab.txt").read_bytes())
    loaded = readable_config(tmp_path)
    assert loaded is not None
    mine = BertMeanEncoder(tmp_path, loaded, max_tokens=64, lower_case=True)
    theirs = MeanPoolingEncoder(tmp_path, max_tokens=64, lower_case=True)
    texts = ["Mixed CASE words", "a much longer text " * 20]
    assert mine.token_lengths(texts) == [5, 64]
    np.testing.assert_allclose(vectors(mine, texts), vectors(theirs, texts), atol=1e-5)


@pytest.mark.parametrize(
    ("change", "remove"),
    [
        ({"model_type": "roberta"}, None),
        ({"hidden_act": "gelu_new"}, None),
        ({"position_embedding_type": "relative_key"}, None),
        ({"hidden_size": 30, "num_attention_heads": 4}, None),
        ({}, "model.safetensors"),
        ({}, "tokenizer.json"),
    ],
)
def test_checkpoints_it_cannot_run_exactly_go_elsewhere(tmp_path: Path, change: dict, remove: str | None) -> None:
    config = json.loads((BUNDLED / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    for name in ("model.safetensors", "tokenizer.json"):
        if name != remove:
            (tmp_path / name).write_bytes(b"")
    assert readable_config(tmp_path) is None
    (tmp_path / "config.json").write_text("{not json")
    assert readable_config(tmp_path) is None


def test_loading_the_default_embedder_imports_neither_transformers_nor_sentence_transformers() -> None:
    # Those imports were ~2 s of the server's start to its first search.
    script = (
        "import sys\n"
        "from granrag_mcp.embedding.embedder import SentenceTransformerEmbedder\n"
        "SentenceTransformerEmbedder().embed(['a question'])\n"
        "print(sorted(m for m in ('transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


class CountingTokenizer:
    """The encoder's tokenizer, counting the texts it encodes."""

    def __init__(self, inner) -> None:
        self.inner, self.encoded = inner, 0

    def encode_batch(self, texts):
        self.encoded += len(texts)
        return self.inner.encode_batch(texts)


def test_a_planned_batch_is_tokenized_once_and_gives_the_same_inputs() -> None:
    encoder = load_encoder(str(BUNDLED))
    expected = encoder.features(TEXTS)
    counting = encoder.tokenizer = CountingTokenizer(encoder.tokenizer)
    lengths = encoder.token_lengths(TEXTS)
    first, rest = encoder.features(TEXTS[:2]), encoder.features(TEXTS[2:])
    assert counting.encoded == len(TEXTS)  # the plan's encoding, reused by both batches
    assert [int(n) for n in first["attention_mask"].sum(1)] + [int(n) for n in rest["attention_mask"].sum(1)] == lengths
    for batch, start in ((first, 0), (rest, 2)):
        width = batch["input_ids"].shape[1]
        assert torch.equal(batch["input_ids"], expected["input_ids"][start : start + len(batch["input_ids"]), :width])
    again = encoder.features(TEXTS[:2])  # a text is taken from the plan once: later calls encode it again
    assert counting.encoded == len(TEXTS) + 2 and torch.equal(again["input_ids"], first["input_ids"])


def test_a_padded_batch_runs_its_linear_layers_on_its_real_tokens_alone() -> None:
    encoder = load_encoder(str(BUNDLED))
    seen: list[int] = []
    hook = encoder.module.layers[0].up.register_forward_hook(lambda _m, args, _out: seen.append(args[0].shape[0]))
    texts = ["The bridge opened in 1931.", "Short.", "A B C " * 30]
    try:
        batch = vectors(encoder, texts)
    finally:
        hook.remove()
    assert seen == [sum(encoder.token_lengths(texts))]  # rows of real tokens, none of padding
    for n, text in enumerate(texts):
        np.testing.assert_allclose(batch[n], vectors(encoder, [text])[0], atol=1e-5)


COUNTS = [1, 5, 14, 30, 46, 62, 75, 94, 118]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_text_has_the_same_vector_bits_whichever_texts_share_its_batch(precision: str) -> None:
    """What lets a first run committed in steps store the vectors a run in one piece stores: its batches differ."""
    encoder = load_encoder(str(BUNDLED))
    encoder.set_precision(precision)
    words = "the bridge over the river opened in spring after nine years of work by the city".split()
    # 3 to 120 tokens: short ones, whole steps (16, 32, 48, 64, 96) and longer than attention's first block
    texts = [" ".join(words[(n + k) % len(words)] for k in range(count)) for n, count in enumerate(COUNTS)]
    assert [n + 2 for n in COUNTS] == encoder.token_lengths(texts)

    def bits(batch: list[str]) -> np.ndarray:
        with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
            return encoder.pooled(encoder.features(batch)).float().numpy()

    together = bits(texts)
    for n, text in enumerate(texts):
        # later texts, earlier ones, the longest, none, and itself (no padding where its length is a whole step)
        for mates in (texts[n + 1 :][:3], texts[:n][-2:], [texts[-1]], [], [text]):
            np.testing.assert_array_equal(bits([text, *mates])[0], together[n])
