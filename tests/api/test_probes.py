"""Typed probes reach Python as time series: ``Results.series``."""

import numpy as np
import pytest

from qoelab import Scenario, ScenarioError

SC = {
    "sim": {"duration": "5s", "seed": 2},
    "links": [
        {"a": "S", "b": "R", "rate": "50Mbps", "delay": "5ms", "loss_ab": {"kind": "bernoulli", "p": 0.05}},
        {"a": "R", "b": "D", "rate": "10Mbps", "delay": "20ms", "queue": {"kind": "fifo", "limit": "20p"}},
    ],
    "flows": [
        {"name": "tcp1", "src": "S", "dst": "D", "transport": {"kind": "tcp", "cc": "newreno"},
         "app": {"kind": "bulk"}},
        {"name": "tcp2", "src": "S", "dst": "D", "transport": {"kind": "tcp"}, "app": {"kind": "bulk"}},
    ],
    "output": {"probes": ["cwnd", "rto", "drops", "queue"]},
}


@pytest.fixture(scope="module")
def res():
    return Scenario.from_dict(SC).run()


def test_cwnd_series_per_flow(res):
    cw = res.series("cwnd", flow="tcp1")
    assert cw.num_rows > 10
    assert set(cw["flow"].to_pylist()) == {"tcp1"}
    t = cw["t_s"].to_numpy()
    assert np.all(np.diff(t) >= 0)
    assert np.allclose(t, cw["t_ns"].to_numpy() / 1e9)
    assert cw["cwnd_bytes"][0].as_py() == 10 * 1448
    assert cw["cwnd_bytes"][-1].as_py() == res.flow("tcp1")["cwnd_bytes"]
    both = res.series("cwnd")
    assert both.num_rows == cw.num_rows + res.series("cwnd", flow="tcp2").num_rows


def test_rto_records_and_port_series(res):
    for f in ("tcp1", "tcp2"):
        assert res.series("rto", flow=f).num_rows == res.flow(f)["rto_count"]
    drops = res.series("drops", link="R->D")
    assert np.all(np.diff(drops["t_ns"].to_numpy().astype(np.int64)) >= 0)
    links = res.tables["links"].to_pydict()
    i = links["link"].index("R->D")
    assert drops.num_rows == links["drop_queue_pkts"][i] + links["drop_channel_pkts"][i]
    causes = res.series("drops", link="S->R")["cause"].to_pylist()
    assert causes and set(causes) == {"channel"}


def test_series_errors_and_parquet(res, tmp_path):
    with pytest.raises(KeyError, match="recorded: cwnd, drops, queue, rto"):
        res.series("tcp_state")
    with pytest.raises(KeyError, match="no link column"):
        res.series("cwnd", link="R->D")
    res.write(tmp_path / "out", plot=False)
    assert (tmp_path / "out" / "probe_cwnd.parquet").exists()


def test_unknown_probe_is_a_scenario_error():
    bad = {**SC, "output": {"probes": ["cwnd", "window"]}}
    with pytest.raises(ScenarioError, match=r"output\.probes\[1\].*valid probes: queue, drops, cwnd"):
        Scenario.from_dict(bad).run()


def test_no_probe_tables_by_default():
    sc = {**SC, "output": {}}
    res = Scenario.from_dict(sc).run()
    assert not any(t.startswith("probe_") for t in res.tables)
