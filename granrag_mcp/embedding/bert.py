"""A BERT encoder on torch alone, for the mean-pooling sentence models built on BERT (all-MiniLM-L6-v2 among them).

Importing transformers (and sentence-transformers on top) and building their model takes longer than torch
itself, so this runner reaches the first query vector sooner and holds less memory, with the same throughput
(benchmarks/bench_encoder.py, its result in benchmarks/results/encoder.json). A BERT encoder is a
short stack of standard layers, so for a checkpoint we can read completely (a `config.json` of model type "bert"
with absolute positions and exact GELU, weights in `model.safetensors`, a `tokenizer.json`) it is built here from
public torch layers; any other checkpoint goes to transformers. The vectors match transformers' to 1e-5
(tests/test_bert.py).

In a batch of texts of different lengths, every product but attention's runs on the real tokens alone: an index
run's batches, ordered by length, still pad about a tenth of their tokens, which would otherwise go through every
linear layer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from granrag_mcp.embedding.pooling import mean_pool, sentence_texts

WEIGHTS = "model.safetensors"
QUERY_LENGTH_STEP = 16
"""A single text is padded (masked) to a multiple of this many tokens, since torch keeps compiled kernels and heap
blocks per input shape and a server would otherwise grow with every query length it meets (BENCHMARKS.md); an
encoder may pad to other widths (`TokenizedBertEncoder.query_width`: e5's ladder, embedding/e5_torch.py)."""
BATCH_LENGTH_STEP = 16
"""A batch of texts is padded (masked) to a multiple of this many tokens: attention's sums then run over whole vector
blocks, so on the CPU a text's vector comes out bit for bit the same whichever texts share its batch (and, where the
single-text width is a multiple of it too, as MiniLM's is, as when embedded alone), and an index run that batches
its texts otherwise (a first run committed in steps) stores the same vectors. Only attention reads the padding; the
other products run on the real tokens alone."""
TOKENIZER = "tokenizer.json"


def readable_config(folder: Path) -> dict[str, Any] | None:
    """The checkpoint's config if this module can run it exactly, else None."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or not (folder / WEIGHTS).is_file() or not (folder / TOKENIZER).is_file():
        return None
    supported = (
        config.get("model_type") == "bert"
        and config.get("hidden_act", "gelu") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and isinstance(config.get("hidden_size"), int)
        and isinstance(config.get("num_attention_heads"), int)
        and config["hidden_size"] % config["num_attention_heads"] == 0
    )
    return config if supported else None


class _Padding:
    """Where a padded batch's real tokens lie: the layers run every product but attention's on those alone (one
    row each), so a batch's padding costs no work there; attention reads them laid out padded, under the mask."""

    def __init__(self, attention_mask: torch.Tensor) -> None:
        self.real = attention_mask.bool()
        self.mask = self.real[:, None, None, :]

    def spread(self, rows: torch.Tensor) -> torch.Tensor:
        """The real tokens' rows laid out in the padded batch, zeros where it pads."""
        out = rows.new_zeros((*self.real.shape, rows.shape[-1]))
        out[self.real] = rows
        return out


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)  # query, key and value in one product
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.up = nn.Linear(hidden, intermediate)
        self.down = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, hidden: torch.Tensor, padding: _Padding | None, mask: torch.Tensor | None = None) -> torch.Tensor:
        """`hidden`: a batch's token vectors (batch, length, width), attention under `mask`; or with `padding`, the
        real tokens' alone (tokens, width), laid out by it."""
        width = hidden.shape[-1]
        qkv = self.qkv(hidden)
        if padding is not None:
            qkv = padding.spread(qkv)
        batch, length = qkv.shape[:2]
        q, k, v = qkv.view(batch, length, 3, self.heads, width // self.heads).permute(2, 0, 3, 1, 4)
        if padding is not None:
            mask = padding.mask
        context = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        context = context.transpose(1, 2).reshape(batch, length, width)
        if padding is not None:
            context = context[padding.real]
        hidden = self.attention_norm(self.attention_out(context) + hidden)
        return self.out_norm(self.down(functional.gelu(self.up(hidden))) + hidden)


class BertModule(nn.Module):
    """BERT's embeddings and encoder layers (no pooler): token ids in, one vector per token out."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        hidden = config["hidden_size"]
        eps = float(config.get("layer_norm_eps", 1e-12))
        self.word = nn.Embedding(config["vocab_size"], hidden)
        self.position = nn.Embedding(config["max_position_embeddings"], hidden)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(
            _Layer(hidden, config["num_attention_heads"], config["intermediate_size"], eps)
            for _ in range(config["num_hidden_layers"])
        )

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = self.word(input_ids) + self.position(positions)[None] + self.token_type.weight[0]
        hidden = self.embedding_norm(hidden)
        # No mask when nothing is padding (every single query): attention then takes its fastest path.
        if len(attention_mask) == 1 or bool(attention_mask.all()):
            # A single text keeps its padded shape (see QUERY_LENGTH_STEP); where nothing is padding, attention
            # takes its fastest path.
            mask = None if bool(attention_mask.all()) else attention_mask[:, None, None, :].bool()
            for layer in self.layers:
                hidden = layer(hidden, None, mask)
            return hidden
        padding = _Padding(attention_mask)
        tokens = hidden[padding.real]
        for layer in self.layers:
            tokens = layer(tokens, padding)
        return padding.spread(tokens)

    def set_precision(self, dtype: torch.dtype) -> None:
        """Matrix products in `dtype` from now on: the Linear weights are cast once, so a bf16 forward (under
        autocast) does not convert the whole model on every call."""
        for layer in self.layers:
            for name in ("qkv", "attention_out", "up", "down"):
                getattr(layer, name).to(dtype)

    def load_checkpoint(self, weights: dict[str, torch.Tensor]) -> None:
        weights = {name.removeprefix("bert."): tensor for name, tensor in weights.items()}
        state = {
            "word.weight": weights["embeddings.word_embeddings.weight"],
            "position.weight": weights["embeddings.position_embeddings.weight"],
            "token_type.weight": weights["embeddings.token_type_embeddings.weight"],
            "embedding_norm.weight": weights["embeddings.LayerNorm.weight"],
            "embedding_norm.bias": weights["embeddings.LayerNorm.bias"],
        }
        for i in range(len(self.layers)):
            theirs, ours = f"encoder.layer.{i}.", f"layers.{i}."
            for part in ("weight", "bias"):
                state[ours + "qkv." + part] = torch.cat(
                    [weights[f"{theirs}attention.self.{name}.{part}"] for name in ("query", "key", "value")]
                )
                state[ours + "attention_out." + part] = weights[f"{theirs}attention.output.dense.{part}"]
                state[ours + "attention_norm." + part] = weights[f"{theirs}attention.output.LayerNorm.{part}"]
                state[ours + "up." + part] = weights[f"{theirs}intermediate.dense.{part}"]
                state[ours + "down." + part] = weights[f"{theirs}output.dense.{part}"]
                state[ours + "out_norm." + part] = weights[f"{theirs}output.LayerNorm.{part}"]
        self.load_state_dict(state, strict=True)


class TokenizedBertEncoder:
    """The `Encoder` protocol (embedding/encoders.py) over a `BertModule` and a `tokenizers` tokenizer: mean pooling
    over the token vectors, each batch padded to its longest row. A subclass says how a text is prepared for the
    tokenizer (`model_inputs`)."""

    def __init__(
        self, module: BertModule, tokenizer: Any, dimension: int, max_tokens: int, pad_id: int, device: str
    ) -> None:
        self.module = module.to(device).eval()
        self.tokenizer = tokenizer
        self.dimension = dimension
        self.max_tokens = max_tokens
        self._pad_id = pad_id
        self._device = torch.device(device)
        self._planned: dict[str, list[int]] = {}

    def model_inputs(self, texts: list[str]) -> list[str]:
        return texts

    def query_width(self, length: int) -> int:
        """The padded length a single text of `length` tokens runs at: a multiple of QUERY_LENGTH_STEP."""
        return min(-(-length // QUERY_LENGTH_STEP) * QUERY_LENGTH_STEP, self.max_tokens)

    def _encode(self, texts: list[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch(self.model_inputs(texts))
        limit = self.max_tokens
        # Keep the first tokens and the closing [SEP], as transformers' "longest_first" truncation does.
        return [e.ids if len(e.ids) <= limit else e.ids[: limit - 1] + e.ids[-1:] for e in encodings]

    def features(self, texts: list[str]) -> dict[str, torch.Tensor]:
        known = [self._planned.pop(text, None) for text in texts]
        fresh = iter(self._encode([text for text, row in zip(texts, known) if row is None]))
        rows = [row if row is not None else next(fresh) for row in known]
        width = max(len(row) for row in rows)
        if len(rows) == 1:  # a query, mostly: its length rounded up, see QUERY_LENGTH_STEP
            width = self.query_width(width)
        else:
            width = min(-(-width // BATCH_LENGTH_STEP) * BATCH_LENGTH_STEP, self.max_tokens)
        ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return {
            "input_ids": torch.from_numpy(ids).to(self._device),
            "attention_mask": torch.from_numpy(mask).to(self._device),
        }

    def set_precision(self, precision: str) -> None:
        self.module.set_precision({"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32))

    def pooled(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        return mean_pool(self.module(features["input_ids"], features["attention_mask"]), features["attention_mask"])

    def pooled_and_tokens(self, features: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mask = features["attention_mask"]
        tokens = self.module(features["input_ids"], mask)
        return mean_pool(tokens, mask), tokens, mask

    def token_lengths(self, texts: list[str]) -> list[int]:
        rows = self._encode(texts)
        # A batch plan measures the texts its forwards read next: `features` takes their ids from here once each.
        self._planned = dict(zip(texts, rows))
        return [len(row) for row in rows]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        return [(int(start), int(end)) for start, end in encoding.offsets]


class BertMeanEncoder(TokenizedBertEncoder):
    """Mean pooling over a BERT checkpoint's token vectors, run by `BertModule`, tokenized by `tokenizers`."""

    def __init__(
        self, folder: Path, config: dict[str, Any], max_tokens: int, lower_case: bool, device: str = "cpu"
    ) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        module = BertModule(config)
        module.load_checkpoint(load_file(str(folder / WEIGHTS)))
        tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        super().__init__(
            module,
            tokenizer,
            dimension=int(config["hidden_size"]),
            max_tokens=min(max_tokens, int(config["max_position_embeddings"])),
            pad_id=int(config.get("pad_token_id", 0) or 0),
            device=device,
        )
        self._lower_case = lower_case

    def model_inputs(self, texts: list[str]) -> list[str]:
        return sentence_texts(texts, self._lower_case)
