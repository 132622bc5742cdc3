"""CI smoke of `granrag-mcp eval`: a few questions on two SQuAD articles, the real model, end to end."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from granrag_mcp.cli import load_settings  # noqa: E402
from granrag_mcp.errors import GranragError, StoreMismatchError  # noqa: E402
from granrag_mcp.evaluation.arguments import add_eval_parser  # noqa: E402
from granrag_mcp.evaluation.command import cmd_eval  # noqa: E402
from granrag_mcp.evaluation.qa import load_squad  # noqa: E402
from granrag_mcp.evaluation.strategies import STRATEGIES  # noqa: E402
from tests.helpers import shared_file  # noqa: E402

SQUAD = shared_file("datasets/squad-v1.1-dev-a.json")
pytestmark = pytest.mark.skipif(not SQUAD.exists(), reason=f"shared dataset {SQUAD} not available")

METRICS = ["HR@1", "HR@3", "HR@5", "HR@10", "MRR@1", "MRR@3", "MRR@5", "MRR@10"]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="granrag-mcp")
    add_eval_parser(root.add_subparsers(dest="command", required=True))
    return root


def run_eval(argv: list[str]) -> int:
    args = parser().parse_args(["eval", *argv])
    return cmd_eval(args, load_settings(args))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("eval")
    store, out, corpus = root / "store", root / "report", root / "corpus"
    capture = root / "stdout.txt"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = run_eval(
            [
                "--squad",
                str(SQUAD),
                "--articles",
                "2",
                "--sample",
                "8",
                "--seed",
                "3",
                "--store",
                str(store),
                "--out",
                str(out),
                "--corpus-dir",
                str(corpus),
                "--quiet",
            ]
        )
    capture.write_text(buffer.getvalue(), encoding="utf-8")
    return {"code": code, "stdout": buffer.getvalue(), "store": store, "out": out, "corpus": corpus, "root": root}


def test_exit_code_and_report_files(smoke: dict) -> None:
    assert smoke["code"] == 0
    out: Path = smoke["out"]
    for name in ("report.md", "metrics.json", "per_query.jsonl", "broad_metrics.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert (out / "broad_metrics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in smoke["corpus"].iterdir()) == ["Super_Bowl_50.txt", "Warsaw.txt"]


def test_table_is_printed_with_every_strategy_and_level(smoke: dict) -> None:
    lines = smoke["stdout"].strip().split("\n\n")[0].splitlines()  # then the concept graph's table
    assert lines[0].split() == ["strategy", "level", *METRICS]
    rows = [line.split() for line in lines[2:]]
    assert [(r[0], r[1]) for r in rows] == [(s, level) for s in STRATEGIES for level in ("broad", "mid")]
    for row in rows:
        assert all(0.0 <= float(value) <= 1.0 for value in row[2:])


def test_metrics_are_in_range_and_consistent(smoke: dict) -> None:
    report = json.loads((smoke["out"] / "metrics.json").read_text(encoding="utf-8"))
    summary = report["summary"]
    assert set(summary) == set(STRATEGIES)
    for levels in summary.values():
        assert set(levels) == {"broad", "mid"}
        for values in levels.values():
            assert list(values) == METRICS
            assert all(0.0 <= v <= 1.0 for v in values.values())
            hr = [values[f"HR@{k}"] for k in (1, 3, 5, 10)]
            assert hr == sorted(hr)  # hit rate never falls as k grows
            assert all(values[f"MRR@{k}"] <= values[f"HR@{k}"] + 1e-12 for k in (1, 3, 5, 10))
    assert report["run"]["questions_evaluated"] == 8 and report["run"]["seed"] == 3
    assert report["store"]["documents"] == 2
    assert report["indexing"]["indexed"] is True
    assert report["reranker"]


def test_the_graph_methods_and_flat_search_share_one_table(smoke: dict) -> None:
    report = json.loads((smoke["out"] / "metrics.json").read_text(encoding="utf-8"))
    graph = report["graph"]
    assert graph["bridge_questions"] > 10 and graph["overview_documents"] == 2
    bridge, overview = graph["bridge"], graph["overview"]
    assert {"search_narrow (dense)", "search_fused (rrf, narrow)", "graph_search (passages)", "concept_paths"} <= set(
        bridge
    )
    assert {"graph_search (communities, doc_id)", "search_fused (rrf, mid)"} <= set(overview)
    assert all(0.0 <= row["answered"] <= 1.0 for row in bridge.values())
    assert bridge["concept_paths"]["answered"] > bridge["search_narrow (dense)"]["answered"]  # what the graph is for
    assert all(0.0 < row["coverage"] <= 1.0 for row in overview.values())
    table = smoke["stdout"].strip().split("\n\n")[1]
    assert table.startswith("| method | bridge answered") and "| concept_paths |" in table
    assert "| search_fused (rrf, mid) | - | - |" in table
    text = (smoke["out"] / "report.md").read_text(encoding="utf-8")
    assert "## Concept graph: bridge and overview questions" in text and table in text
    assert report["timings"]["graph questions"] > 0
    protocol = graph["independent"]  # the protocol's bridges, through the MCP tools
    assert {"evidence_chain(question)", "search_narrow lexical=true k=20 (BM25)"} <= set(protocol["bridge"])
    assert all(0.0 <= row["answered"] <= 1.0 for row in protocol["bridge"].values())
    assert "Bridge questions of the protocol" in text


def test_per_query_rows(smoke: dict) -> None:
    rows = [json.loads(line) for line in (smoke["out"] / "per_query.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 8
    qa = load_squad(SQUAD, articles=2)
    by_id = {q.qid: q for q in qa.questions}
    for row in rows:
        q = by_id[row["id"]]
        assert (row["doc_id"], row["answer_start"], row["question"]) == (q.doc_id, q.answer_start, q.question)
        assert set(row["strategies"]) == set(STRATEGIES)
        for entry in row["strategies"].values():
            for level in ("broad", "mid"):
                rank, top = entry[level]["rank"], entry[level]["top"]
                assert rank is None or 1 <= rank <= len(top) <= 10
                assert all(chunk_id.startswith(f"{level}:") for chunk_id in top)
                assert len(set(top)) == len(top)


def test_report_markdown_names_settings_and_table(smoke: dict) -> None:
    text = (smoke["out"] / "report.md").read_text(encoding="utf-8")
    for needle in (
        "vector_mode: mean",
        "all-MiniLM-L6-v2",
        "reranker (HRR)",
        "seed 3",
        "| HRR | broad |",
        "indexing:",
        "broad_metrics.png",
    ):
        assert needle in text, needle


def test_second_run_reuses_the_store_and_jsonl_input_works(smoke: dict, capsys: pytest.CaptureFixture) -> None:
    qa = load_squad(SQUAD, articles=2)
    path = smoke["root"] / "qa.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for q in qa.questions[:5]:
            handle.write(
                json.dumps(
                    {
                        "id": q.qid,
                        "question": q.question,
                        "doc_id": q.doc_id,
                        "answer_start": q.answer_start,
                        "answer_end": q.answer_end,
                    }
                )
                + "\n"
            )
    out = smoke["root"] / "report-jsonl"
    assert (
        run_eval(
            [
                "--qa",
                str(path),
                "--store",
                str(smoke["store"]),
                "--out",
                str(out),
                "--strategies",
                "base,rrf",
                "--no-chart",
                "--skip-graph",
                "--quiet",
            ]
        )
        == 0
    )
    table = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[:2] for line in table[2:]] == [
        ["Base", "broad"],
        ["Base", "mid"],
        ["RRF", "broad"],
        ["RRF", "mid"],
    ]
    report = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert report["indexing"] == {"indexed": False}
    assert report["graph"] is None and "graph questions" not in report["timings"]  # --skip-graph
    assert not (out / "broad_metrics.png").exists()


def test_wrong_vector_mode_for_the_store_is_a_clear_error(smoke: dict) -> None:
    with pytest.raises(StoreMismatchError, match="vector_mode"):
        run_eval(
            [
                "--squad",
                str(SQUAD),
                "--articles",
                "2",
                "--sample",
                "2",
                "--store",
                str(smoke["store"]),
                "--vector-mode",
                "windows",
                "--out",
                str(smoke["root"] / "r3"),
                "--quiet",
            ]
        )


def test_jsonl_naming_an_unknown_document_is_a_clear_error(smoke: dict) -> None:
    path = smoke["root"] / "bad.jsonl"
    path.write_text(
        json.dumps({"question": "Who?", "doc_id": "nope.txt", "answer_start": 0, "answer_end": 3}) + "\n",
        encoding="utf-8",
    )
    with pytest.raises(GranragError, match="does not hold the document"):
        run_eval(
            [
                "--qa",
                str(path),
                "--store",
                str(smoke["store"]),
                "--out",
                str(smoke["root"] / "r4"),
                "--strategies",
                "base",
                "--no-chart",
                "--quiet",
            ]
        )


def test_help_lists_the_options() -> None:
    text = parser()._subparsers._group_actions[0].choices["eval"].format_help()  # type: ignore[union-attr]
    for option in (
        "--squad",
        "--qa",
        "--store",
        "--model",
        "--vector-mode",
        "--out",
        "--sample",
        "--seed",
        "--articles",
        "--reranker",
        "--strategies",
        "--skip-graph",
        "--bridge-questions",
    ):
        assert option in text
