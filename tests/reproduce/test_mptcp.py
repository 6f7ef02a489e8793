"""``qoelab reproduce mptcp``: the generated cells are Table 1 under each loss reading, the
metrics of a run are right on hand-made result tables, the paper's values are the paper's, a
quick run writes a valid report with every cell in its tables, the loss reading consistent with
Fig. 5 comes out of the data, bad input is one line with exit code 2, and (once the simulator
carries MPTCP data both ways) MPTCP over two disjoint paths beats single-path TCP over one."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run_cli, without_provenance
from qoelab.experiment.report import check_report, load_report
from qoelab.reproduce import mptcp as m

PAPER = ROOT.parent / "shared" / "papers" / "mptcp-uhd-hevc-dash.txt"
MPTCP_RUNS = m.mptcp_dash_refusal() is None


def _access(d: dict) -> list[dict]:
    return [l for l in d["links"] if l["a"] == "C"]


@pytest.mark.parametrize("config", m.CONFIGS)
@pytest.mark.parametrize("reading", m.READINGS)
def test_cells_apply_table_1_under_each_reading(reading, config):
    rows = m.TABLE1[config]
    for transport, p1 in (("mptcp", "path1"), ("sptcp", "sptcp"), ("sptcp_best", "path1")):
        d = m.build_scenario(reading, config, transport)
        a1, a2 = _access(d)
        for link, key in ((a1, p1), (a2, "path2")):
            loss, lat, rate = rows[key]
            assert link["rate"] == f"{rate:g}Mbps" and link["delay"] == f"{lat / 2:g}ms"
            p = loss / 100 * m.FACTOR[reading]
            # The default loss direction is upstream: the client's egress (its requests and ACKs).
            assert link.get("loss_ab") == ({"kind": "bernoulli", "p": p} if p else None)
            assert "loss_ba" not in link
        (f,) = d["flows"]
        assert f["app"]["kind"] == "dash" and f["peer_app"] == {"kind": "http_server"}
        assert f["app"]["abr"] == {"kind": "vlc"} and f["app"]["max_buffer"] == "30s"
        assert f["app"]["bandwidth"] == "mean"
        if transport == "mptcp":
            assert f["transport"]["kind"] == "mptcp" and f["transport"]["coupled"] == "uncoupled"
            assert f["transport"]["coupled_counting"] == "acks"
            assert f["subflows"] == [{"src_addr": "10.1.0.1", "dst_addr": "10.2.0.1"},
                                     {"src_addr": "10.1.1.1", "dst_addr": "10.2.1.1"}]
            assert "src_addr" not in f
        else:
            assert f["transport"] == {"kind": "tcp", "profile": "linux"} and "subflows" not in f
            assert (f["src_addr"], f["dst_addr"]) == ("10.1.0.1", "10.2.0.1")
    assert m.FACTOR == {"literal": 1.0, "div10": 0.1, "div100": 0.01, "control": 0.0}
    assert m.build_scenario(reading, config, "sptcp", abr="bola")["flows"][0]["app"]["abr"] == {"kind": "bola"}
    assert m.build_scenario(reading, config, "sptcp", mpd_bandwidth="peak")["flows"][0]["app"]["bandwidth"] == "mpd"


@pytest.mark.parametrize("direction, keys", [("downstream", {"loss_ba"}), ("upstream", {"loss_ab"}),
                                             ("both", {"loss_ab", "loss_ba"})])
def test_the_loss_direction_choice_puts_table_1s_loss_on_that_direction(direction, keys):
    a1, a2 = _access(m.build_scenario("literal", "balanced", "mptcp", loss_direction=direction))
    for link in (a1, a2):
        assert {k for k in link if k.startswith("loss_")} == keys
        assert all(link[k] == {"kind": "bernoulli", "p": 0.1} for k in keys)
    assert m.build_scenario("literal", "balanced", "mptcp", scheduler="round_robin")["flows"][0]["transport"][
        "scheduler"] == "round_robin"


def test_every_declared_alternative_builds():
    """A choice is a parameter of the builder mapped onto keys that exist: every alternative the
    sensitivity run varies builds a valid scenario."""
    from qoelab.experiment.choices import variants
    from qoelab.scenario import Scenario

    for name, setting in variants(m.CHOICES):
        exp = m.experiment(m.QUICK, True, setting, abr_table=False)
        for c in exp.cells[:3] + [c for c in exp.cells if c["transport"] == "mptcp"][:1]:
            sc = exp.scenario(c, 0)
            assert isinstance(sc, Scenario), name
            sc.validate()


def test_the_grids_cells():
    quick = m.cells(m.QUICK)
    main = [c for c in quick if c["abr"] == "vlc"]
    # 3 readings × 2 configurations × {MPTCP, SPTCP}, plus SPTCP on MPTCP's path 1 in the control;
    # dash.js's rule, BBA and BOLA beside VLC's in the ÷ 100 reading (2 configurations × 2 transports).
    assert len(main) == 3 * 2 * 2 + 2
    assert sorted((c["config"], c["transport"], c["abr"]) for c in quick if c["abr"] != "vlc") == sorted(
        (cf, tp, a) for cf in m.CONFIGS for tp in ("mptcp", "sptcp") for a in ("throughput", "bba", "bola"))
    assert {c["reading"] for c in quick} == set(m.QUICK.readings)
    full = m.cells(m.FULL)
    assert len(full) == 4 * 2 * 2 + 2 + 12 and m.FULL.reps == 5
    assert len({m._cell_id(c) for c in full}) == len(full)
    assert all(c["transport"] != "mptcp" for c in m.cells(m.QUICK, mptcp=False))
    # A choice's alternative sets its cells: OLIA on every MPTCP cell, BBA as the main policy.
    alt = m.cells(m.QUICK, {**m.runner.defaults(m.CHOICES), "coupled": "olia", "abr": "bba"}, abr_table=False)
    assert {c["coupled"] for c in alt if c["transport"] == "mptcp"} == {"olia"} and {c["abr"] for c in alt} == {"bba"}
    assert len(alt) == len(main)
    # Every parameter is a treatment: repetition r of every cell has one seed, in every variant.
    exp = m.experiment(m.QUICK, True)
    from qoelab.experiment.core import seed_of

    assert len({seed_of(exp.name, c, exp.paired, 1) for c in exp.cells}) == 1
    assert seed_of(exp.name, alt[0], exp.paired, 1) == seed_of(exp.name, exp.cells[0], exp.paired, 1)


def _fake_run(tmp_path: Path, *, mptcp: bool) -> Path:
    d = tmp_path / ("mp" if mptcp else "sp")
    d.mkdir()
    row = {"flow": "dash", "dash_startup_first_byte_s": 0.0205, "dash_startup_s": 0.38, "dash_stalls": 2,
           "dash_stall_s": 3.5, "dash_played_s": 120.0, "dash_mean_bitrate_bps": 5.5e6, "dash_switches": 3,
           "dash_mean_rate_bps": 26.5e6, "rev_retransmitted_segments": 300, "rev_reinjected_bytes": 4500,
           "reinjected_bytes": 99, "rev_rcvbuf_drop_pkts": 3, "rev_rcv_buf_bytes": 6291456}
    other = {k: (0 if not isinstance(v, str) else "x") for k, v in row.items()}
    pq.write_table(pa.Table.from_pylist([other, row]), d / "flows.parquet")
    if mptcp:
        pq.write_table(pa.Table.from_pylist([
            {"flow": "dash", "path": 1, "rev_recv_bytes": 1_000_000},
            {"flow": "x", "path": 0, "rev_recv_bytes": 9_000_000},
            {"flow": "dash", "path": 0, "rev_recv_bytes": 3_000_000}]), d / "subflows.parquet")
    return d


def test_run_metrics_on_hand_made_tables(tmp_path: Path):
    p = {"reading": "div100", "config": "balanced", "transport": "mptcp", "coupled": "uncoupled", "abr": "vlc"}
    got = m.run_metrics(_fake_run(tmp_path, mptcp=True), p, duration_s=150.0)
    assert got["startup_first_byte_ms"] == pytest.approx(20.5) and got["startup_ms"] == pytest.approx(380.0)
    assert (got["stalls"], got["stall_s"], got["switches"]) == (2.0, 3.5, 3.0)
    assert got["bitrate_mbps"] == pytest.approx(5.5) and got["rate_mbps"] == pytest.approx(26.5)
    assert got["retx_per_s"] == pytest.approx(2.0)  # 300 segments over 150 s
    assert got["path1_share_pct"] == pytest.approx(75.0)  # path 0: 3 MB of 4 MB; another flow's row ignored
    assert got["reinjected_kb"] == pytest.approx(4.5)
    assert (got["rcvbuf_drops"], got["rcv_buf_kb"]) == (3.0, pytest.approx(6291.456))  # the client's (rev_) buffer
    sp = m.run_metrics(_fake_run(tmp_path, mptcp=False), {**p, "transport": "sptcp", "coupled": "-"}, duration_s=100.0)
    assert sp["retx_per_s"] == pytest.approx(3.0)
    assert math.isnan(sp["path1_share_pct"]) and math.isnan(sp["reinjected_kb"]) and math.isnan(sp["rcvbuf_drops"])


def test_segment_rates_from_the_app_probe(tmp_path: Path):
    rows = []
    for k, (t, b, s) in enumerate([(1.0, 1_000_000, 0.5), (2.5, 3_000_000, 1.2)]):
        for name, v in (("dash_segment", k), ("dash_rung", 0), ("dash_bytes", b), ("dash_download_s", s),
                        ("dash_buffer_s", 6.0)):
            rows.append({"t_ns": int(t * 1e9), "flow": "dash", "end": 0, "name": name, "value": float(v)})
    rows.insert(3, {"t_ns": 5, "flow": "other", "end": 0, "name": "dash_bytes", "value": 1.0})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "probe_app.parquet")
    got = m.segment_rates(tmp_path)
    assert [(k, t) for k, t, _ in got] == [(0, 1.0), (1, 2.5)]
    assert [r for *_, r in got] == pytest.approx([16.0, 20.0])


@pytest.mark.skipif(not PAPER.is_file(), reason="the paper's text is not here")
def test_the_papers_values_are_transcribed_from_its_text():
    text = PAPER.read_text()
    rows = re.findall(r"^(Path 1|Path 2|SPTCP)\t+(\d+)\t(\d+)\t(\d+)$", text, re.M)
    assert len(rows) == 6
    key = {"Path 1": "path1", "Path 2": "path2", "SPTCP": "sptcp"}
    got = {cf: {key[n]: (float(a), float(b), float(c)) for n, a, b, c in rows[3 * i:3 * i + 3]}
           for i, cf in enumerate(m.CONFIGS)}
    assert got == m.TABLE1
    cap = re.search(r"Balanced: Avg = ([\d.]+)ms MPTCP Unbalanced Avg = ([\d.]+)ms SPTCP: Avg = ([\d.]+)ms", text)
    assert cap and tuple(map(float, cap.groups())) == (m.PAPER_FIG4_MS[("mptcp", "balanced")],
                                                       m.PAPER_FIG4_MS[("mptcp", "unbalanced")],
                                                       m.PAPER_FIG4_MS[("sptcp", "balanced")])
    r = re.search(r"SPTCP with average retransmission rate of (\d+) packet.*?rate of (\d+) packets.*?and (\d+) packets",
                  text, re.S)
    assert r and tuple(map(float, r.groups())) == (m.PAPER_FIG5[("sptcp", "balanced")],
                                                   m.PAPER_FIG5[("mptcp", "balanced")],
                                                   m.PAPER_FIG5[("mptcp", "unbalanced")])
    assert "repeated five (5) times" in text and m.PAPER_REPS == 5


def test_the_sessions_play_the_whole_ladder_with_room_for_stalls():
    """The content length comes from the bundled ladder's MPD and is its recipe's (at least 3
    minutes, issue 20); each mode plays all of it at least once, in runs that leave a buffer
    target's worth of time (30 s) beyond the media for start-up and stalls."""
    import tomllib

    recipe = tomllib.loads((ROOT / "data" / "traces" / "dash_hevc.recipe.toml").read_text())
    assert m.clip_s() == recipe["config"]["duration_s"] >= 180.0
    for grid in (m.QUICK, m.FULL):
        assert grid.loops >= 1 and grid.duration_s >= grid.loops * m.clip_s() + 30.0, grid
        d = m.build_scenario("div100", "balanced", "sptcp", loops=grid.loops, duration_s=grid.duration_s)
        assert d["flows"][0]["app"]["loops"] == grid.loops and d["sim"]["duration"] == f"{grid.duration_s:g}s"


def test_a_bad_mpd_duration_is_one_line(tmp_path: Path, monkeypatch):
    """An MPD whose duration is not PT…S (here a day, which the player's parser takes but the
    bundled ladder never writes) is named with its file and attribute, not a traceback."""
    bad = tmp_path / "scenarios" / "mptcp"
    bad.mkdir(parents=True)
    (bad / "base.toml").write_text((ROOT / m.BASE).read_text().replace("../../data/traces/dash_hevc_6s.mpd", "x.mpd"))
    (bad / "x.mpd").write_text('<MPD mediaPresentationDuration="P1D"/>')
    monkeypatch.setattr(m.paths, "root", lambda: tmp_path)
    m.clip_s.cache_clear()
    try:
        with pytest.raises(m.QoelabError, match=r"x\.mpd: MPD@mediaPresentationDuration: expected PT…S, got 'P1D'"):
            m.clip_s()
    finally:
        m.clip_s.cache_clear()


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mptcp") / "quick"
    code, _, err = run_cli("reproduce", "mptcp", "--quick", "--sensitivity", "-j", "2", "-o", str(out))
    assert code == 0, err
    return out


def _num(s: str) -> float | None:
    return None if s == "" else float(s)


def test_quick_report_is_valid_and_has_every_cell(quick: Path):
    doc = load_report(quick / "report.json")
    assert check_report(doc, quick) == []
    assert doc["paper"] == "mptcp" and doc["mode"] == "quick"
    tabs = {t["id"]: t for t in doc["tables"]}
    want = [(m.READING_LABEL[r["reading"]], r["config"], m.TRANSPORT_LABEL[r["transport"]]) for r in m._main_rows(m.QUICK)]
    abr = [(m.READING_LABEL[rd], cf, m.TRANSPORT_LABEL[tp], a) for rd in m.QUICK.abr_readings for cf in m.CONFIGS
           for tp in ("mptcp", "sptcp") for a in m.ABRS]
    assert [(r["reading"], r["config"], r["transport"], r["abr"]) for r in tabs["qoe-abr"]["rows"]] == abr
    for tid, col in (("fig4-startup", "playback"), ("fig5-retransmissions", "retx"), ("fig6-download", "rate"),
                     ("qoe", "stalls"), ("qoe-abr", "bitrate_mbps")):
        rows = tabs[tid]["rows"]
        if tid != "qoe-abr":
            assert [(r["reading"], r["config"], r["transport"]) for r in rows] == want, tid
        for r in rows:
            v = r[col]
            if r["transport"] == "MPTCP" and not MPTCP_RUNS:
                assert v == "not run"
            else:
                assert isinstance(v, dict) and v["n"] == m.QUICK.reps and math.isfinite(v["mean"]), (tid, r)
    # The CSVs are the tables.
    for t in doc["tables"]:
        rows = list(csv.DictReader((quick / t["csv"]).open()))
        assert len(rows) == len(t["rows"]), t["id"]
        for jr, cr in zip(t["rows"], rows):
            for k, v in jr.items():
                if isinstance(v, dict):
                    assert v["mean"] == pytest.approx(_num(cr[k])) and v["n"] == int(cr[f"{k}_n"])
    # The paper's columns are the transcribed values.
    for r in tabs["fig5-retransmissions"]["rows"]:
        tp = {"MPTCP": "mptcp", "SPTCP": "sptcp"}.get(r["transport"])
        assert r["paper"] == (m.PAPER_FIG5[(tp, r["config"])] if tp else None)
    reps = list(csv.DictReader((quick / "repetitions.csv").open()))
    assert len(reps) == len(m.cells(m.QUICK, mptcp=MPTCP_RUNS)) * m.QUICK.reps
    for f in doc["figures"]:
        assert (quick / f["path"]).read_bytes()[:4] == b"\x89PNG"
    assert {f["label"] for f in doc["findings"]} <= {"substantive", "trivial", "by construction", "calibrated",
                                                     "threshold chosen after the data"}
    assert [c["name"] for c in doc["choices"]] == [c.name for c in m.CHOICES]
    # Two quick repetitions are not evidence, and every output says so.
    assert all(f["quick"] for f in doc["findings"] if f["verdict"] != "untestable")
    assert "quick: not evidence" in doc["summary"] and "**quick: not evidence**" in doc["reading"]
    if not MPTCP_RUNS:
        assert "MPTCP cells did not run" in doc["summary"] and "refuses a DASH flow over MPTCP" in doc["setup"]


def test_the_sensitivity_runs_every_finding_under_each_declared_alternative(quick: Path):
    """`--sensitivity --quick` (in CI): each variant (one alternative of one choice, the others
    at their defaults) ran into sensitivity/<variant>/ with the default's seeds; every finding
    carries its verdict under each, is "robust" exactly when they all equal its own, and counts
    as holding only if it holds under every one; sensitivity.csv holds the same verdicts."""
    from qoelab.experiment.choices import variants

    names = [n for n, _ in variants(m.CHOICES)]
    assert names == ["coupled=lia", "coupled=olia", "coupled=balia", "abr=throughput", "abr=bba", "abr=bola",
                     "mpd_bandwidth=peak", "loss_direction=downstream", "loss_direction=both", "scheduler=round_robin",
                     "rcv_buf=fixed", "subflows=full_mesh", "psh_ack=off"]
    doc = load_report(quick / "report.json")
    rows = list(csv.DictReader((quick / "sensitivity.csv").open()))
    assert len(rows) == len(names) * len(doc["findings"])
    by = {(r["key"], r["variant"]): r["verdict"] for r in rows}
    held = tested = 0
    for f in doc["findings"]:
        s = f["sensitivity"]
        assert list(s["under"]) == names
        assert all(by[(f["key"], v)] == w for v, w in s["under"].items())
        assert s["robust"] == all(w == f["verdict"] for w in s["under"].values())
        assert (s["text"] == "robust") == s["robust"]
        if not s["robust"]:
            hang = {v.split("=")[0] for v, w in s["under"].items() if w != f["verdict"]}
            assert all(f"depends on {c} (default: {f['verdict']};" in s["text"] for c in hang)
        if f["label"] == "substantive" and f["verdict"] != "untestable":
            tested += 1
            held += f["verdict"] == "holds" and all(w == "holds" for w in s["under"].values())
    assert doc["summary"].count(f"{held} of {tested} substantive findings hold under every alternative") == 1
    for v in names:
        runs = list((quick / "sensitivity" / v / "runs" / "runs").glob("*/done"))
        assert len(runs) == len(m.cells(m.QUICK, abr_table=False)) * m.QUICK.reps, v
    # A variant's run of a cell shares the default's seed (paired across choices).
    import json

    base = json.loads(next((quick / "runs" / "runs").glob("cell=literal-balanced-sptcp__rep=1")).joinpath("cell.json").read_text())
    alt = json.loads((quick / "sensitivity" / "loss_direction=downstream" / "runs" / "runs" /
                      "cell=literal-balanced-sptcp__rep=1" / "cell.json").read_text())
    assert base["seed"] == alt["seed"]
    # The cost counts the variants' runs too.
    assert doc["cost"]["runs"] == len(list(quick.rglob("timing.json")))


def test_the_loss_reading_consistent_with_fig5_comes_from_the_data(quick: Path):
    """SPTCP's retransmission rate fits Fig. 5's one per second with loss ÷ 100; read downstream
    (the variant), the literal rates are ruled out (the README's hand measurement); the
    finding's interval is computed from the runs in repetitions.csv, and the reading says that
    the loss-free control fits Fig. 5 too."""
    doc = load_report(quick / "report.json")
    f = {x["key"]: x for x in doc["findings"]}
    assert f["fig5-sptcp-rate-literal"]["sensitivity"]["under"]["loss_direction=downstream"] == "does not hold"
    assert f["fig5-sptcp-rate-div100"]["verdict"] == "holds"
    reps = list(csv.DictReader((quick / "repetitions.csv").open()))
    lit = [math.log2(float(r["retx_per_s"])) for r in reps
           if r["reading"] == "literal" and r["transport"] == "sptcp" and r["abr"] == "vlc"]
    assert f["fig5-sptcp-rate-literal"]["estimate"]["mean"] == pytest.approx(sum(lit) / len(lit))
    assert "loss ÷ 100" in doc["summary"]
    assert "the loss-free control's SPTCP retransmits" in doc["reading"]


def test_mptcp_carries_dash_now():
    """MPTCP is full duplex (crates/core/src/transport/mptcp/conn.rs): the reproduction's
    MPTCP cells are built and run, none is reported as not run."""
    assert MPTCP_RUNS, m.mptcp_dash_refusal()


def test_mptcp_over_both_paths_beats_single_path_tcp_over_one_of_them(quick: Path):
    """Loss-free control: MPTCP over the two disjoint paths downloads each segment faster than
    single-path TCP over its path 1 (the better path), paired by seed: clearly (> 1.1×) on the
    balanced paths (15 + 15 Mbit/s against 15), and no worse than the better path (RFC 6356's
    first goal, within 5 %) on the unbalanced ones (25 + 5 against 25, where min-RTT sends on
    the 5-Mbit/s path first); both subflows carry video."""
    reps = list(csv.DictReader((quick / "repetitions.csv").open()))
    ctl = [r for r in reps if r["reading"] == "control" and r["abr"] == "vlc"]
    for cf in m.CONFIGS:
        by = {(r["transport"], r["rep"]): r for r in ctl if r["config"] == cf}
        for rep in range(m.QUICK.reps):
            mp, sp = by[("mptcp", str(rep))], by[("sptcp_best", str(rep))]
            gain = 1.1 if cf == "balanced" else 0.95
            assert float(mp["rate_mbps"]) > gain * float(sp["rate_mbps"]), (cf, rep, mp["rate_mbps"], sp["rate_mbps"])
            assert 5.0 < float(mp["path1_share_pct"]) < 95.0, (cf, rep)


def test_full_mesh_is_the_fullmesh_path_managers_four_subflows(tmp_path: Path):
    """The ``subflows`` choice's alternative: the fullmesh path manager's order (the initial
    pair, then per server address every client address), a core link R1–R2 for the cross pairs,
    single-path cells unchanged; a short run opens the 4 subflows and each carries video, the
    cross ones through the core (R1–R2 forwards packets both ways)."""
    from qoelab import paths
    from qoelab.reproduce.mptcp.build import full_mesh
    from qoelab.scenario import Scenario

    assert full_mesh(("c0", "c1"), ("s0", "s1")) == [("c0", "s0"), ("c1", "s0"), ("c0", "s1"), ("c1", "s1")]
    choice = next(c for c in m.CHOICES if c.name == "subflows")
    assert (choice.default, choice.alternatives, dict(choice.unavailable)) == ("disjoint", ("full_mesh",), {})
    d = m.build_scenario("control", "balanced", "mptcp", subflows="full_mesh", duration_s=8.0)
    (f,) = d["flows"]
    assert f["subflows"] == [{"src_addr": c, "dst_addr": s} for c, s in
                             (("10.1.0.1", "10.2.0.1"), ("10.1.1.1", "10.2.0.1"), ("10.1.0.1", "10.2.1.1"),
                              ("10.1.1.1", "10.2.1.1"))]
    assert {"a": "R1", "b": "R2", "rate": "1Gbps", "delay": "0ms"} in d["links"]
    assert m.build_scenario("control", "balanced", "sptcp", subflows="full_mesh") == m.build_scenario(
        "control", "balanced", "sptcp")
    assert len(m.build_scenario("control", "balanced", "mptcp")["flows"][0]["subflows"]) == 2
    with pytest.raises(ValueError, match="subflows 'mesh'"):
        m.build_scenario("control", "balanced", "mptcp", subflows="mesh")
    res = Scenario.from_dict(d, "full mesh", base_dir=paths.root() / "scenarios" / "mptcp").run(tmp_path)
    sub = [r for r in res.subflows.to_pylist() if r["flow"] == "dash"]
    assert sorted(r["path"] for r in sub) == [0, 1, 2, 3]
    assert all(r["rev_recv_bytes"] > 100_000 for r in sub), [(r["path"], r["rev_recv_bytes"]) for r in sub]
    core = {r["link"]: r["tx_pkts"] for r in res.links.to_pylist() if r["link"] in ("R1->R2", "R2->R1")}
    assert core["R1->R2"] > 0 and core["R2->R1"] > 0, core
    # Path 1's share counts the subflows through the client's path-1 interface: paths 0 and 2.
    run = tmp_path / "fake"
    run.mkdir()
    pq.write_table(pq.read_table(_fake_run(tmp_path, mptcp=False) / "flows.parquet"), run / "flows.parquet")
    pq.write_table(pa.Table.from_pylist([{"flow": "dash", "path": k, "rev_recv_bytes": b}
                                         for k, b in enumerate((1_000_000, 2_000_000, 3_000_000, 4_000_000))]),
                   run / "subflows.parquet")
    p = {"reading": "control", "config": "balanced", "transport": "mptcp", "coupled": "uncoupled", "abr": "vlc"}
    assert m.run_metrics(run, p, duration_s=10.0, subflows="full_mesh")["path1_share_pct"] == pytest.approx(40.0)
    assert m.run_metrics(run, p, duration_s=10.0)["path1_share_pct"] == pytest.approx(10.0)


@pytest.mark.parametrize("args, needle", [
    (["--reps", "0"], "--reps 0: must be at least 1"),
    (["--jobs", "x"], "invalid int value"),
    (["--no-such-flag"], "unrecognized arguments"),
])
def test_bad_cli_input_is_one_line_and_exit_2(tmp_path: Path, args, needle):
    code, out, err = run_cli("reproduce", "mptcp", "--quick", "-o", str(tmp_path / "o"), *args)
    assert code == 2
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "o" / "report.json").exists()
    assert len(lines) <= 2  # argparse prints its usage line before the error line


def test_an_output_path_that_is_a_file_is_refused(tmp_path: Path):
    f = tmp_path / "file"
    f.write_text("x")
    code, _, err = run_cli("reproduce", "mptcp", "--quick", "-o", str(f))
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and str(f) in err
    assert f.read_text() == "x"


def test_the_committed_expected_report_is_valid():
    folder = ROOT / "scenarios" / "mptcp" / "expected"
    doc = load_report(folder / "report.json")
    assert doc["paper"] == "mptcp" and doc["mode"] == "quick"
    assert {t["id"] for t in doc["tables"]} >= {"table1", "fig4-startup", "fig5-retransmissions", "fig6-download", "qoe"}
    # Made with the MPTCP cells: no row reads "not run", and the paper's Fig. 5 values are today's.
    fig5 = next(t for t in doc["tables"] if t["id"] == "fig5-retransmissions")
    assert any(r["transport"] == "MPTCP" for r in fig5["rows"])
    assert "not run" not in (folder / "report.md").read_text()
    # Made on today's ladder and grid: the sessions it describes are the quick mode's.
    assert (f"the {m.clip_s():g}-s HEVC ladder played once ({m.clip_s():g} s of media" in doc["setup"]
            and f"runs of {m.QUICK.duration_s:g} s" in doc["setup"]), doc["setup"]
    for f in doc["figures"]:
        assert (folder / f["path"]).is_file()


def test_the_committed_quick_report_is_todays(quick: Path):
    # scenarios/mptcp/expected/ is a quick run; a model or report change that moves it must
    # regenerate it (qoelab reproduce mptcp --quick -o DIR, then copy the files expected/ holds),
    # or the committed report silently describes an older simulator.
    committed = (ROOT / "scenarios" / "mptcp" / "expected" / "report.md").read_text()
    assert without_provenance((quick / "report.md").read_text()) == without_provenance(committed), "scenarios/mptcp/expected is stale: regenerate it"
