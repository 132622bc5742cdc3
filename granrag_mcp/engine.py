"""Wiring: settings -> embedder, live store, reranker. One engine per process; one view per request."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import faiss

from granrag_mcp.embedding.choice import is_auto, stored_or_default, with_model
from granrag_mcp.embedding.embedder import Embedder, set_model_threads
from granrag_mcp.embedding.factory import make_embedder
from granrag_mcp.errors import GranragError, InvalidInputError, StoreNotFoundError
from granrag_mcp.progress import Progress
from granrag_mcp.rerankers import Reranker, load_reranker
from granrag_mcp.retrieval.ranking.choice import RankerChoice
from granrag_mcp.retrieval.view import PerGeneration, View
from granrag_mcp.settings import AUTO_MODEL, Settings
from granrag_mcp.store.live import LiveStore
from granrag_mcp.store.manifest import identity_for
from granrag_mcp.store.store import load_manifest, read_current
from granrag_mcp.tokens import RememberedCounts, get_tokenizer

if TYPE_CHECKING:
    from granrag_mcp.indexing.pipeline import IndexSummary

log = logging.getLogger(__name__)

IndexEngine = Literal["local", "ray"]


def with_store_model(settings: Settings) -> Settings:
    """`settings` with an `auto` model replaced by the model the store was built with (the English model where the
    store has no generation yet), so that queries are embedded as the store's text was; an explicit model is kept,
    and checked against the store when it is opened."""
    if not is_auto(settings):
        return settings
    stored = None
    pointer = read_current(settings.store)
    if pointer is not None:
        try:
            stored = load_manifest(settings.store, pointer).identity.model
        except (OSError, GranragError):
            pass  # opening the store reports a damaged manifest, with how to recover
    return stored_or_default(settings, stored)


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
    roots: list[Path] | None = None,
) -> IndexSummary:
    """Index `paths` into the settings' store, as `granrag-mcp index` does. With engine "ray" the documents are
    extracted, chunked and embedded on a Ray cluster; this process still writes and commits the generation.
    `embedder`: one already loaded (a server's), else the settings' model is loaded if there is work. `roots`: the
    real folders every file must lie in when it is read (a server's allowed roots; None: anywhere)."""
    from granrag_mcp.indexing.pipeline import index_paths  # the serving path never needs the indexing stages

    parallel = None
    if engine == "ray" and settings.token_vectors:
        raise InvalidInputError(
            "the Ray engine does not compute token vectors: index with `--engine local` for --token-vectors"
        )
    if engine == "ray":
        from granrag_mcp.indexing.ray_engine import RayStages

        parallel = RayStages(settings, address=ray_address)
    return index_paths(
        paths,
        settings,
        embedder_factory=(lambda: embedder) if embedder is not None else None,
        prune=prune,
        rebuild=rebuild,
        progress=progress or Progress(enabled=not quiet),
        parallel=parallel,
        roots=roots,
    )


class Engine:
    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        load_reranker_now: bool = True,
        allow_empty: bool = False,
    ) -> None:
        """`allow_empty`: a store with no generation yet is served as an empty library (a server that may write
        its first one); `view()` raises StoreNotFoundError until a generation is committed."""
        if read_current(settings.store) is None and not allow_empty:  # fail before the slow model load
            raise StoreNotFoundError(
                f"no index at {settings.store}: build one with `granrag-mcp index PATH... --store {settings.store}`"
            )
        # `auto`: the store's model, and whichever model a later generation was embedded with (a library sync may
        # move a store to the multilingual model while it is served).
        self._auto = is_auto(settings)
        settings = with_store_model(settings)
        self.settings = settings
        # One thread by default: waking a thread pool costs more than one query's work, and concurrent calls
        # already keep the cores busy.
        faiss.omp_set_num_threads(settings.threads)
        self.tokenizer = RememberedCounts(get_tokenizer(settings.tokenizer))
        self.embedder = embedder or make_embedder(settings)
        set_model_threads(settings.threads)
        asked = with_model(settings, AUTO_MODEL) if self._auto else settings
        self._identity = identity_for(asked, self.embedder.dimension)
        self._model_lock = threading.Lock()
        self._live_lock = threading.Lock()
        self._live: LiveStore | None = None
        self._open_live()
        if reranker is None and load_reranker_now:
            reranker = load_reranker(settings.reranker, self.embedder, settings.cross_encoder)
        self.reranker = reranker
        if reranker is not None:
            log.info("reranker: %s", reranker.name)
        self.candidate_rankers = RankerChoice(settings.candidate_ranker)
        self.per_generation = PerGeneration()  # what every view of a generation reuses (the graph's queries)

    def _open_live(self) -> LiveStore | None:
        """The live store, opened once the store has a committed generation; None while it has none."""
        if self._live is None and read_current(self.settings.store) is not None:
            with self._live_lock:
                if self._live is None:
                    self._live = LiveStore(self.settings.store, self._identity)
        return self._live

    def _follow(self, model: str) -> None:
        """Embed queries with `model`, the model of the generation now served (only an `auto` engine opens a
        generation of another model than its own: the store's identity check refuses it otherwise)."""
        with self._model_lock:
            if self.embedder.name == model:
                return
            log.info("the store is now embedded with %s: queries are too", model)
            self.settings = with_model(self.settings, model)
            self.embedder = make_embedder(self.settings)
            if self.reranker is not None:
                self.reranker = load_reranker(self.settings.reranker, self.embedder, self.settings.cross_encoder)

    @property
    def empty(self) -> bool:
        """Whether the store has no committed generation yet."""
        return self._open_live() is None

    @property
    def live(self) -> LiveStore:
        live = self._open_live()
        if live is None:
            raise StoreNotFoundError(
                f"no index at {self.settings.store} yet: build one with `granrag-mcp index PATH... --store "
                f"{self.settings.store}`"
            )
        return live

    def view(self) -> View:
        # OpenMP keeps a thread count per calling thread: a tool call's worker thread would otherwise search with
        # FAISS's default pool, whatever __init__ set on the thread that built the engine.
        faiss.omp_set_num_threads(self.settings.threads)
        snapshot = self.live.snapshot()
        if self._auto and snapshot.manifest.identity.model != self.embedder.name:
            self._follow(snapshot.manifest.identity.model)
        return View(
            snapshot,
            self.embedder,
            self.reranker,
            candidate_ranker=self.candidate_rankers.for_snapshot(snapshot),
            adaptation=self.candidate_rankers.adaptation(snapshot),
            per_generation=self.per_generation,
        )
