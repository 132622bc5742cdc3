"""QA sets for the evaluation: SQuAD JSON or JSONL, the SQuAD corpus written as documents, exact answer offsets.

A SQuAD article becomes one document, ``<title>.txt``, whose text is its paragraphs joined with ``"\\n\\n"``.
An answer at ``answer_start`` in paragraph p is then at ``offset(p) + answer_start`` in the document, where
``offset(p)`` is the length of the paragraphs before p plus two characters per separator. Every mapped answer
is checked against the document text while the set is built.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from granrag_mcp.errors import InvalidInputError

PARAGRAPH_SEPARATOR = "\n\n"
JSONL_FIELDS = ("question", "doc_id", "answer_start", "answer_end")
_UNSAFE_NAME = re.compile(r"[/\\\x00-\x1f]")


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    question: str
    doc_id: str
    answer_start: int  # character offset in the document's text
    answer_end: int  # exclusive
    answer: str | None = None  # the answer text, when the set gives it


@dataclass
class QASet:
    questions: list[Question]
    source: Path
    format: str  # "squad" or "jsonl"
    documents: dict[str, str] = field(default_factory=dict)  # doc_id -> text; empty for JSONL (the store has them)
    skipped: int = 0  # SQuAD questions without an answer or without question text


def doc_id_for_title(title: str) -> str:
    """The file name (and so the document id) of an article: its title, made safe, plus ``.txt``."""
    name = _UNSAFE_NAME.sub("_", title.strip()) or "untitled"
    if name.startswith("."):  # the indexer skips hidden files
        name = "_" + name[1:]
    return f"{name}.txt"


def _read_json(path: Path):
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInputError(f"no such QA file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the QA file {path}: {exc}") from exc
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); --squad needs a SQuAD v1.1/v2.0 file") from exc


def load_squad(path: Path, articles: int | None = None) -> QASet:
    """Questions and documents of a SQuAD file (the first `articles` articles when given).

    Each question keeps its first answer (the SQuAD convention for a single gold span); questions without
    any answer (SQuAD 2.0 impossible ones) or without question text are skipped and counted.
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InvalidInputError(f"{path} is not in SQuAD format: expected an object with a 'data' list of articles")
    if articles is not None and articles < 1:
        raise InvalidInputError(f"--articles must be at least 1, got {articles}")
    chosen = data["data"][:articles] if articles else data["data"]
    questions: list[Question] = []
    documents: dict[str, str] = {}
    skipped = 0
    for number, article in enumerate(chosen):
        where = f"{path}: article {number}"
        try:
            title = str(article["title"])
            paragraphs = article["paragraphs"]
        except (KeyError, TypeError):
            raise InvalidInputError(f"{where} has no 'title' or no 'paragraphs'") from None
        doc_id = doc_id_for_title(title)
        if doc_id in documents:
            raise InvalidInputError(f"{where}: two articles map to the document id {doc_id!r}")
        parts: list[str] = []
        offset = 0
        for p_number, paragraph in enumerate(paragraphs):
            try:
                context = paragraph["context"]
                qas = paragraph["qas"]
            except (KeyError, TypeError):
                raise InvalidInputError(f"{where} ({title}), paragraph {p_number} has no 'context' or 'qas'") from None
            if parts:
                offset += len(PARAGRAPH_SEPARATOR)
            for qa in qas:
                answers = qa.get("answers") or []
                if not answers or not str(qa.get("question") or "").strip():  # CMRC 2018 trial has two blank ones
                    skipped += 1
                    continue
                answer = answers[0]
                text, start = answer.get("text"), answer.get("answer_start")
                if not isinstance(text, str) or not isinstance(start, int) or start < 0:
                    raise InvalidInputError(
                        f"{where} ({title}), question {qa.get('id')!r}: malformed answer {answer!r}"
                    )
                if context[start : start + len(text)] != text:
                    raise InvalidInputError(
                        f"{where} ({title}), question {qa.get('id')!r}: the answer {text!r} is not at offset {start} "
                        "of its paragraph"
                    )
                questions.append(
                    Question(
                        str(qa.get("id", f"{doc_id}#{len(questions)}")),
                        str(qa["question"]),
                        doc_id,
                        offset + start,
                        offset + start + len(text),
                        text,
                    )
                )
            parts.append(context)
            offset += len(context)
        documents[doc_id] = PARAGRAPH_SEPARATOR.join(parts)
    result = QASet(questions, path, "squad", documents, skipped)
    check_offsets(result.questions, result.documents)
    if not result.questions:
        raise InvalidInputError(f"{path} holds no answerable question")
    return result


def check_offsets(questions: Sequence[Question], documents: Mapping[str, str]) -> None:
    """Raise if an answer span is not where its question says in the document text."""
    for q in questions:
        text = documents.get(q.doc_id)
        if text is None:
            raise InvalidInputError(f"question {q.qid}: document {q.doc_id!r} is not in the corpus")
        if not 0 <= q.answer_start < q.answer_end <= len(text):
            raise InvalidInputError(
                f"question {q.qid}: answer span [{q.answer_start}, {q.answer_end}) is outside {q.doc_id!r} "
                f"({len(text)} characters)"
            )
        if q.answer is not None and text[q.answer_start : q.answer_end] != q.answer:
            raise InvalidInputError(
                f"question {q.qid}: {q.doc_id!r}[{q.answer_start}:{q.answer_end}] is "
                f"{text[q.answer_start : q.answer_end]!r}, not the answer {q.answer!r}"
            )


def load_jsonl(path: Path) -> QASet:
    """One JSON object per line with question, doc_id, answer_start, answer_end (id and answer optional)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InvalidInputError(f"no such QA file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read the QA file {path}: {exc}") from exc
    questions: list[Question] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidInputError(f"{where}: expected a JSON object with {', '.join(JSONL_FIELDS)}")
        missing = [name for name in JSONL_FIELDS if name not in row]
        if missing:
            raise InvalidInputError(
                f"{where}: missing field(s) {', '.join(missing)}; each line needs {', '.join(JSONL_FIELDS)}"
            )
        question, doc_id = row["question"], row["doc_id"]
        start, end = row["answer_start"], row["answer_end"]
        if not isinstance(question, str) or not question.strip():
            raise InvalidInputError(f"{where}: 'question' must be a non-empty string")
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidInputError(f"{where}: 'doc_id' must be a non-empty string (a document id of the store)")
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)) or not 0 <= start < end:
            raise InvalidInputError(
                f"{where}: answer_start and answer_end must be integers with 0 <= answer_start < answer_end, "
                f"got {start!r} and {end!r}"
            )
        answer = row.get("answer")
        questions.append(
            Question(
                str(row.get("id", number)), question, doc_id, start, end, answer if isinstance(answer, str) else None
            )
        )
    if not questions:
        raise InvalidInputError(f"{path} holds no question")
    return QASet(questions, path, "jsonl")


def write_corpus(documents: Mapping[str, str], folder: Path) -> list[Path]:
    """Write each document as UTF-8 without any newline translation, so offsets stay exact."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc_id, text in documents.items():
        target = folder / doc_id
        target.write_bytes(text.encode("utf-8"))
        paths.append(target)
    return paths


def sample_questions(questions: Sequence[Question], n: int | None, seed: int) -> list[Question]:
    """A seeded random sample of n questions in their original order; all of them when n is None or too big."""
    if n is None or n >= len(questions):
        return list(questions)
    if n < 1:
        raise InvalidInputError(f"--sample must be at least 1, got {n}")
    chosen = sorted(random.Random(seed).sample(range(len(questions)), n))
    return [questions[i] for i in chosen]
