"""Committed results come from one clean commit (qoelab.experiment.provenance): a report names
the code of its runs and of itself; a folder under scenarios/*/expected/ is refused unless that
is one clean commit; the folders committed before the rule are marked legacy, each in the list
below, so a new one cannot be legacy silently. And repetitions whose runs give identical outputs
are refused an interval, on real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import provenance as prov

#: Committed folders from before the one-clean-commit rule, with what their PROVENANCE.md says.
LEGACY = {
    "scenarios/tfd/expected/rfc-40M-1000p": "14 code versions",
}


def test_a_report_names_its_code_and_its_status():
    assert prov.of(["abc"], "abc")["status"] == "clean"
    assert prov.of(["abc", "def"], "def")["status"] == "mixed"  # runs from two commits
    assert prov.of(["abc-dirty"], "abc-dirty")["status"] == "mixed"  # uncommitted changes
    assert prov.of(["abc"], "def")["status"] == "mixed"  # written by other code than its runs'
    assert prov.of([], "abc")["status"] == "unrecorded"
    assert prov.of(["0.1.0"], "abc")["status"] == "unrecorded"  # outside a checkout: the package version only
    p = prov.of(["abc", "abc-dirty"], "abc", command="qoelab reproduce x")
    assert p["command"] == "qoelab reproduce x" and p["runs_code"] == ["abc", "abc-dirty"]
    assert "2 code version(s), 1 with uncommitted changes" in prov.describe(p)


def test_a_mixed_commit_folder_is_refused_for_committed_results(tmp_path, monkeypatch):
    """publish into scenarios/<x>/expected/ of the repository refuses runs of several commits, of
    a dirty checkout, or a report written by other code; one clean commit passes; a folder
    elsewhere is not checked."""
    from qoelab.experiment.tables import publish

    monkeypatch.setattr(paths, "root", lambda: tmp_path)
    monkeypatch.setattr(prov, "code_version", lambda: "c0ffee")
    exp = tmp_path / "scenarios" / "toy" / "expected"
    exp.mkdir(parents=True)
    kw = dict(paper="mptcp", quick=True, title="t", tables=[], findings=[], source="s", figures=[], reading="r",
              summary="s", setup="u", cost={"runs": 1}, seeds=[1])
    for versions in (["c0ffee", "beef"], ["c0ffee-dirty"], ["beef"], []):
        with pytest.raises(QoelabError, match="a committed result must come from one clean commit"):
            publish(exp, **kw, versions=versions)
        assert not (exp / "report.json").exists()
    publish(exp, **kw, versions=["c0ffee"])
    doc = json.loads((exp / "report.json").read_text())
    assert doc["provenance"]["status"] == "clean" and doc["provenance"]["runs_code"] == ["c0ffee"]
    assert "One clean commit, c0ffee, ran every run and wrote this report." in (exp / "report.md").read_text()
    elsewhere = tmp_path / "results" / "x"
    elsewhere.mkdir(parents=True)
    publish(elsewhere, **kw, versions=["c0ffee", "beef"])
    assert json.loads((elsewhere / "report.json").read_text())["provenance"]["status"] == "mixed"
    # Legacy passes only where the folder says so.
    with pytest.raises(QoelabError):
        prov.check_committable({"status": "legacy"}, exp)
    prov.legacy_note(exp, versions=["a", "b-dirty"], what="w", recomputed="r")
    prov.check_committable({"status": "legacy"}, exp)


def test_committed_folders_are_known():
    assert prov.committed_folder(paths.root() / "scenarios" / "sqf" / "expected")
    assert prov.committed_folder(paths.root() / "scenarios" / "tfd" / "expected" / "full-linux" / "x")
    assert not prov.committed_folder(paths.root() / "scenarios" / "sqf")
    assert not prov.committed_folder(paths.root() / "results" / "expected")


def _provenance_of(folder: Path) -> dict | None:
    if (folder / "report.json").is_file():
        return json.loads((folder / "report.json").read_text()).get("provenance")
    if (folder / "meta.json").is_file():
        return json.loads((folder / "meta.json").read_text()).get("provenance")
    return None


def test_every_committed_result_is_one_clean_commit_or_declared_legacy():
    """Every folder under scenarios/*/expected/ that holds a report (report.json, or a TFD
    calibration's meta.json) names one clean commit, the same for its runs and its report; or it
    is one of the legacy folders above, marked by its PROVENANCE.md (and its report says so)."""
    root = paths.root()
    seen = set()
    for f in sorted([*root.glob("scenarios/*/expected/**/report.json"), *root.glob("scenarios/*/expected/**/meta.json")]):
        folder = f.parent
        rel = folder.relative_to(root).as_posix()
        seen.add(rel)
        p = _provenance_of(folder)
        if rel in LEGACY:
            note = folder / prov.LEGACY_FILE
            assert note.is_file() and LEGACY[rel] in note.read_text(), rel
            continue
        assert p is not None and p.get("status") == "clean", (rel, p)
        assert p["runs_code"] == [p["report_code"]] and not p["report_code"].endswith("-dirty"), rel
    for rel in LEGACY:
        assert (root / rel / prov.LEGACY_FILE).is_file(), rel
    assert seen, "no committed result found"


# --- independence on real runs -----------------------------------------------------------------


def _cbr(rate: str) -> str:
    """The layer's toy (tests/experiment/toy.py) with a CBR source: nothing draws from the seed."""
    from toy import TOY

    return TOY.replace('app = { kind = "poisson", rate = "900Mbps", payload = "1000B" }',
                       f'app = {{ kind = "cbr", rate = "{rate}", payload = "1000B" }}')


def test_repetitions_of_a_seed_independent_scenario_are_refused_an_interval(tmp_path):
    """A CBR source through a drop-tail link draws nothing from the seed: its repetitions are
    identical runs. The layer gives their estimates no interval (marked not independent in the
    Markdown, CSV and report.json), judges any claim on them inconclusive, and goes on."""
    import tomllib

    import pyarrow.parquet as pq

    from qoelab.experiment import Finding, Label, Verdict, above, core
    from qoelab.experiment.tables import Column, Table, finding_json
    from qoelab.scenario import Scenario

    def build(p):
        return Scenario.from_dict(tomllib.loads(_cbr(p["rate"])), "cbr.toml")

    def metrics(d, p):
        (row,) = pq.read_table(d / "flows.parquet").to_pylist()
        return {"throughput": float(row["throughput_bps"]) / 1e6}

    exp = core.Experiment("cbr", [{"rate": "500Mbps"}, {"rate": "800Mbps"}], build, metrics, paired=("rate",), reps=3)
    core.run(exp, tmp_path)
    rows = core.rows(exp, tmp_path)
    assert len(rows) == 6 and len({r["seed"] for r in rows}) == 3
    for rate in ("500Mbps", "800Mbps"):
        assert core.identical(core.select(rows, rate=rate))
    (a, b) = core.aggregate(rows, ("rate",), ("throughput",))
    assert not a["throughput"].independent and a["throughput"].n == 3
    d = core.paired(rows, "rate", "800Mbps", "500Mbps", "throughput")[()]
    f = Finding("faster", "a faster source sends more", Label.TRIVIAL, above(), "Mbit/s", d)
    assert f.verdict is Verdict.INCONCLUSIVE and "not independent" in f.note
    assert finding_json(f)["estimate"] == {"mean": pytest.approx(d.mean), "lo": None, "hi": None, "n": 3,
                                           "independent": False}
    t = Table("t", "t", [Column("rate", "rate"), Column("throughput", "throughput")], [a, b])
    assert "(not independent)" in t.markdown()
