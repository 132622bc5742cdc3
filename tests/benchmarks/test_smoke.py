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


def run(script: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "GRANRAG_BENCH_SQUAD": str(SQUAD)}
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
    # script: its own arguments for a tiny run that saves nothing ({tmp}: a scratch folder, {squad}: two articles)
    "bench_encoder.py": ["--rounds", "1", "--questions", "4", "--sentences", "20", "--no-save"],
    "bench_index.py": ["--modes", "mean", "--squad", "{squad}", "--no-save"],
    "bench_tool_list.py": ["--no-save"],
    "bench_result_size.py": ["--articles", "2", "--questions", "2", "--squad", "{squad}", "--no-save"],
    "bench_scale.py": ["--sizes", "3000", "--kinds", "flat,hnsw", "--queries", "10", "--latency-queries", "10"]
    + ["--ef-search", "64", "--no-save"],
    "bench_token_vectors.py": ["--stores-dir", "{tmp}", "--squad", "{squad}", "--copies", "1", "--calls", "2"]
    + ["--no-save"],
}


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


@pytest.mark.skipif(not SQUAD.exists(), reason=f"the SQuAD-A file is not at {SQUAD}")
@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_run(name: str, tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import squad_corpus
    finally:
        sys.path.remove(str(BENCHMARKS))
    squad = squad_corpus.small_copy(SQUAD, tmp_path)
    arguments = [a.format(tmp=tmp_path / "work", squad=squad) for a in TINY[name]]
    before = saved()
    done = run(BENCHMARKS / name, *arguments, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert saved() == before, "a run with --no-save saves nothing"
