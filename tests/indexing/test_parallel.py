"""The per-document stages a parallel engine runs, and the pipeline's use of their results, without Ray: an
in-process stand-in runs the stages in scrambled order and small batches, as workers would."""

import random
from pathlib import Path

import pytest

from granrag_mcp.indexing.parallel import PreparedDocument, embed_documents, prepare_document
from granrag_mcp.store.compare import compare_stores
from granrag_mcp.store.store import Snapshot, read_current
from granrag_mcp.tokens import get_tokenizer
from tests.fakes import FakeEmbedder
from tests.helpers import SMALL_CHUNKS, index, write_corpus


class ScrambledStages:
    """Runs the stages in a shuffled order, `per_batch` documents to an embedding call, like a pool of workers."""

    def __init__(self, mode="mean", per_batch=2, fail=False):
        self.mode, self.per_batch, self.fail = mode, per_batch, fail
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
            prepared = [prepare_document(changed[i][0], get_tokenizer(), SMALL_CHUNKS) for i in batch]
            embed_documents([changed[i][0] for i in batch], prepared, embedder, self.mode)
            results.update(zip(batch, prepared, strict=True))
        return [results[i] for i in range(len(changed))]


def more_documents(folder: Path) -> Path:
    write_corpus(folder)
    for n in range(5):
        (folder / f"extra-{n}.txt").write_text(
            " ".join(f"Sentence {k} of extra document {n} talks about topic {k * n}." for k in range(12)),
            encoding="utf-8",
        )
    return folder


@pytest.mark.parametrize("mode", ["mean", "truncate", "windows"])
def test_parallel_stages_build_the_same_store_as_the_local_engine(tmp_path, mode):
    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "local", vector_mode=mode)
    stages = ScrambledStages(mode)
    summary = index(docs, tmp_path / "parallel", vector_mode=mode, parallel=stages)
    assert stages.runs == 1 and summary.added == 8 and summary.committed
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks, comparison.differences
    assert comparison.min_cosine >= 0.99999


def test_incremental_prune_and_rebuild_match_the_local_engine(tmp_path):
    docs = more_documents(tmp_path / "docs")
    index(docs, tmp_path / "local")
    index(docs, tmp_path / "parallel", parallel=ScrambledStages())
    (docs / "cooking.txt").write_text("Boil the pasta in salted water. Drain it and add the sauce.", encoding="utf-8")
    (docs / "extra-3.txt").unlink()
    (docs / "new.md").write_text("A new document about glaciers. Ice moves slowly downhill.", encoding="utf-8")
    for store, parallel in ((tmp_path / "local", None), (tmp_path / "parallel", ScrambledStages())):
        summary = index(docs, store, prune=True, parallel=parallel)
        assert (summary.added, summary.updated, summary.removed, summary.unchanged) == (1, 1, 1, 6)
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks, comparison.differences
    assert comparison.min_cosine >= 0.99999

    stages = ScrambledStages()
    unchanged = index(docs, tmp_path / "parallel", parallel=stages)
    assert stages.runs == 0 and not unchanged.committed  # nothing changed: no work sent out

    for store, parallel in ((tmp_path / "local", None), (tmp_path / "parallel", ScrambledStages())):
        assert index(docs, store, rebuild=True, parallel=parallel).added == 8
    comparison = compare_stores(tmp_path / "local", tmp_path / "parallel")
    assert comparison.same_chunks and comparison.min_cosine >= 0.99999


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
