"""Building small stores quickly for tests, with the fake embedder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from granrag_mcp.indexing.pipeline import IndexSummary, index_paths
from granrag_mcp.levels import LEVELS
from granrag_mcp.records import Chunk
from granrag_mcp.settings import ChunkSettings, Settings
from granrag_mcp.store.store import Snapshot
from tests.fakes import FakeEmbedder

SMALL_CHUNKS = ChunkSettings(broad_tokens=64, broad_overlap=16, mid_tokens=24, sentence_max_tokens=16, chunker="fixed")

TOPICS = {
    "astronomy.md": "The telescope observed a distant quasar. Astronomers measured its redshift carefully. "
    "The quasar emits radio waves from a black hole. Galaxies cluster along cosmic filaments.",
    "cooking.txt": "Bake the sourdough bread at a high temperature. The crust browns in the oven. "
    "Knead the dough for ten minutes. Let the dough rise overnight in a cool kitchen.",
    "notes/sailing.md": "The sailboat tacked against the wind. Sailors trimmed the mainsail at dawn. "
    "A storm pushed the yacht toward the harbour. The anchor held in the sandy bay.",
}


def current_chunks(store: Path) -> dict[str, Chunk]:
    """Public id -> chunk, for every chunk of the store's current generation."""
    snapshot = Snapshot.open(store)
    try:
        return {c.public_id: c for level in LEVELS for c in snapshot.catalog.chunks_of_level(level)}
    finally:
        snapshot.close()


def shared_file(relative: str) -> Path:
    """A file of the shared test data: `../shared/` beside the project root."""
    return Path(__file__).resolve().parent.parent.parent / "shared" / relative


def write_corpus(folder: Path, docs: dict[str, str] = TOPICS, repeat: int = 3) -> Path:
    for name, text in docs.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join([text] * repeat), encoding="utf-8")
    return folder


def index(
    paths,
    store: Path,
    embedder: FakeEmbedder | None = None,
    chunking: ChunkSettings = SMALL_CHUNKS,
    **options,
) -> IndexSummary:
    """An index run with the fake embedder; `vector_mode`, `token_vector_dims`, `graph` and `index_group_chars` set
    the settings, the other options go to index_paths."""
    embedder = embedder or FakeEmbedder()
    fields: dict[str, Any] = {"store": store, "model": embedder.name, **chunking.model_dump()}
    fields["vector_mode"] = options.pop("vector_mode", "mean")
    for name in ("graph", "index_group_chars", "index_step_documents", "index_step_tokens"):
        if name in options:
            fields[name] = options.pop(name)
    token_dims = options.pop("token_vector_dims", 0)
    if token_dims:
        fields.update(token_vectors=True, token_vector_dims=token_dims)
    return fake_index(
        [Path(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])],
        Settings(**fields),
        embedder,
        **options,
    )


def fake_index(paths: list[Path], settings: Settings, embedder: FakeEmbedder, **options: Any) -> IndexSummary:
    """An index run as `granrag-mcp index` makes it from `settings`, with a fake embedder."""
    return index_paths(paths, settings, embedder_factory=lambda: embedder, **options)
