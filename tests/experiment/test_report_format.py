"""report.json (docs/report-format.md): the documented example is valid, the writer cleans and
checks, the reader refuses what is off the format with a key path."""

import json
import re
from pathlib import Path

import pytest

from qoelab.errors import QoelabError
from qoelab.experiment import Estimate
from qoelab.experiment.report import FORMAT, check_report, estimate_cell, load_report, write_report

ROOT = Path(__file__).resolve().parents[2]


def doc_example() -> dict:
    text = (ROOT / "docs" / "report-format.md").read_text()
    block = re.search(r"```json\n(.*?)```", text, re.S)
    assert block, "docs/report-format.md lost its example"
    return json.loads(block.group(1))


def test_documented_example_is_valid():
    doc = doc_example()
    assert doc["format"] == FORMAT
    assert check_report(doc) == []


def test_write_turns_nan_into_null_and_load_round_trips(tmp_path):
    doc = doc_example()
    (tmp_path / "fig6_loss_es.png").write_bytes(b"\x89PNG")
    (tmp_path / "testbed.csv").write_text("a\n1\n")
    doc["tables"][0]["rows"][0]["share"] = estimate_cell(Estimate(0.5, float("nan"), 1), scale=100)
    doc["findings"][0]["estimate"] = estimate_cell(Estimate(0.1, 0.02, 5))
    doc["cost"]["cpu_s"] = float("nan")
    p = write_report(tmp_path, doc)
    back = load_report(p)
    assert back["tables"][0]["rows"][0]["share"] == {"mean": 50.0, "lo": None, "hi": None, "n": 1}
    assert back["findings"][0]["estimate"]["lo"] == pytest.approx(0.08)
    assert back["cost"]["cpu_s"] is None
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["findings"][0].update(label="important"), "findings[0].label"),
    (lambda d: d["findings"][0].update(verdict="true"), "findings[0].verdict"),
    (lambda d: d["figures"][0].update(path="../../etc/passwd"), "figures[0].path"),
    (lambda d: d["figures"][0].update(path="/etc/passwd"), "figures[0].path"),
    (lambda d: d["tables"][0]["rows"][0].update(bogus=1), "tables[0].rows[0].bogus"),
    (lambda d: d["tables"][0]["rows"][0].update(share={"mean": 1}), "tables[0].rows[0].share"),
    (lambda d: d["tables"][0]["columns"][2].update(side="theirs"), "tables[0].columns[2].side"),
    (lambda d: d.update(paper="nonesuch"), "paper"),
    (lambda d: d.update(format="qoelab.report/1"), "format"),
    (lambda d: d["findings"][0].pop("rule"), "findings[0].rule"),
    (lambda d: d["findings"][0].update(verdict="within noise"), "findings[0].verdict"),
    (lambda d: d["findings"][0]["sensitivity"]["under"].update(x="maybe"), "findings[0].sensitivity.under"),
    (lambda d: d["choices"][0].pop("why"), "choices[0]"),
    (lambda d: d.pop("reading"), "reading"),
    (lambda d: d.update(extra=1), "extra"),
])
def test_off_format_is_named_by_key_path(mutate, where):
    doc = doc_example()
    mutate(doc)
    errs = check_report(doc)
    assert errs and any(e.startswith(where + ":") for e in errs), errs


def test_load_refuses_damaged_and_missing_files(tmp_path):
    with pytest.raises(QoelabError, match="no such report"):
        load_report(tmp_path / "report.json")
    (tmp_path / "report.json").write_text("{not json")
    with pytest.raises(QoelabError, match=r"report\.json: not JSON"):
        load_report(tmp_path / "report.json")
    (tmp_path / "report.json").write_text(json.dumps(doc_example()))
    # the example names files that this folder does not have
    with pytest.raises(QoelabError, match=r"tables\[0\]\.csv: names 'testbed.csv', which is not a file"):
        load_report(tmp_path / "report.json")


def test_write_refuses_invalid_report(tmp_path):
    doc = doc_example()
    doc["findings"][0]["label"] = "nice"
    with pytest.raises(ValueError, match=r"findings\[0\]\.label"):
        write_report(tmp_path, doc)
    assert not (tmp_path / "report.json").exists()
