"""The subflows table's MPTCP counters are nullable uint64, as the flows table's: null on the path
of a transport without them (a UDP flow's one path, listed once another flow has subflows),
integers equal to the core's on MPTCP paths, and kept so in the Parquet file. Only an MPTCP
flow may declare `subflows` (issue 42)."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qoelab import _native
from qoelab.outputs import SUBFLOW_COUNTERS
from qoelab.scenario import Scenario

PATHS = [{"src_addr": "10.1.0.1", "dst_addr": "10.2.0.1"}, {"src_addr": "10.1.1.1", "dst_addr": "10.2.1.1"}]


def _link(a, b, **k):
    return {"a": a, "b": b, "rate": "10Mbps", "delay": "5ms", **k}


DATA = {
    "sim": {"duration": "2s", "seed": 3},
    "links": [_link("A", "R1", a_addr="10.1.0.1"), _link("A", "R2", a_addr="10.1.1.1"),
              _link("R1", "B", b_addr="10.2.0.1", queue={"kind": "fifo", "limit": "20p"}),
              _link("R2", "B", b_addr="10.2.1.1")],
    "flows": [
        {"name": "udp", "src": "A", "dst": "B", "transport": {"kind": "udp"},
         "app": {"kind": "cbr", "rate": "1Mbps", "payload": "1000B"}},
        {"name": "mp", "src": "A", "dst": "B", "transport": {"kind": "mptcp"}, "subflows": PATHS,
         "app": {"kind": "bulk"}},
    ],
}


@pytest.fixture(scope="module")
def runs():
    sc = Scenario.from_dict(DATA)
    native = _native.run(sc.to_toml(), str(sc.base_dir), None, None)["subflows"]
    return sc.run(), native


def test_counters_are_uint64_on_every_mptcp_path(runs) -> None:
    res, native = runs
    t = res.subflows
    counters = sorted(SUBFLOW_COUNTERS & set(t.column_names))
    # The forward MPTCP counters are all there (a one-way flow has no `rev_` ones).
    assert counters == sorted(n for n in SUBFLOW_COUNTERS if not n.startswith("rev_"))
    rows = t.to_pylist()
    # Every flow's paths are listed once some flow has subflows: the UDP flow's one path too.
    assert [(r["flow"], r["path"]) for r in rows] == [("udp", 0), ("mp", 0), ("mp", 1)]
    for c in counters:
        assert t.schema.field(c).type == pa.uint64(), c
        # Null exactly on the UDP path; elsewhere the core's value, as an integer.
        assert t.column(c).null_count == 1, c
        for i, r in enumerate(rows):
            if r["flow"] == "udp":
                assert r[c] is None and math.isnan(native[c][i]), (c, i)
            else:
                assert type(r[c]) is int and r[c] == native[c][i], (c, i, r[c], native[c][i])
    # The RTTs stay measurements: NaN (not null) where there is none.
    assert t.schema.field("srtt_s").type == pa.float64()
    assert all(math.isnan(r["srtt_s"]) for r in rows if r["flow"] == "udp")
    for r in rows:
        if r["flow"] == "mp":
            # Both subflows carried data and had it acknowledged.
            assert r["scheduled_bytes"] > 0 and r["acked_bytes"] > 0 and r["subflow_in_order_bytes"] > 0, r


def test_parquet_keeps_the_nullable_integers(runs, tmp_path) -> None:
    res, _ = runs
    res.write(tmp_path / "out", plot=False)
    back = pq.read_table(tmp_path / "out" / "subflows.parquet")
    cols = ["flow", "path", *sorted(SUBFLOW_COUNTERS & set(back.column_names))]
    assert len(cols) > 2
    for c in cols[2:]:
        assert back.schema.field(c).type == pa.uint64(), c
    assert back.select(cols).to_pylist() == res.subflows.select(cols).to_pylist()
