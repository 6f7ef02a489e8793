"""``qoelab reproduce qos`` (issue 40 item 5): every discipline of :data:`qoelab.mechanisms.MECHANISMS`
is a row on both testbeds (a new one is one entry), only the discipline (and DiffServ's DSCP)
differs between the cells of a repetition, every declared alternative builds, and a quick run
writes a valid report with every row, a real decode's PSNR for the CIF video, findings judged
by the layer, and the committed ``scenarios/qos/expected/`` is today's."""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path

import pytest

from conftest import ROOT, run_cli, without_provenance
from qoelab.experiment import Label
from qoelab.experiment.choices import defaults, variants
from qoelab.experiment.report import check_report, load_report
from qoelab.mechanisms import MECHANISMS, Mechanism
from qoelab.reproduce import qos
from qoelab.reproduce.qos import build as B

EXPECTED = ROOT / "scenarios" / "qos" / "expected"


def test_every_mechanism_is_a_row_and_the_reservations_only_on_the_dumbbell():
    names = [m.name for m in MECHANISMS]
    assert list(B.disciplines("sqf")) == names
    assert list(B.disciplines("tfd")) == names + ["rsvp", "tfd"]
    assert {"fifo", "drr", "sqf", "fq_codel", "pie", "red", "codel", "diffserv_ef"} <= set(names)


def test_a_new_mechanism_is_one_entry(monkeypatch):
    extra = Mechanism("toy", "a toy FIFO", {"kind": "toy", "limit": "50p"})
    monkeypatch.setattr(B, "MECHANISMS", (*MECHANISMS, extra))
    E = B.experiments(B.plan(True))
    assert {"video": "cif", "discipline": "toy"} in E["sqf"].cells and {"discipline": "toy"} in E["tfd"].cells
    sc = E["sqf"].scenario({"video": "cif", "discipline": "toy"}, 0)
    assert sc.get("links[2].queue_ab") == {"kind": "toy", "limit": "50p"}
    assert B.label("toy") == "a toy FIFO"


def _strip(d: dict, queue_links: list[int], queue_key: str) -> dict:
    d = {**d, "links": [dict(x) for x in d["links"]], "flows": [dict(f) for f in d["flows"]]}
    for i in queue_links:
        d["links"][i].pop(queue_key, None)
    for f in d["flows"]:
        f.pop("dscp", None)
    d.pop("name", None)
    return d


@pytest.mark.parametrize("testbed", ["sqf", "tfd"])
def test_only_the_discipline_differs_within_a_repetition(testbed):
    p = B.plan(True)
    E = B.experiments(p)[testbed]
    links, key = ([2], "queue_ab") if testbed == "sqf" else ([2, 3, 4, 5], "queue")
    for rep in (0, 1):
        cells = [c for c in E.cells if c.get("video", "cif") == "cif"]
        built = {c["discipline"]: E.scenario(c, rep).data for c in cells}
        base = _strip(built["fifo"], links, key)
        for q, d in built.items():
            if q in B.RESERVATIONS:  # the TFD builder's own scenarios: their senders signal
                continue
            assert _strip(d, links, key) == base, q
            m = B.mechanism(q)
            for i in links:
                assert d["links"][i][key]["kind"] == m.queue["kind"]
            marked = {f["name"] for f in d["flows"] if f.get("dscp") == "EF"}
            assert marked == ({f["name"] for f in d["flows"] if str(f["name"]).startswith("video")}
                              if q == "diffserv_ef" else set()), q
    # Repetitions differ (their draws and the TFD builder's clips), cells of one share the seed.
    assert E.scenario(cells[0], 0).data != E.scenario(cells[0], 1).data


def test_every_declared_alternative_builds_and_reaches_its_keys():
    for name, setting in variants(qos.CHOICES):
        E = B.experiments(B.plan(True), setting)
        for exp in E.values():
            for c in exp.cells:
                exp.scenario(c, 0)
    s = {**defaults(qos.CHOICES), "red_thresholds": "scaled", "pie_target": "5ms", "tfd_buffer": "50p"}
    E = B.experiments(B.plan(True), s)
    red = E["tfd"].scenario({"discipline": "red"}, 0).data["links"][4]["queue"]
    assert (red["min_th"], red["max_th"], red["limit"]) == ("5p", "15p", "50p")
    assert E["sqf"].scenario({"video": "mpeg2", "discipline": "pie"}, 0).get("links[2].queue_ab.target") == "5ms"
    E = B.experiments(B.plan(True), {**defaults(qos.CHOICES), "red_thresholds": "scaled", "n_downloads": 20})
    assert E["tfd"].scenario({"discipline": "red"}, 0).data["links"][4]["queue"]["min_th"] == "100p"
    assert E["sqf"].scenario({"video": "cif", "discipline": "fifo"}, 0).get("flows[2].count") == 20


def test_a_class_of_its_own_is_by_construction_and_the_others_substantive():
    from qoelab.reproduce.qos.report import _label

    own = {"diffserv_ef", "wdrr_af41", "htb_af41"}
    assert all(_label(q) is Label.BY_CONSTRUCTION for q in own)
    assert all(_label(m.name) is Label.SUBSTANTIVE for m in MECHANISMS if m.name not in own)


def test_class_based_entries_mark_the_video_and_htb_rates_follow_the_line():
    from qoelab.mechanisms import BY_NAME, HTB_VIDEO_SHARE, queue_with_limit

    E = B.experiments(B.plan(True))
    sqf, tfd = E["sqf"].scenario({"video": "mpeg2", "discipline": "htb_af41"}, 0), E["tfd"].scenario(
        {"discipline": "htb_af41"}, 0)
    # LINE_BPS is the bottleneck each builder makes.
    assert sqf.get("links[2].rate") == "10Mbps" and B.LINE_BPS["sqf"] == 10_000_000
    assert {link["rate"] for link in tfd.data["links"][2:6]} == {"1Gbps"} and B.LINE_BPS["tfd"] == 10**9
    video = {c["name"]: c for c in sqf.get("links[2].queue_ab.classes")}["video"]
    assert (video["rate"], video["ceil"], video["dscp"]) == (f"{round(HTB_VIDEO_SHARE * 1e7)}bps", "10000000bps", ["AF41"])
    assert all(f.get("dscp") == "AF41" for f in tfd.data["flows"] if str(f["name"]).startswith("video"))
    assert sqf.get("flows[0].dscp") == "AF41" and "dscp" not in sqf.get("flows[2]")
    with pytest.raises(ValueError, match="htb_af41"):
        queue_with_limit(BY_NAME["htb_af41"], "50p")
    # Scaled RED thresholds move WRED's AF41 profile with them, above the default class's.
    s = {**defaults(qos.CHOICES), "red_thresholds": "scaled"}
    q = B.experiments(B.plan(True), s)["tfd"].scenario({"discipline": "wred_af41"}, 0).data["links"][4]["queue"]
    assert (q["min_th"], q["max_th"], q["profiles"][0]["min_th"], q["profiles"][0]["max_th"]) == ("100p", "300p", "300p", "900p")


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("qos") / "quick"
    code, _, err = run_cli("reproduce", "qos", "--quick", "-j", "2", "-o", str(out))
    assert code == 0, err
    return out


def test_quick_report_is_valid_with_every_row(quick: Path):
    doc = load_report(quick / "report.json")
    assert check_report(doc, quick) == [] and doc["paper"] == "qos" and doc["mode"] == "quick"
    tabs = {t["id"]: t for t in doc["tables"]}
    assert set(tabs) == {"qos-sqf", "qos-tfd"}
    for t in tabs.values():  # a study of our own: no paper column
        assert all(c.get("side") != "paper" for c in t["columns"])
    sqf = list(csv.DictReader((quick / "qos_sqf.csv").open()))
    assert [(r["video"], r["discipline"]) for r in sqf] == [(v, q) for v in B.VIDEOS for q in B.disciplines("sqf")]
    assert [r["discipline"] for r in csv.DictReader((quick / "qos_tfd.csv").open())] == \
        list(B.disciplines("tfd"))
    # The CIF video's PSNR is a real decode; the MPEG-2 trace has no bitstream, so none.
    for r in sqf:
        psnr = float(r["video_psnr_db"]) if r["video_psnr_db"] else math.nan
        assert (10 < psnr < 60) if r["video"] == "cif" else math.isnan(psnr), r
    reps = list(csv.DictReader((quick / "repetitions_tfd.csv").open()))
    assert len(reps) == 2 * len(B.disciplines("tfd")) and len({r["seed"] for r in reps}) == 2
    assert [f["path"] for f in doc["figures"]] == ["qos_sqf.png", "qos_tfd.png"]
    for f in doc["figures"]:
        assert (quick / f["path"]).read_bytes()[:4] == b"\x89PNG"
    # Two quick repetitions are not evidence, and every finding says so.
    assert all(f["quick"] for f in doc["findings"] if f["verdict"] != "untestable")
    keys = {(f["group"], f["key"]) for f in doc["findings"]}
    assert ("tfd", "tfd-loss") in keys and ("sqf-cif", "diffserv_ef-psnr") in keys and ("sqf-mpeg2", "red-cost") in keys


def test_strict_priority_keeps_the_video_whole(quick: Path):
    """EF below the line rate with a band of its own: no loss on either testbed (by construction)."""
    for name in ("qos_sqf.csv", "qos_tfd.csv"):
        for r in csv.DictReader((quick / name).open()):
            if r["discipline"] == "diffserv_ef":
                assert float(r["video_loss_pct"]) == 0.0, (name, r)


def test_the_committed_expected_report_is_valid():
    doc = load_report(EXPECTED / "report.json")
    assert doc["paper"] == "qos" and doc["mode"] == "quick" and doc["provenance"]["status"] == "clean"
    for f in doc["figures"]:
        assert (EXPECTED / f["path"]).is_file()


def test_the_committed_quick_report_is_todays(quick: Path):
    # scenarios/qos/expected/ is a quick run; a model or report change that moves it must
    # regenerate it (qoelab reproduce qos --quick -o DIR from a clean commit, then copy the
    # files expected/ holds), or the committed report silently describes an older simulator.
    committed = (EXPECTED / "report.md").read_text()
    assert without_provenance((quick / "report.md").read_text()) == without_provenance(committed), \
        "scenarios/qos/expected is stale: regenerate it"
    for name in ("qos_sqf.csv", "qos_tfd.csv"):
        assert (quick / name).read_text() == (EXPECTED / name).read_text(), f"scenarios/qos/expected/{name} is stale"


def test_mechanism_is_frozen_data():
    with pytest.raises(dataclasses.FrozenInstanceError):
        MECHANISMS[0].name = "x"  # type: ignore[misc]
