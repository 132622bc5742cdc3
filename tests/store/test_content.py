"""Content checksums: the same content gives the same checksums whenever it was written, other content others."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zipfile
from pathlib import Path

from granrag_mcp.store.adaptation import ADAPTATION_FILE
from granrag_mcp.store.content import content_checksums, differences
from granrag_mcp.store.graph import GRAPH_FILE
from granrag_mcp.store.store import Snapshot
from tests.helpers import TOPICS, index, write_corpus
from tests.indexing.test_groups import MORE


def test_checksums_see_content_not_write_times(tmp_path: Path) -> None:
    docs = write_corpus(tmp_path / "docs", {**TOPICS, **MORE})  # enough sentences for the ranking adaptation
    index(docs, tmp_path / "store", graph=True)
    snapshot = Snapshot.open(tmp_path / "store")
    folder = snapshot.folder
    snapshot.close()
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    before = content_checksums(copy)
    assert differences(folder, copy) == []

    # The graph's archive written again with other entry times: other bytes, the same arrays.
    graph = copy / GRAPH_FILE
    with zipfile.ZipFile(folder / GRAPH_FILE) as old, zipfile.ZipFile(graph, "w") as new:
        for entry in old.infolist():
            entry.date_time = (1999, 1, 1, 0, 0, 0)
            new.writestr(entry, old.read(entry.filename))
    assert graph.read_bytes() != (folder / GRAPH_FILE).read_bytes()
    assert content_checksums(copy)[GRAPH_FILE] == before[GRAPH_FILE]

    # A timing in a JSON file is no content; a weight is.
    adaptation = json.loads((copy / ADAPTATION_FILE).read_text())
    adaptation["measured"]["seconds"] = 99.0
    (copy / ADAPTATION_FILE).write_text(json.dumps(adaptation))
    assert content_checksums(copy)[ADAPTATION_FILE] == before[ADAPTATION_FILE]
    adaptation["ranker_dense_scale"] = 0.5
    (copy / ADAPTATION_FILE).write_text(json.dumps(adaptation))
    assert content_checksums(copy)[ADAPTATION_FILE] != before[ADAPTATION_FILE]
    shutil.copy(folder / ADAPTATION_FILE, copy / ADAPTATION_FILE)

    connection = sqlite3.connect(copy / "catalog.sqlite")
    connection.execute("UPDATE chunks SET token_count = token_count + 1 WHERE id = (SELECT MIN(id) FROM chunks)")
    connection.commit()
    connection.close()
    assert content_checksums(copy)["catalog.sqlite"] != before["catalog.sqlite"]
    assert differences(folder, copy) == ["catalog.sqlite"]
