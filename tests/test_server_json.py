"""server.json (MCP registry metadata) stays in step with the package: versions, settings, registry rules."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import granrag_mcp
from granrag_mcp.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SERVER_JSON = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PACKAGE = SERVER_JSON["packages"][0]
ENV_VARS = PACKAGE["environmentVariables"]

INPUT_KEYS = {
    "name",
    "description",
    "isRequired",
    "format",
    "value",
    "isSecret",
    "default",
    "placeholder",
    "choices",
    "variables",
}
PACKAGE_KEYS = {
    "registryType",
    "registryBaseUrl",
    "identifier",
    "version",
    "fileSha256",
    "runtimeHint",
    "transport",
    "runtimeArguments",
    "packageArguments",
    "environmentVariables",
}


def test_versions_are_in_step() -> None:
    version = PYPROJECT["project"]["version"]
    assert SERVER_JSON["version"] == version
    assert PACKAGE["version"] == version
    assert granrag_mcp.__version__ == version


def test_registry_rules() -> None:
    assert SERVER_JSON["$schema"].startswith("https://static.modelcontextprotocol.io/schemas/")
    assert SERVER_JSON["$schema"].endswith("/server.schema.json")
    assert SERVER_JSON["name"] == "io.github.granrag/granrag-mcp"
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", SERVER_JSON["name"])
    assert 1 <= len(SERVER_JSON["description"]) <= 100
    assert 1 <= len(SERVER_JSON.get("title", "x")) <= 100
    assert not re.search(r"[\^~<>=*x]", SERVER_JSON["version"].replace("0x", ""))  # a version, not a range
    assert set(SERVER_JSON) <= {
        "$schema",
        "name",
        "title",
        "description",
        "version",
        "packages",
        "repository",
        "websiteUrl",
        "icons",
        "remotes",
        "_meta",
    }


def test_the_pypi_package_runs_the_stdio_server() -> None:
    assert len(SERVER_JSON["packages"]) == 1
    assert set(PACKAGE) <= PACKAGE_KEYS
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
        assert set(variable) <= INPUT_KEYS, variable
        assert variable["name"].startswith(prefix)
        field = variable["name"][len(prefix) :].lower()
        assert field in Settings.model_fields, f"{variable['name']} is not a setting"
        assert variable["description"] and variable["isRequired"] is False
        assert variable.get("isSecret", False) is (field == "auth_token")
        assert variable.get("format", "string") in {"string", "number", "boolean", "filepath"}
        default = Settings.model_fields[field].default
        if "default" in variable:
            assert variable["default"] == str(default), variable["name"]
        if "choices" in variable:
            assert variable["default"] in variable["choices"]
    assert {"GRANRAG_STORE", "GRANRAG_MODEL", "GRANRAG_AUTH_TOKEN", "GRANRAG_MAX_TOKENS"} <= set(names)


@pytest.mark.parametrize("field", ["store", "model", "max_tokens", "reranker", "log_level"])
def test_the_main_settings_are_documented(field: str) -> None:
    assert f"GRANRAG_{field.upper()}" in {v["name"] for v in ENV_VARS}
