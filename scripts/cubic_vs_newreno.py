#!/usr/bin/env python3
"""CUBIC against NewReno and RFC 9438's response function under random loss (issue 16).

Runs the `cubic_response` validation's path (one bulk flow, 100 Mbit/s, RTT 40 ms, Bernoulli
loss on the data direction, 600 s, profile "rfc") for NewReno with SACK, CUBIC as RFC 9438
specifies it, and CUBIC with `alpha_switch = false` (α_cubic held at 3(1 − β)/(1 + β), as Linux
and ns-3 do), and prints their average windows (segments sent × SRTT / duration) beside the
closed forms: RFC 9438 §5.1's AVG_W_est = sqrt(3/(2p)) (which is also Reno's, AIMD(1, 0.5)) and
the AIMD(1, 0.7) average sqrt(1.7/(0.6 p)), what CUBIC's Reno-friendly region gives once α = 1.

With ``--png PATH`` it also draws, at p = 3 %, the first 30 s of cwnd of both CUBIC variants
(probe `cwnd`) with those two averages as lines, and the table as a bar chart.

    python scripts/cubic_vs_newreno.py --png docs/models/cubic_vs_newreno.png
"""
from __future__ import annotations

import argparse
import math

from qoelab.verify import closed_forms as cf
from qoelab.verify import suite

RTT_MS = 40.0
SECS = 600.0
LOSSES = (0.015, 0.03, 0.06)
VARIANTS = {
    "newreno (SACK)": {"kind": "tcp", "cc": "newreno", "profile": "rfc"},
    "cubic (RFC 9438)": {"kind": "tcp", "cc": "cubic", "profile": "rfc"},
    "cubic, alpha_switch = false": {"kind": "tcp", "cc": {"kind": "cubic", "alpha_switch": False}, "profile": "rfc"},
}


def avg_window(transport: dict, p: float, secs: float = SECS, probes: bool = False):
    res = suite._run({
        "sim": {"duration": f"{secs}s", "seed": 5},
        "links": [{"a": "S", "b": "D", "rate": "100Mbps", "delay": f"{RTT_MS / 2}ms",
                   "queue": {"kind": "fifo", "limit": "1000p"}, "loss_ab": {"kind": "bernoulli", "p": p}}],
        "flows": [{"name": "tcp", "src": "S", "dst": "D", "transport": transport, "app": {"kind": "bulk"}}],
        "output": {"probes": ["cwnd"] if probes else []},
    })
    f = res.flow("tcp")
    return f["segments_sent"] / secs * f["srtt_s"], res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--png", help="write the figure here")
    args = ap.parse_args()
    rows = []
    print(f"RTT {RTT_MS:g} ms, {SECS:g} s, average window in segments")
    print("p      | " + " | ".join(VARIANTS) + " | sqrt(3/(2p)) | AIMD(1,0.7) | cubic/newreno | cubic/est")
    for p in LOSSES:
        w = [avg_window(t, p)[0] for t in VARIANTS.values()]
        est = cf.cubic_response(p, RTT_MS / 1e3)[0]
        ceiling = math.sqrt(1.7 / (0.6 * p))
        rows.append((p, w, est, ceiling))
        print(f"{p * 100:4.1f} % | " + " | ".join(f"{x:7.2f}" for x in w)
              + f" | {est:7.2f} | {ceiling:7.2f} | {w[1] / w[0] - 1:+.1%} | {w[1] / est - 1:+.1%}")
    if not args.png:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    p = 0.03
    for (name, tr), color in zip(list(VARIANTS.items())[1:], ("C1", "C2")):
        _, res = avg_window(tr, p, secs=30.0, probes=True)
        s = res.series("cwnd", flow="tcp")
        a1.step(s.column("t_s").to_numpy(), s.column("cwnd_bytes").to_numpy() / 1448, where="post",
                color=color, lw=0.8, label=name)
    a1.axhline(cf.cubic_response(p, RTT_MS / 1e3)[0], color="k", ls="--", lw=1, label="RFC 9438 §5.1 AVG_W_est")
    a1.axhline(math.sqrt(1.7 / (0.6 * p)), color="k", ls=":", lw=1, label="AIMD(1, 0.7) average")
    a1.set(xlabel="time (s)", ylabel="cwnd (segments)", title=f"cwnd, RTT {RTT_MS:g} ms, p = 3 %")
    a1.legend(fontsize=7)
    xs = range(len(rows))
    width = 0.2
    for k, name in enumerate(VARIANTS):
        a2.bar([x + (k - 1) * width for x in xs], [r[1][k] for r in rows], width, label=name)
    a2.scatter(xs, [r[2] for r in rows], marker="_", s=400, color="k", label="sqrt(3/(2p))")
    a2.scatter(xs, [r[3] for r in rows], marker="_", s=400, color="grey", label="AIMD(1, 0.7)")
    a2.set_xticks(list(xs), [f"p = {r[0] * 100:g} %" for r in rows])
    a2.set(ylabel="average window (segments)", title=f"{SECS:g} s averages, RTT {RTT_MS:g} ms")
    a2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
