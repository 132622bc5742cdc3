import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from granrag_mcp.settings import Settings

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_setting_is_documented_in_the_readme_table():
    documented = set(re.findall(r"^\| `(GRANRAG_[A-Z_]+)` \|", README, flags=re.M))
    assert documented == {f"GRANRAG_{name.upper()}" for name in Settings.model_fields}


def test_environment_variables_are_read(monkeypatch):
    monkeypatch.setenv("GRANRAG_MID_TOKENS", "256")
    monkeypatch.setenv("GRANRAG_VECTOR_MODE", "windows")
    settings = Settings()
    assert settings.chunking.mid_tokens == 256 and settings.vector_mode == "windows"


def test_flags_override_the_environment(monkeypatch):
    monkeypatch.setenv("GRANRAG_PORT", "9000")
    assert Settings(port=9100).port == 9100


def test_conflicting_chunk_sizes_are_rejected_with_a_fix():
    with pytest.raises(ValidationError, match="GRANRAG_BROAD_OVERLAP"):
        Settings(broad_tokens=100, broad_overlap=150)


def test_a_public_bind_address_needs_a_token():
    with pytest.raises(ValidationError, match="GRANRAG_AUTH_TOKEN"):
        Settings(transport="http", host="0.0.0.0")
    assert Settings(transport="http", host="0.0.0.0", auth_token="s3cret").auth_token.get_secret_value() == "s3cret"
    assert Settings(transport="http", host="::1").host == "::1"


@pytest.mark.parametrize("token", ["s3cret\n", " s3cret", "s3cret\r\n", "s3\tcret", "s3cr\u00e9t", "s3\x7fcret"])
def test_a_token_no_header_can_carry_is_rejected_for_http(token):
    with pytest.raises(ValidationError, match="GRANRAG_AUTH_TOKEN") as caught:
        Settings(transport="http", auth_token=token)
    assert "s3" not in str(caught.value).replace("GRANRAG", "")
    assert Settings(transport="stdio", auth_token=token).transport == "stdio"  # not used there: no reason to fail
    assert Settings(transport="http", auth_token="s3 cret").auth_token.get_secret_value() == "s3 cret"


@pytest.mark.parametrize(
    "name, value",
    [
        ("GRANRAG_HTTP_MAX_CONNECTIONS", "0"),
        ("GRANRAG_HTTP_MAX_CONNECTIONS", "many"),
        ("GRANRAG_HTTP_HEADER_TIMEOUT", "0"),
        ("GRANRAG_HTTP_HEADER_TIMEOUT", "inf"),
        ("GRANRAG_HTTP_HEADER_TIMEOUT", "nan"),
        ("GRANRAG_HTTP_MAX_SESSIONS", "-1"),
        ("GRANRAG_HTTP_SESSION_IDLE_TIMEOUT", "-5"),
        ("GRANRAG_HTTP_SESSION_IDLE_TIMEOUT", "1e9"),
    ],
)
def test_http_limits_are_validated(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.removeprefix("GRANRAG_").lower()):
        Settings()


def test_http_limits_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("GRANRAG_HTTP_MAX_CONNECTIONS", "7")
    monkeypatch.setenv("GRANRAG_HTTP_HEADER_TIMEOUT", "2.5")
    monkeypatch.setenv("GRANRAG_HTTP_MAX_SESSIONS", "3")
    monkeypatch.setenv("GRANRAG_HTTP_SESSION_IDLE_TIMEOUT", "90")
    settings = Settings()
    assert (settings.http_max_connections, settings.http_header_timeout) == (7, 2.5)
    assert (settings.http_max_sessions, settings.http_session_idle_timeout) == (3, 90.0)


def test_the_graph_setting_comes_from_the_environment_and_the_index_flag(monkeypatch):
    from granrag_mcp.cli import build_parser, load_settings

    parser = build_parser()
    assert Settings().graph is True
    monkeypatch.setenv("GRANRAG_GRAPH", "false")
    assert Settings().graph is False
    assert load_settings(parser.parse_args(["index", "docs"])).graph is False
    assert load_settings(parser.parse_args(["index", "docs", "--graph"])).graph is True
    monkeypatch.delenv("GRANRAG_GRAPH")
    assert load_settings(parser.parse_args(["index", "docs", "--no-graph"])).graph is False


def test_library_folders_come_from_the_environment_or_the_serve_flag(monkeypatch, tmp_path):
    import os

    from granrag_mcp.cli import build_parser, load_settings

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRANRAG_LIBRARY", f"{tmp_path / 'notes'}{os.pathsep}papers{os.pathsep}")
    assert Settings().library == (tmp_path / "notes", tmp_path / "papers")  # relative: from where it started
    args = build_parser().parse_args(["serve", "--library", "a", "b", "a"])
    assert load_settings(args).library == (tmp_path / "a", tmp_path / "b")
