"""The library sync's cost and speed: the CPU time of an idle `serve --library` beside an idle `serve` of the same
store without it, over the same window (each with a stdio client connected and the model loaded), and the time
from a file's last write in the watched folder to a search that finds it.

CPU time is the server process's user + system time from /proc (Linux), as a share of one core over the window.

    python benchmarks/suite/bench_watch_idle.py --idle 60 --trials 10
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import emit, git_revision, latency_summary, load_average, machine, offline_env, save_result

NOTES = {
    "bridge.md": "The Zephyr Bridge was finished in 1931 by the engineer Ada Moreau. It spans the Kell river.",
    "orchard.md": "The Quillon apple ripens in late October in the northern orchards. Its skin is pale gold.",
    "lighthouse.md": "The Harrow Point lighthouse lens has forty-two prisms. Its keeper logs every storm.",
}
WORDS = ["glacier", "violin", "harbour", "orchard", "comet", "lantern", "falcon", "meadow", "quarry", "kettle"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc/PID/stat (fields 14 and 15, after the command's name)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children() -> dict[int, str]:
    """PID -> command line of this process's children (the servers the stdio clients started)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rpartition(")")[2].split()[1]) == os.getpid():
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=60.0, help="seconds both servers sit idle while measured")
    parser.add_argument("--trials", type=int, default=10, help="files written, each timed until it is found")
    parser.add_argument("--settle", type=float, default=0.5, help="GRANRAG_LIBRARY_SETTLE of the syncing server")
    args = parser.parse_args()
    offline_env()

    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from granrag_mcp.settings import Settings
    from tests.server.transport.test_stdio import granrag_command, server_env

    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder, store = Path(tmp) / "notes", Path(tmp) / "store"
        folder.mkdir()
        for name, text in NOTES.items():
            (folder / name).write_text(text, encoding="utf-8")
        env = os.environ | server_env(Settings(store=store), GRANRAG_LIBRARY_SETTLE=str(args.settle))
        syncing = StdioServerParameters(
            command=granrag_command(), args=["serve", "--store", str(store), "--library", str(folder)], env=env
        )
        plain = StdioServerParameters(command=granrag_command(), args=["serve", "--store", str(store)], env=env)

        async def hits(client: Client, query: str) -> list[dict[str, Any]]:
            result = await client.call_tool("search_narrow", {"query": query, "k": 5})
            return [] if result.is_error else result.structured_content["hits"]  # type: ignore[index]

        async def until_found(client: Client, query: str, doc_id: str, limit: float) -> float:
            start = time.monotonic()
            while not any(h["doc_id"] == doc_id for h in await hits(client, query)):
                if time.monotonic() - start > limit:
                    raise TimeoutError(f"{doc_id} not found in {limit} s")
                await anyio.sleep(0.05)
            return time.monotonic() - start

        async def scenario() -> dict[str, Any]:
            with open(Path(tmp) / "sync.stderr", "w") as log_a, open(Path(tmp) / "plain.stderr", "w") as log_b:
                async with Client(stdio_client(syncing, errlog=log_a)) as a:
                    await until_found(a, "Who built the Zephyr Bridge?", "bridge.md", 300)  # the first sync
                    async with Client(stdio_client(plain, errlog=log_b)) as b:
                        await until_found(b, "Who built the Zephyr Bridge?", "bridge.md", 300)
                        pids = children()
                        pid_a = next(p for p, cmd in pids.items() if "--library" in cmd)
                        pid_b = next(p for p, cmd in pids.items() if "--library" not in cmd)
                        await anyio.sleep(5)  # the load's stragglers settle
                        start, cpu_a, cpu_b = time.monotonic(), cpu_seconds(pid_a), cpu_seconds(pid_b)
                        await anyio.sleep(args.idle)
                        wall = time.monotonic() - start
                        idle = {
                            "window_s": round(wall, 2),
                            "serve_library_core_percent": round(100 * (cpu_seconds(pid_a) - cpu_a) / wall, 3),
                            "serve_plain_core_percent": round(100 * (cpu_seconds(pid_b) - cpu_b) / wall, 3),
                        }
                    waits = []
                    for trial in range(args.trials):
                        word = WORDS[trial % len(WORDS)]
                        path = folder / f"trial{trial}.md"
                        path.write_text(f"Trial {trial}: the {word} ledger is kept in vault {trial * 37}.", "utf-8")
                        waits.append(await until_found(a, f"Where is the {word} ledger kept?", path.name, 60))
                    return {"idle": idle, "settled_to_searchable": latency_summary(waits)}

        data = anyio.run(scenario)
    data = {
        "revision": git_revision(),
        "machine": machine(),
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "settle_s": args.settle,
        "trials": args.trials,
        **data,
    }
    emit(data)
    save_result("watch_idle", data)


if __name__ == "__main__":
    main()
