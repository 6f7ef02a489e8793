"""The bulk app's `cookie` and `delay` (iperf3's start: a 37-byte cookie on connect, the data
once the test runs)."""

from __future__ import annotations

import pytest

from qoelab.errors import ScenarioError
from qoelab.scenario import Scenario


def _run(app: dict) -> list[dict]:
    d = {"sim": {"duration": "1s"},
         "links": [{"a": "A", "b": "B", "rate": "10Mbps", "delay": "10ms", "queue": {"kind": "fifo", "limit": "1000p"}}],
         "flows": [{"name": "f", "src": "A", "dst": "B", "transport": {"kind": "tcp"}, "app": app}],
         "output": {"probes": ["queue"]}}
    q = Scenario.from_dict(d).run().tables["probe_queue"].to_pylist()
    return [r for r in q if r["link"] == "A->B" and r["event"] == "enqueue"]


def test_the_cookie_goes_alone_and_the_data_after_the_delay():
    pkts = _run({"kind": "bulk", "cookie": "37B", "delay": "300ms"})
    before = [r for r in pkts if r["t_ns"] < 300e6]
    after = [r for r in pkts if r["t_ns"] >= 300e6]
    # SYN, the handshake's ACK and the cookie, whose payload is 37 bytes: nothing full-sized.
    assert max(r["bytes"] for r in before) < 200, before
    assert sum(1 for r in before if r["bytes"] > 37) >= 1
    assert min(r["t_ns"] for r in after if r["bytes"] > 1000) >= 300e6
    assert sum(1 for r in after if r["bytes"] > 1000) > 100


def test_without_the_keys_the_data_starts_at_once():
    pkts = _run({"kind": "bulk"})
    assert min(r["t_ns"] for r in pkts if r["bytes"] > 1000) < 50e6


def test_a_bad_delay_names_its_key():
    with pytest.raises(ScenarioError, match="delay"):
        _run({"kind": "bulk", "delay": "soon"})
