"""The MPTCP reproduction's testbed: the grids of each mode, one cell as a scenario on
``scenarios/mptcp/base.toml``, the cells under a setting of the choices, the experiment, and a
finished run's numbers (the DASH session and its subflows)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import core
from qoelab.experiment.choices import defaults
from qoelab.reproduce.mptcp.paper import (ABRS, BASE, CHOICES, CONFIGS, COUPLED, FACTOR, FOLDER, LOSS_DIRECTIONS,
                                          MPD_BANDWIDTHS, MPTCP, PAPER_REPS, PATHS, PSH_ACKS, RCV_BUFS, READING_LABEL, READINGS,
                                          SUBFLOWS, TABLE1, TRANSPORT_LABEL)



@dataclass(frozen=True)
class Grid:
    """What one mode runs: the loss readings, repetitions, plays of the bundled clip
    (:func:`clip_s`), the run length (long enough for a session with stalls to finish) and the
    readings whose cells also run the other ABR policies (the QoE table per ABR policy)."""

    readings: tuple[str, ...]
    reps: int
    loops: int
    duration_s: float
    abr_readings: tuple[str, ...]
# One play of the 180-s ladder (30 segments of 6 s) in runs of 240 s: the 60 s beyond the media
# leave room for start-up and stalls. The quick mode plays the same sessions (a shorter run would
# cut every session), fewer readings and repetitions.
FULL = Grid(READINGS, PAPER_REPS, 1, 240.0, ("div100",))
QUICK = Grid(("literal", "div100", "control"), 2, 1, 240.0, ("div100",))


def base_dict() -> dict[str, Any]:
    """The testbed as plain data."""
    return tomllib.loads((paths.root() / BASE).read_text())


@cache
def clip_s() -> float:
    """Length of the content the testbed's player fetches, s: the ``mediaPresentationDuration``
    of the MPD that ``base.toml``'s DASH flow names (the bundled ladder: 180 s)."""
    import re
    import xml.etree.ElementTree as ET

    (f,) = base_dict()["flows"]
    mpd = paths.root() / FOLDER / f["app"]["mpd"]
    try:
        text = ET.parse(mpd).getroot().get("mediaPresentationDuration", "")
    except (OSError, ET.ParseError) as e:
        raise QoelabError(f"{mpd}: cannot read the MPD ({e})") from None
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d*)?)S)?", text)
    if not m or not any(m.groups()):
        raise QoelabError(f"{mpd}: MPD@mediaPresentationDuration: expected PT…S, got {text!r}")
    h, mi, sec = (float(g) if g else 0.0 for g in m.groups())
    return 3600 * h + 60 * mi + sec


def _shape(link: dict[str, Any], row: tuple[float, float, float], factor: float, direction: str) -> None:
    """Sets an access link (``a`` the client) to a Table 1 row: rate; latency read as the RTT the
    path adds, half in each direction; Bernoulli loss (× ``factor``) server → client
    (``downstream``, the link's b → a), client → server (``upstream``) or both."""
    loss_pct, lat_ms, rate_mbps = row
    link["rate"] = f"{rate_mbps:g}Mbps"
    link["delay"] = f"{lat_ms / 2:g}ms"
    link.pop("loss_ab", None)
    link.pop("loss_ba", None)
    p = loss_pct / 100 * factor
    if p > 0:
        for key, d in (("loss_ba", "downstream"), ("loss_ab", "upstream")):
            if direction in (d, "both"):
                link[key] = {"kind": "bernoulli", "p": p}


def full_mesh(client: tuple[str, ...], server: tuple[str, ...]) -> list[tuple[str, str]]:
    """The (client, server) address pairs the fullmesh path manager of MPTCP v0.92
    (``mptcp_fullmesh.c``, ``create_subflow_worker``) gives a connection opened from
    ``client[0]`` to ``server[0]``: the initial pair, then for each server address in the order
    the client learns them (the one it connected to, then those announced with ADD_ADDR), every
    client address not yet paired with it, lowest first."""
    return [(c, s) for s in server for c in client]


def subflow_pairs(subflows: str) -> list[tuple[str, str]]:
    """The MPTCP connection's (client, server) address pairs under the ``subflows`` choice."""
    if subflows == "disjoint":
        return list(PATHS)
    return full_mesh(tuple(c for c, _ in PATHS), tuple(s for _, s in PATHS))


def build_scenario(reading: str, config: str, transport: str, coupled: str = "uncoupled", abr: str = "vlc", *,
                   loss_direction: str = "upstream", scheduler: str = "min_rtt", mpd_bandwidth: str = "mean",
                   subflows: str = "disjoint", rcv_buf: str = "autotuned", psh_ack: str = "on",
                   loops: int = FULL.loops, duration_s: float = FULL.duration_s) -> dict[str, Any]:
    """One cell as plain scenario data: ``base.toml`` with path 1 and path 2 set to ``config``'s
    Table 1 rows under ``reading`` (loss in ``loss_direction``), and the DASH flow over
    ``transport``: ``mptcp`` (a subflow per path, ``coupled`` congestion control, the
    ``scheduler``), ``sptcp`` (path 1 set to the SPTCP row) or ``sptcp_best`` (single-path TCP
    over MPTCP's path 1 as it is), the player with the ``abr`` policy comparing each
    representation's ``mpd_bandwidth`` (``mean`` rate or the MPD's ``peak``); MPTCP's
    connection-level receive buffer ``rcv_buf`` ``autotuned`` from tcp_rmem or ``fixed`` at 4 MiB;
    ``psh_ack`` ``off`` gives every TCP end (subflows and single-path) the receiver rule of
    kernels before 6.6 (``tcp.psh_ack = false``). The app probe is on. With
    ``subflows = "full_mesh"`` the MPTCP connection has a subflow per client × server address
    (:func:`full_mesh`), and a 1-Gbit/s core link R1–R2 carries the cross pairs from one access
    network to the server's interface on the other (the single-path cells are unchanged)."""
    for name, v, known in (("reading", reading, READINGS), ("config", config, CONFIGS),
                           ("transport", transport, tuple(TRANSPORT_LABEL)), ("coupled", coupled, COUPLED),
                           ("abr", abr, ABRS), ("loss_direction", loss_direction, LOSS_DIRECTIONS),
                           ("mpd_bandwidth", mpd_bandwidth, MPD_BANDWIDTHS), ("subflows", subflows, SUBFLOWS),
                           ("rcv_buf", rcv_buf, RCV_BUFS), ("psh_ack", psh_ack, PSH_ACKS)):
        if v not in known:
            raise ValueError(f"{name} {v!r}: expected one of {', '.join(known)}")
    d = base_dict()
    d["name"] = f"mptcp-{reading}-{config}-{transport}" + (f"-{coupled}" if transport == "mptcp" else "") + f"-{abr}"
    d["description"] = (f"Wejin & Amca, Table 1 {config}, loss {READING_LABEL[reading]} ({loss_direction}), "
                        f"{TRANSPORT_LABEL[transport]}" + (f" ({coupled})" if transport == "mptcp" else "")
                        + f", {abr} ABR")
    d["sim"] = {"duration": f"{duration_s:g}s", "seed": 1}
    d.setdefault("output", {})["probes"] = ["app"]
    access = [l for l in d["links"] if l["a"] == "C"]
    if [l["a_addr"] for l in access] != [a for a, _ in PATHS]:
        raise QoelabError(f"{BASE}: expected the access links of 10.1.0.1 and 10.1.1.1 (README, Setup)")
    rows = TABLE1[config]
    _shape(access[0], rows["sptcp" if transport == "sptcp" else "path1"], FACTOR[reading], loss_direction)
    _shape(access[1], rows["path2"], FACTOR[reading], loss_direction)
    (f,) = d["flows"]
    f["app"]["loops"] = loops
    f["app"]["abr"] = {"kind": abr}
    f["app"]["bandwidth"] = "mean" if mpd_bandwidth == "mean" else "mpd"
    if transport == "mptcp":
        f.pop("src_addr", None)
        f.pop("dst_addr", None)
        f["transport"] = {**MPTCP, "scheduler": scheduler, "coupled": coupled}
        tcp = MPTCP["tcp"]
        assert isinstance(tcp, dict)
        if rcv_buf == "fixed":
            tcp = {**tcp, "rcv_autotune": False, "rcv_buf": "4MiB"}
        if psh_ack == "off":
            tcp = {**tcp, "psh_ack": False}
        f["transport"]["tcp"] = tcp
        f["subflows"] = [{"src_addr": s, "dst_addr": t} for s, t in subflow_pairs(subflows)]
        if subflows == "full_mesh":
            d["name"] += "-full-mesh"
            d["description"] += ", full mesh (4 subflows)"
            d["links"].append({"a": "R1", "b": "R2", "rate": "1Gbps", "delay": "0ms"})
    elif psh_ack == "off":
        f["transport"] = {**f["transport"], "psh_ack": False}
    return d


@cache
def mptcp_dash_refusal() -> str | None:
    """Why a DASH flow over MPTCP cannot be built by this simulator (its one-line refusal), or
    None when it can (MPTCP carries data in both directions)."""
    from qoelab.errors import ScenarioError
    from qoelab.scenario import Scenario

    d = build_scenario("control", "balanced", "mptcp", loops=1, duration_s=1.0)
    try:
        Scenario.from_dict(d, f"{BASE} (mptcp probe)", base_dir=paths.root() / FOLDER).validate()
    except ScenarioError as e:
        return str(e).splitlines()[0]
    return None


def cells(grid: Grid, setting: dict[str, Any] | None = None, *, mptcp: bool = True,
          abr_table: bool = True) -> list[dict[str, Any]]:
    """The experiment's cells under ``setting`` (the choices; default: :data:`CHOICES`'
    defaults): every reading × configuration × transport with the setting's ABR policy and
    MPTCP controller, and (``abr_table``) the other ABR policies beside it in the readings of
    :attr:`Grid.abr_readings`; without ``mptcp``, the single-path cells only."""
    s = setting or defaults(CHOICES)
    tps = lambda rd: ["mptcp", "sptcp"] + (["sptcp_best"] if rd == "control" else [])  # noqa: E731
    main = [(rd, cf, tp, s["abr"]) for rd in grid.readings for cf in CONFIGS for tp in tps(rd)]
    extra = [(rd, cf, tp, a) for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS
             if a != s["abr"]] if abr_table else []
    return [{"reading": rd, "config": cf, "transport": tp, "coupled": s["coupled"] if tp == "mptcp" else "-", "abr": a}
            for rd, cf, tp, a in main + extra if mptcp or tp != "mptcp"]


def _cell_id(p: dict[str, Any]) -> str:
    tail = f"-{p['coupled']}" if p["transport"] == "mptcp" else ""
    abr = f"-{p['abr']}" if p["abr"] != "vlc" else ""
    return f"{p['reading']}-{p['config']}-{p['transport']}{tail}{abr}"


def _build(p: dict[str, Any], grid: Grid, setting: dict[str, Any]):
    from qoelab.scenario import Scenario

    d = build_scenario(p["reading"], p["config"], p["transport"],
                       p["coupled"] if p["transport"] == "mptcp" else "uncoupled", p["abr"],
                       loss_direction=setting["loss_direction"], scheduler=setting["scheduler"],
                       mpd_bandwidth=setting["mpd_bandwidth"], subflows=setting["subflows"], rcv_buf=setting["rcv_buf"],
                       psh_ack=setting["psh_ack"], loops=grid.loops, duration_s=grid.duration_s)
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / FOLDER)
METRICS = ("startup_first_byte_ms", "startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches",
           "rate_mbps", "retx_per_s", "path1_share_pct", "reinjected_kb", "rcvbuf_drops", "rcv_buf_kb")
TREATMENTS = ("reading", "config", "transport", "coupled", "abr")


def experiment(grid: Grid, mptcp: bool, setting: dict[str, Any] | None = None, *, abr_table: bool = True) -> core.Experiment:
    s = setting or defaults(CHOICES)
    return core.Experiment("mptcp", cells(grid, s, mptcp=mptcp, abr_table=abr_table), partial(_build, grid=grid, setting=s),
                           partial(run_metrics, duration_s=grid.duration_s, subflows=s["subflows"]), paired=TREATMENTS, reps=grid.reps,
                           cell_id=_cell_id)


def run_metrics(run_dir: Path, p: dict[str, Any], *, duration_s: float, subflows: str = "disjoint") -> dict[str, float]:
    """One run's numbers from its flows table (the ``dash`` flow) and, for MPTCP, its
    ``subflows`` table: start-up delay to the first byte and to playback (ms), stalls and their
    time (s), media played (s), mean bitrate and mean per-segment download rate (Mbit/s),
    switches, retransmitted segments of the video's direction per second of run, and for MPTCP
    path 1's share of the video bytes received (%: the subflows through the client's path-1
    interface, two of the four in a full mesh), the bytes the server reinjected (kB; NaN where
    the flows table has no ``rev_reinjected_bytes``), and the client's connection-level receive
    buffer: the video segments it dropped for want of room and its size at the end (kB; NaN where
    the flows table has no ``rev_rcvbuf_drop_pkts``)."""
    import pyarrow.parquet as pq

    (row,) = [r for r in pq.read_table(run_dir / "flows.parquet").to_pylist() if r["flow"] == "dash"]
    nan = float("nan")
    out = {"startup_first_byte_ms": 1e3 * row["dash_startup_first_byte_s"], "startup_ms": 1e3 * row["dash_startup_s"],
           "stalls": float(row["dash_stalls"]), "stall_s": float(row["dash_stall_s"]),
           "played_s": float(row["dash_played_s"]), "bitrate_mbps": row["dash_mean_bitrate_bps"] / 1e6,
           "switches": float(row["dash_switches"]), "rate_mbps": row["dash_mean_rate_bps"] / 1e6,
           "retx_per_s": float(row["rev_retransmitted_segments"]) / duration_s,
           "path1_share_pct": nan, "reinjected_kb": nan, "rcvbuf_drops": nan, "rcv_buf_kb": nan}
    sub = run_dir / "subflows.parquet"
    if p["transport"] == "mptcp" and sub.is_file():
        rs = sorted((r for r in pq.read_table(sub).to_pylist() if r["flow"] == "dash"), key=lambda r: r["path"])
        total = sum(r["rev_recv_bytes"] for r in rs)
        first = [k for k, (c, _) in enumerate(subflow_pairs(subflows)) if c == PATHS[0][0]]
        if total > 0:
            out["path1_share_pct"] = 100.0 * sum(r["rev_recv_bytes"] for r in rs if r["path"] in first) / total
        # The server sends the video: its reinjections are the reverse direction's.
        if row.get("rev_reinjected_bytes") is not None:
            out["reinjected_kb"] = float(row["rev_reinjected_bytes"]) / 1e3
        # The client receives the video: its connection-level buffer is the reverse direction's.
        if row.get("rev_rcvbuf_drop_pkts") is not None:
            out["rcvbuf_drops"] = float(row["rev_rcvbuf_drop_pkts"])
            out["rcv_buf_kb"] = float(row["rev_rcv_buf_bytes"]) / 1e3
    return {k: (nan if v is None else float(v)) for k, v in out.items()}


def segment_rates(run_dir: Path) -> list[tuple[int, float, float]]:
    """The run's segments from its ``app`` probe: (segment index, arrival time s, download rate
    Mbit/s = bytes × 8 / request → last byte)."""
    import pyarrow.parquet as pq

    t = pq.read_table(run_dir / "probe_app.parquet").to_pylist()
    seg: dict[int, dict[str, float]] = {}
    cur: dict[str, float] = {}
    for r in t:
        if r["flow"] != "dash":
            continue
        if r["name"] == "dash_segment":
            cur = seg.setdefault(int(r["value"]), {"t": r["t_ns"] / 1e9})
        elif r["name"] in ("dash_bytes", "dash_download_s"):
            cur[r["name"]] = r["value"]
    return [(k, v["t"], v["dash_bytes"] * 8 / v["dash_download_s"] / 1e6)
            for k, v in sorted(seg.items()) if v.get("dash_download_s", 0) > 0 and "dash_bytes" in v]
