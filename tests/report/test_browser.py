"""``index.html`` in a real browser: headless Chromium driven by Playwright loads the page from
``file://`` and checks that it makes no request but the file and ``data:`` URLs, logs no console
error, decodes every figure, has every section the status table links to, the expected rows, and
shows an injected ``<script>`` as text; and that a researcher can publish from it: the page never
scrolls sideways and no table is wider than its column (a wide one scrolls in its own box,
measured), no printed number is longer than 12 characters, every estimate over fewer than 10
repetitions carries a visible "quick" flag, the headings run paper → section → table, and the
findings carry their sensitivity. Screenshots are taken (the page, and the widest table's box).
A missing browser fails the test (it is installed by ``make install``: Playwright from the
``[test]`` extra, Chromium from Debian by ``scripts/install-system-deps.sh``). ``QOELAB_INDEX_DIR``
names a folder of a real ``qoelab reproduce all --quick`` run to check as well."""

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
    check_layout(page)


#: Numbers as a reader sees them: a run of digits (with separators, a fraction, an exponent).
NUMBER = r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])"


def check_layout(page) -> None:
    """What makes the page publishable, measured in the browser (module doc)."""
    import re

    # The page never scrolls sideways, and no table is wider than its section's column: a wide
    # table scrolls inside its own box.
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    bad = page.evaluate("""() => [...document.querySelectorAll('table')].map(t => {
        const box = t.closest('.scroll'), col = (t.closest('section') || document.body).getBoundingClientRect();
        const b = (box || t).getBoundingClientRect();
        return {id: t.id || t.className, boxed: !!box, right: b.right, left: b.left,
                colLeft: col.left, colRight: col.right};
    }).filter(x => !x.boxed || x.right > x.colRight + 1 || x.left < x.colLeft - 1)""")
    assert bad == [], bad
    # No number printed longer than 12 characters (3.05e29 is not written out).
    texts = page.evaluate("() => [...document.querySelectorAll('td, th, li, p, h1, h2, h3, h4, h5, figcaption')]"
                          ".map(e => e.innerText)")
    long = [m for t in texts for m in re.findall(NUMBER, t) if len(m) > 12]
    assert long == [], long[:5]
    # Every estimate over fewer than 10 repetitions is flagged, visibly.
    quick = page.locator("td.quick")
    for i in range(quick.count()):
        flag = quick.nth(i).locator(".qflag")
        assert flag.count() == 1 and flag.is_visible() and "quick" in flag.inner_text(), i
    # One heading hierarchy: h1 (page) → h2 (paper) → h3 (section) → h4 (table), never a jump
    # downwards by more than one level, and one h1.
    levels = page.evaluate("() => [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => +h.tagName[1])")
    assert levels.count(1) == 1 and levels[0] == 1
    assert all(b <= a + 1 for a, b in zip(levels, levels[1:])), levels
    # Every findings table has the sensitivity column.
    for i in range(page.locator("table.findings").count()):
        heads = page.locator("table.findings").nth(i).locator("thead th").all_inner_texts()
        assert "sensitivity" in heads


def test_synthetic_page(browser, tmp_path):
    out = make_all(tmp_path / "all")
    index = H.write_index(out, H.entries_from(out))
    page, requests, problems = open_page(browser, index)
    check_page(page, requests, problems, index)
    assert page.locator("img").count() == 12  # two figures for each of tfd, sqf, wimax, interactive, mptcp and qos
    assert page.locator("#paper-tfd table.data").first.locator("tbody tr").count() == 4
    assert page.locator("#paper-sqf table.data").first.locator("tbody tr").count() == 3
    assert page.locator("#paper-sqf table.findings tbody tr").count() == 4
    # The wide table is wider than the column and scrolls in its box; its numbers are formatted.
    box = page.locator("#paper-sqf .scroll:has(#sqf-wide), #paper-sqf .scroll:has(table.data)").last
    assert box.evaluate("b => b.scrollWidth > b.clientWidth")
    assert "3.05e+29" in page.locator("#paper-sqf").inner_text()
    # The quick cells (n = 2) and the quick findings are flagged; the fragile finding says on what.
    assert page.locator("#paper-sqf td.quick .qflag").count() >= 16
    assert "depends on coupled" in page.locator("#paper-tfd table.findings").inner_text()
    assert page.locator("#paper-sqf table.choices").count() == 1
    assert page.locator("#status tbody tr").count() == len(PAPERS)
    # the injected markup is on screen as text, not run and not an element
    assert "<script>window.__pwned = 1</script>" in page.locator("#paper-sqf table.findings").inner_text()
    assert page.locator("img[src='x']").count() == 0
    shot = Path(os.environ.get("QOELAB_SCREENSHOT", tmp_path / "index.png"))
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    box.screenshot(path=str(shot.with_name(shot.stem + "-wide-table.png")))
    assert shot.with_name(shot.stem + "-wide-table.png").stat().st_size > 1_000
    page.close()


def test_layout_checks_catch_an_overflowing_table_and_a_long_number(browser, tmp_path):
    """The layout checks fail on a page whose wide table is not boxed and that prints a long
    number in full."""
    index = tmp_path / "index.html"
    cells = "".join(f"<td>{'x' * 40}</td>" for _ in range(20))
    index.write_text('<!DOCTYPE html><html><body><h1>t</h1><section><table><tr>' + cells
                     + "</tr></table><p>305000000000000000000000000000</p></section></body></html>")
    page, requests, problems = open_page(browser, index)
    with pytest.raises(AssertionError):
        check_layout(page)
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
