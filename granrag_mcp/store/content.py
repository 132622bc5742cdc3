"""What a generation holds, checksummed apart from when and how long it took to write: two generations with the same
chunks, vectors, BM25 indexes, graph and ranking settings have the same content checksums, whichever run wrote them.

The manifest's own checksums are of the files' bytes, and some bytes say when a file was written (a `.npz` is a zip
archive whose entries carry the time they were added), so two equal generations differ there. Here each file is read
by what it holds: a `.npz` as its arrays, the catalog as its tables' rows, a JSON file without its timings; the
manifest itself (its generation number, its time, the byte checksums) is left out, its counts and next chunk id kept.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from granrag_mcp.store.manifest import MANIFEST_FILE, Manifest

TIMING_SUFFIX = "seconds"
"""A JSON key ending so is a timing ("seconds", "fit_seconds"): not content."""


def content_checksums(folder: Path) -> dict[str, str]:
    """The SHA-256 of what each file of the generation in `folder` holds, by file name, the manifest's counts and
    next chunk id under `manifest.json`."""
    manifest = Manifest.model_validate_json((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    out = {name: _READERS.get(Path(name).suffix, _raw)(folder / name) for name in sorted(manifest.files)}
    out[MANIFEST_FILE] = _digest(json.dumps([manifest.counts, manifest.next_chunk_id], sort_keys=True).encode())
    return out


def differences(one: Path, other: Path) -> list[str]:
    """The files whose content differs between two generation folders (or that only one has), sorted."""
    a, b = content_checksums(one), content_checksums(other)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _raw(path: Path) -> str:
    return _digest(path.read_bytes())


def _arrays(path: Path) -> str:
    digest = hashlib.sha256()
    with np.load(path, allow_pickle=False) as data:
        for name in sorted(data.files):
            array = data[name]
            digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _rows(path: Path) -> str:
    """Every table's rows in the order of all their columns: the same whatever order they were inserted in."""
    digest = hashlib.sha256()
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in sorted(tables):
            columns = [row[1] for row in connection.execute(f'PRAGMA table_info("{table}")')]
            order = ", ".join(f'"{column}"' for column in columns)
            digest.update(f"{table}({order})".encode())
            for row in connection.execute(f'SELECT {order} FROM "{table}" ORDER BY {order}'):
                digest.update(repr(row).encode())
    finally:
        connection.close()
    return digest.hexdigest()


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if not k.endswith(TIMING_SUFFIX)}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _json(path: Path) -> str:
    content = _without_timings(json.loads(path.read_text(encoding="utf-8")))
    return _digest(json.dumps(content, sort_keys=True).encode())


_READERS: dict[str, Callable[[Path], str]] = {".npz": _arrays, ".sqlite": _rows, ".json": _json}
