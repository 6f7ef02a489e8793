"""`qoelab reproduce tfd --quick`: the paper's findings as far as the quick grid supports them,
and the TFD option visible to tshark in a pcap of an s4 run.

The quick grid is N ∈ {1, 4, 10}, K ∈ {0, 3, 10}, 8 s per run, one repetition; the full-grid
numbers and their reading are in docs/models/tfd-router.md.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from qoelab import paths
from qoelab.reproduce import tfd
from qoelab.scenario import Scenario


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("reproduce-tfd")
    r = tfd.run(out, quick=True, jobs=2)
    r["out"] = out
    return r


def test_report_files_are_written(quick):
    out: Path = quick["out"]
    for f in ("table1.csv", "table2.csv", "table1.md", "table2.md", "fig3_per_vs_n.png", "README.md",
              "diff_per_pct.png", "diff_utilisation_pct.png", "diff_video_mbps.png", "diff_tcp_mbps.png"):
        assert (out / f).stat().st_size > 0, f
    # Our value and the paper's side by side; the paper's typed s1, K = 10, N = 1 PER is 26.9 %.
    rows = (out / "table1.csv").read_text().splitlines()
    assert rows[0] == ("scenario,K,N,per_pct_ours,per_pct_paper,utilisation_pct_ours,utilisation_pct_paper,"
                       "per_pct_ours_ci95,utilisation_pct_ours_ci95")
    assert any(r.startswith("s1,10,1,") and r.split(",")[4] == "26.9" for r in rows)
    # A committed report names the bundled trace by its path in the repository, not this machine's.
    assert quick["meta"]["trace"] == str(tfd.TRACE)
    assert str(paths.root()) not in (out / "README.md").read_text()


def test_resumes_without_rerunning(quick):
    counts = tfd.run(quick["out"], quick=True, jobs=1)["meta"]["runs"]
    assert counts["ran"] == 0 and counts["skipped"] == counts["total"] == 36


def test_no_loss_without_tcp(quick):
    ours = quick["ours"]
    for sc in tfd.QUICK.scenarios:
        for n in tfd.QUICK.n:
            assert ours[(sc, 0, n)]["per_pct"] == 0.0, (sc, n)


def test_loss_is_ordered_tfd_rsvp_peak_rsvp_150_best_effort(quick):
    """PER(s4) ≤ PER(s3) ≤ PER(s2) ≤ PER(s1), averaged over the grid, as in the paper, and TFD
    loses nothing in any quick cell. PER(s2) ≤ PER(s1) holds since the HD trace has Blu-ray's VBV
    (a 1-s peak of ~66 Mbit/s at IP level against s2's 60 Mbit/s reservation); with the earlier
    uncapped trace (1-s peaks of 282 Mbit/s) s2 lost 16 %."""
    s = tfd.summary(tfd.QUICK, quick["ours"])
    assert all(v == 0.0 for (sc, k, n), x in quick["ours"].items() if sc == "s4" for v in [x["per_pct"]])
    assert s["s4"]["per_mean"] <= s["s3"]["per_mean"]
    assert s["s3"]["per_mean"] <= s["s2"]["per_mean"]
    assert s["s2"]["per_mean"] <= s["s1"]["per_mean"]


def test_tfd_keeps_the_link_as_busy_as_best_effort_and_busier_than_rsvp_peak(quick):
    s = tfd.summary(tfd.QUICK, quick["ours"])
    assert s["s4"]["util_mean_loaded"] > s["s3"]["util_mean_loaded"]
    assert abs(s["s4"]["util_mean_loaded"] - s["s1"]["util_mean_loaded"]) < 3.0


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (scripts/install-system-deps.sh installs it)")
def test_tshark_shows_the_tfd_option_in_an_s4_capture(tmp_path: Path):
    trace = tfd.trace_path(tmp_path)
    d = tfd.build_scenario("s4", 2, 1, 1, 1.0, trace, tfd.peak_rate_bps(trace))
    d["output"]["pcap"] = ["R3->R4"]
    Scenario.from_dict(d, base_dir=paths.root()).run(tmp_path)
    pcap = tmp_path / "R3_to_R4.pcap"
    lua = paths.root() / "tools" / "wireshark" / "tfd.lua"
    p = subprocess.run(
        ["tshark", "-n", "-X", f"lua_script:{lua}", "-r", str(pcap), "-Y", "tfd", "-T", "fields",
         "-e", "tfd.type", "-e", "tfd.len", "-e", "tfd.flags", "-e", "tfd.next_data", "-e", "tfd.next_time"],
        capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0 and "Lua: Error" not in p.stderr, p.stderr
    rows = [r.split("\t") for r in p.stdout.split("\n") if r]
    # Two streams announce once per 300 ms for 1 s: a handful of options, each an encoder
    # description (flags clear) of the next 300 ms.
    assert 4 <= len(rows) <= 12, rows
    for typ, ln, flags, nd, nt in rows:
        assert (typ, ln, nt) == ("0x9e", "12", "300")
        assert int(flags, 16) == 0 and int(nd) > 0
    # The raw bytes too, without the dissector: IPv4 option type 0x9e, length 12.
    raw = subprocess.run(["tshark", "-n", "-r", str(pcap), "-T", "fields", "-e", "ip.hdr_len", "-e", "ip.opt.type"],
                         capture_output=True, text=True, timeout=120).stdout.split("\n")
    assert sum(1 for r in raw if r.startswith("32\t")) == len(rows)


def test_report_only_reads_a_grid_stopped_part_way(quick, tmp_path: Path):
    """A long grid is read before it finishes: --report-only runs nothing, reports the cells that
    have runs (the others are '-') and says the grid is unfinished; each run's cost is summed."""
    part = tmp_path / "part"
    shutil.copytree(quick["out"], part)
    runs = sorted((part / "sweep" / "runs").iterdir())
    gone = [d for d in runs if "tfd.scenario=s1__tfd.n=4__tfd.k=3__" in d.name]
    assert len(gone) == 1
    (gone[0] / "done").unlink()
    r = tfd.run(part, quick=True, reps=2, report_only=True)
    m = r["meta"]
    assert m["runs"] is None and m["cells_reported"] == 35 and m["cells"] == 36
    assert m["report_only"] is True and m["jobs"] is None and quick["meta"]["report_only"] is False
    # This invocation's own wall time: none when it ran nothing (a committed read would otherwise
    # change at every re-read by a few microseconds).
    assert m["wall_s"] is None and quick["meta"]["wall_s"] > 0
    assert (m["reps_done_min"], m["reps_done_max"]) == (0, 1)
    assert ("s1", 3, 4) not in r["ours"] and ("s1", 3, 10) in r["ours"]
    assert m["runs_timed"] == 35 and m["runs_cpu_s"] > 0
    readme = (part / "README.md").read_text()
    assert "the grid is not finished" in readme and "35 of 36 cells" in readme
    # Means over different cell sets are not compared: findings that need s1 whole are undecided.
    f = tfd.findings(tfd.QUICK, r["ours"])
    assert f["order"] is None and f["util_s4_close_s1"] is None and f["k0_zero"] is True
    assert f["s4_mostly_zero"] is True
    assert "not decidable on this grid" in readme
    md = (part / "table1.md").read_text()
    s1_per = md.split("## PER [%], scenario s1")[1].split("##")[0]
    row_k3 = next(r for r in s1_per.splitlines() if r.startswith("| 3 |"))
    assert row_k3.split(" | ")[2] == "-", row_k3  # columns: K, N=1, N=4, N=10


def test_report_only_without_runs_is_a_clear_error(tmp_path: Path):
    from qoelab.errors import QoelabError

    with pytest.raises(QoelabError, match="no runs to report on"):
        tfd.run(tmp_path / "empty", quick=True, report_only=True)


def test_findings_on_the_papers_own_tables():
    """The findings checker, applied to the paper's typed tables, finds what the paper says (so a
    'no' on our runs is a real difference, not a checker that cannot say yes)."""
    f = tfd.findings(tfd.FULL, tfd.paper_tables())
    assert f["k0_zero"] and f["order"] and f["s4_mostly_zero"] and f["s1_inverted"]
    assert f["util_s4_above_rsvp"]


def test_s1_sensitivity_burstier_sender_into_smaller_buffer_loses_more(quick):
    """The s1 sensitivity grid is in the report, and its two factors act in the direction they
    must: frames sent back to back into ns-2's 50-packet queue lose more than frame-paced
    video into 1000 packets, in every cell (a pacing or buffer knob that is not wired through
    would give equal values)."""
    rows = quick["sensitivity"]
    cells = {(r["K"], r["N"]) for r in rows}
    assert cells == {(k, n) for k in tfd.SENS_K_QUICK for n in tfd.SENS_N_QUICK}
    per = {(r["pacing"], r["buffer"], r["K"], r["N"]): r["per_pct"] for r in rows}
    for k, n in cells:
        assert per[("burst", "50p", k, n)] > per[("frame", tfd.BUFFER, k, n)], (k, n)
    assert "What s1 depends on" in (quick["out"] / "README.md").read_text()
    assert (quick["out"] / "sensitivity_s1.csv").stat().st_size > 0


@pytest.mark.parametrize("sc,n,k", tfd.EXAMPLE_CELLS)
def test_bundled_cell_files_are_the_reproductions_cells(sc: str, n: int, k: int):
    """scenarios/tfd/*.toml are what the reproduction runs for rep 0 of that cell (regenerate
    with qoelab.reproduce.tfd.cell_toml after changing build_scenario), and they run from the
    same trace: the file's own relative path resolves to the bundled trace."""
    path = paths.root() / "scenarios" / "tfd" / f"{sc}-n{n}-k{k}.toml"
    assert path.read_text() == tfd.cell_toml(sc, n, k)
    s = Scenario.load(path)
    trace = (path.parent / s.get("flows[0].app.trace")).resolve()
    assert trace == (paths.root() / tfd.TRACE).resolve() and trace.exists()
    grid_cell = tfd.build_scenario(sc, n, k, 1, tfd.FULL_S, trace, tfd.peak_rate_bps(trace))
    for i in range(n):
        assert s.get(f"flows[{i}].app.offset") == grid_cell["flows"][i]["app"]["offset"]


def test_confidence_interval_over_repetitions():
    """Mean and Student-t 95 % half-width over repetitions: for 1, 2, 3 the sample sd is 1 and
    t(0.975, 2) = 4.3027, so the half-width is 4.3027 / sqrt(3) = 2.4841; one repetition has none."""
    import math

    r = tfd._mean_ci([{"per_pct": 1.0}, {"per_pct": 2.0}, {"per_pct": 3.0}])
    assert r["per_pct"] == 2.0 and abs(r["per_pct_ci95"] - 2.4841) < 1e-4
    assert math.isnan(tfd._mean_ci([{"per_pct": 1.0}])["per_pct_ci95"])


def test_held_reservations_cost_utilisation_that_lent_ones_do_not(quick):
    """With `lend_idle = false` the reservation routers idle the link for reserved capacity the
    videos leave unused: at K = 10, N = 10 utilisation drops below the lending grid's in s2 and
    s3 (whose static reservations exceed what the videos send), and the report has the table."""
    rows = {(r["scenario"], r["K"], r["N"]): r for r in quick["held"]}
    assert set(rows) == {(sc, k, n) for sc in ("s2", "s3", "s4") for k in tfd.SENS_K_QUICK for n in tfd.SENS_N_QUICK}
    for sc in ("s2", "s3"):
        lent = quick["ours"][(sc, 10, 10)]["utilisation_pct"]
        assert rows[(sc, 10, 10)]["utilisation_pct"] < lent - 5.0, sc
    assert "Reservations held idle" in (quick["out"] / "README.md").read_text()


def _synthetic_rep(per: dict[str, float], util: dict[str, float]) -> dict:
    """One repetition of the quick grid with the same PER and utilisation in every loaded cell
    of a scenario (K = 0 cells lose nothing)."""
    g = tfd.QUICK
    return {(sc, k, n): {"per_pct": per[sc] if k else 0.0, "utilisation_pct": util[sc], "video_mbps": 40.0,
                         "video_offered_mbps": 40.0}
            for sc in g.scenarios for k in g.k for n in g.n}


def _mean_of(reps: list[dict]) -> dict:
    return {key: {m: sum(r[key][m] for r in reps) / len(reps) for m in reps[0][key]} for key in reps[0]}


def test_findings_test_scenario_differences_against_the_noise():
    """With several repetitions, "s4 above s2 and s3" holds only beyond the 95 % interval of the
    paired differences; an ordering fails only when reversed beyond it. Means that differ by
    less than the repetitions scatter are not called either way."""
    g = tfd.QUICK
    per = {"s1": 1.0, "s2": 0.1, "s3": 0.05, "s4": 0.0}
    # s4 above s2 and s3 by 1 point in every repetition (scatter 0.1): yes.
    reps = [_synthetic_rep(per, {"s1": 99.0 + e, "s2": 97.0 + e, "s3": 97.0 + e, "s4": 98.0 + e}) for e in (0, 0.1, -0.1)]
    assert tfd.findings(g, _mean_of(reps), reps)["util_s4_above_rsvp"] is True
    # s4 above in the mean but by less than the scatter: undecided, though the plain means say yes.
    reps = [_synthetic_rep(per, {"s1": 99, "s2": 97.0, "s3": 97.0, "s4": 97.0 + d}) for d in (1.0, -0.9, 0.2)]
    assert tfd.findings(g, _mean_of(reps))["util_s4_above_rsvp"] is True
    assert tfd.findings(g, _mean_of(reps), reps)["util_s4_above_rsvp"] is None
    # s4 below s2 in every repetition: no.
    reps = [_synthetic_rep(per, {"s1": 99, "s2": 98.0 + e, "s3": 97.0, "s4": 97.0 + e}) for e in (0, 0.1, -0.1)]
    assert tfd.findings(g, _mean_of(reps), reps)["util_s4_above_rsvp"] is False
    # PER of s3 above s2 by noise only: the ordering stands; consistently above: it fails.
    util = {"s1": 99, "s2": 97, "s3": 97, "s4": 98}
    noisy = [_synthetic_rep({**per, "s3": 0.1 + d}, util) for d in (0.05, -0.04, 0.02)]
    assert tfd.findings(g, _mean_of(noisy))["order"] is False
    assert tfd.findings(g, _mean_of(noisy), noisy)["order"] is True
    reversed_ = [_synthetic_rep({**per, "s3": 0.3 + d}, util) for d in (0.01, -0.01, 0.0)]
    assert tfd.findings(g, _mean_of(reversed_), reversed_)["order"] is False
    # The intervals: paired by repetition, so a constant offset has zero width.
    d = tfd.paired_differences(g, [_synthetic_rep(per, {"s1": 99 + e, "s2": 97 + e, "s3": 97 + e, "s4": 98 + e}) for e in (0, 1, 2)])
    m, h = d[("util_mean_loaded", "s4", "s2")]
    assert m == pytest.approx(1.0) and h == pytest.approx(0.0, abs=1e-9)


def test_differences_are_printed_precisely_enough_to_match_their_verdict():
    # The 20-repetition grid's PER s3 − s2: its interval just excludes 0. At 4 decimals it read
    # "-0.0001 ± 0.0001 | s3 below s2", an interval that seems to hold 0 beside a verdict that says not.
    rows = tfd._differences_md({("per_mean", "s3", "s2"): (-0.000068, 0.000067),
                                ("util_mean_loaded", "s4", "s2"): (0.0024, 0.0105),
                                ("per_mean", "s2", "s1"): (-0.39688, 0.00395)}, 20)
    assert "| mean PER %: s3 − s2 | -0.000068 ± 0.000067 | s3 below s2 |" in rows
    assert "| mean utilisation %, K>0: s4 − s2 | +0.0024 ± 0.0105 | within noise |" in rows
    assert "| mean PER %: s2 − s1 | -0.3969 ± 0.0040 | s2 below s1 |" in rows


def test_compute_times_are_given_in_a_unit_that_suits_them():
    assert tfd._duration(15.9) == "15.9 s"
    assert tfd._duration(1453.0) == "24.2 min"
    assert tfd._duration(82560.1) == "22.93 h"
    assert tfd._duration(float("nan")) == "unrecorded"


def test_report_json_is_strict(quick, strict_json_tree):
    """meta.json and every run's JSON are strict JSON of native types (issue 22 item 6)."""
    assert strict_json_tree(quick["out"]) >= 1
