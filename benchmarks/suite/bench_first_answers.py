"""The first answers while a large library indexes: `granrag-mcp serve --library` started over an empty store and a
folder of small notes, through the SDK's stdio client; seconds from the start to `initialize`, to the first
search that returns a hit, and to the store fully in step with the folder (the library resource says no run is
going on and every note is searchable); the steps committed, and search_narrow's latency while the run goes on.

The notes are cut from SQuAD-A's paragraphs, a few sentences each, numbered so that each is its own document
(the text is read at run time and written into a scratch folder, never into the project); pieces that do not read
as English (names cut at an initial) are left out. `--step-documents 0`
serves the library as one generation (the behaviour before steps); `--compare` runs that too, after the stepped
run, over the same folder, and says whether the two final generations hold the same content (store/content.py:
chunks, vectors, BM25, graph and weights, timings aside).

    python benchmarks/suite/bench_first_answers.py --notes 20000
    python benchmarks/suite/bench_first_answers.py --notes 3000 --compare
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import finish, git_revision, latency_summary, load_average, machine, offline_env
from benchmarks.corpora import squad_corpus

SENTENCES_PER_NOTE = 2
QUERY = "Which team won the championship game?"
LIMIT_SECONDS = 3600.0
SEARCHABLE = re.compile(r"generation \d+ committed: (\d+) of (\d+) documents searchable")


def write_notes(folder: Path, count: int, squad: Path) -> int:
    """`count` notes of SENTENCES_PER_NOTE sentences from the SQuAD file's paragraphs, cycled; their characters."""
    documents, _ = squad_corpus.load(squad)
    sentences = [s for text in documents.values() for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 20]
    from granrag_mcp.text.language import detect_language

    pieces = [" ".join(sentences[i : i + SENTENCES_PER_NOTE]) for i in range(0, len(sentences), SENTENCES_PER_NOTE)]
    # A cut at an initial ("George W.") leaves a piece of names that reads as another language, which would move
    # the `auto` model to the multilingual one part way through: the notes are English, as the articles are.
    pieces = [piece for piece in pieces if detect_language(piece) == "en"]
    chars = 0
    for n in range(count):
        shard = folder / f"shard{n // 1000:03d}"
        shard.mkdir(parents=True, exist_ok=True)
        text = f"Note {n}. {pieces[n % len(pieces)]}\n"
        (shard / f"note{n:06d}.md").write_text(text, encoding="utf-8")
        chars += len(text)
    return chars


def serve_once(
    folder: Path, store: Path, count: int, step_documents: int | None, poll: float, first_only: bool = False
) -> dict[str, Any]:
    """One server over an empty store: the seconds to each milestone (with `first_only`, to the first hit; the
    server is then stopped), and what it logged."""
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = dict(os.environ) | {"GRANRAG_LOG_LEVEL": "INFO", "GRANRAG_LIBRARY_SETTLE": "0.5"}
    if step_documents is not None:
        env["GRANRAG_INDEX_STEP_DOCUMENTS"] = str(step_documents)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "granrag_mcp.cli", "serve", "--store", str(store), "--library", str(folder)],
        env=env,
    )
    errlog_path = store.parent / f"{store.name}.stderr"
    out: dict[str, Any] = {"step_documents": step_documents}

    async def run() -> None:
        start = time.perf_counter()
        during: list[float] = []
        with open(errlog_path, "w") as errlog, anyio.fail_after(LIMIT_SECONDS):
            async with Client(stdio_client(server, errlog=errlog)) as client:
                out["initialize_s"] = round(time.perf_counter() - start, 2)
                while "first_hit_s" not in out:
                    began = time.perf_counter()
                    result = await client.call_tool("search_narrow", {"query": QUERY, "k": 5})
                    if not result.is_error and result.structured_content["hits"]:  # type: ignore[index]
                        out["first_hit_s"] = round(time.perf_counter() - start, 2)
                        out["first_hit_call_ms"] = round((time.perf_counter() - began) * 1000, 1)
                        status = await library(client)
                        out["documents_at_first_hit"] = status.get("documents")
                    else:
                        await anyio.sleep(poll)
                while not first_only:
                    status = await library(client)
                    if "indexing" not in status and status.get("documents") == count and "last_run" in status:
                        break
                    began = time.perf_counter()
                    await client.call_tool("search_narrow", {"query": QUERY, "k": 5})
                    during.append(time.perf_counter() - began)
                    await anyio.sleep(poll)
                if not first_only:
                    out["in_step_s"] = round(time.perf_counter() - start, 2)
                    out["last_run"] = status["last_run"]["message"]
        if during:
            out["search_narrow_while_indexing"] = latency_summary(during)

    async def library(client: Any) -> dict[str, Any]:
        read = await client.read_resource("granrag://library")
        return json.loads(read.contents[0].text)

    anyio.run(run)
    log = errlog_path.read_text(encoding="utf-8", errors="replace")
    out["steps"] = [int(m.group(1)) for m in SEARCHABLE.finditer(log)]
    return out


def compared(stepped: Path, whole: Path) -> dict[str, Any]:
    """Whether the stepped run's final generation holds what the one-generation run's does (store/content.py: every
    file by its content, timings and generation numbers aside), and the files that differ."""
    from granrag_mcp.store.content import differences
    from granrag_mcp.store.store import Snapshot

    snapshots = [Snapshot.open(store) for store in (stepped, whole)]
    try:
        differ = differences(snapshots[0].folder, snapshots[1].folder)
        generations = [snapshot.generation for snapshot in snapshots]
    finally:
        for snapshot in snapshots:
            snapshot.close()
    return {"equal": not differ, "differ": differ, "generations": generations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20000, help="small notes in the library folder")
    parser.add_argument(
        "--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD, help="where the notes' text comes from"
    )
    parser.add_argument(
        "--step-documents", type=int, default=None, help="GRANRAG_INDEX_STEP_DOCUMENTS (default: the setting's)"
    )
    parser.add_argument("--compare", action="store_true", help="also serve the same folder as one generation")
    parser.add_argument(
        "--first-only", action="store_true", help="stop at the first hit (a large library's first answer alone)"
    )
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between the client's searches")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    offline_env()
    data: dict[str, Any] = {"revision": git_revision(), "machine": machine(), "notes": args.notes}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "library"
        data["note_chars"] = write_notes(folder, args.notes, args.squad)
        data["stepped"] = serve_once(
            folder, Path(tmp) / "stepped", args.notes, args.step_documents, args.poll, args.first_only
        )
        if args.compare:
            data["one_generation"] = serve_once(folder, Path(tmp) / "whole", args.notes, 0, args.poll)
            if not args.first_only:
                data["final_generations"] = compared(Path(tmp) / "stepped", Path(tmp) / "whole")
    data["load_average_end"] = load_average()
    finish("first_answers", data, save=not args.no_save)


if __name__ == "__main__":
    main()
