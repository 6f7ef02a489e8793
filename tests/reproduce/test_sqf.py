"""`qoelab reproduce sqf --quick`: the report is written, its premise holds, the paper's trends
that the quick grid (30 s runs, n = 1, 5, 20, two repetitions) supports are asserted on our
measurements, and the reading is generated from the tables beside it.

Trends of BMO11 that our reproduction does *not* show (SQF protecting the frame-spread MPEG-2
video for every n, the constant SQF data share) are not asserted: the report's findings mark them
*does not hold* or *within noise*, and `test_findings_are_computed_from_the_repetitions` checks
that those verdicts follow from the data."""

from __future__ import annotations

import csv
import json
import re
import tomllib
from pathlib import Path

import pytest

from conftest import without_provenance
from qoelab.cli import main
from qoelab.experiment import Verdict, above, judge, mean_ci, paired_ci, summary_line
from qoelab.reproduce import sqf


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reproduce-sqf")
    assert main(["reproduce", "sqf", "--quick", "-o", str(out), "-j", "2"]) == 0
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _get(rows, mode: str, q: str, n: int, key: str) -> float:
    (r,) = [r for r in rows if r["mode"] == mode and r["discipline"] == q and int(r["n"]) == n]
    return float(r[key])


def test_report_folder(report: Path):
    for f in ("report.md", "testbed.csv", "testbed_reps.csv", "premise_alone.csv", "fig8_jitter.csv", "model_check.csv",
              "whatif.csv", "findings.csv", "paper_table1.csv", "fig3_analytic.csv", "fig4_analytic.csv",
              "fig6_loss_es.png", "fig6_loss_ts.png", "fig7_jitter_es.png", "fig7_jitter_ts.png", "fig8_jitter.png",
              "fig3_analytic.png", "fig4_analytic.png", "regime.csv", "regime_reps.csv", "ivb.csv", "ivb_reps.csv"):
        assert (report / f).stat().st_size > 0, f
    md = (report / "report.md").read_text()
    assert "(paper)" in md and "(ours)" in md
    p = sqf.plan(True)
    rows = _rows(report / "testbed.csv")
    assert {(r["mode"], r["discipline"], int(r["n"])) for r in rows} == {
        (m, q, n) for m in sqf.MODES for q in sqf.DISCIPLINES for n in p.n_values}
    assert all(int(r["reps"]) == p.reps >= 2 for r in rows)
    # Every cell of every repetition ran, once.
    reps = _rows(report / "testbed_reps.csv")
    assert len(reps) == len(rows) * p.reps
    assert {int(r["rep"]) for r in reps} == set(range(p.reps))


def test_reps_reaches_every_grid_and_the_full_default_is_ten():
    """`--reps R` sets the repetitions of every experiment, the paper's regime and Sec. IV-B
    included (they once kept their own count); without it a full run repeats each cell 10 times
    (issue 36: a committed full run needs at least 10) and a quick one twice."""
    assert sqf.plan(False).reps == 10 and sqf.plan(True).reps == 2
    for quick in (True, False):
        for only in (False, True):
            E = sqf.experiments(sqf.plan(quick, 3), findings_only=only)
            assert {"testbed", "jitter", "regime", "ivb"} <= set(E)
            # the what-if tables are one run per cell by design (exploration, never a finding)
            assert {e.reps for k, e in E.items() if not k.startswith("whatif")} == {3}, {k: e.reps for k, e in E.items()}


def test_the_cli_takes_reps_and_refuses_a_bad_count(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "qoelab.cli", "reproduce", "sqf", "--reps", "0", "-o", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--reps" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_regime_cells_are_below_the_fair_share_and_in_the_report(report: Path):
    """The quick report's regime cells (issue 36 item 2): every run's measured offered rate is
    below C/(n+1), every source, discipline, n and fraction of the plan ran every repetition,
    and the section and its findings are in report.md and report.json."""
    from qoelab.experiment.report import load_report
    from qoelab.reproduce.sqf import regime

    p = regime.regime_plan(True)
    reps = _rows(report / "regime_reps.csv")
    assert len(reps) == len(regime.regime_cells(p)) * p.reps
    for r in reps:
        assert float(r["offered_mbps"]) * 1e6 < regime.LINE_BPS / (int(r["n"]) + 1), r
    md = (report / "report.md").read_text()
    assert "## The paper's regime" in md and "### Sec. IV-B simulated" in md
    doc = load_report(report / "report.json")
    assert {"regime", "regime-model", "ivb"} <= {t["id"] for t in doc["tables"]}
    assert any(f["group"] == "regime" and f["key"] == "ivb" for f in doc["findings"])


def test_premise_the_mpeg2_video_alone_loses_nothing_in_both_sender_modes(report: Path):
    """Fig. 8's premise at δ = 0 and Fig. 6's baseline: on the 10 Mbit/s line with FIFO and no
    download, neither VLC mode loses a packet, in any repetition (the H.264 stand-in lost a
    fifth of its packets here, see the sensitivity test below)."""
    rows = {r["mode"]: r for r in _rows(report / "premise_alone.csv")}
    assert set(rows) == set(sqf.MODES)
    for mode, r in rows.items():
        assert float(r["video_loss_max"]) == 0.0 and float(r["video_loss"]) == 0.0, mode
        assert float(r["audio_loss"]) == 0.0, mode
        assert int(r["reps"]) == sqf.plan(True).reps
        # The sender really sent the trace's 5 Mbit/s (plus headers), not nothing.
        assert 4.5 < float(r["video_mbps"]) < 6.0, mode
    md = (report / "report.md").read_text()
    assert "### Premise: the video alone (FIFO, no downloads)" in md


def test_repetitions_draw_their_own_offsets_and_starts(report: Path):
    from qoelab.experiment.core import seed_of

    d0, d1 = sqf.draws(0), sqf.draws(1)
    assert d0 == sqf.draws(0) and d0 != d1
    for d in (d0, d1):
        assert 0 <= d.video_offset_s < sqf.TRACE_S and 0 <= d.audio_offset_s < sqf.TRACE_S
        assert 0 <= d.video_start_s < sqf.START_SPREAD_S and 0 <= d.data_start_s < sqf.START_SPREAD_S
    # The runs of repetition r carry repetition r's draws, and all share the layer's seed of
    # repetition r (every parameter is a treatment), which differs between repetitions.
    exp = sqf.experiments(sqf.plan(True))["testbed"]
    seeds = []
    for r, d in ((0, d0), (1, d1)):
        folders = sorted((report / "runs" / "testbed" / f"rep{r}" / "runs").glob("*/cell.json"))
        assert len(folders) == len(exp.cells)
        for c in folders:
            assert tomllib.loads((c.parent / "scenario.toml").read_text())["flows"][0]["app"]["offset"] == \
                f"{d.video_offset_s:g}s"
        got = {json.loads(c.read_text())["seed"] for c in folders}
        assert got == {seed_of(exp.name, exp.cells[0], exp.paired, r)}
        seeds += got
    assert seeds[0] != seeds[1]


def test_fifo_loss_grows_with_n_and_fq_protects_only_audio(report: Path):
    rows = _rows(report / "testbed.csv")
    for mode in sqf.MODES:
        assert _get(rows, mode, "fifo", 20, "video_loss") > _get(rows, mode, "fifo", 1, "video_loss") + 0.02
        for n in (1, 5, 20):
            # 64 kbit/s is below the fair share: FQ (and SQF) keep the audio loss-free.
            assert _get(rows, mode, "drr", n, "audio_loss") < 1e-3
            assert _get(rows, mode, "sqf", n, "audio_loss") < 1e-3
        for n in (5, 20):
            # 5 Mbit/s is above the fair share once n > 1: FQ drops video.
            assert _get(rows, mode, "drr", n, "video_loss") > 0.1


def test_data_share_grows_with_n_under_fifo_and_fq(report: Path):
    rows = _rows(report / "testbed.csv")
    for mode in sqf.MODES:
        for q in ("fifo", "drr"):
            assert _get(rows, mode, q, 20, "data_share_mbps") > _get(rows, mode, q, 1, "data_share_mbps")


def test_findings_are_computed_from_the_repetitions(report: Path):
    """Each finding's estimate is the interval of its statistic over the per-repetition table,
    and its verdict follows from that interval."""
    reps = _rows(report / "testbed_reps.csv")
    found = {(r["mode"], r["key"]): r for r in _rows(report / "findings.csv")}
    assert {m for m, _ in found} == set(sqf.MODES) | {"regime"}  # regime: the paper's regime (issue 36)

    def series(mode, q, n, m):
        return [float(r[m]) for r in sorted(reps, key=lambda r: int(r["rep"]))
                if r["mode"] == mode and r["discipline"] == q and int(r["n"]) == n]

    for mode in sqf.MODES:
        e = paired_ci(series(mode, "fifo", 20, "video_loss"), series(mode, "fifo", 1, "video_loss"))
        f = found[(mode, "fifo_video")]
        assert float(f["mean"]) == pytest.approx(e.mean) and float(f["half_width"]) == pytest.approx(e.half_width)
        assert f["verdict"] == judge(e, above()).verdict.value
        assert f["verdict"] == (Verdict.HOLDS.value if e.low > 0 else Verdict.DOES_NOT_HOLD.value if e.high < 0
                                else Verdict.INCONCLUSIVE.value)
        assert f["quick"] == "True"  # two repetitions: not evidence
        e = mean_ci(series(mode, "drr", 5, "video_loss"))
        assert float(found[(mode, "fq_video")]["mean"]) == pytest.approx(e.mean)
        assert found[(mode, "fq_video")]["label"] == "by construction"
        # The worst n is the one with the largest mean loss over the repetitions.
        ns = sorted({int(r["n"]) for r in reps if r["mode"] == mode and r["discipline"] == "sqf"})
        worst = max((series(mode, "sqf", n, "video_loss") for n in ns), key=lambda xs: sum(xs) / len(xs))
        assert float(found[(mode, "sqf_video")]["mean"]) == pytest.approx(mean_ci(worst).mean)
    assert ("es", "fig8_zero") in found and ("ts", "fig8_zero") not in found  # Fig. 8 runs the ES sender


def test_reading_is_generated_and_quotes_the_findings(report: Path):
    md = (report / "report.md").read_text()
    reading = md[md.index("## Reading (generated from the tables above)"):]
    for f in _rows(report / "findings.csv"):
        assert f["claim"] in reading and f"*{f['verdict']}*" in reading
    summary = json.loads((report / "summary.json").read_text())
    for mode in sqf.MODES:
        c = summary["findings"][mode]
        assert f"Substantive claims: {c['holds']} of {c['tested']} substantive findings hold" in reading
    # Typed prose explains but never quotes a number: digits come only from the tables (the
    # paper's notation for the priority threshold and its equation number are not data).
    for text in [*sqf.WHY.values(), sqf.MODEL_CHECK_WHY]:
        prose = text.replace("B/(n+1)", "").replace("eq. (1)", "")
        assert not re.search(r"\d", prose), text


def _sens(report: Path, source: str, tcp: str) -> dict[int, float]:
    return {int(r["n"]): float(r["video_loss"]) for r in _rows(report / "whatif.csv")
            if r["video_source"] == source and r["tcp"] == tcp}


def test_sensitivity_smooth_video_is_protected_for_every_n_and_tcp_variant(report: Path):
    """The paper's headline for a video that never queues two packets: CBR at 5 Mbit/s."""
    ns = set(sqf.plan(True).sens_n)
    for tcp, _ in sqf.SENS_TCP:
        loss = _sens(report, "CBR 5 Mbit/s", tcp)
        assert set(loss) == ns and max(loss.values()) < 1e-3, (tcp, loss)
    assert _sens(report, "CBR 5 Mbit/s", "no downloads") == {0: 0.0}


def test_sensitivity_sqf_compares_bytes_so_tcp_aggregates_keep_the_video_shortest(report: Path):
    """With 64 kB TCP aggregates (GRO) a Poisson or peak-limited video always has fewer bytes
    queued than any active download, so SQF protects it for every n; with MTU segments the same
    Poisson video is de-prioritised at n = 20 (a scheduler counting packets, or serving the
    longest queue, would fail one of the two)."""
    gro = next(t for t, _ in sqf.SENS_TCP if "GRO" in t)
    mtu = sqf.SENS_TCP[0][0]
    for src in ("Poisson 5 Mbit/s", f"H.264 trace, peak {sqf.SMOOTH_PEAK}"):
        assert max(_sens(report, src, gro).values()) < 1e-3, src
    assert _sens(report, "Poisson 5 Mbit/s", mtu)[20] > 0.5


def test_sensitivity_h264_stand_in_overflows_the_line_by_itself(report: Path):
    """Why the H.264 stand-in was replaced: frame-paced, its I frames overflow the line with no
    competing traffic at all, where the MPEG-2 trace loses nothing (premise test above)."""
    assert _sens(report, "H.264 trace, frame-paced", "no downloads")[0] > 0.1


def test_committed_report_is_generated():
    """The committed report is one this code writes: a generated reading whose findings are
    those of the committed findings table."""
    from qoelab import paths

    exp = paths.root() / "scenarios" / "sqf" / "expected"
    md = (exp / "report.md").read_text()
    assert "## Reading (generated from the tables above)" in md
    for f in _rows(exp / "findings.csv"):
        assert f["claim"] in md and f"*{f['verdict']}*" in md, f["key"]


def test_report_json_is_strict(report: Path, strict_json_tree):
    """summary.json and every run's JSON are strict JSON of native types (issue 22 item 6)."""
    assert strict_json_tree(report) >= 1


def test_report_json_is_valid_and_carries_the_csv_numbers(report: Path):
    """report.json (docs/report-format.md) loads, its Table I cells are testbed.csv's means and
    intervals, the paper's column is PAPER_TABLE1, and its findings are findings.csv's."""
    from qoelab.experiment.report import load_report

    doc = load_report(report / "report.json")
    assert doc["paper"] == "sqf" and doc["mode"] == "quick"
    tb = _rows(report / "testbed.csv")
    by_id = {t["id"]: t for t in doc["tables"]}
    for mode in sqf.MODES:
        t = by_id[f"table1-{mode}"]
        assert len(t["rows"]) == len([r for r in tb if r["mode"] == mode])
        for row in t["rows"]:
            q = next(k for k, v in sqf.LABEL.items() if v == row["scheduler"])
            mean = _get(tb, mode, q, row["n"], "data_share_mbps")
            hw = _get(tb, mode, q, row["n"], "data_share_mbps_ci")
            assert row["data_share_mbps"]["mean"] == pytest.approx(mean)
            assert row["data_share_mbps"]["hi"] - row["data_share_mbps"]["lo"] == pytest.approx(2 * hw)
            paper = dict(zip(sqf.TABLE1_N, sqf.PAPER_TABLE1.get(q, [])))
            assert row["paper_share"] == (paper[row["n"]][0] if row["n"] in paper else None)
    fs = _rows(report / "findings.csv")
    assert [(f["mode"], f["key"], f["verdict"]) for f in fs] == [
        (f["group"], f["key"], f["verdict"]) for f in doc["findings"]]
    assert doc["cost"]["runs"] > 0
    assert doc["cost"]["runs"] == len(list((report / "runs").rglob("timing.json")))
    assert all(f["path"] in {x.name for x in report.iterdir()} for f in doc["figures"])


def _without_wall_time(md: str) -> str:
    """The report with its machine-dependent parts (the invocation's wall time, the commit that
    ran it) blanked."""
    return without_provenance(re.sub(r"Simulation wall time of this invocation: \d+ s",
                                     "Simulation wall time of this invocation: – s", md))


def test_the_committed_quick_report_is_todays(report: Path):
    """scenarios/sqf/expected/ is a quick run: every table and the report, apart from its wall
    time, must be what today's code writes, so a model change that moves them cannot leave the
    committed report describing an older simulator (regenerate: qoelab reproduce sqf --quick -j 2
    -o DIR, then copy the files expected/ holds)."""
    from qoelab import paths

    exp = paths.root() / "scenarios" / "sqf" / "expected"
    committed = _without_wall_time((exp / "report.md").read_text())
    assert _without_wall_time((report / "report.md").read_text()) == committed, "scenarios/sqf/expected is stale"
    csvs = sorted(p.name for p in exp.glob("*.csv"))
    assert "testbed_reps.csv" in csvs and "findings.csv" in csvs
    for name in csvs:
        assert (report / name).read_bytes() == (exp / name).read_bytes(), f"scenarios/sqf/expected/{name} is stale"


def test_the_wall_time_mask_blanks_only_the_wall_time():
    md = "a. Simulation wall time of this invocation: 222 s (runs ...). 0.5 s of CPU"
    assert _without_wall_time(md) == "a. Simulation wall time of this invocation: – s (runs ...). 0.5 s of CPU"
    assert _without_wall_time(md) != _without_wall_time(md.replace("a.", "b."))


@pytest.mark.parametrize("sub", ["", "full"])
def test_committed_findings_are_computed_from_the_committed_repetitions(sub: str):
    """expected/ (quick) and expected/full/ (the full reproduction, runs not kept): each
    findings.csv, and the verdicts its report.md states, are what the findings logic computes
    from the per-repetition tables beside them, so neither can drift from its data."""
    from qoelab import paths
    from qoelab.experiment.stats import portable

    exp = paths.root() / "scenarios" / "sqf" / "expected" / sub
    got = sqf.findings_from_folder(exp)
    rows = _rows(exp / "findings.csv")
    assert [(r["mode"], r["key"], r["verdict"]) for r in rows] == [
        (m, f.key, f.verdict.value) for m, F in got.items() for f in F]
    for r, f in zip(rows, (f for F in got.values() for f in F)):
        # The writer keeps the digits every machine agrees on (stats.portable); a folder written
        # before it kept all 17.
        assert (portable(float(r["mean"])) == portable(f.estimate.mean)) if f.estimate else r["mean"] == "nan", r["key"]
    md = (exp / "report.md").read_text()
    # A --sensitivity run's summary counts each finding under every alternative: those verdicts
    # come from runs not kept, so they are taken from the report's findings (keys checked above).
    import dataclasses

    from qoelab.experiment import Verdict
    from qoelab.experiment.report import load_report

    under = {(f["group"], f["key"]): tuple((k, Verdict(v)) for k, v in (f["sensitivity"] or {}).get("under", {}).items())
             for f in load_report(exp / "report.json")["findings"]}
    for m, F in got.items():
        F = [dataclasses.replace(f, under=under.get((m, f.key), ())) for f in F]
        assert f"Substantive claims: {summary_line(F)}" in md, m


def test_the_committed_full_report_is_a_full_run():
    """expected/full/ is the full reproduction from one clean commit: every n of Fig. 6, 10-min
    runs, each cell repeated the plan's default number of times, as its report states."""
    from qoelab import paths
    from qoelab.experiment.report import load_report

    full = paths.root() / "scenarios" / "sqf" / "expected" / "full"
    md = (full / "report.md").read_text()
    p = sqf.plan(quick=False)
    assert md.startswith("# SQF reproduction") and f"Mode: full; {p.reps} repetitions per cell" in md
    assert load_report(full / "report.json")["provenance"]["status"] == "clean"
    reps = _rows(full / "testbed_reps.csv")
    assert {int(r["n"]) for r in reps} == set(p.n_values)
    assert {int(r["rep"]) for r in reps} == set(range(p.reps))
    assert len(reps) == len(sqf.MODES) * len(sqf.DISCIPLINES) * len(p.n_values) * p.reps


def test_the_ties_choice_is_neutral_by_default_and_declares_the_key_orders():
    """`ties` defaults to the neutral rule on every per-flow discipline; `key_video_first`
    declares the video server's link first (the lower node id and address, so the lower flow
    key, which wins SQF's and LQD's ties under the key rule), `key_video_last` keeps the
    testbed's order; the access line is otherwise the same; every declared alternative builds a
    valid scenario of the grids the findings use."""
    from qoelab.experiment.choices import defaults, variants

    d0 = sqf._base(sqf.draws(0), "1s").data
    d1 = sqf._base(sqf.draws(0), "1s", {**defaults(sqf.CHOICES), "ties": "key_video_first"}).data
    assert [l["a"] for l in d0["links"][:2]] == ["web_server", "video_server"]
    assert [l["a"] for l in d1["links"][:2]] == ["video_server", "web_server"]
    assert d0["links"][2]["queue_ab"]["ties"] == "neutral" and d1["links"][2]["queue_ab"]["ties"] == "key"
    assert {**d1["links"][2], "queue_ab": None} == {**d0["links"][2], "queue_ab": None}
    choice = next(c for c in sqf.CHOICES if c.name == "ties")
    assert choice.default == "neutral" and set(choice.alternatives) == {"key_video_last", "key_video_first"}
    for name, setting in variants(sqf.CHOICES):
        E = sqf.experiments(sqf.plan(True), setting, findings_only=True)
        assert set(E) == {"testbed", "jitter", "regime", "ivb"}
        for c in E["regime"].cells:  # the paper's regime: the tie rule and the ACK policy follow the setting
            rc = E["regime"].scenario(c, 1)
            rc.validate()
            q = rc.get("links[1].queue_ab") if c["source"] == "poisson" else rc.get("links[2].queue_ab")
            assert q.get("ties") == (None if c["discipline"] == "fifo" else
                                     "neutral" if setting["ties"] == "neutral" else "key"), (name, c)
        for q in ("fifo", "drr", "sqf"):
            sc = E["testbed"].scenario({"mode": "es", "discipline": q, "n": 5}, 1)
            sc.validate()
            assert sc.get("links[2].queue_ab").get("ties") == (
                None if q == "fifo" else "neutral" if setting["ties"] == "neutral" else "key"), name
        assert sc.get("flows[2].transport.delayed_ack") == setting["delayed_ack"], name


def test_the_router_gro_choice_reaches_the_routers_interfaces():
    """`router_gro` (issue 36 item 3) is off by default; its alternative puts GRO
    (`crates/core/src/link/gro.rs`) on the router's three receiving interfaces and nothing else
    in the scenario changes; the scenario builds."""
    from qoelab.experiment.choices import defaults

    choice = next(c for c in sqf.CHOICES if c.name == "router_gro")
    assert choice.default is False and choice.alternatives == (True,) and not choice.unavailable
    d0 = sqf._base(sqf.draws(0), "1s").data
    on = sqf._base(sqf.draws(0), "1s", {**defaults(sqf.CHOICES), "router_gro": True})
    on.validate()
    d1 = on.data
    assert all("a_gro" not in l and "b_gro" not in l for l in d0["links"])
    assert [l["a"] for l in d1["links"]][:3] == ["web_server", "video_server", "router"]
    assert "b_gro" in d1["links"][0] and "b_gro" in d1["links"][1] and "a_gro" in d1["links"][2]
    strip = lambda ls: [{k: v for k, v in l.items() if not k.endswith("_gro")} for l in ls]  # noqa: E731
    assert strip(d1["links"]) == d0["links"] and {**d1, "links": None} == {**d0, "links": None}
