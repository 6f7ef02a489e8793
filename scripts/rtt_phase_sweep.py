#!/usr/bin/env python3
"""Phase sweep of the `rtt_unfairness` validation (issue 16; docs/validation.md).

Runs each pair of the validation's grid 8 times, each flow's base RTT raised by a seeded
uniform offset in [0, one bottleneck service time of a 1500-byte packet), and prints the
exponent a (throughput ∝ RTT^−a) per phase and of the ensemble (mean goodputs against mean
RTTs, each RTT with the bottleneck's mean queueing delay).

    python scripts/rtt_phase_sweep.py
"""
from __future__ import annotations

import numpy as np

from qoelab.verify import closed_forms as cf
from qoelab.verify import suite

PHASES = 8


def service_ms(rate: str) -> float:
    return 1500 * 8 / (float(rate.removesuffix("Mbps")) * 1e6) * 1e3


def sweep(cc: str, short: float, long: float) -> tuple[float, list[float]]:
    rate, buffer, secs = suite.RTT_CASES[cc]
    goodputs, rtts, per_phase = [], [], []
    for k in range(PHASES):
        off = np.random.default_rng([16, k]).uniform(0.0, service_ms(rate), size=2)
        base = [short + off[0], long + off[1]]
        r, _ = suite._dumbbell(base, rate, buffer, {"kind": "tcp", "cc": cc}, secs, seed=4)
        x = [r.flow(f"tcp{i}")["goodput_bps"] for i in range(2)]
        links = r.links
        i = links.column("link").to_pylist().index("R1->R2")
        queue_s = links.column("mean_backlog_bytes")[i].as_py() * 8 / links.column("rate_bps")[i].as_py()
        goodputs.append(x)
        rtts.append([b / 1e3 + queue_s for b in base])
        per_phase.append(cf.rtt_exponent(x[0], x[1], *rtts[-1]))
    x = np.mean(goodputs, axis=0)
    rs, rl = np.mean(rtts, axis=0)
    return cf.rtt_exponent(float(x[0]), float(x[1]), float(rs), float(rl)), per_phase


def main() -> None:
    for cc in ("newreno", "cubic"):
        for short, long in ((20, 40), (20, 80), (40, 160)):
            ens, per = sweep(cc, short, long)
            print(f"{cc:8s} {short}/{long} ms: ensemble a = {ens:+.2f}; per phase "
                  + ", ".join(f"{v:+.2f}" for v in per))


if __name__ == "__main__":
    main()
