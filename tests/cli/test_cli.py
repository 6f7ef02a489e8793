"""The CLI: runs, outputs, determinism, sweeps and one-line errors with exit code 2."""

import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import run_cli

SCEN = """
name = "cli-test"
[sim]
duration = "3s"
seed = 4
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"
queue = { kind = "fifo", limit = "10p" }
loss_ab = { kind = "bernoulli", p = 0.02 }
[[flows]]
name = "p"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "poisson", rate = "8Mbps", payload = "1000B" }
packet_log = true
"""


@pytest.fixture
def scen(tmp_path: Path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(SCEN)
    return p


def digest(d: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(d.iterdir()) if f.suffix in (".parquet", ".json", ".toml")}


def test_run_writes_results(scen: Path, tmp_path: Path):
    code, out, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"), "--no-plot")
    assert code == 0, err
    files = {f.name for f in (tmp_path / "r").iterdir()}
    assert {"flows.parquet", "links.parquet", "throughput.parquet", "queues.parquet", "packets.parquet", "summary.json", "scenario.toml"} <= files
    t = pq.read_table(tmp_path / "r" / "packets.parquet")
    assert set(t.column_names) >= {"flow", "seq", "nal", "frame", "size_bytes", "sent_ns", "recv_ns"}
    assert "p " in out or "p" in out


def test_flow_queues_written_only_when_sampled(scen: Path, tmp_path: Path):
    """A run whose disciplines sample no per-flow backlog writes no flow_queues.parquet; with
    SQF's ``flow_sample`` the file holds one row per active flow per sample instant."""
    code, _, err = run_cli("run", str(scen), "-o", str(tmp_path / "off"), "--no-plot")
    assert code == 0, err
    assert not (tmp_path / "off" / "flow_queues.parquet").exists()
    sqf = '{kind="sqf",limit="10p",flow_sample="10ms"}'
    code, _, err = run_cli("run", str(scen), "-o", str(tmp_path / "on"), "--no-plot", "--set", f"links[0].queue={sqf}")
    assert code == 0, err
    t = pq.read_table(tmp_path / "on" / "flow_queues.parquet").to_pydict()
    assert t["link"] and set(t["link"]) == {"A->B"}
    # At most one sample instant per 10 ms interval of the 3 s run, each naming the flow or "".
    instants = sorted(set(t["t_s"]))
    assert 10 <= len(instants) <= 300
    assert all(int(b * 100) != int(a * 100) for a, b in zip(instants, instants[1:]))
    assert set(t["flow"]) <= {"p", ""} and "p" in t["flow"]
    assert all((f == "") == (b == 0) for f, b in zip(t["flow"], t["bytes"]))


def test_same_seed_identical_files_other_seed_differs(scen: Path, tmp_path: Path):
    """(g) byte-identical result files for the same seed; different for another seed."""
    for name, seed in [("a", 4), ("b", 4), ("c", 5)]:
        code, _, err = run_cli("run", str(scen), "-o", str(tmp_path / name), "--no-plot", "--set", f"sim.seed={seed}")
        assert code == 0, err
    a, b, c = (digest(tmp_path / n) for n in "abc")
    assert a == b
    assert a["flows.parquet"] != c["flows.parquet"] and a["packets.parquet"] != c["packets.parquet"]


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda s: s.replace('[sim]', '[sim'), "malformed TOML"),
        (lambda s: s.replace('delay = "5ms"', 'delay = "5ms"\ncolour = 1'), "links[0].colour: unknown field"),
        (lambda s: s.replace('rate = "10Mbps"', 'rate = "10"'), "links[0].rate: expected a rate"),
        (lambda s: s.replace('rate = "10Mbps"', 'rate = "-1Mbps"'), "links[0].rate: rate must be positive"),
        (lambda s: s.replace('delay = "5ms"', ''), "links[0]: missing field `delay`"),
        (lambda s: s.replace('dst = "B"', 'dst = "Q"'), 'flows[0].dst: unknown node "Q"'),
        (lambda s: s + '[[links]]\na = "X"\nb = "Y"\nrate = "1Mbps"\ndelay = "1ms"\n', "disconnected"),
        (lambda s: s.replace('{ kind = "poisson", rate = "8Mbps", payload = "1000B" }', '{ kind = "video", trace = "missing.csv" }'), "flows[0].app.trace"),
        # Used to panic dividing by a rate rounded to 0 bit/s.
        (lambda s: s.replace('rate = "10Mbps"', 'rate = "0.4bps"'), "links[0].rate: rate must be at least 1bps"),
        # Used to expand 10^8 flows and be killed for memory.
        (lambda s: s.replace('name = "p"', 'name = "p{i}"\ncount = 100000000'), "flows[0].count: the scenario would have 100000000"),
        (lambda s: s.replace('delay = "5ms"', 'delay = "5ms"\nchannel = { kind = "tdd", frame = "0ms", slot_ab = { start = "0ms", end = "1ms" }, slot_ba = { start = "1ms", end = "2ms" } }'), "links[0].channel.frame: must be positive"),
        (lambda s: s.replace('delay = "5ms"', 'delay = "5ms"\nchannel = { kind = "tdd", frame = "5ms", slot_ab = { start = "0ms", end = "6ms" }, slot_ba = { start = "1ms", end = "2ms" } }'), "links[0].channel.slot_ab.end: 6ms is past the end of the 5ms frame"),
        (lambda s: s.replace('delay = "5ms"', 'delay = "5ms"\nchannel = { kind = "aloha" }'), "links[0].channel.kind: unknown variant `aloha`"),
        # Used to clamp silently to u64::MAX nanoseconds.
        (lambda s: s.replace('duration = "3s"', 'duration = "1e11s"'), "sim.duration: time must be below 146 years"),
    ],
)
def test_bad_input_one_line_exit_2(scen: Path, tmp_path: Path, mutate, expect):
    scen.write_text(mutate(SCEN))
    code, out, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"))
    assert code == 2, (out, err)
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert str(scen) in lines[0] and expect in lines[0], lines[0]
    assert "Traceback" not in err and "panicked" not in err
    assert not (tmp_path / "r").exists(), "no partial result directory"


def test_malformed_trace_one_line(tmp_path: Path, scen: Path):
    tr = tmp_path / "t.csv"
    tr.write_text("frame,type,size_bytes,ts_ms\n0,I,100,0\n1,Q,100,33\n")
    scen.write_text(SCEN.replace('{ kind = "poisson", rate = "8Mbps", payload = "1000B" }', f'{{ kind = "video", trace = "{tr}" }}'))
    code, _, err = run_cli("run", str(scen))
    assert code == 2 and "line 3" in err and "type" in err, err


def test_missing_file_and_bad_set(scen: Path):
    code, _, err = run_cli("run", "/nonexistent/x.toml")
    assert code == 2 and "/nonexistent/x.toml" in err
    code, _, err = run_cli("run", str(scen), "--set", "links[3].rate=1Mbps")
    assert code == 2 and "links[3]" in err
    code, _, err = run_cli("run", str(scen), "--bogus")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_sweep_is_resumable(scen: Path, tmp_path: Path):
    out = tmp_path / "sw"
    args = ["sweep", str(scen), "--grid", "links[0].rate=5Mbps,10Mbps", "--reps", "2", "-j", "2", "-o", str(out)]
    code, o, err = run_cli(*args)
    assert code == 0, err
    assert "4 runs (0 already done, 4 run now)" in o
    t = pq.read_table(out / "summary.parquet")
    assert t.num_rows == 4
    # Simulate an interrupted run: remove one marker; only that run is redone.
    runs = sorted((out / "runs").iterdir())
    (runs[0] / "done").unlink()
    before = {r.name: (r / "flows.parquet").stat().st_mtime_ns for r in runs[1:]}
    code, o, err = run_cli(*args)
    assert code == 0, err
    assert "4 runs (3 already done, 1 run now)" in o
    assert before == {r.name: (r / "flows.parquet").stat().st_mtime_ns for r in runs[1:]}
    # Different rates give different results; reps of a cell differ by seed.
    f = pq.read_table(out / "flows.parquet")
    assert f.num_rows == 4
    # Each run's cost is kept beside it and summed; results files do not carry it.
    from qoelab.sweep import timing

    t = timing(out)
    assert t["runs"] == 4 and t["cpu_s"] > 0 and t["wall_s"] > 0 and len(t["versions"]) == 1
    # The sweep's own wall time: no longer than the runs' sum (runs in parallel count once),
    # no shorter than its longest run.
    longest = max(json.loads((r / "timing.json").read_text())["wall_s"] for r in runs)
    assert longest <= t["active_wall_s"] + 0.01 and t["active_wall_s"] <= t["wall_s"] + 1.0
    assert all("wall_s" not in (r / "cell.json").read_text() for r in runs)
    # Code versions are listed in the order they were first used, not by name.
    for r, (version, start) in zip(runs[:2], [("zzz-first", 1000.0), ("aaa-second", 2000.0)]):
        d = json.loads((r / "timing.json").read_text())
        d.update(git=version, started_unix=start, finished_unix=start + d["wall_s"])
        (r / "timing.json").write_text(json.dumps(d))
    assert timing(out)["versions"][:2] == ["zzz-first", "aaa-second"]


def test_sweep_runs_repetition_by_repetition():
    """A long sweep stopped part-way holds whole repetitions: every cell of rep 0 comes before
    any cell of rep 1."""
    from qoelab.sweep import cells

    cs = cells([("a", [1, 2, 3]), ("b", ["x", "y"])], 3)
    assert [c.rep for c in cs] == [0] * 6 + [1] * 6 + [2] * 6
    assert len({c.run_id for c in cs}) == 18
    assert [dict(c.params) for c in cs[:6]] == [dict(c.params) for c in cs[6:12]]


def test_jobs_zero_means_one_per_cpu_negative_is_an_error(scen: Path, tmp_path: Path):
    import os

    from qoelab.executors import resolve_jobs

    assert resolve_jobs(0) == len(os.sched_getaffinity(0)) and resolve_jobs(3) == 3
    code, _, err = run_cli("sweep", str(scen), "--grid", "links[0].rate=5Mbps", "-j", "-2", "-o", str(tmp_path / "x"))
    assert code == 2 and "-j/--jobs -2" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x" / "runs").exists()


def test_bad_grid(scen: Path, tmp_path: Path):
    code, _, err = run_cli("sweep", str(scen), "--grid", "links[0].rate", "-o", str(tmp_path / "x"))
    assert code == 2 and "--grid" in err
    code, _, err = run_cli("sweep", str(scen), "--grid", "links[0].rate=5,6", "-o", str(tmp_path / "x"))
    assert code == 2 and "links[0].rate" in err


def test_sweep_refuses_a_changed_scenario(scen: Path, tmp_path: Path):
    out = tmp_path / "sw"
    args = ["sweep", str(scen), "--grid", "links[0].rate=5Mbps", "-o", str(out)]
    assert run_cli(*args)[0] == 0
    scen.write_text(SCEN.replace('p = 0.02', 'p = 0.03'))
    code, _, err = run_cli(*args)
    assert code == 2 and "different base scenario" in err, err


def test_union_length_counts_overlaps_once():
    from qoelab.sweep import union_length

    assert union_length([]) == 0.0
    # Two workers overlapping for 5 s, then a pause, then one more run.
    assert union_length([(0.0, 10.0), (5.0, 12.0), (20.0, 23.0), (21.0, 22.0)]) == pytest.approx(15.0)
    assert union_length([(3.0, 4.0), (0.0, 1.0)]) == pytest.approx(2.0)


def test_grid_columns_are_typed_by_their_values():
    from types import SimpleNamespace

    from qoelab.sweep import _param_types

    cells = [SimpleNamespace(params=(("rate", "10Mbps"), ("aqm", "fifo"), ("n", 1), ("x", 1.5), ("mix", "5ms"),
                                     ("half", "10Mbps"))),
             SimpleNamespace(params=(("rate", "20Mbps"), ("aqm", "sqf"), ("n", 2), ("x", 2), ("mix", "20Mbps"),
                                     ("half", "fifo")))]
    # one quantity kind -> that kind; plain words, mixed kinds or words beside quantities -> "str"
    assert _param_types(cells) == {"rate": "rate_bps", "aqm": "str", "n": "int", "x": "float", "mix": "str",
                                   "half": "str"}


def test_sweep_warns_when_repetitions_are_identical(scen: Path, tmp_path: Path):
    # The fixture draws random loss and Poisson arrivals: repetitions differ, no warning.
    code, _, err = run_cli("sweep", str(scen), "--reps", "2", "-o", str(tmp_path / "random"))
    assert code == 0, err
    assert "identical" not in err
    # CBR over a lossless link: nothing depends on the seed.
    fixed = tmp_path / "fixed.toml"
    fixed.write_text(SCEN.replace('loss_ab = { kind = "bernoulli", p = 0.02 }\n', "")
                     .replace('kind = "poisson"', 'kind = "cbr"'))
    code, _, err = run_cli("sweep", str(fixed), "--grid", "links[0].rate=5Mbps,10Mbps", "--reps", "3",
                           "-o", str(tmp_path / "fixed"))
    assert code == 0, err
    assert "2 of 2 cells ran repetitions with identical flows tables" in err
    assert "3 identical runs" in err


def test_sweep_tables_keep_grid_values_typed(scen: Path, tmp_path: Path):
    out = tmp_path / "typed"
    code, _, err = run_cli("sweep", str(scen), "--grid", "links[0].rate=20Mbps,5Mbps",
                           "--grid", "sim.seed=1,10,2", "-o", str(out))
    assert code == 0, err
    for name in ("summary.parquet", "flows.parquet"):
        t = pq.read_table(out / name)
        assert str(t.schema.field("sim.seed").type) == "int64", name
        assert sorted(t.column("sim.seed").to_pylist())[:3] == [1, 1, 2]      # numeric order
        assert str(t.schema.field("links[0].rate").type) == "string"
        assert str(t.schema.field("links[0].rate.si").type) == "double"
        rows = sorted(t.select(["links[0].rate.si", "links[0].rate"]).to_pylist(), key=lambda r: r["links[0].rate.si"])
        assert rows[0] == {"links[0].rate.si": 5e6, "links[0].rate": "5Mbps"}
        assert rows[-1] == {"links[0].rate.si": 20e6, "links[0].rate": "20Mbps"}
        # Beside each scenario-path column, its twin named as an identifier (same values and
        # type), for pandas query() and attribute access.
        cols = t.column_names
        for path, plain in (("links[0].rate", "links_0_rate"), ("links[0].rate.si", "links_0_rate_si"),
                            ("sim.seed", "sim_seed")):
            assert cols.index(plain) == cols.index(path) + 1, cols
            assert t.column(plain).to_pylist() == t.column(path).to_pylist(), (name, plain)
            assert t.schema.field(plain).type == t.schema.field(path).type
        assert set(t.to_pandas().query("links_0_rate_si < 1e7").links_0_rate) == {"5Mbps"}


def test_plain_names_are_identifiers_and_never_shadow_a_column():
    from qoelab.sweep import plain_name, with_plain_names

    assert plain_name("links[0].queue.limit") == "links_0_queue_limit"
    assert plain_name("flows[video].app.rate.si") == "flows_video_app_rate_si"
    assert plain_name("links.0.rate") == "links_0_rate" and plain_name("0.x").isidentifier()
    # A key that is already plain gets no twin; a twin that would shadow a table column or an
    # earlier twin is left out (the path column stays).
    assert with_plain_names([("rep_x", 1), ("links[0].rate", "5Mbps"), ("links.0.rate", "6Mbps")], ["flow"]) == [
        ("rep_x", 1), ("links[0].rate", "5Mbps"), ("links_0_rate", "5Mbps"), ("links.0.rate", "6Mbps")]
    assert with_plain_names([("a.flow", 1)], ["a_flow"]) == [("a.flow", 1)]


def test_quantities_read_as_the_core_reads_them():
    from qoelab.units import quantity

    assert quantity("5Mbps") == ("rate_bps", 5e6)
    assert quantity("1.5 Gb/s") == ("rate_bps", 1.5e9)
    assert quantity("10ms") == ("time_s", pytest.approx(0.01))
    assert quantity("64KiB") == ("bytes", 65536.0)
    assert quantity("50p") == ("packets", 50.0)
    assert quantity("5 furlongs") is None and quantity("fifo") is None and quantity("5") is None
