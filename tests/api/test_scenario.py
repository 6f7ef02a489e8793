"""The Python API builds, modifies and runs scenarios as data."""

import math

import pytest

from qoelab import Scenario, ScenarioError
from qoelab.scenario import parse_key_path, parse_value

BASE = {
    "sim": {"duration": "2s", "seed": 1},
    "links": [
        {"a": "A", "b": "R", "rate": "100Mbps", "delay": "1ms"},
        {"a": "R", "b": "B", "rate": "10Mbps", "delay": "10ms", "queue": {"kind": "fifo", "limit": "20p"}},
    ],
    "flows": [
        {"name": "cbr", "src": "A", "dst": "B", "transport": {"kind": "udp"},
         "app": {"kind": "cbr", "rate": "2Mbps", "payload": "1000B"}, "packet_log": True},
    ],
}


def test_key_paths():
    assert parse_key_path("links[2].queue.limit") == ["links", 2, "queue", "limit"]
    assert parse_key_path("links.2.rate") == ["links", 2, "rate"]
    with pytest.raises(ValueError):
        parse_key_path("[0].x")
    assert parse_value("5") == 5
    assert parse_value("20Mbps") == "20Mbps"
    assert parse_value('{kind = "fifo", limit = "10p"}') == {"kind": "fifo", "limit": "10p"}


def test_run_from_dict_matches_theory():
    res = Scenario.from_dict(BASE).run()
    f = res.flow("cbr")
    bits = 1028 * 8
    assert f["delay_min_s"] == pytest.approx(11e-3 + bits / 100e6 + bits / 10e6, abs=1e-12)
    assert f["sent_pkts"] == 500
    assert res.tables["packets"].num_rows == 500


def test_set_changes_the_run():
    sc = Scenario.from_dict(BASE)
    sc.set("flows[0].app.rate", "20Mbps")  # overload the 10 Mbit/s link
    res = sc.run()
    f = res.flow("cbr")
    assert f["drop_queue_pkts"] > 0
    assert f["sent_pkts"] == f["recv_pkts"] + f["drop_queue_pkts"] + f["drop_channel_pkts"] + f["in_flight_pkts"]


def test_errors_name_source_and_path():
    sc = Scenario.from_dict(BASE, source="my.toml")
    sc.set("links[1].queue.limit", "20")
    with pytest.raises(ScenarioError) as e:
        sc.run()
    assert str(e.value).startswith("my.toml: links[1].queue") and "expected a limit" in str(e.value)
    with pytest.raises(ScenarioError, match="does not exist"):
        sc.set("links[7].rate", "1Mbps")


def test_jain():
    res = Scenario.from_dict(BASE).run()
    assert res.jain(["cbr"]) == 1.0
    assert math.isnan(res.summary["jain_index"])  # no stream flows: no default fairness set


def _tcp_scenario() -> Scenario:
    sc = Scenario.from_dict(BASE)
    sc.set("sim.duration", "5s")
    sc.data["flows"].append({"name": "tcp{i}", "count": 3, "src": "A", "dst": "B",
                             "transport": {"kind": "tcp", "cc": "cubic"}, "app": {"kind": "bulk"}})
    return sc


def test_progress_reports_simulated_time_and_changes_no_result():
    """Running in steps for a progress callback gives the very same tables as one run, and the
    callback sees simulated time grow to the end."""
    seen: list[tuple[float, float]] = []
    a = _tcp_scenario().run()
    b = _tcp_scenario().run(progress=lambda now, end: seen.append((now, end)))
    assert set(a.tables) == set(b.tables) and {"flows", "links", "packets"} <= set(a.tables)
    for t in a.tables:
        assert _same_nan(a.tables[t], b.tables[t]), t
    assert a.summary == b.summary
    assert seen and seen[-1] == (5.0, 5.0)
    assert all(e == 5.0 for _, e in seen) and [n for n, _ in seen] == sorted(n for n, _ in seen)


def _same_nan(x, y) -> bool:
    norm = lambda v: "nan" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
    return [[norm(v) for v in r.values()] for r in x.to_pylist()] == [[norm(v) for v in r.values()] for r in y.to_pylist()]


def test_progress_callback_error_stops_the_run():
    class Stop(Exception):
        pass

    def cb(now, end):
        raise Stop

    with pytest.raises(Stop):
        _tcp_scenario().run(progress=cb)


def test_key_paths_select_list_items_by_name():
    data = {**BASE, "links": [dict(l) for l in BASE["links"]] + [{"a": "R", "b": "B", "rate": "1Mbps", "delay": "1ms"}]}
    sc = Scenario.from_dict(data)
    sc.set("flows[cbr].app.rate", "3Mbps")
    assert sc.data["flows"][0]["app"]["rate"] == "3Mbps"
    sc.set("links[A-R].rate", "50Mbps")          # a link by its ends,
    sc.set("links[R->A].delay", "2ms")           # either way round
    assert sc.data["links"][0]["rate"] == "50Mbps" and sc.data["links"][0]["delay"] == "2ms"
    assert sc.get("links[A-R].rate") == "50Mbps" and sc.get("flows[cbr].name") == "cbr"
    with pytest.raises(ScenarioError, match=r"links\[R-B\] is ambiguous: items 1, 2 match; use an index"):
        sc.set("links[R-B].rate", "2Mbps")
    with pytest.raises(ScenarioError, match=r"flows\[nope\]: no item named 'nope' \(items: cbr\)"):
        sc.set("flows[nope].app.rate", "1Mbps")
    with pytest.raises(ScenarioError, match=r"sim\[x\]: sim is not a list|sim is not a list"):
        sc.get("sim[x].duration")
    sc.set("flows[cbr]", {**sc.data["flows"][0], "start": "1s"})   # the item itself, by name
    assert sc.data["flows"][0]["start"] == "1s"


def test_load_takes_the_bundled_names_the_cli_takes(tmp_path, monkeypatch):
    from qoelab.paths import root

    monkeypatch.chdir(tmp_path)  # no scenarios/ folder here
    for name, rel in (("demo", "scenarios/demo/scenario.toml"), ("sqf/model-check", "scenarios/sqf/model-check.toml")):
        sc = Scenario.load(name)
        assert sc.data == Scenario.load(root() / rel).data
        assert sc.base_dir == (root() / rel).parent
    with pytest.raises(ScenarioError, match="nosuch: no such scenario file or bundled scenario"):
        Scenario.load("nosuch")
    # A file of the same name in the current folder is not shadowed by the bundled name.
    (tmp_path / "demo").write_text('[sim]\nduration = "1s"\n')
    assert Scenario.load("demo").data == {"sim": {"duration": "1s"}}


def test_a_transmit_ring_is_checked_and_conserves_packets():
    # tx_ring (crates/core/src/queue/ring.rs): out of range names its key path; in range,
    # every packet is sent, received, dropped or still in flight (the ring's included).
    from qoelab.paths import root

    sc = Scenario.load(root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", "5s")
    sc.set("links[2].tx_ring", 0)
    with pytest.raises(ScenarioError, match=r"links\[2\]\.tx_ring.*1\.\.=65536"):
        sc.run()
    sc.set("links[2].tx_ring", 64)
    res = sc.run()
    for f in res.flows.column("flow").to_pylist():
        r = res.flow(f)
        assert r["sent_pkts"] == r["recv_pkts"] + r["drop_queue_pkts"] + r["drop_channel_pkts"] + r["in_flight_pkts"], f
