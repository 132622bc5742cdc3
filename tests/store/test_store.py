import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from granrag_mcp.errors import IndexBusyError, StoreCorruptError, StoreMismatchError, StoreNotFoundError
from granrag_mcp.store.manifest import FORMAT_VERSION
from granrag_mcp.store.store import CURRENT_FILE, Snapshot, read_current
from granrag_mcp.store.writer import StoreWriter
from tests.fakes import FakeEmbedder
from tests.helpers import SMALL_CHUNKS, index, write_corpus


@pytest.fixture
def store(tmp_path):
    write_corpus(tmp_path / "docs")
    index(tmp_path / "docs", tmp_path / "store")
    return tmp_path / "store"


def test_commit_writes_a_self_describing_manifest(store):
    snapshot = Snapshot.open(store)
    manifest = snapshot.manifest
    assert manifest.format == "granrag-store" and manifest.format_version == 2
    assert manifest.generation == 1
    assert manifest.identity.model == "fake-hash-embedder" and manifest.identity.dimension == 64
    assert manifest.identity.tokenizer == "cl100k_base"
    assert manifest.identity.chunking == SMALL_CHUNKS
    assert manifest.counts["documents"] == 3 and manifest.counts["narrow"] > manifest.counts["mid"] > 0
    on_disk = {p.name for p in snapshot.folder.iterdir()} - {"manifest.json"}
    assert set(manifest.files) == on_disk
    assert all(len(entry.sha256) == 64 for entry in manifest.files.values())


def test_reload_gives_the_same_counts_from_every_index(store):
    snapshot = Snapshot.open(store)
    for level in ("broad", "mid", "narrow"):
        assert len(snapshot.vectors[level]) == snapshot.manifest.counts[level] == len(snapshot.lexical[level])


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(StoreNotFoundError, match="granrag-mcp index"):
        Snapshot.open(tmp_path / "nowhere")


@pytest.mark.parametrize("victim", ["catalog.sqlite", "mid.faiss", "narrow.bm25.data.npy", "mid.bm25.vocabulary.npy"])
def test_a_bit_flip_is_detected_before_parsing_and_names_the_file(store, victim):
    path = store / read_current(store).generation / victim
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match=victim) as info:
        Snapshot.open(store)
    assert "recover" in str(info.value) and "--rebuild" in str(info.value)


def test_a_damaged_manifest_or_pointer_is_detected(store):
    manifest = store / read_current(store).generation / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:-10])
    with pytest.raises(StoreCorruptError, match="manifest.json"):
        Snapshot.open(store)
    (store / CURRENT_FILE).write_text("garbage")
    with pytest.raises(StoreCorruptError, match="CURRENT"):
        Snapshot.open(store)


def test_opening_with_other_settings_names_both_sides_and_how_to_rebuild(store, tmp_path):
    other = SMALL_CHUNKS.model_copy(update={"mid_tokens": 20})
    with pytest.raises(StoreMismatchError) as info:
        index(tmp_path / "docs", store, chunking=other)
    message = str(info.value)
    assert "mid_tokens: store=24, requested=20" in message and "--rebuild" in message
    with pytest.raises(StoreMismatchError, match="model: store='fake-hash-embedder', requested='other'"):
        embedder = FakeEmbedder()
        embedder.name = "other"
        index(tmp_path / "docs", store, embedder=embedder)


def as_format_version(store: Path, version: int) -> None:
    """Relabel the current generation as written in another store format (its manifest and CURRENT agree)."""
    pointer = read_current(store)
    path = store / pointer.generation / "manifest.json"
    manifest = json.loads(path.read_bytes())
    manifest["format_version"] = version
    data = json.dumps(manifest).encode()
    path.write_bytes(data)
    (store / CURRENT_FILE).write_text(f"{pointer.generation} {hashlib.sha256(data).hexdigest()}\n")


def test_a_store_of_the_previous_format_says_in_one_line_to_rebuild(store, tmp_path):
    as_format_version(store, 1)  # the version whose BM25 files were one .npz per level
    with pytest.raises(StoreMismatchError) as info:
        Snapshot.open(store)
    message = str(info.value)
    assert "\n" not in message and "version 1" in message and "version 2" in message
    assert f"granrag-mcp index PATH... --rebuild --store {store}" in message
    with pytest.raises(StoreMismatchError, match="--rebuild"):  # an update run must not build on it either
        index(tmp_path / "docs", store)
    index(tmp_path / "docs", store, rebuild=True)
    assert Snapshot.open(store).manifest.format_version == 2


def test_rebuild_accepts_new_settings(store, tmp_path):
    other = SMALL_CHUNKS.model_copy(update={"mid_tokens": 20})
    summary = index(tmp_path / "docs", store, chunking=other, rebuild=True)
    assert summary.committed and Snapshot.open(store).manifest.identity.chunking.mid_tokens == 20


def test_a_second_writer_fails_fast_naming_the_holder(store):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from granrag_mcp.store.writer import StoreWriter
            with StoreWriter({str(store)!r}, command="index held-by-test"):
                print("locked", flush=True)
                time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexBusyError) as info:
            with StoreWriter(store):
                pass
        assert "index busy" in str(info.value)
        assert f"process {holder.pid}" in str(info.value) and "held-by-test" in str(info.value)
    finally:
        holder.kill()
        holder.wait(10)
    with StoreWriter(store):  # the lock dies with its holder
        pass


def test_leftovers_of_an_interrupted_commit_are_cleaned_by_the_next_writer(store):
    leftover = store / ".tmp-gen-000009-12345"
    leftover.mkdir()
    (leftover / "catalog.sqlite").write_bytes(b"half written")
    (store / ".CURRENT.999.tmp").write_text("x")
    with StoreWriter(store):
        pass
    assert not leftover.exists() and not (store / ".CURRENT.999.tmp").exists()
    assert Snapshot.open(store).generation == 1


def test_only_the_current_and_previous_generations_are_kept(store, tmp_path):
    docs = tmp_path / "docs"
    for round_ in range(3):
        (docs / "cooking.txt").write_text(f"Round {round_}: roast the coffee beans slowly.")
        index(docs, store)
    generations = sorted(p.name for p in store.glob("gen-*"))
    assert generations == ["gen-000003", "gen-000004"]
    assert read_current(store).generation == "gen-000004"


def test_recover_falls_back_to_the_previous_intact_generation(store, tmp_path):
    (tmp_path / "docs" / "cooking.txt").write_text("Something else entirely: pottery glazes.")
    index(tmp_path / "docs", store)
    current = store / read_current(store).generation
    (current / "broad.faiss").write_bytes(b"\0" * 10)
    with pytest.raises(StoreCorruptError):
        Snapshot.open(store)
    with StoreWriter(store) as writer:
        assert writer.rollback() == "gen-000001"
    assert Snapshot.open(store).generation == 1


def test_recover_does_not_fall_back_to_a_generation_of_another_format(store, tmp_path):
    (tmp_path / "docs" / "cooking.txt").write_text("Something else entirely: pottery glazes.")
    index(tmp_path / "docs", store)
    old = store / "gen-000001" / "manifest.json"
    manifest = json.loads(old.read_bytes())
    manifest["format_version"] = FORMAT_VERSION - 1
    old.write_text(json.dumps(manifest))
    (store / read_current(store).generation / "broad.faiss").write_bytes(b"\0" * 10)
    with StoreWriter(store) as writer, pytest.raises(StoreCorruptError, match="no intact generation.*--rebuild"):
        writer.rollback()


def test_a_reader_keeps_its_snapshot_while_a_writer_commits(store, tmp_path):
    before = Snapshot.open(store)
    ids_before = {c.id for c in before.catalog.chunks_of_level("narrow")}
    (tmp_path / "docs" / "astronomy.md").write_text("Completely new text about volcanoes erupting lava.")
    index(tmp_path / "docs", store)
    after = Snapshot.open(store)
    assert after.generation == 2
    assert {c.id for c in before.catalog.chunks_of_level("narrow")} == ids_before
    assert len(before.vectors["narrow"]) == before.manifest.counts["narrow"]
    assert before.catalog.document_text("astronomy.md").startswith("The telescope")


def test_holder_file_is_json_with_pid(store):
    with StoreWriter(store, command="index x"):
        holder = json.loads((store / "writer.holder.json").read_text())
        assert holder["pid"] == os.getpid() and holder["command"] == "index x"
    assert not (store / "writer.holder.json").exists()  # a record never outlives its holder


def test_a_waiting_writer_reads_a_holder_record_written_a_moment_late(store, monkeypatch):
    writer = StoreWriter(store)
    reads = []
    real_read = Path.read_text

    def late_record(path, *args, **kwargs):
        reads.append(path.name)
        if len(reads) < 3:  # the holder has the lock but has not written its record yet
            raise FileNotFoundError(path)
        return json.dumps({"pid": 4242, "host": "box", "command": "index", "since": "now"})

    monkeypatch.setattr(Path, "read_text", late_record)
    assert writer._holder().startswith("process 4242 on box")
    monkeypatch.setattr(Path, "read_text", real_read)
    assert StoreWriter(store)._holder(attempts=2) == "another process"
