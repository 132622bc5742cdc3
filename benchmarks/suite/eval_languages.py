"""`granrag-mcp eval` in every language: the 12 XQuAD-A languages, English questions over the Chinese, Hindi and
Arabic text (the cross-lingual rows), and CMRC 2018 trial, each set in its own store with the defaults (so the model
is the one each corpus chooses, unless --model names one). One table, a row per set: the store's model, hrr_search
broad MRR@5 and mid HR@5, BM25 broad MRR@5, and the index time.

XQuAD's files share their question ids, so a cross-lingual set is another language's file with each question's text
replaced by the English question of the same id: the answers stay spans of that language's text, and the set is
asked of that language's store (indexed once). The derived files are written under --out, never into the project.

    python benchmarks/eval_languages.py --out /tmp/languages [--sample 200] [--languages en,zh] [--model NAME]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import ROOT, finish, load_average, machine, offline_env  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets"
LANGUAGES = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "th", "zh", "hi", "ro")
"""XQuAD's languages, in the order of its paper."""
CROSS = ("zh", "hi", "ar")
"""Texts searched with the English questions."""
METRICS = (("HRR", "broad", "MRR@5"), ("HRR", "mid", "HR@5"), ("BM25", "broad", "MRR@5"))


def xquad(data: Path, language: str) -> Path:
    return data / "xquad-a" / f"xquad-a.{language}.json"


def cross_lingual(data: Path, language: str, folder: Path) -> Path:
    """XQuAD-A in `language` with the English question text of each id: `xquad-a.en-LANGUAGE.json` in `folder`."""
    english = json.loads(xquad(data, "en").read_text(encoding="utf-8"))
    question = {qa["id"]: qa["question"] for a in english["data"] for p in a["paragraphs"] for qa in p["qas"]}
    target = json.loads(xquad(data, language).read_text(encoding="utf-8"))
    for article in target["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["question"] = question[qa["id"]]
    path = folder / f"xquad-a.en-{language}.json"
    path.write_text(json.dumps(target, ensure_ascii=False), encoding="utf-8")
    return path


def row(name: str, metrics: dict[str, Any]) -> dict[str, Any]:
    summary = metrics["summary"]
    out: dict[str, Any] = {"set": name, "model": metrics["store"]["model"]}
    for strategy, level, metric in METRICS:
        out[f"{strategy} {level} {metric}"] = round(summary[strategy][level][metric], 3)
    out["questions"] = metrics["run"]["questions_evaluated"]
    indexing = metrics.get("indexing") or {}
    out["index seconds"] = round(indexing["seconds"], 1) if indexing.get("seconds") else None
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    columns = list(rows[0])
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" if c in ("set", "model") else "---:" for c in columns) + "|",
    ]
    lines += ["| " + " | ".join("-" if r[c] is None else str(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder of the stores, reports and derived files")
    parser.add_argument("--data", type=Path, default=DATA, help=f"the datasets folder (default {DATA})")
    parser.add_argument("--languages", default=",".join(LANGUAGES), help="XQuAD-A languages (default all 12)")
    parser.add_argument("--cross", default=",".join(CROSS), help="texts searched with English questions ('' none)")
    parser.add_argument("--no-cmrc", action="store_true", help="leave out CMRC 2018 trial")
    parser.add_argument("--sample", type=int, help="questions per set (default all)")
    parser.add_argument("--articles", type=int, help="only the first N articles of each set")
    parser.add_argument("--model", help="one model for every set instead of the one each corpus chooses")
    parser.add_argument("--no-save", action="store_true", help="print the result only")
    args = parser.parse_args()
    offline_env()
    derived = args.out / "sets"
    derived.mkdir(parents=True, exist_ok=True)
    sets = [xquad(args.data, code) for code in args.languages.split(",") if code]
    if not args.no_cmrc:
        sets.append(args.data / "cmrc2018-trial.json")
    crossed = [code for code in args.cross.split(",") if code]
    common = ["--skip-graph", "--no-chart", "--strategies", "BM25,HRR", "--quiet"]
    for flag, value in (("--sample", args.sample), ("--articles", args.articles), ("--model", args.model)):
        if value is not None:
            common += [flag, str(value)]
    eval_command = [sys.executable, "-m", "granrag_mcp.cli", "eval", "--squad"]
    load_before = load_average()
    for path in sets:  # each set in its own store, STORES/<name>, and report folder, REPORTS/<name>
        command = [*eval_command, str(path), "--store", str(args.out / "stores" / path.stem)]
        subprocess.run(
            [*command, "--out", str(args.out / "reports" / path.stem), *common], check=True, stdout=sys.stderr
        )
    for code in crossed:  # the English questions asked of that language's store, indexed here if it is not yet
        path = cross_lingual(args.data, code, derived)
        sets.append(path)
        command = [*eval_command, str(path), "--store", str(args.out / "stores" / xquad(args.data, code).stem)]
        subprocess.run(
            [*command, "--out", str(args.out / "reports" / path.stem), *common], check=True, stdout=sys.stderr
        )
    rows = []
    for path in sets:
        found = sorted((args.out / "reports" / path.stem).rglob("metrics.json"))
        rows.append(row(path.stem, json.loads(found[-1].read_text(encoding="utf-8"))))
    table = markdown(rows)
    print(table, file=sys.stderr)
    result = {
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "sample": args.sample,
        "model": args.model or "auto",
        "rows": rows,
        "table": table,
    }
    finish("eval_languages", result, save=not args.no_save)


if __name__ == "__main__":
    main()
