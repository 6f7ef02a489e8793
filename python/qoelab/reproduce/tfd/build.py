"""The TFD reproduction's testbed: the HD trace (or a synthetic stand-in), its rates, one grid
cell as a scenario (our reading of the paper's Fig. 2), the cell files bundled in
``scenarios/tfd/``, the metrics of one run and the paper's Tables I and II as typed."""

from __future__ import annotations

import csv
import gzip
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qoelab import paths
from qoelab.errors import QoelabError

SCENARIOS = ("s1", "s2", "s3", "s4")
#: The paper's stated target rate (the ``stated`` basis of s2's reservation; a trace's own target
#: is :func:`target_rate_bps`).
TARGET_BPS = 40_000_000
#: s2's static reservation as a multiple of the target rate (the paper: 150 %).
S2_SHARE = 1.5
TRACE = "data/traces/hd1080_40M.trace.csv.gz"
#: The bundled traces a calibration may use, by the name the CLI and the folders use.
TRACES = {"40M": TRACE, "62M": "data/traces/hd1080_62M.trace.csv.gz"}
CLIPS = 8
CLIP_S = 19.0
FULL_S = 152.0
DATA = Path(__file__).resolve().parent.parent / "data"
#: TCP profiles a grid may run (``docs/models/tcp.md``); new runs default to Linux's.
PROFILES = ("linux", "rfc", "ns3", "freebsd")
DEFAULT_PROFILE = "linux"
#: Routers' best-effort buffer of the first calibration (our choice; the paper does not give it).
BUFFER = "1000p"
#: ns-2's default queue limit (ns-default.tcl, ``Queue set limit_ 50``).
NS2_BUFFER = "50p"


@dataclass(frozen=True)
class Grid:
    """The cells of one run of the testbed: scenarios × N streams × K TCP flows, and the run
    length."""

    scenarios: tuple[str, ...]
    n: tuple[int, ...]
    k: tuple[int, ...]
    duration_s: float


FULL = Grid(SCENARIOS, tuple(range(1, 11)), tuple(range(0, 11)), FULL_S)
QUICK = Grid(SCENARIOS, (1, 4, 10), (0, 3, 10), 8.0)
#: The grids of the sensitivity's variants (``--sensitivity``): the subset of cells issue 36
#: suggests (N ∈ {1, 5, 10} × K ∈ {0, 5, 10}, all four scenarios), and in quick mode two of each.
SENS_FULL = Grid(SCENARIOS, (1, 5, 10), (0, 5, 10), FULL_S)
SENS_QUICK = Grid(SCENARIOS, (1, 10), (0, 10), 8.0)
#: Repetitions per cell of the sensitivity's settings in a full run (at most ``--reps``): issue
#: 36's "at least 10". Its 36 cells × 12 settings at the headline's 20 would cost as much again
#: as the headline grid (about 25 CPU-s per saturated 152-s run, ``docs/performance.md``).
SENS_REPS = 10


# --- the calibrations: what the paper leaves open and changes the results most ---------------------


@dataclass(frozen=True)
class Calibration:
    """What the paper leaves open and we choose: the trace's rate (a key of :data:`TRACES`) and
    the routers' best-effort buffer."""

    trace: str
    buffer: str

    @property
    def key(self) -> str:
        return f"{self.trace}-{self.buffer}"

    @property
    def trace_path(self) -> str:
        return TRACES[self.trace]

    def folder(self, profile: str) -> str:
        return f"{profile}-{self.key}"


CALIBRATIONS = tuple(Calibration(t, b) for t in ("62M", "40M") for b in (NS2_BUFFER, BUFFER))
#: The headline calibration, chosen by :func:`headline_rule` on the quick grid of all four
#: (2026-11-23, TCP profile linux), not on the paper's findings: the 62 Mbit/s trace delivers
#: the paper's unloaded rate (Table II, K = 0), and with 50 packets best effort loses at K = 0
#: (N = 10: 0.73 % in 8 s; 0.82 and 0.20 % in two full-length runs, against 0.03 and 0 with
#: 1000), which the paper's setup did not (its premise of a well-dimensioned network).
#: Every report re-applies the rule to its own runs and says whether it still picks this one.
HEADLINE = Calibration("62M", BUFFER)
#: The calibration of the runs made before calibrations existed (``expected/rfc-40M-1000p``)
#: and of the bundled cell files ``scenarios/tfd/s*-n5-k5.toml``.
LEGACY = Calibration("40M", BUFFER)


def parse_calibrations(spec: str) -> tuple[Calibration, ...]:
    """``"all"``, ``"headline"`` or a comma-separated list of ``<trace>-<buffer>`` keys (e.g.
    ``62M-50p,40M-1000p``); a bad one is a :class:`QoelabError` naming the known ones."""
    if spec == "all":
        return CALIBRATIONS
    if spec == "headline":
        return (HEADLINE,)
    known = {c.key: c for c in CALIBRATIONS}
    out: list[Calibration] = []
    for part in spec.split(","):
        c = known.get(part.strip())
        if c is None:
            raise QoelabError(f"--calibration {spec}: unknown calibration {part.strip()!r} "
                              f"(known: all, headline, {', '.join(known)})")
        if c not in out:
            out.append(c)
    return tuple(out)



# --- the trace --------------------------------------------------------------------------------


def trace_path(out_dir: Path) -> Path:
    """The HD trace, or (if it is missing) a synthetic HD VBR trace written to ``out_dir``:
    8 clips × 19 s, 30 frame/s, GOP 30 IBBP, 8 slices per frame, clip complexities drawn
    log-uniformly so that the mean is about 40 Mbit/s, frame sizes gamma-distributed
    (I ≈ 5×, P ≈ 1.5×, B ≈ 0.6× the clip's mean frame)."""
    p = paths.root() / TRACE
    if p.exists():
        return p
    syn = out_dir / "synthetic_hd_vbr.trace.csv"
    if syn.exists():
        return syn
    rng = random.Random(20180301)
    rows, nal = [], 0
    gop = "IBBPBBPBBPBBPBBPBBPBBPBBPBBPBB"
    weight = {"I": 5.0, "P": 1.5, "B": 0.6}
    mean_w = sum(weight[c] for c in gop) / len(gop)
    for clip in range(CLIPS):
        clip_bps = TARGET_BPS * math.exp(rng.uniform(math.log(0.3), math.log(2.0)))
        frame_bytes = clip_bps / 8 / 30 / mean_w
        for f in range(int(CLIP_S * 30)):
            frame = clip * int(CLIP_S * 30) + f
            t = gop[f % len(gop)]
            size = max(200, int(rng.gammavariate(8.0, weight[t] * frame_bytes / 8.0)))
            for s in range(8):
                rows.append((nal, frame, t, size // 8, frame * 1000.0 / 30))
                nal += 1
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(syn, "w") as fh:
        fh.write("nal,frame,type,size_bytes,ts_ms\n")
        for r in rows:
            fh.write(f"{r[0]},{r[1]},{r[2]},{r[3]},{r[4]:.3f}\n")
    return syn


def _frame_ip_bytes(trace: Path) -> dict[float, int]:
    """IP bytes per frame (timestamp), counting 40 bytes of IPv4/UDP/RTP headers per
    1448-byte-payload datagram."""
    opener = gzip.open if trace.suffix == ".gz" else open
    per_t: dict[float, int] = {}
    with opener(trace, "rt") as fh:
        for r in csv.DictReader(fh):
            b = int(r["size_bytes"])
            per_t[float(r["ts_ms"])] = per_t.get(float(r["ts_ms"]), 0) + b + 40 * math.ceil(b / 1448)
    return per_t


def max_frame_bytes(trace: Path) -> int:
    """The Tspec bucket depth b of s2 and s3: the trace's largest frame at IP level, the largest
    burst above its rate a frame-paced sender emits at frame scale."""
    return max(_frame_ip_bytes(trace).values(), default=0)


def peak_rate_bps(trace: Path, window_s: float = 1.0) -> int:
    """The Tspec peak rate of s3: the largest IP-level rate over any ``window_s`` window (one
    GOP), counted as :func:`_frame_ip_bytes` counts it."""
    per_t = _frame_ip_bytes(trace)
    ts = sorted(per_t)
    best = acc = j = 0
    for i, t in enumerate(ts):
        acc += per_t[t]
        while t - ts[j] >= window_s * 1000:
            acc -= per_t[ts[j]]
            j += 1
        best = max(best, acc)
    return int(best * 8 / window_s)


def target_rate_bps(trace: Path) -> int:
    """The trace's own encoder target bit rate (elementary stream, bits/s), from its recipe
    beside it (``<name>.recipe.toml``): an encode's ``config.bitrate_bps``; a scaled trace's
    (``kind = "scaled"``) is its source's target times the scaling factor (``transform.
    factor_ppm``), the target the scaled sizes imply. The synthetic stand-in :func:`trace_path`
    writes when the HD trace is missing aims at :data:`TARGET_BPS`. A trace without a readable
    recipe is a :class:`QoelabError` naming the file."""
    import tomllib

    if trace.name.startswith("synthetic_hd_vbr"):
        return TARGET_BPS
    recipe = trace.with_name(trace.name.split(".")[0] + ".recipe.toml")
    try:
        r = tomllib.loads(recipe.read_text())
        if r.get("kind") == "scaled":
            src = trace.with_name(r["source_trace"]["file"])
            return round(target_rate_bps(src) * r["transform"]["factor_ppm"] / 1_000_000)
        return int(r["config"]["bitrate_bps"])
    except (OSError, KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as e:
        raise QoelabError(f"{recipe}: cannot read the encoder target of {trace.name} "
                          f"(config.bitrate_bps, or source_trace and transform.factor_ppm of a scaled trace): {e}") from None


#: What s2's 150 % is taken of (the ``s2_basis`` choice): the trace's own encoder target, the
#: paper's stated 40 Mbit/s whatever the trace, or the trace's measured mean at IP level.
S2_BASES = ("target", "stated", "mean")


def s2_rate_bps(trace: Path, basis: str = "target") -> int:
    """s2's static reservation per stream: :data:`S2_SHARE` × the ``basis`` rate
    (:data:`S2_BASES`): ``target``, the trace's encoder target (:func:`target_rate_bps`; the
    paper: "150% … of target bit rate"); ``stated``, the paper's 40 Mbit/s (:data:`TARGET_BPS`)
    for every trace; ``mean``, the trace's mean at IP level (:func:`mean_rate_bps`)."""
    if basis == "target":
        base = target_rate_bps(trace)
    elif basis == "stated":
        base = TARGET_BPS
    elif basis == "mean":
        base = mean_rate_bps(trace)
    else:
        raise ValueError(f"unknown s2 basis {basis!r} (known: {', '.join(S2_BASES)})")
    return round(S2_SHARE * base)


def reservation_sizes(trace: Path) -> dict[str, int]:
    """The numbers the s2/s3 reservation sizes derive from, for the report: the encoder target,
    the IP-level mean and 1-s peak, s2 under each basis (``s2_<basis>_bps``) and s3 (the
    1-s peak at IP level, :func:`peak_rate_bps`)."""
    out = {"target_bps": target_rate_bps(trace), "mean_bps": mean_rate_bps(trace), "s3_bps": peak_rate_bps(trace)}
    out.update({f"s2_{b}_bps": s2_rate_bps(trace, b) for b in S2_BASES})
    return out


def mean_rate_bps(trace: Path) -> int:
    """The trace's mean IP-level rate, counted as :func:`peak_rate_bps` counts it."""
    opener = gzip.open if trace.suffix == ".gz" else open
    total = 0
    ts: set[float] = set()
    with opener(trace, "rt") as fh:
        for r in csv.DictReader(fh):
            b = int(r["size_bytes"])
            total += b + 40 * math.ceil(b / 1448)
            ts.add(float(r["ts_ms"]))
    frame_ms = (max(ts) - min(ts)) / max(1, len(ts) - 1)
    return int(total * 8 / (len(ts) * frame_ms / 1000)) if ts else 0


# --- one cell as a scenario ------------------------------------------------------------------


#: What an s4 sender's option is filled from (the app's ``tfd`` keys; ``docs/models/tfd-option.md``):
#: the default adds none, so its cells are the files they were.
ANNOUNCE: dict[str, dict[str, str]] = {
    "oracle": {},
    "forecast": {"source": "forecast"},
    "frame": {"source": "buffer", "buffer_depth": f"{1000 / 30:.3f}ms"},  # one frame at 30 frame/s
}


#: The router keys of ``rules`` that only TFD options use (``crates/core/src/queue/tfd.rs``,
#: ``on_option``): written for s4 only.
TFD_ONLY_RULES = ("headroom", "hold")


def build_scenario(sc: str, n: int, k: int, seed: int, duration_s: float, trace: Path, peak_bps: int,
                   pacing: str = "frame", buffer: str = BUFFER, lend: bool = True,
                   profile: str = DEFAULT_PROFILE, rules: dict[str, Any] | None = None,
                   police: bool = False, bucket_bytes: int = 0, announce: str = "oracle",
                   s2_bps: int = int(S2_SHARE * TARGET_BPS)) -> dict[str, Any]:
    """The scenario of one grid cell (plain data for :class:`qoelab.scenario.Scenario`).

    ``pacing`` is the video senders' (``"frame"``: each frame's datagrams spread over the frame
    interval; ``"burst"``: back to back at the frame's time), ``buffer`` the routers'
    best-effort buffer (a calibration's) and ``profile`` the TCP flows' profile (written
    explicitly, so a cell's file does not change meaning when the simulator's default does).
    ``lend = False`` makes the reservation routers (s2–s4) hold reserved capacity idle instead
    of lending it to best effort (``lend_idle = false``); ``rules`` sets more of their keys
    (``headroom``, ``hold``, ``max_reserved_share``, ``police``: the routers' rules as declared
    choices); ``police`` makes the s2/s3 routers police their RSVP reservations against the
    senders' Tspec token bucket, of depth ``bucket_bytes`` (RFC 2211/2212: excess goes best
    effort). ``announce`` is what an s4 sender knows when it fills the option (``"oracle"``: the
    trace's bytes in the horizon; ``"forecast"``: an EWMA of past horizons' bytes; ``"frame"``:
    only the frame being sent, scaled to the horizon: :data:`ANNOUNCE`). ``s2_bps`` is s2's
    reservation per stream (:func:`s2_rate_bps`; the default, 150 % of the paper's stated
    40 Mbit/s, is the 40 Mbit/s trace's under every basis but ``mean``)."""
    if announce not in ANNOUNCE:
        raise ValueError(f"unknown announcement {announce!r} (known: {', '.join(ANNOUNCE)})")
    router: dict[str, Any]
    if sc == "s1":
        router = {"kind": "fifo", "limit": buffer}
    elif sc in ("s2", "s3"):
        router = {"kind": "tfd", "read_option": False, "limit": buffer}
        if police:
            router["police"] = True
    elif sc == "s4":
        router = {"kind": "tfd", "limit": buffer}
    else:
        raise ValueError(f"unknown scenario {sc!r} (known: {', '.join(SCENARIOS)})")
    if sc != "s1":
        if not lend:
            router["lend_idle"] = False
        # headroom and hold act on TFD options only, which the RSVP routers (s2, s3) do not
        # read: they are left out of those, whose scenarios then stay the default's.
        router.update({k: v for k, v in (rules or {}).items() if sc == "s4" or k not in TFD_ONLY_RULES})
    access = {"rate": "1Gbps", "delay": "0.5ms", "queue": {"kind": "fifo", "limit": "1000p"}}
    links: list[dict[str, Any]] = [
        {"a": "SM{i}", "b": "R1", "count": n, **access},
        {"a": "R5", "b": "RM{i}", "count": n, **access},
        {"a": "R1", "b": "R3", "rate": "1Gbps", "delay": "1ms", "queue": router},
        {"a": "R2", "b": "R3", "rate": "1Gbps", "delay": "1ms", "queue": router},
        {"a": "R3", "b": "R4", "rate": "1Gbps", "delay": "2ms", "queue": router},
        {"a": "R4", "b": "R5", "rate": "1Gbps", "delay": "1ms", "queue": router},
    ]
    rng = random.Random(seed * 7919 + n * 31 + k)
    flows: list[dict[str, Any]] = []
    for i in range(n):
        # A random clip and a random moment in it (paper §IV.D).
        offset = rng.randrange(CLIPS) * CLIP_S + rng.uniform(0, CLIP_S)
        app: dict[str, Any] = {"kind": "video", "trace": str(trace), "loop": True, "offset": f"{offset:.3f}s", "pacing": pacing}
        if sc in ("s2", "s3"):
            app["rsvp"] = {"rate": f"{s2_bps if sc == 's2' else peak_bps}bps"}
            if police:
                app["rsvp"]["bucket"] = f"{bucket_bytes}B"
        elif sc == "s4":
            app["tfd"] = {"horizon": "300ms", **ANNOUNCE[announce]}
        flows.append(
            {
                "name": f"video{i}",
                "src": f"SM{i}",
                "dst": f"RM{i}",
                "start": f"{rng.uniform(0, 0.1):.4f}s",
                "transport": {"kind": "rtp"},
                "app": app,
            }
        )
    if k:
        links += [
            {"a": "ST{i}", "b": "R2", "count": k, **access},
            {"a": "R4", "b": "RT{i}", "count": k, **access},
        ]
        flows.append(
            {
                "name": "tcp{i}",
                "count": k,
                "src": "ST{i}",
                "dst": "RT{i}",
                "start": "0.01s",
                "start_step": "10ms",
                "transport": {"kind": "tcp", "cc": "cubic", "sack": True, "snd_buf": "4MiB", "rcv_buf": "4MiB",
                              "profile": profile},
                "app": {"kind": "bulk"},
            }
        )
    return {
        "name": f"tfd-{sc}-n{n}-k{k}",
        "sim": {"duration": f"{duration_s}s", "seed": seed},
        "links": links,
        "flows": flows,
        "output": {"throughput_bin": "1s", "queue_sample": "100ms"},
    }


#: The cells written to ``scenarios/tfd/`` as plain scenario files (rep 0's random offsets).
EXAMPLE_CELLS = (("s1", 5, 5), ("s2", 5, 5), ("s3", 5, 5), ("s4", 5, 5))


#: The profile of the bundled cell files and of ``expected/rfc-40M-1000p``.
LEGACY_PROFILE = "rfc"


def cell_toml(sc: str, n: int, k: int) -> str:
    """One grid cell as a scenario file for ``scenarios/tfd/`` (full length, seed 1 = rep 0,
    trace path relative to that folder), in the :data:`LEGACY` calibration with the ``rfc`` TCP
    profile, the setting of ``expected/rfc-40M-1000p`` (and of the golden digests);
    ``tests/reproduce/test_tfd.py`` checks the files there are exactly this, so they cannot
    drift from the reproduction. (The legacy calibration is the 40 Mbit/s trace with our
    1000-packet buffer.)"""
    import tomli_w

    trace = Path("../..") / TRACE
    peak = peak_rate_bps(paths.root() / TRACE)
    d = build_scenario(sc, n, k, 1, FULL_S, trace, peak, buffer=BUFFER, profile=LEGACY_PROFILE)
    head = (f"# Chodorek & Chodorek, TFD paper: scenario {sc}, N = {n} HD videos, K = {k} TCP CUBIC flows, one\n"
            f"# 152-s run (rep 0 of `qoelab reproduce tfd --calibration 40M-{BUFFER} --profile {LEGACY_PROFILE}`). Generated by\n"
            "# qoelab.reproduce.tfd.cell_toml; do not edit by hand (a test compares). Run: qoelab run scenarios/tfd/"
            + f"{sc}-n{n}-k{k}.toml\n")
    return head + tomli_w.dumps(d)


# --- metrics and the paper's tables ------------------------------------------------------------


def cell_metrics(run_dir: Path, duration_s: float) -> dict[str, float]:
    """PER (%), shared-link utilisation (%), overall video and TCP throughput (Mbit/s), and the
    video's delay cost (ms): the mean one-way delay over every received video packet, the worst
    stream's 99th percentile, and the streams' mean RFC 3550 interarrival jitter."""
    import pyarrow.parquet as pq

    f = pq.read_table(run_dir / "flows.parquet").to_pydict()
    links = pq.read_table(run_dir / "links.parquet").to_pydict()
    sent = lost = recv = 0
    video_b = offered_b = tcp_bps = delay_sum = 0.0
    p99: list[float] = []
    jitter: list[float] = []
    for i, name in enumerate(f["flow"]):
        if name.startswith("video"):
            if f["recv_pkts"][i]:
                recv += f["recv_pkts"][i]
                delay_sum += f["delay_mean_s"][i] * f["recv_pkts"][i]
                p99.append(f["delay_p99_s"][i])
                jitter.append(f["jitter_rfc3550_s"][i])
            sent += f["sent_pkts"][i]
            lost += f["drop_queue_pkts"][i] + f["drop_channel_pkts"][i]
            video_b += f["recv_bytes"][i]
            offered_b += f["sent_bytes"][i]
        elif name.startswith("tcp"):
            tcp_bps += f["goodput_bps"][i] or 0.0
    j = links["link"].index("R3->R4")
    return {
        "per_pct": 100.0 * lost / sent if sent else 0.0,
        "utilisation_pct": 100.0 * links["utilisation"][j],
        "video_mbps": video_b * 8 / duration_s / 1e6,
        "tcp_mbps": tcp_bps / 1e6,
        # What the videos sent: the rate they required in this very cell (random clip offsets
        # differ between cells, so another cell's rate is not this one's requirement).
        "video_offered_mbps": offered_b * 8 / duration_s / 1e6,
        "video_delay_ms": 1e3 * delay_sum / recv if recv else math.nan,
        "video_delay_p99_ms": 1e3 * max(p99) if p99 else math.nan,
        "video_jitter_ms": 1e3 * sum(jitter) / len(jitter) if jitter else math.nan,
    }


def _paper(name: str) -> dict[tuple[str, int, int], dict[str, float]]:
    out = {}
    with open(DATA / name) as fh:
        lines = [ln for ln in fh if not ln.startswith("#")]
    for r in csv.DictReader(lines):
        out[(r["scenario"], int(r["K"]), int(r["N"]))] = {k: float(v) for k, v in r.items() if k not in ("scenario", "K", "N")}
    return out


def paper_tables() -> dict[tuple[str, int, int], dict[str, float]]:
    """The paper's Tables I and II by (scenario, K, N), typed from the paper text."""
    t1, t2 = _paper("tfd_paper_table1.csv"), _paper("tfd_paper_table2.csv")
    return {key: {**t1[key], **t2[key]} for key in t1}


