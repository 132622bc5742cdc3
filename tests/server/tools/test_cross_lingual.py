"""Through the MCP client: an English question over Chinese documents is answered from the dense lists alone (no
BM25 list in any hit's sources, even where a Latin name in the text would match), while a Chinese question over
them, and the English question over English documents, keep their BM25 lists."""

from __future__ import annotations

import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fake_engine, fake_settings, run

DOCUMENTS = {
    "zh/river.txt": "长江是中国最长的河流。NASA 的卫星每年拍摄长江的照片。长江在上海注入东海。",
    "zh/tea.txt": "茶叶起源于中国西南部。绿茶和红茶的制作方法不同。中国人喝茶已经有几千年的历史。",
    "en/space.txt": "NASA launched a satellite to photograph rivers. Its camera saw the Yangtze every spring.",
}
ENGLISH = "When do NASA satellites photograph the river?"
CHINESE = "NASA 卫星 拍摄 长江"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, FakeEmbedder]:
    root = tmp_path_factory.mktemp("cross")
    for name, text in DOCUMENTS.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text, encoding="utf-8")
    built, embedder = fake_settings(root / "store"), FakeEmbedder(dimension=256)
    fake_index([root / "docs"], built, embedder)
    return built, embedder


def lists_of(result: dict) -> set[str]:  # type: ignore[type-arg]
    return {name for hit in result["hits"] for name in (hit.get("sources") or {})}


def test_an_english_question_over_chinese_documents_uses_no_bm25_list(settings) -> None:  # type: ignore[no-untyped-def]
    built, embedder = settings
    engine = fake_engine(built, embedder)

    async def scenario(client: Client):
        return (
            await call(client, "search_fused", {"query": ENGLISH, "k": 3, "level": "narrow", "language": "zh"}),
            await call(client, "search_fused", {"query": CHINESE, "k": 3, "level": "narrow", "language": "zh"}),
            await call(client, "search_fused", {"query": ENGLISH, "k": 3, "level": "narrow", "language": "en"}),
        )

    english, chinese, own = run(build_server(built, engine_factory=lambda _: engine), scenario)
    assert english["hits"] and {h["language"] for h in english["hits"]} == {"zh"}
    assert lists_of(english) and not any(name.endswith("lexical") for name in lists_of(english))
    assert any(name.endswith("lexical") for name in lists_of(chinese))
    assert any(name.endswith("lexical") for name in lists_of(own))
