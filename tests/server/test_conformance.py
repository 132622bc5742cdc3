"""The official MCP conformance suite (`make install` puts a pinned copy and the node 22 it needs in .tools/) against
one HTTP server over a real store, on protocol 2026-07-28 and on 2025-11-25.

Only the scenarios that apply to this server run: the others call the reference test server's fixtures (tools
such as `test_image_content`, resources such as `test://static-text`, prompts) or capabilities this server does
not declare (logging, `resources/subscribe`, completions). Every check of a scenario that runs must pass, except
the few named in `FIXTURE_CHECKS`, which need a diagnostic tool of the reference server and say so themselves.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.transport.test_http import Running, real_store_server

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / ".tools" / "conformance" / "node_modules"
CLI = SUITE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE = SUITE / ".bin" / "node"
SCENARIO_TIMEOUT = 120

COMMON = ["tools-list", "tools-call-error", "resources-list", "prompts-list", "dns-rebinding-protection"]
SCENARIOS = {
    "2026-07-28": [
        *COMMON,
        "server-stateless",
        "caching",
        "http-header-validation",
        "sep-2164-resource-not-found",
        "server-sse-multiple-streams",
    ],
    "2025-11-25": [*COMMON, "server-initialize", "server-session-lifecycle", "ping", "server-sse-multiple-streams"],
}
FIXTURE_CHECKS = {
    # Both call the reference server's diagnostic tool `test_missing_capability`, which this server does not have.
    "sep-2575-server-rejects-undeclared-capability",
    "sep-2575-missing-capability-http-400",
}

pytestmark = pytest.mark.skipif(
    not CLI.exists() or not (NODE.exists() or shutil.which("node")),
    reason="the MCP conformance suite is not installed: run `make install` on a machine with npm",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with real_store_server(tmp_path_factory.mktemp("conformance")) as running:
        yield running


def checks(server: Running, version: str, scenario: str, out: Path) -> list[dict]:
    """Run one scenario at one protocol version; the checks it recorded."""
    node = str(NODE) if NODE.exists() else str(shutil.which("node"))
    command = [node, str(CLI), "server", "--url", server.url, "--scenario", scenario, "--spec-version", version]
    done = subprocess.run(
        [*command, "-o", str(out)], capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, cwd=out.parent
    )
    found = [c for path in sorted(out.glob("*/checks.json")) for c in json.loads(path.read_text(encoding="utf-8"))]
    assert found, f"{scenario} at {version} recorded no checks (exit {done.returncode}): {done.stdout[-2000:]}"
    return found


@pytest.mark.parametrize(
    ("version", "scenario"), [(v, s) for v, names in SCENARIOS.items() for s in names], ids=lambda x: x
)
def test_scenario_passes(server: Running, version: str, scenario: str, tmp_path: Path) -> None:
    recorded = checks(server, version, scenario, tmp_path / "out")
    failed = [
        f"{c['id']}: {c.get('errorMessage')}"
        for c in recorded
        if c.get("status") == "FAILURE" and c.get("id") not in FIXTURE_CHECKS
    ]
    assert not failed, f"{scenario} at {version}: " + "; ".join(failed)
    assert any(c.get("status") == "SUCCESS" for c in recorded)
