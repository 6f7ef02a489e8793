"""Emulation, end to end: real `ping` between two namespaces through a simulated router
(scenarios/emulation/ping): the RTT the links give, the loss the loss model gives, the simulated
router answering, TTL decremented by that one router."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from conftest import ROOT
from qoelab.emulate import emulate
from qoelab.scenario import Scenario

PING = ROOT / "scenarios" / "emulation" / "ping" / "scenario.toml"


def _ping(tmp_path: Path, args: str, sets: dict | None = None, target: str = "$QOELAB_ADDR_SERVER"):
    sc = Scenario.load(PING)
    for k, v in (sets or {}).items():
        sc.set(k, v)
    em = emulate(sc, tmp_path, execs=[("client", f"ping -n {args} {target}")])
    log = (tmp_path / "exec" / "client-0.log").read_text()
    rtts = [float(x) for x in re.findall(r"time=([0-9.]+) ms", log)]
    ttls = {int(x) for x in re.findall(r"ttl=([0-9]+)", log)}
    return em, log, rtts, ttls


def test_ping_rtt_is_the_links_delay(emulation, tmp_path):
    em, log, rtts, ttls = _ping(tmp_path, "-c 100 -i 0.02")
    assert em.ended == "commands"
    assert len(rtts) == 100, log
    med = statistics.median(rtts)
    # 2 x 20 ms of links, 4 serialisations of 84 B at 100 Mbit/s (27 us), the hosts' stacks and
    # the engine's wake-up latency: within 0.5 ms of 40 ms.
    assert abs(med - 40.0) <= 0.5, (med, log[-300:])
    assert ttls == {63}, "one simulated router on the way"
    r = em.results
    flows = {row["flow"]: row for row in r.tables["real_flows"].to_pylist()}
    req, rep = flows["icmp 10.0.0.1 > 10.0.0.2"], flows["icmp 10.0.0.2 > 10.0.0.1"]
    assert req["recv_pkts"] == rep["sent_pkts"] == 100
    assert req["delay_mean_s"] == pytest.approx(0.020, abs=1e-4), "one-way delay inside the simulation"
    assert r.summary["lag_events"] > 0 and r.summary["emu_written_pkts"] == 200


def test_ping_loss_is_the_models(emulation, tmp_path):
    n = 1000
    em, log, rtts, _ = _ping(tmp_path, f"-c {n} -i 0.003 -W 1", {"links[0].loss_ab.p": 0.1})
    m = re.search(r"(\d+) packets transmitted, (\d+) received", log)
    assert m, log[-300:]
    sent, received = int(m.group(1)), int(m.group(2))
    lost = sent - received
    req = next(row for row in em.results.tables["real_flows"].to_pylist() if row["flow"] == "icmp 10.0.0.1 > 10.0.0.2")
    # Every lost ping is a request the loss model dropped, and only those.
    assert lost == req["drop_channel_pkts"], (lost, req)
    # Binomial(1000, 0.1): sd 9.5; 4 sd either side.
    assert abs(lost - 0.1 * sent) <= 4 * (sent * 0.1 * 0.9) ** 0.5, lost


def test_the_simulated_router_answers_ping(emulation, tmp_path):
    em, log, rtts, ttls = _ping(tmp_path, "-c 20 -i 0.02", target="$QOELAB_ADDR_ROUTER")
    assert len(rtts) == 20, log
    assert abs(statistics.median(rtts) - 20.0) <= 0.5
    assert ttls == {64}
    assert em.results.summary["real_echo_replies"] == 20
