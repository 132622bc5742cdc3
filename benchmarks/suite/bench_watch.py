"""The library watch: what one look at the store's CURRENT pointer costs, and so what polling it costs a server.

A served store with a few documents (fake embedder: the look reads only the pointer file). `read` is the pointer
read itself; `poll` is one idle look as the server makes it, from the event loop through a worker thread.

    python benchmarks/suite/bench_watch.py --reads 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import emit, git_revision, latency_summary, load_average, machine, save_result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=20000)
    args = parser.parse_args()

    import anyio
    import anyio.to_thread

    from granrag_mcp.settings import Settings
    from granrag_mcp.store.store import read_current
    from tests.fakes import FakeEmbedder
    from tests.helpers import fake_index, write_corpus

    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(store=Path(tmp) / "store", model="fake")
        fake_index([write_corpus(Path(tmp) / "corpus")], settings, FakeEmbedder())
        store = settings.store
        reads = []
        for _ in range(args.reads):
            start = time.perf_counter()
            read_current(store)
            reads.append(time.perf_counter() - start)

        async def polls() -> list[float]:
            seconds = []
            for _ in range(args.reads // 10):
                start = time.perf_counter()
                await anyio.to_thread.run_sync(read_current, store)
                seconds.append(time.perf_counter() - start)
            return seconds

        polled = anyio.run(polls)
    data = {
        "revision": git_revision(),
        "machine": machine(),
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "read": latency_summary(reads),
        "poll": latency_summary(polled),
    }
    emit(data)
    save_result("watch", data)


if __name__ == "__main__":
    main()
