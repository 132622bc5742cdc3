"""The base of every tool result model: its JSON leaves out optional fields that hold nothing.

A field that is not required and holds null, an empty list or an empty map is dropped when the model is dumped,
so the model reading a result pays no tokens for it; the output schema is unchanged and still validates the
result, since only fields with a default are dropped. It applies to every field of every result model, including
fields added later, with no list of names to keep in step.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


def empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, tuple, dict)) and not value)


class Lean(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _without_empty_optionals(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        fields = type(self).model_fields
        return {
            key: value
            for key, value in data.items()
            if not (empty(value) and key in fields and not fields[key].is_required())
        }
