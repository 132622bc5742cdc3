"""Wiring: settings -> embedder, live store, reranker. One engine per process; one view per request."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import faiss

from granrag_mcp.embedding.embedder import (
    Embedder,
    SentenceTransformerEmbedder,
    set_model_threads,
)
from granrag_mcp.errors import InvalidInputError, StoreNotFoundError
from granrag_mcp.progress import Progress
from granrag_mcp.rerankers import Reranker, load_reranker
from granrag_mcp.retrieval.ranker_choice import RankerChoice
from granrag_mcp.retrieval.view import View
from granrag_mcp.settings import Settings
from granrag_mcp.store.live import LiveStore
from granrag_mcp.store.manifest import identity_for
from granrag_mcp.store.store import read_current
from granrag_mcp.tokens import RememberedCounts, get_tokenizer

if TYPE_CHECKING:
    from granrag_mcp.indexing.pipeline import IndexSummary

log = logging.getLogger(__name__)

IndexEngine = Literal["local", "ray"]


def run_index(
    paths: list[Path],
    settings: Settings,
    *,
    prune: bool = False,
    rebuild: bool = False,
    quiet: bool = False,
    engine: IndexEngine = "local",
    ray_address: str | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> IndexSummary:
    """Index `paths` into the settings' store, as `granrag-mcp index` does. With engine "ray" the documents are
    extracted, chunked and embedded on a Ray cluster; this process still writes and commits the generation.
    `embedder`: one already loaded (a server's), else the settings' model is loaded if there is work."""
    from granrag_mcp.indexing.pipeline import index_paths  # the serving path never needs the indexing stages

    parallel = None
    if engine == "ray" and settings.chunker != "fixed":
        raise InvalidInputError(
            "the Ray engine cuts mid chunks in fixed windows: index with `--chunker fixed` (GRANRAG_CHUNKER=fixed), "
            "or use `--engine local` for semantic chunks"
        )
    if engine == "ray":
        from granrag_mcp.indexing.ray_engine import RayStages

        parallel = RayStages(settings, address=ray_address)
    return index_paths(
        paths,
        settings.store,
        embedder_factory=(lambda: embedder) if embedder is not None else (lambda: make_embedder(settings)),
        tokenizer=get_tokenizer(settings.tokenizer),
        chunking=settings.chunking,
        vector_mode=settings.vector_mode,
        model_name=settings.model,
        prune=prune,
        rebuild=rebuild,
        progress=progress or Progress(enabled=not quiet),
        parallel=parallel,
        graph=settings.graph,
    )


def make_embedder(settings: Settings) -> Embedder:
    from granrag_mcp.embedding.devices import batch_plan, resolve_device

    device = resolve_device(settings.device)
    plan = batch_plan(device, settings.batch_size, "batch_size" in settings.model_fields_set, settings.embed_workers)
    return SentenceTransformerEmbedder(
        settings.model,
        batch_size=plan.texts,
        precision=settings.precision,
        workers=plan.workers,
        device=device,
        batch_tokens=plan.tokens,
    )


class Engine:
    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        load_reranker_now: bool = True,
    ) -> None:
        if read_current(settings.store) is None:  # fail before the slow model load
            raise StoreNotFoundError(
                f"no index at {settings.store}: build one with `granrag-mcp index PATH... --store {settings.store}`"
            )
        self.settings = settings
        # One thread by default: waking a thread pool costs more than one query's work, and concurrent calls
        # already keep the cores busy (BENCHMARKS.md, "threads").
        faiss.omp_set_num_threads(settings.threads)
        self.tokenizer = RememberedCounts(get_tokenizer(settings.tokenizer))
        self.embedder = embedder or make_embedder(settings)
        set_model_threads(settings.threads)
        self.live = LiveStore(settings.store, identity_for(settings, self.embedder.dimension))
        if reranker is None and load_reranker_now:
            reranker = load_reranker(settings.reranker, self.embedder, settings.cross_encoder)
        self.reranker = reranker
        if reranker is not None:
            log.info("reranker: %s", reranker.name)
        self.candidate_rankers = RankerChoice(settings.candidate_ranker)

    def view(self) -> View:
        snapshot = self.live.snapshot()
        return View(
            snapshot, self.embedder, self.reranker, candidate_ranker=self.candidate_rankers.for_snapshot(snapshot)
        )
