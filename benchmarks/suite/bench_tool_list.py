"""How much of a model's context the tool list takes: the `tools/list` answer as the MCP client receives it, in
characters (compact JSON) and cl100k tokens, split into what the model reads to choose and call a tool (name,
title, description, annotations, input schema) and the output schemas.

Lists the tools through the SDK's in-memory client, for the read-only server and for `--allow-write`. Writes
benchmarks/results/tool_list.json.

    python benchmarks/suite/bench_tool_list.py [--no-save]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks._common import conclude, git_revision, offline_env, result_arguments
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from granrag_mcp.tokens import Tokenizer

READ_PARTS = ("name", "title", "description", "annotations", "inputSchema")


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def list_tools(settings: Settings) -> list[dict[str, Any]]:
    async with Client(build_server(settings)) as client:
        result = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]


def measure(tools: list[dict[str, Any]], tokenizer: Tokenizer) -> dict[str, Any]:
    def size(texts: list[str]) -> dict[str, int]:
        return {"chars": sum(map(len, texts)), "cl100k_tokens": sum(map(tokenizer.count, texts))}

    read = [compact({k: t[k] for k in READ_PARTS if k in t}) for t in tools]
    output = [compact(t.get("outputSchema", {})) for t in tools]
    return {
        "tools": len(tools),
        "whole_answer": size([compact({"tools": tools})]),
        "descriptions_and_input_schemas": size(read),
        "descriptions_alone": size([t.get("description", "") for t in tools]),
        "output_schemas": size(output),
        "per_tool": {
            t["name"]: {"read_tokens": tokenizer.count(r), "output_schema_tokens": tokenizer.count(o)}
            for t, r, o in zip(tools, read, output)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    result_arguments(parser, "tool_list")
    args = parser.parse_args()
    offline_env()
    logging.getLogger("granrag_mcp").setLevel(logging.CRITICAL)  # the empty store's "no index" error is expected
    tokenizer = Tokenizer("cl100k_base")
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"  # the tool list does not depend on the store, which is never opened
        read_only = anyio.run(list_tools, Settings(store=store))
        writing = anyio.run(list_tools, Settings(store=store, allow_write=True))
    data = {
        "benchmark": "tool_list",
        "revision": git_revision(),
        "read_only": measure(read_only, tokenizer),
        "allow_write": measure(writing, tokenizer),
    }
    conclude(args, data)


if __name__ == "__main__":
    main()
