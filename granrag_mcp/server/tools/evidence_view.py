"""The evidence view: an MCP App (the SDK's `mcp.server.apps`) that shows a person the page a hit lies on with its
region marked, the hit's text and its citation beside it. Hosts that render MCP Apps open it for `page_image`'s
results; other clients never read it and get the image and text alone."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from mcp.server.apps import Apps, ResourceCsp

VIEW_URI = "ui://granrag-mcp/evidence.html"
VIEW_FILE = "evidence_view.html"
"""The view's HTML, a resource of this package: one self-contained page (its script and style inline)."""


def view_html() -> str:
    return files(__package__).joinpath(VIEW_FILE).read_text(encoding="utf-8")


def evidence_app() -> Apps:
    """The Apps extension with the evidence view as its `ui://` resource, for `MCPServer(extensions=...)`; the tool
    that opens the view links it with `tool_meta()`."""
    apps = Apps()
    # The view loads nothing: the page image arrives as data in the tool result, so no domain is allowed.
    apps.add_html_resource(
        VIEW_URI,
        view_html(),
        name="evidence-view",
        title="Evidence view",
        description="The page a hit lies on with its region marked, beside the hit's text and citation.",
        csp=ResourceCsp(connect_domains=[], resource_domains=[]),
        prefers_border=True,
    )
    return apps


def tool_meta() -> dict[str, Any]:
    """The `_meta` of a tool whose results the evidence view shows (the Apps extension's `ui.resourceUri`)."""
    return {"ui": {"resourceUri": VIEW_URI}}
