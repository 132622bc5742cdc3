"""Token vectors: hrr_search latency with and without them, and their size.

Two SQuAD-A x2 stores (the tool-latency benchmark's corpus, 11.5k chunks), one built with token vectors and one
without, each served by its own `granrag-mcp serve` over stdio. hrr_search is called on both in turn, question by
question (the order alternating), with the same questions, so the two arms see the same load; each call is the
client's MCP round trip with the query's embedding counted (in the token store the forward also gives the
query's token vectors). Size: the token files' bytes per sentence, and that times a million.

    python benchmarks/suite/bench_token_vectors.py --calls 150 [--stores-dir /tmp/token-bench]

Prints one JSON object and writes benchmarks/results/token_vectors.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402
from benchmarks.suite.bench_tools import call, ensure_store, server_params  # noqa: E402


def index_seconds(store: Path, squad: Path, copies: int, tokens: bool) -> float | None:
    """Index the corpus into `store` unless it holds an index; the seconds it took."""
    began = time.perf_counter()
    indexed = ensure_store(store, squad, copies, token_vectors=tokens)
    return round(time.perf_counter() - began, 1) if indexed is not None else None


def token_size(store: Path) -> dict[str, Any]:
    from granrag_mcp.store.store import Snapshot

    snapshot = Snapshot.open(store)
    try:
        tokens = snapshot.token_vectors
        assert tokens is not None
        files = {f: e.bytes for f, e in snapshot.manifest.files.items() if f.startswith("narrow.tokens")}
        stored = sum(v for f, v in files.items() if not f.endswith("projection.npy"))
        per_sentence = stored / len(tokens)
        return {
            "sentences": len(tokens),
            "dims": tokens.dims,
            "tokens_per_sentence": round(float(len(tokens.data)) / len(tokens), 2),
            "bytes_per_sentence": round(per_sentence, 1),
            "bytes_at_1m_sentences": int(per_sentence * 1_000_000),
            "files": files,
        }
    finally:
        snapshot.close()


async def alternate(stores: dict[str, Path], questions: list[str], calls: int) -> dict[str, list[float]]:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    times: dict[str, list[float]] = {name: [] for name in stores}
    with open(os.devnull, "w") as errlog:
        async with (
            Client(stdio_client(server_params(stores["with token vectors"]), errlog=errlog), mode="legacy") as a,
            Client(stdio_client(server_params(stores["without"]), errlog=errlog), mode="legacy") as b,
        ):
            clients = {"with token vectors": a, "without": b}
            for client in clients.values():  # loads the engines; warms caches and pages
                for q in questions[-5:]:
                    await call(client, "hrr_search", {"query": q})
            for n, q in enumerate(questions[:calls]):
                names = list(clients) if n % 2 == 0 else list(clients)[::-1]
                for name in names:
                    seconds, content = await call(clients[name], "hrr_search", {"query": q})
                    times[name].append(seconds)
                    if n == 0:
                        print(f"[bench_token_vectors] {name}: reranker {content.get('reranker')}", file=sys.stderr)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores-dir", type=Path, default=Path(tempfile.gettempdir()) / "granrag-token-bench")
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--calls", type=int, default=150, help="hrr_search calls per arm (default 150)")
    _common.result_arguments(parser, "token_vectors")
    args = parser.parse_args()
    _common.offline_env()

    stores = {"with token vectors": args.stores_dir / "tokens", "without": args.stores_dir / "plain"}
    indexing = {
        name: index_seconds(store, args.squad, args.copies, tokens=name != "without") for name, store in stores.items()
    }
    _, every = squad_corpus.load(args.squad)
    questions = list(dict.fromkeys(q.question.strip() for q in squad_corpus.sample(every, args.calls + 10, seed=0)))
    times = asyncio.run(alternate(stores, questions, args.calls))
    result = {
        "benchmark": "token_vectors",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "load_average": os.getloadavg(),
        "calls": args.calls,
        "index_seconds": indexing,
        "hrr_search": {name: _common.latency_summary(t) for name, t in times.items()},
        "size": token_size(stores["with token vectors"]),
    }
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
