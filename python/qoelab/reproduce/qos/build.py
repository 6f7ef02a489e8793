"""The QoS study's testbeds, disciplines, open choices, cells and metrics.

Two testbeds, each built by its reproduction's own builder, with only the bottleneck's queue
discipline (and, for DiffServ, the video's DSCP) changed between the cells of a repetition:

- ``sqf``: the SQF reproduction's testbed (:func:`qoelab.reproduce.sqf.build._base`: a 10 Mbit/s
  access line with a 50-packet buffer, a video and its 64 kbit/s audio over RTP, ``n`` TCP
  CUBIC downloads of 10 MB files back to back, Linux profile), under one repetition's random
  start times and clip offsets (:func:`qoelab.reproduce.sqf.build.draws`). The video is a cell
  axis: ``cif``, the bundled H.264 CIF clip (0.6 Mbit/s, the demo's; the one clip whose
  bitstream the pipeline decodes, so its PSNR is a real decode), or ``mpeg2``, the SQF paper's
  5 Mbit/s MPEG-2 elementary stream (no bitstream: no PSNR).
- ``tfd``: the TFD reproduction's dumbbell (:func:`qoelab.reproduce.tfd.build.build_scenario`:
  1 Gbit/s links, ``N`` HD videos of its headline calibration, 62 Mbit/s each, and ``K`` TCP
  CUBIC bulk flows, routers' buffer 1000 packets), every router port under the discipline; the
  reservations RSVP (the TFD paper's s3: each stream reserves its peak rate, policed against its
  Tspec) and TFD (s4: 300-ms announcements) are that builder's own scenarios and exist only
  there, where senders signal.

The disciplines are :data:`qoelab.mechanisms.MECHANISMS` (one entry each; a new one there is a
new row of both tables) and, on the dumbbell, :data:`RESERVATIONS`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.experiment import Choice
from qoelab.experiment.choices import defaults
from qoelab.experiment.core import Experiment
from qoelab.mechanisms import MECHANISMS, Mechanism, flow_keys, queue_with_limit
from qoelab.scenario import Scenario

__all__ = ["CHOICES", "CIF_TRACE", "LINE_BPS", "Plan", "RESERVATIONS", "SQF_METRICS", "TESTBEDS",
           "TFD_METRICS", "VIDEOS", "disciplines", "label", "mechanism", "experiments", "plan", "psnr_cache", "sqf_scenario", "tfd_scenario"]

TESTBEDS = ("sqf", "tfd")
#: The bottleneck's rate on each testbed (the SQF builder's access line, the TFD builder's router
#: links), for the disciplines whose parameters are rates (HTB's classes).
LINE_BPS = {"sqf": 10_000_000, "tfd": 1_000_000_000}
#: The SQF testbed's videos (a cell axis): label, and whether its bitstream decodes.
VIDEOS = {"cif": "H.264 CIF 0.6 Mbit/s (decoded)", "mpeg2": "MPEG-2 SD 5 Mbit/s (SQF paper's)"}
CIF_TRACE = "data/traces/cif_bbb_qp26.trace.csv"
#: The reservations of the TFD builder, by our name: (label, the TFD paper's scenario).
RESERVATIONS: dict[str, tuple[str, str]] = {"rsvp": ("RSVP (peak rate, Tspec policed)", "s3"),
                                            "tfd": ("TFD (300-ms announcements)", "s4")}
def label(q: str) -> str:
    """Discipline ``q``'s name in tables and findings."""
    return RESERVATIONS[q][0] if q in RESERVATIONS else mechanism(q).label


def mechanism(q: str) -> Mechanism:
    """The mechanism named ``q`` (of :data:`qoelab.mechanisms.MECHANISMS`)."""
    return next(m for m in MECHANISMS if m.name == q)
#: A playout deadline for the decode (the demo's): a video packet later than this is lost to the player.
PLAYOUT_DELAY_S = 0.5


def disciplines(testbed: str) -> tuple[str, ...]:
    """The disciplines compared on ``testbed``: every mechanism, and the reservations on the
    dumbbell."""
    return tuple(m.name for m in MECHANISMS) + (tuple(RESERVATIONS) if testbed == "tfd" else ())


CHOICES = (
    Choice("n_downloads", 5, (1, 20),
           "the SQF testbed's downloads: 5, within the SQF paper's n = 1..20 (Fig. 6) and near the demo's four; 1 and 20 "
           "are the ends of that range"),
    Choice("sqf_buffer", "50p", ("100p",), "the SQF paper's 50-MTU buffer on the access line (Sec. V-A); 100 packets "
                                           "is Linux's default txqueuelen of its era"),
    Choice("tfd_videos", 5, (10,), "N = 5 HD videos on the dumbbell, the TFD reproduction's bundled example cells "
                                   "(scenarios/tfd/s*-n5-k5.toml); 10 is the TFD paper's largest N"),
    Choice("tfd_tcp", 5, (10,), "K = 5 TCP flows, the same example cells; 10 is the TFD paper's largest K"),
    Choice("tfd_buffer", "1000p", ("50p",), "the TFD reproduction's headline calibration (62 Mbit/s trace, 1000-packet "
                                            "routers); 50 packets is ns-2's default queue, its other calibration"),
    Choice("pie_target", "15ms", ("5ms",), "RFC 8033 §4.2's QDELAY_REF and Linux sch_pie's default; 5 ms is CoDel's "
                                           "target"),
    Choice("codel_target", "5ms", ("15ms",), "RFC 8289 §4.4 (CoDel and FQ-CoDel alike, one control law); 15 ms is "
                                             "PIE's target"),
    Choice("red_thresholds", "ns2", ("scaled",),
           "ns-2's and ns-3's RED defaults (min_th 5, max_th 15 packets; docs/models/red.md); scaled: min_th a tenth "
           "of the buffer and max_th three times it (Floyd's rule of thumb), equal to the defaults at 50 packets"),
)

SQF_DURATION = "37s"
_SQF_DEFAULTS = {"ties": "neutral", "delayed_ack": True, "nic_ring": "none"}


@dataclass(frozen=True)
class Plan:
    """What one run of the study runs."""

    quick: bool
    reps: int
    sqf_duration: str
    tfd_duration_s: float


def plan(quick: bool, reps: int | None = None) -> Plan:
    """Quick: 2 repetitions (the fewest that give an interval) and 5-s dumbbell runs (CI); full:
    10 repetitions (the layer's evidence) and 60-s dumbbell runs. The SQF testbed runs 37 s in
    both: the whole CIF clip (35.4 s, unlooped so the decode can follow it) after a start of up
    to 1 s, so the decoded PSNR counts no frame the run ended before sending."""
    if quick:
        return Plan(True, reps or 2, SQF_DURATION, 5.0)
    return Plan(False, reps or 10, SQF_DURATION, 60.0)


def queue_of(m: Mechanism, buffer: str, setting: dict[str, Any], rate_bps: int) -> dict[str, Any]:
    """``m``'s queue with the testbed's ``buffer``, its line rate and the setting's AQM parameters."""
    q = queue_with_limit(m, buffer, rate_bps)
    if q["kind"] == "pie":
        q["target"] = setting["pie_target"]
    elif q["kind"] in ("codel", "fq_codel"):
        q["target"] = setting["codel_target"]
    elif q["kind"] == "red" and setting["red_thresholds"] == "scaled":
        b = int(buffer.rstrip("p"))
        lo, hi = max(1, b // 10), 3 * max(1, b // 10)
        q["min_th"], q["max_th"] = f"{lo}p", f"{hi}p"
        # WRED's protected profile keeps its place: from the default's max_th to three times it.
        q["profiles"] = [{**pr, "min_th": f"{hi}p", "max_th": f"{min(3 * hi, b)}p"} for pr in q.get("profiles", [])]
        if not q["profiles"]:
            del q["profiles"]
    return q


# --- the SQF testbed ---------------------------------------------------------------------------


def sqf_scenario(p: Plan, c: dict[str, Any], rep: int, setting: dict[str, Any] | None = None) -> Scenario:
    """The SQF testbed of repetition ``rep`` (its draws) with cell ``c``'s video and discipline."""
    from qoelab.reproduce.sqf.build import _base, draws

    s = setting or defaults(CHOICES)
    d = draws(rep)
    sc = _base(d, p.sqf_duration, _SQF_DEFAULTS)
    if c["video"] == "cif":
        # Unlooped from its first frame, so the decode can follow it (the clip outlasts the run).
        sc.set("flows[0].app", {"kind": "video", "trace": f"../../{CIF_TRACE}", "pacing": "frame"})
        sc.set("flows[0].packet_log", True)
    m = mechanism(c["discipline"])
    sc.set("links[2].queue_ab", queue_of(m, s["sqf_buffer"], s, LINE_BPS["sqf"]))
    sc.set("flows[2].count", int(s["n_downloads"]))
    for i, f in enumerate(sc.get("flows")):
        for k, v in flow_keys(m, str(f["name"])).items():
            sc.set(f"flows[{i}].{k}", v)
    return sc


def psnr_cache(run_dir: Path) -> Path:
    return run_dir / "psnr.json"


def _sqf_metrics(d: Path, c: dict[str, Any], n: int) -> dict[str, float]:
    """The SQF reproduction's testbed metrics (loss, jitter, the downloads' goodput and Jain's
    index) with the video's delay, its RFC 3550 jitter and its decoded PSNR (NaN until decoded,
    and for a video without a bitstream)."""
    import pyarrow.parquet as pq

    from qoelab.reproduce.sqf.measure import _testbed_metrics

    m = _testbed_metrics(d, {"n": n})
    v = next(r for r in pq.read_table(d / "flows.parquet").to_pylist() if r["flow"] == "video")
    cache = psnr_cache(d)
    psnr = float(json.loads(cache.read_text())["mean_psnr_y_vs_source_db"]) if cache.is_file() else math.nan
    return {"video_loss_pct": 100.0 * m["video_loss"], "video_delay_ms": 1e3 * v["delay_mean_s"],
            "video_delay_p99_ms": 1e3 * v["delay_p99_s"], "video_jitter_ms": 1e3 * v["jitter_rfc3550_s"],
            "video_psnr_db": psnr, "audio_loss_pct": 100.0 * m["audio_loss"], "downloads_mbps": m["data_share_mbps"],
            "jain": m["jain"]}


SQF_METRICS = ("video_loss_pct", "video_delay_ms", "video_delay_p99_ms", "video_jitter_ms", "video_psnr_db",
               "audio_loss_pct", "downloads_mbps", "jain")


# --- the TFD dumbbell --------------------------------------------------------------------------


@cache
def _trace() -> tuple[Path, int, int]:
    """The headline calibration's trace, its peak rate and its largest frame (the Tspec)."""
    from qoelab.reproduce.tfd.build import HEADLINE, max_frame_bytes, peak_rate_bps

    trace = paths.root() / HEADLINE.trace_path
    return trace, peak_rate_bps(trace), max_frame_bytes(trace)


def tfd_scenario(p: Plan, c: dict[str, Any], rep: int, setting: dict[str, Any] | None = None) -> Scenario:
    """The TFD dumbbell of repetition ``rep`` (its clips and offsets: the TFD builder's seed
    ``1 + rep``) under cell ``c``'s discipline: a reservation is the builder's own scenario;
    any other replaces the best-effort routers' queue on every router port."""
    from qoelab.reproduce.tfd.build import DEFAULT_PROFILE, build_scenario

    s = setting or defaults(CHOICES)
    trace, peak, bucket = _trace()
    q = c["discipline"]
    sc_name = RESERVATIONS[q][1] if q in RESERVATIONS else "s1"
    d = build_scenario(sc_name, int(s["tfd_videos"]), int(s["tfd_tcp"]), 1 + rep, p.tfd_duration_s, trace, peak,
                       buffer=s["tfd_buffer"], profile=DEFAULT_PROFILE, police=sc_name in ("s2", "s3"),
                       bucket_bytes=bucket)
    if q not in RESERVATIONS:
        m = mechanism(q)
        for link in d["links"][2:6]:  # the four router ports (the builder's Fig. 2)
            link["queue"] = queue_of(m, s["tfd_buffer"], s, LINE_BPS["tfd"])
        for f in d["flows"]:
            f.update(flow_keys(m, str(f["name"])))
    d["name"] = f"qos-tfd-{q}"
    return Scenario.from_dict(d, source=f"reproduce qos {d['name']}", base_dir=paths.root())


def _tfd_metrics(d: Path, p: Plan) -> dict[str, float]:
    """The TFD reproduction's cell metrics (the videos' loss, delay, jitter; the TCP flows'
    goodput) with the TCP flows' Jain index."""
    import pyarrow.parquet as pq

    from qoelab.reproduce.tfd.build import cell_metrics
    from qoelab.verify.closed_forms import jain

    m = cell_metrics(d, p.tfd_duration_s)
    tcp = [r["goodput_bps"] or 0.0 for r in pq.read_table(d / "flows.parquet").to_pylist() if r["flow"].startswith("tcp")]
    return {"video_loss_pct": m["per_pct"], "video_delay_ms": m["video_delay_ms"],
            "video_delay_p99_ms": m["video_delay_p99_ms"], "video_jitter_ms": m["video_jitter_ms"],
            "video_mbps": m["video_mbps"], "downloads_mbps": m["tcp_mbps"],
            "jain": jain(tcp) if tcp and any(tcp) else math.nan}


TFD_METRICS = ("video_loss_pct", "video_delay_ms", "video_delay_p99_ms", "video_jitter_ms", "video_mbps",
               "downloads_mbps", "jain")


# --- the experiments ---------------------------------------------------------------------------


def experiments(p: Plan, setting: dict[str, Any] | None = None) -> dict[str, Experiment]:
    """Both testbeds as experiments of the layer under ``setting`` (the choices). Every
    parameter is a treatment: all cells of a repetition share its seed (and its draws), so
    every comparison with FIFO is paired run by run."""
    s = setting or defaults(CHOICES)
    n = int(s["n_downloads"])

    def sqf_build(c: dict[str, Any], rep: int) -> Scenario:
        return sqf_scenario(p, c, rep, s)

    def tfd_build(c: dict[str, Any], rep: int) -> Scenario:
        return tfd_scenario(p, c, rep, s)

    def sqf_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
        return _sqf_metrics(d, c, n)

    def tfd_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
        return _tfd_metrics(d, p)

    build: dict[str, Callable[..., Any]] = {"sqf": sqf_build, "tfd": tfd_build}
    return {
        "sqf": Experiment("qos-sqf", [{"video": v, "discipline": q} for v in VIDEOS for q in disciplines("sqf")],
                          build["sqf"], sqf_metrics, paired=("video", "discipline"), reps=p.reps, per_rep=True),
        "tfd": Experiment("qos-tfd", [{"discipline": q} for q in disciplines("tfd")], build["tfd"], tfd_metrics,
                          paired=("discipline",), reps=p.reps, per_rep=True),
    }
