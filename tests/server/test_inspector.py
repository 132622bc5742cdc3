"""The agent's library flow through MCP Inspector's CLI (`make install` puts a pinned copy in .tools/ where npm
exists): without --allow-write no write tool is listed; with it, index a folder, search it with a filter, read a
document as a resource, remove it, and a path outside the roots is refused.

Each Inspector call is a node process (about 1.5 s). Over stdio each call also starts a server, which loads the
model when a tool needs the index, so only tools/list goes over stdio; the write flow goes to one HTTP server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from granrag_mcp.settings import Settings
from tests.server.test_write_transports import WRITE_TOOLS, write_notes
from tests.server.transport.test_http import start, stop
from tests.server.transport.test_stdio import build_real_store, granrag_command, server_env

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / ".tools" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"
CALL_TIMEOUT = 120

pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists() or shutil.which("node") is None,
    reason="MCP Inspector's CLI is not installed: run `make install` on a machine with node and npm",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, Path]:
    root = tmp_path_factory.mktemp("inspector")
    settings, _ = build_real_store(root)
    (root / "allowed").mkdir()
    return settings, root


def inspector(tmp: Path, *args: str) -> tuple[int, Any]:
    """One Inspector CLI call: its exit status and the JSON it printed (None when it printed none)."""
    env = os.environ | {"MCP_CATALOG_PATH": str(tmp / "inspector-catalog.json")}  # never the user's ~/.mcp-inspector
    done = subprocess.run(
        [str(INSPECTOR), "--cli", *args], env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT, cwd=tmp
    )
    start = done.stdout.find("{")
    try:
        printed = json.JSONDecoder().raw_decode(done.stdout, start)[0] if start >= 0 else None
    except json.JSONDecodeError:
        printed = None
    assert printed is not None, f"no JSON from the Inspector (exit {done.returncode}): {done.stdout} {done.stderr}"
    return done.returncode, printed


def test_tools_listed_over_stdio_with_and_without_allow_write(store, tmp_path: Path) -> None:
    settings, root = store
    env = [arg for k, v in server_env(settings).items() for arg in ("-e", f"{k}={v}")]  # the server gets only these
    serve = [granrag_command(), "serve", "--store", str(settings.store)]
    listed = {}
    for flags in ((), ("--allow-write",)):
        status, tools = inspector(tmp_path, *env, *serve, *flags, "--method", "tools/list")
        assert status == 0
        listed[flags] = {t["name"] for t in tools["tools"]}
    assert not listed[()] & WRITE_TOOLS and "search_narrow" in listed[()]
    assert WRITE_TOOLS <= listed[("--allow-write",)]


def test_index_search_read_remove_and_refuse_through_the_inspector(store, tmp_path: Path) -> None:
    settings, root = store
    notes = write_notes(root / "allowed" / "inspector-notes", 3, seed=11, group="insp")
    (tmp_path / "outside.md").write_text("Nothing to see here. " * 10, encoding="utf-8")
    server = start(
        settings, root / "inspector-server", GRANRAG_ALLOW_WRITE="true", GRANRAG_ALLOWED_ROOTS=str(root / "allowed")
    )
    try:

        def tool(name: str, **arguments: Any) -> tuple[int, Any]:
            pairs = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in arguments.items()]
            return inspector(tmp_path, server.url, "--method", "tools/call", "--tool-name", name, "--tool-arg", *pairs)

        out = {
            "indexed": tool("index_paths", paths=[str(notes)]),
            "hits": tool("search_narrow", query="the harbour number 2", k=5, doc_prefix="insp2/"),
            "read": inspector(
                tmp_path, server.url, "--method", "resources/read", "--uri", "granrag://documents/insp2/note002.md"
            ),
            "removed": tool("remove_documents", doc_ids=["insp2/note002.md"]),
            "after": tool("search_narrow", query="the harbour number 2", k=5, doc_prefix="insp2/"),
            "outside": tool("index_paths", paths=[str(tmp_path / "outside.md")]),
        }
    finally:
        stop(server.process)
    for name in ("indexed", "hits", "read", "removed", "after"):
        assert out[name][0] == 0, (name, out[name])
    indexed = out["indexed"][1]["structuredContent"]
    assert indexed["outcome"] == "committed" and indexed["added"] == 3
    hits = out["hits"][1]["structuredContent"]["hits"]
    assert hits and {h["doc_id"] for h in hits} == {"insp2/note002.md"}
    assert out["read"][1]["contents"][0]["text"].startswith("Note 2 is about the harbour number 2.")
    assert out["removed"][1]["structuredContent"]["outcome"] == "committed"
    assert out["after"][1]["structuredContent"]["hits"] == []
    status, refused = out["outside"]
    assert status != 0 and refused["isError"] is True
    message = refused["content"][0]["text"]
    assert "outside the allowed roots" in message and str((root / "allowed").resolve()) in message
