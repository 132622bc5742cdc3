"""A real cross-encoder, loaded from local files only: a local path or a name already in the Hugging Face cache."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from granrag_mcp.errors import ModelLoadError
from granrag_mcp.settings import offline_models


def _local_location(model: str) -> str:
    path = Path(model).expanduser()
    return str(path) if path.exists() else model


def stored_locally(model: str) -> bool:
    """Whether `model` is a local path or a model whose config is in the local Hugging Face cache."""
    if Path(model).expanduser().exists():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(model, "config.json"), str)
    except Exception:  # not a valid repo id, or no cache at all
        return False


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, by local path or by a name already in the HF cache.

    The model reads query and passage together, up to its maximum sequence length
    (`max_length`, usually 512 word pieces); anything beyond is truncated. That is the
    accepted trade-off of a cross-encoder: passages reaching this stage are chunk-sized,
    and the first few hundred word pieces carry most of the signal.

    Scores are the model's raw logits (no sigmoid), so strong matches do not saturate into ties.
    """

    reads_sentence_vectors = False

    def __init__(self, model: str, batch_size: int = 32, device: str = "cpu") -> None:
        offline_models()
        try:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(_local_location(model), device=device, local_files_only=True)
        except Exception as exc:  # the libraries raise many types for a missing or broken model
            raise ModelLoadError(
                f"cross-encoder model {model!r} was not found locally or could not be loaded "
                f"({type(exc).__name__}: {_one_line(exc)}); no download happens at run time: give the path of a local "
                "model directory, or pre-populate the Hugging Face cache with it on a machine with network "
                "access, or use the embedding reranker"
            ) from exc
        if self._model.num_labels != 1:
            raise ModelLoadError(
                f"cross-encoder model {model!r} has {self._model.num_labels} output labels; "
                "a reranker needs a model with a single relevance score"
            )
        self.name = f"cross-encoder:{model}"
        self.batch_size = batch_size
        self.max_length = self._model.max_seq_length
        # `predict` sets padding and truncation on the model's one Hugging Face fast tokenizer, which two threads
        # must not use at once; tool calls score from several threads, so the reranker lets one in at a time.
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        import torch

        with self._lock:
            logits = self._model.predict(
                [(query, passage) for passage in passages],
                batch_size=self.batch_size,
                activation_fn=torch.nn.Identity(),
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        return [float(value) for value in np.asarray(logits, dtype=np.float64).reshape(len(passages))]
