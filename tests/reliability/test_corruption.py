"""A corrupted store: every file type truncated, emptied, bit-flipped or deleted.

The checksums catch the damage before any parser sees the bytes (FAISS, numpy and SQLite are spied on: not one
call happens when verification fails); the error names the file and says how to recover; through the CLI it is
one line and exit code 1; `granrag-mcp recover` brings back the previous generation and the next index run
completes. tests/store/test_store.py has a bit flip in three file types through the Python API; this covers
every file, every kind of damage, and the CLI, recover and the running server.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest
from mcp.client import Client

from granrag_mcp.cli import main as cli_main
from granrag_mcp.engine import Engine
from granrag_mcp.errors import StoreCorruptError
from granrag_mcp.rerankers import EmbeddingReranker
from granrag_mcp.server.app import build_server
from granrag_mcp.store.adaptation import ADAPTATION_FILE
from granrag_mcp.store.graph import GRAPH_FILE, PHRASES_FILE
from granrag_mcp.store.store import CURRENT_FILE, Snapshot, read_current
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.reliability.support import (
    STORE_FILES,
    fake_settings,
    record,
    run_cli,
    write_small_corpus,
)
from tests.server.test_app import run

DAMAGES = ["truncate-half", "truncate-one-byte", "empty", "bit-flip", "same-size-garbage", "missing"]
TALLY: dict[str, int] = {"cases": 0, "detected before parsing": 0, "recovered": 0}


def damage(path: Path, kind: str, rng: random.Random) -> None:
    data = path.read_bytes()
    if kind == "truncate-half":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "truncate-one-byte":
        path.write_bytes(data[:-1])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "bit-flip":
        flipped = bytearray(data)
        position = rng.randrange(len(flipped))
        flipped[position] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(flipped))
    elif kind == "same-size-garbage":
        path.write_bytes(bytes(rng.randrange(256) for _ in range(len(data))))
    elif kind == "missing":
        path.unlink()
    else:
        raise ValueError(kind)


LAZY_FILES = {GRAPH_FILE, PHRASES_FILE, ADAPTATION_FILE}
"""Files of a generation read only when a graph tool or the engine's view first needs them (verified on open like
every file)."""


class ParserSpy:
    """Records every FAISS, numpy and SQLite open of a store file."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str]] = []
        for owner, name in [(faiss, "read_index"), (np, "load"), (sqlite3, "connect")]:
            monkeypatch.setattr(owner, name, self._wrap(name, getattr(owner, name)))

    def _wrap(self, name, original):
        def spy(path, *args, **kwargs):
            self.calls.append((name, str(path)))
            return original(path, *args, **kwargs)

        return spy


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with two generations (the second after a change), built with the fake embedder."""
    root = tmp_path_factory.mktemp("corrupt-template")
    corpus = write_small_corpus(root / "corpus")
    settings = fake_settings(root / "store")
    embedder = FakeEmbedder(dimension=64)
    fake_index([corpus], settings, embedder)
    (corpus / "orchards.md").write_text("The orchard now grows pears and quinces in long rows. " * 20)
    fake_index([corpus], settings, embedder)
    assert read_current(settings.store).generation == "gen-000002"
    return root


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Iterator[Path]:
    shutil.copytree(template, tmp_path / "copy")
    yield tmp_path / "copy" / "store"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    code = cli_main(list(args))
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    return code, captured.out, lines


def one_error_line(lines: list[str]) -> str:
    errors = [line for line in lines if line.startswith("granrag-mcp: error:")]
    assert len(errors) == 1 and len(lines) == 1, lines
    return errors[0]


CASES = [pytest.param(name, kind) for name in STORE_FILES for kind in DAMAGES]


@pytest.mark.parametrize("victim, kind", CASES)
def test_damage_is_caught_before_parsing_and_recovered(
    store: Path, victim: str, kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = fake_settings(store)
    current = store / "gen-000002"
    damage(current / victim, kind, random.Random(f"{victim}-{kind}"))
    TALLY["cases"] += 1

    spy = ParserSpy(monkeypatch)
    with pytest.raises(StoreCorruptError) as info:
        Snapshot.open(store)
    message = str(info.value)
    assert victim in message and "gen-000002" in message
    assert f"granrag-mcp recover --store {store}" in message and "--rebuild" in message
    assert spy.calls == [], f"parsed before verification: {spy.calls}"
    TALLY["detected before parsing"] += 1

    code, out, lines = cli(capsys, "status", "--store", str(store))
    assert code == 1 and out == ""
    assert victim in one_error_line(lines)

    code, out, lines = cli(capsys, "recover", "--store", str(store))
    assert (code, out.strip()) == (0, f"gen-000001 is current again in {store}"), lines
    spy.calls.clear()
    snapshot = Snapshot.open(store)
    parsed_on_open = [name for name in snapshot.manifest.files if name not in LAZY_FILES]
    assert snapshot.generation == 1 and len(spy.calls) == len(parsed_on_open)  # each parsed once, after checks
    snapshot.close()
    code, out, _ = cli(capsys, "status", "--store", str(store))
    assert code == 0 and "generation  1" in out

    # The next index run removes the damaged generation and commits a fresh one.
    summary = fake_index([store.parent / "corpus"], settings, FakeEmbedder(dimension=64))
    assert summary.committed
    assert not (store / "gen-000002" / victim).exists() or Snapshot.open(store).generation == summary.generation
    assert Snapshot.open(store).generation == summary.generation
    TALLY["recovered"] += 1


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"garbage",
        b"gen-000002\n",
        b"gen-000002 " + b"0" * 64 + b"\n",
        b"gen-000009 " + b"0" * 64 + b"\n",
        b"\xff\xfe\x00",
        b"../../etc 00\n",
    ],
)
def test_a_damaged_current_pointer(
    store: Path, content: bytes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (store / CURRENT_FILE).write_bytes(content)
    spy = ParserSpy(monkeypatch)
    code, out, lines = cli(capsys, "status", "--store", str(store))
    assert code == 1 and out == "" and spy.calls == []
    line = one_error_line(lines)
    assert ("CURRENT" in line or "manifest.json" in line) and "recover" in line
    code, out, lines = cli(capsys, "recover", "--store", str(store))
    assert code == 0 and "is current again" in out, lines
    code, out, _ = cli(capsys, "status", "--store", str(store))
    assert code == 0


def test_both_generations_damaged_says_to_rebuild(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damage(store / "gen-000002" / "mid.faiss", "bit-flip", random.Random(1))
    damage(store / "gen-000001" / "narrow.bm25.data.npy", "truncate-half", random.Random(2))
    code, _, lines = cli(capsys, "recover", "--store", str(store))
    assert code == 1
    assert "no intact generation" in one_error_line(lines) and "--rebuild" in lines[0]
    summary = fake_index([store.parent / "corpus"], fake_settings(store), FakeEmbedder(dimension=64), rebuild=True)
    assert summary.committed and Snapshot.open(store).generation == summary.generation


@pytest.mark.parametrize(
    "victim, kind",
    [
        ("broad.faiss", "truncate-half"),
        ("catalog.sqlite", "bit-flip"),
        ("mid.bm25.indices.npy", "empty"),
        ("manifest.json", "truncate-one-byte"),
    ],
)
def test_the_real_cli_prints_one_line_and_exits_1(store: Path, victim: str, kind: str) -> None:
    settings = fake_settings(store)
    damage(store / "gen-000002" / victim, kind, random.Random(0))
    status = run_cli(settings, "status", "--store", str(store), timeout=60)
    assert status.code == 1 and status.stdout == ""
    assert len(status.stderr.strip().splitlines()) == 1 and victim in status.error_lines()[0], status.stderr
    assert "Traceback" not in status.stderr
    recovered = run_cli(settings, "recover", "--store", str(store), timeout=60)
    assert recovered.code == 0 and "gen-000001 is current again" in recovered.stdout, recovered.stderr
    assert run_cli(settings, "status", "--store", str(store), "--json", timeout=60).code == 0


def server_over_fakes(store: Path):
    """Settings, the fake embedder and a server over them, for tests that index while the server runs."""
    settings = fake_settings(store)
    embedder = FakeEmbedder(dimension=64)
    engine = Engine(settings, embedder=embedder, reranker=EmbeddingReranker(embedder))
    return settings, embedder, build_server(settings, engine_factory=lambda _: engine)


def test_the_server_keeps_serving_when_a_damaged_generation_is_published(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new generation that fails its checks is not loaded; the server answers from the one it has."""
    settings, embedder, server = server_over_fakes(store)
    corpus = store.parent / "corpus"

    async def scenario(client: Client) -> list:
        results = [await client.call_tool("search_narrow", {"query": "Zephyr Bridge", "k": 2})]
        (corpus / "bridges.md").write_text("A new bridge of glass spans the bay. " * 40)
        fake_index([corpus], settings, embedder)
        damage(store / "gen-000003" / "narrow.faiss", "bit-flip", random.Random(3))
        spy = ParserSpy(monkeypatch)
        results.append(await client.call_tool("search_narrow", {"query": "Zephyr Bridge", "k": 2}))
        results.append(spy.calls)
        return results

    before, after, calls = run(server, scenario)
    assert not before.is_error and before.structured_content["generation"] == 2
    assert not after.is_error and after.structured_content["generation"] == 2  # the damaged gen-000003 not loaded
    assert not [c for c in calls if "gen-000003" in c[1]], calls


def test_a_generation_without_its_manifest_or_folder_is_not_loaded(store: Path) -> None:
    """A published generation whose manifest, then whole folder, is gone: the server keeps serving generation 2.

    Before the fix in store.py (load_manifest) the missing manifest escaped as a raw FileNotFoundError; now it is a
    StoreCorruptError, which store/live.py logs while it keeps the generation it has."""
    settings, embedder, server = server_over_fakes(store)
    corpus = store.parent / "corpus"

    async def scenario(client: Client) -> list:
        results = [await client.call_tool("list_documents", {})]
        (corpus / "bridges.md").write_text("A new bridge of glass spans the bay. " * 40)
        fake_index([corpus], settings, embedder)
        (store / "gen-000003" / "manifest.json").unlink()
        results.append(await client.call_tool("search_narrow", {"query": "Zephyr Bridge", "k": 2}))
        (store / "gen-000003").rename(store / "gone")
        results.append(await client.call_tool("list_documents", {}))
        return results

    before, *after = run(server, scenario)
    assert before.structured_content["generation"] == 2
    for result in after:
        assert not result.is_error, result.content
        assert result.structured_content["generation"] == 2


@pytest.mark.parametrize("victim", ["narrow.faiss"])
def test_real_cli_search_on_a_damaged_store_then_recover(real_store, tmp_path: Path, victim: str) -> None:
    from tests.reliability.support import copy_store

    settings = real_store.settings.model_copy(
        update={"store": copy_store(real_store.settings.store, tmp_path / "store")}
    )
    current = settings.store / read_current(settings.store).generation
    damage(current / victim, "truncate-half", random.Random(0))
    search = run_cli(settings, "search", "Zephyr Bridge", "--store", str(settings.store), "-k", "2")
    assert search.code == 1 and search.stdout == "" and "Traceback" not in search.stderr
    assert victim in search.error_lines()[0] and "recover" in search.error_lines()[0], search.stderr
    # This store has one generation: recover has nothing to fall back to and says to rebuild, in one line.
    recover = run_cli(settings, "recover", "--store", str(settings.store))
    assert recover.code == 1 and "no intact generation" in recover.error_lines()[0], recover.stderr
    assert "--rebuild" in recover.error_lines()[0] and len(recover.stderr.strip().splitlines()) == 1


def test_figures() -> None:
    record("corrupted-store", TALLY | {"file types": len(STORE_FILES), "damage kinds": len(DAMAGES)})
