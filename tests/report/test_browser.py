"""``index.html`` in a real browser: headless Chromium driven by Playwright loads the page from
``file://`` and checks that it makes no request but the file and ``data:`` URLs, logs no console
error, decodes every figure, has every section the status table links to, the expected rows, and
shows an injected ``<script>`` as text. A missing browser fails the test (it is installed by
``make install``: Playwright from the ``[test]`` extra, Chromium from Debian by
``scripts/install-system-deps.sh``). ``QOELAB_INDEX_DIR`` names a folder of a real
``qoelab reproduce all --quick`` run to check as well."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from qoelab.report import html as H
from qoelab.reproduce.papers import PAPERS

from .reports import make_all


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as p:
        try:
            b = p.chromium.launch(headless=True)
        except Error:
            exe = shutil.which("chromium") or shutil.which("chromium-browser")
            if exe is None:
                pytest.fail("no Chromium: neither Playwright's browser nor a `chromium` on PATH "
                            "(run `make install`, which runs scripts/install-system-deps.sh)")
            b = p.chromium.launch(headless=True, executable_path=exe)
        yield b
        b.close()


def open_page(browser, index: Path):
    requests, problems = [], []
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}") if not r.url.startswith("data:") else None)

    def route(r):
        requests.append(r.request.url)
        if r.request.url == index.as_uri() or r.request.url.startswith("data:"):
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.goto(index.as_uri(), wait_until="load")
    return page, requests, problems


def check_page(page, requests, problems, index: Path) -> None:
    assert problems == []
    assert [u for u in requests if u != index.as_uri() and not u.startswith("data:")] == []
    imgs = page.locator("img")
    for i in range(imgs.count()):
        assert imgs.nth(i).evaluate("e => e.complete && e.naturalWidth > 0"), f"figure {i} did not decode"
    links = page.locator("#status a[href^='#']")
    assert links.count() == len(PAPERS)
    for i in range(links.count()):
        target = links.nth(i).get_attribute("href")
        assert page.locator(target).count() == 1 and page.locator(target).is_visible(), target
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("script").count() == 0


def test_synthetic_page(browser, tmp_path):
    out = make_all(tmp_path / "all")
    index = H.write_index(out, H.entries_from(out))
    page, requests, problems = open_page(browser, index)
    check_page(page, requests, problems, index)
    assert page.locator("img").count() == 10  # two figures for each of tfd, sqf, wimax, interactive and mptcp
    assert page.locator("#paper-tfd table.data tbody tr").count() == 4
    assert page.locator("#paper-sqf table.data tbody tr").count() == 3
    assert page.locator("#paper-sqf table.findings tbody tr").count() == 3
    assert page.locator("#status tbody tr").count() == len(PAPERS)
    # the injected markup is on screen as text, not run and not an element
    assert "<script>window.__pwned = 1</script>" in page.locator("#paper-sqf table.findings").inner_text()
    assert page.locator("img[src='x']").count() == 0
    shot = Path(os.environ.get("QOELAB_SCREENSHOT", tmp_path / "index.png"))
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.close()


@pytest.mark.skipif(not os.environ.get("QOELAB_INDEX_DIR"), reason="QOELAB_INDEX_DIR names no real run")
def test_real_run_page(browser):
    index = Path(os.environ["QOELAB_INDEX_DIR"]) / "index.html"
    page, requests, problems = open_page(browser, index)
    check_page(page, requests, problems, index)
    page.close()


def test_checks_catch_a_bad_page(browser, tmp_path):
    # The same checks on a page that loads a remote image and runs a script must fail.
    index = tmp_path / "index.html"
    index.write_text('<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
                     "<script>console.error('boom')</script></body></html>")
    page, requests, problems = open_page(browser, index)
    with pytest.raises(AssertionError):
        check_page(page, requests, problems, index)
    assert "http://127.0.0.1:9/x.png" in requests and any("boom" in p for p in problems)
    page.close()
