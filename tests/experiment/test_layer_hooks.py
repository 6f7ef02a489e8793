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
from qoelab.experiment.findings import Finding, Label, above
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
    assert [r for r, _ in core.timings(more, tmp_path)] == [0, 1]  # repetition 2 has no folder yet
    c = core.run(more, tmp_path)
    assert c["ran"] == 2 and c["skipped"] == 4
    assert core.cost((more, tmp_path))["runs"] == 6
    # Each repetition's own cost, in repetition order; they add up to the experiment's.
    per_rep = core.timings(more, tmp_path)
    assert [(r, t["runs"]) for r, t in per_rep] == [(0, 2), (1, 2), (2, 2)]
    assert sum(t["cpu_s"] for _, t in per_rep) == pytest.approx(core.cost((more, tmp_path))["cpu_s"], abs=2e-3)


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
    got = core.run_many([(a, tmp_path / "a"), (b, tmp_path / "b")], 1, lambda d, t, reused=0: seen.append((d, t)),
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
    # Rows for given index values, in their order: one without data is all `missing`, and one
    # that is in the data but not asked for is left out.
    every = pivot("w", "wide", rows, (Column("q", "scheduler"),), "n", [1, 5], lambda r: "x", missing="-",
                  keys=[("red",), ("sqf",)])
    assert [r["q"] for r in every.rows] == ["red", "sqf"]
    assert "| red | - | - |" in every.markdown() and "| sqf | - | x |" in every.markdown()
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
    f1 = Finding("a", "loss grows", Label.SUBSTANTIVE, above(size=0.2), "loss, n = 5 minus n = 1", Estimate(0.4, 0.1, 2),
                 "why a", scale=100.0, unit=" pp")
    f2 = Finding("b", "share grows", Label.TRIVIAL, above(), "share (Mbit/s)", Estimate(2.0, 0.5, 2), "why b")
    text = findings_md([f1, f2], why=True)
    # Each finding in its own unit: the interval, the rule and the note alike.
    assert ("= 40 [30, 50] pp (n = 2); claim > 0 pp (paper: 20 pp): the interval lies above 0 pp; the paper's 20 pp "
            "lies 10 pp below it. **quick: not evidence**. why a") in text
    assert "= 2 [1.5, 2.5] (n = 2); claim > 0" in text and text.rstrip().endswith("why b")
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


def test_signed_interval_shows_enough_decimals_to_agree_with_its_verdict():
    """An interval that excludes 0 must not print as one that holds it: at 4 decimals the TFD
    grid's -0.000068 ± 0.000067 read "-0.0001 ± 0.0001"; two significant figures of the
    half-width (at least 4 decimals) keep the printed ends on the side of 0 they are on."""
    from qoelab.experiment.tables import pm_str

    assert pm_str(Estimate(-0.000068, 0.000067, 20)) == "-0.000068 ± 0.000067 (n = 20)"
    assert pm_str(Estimate(0.0024, 0.0105, 20)) == "+0.0024 ± 0.0105 (n = 20)"
    assert pm_str(Estimate(-0.39688, 0.00395, 20)) == "-0.3969 ± 0.0040 (n = 20)"
    assert pm_str(Estimate(12.5, 3.25, 5)) == "+12.5000 ± 3.2500 (n = 5)"
    # One repetition: the mean alone, with a decimal more than a tenth of it needs.
    assert pm_str(Estimate(0.000664, float("nan"), 1)) == "+0.000664 (1 sample)"
    assert pm_str(Estimate(0.0, float("nan"), 1)) == "+0.0000 (1 sample)"
    assert pm_str(None) == "–"


def test_compute_times_are_given_in_a_unit_that_suits_them():
    from qoelab.experiment.tables import duration_str

    assert duration_str(15.9) == "15.9 s"
    assert duration_str(119.9) == "119.9 s" and duration_str(120.0) == "2.0 min"
    assert duration_str(1453.0) == "24.2 min"
    assert duration_str(7200.0) == "2.00 h" and duration_str(82560.1) == "22.93 h"
    assert duration_str(float("nan")) == "unrecorded" and duration_str(float("inf")) == "unrecorded"


def test_publish_writes_report_json_and_md_from_the_same_parts(tmp_path):
    """publish: the findings carry their group when one is given, the provenance the command
    given (or the default one), and report.md holds the same table as report.json."""
    from qoelab.experiment.tables import publish

    t = Table("t1", "Table I", [Column("n", "n"), Column("loss", "loss", "%", "ours", 100.0)],
              [{"n": 1, "loss": mean_ci([0.01, 0.02])}, {"n": 2, "loss": mean_ci([0.03, 0.05])}])
    t.write_csv(tmp_path, "t1.csv")
    f = Finding("up", "loss grows with n", Label.SUBSTANTIVE, above(), "loss(2) − loss(1)", Estimate(0.025, 0.01, 2))
    kw = dict(paper="tfd", quick=True, title="T", tables=[t], findings=[f], source="Sec. IV", figures=[], reading="R",
              summary="S", setup="U", cost={"runs": 4}, seeds=[7, 3])
    publish(tmp_path, **kw)
    doc = load_report(tmp_path / "report.json")
    assert "group" not in doc["findings"][0] and doc["findings"][0]["source"] == "Sec. IV"
    assert {k: doc["provenance"][k] for k in ("command", "seeds", "runs_code", "status")} == {
        "command": "qoelab reproduce tfd --quick", "seeds": [7, 3], "runs_code": [], "status": "unrecorded"}
    assert doc["mode"] == "quick" and doc["summary"] == "S" and doc["tables"][0]["csv"] == "t1.csv"
    publish(tmp_path, **kw, group="62M-1000p", command="qoelab reproduce tfd --quick --calibration 62M-1000p")
    doc = load_report(tmp_path / "report.json")
    assert doc["findings"][0]["group"] == "62M-1000p"
    assert doc["provenance"]["command"] == "qoelab reproduce tfd --quick --calibration 62M-1000p"
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# T: quick reproduction\n") and t.markdown() in md and "CSV: `t1.csv`" in md
