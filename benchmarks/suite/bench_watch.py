"""The library watch: what one look at the store's CURRENT pointer costs, and so what polling it costs a server;
how soon a watched folder under a burst of changes is in step; and how long a hostile file delays a later note.

`poll` (the default): a served store with a few documents (fake embedder: the look reads only the pointer file).
`read` is the pointer read itself; `poll` is one idle look as the server makes it, from the event loop through a
worker thread.

`churn`: the library sync watching a folder (fake embedder) while `--changes` random changes (adds, edits,
truncations, deletes, renames, new subfolders) land in `--seconds`; the seconds from the last change until the store
holds exactly the folder's documents, and the peak memory.

`stuck`: the library sync watching a folder into which a sheet of `--rows` rows, each really 16,384 cells wide, is
saved (slow to read whole), then a note `--delay` seconds later; the seconds from the note's write until it is
indexed, against the extraction's time limit GRANRAG_EXTRACT_TIMEOUT (`--extract-timeout`), and the peak memory.

    python benchmarks/suite/bench_watch.py --reads 20000
    python benchmarks/suite/bench_watch.py --mode churn --changes 200 --seconds 20
    python benchmarks/suite/bench_watch.py --mode stuck --rows 4000 --delay 5
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
    parser.add_argument("--mode", choices=["poll", "churn", "stuck"], default="poll")
    parser.add_argument("--reads", type=int, default=20000)
    parser.add_argument("--changes", type=int, default=200, help="churn: changes in the burst")
    parser.add_argument("--seconds", type=float, default=20.0, help="churn: seconds the burst lasts")
    parser.add_argument("--settle", type=float, default=0.5, help="GRANRAG_LIBRARY_SETTLE")
    parser.add_argument("--rows", type=int, default=4000, help="stuck: rows of the hostile sheet, 16,384 cells each")
    parser.add_argument("--delay", type=float, default=5.0, help="stuck: seconds from the hostile file to the note")
    parser.add_argument("--extract-timeout", type=float, default=10.0, help="stuck: GRANRAG_EXTRACT_TIMEOUT")
    args = parser.parse_args()
    if args.mode != "poll":
        data = {"revision": git_revision(), "machine": machine(), "load_average_start": load_average()}
        data |= churn(args) if args.mode == "churn" else stuck(args)
        data["load_average_end"] = load_average()
        emit(data)
        save_result(f"watch_{args.mode}", data)
        return

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


class Watching:
    """The library sync's watch over `folder` in a thread, started and stopped with the block."""

    def __init__(self, folder: Path, store: Path, **settings: object) -> None:
        import threading

        from granrag_mcp.indexing.sync import LibrarySync
        from granrag_mcp.settings import Settings
        from tests.fakes import FakeEmbedder
        from tests.helpers import SMALL_CHUNKS

        self.stop = threading.Event()
        self.passes: list = []
        options = {"store": store, "model": "fake-hash-embedder", "library": (folder,), "graph": False}
        self.sync = LibrarySync(
            Settings(**options, **SMALL_CHUNKS.model_dump(), **settings),  # type: ignore[arg-type]
            FakeEmbedder,
            self.stop,
        )
        self.thread = threading.Thread(target=self.sync.run, args=(self.passes.append,), daemon=True)

    def __enter__(self) -> Watching:
        self.thread.start()
        while not self.passes:
            time.sleep(0.05)
        time.sleep(0.5)  # the watch is set up after the first run
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def churn(args: argparse.Namespace) -> dict:
    from benchmarks._common import memory
    from tests.helpers import write_corpus
    from tests.indexing.test_sync_churn import churn as burst
    from tests.indexing.test_sync_churn import seconds_to_settle

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(Path(tmp) / "notes")
        with Watching(folder, Path(tmp) / "store", library_settle=args.settle) as watching:
            started = time.monotonic()
            burst(folder, args.changes, args.seconds)
            burst_seconds = time.monotonic() - started
            settled = seconds_to_settle(folder, watching.sync.settings.store, 120.0)
            runs = len(watching.passes)
    return {
        "mode": "churn",
        "changes": args.changes,
        "burst_seconds": round(burst_seconds, 2),
        "settle": args.settle,
        "seconds_to_in_step_after_last_change": round(settled, 2),
        "sync_runs": runs,
        "memory": memory(),
    }


def stuck(args: argparse.Namespace) -> dict:
    from benchmarks._common import memory
    from tests.helpers import write_corpus
    from tests.indexing.test_sync import stored
    from tests.reliability.test_hostile_documents import wide_rows

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_corpus(Path(tmp) / "notes")
        store = Path(tmp) / "store"
        with Watching(folder, store, library_settle=args.settle, extract_timeout=args.extract_timeout) as watching:
            (folder / "hostile.xlsx").write_bytes(wide_rows(args.rows))
            time.sleep(args.delay)
            (folder / "later.md").write_text("The Harrow Point lighthouse lens has forty-two prisms.", "utf-8")
            written = time.monotonic()
            while "later.md" not in stored(store) and time.monotonic() - written < 600:
                time.sleep(0.1)
            waited = time.monotonic() - written
            messages = [p.message for p in watching.passes]
    return {
        "mode": "stuck",
        "rows": args.rows,
        "delay": args.delay,
        "extract_timeout": args.extract_timeout,
        "seconds_until_the_note_is_indexed": round(waited, 2),
        "runs": messages,
        "memory": memory(),
    }


if __name__ == "__main__":
    main()
