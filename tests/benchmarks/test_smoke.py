"""Every script in benchmarks/ still fits the code it measures, and the suite's data holds together: each script is
listed in benchmarks/targets.toml with what it measures, its imports of the package resolve (those inside functions
too, and the shared harness's), each one with a command line answers `--help`, and each runs end to end at tiny size
(its `tiny` arguments or its own `--smoke`) without saving anything; every figure's result file is there and holds
the recorded value, and the tables generated from the targets file are current. A reshape of the code that breaks
a benchmark fails here."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
HELPERS = {"__init__.py", "_common.py", "compare.py"}  # the shared harness, imported by the scripts, not run
SCRIPTS = sorted(p for p in BENCHMARKS.rglob("*.py") if p.name not in HELPERS and "results" not in p.parts)
SQUAD = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "squad-v1.1-dev-a.json"
SMOKE = [s for s in SCRIPTS if '"--smoke"' in s.read_text(encoding="utf-8")]
HARNESS = [BENCHMARKS / name for name in sorted(HELPERS - {"__init__.py"})]


def name_of(script: Path) -> str:
    """A script's path below benchmarks/, as the tables here and benchmarks/targets.toml name it."""
    return script.relative_to(BENCHMARKS).as_posix()


def package_imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) for every import of granrag_mcp in the script, at any depth; name None for `import m`."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("granrag_mcp"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.startswith("granrag_mcp")]
    return found


@pytest.mark.parametrize("script", SCRIPTS + HARNESS, ids=lambda p: name_of(p))
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
    "script", [s for s in SCRIPTS if "ArgumentParser" in s.read_text(encoding="utf-8")], ids=lambda p: name_of(p)
)
def test_command_line_answers_help(script: Path) -> None:
    done = run(script, "--help", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "usage:" in done.stdout


TARGETS = tomllib.loads((BENCHMARKS / "targets.toml").read_text(encoding="utf-8"))
LISTED: dict[str, dict[str, Any]] = TARGETS["scripts"]
TINY = {name: entry["tiny"] for name, entry in LISTED.items() if "tiny" in entry}
"""Every script listed with `tiny` runs end to end on a tiny input, with GRANRAG_BENCH_NO_SAVE set so no result file
is written (a script with `smoke = true` runs its own --smoke under test_smoke_run instead)."""
NEEDS = {name: entry["needs"] for name, entry in LISTED.items() if "needs" in entry}
"""Script: a module of an optional extra it cannot run without (the `bench` extra; `make test` has not it)."""


def report() -> Any:
    return importlib.import_module("benchmarks.report")


def test_every_script_is_listed_in_the_targets_file() -> None:
    on_disk = {name_of(s) for s in SCRIPTS}
    assert on_disk - set(LISTED) == set(), "list these in benchmarks/targets.toml [scripts] with what they measure"
    assert set(LISTED) - on_disk == set(), "benchmarks/targets.toml lists scripts that are not in benchmarks/"


def test_every_listed_script_says_how_it_is_run_at_tiny_size() -> None:
    for name, entry in LISTED.items():
        ways = [way for way in ("tiny", "smoke", "not_run") if way in entry]
        assert len(ways) == 1, f"{name}: give exactly one of tiny, smoke = true or not_run (has {ways})"
        assert entry.get("measures"), f"{name}: say what it measures"
    assert {name for name, entry in LISTED.items() if entry.get("smoke")} == {name_of(s) for s in SMOKE}


def test_every_figure_has_its_script_its_result_file_and_its_recorded_value() -> None:
    names = [figure["name"] for figure in TARGETS["figures"]]
    assert len(names) == len(set(names)), "figure names are unique"
    for figure in TARGETS["figures"]:
        for key in ("name", "target_text", "condition", "target", "unit", "command"):
            assert key in figure, f"figure {figure.get('name')} lacks {key}"
        for script in re.findall(r"benchmarks/(\S+\.py)", figure["command"]):
            assert script in LISTED, f"{figure['name']}: its command runs {script}, which targets.toml does not list"
        if "recorded" in figure:
            assert (BENCHMARKS / "results" / figure["result"]).is_file(), f"{figure['name']}: no {figure['result']}"
    assert report().check_figures(TARGETS) == []


def test_a_recorded_value_that_is_not_the_result_files_is_caught(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"a": {"b": [{"p50_ms": 3.0}, {"p50_ms": 5.0}]}}))
    figure = {"name": "x", "condition": "<=", "target": 4, "result": "x.json", "path": ["a"], "reduce": "max"}
    figure["leaf"] = "p50_ms"
    assert report().check_figures({"figures": [{**figure, "recorded": 5.0}]}, tmp_path) == []
    assert report().check_figures({"figures": [{**figure, "recorded": 4.0}]}, tmp_path) != []
    assert report().check_figures({"figures": [{**figure, "recorded": 5.0, "path": ["z"]}]}, tmp_path) != []
    assert report().met({**figure, "recorded": 5.0}) is False


def test_the_docs_tables_are_what_the_targets_file_renders() -> None:
    stale = [path.name for path, text in report().generated_docs(TARGETS).items() if path.read_text() != text]
    assert not stale, f"{stale}: run benchmarks/report.py --write"


def saved() -> dict[Path, float]:
    return {p: p.stat().st_mtime for p in (BENCHMARKS / "results").rglob("*") if p.is_file()}


@pytest.mark.skipif(not SQUAD.exists(), reason=f"the SQuAD-A file is not at {SQUAD}")
@pytest.mark.parametrize("script", SMOKE, ids=lambda p: name_of(p))
def test_smoke_run(script: Path) -> None:
    before = saved()
    done = run(script, "--smoke", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("}"), "a smoke run prints its result as JSON"
    assert saved() == before, "a smoke run saves nothing"


def squad_corpus() -> Any:
    return importlib.import_module("benchmarks.corpora.squad_corpus")


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
