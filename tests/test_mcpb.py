"""The Claude Desktop bundle (packaging/mcpb/): the official `mcpb` CLI validates and packs it, and what it runs is
the package's own command line with the user's folders in the right places.

The CLI is the pinned copy `make install` puts in .tools/mcpb where npm exists; without it these tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from granrag_mcp.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
BUNDLE = ROOT / "packaging" / "mcpb"
MANIFEST = json.loads((BUNDLE / "manifest.json").read_text(encoding="utf-8"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MCPB = ROOT / ".tools" / "mcpb" / "node_modules" / ".bin" / "mcpb"

needs_cli = pytest.mark.skipif(
    not MCPB.exists() or shutil.which("node") is None,
    reason="the mcpb CLI is not installed: run `make install` on a machine with node and npm",
)


def mcpb(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MCPB), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120)


def bundle_args() -> list[str]:
    """The command line the bundle gives the package, after uv's own arguments and the entry point."""
    args = MANIFEST["server"]["mcp_config"]["args"]
    return args[args.index(MANIFEST["server"]["entry_point"]) + 1 :]


@needs_cli
def test_the_official_cli_validates_the_manifest(tmp_path: Path) -> None:
    done = mcpb("validate", BUNDLE / "manifest.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation passes" in done.stdout


@needs_cli
def test_the_official_cli_rejects_a_broken_manifest(tmp_path: Path) -> None:
    broken = json.loads(json.dumps(MANIFEST))
    broken["user_config"]["documents"]["type"] = "folder"
    (tmp_path / "manifest.json").write_text(json.dumps(broken), encoding="utf-8")
    done = mcpb("validate", tmp_path / "manifest.json", cwd=tmp_path)
    assert done.returncode != 0 and "user_config.documents.type" in done.stdout + done.stderr


@needs_cli
def test_the_official_cli_packs_the_bundle(tmp_path: Path) -> None:
    out = tmp_path / "granrag-mcp.mcpb"
    done = mcpb("pack", BUNDLE, out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    names = set(zipfile.ZipFile(out).namelist())
    assert {"manifest.json", "pyproject.toml", MANIFEST["server"]["entry_point"]} <= names
    assert json.loads(zipfile.ZipFile(out).read("manifest.json")) == MANIFEST


def test_the_bundle_installs_this_version_of_the_package() -> None:
    version = PYPROJECT["project"]["version"]
    assert MANIFEST["version"] == version
    bundle = tomllib.loads((BUNDLE / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"granrag-mcp=={version}" in bundle["project"]["dependencies"]
    assert MANIFEST["server"]["type"] == "uv" and MANIFEST["server"]["mcp_config"]["command"] == "uv"


def test_the_user_folders_reach_the_server_as_arguments_it_reads() -> None:
    settings = MANIFEST["user_config"]
    assert settings["documents"]["type"] == "directory" and settings["documents"]["required"]
    assert settings["store"]["type"] == "directory"
    args = build_parser().parse_args(bundle_args())
    assert args.command == "serve"
    assert [str(folder) for folder in args.library] == ["${user_config.documents}"]
    assert str(args.store) == "${user_config.store}"


def test_the_entry_point_is_the_package_command_line(tmp_path: Path) -> None:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, BUNDLE / MANIFEST["server"]["entry_point"], "serve", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "--library" in done.stdout
