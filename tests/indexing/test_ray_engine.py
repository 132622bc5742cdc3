"""`index --engine ray` against the local engine, on a local two-CPU Ray cluster with the real bundled model."""

import json
import os
import subprocess
import sys
from importlib.util import find_spec

import pytest

from benchmarks.compare import compare_stores
from granrag_mcp.errors import InvalidInputError
from granrag_mcp.settings import Settings
from tests.helpers import write_corpus

RAY_INSTALL = "pip install 'granrag-mcp[ray]'"
needs_ray = pytest.mark.skipif(find_spec("ray") is None, reason=f"needs Ray: {RAY_INSTALL}")

TOPICS = [
    "Glaciers form where snow piles up faster than it melts. The weight of the snow turns the lower layers into "
    "ice. A glacier flows downhill under its own weight. Crevasses open where the ice bends over rock. Meltwater "
    "carves tunnels under the glacier. Moraines mark where the ice once stopped.",
    "Bread dough needs flour, water, salt and yeast. Kneading builds the gluten that traps the gas. The yeast "
    "feeds on sugars and releases carbon dioxide. A slow rise in a cool room deepens the flavour. A hot oven sets "
    "the crust quickly. The loaf should cool before it is sliced.",
    "The orchestra tuned to the oboe's long note. Violins carry the melody in most symphonies. The conductor sets "
    "the tempo with the baton. Brass instruments enter for the loud passages. A quiet cello solo opened the slow "
    "movement. The audience applauded after the final chord.",
    "Compilers turn source code into machine instructions. The parser builds a syntax tree from the tokens. "
    "Type checking rejects programs that mix incompatible values. The optimiser removes code whose results are "
    "never used. Register allocation maps variables onto the processor's registers. The linker joins the object "
    "files into one program.",
    "Honeybees live in colonies ruled by a single queen. Worker bees gather nectar and pollen from flowers. "
    "A waggle dance tells other bees where the flowers are. Nectar is dried in the comb until it becomes honey. "
    "Drones exist only to mate with a queen. In winter the colony clusters to keep warm.",
    "The treaty ended a long war between the two kingdoms. Envoys met for months in a neutral city. Each side "
    "gave up a border province. The agreement was sealed with a royal marriage. Merchants welcomed the reopened "
    "trade routes. Historians still argue about who gained more.",
]
# Each note runs through three topics, so the semantic chunker has changes of topic to find.
DOCS = {f"note-{n}.md": "\n\n".join(TOPICS[(n + k) % len(TOPICS)] for k in range(3)) for n in range(6)}


def test_without_ray_the_engine_says_which_extra_to_install(monkeypatch, tmp_path):
    from granrag_mcp.indexing import ray_engine

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: the import fails
    with pytest.raises(InvalidInputError, match=r"pip install 'granrag-mcp\[ray\]'"):
        ray_engine.RayStages(Settings(store=tmp_path / "store"))


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    gpus = 1 if cuda_present() else 0
    ray.init(num_cpus=2, num_gpus=gpus, include_dashboard=False, log_to_driver=True, logging_level="WARNING")
    try:
        yield ray
    finally:
        ray.shutdown()


SMALL = {"broad_tokens": 256, "broad_overlap": 32, "mid_tokens": 96, "semantic_min_tokens": 24}


def run(paths, store, engine, **options):
    from granrag_mcp.engine import run_index

    # The default chunker (semantic), in chunks small enough that the short notes have several of each level.
    settings = Settings(store=store, device="cpu", **SMALL)
    return run_index(paths, settings, quiet=True, engine=engine, **options)


def assert_same(comparison):
    assert comparison.same_chunks, (comparison.documents_cut_differently, comparison.differences)
    assert comparison.min_cosine >= 0.9999
    assert comparison.same_concepts, comparison.differences
    assert comparison.concept_min_cosine >= 0.9999  # every concept has its name vector, as the local engine's


@needs_ray
def test_ray_builds_the_local_engines_store_and_updates_it_the_same_way(ray_cluster, tmp_path):
    from granrag_mcp.indexing.chunking import chunk_document
    from granrag_mcp.store.store import Snapshot
    from granrag_mcp.tokens import get_tokenizer

    docs = write_corpus(tmp_path / "docs", DOCS, repeat=1)
    stores = {engine: tmp_path / engine for engine in ("local", "ray")}
    for engine, store in stores.items():
        assert run([docs], store, engine).added == len(DOCS)
    assert_same(compare_stores(stores["local"], stores["ray"]))
    snapshot = Snapshot.open(stores["ray"])
    try:
        text = snapshot.catalog.document_text("note-0.md") or ""
        mids = [(c.start, c.end) for c in snapshot.catalog.chunks_of_level("mid") if c.doc_id == "note-0.md"]
    finally:
        snapshot.close()
    fixed_chunking = Settings(store=tmp_path, chunker="fixed", **SMALL).chunking
    fixed = [(s.start, s.end) for s in chunk_document(text, get_tokenizer(), fixed_chunking) if s.level == "mid"]
    assert len(mids) > 1 and mids != fixed  # cut by meaning

    (docs / "note-1.md").write_text("A rewritten note. It now speaks of tides and of the moon.", encoding="utf-8")
    (docs / "note-4.md").unlink()
    (docs / "fresh.txt").write_text("A new note about volcanoes. Lava cools into basalt.", encoding="utf-8")
    for engine, store in stores.items():
        summary = run([docs], store, engine, prune=True)
        assert (summary.added, summary.updated, summary.removed, summary.unchanged) == (1, 1, 1, 4)
    assert_same(compare_stores(stores["local"], stores["ray"]))

    for engine, store in stores.items():
        assert run([docs], store, engine, rebuild=True).added == len(DOCS)
    assert_same(compare_stores(stores["local"], stores["ray"]))


def cuda_present() -> bool:
    import torch

    return torch.cuda.is_available()


@needs_ray
@pytest.mark.skipif(not cuda_present(), reason="needs a CUDA device visible to torch")
def test_ray_on_a_gpu_gives_the_cpu_stores_chunks_and_near_vectors(ray_cluster, tmp_path):
    from granrag_mcp.engine import run_index

    docs = write_corpus(tmp_path / "docs", DOCS, repeat=1)
    settings = Settings(store=tmp_path / "gpu", device="auto", chunker="fixed")
    run_index([docs], settings, quiet=True, engine="ray")  # one actor on the cluster's GPU
    settings = Settings(store=tmp_path / "cpu", device="cpu", chunker="fixed")
    run_index([docs], settings, quiet=True, engine="local")
    comparison = compare_stores(tmp_path / "cpu", tmp_path / "gpu")
    # Fixed chunks: half precision may move a semantic boundary that sits at a near tie; the chunks must agree.
    assert comparison.same_chunks, comparison.differences
    assert comparison.min_cosine >= 0.999  # half precision on the GPU against the CPU's arithmetic


@needs_ray
def test_cli_on_ray_keeps_stdout_for_its_json_and_reports_progress_on_stderr(ray_cluster, tmp_path):
    docs = write_corpus(tmp_path / "docs")
    address = ray_cluster.get_runtime_context().gcs_address
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "granrag_mcp.cli",
            "index",
            str(docs),
            "--store",
            str(tmp_path / "store"),
            "--engine",
            "ray",
            "--ray-address",
            address,
            "--device",
            "cpu",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)  # nothing but the summary on stdout
    assert summary["added"] == 3 and summary["committed"]
    assert "Ray: extracting, chunking and embedding 3 documents" in result.stderr


@needs_ray
def test_cuda_on_a_cluster_without_gpus_is_refused(ray_cluster, tmp_path):
    from granrag_mcp.indexing.discovery import SourceFile
    from granrag_mcp.indexing.ray_engine import RayStages
    from granrag_mcp.progress import Progress

    if ray_cluster.cluster_resources().get("GPU"):
        pytest.skip("this cluster has GPUs")
    docs = write_corpus(tmp_path / "docs")
    stages = RayStages(Settings(store=tmp_path / "store", device="cuda"))
    source = SourceFile(docs / "cooking.txt", "cooking.txt", ".txt")
    with pytest.raises(InvalidInputError, match="has none"):
        stages.run([(source, "")], Progress(enabled=False))


def test_ray_address_needs_the_ray_engine(tmp_path, capsys):
    from granrag_mcp.cli import main

    docs = write_corpus(tmp_path / "docs")
    assert main(["index", str(docs), "--store", str(tmp_path / "store"), "--ray-address", "auto"]) == 1
    assert "--ray-address needs --engine ray" in capsys.readouterr().err


def test_the_server_and_the_local_engine_never_import_ray():
    code = (
        "import sys\n"
        "import granrag_mcp.cli, granrag_mcp.engine, granrag_mcp.server.app, granrag_mcp.indexing.pipeline\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_worker_reads_only_inside_the_allowed_roots(tmp_path) -> None:
    """The Ray task opens each file as the local engine does: a symlink inside the root that leads outside it, or a
    file over the size cap, is a failed document, not its text (no Ray needed: the task is called directly)."""
    import pickle

    from granrag_mcp.indexing.ray_engine import _prepare_row

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("The vault code is 4471.", encoding="utf-8")
    (root / "note.txt").write_text("The orchard is south of the mill.", encoding="utf-8")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    settings = Settings(store=tmp_path / "store")

    def prepared(name: str, max_bytes: int = 0):
        row = {"order": 0, "path": str(root / name), "doc_id": name, "suffix": ".txt"}
        row |= {"roots": json.dumps([str(root.resolve())]), "max_bytes": max_bytes}
        return pickle.loads(_prepare_row(row, settings.tokenizer, settings.chunking)["payload"])

    assert "orchard" in prepared("note.txt").extracted.text
    escaped = prepared("link.txt")
    assert escaped.extracted is None and "outside the allowed roots" in escaped.failure
    assert prepared("note.txt", max_bytes=5).extracted is None
