"""The SQuAD-A benchmark corpus: one ``<title>.txt`` per article, its paragraphs joined with a blank line.

The corpus is written into a temporary folder at benchmark time and never stored in the project. The loader
is the evaluation's (`granrag_mcp.evaluation.qa`), so the benchmarks and `granrag-mcp eval` see exactly the
same documents, ids and answer offsets.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from granrag_mcp.evaluation.qa import load_squad, write_corpus

_BESIDE = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "squad-v1.1-dev-a.json"
DEFAULT_SQUAD = Path(os.environ.get("GRANRAG_BENCH_SQUAD") or _BESIDE)


@dataclass(frozen=True)
class BenchQuestion:
    qid: str
    question: str
    doc_id: str
    answer_start: int  # character offset in the document text
    answer_end: int


def load(path: Path = DEFAULT_SQUAD) -> tuple[dict[str, str], list[BenchQuestion]]:
    """Documents (doc_id -> text) and questions with document-level answer offsets."""
    qa = load_squad(Path(path))
    questions = [BenchQuestion(q.qid, q.question, q.doc_id, q.answer_start, q.answer_end) for q in qa.questions]
    return dict(qa.documents), questions


def with_reordered_copies(documents: dict[str, str], copies: int) -> dict[str, str]:
    """The documents plus `copies - 1` further versions of each, its paragraphs in another order (reversed, then
    rotated): a larger store whose broad and mid chunks differ from the originals'. Questions keep pointing at
    the originals."""
    out = dict(documents)
    for copy in range(1, copies):
        for doc_id, text in documents.items():
            paragraphs = text.split("\n\n")[::-1]
            shift = (copy - 1) % len(paragraphs)
            name = Path(doc_id)
            out[f"{name.stem} (reordered {copy}){name.suffix}"] = "\n\n".join(paragraphs[shift:] + paragraphs[:shift])
    return out


def write(documents: dict[str, str], folder: Path) -> list[Path]:
    return write_corpus(documents, Path(folder))


def sample(questions: list[BenchQuestion], n: int | None, seed: int = 0) -> list[BenchQuestion]:
    """A seeded sample of n questions in their original order (all of them when n is None or too large)."""
    if n is None or n >= len(questions):
        return list(questions)
    chosen = sorted(random.Random(seed).sample(range(len(questions)), n))
    return [questions[i] for i in chosen]


def small_copy(path: Path, folder: Path, articles: int = 2) -> Path:
    """A SQuAD file of the first `articles` articles of `path`, written into `folder`: the input of smoke runs."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data["data"] = data["data"][:articles]
    small = folder / "squad-small.json"
    small.write_text(json.dumps(data), encoding="utf-8")
    return small
