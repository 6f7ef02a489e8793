"""The experiment layer on a toy experiment: a UDP flow over one link, two cells that differ
only in the link rate (the treatment), two repetitions each."""

import csv
import io
import json

import pyarrow.parquet as pq
import pytest

from qoelab.experiment import core
from qoelab.experiment.core import Experiment, seed_of
from qoelab.experiment.findings import Finding, Label, above
from qoelab.experiment.report import load_report
from qoelab.experiment.stats import paired_ci
from qoelab.experiment.tables import Column, PaperValues, Table, finding_json, findings_md, report
from toy import TOY, build, metrics  # noqa: F401  (the shared toy experiment)


def toy(reps=2):
    return Experiment("toy", [{"rate": "950Mbps"}, {"rate": "2Gbps"}], build, metrics, paired=("rate",), reps=reps)


def test_seeds_are_deterministic_distinct_per_rep_and_shared_by_treatments():
    a, b = {"rate": "950Mbps"}, {"rate": "2Gbps"}
    assert seed_of("toy", a, ("rate",), 0) == seed_of("toy", b, ("rate",), 0)
    assert seed_of("toy", a, ("rate",), 0) != seed_of("toy", a, ("rate",), 1)
    assert seed_of("toy", a, (), 0) != seed_of("toy", b, (), 0)
    assert seed_of("toy", a, ("rate",), 3) == seed_of("toy", dict(a), ("rate",), 3)
    assert seed_of("other", a, ("rate",), 0) != seed_of("toy", a, ("rate",), 0)


def test_toy_experiment_end_to_end(tmp_path):
    exp = toy()
    out = tmp_path / "runs"
    counts = core.run(exp, out)
    assert counts["ran"] == 4 and counts["total"] == 4
    # Resume: a second invocation runs nothing.
    again = core.run(exp, out)
    assert again["ran"] == 0 and again["skipped"] == 4
    rows = core.rows(exp, out)
    assert [(r["rate"], r["rep"]) for r in rows] == [("950Mbps", 0), ("950Mbps", 1), ("2Gbps", 0), ("2Gbps", 1)]
    # The run really ran with the declared seed, and the two treatments shared it.
    for r in rows:
        cell = json.loads((out / "runs" / f"cell=rate={r['rate']}__rep={r['rep']}" / "cell.json").read_text())
        assert cell["seed"] == r["seed"] == seed_of("toy", {"rate": r["rate"]}, ("rate",), r["rep"])
    assert rows[0]["seed"] == rows[2]["seed"] != rows[1]["seed"]
    # Poisson arrivals at 900 Mbit/s into 950 Mbit/s with 20 packets lose some; into 2 Gbit/s none.
    assert rows[0]["loss"] > 0 or rows[1]["loss"] > 0
    assert rows[2]["loss"] == rows[3]["loss"] == 0.0
    # Paired difference against a hand computation.
    d = core.paired(rows, "rate", "950Mbps", "2Gbps", "loss")[()]
    diffs = [rows[0]["loss"] - rows[2]["loss"], rows[1]["loss"] - rows[3]["loss"]]
    assert d.n == 2 and d.mean == pytest.approx(sum(diffs) / 2)
    assert d == paired_ci([rows[0]["loss"], rows[1]["loss"]], [rows[2]["loss"], rows[3]["loss"]])
    agg = core.aggregate(rows, ("rate",), ("loss",))
    assert [a["rate"] for a in agg] == ["950Mbps", "2Gbps"] and agg[0]["loss"].n == 2
    # Tables: the same numbers in Markdown, CSV and report.json.
    paper = PaperValues("Table 0", ("rate",), {("950Mbps",): 0.01})
    table = Table("loss", "Loss per rate", [Column("rate", "rate"), Column("loss", "loss", "%", "ours", 100.0),
                                             paper.column("paper_loss", "loss", "%")], paper.join(agg, "paper_loss"),
                  source="Table 0")
    folder = tmp_path / "report"
    folder.mkdir()
    table.write_csv(folder, "loss.csv")
    f = Finding("loss-falls", "a faster link loses less", Label.TRIVIAL, above(), "paired loss difference", d)
    path = report(folder, paper="sqf", mode="quick", title="toy", tables=[table], findings=[finding_json(f)],
                  reading=findings_md([f]), cost=core.cost(out))
    doc = load_report(path)
    assert doc["cost"]["runs"] == 4
    jrows = doc["tables"][0]["rows"]
    crows = list(csv.DictReader(io.StringIO((folder / "loss.csv").read_text())))
    md = table.markdown()
    for a, j, c in zip(agg, jrows, crows):
        e = a["loss"]
        assert j["loss"]["mean"] == pytest.approx(e.mean * 100) == pytest.approx(float(c["loss"]))
        assert j["loss"]["n"] == int(c["loss_n"]) == 2
        if j["loss"]["lo"] is not None:
            assert j["loss"]["lo"] == pytest.approx(float(c["loss_lo"]))
        assert f"{e.mean * 100:.3g}" in md
    assert jrows[0]["paper_loss"] == 0.01 and jrows[1]["paper_loss"] is None
    assert doc["findings"][0]["estimate"]["mean"] == pytest.approx(d.mean)
    assert f.verdict.value in doc["reading"]


def test_changed_cells_are_refused_on_resume(tmp_path):
    from qoelab.errors import QoelabError

    core.run(toy(reps=1), tmp_path)
    other = Experiment("toy", [{"rate": "950Mbps"}, {"rate": "3Gbps"}], build, metrics, paired=("rate",), reps=1)
    with pytest.raises(QoelabError, match="different base scenario"):
        core.run(other, tmp_path)
