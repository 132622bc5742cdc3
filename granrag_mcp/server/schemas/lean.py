"""The base of every tool result model: its JSON leaves out optional fields that hold nothing.

A field that is not required and holds null, an empty list or an empty map is dropped when the model is dumped,
so the model reading a result pays no tokens for it; the output schema is unchanged and still validates the
result, since only fields with a default are dropped. It applies to every field of every result model, including
fields added later, with no list of names to keep in step.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


def empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, tuple, dict)) and not value)


class Lean(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Mark each optional field to be left out when empty, once per class: pydantic's serializer then skips
        it in Rust, where a wrapping serializer would call back into Python for every model instance dumped."""
        super().__pydantic_init_subclass__(**kwargs)
        marked = False
        for field in cls.model_fields.values():
            if not field.is_required() and field.exclude_if is None:
                field.exclude_if = empty
                marked = True
        if marked:
            cls.model_rebuild(force=True)
