"""Folders that fight the index run: a file swapped for a link out of the roots while it runs, names that are not
UTF-8, trees deeper than Python's recursion limit, files and documents too large to hold in memory.

Each is a skip with one warning line (or a document), never a failed run and never text from outside the roots.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

import granrag_mcp.indexing.pipeline as indexer
import granrag_mcp.indexing.safe_read as safe_read
from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import discover, read_file
from granrag_mcp.settings import LimitSettings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.reliability.support import fake_settings, run_cli
from tests.reliability.test_hostile_files import TEXT, corpus, stored
from tests.server.test_app import call, run
from tests.server.tools.test_write import server_for

SECRET = "The vault code is 4417 and the safe sits behind the painting. " * 20
RACE_SECONDS = 30.0  # the unchecked read leaked within a few trials each time it was run; the check must hold as long


def secret_beside(library: dict[str, Any]) -> Path:
    return library["tmp"] / "secret" / "plans.md"


def leaked(store: Path) -> list[str]:
    texts, _ = stored(store)
    return [doc for doc, text in texts.items() if "vault code" in text]


def test_a_file_swapped_for_a_link_out_of_the_roots_after_the_check_is_not_read(library, monkeypatch) -> None:
    race = corpus(library["root"] / "race", ["aa.md", "zz.md"])
    outside = secret_beside(library)

    def discover_then_swap(paths, *args):
        found = discover(paths, *args)
        (race / "zz.md").unlink()
        os.symlink(outside, race / "zz.md")  # after the server checked the paths, before the run reads them
        return found

    monkeypatch.setattr(indexer, "discover", discover_then_swap)

    async def scenario(client: Client) -> dict[str, Any]:
        return await call(client, "index_paths", {"paths": [str(race)]})

    result = run(server_for(library), scenario)
    assert not leaked(library["settings"].store)
    assert "zz.md" not in result["doc_ids"] and "aa.md" in result["doc_ids"]
    assert [f["reason"] for f in result["failed"]] == [f"leads to {outside.resolve()}, outside the allowed roots"]


def test_a_folder_swapped_for_a_link_is_caught_on_the_open_descriptor(tmp_path: Path, monkeypatch) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    (elsewhere / "sub" / "zz.md").write_text(SECRET, encoding="utf-8")
    root.mkdir()
    os.symlink(elsewhere / "sub", root / "sub")
    # The resolve said "inside" (as it would have a moment before the folder was swapped); the descriptor knows.
    monkeypatch.setattr(safe_read.os.path, "realpath", lambda path: str(path))
    with pytest.raises(ExtractionError) as refused:
        read_file(root / "sub" / "zz.md", [root])
    assert f"swapped for a link to {elsewhere / 'sub' / 'zz.md'}" in refused.value.reason


def test_a_file_flipping_between_text_and_a_link_out_of_the_roots_never_leaks(library) -> None:
    """The race as another process would run it, through the tool, for as long as it took to leak before."""
    race = corpus(library["root"] / "race", ["aa.md", "mm.md"])
    outside, target = secret_beside(library), race / "zz.md"
    target.write_text("zz starts as plain text about tides. " * 20, encoding="utf-8")
    stop = threading.Event()

    def flip() -> None:
        flips = 0
        while not stop.is_set():
            flips += 1
            staged = race / f".staged-{flips}"
            if flips % 2:
                os.symlink(outside, staged)
            else:
                staged.write_text(f"zz version {flips} about tides and harbours. " * 20, encoding="utf-8")
            os.replace(staged, target)
            time.sleep(0.0005)

    async def scenario(client: Client) -> dict[str, int]:
        counts = {"trials": 0, "leaks": 0}
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline and not counts["leaks"]:
            counts["trials"] += 1
            await client.call_tool("index_paths", {"paths": [str(race)]})  # refused when the check sees the link
            counts["leaks"] += bool(leaked(library["settings"].store))
        return counts

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        counts = run(server_for(library), scenario)
    finally:
        stop.set()
        flipper.join()
    assert counts["trials"] > 20 and counts["leaks"] == 0, counts


def make_bad_name(folder: Path) -> Path:
    """A file whose name is not UTF-8, among good ones; created through bytes, as a foreign disk would hold it."""
    corpus(folder, ["good-a.md", "good-b.md"])
    raw = os.fsencode(folder) + b"/bad-\xff\xfe.md"
    with open(raw, "wb") as handle:
        handle.write(f"The odd name file talks about lanterns. {TEXT}".encode())
    return folder


def test_a_name_that_is_not_utf8_is_a_document_with_a_valid_stable_id_through_the_cli(tmp_path: Path) -> None:
    docs = make_bad_name(tmp_path / "docs")
    settings = fake_settings(tmp_path / "store")
    store = ("--store", str(settings.store))
    first = run_cli(settings, "index", str(docs), *store, "--quiet")
    assert first.code == 0, first.stderr
    texts, _ = stored(settings.store)
    assert sorted(texts) == ["bad-\\xff\\xfe.md", "good-a.md", "good-b.md"]
    again = run_cli(settings, "index", str(docs), *store, "--quiet")
    assert again.code == 0 and "3 unchanged" in again.stdout, again.stdout  # the same id on the next run
    found = run_cli(settings, "search", "lanterns odd name", *store, "-k", "3", "--json")
    assert found.code == 0 and "bad-\\\\xff\\\\xfe.md" in found.stdout, found.stdout


def test_a_name_that_is_not_utf8_is_a_document_through_the_tool(library) -> None:
    docs = make_bad_name(library["root"] / "odd")

    async def scenario(client: Client) -> dict[str, Any]:
        indexed = await call(client, "index_paths", {"paths": [str(docs)]})
        hits = await call(client, "search_narrow", {"query": "lanterns odd name", "k": 3, "doc_prefix": "bad-"})
        return {"indexed": indexed, "hits": hits}

    out = run(server_for(library), scenario)
    assert out["indexed"]["outcome"] == "committed" and out["indexed"]["added"] == 3
    assert "bad-\\xff\\xfe.md" in out["indexed"]["doc_ids"]
    assert {h["doc_id"] for h in out["hits"]["hits"]} == {"bad-\\xff\\xfe.md"}


def deep_tree(top: Path, levels: int) -> Path:
    """`levels` nested folders, with a file at the top and one at the bottom; made by relative steps, since the
    whole path grows past what one call may name."""
    top.mkdir(parents=True)
    (top / "top.md").write_text(f"The top file. {TEXT}", encoding="utf-8")
    descriptor = os.open(top, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=descriptor)
            inner = os.open("d", os.O_RDONLY, dir_fd=descriptor)
            os.close(descriptor)
            descriptor = inner
        bottom = os.open("bottom.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=descriptor)
        os.write(bottom, f"The bottom file. {TEXT}".encode())
        os.close(bottom)
    finally:
        os.close(descriptor)
    return top


def remove_deep_tree(top: Path, levels: int) -> None:
    """Remove a tree made by `deep_tree` from the bottom up by relative steps: pytest's clean-up of its temporary
    folders recurses once per level and would fail on it."""
    descriptor = os.open(top, os.O_RDONLY)
    for _ in range(levels):
        inner = os.open("d", os.O_RDONLY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = inner
    os.unlink("bottom.md", dir_fd=descriptor)
    for _ in range(levels):
        parent = os.open("..", os.O_RDONLY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = parent
        os.rmdir("d", dir_fd=descriptor)
    os.close(descriptor)


@pytest.fixture
def deep_trees() -> Iterator[Callable[[Path, int], Path]]:
    """`deep_tree`, with every tree it made removed after the test."""
    made: list[tuple[Path, int]] = []

    def make(top: Path, levels: int) -> Path:
        made.append((top, levels))
        return deep_tree(top, levels)

    yield make
    for top, levels in made:
        remove_deep_tree(top, levels)


def test_a_tree_1100_levels_deep_is_walked_to_the_depth_limit_with_one_warning(
    tmp_path: Path, caplog, deep_trees
) -> None:
    top = deep_trees(tmp_path / "deep", 1100)
    settings = fake_settings(tmp_path / "store")
    with caplog.at_level(logging.WARNING):
        summary = fake_index([top], settings, FakeEmbedder())
    assert summary.committed and summary.added == 1
    assert sorted(stored(settings.store)[0]) == ["top.md"]
    warnings = [r.getMessage() for r in caplog.records if "GRANRAG_MAX_DEPTH" in r.getMessage()]
    assert len(warnings) == 1 and "(100)" in warnings[0]
    # With the limit above the tree, the walk reaches the bottom without a RecursionError.
    deeper = discover([top], limits=LimitSettings(max_depth=2000))
    assert [f.doc_id.count("/") for f in deeper.files] == [1100, 0]


def test_a_deep_tree_through_the_cli_is_one_warning_not_a_traceback(tmp_path: Path, deep_trees) -> None:
    top = deep_trees(tmp_path / "deep", 1100)
    result = run_cli(fake_settings(tmp_path / "store"), "index", str(top), "--store", str(tmp_path / "store"))
    assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
    assert [line for line in result.stderr.splitlines() if "GRANRAG_MAX_DEPTH" in line]


def test_the_file_count_limit_skips_the_rest_with_one_warning(tmp_path: Path, caplog) -> None:
    docs = corpus(tmp_path / "docs", [f"n{number:02d}.md" for number in range(12)])
    with caplog.at_level(logging.WARNING):
        found = discover([docs], limits=LimitSettings(max_files=5))
    assert [f.doc_id for f in found.files] == [f"n{number:02d}.md" for number in range(5)]
    assert len([r for r in caplog.records if "GRANRAG_MAX_FILES" in r.getMessage()]) == 1


def test_a_file_over_the_size_cap_is_skipped_unread_with_the_setting_named(tmp_path: Path, caplog) -> None:
    docs = corpus(tmp_path / "docs", ["small.md"])
    (docs / "huge.txt").write_text("Forty bytes of a file far too large. " * 1000, encoding="utf-8")
    settings = fake_settings(tmp_path / "store").model_copy(update={"max_file_bytes": 10_000})
    with caplog.at_level(logging.WARNING):
        summary = fake_index([docs], settings, FakeEmbedder())
    assert summary.committed and summary.added == 1
    [(path, reason)] = summary.failed
    assert path.endswith("huge.txt") and "over GRANRAG_MAX_FILE_BYTES (10,000)" in reason
    assert len([r for r in caplog.records if "GRANRAG_MAX_FILE_BYTES" in r.getMessage()]) == 1


def test_a_document_over_the_sentence_cap_is_skipped_before_it_is_chunked(tmp_path: Path) -> None:
    docs = corpus(tmp_path / "docs", ["small.md"])
    (docs / "tiny.txt").write_text("Go. " * 5000, encoding="utf-8")
    settings = fake_settings(tmp_path / "store").model_copy(update={"max_sentences": 1000})
    summary = fake_index([docs], settings, FakeEmbedder())
    assert summary.committed and summary.added == 1
    [(path, reason)] = summary.failed
    assert path.endswith("tiny.txt") and reason.startswith("5,000 sentences, over GRANRAG_MAX_SENTENCES (1,000)")
