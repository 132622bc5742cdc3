"""The `auto` model policy: the English model for English text, the multilingual one as soon as any document is in
another language, and the store's recorded model for every process that opens it."""

from __future__ import annotations

from pathlib import Path

from granrag_mcp.embedding.choice import ENGLISH_MODEL, is_auto, model_for, reads, stored_or_default
from granrag_mcp.settings import AUTO_MODEL, MULTILINGUAL_MODEL, Settings


def test_the_default_setting_lets_the_text_choose() -> None:
    assert Settings().model == AUTO_MODEL
    assert is_auto(Settings())
    assert not is_auto(Settings(model=ENGLISH_MODEL))


def test_english_or_undetermined_text_keeps_the_english_model() -> None:
    assert model_for(["en"]) == ENGLISH_MODEL
    assert model_for(["en", "und"]) == ENGLISH_MODEL
    assert model_for([]) == ENGLISH_MODEL


def test_any_other_language_takes_the_multilingual_model() -> None:
    assert model_for(["zh"]) == MULTILINGUAL_MODEL
    assert model_for(["en", "hi"]) == MULTILINGUAL_MODEL
    assert model_for(["und", "ar", "en"]) == MULTILINGUAL_MODEL


def test_the_multilingual_model_reads_every_language_and_the_english_model_only_english() -> None:
    assert reads(MULTILINGUAL_MODEL, ["en", "zh", "th"])
    assert reads(ENGLISH_MODEL, ["en", "und"])
    assert not reads(ENGLISH_MODEL, ["en", "ru"])


def test_auto_takes_the_stores_model_and_an_explicit_model_is_kept(tmp_path: Path) -> None:
    auto = Settings(store=tmp_path)
    assert stored_or_default(auto, MULTILINGUAL_MODEL).model == MULTILINGUAL_MODEL
    assert stored_or_default(auto, None).model == ENGLISH_MODEL  # no store yet
    explicit = Settings(store=tmp_path, model=ENGLISH_MODEL)
    assert stored_or_default(explicit, MULTILINGUAL_MODEL).model == ENGLISH_MODEL  # the store check refuses it later
