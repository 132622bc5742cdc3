"""server.json (MCP registry metadata) stays in step with the package: versions, settings, registry rules."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import granrag_mcp
from granrag_mcp.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SERVER_JSON = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = SERVER_JSON["packages"][0]
ENV_VARS = PACKAGE["environmentVariables"]
# The project's own subset of the registry schema server.json names (the official text is not shipped by any
# package the tests can install, and nothing is downloaded at test time).
SCHEMA = json.loads((ROOT / "tests" / "schemas" / "server.schema.subset.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def schema_errors(document: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(document)]


def test_server_json_is_valid_against_the_registry_schema_it_names() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["title"].endswith(SERVER_JSON["$schema"])  # the subset is of the very schema the file names
    assert schema_errors(SERVER_JSON) == []


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("description",), "x" * 101),
        (("name",), "granrag-mcp"),
        (("version",), ">=0.1"),
        (("packages", 0, "transport"), {"type": "carrier-pigeon"}),
        (("packages", 0, "packageArguments", 0, "type"), "flag"),
        (("packages", 0, "environmentVariables", 0, "format"), "integer"),
        (("packages", 0, "environmentVariables", 0, "colour"), "blue"),
        (("packages", 0, "runtimeHint"), 3),
    ],
)
def test_the_schema_rejects_what_the_registry_rejects(path: tuple[Any, ...], value: Any) -> None:
    broken = copy.deepcopy(SERVER_JSON)
    target = broken
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert schema_errors(broken), f"{path} = {value!r} passed"


def test_versions_are_in_step() -> None:
    version = PYPROJECT["project"]["version"]
    assert SERVER_JSON["version"] == version
    assert PACKAGE["version"] == version
    assert granrag_mcp.__version__ == version


def test_registry_rules() -> None:
    assert SERVER_JSON["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert SERVER_JSON["$schema"].endswith("/server.schema.json")
    assert SERVER_JSON["name"] == "io.github.granrag/granrag-mcp"


def test_the_pypi_package_runs_the_stdio_server() -> None:
    assert len(SERVER_JSON["packages"]) == 1
    assert PACKAGE["registryType"] == "pypi"
    assert PACKAGE["identifier"] == PYPROJECT["project"]["name"] == "granrag-mcp"
    assert PACKAGE["transport"] == {"type": "stdio"}
    assert "granrag-mcp" in PYPROJECT["project"]["scripts"]
    assert [a.get("value") for a in PACKAGE["packageArguments"]] == ["serve"]
    assert all(a["type"] == "positional" for a in PACKAGE["packageArguments"])


def test_environment_variables_are_settings() -> None:
    names = [v["name"] for v in ENV_VARS]
    assert len(names) == len(set(names))
    prefix = Settings.model_config["env_prefix"]
    for variable in ENV_VARS:
        assert variable["name"].startswith(prefix)
        field = variable["name"][len(prefix) :].lower()
        assert field in Settings.model_fields, f"{variable['name']} is not a setting"
        assert variable["description"] and variable["isRequired"] is False
        assert variable.get("isSecret", False) is (field == "auth_token")
        default = Settings.model_fields[field].default
        if "default" in variable:
            assert variable["default"] == str(default), variable["name"]
        if "choices" in variable:
            assert variable["default"] in variable["choices"]
    assert {"GRANRAG_STORE", "GRANRAG_MODEL", "GRANRAG_AUTH_TOKEN", "GRANRAG_MAX_TOKENS"} <= set(names)


@pytest.mark.parametrize("field", ["store", "model", "max_tokens", "reranker", "log_level"])
def test_the_main_settings_are_documented(field: str) -> None:
    assert f"GRANRAG_{field.upper()}" in {v["name"] for v in ENV_VARS}
