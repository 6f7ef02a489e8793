"""TCP Interactive's events as the typed probe ``tcp_events`` (docs/models/tcp-interactive.md),
over an outage: one ``rto`` row per timeout with the loss window, in step with the ``rto``
probe; the state-change rows match the ``cwnd`` probe."""

import numpy as np
import pytest

from qoelab import Scenario

SC = {
    "sim": {"duration": "12s", "seed": 5},
    "links": [
        {"a": "S", "b": "R", "rate": "20Mbps", "delay": "5ms"},
        {"a": "R", "b": "C", "rate": "4Mbps", "delay": "15ms", "queue": {"kind": "fifo", "limit": "30p"}},
    ],
    "flows": [{"name": "v", "src": "S", "dst": "C", "app": {"kind": "bulk"},
               "transport": {"kind": "tcp", "cc": "newreno", "profile": "freebsd", "min_rto": "1s"}}],
    "outages": [{"links": ["R->C", "C->R"], "at": "4s", "duration": "3s"}],
    "output": {"probes": ["tcp_events", "rto", "cwnd"]},
}


@pytest.fixture(scope="module")
def res():
    return Scenario.from_dict(SC).run()


def test_columns_and_rto_rows(res):
    ev = res.series("tcp_events", flow="v")
    assert ev.column_names == ["t_s", "t_ns", "flow", "end", "event", "cwnd_bytes", "ssthresh_bytes",
                               "rto_ns", "backoff", "seq"]
    kind = np.array(ev["event"].to_pylist())
    rto = res.series("rto", flow="v")
    r = kind == "rto"
    # Two timeouts in the 3-s outage with FreeBSD's 1-s floor of the paper's era.
    assert r.sum() == rto.num_rows == res.flow("v")["rto_count"] == 2
    assert np.array_equal(ev["t_ns"].to_numpy()[r], rto["t_ns"].to_numpy())
    assert np.all(ev["cwnd_bytes"].to_numpy()[r] == 1448)
    assert ev["backoff"].to_numpy()[r].tolist() == [1, 2]
    t = ev["t_ns"].to_numpy()[r]
    assert 4e9 < t[0] < 7e9 and t[1] - t[0] == ev["rto_ns"].to_numpy()[r][0]
    # Window rows are the cwnd probe's rows.
    w = kind == "window"
    cw = res.series("cwnd", flow="v")
    assert np.array_equal(ev["cwnd_bytes"].to_numpy()[w], cw["cwnd_bytes"].to_numpy())
    assert np.array_equal(ev["t_ns"].to_numpy()[w], cw["t_ns"].to_numpy())


def test_outage_schedule_in_results(res):
    o = res.tables["outages"].to_pylist()
    assert [(x["link"], x["start_ns"], x["end_ns"]) for x in o] == [
        ("R->C", 4_000_000_000, 7_000_000_000), ("C->R", 4_000_000_000, 7_000_000_000)]
