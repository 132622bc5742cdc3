"""The README's `make run` is what an MCP client launches: its stdout must carry the server's protocol alone."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL_LINE = '{"jsonrpc":"2.0","id":1,"result":{}}'


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
@pytest.mark.parametrize("target", ["run", "serve-http"])
def test_make_run_writes_nothing_but_the_server_output_to_stdout(tmp_path: Path, target: str) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    server = venv / "bin" / "granrag-mcp"  # stands in for the installed server: one protocol line, a log line
    server.write_text(f"#!/bin/sh\necho '{PROTOCOL_LINE}'\necho 'a log line' >&2\n", encoding="utf-8")
    server.chmod(0o755)
    stamp = venv / ".installed"
    stamp.touch()
    later = (ROOT / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))  # installed after the last change to pyproject.toml: no install step runs
    # As a client starts it: not as a sub-make of `make test`, whose variables would make it print its directory.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", target, f"VENV={venv}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == PROTOCOL_LINE + "\n"
    assert "a log line" in done.stderr
