"""Result models leave out the optional fields that hold nothing, at every depth, in subclasses too."""

from __future__ import annotations

import json

from pydantic import Field

from granrag_mcp.server.schemas.lean import Lean


class Inner(Lean):
    name: str
    note: str | None = None


class Outer(Lean):
    required_maybe: str | None  # required: kept even when null
    count: int = 0
    flag: bool = False
    label: str | None = None
    items: list[Inner] = Field(default_factory=list)
    by_name: dict[str, Inner] | None = None


class Later(Outer):
    extra: list[str] | None = None


def test_empty_optional_fields_are_left_out_and_everything_else_kept() -> None:
    dumped = Outer(required_maybe=None, items=[Inner(name="a"), Inner(name="b", note="n")]).model_dump(mode="json")
    assert dumped == {
        "required_maybe": None,
        "count": 0,
        "flag": False,
        "items": [{"name": "a"}, {"name": "b", "note": "n"}],
    }


def test_json_dump_and_subclass_fields_are_lean_too() -> None:
    model = Later(required_maybe="x", label="", by_name={}, extra=[])
    assert json.loads(model.model_dump_json()) == {"required_maybe": "x", "count": 0, "flag": False, "label": ""}
    assert Later(required_maybe="x", extra=["e"]).model_dump()["extra"] == ["e"]


def test_the_schema_still_lists_every_field() -> None:
    assert set(Later.model_json_schema(mode="serialization")["properties"]) == {
        "required_maybe",
        "count",
        "flag",
        "label",
        "items",
        "by_name",
        "extra",
    }
