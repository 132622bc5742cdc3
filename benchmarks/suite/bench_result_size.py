"""What a search result costs a model's context: its structured content in characters and cl100k tokens, as
the server sends it (optional fields that hold nothing left out) and with those fields written out as `null`,
`[]` or `{}` (the shape before they were left out).

Indexes the first SQuAD-A articles with the tests' fake embedder (field presence does not depend on the
embedding; scores and which chunks come back do), then asks each search tool the first questions through the
MCP client. Writes benchmarks/results/result_size.json.

    python benchmarks/suite/bench_result_size.py [--articles 8] [--questions 10] [--no-save]
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
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks._common import conclude, git_revision, offline_env, result_arguments
from benchmarks.corpora import squad_corpus
from granrag_mcp.server.app import build_server
from granrag_mcp.server.schemas.results import SessionSearchResult
from granrag_mcp.tokens import Tokenizer
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import fake_engine, fake_settings

SEARCHES = {"search_narrow": {"k": 10}, "search_broad": {"k": 5}, "search_fused": {"k": 10}}


def written_out(value: Any) -> Any:
    """A result model as JSON data with every field present, the empty optional ones included."""
    if isinstance(value, BaseModel):
        return {name: written_out(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, list):
        return [written_out(item) for item in value]
    if isinstance(value, dict):
        return {key: written_out(item) for key, item in value.items()}
    return value


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def measure(server: Any, questions: list[str], tokenizer: Tokenizer) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with Client(server) as client:
        for tool, arguments in SEARCHES.items():
            sent, full = [], []
            for question in questions:
                result = await client.call_tool(tool, {"query": question, **arguments})
                lean = result.structured_content or {}
                before = written_out(SessionSearchResult.model_validate(lean))
                before.pop("memory", None)  # the handle is new: the earlier shape had no such field
                sent.append(compact(lean))
                full.append(compact(before))
            out[tool] = {
                "arguments": arguments,
                "sent": {"chars": sum(map(len, sent)) // len(sent), "cl100k_tokens": mean(tokenizer, sent)},
                "empty_fields_written_out": {
                    "chars": sum(map(len, full)) // len(full),
                    "cl100k_tokens": mean(tokenizer, full),
                },
            }
    return out


def mean(tokenizer: Tokenizer, texts: list[str]) -> int:
    return round(sum(map(tokenizer.count, texts)) / len(texts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=8, help="SQuAD-A articles to index")
    parser.add_argument("--questions", type=int, default=10, help="questions asked of each search tool")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD, help="the SQuAD-A file")
    result_arguments(parser, "result_size")
    args = parser.parse_args()
    offline_env()
    logging.getLogger("granrag_mcp").setLevel(logging.WARNING)
    documents, questions = squad_corpus.load(args.squad)
    chosen = dict(list(documents.items())[: args.articles])
    asked = [q.question for q in questions if q.doc_id in chosen][: args.questions]
    tokenizer = Tokenizer("cl100k_base")
    with tempfile.TemporaryDirectory() as tmp:
        embedder = FakeEmbedder(dimension=256)
        settings = fake_settings(Path(tmp) / "store")
        fake_index(squad_corpus.write(chosen, Path(tmp) / "corpus"), settings, embedder)
        engine = fake_engine(settings, embedder)
        server = build_server(settings, engine_factory=lambda _: engine)
        results = anyio.run(measure, server, asked, tokenizer)
    data = {
        "benchmark": "result_size",
        "revision": git_revision(),
        "corpus": {"squad": args.squad.name, "articles": len(chosen), "questions": len(asked)},
        "embedder": "tests.fakes.FakeEmbedder (256 dimensions)",
        "per_result_mean": results,
    }
    conclude(args, data)


if __name__ == "__main__":
    main()
