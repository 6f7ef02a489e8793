"""Docs as tests: executed docstrings, stubs that match the native module, model pages with
their five sections."""

import ast
import doctest
import importlib
import re

import pytest

from conftest import ROOT

DOCTEST_MODULES = ["qoelab.scenario", "qoelab.tfd", "qoelab.results"]


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_docstrings_run(name):
    mod = importlib.import_module(name)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_stub_matches_native_module():
    from qoelab import _native

    tree = ast.parse((ROOT / "python" / "qoelab" / "_native.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(_native) if not n.startswith("_")} | {"__version__"}
    assert stubbed == public


SECTIONS = ["Description", "Scope and limitations", "Parameters", "References", "Validation"]
PAGES = sorted((ROOT / "docs" / "models").glob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_model_page_has_five_sections(page):
    heads = [h.strip().lower() for h in re.findall(r"^#{2,3} (.+)$", page.read_text(), re.M)]
    for s in SECTIONS:
        assert any(h.startswith(s.lower().split()[0]) for h in heads), f"{page.name}: no '{s}' section (has {heads})"
