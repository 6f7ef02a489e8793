"""The committed full reproductions (``scenarios/<paper>/expected/full/``): evidence by the
layer's rules, with the sensitivity column (issues 35 and 38 item 7). They are too long for CI to
re-run (``docs/performance.md`` times them), so these tests check what was committed: one clean
commit, at least 10 paired repetitions per finding, not flagged quick, every finding judged under
each declared alternative that runs, and no run folders or work files committed beside it."""

from __future__ import annotations

import pytest

from conftest import ROOT
from qoelab.experiment.report import check_report, load_report

#: Papers whose full run with --sensitivity is committed, and the work files it must not carry.
FULL = {"interactive": ("runs", "sensitivity", "frozen_psnr.npz", "stages.json"),
        "mptcp": ("runs", "sensitivity", "stages.json"),
        "sqf": ("runs", "sensitivity", "stages.json"),
        "wimax": ("runs", "sensitivity", "video", "stages.json")}


@pytest.mark.parametrize("paper", sorted(FULL))
def test_the_committed_full_report_has_evidence_and_sensitivity(paper: str):
    folder = ROOT / "scenarios" / paper / "expected" / "full"
    doc = load_report(folder / "report.json")
    assert check_report(doc, folder) == []
    assert doc["mode"] == "full" and doc["provenance"]["status"] == "clean"
    assert "--sensitivity" in doc["provenance"]["command"].split(), doc["provenance"]["command"]
    names = {c["name"] for c in doc["choices"] if c["alternatives"]}
    for f in doc["findings"]:
        assert not f["quick"], f["key"]
        if f["verdict"] not in ("untestable",) and f["n"] is not None:
            assert f["n"] >= 10, (f["key"], f["n"])
        assert f["sensitivity"] is not None and {k.split("=")[0] for k in f["sensitivity"]["under"]} <= names, f["key"]
    assert any(f["sensitivity"]["under"] for f in doc["findings"])
    for work in FULL[paper]:
        assert not (folder / work).exists(), f"{folder}/{work}: a work file of the run is committed"


def test_the_provenance_command_reruns_the_report():
    """The command a report names is the one that reruns it: `--reps` is in it when a count was
    given (a default count is the plan's, so the bare command already reruns it)."""
    from qoelab.experiment import provenance

    assert provenance.command("mptcp", quick=False, sensitivity=True, reps=10) == \
        "qoelab reproduce mptcp --sensitivity --reps 10"
    assert provenance.command("sqf", quick=True, sensitivity=False) == "qoelab reproduce sqf --quick"
