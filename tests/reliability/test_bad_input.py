"""Bad input, property-based: arguments generated from each tool's input schema, inside it and beyond it.

In memory with the fake embedder, for speed (a few thousand calls in all). Every call must give a result valid
against the tool's output schema, or a tool error with a specific message (never the SDK's bare "Error executing
tool X", which means a crash was hidden); no call may take longer than its deadline; and the next good call works.
The store has two generations: generation 1's ids of a document removed with --prune and of a changed document
are the stale ids mixed into the arguments.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from granrag_mcp.server.schemas.results import DATA_NOTICE
from tests.reliability.conftest import FuzzStore
from tests.reliability.strategies import Context, invalid_arguments, valid_arguments
from tests.reliability.support import Session, check_outcome, record, session, text_of
from tests.server.test_app import TOOLS

# Examples per tool and kind; GRANRAG_FUZZ_EXAMPLES scales them; the slow tests run 10 times as many.
SCALE = float(os.environ.get("GRANRAG_FUZZ_EXAMPLES", "1"))
VALID_EXAMPLES = int(160 * SCALE)
INVALID_EXAMPLES = int(140 * SCALE)

# The messages a call inside the schema may still fail with: input the schema cannot rule out.
EXPECTED_ERRORS = {
    "empty query": re.compile(r"the query is empty"),
    "malformed id": re.compile(r"malformed chunk id .*take them from the chunk_id field"),
    "unknown id": re.compile(r"unknown chunk id\(s\) .*search again"),
    "unknown doc id": re.compile(r"unknown doc_id(\(s\))? .*list_documents shows"),
    "no headings": re.compile(r"has no headings .*use get_parent or expand_window"),
    "outside the headings": re.compile(r"lies .* of .*; use document_outline to see its sections"),
    "unknown language": re.compile(r"no document in language .*: the index holds .*pass one of them"),
    "two names needed": re.compile(
        r"pass a question naming two things|could not tell two names in .*pass a and b|a name is empty: pass two names"
    ),
    "unknown name": re.compile(r"no sentence names .*pass a name as the documents write it"),
    "same name": re.compile(r"name the same thing: pass two different names"),
    "no pages": re.compile(r"has no pages to show .*use get_chunks or expand_window"),
    "broad has no parent": re.compile(r"are broad chunks, the top of the hierarchy, and have no parent"),
    "unknown concept": re.compile(
        r"unknown concept .*(the closest names are|no concept is spelt or means nearly).*call find_concepts"
    ),
    "empty concept": re.compile(r"the concept name is empty: pass a name"),
    "same concept": re.compile(r"are the same concept: pass two different ones"),
    "no community in document": re.compile(r"no community of the graph lies in document"),
}
VALIDATION = re.compile(r"validation error")
SEARCHES = {"search_broad", "search_narrow", "search_fused", "hrr_search"}

TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def fuzz(fuzz_store: FuzzStore) -> Iterator[tuple[Session, Context, FuzzStore]]:
    context = Context(list(fuzz_store.live_ids), fuzz_store.stale_ids, fuzz_store.doc_ids)
    with session(fuzz_store.server()) as s:
        yield s, context, fuzz_store
    record("bad-input-in-memory", dict(TALLY))


def expected_error(message: str) -> str | None:
    return next((kind for kind, pattern in EXPECTED_ERRORS.items() if pattern.search(message)), None)


def number(value: Any, default: int) -> int:
    """An argument as the server read it: lax validation turns "5", 5.0 and True into 5, 5 and 1."""
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def check_success(name: str, arguments: dict[str, Any], result: Any, store: FuzzStore) -> None:
    """What a good result promises beyond its schema."""
    content = result.structured_content
    budget = number(arguments.get("max_tokens"), 4000)
    if "tokens_used" in content:
        assert content["tokens_used"] <= budget, (name, arguments)
    hits = content.get("hits") or []
    hits += [g["parent"] for g in content.get("parents", [])] + content.get("kept", []) + content.get("members", [])
    for hit in hits:
        assert hit["chunk_id"] in store.live_ids, f"{name} returned {hit['chunk_id']}, not in the current generation"
        assert hit["doc_id"] == store.live_ids[hit["chunk_id"]]
    if name in SEARCHES:
        assert len(content["hits"]) <= number(arguments.get("k"), 100)
    text = text_of(result)
    if name == "list_documents":
        assert {d["doc_id"] for d in content["documents"]} <= set(store.doc_ids)
    elif hits or content.get("text"):
        assert DATA_NOTICE in text, f"{name}: the readable text does not say that document text is data"
        for hit in hits:
            assert hit["chunk_id"] in text


def check_still_works(s: Session) -> None:
    result = s.call("list_documents", {"limit": 1})
    assert not result.is_error and result.structured_content["total"] > 0


HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


def inside_the_schema(s: Session, context: Context, store: FuzzStore, name: str, examples: int) -> None:
    schema = s.tools[name].input_schema

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=HEALTH)
    @given(arguments=valid_arguments(schema, context))
    def check(arguments: dict[str, Any]) -> None:
        result = s.call(name, arguments)
        outcome = check_outcome(s.tools, name, result)
        TALLY["valid calls"] += 1
        if outcome == "ok":
            TALLY["valid: ok"] += 1
            check_success(name, arguments, result, store)
            return
        kind = expected_error(outcome)
        assert kind is not None, f"{name}({arguments!r}) inside the schema failed: {outcome}"
        TALLY[f"valid: error ({kind})"] += 1

    check()
    check_still_works(s)


def beyond_the_schema(s: Session, context: Context, store: FuzzStore, name: str, examples: int) -> None:
    schema = s.tools[name].input_schema

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=HEALTH)
    @given(case=invalid_arguments(schema, context))
    def check(case: tuple[str, dict[str, Any]]) -> None:
        move, arguments = case
        result = s.call(name, arguments)
        outcome = check_outcome(s.tools, name, result)
        TALLY["invalid calls"] += 1
        if outcome == "ok":
            TALLY["invalid: accepted (coerced or ignored)"] += 1
            check_success(name, arguments, result, store)
        else:
            assert VALIDATION.search(outcome) or expected_error(outcome), f"{name} {move}: {outcome}"
            TALLY["invalid: refused"] += 1
        check_still_works(s)

    check()


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_arguments_inside_the_schema(fuzz: tuple[Session, Context, FuzzStore], name: str) -> None:
    inside_the_schema(*fuzz, name, VALID_EXAMPLES)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_arguments_beyond_the_schema(fuzz: tuple[Session, Context, FuzzStore], name: str) -> None:
    beyond_the_schema(*fuzz, name, INVALID_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TOOLS))
def test_many_arguments_inside_and_beyond_the_schema(fuzz: tuple[Session, Context, FuzzStore], name: str) -> None:
    inside_the_schema(*fuzz, name, 10 * VALID_EXAMPLES)
    beyond_the_schema(*fuzz, name, 10 * INVALID_EXAMPLES)


def test_unknown_tools_and_odd_argument_containers(fuzz: tuple[Session, Context, FuzzStore]) -> None:
    s, _, _ = fuzz
    for name in ["", "delete_everything", "search_narrow ", "SEARCH_NARROW", "x" * 10_000, "\x00"]:
        result = s.call(name, {"query": "x"})
        assert result.is_error and "Unknown tool" in text_of(result)
    refused = s.call("search_narrow", {})
    assert refused.is_error and "validation error" in text_of(refused) and "query" in text_of(refused)
    check_still_works(s)


@given(ids=st.lists(st.sampled_from(["stale", "live"]), min_size=1, max_size=12), data=st.data())
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_stale_ids_are_named_in_a_clear_error(
    fuzz: tuple[Session, Context, FuzzStore], ids: list[str], data: st.DataObject
) -> None:
    """Ids of a removed (--prune) or re-indexed document: every id tool names exactly the stale ones."""
    s, context, store = fuzz
    chosen = [data.draw(st.sampled_from(context.stale_ids if kind == "stale" else context.live_ids)) for kind in ids]
    stale = [c for c in chosen if c in set(context.stale_ids)]
    calls = {
        "get_chunks": {"chunk_ids": chosen},
        "rerank": {"query": "lantern", "chunk_ids": chosen},
        "get_parent": {"chunk_ids": [c for c in chosen if not c.startswith("broad:")] or chosen},
        "expand_window": {"chunk_id": chosen[0]},
    }
    for name, arguments in calls.items():
        result = s.call(name, arguments)
        message = check_outcome(s.tools, name, result)
        given_ids = arguments.get("chunk_ids") or [arguments["chunk_id"]]
        stale_given = [c for c in given_ids if c in set(context.stale_ids)]
        if stale_given:
            assert "unknown chunk id" in message, (name, arguments, message)
            named = re.search(r"unknown chunk id\(s\) (.*?): not in", message).group(1).split(", ")
            assert set(named) == set(stale_given), (named, stale_given)
            assert "search again" in message
            TALLY["stale-id calls refused"] += 1
        elif message != "ok":
            assert "have no parent" in message  # get_parent given only broad ids
        else:
            TALLY["live-id calls ok"] += 1
    del stale
