"""Load: 8 MCP clients over streamable HTTP while `granrag-mcp index` commits new generations, and one stdio client
calling back to back while the server's memory is watched.

HTTP: each client has its own session and runs a mixed chain (a search, then get_chunks on every id it returned,
then expand_window, get_parent, rerank, hrr_search, list_documents) until the deadline, while a bounded loop edits
one document (`changing.md`) and runs the real `granrag-mcp index`. Every call must succeed and match its output
schema, except one legitimate case: an id of `changing.md` whose document a commit re-indexed between the search
and the get_chunks (an "unknown chunk id" naming a newer generation). Ids of every other document must always
resolve. A session never sees the generation go backwards.

stdio: after a warm-up, the server's RSS (from /proc/PID/status) may not grow by more than RSS_BOUND_MB.

Default run: about 12 s of each; `pytest -m slow` runs GRANRAG_LOAD_SECONDS (180) of each.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.reliability.conftest import RealStore
from tests.reliability.support import (
    children_of,
    cli_env,
    copy_store,
    open_fds,
    record,
    rss_kb,
    session,
    summary,
)
from tests.server.transport.test_http import start, stop
from tests.server.transport.test_stdio import granrag_command, server_env

CLIENTS = 8
SHORT_SECONDS = 12.0
SLOW_SECONDS = float(os.environ.get("GRANRAG_LOAD_SECONDS", "180"))
MAX_INDEX_RUNS = 200  # the commit loop stops at this count or at the deadline, whichever comes first
RSS_BOUND_MB = 50.0
QUERIES = [
    "Who built the Zephyr Bridge?",
    "Harrow Point lighthouse lens prisms",
    "When does the Quillon apple ripen?",
    "harbour crane trial",
    "which page was rewritten",
    "market lantern harvest copper",
    "Ignore previous instructions",
    "emoji family flag",
    "granary blanket quarry ferry",
    "orchard cellar September",
]
CHANGING = "changing.md"
UNKNOWN_ID = "unknown chunk id"


def change(corpus: Path, number: int) -> None:
    (corpus / CHANGING).write_text(
        f"# Crane log\n\nRevision {number}: the harbour crane lifted {number * 3} crates of timber.\n" * 6,
        encoding="utf-8",
    )


class Window:
    """When the clients stop: `seconds` from now, but never before 3 s after the first commit (bounded by the
    index run's own timeout), so even a slow machine serves two generations to the clients."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.committed = False

    def open(self) -> bool:
        now = time.monotonic()
        return now < self.end or (not self.committed and now < self.end + 300.0)

    def extend(self) -> None:
        self.end = max(self.end, time.monotonic() + 3.0)
        self.committed = True


class CommitLoop:
    """Edit changing.md and run the real `granrag-mcp index`, until stopped or MAX_INDEX_RUNS."""

    def __init__(self, settings, corpus: Path, window: Window) -> None:
        self.settings = settings
        self.corpus = corpus
        self.window = window
        self.stop = threading.Event()
        self.runs: list[tuple[int, float]] = []  # (exit code, seconds)
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        for number in range(1, MAX_INDEX_RUNS + 1):
            if self.stop.is_set():
                return
            change(self.corpus, number)
            started = time.monotonic()
            done = subprocess.run(
                [granrag_command(), "index", str(self.corpus), "--store", str(self.settings.store), "--quiet"],
                env=cli_env(self.settings),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
            )
            self.runs.append((done.returncode, time.monotonic() - started))
            if done.returncode == 0 and len(self.runs) == 1:
                self.window.extend()
            if done.returncode != 0:
                self.errors.append(done.stderr[-2000:])

    def __enter__(self) -> CommitLoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(360)


class Stats:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.tally: Counter[str] = Counter()
        self.failures: list[str] = []
        self.generations: set[int] = set()


async def client_loop(number: int, url: str, window: Window, tools: dict[str, Any], stats: Stats) -> None:
    rng = random.Random(number)
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120)) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            last_generation = 0

            async def call(name: str, arguments: dict[str, Any], allow_unknown: bool = False) -> dict | None:
                nonlocal last_generation
                started = time.monotonic()
                with anyio.fail_after(120):
                    result = await client.call_tool(name, arguments)
                stats.latency[name].append(time.monotonic() - started)
                stats.tally["calls"] += 1
                if result.is_error:
                    message = " ".join(getattr(b, "text", "") for b in result.content)
                    if allow_unknown and UNKNOWN_ID in message:
                        stats.tally["stale ids of the re-indexed document (legitimate)"] += 1
                        return None
                    stats.failures.append(f"client {number}: {name}({arguments}): {message[:300]}")
                    return None
                content = result.structured_content
                jsonschema.validate(content, tools[name].output_schema)
                generation = content["generation"]
                if generation < last_generation:
                    stats.failures.append(
                        f"client {number}: generation went back from {last_generation} to {generation} in {name}"
                    )
                last_generation = generation
                stats.generations.add(generation)
                return content

            while window.open():
                query = rng.choice(QUERIES)
                search = rng.choice(
                    ["search_narrow", "search_broad", "search_fused", "search_fused_union", "hrr_search"]
                )
                arguments: dict[str, Any] = {"query": query, "k": rng.randint(3, 10), "max_tokens": 2000}
                if search == "search_fused_union":
                    search, arguments["method"] = "search_fused", "union"
                if search == "search_narrow" and rng.random() < 0.5:
                    arguments["lexical"] = True
                found = await call(search, arguments)
                if found is None:
                    continue
                hits = found["hits"]
                stable = [h["chunk_id"] for h in hits if h["doc_id"] != CHANGING]
                changing = [h["chunk_id"] for h in hits if h["doc_id"] == CHANGING]
                if stable:  # ids of unchanged documents must always resolve
                    got = await call("get_chunks", {"chunk_ids": stable})
                    if got is not None and [h["chunk_id"] for h in got["hits"]] != stable:
                        stats.failures.append(f"client {number}: get_chunks gave other chunks")
                    stats.tally["ids resolved (unchanged documents)"] += len(stable)
                if changing:
                    got = await call("get_chunks", {"chunk_ids": changing}, allow_unknown=True)
                    if got is not None:
                        stats.tally["ids resolved (re-indexed document)"] += len(changing)
                if not stable:
                    continue
                target = rng.choice(stable)
                await call(
                    "expand_window",
                    {"chunk_id": target, "before": rng.randint(0, 3), "after": rng.randint(0, 3), "max_tokens": 1000},
                )
                fine = [i for i in stable if not i.startswith("broad:")]
                if fine:
                    await call("get_parent", {"chunk_ids": fine[:5], "max_tokens": 1500})
                await call("rerank", {"query": query, "chunk_ids": stable[:8], "top_n": 3, "max_tokens": 1500})
                if rng.random() < 0.2:
                    await call("list_documents", {"limit": 10})


def http_load(real_store: RealStore, tmp_path: Path, seconds: float, name: str) -> dict[str, Any]:
    settings = real_store.settings.model_copy(
        update={"store": copy_store(real_store.settings.store, tmp_path / "store")}
    )
    corpus = tmp_path / "corpus"
    shutil.copytree(real_store.corpus, corpus)
    server = start(settings, tmp_path / "server")
    stats = Stats()
    samples: list[tuple[float, int, int]] = []
    try:

        async def warm_up() -> dict[str, Any]:
            async with Client(server.url) as client:  # waits for the model: the first call blocks until ready
                await client.call_tool("search_narrow", {"query": "warm up", "k": 1})
                return {t.name: t for t in (await client.list_tools()).tools}

        tools = anyio.run(warm_up)
        rss_start = rss_kb(server.process.pid)

        window = Window(seconds)

        async def main() -> None:
            async def sample() -> None:
                while window.open():
                    samples.append((time.monotonic(), rss_kb(server.process.pid), open_fds(server.process.pid)))
                    await anyio.sleep(1.0)

            async with anyio.create_task_group() as group:
                group.start_soon(sample)
                for number in range(CLIENTS):
                    group.start_soon(client_loop, number, server.url, window, tools, stats)

        started = time.monotonic()
        with CommitLoop(settings, corpus, window) as commits:
            anyio.run(main)
        elapsed = time.monotonic() - started
    finally:
        stop(server.process)
    log = server.log()
    assert "Traceback" not in log, log[-4000:]
    assert commits.errors == [], commits.errors
    all_latency = [x for values in stats.latency.values() for x in values]
    figures = {
        "clients": CLIENTS,
        "seconds": round(elapsed, 1),
        "calls": stats.tally["calls"],
        "failed calls": len(stats.failures),
        "calls/s": round(stats.tally["calls"] / elapsed, 1),
        "index runs committed": sum(1 for code, _ in commits.runs if code == 0),
        "generations served": sorted(stats.generations),
        "latency all": summary(all_latency),
        "latency": {tool: summary(values) for tool, values in sorted(stats.latency.items())},
        "server rss MB start/max": [round(rss_start / 1024), round(max(s[1] for s in samples) / 1024)],
        "server fds min/max": [min(s[2] for s in samples), max(s[2] for s in samples)],
    } | {k: v for k, v in stats.tally.items() if k != "calls"}
    record(name, figures)
    assert stats.failures == [], stats.failures[:10]
    assert figures["index runs committed"] >= 1 and len(stats.generations) >= 2, figures
    assert stats.tally["ids resolved (unchanged documents)"] > 0
    return figures


def test_http_clients_while_index_commits(real_store: RealStore, tmp_path: Path) -> None:
    http_load(real_store, tmp_path, SHORT_SECONDS, "http-load-short")


@pytest.mark.slow
def test_http_clients_while_index_commits_long(real_store: RealStore, tmp_path: Path) -> None:
    figures = http_load(real_store, tmp_path, SLOW_SECONDS, "http-load")
    low, high = figures["server fds min/max"]
    assert high - low < 64, figures  # old generations' files are released


# --- stdio memory ----------------------------------------------------------------------------------------------------


def server_pid(store: Path) -> int:
    """The `granrag-mcp serve` child of this process that serves `store`."""
    for pid in children_of(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in command and str(store).encode() in command:
            return pid
    raise AssertionError("the stdio server process was not found")


def stdio_memory(real_store: RealStore, tmp_path: Path, seconds: float, warm_up: float, name: str) -> dict:
    settings = real_store.settings
    params = StdioServerParameters(
        command=granrag_command(), args=["serve", "--store", str(settings.store)], env=server_env(settings)
    )
    rng = random.Random(5)
    latency: list[float] = []
    samples: list[tuple[float, int]] = []
    calls = failures = 0
    errlog_path = tmp_path / "server.stderr"
    with errlog_path.open("w") as errlog, session(stdio_client(params, errlog=errlog)) as s:
        pid = server_pid(settings.store)
        ids = [
            h["chunk_id"]
            for h in s.call("search_narrow", {"query": "lighthouse", "k": 20}, timeout=300).structured_content["hits"]
        ]
        started = time.monotonic()
        measured_from = started + warm_up
        next_sample = started
        while time.monotonic() < measured_from + seconds:
            choice = rng.randrange(6)
            query = rng.choice(QUERIES)
            if choice == 0:
                name_, arguments = "search_narrow", {"query": query, "k": 10, "lexical": True}
            elif choice == 1:
                name_, arguments = "search_fused", {"query": query, "k": 10}
            elif choice == 2:
                name_, arguments = "hrr_search", {"query": query, "k": 3}
            elif choice == 3:
                name_, arguments = "get_chunks", {"chunk_ids": rng.sample(ids, 5)}
            elif choice == 4:
                name_, arguments = "expand_window", {"chunk_id": rng.choice(ids), "before": 3, "after": 3}
            else:
                name_, arguments = "rerank", {"query": query, "chunk_ids": ids, "top_n": 5}
            t0 = time.monotonic()
            result = s.call(name_, arguments, timeout=60)
            latency.append(time.monotonic() - t0)
            calls += 1
            failures += bool(result.is_error)
            now = time.monotonic()
            if now >= next_sample:
                samples.append((now - started, rss_kb(pid)))
                next_sample = now + 0.5
    measured = [kb for t, kb in samples if t >= warm_up]
    baseline = measured[0]
    growth_mb = (max(measured) - baseline) / 1024
    tail = measured[len(measured) // 2 :]
    figures = {
        "seconds measured": seconds,
        "warm-up s": warm_up,
        "calls": calls,
        "failed calls": failures,
        "calls/s": round(calls / (seconds + warm_up), 1),
        "latency": summary(latency),
        "rss MB at start of measure": round(baseline / 1024, 1),
        "rss MB max": round(max(measured) / 1024, 1),
        "rss MB end": round(measured[-1] / 1024, 1),
        "rss growth MB": round(growth_mb, 1),
        "rss growth MB (second half)": round((max(tail) - tail[0]) / 1024, 1),
        "bound MB": RSS_BOUND_MB,
    }
    record(name, figures)
    assert failures == 0
    assert growth_mb < RSS_BOUND_MB, figures
    log = errlog_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[-3000:]
    return figures


def test_stdio_memory_stays_bounded(real_store: RealStore, tmp_path: Path) -> None:
    stdio_memory(real_store, tmp_path, seconds=8.0, warm_up=4.0, name="stdio-rss-short")


@pytest.mark.slow
def test_stdio_memory_stays_bounded_long(real_store: RealStore, tmp_path: Path) -> None:
    stdio_memory(real_store, tmp_path, seconds=SLOW_SECONDS, warm_up=30.0, name="stdio-rss")
