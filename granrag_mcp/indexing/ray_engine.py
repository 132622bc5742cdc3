"""`granrag-mcp index --engine ray`: the per-document stages on a Ray cluster, the commit here.

Ray Data runs two stages, streaming: CPU tasks read, extract and chunk each document; a pool of actors, each
holding one copy of the embedding model (one actor per GPU where the cluster has GPUs), embed batches of those
documents. With the semantic chunker the tasks split each document into broad chunks and sentences, and the
actors embed the sentences, place the mid boundaries where the topic changes (a few array operations per
document, beside the model rather than in a stage of their own that would ship the sentence vectors once more)
and pool or embed the mid and broad chunks: the same functions as the local engine, in the same order.

This process gathers the results in the order asked for and hands them to the pipeline, whose single writer
numbers the chunks and commits one generation exactly as the local engine does; it builds the concept graph
too, loading the same model only to embed the names of concepts new to the store (a few hundred short texts).
A worker that dies is retried by Ray; nothing is written to the store until every document is back, so a run
that fails leaves the current generation as it was.

Ray is an optional extra (`pip install 'granrag-mcp[ray]'`); nothing else in the package imports it.
"""

from __future__ import annotations

import functools
import json
import logging
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.parallel import PreparedDocument, embed_documents, prepare_document

if TYPE_CHECKING:
    from granrag_mcp.progress import Progress
    from granrag_mcp.settings import Settings

log = logging.getLogger(__name__)

RAY_INSTALL = "pip install 'granrag-mcp[ray]'"
DOCS_PER_BATCH = 8
"""Documents per embedding call on an actor: enough sentences for full model batches (a SQuAD article has about
150), few enough that results stream back and the progress moves."""
EXTRACT_CPUS = 0.25
"""Logical CPUs an extract-and-chunk task reserves: it mostly waits on the file and tiktoken, and it must fit
beside the embedding actors, which would otherwise take every CPU of a small cluster and starve it."""
CPU_ACTOR_CPUS = 0.75
"""Logical CPUs an embedding actor reserves on a cluster without GPUs (one actor per CPU, one torch thread each)."""


def import_ray() -> Any:
    try:
        import ray
        import ray.data  # the data library is a separate part of the extra
    except ImportError as exc:
        raise InvalidInputError(
            f"--engine ray needs Ray Data, which is not installed: run `{RAY_INSTALL}`, or use --engine local"
        ) from exc
    return ray


@functools.lru_cache(maxsize=4)
def _tokenizer(name: str):
    from granrag_mcp.tokens import get_tokenizer

    return get_tokenizer(name)


def _prepare_row(row: dict[str, Any], tokenizer_name: str, chunking: Any) -> dict[str, Any]:
    """Extract and chunk one document (a Ray task)."""
    from pathlib import Path

    # The allowed roots and size cap travel with the row, so a worker opens the file as the local engine does:
    # checked where it is read, not only where it was found.
    roots = None if row["roots"] is None else tuple(Path(r) for r in json.loads(row["roots"]))
    source = SourceFile(Path(row["path"]), row["doc_id"], row["suffix"], roots, int(row["max_bytes"]))
    prepared = prepare_document(source, _tokenizer(tokenizer_name), chunking)
    return {
        "order": row["order"],
        "path": row["path"],
        "doc_id": row["doc_id"],
        "suffix": row["suffix"],
        "payload": pickle.dumps(prepared, protocol=pickle.HIGHEST_PROTOCOL),
    }


class _EmbedBatch:
    """A Ray actor holding one embedding model; each call embeds a batch of prepared documents."""

    def __init__(self, settings: Settings) -> None:
        from granrag_mcp.embedding.embedder import set_model_threads
        from granrag_mcp.embedding.factory import make_embedder

        self._embedder = make_embedder(settings)
        if settings.device == "cpu":
            set_model_threads(1)  # one actor per CPU: a thread pool per actor would fight the others for cores
        self._mode = settings.vector_mode
        self._chunking = settings.chunking

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from pathlib import Path

        columns = zip(batch["path"], batch["doc_id"], batch["suffix"], strict=True)
        sources = [SourceFile(Path(p), d, s) for p, d, s in columns]
        prepared = [pickle.loads(payload) for payload in batch["payload"]]
        embed_documents(sources, prepared, self._embedder, self._mode, self._chunking)
        payloads = [pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL) for p in prepared]
        return {"order": np.asarray(batch["order"]), "payload": np.array(payloads, dtype=object)}


class RayStages:
    """Runs extraction, chunking and embedding on Ray (a local cluster, or the one at `address`)."""

    def __init__(self, settings: Settings, address: str | None = None, docs_per_batch: int = DOCS_PER_BATCH) -> None:
        import_ray()  # say which extra to install before any work
        self.settings = settings
        self.address = address
        self.docs_per_batch = docs_per_batch

    def run(self, changed: Sequence[tuple[SourceFile, str]], progress: Progress) -> list[PreparedDocument]:
        ray = import_ray()
        started_here = not ray.is_initialized()
        if started_here:
            # Worker output comes back on this process's stderr; workers print nothing to stdout, which belongs
            # to the command's own output (`--json`).
            ray.init(address=self.address, include_dashboard=False, log_to_driver=True, logging_level=logging.WARNING)
        try:
            return self._run(ray, changed, progress)
        finally:
            if started_here:
                ray.shutdown()

    def _actors(self, ray: Any) -> tuple[int, dict[str, Any], Settings]:
        """How many embedding actors, what each reserves, and the settings each loads its model with."""
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        cpus = max(1, int(resources.get("CPU", 1)))
        device = self.settings.device
        if device == "cuda" and gpus == 0:
            raise InvalidInputError(
                "--device cuda asks for GPUs, but the Ray cluster has none: start workers with GPUs "
                "(`ray start --num-gpus N`), or use --device auto or cpu"
            )
        if gpus and device != "cpu":
            settings = self.settings.model_copy(update={"device": "cuda"})
            return gpus, {"num_gpus": 1}, settings
        # One model per CPU, each on one thread: the same arithmetic as the local engine's side-by-side batches.
        settings = self.settings.model_copy(update={"device": "cpu", "embed_workers": 1})
        return cpus, {"num_cpus": CPU_ACTOR_CPUS}, settings

    def _run(self, ray: Any, changed: Sequence[tuple[SourceFile, str]], progress: Progress) -> list[PreparedDocument]:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # our own progress lines on stderr instead
        actors, reserve, actor_settings = self._actors(ray)
        actors = min(actors, max(1, -(-len(changed) // self.docs_per_batch)))
        progress.message(
            f"Ray: extracting, chunking and embedding {len(changed)} documents on {actors} "
            f"{'GPU' if 'num_gpus' in reserve else 'CPU'} embedding actor{'s' if actors > 1 else ''}"
        )
        rows = [
            {
                "order": order,
                "path": str(source.path),
                "doc_id": source.doc_id,
                "suffix": source.suffix,
                "roots": None if source.roots is None else json.dumps([str(r) for r in source.roots]),
                "max_bytes": source.max_bytes,
            }
            for order, (source, _) in enumerate(changed)
        ]
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        dataset = ray.data.from_items(rows, override_num_blocks=min(len(rows), 8 * cpus))
        dataset = dataset.map(
            _prepare_row,
            fn_kwargs={"tokenizer_name": self.settings.tokenizer, "chunking": self.settings.chunking},
            num_cpus=EXTRACT_CPUS,
        )
        dataset = dataset.map_batches(
            _EmbedBatch,
            fn_constructor_kwargs={"settings": actor_settings},
            batch_size=self.docs_per_batch,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            **reserve,
        )
        results: list[PreparedDocument | None] = [None] * len(changed)
        for done, row in enumerate(dataset.iter_rows(), 1):
            results[int(row["order"])] = pickle.loads(row["payload"])
            progress.update("documents extracted, chunked and embedded (Ray)", done, len(changed))
        missing = [changed[i][0].doc_id for i, r in enumerate(results) if r is None]
        if missing:  # Ray reports lost work as an error; this guards the contract the writer relies on
            raise RuntimeError(f"the Ray run returned no result for {len(missing)} documents, e.g. {missing[0]}")
        return [r for r in results if r is not None]
