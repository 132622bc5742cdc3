import numpy as np
import pytest

from granrag_mcp.errors import InvalidInputError, NoDocumentsError
from granrag_mcp.store.store import Snapshot, read_current
from tests.fakes import FakeEmbedder
from tests.helpers import index, write_corpus


def chunk_ids(store, doc_id):
    snapshot = Snapshot.open(store)
    return {
        c.id
        for level in ("broad", "mid", "narrow")
        for c in snapshot.catalog.chunks_of_level(level)
        if c.doc_id == doc_id
    }


def test_first_run_indexes_every_document_with_exact_offsets(tmp_path):
    write_corpus(tmp_path / "docs")
    summary = index(tmp_path / "docs", tmp_path / "store")
    assert (summary.added, summary.committed, summary.generation) == (3, True, 1)
    snapshot = Snapshot.open(tmp_path / "store")
    assert [d.doc_id for d in snapshot.catalog.documents()] == ["astronomy.md", "cooking.txt", "notes/sailing.md"]
    for level in ("broad", "mid", "narrow"):
        for chunk in snapshot.catalog.chunks_of_level(level):
            assert snapshot.catalog.document_text(chunk.doc_id)[chunk.start : chunk.end] == chunk.text


def test_parents_and_children_link_up(tmp_path):
    write_corpus(tmp_path / "docs")
    index(tmp_path / "docs", tmp_path / "store")
    catalog = Snapshot.open(tmp_path / "store").catalog
    mids = catalog.chunks_of_level("mid")
    broads = {c.id: c for c in catalog.chunks_of_level("broad")}
    for mid in mids:
        parent = broads[mid.parent_id]
        assert parent.doc_id == mid.doc_id and parent.start <= mid.start and mid.end <= parent.end
    children = catalog.children(list(broads))
    assert sorted(i for ids in children.values() for i in ids) == sorted(m.id for m in mids)


def test_rerun_without_changes_embeds_nothing_and_keeps_the_generation(tmp_path):
    write_corpus(tmp_path / "docs")
    index(tmp_path / "docs", tmp_path / "store")
    embedder = FakeEmbedder()
    summary = index(tmp_path / "docs", tmp_path / "store", embedder=embedder)
    assert (summary.unchanged, summary.committed, summary.generation) == (3, False, 1)
    assert embedder.texts_embedded == 0


def test_changed_document_is_reembedded_alone_and_others_keep_their_ids(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    kept_before = chunk_ids(store, "astronomy.md")
    changed_before = chunk_ids(store, "cooking.txt")
    (docs / "cooking.txt").write_text("Brew espresso with finely ground coffee. Steam the milk.")
    embedder = FakeEmbedder()
    summary = index(docs, store, embedder=embedder)
    assert (summary.updated, summary.unchanged, summary.generation) == (1, 2, 2)
    assert 0 < embedder.texts_embedded <= 4  # only the new sentences of the changed document
    assert chunk_ids(store, "astronomy.md") == kept_before
    assert chunk_ids(store, "cooking.txt").isdisjoint(changed_before)
    snapshot = Snapshot.open(store)
    assert snapshot.catalog.document_text("cooking.txt").startswith("Brew espresso")
    assert snapshot.catalog.chunks(sorted(changed_before)) == {}
    assert len(snapshot.vectors["narrow"]) == snapshot.manifest.counts["narrow"]


def test_new_ids_never_reuse_old_ones(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    first_max = Snapshot.open(store).manifest.next_chunk_id
    (docs / "cooking.txt").write_text("Brew espresso.")
    index(docs, store)
    assert min(chunk_ids(store, "cooking.txt")) >= first_max


def test_disappeared_documents_stay_unless_pruned(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    (docs / "cooking.txt").unlink()
    summary = index(docs, store)
    assert summary.removed == 0 and not summary.committed
    summary = index(docs, store, prune=True)
    assert summary.removed == 1 and summary.committed
    snapshot = Snapshot.open(store)
    assert "cooking.txt" not in {d.doc_id for d in snapshot.catalog.documents()}
    assert len(snapshot.vectors["narrow"]) == snapshot.manifest.counts["narrow"]
    assert snapshot.lexical["narrow"].search("sourdough dough oven", 10) == []


def test_rebuild_starts_over_with_new_ids_in_a_new_generation(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    first = index(docs, store)
    first_free = Snapshot.open(store).manifest.next_chunk_id
    summary = index(docs, store, rebuild=True)
    assert summary.added == 3 and summary.generation == first.generation + 1
    snapshot = Snapshot.open(store)
    assert snapshot.manifest.counts["documents"] == 3
    ids = [c.id for level in ("broad", "mid", "narrow") for c in snapshot.catalog.chunks_of_level(level)]
    assert min(ids) >= first_free  # no id of the old generation names a chunk of the new one


def test_empty_input_is_an_error_and_leaves_the_store_untouched(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    pointer = read_current(store)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "image.svg").write_bytes(b"<svg/>")
    with pytest.raises(NoDocumentsError, match="nothing to index.*1 other files skipped"):
        index(empty, store)
    assert read_current(store) == pointer


def test_only_unreadable_documents_is_an_error(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    (bad / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(NoDocumentsError, match="none of the 2 documents"):
        index(bad, tmp_path / "store")
    assert read_current(tmp_path / "store") is None


def test_bad_files_are_skipped_and_counted_without_stopping_the_run(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (docs / "binary.txt").write_bytes(b"\x00\xff\x00" * 50)
    (docs / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    (docs / "drawing.svg").write_bytes(b"<svg/>")
    summary = index(docs, tmp_path / "store")
    assert summary.added == 4
    assert {p.rsplit("/", 1)[-1] for p, _ in summary.failed} == {"broken.pdf", "binary.txt"}
    assert summary.replaced_bytes == []
    assert [(p.rsplit("/", 1)[-1], codec) for p, codec in summary.guessed_encodings] == [("latin1.txt", "cp1252")]
    assert summary.unsupported == 1


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InvalidInputError, match="no such file or folder"):
        index(tmp_path / "missing", tmp_path / "store")


@pytest.mark.parametrize("mode", ["mean", "truncate", "windows"])
def test_every_vector_mode_builds_normalised_vectors(tmp_path, mode):
    docs = write_corpus(tmp_path / "docs")
    index(docs, tmp_path / "store", vector_mode=mode)
    snapshot = Snapshot.open(tmp_path / "store")
    import numpy as np

    for level in ("broad", "mid"):
        ids = np.array([c.id for c in snapshot.catalog.chunks_of_level(level)])
        norms = np.linalg.norm(snapshot.vectors[level].reconstruct(ids), axis=1)
        assert np.allclose(norms, 1.0, atol=1e-4)


def test_large_levels_use_hnsw_and_updates_never_return_stale_ids(tmp_path, monkeypatch):
    import hashlib

    from granrag_mcp.store import vector_index as store_vectors

    monkeypatch.setattr(store_vectors, "ANN_THRESHOLD", 20)  # ~40 sentences: narrow is HNSW, broad stays flat
    monkeypatch.setattr(store_vectors, "TOMBSTONE_LIMIT", 0.5)  # keep the tombstones of one changed document
    docs = write_corpus(tmp_path / "docs")
    store = tmp_path / "store"
    index(docs, store)
    first = Snapshot.open(store)
    assert (first.vectors["narrow"].kind, first.vectors["broad"].kind) == ("hnsw", "flat")
    first.close()
    base_file = store / "gen-000001" / "narrow.faiss"
    digest = hashlib.sha256(base_file.read_bytes()).digest()
    stale = chunk_ids(store, "cooking.txt")

    (docs / "cooking.txt").write_text("Brew espresso with finely ground coffee. Steam the milk.")
    index(docs, store)
    assert hashlib.sha256(base_file.read_bytes()).digest() == digest  # the base generation was only read
    snapshot = Snapshot.open(store)
    narrow = snapshot.vectors["narrow"]
    live = [c.id for c in snapshot.catalog.chunks_of_level("narrow")]
    assert narrow.kind == "hnsw" and narrow.tombstones > 0 and len(narrow) == len(live)
    for vector in narrow.reconstruct(np.array(live)):
        found = {chunk_id for chunk_id, _ in narrow.search(vector, 100)}
        assert found == set(live) and not found & stale
    snapshot.close()

    (docs / "cooking.txt").unlink()
    (docs / "notes" / "sailing.md").unlink()
    index(docs, store, prune=True)  # one document left: below 0.9 x 20 sentences, back to exact search
    snapshot = Snapshot.open(store)
    assert snapshot.vectors["narrow"].kind == "flat"
    assert len(snapshot.vectors["narrow"]) == snapshot.manifest.counts["narrow"] < 18
    snapshot.close()


def test_graph_off_skips_the_graph_and_a_later_run_with_it_on_builds_it_without_reembedding(tmp_path):
    from granrag_mcp.store.graph import GRAPH_FILE, PHRASES_FILE
    from tests import graph_corpus

    corpus = graph_corpus.write(tmp_path / "corpus")
    first = index(corpus, tmp_path / "store", graph=False)
    snapshot = Snapshot.open(tmp_path / "store")
    assert first.committed and "graph" not in first.seconds
    assert not {GRAPH_FILE, PHRASES_FILE} & set(snapshot.manifest.files) and snapshot.graph is None
    snapshot.close()

    unchanged = index(corpus, tmp_path / "store", graph=False)  # still off: nothing to do
    assert (unchanged.committed, unchanged.generation) == (False, first.generation)

    embedder = FakeEmbedder()
    second = index(corpus, tmp_path / "store", embedder=embedder)  # on: the graph of the documents already held
    assert second.committed and second.generation == first.generation + 1 and second.unchanged == 2
    assert sum(second.new_chunks.values()) == 0
    snapshot = Snapshot.open(tmp_path / "store")
    try:
        assert {GRAPH_FILE, PHRASES_FILE} <= set(snapshot.manifest.files)
        assert "sliding friction" in {str(k) for k in snapshot.graph.keys}
        assert embedder.texts_embedded == len(snapshot.graph)  # the concept names alone
    finally:
        snapshot.close()
