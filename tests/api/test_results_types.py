"""Result types a notebook user relies on: counts as integers, every table as an attribute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qoelab.paths import root
from qoelab.scenario import Scenario


@pytest.fixture(scope="module")
def res():
    sc = Scenario.load(root() / "scenarios" / "demo" / "scenario.toml")
    sc.data["sim"]["duration"] = "8s"  # the demo's TCP flows start at 2, 7, 12, 17 s
    return sc.run()


def test_summary_counts_are_integers_and_measurements_floats(res, tmp_path) -> None:
    res.write(tmp_path / "out", plot=False)
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    for key in ("seed", "events", "nodes", "links", "flows", "jain_flows"):
        assert type(s[key]) is int, (key, s[key])
    assert s["nodes"] == 4 and s["flows"] == 5
    assert type(s["duration_s"]) is float and s["duration_s"] == 8.0
    assert type(s["jain_index"]) is float and s["jain_flows"] == 2  # the two TCP flows that started
    assert res.summary["events"] == s["events"]


def test_every_table_is_an_attribute(res) -> None:
    assert res.flow_queues is res.tables["flow_queues"]
    assert res.flows.num_rows == 5
    with pytest.raises(AttributeError, match="no table 'nope'.*flows"):
        res.nope


def test_jain_leaves_out_flows_that_never_started(tmp_path) -> None:
    from qoelab.cli import main
    flows = [{"name": f"tcp{i}", "src": "A", "dst": "B", "start": start, "app": {"kind": "bulk"},
              "transport": {"kind": "tcp"}} for i, start in enumerate(["0s", "0.1s", "5s", "9s"])]
    data = {"sim": {"duration": "3s", "seed": 1},
            "links": [{"a": "A", "b": "B", "rate": "10Mbps", "delay": "5ms",
                       "queue": {"kind": "fifo", "limit": "50p"}}],
            "flows": flows}
    res = Scenario.from_dict(data).run()
    assert res.summary["jain_flows"] == 2          # tcp2 and tcp3 start after the run's 3 s
    assert res.summary["jain_index"] == pytest.approx(res.jain(["tcp0", "tcp1"]))
    assert res.summary["jain_index"] > 0.5          # two flows that ran: not 2 of 4 idle ones
    import tomli_w
    p = tmp_path / "s.toml"
    p.write_text(tomli_w.dumps(data))
    import contextlib, io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["run", str(p), "-o", str(tmp_path / "out"), "--no-plot"])
    assert rc in (0, None)
    assert "2 flows never started" in buf.getvalue() and "tcp2, tcp3" in buf.getvalue()


def test_dataframes(res) -> None:
    df = res.to_pandas()
    assert list(df.columns) == res.flows.column_names and len(df) == 5
    assert res.to_pandas("links")["link"].tolist() == res.links.column("link").to_pylist()
    with pytest.raises(KeyError, match="no table 'nope'"):
        res.to_pandas("nope")


def test_bundled_scenario_name_beats_a_folder_of_that_name(tmp_path, monkeypatch) -> None:
    # `qoelab demo -o demo` made a folder "demo" in the working directory; the video-quality
    # step then looked up scenario "demo" and got the folder.
    from qoelab.paths import scenario_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo").mkdir()
    assert scenario_path("demo") == root() / "scenarios" / "demo" / "scenario.toml"
    (tmp_path / "mine.toml").write_text("")
    assert scenario_path("mine.toml") == Path("mine.toml")


@pytest.mark.parametrize("bad", [1.5, -1.0, 2.0**63, float("inf")])
def test_counter_column_refuses_values_that_are_not_counts(bad) -> None:
    from qoelab.outputs import counter_column

    with pytest.raises(ValueError, match=r"flows\.x: counter value .* is not a non-negative integer"):
        counter_column("x", [3.0, float("nan"), bad])


def test_counter_column_is_nullable_uint64() -> None:
    import pyarrow as pa

    from qoelab.outputs import counter_column

    a = counter_column("x", [3.0, float("nan"), 0.0, 2.0**62])
    assert a.type == pa.uint64() and a.to_pylist() == [3, None, 0, 2**62]


@pytest.mark.parametrize("name", ["demo/scenario.toml", "interactive/transcoder.toml", "sqf/model-check.toml",
                                  "wimax/cell-e2e-f20-n4.toml", "mptcp/base.toml"])
def test_arrow_columns_equal_what_pa_array_makes(name) -> None:
    # `outputs.arrow_array` wraps the core's columns without pyarrow's pandas probe; every column
    # of these runs (packets, messages, subflows, flow_queues, probes among them) must come out
    # as `pa.array` would make it: same type, same values, same nulls.
    import numpy as np
    import pyarrow as pa

    from qoelab import _native
    from qoelab.outputs import arrow_array

    sc = Scenario.load(root() / "scenarios" / name)
    sc.data["sim"]["duration"] = "2s"
    tables = _native.run(sc.to_toml(), str(sc.base_dir), None, None)
    seen = set()
    for table, cols in tables.items():
        for k, v in cols.items():
            typ = None if isinstance(v, np.ndarray) else pa.string()
            masks = [None] if not isinstance(v, np.ndarray) or not len(v) else [None, np.arange(len(v)) % 3 == 1]
            for mask in masks:
                ours, ref = arrow_array(v, mask=mask, type=typ), pa.array(v, typ, mask=mask)
                where = f"{name}: {table}.{k}"
                assert ours.type == ref.type and len(ours) == len(ref) and ours.null_count == ref.null_count, where
                ours.validate(full=True)
                if pa.types.is_floating(ref.type):
                    np.testing.assert_array_equal(ours.to_numpy(zero_copy_only=False), ref.to_numpy(zero_copy_only=False), where)
                    assert ours.is_null().equals(ref.is_null()), where
                else:
                    assert ours.equals(ref), where
            seen.add(str(typ or v.dtype))
    assert {"string", "float64", "uint64", "int64"} <= seen, seen


def test_arrow_array_falls_back_for_what_it_does_not_wrap() -> None:
    import numpy as np
    import pyarrow as pa

    from qoelab.outputs import arrow_array

    assert arrow_array(np.array([True, False])).type == pa.bool_()
    assert arrow_array(np.arange(6, dtype=np.int64)[::2]).to_pylist() == [0, 2, 4]  # strided: copied contiguous
    assert arrow_array(["a", None], type=pa.string()).to_pylist() == ["a", None]
    assert arrow_array([], type=pa.string()).to_pylist() == []
    assert arrow_array(["é", "", "xyz"], mask=np.array([False, True, False])).to_pylist() == ["é", None, "xyz"]
