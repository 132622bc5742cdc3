"""The evidence view in a real browser: the OS's Chromium driven by Playwright (the `test` extra; no browser is
downloaded), the view's HTML in a sandboxed frame of a stand-in host page (`evidence_view_host.html`), given the
server's own `page_image` result for a hit: the page image drawn, the answer's box marked where the answer's
characters lie on it, the citation and the hit's text beside it, and the messages the view sends its host. Skipped
in one line where Playwright or a Chromium is not installed; the node test (`test_evidence_view`) runs the same
script without a browser."""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from granrag_mcp.server.tools.evidence_view import view_html
from tests.server.test_app import call, run
from tests.server.tools.test_evidence import APPS, answer_boxes, corpus, overlaps

__all__ = ["corpus"]  # the fixture, shared with test_evidence

HOST = Path(__file__).with_name("evidence_view_host.html")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
"""The OS packages' names for a Chromium, looked for on PATH; GRANRAG_TEST_CHROMIUM names another."""


def chromium() -> str | None:
    named = os.environ.get("GRANRAG_TEST_CHROMIUM")
    return named or next((found for name in BROWSERS if (found := shutil.which(name))), None)


def browser_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install 'granrag-mcp[test]')"
    if chromium() is None:
        return "no Chromium is installed (apt-get install chromium)"
    return None


pytestmark = pytest.mark.skipif(browser_missing() is not None, reason=browser_missing() or "")


def page_image_result(corpus: dict[str, Any], answer: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async def scenario(client: Client) -> tuple[dict[str, Any], dict[str, Any]]:
        hit = (await call(client, "search_narrow", {"query": answer, "k": 1, "lexical": True}))["hits"][0]
        arguments = {"chunk_id": hit["chunk_id"], "max_pixels": 200_000}
        result = await client.call_tool("page_image", arguments)
        return arguments, result.model_dump(mode="json", by_alias=True, exclude_none=True)

    return run(corpus["server"], scenario, extensions=[APPS])  # type: ignore[no-any-return]


def test_the_view_in_a_browser_draws_the_page_marks_the_answer_and_cites_it(
    corpus: dict[str, Any], tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    answer = list(corpus["pdfs"])[13]
    arguments, result = page_image_result(corpus, answer)
    page_number, truth = answer_boxes(corpus["pdfs"][answer][1], answer)
    host = HOST.read_text(encoding="utf-8").replace("__VIEW__", html.escape(view_html(), quote=True))
    with sync_playwright() as playwright:
        # No sandbox: the test may run as root in a container, where Chromium's own sandbox cannot start.
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1300})
            page.set_content(host)
            page.wait_for_function("window.received.some(m => m.method === 'ui/notifications/initialized')")
            before = page.evaluate("window.received.length")
            page.evaluate("([args, result]) => window.deliver(args, result)", [arguments, result])
            view = page.frame(name="view")
            assert view is not None
            view.wait_for_function(
                "document.querySelector('#pages img') && document.querySelector('#pages img').complete "
                "&& document.querySelector('#pages img').naturalWidth > 0"
            )
            page.wait_for_function("window.answered.some(m => m.id === 99)")
            drawn = view.evaluate(
                """() => [...document.querySelectorAll('#pages .page')].map(frame => {
                    const image = frame.querySelector('img').getBoundingClientRect();
                    const marks = [...frame.querySelectorAll('.mark')].map(m => m.getBoundingClientRect());
                    return {
                        alt: frame.querySelector('img').alt,
                        natural: [frame.querySelector('img').naturalWidth, frame.querySelector('img').naturalHeight],
                        image: [image.left, image.top, image.width, image.height],
                        marks: marks.map(r => [r.left, r.top, r.right, r.bottom]),
                    };
                })"""
            )
            citation = view.inner_text("#citation")
            text = view.inner_text("#text")
            status = view.inner_text("#status")
            received = page.evaluate("window.received")
            page.screenshot(path=str(tmp_path / "view.png"))
        finally:
            browser.close()

    shown = result["structuredContent"]["images"]
    assert len(drawn) == len(shown) >= 1 and status == ""
    about = shown[[i["page"] for i in shown].index(page_number)]
    frame = drawn[shown.index(about)]
    assert frame["natural"] == [about["width"], about["height"]], "the browser decoded the PNG the tool sent"
    assert frame["alt"] == f"page {page_number} of {result['structuredContent']['doc_id']}"
    left, top, width, height = frame["image"]
    assert width > 100 and height > 100, "the page image is drawn at a size a person can read"
    region = about["region"]
    on_page = [  # each mark as the part of the page it covers, from where the browser laid it over the image
        [
            region[0] + (x0 - left) / width * (region[2] - region[0]),
            region[1] + (y0 - top) / height * (region[3] - region[1]),
            region[0] + (x1 - left) / width * (region[2] - region[0]),
            region[1] + (y1 - top) / height * (region[3] - region[1]),
        ]
        for x0, y0, x1, y1 in frame["marks"]
    ]
    assert on_page and any(overlaps(box, truth) for box in on_page), (on_page, truth)
    assert all(left - 1 <= x0 and x1 <= left + width + 1 for x0, _, x1, _ in frame["marks"]), "marks stay on the page"
    assert citation == result["structuredContent"]["citation"] and f"p. {page_number}" in citation
    assert answer in text
    first = received[0]
    assert first["method"] == "ui/initialize" and first["jsonrpc"] == "2.0" and isinstance(first["id"], int)
    assert first["params"]["protocolVersion"] and first["params"]["appInfo"]["name"]
    assert received[1] == {"jsonrpc": "2.0", "method": "ui/notifications/initialized", "params": {}}
    sizes = [m for m in received[before:] if m.get("method") == "ui/notifications/size-changed"]
    assert sizes and sizes[-1]["params"]["width"] > 0 and sizes[-1]["params"]["height"] > height
    assert {"jsonrpc": "2.0", "id": 99, "result": {}} in received
