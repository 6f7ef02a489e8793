"""Why SQF does not protect the video in ``scenarios/sqf/testbed.toml``: a stand-alone
investigation, run by hand (``reproduce sqf`` does not call it). It dates from the H.264 testbed;
the recalibrated report (MPEG-2, both VLC sender modes) makes the same point from its own data in
its "Model vs simulator" section, and this script remains for readers who want the reduction.

The testbed (SQF, 50-packet buffer, 10 Mbit/s) is run with the video source replaced by
smoother or burstier ones, against n = 1, 5, 20 downloads, with SQF's per-flow backlog samples
(``flow_sample = "1ms"``). For each run it prints the video loss and, from the samples, how
often the video is *not* the shortest queue, the smallest TCP backlog (the one the video must
stay below) and the video's own backlog. It also draws ``sqf_investigation.png``: one run
(Poisson video, n = 5). Its old conclusion, that losing priority is absorbing, is contradicted by
the simulator's records: see the report's mechanism section (``qoelab.reproduce.sqf.mechanism``).

Run: ``python -m qoelab.reproduce.sqf_investigation [-o DIR] [--duration 30s]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from qoelab import paths
from qoelab.scenario import Scenario

MTU = 1500
BUFFER_PKTS = 50
#: Video sources: (label, overrides of flows[0].app). Payload 1316 B = 7 MPEG-TS packets, what a
#: VLC RTP sender carries; the trace rows keep the bundled scenario's app.
SOURCES: list[tuple[str, dict[str, Any] | None]] = [
    ("CBR 5 Mbit/s", {"kind": "cbr", "rate": "5Mbps", "payload": "1316B"}),
    ("CBR 7.8 Mbit/s", {"kind": "cbr", "rate": "7.8Mbps", "payload": "1316B"}),
    ("Poisson 5 Mbit/s", {"kind": "poisson", "rate": "5Mbps", "payload": "1316B"}),
    ("trace, frame-paced", None),
    ("trace, peak 8 Mbit/s", {"peak_rate": "8Mbps"}),
    ("trace, peak 6 Mbit/s", {"peak_rate": "6Mbps"}),
]
N_VALUES = (1, 5, 20)


def scenario(app: dict[str, Any] | None, n: int, duration: str) -> Scenario:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", duration)
    sc.set("flows[2].count", n)
    sc.set("links[2].queue_ab", {"kind": "sqf", "limit": f"{BUFFER_PKTS}p", "flow_sample": "1ms"})
    if app is not None and "kind" in app:
        sc.set("flows[0].app", app)
    elif app is not None:
        for k, v in app.items():
            sc.set(f"flows[0].app.{k}", v)
    return sc


def backlog_series(res) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample times (s), the video's bytes queued, the smallest active TCP flow's bytes
    queued (inf when no TCP flow is active)."""
    fq = res.tables["flow_queues"].to_pydict()
    t = np.asarray(fq["t_s"])
    flow = np.asarray(fq["flow"])
    b = np.asarray(fq["bytes"], dtype=np.float64)
    times, idx = np.unique(t, return_inverse=True)
    video = np.zeros(len(times))
    tcp_min = np.full(len(times), np.inf)
    is_video = flow == "video"
    video[idx[is_video]] = b[is_video]
    is_tcp = np.char.startswith(flow.astype(str), "data")
    np.minimum.at(tcp_min, idx[is_tcp], b[is_tcp])
    return times, video, tcp_min


def measure(label: str, app: dict[str, Any] | None, n: int, duration: str) -> dict[str, Any]:
    res = scenario(app, n, duration).run()
    times, video, tcp_min = backlog_series(res)
    active = video > 0
    tcp_active = np.isfinite(tcp_min)
    return {
        "source": label,
        "n": n,
        "video_loss": round(res.flow("video")["loss_ratio"], 4),
        # The video is queued but is not strictly the shortest: SQF does not serve it.
        "video_not_shortest": round(float(np.mean(video[active] >= tcp_min[active])) if active.any() else 0.0, 3),
        "video_backlog_p99_mtu": round(float(np.percentile(video[active], 99)) / MTU, 2) if active.any() else 0.0,
        "tcp_min_p50_mtu": round(float(np.median(tcp_min[tcp_active])) / MTU, 1),
        "P_tcp_min_le_1mtu": round(float(np.mean(tcp_min[tcp_active] <= MTU)), 3),
        "equal_share_mtu": round(BUFFER_PKTS / (n + 1), 1),
    }


def figure(path: Path, duration: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sc = scenario(SOURCES[2][1], 5, duration)
    sc.set("flows[0].packet_log", True)
    res = sc.run()
    times, video, tcp_min = backlog_series(res)
    pk = res.tables["packets"].to_pydict()
    is_video = np.asarray(pk["flow"]) == "video"
    sent = np.asarray(pk["sent_ns"])[is_video] / 1e9
    lost = np.asarray([r is None for r in pk["recv_ns"]])[is_video]
    edges = np.arange(0.0, float(times[-1]) + 0.5, 0.5)
    k = np.digitize(sent, edges) - 1
    loss = np.bincount(k, weights=lost, minlength=len(edges)) / np.maximum(np.bincount(k, minlength=len(edges)), 1)

    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 4), sharex=True, dpi=80)
    a.plot(times, video / MTU, lw=0.5, label="video backlog")
    a.plot(times, np.where(np.isfinite(tcp_min), tcp_min, np.nan) / MTU, lw=0.5, label="smallest TCP backlog")
    a.axhline(BUFFER_PKTS / 6, color="k", ls=":", lw=0.8, label="B/(n+1) (eq. 1)")
    a.set_ylabel("MTU-sized packets")
    a.legend(loc="upper right", fontsize=7)
    a.set_title("SQF, 50p, n = 5 downloads, Poisson video 5 Mbit/s", fontsize=9)
    b.step(edges, loss[: len(edges)], where="post")
    b.set_ylabel("video loss (0.5 s)")
    b.set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, default=Path(__file__).parent)
    ap.add_argument("--duration", default="30s")
    args = ap.parse_args(argv)
    for label, app in SOURCES:
        for n in N_VALUES:
            print(json.dumps(measure(label, app, n, args.duration)), flush=True)
    figure(args.output / "sqf_investigation.png", args.duration)


if __name__ == "__main__":
    main()
