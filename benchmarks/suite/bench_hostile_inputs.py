"""Peak memory of `granrag-mcp index` (the real model, default limits) on inputs that once drove it to gigabytes:
one 500 MB text file, one 4 MB file of a million tiny sentences, 100,000 small files and a 4.2 MB HTML file of
300,000 unclosed tags.

Every case indexes into one store that already holds a small corpus; after each, `status` and `search` must
still answer and the corpus must still be there (nothing lost, the store servable). Peak RSS is the child's own
high-water mark (its VmHWM, read by the child as it exits: `ru_maxrss` from wait4 can carry this parent's peak
through fork); a watch kills a run that passes `--kill-gib`, so a regression cannot hurt the machine. Usage:

    .venv/bin/python benchmarks/suite/bench_hostile_inputs.py [--cases big_file tiny_sentences many_files html_unclosed]

`--cases at_sentence_cap` adds one document of exactly 100,000 sentences, the most the default limits let in, and
`--cases files_at_cap` 200,000 small files, the most one run takes (`GRANRAG_MAX_FILES`).
Prints one JSON object and writes benchmarks/results/hostile_inputs.json (the cases run replace their figures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

BASE_TEXT = "The lighthouse keeper logged every ship that passed the northern cape. " * 30


def write_big_file(folder: Path, megabytes: int = 500) -> Path:
    folder.mkdir(parents=True)
    line = b"A very large file repeats this line about harbour cranes and tides again and again.\n"
    block = line * (1024 * 1024 // len(line) + 1)
    with open(folder / "big.txt", "wb") as out:
        for _ in range(megabytes):
            out.write(block[: 1024 * 1024])
    return folder


def write_tiny_sentences(folder: Path, count: int = 1_000_000) -> Path:
    folder.mkdir(parents=True)
    (folder / "tiny.txt").write_text("Go. " * count, encoding="utf-8")
    return folder


def write_many_files(folder: Path, count: int = 100_000) -> Path:
    for number in range(count):
        sub = folder / f"part{number // 1000:03d}"
        if number % 1000 == 0:
            sub.mkdir(parents=True)
        (sub / f"note{number:06d}.md").write_text(
            f"Note {number} records that crate {number * 7 % 9973} left dock {number % 40}.\n", encoding="utf-8"
        )
    return folder


def write_sentence_cap(folder: Path, count: int = 100_000) -> Path:
    """One document of exactly the default GRANRAG_MAX_SENTENCES: the largest one document the limits let in."""
    folder.mkdir(parents=True)
    sentences = (f"Note {n} records that crate {n * 7 % 9973} left dock {n % 40}." for n in range(count))
    (folder / "capped.txt").write_text(" ".join(sentences) + "\n", encoding="utf-8")
    return folder


def write_unclosed_html(folder: Path, count: int = 300_000) -> Path:
    """A 4.2 MB HTML file of 300,000 nested tags that are never closed: the tree the parser must hold is deep."""
    folder.mkdir(parents=True)
    (folder / "unclosed.html").write_text("<html><body>" + "<div><span>ab " * count, encoding="utf-8")
    return folder


CASES = {
    "big_file": write_big_file,
    "tiny_sentences": write_tiny_sentences,
    "many_files": write_many_files,
    "html_unclosed": write_unclosed_html,
    "at_sentence_cap": write_sentence_cap,
    "files_at_cap": lambda folder: write_many_files(folder, 200_000),
}

# Runs the CLI and, as it exits, writes its own peak (`_common.memory`'s VmHWM, MiB) to the file named first on its
# command line.
CHILD = (
    "import atexit, sys\n"
    "from pathlib import Path\n"
    f"sys.path.insert(0, {str(_common.ROOT)!r})\n"
    "from benchmarks._common import memory\n"
    "out = Path(sys.argv.pop(1))\n"
    "atexit.register(lambda: out.write_text(str(memory()['peak_mib'])))\n"
    "from granrag_mcp.cli import main\n"
    "sys.exit(main())\n"
)


def cli(hwm_file: Path, *args: str) -> list[str]:
    """The `granrag-mcp` command line, run through CHILD so that it reports its own peak."""
    return [sys.executable, "-c", CHILD, str(hwm_file), *args]


def run_watched(args: list[str], env: dict[str, str], kill_bytes: int, limit_s: float) -> dict[str, Any]:
    """Run the CLI through `cli`; its own peak RSS (VmHWM), and whether the watch had to kill it."""
    hwm_file = Path(args[3])
    hwm_file.unlink(missing_ok=True)
    peak_kb = 0
    began = time.monotonic()
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = ""
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        try:
            rss_kb = int(
                next(
                    line.split()[1]
                    for line in Path(f"/proc/{process.pid}/status").read_text().splitlines()
                    if line.startswith("VmRSS:")
                )
            )
        except (OSError, StopIteration):
            rss_kb = 0
        peak_kb = max(peak_kb, rss_kb)
        if not killed and (rss_kb * 1024 > kill_bytes or time.monotonic() - began > limit_s):
            killed = "memory" if rss_kb * 1024 > kill_bytes else "time"
            process.send_signal(signal.SIGKILL)
        time.sleep(0.2)
    process.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    return {
        "exit_code": process.returncode,
        "killed_by_watch": killed or None,
        "seconds": round(time.monotonic() - began, 1),
        # A killed child writes nothing: the highest VmRSS the watch saw stands in for its peak.
        "peak_rss_mib": float(hwm_file.read_text()) if hwm_file.exists() else round(peak_kb / 1024, 1),
        "ru_maxrss_mib": round(usage.ru_maxrss / 1024, 1),
        "stdout": stdout,
        "warnings": [line for line in stderr.splitlines() if "WARNING" in line or "error" in line][:5],
    }


def servable(command: str, env: dict[str, str], store: Path) -> dict[str, Any]:
    status = subprocess.run([command, "status", "--store", str(store)], env=env, capture_output=True, text=True)
    search = subprocess.run(
        [command, "search", "lighthouse keeper northern cape", "--store", str(store), "-k", "3", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    found = json.loads(search.stdout) if search.returncode == 0 else {}
    hits = found.get("hits", found) if isinstance(found, dict) else found
    return {
        "status_ok": status.returncode == 0,
        "search_ok": search.returncode == 0,
        "base_corpus_found": "base/keeper.md" in search.stdout or "keeper.md" in search.stdout,
        "hits": len(hits) if isinstance(hits, list) else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES)[:4])
    parser.add_argument("--kill-gib", type=float, default=6.0)
    parser.add_argument("--limit-s", type=float, default=1800.0)
    args = parser.parse_args()
    _common.offline_env()
    command = shutil.which("granrag-mcp", path=str(Path(sys.executable).parent)) or "granrag-mcp"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRANRAG_")}
    results: dict[str, Any] = {"machine": _common.machine(), "cases": {}}
    with tempfile.TemporaryDirectory(prefix="granrag-hostile-") as temp:
        root, store = Path(temp), Path(temp) / "store"
        base = root / "base"
        base.mkdir()
        (base / "keeper.md").write_text(BASE_TEXT, encoding="utf-8")
        hwm = root / "child-vmhwm"
        first = run_watched(cli(hwm, "index", str(base), "--store", str(store), "--quiet"), env, 1 << 40, 600)
        results["base"] = {"exit_code": first["exit_code"], "peak_rss_mib": first["peak_rss_mib"]}
        for name in args.cases:
            source = CASES[name](root / name)
            size = _common.dir_size(source)
            load_before = _common.load_average()
            run = run_watched(
                cli(hwm, "index", str(source), "--store", str(store), "--quiet"),
                env,
                int(args.kill_gib * 1024**3),
                args.limit_s,
            )
            run["input_mib"] = round(size / 1024**2, 1)
            run["load_before_after"] = [load_before, _common.load_average()]
            run["after"] = servable(command, env, store)
            results["cases"][name] = run
            shutil.rmtree(source)
            _common.emit({name: run})
    previous = _common.RESULTS / "hostile_inputs.json"
    if previous.exists():  # a run of some cases keeps the figures of the others
        kept = json.loads(previous.read_text(encoding="utf-8")).get("cases", {})
        results["cases"] = {**kept, **results["cases"]}
    _common.save_result("hostile_inputs", results)
    _common.emit(results)


if __name__ == "__main__":
    main()
