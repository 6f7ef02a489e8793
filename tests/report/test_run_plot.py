"""The run plot's choices: which links get a queue panel, and flow colours."""

from __future__ import annotations

import numpy as np

from qoelab.paths import root as repo_root
from qoelab.report.plots import busiest_links, flow_colors
from qoelab.scenario import Scenario


def test_busiest_links_ranks_unsigned_counters_by_magnitude() -> None:
    # uint64 columns, as the links table has them: negating them wraps, so the old
    # `lexsort((-maxb, -drops))` ranked the idle links (0 → 0) above the busy one.
    drops = np.array([0, 0, 37, 0], dtype=np.uint64)
    maxb = np.array([1, 0, 50, 4], dtype=np.uint64)
    assert busiest_links(drops, maxb) == [2, 3, 0]
    assert busiest_links(drops, maxb, n=1) == [2]
    # links that never held a packet get no panel
    assert busiest_links(np.zeros(3, np.uint64), np.zeros(3, np.uint64)) == []


def test_demo_queue_panel_shows_the_bottleneck() -> None:
    sc = Scenario.load(repo_root() / "scenarios" / "demo" / "scenario.toml")
    sc.data["sim"]["duration"] = "3s"
    res = sc.run()
    links = res.tables["links"]
    chosen = busiest_links(links.column("drop_queue_pkts").to_numpy(),
                           links.column("max_backlog_pkts").to_numpy())
    names = [links.column("link")[i].as_py() for i in chosen]
    assert names, "no link chosen"
    assert names[0] == "router->client", names


def test_flow_colours_are_distinct_beyond_ten_flows() -> None:
    for n in (1, 4, 10, 11, 12, 20, 33):
        cols = flow_colors(n)
        assert len(cols) == n
        assert len({tuple(np.round(c, 6)) for c in cols}) == n


def test_qoelab_plot_draws_the_same_png_as_run_plot(tmp_path) -> None:
    # `run` writes no plot by default; `plot DIR` draws it afterwards from the Parquet tables
    # and scenario.toml, byte for byte what `run --plot` draws from the tables in memory.
    from tests.conftest import run_cli

    scen = ["bench/dumbbell-10m", "--set", "sim.duration=5s"]
    assert run_cli("run", *scen, "-o", str(tmp_path / "a"))[0] == 0
    assert not (tmp_path / "a" / "run.png").exists()
    assert run_cli("run", *scen, "-o", str(tmp_path / "b"), "--plot")[0] == 0
    code, out, err = run_cli("plot", str(tmp_path / "a"))
    assert code == 0, err
    png = (tmp_path / "a" / "run.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png == (tmp_path / "b" / "run.png").read_bytes()
    assert sorted(p.name for p in (tmp_path / "a").iterdir() if p.name.startswith(".")) == []


def test_qoelab_plot_refuses_what_is_not_a_run_folder(tmp_path) -> None:
    from tests.conftest import run_cli

    code, _, err = run_cli("plot", str(tmp_path / "nope"))
    assert code == 2 and "not a folder" in err and "Traceback" not in err
    (tmp_path / "d").mkdir()
    code, _, err = run_cli("plot", str(tmp_path / "d"))
    assert code == 2 and "throughput.parquet: missing" in err
    for name in ("throughput", "queues", "links"):
        (tmp_path / "d" / f"{name}.parquet").write_bytes(b"junk")
    code, _, err = run_cli("plot", str(tmp_path / "d"))
    assert code == 2 and "not a readable Parquet table" in err and "Traceback" not in err
    code, _, err = run_cli("plot", str(tmp_path / "d"), "-o", str(tmp_path / "x.jpg"))
    assert code == 2 and "PNG" in err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["links.parquet", "queues.parquet", "throughput.parquet"]


MATH_NAMES = """
name = "$\\\\frac{$ run"
[sim]
duration = "0.5s"
[[links]]
a = "$x$"
b = "B"
rate = "10Mbps"
delay = "5ms"
[[flows]]
name = "$\\\\frac{$"
src = "$x$"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
[[flows]]
name = "_hidden"
src = "$x$"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
"""


def test_names_are_drawn_as_text_not_mathtext(tmp_path, capsys) -> None:
    """A scenario or flow name with mathtext (`$\\frac{$`) once failed `run --plot` after the run
    had finished (issue 42): names are escaped and drawn literally."""
    from qoelab.cli import main
    from qoelab.report.plots import text

    assert text("$\\frac{$") == "\\$\\frac{\\$" and text("_x").endswith("_x") and text("_x") != "_x"
    scen = tmp_path / "s.toml"
    scen.write_text(MATH_NAMES)
    assert main(["run", str(scen), "-o", str(tmp_path / "out"), "--plot"]) == 0
    assert (tmp_path / "out" / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plot_failure_after_the_run_keeps_its_results(tmp_path, capsys, monkeypatch) -> None:
    import qoelab.report.plots as plots
    from qoelab.cli import main

    def broken(res, path):
        raise ValueError("a drawing bug")

    monkeypatch.setattr(plots, "plot_run", broken)
    scen = tmp_path / "s.toml"
    scen.write_text(MATH_NAMES)
    out = tmp_path / "out"
    assert main(["run", str(scen), "-o", str(out), "--plot"]) == 3
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith(f"qoelab: {out}: the run finished and its results are written, but "
                                               "run.png could not be drawn (ValueError: a drawing bug)"), err
    assert {"summary.json", "flows.parquet", "throughput.parquet"} <= {p.name for p in out.iterdir()}
    assert not (out / "run.png").exists() and not [p for p in out.iterdir() if p.name.startswith(".")]
