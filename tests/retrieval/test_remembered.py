"""A generation's facts of its documents and chunks, remembered: read once for the ids not yet asked about."""

from __future__ import annotations

from granrag_mcp.retrieval.remembered import Remembered


class Reader:
    def __init__(self, known: dict[str, str]) -> None:
        self.known = known
        self.asked: list[list[str]] = []

    def __call__(self, doc_ids: list[str]) -> dict[str, str]:
        self.asked.append(doc_ids)
        return {d: self.known[d] for d in doc_ids if d in self.known}


def test_only_the_documents_not_remembered_are_read() -> None:
    read, remembered = Reader({"a": "en", "b": "fr", "c": "de"}), Remembered[str, str]()
    assert remembered.of(["a", "b", "a"], read) == {"a": "en", "b": "fr"}
    assert remembered.of(["b", "c"], read) == {"b": "fr", "c": "de"}
    assert read.asked == [["a", "b"], ["c"]]


def test_an_unknown_document_is_left_out_as_the_reader_leaves_it() -> None:
    read, remembered = Reader({"a": "en"}), Remembered[str, str]()
    assert remembered.of(["a", "gone"], read) == {"a": "en"}
    assert remembered.of(["gone"], read) == {}
    assert read.asked == [["a", "gone"], ["gone"]]


def test_the_least_recently_asked_go_beyond_the_size() -> None:
    read, remembered = Reader({d: d.upper() for d in "abcd"}), Remembered[str, str](size=2)
    remembered.of(["a", "b"], read)
    remembered.of(["a"], read)  # a is now the most recent
    remembered.of(["c"], read)  # b goes
    read.asked.clear()
    assert remembered.of(["a", "b", "c"], read) == {"a": "A", "b": "B", "c": "C"}
    assert read.asked == [["b"]]
