"""The library flags: `serve --library DIR...` and `index DIR... --watch`, which keep the store in step with
folders (indexing/sync.py)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from granrag_mcp.errors import InvalidInputError


def add_watch_flag(index: argparse.ArgumentParser) -> None:
    index.add_argument(
        "--watch",
        action="store_true",
        help="then keep the store in step with the PATH folders until stopped (Ctrl-C): added, changed, renamed "
        "and deleted files are indexed or removed, as --prune (env GRANRAG_LIBRARY_SETTLE: the quiet seconds first)",
    )


def add_library_flag(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--library",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="keep the store in step with these folders while serving: what changed since the last run is indexed "
        "at start, then every added, changed, renamed or deleted file (env GRANRAG_LIBRARY, joined by "
        f"{os.pathsep!r}); documents not under them are removed",
    )


def check_library(folders: Sequence[Path]) -> None:
    """Refuse library folders that are not there before serving: the sync's thread could only log it."""
    missing = [str(folder) for folder in folders if not folder.is_dir()]
    if missing:
        raise InvalidInputError(f"library folder not found: {', '.join(missing)}; --library takes existing folders")


def watch_library(args: argparse.Namespace, settings: Any) -> int:
    """`index PATH... --watch`: the library sync without a server, until Ctrl-C or SIGTERM."""
    import signal
    import threading

    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.indexing.sync import LibrarySync, SyncPass

    if args.engine != "local" or args.rebuild or args.json:
        raise InvalidInputError("--watch runs the local engine, without --rebuild or --json: drop those flags")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sync = LibrarySync(
        settings.model_copy(update={"library": tuple(p.expanduser().absolute() for p in args.paths)}),
        lambda: make_embedder(settings),
        stop,
        show_progress=not args.quiet,
    )

    def report(result: SyncPass) -> None:
        if result.outcome != "unchanged" or result.summary is not None:
            print(f"{result.outcome}: {result.message}", flush=True)

    try:
        sync.run(report)
    except KeyboardInterrupt:
        stop.set()
    return 0
