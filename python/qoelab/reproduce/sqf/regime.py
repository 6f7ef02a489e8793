"""The paper's regime (issue 36, item 2): a video *below* its fair share under SQF, and the
Sec. IV-B case of three 2 Mbit/s streams, simulated.

BMO11's claim (Sec. IV) is about flows below their fair share, or with a moderate peak rate:
such a flow rarely builds a backlog, so SQF serves it first and LQD never drops it. The testbed
grids (:mod:`~qoelab.reproduce.sqf.build`) never test that: the MPEG-2 video's mean is above
its fair share C/(n+1) in every cell. Here the video's rate is set to a fraction ``f`` of its
fair share, ``f`` in :attr:`RegimePlan.fractions`, against ``n`` downloads, under SQF and, for
contrast, FIFO and DRR (both with the cell's buffer), from three sources:

- ``poisson``: the model's own source, in the model's setting (``scenarios/sqf/model-check.toml``:
  10 Mbit/s, B = 200 packets of 1250 bytes, n saturating TCP flows, no audio). Its rate is the
  model's λ = f·C/(n+1) in 1250-byte packets; the run records the per-flow backlogs, so eq. (1)'s
  event (the video's backlog reaches B/(n+1)) and SQF's own test are timed as in the model
  check, beside eq. (2)'s p(T) at the run's length;
- ``cbr``: a smooth source on the testbed (``scenarios/sqf/testbed.toml``: 50-packet buffer,
  1500-byte MTU, the Layer II audio beside it), 1316-byte payloads over RTP;
- ``mpeg2``: the real, bursty MPEG-2 trace on the testbed, frame-paced, its frame sizes scaled
  to the target rate (:func:`scaled_trace`: one row per frame, so a smaller frame is fewer
  full-size packets, and the I/P/B size ratios are the trace's).

On the testbed the video's fair share is its max-min share, (C − a)/(n+1) with ``a`` the
audio's mean IP rate (:data:`AUDIO_IP_BPS`): the audio, far below any share, takes what it
asks. The audio is reported too: its fraction of the fair share is what it is (64 kbit/s).

Sec. IV-B (:func:`ivb_experiment`): m = 3 Poisson streams of 2 Mbit/s each against n = 20
saturating TCP flows in the model's setting, under SQF; the paper's equivalent single stream of
6 Mbit/s beside it. Eq. (1) on the total backlog and eq. (3) per stream are timed from the
backlog samples; eq. (2) at 6 Mbit/s gives p(10 min) = 0.453 (``docs/models/sqf-analytic.md``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Estimate, Finding, Label, below, above
from qoelab.experiment import core
from qoelab.experiment.core import Experiment
from qoelab.experiment.stats import mean_ci
from qoelab.reproduce.sqf.measure import _duration, _flows, _model_metrics, read_backlogs
from qoelab.reproduce.sqf.paper import BUFFER, NEGLIGIBLE, TCP, TRACE_S, VIDEO_TRACE
from qoelab.scenario import Scenario

__all__ = ["AUDIO_IP_BPS", "IVB_METRICS", "LINE_BPS", "REGIME_METRICS", "RegimePlan", "SOURCES", "fair_share_bps",
           "ivb_experiment", "Testbed", "regime_experiment", "regime_findings", "regime_plan", "scaled_trace"]

#: The bottleneck's rate (both settings), bit/s.
LINE_BPS = 10e6
#: The Layer II audio's mean IP rate (``sqf_audio_mp2_64k``: 64 kbit/s of frames, 1 packet per
#: 24-ms frame with 40 bytes of IP/UDP/RTP headers), bit/s; measured per run as well.
AUDIO_IP_BPS = 64e3 + 40 * 8 / 0.024
#: The sources of the regime grid: label, setting.
SOURCES = {"poisson": ("Poisson (the model's source), model setting B = 200 × 1250 B", "model"),
           "cbr": ("CBR, 1316-byte payloads, testbed (50 packets, with audio)", "testbed"),
           "mpeg2": ("MPEG-2 trace scaled, frame-paced, testbed (50 packets, with audio)", "testbed")}
#: IP/UDP/RTP header bytes of a testbed datagram; IP/UDP of the model setting's.
RTP_HDR, UDP_HDR = 40, 28
CBR_PAYLOAD = 1316
#: The model setting's packet (the model's data unit) and the Poisson source's payload in it.
MODEL_PKT, MODEL_PAYLOAD = 1250, 1222
#: The trace's largest payload on the testbed's 1500-byte MTU.
TRACE_PAYLOAD = 1460
#: Sec. IV-B: m streams of this peak rate against n flows.
IVB_M, IVB_RATE_MBPS, IVB_N = 3, 2.0, 20
DISCIPLINES = ("sqf", "fifo", "drr")


@dataclass(frozen=True)
class RegimePlan:
    reps: int
    duration: str
    n_values: tuple[int, ...]
    fractions: tuple[float, ...]
    sources: tuple[str, ...]
    ivb_duration: str


def regime_plan(quick: bool, reps: int | None = None) -> RegimePlan:
    """The regime's grids; ``reps`` (the testbed plan's, ``--reps``) overrides the repetitions."""
    p = _regime_plan(quick)
    return p if reps is None else replace(p, reps=reps)


def _regime_plan(quick: bool) -> RegimePlan:
    if quick:
        return RegimePlan(reps=2, duration="20s", n_values=(5,), fractions=(0.5, 0.9), sources=("poisson", "cbr"),
                          ivb_duration="20s")
    # Ten repetitions (evidence under the layer's rules), the paper's 10-min video, Fig. 3's n.
    return RegimePlan(reps=10, duration="600s", n_values=(5, 10, 20), fractions=(0.25, 0.5, 0.75, 0.9),
                      sources=tuple(SOURCES), ivb_duration="600s")


def fair_share_bps(source: str, n: int) -> float:
    """The video's fair share, bit/s at IP level: C/(n+1) in the model setting, the max-min
    share (C − a)/(n+1) beside the audio on the testbed."""
    return LINE_BPS / (n + 1) if SOURCES[source][1] == "model" else (LINE_BPS - AUDIO_IP_BPS) / (n + 1)


# --------------------------------------------------------------------------------------------
# The real video at another rate
# --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _frames() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The MPEG-2 trace per frame: bytes, type code, display number, timestamp (ms)."""
    from qoelab.video.traces.trace import read_trace

    t = read_trace(paths.root() / "data" / "traces" / Path(VIDEO_TRACE).name)
    nf = t.n_frames
    size = np.bincount(t.frame, weights=t.size_bytes, minlength=nf).astype(np.int64)
    first = np.searchsorted(t.frame, np.arange(nf))
    return size, t.type_code[first], t.display[first], t.ts_ms[first]


def _ip_bps(size: np.ndarray) -> float:
    pkts = np.ceil(size / TRACE_PAYLOAD)
    return float(np.sum(size + RTP_HDR * pkts) * 8 / TRACE_S)


def scaled_trace(target_ip_bps: float, folder: Path) -> Path:
    """The MPEG-2 trace with every frame's bytes multiplied by one factor, one row per frame,
    chosen (by bisection, to 0.1 %) so that its mean IP rate (40 header bytes per datagram of at
    most 1460 payload bytes) is ``target_ip_bps``, as a file in ``folder`` (the reproduction's
    output folder's ``traces/``): its path. The file is a function of the bundled trace and the
    target, byte for byte; one already there is rewritten unless its bytes are those."""
    from qoelab import outdir

    target = int(round(target_ip_bps))
    text = _scaled_csv(target)
    p = Path(folder) / f"sqf_mpeg2_{target}bps.trace.csv"
    try:
        same = p.is_file() and not p.is_symlink() and p.read_text() == text
    except (OSError, UnicodeDecodeError):
        same = False
    if not same:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            outdir.write_atomic(p, text)
        except OSError as e:
            raise QoelabError(f"{p}: cannot write the scaled trace: {e.strerror or e}") from None
    return p


@functools.lru_cache(maxsize=256)
def _scaled_csv(target_ip_bps: int) -> str:
    from qoelab.video.traces.trace import NalTrace, trace_csv

    size, typ, disp, ts = _frames()
    scaled = lambda s: np.maximum(1, np.floor(size * s + 0.5)).astype(np.int64)  # noqa: E731
    lo, hi = 0.0, 1.0
    while _ip_bps(scaled(hi)) < target_ip_bps:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _ip_bps(scaled(mid)) < target_ip_bps else (lo, mid)
        if hi - lo < 1e-4 * hi:
            break
    nf = size.size
    return trace_csv(NalTrace(np.arange(nf, dtype=np.int64), disp.astype(np.int64), typ.astype(np.int8), scaled(hi), ts))


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------

class Testbed(NamedTuple):
    """The testbed's builders of :mod:`~qoelab.reproduce.sqf.build` (passed in, so that this
    module does not import it): ``base(draws, duration, setting)``, ``draws(rep)``,
    ``queue(kind, setting)``."""

    base: Callable[..., Scenario]
    draws: Callable[[int], Any]
    queue: Callable[[str, dict[str, Any]], dict[str, Any]]
    #: Where the scaled traces go (:func:`scaled_trace`): the output folder's ``traces/``.
    traces: Path | None = None


def _queue(tb: Testbed, kind: str, limit: str, setting: dict[str, Any], sample: bool) -> dict[str, Any]:
    q = {**tb.queue(kind, setting), "limit": limit}
    if sample and kind == "sqf":
        q["flow_sample"] = "10ms"
    return q


def _model_setting(tb: Testbed, duration: str, n: int, discipline: str, setting: dict[str, Any]) -> Scenario:
    sc = Scenario.load(paths.root() / "scenarios" / "sqf" / "model-check.toml")
    sc.set("sim.duration", duration)
    sc.set("links[1].queue_ab", _queue(tb, discipline, "200p", setting, True))
    sc.set("flows[1].transport", {**TCP, "delayed_ack": setting["delayed_ack"]})
    sc.set("flows[1].count", n)
    return sc


def _poisson_rate(ip_bps: float) -> str:
    """The Poisson app's payload rate for an IP rate counted in 1250-byte packets."""
    return f"{ip_bps / 1e6 * MODEL_PAYLOAD / MODEL_PKT:.6g}Mbps"


def _traces(tb: Testbed) -> Path:
    if tb.traces is None:
        raise QoelabError("sqf regime: no folder for the scaled traces (Testbed.traces)")
    return tb.traces


def _regime(p: RegimePlan, setting: dict[str, Any], tb: Testbed) -> Callable[[dict[str, Any], int], Scenario]:
    def build(c: dict[str, Any], rep: int) -> Scenario:
        target = c["fraction"] * fair_share_bps(c["source"], c["n"])
        if SOURCES[c["source"]][1] == "model":
            sc = _model_setting(tb, p.duration, c["n"], c["discipline"], setting)
            sc.set("flows[0].app.rate", _poisson_rate(target))
            return sc
        d = tb.draws(rep)
        sc = tb.base(d, p.duration, setting)
        sc.set("links[2].queue_ab", _queue(tb, c["discipline"], BUFFER, setting, False))
        sc.set("flows[2].count", c["n"])
        if c["source"] == "cbr":
            sc.set("flows[0].app", {"kind": "cbr", "rate": f"{target * CBR_PAYLOAD / (CBR_PAYLOAD + RTP_HDR) / 1e6:.6g}Mbps",
                                    "payload": f"{CBR_PAYLOAD}B"})
        else:
            sc.set("flows[0].app", {"kind": "video", "trace": str(scaled_trace(target, _traces(tb))), "loop": True,
                                    "pacing": "frame", "offset": f"{d.video_offset_s:g}s"})
        return sc

    return build


def _ivb(p: RegimePlan, setting: dict[str, Any], tb: Testbed) -> Callable[[dict[str, Any], int], Scenario]:
    def build(c: dict[str, Any], rep: int) -> Scenario:
        m, rate = c["streams"], IVB_M * IVB_RATE_MBPS / c["streams"]
        sc = _model_setting(tb, p.ivb_duration, IVB_N, "sqf", setting)
        flows = sc.get("flows")
        video = dict(flows[0])
        video["app"] = {**video["app"], "rate": _poisson_rate(rate * 1e6)}
        if m > 1:
            video["name"] = "video{i}"
            video["count"] = m
        sc.set("flows", [video, *flows[1:]])
        return sc

    return build


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------

#: The per-repetition metrics of a regime cell (NaN where a column does not apply).
REGIME_METRICS = ("offered_mbps", "fair_mbps", "offered_over_fair", "video_loss", "video_delay_ms", "video_delay_p99_ms",
                  "audio_loss", "audio_over_fair", "x_ge_b", "first_x_ge_b_s", "sqf_test_true", "first_lost_priority_s",
                  "model_p_T")


def _regime_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    from qoelab.models import sqf_analytic as sa

    fl = _flows(d)
    v = fl["video"]
    T = _duration(d)
    n = int(c["n"])
    # The video sends from its start to the end of the run: its offered IP rate.
    start = float(v["start_s"])
    offered = v["sent_bytes"] * 8 / max(T - start, 1e-9)
    fair = fair_share_bps(c["source"], n)
    nan = float("nan")
    row = {"offered_mbps": offered / 1e6, "fair_mbps": fair / 1e6, "offered_over_fair": offered / fair,
           "video_loss": v["loss_ratio"], "video_delay_ms": v["delay_mean_s"] * 1e3,
           "video_delay_p99_ms": v["delay_p99_s"] * 1e3, "audio_loss": nan, "audio_over_fair": nan, "x_ge_b": nan,
           "first_x_ge_b_s": nan, "sqf_test_true": nan, "first_lost_priority_s": nan, "model_p_T": nan}
    if "audio" in fl:
        a = fl["audio"]
        row["audio_loss"] = a["loss_ratio"]
        row["audio_over_fair"] = a["sent_bytes"] * 8 / max(T - start, 1e-9) / fair
    if SOURCES[c["source"]][1] == "model":
        t_start = 0.05 * (n - 1)
        row["model_p_T"] = sa.p_deprioritised(T - t_start, offered, n)
        if c["discipline"] == "sqf":
            m = _model_metrics(d, {"n": n, "peak_rate_mbps": offered / 1e6})
            row.update(first_x_ge_b_s=m["first_x_ge_b_s"], first_lost_priority_s=m["first_lost_priority_s"],
                       x_ge_b=float(not math.isnan(m["first_x_ge_b_s"])),
                       sqf_test_true=float(not math.isnan(m["first_lost_priority_s"])))
    return row


IVB_METRICS = ("video_loss", "video_loss_max", "video_delay_ms", "x_ge_b", "first_x_ge_b_s", "eq3_violated",
               "first_eq3_s", "sqf_test_true", "first_lost_priority_s", "model_p_T")


def _backlogs(d: Path) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """The SQF port's per-flow backlog samples as (instants, flow → bytes per instant, dt); a
    flow absent at an instant has no backlog there."""
    instants, names, m, dt = read_backlogs(d)
    return instants, dict(zip(names, m)), dt


def _first(t: np.ndarray, mask: np.ndarray) -> float:
    k = np.flatnonzero(mask)
    return float(t[k[0]]) if k.size else float("nan")


def _ivb_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """Sec. IV-B: loss and delay over the video streams; from the backlog samples, the first
    time eq. (1) on the total x = Σ x_i reaches B/(n+1), the first time eq. (3) fails for some
    stream (x_i ≥ (B − x)/n, in 1250-byte packets), the first time SQF's own test is true for
    some stream (an active download with no more bytes than that stream's non-empty queue);
    eq. (2) at the aggregate rate over the run."""
    from qoelab.models import sqf_analytic as sa

    fl = _flows(d)
    vids = sorted(f for f in fl if f.startswith("video"))
    T = _duration(d)
    t_start = 0.05 * (IVB_N - 1)
    instants, q, _dt = _backlogs(d)
    keep = instants >= t_start
    ti = instants[keep]
    zero = np.zeros(instants.size)
    xs = np.array([q.get(f, zero)[keep] for f in vids]) / sa.PKT_BYTES
    tcp = np.array([a[keep] for f, a in q.items() if f not in vids]) if len(q) > len(vids) else np.zeros((1, ti.size))
    x = xs.sum(axis=0)
    B = sa.BUFFER_PKTS
    eq3 = np.any(xs >= (B - x) / IVB_N, axis=0)
    tcp_b = tcp / sa.PKT_BYTES
    sqf = np.zeros(ti.size, dtype=bool)
    for xi in xs:
        sqf |= (xi > 0) & np.any((tcp_b > 0) & (tcp_b <= xi), axis=0)
    sent = sum(fl[f]["sent_bytes"] for f in vids)
    lost = sum(fl[f]["sent_bytes"] * fl[f]["loss_ratio"] for f in vids)
    first = {"x": _first(ti, x >= B / (IVB_N + 1)), "eq3": _first(ti, eq3), "sqf": _first(ti, sqf)}
    return {"video_loss": lost / sent if sent else float("nan"),
            "video_loss_max": max(fl[f]["loss_ratio"] for f in vids),
            "video_delay_ms": float(np.mean([fl[f]["delay_mean_s"] for f in vids])) * 1e3,
            "x_ge_b": float(not math.isnan(first["x"])), "first_x_ge_b_s": first["x"],
            "eq3_violated": float(not math.isnan(first["eq3"])), "first_eq3_s": first["eq3"],
            "sqf_test_true": float(not math.isnan(first["sqf"])), "first_lost_priority_s": first["sqf"],
            "model_p_T": sa.p_deprioritised(T - t_start, sent * 8 / (T - min(fl[f]["start_s"] for f in vids)), IVB_N)}


# --------------------------------------------------------------------------------------------
# Experiments and findings
# --------------------------------------------------------------------------------------------

def regime_cells(p: RegimePlan, disciplines: tuple[str, ...] = DISCIPLINES) -> list[dict[str, Any]]:
    return [{"source": s, "discipline": q, "n": n, "fraction": f} for s in p.sources for q in disciplines
            for n in p.n_values for f in p.fractions]


def regime_experiment(p: RegimePlan, setting: dict[str, Any], tb: Testbed,
                      disciplines: tuple[str, ...] = DISCIPLINES) -> Experiment:
    cells = regime_cells(p, disciplines)
    return Experiment("sqf-regime", cells, _regime(p, setting, tb), _regime_metrics, paired=tuple(cells[0]), reps=p.reps,
                      per_rep=True)


def ivb_experiment(p: RegimePlan, setting: dict[str, Any], tb: Testbed) -> Experiment:
    cells = [{"streams": IVB_M}, {"streams": 1}]
    return Experiment("sqf-ivb", cells, _ivb(p, setting, tb), _ivb_metrics, paired=("streams",), reps=p.reps, per_rep=True)


#: Why each regime finding has its label (typed prose, no numbers).
WHY = {
    "regime_sqf": "The paper's claim (Sec. IV): a flow below its fair share rarely has a backlog, so SQF serves it "
                  "first and LQD, which drops from the longest queue, does not drop it. It could fail: ties with a "
                  "download's one-packet backlog and the source's own bursts can cost it priority.",
    "regime_drr": "By construction: DRR with longest-queue drop serves every backlogged flow its share, so a smooth "
                  "flow below its share never holds the longest queue.",
    "regime_drr_bursty": "Fig. 3's FQ step: no de-prioritisation below the fair share. A bursty source's mean is below "
                         "its share but its bursts are not, and a burst longer than the buffer's share makes its queue "
                         "the longest, which DRR's longest-queue drop then cuts.",
    "regime_fifo": "A shared FIFO drops whatever arrives at a full buffer, whatever the flow's rate: the contrast "
                   "the paper draws.",
    "regime_delay": "Served first while it keeps priority, the video waits for at most the packet in service; "
                    "under FIFO it waits behind the downloads' backlog.",
    "regime_model": "Eq. (2) at a rate below the fair share predicts the video's backlog practically never reaches "
                    "B/(n+1); the simulation has real TCP, a non-preemptive link and LQD, none of which the model "
                    "has.",
    "ivb": "The paper's Sec. IV-B: the streams' total stays below the peak rate it reads from Fig. 3 as safe, so "
           "SQF would keep all of them first. Eq. (2) puts that rate in the middle of its transition, not at its "
           "foot, and real TCP backlogs are not the model's equal shares of a full buffer.",
}


def _worst(rows: list[dict[str, Any]], m: str, **sel: Any) -> dict[str, Any] | None:
    rs = [r for r in core.select(rows, **sel) if r.get(m) is not None and not math.isnan(r[m].mean)]
    return max(rs, key=lambda r: r[m].mean) if rs else None


def _where(r: dict[str, Any] | None) -> str:
    return "–" if r is None else f"n = {r['n']}, {r['fraction']:g} of the fair share"


def regime_findings(reps: list[dict[str, Any]], ivb_reps: list[dict[str, Any]]) -> list[Finding]:
    """The regime's claims (group ``regime``): per source, SQF keeps the video's loss negligible
    at its worst cell (substantive), DRR too (by construction), FIFO loses it at n's largest and
    f = 0.9 (substantive contrast), SQF's video delay below FIFO's there (substantive, paired);
    the model's prediction in the model setting (eq. (1)'s event in no run, where eq. (2) gives
    p(T) below 1 % in every cell); Sec. IV-B's three streams under SQF."""
    agg = core.aggregate(reps, ("source", "discipline", "n", "fraction"), REGIME_METRICS)
    F: list[Finding] = []

    def add(key: str, claim: str, label: Label, rule, statistic: str, est: Estimate | None, why: str) -> None:
        loss = "loss" in statistic or "share of runs" in statistic
        F.append(Finding(key, claim, label, rule, statistic, est, WHY[why], group="regime",
                         scale=100.0 if loss else 1.0, unit=(" pp" if "minus" in statistic else " %") if loss else ""))

    sources = [s for s in SOURCES if any(r["source"] == s for r in agg)]
    for s in sources:
        nmax = max(r["n"] for r in agg if r["source"] == s)
        fmax = max(r["fraction"] for r in agg if r["source"] == s)
        w = _worst(agg, "video_loss", source=s, discipline="sqf")
        add(f"regime_sqf_{s}", f"SQF keeps a video below its fair share ({s}) at negligible loss", Label.SUBSTANTIVE,
            below(NEGLIGIBLE), f"SQF video loss at its worst cell ({_where(w)}), against {NEGLIGIBLE:.1%}",
            None if w is None else w["video_loss"], "regime_sqf")
        w = _worst(agg, "video_loss", source=s, discipline="drr")
        smooth = s == "cbr"
        add(f"regime_drr_{s}", f"DRR keeps a video below its fair share ({s}) at negligible loss",
            Label.BY_CONSTRUCTION if smooth else Label.SUBSTANTIVE, below(NEGLIGIBLE),
            f"DRR video loss at its worst cell ({_where(w)}), against {NEGLIGIBLE:.1%}",
            None if w is None else w["video_loss"], "regime_drr" if smooth else "regime_drr_bursty")
        c = next((r for r in agg if r["source"] == s and r["discipline"] == "fifo" and r["n"] == nmax
                  and r["fraction"] == fmax), None)
        add(f"regime_fifo_{s}", f"FIFO loses a video below its fair share ({s}) at n = {nmax}", Label.SUBSTANTIVE,
            above(NEGLIGIBLE), f"FIFO video loss at n = {nmax}, {fmax:g} of the fair share, against {NEGLIGIBLE:.1%}",
            None if c is None else c["video_loss"], "regime_fifo")
        d = core.paired_where(reps, {"source": s, "n": nmax, "fraction": fmax}, "discipline", "fifo", "sqf",
                              "video_delay_ms")
        add(f"regime_delay_{s}", f"SQF gives a video below its fair share ({s}) a lower delay than FIFO",
            Label.SUBSTANTIVE, above(), f"video mean delay (ms), FIFO minus SQF at n = {nmax}, {fmax:g} of the fair "
            "share, paired", d, "regime_delay")
    if "poisson" in sources:
        sq = [r for r in reps if r["source"] == "poisson" and r["discipline"] == "sqf"]
        est = mean_ci([r["x_ge_b"] for r in sq]) if sq else None
        add("regime_model", "Eq. (2) in the model's setting: below the fair share the video's backlog never reaches "
            "B/(n+1)", Label.SUBSTANTIVE, below(0.01),
            "share of runs (Poisson source, SQF, every cell pooled) in which eq. (1)'s x ≥ B/(n+1) happened, against "
            "1 %", est, "regime_model")
    if ivb_reps:
        i3 = core.aggregate(ivb_reps, ("streams",), IVB_METRICS)
        r3 = next((r for r in i3 if r["streams"] == IVB_M), None)
        add("ivb", f"Sec. IV-B: SQF keeps {IVB_M} streams of {IVB_RATE_MBPS:g} Mbit/s first against n = {IVB_N}",
            Label.SUBSTANTIVE, below(NEGLIGIBLE), f"video loss over the {IVB_M} streams under SQF, against "
            f"{NEGLIGIBLE:.1%}", None if r3 is None else r3["video_loss"], "ivb")
    return F


# --------------------------------------------------------------------------------------------
# The report's section
# --------------------------------------------------------------------------------------------

def _pct(e: Estimate | None) -> str:
    """A loss estimate in percent, ``mean ± half-width %`` (as the report's other tables)."""
    from qoelab.experiment.tables import Column, cell_md

    return "–" if e is None or math.isnan(e.mean) else f"{cell_md(e, Column('', '', scale=100.0))} %"


def _num(e: Estimate | None, fmt: str = ".3g") -> str:
    return "–" if e is None or math.isnan(e.mean) else f"{e.mean:{fmt}}"


def _first_s(e: Estimate | None) -> str:
    return "never" if e is None or math.isnan(e.mean) else f"{e.mean:.3g} s"


def tables(reps: list[dict[str, Any]], ivb_reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The regime's tables: every cell (CSV and report.json), the wide loss/delay view, the
    model check (Poisson, SQF) and Sec. IV-B."""
    from qoelab.experiment.tables import Column, Table, pivot

    agg = core.aggregate(reps, ("source", "discipline", "n", "fraction"), REGIME_METRICS)
    T: dict[str, Any] = {}
    T["regime"] = Table("regime", "The paper's regime: a video below its fair share, every cell", [
        Column("source", "source"), Column("discipline", "discipline"), Column("n", "n"),
        Column("fraction", "target fraction of the fair share"),
        Column("offered_over_fair", "offered / fair share", "", "ours"),
        Column("video_loss", "video loss", "%", "ours", 100.0),
        Column("video_delay_ms", "video delay", "ms", "ours"), Column("video_delay_p99_ms", "video delay p99", "ms", "ours"),
        Column("audio_loss", "audio loss", "%", "ours", 100.0)], agg, source="paper Sec. IV (the claim's regime)",
        csv="regime.csv")
    T["regime_csv"] = Table("regime_csv", "regime", [Column(k, k) for k in ("source", "discipline", "n", "fraction")]
                            + [Column(m, m) for m in REGIME_METRICS], agg, ci="half_width")
    from qoelab.reproduce.sqf.paper import LABEL

    wide = [{**r, "scheduler": LABEL[r["discipline"]], "src": r["source"]} for r in agg]
    fr = sorted({r["fraction"] for r in agg})
    T["regime-md"] = pivot("regime-md", "Video loss / mean delay (ms) by fraction of the fair share (mean over the "
                           "repetitions)", wide, (Column("src", "source"), Column("scheduler", "scheduler"),
                                                  Column("n", "n")), "fraction", fr,
                           lambda r: f"{_pct(r['video_loss'])} / {_num(r['video_delay_ms'])}",
                           label=lambda f: f"f = {f:g}")
    model = [r for r in agg if r["source"] == "poisson" and r["discipline"] == "sqf"]
    T["regime-model"] = Table("regime-model", "Eq. (2) against the simulation, Poisson source, SQF, model setting", [
        Column("n", "n"), Column("fraction", "fraction of C/(n+1)"), Column("offered_mbps", "λ offered", "Mbit/s", "ours"),
        Column("model_p_T", "model p(T)", "", "ours"), Column("x_ge_b", "runs with x ≥ B/(n+1)", "%", "ours", 100.0),
        Column("sqf_test_true", "runs where SQF's test was true", "%", "ours", 100.0),
        Column("video_loss", "video loss", "%", "ours", 100.0)], model, source="paper Sec. IV, eq. (2)",
        csv="regime.csv")
    if ivb_reps:
        iv = core.aggregate(ivb_reps, ("streams",), IVB_METRICS)
        for r in iv:
            r["setting"] = (f"{IVB_M} × {IVB_RATE_MBPS:g} Mbit/s" if r["streams"] == IVB_M
                            else f"1 × {IVB_M * IVB_RATE_MBPS:g} Mbit/s (the paper's equivalent)")
        T["ivb"] = Table("ivb", f"Sec. IV-B simulated: SQF, n = {IVB_N}, B = 200 × 1250 B, 10 Mbit/s", [
            Column("setting", "video streams"), Column("video_loss", "video loss (all streams)", "%", "ours", 100.0),
            Column("video_loss_max", "worst stream's loss", "%", "ours", 100.0),
            Column("video_delay_ms", "video delay", "ms", "ours"),
            Column("x_ge_b", "runs with Σx ≥ B/(n+1)", "%", "ours", 100.0),
            Column("first_x_ge_b_s", "first Σx ≥ B/(n+1)", "s", "ours"),
            Column("eq3_violated", "runs where eq. (3) failed", "%", "ours", 100.0),
            Column("first_lost_priority_s", "SQF's test first true", "s", "ours"),
            Column("model_p_T", "model p(T), eq. (2) at the total rate", "", "ours")], iv,
            source="paper Sec. IV-B", csv="ivb.csv")
        T["ivb_csv"] = Table("ivb_csv", "ivb", [Column("streams", "streams")] + [Column(m, m) for m in IVB_METRICS], iv,
                             ci="half_width")
    return T


def write(out: Path, reps: list[dict[str, Any]], ivb_reps: list[dict[str, Any]]) -> dict[str, Any]:
    """Writes ``regime.csv``, ``regime_reps.csv``, ``ivb.csv``, ``ivb_reps.csv``; returns the tables."""
    from qoelab.experiment.tables import Table

    T = tables(reps, ivb_reps)
    T["regime_csv"].write_csv(out, "regime.csv")
    Table.of_rows("regime_reps", "regime, per repetition", reps).write_csv(out, "regime_reps.csv")
    if ivb_reps:
        T["ivb_csv"].write_csv(out, "ivb.csv")
        Table.of_rows("ivb_reps", "Sec. IV-B, per repetition", ivb_reps).write_csv(out, "ivb_reps.csv")
    return T


def section_md(p: RegimePlan, T: dict[str, Any], F: list[Finding]) -> list[str]:
    """The report's section on the paper's regime: tables, the model check read cell by cell,
    Sec. IV-B beside the paper's numbers, and the findings (generated from the tables)."""
    from qoelab.experiment import summary_line
    from qoelab.experiment.tables import findings_md
    from qoelab.models import sqf_analytic as sa

    L = ["## The paper's regime: a video below its fair share (issue 36)", "",
         f"{p.reps} repetitions per cell, runs of {p.duration}; n = {', '.join(map(str, p.n_values))}; the video's "
         f"offered rate is a fraction f = {', '.join(f'{f:g}' for f in p.fractions)} of its fair share. Sources: "
         + "; ".join(f"`{s}` = {SOURCES[s][0]}" for s in p.sources) + ". Testbed fair share: (C − audio)/(n+1); model "
         "setting: C/(n+1). Files: `regime.csv`, `regime_reps.csv`, `ivb.csv`, `ivb_reps.csv`.", "",
         T["regime-md"].markdown(), "### Eq. (2) against the simulation", "",
         T["regime-model"].markdown(title=False)]
    for r in T["regime-model"].rows:
        L.append(f"- n = {r['n']}, f = {r['fraction']:g} (λ = {_num(r['offered_mbps'])} Mbit/s): eq. (2) gives "
                 f"p(T) = {_num(r['model_p_T'], '.2g')}; eq. (1)'s event happened in {_pct(r['x_ge_b'])} of the runs, "
                 f"SQF's own test was true at some sample in {_pct(r['sqf_test_true'])}; video loss "
                 f"{_pct(r['video_loss'])}.")
    L += ["", REGIME_MODEL_WHY, ""]
    if "ivb" in T:
        L += ["### Sec. IV-B simulated", "", T["ivb"].markdown(title=False)]
        L.append(f"- The paper: SQF gives priority to {IVB_M} streams of {IVB_RATE_MBPS:g} Mbit/s against n = {IVB_N} "
                 f"(their total does not exceed {IVB_M * IVB_RATE_MBPS:g} Mbit/s). Eq. (2) at the total over 10 min: "
                 f"p = {sa.p_deprioritised(sa.VIDEO_DURATION_S, IVB_M * IVB_RATE_MBPS * 1e6, IVB_N):.3g}.")
        for r in T["ivb"].rows:
            L.append(f"- Simulated, {r['setting']}: video loss {_pct(r['video_loss'])} (worst stream "
                     f"{_pct(r['video_loss_max'])}); Σx ≥ B/(n+1) first at {_first_s(r['first_x_ge_b_s'])}, SQF's test "
                     f"first true at {_first_s(r['first_lost_priority_s'])}; eq. (2) over the run p(T) = "
                     f"{_num(r['model_p_T'], '.3g')}.")
        L.append("")
    L += ["### Findings on the paper's regime", "",
          f"Substantive claims: {summary_line(F)} (by-construction and trivial ones are listed but not counted).", "",
          findings_md(F, why=True)]
    return L


#: How the model check of the regime reads (typed, no numbers).
REGIME_MODEL_WHY = (
    "How to read it. Eq. (2) is the probability that the video's backlog reaches B/(n+1) at least once in T, with "
    "the downloads holding equal shares of a full buffer. Below the fair share it is practically zero in every cell, "
    "and so is the FQ step of Fig. 3. The simulated counterpart is the share of runs in which the sampled backlog "
    "reached B/(n+1). SQF's own test (some active download with no more bytes queued than the video) is a weaker "
    "event: it can be true at a sample without costing the video a packet, because a tie is served in arrival "
    "order and the download's queue refills at once; the loss column says whether priority was actually lost."
)


def variant_plan(p: RegimePlan) -> RegimePlan:
    """The regime grid the sensitivity's variants run: the cells the findings compare (largest n
    and fraction, every source and discipline)."""
    return RegimePlan(reps=p.reps, duration=p.duration, n_values=(max(p.n_values),), fractions=(max(p.fractions),),
                      sources=p.sources, ivb_duration=p.ivb_duration)


def experiments(quick: bool, setting: dict[str, Any], tb: Testbed, findings_only: bool = False,
                reps: int | None = None) -> dict[str, Experiment]:
    """The regime's two experiments (``findings_only``: on the variants' grid)."""
    p = regime_plan(quick, reps)
    return {"regime": regime_experiment(variant_plan(p) if findings_only else p, setting, tb),
            "ivb": ivb_experiment(p, setting, tb)}
