"""Capture the README's "Example session" (and docs/mcp-server.md's): real MCP calls over stdio.

Indexes a copy of this project's docs/ with the CLI (default settings) into a temporary store, starts
`granrag-mcp serve` on it through the MCP Python SDK's stdio client, makes the five calls of the example and
prints their markdown: each request as JSON and its structuredContent with one hit per line (for the failing
call, the isError text). The prose between the calls is written by hand. The copy leaves out the example section
of docs/mcp-server.md, which quotes the query and would otherwise find itself. Everything else goes to stderr.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/tools/capture_example_session.py > /tmp/example-session.md
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
QUERY = "Is the store safe if a process is killed while it commits?"
ANSWER_DOC = "store.md"
EXAMPLE_SECTION = re.compile(r"^## Example session\n.*?(?=^## )", re.MULTILINE | re.DOTALL)


def granrag_command() -> str:
    found = Path(sys.executable).with_name("granrag-mcp")
    return str(found) if found.exists() else (shutil.which("granrag-mcp") or "granrag-mcp")


def server_env() -> dict[str, str]:
    """Default settings: none of the caller's GRANRAG_* variables, no download."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return env | {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}


def dump(value: Any, indent: int = 0) -> str:
    """JSON with an indent of 2, except that a chunk (a dict with chunk_id and level) stays on one line."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict) and value and not {"chunk_id", "level"} <= value.keys():
        items = [f"{inner}{json.dumps(key)}: {dump(item, indent + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(inner + dump(item, indent + 1) for item in value) + f"\n{pad}]"
    return json.dumps(value)


class Transcript:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.number = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        self.number += 1
        print(f"[capture] {self.number}. {tool}", file=sys.stderr)
        result = await self.client.call_tool(tool, arguments)
        print(f"**{self.number}.** `{tool}`\n\n```json\n{json.dumps(arguments)}\n```\n")
        if result.is_error:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            print(f"isError: true, content text:\n\n```json\n{json.dumps(text)}\n```\n")
            return None
        print(f"structuredContent:\n\n```json\n{dump(result.structured_content)}\n```\n")
        return result.structured_content


async def session(store: Path) -> None:
    params = StdioServerParameters(command=granrag_command(), args=["serve", "--store", str(store)], env=server_env())
    async with Client(stdio_client(params, errlog=sys.stderr)) as client:
        t = Transcript(client)
        hits = (await t.call("search_narrow", {"query": QUERY, "k": 4, "lexical": True, "max_tokens": 400}))["hits"]
        # The agent follows the hit that states the design (store.md), not the test reports around it.
        top = next((hit for hit in hits if hit["doc_id"] == ANSWER_DOC), hits[0])
        await t.call("expand_window", {"chunk_id": top["chunk_id"], "before": 3, "after": 1, "max_tokens": 300})
        same_doc = [hit["chunk_id"] for hit in hits if hit["doc_id"] == top["doc_id"]]  # that hit's document
        parents = (await t.call("get_parent", {"chunk_ids": same_doc, "max_tokens": 200}))["parents"]
        seen = [hit["chunk_id"] for hit in hits] + [entry["parent"]["chunk_id"] for entry in parents]
        await t.call("rerank", {"query": QUERY, "chunk_ids": seen, "top_n": 2, "max_tokens": 300})
        await t.call("expand_window", {"chunk_id": "mid:999999"})


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="granrag-example-") as tmp:
        docs, store = Path(tmp) / "docs", Path(tmp) / "store"
        shutil.copytree(ROOT / "docs", docs)
        server_doc = docs / "mcp-server.md"
        server_doc.write_text(EXAMPLE_SECTION.sub("", server_doc.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"[capture] granrag-mcp index {docs} --store {store}", file=sys.stderr)
        subprocess.run(
            [granrag_command(), "index", str(docs), "--store", str(store)],
            env=server_env(),
            stdout=sys.stderr,
            check=True,
        )
        anyio.run(session, store)


if __name__ == "__main__":
    main()
