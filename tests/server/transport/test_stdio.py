"""End to end over stdio: `granrag-mcp serve` as a subprocess with the real bundled model and the SDK's stdio client."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from granrag_mcp.engine import run_index
from granrag_mcp.settings import Settings
from tests.server.test_app import FACTS, SMALL_CHUNKS, TOOLS, write_corpus

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SESSION_TIMEOUT = 240  # seconds for a whole client session, model load included


def granrag_command() -> str:
    script = Path(sys.executable).parent / "granrag-mcp"
    return str(script) if script.exists() else (shutil.which("granrag-mcp") or "granrag-mcp")


def server_env(settings: Settings, **extra: str) -> dict[str, str]:
    """What the spawned server needs to open the same store as the tests: the chunk sizes of its identity."""
    env = {
        "GRANRAG_BROAD_TOKENS": str(settings.broad_tokens),
        "GRANRAG_BROAD_OVERLAP": str(settings.broad_overlap),
        "GRANRAG_MID_TOKENS": str(settings.mid_tokens),
        "GRANRAG_LOG_LEVEL": "INFO",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    # A checkout run with PYTHONPATH (a second worktree) must spawn its own code, not the installed copy's.
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env | extra


def build_real_store(root: Path) -> tuple[Settings, Path]:
    corpus = write_corpus(root / "corpus")
    settings = Settings(store=root / "store", **SMALL_CHUNKS)
    run_index([corpus], settings, quiet=True)
    return settings, corpus


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    return build_real_store(tmp_path_factory.mktemp("stdio"))


class Session:
    """A client with its tool list: call tools, validate results against their output schemas."""

    def __init__(self, client: Client, tools: dict[str, Any]) -> None:
        self.client = client
        self.tools = tools

    async def ok(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(name, arguments)
        assert not result.is_error, f"{name}{arguments}: {result.content}"
        jsonschema.validate(result.structured_content, self.tools[name].output_schema)
        return result.structured_content  # type: ignore[return-value]

    async def error(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.client.call_tool(name, arguments)
        assert result.is_error, f"{name}{arguments} should fail"
        assert result.structured_content is None
        return " ".join(getattr(block, "text", "") for block in result.content)


async def exercise_every_tool(s: Session) -> dict[str, Any]:
    """Good and bad arguments for every tool; returns what later checks need."""
    narrow = await s.ok("search_narrow", {"query": "Who built the Zephyr Bridge, and when was it finished?", "k": 5})
    top = narrow["hits"][0]
    assert "Zephyr Bridge" in top["text"] and top["level"] == "narrow" and top["doc_id"] == "bridges.md"
    mid = await s.ok("search_narrow", {"query": "lighthouse lens prisms", "level": "mid", "k": 3, "lexical": True})
    assert all(h["level"] == "mid" and h["sources"] for h in mid["hits"])
    assert "k" in await s.error("search_narrow", {"query": "x", "k": 500})
    assert "query is empty" in await s.error("search_narrow", {"query": "  "})

    broad = await s.ok("search_broad", {"query": "When does the Quillon apple ripen?", "k": 2})
    assert "Quillon apple" in broad["hits"][0]["text"] and "parent_id" not in broad["hits"][0]
    assert "validation error" in await s.error("search_broad", {"query": ""})

    fused = await s.ok("search_fused", {"query": "engineer of the Zephyr Bridge", "k": 4})
    assert {"narrow_dense", "broad_dense"} & set(fused["hits"][0]["sources"])
    union = await s.ok("search_fused", {"query": "Harrow Point lighthouse", "method": "union", "k": 5})
    assert {h["level"] for h in union["hits"]} <= {"broad", "mid"}  # level defaults to mid
    assert "weights" in await s.error("search_fused", {"query": "x", "weights": {"dense": 2}})

    window = await s.ok("expand_window", {"chunk_id": top["chunk_id"], "before": 1, "after": 1, "max_tokens": 2000})
    assert top["chunk_id"] in [m["chunk_id"] for m in window["members"]] and "Zephyr Bridge" in window["text"]
    assert "malformed chunk id" in await s.error("expand_window", {"chunk_id": "zephyr"})

    parents = await s.ok("get_parent", {"chunk_ids": [top["chunk_id"]]})
    assert parents["parents"][0]["parent"]["chunk_id"] == top["parent_id"]
    assert "no parent" in await s.error("get_parent", {"chunk_ids": ["broad:1"]})

    ids = [h["chunk_id"] for h in narrow["hits"]] + [top["parent_id"]]
    reranked = await s.ok("rerank", {"query": "Who built the Zephyr Bridge?", "chunk_ids": ids, "top_n": 3})
    assert reranked["reranker"] and len(reranked["hits"]) == 3
    assert "unknown chunk id" in await s.error("rerank", {"query": "x", "chunk_ids": ["mid:99999999"]})

    hrr = await s.ok("hrr_search", {"query": "How many prisms are in the Harrow Point lens?", "k": 2})
    assert hrr["hits"][0]["level"] == "broad" and hrr["hits"][0]["evidence"]
    assert "validation error" in await s.error("hrr_search", {"query": "x", "sentence_k": 0})

    documents = await s.ok("list_documents", {})
    assert documents["total"] == 3
    assert "validation error" in await s.error("list_documents", {"limit": 10_000})

    chunks = await s.ok("get_chunks", {"chunk_ids": hrr["hits"][0]["evidence"], "max_tokens": 60})
    assert chunks["tokens_used"] <= 60
    assert "validation error" in await s.error("get_chunks", {"chunk_ids": []})
    return {"documents": documents}


def test_every_tool_over_stdio(real_store: tuple[Settings, Path], tmp_path: Path) -> None:
    settings, corpus = real_store
    params = StdioServerParameters(
        command=granrag_command(),
        args=["serve", "--store", str(settings.store)],
        env=server_env(settings),
    )
    stray: list[Exception] = []  # anything on stdout that is not a protocol message arrives here

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            stray.append(message)

    async def main() -> None:
        with (tmp_path / "server.stderr").open("w+") as errlog:
            with anyio.fail_after(SESSION_TIMEOUT):
                async with Client(stdio_client(params, errlog=errlog), message_handler=on_message) as client:
                    tools = {t.name: t for t in (await client.list_tools()).tools}
                    assert set(tools) == TOOLS
                    errlog.seek(0)
                    assert "ready: serving" not in errlog.read()  # answered while the model was still loading
                    session = Session(client, tools)
                    seen = await exercise_every_tool(session)
                    assert seen["documents"]["generation"] == 1

                    # A generation committed while the server runs is served by the next call.
                    (corpus / "coast" / "keepers.md").write_text(f"# Keepers\n\n{FACTS['late']}\n", encoding="utf-8")
                    summary = await anyio.to_thread.run_sync(lambda: run_index([corpus], settings, quiet=True))
                    assert summary.committed and summary.generation == 2
                    after = await session.ok("list_documents", {})
                    assert (after["generation"], after["total"]) == (2, 4)
                    found = await session.ok("search_narrow", {"query": "Which keeper joined in 1954?", "k": 3})
                    assert found["generation"] == 2 and any("Osric Vane" in h["text"] for h in found["hits"])
            errlog.seek(0)
            log = errlog.read()
        assert "now serving generation 2" in log, log[-3000:]

    anyio.run(main)
    assert stray == []


@pytest.mark.parametrize("problem", ["missing", "other-model"])
def test_serve_refuses_to_start_on_a_bad_store(real_store: tuple[Settings, Path], tmp_path: Path, problem: str) -> None:
    settings, _ = real_store
    if problem == "missing":
        args, env, expected = ["--store", str(tmp_path / "nowhere")], server_env(settings), "no index at"
    else:
        args = ["--store", str(settings.store), "--model", "some/other-model"]
        env, expected = server_env(settings), "model: store='sentence-transformers/all-MiniLM-L6-v2'"
    completed = subprocess.run(
        [granrag_command(), "serve", *args],
        env=os.environ | env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert completed.stdout == ""
    errors = [line for line in completed.stderr.splitlines() if line.startswith("granrag-mcp: error:")]
    assert len(errors) == 1 and expected in errors[0], completed.stderr


def test_a_client_that_leaves_while_the_model_loads_gets_a_clean_exit(
    real_store: tuple[Settings, Path], tmp_path: Path
) -> None:
    # `serve --index-if-empty` on an empty store, stdin at EOF at once: after indexing, torch is loaded, and the
    # engine thread is inside it when the serve loop ends. Finalizing the interpreter under that thread aborted
    # the process ("terminate called without an active exception", exit code 134).
    settings, corpus = real_store
    completed = subprocess.run(
        [granrag_command(), "serve", "--store", str(tmp_path / "store"), "--index-if-empty", str(corpus)],
        env=os.environ | server_env(settings),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout == ""
    assert "terminate called" not in completed.stderr and "Traceback" not in completed.stderr
