"""A first run into an empty store commits in steps: each a loadable generation of the documents read so far, the
last one the generation a run in one piece commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from granrag_mcp.progress import Progress
from granrag_mcp.store.adaptation import ADAPTATION_FILE
from granrag_mcp.store.content import content_checksums, differences
from granrag_mcp.store.graph import has_graph
from granrag_mcp.store.store import Snapshot, generation_name
from tests.fakes import FakeTokenEmbedder
from tests.helpers import TOPICS, index, write_corpus
from tests.indexing.test_groups import MORE, assert_same, stored


def fitted(value: Any) -> Any:
    """An adaptation file without how long it took."""
    if isinstance(value, dict):
        return {k: fitted(v) for k, v in value.items() if not k.endswith("seconds")}
    return value


OPTIONS = {"graph": True, "token_vector_dims": 16}


class Steps(Progress):
    """Each step's generation and what it held, read while the run goes on."""

    def __init__(self, store: Path) -> None:
        super().__init__(enabled=False)
        self.store = store
        self.seen: list[tuple[int, int, int, bool, bool]] = []

    def step_committed(self, generation: int, documents: int, total: int) -> None:
        super().step_committed(generation, documents, total)
        snapshot = Snapshot.open(self.store)  # verifies every file of the step against its manifest
        try:
            held = snapshot.catalog.count_documents()
            graph, adapted = has_graph(snapshot.folder), (snapshot.folder / ADAPTATION_FILE).exists()
            self.seen.append((snapshot.generation, documents, held, graph, adapted))
        finally:
            snapshot.close()


def test_a_first_run_commits_in_steps_and_ends_with_the_one_piece_generation(tmp_path) -> None:
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    whole = index(docs, tmp_path / "whole", FakeTokenEmbedder(), index_step_documents=0, **OPTIONS)
    steps = Steps(tmp_path / "stepped")
    stepped = index(docs, tmp_path / "stepped", FakeTokenEmbedder(), index_step_documents=4, progress=steps, **OPTIONS)
    # 16 documents, 4 a step: the first a quarter of the bound, each next as large as what is committed, so steps
    # of 1, 2, 4 and 8 documents, each searchable without the graph and the adaptation, then the whole run.
    assert steps.seen == [(n + 1, held, held, False, False) for n, held in enumerate([1, 2, 4, 8])]
    assert (whole.generation, stepped.generation) == (1, 5)
    assert (stepped.added, stepped.new_chunks) == (whole.added, whole.new_chunks)
    assert_same(stored(tmp_path / "whole"), stored(tmp_path / "stepped"))
    final = [Snapshot.open(tmp_path / name) for name in ("whole", "stepped")]
    try:
        assert all(has_graph(s.folder) for s in final)
        a, b = (fitted(json.loads((s.folder / ADAPTATION_FILE).read_text())) for s in final)
        assert a == b
    finally:
        for snapshot in final:
            snapshot.close()


def test_a_stepped_first_run_ends_with_the_content_of_a_run_in_one_piece(tmp_path) -> None:
    """Equal as the store's content checksums: chunks, vectors, BM25, token vectors, graph and adapted weights, every
    file but the manifest's generation number and times, and the timings in the adaptation's record."""
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    index(docs, tmp_path / "whole", FakeTokenEmbedder(), index_step_documents=0, **OPTIONS)
    steps = Steps(tmp_path / "stepped")
    index(docs, tmp_path / "stepped", FakeTokenEmbedder(), index_step_documents=2, progress=steps, **OPTIONS)
    assert len(steps.seen) == 4  # steps of 1, 2, 4 and 8 documents, then the whole run
    whole, stepped = (Snapshot.open(tmp_path / name) for name in ("whole", "stepped"))
    try:
        assert (whole.generation, stepped.generation) == (1, 5)
        checksums = content_checksums(whole.folder)
        assert {"graph.npz", "adaptation.json", "catalog.sqlite", "narrow.faiss"} <= checksums.keys()
        assert differences(whole.folder, stepped.folder) == []
        # and a step short of the end is not the same content
        assert "catalog.sqlite" in differences(whole.folder, stepped.folder.parent / generation_name(4))
    finally:
        whole.close()
        stepped.close()


def test_a_run_under_the_bound_and_a_later_run_commit_one_generation(tmp_path) -> None:
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    steps = Steps(tmp_path / "store")
    first = index(docs, tmp_path / "store", FakeTokenEmbedder(), index_step_documents=16, progress=steps, **OPTIONS)
    assert (first.generation, steps.seen) == (1, [])  # the bound reached with the last document: no step
    for n in range(12, 30):
        (docs / f"more/m{n}.txt").parent.mkdir(exist_ok=True)
        (docs / f"more/m{n}.txt").write_text(f"Memo {n} moves pallet {n * 3} to bay {n % 5}.", encoding="utf-8")
    later = index(docs, tmp_path / "store", FakeTokenEmbedder(), index_step_documents=2, progress=steps, **OPTIONS)
    assert (later.added, later.generation, steps.seen) == (18, 2, [])  # a store that serves keeps one per run


def test_the_step_bound_in_tokens(tmp_path) -> None:
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})
    steps = Steps(tmp_path / "store")
    index(docs, tmp_path / "store", FakeTokenEmbedder(), index_step_tokens=200, progress=steps, **OPTIONS)
    assert len(steps.seen) >= 2
    seen = list(steps.seen)
    index(docs, tmp_path / "one", FakeTokenEmbedder(), index_step_documents=0, index_step_tokens=200, progress=steps)
    assert steps.seen == seen  # no documents bound: one generation, whatever the token bound
    assert [held for _, _, held, _, _ in steps.seen] == sorted({held for _, _, held, _, _ in steps.seen})
