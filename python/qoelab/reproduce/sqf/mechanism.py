"""How SQF+LQD de-prioritises the video, and whether it starves downloads, measured from the
simulator's own records of a few cells (issue 36, item 4).

A mechanism run is a testbed cell (or the model check's Poisson cell) with SQF's per-flow
backlog samples (``flow_sample``) and the ``drops``, ``queue`` and ``rto`` probes
(``docs/models/probes.md``) switched on at the access line; :func:`mechanism_metrics` turns one
into a row:

- which queue is the longest and how often (:func:`queue_ranks`): over the samples with
  something queued, the share where the video is queued, where it is the longest queue (no
  download holds more bytes: LQD's victim), and where SQF's test is true (some active download
  holds no more bytes than the video: the video is not served first); the video's backlog and
  the smallest and largest download backlog in packets (medians);
- how long the video stays de-prioritised and how it regains priority (:func:`episodes`): runs
  of consecutive samples with SQF's test true, their lengths, and how each ends (the video's
  queue emptied, or every download's backlog above the video's again);
- who LQD drops (:func:`drop_split`): the access line's drops by flow (video, audio, downloads)
  and cause (push-out of a queued packet, refusal on arrival);
- whether the downloads back off and who starves (:func:`download_stats`,
  :func:`service_gaps`): per-download goodput, Jain's index, timeouts, drops, and the download's
  service gaps (no packet of it served for a while) split by whether it had packets queued
  through the gap (held back by the scheduler) or none (its sender silent: waiting for a
  timeout).

The functions take plain arrays, so ``tests/reproduce/test_sqf_mechanism.py`` checks them on a
hand-made table; the grid (:func:`experiment`) runs under ``qoelab reproduce sqf`` and the report
quotes its table (``mechanism.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.parquet as pq

from qoelab.reproduce.sqf.measure import _duration, _flows, backlog_matrix, read_backlogs

#: The access line: the port whose discipline is under test.
LINK = "router->client"
#: Bytes of one full packet (a TCP segment or an ES video packet), for backlogs in packets.
PKT_BYTES = 1500
#: The model check's packet (every packet there is 1250 B).
MODEL_PKT_BYTES = 1250
#: A download's service gap: no packet of it served for at least this long (a few RTOs of the
#: testbed's LAN are far shorter; Linux's minimum RTO is 200 ms).
GAP_S = 0.2
#: A download below this goodput counts as starved (the figure issue 36 quotes).
STARVED_BPS = 20e3
#: The model-check cell the mechanism grid runs (λ, Mbit/s): where the issue saw Jain 0.07.
MODEL_RATE_MBPS = 8.0
#: A backlog of at most this many packets is "a few packets" in the reading (a tenth of the
#: testbed's buffer).
SHORT_PKTS = 5
#: The probes a mechanism run records.
PROBES = ["drops", "queue", "rto"]


# --------------------------------------------------------------------------------------------
# Analysis: plain arrays in, numbers out
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Backlogs:
    """Per-flow backlog samples as a matrix: ``bytes[k, j]`` is flow ``names[k]``'s backlog at
    ``instants[j]`` (0 where the flow had nothing queued), ``dt[j]`` the time to the next sample
    (the last one to the run's end)."""

    instants: np.ndarray
    names: list[str]
    bytes: np.ndarray
    dt: np.ndarray

    def of(self, name: str) -> np.ndarray:
        return self.bytes[self.names.index(name)] if name in self.names else np.zeros(self.instants.size)


def backlogs(t_s: np.ndarray, flow: list[str], nbytes: np.ndarray, duration_s: float) -> Backlogs:
    """The ``flow_queues`` rows (``t_s, flow, bytes``, one row per active flow and instant, an
    empty flow name for an instant with nothing queued) as a :class:`Backlogs`."""
    instants, names, m = backlog_matrix(t_s, flow, nbytes)
    dt = np.diff(np.append(instants, max(duration_s, instants[-1] if instants.size else 0.0)))
    return Backlogs(instants, names, m, dt)


def _downloads(b: Backlogs, video: str, others: tuple[str, ...]) -> np.ndarray:
    keep = [k for k, f in enumerate(b.names) if f != video and f not in others]
    return b.bytes[keep] if keep else np.zeros((0, b.instants.size))


def deprioritised(video: np.ndarray, dl: np.ndarray) -> np.ndarray:
    """SQF's test at each sample: the video has packets queued and some active download has no
    more bytes than it, so the video is not the one served first."""
    active = dl > 0
    return (video > 0) & np.any(active & (dl <= video[np.newaxis, :]), axis=0)


def queue_ranks(b: Backlogs, video: str = "video", others: tuple[str, ...] = ("audio",),
                pkt_bytes: int = PKT_BYTES) -> dict[str, float]:
    """Which queue is the longest and how often, over the samples with something queued (shares
    of samples, not of time: a sample is taken at the first queue change of each interval):
    the video queued, the video the longest queue (``video_longest_share``: no download holds
    more bytes; ``video_strictly_longest_share``: every download holds fewer), SQF's test true,
    ``service_tie_share``: two or more queues (any flow's) share the smallest backlog, so the
    tie rule picks the one served; ``drop_tie_share``: two or more share the largest, so the
    tie rule picks LQD's victim. Backlogs in packets of ``pkt_bytes``."""
    v = b.of(video)
    dl = _downloads(b, video, others)
    busy = (v > 0) | np.any(dl > 0, axis=0) if dl.size else v > 0
    nb = int(busy.sum())
    dmax = dl.max(axis=0) if dl.size else np.zeros(v.size)
    any_active = np.any(dl > 0, axis=0) if dl.size else np.zeros(v.size, bool)
    dmin = np.where(dl > 0, dl, np.inf).min(axis=0) if dl.size else np.full(v.size, np.inf)
    longest = (v > 0) & (v >= dmax)
    strictly = (v > 0) & (v > dmax)
    act = np.where(b.bytes > 0, b.bytes, np.inf)
    smallest = act.min(axis=0) if act.size else np.full(v.size, np.inf)
    tie = np.isfinite(smallest) & (np.sum(act == smallest[np.newaxis, :], axis=0) >= 2)
    largest = b.bytes.max(axis=0) if b.bytes.size else np.zeros(v.size)
    drop_tie = (largest > 0) & (np.sum(b.bytes == largest[np.newaxis, :], axis=0) >= 2)
    dep = deprioritised(v, dl)
    share = (lambda m: float(np.sum(m & busy) / nb)) if nb else (lambda m: float("nan"))
    med = lambda x: float(np.median(x)) if x.size else float("nan")  # noqa: E731
    q = v > 0
    return {
        "samples": float(nb),
        "video_queued_share": share(q),
        "video_longest_share": share(longest),
        "video_strictly_longest_share": share(strictly),
        "service_tie_share": share(tie),
        "drop_tie_share": share(drop_tie),
        "deprioritised_share": share(dep),
        "video_pkts_median": med(v[q] / pkt_bytes),
        "min_download_pkts_median": med(dmin[any_active & q] / pkt_bytes),
        "max_download_pkts_median": med(dmax[any_active & q] / pkt_bytes),
    }


def episodes(b: Backlogs, video: str = "video", others: tuple[str, ...] = ("audio",)) -> dict[str, Any]:
    """Runs of consecutive samples with SQF's test true (:func:`deprioritised`): each lasts from
    its first sample to the first sample after it (the run's end for the last), and ends either
    with the video's queue empty (``drained``: its packets served or pushed out) or with every
    active download holding more bytes than the video again (``shortest``), or with the run."""
    v = b.of(video)
    mask = deprioritised(v, _downloads(b, video, others))
    t_end = b.instants[-1] + b.dt[-1] if b.instants.size else 0.0
    durations: list[float] = []
    ends = {"drained": 0, "shortest": 0, "run_end": 0}
    j, n = 0, mask.size
    while j < n:
        if not mask[j]:
            j += 1
            continue
        k = j
        while k < n and mask[k]:
            k += 1
        if k == n:
            durations.append(float(t_end - b.instants[j]))
            ends["run_end"] += 1
        else:
            durations.append(float(b.instants[k] - b.instants[j]))
            ends["drained" if v[k] == 0 else "shortest"] += 1
        j = k
    d = np.array(durations)
    q = (lambda p: float(np.percentile(d, p))) if d.size else (lambda p: float("nan"))
    return {"episodes": len(durations), "episode_median_s": q(50), "episode_p90_s": q(90),
            "episode_max_s": float(d.max()) if d.size else float("nan"),
            "episode_time_s": float(d.sum()), "ends": ends, "durations_s": d}


def drop_split(flow: list[str], cause: list[str], video: str = "video", audio: str = "audio") -> dict[str, float]:
    """The drops of one port by flow (video, audio, downloads: every other flow) and the share
    of the video's and the downloads' that were pushed out after being queued (``queued``)."""
    f = np.asarray(flow, dtype=object)
    c = np.asarray(cause, dtype=object)
    is_v, is_a = f == video, f == audio
    is_d = ~is_v & ~is_a
    pushed = c == "queued"
    frac = lambda m: float(np.sum(m & pushed) / np.sum(m)) if np.sum(m) else float("nan")  # noqa: E731
    return {"drops_video": float(is_v.sum()), "drops_audio": float(is_a.sum()), "drops_downloads": float(is_d.sum()),
            "video_pushout_share": frac(is_v), "downloads_pushout_share": frac(is_d)}


def jain(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(x.sum() ** 2 / (x.size * np.sum(x * x))) if x.size and np.any(x) else float("nan")


def download_stats(goodput_bps: np.ndarray, rto_count: np.ndarray, drops: np.ndarray) -> dict[str, float]:
    """Per-download goodput, timeouts and drops, summarised: the goodput's spread, Jain's index,
    the downloads below :data:`STARVED_BPS`, the timeouts per download and how many had one."""
    g = np.asarray(goodput_bps, dtype=float)
    r = np.asarray(rto_count, dtype=float)
    d = np.asarray(drops, dtype=float)
    return {"downloads": float(g.size), "dl_goodput_min_kbps": float(g.min() / 1e3),
            "dl_goodput_median_kbps": float(np.median(g) / 1e3), "dl_goodput_max_kbps": float(g.max() / 1e3),
            "dl_jain": jain(g), "dl_starved": float(np.sum(g < STARVED_BPS)), "dl_rto_mean": float(r.mean()),
            "dl_rto_max": float(r.max()), "dl_with_rto": float(np.sum(r > 0)), "dl_drops_mean": float(d.mean())}


def held_at(t: np.ndarray, backlog_t: np.ndarray, backlog: np.ndarray) -> np.ndarray:
    """Whether the flow had packets queued at each time of ``t``, from its backlog samples (the
    last sample at or before the time; none before the first sample)."""
    k = np.searchsorted(np.asarray(backlog_t, dtype=float), np.asarray(t, dtype=float), side="right") - 1
    bb = np.asarray(backlog, dtype=float)
    return (k >= 0) & (bb[np.maximum(k, 0)] > 0) if bb.size else np.zeros(np.size(t), bool)


def service_gaps(served_t: np.ndarray, backlog_t: np.ndarray, backlog: np.ndarray, start_s: float, end_s: float,
                 gap_s: float = GAP_S) -> tuple[float, float]:
    """One download's service gaps: intervals of at least ``gap_s`` between consecutive packets of
    it served (from ``start_s``, its first packet, to ``end_s``). Returns (total gap time, the
    part of it during which the download had packets queued), the latter from its backlog
    samples (``backlog_t``, ``backlog``: its bytes at each sampling instant, 0 when absent),
    each sample standing for the time to the next."""
    edges = np.concatenate(([start_s], np.sort(np.asarray(served_t, dtype=float)), [end_s]))
    gaps = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b - a >= gap_s]
    bt = np.asarray(backlog_t, dtype=float)
    bb = np.asarray(backlog, dtype=float)
    total = held = 0.0
    for a, b in gaps:
        total += b - a
        # Piecewise constant between samples; the value in force at a is the last sample <= a.
        k0 = max(int(np.searchsorted(bt, a, side="right")) - 1, 0)
        k1 = int(np.searchsorted(bt, b, side="left"))
        for k in range(k0, k1):
            lo, hi = max(bt[k], a), min(bt[k + 1] if k + 1 < bt.size else b, b)
            if hi > lo and bb[k] > 0:
                held += hi - lo
    return total, held


# --------------------------------------------------------------------------------------------
# One finished run → one row
# --------------------------------------------------------------------------------------------

#: The per-repetition metrics of a mechanism run (``mechanism.csv``), in the table's order.
METRICS = ("video_loss", "video_queued_share", "video_longest_share", "video_strictly_longest_share",
           "deprioritised_share", "service_tie_share", "drop_tie_share", "video_pkts_median",
           "min_download_pkts_median", "max_download_pkts_median", "episodes", "episode_median_s", "episode_p90_s",
           "episode_max_s", "episode_time_share", "ends_drained_share", "drops_video", "drops_downloads",
           "video_pushout_share", "dl_goodput_min_kbps", "dl_goodput_median_kbps", "dl_goodput_max_kbps", "dl_jain",
           "dl_starved", "dl_rto_mean", "dl_rto_max", "dl_with_rto", "dl_drops_mean", "rto_held_share",
           "gap_share", "gap_held_share")


def _probe(d: Path, kind: str, columns: list[str]) -> dict[str, list[Any]]:
    """A probe's columns from a run folder (none written when the probe recorded nothing)."""
    f = d / f"probe_{kind}.parquet"
    return pq.read_table(f, columns=columns).to_pydict() if f.exists() else {c: [] for c in columns}


def mechanism_metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
    """A finished mechanism run (folder ``d``) → one row of :data:`METRICS`."""
    duration = _duration(d)
    fl = _flows(d)
    video = "video"
    names = sorted((f for f in fl if f not in ("video", "audio")), key=lambda f: (len(f), f))
    b = Backlogs(*read_backlogs(d, LINK))
    row: dict[str, float] = {"video_loss": float(fl[video]["loss_ratio"])}
    pkt = MODEL_PKT_BYTES if c.get("setup") == "model" else PKT_BYTES
    row.update({k: v for k, v in queue_ranks(b, pkt_bytes=pkt).items() if k != "samples"})
    ep = episodes(b)
    ended = ep["ends"]["drained"] + ep["ends"]["shortest"]
    row.update({k: ep[k] for k in ("episodes", "episode_median_s", "episode_p90_s", "episode_max_s")},
               episode_time_share=ep["episode_time_s"] / duration,
               ends_drained_share=ep["ends"]["drained"] / ended if ended else float("nan"))
    dr = _probe(d, "drops", ["link", "flow", "cause"])
    at = [k for k, lk in enumerate(dr["link"]) if lk == LINK]
    split = drop_split([dr["flow"][k] for k in at], [dr["cause"][k] for k in at])
    row.update({k: split[k] for k in ("drops_video", "drops_downloads", "video_pushout_share")})
    per_drop = {f: 0 for f in names}
    for k in at:
        if dr["flow"][k] in per_drop:
            per_drop[dr["flow"][k]] += 1
    row.update(download_stats(np.array([fl[f]["goodput_bps"] for f in names]),
                              np.array([fl[f]["rto_count"] or 0 for f in names]),
                              np.array([per_drop[f] for f in names])))
    row.pop("downloads")
    qt = _probe(d, "queue", ["t_ns", "flow", "link", "event"])
    served: dict[str, list[float]] = {f: [] for f in names}
    for t, f, lk, ev in zip(qt["t_ns"], qt["flow"], qt["link"], qt["event"]):
        if lk == LINK and ev == "dequeue" and f in served:
            served[f].append(t / 1e9)
    rt = _probe(d, "rto", ["t_ns", "flow"])
    rto_held = [bool(held_at(np.array([t / 1e9]), b.instants, b.of(f))[0]) for t, f in zip(rt["t_ns"], rt["flow"])
                if f in served]
    row["rto_held_share"] = float(np.mean(rto_held)) if rto_held else float("nan")
    total = held = 0.0
    for f in names:
        if served[f]:
            tot, h = service_gaps(np.array(served[f]), b.instants, b.of(f), served[f][0], duration)
            total, held = total + tot, held + h
    active = sum(duration - s[0] for s in served.values() if s)
    row["gap_share"] = float(total / active) if active else float("nan")
    row["gap_held_share"] = float(held / total) if total else float("nan")
    return {k: float(row[k]) for k in METRICS}


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------

def cells(quick: bool) -> list[dict[str, Any]]:
    """The mechanism grid: the testbed's SQF cell at n = 20 (and n = 5 in full), ES sender (and
    TS in full), and the model check's Poisson cell at n = 20, each under neutral ties (the
    default) and under ties broken by flow key (the testbed file's order), which is where the
    starvation figures of issue 36 came from."""
    ties = ("neutral", "key")
    tb = [("es", 20)] if quick else [(m, n) for m in ("es", "ts") for n in (5, 20)]
    return ([{"setup": "testbed", "mode": m, "n": n, "ties": t} for m, n in tb for t in ties]
            + [{"setup": "model", "mode": "poisson", "n": 20, "ties": t} for t in ties])


def builder(testbed: Callable[[dict[str, Any], int], Any], model: Callable[[dict[str, Any]], Any]):
    """The cells' builder from the testbed's (``c`` with mode, discipline, n; rep → scenario,
    under a setting of the choices) and the model check's builders: SQF with 10-ms backlog
    samples and :data:`PROBES` on, ties as the cell says."""

    def build(c: dict[str, Any], rep: int):
        if c["setup"] == "testbed":
            sc = testbed({"mode": c["mode"], "discipline": "sqf", "n": c["n"]}, rep)
            sc.set("links[2].queue_ab", {**sc.get("links[2].queue_ab"), "flow_sample": "10ms", "ties": c["ties"]})
        else:
            sc = model({"n": c["n"], "peak_rate_mbps": MODEL_RATE_MBPS})
            sc.set("links[1].queue_ab", {**sc.get("links[1].queue_ab"), "ties": c["ties"]})
        sc.set("output", {"probes": list(PROBES)})
        return sc

    return build


# --------------------------------------------------------------------------------------------
# The report's section: the table and the reading, generated from the aggregated rows
# --------------------------------------------------------------------------------------------

KEYS = ("setup", "mode", "n", "ties")


def _m(r: dict[str, Any], k: str) -> float:
    e = r.get(k)
    return float("nan") if e is None else float(e.mean)


def _p(x: float) -> str:
    return "–" if x != x else f"{100 * x:.3g} %"


def _g(x: float, unit: str = "") -> str:
    return "–" if x != x else f"{x:.3g}{unit}"


def _c(x: float) -> str:
    """A count (a mean over repetitions), whole."""
    return "–" if x != x else f"{x:.0f}"


def cell_name(r: dict[str, Any]) -> str:
    from qoelab.reproduce.sqf.paper import MODES

    what = (f"testbed, {MODES[r['mode']][0]}" if r["setup"] == "testbed"
            else f"model check, Poisson λ = {MODEL_RATE_MBPS:g} Mbit/s")
    return f"{what}, n = {r['n']}, {r['ties']} ties"


def table(rows: list[dict[str, Any]]):
    """The report's mechanism table (means over the repetitions; every metric with its interval
    in ``mechanism.csv``)."""
    from qoelab.experiment.tables import Column, Table

    cols = [Column("cell", "cell"), Column("video_longest_share", "video longest", "%", "ours", 100.0),
            Column("video_strictly_longest_share", "strictly", "%", "ours", 100.0),
            Column("deprioritised_share", "not served first", "%", "ours", 100.0),
            Column("video_pkts_median", "video backlog", "pkts", "ours"),
            Column("min_download_pkts_median", "smallest download", "pkts", "ours"),
            Column("episode_median_s", "episode median", "s", "ours"), Column("episode_max_s", "longest", "s", "ours"),
            Column("drops_video", "video drops", "", "ours"), Column("drops_downloads", "download drops", "", "ours"),
            Column("dl_rto_mean", "timeouts per download", "", "ours"),
            Column("dl_goodput_min_kbps", "slowest download", "kbit/s", "ours"), Column("dl_jain", "Jain", "", "ours")]
    return Table("mechanism", "De-prioritisation and starvation under SQF, from the access line's backlog samples and "
                 "drop records (means ± 95 % half-width over the repetitions; backlogs are medians of the samples with "
                 "the video queued)", cols, [{**r, "cell": cell_name(r)} for r in rows], csv="mechanism.csv",
                 note="Shares are of the 10-ms backlog samples with something queued at the access line. 'Video "
                      "longest': no download holds more bytes than the video (LQD's victim, ties drawn); 'strictly': "
                      "every download holds fewer; 'not served first': SQF's test, some active download holds no more "
                      "bytes than the video. An episode is a run of consecutive samples with that test true.")


def reading(rows: list[dict[str, Any]]) -> list[str]:
    """The mechanism's reading: every figure quoted from ``rows`` (the aggregated table), and the
    conclusions drawn only where the figures carry them."""
    L = ["### How SQF de-prioritises the video, and whether it starves downloads (from the data)", ""]
    for r in rows:
        reps = r["video_loss"].n
        L.append(
            f"- {cell_name(r)} ({reps} repetitions): of the samples with something queued, the video is queued in "
            f"{_p(_m(r, 'video_queued_share'))}, the longest queue in {_p(_m(r, 'video_longest_share'))} (strictly "
            f"longer than every download in {_p(_m(r, 'video_strictly_longest_share'))}) and not served first in "
            f"{_p(_m(r, 'deprioritised_share'))}; median backlogs: video {_g(_m(r, 'video_pkts_median'))} packets, "
            f"smallest download {_g(_m(r, 'min_download_pkts_median'))}, largest "
            f"{_g(_m(r, 'max_download_pkts_median'))}. Two or more queues share the smallest backlog in "
            f"{_p(_m(r, 'service_tie_share'))} of the samples, the largest in {_p(_m(r, 'drop_tie_share'))}. "
            f"De-prioritised episodes: {_g(_m(r, 'episodes'))} per run, "
            f"median {_g(_m(r, 'episode_median_s'), ' s')}, 90th percentile {_g(_m(r, 'episode_p90_s'), ' s')}, longest "
            f"{_g(_m(r, 'episode_max_s'), ' s')}, together {_p(_m(r, 'episode_time_share'))} of the run; "
            f"{_p(_m(r, 'ends_drained_share'))} of those that ended did so with the video's queue empty, the rest with "
            f"every download above the video again. Drops at the access line per run: video "
            f"{_c(_m(r, 'drops_video'))} ({_p(_m(r, 'video_pushout_share'))} pushed out after being queued), downloads "
            f"{_c(_m(r, 'drops_downloads'))} ({_g(_m(r, 'dl_drops_mean'))} per download). Downloads: goodput "
            f"{_g(_m(r, 'dl_goodput_min_kbps'))} / {_g(_m(r, 'dl_goodput_median_kbps'))} / "
            f"{_g(_m(r, 'dl_goodput_max_kbps'))} kbit/s (slowest / median / fastest), Jain {_g(_m(r, 'dl_jain'))}, "
            f"{_g(_m(r, 'dl_starved'))} below {STARVED_BPS / 1e3:g} kbit/s; {_g(_m(r, 'dl_rto_mean'))} timeouts per "
            f"download (at most {_g(_m(r, 'dl_rto_max'))}), {_p(_m(r, 'rto_held_share'))} of them fired while the "
            f"download still had packets queued at the access line; the downloads spent "
            f"{_p(_m(r, 'gap_share'))} of their time in service gaps of at least {GAP_S:g} s, with packets queued "
            f"through {_p(_m(r, 'gap_held_share'))} of that gap time; video loss {_p(_m(r, 'video_loss'))}.")
    L += [""] + _conclusions(rows) + [""]
    return L


def _span(rs: list[dict[str, Any]], k: str, fmt: Callable[[float], str] = _g) -> str:
    """The range of a metric's means over cells (one value when they agree)."""
    lo, hi = min(_m(r, k) for r in rs), max(_m(r, k) for r in rs)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)} to {fmt(hi)}"


def _conclusions(rows: list[dict[str, Any]]) -> list[str]:
    """What the figures above support, sentence by sentence, each with its figures; a statement
    is made only where every cell it speaks of carries it."""
    out: list[str] = []
    tb = [r for r in rows if r["setup"] == "testbed" and r["ties"] == "neutral"]
    if tb:
        vp = max(_m(r, "video_pkts_median") for r in tb)
        small = min(_m(r, "min_download_pkts_median") for r in tb)
        out.append(f"- Which queue is longest (testbed, neutral ties): the video is strictly the longest queue in "
                   f"{_span(tb, 'video_strictly_longest_share', _p)} of the samples; its median backlog is at most "
                   f"{_g(vp)} packets against a "
                   f"smallest download backlog of {_g(small)}"
                   + (": it loses SQF's priority by holding a packet or two more than the shortest download, not by "
                      "growing long." if vp <= SHORT_PKTS else "."))
        dd = min(_m(r, "drops_downloads") for r in tb)
        rto = min(_m(r, "dl_rto_mean") for r in tb)
        if dd > 0 and rto > 0:
            out.append(f"- The downloads do back off: LQD and refusals drop {_span(tb, 'drops_downloads', _c)} of their "
                       f"packets per run (the video's: {_span(tb, 'drops_video', _c)}), and a download times out "
                       f"{_span(tb, 'dl_rto_mean')} times per run on average; "
                       + "; ".join(f"{_c(_m(r, 'dl_with_rto'))} of the {r['n']} downloads of the {cell_name(r)} cell "
                                   "timed out at least once" for r in tb) + ".")
        eps = min(_m(r, "episodes") for r in tb)
        if eps > 1:
            out.append(f"- Losing priority is not absorbing: the video regains it between episodes ({_g(eps)} or more "
                       f"per run, median length {_span(tb, 'episode_median_s')} s), most often when its own queue empties "
                       f"({_p(min(_m(r, 'ends_drained_share') for r in tb))} or more of the endings); but the longest "
                       f"episode lasts {_g(min(_m(r, 'episode_max_s') for r in tb), ' s')} or more, and the episodes "
                       f"cover {_p(min(_m(r, 'episode_time_share') for r in tb))} or more of the run.")
    pairs = [(a, b) for a in rows for b in rows if a["ties"] == "neutral" and b["ties"] == "key"
             and all(a[k] == b[k] for k in ("setup", "mode", "n"))]
    if pairs:
        fair = all(_m(a, "dl_jain") >= 0.9 for a, _ in pairs)
        starved = all(_m(b, "dl_jain") < 0.9 for _, b in pairs)
        span = _span
        na, nb = [a for a, _ in pairs], [b for _, b in pairs]
        out.append(f"- Starvation: with neutral ties the downloads' Jain index is {span(na, 'dl_jain')}; with ties "
                   f"broken by flow key the same cells give {span(nb, 'dl_jain')}, with {span(nb, 'dl_starved')} "
                   f"downloads below {STARVED_BPS / 1e3:g} kbit/s and {span(nb, 'dl_rto_mean')} timeouts per download.")
        if fair and starved:
            out.append(f"- Cause: the tie rule, the only difference between the paired cells. Two or more queues "
                       f"share the smallest backlog (a service tie) in {span(nb, 'service_tie_share', _p)} of the "
                       f"samples and the largest (a drop tie) in {span(nb, 'drop_tie_share', _p)}, and a key order "
                       "settles every one of them the same way. The starved downloads are held, not silent: packets "
                       f"of theirs stay queued through {span(nb, 'gap_held_share', _p)} of their service gaps, and "
                       f"{span(nb, 'rto_held_share', _p)} of their timeouts fire while those packets are still queued.")
        elif not fair:
            out.append("- Cause: not the tie rule alone; the downloads are unfair with neutral ties too.")
        elif any(_m(b, "dl_jain") < 0.9 for b in nb):
            out.append("- Cause: mixed; the key order starves downloads in some of these cells and not in others "
                       "(the rows above).")
        else:
            out.append("- No starvation under either tie rule in these cells.")
        if all(_m(a, "rto_held_share") > 0.5 for a in na):
            out.append(f"- Timeouts without starvation: with neutral ties each download still times out "
                       f"{span(na, 'dl_rto_mean')} times per run, and {span(na, 'rto_held_share', _p)} of those "
                       "timeouts fire while its packets are queued at the access line: SQF holds a download's "
                       "packets behind shorter queues for longer than its retransmission timeout.")
    return out
