"""The per-document stages a parallel engine runs, and the pipeline's use of their results, without Ray: an
in-process stand-in runs the stages in scrambled order and small batches, as workers would."""

import random
from pathlib import Path

import pytest

from benchmarks.compare import compare_stores
from granrag_mcp.indexing.parallel import PreparedDocument, embed_documents, prepare_document
from granrag_mcp.store.graph import ConceptGraph
from granrag_mcp.store.store import Snapshot, read_current
from granrag_mcp.tokens import get_tokenizer
from tests.fakes import FakeEmbedder
from tests.helpers import SMALL_CHUNKS, index, write_corpus


class ScrambledStages:
    """Runs the stages in a shuffled order, `per_batch` documents to an embedding call, like a pool of workers."""

    def __init__(self, mode="mean", per_batch=2, fail=False, chunking=SMALL_CHUNKS):
        self.mode, self.per_batch, self.fail, self.chunking = mode, per_batch, fail, chunking
        self.runs = 0

    def run(self, changed, progress):
        self.runs += 1
        if self.fail:
            raise RuntimeError("a worker node was lost for good")
        order = list(range(len(changed)))
        random.Random(7).shuffle(order)
        results: dict[int, PreparedDocument] = {}
        embedder = FakeEmbedder()
        for start in range(0, len(order), self.per_batch):
            batch = order[start : start + self.per_batch]
            prepared = [prepare_document(changed[i][0], get_tokenizer(), self.chunking) for i in batch]
            embed_documents([changed[i][0] for i in batch], prepared, embedder, self.mode, self.chunking)
            results.update(zip(batch, prepared, strict=True))
        return [results[i] for i in range(len(changed))]


def concepts_in(store: Path) -> int:
    snapshot = Snapshot.open(store)
    try:
        return len(ConceptGraph.read(snapshot.folder) or [])
    finally:
        snapshot.close()


def more_documents(folder: Path) -> Path:
    write_corpus(folder)
    for n in range(5):
        (folder / f"extra-{n}.txt").write_text(
            " ".join(f"Sentence {k} of extra document {n} talks about topic {k * n}." for k in range(12)),
            encoding="utf-8",
        )
    return folder


# Semantic mids from small chunks: a broad chunk holds several sentences, so there are gaps to compare.
SEMANTIC_CHUNKS = SMALL_CHUNKS.model_copy(update={"chunker": "semantic", "semantic_min_tokens": 8})


@pytest.mark.parametrize(
    ("mode", "chunking"),
    [("mean", SMALL_CHUNKS), ("truncate", SMALL_CHUNKS), ("windows", SMALL_CHUNKS), ("mean", SEMANTIC_CHUNKS)],
)
def test_parallel_stages_build_the_same_store_as_the_local_engine(tmp_path, mode, chunking):
    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "local", vector_mode=mode, chunking=chunking)
    stages = ScrambledStages(mode, chunking=chunking)
    summary = index(docs, tmp_path / "parallel", vector_mode=mode, parallel=stages, chunking=chunking)
    assert stages.runs == 1 and summary.added == 8 and summary.committed
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks, comparison.differences
    assert comparison.min_cosine >= 0.99999
    # The concept graph too, its new concepts' names embedded by this process (the workers' model is gone).
    assert concepts_in(tmp_path / "parallel") > 0
    assert comparison.same_concepts, comparison.differences
    assert comparison.concept_min_cosine >= 0.99999


def test_semantic_documents_are_cut_on_the_workers_where_the_topic_changes(tmp_path):
    from granrag_mcp.indexing.chunking import chunk_document

    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "parallel", parallel=ScrambledStages(chunking=SEMANTIC_CHUNKS), chunking=SEMANTIC_CHUNKS)
    snapshot = Snapshot.open(tmp_path / "parallel")
    try:
        text = snapshot.catalog.document_text("extra-2.txt")
        mids = [(c.start, c.end) for c in snapshot.catalog.chunks_of_level("mid") if c.doc_id == "extra-2.txt"]
    finally:
        snapshot.close()
    fixed = [(s.start, s.end) for s in chunk_document(text, get_tokenizer(), SMALL_CHUNKS) if s.level == "mid"]
    assert mids and mids != fixed  # cut by meaning, not in the fixed windows a worker without vectors would make


@pytest.mark.parametrize("chunking", [SMALL_CHUNKS, SEMANTIC_CHUNKS], ids=["fixed", "semantic"])
def test_incremental_prune_and_rebuild_match_the_local_engine(tmp_path, chunking):
    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "local", chunking=chunking)
    index(docs, tmp_path / "parallel", parallel=ScrambledStages(chunking=chunking), chunking=chunking)
    (docs / "cooking.txt").write_text("Boil the pasta in salted water. Drain it and add the sauce.", encoding="utf-8")
    (docs / "extra-3.txt").unlink()
    (docs / "new.md").write_text("A new document about glaciers. Ice moves slowly downhill.", encoding="utf-8")
    for store, parallel in ((tmp_path / "local", None), (tmp_path / "parallel", ScrambledStages(chunking=chunking))):
        summary = index(docs, store, prune=True, parallel=parallel, chunking=chunking)
        assert (summary.added, summary.updated, summary.removed, summary.unchanged) == (1, 1, 1, 6)
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks, comparison.differences
    assert comparison.min_cosine >= 0.99999

    stages = ScrambledStages(chunking=chunking)
    unchanged = index(docs, tmp_path / "parallel", parallel=stages, chunking=chunking)
    assert stages.runs == 0 and not unchanged.committed  # nothing changed: no work sent out

    for store, parallel in ((tmp_path / "local", None), (tmp_path / "parallel", ScrambledStages(chunking=chunking))):
        assert index(docs, store, rebuild=True, parallel=parallel, chunking=chunking).added == 8
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks and comparison.min_cosine >= 0.99999
    assert comparison.same_concepts and comparison.concept_min_cosine >= 0.99999


def test_documents_that_fail_on_a_worker_are_reported_like_local_failures(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    (docs / "empty.txt").write_text("   \n", encoding="utf-8")
    (docs / "binary.txt").write_bytes(b"\x00\x01\x02" * 100)
    local = index(docs, tmp_path / "local")
    parallel = index(docs, tmp_path / "parallel", parallel=ScrambledStages())
    assert sorted(parallel.failed) == sorted(local.failed) and len(parallel.failed) == 2
    assert parallel.added == local.added == 3


def test_a_failed_parallel_run_leaves_the_current_generation(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    index(docs, tmp_path / "store")
    before = read_current(tmp_path / "store")
    (docs / "cooking.txt").write_text("Changed text about soup.", encoding="utf-8")
    with pytest.raises(RuntimeError):
        index(docs, tmp_path / "store", parallel=ScrambledStages(fail=True))
    assert read_current(tmp_path / "store") == before
    snapshot = Snapshot.open(tmp_path / "store")
    try:
        assert "sourdough" in snapshot.catalog.document_text("cooking.txt")
    finally:
        snapshot.close()


def test_a_prepared_failure_raises_the_extraction_error(tmp_path):
    from granrag_mcp.errors import ExtractionError
    from granrag_mcp.indexing.discovery import SourceFile

    source = SourceFile(tmp_path / "gone.txt", "gone.txt", ".txt")
    prepared = prepare_document(source, get_tokenizer(), SMALL_CHUNKS)
    assert prepared.extracted is None and prepared.failure
    with pytest.raises(ExtractionError, match=r"gone\.txt"):
        prepared.result(source)


def test_parallel_stages_in_slices_of_a_few_files_build_the_same_store(tmp_path):
    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "local", chunking=SEMANTIC_CHUNKS)
    stages = ScrambledStages(chunking=SEMANTIC_CHUNKS)
    # 100 characters a group: a parallel call takes files of about 800 bytes, a few at a time.
    summary = index(docs, tmp_path / "parallel", parallel=stages, chunking=SEMANTIC_CHUNKS, index_group_chars=100)
    assert stages.runs > 2 and summary.added == 8 and summary.committed
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks and comparison.same_concepts, comparison.differences
    assert comparison.min_cosine >= 0.99999
