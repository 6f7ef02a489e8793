"""The TCP Interactive reproduction's figures drawn from single runs (Figs. 4–6, ours): frame
sizes with the target ratio and timeouts, frame arrival against the ideal line, quality
against delay per frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qoelab.experiment.figures import pyplot, save
from qoelab.reproduce.interactive.frames import MAIN_D, Run, ladder


def _shade(ax, run: Run, *, on_y: bool = False) -> None:
    """Shades the bursts, on the x axis (time) or the y axis."""
    span = ax.axhspan if on_y else ax.axvspan
    for k, (s, e) in enumerate(run.outages_ns):
        span(s / 1e9, e / 1e9, color="0.85", zorder=0, label="outage" if k == 0 else None)


def fig4(run: Run):
    plt = pyplot()
    lad = ladder()

    def draw(path: Path) -> None:
        fig, ax = plt.subplots(figsize=(9, 4))
        t = run.written_ns / 1e9
        _shade(ax, run)
        ax.plot(t, lad["size_bytes"][0, :t.size] / 1e3, lw=0.5, color="0.5", label="incoming frame (2 Mbit/s)")
        ax.plot(t, run.size / 1e3, lw=0.6, color="C0", label="outgoing frame")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("frame size (kB)")
        ax2 = ax.twinx()
        ax2.step(t, run.target / 2e6, where="post", color="C3", lw=1.2, label="target ratio")
        for k, x in enumerate(run.rto_ns / 1e9):
            ax2.axvline(x, color="C3", ls=":", lw=0.8, label="timeout" if k == 0 else None)
        ax2.set_ylim(0, 1.05)
        ax2.set_ylabel("target rate ÷ 2 Mbit/s")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
        ax.set_title(f"Fig. 4 (ours): lazy binary back-off, A = 0.55, {len(run.outages_ns)} bursts, "
                     f"{run.rto_ns.size} timeouts (repetition 0)", fontsize=9)
        save(fig, path)

    return draw


def fig5(runs: dict[str, Run]):
    plt = pyplot()

    def draw(path: Path) -> None:
        fig, ax = plt.subplots(figsize=(8, 5))
        any_run = next(iter(runs.values()))
        _shade(ax, any_run, on_y=True)
        f = np.arange(any_run.ideal_ns.size)
        ax.plot(f, (any_run.ideal_ns - any_run.ideal_ns[0]) / 1e9, "k--", lw=1, label="ideal")
        for k, (mode, run) in enumerate(runs.items()):
            ok = run.delivered_ns >= 0
            ax.plot(f[ok], (run.delivered_ns[ok] - run.ideal_ns[0]) / 1e9, lw=1, color=f"C{k}", label=mode)
        if "A=0.35" in runs:
            r = runs["A=0.35"]
            ax.plot(np.interp(r.rto_ns, r.written_ns, f), (r.rto_ns - r.ideal_ns[0]) / 1e9, "rv", ms=5,
                    label="timeouts (A=0.35)")
        ax.set_xlabel("frame (decode order)")
        ax.set_ylabel("arrival time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title("Fig. 5 (ours): frame arrival against the ideal line (repetition 0); shaded: bursts "
                     "(their time on the y axis)", fontsize=9)
        save(fig, path)

    return draw


def fig6(runs: dict[str, Run]):
    plt = pyplot()
    lad = ladder()

    def draw(path: Path) -> None:
        fig, ax = plt.subplots(figsize=(7, 5))
        for k, (mode, run) in enumerate(runs.items()):
            ok = run.delivered_ns >= 0
            f = np.arange(run.rung.size)[ok]
            ax.scatter(np.maximum((run.delivered_ns[ok] - run.ideal_ns[ok]) / 1e9, 1e-3), lad["psnr_y"][run.rung[ok], f], s=3,
                       alpha=0.4, color=f"C{k}", label=mode)
        ax.axvline(MAIN_D, color="k", ls=":", lw=1, label=f"discard threshold {MAIN_D:g} s")
        ax.set_xscale("log")
        ax.set_xlabel("frame delay (s, log scale)")
        ax.set_ylabel("SNR-Y of the frame as sent (dB)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, markerscale=3)
        ax.set_title("Fig. 6 (ours): quality against delay per frame (repetition 0)", fontsize=9)
        save(fig, path)

    return draw


