"""Loading QA sets: SQuAD (on the real shared file) with exact document offsets, and JSONL with clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.evaluation.qa import (
    PARAGRAPH_SEPARATOR,
    Question,
    check_offsets,
    doc_id_for_title,
    load_jsonl,
    load_squad,
    sample_questions,
    write_corpus,
)
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.extract import extract_text
from tests.helpers import shared_file

SQUAD = shared_file("datasets/squad-v1.1-dev-a.json")
needs_squad = pytest.mark.skipif(not SQUAD.exists(), reason=f"shared dataset {SQUAD} not available")


# --- SQuAD on the real file ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def squad():
    return load_squad(SQUAD)


@needs_squad
def test_squad_counts(squad) -> None:
    raw = json.loads(SQUAD.read_text(encoding="utf-8"))
    assert len(squad.documents) == len(raw["data"]) == 24
    assert len(squad.questions) == 4961
    assert squad.skipped == 0
    assert squad.format == "squad"
    assert len({q.qid for q in squad.questions}) == len(squad.questions)


@needs_squad
def test_every_answer_maps_exactly_into_its_document(squad) -> None:
    for q in squad.questions:
        text = squad.documents[q.doc_id]
        assert text[q.answer_start : q.answer_end] == q.answer
        assert q.answer_end - q.answer_start == len(q.answer)


@needs_squad
def test_document_is_paragraphs_joined_and_offsets_follow_the_paragraphs(squad) -> None:
    raw = json.loads(SQUAD.read_text(encoding="utf-8"))
    for article in raw["data"]:
        doc_id = doc_id_for_title(article["title"])
        contexts = [p["context"] for p in article["paragraphs"]]
        assert squad.documents[doc_id] == PARAGRAPH_SEPARATOR.join(contexts)
        offset = 0
        by_id = {q.qid: q for q in squad.questions if q.doc_id == doc_id}
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                first = qa["answers"][0]
                assert by_id[qa["id"]].answer_start == offset + first["answer_start"]
            offset += len(paragraph["context"]) + len(PARAGRAPH_SEPARATOR)


@needs_squad
def test_first_answer_of_first_question(squad) -> None:
    q = squad.questions[0]
    assert q.doc_id == "Super_Bowl_50.txt"
    assert q.question == "Which NFL team represented the AFC at Super Bowl 50?"
    assert (q.answer_start, q.answer) == (177, "Denver Broncos")


@needs_squad
def test_articles_limits_corpus_and_questions(squad) -> None:
    two = load_squad(SQUAD, articles=2)
    assert list(two.documents) == list(squad.documents)[:2]
    assert {q.doc_id for q in two.questions} == set(two.documents)
    assert len(two.questions) == sum(1 for q in squad.questions if q.doc_id in two.documents)


@needs_squad
def test_written_corpus_reads_back_identically_through_the_indexer(tmp_path: Path) -> None:
    qa = load_squad(SQUAD, articles=3)
    paths = write_corpus(qa.documents, tmp_path)
    assert sorted(p.name for p in paths) == sorted(qa.documents)
    for path in paths:
        extracted = extract_text(SourceFile(path=path, doc_id=path.name, suffix=".txt"))
        assert extracted.text == qa.documents[path.name]
    check_offsets(qa.questions, {p.name: p.read_text(encoding="utf-8") for p in paths})


def _squad_file(tmp_path: Path, context: str, answer: dict, title: str = "T") -> Path:
    data = {
        "version": "1.1",
        "data": [
            {
                "title": title,
                "paragraphs": [
                    {"context": "First paragraph.", "qas": []},
                    {"context": context, "qas": [{"id": "q1", "question": "What?", "answers": [answer]}]},
                ],
            }
        ],
    }
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_squad_offset_of_a_later_paragraph(tmp_path: Path) -> None:
    qa = load_squad(_squad_file(tmp_path, "The cat sat.", {"text": "cat", "answer_start": 4}))
    q = qa.questions[0]
    assert qa.documents["T.txt"] == "First paragraph.\n\nThe cat sat."
    assert (q.answer_start, q.answer_end) == (len("First paragraph.\n\n") + 4, len("First paragraph.\n\n") + 7)


def test_squad_answer_not_at_its_offset_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not at offset 5"):
        load_squad(_squad_file(tmp_path, "The cat sat.", {"text": "cat", "answer_start": 5}))


def test_squad_wrong_shape_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"rows": []}), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="not in SQuAD format"):
        load_squad(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        load_squad(path)
    with pytest.raises(InvalidInputError, match="no such QA file"):
        load_squad(tmp_path / "missing.json")


def test_doc_id_for_title_is_a_safe_visible_file_name() -> None:
    assert doc_id_for_title("Victoria_(Australia)") == "Victoria_(Australia).txt"
    assert doc_id_for_title("AC/DC") == "AC_DC.txt"
    assert doc_id_for_title(".hidden") == "_hidden.txt"


# --- JSONL ---------------------------------------------------------------------------------------------------


def _jsonl(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


GOOD = json.dumps({"question": "Who?", "doc_id": "a.txt", "answer_start": 3, "answer_end": 7})


def test_jsonl_loads_and_numbers_ids_by_line(tmp_path: Path) -> None:
    second = json.dumps(
        {"id": "x9", "question": "Where?", "doc_id": "b.txt", "answer_start": 0, "answer_end": 2, "answer": "ab"}
    )
    qa = load_jsonl(_jsonl(tmp_path, GOOD, "", second))
    assert qa.format == "jsonl" and qa.documents == {}
    assert qa.questions == [Question("1", "Who?", "a.txt", 3, 7, None), Question("x9", "Where?", "b.txt", 0, 2, "ab")]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{broken", r"qa\.jsonl:2: not valid JSON"),
        ("[1, 2]", r"qa\.jsonl:2: expected a JSON object"),
        (
            json.dumps({"question": "Q", "doc_id": "a.txt", "answer_start": 1}),
            r"qa\.jsonl:2: missing field\(s\) answer_end",
        ),
        (json.dumps({"doc_id": "a.txt"}), r"missing field\(s\) question, answer_start, answer_end"),
        (json.dumps({"question": " ", "doc_id": "a", "answer_start": 0, "answer_end": 1}), "'question' must be"),
        (json.dumps({"question": "Q", "doc_id": 3, "answer_start": 0, "answer_end": 1}), "'doc_id' must be"),
        (json.dumps({"question": "Q", "doc_id": "a", "answer_start": "0", "answer_end": 1}), "must be integers"),
        (json.dumps({"question": "Q", "doc_id": "a", "answer_start": 5, "answer_end": 5}), "answer_start < answer_end"),
        (json.dumps({"question": "Q", "doc_id": "a", "answer_start": -1, "answer_end": 5}), "0 <= answer_start"),
    ],
)
def test_jsonl_malformed_lines_name_the_line_and_the_problem(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        load_jsonl(_jsonl(tmp_path, GOOD, line))


def test_jsonl_empty_or_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="holds no question"):
        load_jsonl(_jsonl(tmp_path, ""))
    with pytest.raises(InvalidInputError, match="no such QA file"):
        load_jsonl(tmp_path / "nope.jsonl")


def test_check_offsets_against_document_texts() -> None:
    docs = {"a.txt": "Hello brave world"}
    check_offsets([Question("1", "q", "a.txt", 6, 11, "brave")], docs)
    check_offsets([Question("2", "q", "a.txt", 6, 11)], docs)  # no answer text: only the range is checked
    with pytest.raises(InvalidInputError, match="not the answer 'world'"):
        check_offsets([Question("3", "q", "a.txt", 6, 11, "world")], docs)
    with pytest.raises(InvalidInputError, match="outside 'a.txt'"):
        check_offsets([Question("4", "q", "a.txt", 6, 99)], docs)
    with pytest.raises(InvalidInputError, match="not in the corpus"):
        check_offsets([Question("5", "q", "b.txt", 0, 1)], docs)


# --- sampling ------------------------------------------------------------------------------------------------


def test_sample_is_seeded_and_keeps_order() -> None:
    questions = [Question(str(i), f"q{i}", "a.txt", 0, 1) for i in range(50)]
    first = sample_questions(questions, 10, seed=1)
    assert first == sample_questions(questions, 10, seed=1)
    assert first != sample_questions(questions, 10, seed=2)
    assert len(first) == 10 and [int(q.qid) for q in first] == sorted(int(q.qid) for q in first)
    assert sample_questions(questions, None, seed=1) == questions
    assert sample_questions(questions, 500, seed=1) == questions


def test_a_question_without_text_is_skipped_and_counted(tmp_path: Path) -> None:
    context = "The panda eats bamboo."
    answer = {"text": "bamboo", "answer_start": context.index("bamboo")}
    qas = [
        {"id": "kept", "question": "What does the panda eat?", "answers": [answer]},
        {"id": "blank", "question": "  ", "answers": [answer]},
    ]
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"data": [{"title": "Panda", "paragraphs": [{"context": context, "qas": qas}]}]}))
    loaded = load_squad(path)
    assert [q.qid for q in loaded.questions] == ["kept"]
    assert loaded.skipped == 1
