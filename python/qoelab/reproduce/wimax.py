"""``qoelab reproduce wimax``: Al-Majeed & Fleury, *Effective multi-connection video streaming
over WiMAX* (shared/papers/multi-tfrc-wimax.txt).

One H.264 CIF video (the bundled ``cif_bbb_qp26`` trace, 900-B slices, GOP 15) is sent greedily
from subscriber station SS1 over N = 1..4 TFRC connections, GOPs assigned round robin, through
an IEEE 802.16e TDD uplink with a Gilbert–Elliott channel and then (end to end) a wired core
with a 5 Mbit/s bottleneck to node C. The network and its cross traffic are the paper's Fig. 1,
Table 1, Table 2 and Sec. 3.5, as the base scenario ``scenarios/wimax/base.toml``;
:func:`build_scenario` adds the video connections and sets the frame length. Every choice
where the paper contradicts itself is listed in ``scenarios/wimax/README.md`` and in the
report's setup.

Cells (:func:`cells`), each a ``path`` (``link``: the video ends at the base station, Table 3;
``e2e``: it ends at node C, Tables 4–6), a TDD ``frame`` length in ms, ``n`` connections and the
``cbr`` setting of the rtPS CBR sources (``paper``: 1.5 Mbit/s, as the paper's text says twice;
``gap``: one 1000-B packet every 0.03 s, 267 kbit/s, the paper's other statement; a
sensitivity treatment on a few cells). All four parameters are *treatments* of the experiment
layer (:mod:`qoelab.experiment.core`): repetition ``r`` of every cell runs with the same seed,
so every difference in the findings is paired.

Outputs (``docs/report-format.md``): ``report.json``, ``report.md``, one CSV per table
(``table3.csv`` … ``table6.csv``, ``fig3_loss_by_type.csv``, ``sensitivity_cbr.csv``),
``repetitions.csv`` (one row per run) and the figures ``fig2_gop_arrivals.png``,
``fig3_loss_by_type.png``, ``table5_psnr.png``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
import tomllib
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Estimate, Finding, Label, judge_all, judge_below, judge_positive, judge_within, mean_ci
from qoelab.experiment import core
from qoelab.experiment.tables import Column, PaperValues, Table, findings_md, interval_str, publish, pyplot

#: The base scenario (network and cross traffic, no video), relative to the repository.
BASE = "scenarios/wimax/base.toml"
#: The bundled CIF trace (the paper's setting on Big Buck Bunny; ``data/traces/README.md``).
TRACE = "data/traces/cif_bbb_qp26.trace.csv"
TRACE_NAME = "cif_bbb_qp26"
#: The paper's TDD frame lengths (Tables 5, 6), ms.
FRAMES_MS = (5.0, 8.0, 10.0, 12.5, 20.0)
CONNECTIONS = (1, 2, 3, 4)
#: Frames per GOP (paper Sec. 3.2 and 3.6: GOPs of 15 frames are the unit given to a connection).
GOP = 15
#: Connection i starts ``START_S + i * OFFSET_S`` into the run (paper Sec. 4: offsets of 0.5 s;
#: the first start, 1 s, lets the cross traffic's TCP flows leave slow start; our choice).
START_S = 1.0
OFFSET_S = 0.5
#: The CBR settings of the sensitivity treatment: payload rates of 972-B payloads (1000-B IP
#: packets). ``gap``: 972 B every 0.03 s (the paper's "inter-packet gap was 0.03 s").
CBR_RATES = {"paper": "1.5Mbps", "gap": "259.2kbps"}
#: The paper's display period of its clip: 1063 frames at 30 frame/s.
DISPLAY_S = 1063 / 30
#: The channel's stationary loss, (r·0.01 + p·0.05)/(p + r) with p = 0.05, r = 0.06 (Sec. 3.4), %.
CHANNEL_LOSS_PCT = 100 * (0.06 * 0.01 + 0.05 * 0.05) / (0.05 + 0.06)


@dataclass(frozen=True)
class Grid:
    """What one mode runs: the frames of Table 3 (link only) and of the end-to-end tables, the
    connections, the (frame, n) cells decoded for PSNR, the sensitivity cells, repetitions and
    the run length (long enough for the slowest cell to send the whole video)."""

    link_frames: tuple[float, ...]
    e2e_frames: tuple[float, ...]
    n: tuple[int, ...]
    decode: tuple[tuple[float, int], ...]
    sensitivity: tuple[tuple[float, int], ...]
    reps: int
    duration_s: float


FULL = Grid((5.0, 20.0), FRAMES_MS, CONNECTIONS, tuple((f, n) for f in FRAMES_MS for n in CONNECTIONS),
            ((5.0, 1), (5.0, 4), (20.0, 1), (20.0, 4)), 15, 240.0)
QUICK = Grid((5.0, 20.0), (5.0, 20.0), CONNECTIONS, ((5.0, 1), (5.0, 4), (20.0, 1), (20.0, 4)),
             ((5.0, 1), (20.0, 4)), 2, 240.0)


# --- the paper's values, transcribed from its text --------------------------------------------

#: Table 3: (frame ms, n) → (sending period SS to BS in s, throughput in kbit/s).
PAPER_T3 = {(5.0, 1): (71.4, 217), (5.0, 2): (35.8, 437), (5.0, 3): (23.3, 663), (5.0, 4): (17.4, 889),
            (20.0, 1): (33.5, 467), (20.0, 2): (20.5, 754), (20.0, 3): (17.7, 874), (20.0, 4): (14.6, 1059)}
#: Table 4 (frame 20 ms, SS to node C): n → (sending period s, throughput kbit/s, mean delay s).
PAPER_T4 = {1: (35.2, 444, 0.035), 2: (22.4, 690, 0.036), 3: (21.6, 716, 0.039), 4: (15.6, 991, 0.062)}
#: Table 5: (frame ms, n) → (mean PSNR dB, standard deviation dB) over the paper's 15 runs.
PAPER_T5 = {
    (5.0, 1): (29.95, 2.90), (8.0, 1): (32.85, 3.32), (10.0, 1): (32.44, 3.45), (12.5, 1): (33.22, 3.45), (20.0, 1): (31.84, 3.78),
    (5.0, 2): (28.88, 3.07), (8.0, 2): (31.28, 3.81), (10.0, 2): (32.17, 3.38), (12.5, 2): (33.07, 3.47), (20.0, 2): (32.34, 3.49),
    (5.0, 3): (29.54, 3.25), (8.0, 3): (31.07, 3.04), (10.0, 3): (31.83, 3.14), (12.5, 3): (30.79, 3.25), (20.0, 3): (33.15, 3.68),
    (5.0, 4): (28.12, 3.11), (8.0, 4): (31.92, 3.51), (10.0, 4): (31.20, 3.45), (12.5, 4): (33.31, 3.80), (20.0, 4): (33.34, 3.74),
}
#: Table 6: (frame ms, n) → mean packet end-to-end delay, s.
PAPER_T6 = {
    (5.0, 1): 0.0195, (8.0, 1): 0.017, (10.0, 1): 0.017, (12.5, 1): 0.020, (20.0, 1): 0.035,
    (5.0, 2): 0.0446, (8.0, 2): 0.029, (10.0, 2): 0.029, (12.5, 2): 0.027, (20.0, 2): 0.036,
    (5.0, 3): 0.0725, (8.0, 3): 0.024, (10.0, 3): 0.028, (12.5, 3): 0.023, (20.0, 3): 0.039,
    (5.0, 4): 0.0982, (8.0, 4): 0.069, (10.0, 4): 0.067, (12.5, 4): 0.073, (20.0, 4): 0.062,
}
#: Fig. 2 (Sec. 4): "about 6 s of frames (amounting to 90 frames) should be stored in the
#: reordering buffer" (90 frames are 3 s at 30 frame/s: the text contradicts itself).
PAPER_FIG2_STARTUP_S = 6.0
PAPER_FIG2_FRAMES = 90


# --- the scenario ------------------------------------------------------------------------------


def base_dict() -> dict[str, Any]:
    """The base scenario as plain data."""
    return tomllib.loads((paths.root() / BASE).read_text())


def _fmt_ms(frame_ms: float) -> str:
    return f"{frame_ms:g}ms"


def build_scenario(path: str, frame_ms: float, n: int, cbr: str = "paper", *, duration_s: float = FULL.duration_s,
                   seed: int = 1, trace: str | None = None) -> dict[str, Any]:
    """One cell as plain scenario data: the base scenario with every WiMAX connection at
    ``frame_ms``, the rtPS CBR sources at ``CBR_RATES[cbr]`` and N video connections
    ``video0 .. video{n-1}`` from SS1 (its rtPS connection) to the base station (``path =
    "link"``) or node C (``"e2e"``). ``trace``: the trace path as the scenario writes it
    (default: absolute)."""
    if path not in ("link", "e2e"):
        raise ValueError(f"path {path!r}: expected link or e2e")
    if n not in CONNECTIONS:
        raise ValueError(f"n = {n}: the paper uses 1 to 4 connections")
    d = base_dict()
    d["name"] = f"wimax-{path}-f{frame_ms:g}-n{n}-{cbr}"
    d["sim"] = {"duration": f"{duration_s:g}s", "seed": seed}
    for link in d["links"]:
        if link.get("channel", {}).get("kind") == "wimax":
            link["channel"]["frame"] = _fmt_ms(frame_ms)
    for f in d["flows"]:
        # The rtPS CBR sources of the stations and the downlink (Table 2); the core's A -> B CBR
        # (Sec. 3.5, "1.5 Mbps with packet size 1 kB", stated once) keeps its rate.
        if f["app"]["kind"] == "cbr" and f["name"] != "a-b-cbr":
            f["app"]["rate"] = CBR_RATES[cbr]
    tr = trace if trace is not None else str(paths.root() / TRACE)
    greedy = split_available()
    if n > 1 and not greedy:
        raise QoelabError(f"N = {n} connections need the video keys `split` and `pacing = \"greedy\"`, which this "
                          "build of the simulator does not have")
    for i in range(n):
        app: dict[str, Any] = {"kind": "video", "trace": tr}
        if greedy:
            app["pacing"] = "greedy"
        if n > 1:
            app["split"] = {"connections": n, "index": i, "gop": GOP}
        d["flows"].append({
            "name": f"video{i}",
            "src": "SS1",
            "src_addr": "10.16.1.1",  # SS1's rtPS connection (Table 2)
            "dst": "BS" if path == "link" else "C",
            "start": f"{START_S + OFFSET_S * i:g}s",
            "transport": {"kind": "tfrc"},
            "app": app,
            "packet_log": True,
        })
    return d


@cache
def split_available() -> bool:
    """Whether the simulator has the video keys ``split`` and ``pacing = "greedy"`` (the
    multi-connection streamer, issue 18 item 2). Without them only N = 1 runs, paced by the
    trace's timestamps, and the report says so."""
    from qoelab.errors import ScenarioError
    from qoelab.scenario import Scenario

    probe = {"sim": {"duration": "1s"}, "links": [{"a": "S", "b": "D", "rate": "1Mbps", "delay": "1ms"}],
             "flows": [{"name": "v", "src": "S", "dst": "D", "transport": {"kind": "tfrc"},
                        "app": {"kind": "video", "trace": str(paths.root() / TRACE), "pacing": "greedy",
                                "split": {"connections": 2, "index": 0, "gop": GOP}}}]}
    try:
        Scenario.from_dict(probe, "<probe>").validate()
    except ScenarioError:
        return False
    return True


#: The cell written to ``scenarios/wimax/`` as a plain scenario file.
EXAMPLE_CELL = ("e2e", 20.0, 4, "paper")


def cell_toml(path: str = EXAMPLE_CELL[0], frame_ms: float = EXAMPLE_CELL[1], n: int = EXAMPLE_CELL[2],
              cbr: str = EXAMPLE_CELL[3]) -> str:
    """One cell as a scenario file for ``scenarios/wimax/`` (seed 1, the trace relative to that
    folder). ``tests/reproduce/test_wimax.py`` checks that the file there is exactly this."""
    import tomli_w

    d = build_scenario(path, frame_ms, n, cbr, trace=f"../../{TRACE}")
    head = (f"# Al-Majeed & Fleury (multi-TFRC over WiMAX): one cell of `qoelab reproduce wimax`: path {path}, "
            f"TDD frame {frame_ms:g} ms,\n# N = {n} TFRC connections, CBR setting {cbr}. Generated by "
            "qoelab.reproduce.wimax.cell_toml from base.toml;\n# do not edit by hand (a test compares). "
            f"Run: qoelab run scenarios/wimax/cell-{path}-f{frame_ms:g}-n{n}.toml\n")
    return head + tomli_w.dumps(d)


def cells(grid: Grid) -> list[dict[str, Any]]:
    """The experiment's cells: Table 3's link-only cells, the end-to-end cells of Tables 4–6 and
    the CBR sensitivity cells (end to end, ``cbr = "gap"``)."""
    out = [{"path": "link", "frame": f, "n": n, "cbr": "paper"} for f in grid.link_frames for n in grid.n]
    out += [{"path": "e2e", "frame": f, "n": n, "cbr": "paper"} for f in grid.e2e_frames for n in grid.n]
    out += [{"path": "e2e", "frame": f, "n": n, "cbr": "gap"} for f, n in grid.sensitivity]
    return out


def _cell_id(p: dict[str, Any]) -> str:
    return f"{p['path']}-f{p['frame']:g}-n{p['n']}-{p['cbr']}"


def _build(p: dict[str, Any], grid: Grid):
    from qoelab.scenario import Scenario

    d = build_scenario(p["path"], p["frame"], p["n"], p["cbr"], duration_s=grid.duration_s)
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / "scenarios" / "wimax")


# --- metrics of one run -------------------------------------------------------------------------


@dataclass(frozen=True)
class Video:
    """The encode the runs stream: its trace's NAL types and GOPs, and (for decoding) the
    bitstream and recipe, re-encoded once into the report folder (bitstreams are not kept in
    the repository)."""

    nal_type: list[str]
    nal_frame: list[int]
    nal_ts_ms: list[float]
    bitstream: Path | None
    recipe: Path | None


def load_video(folder: Path | None) -> Video:
    """The trace's NAL types; with ``folder``, the encode rebuilt there (``video/``), checked
    against the bundled trace NAL by NAL (sizes and frames) so a different encoder cannot pass
    for it."""
    from qoelab.video.traces.trace import TYPE_NAMES, read_trace

    tr = read_trace(paths.root() / TRACE)
    types = [str(x) for x in TYPE_NAMES[tr.type_code]]
    frames = [int(x) for x in tr.frame]
    ts = [float(x) for x in tr.ts_ms]
    if folder is None:
        return Video(types, frames, ts, None, None)
    vdir = folder / "video"
    bit, recipe = vdir / f"{TRACE_NAME}.h264", vdir / f"{TRACE_NAME}.recipe.toml"
    if not (bit.is_file() and recipe.is_file()):
        from qoelab.video.sources.bundle import build_cif

        vdir.mkdir(parents=True, exist_ok=True)
        build_cif(vdir, keep_bitstream=True)
    mine = read_trace(vdir / f"{TRACE_NAME}.trace.csv")
    if mine.n_nal != tr.n_nal or (mine.size_bytes != tr.size_bytes).any() or (mine.frame != tr.frame).any():
        raise QoelabError(f"{vdir}: the re-encoded {TRACE_NAME} differs from {TRACE} (another x264?); "
                          "PSNR would not match the simulated trace")
    return Video(types, frames, ts, bit, recipe)


def _packets(run_dir: Path):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(run_dir / "packets.parquet")
    return t.filter(pc.starts_with(t.column("flow"), "video"))


def run_metrics(run_dir: Path, p: dict[str, Any], *, video: Video, decode: set[tuple[float, int]]) -> dict[str, float]:
    """One run's numbers: the video's sending period (first packet sent to last received, s),
    throughput over it (received slice bytes, kbit/s), mean one-way packet delay (ms), packet
    loss in the network (%, of sent packets) overall, the start-up delay a reorder buffer needs
    (s, see below) and by I/P/B frame type, the share of the
    trace's slices never sent within the run (%), the loss-event rate (%) and RTT (ms) the TFRC
    connections measured (from ``flows.parquet``), and (for the decoded cells) the mean PSNR-Y
    against the source, decoded with FFmpeg's concealment (cached in the run folder as
    ``psnr.json``)."""
    import numpy as np

    t = _packets(run_dir)
    nal = t.column("nal").to_numpy()
    sent = t.column("sent_ns").to_numpy()
    recv_col = t.column("recv_ns")
    got = ~np.asarray(recv_col.is_null())
    recv = recv_col.fill_null(0).to_numpy()
    size = t.column("size_bytes").to_numpy().astype(np.float64)
    nan = float("nan")
    out: dict[str, float] = {}
    if got.any():
        period = (recv[got].max() - sent.min()) / 1e9
        out["period_s"] = float(period)
        out["throughput_kbps"] = float(size[got].sum() * 8 / period / 1e3)
        out["delay_ms"] = float((recv[got] - sent[got]).mean() / 1e6)
    else:
        out |= {"period_s": nan, "throughput_kbps": nan, "delay_ms": nan}
    out["loss_pct"] = float(100 * (1 - got.mean())) if got.size else nan
    # Start-up delay (Fig. 2): the smallest playout delay after the first packet is sent at
    # which every slice that arrives is in time for its frame (the reorder buffer's depth).
    ts_ns = np.round(np.asarray(video.nal_ts_ms)[nal] * 1e6).astype(np.int64)
    out["startup_s"] = float(max(0, (recv[got] - sent.min() - ts_ns[got]).max()) / 1e9) if got.any() else nan
    types = np.asarray(video.nal_type, dtype=object)[nal]
    for k in ("I", "P", "B"):
        sel = types == k
        out[f"loss_{k}_pct"] = float(100 * (1 - got[sel].mean())) if sel.any() else nan
    out["unsent_pct"] = float(100 * (1 - np.unique(nal).size / len(video.nal_type)))
    # What the TFRC connections measured (mean over the connections): the loss-event rate
    # (events per packet, %) and the last RTT estimate R, ms.
    fl = run_dir / "flows.parquet"
    if fl.is_file():
        import pyarrow.parquet as pq

        rows = [r for r in pq.read_table(fl, columns=["flow", "tfrc_loss_event_rate", "tfrc_rtt_s"]).to_pylist()
                if r["flow"].startswith("video")]
        out["tfrc_p_pct"] = float(100 * np.mean([r["tfrc_loss_event_rate"] for r in rows])) if rows else nan
        out["tfrc_rtt_ms"] = float(1e3 * np.mean([r["tfrc_rtt_s"] for r in rows])) if rows else nan
    else:
        out["tfrc_p_pct"] = out["tfrc_rtt_ms"] = nan
    out["psnr_db"] = nan
    if p["path"] == "e2e" and (p["frame"], p["n"]) in decode and video.bitstream is not None:
        out["psnr_db"] = _psnr(run_dir, video)
    return out


def _psnr(run_dir: Path, video: Video) -> float:
    """Mean PSNR-Y against the source of the run's delivery (cached as ``psnr.json``). No
    playout deadline: a slice counts if it arrived at all, as the paper's EvalVid evaluation of
    ns-2's loss output counts it; the start-up delay that makes this so is Fig. 2's."""
    cache = run_dir / "psnr.json"
    if cache.is_file():
        return float(json.loads(cache.read_text())["mean_psnr_y_vs_source_db"])
    from qoelab.video.quality.evaluate import evaluate

    r = evaluate(paths.root() / TRACE, video.bitstream, run_dir / "packets.parquet", playout_delay_s=1e6,
                 recipe_path=video.recipe, stream_start_ns=0)
    keep = {k: r.summary[k] for k in ("mean_psnr_y_vs_source_db", "ref_mean_psnr_y_vs_source_db",
                                      "mean_psnr_y_vs_decode_db", "nal_lost", "nal_unsent", "decodable_frame_rate",
                                      "frame_loss_by_type")}
    tmp = run_dir / ".psnr.json.tmp"
    tmp.write_text(json.dumps(keep, indent=1, sort_keys=True) + "\n")
    tmp.replace(cache)
    return float(keep["mean_psnr_y_vs_source_db"])


METRICS = ("period_s", "throughput_kbps", "delay_ms", "startup_s", "loss_pct", "loss_I_pct", "loss_P_pct", "loss_B_pct",
           "unsent_pct", "tfrc_p_pct", "tfrc_rtt_ms", "psnr_db")
TREATMENTS = ("path", "frame", "n", "cbr")


def experiment(grid: Grid, video: Video) -> core.Experiment:
    return core.Experiment("wimax", cells(grid), partial(_build, grid=grid),
                           partial(run_metrics, video=video, decode=set(grid.decode)),
                           paired=TREATMENTS, reps=grid.reps, cell_id=_cell_id)


def effective(grid: Grid) -> Grid:
    """``grid`` as this build can run it: N = 1 only when the multi-connection keys are missing
    (:func:`split_available`)."""
    if split_available():
        return grid
    return Grid(grid.link_frames, grid.e2e_frames, (1,), tuple(c for c in grid.decode if c[1] == 1),
                tuple(c for c in grid.sensitivity if c[1] == 1) or ((grid.e2e_frames[0], 1),), grid.reps,
                grid.duration_s)


# --- tables ------------------------------------------------------------------------------------


def _est(agg: dict[tuple, dict[str, Any]], key: tuple, m: str) -> Estimate | None:
    row = agg.get(key)
    return None if row is None else row.get(m)


def _sd(rows: list[dict[str, Any]], sel: dict[str, Any], m: str) -> float | None:
    xs = [float(r[m]) for r in rows if all(r[k] == v for k, v in sel.items()) and r[m] == r[m]]
    if len(xs) < 2:
        return None
    mu = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mu) ** 2 for x in xs) / (len(xs) - 1))


def _conn(n: int) -> str:
    return f"{n}-conn"


def tables(grid: Grid, rep_rows: list[dict[str, Any]]) -> dict[str, Table]:
    """Tables 3–6, the loss by frame type (Fig. 3's numbers) and the CBR sensitivity, ours beside
    the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}
    out: dict[str, Table] = {}

    # Table 3: WiMAX link only, 5 and 20 ms.
    p_per = PaperValues("Table 3", ("frame", "n"), {k: v[0] for k, v in PAPER_T3.items()})
    p_thr = PaperValues("Table 3", ("frame", "n"), {k: float(v[1]) for k, v in PAPER_T3.items()})
    rows = [{"frame": f, "n": n, "conn": _conn(n), "period": _est(agg, ("link", f, n, "paper"), "period_s"),
             "thr": _est(agg, ("link", f, n, "paper"), "throughput_kbps")} for f in grid.link_frames for n in grid.n]
    rows = p_thr.join(p_per.join(rows, "paper_period"), "paper_thr")
    out["table3"] = Table("table3", "Table 3: sending period and throughput, SS1 to the base station (WiMAX link only)",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("period", "sending period", "s", "ours"), p_per.column("paper_period", "paper: sending period", "s"),
                           Column("thr", "throughput", "kbit/s", "ours"), p_thr.column("paper_thr", "paper: throughput", "kbit/s")],
                          rows, source="paper Table 3")

    # Table 4: end to end at 20 ms.
    cols4 = [Column("conn", "connections"), Column("period", "sending period", "s", "ours"),
             Column("paper_period", "paper: sending period", "s", "paper"), Column("thr", "throughput", "kbit/s", "ours"),
             Column("paper_thr", "paper: throughput", "kbit/s", "paper"),
             Column("delay", "mean end-to-end delay", "s", "ours", scale=1e-3), Column("paper_delay", "paper: mean end-to-end delay", "s", "paper")]
    rows = []
    if 20.0 in grid.e2e_frames:
        for n in grid.n:
            k = ("e2e", 20.0, n, "paper")
            pv = PAPER_T4[n]
            rows.append({"conn": _conn(n), "period": _est(agg, k, "period_s"), "paper_period": pv[0],
                         "thr": _est(agg, k, "throughput_kbps"), "paper_thr": float(pv[1]),
                         "delay": _est(agg, k, "delay_ms"), "paper_delay": pv[2]})
    out["table4"] = Table("table4", "Table 4: sending period, throughput and mean delay, SS1 to node C (20 ms frames)",
                          cols4, rows, source="paper Table 4")

    # Table 5: PSNR by frame length and connections (decoded cells only).
    rows = []
    for f in grid.e2e_frames:
        for n in grid.n:
            if (f, n) not in grid.decode:
                continue
            k = ("e2e", f, n, "paper")
            pm, ps = PAPER_T5[(f, n)]
            rows.append({"frame": f, "conn": _conn(n), "psnr": _est(agg, k, "psnr_db"),
                         "sd": _sd(rep_rows, dict(zip(TREATMENTS, k)), "psnr_db"), "paper_psnr": pm, "paper_sd": ps})
    out["table5"] = Table("table5", "Table 5: mean PSNR-Y (dB) against the source, SS1 to node C, real decoding with concealment",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("psnr", "mean PSNR", "dB", "ours", digits=4), Column("sd", "stdv over runs", "dB", "ours"),
                           Column("paper_psnr", "paper: mean PSNR", "dB", "paper", digits=4), Column("paper_sd", "paper: stdv", "dB", "paper")],
                          rows, source="paper Table 5")

    # Table 6: mean delay by frame length and connections.
    rows = [{"frame": f, "conn": _conn(n), "delay": _est(agg, ("e2e", f, n, "paper"), "delay_ms"),
             "paper_delay": PAPER_T6[(f, n)]} for f in grid.e2e_frames for n in grid.n]
    out["table6"] = Table("table6", "Table 6: mean packet end-to-end delay, SS1 to node C",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("delay", "mean delay", "s", "ours", scale=1e-3), Column("paper_delay", "paper: mean delay", "s", "paper")],
                          rows, source="paper Table 6")

    # Fig. 2's number: the start-up delay the reorder buffer needs.
    rows = [{"frame": f, "conn": _conn(n), "startup": _est(agg, ("e2e", f, n, "paper"), "startup_s"),
             "paper_startup": PAPER_FIG2_STARTUP_S if (f, n) == (20.0, 4) else None}
            for f in grid.e2e_frames for n in grid.n]
    out["fig2"] = Table("fig2-startup", "Fig. 2 (ours): start-up delay for in-time playout of every slice that arrives, "
                        "SS1 to node C", [Column("frame", "frame", "ms"), Column("conn", "connections"),
                                          Column("startup", "start-up delay", "s", "ours"),
                                          Column("paper_startup", "paper: start-up delay", "s", "paper")],
                        rows, source="paper Fig. 2 and Sec. 4",
                        note=f"The paper reads {PAPER_FIG2_STARTUP_S:g} s ({PAPER_FIG2_FRAMES} frames, which at 30 "
                             "frame/s are 3 s) off its Fig. 2 for 4 connections; its frame length there is not "
                             "stated (Fig. 2 is discussed with Table 4, 20 ms).")

    # Fig. 3's numbers: packet loss by frame type (the paper gives these only as a bar chart).
    rows = [{"frame": f, "conn": _conn(n), **{t: _est(agg, ("e2e", f, n, "paper"), f"loss_{t}_pct") for t in ("I", "P", "B")},
             "all": _est(agg, ("e2e", f, n, "paper"), "loss_pct"), "unsent": _est(agg, ("e2e", f, n, "paper"), "unsent_pct")}
            for f in grid.e2e_frames for n in grid.n]
    out["fig3"] = Table("fig3-loss-by-type", "Fig. 3 (ours): packet loss by frame type, SS1 to node C",
                        [Column("frame", "frame", "ms"), Column("conn", "connections")]
                        + [Column(t, f"{t}-frame packets lost", "%", "ours") for t in ("I", "P", "B")]
                        + [Column("all", "all packets lost", "%", "ours"), Column("unsent", "slices never sent", "%", "ours")],
                        rows, source="paper Fig. 3",
                        note="The paper gives Fig. 3 as a bar chart without numbers: no paper column. Loss counts "
                             "channel and queue drops of sent packets (SPS/PPS/SEI units are in `all` only).")

    # What the TFRC connections measured: the inputs of their throughput equation.
    rows = [{"path": "link only" if pth == "link" else "end to end", "frame": f, "conn": _conn(n),
             "p": _est(agg, (pth, f, n, "paper"), "tfrc_p_pct"), "rtt": _est(agg, (pth, f, n, "paper"), "tfrc_rtt_ms"),
             "thr": _est(agg, (pth, f, n, "paper"), "throughput_kbps")}
            for pth, frames in (("link", grid.link_frames), ("e2e", grid.e2e_frames)) for f in frames for n in grid.n]
    out["tfrc"] = Table("tfrc-view", "What the TFRC connections measured (mean over the connections of a run)",
                        [Column("path", "path"), Column("frame", "frame", "ms"), Column("conn", "connections"),
                         Column("p", "loss-event rate p", "%", "ours"), Column("rtt", "RTT estimate R", "ms", "ours"),
                         Column("thr", "video throughput", "kbit/s", "ours")],
                        rows, source="ours (the paper gives no such table)",
                        note="p and R are each connection's last values; the equation gives a rate "
                             "falling with R and with the square root of p (RFC 5348 §3.1).")

    # The CBR sensitivity: 1.5 Mbit/s (paper) against a 0.03-s gap (267 kbit/s), paired by seed.
    rows = []
    for f, n in grid.sensitivity:
        r: dict[str, Any] = {"frame": f, "conn": _conn(n)}
        for m, short in (("throughput_kbps", "thr"), ("delay_ms", "delay"), ("loss_pct", "loss")):
            r[f"{short}_paper"] = _est(agg, ("e2e", f, n, "paper"), m)
            r[f"{short}_gap"] = _est(agg, ("e2e", f, n, "gap"), m)
            d = core.paired([x for x in rep_rows if x["path"] == "e2e" and x["frame"] == f and x["n"] == n],
                            "cbr", "gap", "paper", m)
            r[f"{short}_diff"] = d.get(())
        rows.append(r)
    cols = [Column("frame", "frame", "ms"), Column("conn", "connections")]
    for short, label, unit in (("thr", "throughput", "kbit/s"), ("delay", "delay", "ms"), ("loss", "loss", "%")):
        cols += [Column(f"{short}_paper", f"{label}, CBR 1.5 Mbit/s", unit, "ours"),
                 Column(f"{short}_gap", f"{label}, CBR 0.03-s gap", unit, "ours"),
                 Column(f"{short}_diff", f"{label}: gap − 1.5 Mbit/s (paired)", unit, "ours")]
    out["sensitivity"] = Table("sensitivity-cbr", "Sensitivity: the rtPS CBR sources at 1.5 Mbit/s or one 1000-B packet "
                               "every 0.03 s (267 kbit/s), SS1 to node C", cols, rows, source="paper Sec. 3.2 (both statements)")
    return out


# --- findings ----------------------------------------------------------------------------------


def _pdiff(rep_rows: list[dict[str, Any]], sel: dict[str, Any], treatment: str, a: Any, b: Any, m: str) -> Estimate | None:
    """Paired difference m(a) − m(b) of ``treatment`` over the runs matching ``sel`` (None when no
    pair exists or the metric is missing)."""
    rs = [r for r in rep_rows if all(r[k] == v for k, v in sel.items()) and r[m] == r[m]]
    return core.paired(rs, treatment, a, b, m).get(())


def findings(grid: Grid, rep_rows: list[dict[str, Any]]) -> list[Finding]:
    """The paper's claims as findings, each with its statistic over paired repetitions."""
    out: list[Finding] = []
    nmax, nmin = max(grid.n), min(grid.n)
    multi = nmax > nmin
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}

    # Sec. 4 / Table 3: throughput grows with the number of connections (link only, both frames).
    if multi:
        ds = {f: _pdiff(rep_rows, {"path": "link", "frame": f, "cbr": "paper"}, "n", nmax, nmin, "throughput_kbps")
              for f in grid.link_frames}
        worst = min((d for d in ds.values() if d is not None), key=lambda d: d.mean, default=None)
        out.append(Finding("throughput-grows-with-connections",
                           f"throughput over the WiMAX link grows from {nmin} to {nmax} connections (Table 3, both frames)",
                           Label.SUBSTANTIVE, judge_all([judge_positive(d) for d in ds.values()]),
                           f"paired throughput N={nmax} − N={nmin}, kbit/s, smaller of the frame lengths", worst))
        d = _pdiff(rep_rows, {"path": "e2e", "frame": 20.0, "cbr": "paper"}, "n", nmax, nmin, "delay_ms")
        out.append(Finding("delay-grows-with-connections",
                           f"mean end-to-end delay grows from {nmin} to {nmax} connections (Table 4, 20 ms)",
                           Label.SUBSTANTIVE, judge_positive(d), f"paired delay N={nmax} − N={nmin}, ms", d))
        if (20.0, nmax) in grid.decode and (20.0, nmin) in grid.decode:
            d = _pdiff(rep_rows, {"path": "e2e", "frame": 20.0, "cbr": "paper"}, "n", nmax, nmin, "psnr_db")
            out.append(Finding("psnr-equivalent-across-connections",
                               f"with 20 ms frames, {nmax} connections give video quality equivalent to {nmin} "
                               "(Sec. 4: within 1 dB)",
                               Label.SUBSTANTIVE, judge_within(d, 1.0), f"paired PSNR N={nmax} − N={nmin}, dB", d))
    # Table 3: one connection on 5 ms frames takes longer than the clip's display period.
    e = _est(agg, ("link", 5.0, nmin, "paper"), "period_s")
    e_shift = None if e is None else Estimate(e.mean - DISPLAY_S, e.half_width, e.n)
    out.append(Finding("one-connection-5ms-slower-than-display",
                       f"with one connection and 5 ms frames the sending period exceeds the display period "
                       f"({DISPLAY_S:.1f} s) (Table 3)", Label.SUBSTANTIVE, judge_positive(e_shift),
                       "sending period − display period, s", e_shift))
    # Table 3: the longer frame carries more for one connection.
    if 5.0 in grid.link_frames and 20.0 in grid.link_frames:
        d = _pdiff(rep_rows, {"path": "link", "n": nmin, "cbr": "paper"}, "frame", 20.0, 5.0, "throughput_kbps")
        out.append(Finding("longer-frame-more-throughput",
                           f"with {nmin} connection(s) a 20 ms frame gives more throughput than a 5 ms frame (Table 3)",
                           Label.SUBSTANTIVE, judge_positive(d), "paired throughput 20 ms − 5 ms, kbit/s", d))
    # Table 5: PSNR ordering by frame length (a 5 ms frame costs one or two dB).
    ns = [n for n in grid.n if (5.0, n) in grid.decode and (20.0, n) in grid.decode]
    if ns:
        ds = {n: _pdiff(rep_rows, {"path": "e2e", "n": n, "cbr": "paper"}, "frame", 20.0, 5.0, "psnr_db") for n in ns}
        worst = min((d for d in ds.values() if d is not None), key=lambda d: d.mean, default=None)
        out.append(Finding("psnr-higher-with-20ms-frames",
                           f"PSNR is higher with 20 ms frames than with 5 ms frames (Table 5; N = {', '.join(map(str, ns))})",
                           Label.SUBSTANTIVE, judge_all([judge_positive(d) for d in ds.values()]),
                           "paired PSNR 20 ms − 5 ms, dB, smallest over N", worst))
    # Table 4 vs Table 3: the core network lowers the throughput (20 ms).
    ds = {n: _pdiff(rep_rows, {"frame": 20.0, "n": n, "cbr": "paper"}, "path", "link", "e2e", "throughput_kbps")
          for n in grid.n if 20.0 in grid.e2e_frames and 20.0 in grid.link_frames}
    if ds:
        worst = min((d for d in ds.values() if d is not None), key=lambda d: d.mean, default=None)
        out.append(Finding("core-lowers-throughput",
                           "adding the core network lowers the video's throughput at 20 ms (Table 4 below Table 3)",
                           Label.SUBSTANTIVE, judge_all([judge_positive(d) for d in ds.values()]),
                           "paired throughput link only − end to end, kbit/s, smallest over N", worst))
    # Sec. 4 / Table 6: the mean delay stays below 100 ms even with the most connections.
    es = {f: _est(agg, ("e2e", f, nmax, "paper"), "delay_ms") for f in grid.e2e_frames}
    worst = max((x for x in es.values() if x is not None), key=lambda x: x.mean, default=None)
    out.append(Finding("delay-below-100ms", f"the mean end-to-end delay with {nmax} connection(s) stays below 100 ms "
                       "at every frame length (Sec. 4, Table 6)", Label.SUBSTANTIVE,
                       judge_all([judge_below(x, 100.0) for x in es.values()]), "mean delay, ms, largest over frames", worst))
    # By construction: the link-only path crosses no core router, so its throughput is not
    # limited by the bottleneck; what it loses is the channel's and SS1's queue.
    ch = [r for r in rep_rows if r["path"] == "link"]
    if ch:
        e = mean_ci([r["loss_pct"] - CHANNEL_LOSS_PCT for r in ch if r["loss_pct"] == r["loss_pct"]])
        out.append(Finding("link-loss-at-least-channel", "link-only runs lose at least the Gilbert–Elliott channel's "
                           f"stationary {CHANNEL_LOSS_PCT:.2f} % of the video's packets, to within 0.5 pp (every uplink "
                           "PDU is judged by it)", Label.BY_CONSTRUCTION, judge_positive(e, threshold=-0.5),
                           "video packet loss − stationary channel loss, link only, all cells, pp", e))
    return out


# --- figures -----------------------------------------------------------------------------------


def fig2(run_dir: Path, video: Video, path: Path, title: str) -> dict[str, Any]:
    """Fig. 2: for one run, each GOP's first and last slice arrival at node C against the GOP's
    index, coloured by connection (top), and the receiver's reorder buffer over time (bottom:
    packets held until every earlier frame has been released, ``qoelab.video.receiver.reorder``, at the
    smallest playout delay D at which every complete frame is in time). A frame is released
    when its last packet arrives, or, when one of its packets was lost, at its playout time:
    greedy senders run far ahead of playout, so one lost slice holds everything behind it until
    then, which is most of what the curve shows. Returns the numbers it drew."""
    import numpy as np

    from qoelab.video.receiver.recvlog import receive_log_from_table
    from qoelab.video.receiver.reorder import reorder
    from qoelab.video.traces.trace import read_trace

    plt = pyplot()
    t = _packets(run_dir)
    trace, log = read_trace(paths.root() / TRACE), receive_log_from_table(t, run_dir / "packets.parquet")
    d_s = reorder(trace, log, 0.0).min_deadline_ns / 1e9
    rb = reorder(trace, log, d_s)
    nal = t.column("nal").to_numpy()
    got = ~np.asarray(t.column("recv_ns").is_null())
    recv = t.column("recv_ns").fill_null(0).to_numpy()
    flows = np.asarray(t.column("flow").to_pylist(), dtype=object)
    t0 = t.column("sent_ns").to_numpy().min()
    gop = np.asarray(video.nal_frame)[nal] // GOP
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6.4), sharex=True, height_ratios=(3, 2))
    names = sorted(set(flows.tolist()))
    spans = []
    for g in np.unique(gop[got]):
        sel = got & (gop == g)
        a, b = (recv[sel].min() - t0) / 1e9, (recv[sel].max() - t0) / 1e9
        k = names.index(flows[sel][0])
        ax.plot([a, b], [g, g], color=f"C{k}", lw=2)
        spans.append((int(g), a, b))
    for k, nm in enumerate(names):
        ax.plot([], [], color=f"C{k}", lw=2, label=nm)
    ax.set_ylabel("GOP (15 frames)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    held_pkts, held_bytes = rb.max_occupancy()
    ax2.step((rb.occupancy_t_ns - rb.t0_ns) / 1e9, rb.occupancy_pkts, where="post", lw=1, color="k")
    ax2.set_xlabel("time since the first packet was sent (s)")
    ax2.set_ylabel("reorder buffer (packets)")
    ax2.set_title(f"packets held for reordering at D = {d_s:.2f} s (at most {held_pkts}, "
                  f"{held_bytes / 1e3:.0f} kB)", fontsize=8)
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"gops": len(spans), "deadline_s": d_s, "max_held_pkts": held_pkts, "max_held_bytes": held_bytes}


def fig3(table: Table, path: Path) -> None:
    """Fig. 3 (ours): packet loss by frame type, one group of bars per (frame, connections)."""
    plt = pyplot()
    rows = table.rows
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows) + 2), 4))
    w = 0.27
    for j, t in enumerate(("I", "P", "B")):
        xs = [i + (j - 1) * w for i in range(len(rows))]
        ys = [r[t].mean if r[t] is not None else float("nan") for r in rows]
        err = [r[t].half_width if r[t] is not None and r[t].half_width == r[t].half_width else 0 for r in rows]
        ax.bar(xs, ys, w, yerr=err, label=f"{t} frames", color=f"C{j}")
    ax.set_xticks(range(len(rows)), [f"{r['frame']:g} ms\n{r['conn']}" for r in rows], fontsize=7)
    ax.set_ylabel("packets lost (%)")
    ax.set_title("Fig. 3 (ours): loss by frame type, SS1 to node C (95 % intervals)", fontsize=9)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fig_psnr(table: Table, path: Path) -> None:
    """Table 5 as a figure: mean PSNR against the frame length, ours (95 % intervals) and the
    paper's, one line per number of connections."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    conns = sorted({r["conn"] for r in table.rows})
    for k, c in enumerate(conns):
        rs = [r for r in table.rows if r["conn"] == c]
        xs = [r["frame"] for r in rs]
        ys = [r["psnr"].mean if r["psnr"] is not None else float("nan") for r in rs]
        err = [r["psnr"].half_width if r["psnr"] is not None and r["psnr"].half_width == r["psnr"].half_width else 0 for r in rs]
        ax.errorbar(xs, ys, yerr=err, color=f"C{k}", marker="o", capsize=3, label=f"{c} (ours)")
        ax.plot(xs, [r["paper_psnr"] for r in rs], color=f"C{k}", ls="--", marker="x", label=f"{c} (paper)")
    ax.set_xlabel("TDD frame length (ms)")
    ax.set_ylabel("mean PSNR-Y (dB)")
    ax.set_title("Table 5: mean PSNR, ours (solid) and the paper's (dashed)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- the reading -------------------------------------------------------------------------------


def _series(table: Table, key: str, col: str, sel: Callable[[dict[str, Any]], bool] = lambda r: True,
            digits: int = 3, scale: float = 1.0) -> str:
    """The values of ``key`` in ``table``'s rows that ``sel`` keeps, as ``a, b, c`` (means; "n/a"
    where missing)."""
    vals = []
    for r in table.rows:
        if not sel(r):
            continue
        v = r.get(key)
        if isinstance(v, Estimate):
            vals.append("n/a" if math.isnan(v.mean) else f"{v.mean * scale:.{digits}g}")
        elif isinstance(v, (int, float)):
            vals.append(f"{v * scale:.{digits}g}")
        else:
            vals.append("n/a")
    return ", ".join(vals)


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding]) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), then the
    findings with their intervals."""
    conns = ", ".join(str(n) for n in grid.n)
    md = []
    t3 = tabs["table3"]
    for f in grid.link_frames:
        sel = (lambda f: lambda r: r["frame"] == f)(f)
        md.append(f"- **Table 3, {f:g} ms frames** (WiMAX link only), N = {conns}: throughput "
                  f"{_series(t3, 'thr', 'thr', sel)} kbit/s (paper {_series(t3, 'paper_thr', '', sel)}); sending period "
                  f"{_series(t3, 'period', '', sel)} s (paper {_series(t3, 'paper_period', '', sel)}).")
    t4 = tabs["table4"]
    if t4.rows:
        md.append(f"- **Table 4** (SS1 to node C, 20 ms), N = {conns}: throughput {_series(t4, 'thr', '')} kbit/s "
                  f"(paper {_series(t4, 'paper_thr', '')}); mean delay {_series(t4, 'delay', '', scale=1e-3)} s "
                  f"(paper {_series(t4, 'paper_delay', '')}).")
    t5 = tabs["table5"]
    if t5.rows:
        diffs = [r["psnr"].mean - r["paper_psnr"] for r in t5.rows if r["psnr"] is not None and not math.isnan(r["psnr"].mean)]
        cells5 = "; ".join(f"{r['frame']:g} ms {r['conn']}: {r['psnr'].mean:.2f} (paper {r['paper_psnr']:.2f})"
                           for r in t5.rows if r["psnr"] is not None)
        md.append(f"- **Table 5** (PSNR-Y, dB, decoded cells): {cells5}. Ours minus the paper's, mean over these "
                  f"cells: {sum(diffs) / len(diffs):+.2f} dB." if diffs else "- **Table 5**: no decoded cell.")
    t6 = tabs["table6"]
    for f in grid.e2e_frames:
        sel = (lambda f: lambda r: r["frame"] == f)(f)
        md.append(f"- **Table 6, {f:g} ms**, N = {conns}: mean delay {_series(t6, 'delay', '', sel, scale=1e-3)} s "
                  f"(paper {_series(t6, 'paper_delay', '', sel)}).")
    t2 = tabs["fig2"]
    r24 = next((r for r in t2.rows if r["frame"] == 20.0 and r["conn"] == _conn(max(grid.n))), None)
    if r24 is not None and r24["startup"] is not None:
        md.append(f"- **Fig. 2**: with {r24['conn']} at 20 ms every arriving slice is in time after a start-up delay of "
                  f"{r24['startup'].mean:.3g} s (paper: about {PAPER_FIG2_STARTUP_S:g} s).")
    tv = tabs["tfrc"]
    for pth in ("link only", "end to end"):
        for f in (grid.link_frames if pth == "link only" else grid.e2e_frames):
            sel = (lambda pth, f: lambda r: r["path"] == pth and r["frame"] == f)(pth, f)
            if any(sel(r) for r in tv.rows):
                md.append(f"- **TFRC's view**, {pth}, {f:g} ms, N = {conns}: loss-event rate {_series(tv, 'p', '', sel)} %, "
                          f"RTT {_series(tv, 'rtt', '', sel)} ms.")
    sens = tabs["sensitivity"]
    for r in sens.rows:
        d = r.get("thr_diff")
        if d is not None:
            md.append(f"- **CBR sensitivity**, {r['frame']:g} ms {r['conn']}: a 0.03-s CBR gap instead of 1.5 Mbit/s "
                      f"changes the video's end-to-end throughput by {interval_str(d)} kbit/s and its delay by "
                      f"{interval_str(r.get('delay_diff'))} ms (paired).")
    md += ["", "Which of the paper's trends hold (95 % intervals over paired repetitions):", "", findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


# --- the reproduction --------------------------------------------------------------------------


def _setup(grid: Grid, quick: bool) -> str:
    greedy = split_available()
    lines = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell, {grid.duration_s:g} s each; the same "
        "seed for repetition r of every cell (all cells differ only in treatments), so differences are paired.",
        f"Link-only frames {', '.join(f'{f:g}' for f in grid.link_frames)} ms; end-to-end frames "
        f"{', '.join(f'{f:g}' for f in grid.e2e_frames)} ms; N = {', '.join(map(str, grid.n))} TFRC connections. "
        f"PSNR decoded on {len(grid.decode)} (frame, N) cells: "
        + ", ".join(f"{f:g} ms/N={n}" for f, n in grid.decode) + ".",
        "Video: bundled `cif_bbb_qp26` (Big Buck Bunny, CIF, 30 fps, H.264 QP 26, GOP 15, 1063 frames, 900-B slices), "
        "about 595 kbit/s against the paper's 437 kbit/s 'Paris': a third more data to send, so our sending periods "
        "are longer and our throughputs are not expected to match the paper's where TFRC, not the source, limits them.",
        "PSNR: mean PSNR-Y against the source, real decoding (FFmpeg, previous-frame concealment of lost slices and "
        "frames); no playout deadline (every slice that arrives counts; Fig. 2 gives the start-up delay that makes it so).",
        "Choices where the paper contradicts itself (scenarios/wimax/README.md): rtPS CBR at 1.5 Mbit/s (the text, twice) "
        "rather than the 0.03-s gap (267 kbit/s), which is a sensitivity treatment; CBR packets of 1000 B at IP level "
        "(972-B payload) so that they fit the 1024-B maximum; the uplink PHY rate the paper's 10.67 Mbit/s with our "
        "frame layout (3 overhead symbols per subframe), which makes the downlink 1.7–2.5 Mbit/s, not the paper's "
        "2.69 Mbit/s; the downlink FTP and CBR go from node B to SS3.",
    ]
    if not greedy:
        lines.append("**This build lacks the multi-connection keys (`split`, `pacing = \"greedy\"`): only N = 1 ran, "
                     "paced by the trace's timestamps (datagrams the TFRC send buffer cannot hold are dropped at the "
                     "sender and count as never sent).**")
    else:
        lines.append("Each connection i sends GOPs g with g mod N = i, greedily (its TFRC send buffer kept full), "
                     f"starting {START_S:g} + {OFFSET_S:g}·i s into the run.")
    return "\n\n".join(lines)


def _decode_all(exp: core.Experiment, out: Path, video: Video, grid: Grid, jobs: int,
                progress: Callable[[int, int], None] | None, done0: int, total: int) -> None:
    """Decodes the runs of the decoded cells (caching ``psnr.json`` in each), in ``jobs``
    processes, reporting progress after the ``done0`` runs already counted."""
    from qoelab.sweep import is_done

    todo = []
    for p in exp.cells:
        if p["path"] != "e2e" or (p["frame"], p["n"]) not in grid.decode:
            continue
        for r in range(exp.reps):
            d = out / "runs" / "runs" / f"cell={_cell_id(p)}__rep={r}"
            if is_done(d) and not (d / "psnr.json").is_file():
                todo.append(d)
    if jobs > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            for k, _ in enumerate(pool.map(_psnr, todo, [video] * len(todo))):
                if progress:
                    progress(done0 + k + 1, total)
    else:
        for k, d in enumerate(todo):
            _psnr(d, video)
            if progress:
                progress(done0 + k + 1, total)


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[[int, int], None] | None = None,
        executor: Any = None, reps: int | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) the experiment into ``out`` and writes the report there. Returns a
    summary (``{"shard": ...}`` for one task of a job array)."""
    from dataclasses import replace

    grid = effective(QUICK if quick else FULL)
    if reps is not None:
        if reps < 1:
            raise QoelabError(f"--reps {reps}: must be at least 1")
        grid = replace(grid, reps=reps)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"qoelab reproduce wimax{' --quick' if quick else ''}: writing {out} ({grid.reps} repetitions, "
        f"{len(cells(grid))} cells)")
    video = load_video(out)
    exp = experiment(grid, video)
    n_runs = len(exp.cells) * grid.reps
    n_dec = sum(1 for p in exp.cells if p["path"] == "e2e" and (p["frame"], p["n"]) in grid.decode) * grid.reps
    total = n_runs + n_dec
    core.run(exp, out / "runs", jobs, (lambda d, t: progress(d, total)) if progress else None, executor=executor)
    if getattr(executor, "shard", None):
        return {"shard": executor.shard}
    _decode_all(exp, out, video, grid, jobs, progress, n_runs, total)
    rep_rows = core.rows(exp, out / "runs")
    tabs = tables(grid, rep_rows)
    found = findings(grid, rep_rows)
    names = {"table3": "table3.csv", "table4": "table4.csv", "table5": "table5.csv", "table6": "table6.csv",
             "fig2": "fig2_startup.csv", "fig3": "fig3_loss_by_type.csv", "tfrc": "tfrc_view.csv",
             "sensitivity": "sensitivity_cbr.csv"}
    for k, t in tabs.items():
        t.write_csv(out, names[k])
    with open(out / "repetitions.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*TREATMENTS, "rep", "seed", *METRICS], lineterminator="\n")
        w.writeheader()
        for r in rep_rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    figures = []
    n4 = max(grid.n)
    f2 = 20.0 if 20.0 in grid.e2e_frames else grid.e2e_frames[-1]
    run0 = out / "runs" / "runs" / f"cell={_cell_id({'path': 'e2e', 'frame': f2, 'n': n4, 'cbr': 'paper'})}__rep=0"
    if (run0 / "packets.parquet").is_file():
        fig2(run0, video, out / "fig2_gop_arrivals.png",
             f"Fig. 2 (ours): GOP arrivals at node C, {n4} connection(s), {f2:g} ms frames, repetition 0")
        figures.append({"id": "fig2", "title": f"Fig. 2 (ours): GOP arrival sequence and reorder-buffer occupancy, "
                                               f"{n4} connection(s)",
                        "path": "fig2_gop_arrivals.png", "source": "paper Fig. 2"})
    fig3(tabs["fig3"], out / "fig3_loss_by_type.png")
    figures.append({"id": "fig3", "title": "Fig. 3 (ours): packet loss by frame type", "path": "fig3_loss_by_type.png",
                    "source": "paper Fig. 3"})
    if tabs["table5"].rows:
        fig_psnr(tabs["table5"], out / "table5_psnr.png")
        figures.append({"id": "table5", "title": "Table 5: PSNR against frame length, ours and the paper's",
                        "path": "table5_psnr.png", "source": "paper Table 5"})
    text = reading(grid, tabs, found)
    setup = _setup(grid, quick)
    from qoelab.experiment import summary_count

    held, decided = summary_count(found)
    summary = (f"One CIF video over N = {', '.join(map(str, grid.n))} TFRC connections across a WiMAX TDD uplink "
               f"(Gilbert–Elliott channel) and a wired core: {held} of {decided} substantive findings of the paper hold.")
    publish(out, paper="wimax", quick=quick, title="Multi-connection TFRC over WiMAX (Al-Majeed & Fleury)", tables=list(tabs.values()), findings=found,
            source="paper Sec. 4", figures=figures, reading=text, summary=summary, setup=setup,
            cost=core.cost(out / "runs"), seeds=sorted({r["seed"] for r in rep_rows}))
    wall = time.time() - t0
    log(f"wimax: {held} of {decided} substantive findings hold ({wall:.0f} s); wrote {out}/report.md")
    return {"held": held, "decided": decided, "wall_s": wall, "runs": len(rep_rows)}


# --- CLI ---------------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce wimax`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "wimax", "Al-Majeed & Fleury: multi-connection TFRC video over a WiMAX uplink (Tables 3-6, Figs. 2-3)",
        run, quick_help="few repetitions, PSNR on 4 cells (CI, about 2 minutes)",
        reps_help="repetitions per cell (default 2 with --quick, else 15 as in the paper)",
        jobs_help="parallel runs and decodes (default 1; 0 = one per CPU)", unit="runs and decodes")
