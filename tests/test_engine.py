import threading
from pathlib import Path

import faiss

from granrag_mcp.engine import Engine
from granrag_mcp.settings import Settings
from tests import graph_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index


def test_a_view_taken_on_another_thread_searches_with_the_settings_faiss_threads(tmp_path: Path) -> None:
    settings = Settings(store=tmp_path / "store", model="fake-hash-embedder", broad_tokens=256, mid_tokens=64)
    embedder = FakeEmbedder(dimension=64)
    fake_index([graph_corpus.write(tmp_path / "corpus")], settings, embedder)
    engine = Engine(settings, embedder=embedder)
    seen: list[int] = []

    def tool_call() -> None:
        faiss.omp_set_num_threads(settings.threads + 3)  # what a fresh worker thread may start with
        engine.view()
        seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=tool_call)
    worker.start()
    worker.join()
    assert seen == [settings.threads]
