"""``qoelab reproduce sqf``: the experiments of Bonald, Muscariello, Ostallo, "Self-Prioritization
of Audio and Video Traffic", ICC 2011 (BMO11), rerun in the simulator.

Reading list
------------
- ``shared/papers/sqf-self-prioritization.txt``: Sec. IV (model), Sec. V (testbed).
- ``scenarios/sqf/README.md``: the scenarios and what we chose where the paper is silent.
- ``docs/models/sqf.md``, ``drr.md``, ``pfq.md``, ``fq_codel.md``, ``sqf-analytic.md``.

What runs (every grid through :func:`qoelab.sweep.run_sweep`, so an interrupted reproduction
resumes where it stopped):

==============  ==========================================================================
``testbed``     ``scenarios/sqf/testbed.toml``: queue discipline × n downloads, the video as
                in the bundled trace with frame pacing (Fig. 6, Fig. 7, Table I)
``smoothed``    the same grid with the video sender limited to a peak rate (8 Mbit/s, a
                sensitivity variant; see the report's reading)
``jitter``      SQF only, n = 5, peak-rate-limited video, source jitter δ × access rate
                10/100 Mbit/s (Fig. 8)
``model``       ``scenarios/sqf/model-check.toml``: Poisson source of peak rate λ × n
                saturating TCP flows, de-prioritisation from SQF's per-flow backlog samples
``sensitivity`` SQF only, labelled what-ifs the paper leaves open: video source (trace
                frame-paced, trace with an 8 Mbit/s peak, CBR and Poisson at 5 Mbit/s) × the
                TCP side (MTU segments ACKed one by one; delayed ACKs; 64 kB aggregates as a
                router with GRO/TSO hands to its qdisc) × n, buffer 75 000 B (= 50 MTU)
==============  ==========================================================================

The paper's numbers in the report (``PAPER_*`` below) are typed from the paper's text and
Table I and always labelled as the paper's; nothing we measure is compared against a number
we chose.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from qoelab import paths
from qoelab.scenario import Scenario
from qoelab.sweep import resolve_jobs, run_sweep

__all__ = ["Plan", "plan", "run", "register", "PAPER_TABLE1"]

DISCIPLINES = ("fifo", "drr", "sqf", "pfq", "fq_codel")
LABEL = {"fifo": "FIFO", "drr": "FQ (DRR+LQD)", "sqf": "SQF", "pfq": "PFQ", "fq_codel": "FQ-CoDel"}
BUFFER = "50p"
TABLE1_N = (1, 5, 10, 15, 20)
#: Peak rate of the `smoothed` variant's video sender (0.8 of the 10 Mbit/s access line).
SMOOTH_PEAK = "8Mbps"
#: n of the Fig. 8 runs. The paper does not give it; we use n = 5 with the peak-rate-limited
#: video, the setting where our SQF protects the video at δ = 0, so that δ is what changes.
JITTER_N = 5

#: The sensitivity grid (see :func:`_sensitivity`): labelled video sources and TCP variants.
_TRACE_APP = {"kind": "video", "trace": "../../data/traces/sqf_video_5M.trace.csv.gz", "loop": True, "pacing": "frame"}
SENS_SOURCES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("trace, frame-paced", _TRACE_APP),
    (f"trace, peak {SMOOTH_PEAK}", {**_TRACE_APP, "peak_rate": SMOOTH_PEAK}),
    ("CBR 5 Mbit/s", {"kind": "cbr", "rate": "5Mbps", "payload": "1316B"}),
    ("Poisson 5 Mbit/s", {"kind": "poisson", "rate": "5Mbps", "payload": "1316B"}),
)
SENS_TCP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("MSS 1448, ACK each", {"kind": "tcp", "cc": "cubic", "mss": "1448B"}),
    ("MSS 1448, delayed ACKs", {"kind": "tcp", "cc": "cubic", "mss": "1448B", "delayed_ack": True}),
    ("64 kB aggregates (GRO)", {"kind": "tcp", "cc": "cubic", "mss": "64000B"}),
)
#: The sensitivity grid's buffer: 50 MTU in bytes, so that 64 kB aggregates and 1.5 kB segments
#: compete for the same space.
SENS_BUFFER = "75000B"

# --- The paper's values (BMO11), typed from the text -------------------------------------------
#: Table I: data bandwidth share (Mbit/s) / Jain's index, for n = 1, 5, 10, 15, 20.
PAPER_TABLE1: dict[str, list[tuple[float, float]]] = {
    "fifo": [(4.1, 0.95), (4.4, 0.91), (4.8, 0.95), (5.1, 0.95), (5.6, 0.99)],
    "drr": [(4.1, 0.99), (7.5, 0.99), (8.5, 0.95), (8.9, 0.99), (9.1, 0.99)],
    "sqf": [(4.1, 0.95), (4.1, 0.90), (4.1, 0.91), (4.1, 0.95), (4.1, 0.95)],
}
#: Statements of Sec. V-C/E and IV-A that have no table; quoted in the report.
PAPER_STATEMENTS = [
    ("Fig. 6, SQF", "loss rate negligible independently of n (1..20)"),
    ("Fig. 6, FIFO", "audio loss grows linearly from 1 % to more than 25 % as n goes 1 -> 20; video slightly less"),
    ("Fig. 6, FQ", "audio loss low (64 kbit/s < fair share); video loss high as soon as n > 1"),
    ("Fig. 7, FQ", "jitter increases with n for audio and video (round-robin time)"),
    ("Fig. 7, SQF", "beneficial for audio and video, independently of n"),
    ("Table I", "data share grows with n under FIFO and FQ, constant (4.1 Mbit/s) under SQF"),
    ("Fig. 8", "on 10 Mbit/s the video is de-prioritised when delta >= 5 ms; larger threshold on 100 Mbit/s"),
    ("Sec. IV-A", "n = 20: p(T) close to 0 below a peak rate of ~6 Mbit/s; T_bar > 180 min there; FQ limit 480 kbit/s"),
]


@dataclass(frozen=True)
class Plan:
    """What one reproduction runs."""

    quick: bool
    duration: str
    n_values: tuple[int, ...]
    disciplines: tuple[str, ...]
    jitter_ms: tuple[float, ...]
    jitter_rates: tuple[str, ...]
    jitter_duration: str
    model_rates_mbps: tuple[float, ...]
    model_n: tuple[int, ...]
    model_duration: str
    sens_n: tuple[int, ...]


def plan(quick: bool) -> Plan:
    if quick:
        return Plan(
            quick=True,
            duration="60s",
            n_values=(1, 5, 10, 20),
            disciplines=DISCIPLINES,
            jitter_ms=(0, 2, 5, 10, 20),
            jitter_rates=("10Mbps", "100Mbps"),
            jitter_duration="30s",
            model_rates_mbps=(3.0, 6.0, 8.0),
            model_n=(5, 20),
            model_duration="60s",
            sens_n=(1, 5, 20),
        )
    return Plan(
        quick=False,
        duration="600s",
        n_values=tuple(range(1, 21)),
        disciplines=DISCIPLINES,
        jitter_ms=(0, 1, 2, 3, 5, 7, 10, 15, 20, 30),
        jitter_rates=("10Mbps", "100Mbps"),
        jitter_duration="600s",
        model_rates_mbps=(2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0),
        model_n=(5, 10, 20),
        model_duration="600s",
        sens_n=(1, 5, 10, 15, 20),
    )


def _queue(kind: str) -> dict[str, Any]:
    return {"kind": kind, "limit": BUFFER}


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _testbed(p: Plan, *, peak: str | None) -> tuple[Scenario, list]:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", p.duration)
    if peak is not None:
        sc.set("flows[0].app.peak_rate", peak)
    axes = [("links[2].queue_ab", [_queue(k) for k in p.disciplines]), ("flows[2].count", list(p.n_values))]
    return sc, axes


def _jitter(p: Plan) -> tuple[Scenario, list]:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", p.jitter_duration)
    sc.set("links[2].queue_ab", _queue("sqf"))
    sc.set("flows[2].count", JITTER_N)
    sc.set("flows[0].app.peak_rate", SMOOTH_PEAK)
    axes = [("links[2].rate", list(p.jitter_rates)), ("flows[0].app.source_jitter", [f"{d:g}ms" for d in p.jitter_ms])]
    return sc, axes


def _model(p: Plan) -> tuple[Scenario, list]:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "model-check.toml")
    sc.set("sim.duration", p.model_duration)
    # lambda counts 1250-byte packets; the Poisson app's rate is of 1222-byte payloads.
    rates = [f"{r * 1222 / 1250:.6g}Mbps" for r in p.model_rates_mbps]
    axes = [("flows[0].app.rate", rates), ("flows[1].count", list(p.model_n))]
    return sc, axes


def _sensitivity(p: Plan) -> tuple[Scenario, list]:
    """SQF only. Every link carries up to 65 535-byte packets so that the GRO variant's TCP
    segments pass unfragmented; the MSS is explicit in every variant, so only the listed factor
    changes between rows."""
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", p.duration)
    for i in range(3):
        sc.set(f"links[{i}].mtu", 65535)
    sc.set("links[2].queue_ab", {"kind": "sqf", "limit": SENS_BUFFER})
    axes = [("flows[0].app", [a for _, a in SENS_SOURCES]), ("flows[2].transport", [t for _, t in SENS_TCP]),
            ("flows[2].count", list(p.sens_n))]
    return sc, axes


def _alone(p: Plan) -> tuple[Scenario, list]:
    """The sensitivity grid's video sources with no download at all (the downloads are
    scheduled to start after the end of the run): what the line does to the video by itself."""
    sc, _ = _sensitivity(p)
    sc.set("flows[2].count", 1)
    sc.set("flows[2].start", "100000s")
    return sc, [("flows[0].app", [a for _, a in SENS_SOURCES])]


def _sweep(name: str, sc: Scenario, axes: list, out: Path, jobs: int, log, executor: Any = None) -> None:
    t0 = time.time()

    def progress(done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            log(f"  {name}: {done}/{total} runs")

    r = run_sweep(sc, axes, 1, out / "runs" / name, jobs, progress, executor=executor)
    log(f"  {name}: {r['ran']} ran, {r['skipped']} reused, {time.time() - t0:.1f} s")


def _cells(out: Path, name: str) -> list[tuple[dict[str, Any], Path]]:
    """(params, run dir) of every finished run of a sweep."""
    res = []
    for d in sorted((out / "runs" / name / "runs").iterdir()):
        if (d / "done").exists():
            res.append((json.loads((d / "cell.json").read_text())["params"], d))
    return res


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def _flows(d: Path) -> dict[str, dict[str, Any]]:
    t = pq.read_table(d / "flows.parquet").to_pylist()
    return {r["flow"]: r for r in t}


def testbed_rows(out: Path, name: str) -> list[dict[str, Any]]:
    """One row per (discipline, n): audio/video loss and jitter, data share, Jain."""
    rows = []
    for params, d in _cells(out, name):
        q = params["links[2].queue_ab"]["kind"]
        n = int(params["flows[2].count"])
        fl = _flows(d)
        summary = json.loads((d / "summary.json").read_text())
        data = [fl[f"data{i}"] for i in range(n)]
        rows.append(
            {
                "discipline": q,
                "n": n,
                "video_loss": fl["video"]["loss_ratio"],
                "audio_loss": fl["audio"]["loss_ratio"],
                "video_jitter_ms": fl["video"]["ipdv_mean_abs_ms"],
                "audio_jitter_ms": fl["audio"]["ipdv_mean_abs_ms"],
                "video_mbps": fl["video"]["throughput_bps"] / 1e6,
                "data_share_mbps": sum(r["goodput_bps"] for r in data) / 1e6,
                "jain": summary["jain_index"],
            }
        )
    rows.sort(key=lambda r: (DISCIPLINES.index(r["discipline"]), r["n"]))
    return rows


def sensitivity_rows(out: Path) -> list[dict[str, Any]]:
    """One row per (video source, TCP variant, n) of the sensitivity grid."""
    src = [a for _, a in SENS_SOURCES]
    tcp = [t for _, t in SENS_TCP]
    rows = []
    cells = [(p, d, False) for p, d in _cells(out, "sensitivity")] + [(p, d, True) for p, d in _cells(out, "alone")]
    for params, d, alone in cells:
        i = src.index(params["flows[0].app"])
        j = -1 if alone else tcp.index(params["flows[2].transport"])
        n = 0 if alone else int(params["flows[2].count"])
        fl = _flows(d)
        rows.append({
            "video_source": SENS_SOURCES[i][0], "tcp": "no downloads" if alone else SENS_TCP[j][0], "n": n,
            "video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
            "data_share_mbps": sum(fl[f"data{k}"]["goodput_bps"] for k in range(n)) / 1e6,
            "_order": (i, j, n),
        })
    rows.sort(key=lambda r: r["_order"])
    for r in rows:
        del r["_order"]
    return rows


def _sensitivity_md(rows, ns) -> list[str]:
    md = [f"### Sensitivity (SQF, buffer {SENS_BUFFER}): video loss / audio loss", "",
          "Each row changes one factor against the bundled testbed. The column 'alone' has no download at all: what the",
          "10 Mbit/s line and its buffer by themselves do to that sender.", "",
          "| video source | TCP as the router sees it | alone | " + " | ".join(f"n = {n}" for n in ns) + " |",
          "|---|---|---" + "|---" * len(ns) + "|"]
    for s_label, _ in SENS_SOURCES:
        alone = [r for r in rows if r["video_source"] == s_label and r["n"] == 0]
        a = f"{_pct(alone[0]['video_loss'])} / {_pct(alone[0]['audio_loss'])}" if alone else "–"
        for t_label, _ in SENS_TCP:
            rs = {r["n"]: r for r in rows if r["video_source"] == s_label and r["tcp"] == t_label}
            md.append(f"| {s_label} | {t_label} | {a} | " + " | ".join(
                f"{_pct(rs[n]['video_loss'])} / {_pct(rs[n]['audio_loss'])}" if n in rs else "–" for n in ns) + " |")
    return md + [""]


def jitter_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for params, d in _cells(out, "jitter"):
        fl = _flows(d)
        rows.append(
            {
                "access_rate": params["links[2].rate"],
                "delta_ms": float(str(params["flows[0].app.source_jitter"]).removesuffix("ms")),
                "video_loss": fl["video"]["loss_ratio"],
                "audio_loss": fl["audio"]["loss_ratio"],
            }
        )
    rows.sort(key=lambda r: (float(r["access_rate"].removesuffix("Mbps")), r["delta_ms"]))
    return rows


def model_rows(out: Path, p: Plan) -> list[dict[str, Any]]:
    """Measured de-prioritisation vs the model's p(T) for the run's duration."""
    from qoelab.models import sqf_analytic as sa

    rows = []
    for params, d in _cells(out, "model"):
        n = int(params["flows[1].count"])
        lam_mbps = float(str(params["flows[0].app.rate"]).removesuffix("Mbps")) * 1250 / 1222
        fq = pq.read_table(d / "flow_queues.parquet").to_pydict()
        t = np.asarray(fq["t_s"])
        flow = np.asarray(fq["flow"], dtype=object)
        by = np.asarray(fq["bytes"], dtype=float)
        instants, inv = np.unique(t, return_inverse=True)
        names = sorted({f for f in set(flow.tolist()) if f and f != "video"})
        video = np.zeros(instants.size)
        others = np.zeros((len(names), instants.size))
        idx = {f: i for i, f in enumerate(names)}
        for k in range(t.size):
            f = flow[k]
            if f == "video":
                video[inv[k]] = by[k]
            elif f:
                others[idx[f], inv[k]] = by[k]
        duration = float(json.loads((d / "summary.json").read_text())["duration_s"])
        dt = np.diff(np.append(instants, duration))
        frac = sa.deprioritised_fraction(video, others, dt)
        # Condition (1) on the buffer B = 200 packets of 1250 B, in bytes.
        b_bytes = 200 * 1250 / (n + 1)
        above = float(np.sum(dt * (video >= b_bytes)) / np.sum(dt))
        fl = _flows(d)
        rows.append(
            {
                "n": n,
                "peak_rate_mbps": round(lam_mbps, 6),
                "measured_deprioritised_time_fraction": frac,
                "measured_time_fraction_x_ge_B_over_n1": above,
                "measured_ever_deprioritised": bool(frac > 0),
                "model_p_T": sa.p_deprioritised(duration, lam_mbps * 1e6, n),
                "video_loss": fl["video"]["loss_ratio"],
                "duration_s": duration,
                "samples": int(instants.size),
            }
        )
    rows.sort(key=lambda r: (r["n"], r["peak_rate_mbps"]))
    return rows


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _pct(x: float) -> str:
    return "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.3g} %"


def _fig_lines(path: Path, rows, key: str, ylabel: str, title: str, *, logy: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, stream in zip(axes, ("audio", "video")):
        for q in DISCIPLINES:
            rs = [r for r in rows if r["discipline"] == q]
            if not rs:
                continue
            y = [r[f"{stream}_{key}"] * (100 if key == "loss" else 1) for r in rs]
            if logy:
                y = [max(v, 1e-3) for v in y]
            ax.plot([r["n"] for r in rs], y, marker="o", ms=3, label=LABEL[q])
        ax.set_title(f"{stream}")
        ax.set_xlabel("number of data downloads n")
        ax.grid(alpha=0.3)
        if logy:
            ax.set_yscale("log")
    axes[0].set_ylabel(ylabel)
    axes[1].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fig8(path: Path, rows) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for rate in sorted({r["access_rate"] for r in rows}, key=lambda s: float(s.removesuffix("Mbps"))):
        rs = [r for r in rows if r["access_rate"] == rate]
        ax.plot([r["delta_ms"] for r in rs], [max(100 * r["video_loss"], 1e-3) for r in rs], marker="o", label=f"access {rate}")
    ax.axvline(5, ls=":", color="0.5", label="paper: threshold ~5 ms on 10 Mbit/s")
    ax.set_yscale("log")
    ax.set_xlabel("source jitter std δ (ms)")
    ax.set_ylabel("video loss (%)  [0 plotted at 1e-3]")
    ax.set_title(f"Fig. 8 (ours): SQF, n = {JITTER_N} downloads, video paced at {SMOOTH_PEAK}", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _table1_md(rows, title: str) -> list[str]:
    out = [f"### {title}", "", "Data bandwidth share (Mbit/s) / Jain's index. *Paper* rows are BMO11 Table I.", ""]
    out.append("| scheduler | " + " | ".join(f"n = {n}" for n in TABLE1_N) + " |")
    out.append("|---" * (len(TABLE1_N) + 1) + "|")
    for q in DISCIPLINES:
        rs = {r["n"]: r for r in rows if r["discipline"] == q}
        if not rs:
            continue
        if q in PAPER_TABLE1:
            out.append(f"| {LABEL[q]} (paper) | " + " | ".join(f"{s:.1f}/{j:.2f}" for s, j in PAPER_TABLE1[q]) + " |")
        cells = [f"{rs[n]['data_share_mbps']:.1f}/{rs[n]['jain']:.2f}" if n in rs else "–" for n in TABLE1_N]
        out.append(f"| {LABEL[q]} (ours) | " + " | ".join(cells) + " |")
    return out + [""]


def _loss_md(rows, title: str) -> list[str]:
    ns = sorted({r["n"] for r in rows})

    def table(cell) -> list[str]:
        out = ["| scheduler | " + " | ".join(f"n = {n}" for n in ns) + " |", "|---" * (len(ns) + 1) + "|"]
        for q in DISCIPLINES:
            rs = {r["n"]: r for r in rows if r["discipline"] == q}
            if rs:
                out.append(f"| {LABEL[q]} | " + " | ".join(cell(rs[n]) if n in rs else "–" for n in ns) + " |")
        return out

    return ([f"### {title}", "", "Loss rate audio / video.", ""]
            + table(lambda r: f"{_pct(r['audio_loss'])} / {_pct(r['video_loss'])}")
            + ["", "Jitter (mean |IPDV|, RFC 3393, ms) audio / video.", ""]
            + table(lambda r: f"{r['audio_jitter_ms']:.2f} / {r['video_jitter_ms']:.2f}") + [""])


def _analytic(out: Path, quick: bool) -> dict[str, Any]:
    """Fig. 3/4 from eq. (2) and the paper's n = 20 statements, computed."""
    from qoelab.models import sqf_analytic as sa

    kw = {}
    if quick:
        kw3 = {"peak_rates_bps": np.linspace(0, 10e6, 41)}
        kw4 = {"peak_rates_bps": np.linspace(0.02, 0.98, 25) * 10e6}
    else:
        kw3, kw4 = kw, kw
    f3 = sa.figure3(out / "fig3_analytic.png", **kw3)
    f4 = sa.figure4(out / "fig4_analytic.png", **kw4)
    rows = []
    for i, n in enumerate(f3.n_values):
        for j, r in enumerate(f3.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "p_T_sqf": f3.p_sqf[i, j], "p_T_fq": f3.p_fq[i, j]})
    _write_csv(out / "fig3_analytic.csv", rows)
    rows = []
    for i, n in enumerate(f4.n_values):
        for j, r in enumerate(f4.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "T_bar_min": f4.mean_time_s[i, j] / 60})
    _write_csv(out / "fig4_analytic.csv", rows)
    return {
        "p_T_n20_at_6mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 6e6, 20),
        "p_T_n20_at_5mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 5e6, 20),
        "rate_p_half_n20_mbps": sa.peak_rate_for_p(0.5, 20) / 1e6,
        "T_bar_n20_at_6mbps_min": sa.mean_prioritised_time(6e6, 20) / 60,
        "rate_T_bar_180min_n20_mbps": sa.peak_rate_for_mean_time(180 * 60, 20) / 1e6,
        "fq_limit_n20_kbps": 10e6 / 21 / 1e3,
    }


def _get(rows, q, n, key):
    for r in rows:
        if r["discipline"] == q and r["n"] == n:
            return r[key]
    return float("nan")


def _reading(p: Plan, tb, sm, jit, model, ana, sens) -> list[str]:
    """Measured facts for the reading, computed from the tables (no hard-coded outcome)."""
    ns = sorted({r["n"] for r in tb})
    lo, hi = ns[0], ns[-1]
    L = []

    def loss_line(rows, tag):
        for q in DISCIPLINES:
            a = [_get(rows, q, n, "audio_loss") for n in ns]
            v = [_get(rows, q, n, "video_loss") for n in ns]
            L.append(
                f"- {tag} {LABEL[q]}: audio loss {_pct(a[0])} (n = {lo}) -> {_pct(a[-1])} (n = {hi}), max {_pct(max(a))}; "
                f"video loss {_pct(v[0])} -> {_pct(v[-1])}, max {_pct(max(v))}."
            )

    L.append("### Measured (from the tables above)")
    L.append("")
    loss_line(tb, "trace video,")
    loss_line(sm, f"video paced at {SMOOTH_PEAK},")
    for tag, rows in (("trace video", tb), (f"paced video", sm)):
        for q in ("fifo", "drr", "sqf"):
            s = [_get(rows, q, n, "data_share_mbps") for n in ns]
            L.append(f"- {tag}, {LABEL[q]}: data share {s[0]:.2f} Mbit/s (n = {lo}) -> {s[-1]:.2f} Mbit/s (n = {hi}), range {min(s):.2f}..{max(s):.2f}.")
    for rate in sorted({r["access_rate"] for r in jit}, key=lambda s: float(s.removesuffix("Mbps"))):
        rs = [r for r in jit if r["access_rate"] == rate]
        first = next((r["delta_ms"] for r in rs if r["video_loss"] > 1e-3), None)
        L.append(
            f"- Fig. 8, {rate}: video loss "
            + ", ".join(f"δ = {r['delta_ms']:g} ms: {_pct(r['video_loss'])}" for r in rs)
            + f"; first δ with loss > 0.1 %: {first if first is not None else 'none in the grid'} ms."
        )
    for r in model:
        L.append(
            f"- model check n = {r['n']}, λ = {r['peak_rate_mbps']:g} Mbit/s: de-prioritised {_pct(r['measured_deprioritised_time_fraction'])} of the time "
            f"(x >= B/(n+1): {_pct(r['measured_time_fraction_x_ge_B_over_n1'])}); model p(T = {r['duration_s']:g} s) = {r['model_p_T']:.3g}."
        )
    for s_label, _ in SENS_SOURCES:
        parts = [f"no downloads: {_pct(r['video_loss'])}" for r in sens if r["video_source"] == s_label and r["n"] == 0]
        for t_label, _ in SENS_TCP:
            v = [r["video_loss"] for r in sens if r["video_source"] == s_label and r["tcp"] == t_label and r["n"] > 0]
            if v:
                parts.append(f"{t_label}: max {_pct(max(v))} over n")
        L.append(f"- sensitivity, {s_label}: video loss " + "; ".join(parts) + ".")
    L.append(
        f"- analytic, n = 20: p(10 min) = {ana['p_T_n20_at_5mbps']:.3g} at 5 Mbit/s and {ana['p_T_n20_at_6mbps']:.3g} at 6 Mbit/s; "
        f"p = 1/2 at {ana['rate_p_half_n20_mbps']:.2f} Mbit/s; T_bar(6 Mbit/s) = {ana['T_bar_n20_at_6mbps_min']:.3g} min; "
        f"T_bar = 180 min at {ana['rate_T_bar_180min_n20_mbps']:.2f} Mbit/s; FQ limit {ana['fq_limit_n20_kbps']:.0f} kbit/s "
        "(paper: p ~ 0 and T_bar > 180 min below ~6 Mbit/s; FQ 480 kbit/s)."
    )
    return L + [""]


def run(out: Path, *, quick: bool = False, jobs: int = 1, log=print, executor: Any = None) -> dict[str, Any]:
    """Runs (or resumes) every grid and writes the report folder ``out``. Returns a summary."""
    p = plan(quick)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"qoelab reproduce sqf{' --quick' if quick else ''}: writing {out}")
    sc, axes = _testbed(p, peak=None)
    _sweep("testbed", sc, axes, out, jobs, log, executor)
    sc, axes = _testbed(p, peak=SMOOTH_PEAK)
    _sweep("smoothed", sc, axes, out, jobs, log, executor)
    sc, axes = _jitter(p)
    _sweep("jitter", sc, axes, out, jobs, log, executor)
    sc, axes = _model(p)
    _sweep("model", sc, axes, out, jobs, log, executor)
    sc, axes = _sensitivity(p)
    _sweep("sensitivity", sc, axes, out, jobs, log, executor)
    sc, axes = _alone(p)
    _sweep("alone", sc, axes, out, jobs, log, executor)
    t_sim = time.time() - t0
    if getattr(executor, "shard", None):  # one task of a job array: the report comes after all
        return {"shard": executor.shard}

    tb = testbed_rows(out, "testbed")
    sm = testbed_rows(out, "smoothed")
    jit = jitter_rows(out)
    model = model_rows(out, p)
    sens = sensitivity_rows(out)
    ana = _analytic(out, quick)
    _write_csv(out / "testbed.csv", tb)
    _write_csv(out / "testbed_paced_video.csv", sm)
    _write_csv(out / "fig8_jitter.csv", jit)
    _write_csv(out / "model_check.csv", model)
    _write_csv(out / "sensitivity.csv", sens)
    paper = [
        {"scheduler": q, "n": n, "paper_data_share_mbps": s, "paper_jain": j}
        for q, vals in PAPER_TABLE1.items()
        for n, (s, j) in zip(TABLE1_N, vals)
    ]
    _write_csv(out / "paper_table1.csv", paper)
    for tag, rows in (("", tb), ("_paced_video", sm)):
        _fig_lines(out / f"fig6_loss{tag}.png", rows, "loss", "loss rate (%)  [0 plotted at 1e-3]", f"Fig. 6 (ours{tag.replace('_', ' ')}): loss vs n", logy=True)
        _fig_lines(out / f"fig7_jitter{tag}.png", rows, "jitter_ms", "mean |IPDV| (ms)", f"Fig. 7 (ours{tag.replace('_', ' ')}): jitter vs n")
    _fig8(out / "fig8_jitter.png", jit)

    md = [
        "# SQF reproduction (BMO11, ICC 2011)",
        "",
        f"Mode: {'quick' if quick else 'full'}; testbed runs of {p.duration} simulated time; n = {', '.join(map(str, p.n_values))}; "
        f"buffer {BUFFER} on the 10 Mbit/s access line. Simulation wall time of this invocation: {t_sim:.0f} s "
        "(runs already done by an earlier invocation are reused, not re-timed).",
        "",
        "Files: `testbed.csv`, `testbed_paced_video.csv`, `fig8_jitter.csv`, `model_check.csv`, `sensitivity.csv`, `paper_table1.csv`, "
        "`fig3_analytic.csv`, `fig4_analytic.csv` and the PNG figures; raw runs under `runs/`.",
        "",
        "## What the paper reports (typed from its text; not measured here)",
        "",
    ]
    md += [f"- **{k}**: {v}" for k, v in PAPER_STATEMENTS]
    md += ["", "## Our measurements", ""]
    md += _loss_md(tb, "Fig. 6/7, trace video (frame-paced, as bundled)")
    md += _table1_md(tb, "Table I, trace video")
    md += _loss_md(sm, f"Fig. 6/7, video sender limited to a {SMOOTH_PEAK} peak rate")
    md += _table1_md(sm, f"Table I, video limited to {SMOOTH_PEAK}")
    md += [f"### Fig. 8 (SQF, n = {JITTER_N}, video paced at {SMOOTH_PEAK}: video loss vs source jitter δ)", "", "| access | " + " | ".join(f"δ = {d:g} ms" for d in p.jitter_ms) + " |", "|---" * (len(p.jitter_ms) + 1) + "|"]
    for rate in p.jitter_rates:
        rs = {r["delta_ms"]: r for r in jit if r["access_rate"] == rate}
        md.append(f"| {rate} | " + " | ".join(_pct(rs[float(d)]["video_loss"]) if float(d) in rs else "–" for d in p.jitter_ms) + " |")
    md += ["", "### Model vs simulator (Sec. IV)", "", "| n | λ (Mbit/s) | measured: time de-prioritised | measured: time with x ≥ B/(n+1) | model p(T) | video loss |", "|---|---|---|---|---|---|"]
    for r in model:
        md.append(
            f"| {r['n']} | {r['peak_rate_mbps']:g} | {_pct(r['measured_deprioritised_time_fraction'])} | {_pct(r['measured_time_fraction_x_ge_B_over_n1'])} | {r['model_p_T']:.3g} | {_pct(r['video_loss'])} |"
        )
    md += [""] + _sensitivity_md(sens, p.sens_n)
    md += ["### Analytical model (Fig. 3/4 recomputed from eq. (2))", "", "`fig3_analytic.png`, `fig4_analytic.png`.", ""]
    md += [f"- {k}: {v:.4g}" for k, v in ana.items()]
    md += [""]
    md += _reading(p, tb, sm, jit, model, ana, sens)
    md += (Path(__file__).with_name("sqf_reading.md")).read_text().splitlines()
    (out / "report.md").write_text("\n".join(md) + "\n")
    summary = {"quick": quick, "wall_s": time.time() - t0, "analytic": ana}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    log(f"report: {out / 'report.md'} ({time.time() - t0:.0f} s)")
    return summary


def register(subparsers) -> argparse.ArgumentParser:
    """Adds ``reproduce sqf`` to the CLI."""
    rep = subparsers.add_parser("reproduce", help="rerun a paper's experiments and write a report")
    sub = rep.add_subparsers(dest="paper", required=True)
    s = sub.add_parser("sqf", help="Bonald, Muscariello, Ostallo: Self-Prioritization of Audio and Video Traffic (ICC 2011)")
    s.add_argument("--quick", action="store_true", help="short runs and a coarse grid (CI)")
    s.add_argument("-o", "--output", metavar="DIR", help="report folder (default results/reproduce-sqf[-quick])")
    s.add_argument("-j", "--jobs", type=int, default=1, help="parallel runs (default 1; 0 = one per CPU)")
    from qoelab.executors import add_arguments

    add_arguments(s)

    def cmd(a) -> int:
        out = Path(a.output) if a.output else Path("results") / ("reproduce-sqf-quick" if a.quick else "reproduce-sqf")
        from qoelab.outdir import check_folder

        check_folder(out)
        from qoelab.executors import open_from_args, shard_note

        with open_from_args(a) as ex:
            r = run(out, quick=a.quick, jobs=resolve_jobs(a.jobs), executor=ex)
        if "shard" in r:
            print(shard_note(r["shard"]))
        return 0

    s.set_defaults(func=cmd)
    return rep
