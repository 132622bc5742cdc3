"""Turning per-question ranks into the outputs: the terminal table, report.md, the chart, metrics.json, JSONL."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from granrag_mcp.evaluation.metrics import KS, summarise

Ranks = Mapping[str, Mapping[str, Sequence[int | None]]]  # strategy -> level -> first-hit rank per question
Summary = dict[str, dict[str, dict[str, float]]]  # strategy -> level -> metric name -> value

COLUMNS = [f"HR@{k}" for k in KS] + [f"MRR@{k}" for k in KS]
CHART_FILE = "broad_metrics.png"


def summarise_all(ranks: Ranks) -> Summary:
    return {name: {level: summarise(values) for level, values in levels.items()} for name, levels in ranks.items()}


def format_table(summary: Summary) -> str:
    """The compact terminal table: one row per strategy and level."""
    width = max([len("strategy")] + [len(name) for name in summary])
    header = f"{'strategy':<{width}}  {'level':<5}  " + "  ".join(f"{c:>6}" for c in COLUMNS)
    lines = [header, "-" * len(header)]
    for name, levels in summary.items():
        for level, values in levels.items():
            lines.append(f"{name:<{width}}  {level:<5}  " + "  ".join(f"{values[c]:>6.3f}" for c in COLUMNS))
    return "\n".join(lines)


def markdown_table(summary: Summary) -> str:
    lines = ["| strategy | level | " + " | ".join(COLUMNS) + " |", "|---|---|" + "---:|" * len(COLUMNS)]
    for name, levels in summary.items():
        for level, values in levels.items():
            lines.append(f"| {name} | {level} | " + " | ".join(f"{values[c]:.3f}" for c in COLUMNS) + " |")
    return "\n".join(lines)


def best_per_level(summary: Summary, metric: str = "MRR@10") -> dict[str, tuple[str, float]]:
    levels = sorted({level for levels in summary.values() for level in levels})
    out = {}
    for level in levels:
        scored = [(name, levels_[level][metric]) for name, levels_ in summary.items() if level in levels_]
        out[level] = max(scored, key=lambda pair: pair[1])
    return out


def markdown_report(summary: Summary, meta: Mapping[str, Any]) -> str:
    """report.md: what was run, on what, how long it took, and the table."""
    run = meta["run"]
    lines = [
        "# granrag-mcp retrieval evaluation",
        "",
        f"- command: `{run['command']}`",
        f"- started: {run['started']}; machine: {run['machine']}",
        f"- QA set: `{run['qa_file']}` ({run['qa_format']}), {run['questions_total']} questions"
        + (f" from {run['articles']} articles" if run.get("articles") else ""),
        f"- evaluated: {run['questions_evaluated']} questions"
        + (f" (random sample, seed {run['seed']})" if run["sampled"] else " (all)"),
        "",
        "## Store and models",
        "",
    ]
    store = meta["store"]
    lines += [f"- {key}: {value}" for key, value in store.items()]
    lines += [f"- reranker (HRR): {meta.get('reranker') or 'none (HRR not run)'}"]
    if meta.get("embedding_precision"):
        lines.append(
            f"- embedding precision (this run's questions; the store may have been built in another): "
            f"{meta['embedding_precision']}"
        )
    lines.append("")
    lines += ["## Timings (seconds, wall clock)", ""]
    lines += [f"- {key}: {value:.1f}" for key, value in meta["timings"].items()]
    lines += [
        "",
        "## Results",
        "",
        "A question hits at a level when a returned chunk of that level is in the answer's document and "
        "contains the answer's first character. HR@k: share of questions with a hit in the top k; MRR@k: mean "
        "of 1/rank of the first hit (0 beyond k).",
        "",
        markdown_table(summary),
        "",
    ]
    best = best_per_level(summary)
    lines += [f"Best MRR@10 at the {level} level: {name} ({value:.3f})." for level, (name, value) in best.items()]
    if meta.get("graph"):
        from granrag_mcp.evaluation.graph_questions import GRAPH_METHOD, graph_table

        lines += ["", "## Concept graph: bridge and overview questions", "", GRAPH_METHOD, ""]
        lines.append(graph_table(meta["graph"]))
    lines += ["", "## Strategies", ""]
    lines += [f"- **{name}**: {text}" for name, text in meta["strategy_notes"].items()]
    if meta.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {note}" for note in meta["notes"]]
    lines += ["", f"![HR@k and MRR@k at the broad level]({CHART_FILE})", ""]
    return "\n".join(lines)


def write_chart(summary: Summary, path: Path, title: str = "") -> None:
    """HR@k and MRR@k per strategy at the broad level, side by side (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    values = [v for levels in summary.values() if "broad" in levels for v in levels["broad"].values()]
    floor = max(0.0, math.floor((min(values, default=0.0) - 0.05) * 10) / 10)  # zoom in, on a 0.1 grid
    styles = [("o", "-"), ("s", "--"), ("D", "-."), ("^", ":"), ("v", "-"), ("P", "--"), ("X", "-.")]
    for axis, metric in zip(axes, ("HR", "MRR")):
        for number, (name, levels) in enumerate(summary.items()):
            if "broad" not in levels:
                continue
            marker, line = styles[number % len(styles)]
            axis.plot(
                KS,
                [levels["broad"][f"{metric}@{k}"] for k in KS],
                marker=marker,
                linestyle=line,
                label=name,
                alpha=0.85,
            )
        axis.set_title(f"{metric}@k, broad level")
        axis.set_xlabel("k")
        axis.set_xticks(KS)
        axis.set_ylim(floor, 1.0)
        axis.grid(True, alpha=0.3)
    axes[0].set_ylabel("score")
    axes[1].legend(loc="best", fontsize="small")
    if title:
        figure.suptitle(title, fontsize="medium")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: Path) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def write_report(
    folder: Path, summary: Summary, meta: Mapping[str, Any], rows: Iterable[Mapping[str, Any]], chart: bool = True
) -> dict[str, Path]:
    """Write report.md, metrics.json, per_query.jsonl and (unless `chart` is False) the PNG chart."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "report": folder / "report.md",
        "metrics": folder / "metrics.json",
        "per_query": folder / "per_query.jsonl",
    }
    write_jsonl(rows, paths["per_query"])
    paths["metrics"].write_text(
        json.dumps({"summary": summary, **meta}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    if chart:
        paths["chart"] = folder / CHART_FILE
        run = meta.get("run", {})
        write_chart(
            summary,
            paths["chart"],
            f"{run.get('questions_evaluated', '?')} questions, vector mode "
            f"{meta.get('store', {}).get('vector_mode', '?')}",
        )
    paths["report"].write_text(markdown_report(summary, meta), encoding="utf-8")
    return paths
