#!/usr/bin/env python3
"""Phase sweep of the `rtt_unfairness` validation (issue 16; docs/validation.md).

Runs each pair of the validation's grid 8 times, each flow's base RTT raised by a seeded
uniform offset in [0, one bottleneck service time of a 1500-byte packet), without and with the
senders' random overhead of one service time (transport key `overhead`, ns-2's `overhead_`;
Floyd & Jacobson 1992, §4), and prints the exponent a (throughput ∝ RTT^−a) per phase, their
spread (max − min), and the exponent of the ensemble (mean goodputs against mean RTTs, each RTT
with the bottleneck's mean queueing delay).

    python scripts/rtt_phase_sweep.py
"""
from __future__ import annotations

import numpy as np

from qoelab.verify import closed_forms as cf
from qoelab.verify import suite

PHASES = 8


def sweep(cc: str, short: float, long: float, overhead: bool) -> tuple[float, list[float]]:
    rate = suite.RTT_CASES[cc][0]
    service_ms = suite.service_time_s(rate) * 1e3
    goodputs, rtts, per_phase = [], [], []
    for k in range(PHASES):
        off = np.random.default_rng([16, k]).uniform(0.0, service_ms, size=2)
        m = suite.rtt_unfairness_run(cc, [short + off[0], long + off[1]], overhead)
        goodputs.append(m["goodput_bps"])
        rtts.append(m["rtt_s"])
        per_phase.append(m["exponent"])
    x = np.mean(goodputs, axis=0)
    rs, rl = np.mean(rtts, axis=0)
    return cf.rtt_exponent(float(x[0]), float(x[1]), float(rs), float(rl)), per_phase


def main() -> None:
    for cc in ("newreno", "cubic"):
        for short, long in ((20, 40), (20, 80), (40, 160)):
            for overhead in (False, True):
                ens, per = sweep(cc, short, long, overhead)
                label = "with overhead   " if overhead else "without overhead"
                print(f"{cc:8s} {short}/{long} ms {label}: ensemble a = {ens:+.2f}; spread "
                      f"{max(per) - min(per):.2f}; per phase " + ", ".join(f"{v:+.2f}" for v in per))


if __name__ == "__main__":
    main()
