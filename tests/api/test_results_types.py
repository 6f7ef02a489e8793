"""Result types a notebook user relies on: counts as integers, every table as an attribute."""

from __future__ import annotations

import json

import pytest

from qoelab.paths import root
from qoelab.scenario import Scenario


@pytest.fixture(scope="module")
def res():
    sc = Scenario.load(root() / "scenarios" / "demo" / "scenario.toml")
    sc.data["sim"]["duration"] = "2s"
    return sc.run()


def test_summary_counts_are_integers_and_measurements_floats(res, tmp_path) -> None:
    res.write(tmp_path / "out", plot=False)
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in ("seed", "events", "nodes", "links", "flows", "jain_flows"):
        assert type(s[key]) is int, (key, s[key])
    assert s["nodes"] == 4 and s["flows"] == 5
    assert type(s["duration_s"]) is float and s["duration_s"] == 2.0
    assert type(s["jain_index"]) is float
    assert res.summary["events"] == s["events"]


def test_every_table_is_an_attribute(res) -> None:
    assert res.flow_queues is res.tables["flow_queues"]
    assert res.flows.num_rows == 5
    with pytest.raises(AttributeError, match="no table 'nope'.*flows"):
        res.nope
