"""What the layer gives the paper reproductions beyond the toy: per-repetition builders, several
experiments under one progress display, cost over their folders, the wide (pivot) view, the
half-width CSV, figures and findings with their own units."""

import csv
import io
import json
import tomllib

import numpy as np
import pyarrow.parquet as pq
import pytest

from qoelab.experiment import core
from qoelab.experiment.core import Experiment, seed_of
from qoelab.experiment.findings import Finding, Label, Verdict
from qoelab.experiment.report import load_report
from qoelab.experiment.stats import Estimate, mean_ci
from qoelab.experiment.tables import Column, Figure, Table, findings_md, pivot, report
from toy import TOY, build, metrics  # noqa: F401  (the shared toy experiment)



def build_rep(p, rep):
    """A per-repetition draw: the flow starts later in repetition 1 than in repetition 0."""
    sc = build(p)
    sc.set("flows[0].start", f"{10 * rep}ms")
    return sc


def test_per_rep_build_runs_each_repetitions_own_scenario(tmp_path):
    exp = Experiment("toy-rep", [{"rate": "950Mbps"}, {"rate": "2Gbps"}], build_rep, metrics, paired=("rate",), reps=2,
                     per_rep=True)
    counts = core.run(exp, tmp_path)
    assert counts["ran"] == 4 and counts["total"] == 4
    assert core.run(exp, tmp_path)["skipped"] == 4  # resumes
    for cid in ("rate=950Mbps", "rate=2Gbps"):
        for r in (0, 1):
            d = core.run_dir(exp, tmp_path, cid, r)
            assert d == tmp_path / f"rep{r}" / "runs" / f"cell={cid}__rep=0"
            scen = tomllib.loads((d / "scenario.toml").read_text())
            cell = json.loads((d / "cell.json").read_text())
            # The layer's seed for repetition r, whatever the folder calls it.
            assert cell["seed"] == seed_of("toy-rep", {"rate": "950Mbps"}, ("rate",), r)
            assert scen["flows"][0]["start"] == f"{10 * r}ms"
    rows = core.rows(exp, tmp_path)
    assert [(r["rate"], r["rep"]) for r in rows] == [("950Mbps", 0), ("950Mbps", 1), ("2Gbps", 0), ("2Gbps", 1)]
    assert rows[0]["seed"] == rows[2]["seed"] != rows[1]["seed"]
    # More repetitions later: the finished ones are reused, one folder more runs.
    more = Experiment("toy-rep", exp.cells, build_rep, metrics, paired=("rate",), reps=3, per_rep=True)
    c = core.run(more, tmp_path)
    assert c["ran"] == 2 and c["skipped"] == 4
    assert core.cost((more, tmp_path))["runs"] == 6


def test_per_rep_scenarios_really_differ_between_repetitions(tmp_path):
    """The flow starts 10 ms later in repetition 1 of a 50-ms run: it sends less."""
    def sent(run_dir, p):
        (row,) = pq.read_table(run_dir / "flows.parquet").to_pylist()
        return {"bytes": float(row["throughput_bps"])}

    exp = Experiment("toy-rep", [{"rate": "2Gbps"}], build_rep, sent, reps=2, per_rep=True)
    core.run(exp, tmp_path)
    r0, r1 = core.rows(exp, tmp_path)
    assert r1["bytes"] < r0["bytes"]


def test_run_many_counts_progress_over_all_experiments(tmp_path):
    a = Experiment("a", [{"rate": "950Mbps"}, {"rate": "2Gbps"}], build, metrics, reps=2)
    b = Experiment("b", [{"rate": "2Gbps"}], build_rep, metrics, reps=2, per_rep=True)
    seen = []
    lines = []
    got = core.run_many([(a, tmp_path / "a"), (b, tmp_path / "b")], 1, lambda d, t: seen.append((d, t)),
                        log=lines.append)
    assert got["a"]["ran"] == 4 and got["b"]["ran"] == 2
    assert {t for _, t in seen} == {6} and seen[-1] == (6, 6)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # never goes back
    assert len(lines) == 2 and lines[0].strip().startswith("a: 4 ran")
    assert core.cost((a, tmp_path / "a"), (b, tmp_path / "b"))["runs"] == 6
    with pytest.raises(Exception, match="names repeat"):
        core.run_many([(a, tmp_path / "a"), (a, tmp_path / "c")])


def test_pivot_half_width_csv_and_findings_units(tmp_path):
    rows = [{"q": "fifo", "n": 1, "loss": mean_ci([0.1, 0.3])}, {"q": "fifo", "n": 5, "loss": mean_ci([0.5, 0.7])},
            {"q": "sqf", "n": 5, "loss": mean_ci([0.0, 0.0, 0.0])}]
    w = pivot("w", "wide", rows, (Column("q", "scheduler"),), "n", [1, 5],
              lambda r: f"{r['loss'].mean:.2f}", label=lambda n: f"n = {n}")
    md = w.markdown()
    assert "| scheduler | n = 1 | n = 5 |" in md
    assert "| fifo | 0.20 | 0.60 |" in md and "| sqf | – | 0.00 |" in md
    assert "**wide**" in md and "**wide**" not in w.markdown(title=False)
    dash = pivot("w", "wide", rows, (Column("q", "scheduler"),), "n", [1, 5], lambda r: "x", missing="-")
    assert "| sqf | - | x |" in dash.markdown()
    t = Table("l", "long", [Column("q", "q"), Column("n", "n"), Column("loss", "loss")], rows, ci="half_width")
    got = list(csv.DictReader(io.StringIO(t.csv_text())))
    assert list(got[0]) == ["q", "n", "loss", "loss_ci", "reps"]
    assert float(got[0]["loss"]) == pytest.approx(0.2) and float(got[0]["loss_ci"]) == pytest.approx(
        rows[0]["loss"].half_width)
    assert got[2]["reps"] == "3"
    # A NumPy scalar is written as its number, not as its repr ("np.float64(0.5)").
    assert Table.of_rows("x", "x", [{"a": np.float64(0.5), "b": 2}]).csv_text() == "a,b\n0.5,2\n"
    with pytest.raises(ValueError, match="ci must be"):
        Table("x", "x", [Column("loss", "loss")], rows, ci="sd").csv_text()
    f1 = Finding("a", "loss grows", Label.SUBSTANTIVE, Verdict.HOLDS, "loss, n = 5 minus n = 1", Estimate(0.4, 0.1, 2),
                 "why a")
    f2 = Finding("b", "share grows", Label.TRIVIAL, Verdict.HOLDS, "share (Mbit/s)", Estimate(2.0, 0.5, 2), "why b")
    text = findings_md([f1, f2], units=lambda f: (100.0, " pp") if "loss" in f.statistic else (1.0, ""), why=True)
    assert "= 40 [30, 50] pp (n = 2). why a" in text and "= 2 [1.5, 2.5] (n = 2). why b" in text
    assert "why" not in findings_md([f1, f2])


def test_figure_hook_draws_and_the_report_lists_it(tmp_path):
    def draw(path):
        path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 16)

    fig = Figure("f1", "a figure", "f1.png", draw, "paper Fig. 1")
    path = report(tmp_path, paper="sqf", mode="quick", title="t", tables=[], findings=[], reading="", figures=[fig])
    doc = load_report(path)
    assert doc["figures"] == [{"id": "f1", "title": "a figure", "path": "f1.png", "source": "paper Fig. 1"}]
    assert (tmp_path / "f1.png").stat().st_size > 0
    with pytest.raises(ValueError, match="wrote no"):
        Figure("f2", "nothing drawn", "f2.png", lambda p: None).write(tmp_path)
