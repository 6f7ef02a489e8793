"""``qoelab reproduce sqf``: the experiments of Bonald, Muscariello, Ostallo, "Self-Prioritization
of Audio and Video Traffic", ICC 2011 (BMO11), rerun in the simulator.

Reading list
------------
- ``shared/papers/sqf-self-prioritization.txt``: Sec. IV (model), Sec. V (testbed).
- ``scenarios/sqf/README.md``: the scenarios and what we chose where the paper is silent.
- ``docs/models/sqf.md``, ``drr.md``, ``pfq.md``, ``fq_codel.md``, ``sqf-analytic.md``,
  ``video.md`` (the MPEG-2 trace and the VLC sender modes).

The video is the bundled MPEG-2 trace (``sqf_mpeg2_5M``, SD, 5 Mbit/s, MP@ML VBV) with its
MPEG-1 Layer II audio (``sqf_audio_mp2_64k``). VLC can stream it two ways, and the paper does
not say which beyond "RTP, audio and video on separate ports" (the elementary-stream mode);
both run, as a bracket (:data:`MODES`):

- ``es``: elementary-stream RTP, each frame's packets spread over the frame interval
  (``pacing = "frame"``);
- ``ts``: VLC's MPEG-TS mux, a constant rate per 200-ms chunk (``pacing = "ts"``), 1316-byte
  datagrams (7 TS packets).

Every cell runs :attr:`Plan.reps` times. Repetition ``r`` has its own seed and its own random
clip offsets and start times (:func:`draws`, seeded by ``r`` alone), the same for every cell of
that repetition, so cells are compared paired. The downloads' TCP is Linux's
(``profile = "linux"``), set explicitly in every builder.

What runs (every grid through :func:`qoelab.sweep.run_sweep`, one sweep folder per repetition,
so an interrupted reproduction resumes where it stopped):

==============  ==========================================================================
``testbed``     ``scenarios/sqf/testbed.toml``: sender mode × queue discipline × n downloads
                (Fig. 6, Fig. 7, Table I)
``alone``       the premise: each sender mode with no download at all, FIFO
``jitter``      SQF, n = 5, the ES sender of Fig. 6 (same trace), source jitter δ × access
                rate 10/100 Mbit/s (Fig. 8)
``model``       ``scenarios/sqf/model-check.toml``: Poisson source of peak rate λ × n
                saturating TCP flows; first passage of eq. (1) and the time after it
``sensitivity`` SQF only, labelled what-ifs the paper leaves open (one repetition): video
                source (the earlier H.264 trace frame-paced and with an 8 Mbit/s peak, CBR and
                Poisson at 5 Mbit/s) × the TCP side (MTU segments ACKed one by one; delayed
                ACKs; 64 kB aggregates as a router with GRO/TSO hands to its qdisc) × n
==============  ==========================================================================

The paper's numbers in the report (``PAPER_*`` below) are typed from the paper's text and
Table I and always labelled as the paper's. The reading is generated: each claim of Sec. V is a
:class:`~qoelab.experiment.Finding` judged from the measured tables of the same report, and
every number the reading quotes comes from them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq

from qoelab import paths
from qoelab.experiment import Estimate, Finding, Label, judge_below, judge_positive, judge_within, mean_ci, paired_ci
from qoelab.scenario import Scenario
from qoelab.sweep import resolve_jobs, run_sweep

__all__ = ["Plan", "plan", "run", "register", "draws", "findings", "PAPER_TABLE1", "MODES"]

DISCIPLINES = ("fifo", "drr", "sqf", "pfq", "fq_codel")
LABEL = {"fifo": "FIFO", "drr": "FQ (DRR+LQD)", "sqf": "SQF", "pfq": "PFQ", "fq_codel": "FQ-CoDel"}
BUFFER = "50p"
TABLE1_N = (1, 5, 10, 15, 20)

VIDEO_TRACE = "../../data/traces/sqf_mpeg2_5M.trace.csv.gz"
AUDIO_TRACE = "../../data/traces/sqf_audio_mp2_64k.trace.csv"
#: Length of both traces (their loop period), s: clip offsets are drawn in [0, this).
TRACE_S = 60.0
#: The downloads' TCP (issue 16: the Linux profile), explicit in every builder.
TCP = {"kind": "tcp", "cc": "cubic", "profile": "linux"}
#: VLC's two send modes: (label, the video app's sender keys).
MODES: dict[str, tuple[str, dict[str, Any]]] = {
    "es": ("VLC ES (RTP, frame-spread)", {"pacing": "frame"}),
    "ts": ("VLC TS (constant rate per 200 ms)", {"pacing": "ts", "ts_shaping": "200ms", "max_payload": "1316B"}),
}
#: Largest start offset of the video (and its audio) and of the downloads, s.
START_SPREAD_S = 1.0
#: n of the Fig. 8 runs. The paper does not give it.
JITTER_N = 5
#: Loss below this is "negligible" in the findings (0.1 %).
NEGLIGIBLE = 1e-3

#: The sensitivity grid (see :func:`_sensitivity`): labelled video sources and TCP variants. The
#: video sources there are the earlier H.264 720p stand-in, kept as a variant.
SMOOTH_PEAK = "8Mbps"
_H264_APP = {"kind": "video", "trace": "../../data/traces/sqf_video_5M.trace.csv.gz", "loop": True, "pacing": "frame"}
SENS_SOURCES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("H.264 trace, frame-paced", _H264_APP),
    (f"H.264 trace, peak {SMOOTH_PEAK}", {**_H264_APP, "peak_rate": SMOOTH_PEAK}),
    ("CBR 5 Mbit/s", {"kind": "cbr", "rate": "5Mbps", "payload": "1316B"}),
    ("Poisson 5 Mbit/s", {"kind": "poisson", "rate": "5Mbps", "payload": "1316B"}),
)
SENS_TCP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("MSS 1448, ACK each", {**TCP, "mss": "1448B", "delayed_ack": False}),
    ("MSS 1448, delayed ACKs", {**TCP, "mss": "1448B", "delayed_ack": True}),
    ("64 kB aggregates (GRO)", {**TCP, "mss": "64000B", "delayed_ack": False}),
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
    reps: int
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
        # Two repetitions (the fewest that give an interval), short runs, a coarse grid: CI.
        return Plan(
            quick=True,
            reps=2,
            duration="30s",
            n_values=(1, 5, 20),
            disciplines=DISCIPLINES,
            jitter_ms=(0, 5, 20),
            jitter_rates=("10Mbps", "100Mbps"),
            jitter_duration="30s",
            model_rates_mbps=(3.0, 8.0),
            model_n=(5, 20),
            model_duration="60s",
            sens_n=(1, 20),
        )
    return Plan(
        quick=False,
        reps=5,
        duration="600s",
        n_values=(1, 2, 5, 10, 15, 20),
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


@dataclass(frozen=True)
class Draws:
    """One repetition's random choices (see :func:`draws`)."""

    seed: int
    video_offset_s: float
    audio_offset_s: float
    video_start_s: float
    data_start_s: float


def draws(rep: int) -> Draws:
    """Repetition ``rep``'s seed, clip offsets (video and audio independently, uniform over the
    trace) and start times (video with its audio, and the first download, uniform in
    [0, START_SPREAD_S)), from a generator seeded by ``rep`` alone: deterministic, and the same
    for every cell of the repetition. Values are rounded to the millisecond, as written into
    the scenario."""
    rng = np.random.default_rng([0x5CF, rep])
    v, a = rng.uniform(0, TRACE_S, 2)
    vs, ds = rng.uniform(0, START_SPREAD_S, 2)
    r3 = lambda x: round(float(x), 3)  # noqa: E731
    return Draws(seed=1 + rep, video_offset_s=r3(v) % TRACE_S, audio_offset_s=r3(a) % TRACE_S,
                 video_start_s=r3(vs), data_start_s=r3(ds))


def video_app(mode: str, d: Draws) -> dict[str, Any]:
    return {"kind": "video", "trace": VIDEO_TRACE, "loop": True, "offset": f"{d.video_offset_s:g}s", **MODES[mode][1]}


def _base(d: Draws, duration: str) -> Scenario:
    """The testbed with repetition ``d``'s draws: MPEG-2 video and Layer II audio, Linux TCP."""
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    sc.set("sim.duration", duration)
    sc.set("sim.seed", d.seed)
    sc.set("flows[0].app", video_app("es", d))
    sc.set("flows[0].start", f"{d.video_start_s:g}s")
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame",
                            "offset": f"{d.audio_offset_s:g}s"})
    sc.set("flows[1].start", f"{d.video_start_s:g}s")
    sc.set("flows[2].start", f"{d.data_start_s:g}s")
    sc.set("flows[2].transport", dict(TCP))
    return sc


def _testbed(p: Plan, d: Draws) -> tuple[Scenario, list]:
    sc = _base(d, p.duration)
    axes = [("flows[0].app", [video_app(m, d) for m in MODES]), ("links[2].queue_ab", [_queue(k) for k in p.disciplines]),
            ("flows[2].count", list(p.n_values))]
    return sc, axes


def _alone(p: Plan, d: Draws) -> tuple[Scenario, list]:
    """The premise (Fig. 8 at δ = 0, Fig. 6's baseline): the video and audio on the line with
    no download (the one download is scheduled after the end of the run), FIFO."""
    sc = _base(d, p.duration)
    sc.set("links[2].queue_ab", _queue("fifo"))
    sc.set("flows[2].count", 1)
    sc.set("flows[2].start", "100000s")
    return sc, [("flows[0].app", [video_app(m, d) for m in MODES])]


def _jitter(p: Plan, d: Draws) -> tuple[Scenario, list]:
    """Fig. 8 on Fig. 6's sender: the ES mode of the same MPEG-2 trace, no peak-rate limit."""
    sc = _base(d, p.jitter_duration)
    sc.set("links[2].queue_ab", _queue("sqf"))
    sc.set("flows[2].count", JITTER_N)
    axes = [("links[2].rate", list(p.jitter_rates)), ("flows[0].app.source_jitter", [f"{x:g}ms" for x in p.jitter_ms])]
    return sc, axes


def _model(p: Plan) -> tuple[Scenario, list]:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "model-check.toml")
    sc.set("sim.duration", p.model_duration)
    sc.set("flows[1].transport", dict(TCP))
    # lambda counts 1250-byte packets; the Poisson app's rate is of 1222-byte payloads.
    rates = [f"{r * 1222 / 1250:.6g}Mbps" for r in p.model_rates_mbps]
    axes = [("flows[0].app.rate", rates), ("flows[1].count", list(p.model_n))]
    return sc, axes


def _sensitivity(p: Plan) -> tuple[Scenario, list]:
    """SQF only, repetition 0's draws. Every link carries up to 65 535-byte packets so that the
    GRO variant's TCP segments pass unfragmented; the MSS and the ACK policy are explicit in
    every variant, so only the listed factor changes between rows."""
    sc = _base(draws(0), p.duration)
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame"})
    for i in range(3):
        sc.set(f"links[{i}].mtu", 65535)
    sc.set("links[2].queue_ab", {"kind": "sqf", "limit": SENS_BUFFER})
    axes = [("flows[0].app", [a for _, a in SENS_SOURCES]), ("flows[2].transport", [t for _, t in SENS_TCP]),
            ("flows[2].count", list(p.sens_n))]
    return sc, axes


def _sens_alone(p: Plan) -> tuple[Scenario, list]:
    """The sensitivity grid's video sources with no download at all."""
    sc, _ = _sensitivity(p)
    sc.set("flows[2].count", 1)
    sc.set("flows[2].start", "100000s")
    return sc, [("flows[0].app", [a for _, a in SENS_SOURCES])]


class _Counter:
    """Runs done over the whole reproduction, for one progress display."""

    def __init__(self, total: int, update: Callable[[int, int], None] | None) -> None:
        self.total, self.base, self.update = total, 0, update

    def sweep(self, total: int) -> Callable[[int, int], None]:
        base = self.base
        self.base += total

        def progress(done: int, _total: int) -> None:
            if self.update:
                self.update(base + done, self.total)

        return progress


def _sweep(name: str, sc: Scenario, axes: list, out: Path, jobs: int, log, counter: _Counter,
           executor: Any = None) -> None:
    t0 = time.time()
    total = math.prod(len(v) for _, v in axes)
    r = run_sweep(sc, axes, 1, out / "runs" / name, jobs, counter.sweep(total), executor=executor)
    log(f"  {name}: {r['ran']} ran, {r['skipped']} reused, {time.time() - t0:.1f} s")


def _cells(out: Path, name: str) -> list[tuple[dict[str, Any], Path, int]]:
    """(params, run dir, repetition) of every finished run of a sweep; the repetition is that of
    the folder (``name/rep<r>``), 0 for a sweep without repetitions."""
    res = []
    base = out / "runs" / name
    folders = sorted(base.glob("rep*"), key=lambda f: int(f.name[3:])) if base.exists() else []
    for rep_dir, rep in ([(f, int(f.name[3:])) for f in folders] or [(base, 0)]):
        runs = rep_dir / "runs"
        if not runs.exists():
            continue
        for d in sorted(runs.iterdir()):
            if (d / "done").exists():
                res.append((json.loads((d / "cell.json").read_text())["params"], d, rep))
    return res


def _mode_of(app: dict[str, Any]) -> str:
    for m, (_, keys) in MODES.items():
        if all(app.get(k) == v for k, v in keys.items()):
            return m
    raise ValueError(f"no sender mode has the keys of {app}")


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def _flows(d: Path) -> dict[str, dict[str, Any]]:
    t = pq.read_table(d / "flows.parquet").to_pylist()
    return {r["flow"]: r for r in t}


#: The per-repetition metrics of a testbed run, aggregated with 95 % intervals.
METRICS = ("video_loss", "audio_loss", "video_jitter_ms", "audio_jitter_ms", "video_mbps", "data_share_mbps", "jain")


def testbed_rep_rows(out: Path, name: str = "testbed") -> list[dict[str, Any]]:
    """One row per (mode, discipline, n, repetition): audio/video loss and jitter, data share,
    Jain's index."""
    rows = []
    for params, d, rep in _cells(out, name):
        q = params["links[2].queue_ab"]["kind"] if "links[2].queue_ab" in params else "fifo"
        n = int(params.get("flows[2].count", 0))
        alone = name == "alone"
        fl = _flows(d)
        summary = json.loads((d / "summary.json").read_text())
        data = [] if alone else [fl[f"data{i}"] for i in range(n)]
        rows.append({
            "mode": _mode_of(params["flows[0].app"]), "discipline": q, "n": 0 if alone else n, "rep": rep,
            "video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
            "video_jitter_ms": fl["video"]["ipdv_mean_abs_ms"], "audio_jitter_ms": fl["audio"]["ipdv_mean_abs_ms"],
            "video_mbps": fl["video"]["throughput_bps"] / 1e6,
            "data_share_mbps": sum(r["goodput_bps"] for r in data) / 1e6,
            "jain": summary["jain_index"] if not alone else float("nan"),
        })
    rows.sort(key=lambda r: (list(MODES).index(r["mode"]), DISCIPLINES.index(r["discipline"]), r["n"], r["rep"]))
    return rows


def aggregate(rep_rows: list[dict[str, Any]], keys: tuple[str, ...], metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows grouped by ``keys``: each metric's mean over the repetitions, ``<metric>_ci`` the
    half-width of its Student-t 95 % interval (NaN with one repetition), and ``reps``."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rep_rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        row: dict[str, Any] = dict(zip(keys, key))
        for m in metrics:
            vals = [r[m] for r in rs if r[m] is not None and not (isinstance(r[m], float) and math.isnan(r[m]))]
            e = mean_ci(vals) if vals else Estimate(float("nan"), float("nan"), 0)
            row[m], row[f"{m}_ci"] = e.mean, e.half_width
        row["reps"] = len(rs)
        out.append(row)
    return out


def _series(rep_rows, **match) -> dict[int, float]:
    """{repetition: value} of the one metric named by ``value=`` among rows matching the rest."""
    key = match.pop("value")
    return {r["rep"]: r[key] for r in rep_rows if all(r[k] == v for k, v in match.items())}


def sensitivity_rows(out: Path) -> list[dict[str, Any]]:
    """One row per (video source, TCP variant, n) of the sensitivity grid."""
    src = [a for _, a in SENS_SOURCES]
    tcp = [t for _, t in SENS_TCP]
    rows = []
    cells = [(p, d, False) for p, d, _ in _cells(out, "sensitivity")] + [(p, d, True) for p, d, _ in _cells(out, "sens_alone")]
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
    md = [f"### Sensitivity (SQF, buffer {SENS_BUFFER}, one repetition): video loss / audio loss", "",
          "Each row changes one factor against the testbed. The column 'alone' has no download at all: what the",
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


def jitter_rep_rows(out: Path) -> list[dict[str, Any]]:
    rows = []
    for params, d, rep in _cells(out, "jitter"):
        fl = _flows(d)
        rows.append({
            "access_rate": params["links[2].rate"],
            "delta_ms": float(str(params["flows[0].app.source_jitter"]).removesuffix("ms")),
            "rep": rep,
            "video_loss": fl["video"]["loss_ratio"],
            "audio_loss": fl["audio"]["loss_ratio"],
        })
    rows.sort(key=lambda r: (float(r["access_rate"].removesuffix("Mbps")), r["delta_ms"], r["rep"]))
    return rows


def _first(t: np.ndarray, mask: np.ndarray) -> float:
    k = np.flatnonzero(mask)
    return float(t[k[0]]) if k.size else float("nan")


def model_rep_rows(out: Path) -> list[dict[str, Any]]:
    """Per model-check run: the model's event and the scheduler's, from SQF's per-flow backlog
    samples (10 ms), after the last TCP flow has started.

    - ``first_x_ge_b_s``: first time the video's backlog reaches b = B/(n+1) packets (the
      violation of eq. (1), the event whose probability by T is the model's p(T));
    - ``first_lost_priority_s``: first time some active TCP flow has a backlog no larger than
      the video's non-empty one (what SQF acts on; ``deprioritised_fraction``'s test);
    - ``deprioritised_time_fraction``: the time share with that test true (the number the
      earlier report compared with p(T));
    - ``deprioritised_after_first``: the same share counted from ``first_lost_priority_s`` on
      (near 1: losing priority is absorbing).
    """
    from qoelab.models import sqf_analytic as sa

    rows = []
    for params, d, rep in _cells(out, "model"):
        n = int(params["flows[1].count"])
        lam_mbps = float(str(params["flows[0].app.rate"]).removesuffix("Mbps")) * 1250 / 1222
        # Columnar throughout: a 600-s run holds ~10^6 samples (a per-row loop took minutes).
        fq = pq.read_table(d / "flow_queues.parquet", columns=["t_s", "flow", "bytes"])
        t = fq.column("t_s").to_numpy()
        codes = fq.column("flow").combine_chunks().dictionary_encode()
        labels = [str(x) for x in codes.dictionary.to_pylist()]
        code = codes.indices.to_numpy(zero_copy_only=False)
        by = fq.column("bytes").to_numpy().astype(float)
        instants, inv = np.unique(t, return_inverse=True)
        names = sorted(f for f in labels if f and f != "video")
        video = np.zeros(instants.size)
        others = np.zeros((len(names), instants.size))
        for c, f in enumerate(labels):
            m = code == c
            if f == "video":
                video[inv[m]] = by[m]
            elif f:
                others[names.index(f), inv[m]] = by[m]
        duration = float(json.loads((d / "summary.json").read_text())["duration_s"])
        dt = np.diff(np.append(instants, duration))
        # The TCP flows start 50 ms apart (model-check.toml): count from the last start on.
        t_start = 0.05 * (n - 1)
        keep = instants >= t_start
        b_bytes = sa.BUFFER_PKTS * sa.PKT_BYTES / (n + 1)
        active = others > 0
        lost = (video > 0) & np.any(active & (others <= video[np.newaxis, :]), axis=0)
        first_lost = _first(instants[keep], lost[keep])
        after = keep & (instants >= first_lost) if not math.isnan(first_lost) else np.zeros_like(keep)
        fl = _flows(d)
        rows.append({
            "n": n, "peak_rate_mbps": round(lam_mbps, 6), "rep": rep,
            "first_x_ge_b_s": _first(instants[keep], video[keep] >= b_bytes),
            "first_lost_priority_s": first_lost,
            "deprioritised_time_fraction": sa.deprioritised_fraction(video[keep], others[:, keep], dt[keep]),
            "deprioritised_after_first": float(np.sum(dt[after] * lost[after]) / np.sum(dt[after])) if after.any() else float("nan"),
            "video_loss": fl["video"]["loss_ratio"],
            "model_p_T": sa.p_deprioritised(duration - t_start, lam_mbps * 1e6, n),
            "model_T_bar_s": sa.mean_prioritised_time(lam_mbps * 1e6, n),
            "duration_s": duration,
        })
    rows.sort(key=lambda r: (r["n"], r["peak_rate_mbps"], r["rep"]))
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


def _est_str(e: Estimate, scale: float = 1.0, unit: str = "", digits: int = 3) -> str:
    """``mean ± half-width`` (``mean`` alone with one repetition)."""
    if math.isnan(e.mean):
        return "nan"
    m = f"{e.mean * scale:.{digits}g}"
    if e.n < 2 or math.isnan(e.half_width):
        return f"{m}{unit}"
    return f"{m} ± {e.half_width * scale:.2g}{unit}"


def _cell(r: dict[str, Any], m: str, pct: bool = False) -> str:
    e = Estimate(r[m], r[f"{m}_ci"], r["reps"])
    return _est_str(e, 100, " %") if pct else _est_str(e, digits=3)


def _fig_lines(path: Path, rows, key: str, ylabel: str, title: str, *, logy: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    scale = 100 if key == "loss" else 1
    for ax, stream in zip(axes, ("audio", "video")):
        for q in DISCIPLINES:
            rs = [r for r in rows if r["discipline"] == q]
            if not rs:
                continue
            m = f"{stream}_{key}"
            y = np.array([r[m] * scale for r in rs])
            err = np.nan_to_num(np.array([r[f"{m}_ci"] * scale for r in rs]))
            if logy:
                y = np.maximum(y, 1e-3)
                err = np.minimum(err, y - 1e-3 * 0.999)  # the bar stays on the log axis
            ax.errorbar([r["n"] for r in rs], y, yerr=err, marker="o", ms=3, capsize=2, label=LABEL[q])
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
        y = np.maximum([100 * r["video_loss"] for r in rs], 1e-3)
        err = np.minimum(np.nan_to_num([100 * r["video_loss_ci"] for r in rs]), y - 1e-3 * 0.999)
        ax.errorbar([r["delta_ms"] for r in rs], y, yerr=err, marker="o", capsize=2, label=f"access {rate}")
    ax.axvline(5, ls=":", color="0.5", label="paper: threshold ~5 ms on 10 Mbit/s")
    ax.set_yscale("log")
    ax.set_xlabel("source jitter std δ (ms)")
    ax.set_ylabel("video loss (%)  [0 plotted at 1e-3]")
    ax.set_title(f"Fig. 8 (ours): SQF, n = {JITTER_N}, MPEG-2 video, {MODES['es'][0]}; 95 % intervals", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _table1_md(rows, title: str) -> list[str]:
    out = [f"### {title}", "", "Data bandwidth share (Mbit/s, mean ± 95 % half-width) / Jain's index. *Paper* rows are "
           "BMO11 Table I.", ""]
    ns = [n for n in TABLE1_N if any(r["n"] == n for r in rows)] or sorted({r["n"] for r in rows})
    out.append("| scheduler | " + " | ".join(f"n = {n}" for n in ns) + " |")
    out.append("|---" * (len(ns) + 1) + "|")
    for q in DISCIPLINES:
        rs = {r["n"]: r for r in rows if r["discipline"] == q}
        if not rs:
            continue
        if q in PAPER_TABLE1:
            paper = dict(zip(TABLE1_N, PAPER_TABLE1[q]))
            out.append(f"| {LABEL[q]} (paper) | " + " | ".join(f"{paper[n][0]:.1f}/{paper[n][1]:.2f}" if n in paper else "–"
                                                              for n in ns) + " |")
        cells = [f"{_cell(rs[n], 'data_share_mbps')}/{rs[n]['jain']:.2f}" if n in rs else "–" for n in ns]
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

    return ([f"### {title}", "", "Loss rate audio / video (mean ± 95 % half-width over the repetitions).", ""]
            + table(lambda r: f"{_cell(r, 'audio_loss', True)} / {_cell(r, 'video_loss', True)}")
            + ["", "Jitter (mean |IPDV|, RFC 3393, ms) audio / video.", ""]
            + table(lambda r: f"{_cell(r, 'audio_jitter_ms')} / {_cell(r, 'video_jitter_ms')}") + [""])


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


# --------------------------------------------------------------------------------------------
# Findings and the generated reading
# --------------------------------------------------------------------------------------------

#: Why each finding has its label, or what its verdict rests on: typed prose, never a number
#: (the numbers come from the tables; ``tests/reproduce/test_sqf.py`` checks there is none).
WHY = {
    "sqf_video": "SQF serves the video first only while it has fewer bytes queued than every active download; "
                 "a frame's burst can end that, and losing priority tends to last (see the model check).",
    "sqf_audio": "The audio sends one small packet per frame and rarely has two queued, so it stays the shortest queue.",
    "fifo_audio": "A shared FIFO drops whatever arrives at a full buffer; more downloads keep it full more often.",
    "fifo_video": "As for the audio; the video's larger share of the arrivals makes TCP back off against it.",
    "fq_audio": "By construction: the audio's rate is far below its fair share, which DRR with longest-queue drop guarantees.",
    "fq_video": "By construction: the video's mean rate is above its fair share as soon as there are two or more "
                "downloads, and DRR never gives a flow more than its share when all are backlogged.",
    "fq_jitter_audio": "Round-robin: a packet waits for one quantum of every backlogged flow, and there are more of them.",
    "fq_jitter_video": "As for the audio, and the video's own backlog adds to it.",
    "sqf_jitter_audio": "Served first, the audio waits at most for the packet in service instead of the FIFO's backlog.",
    "sqf_jitter_video": "The video is served first while it keeps priority; once it loses it, it waits behind the downloads.",
    "fifo_share": "The downloads take the capacity the FIFO's losses take from the video.",
    "fq_share": "By construction: DRR gives each download its share, so their sum grows with their number.",
    "sqf_share": "If SQF protects the video the downloads get the rest of the line whatever their number; if it does "
                 "not, the video's losses hand its capacity to them.",
    "fig8_zero": "The jitter figure's premise: without added jitter SQF keeps the frame-spread video first against the downloads.",
    "fig8_delta": "Gaussian delays at the source release packets in bursts, which fill the video's queue past the downloads'.",
    "fig8_fast": "On a faster line a burst drains sooner, so it takes more jitter to build the same backlog.",
}


def _worst(rows, q: str, m: str) -> dict[str, Any] | None:
    rs = [r for r in rows if r["discipline"] == q]
    return max(rs, key=lambda r: r[m]) if rs else None


def _est_of(r: dict[str, Any] | None, m: str) -> Estimate | None:
    return None if r is None else Estimate(r[m], r[f"{m}_ci"], r["reps"])


def findings(mode: str, reps: list[dict[str, Any]], agg: list[dict[str, Any]], jit_reps: list[dict[str, Any]],
             jit_agg: list[dict[str, Any]]) -> list[Finding]:
    """The claims of Sec. V for one sender mode, judged from the measured tables. Differences
    between two cells of the same repetition are paired (they share seed, offsets and start
    times). Fig. 8 runs on the ES sender only."""
    rows = [r for r in agg if r["mode"] == mode]
    rr = [r for r in reps if r["mode"] == mode]
    ns = sorted({r["n"] for r in rows})
    lo, hi = ns[0], ns[-1]
    second = next((n for n in ns if n > 1), hi)
    F: list[Finding] = []

    def paired(q: str, m: str, n_a: int, n_b: int, q_b: str | None = None) -> Estimate | None:
        a = _series(rr, value=m, discipline=q, n=n_a)
        b = _series(rr, value=m, discipline=q_b or q, n=n_b)
        common = sorted(set(a) & set(b))
        return paired_ci([a[k] for k in common], [b[k] for k in common]) if common else None

    def add(key, claim, label, verdict, statistic, est):
        F.append(Finding(key, claim, label, verdict, statistic, est, WHY[key]))

    for stream in ("video", "audio"):
        w = _worst(rows, "sqf", f"{stream}_loss")
        e = _est_of(w, f"{stream}_loss")
        add(f"sqf_{stream}", f"Fig. 6, SQF: {stream} loss negligible for every n", Label.SUBSTANTIVE, judge_below(e, NEGLIGIBLE),
            f"SQF {stream} loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", e)
    for stream in ("audio", "video"):
        e = paired("fifo", f"{stream}_loss", hi, lo)
        add(f"fifo_{stream}", f"Fig. 6, FIFO: {stream} loss grows with n", Label.SUBSTANTIVE, judge_positive(e),
            f"FIFO {stream} loss, n = {hi} minus n = {lo}, paired", e)
    w = _worst(rows, "drr", "audio_loss")
    e = _est_of(w, "audio_loss")
    add("fq_audio", "Fig. 6, FQ: audio loss low", Label.BY_CONSTRUCTION, judge_below(e, NEGLIGIBLE),
        f"FQ audio loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", e)
    r2 = next((r for r in rows if r["discipline"] == "drr" and r["n"] == second), None)
    e = _est_of(r2, "video_loss")
    add("fq_video", "Fig. 6, FQ: video loss high as soon as n > 1", Label.BY_CONSTRUCTION, judge_positive(e, threshold=0.01),
        f"FQ video loss at n = {second}, against 1 %", e)
    for stream in ("audio", "video"):
        e = paired("drr", f"{stream}_jitter_ms", hi, lo)
        add(f"fq_jitter_{stream}", f"Fig. 7, FQ: {stream} jitter increases with n", Label.SUBSTANTIVE, judge_positive(e),
            f"FQ {stream} jitter (ms), n = {hi} minus n = {lo}, paired", e)
    for stream in ("audio", "video"):
        e = paired("fifo", f"{stream}_jitter_ms", hi, hi, q_b="sqf")
        add(f"sqf_jitter_{stream}", f"Fig. 7, SQF: beneficial for the {stream} jitter (against FIFO)", Label.SUBSTANTIVE,
            judge_positive(e), f"{stream} jitter (ms), FIFO minus SQF at n = {hi}, paired", e)
    e = paired("fifo", "data_share_mbps", hi, lo)
    add("fifo_share", "Table I, FIFO: data share grows with n", Label.SUBSTANTIVE, judge_positive(e),
        f"FIFO data share (Mbit/s), n = {hi} minus n = {lo}, paired", e)
    e = paired("drr", "data_share_mbps", hi, lo)
    add("fq_share", "Table I, FQ: data share grows with n", Label.BY_CONSTRUCTION, judge_positive(e),
        f"FQ data share (Mbit/s), n = {hi} minus n = {lo}, paired", e)
    e = paired("sqf", "data_share_mbps", hi, lo)
    add("sqf_share", "Table I, SQF: data share constant in n", Label.SUBSTANTIVE, judge_within(e, SHARE_TOLERANCE_MBPS),
        f"SQF data share (Mbit/s), n = {hi} minus n = {lo}, paired, within ±{SHARE_TOLERANCE_MBPS:g} Mbit/s", e)
    if mode == "es" and jit_agg:
        slow = min({r["access_rate"] for r in jit_agg}, key=lambda s: float(s.removesuffix("Mbps")))
        fast = max({r["access_rate"] for r in jit_agg}, key=lambda s: float(s.removesuffix("Mbps")))
        deltas = sorted({r["delta_ms"] for r in jit_agg})
        d5 = next((x for x in deltas if x >= 5), deltas[-1])
        z = next((r for r in jit_agg if r["access_rate"] == slow and r["delta_ms"] == 0), None)
        e = _est_of(z, "video_loss")
        add("fig8_zero", f"Fig. 8: at δ = 0 SQF protects the video (n = {JITTER_N}, {slow})", Label.SUBSTANTIVE,
            judge_below(e, NEGLIGIBLE), f"video loss at δ = 0, {slow}, against {NEGLIGIBLE:.1%}", e)

        def jpair(rate_a, da, rate_b, db):
            a = _series(jit_reps, value="video_loss", access_rate=rate_a, delta_ms=da)
            b = _series(jit_reps, value="video_loss", access_rate=rate_b, delta_ms=db)
            common = sorted(set(a) & set(b))
            return paired_ci([a[k] for k in common], [b[k] for k in common]) if common else None

        e = jpair(slow, d5, slow, 0.0)
        add("fig8_delta", f"Fig. 8: δ = {d5:g} ms de-prioritises the video on {slow}", Label.SUBSTANTIVE,
            judge_positive(e, threshold=NEGLIGIBLE), f"video loss at δ = {d5:g} ms minus δ = 0, {slow}, paired, against "
            f"{NEGLIGIBLE:.1%}", e)
        if fast != slow:
            e = jpair(slow, d5, fast, d5)
            add("fig8_fast", f"Fig. 8: the threshold is larger on {fast}", Label.SUBSTANTIVE, judge_positive(e),
                f"video loss at δ = {d5:g} ms, {slow} minus {fast}, paired", e)
    return F


#: "Constant" data share (Table I, SQF): the change from the smallest to the largest n within
#: this many Mbit/s (the paper's SQF column does not vary in its one printed decimal).
SHARE_TOLERANCE_MBPS = 0.5


def _finding_line(f: Finding) -> str:
    scale, unit = (100, " pp") if "loss" in f.statistic else (1, "")
    if "loss" in f.statistic and "minus" not in f.statistic:
        unit = " %"
    if f.estimate is None:
        est = "no data"
    else:
        e = f.estimate
        est = _est_str(e, scale, unit)
        if e.n >= 2 and not math.isnan(e.half_width):
            est += f" (95 % interval {e.low * scale:.3g} to {e.high * scale:.3g}{unit}, {e.n} repetitions)"
    return f"- **{f.claim}** — *{f.verdict.value}* ({f.label.value}). {f.statistic}: {est}. {f.why}"


def _reading_md(p: Plan, all_findings: dict[str, list[Finding]], alone: list[dict[str, Any]],
                model: list[dict[str, Any]]) -> list[str]:
    """The reading, generated from the tables of this report (numbers included)."""
    from qoelab.experiment import summary_count

    L = ["## Reading (generated from the tables above)", ""]
    L += ["### Premise: the video alone on the line (FIFO, no download)", ""]
    for r in alone:
        L.append(f"- {MODES[r['mode']][0]}: video loss {_cell(r, 'video_loss', True)}, audio loss "
                 f"{_cell(r, 'audio_loss', True)} over {r['reps']} repetitions (largest single run: "
                 f"{_pct(r['video_loss_max'])}).")
    L.append("")
    for mode, F in all_findings.items():
        held, decided = summary_count(F)
        L += [f"### The paper's claims, {MODES[mode][0]}", "",
              f"Substantive claims that hold: {held} of {decided} decided "
              f"(by-construction and trivial ones are listed but not counted).", ""]
        L += [_finding_line(f) for f in F] + [""]
    if model:
        L += ["### Model check (Sec. IV) under the Linux TCP profile", ""]
        for r in model:
            L.append(
                f"- n = {r['n']}, λ = {r['peak_rate_mbps']:g} Mbit/s: SQF's test (an active download with no more bytes "
                f"than the video) first true at {_s(r['first_lost_priority_s'])}, eq. (1)'s x ≥ B/(n+1) first at "
                f"{_s(r['first_x_ge_b_s'])}; share of the time de-prioritised {_cell(r, 'deprioritised_time_fraction', True)}, "
                f"of the time after the first loss of priority {_cell(r, 'deprioritised_after_first', True)}; video loss "
                f"{_cell(r, 'video_loss', True)}; model p(T) {r['model_p_T']:.3g}, mean time of prioritisation "
                f"{_s(r['model_T_bar_s'])} (means over {r['reps']} repetitions; a first time is averaged over the "
                f"repetitions in which it happened).")
        L += ["", MODEL_CHECK_WHY, ""]
    return L


def _s(x: float) -> str:
    if x is None or math.isnan(x):
        return "never in the run"
    return f"{x:.3g} s"


#: What the model-check table measures (typed, no numbers: they are in the table above it).
MODEL_CHECK_WHY = (
    "What the columns mean. The model's p(T) is the probability that the video's backlog reaches "
    "B/(n+1) at least once before T, with every download holding an equal share of a full buffer; it "
    "says nothing about what happens afterwards. The share of the time de-prioritised (the column the "
    "earlier report set beside p(T)) counts every sample where some active download has no more bytes "
    "queued than the video, so it is mostly time *after* the first loss of priority, and that state is "
    "absorbing here: once the video is the longest queue, longest-queue drop takes the video's packets "
    "and none of the downloads', the downloads never back off, and SQF never serves the video again "
    "(the column 'after the first loss of priority' is the share of that remaining time). The two are "
    "different quantities: p(T) is to be compared with whether, and when, priority is first lost. That "
    "first loss comes much earlier than the model's mean time wherever a download's own backlog falls "
    "to the video's (SQF's test turns true before eq. (1)'s x ≥ B/(n+1) does): the model's premise that "
    "the downloads hold equal shares of a full buffer does not hold for ACK-clocked TCP, whose backlogs "
    "swing between one packet and many."
)


def run(out: Path, *, quick: bool = False, jobs: int = 1, log=print,
        progress: Callable[[int, int], None] | None = None, executor: Any = None) -> dict[str, Any]:
    """Runs (or resumes) every grid and writes the report folder ``out``. Returns a summary.
    ``progress(done, total)`` is called as runs finish (total over the whole reproduction)."""
    p = plan(quick)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"qoelab reproduce sqf{' --quick' if quick else ''}: writing {out} ({p.reps} repetitions)")
    builders = []
    for r in range(p.reps):
        d = draws(r)
        builders += [(f"testbed/rep{r}", *_testbed(p, d)), (f"alone/rep{r}", *_alone(p, d)), (f"jitter/rep{r}", *_jitter(p, d))]
        sc, axes = _model(p)
        sc.set("sim.seed", d.seed)
        builders.append((f"model/rep{r}", sc, axes))
    builders += [("sensitivity", *_sensitivity(p)), ("sens_alone", *_sens_alone(p))]
    counter = _Counter(sum(math.prod(len(v) for _, v in axes) for _, _, axes in builders), progress)
    for name, sc, axes in builders:
        _sweep(name, sc, axes, out, jobs, log, counter, executor)
    t_sim = time.time() - t0
    if getattr(executor, "shard", None):  # one task of a job array: the report comes after all
        return {"shard": executor.shard}

    tb_reps = testbed_rep_rows(out, "testbed")
    tb = aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    al_reps = testbed_rep_rows(out, "alone")
    al = aggregate(al_reps, ("mode",), ("video_loss", "audio_loss", "video_mbps"))
    for r in al:
        r["video_loss_max"] = max(x["video_loss"] for x in al_reps if x["mode"] == r["mode"])
    jit_reps = jitter_rep_rows(out)
    jit = aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    model_reps = model_rep_rows(out)
    model = aggregate(model_reps, ("n", "peak_rate_mbps"),
                      ("first_x_ge_b_s", "first_lost_priority_s", "deprioritised_time_fraction", "deprioritised_after_first",
                       "video_loss", "model_p_T", "model_T_bar_s"))
    sens = sensitivity_rows(out)
    ana = _analytic(out, quick)
    _write_csv(out / "testbed.csv", tb)
    _write_csv(out / "testbed_reps.csv", tb_reps)
    _write_csv(out / "premise_alone.csv", al)
    _write_csv(out / "fig8_jitter.csv", jit)
    _write_csv(out / "fig8_jitter_reps.csv", jit_reps)
    _write_csv(out / "model_check.csv", model)
    _write_csv(out / "model_check_reps.csv", model_reps)
    _write_csv(out / "sensitivity.csv", sens)
    paper = [
        {"scheduler": q, "n": n, "paper_data_share_mbps": s, "paper_jain": j}
        for q, vals in PAPER_TABLE1.items()
        for n, (s, j) in zip(TABLE1_N, vals)
    ]
    _write_csv(out / "paper_table1.csv", paper)
    for mode, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == mode]
        _fig_lines(out / f"fig6_loss_{mode}.png", rows, "loss", "loss rate (%)  [0 plotted at 1e-3]",
                   f"Fig. 6 (ours, {label}): loss vs n, 95 % intervals", logy=True)
        _fig_lines(out / f"fig7_jitter_{mode}.png", rows, "jitter_ms", "mean |IPDV| (ms)", f"Fig. 7 (ours, {label}): jitter vs n")
    _fig8(out / "fig8_jitter.png", jit)
    all_findings = {m: findings(m, tb_reps, tb, jit_reps, jit) for m in MODES}
    _write_csv(out / "findings.csv", [
        {"mode": m, "key": f.key, "claim": f.claim, "label": f.label.value, "verdict": f.verdict.value,
         "statistic": f.statistic, "mean": f.estimate.mean if f.estimate else float("nan"),
         "half_width": f.estimate.half_width if f.estimate else float("nan"), "reps": f.estimate.n if f.estimate else 0}
        for m, F in all_findings.items() for f in F])

    md = [
        "# SQF reproduction (BMO11, ICC 2011)",
        "",
        f"Mode: {'quick' if quick else 'full'}; {p.reps} repetitions per cell (seeded random clip offsets and start times); "
        f"testbed runs of {p.duration} simulated time; n = {', '.join(map(str, p.n_values))}; buffer {BUFFER} on the 10 Mbit/s "
        f"access line. Video: the MPEG-2 trace `sqf_mpeg2_5M` with its Layer II audio; downloads: TCP CUBIC, Linux profile. "
        f"Sender modes: {'; '.join(f'`{m}` = {l}' for m, (l, _) in MODES.items())}. Simulation wall time of this invocation: "
        f"{t_sim:.0f} s (runs already done by an earlier invocation are reused, not re-timed).",
        "",
        "Files: `testbed.csv` (means and 95 % half-widths, `_ci`), `testbed_reps.csv`, `premise_alone.csv`, `fig8_jitter.csv`, "
        "`fig8_jitter_reps.csv`, `model_check.csv`, `model_check_reps.csv`, `sensitivity.csv`, `findings.csv`, "
        "`paper_table1.csv`, `fig3_analytic.csv`, `fig4_analytic.csv` and the PNG figures; raw runs under `runs/`.",
        "",
        "## What the paper reports (typed from its text; not measured here)",
        "",
    ]
    md += [f"- **{k}**: {v}" for k, v in PAPER_STATEMENTS]
    md += ["", "## Our measurements", ""]
    md += ["### Premise: the video alone (FIFO, no downloads)", "", "| sender | video loss | audio loss | video Mbit/s |",
           "|---|---|---|---|"]
    md += [f"| {MODES[r['mode']][0]} | {_cell(r, 'video_loss', True)} | {_cell(r, 'audio_loss', True)} | {_cell(r, 'video_mbps')} |"
           for r in al]
    md += [""]
    for mode, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == mode]
        md += _loss_md(rows, f"Fig. 6/7, {label}")
        md += _table1_md(rows, f"Table I, {label}")
    md += [f"### Fig. 8 (SQF, n = {JITTER_N}, {MODES['es'][0]}: video loss vs source jitter δ)", "",
           "| access | " + " | ".join(f"δ = {x:g} ms" for x in p.jitter_ms) + " |", "|---" * (len(p.jitter_ms) + 1) + "|"]
    for rate in p.jitter_rates:
        rs = {r["delta_ms"]: r for r in jit if r["access_rate"] == rate}
        md.append(f"| {rate} | " + " | ".join(_cell(rs[float(x)], "video_loss", True) if float(x) in rs else "–"
                                           for x in p.jitter_ms) + " |")
    md += ["", "### Model vs simulator (Sec. IV; Linux TCP profile)", "",
           "| n | λ (Mbit/s) | SQF test first true (s) | x ≥ B/(n+1) first (s) | time de-prioritised | after the first loss | "
           "video loss | model p(T) | model T̄ (s) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in model:
        md.append(f"| {r['n']} | {r['peak_rate_mbps']:g} | {_cell(r, 'first_lost_priority_s')} | {_cell(r, 'first_x_ge_b_s')} | "
                  f"{_cell(r, 'deprioritised_time_fraction', True)} | {_cell(r, 'deprioritised_after_first', True)} | "
                  f"{_cell(r, 'video_loss', True)} | {r['model_p_T']:.3g} | {r['model_T_bar_s']:.3g} |")
    md += ["", "(nan: the event did not happen in any repetition's run.)", ""]
    md += _sensitivity_md(sens, p.sens_n)
    md += ["### Analytical model (Fig. 3/4 recomputed from eq. (2))", "", "`fig3_analytic.png`, `fig4_analytic.png`.", ""]
    md += [f"- {k}: {v:.4g}" for k, v in ana.items()]
    md += [""]
    reading = _reading_md(p, all_findings, al, model)
    md += reading
    (out / "report.md").write_text("\n".join(md) + "\n")
    _report_json(out, p, tb, all_findings, "\n".join(reading[2:]) + "\n")
    summary = {"quick": quick, "reps": p.reps, "wall_s": time.time() - t0, "analytic": ana,
               "findings": {m: {"holds": summary_count_of(F)[0], "decided": summary_count_of(F)[1]} for m, F in all_findings.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    log(f"report: {out / 'report.md'} ({time.time() - t0:.0f} s)")
    return summary


def _report_json(out: Path, p: Plan, tb: list[dict[str, Any]], all_findings: dict[str, list[Finding]],
                 reading: str) -> None:
    """``report.json`` (``docs/report-format.md``) through the experiment layer's tables: Table I
    per sender mode (ours beside the paper's), the Fig. 6 losses, the figures, the findings of
    both modes and the generated reading. An adapter over this module's own aggregates: the
    report's numbers are those of ``testbed.csv`` and ``findings.csv``."""
    from qoelab.experiment.core import cost
    from qoelab.experiment.tables import Column, PaperValues, Table, finding_json, report

    share = PaperValues("paper Table I", ("discipline", "n"),
                        {(q, n): v[0] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})
    jain = PaperValues("paper Table I", ("discipline", "n"),
                       {(q, n): v[1] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})
    tables = []
    for mode, (label, _) in MODES.items():
        rows = [{"scheduler": LABEL[r["discipline"]], "discipline": r["discipline"], "n": r["n"],
                 **{m: _est_of(r, m) for m in METRICS}} for r in tb if r["mode"] == mode]
        rows = jain.join(share.join(rows, "paper_share"), "paper_jain")
        tables.append(Table(f"table1-{mode}", f"Table I, {label}", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("data_share_mbps", "data share", "Mbit/s", "ours"), share.column("paper_share", "data share", "Mbit/s"),
            Column("jain", "Jain's index", "", "ours"), jain.column("paper_jain", "Jain's index")],
            rows, source="paper Table I", csv="testbed.csv"))
        tables.append(Table(f"fig6-{mode}", f"Fig. 6/7, {label}: loss and jitter", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("video_loss", "video loss", "%", "ours", 100.0), Column("audio_loss", "audio loss", "%", "ours", 100.0),
            Column("video_jitter_ms", "video jitter", "ms", "ours"), Column("audio_jitter_ms", "audio jitter", "ms", "ours")],
            rows, source="paper Fig. 6, Fig. 7", csv="testbed.csv"))
    figures = [{"id": f"fig6-{m}", "title": f"Fig. 6 (ours, {lab}): loss vs n", "path": f"fig6_loss_{m}.png",
                "source": "paper Fig. 6"} for m, (lab, _) in MODES.items()]
    figures += [{"id": f"fig7-{m}", "title": f"Fig. 7 (ours, {lab}): jitter vs n", "path": f"fig7_jitter_{m}.png",
                 "source": "paper Fig. 7"} for m, (lab, _) in MODES.items()]
    figures += [{"id": "fig8", "title": "Fig. 8 (ours): video loss vs source jitter", "path": "fig8_jitter.png",
                 "source": "paper Fig. 8"}]
    found = [finding_json(f, group=m, source="paper Sec. V") for m, F in all_findings.items() for f in F]
    # Each grid is a sweep folder (``runs/<grid>[/rep<r>]``) holding its runs under ``runs/``.
    sweeps = sorted({t.parent.parent.parent for t in (out / "runs").rglob("timing.json")})
    costs = [cost(d) for d in sweeps]
    c = {k: round(sum(x[k] for x in costs), 3) for k in ("sim_wall_s", "cpu_s")}
    c["runs"] = sum(x["runs"] for x in costs)
    report(out, paper="sqf", mode="quick" if p.quick else "full", title="SQF reproduction (BMO11, ICC 2011)",
           tables=tables, figures=figures, findings=found, reading=reading, cost=c,
           setup=f"{p.reps} repetitions per cell; testbed runs of {p.duration}; n = {', '.join(map(str, p.n_values))}; "
                 f"buffer {BUFFER}; Linux TCP CUBIC.")


def summary_count_of(F: list[Finding]) -> tuple[int, int]:
    from qoelab.experiment import summary_count

    return summary_count(F)


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
        from rich.console import Console

        from qoelab.executors import open_from_args, shard_note
        from qoelab.progress import progress

        with open_from_args(a) as ex, progress(Console(stderr=True), "sqf reproduction") as update:
            r = run(out, quick=a.quick, jobs=resolve_jobs(a.jobs), progress=update, executor=ex)
        if "shard" in r:
            print(shard_note(r["shard"]))
        return 0

    s.set_defaults(func=cmd)
    return rep
