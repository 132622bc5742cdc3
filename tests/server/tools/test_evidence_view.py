"""The evidence view's HTML (an MCP App): well-formed, self-contained (its script inline, nothing loaded from
anywhere), and its script run in node against a stand-in host and DOM: the JSON-RPC messages it posts (initialize,
initialized, size-changed) and what it shows of a `page_image` result. Node runs the script where no browser is
installed; `test_evidence_view_browser` runs the same view in the OS's Chromium, where it is."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import lxml.html
import pytest

from granrag_mcp.server.tools.evidence_view import VIEW_URI, evidence_app, view_html

VOID = {"meta", "link", "img", "br", "hr", "input", "source", "area", "base", "col", "embed", "track", "wbr"}
REMOTE = re.compile(r"""(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|\bfetch\s*\(|XMLHttpRequest|WebSocket|\bimport\s*\(""", re.I)


class Balance(HTMLParser):
    """Every element closed, in order (HTML's void elements aside): a stack of open tags and the faults met."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.faults: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.faults.append(f"</{tag}> closes {self.open[-1] if self.open else 'nothing'}")
        else:
            self.open.pop()


def test_the_view_is_well_formed_and_loads_nothing_from_anywhere() -> None:
    html = view_html()
    balance = Balance()
    balance.feed(html)
    balance.close()
    assert balance.faults == [] and balance.open == []
    assert html.lstrip().lower().startswith("<!doctype html>")
    tree = lxml.html.document_fromstring(html)
    scripts = tree.findall(".//script")
    assert len(scripts) == 1 and scripts[0].get("src") is None and "ui/initialize" in (scripts[0].text or "")
    assert not tree.xpath("//*[@src or @href]"), "the view refers to another file"
    assert not REMOTE.search(html), REMOTE.search(html)
    assert tree.xpath("//meta/@charset") == ["utf-8"]
    ids = tree.xpath("//@id")
    assert len(ids) == len(set(ids))
    # every element the script looks up exists
    assert set(re.findall(r'el\("([a-z]+)"\)', scripts[0].text or "")) <= set(ids)


def test_the_view_is_served_as_an_mcp_app_resource() -> None:
    [binding] = evidence_app().resources()
    resource = binding.resource
    assert resource.uri == VIEW_URI and resource.mime_type == "text/html;profile=mcp-app"
    assert resource.meta == {"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": True}}


HARNESS = Path(__file__).with_name("evidence_view_harness.js")


def run_view(result: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The view's script run in node with a stand-in host that answers initialize and sends `result`."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the view's script cannot be run")
    tree = lxml.html.document_fromstring(view_html())
    given = {
        "script": tree.find(".//script").text,
        "ids": tree.xpath("//@id"),
        "result": result,
        "arguments": arguments,
    }
    done = subprocess.run(
        [node, str(HARNESS)], input=json.dumps(given), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_view_greets_the_host_then_shows_a_result_and_reports_its_size() -> None:
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    result = {
        "content": [
            {"type": "text", "text": "page image of c1"},
            {"type": "image", "data": pixel, "mimeType": "image/png"},
        ],
        "structuredContent": {
            "generation": 1,
            "chunk_id": "c1",
            "doc_id": "report.pdf",
            "pages": [2],
            "boxes": [{"page": 2, "box": [0.1, 0.5, 0.6, 0.55]}, {"page": 3, "box": [0.1, 0.1, 0.2, 0.2]}],
            "images": [{"page": 2, "width": 100, "height": 140, "region": [0.0, 0.4, 1.0, 0.9]}],
            "formulas": [{"page": 2, "box": [0.2, 0.65, 0.4, 0.7]}],
            "text": "<b>not markup</b> The mill was rebuilt.",
            "citation": "report.pdf · p. 2 · Minutes",
        },
        "isError": False,
    }
    seen = run_view(result, {"chunk_id": "c1"})
    messages = [p["message"] for p in seen["posted"]]
    steps = {s["label"]: s["posted"] for s in seen["steps"]}
    first = messages[0]
    assert first["jsonrpc"] == "2.0" and first["method"] == "ui/initialize" and isinstance(first["id"], int)
    assert first["params"]["protocolVersion"] == "2026-01-26" and first["params"]["appInfo"]["name"]
    assert steps["loaded"] == steps["stranger"] == 1, "the view spoke before the host answered, or to a stranger"
    assert messages[1] == {"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}}
    after = messages[steps["initialized"] : steps["shown"]]
    assert after and after[-1]["method"] == "ui/notifications/size-changed"
    assert after[-1]["params"] == {"width": 800, "height": 640}
    assert messages[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert all(p["origin"] == "*" for p in seen["posted"]) and all("id" not in m for m in messages[1:-1])
    assert "c1" in seen["waiting"]
    pages = seen["dom"]["pages"]["children"]
    frame, label = pages
    image, *drawn = frame["children"]
    marks = [d for d in drawn if d["className"] == "mark"]
    [formula] = [d for d in drawn if d["className"] == "formula"]
    assert {k: float(v.rstrip("%")) for k, v in formula["style"].items()} == pytest.approx(
        {"left": 20.0, "top": 50.0, "width": 20.0, "height": 10.0}
    )
    assert image["attributes"]["src"] == f"data:image/png;base64,{pixel}"
    assert label["text"] == "p. 2"
    # only page 2's box, placed on the image's region (rows 0.4-0.9 of the page)
    assert len(marks) == 1
    style = {k: float(v.rstrip("%")) for k, v in marks[0]["style"].items()}
    assert style == pytest.approx({"left": 10.0, "top": 20.0, "width": 50.0, "height": 10.0})
    assert seen["dom"]["citation"]["text"] == "report.pdf · p. 2 · Minutes"
    assert seen["dom"]["text"]["text"] == "<b>not markup</b> The mill was rebuilt."
    assert seen["dom"]["text"]["children"] == []
    assert seen["dom"]["status"]["text"] == ""


def test_the_view_shows_a_tool_error_in_one_line() -> None:
    result = {"content": [{"type": "text", "text": "'notes.md' has no pages to show"}], "isError": True}
    seen = run_view(result, {"chunk_id": "c9"})
    assert seen["dom"]["status"]["text"] == "'notes.md' has no pages to show"
    assert seen["dom"]["status"]["className"] == "error"
    assert seen["dom"]["pages"]["children"] == []
