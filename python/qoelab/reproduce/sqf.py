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

Every cell runs :attr:`Plan.reps` times. Repetition ``r`` has its own random clip offsets and
start times (:func:`draws`, seeded by ``r`` alone), the same for every cell of that repetition,
and every cell of a repetition runs with the same seed (the layer's, :func:`qoelab.experiment.core.seed_of`:
every parameter of these grids is a treatment), so cells are compared paired. The downloads'
TCP is Linux's (``profile = "linux"``), set explicitly in every builder.

What runs: each grid is an :class:`~qoelab.experiment.core.Experiment` (:func:`experiments`),
its cells a builder from parameters (and the repetition) to a scenario and its metrics a
function of the finished run; :func:`qoelab.experiment.core.run_many` runs them all (one sweep
folder per grid and repetition under ``runs/``, so an interrupted reproduction resumes where it
stopped):

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

The paper's values (:data:`PAPER_SHARE`, :data:`PAPER_JAIN`, from ``PAPER_TABLE1``) are typed
from Table I once, as :class:`~qoelab.experiment.tables.PaperValues`, and always labelled as the
paper's. Statistics, tables, figures and ``report.json`` come from :mod:`qoelab.experiment`.
The reading is generated: each claim of Sec. V is a :class:`~qoelab.experiment.Finding` judged
from the measured tables of the same report, and every number the reading quotes comes from them.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq

from qoelab import paths
from qoelab.experiment import (Choice, Estimate, Finding, Label, Premise, Verdict, above, below, summary_count,
                               summary_line, within)
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.choices import choices_md, defaults
from qoelab.experiment.core import Experiment
from qoelab.experiment.tables import (Column, Figure, PaperValues, Table, cell_md, finding_json, findings_md, pivot,
                                      provenance_md, report)
from qoelab.scenario import Scenario

__all__ = ["CHOICES", "Plan", "plan", "run", "register", "draws", "experiments", "findings", "PAPER_TABLE1", "MODES"]

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


# --- What the paper leaves open, and what we chose ----------------------------------------------
CHOICES = (
    Choice("tie_order", "video_last", ("video_first",),
           "SQF and LQD break ties between equal queues by flow key, and the testbed file declares the web server "
           "before the video server, so the video loses every tie: declared, not neutral (issue 36)",
           {"neutral": "a tie rule that favours no flow by its key is not implemented yet (issue 36)"}),
    Choice("delayed_ack", True, (False,), "the testbed's Linux receivers delay ACKs (with quick-ACK mode), as the "
                                          "kernel does by default"),
    Choice("nic_ring", "none", (), "the qdisc hands packets straight to the line",
           {"ring": "a NIC transmit ring below the discipline, as 2011 drivers had, is not modelled yet (issue 36)"}),
    Choice("router_gro", False, (), "the router receives MTU-sized TCP segments",
           {True: "GRO on the router's receive side is not modelled yet (issue 36)"}),
)

PAPER_SHARE = PaperValues("paper Table I", ("discipline", "n"),
                          {(q, n): v[0] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})
PAPER_JAIN = PaperValues("paper Table I", ("discipline", "n"),
                         {(q, n): v[1] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})


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
# Cells: the builders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draws:
    """One repetition's random choices (see :func:`draws`)."""

    video_offset_s: float
    audio_offset_s: float
    video_start_s: float
    data_start_s: float


def draws(rep: int) -> Draws:
    """Repetition ``rep``'s clip offsets (video and audio independently, uniform over the trace)
    and start times (video with its audio, and the first download, uniform in
    [0, START_SPREAD_S)), from a generator seeded by ``rep`` alone: deterministic, and the same
    for every cell of the repetition. Values are rounded to the millisecond, as written into
    the scenario. (The simulator's seed is the layer's, shared by the repetition's cells.)"""
    rng = np.random.default_rng([0x5CF, rep])
    v, a = rng.uniform(0, TRACE_S, 2)
    vs, ds = rng.uniform(0, START_SPREAD_S, 2)
    r3 = lambda x: round(float(x), 3)  # noqa: E731
    return Draws(video_offset_s=r3(v) % TRACE_S, audio_offset_s=r3(a) % TRACE_S, video_start_s=r3(vs),
                 data_start_s=r3(ds))


def video_app(mode: str, d: Draws) -> dict[str, Any]:
    return {"kind": "video", "trace": VIDEO_TRACE, "loop": True, "offset": f"{d.video_offset_s:g}s", **MODES[mode][1]}


def _base(d: Draws, duration: str, setting: dict[str, Any] | None = None) -> Scenario:
    """The testbed with repetition ``d``'s draws: MPEG-2 video and Layer II audio, Linux TCP,
    under ``setting`` (the choices: ``tie_order = "video_first"`` declares the video server's
    link first, which gives it the lower node id and address, so the lower flow key;
    ``delayed_ack``)."""
    s = setting or defaults(CHOICES)
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "testbed.toml")
    if s["tie_order"] == "video_first":
        links = sc.get("links")
        sc.set("links", [links[1], links[0], *links[2:]])
    sc.set("sim.duration", duration)
    sc.set("flows[0].app", video_app("es", d))
    sc.set("flows[0].start", f"{d.video_start_s:g}s")
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame",
                            "offset": f"{d.audio_offset_s:g}s"})
    sc.set("flows[1].start", f"{d.video_start_s:g}s")
    sc.set("flows[2].start", f"{d.data_start_s:g}s")
    sc.set("flows[2].transport", {**TCP, "delayed_ack": s["delayed_ack"]})
    return sc


def _testbed(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    def build(c: dict[str, Any], rep: int) -> Scenario:
        d = draws(rep)
        sc = _base(d, p.duration, setting)
        sc.set("flows[0].app", video_app(c["mode"], d))
        sc.set("links[2].queue_ab", _queue(c["discipline"]))
        sc.set("flows[2].count", c["n"])
        return sc

    return build


def _alone(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    """The premise (Fig. 8 at δ = 0, Fig. 6's baseline): the video and audio on the line with
    no download (the one download is scheduled after the end of the run), FIFO."""

    def build(c: dict[str, Any], rep: int) -> Scenario:
        d = draws(rep)
        sc = _base(d, p.duration, setting)
        sc.set("flows[0].app", video_app(c["mode"], d))
        sc.set("links[2].queue_ab", _queue("fifo"))
        sc.set("flows[2].count", 1)
        sc.set("flows[2].start", "100000s")
        return sc

    return build


def _jitter(p: Plan, setting: dict[str, Any]) -> Callable[[dict[str, Any], int], Scenario]:
    """Fig. 8 on Fig. 6's sender: the ES mode of the same MPEG-2 trace, no peak-rate limit."""

    def build(c: dict[str, Any], rep: int) -> Scenario:
        sc = _base(draws(rep), p.jitter_duration, setting)
        sc.set("links[2].queue_ab", _queue("sqf"))
        sc.set("flows[2].count", JITTER_N)
        sc.set("links[2].rate", c["access_rate"])
        sc.set("flows[0].app.source_jitter", f"{c['delta_ms']:g}ms")
        return sc

    return build


def _model(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    def build(c: dict[str, Any]) -> Scenario:
        sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "model-check.toml")
        sc.set("sim.duration", p.model_duration)
        sc.set("flows[1].transport", dict(TCP))
        # lambda counts 1250-byte packets; the Poisson app's rate is of 1222-byte payloads.
        sc.set("flows[0].app.rate", f"{c['peak_rate_mbps'] * 1222 / 1250:.6g}Mbps")
        sc.set("flows[1].count", c["n"])
        return sc

    return build


def _sens_base(p: Plan, c: dict[str, Any]) -> Scenario:
    """SQF only, repetition 0's draws. Every link carries up to 65 535-byte packets so that the
    GRO variant's TCP segments pass unfragmented; the MSS and the ACK policy are explicit in
    every variant, so only the listed factor changes between rows."""
    sc = _base(draws(0), p.duration)
    sc.set("flows[1].app", {"kind": "video", "trace": AUDIO_TRACE, "loop": True, "pacing": "frame"})
    for i in range(3):
        sc.set(f"links[{i}].mtu", 65535)
    sc.set("links[2].queue_ab", {"kind": "sqf", "limit": SENS_BUFFER})
    sc.set("flows[0].app", dict(SENS_SOURCES[c["video_source"]][1]))
    return sc


def _sensitivity(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    def build(c: dict[str, Any]) -> Scenario:
        sc = _sens_base(p, c)
        sc.set("flows[2].transport", dict(SENS_TCP[c["tcp"]][1]))
        sc.set("flows[2].count", c["n"])
        return sc

    return build


def _sens_alone(p: Plan) -> Callable[[dict[str, Any]], Scenario]:
    """The sensitivity grid's video sources with no download at all."""

    def build(c: dict[str, Any]) -> Scenario:
        sc = _sens_base(p, c)
        sc.set("flows[2].count", 1)
        sc.set("flows[2].start", "100000s")
        return sc

    return build


# --------------------------------------------------------------------------------------------
# Metrics: a finished run → one row
# --------------------------------------------------------------------------------------------


def _flows(d: Path) -> dict[str, dict[str, Any]]:
    t = pq.read_table(d / "flows.parquet").to_pylist()
    return {r["flow"]: r for r in t}


#: The per-repetition metrics of a testbed run, aggregated with 95 % intervals.
METRICS = ("video_loss", "audio_loss", "video_jitter_ms", "audio_jitter_ms", "video_mbps", "data_share_mbps", "jain")


def _testbed_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """Audio/video loss and jitter, the video's rate, the downloads' summed goodput and Jain's
    index (NaN with no download)."""
    fl = _flows(d)
    n = c.get("n", 0)
    return {
        "video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
        "video_jitter_ms": fl["video"]["ipdv_mean_abs_s"] * 1e3, "audio_jitter_ms": fl["audio"]["ipdv_mean_abs_s"] * 1e3,
        "video_mbps": fl["video"]["throughput_bps"] / 1e6,
        "data_share_mbps": sum(fl[f"data{i}"]["goodput_bps"] for i in range(n)) / 1e6,
        "jain": json.loads((d / "summary.json").read_text())["jain_index"] if n else float("nan"),
    }


def _loss_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    fl = _flows(d)
    n = c.get("n", 0)
    return {"video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"],
            "data_share_mbps": sum(fl[f"data{k}"]["goodput_bps"] for k in range(n)) / 1e6}


def _jitter_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    fl = _flows(d)
    return {"video_loss": fl["video"]["loss_ratio"], "audio_loss": fl["audio"]["loss_ratio"]}


def _first(t: np.ndarray, mask: np.ndarray) -> float:
    k = np.flatnonzero(mask)
    return float(t[k[0]]) if k.size else float("nan")


def _model_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """A model-check run: the model's event and the scheduler's, from SQF's per-flow backlog
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

    n = int(c["n"])
    lam_mbps = float(c["peak_rate_mbps"])
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
    for k, f in enumerate(labels):
        m = code == k
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
    return {
        "first_x_ge_b_s": _first(instants[keep], video[keep] >= b_bytes),
        "first_lost_priority_s": first_lost,
        "deprioritised_time_fraction": sa.deprioritised_fraction(video[keep], others[:, keep], dt[keep]),
        "deprioritised_after_first": float(np.sum(dt[after] * lost[after]) / np.sum(dt[after])) if after.any() else float("nan"),
        "video_loss": _flows(d)["video"]["loss_ratio"],
        "model_p_T": sa.p_deprioritised(duration - t_start, lam_mbps * 1e6, n),
        "model_T_bar_s": sa.mean_prioritised_time(lam_mbps * 1e6, n),
        "duration_s": duration,
    }


MODEL_METRICS = ("first_x_ge_b_s", "first_lost_priority_s", "deprioritised_time_fraction", "deprioritised_after_first",
                 "video_loss", "model_p_T", "model_T_bar_s")


def experiments(p: Plan, setting: dict[str, Any] | None = None, *, findings_only: bool = False) -> dict[str, Experiment]:
    """The grids of the reproduction under ``setting`` (the choices; default: their defaults),
    each an experiment of the layer (``findings_only``: the two the findings use, for the
    sensitivity's variants). Every parameter is a treatment (``paired``): all cells of a
    repetition share its seed (and its draws)."""
    s = setting or defaults(CHOICES)

    def exp(name: str, cells: list[dict[str, Any]], build, metrics, reps: int, per_rep: bool,
            cell_id: Callable[[dict[str, Any]], str] | None = None) -> Experiment:
        return Experiment(f"sqf-{name}", cells, build, metrics, paired=tuple(cells[0]), reps=reps, per_rep=per_rep,
                          cell_id=cell_id)

    E = {"testbed": exp("testbed", [{"mode": m, "discipline": q, "n": n} for m in MODES for q in p.disciplines
                                    for n in p.n_values], _testbed(p, s), _testbed_metrics, p.reps, True),
         "jitter": exp("jitter", [{"access_rate": r, "delta_ms": float(x)} for r in p.jitter_rates for x in p.jitter_ms],
                       _jitter(p, s), _jitter_metrics, p.reps, True)}
    if findings_only:
        return E
    sens_id = lambda c: f"src{c['video_source']}__tcp{c.get('tcp', 'none')}__n={c.get('n', 0)}"  # noqa: E731
    return {
        "testbed": E["testbed"],
        "alone": exp("alone", [{"mode": m} for m in MODES], _alone(p, s), _testbed_metrics, p.reps, True),
        "jitter": E["jitter"],
        "model": exp("model", [{"n": n, "peak_rate_mbps": r} for n in p.model_n for r in p.model_rates_mbps],
                     _model(p), _model_metrics, p.reps, False),
        "whatif": exp("whatif", [{"video_source": i, "tcp": j, "n": n} for i in range(len(SENS_SOURCES))
                                 for j in range(len(SENS_TCP)) for n in p.sens_n],
                      _sensitivity(p), _loss_metrics, 1, False, sens_id),
        "whatif_alone": exp("whatif_alone", [{"video_source": i} for i in range(len(SENS_SOURCES))], _sens_alone(p),
                            _loss_metrics, 1, False, sens_id),
    }


#: Why each finding has its label, or what its verdict rests on: typed prose, never a number
#: (the numbers come from the tables; ``tests/reproduce/test_sqf.py`` checks there is none).
WHY = {
    "sqf_video": "SQF serves the video first only while it has fewer bytes queued than every active download; "
                 "a frame's burst can end that, and losing priority tends to last (see the model check).",
    "sqf_audio": "By construction: the audio sends one small packet per frame, so its queue is always the shortest "
                 "(served first) and never the longest (never dropped by LQD) while a download is active.",
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


def _est(r: dict[str, Any] | None, m: str) -> Estimate | None:
    return None if r is None else r.get(m)


def _mean(r: dict[str, Any], m: str) -> float:
    e = r.get(m)
    return float("nan") if e is None else e.mean


def _worst(rows, q: str, m: str) -> dict[str, Any] | None:
    rs = [r for r in rows if r["discipline"] == q and r.get(m) is not None]
    return max(rs, key=lambda r: r[m].mean) if rs else None


def _rate(s: str) -> float:
    return float(s.removesuffix("Mbps"))


def findings(mode: str, reps: list[dict[str, Any]], agg: list[dict[str, Any]], jit_reps: list[dict[str, Any]],
             jit_agg: list[dict[str, Any]]) -> list[Finding]:
    """The claims of Sec. V for one sender mode (the findings' group), judged from the measured
    tables. Differences between two cells of the same repetition are paired
    (:func:`qoelab.experiment.core.paired`: they share seed, offsets and start times); where the
    paper gives a size (Table I, Fig. 6 from n = 1 to 20) the rule carries it. Fig. 8 runs on
    the ES sender only; its δ claims rest on its δ = 0 premise."""
    rows = [r for r in agg if r["mode"] == mode]
    rr = [r for r in reps if r["mode"] == mode]
    ns = sorted({r["n"] for r in rows})
    lo, hi = ns[0], ns[-1]
    second = next((n for n in ns if n > 1), hi)
    paper_range = (lo, hi) == (TABLE1_N[0], TABLE1_N[-1])
    F: list[Finding] = []

    def over_n(q: str, m: str) -> Estimate | None:
        return core.paired(rr, "n", hi, lo, m, by=("discipline",)).get((q,))

    def add(key, claim, label, rule, statistic, est, premises=()):
        sc, unit = _finding_unit(statistic)
        F.append(Finding(key, claim, label, rule, statistic, est, WHY[key], premises, group=mode, scale=sc, unit=unit))

    def share_size(q: str) -> float | None:
        return PAPER_SHARE.values[(q, hi)] - PAPER_SHARE.values[(q, lo)] if paper_range else None

    for stream, label in (("video", Label.SUBSTANTIVE), ("audio", Label.BY_CONSTRUCTION)):
        w = _worst(rows, "sqf", f"{stream}_loss")
        add(f"sqf_{stream}", f"Fig. 6, SQF: {stream} loss negligible for every n", label, below(NEGLIGIBLE),
            f"SQF {stream} loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", _est(w, f"{stream}_loss"))
    for stream, size in (("audio", 0.24 if paper_range else None), ("video", None)):
        add(f"fifo_{stream}", f"Fig. 6, FIFO: {stream} loss grows with n", Label.SUBSTANTIVE, above(size=size),
            f"FIFO {stream} loss, n = {hi} minus n = {lo}, paired", over_n("fifo", f"{stream}_loss"))
    w = _worst(rows, "drr", "audio_loss")
    add("fq_audio", "Fig. 6, FQ: audio loss low", Label.BY_CONSTRUCTION, below(NEGLIGIBLE),
        f"FQ audio loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", _est(w, "audio_loss"))
    r2 = next((r for r in rows if r["discipline"] == "drr" and r["n"] == second), None)
    add("fq_video", "Fig. 6, FQ: video loss high as soon as n > 1", Label.BY_CONSTRUCTION, above(0.01),
        f"FQ video loss at n = {second}, against 1 %", _est(r2, "video_loss"))
    for stream in ("audio", "video"):
        add(f"fq_jitter_{stream}", f"Fig. 7, FQ: {stream} jitter increases with n", Label.SUBSTANTIVE, above(),
            f"FQ {stream} jitter (ms), n = {hi} minus n = {lo}, paired", over_n("drr", f"{stream}_jitter_ms"))
    delivered = {q: 1 - _mean(next((r for r in rows if r["discipline"] == q and r["n"] == hi), {}), "video_loss")
                 for q in ("fifo", "sqf")}
    for stream in ("audio", "video"):
        prem = () if stream == "audio" else (
            Premise(f"both disciplines deliver at least half the video's packets at n = {hi}, so its jitter is measured "
                    "on the video", min(delivered.values()) >= 0.5,
                    "delivered: " + ", ".join(f"{LABEL[q]} {100 * v:.3g} %" for q, v in delivered.items())),)
        add(f"sqf_jitter_{stream}", f"Fig. 7, SQF: beneficial for the {stream} jitter (against FIFO)", Label.SUBSTANTIVE,
            above(), f"{stream} jitter (ms), FIFO minus SQF at n = {hi}, paired",
            core.paired(rr, "discipline", "fifo", "sqf", f"{stream}_jitter_ms", by=("n",)).get((hi,)), prem)
    add("fifo_share", "Table I, FIFO: data share grows with n", Label.SUBSTANTIVE, above(size=share_size("fifo")),
        f"FIFO data share (Mbit/s), n = {hi} minus n = {lo}, paired", over_n("fifo", "data_share_mbps"))
    add("fq_share", "Table I, FQ: data share grows with n", Label.BY_CONSTRUCTION, above(size=share_size("drr")),
        f"FQ data share (Mbit/s), n = {hi} minus n = {lo}, paired", over_n("drr", "data_share_mbps"))
    add("sqf_share", "Table I, SQF: data share constant in n", Label.SUBSTANTIVE, within(SHARE_TOLERANCE_MBPS),
        f"SQF data share (Mbit/s), n = {hi} minus n = {lo}, paired, within ±{SHARE_TOLERANCE_MBPS:g} Mbit/s",
        over_n("sqf", "data_share_mbps"))
    if mode == "es" and jit_agg:
        slow = min({r["access_rate"] for r in jit_agg}, key=_rate)
        fast = max({r["access_rate"] for r in jit_agg}, key=_rate)
        deltas = sorted({r["delta_ms"] for r in jit_agg})
        d5 = next((x for x in deltas if x >= 5), deltas[-1])
        z = next((r for r in jit_agg if r["access_rate"] == slow and r["delta_ms"] == 0), None)
        add("fig8_zero", f"Fig. 8: at δ = 0 SQF protects the video (n = {JITTER_N}, {slow})", Label.SUBSTANTIVE,
            below(NEGLIGIBLE), f"video loss at δ = 0, {slow}, against {NEGLIGIBLE:.1%}", _est(z, "video_loss"))
        zero = F[-1]
        prem = (Premise("at δ = 0 SQF protects the video (the fig8_zero finding holds)", zero.verdict is Verdict.HOLDS,
                        f"fig8_zero: {zero.verdict.value}"),)
        add("fig8_delta", f"Fig. 8: δ = {d5:g} ms de-prioritises the video on {slow}", Label.SUBSTANTIVE,
            above(NEGLIGIBLE), f"video loss at δ = {d5:g} ms minus δ = 0, {slow}, paired, against {NEGLIGIBLE:.1%}",
            core.paired(jit_reps, "delta_ms", d5, 0.0, "video_loss", by=("access_rate",)).get((slow,)), prem)
        if fast != slow:
            add("fig8_fast", f"Fig. 8: the threshold is larger on {fast}", Label.SUBSTANTIVE, above(),
                f"video loss at δ = {d5:g} ms, {slow} minus {fast}, paired",
                core.paired(jit_reps, "access_rate", slow, fast, "video_loss", by=("delta_ms",)).get((d5,)), prem)
    return F


#: "Constant" data share (Table I, SQF): the change from the smallest to the largest n within
#: this many Mbit/s (the paper's SQF column does not vary in its one printed decimal).
SHARE_TOLERANCE_MBPS = 0.5

#: Columns of the per-repetition CSVs that are not floats.
_INT_COLUMNS = ("n", "rep", "seed")
_STR_COLUMNS = ("mode", "discipline", "access_rate", "output")


def _read_reps(path: Path) -> list[dict[str, Any]]:
    """A per-repetition CSV as written by :meth:`Table.write_csv` (floats by ``repr``, so they
    read back exactly)."""
    import csv

    def typed(k: str, v: str) -> Any:
        return v if k in _STR_COLUMNS else int(v) if k in _INT_COLUMNS else float(v)

    with path.open(newline="") as f:
        return [{k: typed(k, v) for k, v in r.items()} for r in csv.DictReader(f)]


def findings_from_folder(folder: Path) -> dict[str, list[Finding]]:
    """The findings of a report folder, recomputed from its per-repetition tables
    (``testbed_reps.csv``, ``fig8_jitter_reps.csv``) by the code that wrote them, so a committed
    folder whose runs are not kept can be checked against the findings it states."""
    tb_reps = _read_reps(folder / "testbed_reps.csv")
    jit_reps = _read_reps(folder / "fig8_jitter_reps.csv")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    return {m: findings(m, tb_reps, tb, jit_reps, jit) for m in MODES}


def _findings_csv(out: Path, all_findings: dict[str, list[Finding]]) -> None:
    Table.of_rows("findings", "findings", [
        {"mode": m, "key": f.key, "claim": f.claim, "label": f.label.value, "verdict": f.verdict.value,
         "statistic": f.statistic, "mean": f.estimate.mean if f.estimate else float("nan"),
         "half_width": f.estimate.half_width if f.estimate else float("nan"), "reps": f.n, "note": f.note,
         "quick": f.quick, "sensitivity": f.sensitivity_text()}
        for m, F in all_findings.items() for f in F]).write_csv(out, "findings.csv")


LEGACY_BANNER = ("> **Legacy, unrecorded provenance** (PROVENANCE.md): committed before results had to come from one "
                 "clean commit, its runs' code versions unrecorded and its runs not kept. Its tables are those of the "
                 "code that ran it; its findings and reading below are recomputed from its committed per-repetition "
                 "tables under today's rules (docs/experiments.md, Verdict rules).\n\n")


def refresh_legacy(folder: Path) -> None:
    """Marks a committed full folder of an earlier code (runs gone, code unrecorded) as legacy
    and recomputes its findings from its per-repetition tables under today's rules: its
    ``findings.csv``, the reading of its ``report.md`` and ``report.json`` (format 2, provenance
    ``legacy``), its ``PROVENANCE.md`` and the banner on its report."""
    from qoelab.experiment.report import load_report_any, write_report

    all_findings = findings_from_folder(folder)
    _findings_csv(folder, all_findings)
    alone = []
    for r in _read_reps(folder / "premise_alone.csv"):
        n = int(r["reps"])
        alone.append({"mode": r["mode"], "video_loss_max": r["video_loss_max"],
                      **{m: Estimate(r[m], r[f"{m}_ci"], n) for m in ("video_loss", "audio_loss", "video_mbps")}})
    model = core.aggregate(_read_reps(folder / "model_check_reps.csv"), ("n", "peak_rate_mbps"), MODEL_METRICS)
    reading = _reading_md(all_findings, alone, model)
    md = (folder / "report.md").read_text()
    md = md[:md.index("## Reading (generated from the tables above)")].removeprefix(LEGACY_BANNER)
    (folder / "report.md").write_text(LEGACY_BANNER + md + "\n".join(reading) + "\n")
    doc = load_report_any(folder / "report.json")
    doc.pop("format", None)
    doc.update(findings=[finding_json(f, source="paper Sec. V") for F in all_findings.values() for f in F],
               reading="\n".join(reading[2:]) + "\n", choices=[c.json() for c in CHOICES],
               provenance={**(doc.get("provenance") or {}), "status": "legacy", "runs_code": [],
                           "report_code": provenance.code_version()})
    write_report(folder, doc)
    provenance.legacy_note(folder, versions=None, what="The full SQF reproduction: 5 repetitions of 10 min, both VLC "
                           "send modes, under the Linux defaults of issue 16.",
                           recomputed="`findings.csv`, the reading of `report.md` and the findings of `report.json` are "
                                      "recomputed from the committed `testbed_reps.csv`, `fig8_jitter_reps.csv`, "
                                      "`model_check_reps.csv` and `premise_alone.csv` by "
                                      "`qoelab.reproduce.sqf.refresh_legacy`.")


def _finding_unit(statistic: str) -> tuple[float, str]:
    """A finding's scale and unit: losses in percent, their differences in percentage points,
    the rest in the statistic's own unit."""
    if "loss" in statistic:
        return 100.0, " pp" if "minus" in statistic else " %"
    return 1.0, ""


# --------------------------------------------------------------------------------------------
# Tables and figures
# --------------------------------------------------------------------------------------------

def _pct(e: Estimate | None) -> str:
    """A loss estimate in percent, ``mean ± half-width %``."""
    s = cell_md(e, Column("", "", scale=100.0))
    return s if e is None else f"{s} %"


def _num(e: Estimate | None) -> str:
    return cell_md(e, Column("", ""))


def _label_n(n: int) -> str:
    return f"n = {n}"


def _tables(p: Plan, tb: list[dict[str, Any]], al: list[dict[str, Any]], jit: list[dict[str, Any]],
            model: list[dict[str, Any]], sens: list[dict[str, Any]]) -> dict[str, Table]:
    """Every table of the report, by id: the long tables (CSV and ``report.json``) and the wide
    views of ``report.md`` (:func:`qoelab.experiment.tables.pivot`)."""
    T: dict[str, Table] = {}
    metric_cols = [Column(m, m) for m in METRICS]
    T["testbed"] = Table("testbed", "Testbed: every cell", [Column("mode", "mode"), Column("discipline", "discipline"),
                                                             Column("n", "n"), *metric_cols], tb, ci="half_width")
    T["alone"] = Table("premise", "Premise: the video alone (FIFO, no downloads)", [
        Column("sender", "sender"), Column("video_loss", "video loss", "%", "ours", 100.0),
        Column("audio_loss", "audio loss", "%", "ours", 100.0), Column("video_mbps", "video", "Mbit/s", "ours"),
        Column("video_loss_max", "largest single-run video loss", "%", "ours", 100.0)],
        [{**r, "sender": MODES[r["mode"]][0]} for r in al], source="paper Sec. V (premise)")
    T["alone_csv"] = Table("premise_csv", "premise", [Column("mode", "mode"), Column("video_loss", "video_loss"),
                                                     Column("audio_loss", "audio_loss"), Column("video_mbps", "video_mbps"),
                                                     Column("video_loss_max", "video_loss_max")], al, ci="half_width")
    for mode, (label, _) in MODES.items():
        rows = [{**r, "scheduler": LABEL[r["discipline"]]} for r in tb if r["mode"] == mode]
        rows = PAPER_JAIN.join(PAPER_SHARE.join(rows, "paper_share"), "paper_jain")
        T[f"table1-{mode}"] = Table(f"table1-{mode}", f"Table I, {label}", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("data_share_mbps", "data share", "Mbit/s", "ours"),
            PAPER_SHARE.column("paper_share", "data share", "Mbit/s"),
            Column("jain", "Jain's index", "", "ours"), PAPER_JAIN.column("paper_jain", "Jain's index")],
            rows, source="paper Table I", csv="testbed.csv")
        T[f"fig6-{mode}"] = Table(f"fig6-{mode}", f"Fig. 6/7, {label}: loss and jitter", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("video_loss", "video loss", "%", "ours", 100.0), Column("audio_loss", "audio loss", "%", "ours", 100.0),
            Column("video_jitter_ms", "video jitter", "ms", "ours"), Column("audio_jitter_ms", "audio jitter", "ms", "ours")],
            rows, source="paper Fig. 6, Fig. 7", csv="testbed.csv")
        # The wide views of report.md: scheduler × n.
        idx = (Column("scheduler", "scheduler"),)
        T[f"loss-md-{mode}"] = pivot(f"loss-md-{mode}", "Loss rate audio / video (mean ± 95 % half-width over the "
                                     "repetitions)", rows, idx, "n", sorted({r["n"] for r in rows}),
                                     lambda r: f"{_pct(r['audio_loss'])} / {_pct(r['video_loss'])}", label=_label_n)
        T[f"jitter-md-{mode}"] = pivot(f"jitter-md-{mode}", "Jitter (mean |IPDV|, RFC 3393, ms) audio / video", rows, idx,
                                       "n", sorted({r["n"] for r in rows}),
                                       lambda r: f"{_num(r['audio_jitter_ms'])} / {_num(r['video_jitter_ms'])}",
                                       label=_label_n)
        ns = [n for n in TABLE1_N if any(r["n"] == n for r in rows)] or sorted({r["n"] for r in rows})
        both = []
        for q in p.disciplines:
            if q in PAPER_TABLE1:
                both += [{"scheduler": f"{LABEL[q]} (paper)", "n": n, "text": f"{v[0]:.1f}/{v[1]:.2f}"}
                         for n, v in zip(TABLE1_N, PAPER_TABLE1[q])]
            both += [{"scheduler": f"{LABEL[q]} (ours)", "n": r["n"], "text": f"{_num(r['data_share_mbps'])}/{_mean(r, 'jain'):.2f}"}
                     for r in rows if r["discipline"] == q]
        T[f"table1-md-{mode}"] = pivot(f"table1-md-{mode}", "Data bandwidth share (Mbit/s, mean ± 95 % half-width) / "
                                       "Jain's index; *paper* rows are BMO11 Table I", both, idx, "n", ns,
                                       lambda r: r["text"], label=_label_n)
    T["fig8"] = Table("fig8", f"Fig. 8: SQF, n = {JITTER_N}, video loss vs source jitter δ", [
        Column("access_rate", "access"), Column("delta_ms", "δ", "ms"),
        Column("video_loss", "video loss", "%", "ours", 100.0), Column("audio_loss", "audio loss", "%", "ours", 100.0)],
        jit, source="paper Fig. 8", csv="fig8_jitter.csv")
    T["fig8_csv"] = Table("fig8_csv", "Fig. 8", [Column(k, k) for k in ("access_rate", "delta_ms", "video_loss", "audio_loss")],
                          jit, ci="half_width")
    T["fig8-md"] = pivot("fig8-md", f"Fig. 8 (SQF, n = {JITTER_N}, {MODES['es'][0]}): video loss vs source jitter δ",
                         jit, (Column("access_rate", "access"),), "delta_ms", [float(x) for x in p.jitter_ms],
                         lambda r: _pct(r["video_loss"]), label=lambda x: f"δ = {x:g} ms")
    T["model"] = Table("model-check", "Model vs simulator (Sec. IV; Linux TCP profile)", [
        Column("n", "n"), Column("peak_rate_mbps", "λ", "Mbit/s"),
        Column("first_lost_priority_s", "SQF test first true", "s", "ours"),
        Column("first_x_ge_b_s", "x ≥ B/(n+1) first", "s", "ours"),
        Column("deprioritised_time_fraction", "time de-prioritised", "%", "ours", 100.0),
        Column("deprioritised_after_first", "after the first loss", "%", "ours", 100.0),
        Column("video_loss", "video loss", "%", "ours", 100.0),
        Column("model_p_T", "model p(T)"), Column("model_T_bar_s", "model T̄", "s")],
        [{**r, "model_p_T": _mean(r, "model_p_T"), "model_T_bar_s": _mean(r, "model_T_bar_s")} for r in model],
        source="paper Sec. IV, Fig. 3/4", csv="model_check.csv",
        note="(–: the event did not happen in any repetition's run.)")
    T["model_csv"] = Table("model_csv", "model check", [Column("n", "n"), Column("peak_rate_mbps", "peak_rate_mbps"),
                                                       *[Column(m, m) for m in MODEL_METRICS]], model, ci="half_width")
    T["sensitivity"] = Table.of_rows("whatif", "What-ifs", sens)
    cols = sorted({r["n"] for r in sens if r["n"]})
    alone = {r["video_source"]: r for r in sens if r["n"] == 0}
    wide = [{**r, "alone": (f"{_pct1(alone[r['video_source']]['video_loss'])} / "
                            f"{_pct1(alone[r['video_source']]['audio_loss'])}") if r["video_source"] in alone else "–"}
            for r in sens if r["n"]]
    T["sensitivity-md"] = pivot("sensitivity-md", f"What-ifs (SQF, buffer {SENS_BUFFER}, one repetition): video loss / "
                                "audio loss", wide, (Column("video_source", "video source"),
                                                     Column("tcp", "TCP as the router sees it"), Column("alone", "alone")),
                                "n", cols, lambda r: f"{_pct1(r['video_loss'])} / {_pct1(r['audio_loss'])}", label=_label_n,
                                note="Each row changes one factor against the testbed. The column 'alone' has no "
                                     "download at all: what the 10 Mbit/s line and its buffer by themselves do to that "
                                     "sender.")
    return T


def _pct1(x: float) -> str:
    """One run's loss in percent."""
    return "nan" if x is None or math.isnan(x) else f"{100 * x:.3g} %"


def _fig_lines(rows, key: str, ylabel: str, title: str, *, logy: bool = False) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
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
                y = np.array([_mean(r, m) * scale for r in rs])
                err = np.nan_to_num(np.array([r[m].half_width * scale for r in rs]))
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

    return draw


def _fig8(rows) -> Callable[[Path], None]:
    def draw(path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for rate in sorted({r["access_rate"] for r in rows}, key=_rate):
            rs = [r for r in rows if r["access_rate"] == rate]
            y = np.maximum([100 * _mean(r, "video_loss") for r in rs], 1e-3)
            err = np.minimum(np.nan_to_num([100 * r["video_loss"].half_width for r in rs]), y - 1e-3 * 0.999)
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

    return draw


def _figures(tb: list[dict[str, Any]], jit: list[dict[str, Any]]) -> list[Figure]:
    figs = []
    for m, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == m]
        figs.append(Figure(f"fig6-{m}", f"Fig. 6 (ours, {label}): loss vs n", f"fig6_loss_{m}.png",
                           _fig_lines(rows, "loss", "loss rate (%)  [0 plotted at 1e-3]",
                                      f"Fig. 6 (ours, {label}): loss vs n, 95 % intervals", logy=True), "paper Fig. 6"))
    for m, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == m]
        figs.append(Figure(f"fig7-{m}", f"Fig. 7 (ours, {label}): jitter vs n", f"fig7_jitter_{m}.png",
                           _fig_lines(rows, "jitter_ms", "mean |IPDV| (ms)", f"Fig. 7 (ours, {label}): jitter vs n"),
                           "paper Fig. 7"))
    figs.append(Figure("fig8", "Fig. 8 (ours): video loss vs source jitter", "fig8_jitter.png", _fig8(jit), "paper Fig. 8"))
    return figs


def _s(e: Estimate | None) -> str:
    if e is None or math.isnan(e.mean):
        return "never in the run"
    return f"{e.mean:.3g} s"


def _reading_md(all_findings: dict[str, list[Finding]], alone: list[dict[str, Any]],
                model: list[dict[str, Any]]) -> list[str]:
    """The reading, generated from the tables of this report (numbers included): the findings
    through :func:`qoelab.experiment.tables.findings_md`."""
    L = ["## Reading (generated from the tables above)", ""]
    L += ["### Premise: the video alone on the line (FIFO, no download)", ""]
    for r in alone:
        L.append(f"- {MODES[r['mode']][0]}: video loss {_pct(r['video_loss'])}, audio loss {_pct(r['audio_loss'])} over "
                 f"{r['video_loss'].n} repetitions (largest single run: {_pct1(r['video_loss_max'])}).")
    L.append("")
    for mode, F in all_findings.items():
        L += [f"### The paper's claims, {MODES[mode][0]}", "",
              f"Substantive claims: {summary_line(F)} (by-construction and trivial ones are listed but not counted).", ""]
        L += [findings_md(F, why=True)]
    if model:
        L += ["### Model check (Sec. IV) under the Linux TCP profile", ""]
        for r in model:
            L.append(
                f"- n = {r['n']}, λ = {r['peak_rate_mbps']:g} Mbit/s: SQF's test (an active download with no more bytes "
                f"than the video) first true at {_s(r['first_lost_priority_s'])}, eq. (1)'s x ≥ B/(n+1) first at "
                f"{_s(r['first_x_ge_b_s'])}; share of the time de-prioritised {_pct(r['deprioritised_time_fraction'])}, "
                f"of the time after the first loss of priority {_pct(r['deprioritised_after_first'])}; video loss "
                f"{_pct(r['video_loss'])}; model p(T) {_mean(r, 'model_p_T'):.3g}, mean time of prioritisation "
                f"{_s(r['model_T_bar_s'])} (means over {r['model_p_T'].n} repetitions; a first time is averaged over the "
                f"repetitions in which it happened).")
        L += ["", MODEL_CHECK_WHY, ""]
    return L


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


def _analytic(out: Path, quick: bool) -> dict[str, Any]:
    """Fig. 3/4 from eq. (2) and the paper's n = 20 statements, computed."""
    from qoelab.models import sqf_analytic as sa

    kw3: dict[str, Any] = {}
    kw4: dict[str, Any] = {}
    if quick:
        kw3 = {"peak_rates_bps": np.linspace(0, 10e6, 41)}
        kw4 = {"peak_rates_bps": np.linspace(0.02, 0.98, 25) * 10e6}
    f3 = sa.figure3(out / "fig3_analytic.png", **kw3)
    f4 = sa.figure4(out / "fig4_analytic.png", **kw4)
    rows = []
    for i, n in enumerate(f3.n_values):
        for j, r in enumerate(f3.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "p_T_sqf": f3.p_sqf[i, j], "p_T_fq": f3.p_fq[i, j]})
    Table.of_rows("fig3", "Fig. 3", rows).write_csv(out, "fig3_analytic.csv")
    rows = []
    for i, n in enumerate(f4.n_values):
        for j, r in enumerate(f4.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "T_bar_min": f4.mean_time_s[i, j] / 60})
    Table.of_rows("fig4", "Fig. 4", rows).write_csv(out, "fig4_analytic.csv")
    return {
        "p_T_n20_at_6mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 6e6, 20),
        "p_T_n20_at_5mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 5e6, 20),
        "rate_p_half_n20_mbps": sa.peak_rate_for_p(0.5, 20) / 1e6,
        "T_bar_n20_at_6mbps_min": sa.mean_prioritised_time(6e6, 20) / 60,
        "rate_T_bar_180min_n20_mbps": sa.peak_rate_for_mean_time(180 * 60, 20) / 1e6,
        "fq_limit_n20_kbps": 10e6 / 21 / 1e3,
    }


def run(out: Path, *, quick: bool = False, jobs: int = 1, log=print, sensitivity: bool = False,
        progress: Callable[[int, int], None] | None = None, executor: Any = None) -> dict[str, Any]:
    """Runs (or resumes) every grid (and, with ``sensitivity``, the testbed and Fig. 8 grids under
    each declared alternative, into ``out/sensitivity/``) and writes the report folder ``out``.
    Returns a summary. ``progress(done, total)`` is called as runs finish (total over the whole
    reproduction)."""
    p = plan(quick)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"qoelab reproduce sqf{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing {out} "
        f"({p.reps} repetitions)")
    res = runner.reproduce(out, CHOICES, lambda s: experiments(p, s), _findings_of, sensitivity=sensitivity, jobs=jobs,
                           progress=progress, executor=executor, log=log,
                           variant_experiments=lambda s: experiments(p, s, findings_only=True),
                           default_on_variant_grid=False)
    t_sim = time.time() - t0
    if res is None:  # one task of a job array: the report comes after all
        return {"shard": executor.shard}
    with runner.stage(out, "report"):
        all_findings = {m: [f for f in res.findings if f.group == m] for m in MODES}
        T, figures, reading, ana = _write(out, p, res.main, all_findings)
    command = f"qoelab reproduce sqf{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}"
    prov = provenance.of(runner.versions(res.sets), command=command)
    md = _report_md(p, quick, t_sim, T, ana, reading) + [provenance_md(prov)]
    (out / "report.md").write_text("\n".join(md) + "\n")
    report(out, paper="sqf", mode="quick" if p.quick else "full", title="SQF reproduction (BMO11, ICC 2011)",
           tables=[T["alone"], *(T[f"{k}-{m}"] for m in MODES for k in ("table1", "fig6")), T["fig8"], T["model"]],
           figures=figures, findings=[finding_json(f, source="paper Sec. V") for F in all_findings.values() for f in F],
           reading="\n".join(reading[2:]) + "\n", cost=runner.cost(out, res.sets), choices=CHOICES,
           summary=f"Self-prioritisation of the MPEG-2 video and its audio on a 10 Mbit/s access line, two VLC sender "
                   "modes: " + "; ".join(f"{m}: {summary_line(F)}" for m, F in all_findings.items()) + ".",
           setup=f"{p.reps} repetitions per cell; testbed runs of {p.duration}; n = {', '.join(map(str, p.n_values))}; "
                 f"buffer {BUFFER}; Linux TCP CUBIC.",
           provenance=prov)
    summary = {"quick": quick, "reps": p.reps, "wall_s": time.time() - t0, "analytic": ana,
               "findings": {m: dict(zip(("holds", "tested"), summary_count(F))) for m, F in all_findings.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    log(f"report: {out / 'report.md'} ({time.time() - t0:.0f} s)")
    return summary


def _findings_of(rs: runner.RunSet) -> list[Finding]:
    """Both sender modes' findings from one setting's testbed and Fig. 8 runs."""
    tb_reps, jit_reps = rs.rows_of("testbed"), rs.rows_of("jitter")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    return [f for m in MODES for f in findings(m, tb_reps, tb, jit_reps, jit)]


def _write(out: Path, p: Plan, rs: runner.RunSet, all_findings: dict[str, list[Finding]]):
    """The default setting's tables (CSV), figures and the reading's lines."""
    tb_reps = rs.rows_of("testbed")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    al_reps = rs.rows_of("alone")
    al = core.aggregate(al_reps, ("mode",), ("video_loss", "audio_loss", "video_mbps"))
    for r in al:
        r["video_loss_max"] = max(x["video_loss"] for x in al_reps if x["mode"] == r["mode"])
    jit_reps = rs.rows_of("jitter")
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    model_reps = rs.rows_of("model")
    model = core.aggregate(model_reps, ("n", "peak_rate_mbps"), MODEL_METRICS)
    sens = [{"video_source": SENS_SOURCES[r["video_source"]][0],
             "tcp": SENS_TCP[r["tcp"]][0] if "tcp" in r else "no downloads", "n": r.get("n", 0),
             **{k: r[k] for k in ("video_loss", "audio_loss", "data_share_mbps")}}
            for r in rs.rows_of("whatif_alone") + rs.rows_of("whatif")]
    sens.sort(key=lambda r: ([s for s, _ in SENS_SOURCES].index(r["video_source"]),
                             -1 if r["n"] == 0 else [t for t, _ in SENS_TCP].index(r["tcp"]), r["n"]))
    ana = _analytic(out, p.quick)
    T = _tables(p, tb, al, jit, model, sens)
    T["testbed"].write_csv(out, "testbed.csv")
    Table.of_rows("testbed_reps", "testbed, per repetition", tb_reps).write_csv(out, "testbed_reps.csv")
    T["alone_csv"].write_csv(out, "premise_alone.csv")
    T["fig8_csv"].write_csv(out, "fig8_jitter.csv")
    Table.of_rows("fig8_reps", "Fig. 8, per repetition", jit_reps).write_csv(out, "fig8_jitter_reps.csv")
    T["model_csv"].write_csv(out, "model_check.csv")
    T["model"].csv = "model_check.csv"
    Table.of_rows("model_reps", "model check, per repetition", model_reps).write_csv(out, "model_check_reps.csv")
    T["sensitivity"].write_csv(out, "whatif.csv")
    Table.of_rows("paper_table1", "BMO11 Table I", [
        {"scheduler": q, "n": n, "paper_data_share_mbps": PAPER_SHARE.values[(q, n)], "paper_jain": PAPER_JAIN.values[(q, n)]}
        for q in PAPER_TABLE1 for n in TABLE1_N]).write_csv(out, "paper_table1.csv")
    _findings_csv(out, all_findings)
    return T, [f.write(out) for f in _figures(tb, jit)], _reading_md(all_findings, al, model), ana


def _report_md(p: Plan, quick: bool, t_sim: float, T: dict[str, Any], ana: dict[str, Any], reading: list[str]) -> list[str]:
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
        "`fig8_jitter_reps.csv`, `model_check.csv`, `model_check_reps.csv`, `whatif.csv`, `findings.csv`, "
        "`paper_table1.csv`, `fig3_analytic.csv`, `fig4_analytic.csv`, `report.json`, the PNG figures and, with "
        "`--sensitivity`, `sensitivity.csv`; raw runs under `runs/` (and `sensitivity/`).",
        "",
        "## What the paper reports (typed from its text; not measured here)",
        "",
    ]
    md += [f"- **{k}**: {v}" for k, v in PAPER_STATEMENTS]
    md += ["", "## Open choices", "", "What the paper leaves open and we chose (`--sensitivity` runs the findings under "
           "each alternative):", "", choices_md(CHOICES)]
    md += ["## Our measurements", "", "### Premise: the video alone (FIFO, no downloads)", "", T["alone"].markdown(title=False)]
    for mode, (label, _) in MODES.items():
        md += [f"### Fig. 6/7, {label}", "", T[f"loss-md-{mode}"].markdown(), T[f"jitter-md-{mode}"].markdown()]
        md += [f"### Table I, {label}", "", T[f"table1-md-{mode}"].markdown()]
    md += ["### Fig. 8", "", T["fig8-md"].markdown()]
    md += ["### Model vs simulator (Sec. IV; Linux TCP profile)", "", T["model"].markdown(title=False)]
    md += ["### What-ifs (one repetition)", "", T["sensitivity-md"].markdown()]
    md += ["### Analytical model (Fig. 3/4 recomputed from eq. (2))", "", "`fig3_analytic.png`, `fig4_analytic.png`.", ""]
    md += [f"- {k}: {v:.4g}" for k, v in ana.items()]
    return md + [""] + reading


def register(subparsers) -> argparse.ArgumentParser:
    """Adds ``reproduce sqf`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "sqf", "Bonald, Muscariello, Ostallo: Self-Prioritization of Audio and Video Traffic (ICC 2011)", run,
        quick_help="short runs and a coarse grid (CI)")
