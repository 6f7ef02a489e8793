"""The documentation site (mkdocs.yml, docs/) builds with warnings as errors, and every page is in it.

`mkdocs build --strict` fails on a broken relative link or anchor, a nav entry without its page, a
page left out of the nav, and an API reference entry (mkdocstrings) that does not resolve.
"""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# Pages in docs/ deliberately not in the nav (each with the reason).
NOT_IN_NAV: dict[str, str] = {}


def nav_pages() -> list[str]:
    """The pages the nav names (mkdocs.yml: `title: page.md` lines under `nav:`)."""
    text = (REPO / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:\n"):]
    return re.findall(r":\s*(\S+\.md)\s*$", nav, re.M)


def test_every_page_is_in_the_nav():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    nav = nav_pages()
    assert len(nav) == len(set(nav)), "a page is twice in the nav"
    assert not set(nav) - pages, f"nav entries without a page: {sorted(set(nav) - pages)}"
    missing = pages - set(nav) - set(NOT_IN_NAV)
    assert not missing, f"pages in docs/ but not in mkdocs.yml's nav (add them, or to NOT_IN_NAV with why): {sorted(missing)}"


def test_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--clean", "-f", str(REPO / "mkdocs.yml"),
                        "-d", str(site)], cwd=REPO, capture_output=True, text=True, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr[-6000:]
    assert "WARNING" not in p.stderr, p.stderr[-6000:]
    for page in nav_pages():
        html = site / (page[:-3] + "/index.html" if page != "index.md" else "index.html")
        assert html.is_file(), html
    api = (site / "api" / "scenario" / "index.html").read_text()
    # the reference is generated from the docstrings, not typed
    assert "the name of a bundled scenario" in api and "def " not in api
    home = (site / "index.html").read_text()
    assert "make demo" in home  # the README is the home page
