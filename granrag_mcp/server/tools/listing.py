"""The `tools/list` answer as the model reads it: the tools' JSON schemas without their `title` keywords.

Pydantic titles every property and model after its own name ("max_tokens" -> "Max Tokens"), which repeats what the
schema already says in about a tenth of the input schemas' tokens and more of the output schemas'. Titles are
annotations only, so validation is unchanged; a tool's own `title` (the one shown to people) is kept.
"""

from __future__ import annotations

from typing import Any

SCHEMA_KEYS = ("inputSchema", "outputSchema")
NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions")
"""Keywords whose value maps names to schemas: a property may itself be called `title`."""
LITERALS = ("default", "const", "enum", "examples")
"""Keywords whose value is data, not a schema."""


def untitled(schema: Any) -> Any:
    """`schema` without `title` keywords, at any depth; the input is left unchanged."""
    if isinstance(schema, list):
        return [untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in NAME_MAPS and isinstance(value, dict):
            out[key] = {name: untitled(sub) for name, sub in value.items()}
        elif key in LITERALS:
            out[key] = value
        else:
            out[key] = untitled(value)
    return out


def lean_tool_list(result: Any) -> Any:
    """The wire answer of `tools/list` with every tool's schemas untitled (anything else is returned as it is)."""
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        return result
    tools = []
    for tool in result["tools"]:
        if isinstance(tool, dict):
            tool = {key: untitled(value) if key in SCHEMA_KEYS else value for key, value in tool.items()}
        tools.append(tool)
    return {**result, "tools": tools}
