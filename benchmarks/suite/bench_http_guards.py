"""The HTTP transport under hostile connections: log lines while descriptors are exhausted, recovery afterwards,
and legitimate requests while slow clients drip request heads.

Runs `granrag-mcp serve --transport http` from whatever code PYTHONPATH selects, so two revisions can be compared
by running this script twice with different PYTHONPATHs. Writes benchmarks/results/http_guards.json.

    python benchmarks/suite/bench_http_guards.py [--hold 10] [--drippers 40] [--label NAME]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it
from benchmarks._common import emit, git_revision, latency_summary, machine, offline_env, save_result  # noqa: E402

DOCS = {
    "bridge.md": "The Zephyr Bridge was built by the engineer Mara Quill over the river Sel. " * 20,
    "lighthouse.md": "Harrow Point lighthouse keeps a lens of polished brass and a copper lamp. " * 20,
}
CHUNKS = {"GRANRAG_BROAD_TOKENS": "256", "GRANRAG_BROAD_OVERLAP": "32", "GRANRAG_MID_TOKENS": "64"}


def command() -> str:
    script = Path(sys.executable).parent / "granrag-mcp"
    return str(script) if script.exists() else (shutil.which("granrag-mcp") or "granrag-mcp")


def build_store(root: Path) -> Path:
    corpus = root / "corpus"
    corpus.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    store = root / "store"
    subprocess.run(
        [command(), "index", str(corpus), "--store", str(store), "--quiet"],
        env=os.environ | CHUNKS,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return store


class Server:
    def __init__(self, store: Path, log: Path, open_files: int | None = None, **env: str) -> None:
        def lower() -> None:
            if open_files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

        self.log = log
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [command(), "serve", "--transport", "http", "--port", "0", "--store", str(store)],
                env=os.environ | CHUNKS | env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sink,
                preexec_fn=lower,
            )
        for _ in range(1200):
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)/mcp", self.text())
            if match:
                self.port = int(match.group(1))
                return
            if self.process.poll() is not None:
                raise RuntimeError(self.text())
            time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def get(self, timeout: float = 30) -> tuple[int | str, float]:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/other", timeout=timeout) as answer:
                status: int | str = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError as exc:
            status = type(exc).__name__
        return status, time.perf_counter() - start

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def exhaustion(store: Path, root: Path, hold: float) -> dict[str, Any]:
    """64 descriptors, the default connection limit, 100 idle connections held for `hold` seconds."""
    server = Server(store, root / "exhaustion.log", open_files=64, GRANRAG_HTTP_HEADER_TIMEOUT="600")
    try:
        before = server.text().count("\n")
        sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(100)]
        time.sleep(hold)
        during = server.text()
        for sock in sockets:
            sock.close()
        released = time.perf_counter()
        status: int | str = "never"
        for _ in range(300):
            status, _ = server.get(timeout=5)
            if status == 404:
                break
            time.sleep(0.1)
        recovery = time.perf_counter() - released
    finally:
        server.stop()
    return {
        "held_seconds": hold,
        "log_lines_while_exhausted": during.count("\n") - before,
        "too_many_open_files_lines": during.count("Too many open files"),
        "first_answer_after_release": status,
        "seconds_to_first_answer_after_release": round(recovery, 2),
    }


def slow_heads(store: Path, root: Path, drippers: int) -> dict[str, Any]:
    """`drippers` clients sending a request head a byte every 0.5 s, while one client makes 40 plain requests."""
    server = Server(store, root / "slow.log", GRANRAG_HTTP_MAX_CONNECTIONS="32", GRANRAG_HTTP_HEADER_TIMEOUT="5")
    stop = threading.Event()
    cut: list[float] = []

    def drip() -> None:
        started = time.perf_counter()
        head = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode() + b"a" * 400
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                for byte in head:
                    if stop.is_set():
                        return
                    sock.sendall(bytes([byte]))
                    time.sleep(0.5)
        except OSError:
            cut.append(time.perf_counter() - started)

    threads = [threading.Thread(target=drip, daemon=True) for _ in range(drippers)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(1)
        statuses: dict[str, int] = {}
        latencies = []
        for _ in range(40):
            status, seconds = server.get(timeout=30)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 404:
                latencies.append(seconds)
            time.sleep(0.25)
        stop.set()
    finally:
        server.stop()
    return {
        "drippers": drippers,
        "drippers_cut_off": len(cut),
        "dripper_seconds_until_cut_p50": round(sorted(cut)[len(cut) // 2], 2) if cut else None,
        "legitimate_statuses": statuses,
        "legitimate_latency": latency_summary(latencies) if latencies else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--drippers", type=int, default=40)
    parser.add_argument("--label", default=None)
    args = parser.parse_args()
    offline_env()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = build_store(root)
        result = {
            "label": args.label or git_revision(),
            "machine": machine(),
            "exhaustion": exhaustion(store, root, args.hold),
            "slow_heads": slow_heads(store, root, args.drippers),
        }
    emit(result)
    save_result("http_guards", result)


if __name__ == "__main__":
    main()
