#!/usr/bin/env python3
"""TFRC against RFC 5348's equation under Bernoulli loss (issue 18), the table in docs/models/tfrc.md.

One TFRC flow (1000-B payloads from a CBR source far above its allowed rate) over a 1 Gbit/s
link with Bernoulli loss p on the data direction, for the issue's grid (p ∈ {0.5, 1, 2, 5, 10} %,
RTT ∈ {20, 100} ms) and beyond it (RTT 300 ms, p = 20 %). For each cell: the measured send rate
(packets sent × s / duration), the equation (b = 1, t_RTO = 4R) at the measured loss event rate
(loss events / packets sent) and measured R, their ratio, the loss event and packet loss rates,
and the thinned rate p_loss / (1 + p_loss·W) (W packets per RTT) that loss events should give.
The same cells are asserted in crates/core/tests/tfrc.rs.

    python scripts/tfrc_table.py > /tmp/table.md
"""
from __future__ import annotations

import math

from qoelab.verify import suite

GRID = [(rtt, p) for rtt in (20.0, 100.0) for p in (0.005, 0.01, 0.02, 0.05, 0.1)]
WIDER = [(20.0, 0.2), (300.0, 0.02), (300.0, 0.2)]


def equation(s: float, r: float, p: float) -> float:
    return s / (r * math.sqrt(2 * p / 3) + 4 * r * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))


def cell(rtt_ms: float, p: float, secs: float = 200.0) -> str:
    res = suite._run({
        "sim": {"duration": f"{secs}s", "seed": 7},
        "links": [{"a": "S", "b": "D", "rate": "1Gbps", "delay": f"{int(rtt_ms * 500)}us",
                   "queue": {"kind": "fifo", "limit": "10000p"}, "loss_ab": {"kind": "bernoulli", "p": p}}],
        "flows": [{"name": "tfrc", "src": "S", "dst": "D", "transport": {"kind": "tfrc"},
                   "app": {"kind": "cbr", "rate": "50Mbps", "payload": "1000B"}}],
    })
    f = res.flow("tfrc")
    sent, s, r = f["tfrc_sent_pkts"], f["tfrc_s_bytes"], f["tfrc_rtt_s"]
    pe, pl = f["tfrc_loss_events"] / sent, f["tfrc_lost_pkts"] / sent
    payload = f["tfrc_mean_payload_bytes"]  # X counts bytes at the nominal s, packets are 1000 B
    rate = sent * payload / secs
    eq = equation(s, r, pe)
    w = sent / secs * r
    return (f"| {rtt_ms:.0f} | {p * 100:g} | {rate * 8 / 1e3:.0f} | {eq * 8 / 1e3:.0f} | {rate / eq:.3f} | "
            f"{pe * 100:.3f} | {pl * 100:.3f} | {pl / (1 + pl * w) * 100:.3f} |")


def main() -> None:
    print("| RTT ms | p % | send rate kbit/s | equation kbit/s | ratio | loss event rate % | packet loss % | p_loss/(1+p·W) % |")
    print("|---|---|---|---|---|---|---|---|")
    for rtt, p in GRID + WIDER:
        print(cell(rtt, p))


if __name__ == "__main__":
    main()
