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
