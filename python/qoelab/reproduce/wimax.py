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
``e2e``: it ends at node C, Tables 4–6), a TDD ``frame`` length in ms and ``n`` connections. All
three are *treatments* of the experiment layer (:mod:`qoelab.experiment.core`): repetition ``r``
of every cell runs with the same seed, so every difference in the findings is paired. What the
paper leaves open or contradicts is :data:`CHOICES` (the rtPS CBR rate, the frame overhead, the
grant scheduling, the concealment); ``--sensitivity`` runs every finding under each
alternative.

Outputs (``docs/report-format.md``): ``report.json``, ``report.md``, one CSV per table
(``table3.csv`` … ``table6.csv``, ``fig2_startup.csv``, ``fig3_loss_by_type.csv``,
``tfrc_view.csv``), ``repetitions.csv`` (one row per run), ``sensitivity.csv`` (with
``--sensitivity``) and the figures ``fig2_gop_arrivals.png``, ``fig3_loss_by_type.png``,
``table5_psnr.png``.
"""

from __future__ import annotations

import argparse
import json
import math
import tomllib
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import (Choice, Estimate, Finding, Label, Part, above, below, mean_ci, summary_line,
                               within)
from qoelab.experiment import core, runner
from qoelab.experiment.choices import defaults
from qoelab.experiment.figures import bars, lines, pyplot
from qoelab.experiment.stats import sd
from qoelab.experiment.tables import (Column, Figure, PaperValues, Table, findings_md, publish, series_str,
                                      write_repetitions)

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
#: The rtPS CBR sources' payload rates (972-B payloads, 1000-B IP packets): ``paper`` 1.5 Mbit/s
#: (Sec. 3.2, twice), ``gap`` 972 B every 0.03 s (the paper's "inter-packet gap was 0.03 s").
CBR_RATES = {"paper": "1.5Mbps", "gap": "259.2kbps"}
#: The paper's display period of its clip: 1063 frames at 30 frame/s.
DISPLAY_S = 1063 / 30
#: The channel's stationary loss, (r·0.01 + p·0.05)/(p + r) with p = 0.05, r = 0.06 (Sec. 3.4), %.
CHANNEL_LOSS_PCT = 100 * (0.06 * 0.01 + 0.05 * 0.05) / (0.05 + 0.06)


@dataclass(frozen=True)
class Grid:
    """What one mode runs: the frames of Table 3 (link only) and of the end-to-end tables, the
    connections, the (frame, n) cells decoded for PSNR, repetitions and the run length (long
    enough for the slowest cell to send the whole video)."""

    link_frames: tuple[float, ...]
    e2e_frames: tuple[float, ...]
    n: tuple[int, ...]
    decode: tuple[tuple[float, int], ...]
    reps: int
    duration_s: float


FULL = Grid((5.0, 20.0), FRAMES_MS, CONNECTIONS, tuple((f, n) for f in FRAMES_MS for n in CONNECTIONS), 15, 240.0)
QUICK = Grid((5.0, 20.0), (5.0, 20.0), CONNECTIONS, ((5.0, 1), (5.0, 4), (20.0, 1), (20.0, 4)), 2, 240.0)

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


# --- what the paper leaves open or contradicts (scenarios/wimax/README.md, "Choices") -------------

CHOICES = (
    Choice("cbr", "paper", ("gap",),
           "the rtPS CBR sources at 1.5 Mbit/s, as Sec. 3.2 states twice (and Sec. 3.5 for A → B); its other "
           "statement, one 1000-B packet every 0.03 s, is 267 kbit/s"),
    Choice("overhead_symbols", 3, (2,),
           "symbols of each subframe taken by preamble, FCH and MAPs (DL) or ranging, CQICH and ACK regions (UL) in "
           "our frame layout (docs/models/wimax.md); the paper gives only the PHY rate"),
    Choice("grant_scheduling", "rtps_priority", (),
           "ours serves rtPS before nrtPS (IEEE 802.16 §6.3.5); the paper says its SS queues were served round robin "
           "(Sec. 3.1), which contradicts our default",
           {"round_robin": "round robin among the stations' service-class queues is not implemented yet (issue 38)"}),
    Choice("concealment", "ffmpeg", (),
           "FFmpeg's error concealment (guess_mvs+deblock) in our decoder; the paper used EvalVid",
           {"evalvid_pfr": "EvalVid's previous-frame replacement is not implemented yet (issue 38)"}),
)

# --- the scenario ------------------------------------------------------------------------------


def base_dict() -> dict[str, Any]:
    """The base scenario as plain data."""
    return tomllib.loads((paths.root() / BASE).read_text())


def _fmt_ms(frame_ms: float) -> str:
    return f"{frame_ms:g}ms"


def build_scenario(path: str, frame_ms: float, n: int, cbr: str = "paper", *, duration_s: float = FULL.duration_s,
                   seed: int = 1, trace: str | None = None, overhead_symbols: int | None = None) -> dict[str, Any]:
    """One cell as plain scenario data: the base scenario with every WiMAX connection at
    ``frame_ms`` (and ``overhead_symbols`` per subframe, if given: the base's otherwise), the
    rtPS CBR sources at ``CBR_RATES[cbr]`` and N video connections
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
            if overhead_symbols is not None:
                link["channel"]["dl_overhead_symbols"] = link["channel"]["ul_overhead_symbols"] = overhead_symbols
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
    """The experiment's cells: Table 3's link-only cells and the end-to-end cells of Tables 4–6."""
    out = [{"path": "link", "frame": f, "n": n} for f in grid.link_frames for n in grid.n]
    return out + [{"path": "e2e", "frame": f, "n": n} for f in grid.e2e_frames for n in grid.n]


def _cell_id(p: dict[str, Any]) -> str:
    return f"{p['path']}-f{p['frame']:g}-n{p['n']}"


def _build(p: dict[str, Any], grid: Grid, setting: dict[str, Any]):
    from qoelab.scenario import Scenario

    d = build_scenario(p["path"], p["frame"], p["n"], setting["cbr"], duration_s=grid.duration_s,
                       overhead_symbols=setting["overhead_symbols"])
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
    from qoelab.video.trace import TYPE_NAMES, read_trace

    tr = read_trace(paths.root() / TRACE)
    types = [str(x) for x in TYPE_NAMES[tr.type_code]]
    frames = [int(x) for x in tr.frame]
    ts = [float(x) for x in tr.ts_ms]
    if folder is None:
        return Video(types, frames, ts, None, None)
    vdir = folder / "video"
    bit, recipe = vdir / f"{TRACE_NAME}.h264", vdir / f"{TRACE_NAME}.recipe.toml"
    if not (bit.is_file() and recipe.is_file()):
        from qoelab.video.bundle import build_cif

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
    from qoelab.video.evaluate import evaluate

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
TREATMENTS = ("path", "frame", "n")


def experiment(grid: Grid, video: Video, setting: dict[str, Any] | None = None) -> core.Experiment:
    return core.Experiment("wimax", cells(grid), partial(_build, grid=grid, setting=setting or defaults(CHOICES)),
                           partial(run_metrics, video=video, decode=set(grid.decode)),
                           paired=TREATMENTS, reps=grid.reps, cell_id=_cell_id)


def effective(grid: Grid) -> Grid:
    """``grid`` as this build can run it: N = 1 only when the multi-connection keys are missing
    (:func:`split_available`)."""
    if split_available():
        return grid
    return Grid(grid.link_frames, grid.e2e_frames, (1,), tuple(c for c in grid.decode if c[1] == 1), grid.reps,
                grid.duration_s)



# --- tables ------------------------------------------------------------------------------------


def _est(agg: dict[tuple, dict[str, Any]], key: tuple, m: str) -> Estimate | None:
    row = agg.get(key)
    return None if row is None else row.get(m)


def _conn(n: int) -> str:
    return f"{n}-conn"


def tables(grid: Grid, rep_rows: list[dict[str, Any]]) -> dict[str, Table]:
    """Tables 3–6, Fig. 2's start-up delay, the loss by frame type (Fig. 3's numbers) and what the
    TFRC connections measured, ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}
    out: dict[str, Table] = {}

    # Table 3: WiMAX link only, 5 and 20 ms.
    p_per = PaperValues("Table 3", ("frame", "n"), {k: v[0] for k, v in PAPER_T3.items()})
    p_thr = PaperValues("Table 3", ("frame", "n"), {k: float(v[1]) for k, v in PAPER_T3.items()})
    rows = [{"frame": f, "n": n, "conn": _conn(n), "period": _est(agg, ("link", f, n), "period_s"),
             "thr": _est(agg, ("link", f, n), "throughput_kbps")} for f in grid.link_frames for n in grid.n]
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
            k = ("e2e", 20.0, n)
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
            k = ("e2e", f, n)
            pm, ps = PAPER_T5[(f, n)]
            rows.append({"frame": f, "conn": _conn(n), "psnr": _est(agg, k, "psnr_db"),
                         "sd": sd([r["psnr_db"] for r in core.select(rep_rows, **dict(zip(TREATMENTS, k))) if r["psnr_db"] == r["psnr_db"]]), "paper_psnr": pm, "paper_sd": ps})
    out["table5"] = Table("table5", "Table 5: mean PSNR-Y (dB) against the source, SS1 to node C, real decoding with concealment",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("psnr", "mean PSNR", "dB", "ours", digits=4), Column("sd", "stdv over runs", "dB", "ours"),
                           Column("paper_psnr", "paper: mean PSNR", "dB", "paper", digits=4), Column("paper_sd", "paper: stdv", "dB", "paper")],
                          rows, source="paper Table 5")

    # Table 6: mean delay by frame length and connections.
    rows = [{"frame": f, "conn": _conn(n), "delay": _est(agg, ("e2e", f, n), "delay_ms"),
             "paper_delay": PAPER_T6[(f, n)]} for f in grid.e2e_frames for n in grid.n]
    out["table6"] = Table("table6", "Table 6: mean packet end-to-end delay, SS1 to node C",
                          [Column("frame", "frame", "ms"), Column("conn", "connections"),
                           Column("delay", "mean delay", "s", "ours", scale=1e-3), Column("paper_delay", "paper: mean delay", "s", "paper")],
                          rows, source="paper Table 6")

    # Fig. 2's number: the start-up delay the reorder buffer needs.
    rows = [{"frame": f, "conn": _conn(n), "startup": _est(agg, ("e2e", f, n), "startup_s"),
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
    rows = [{"frame": f, "conn": _conn(n), **{t: _est(agg, ("e2e", f, n), f"loss_{t}_pct") for t in ("I", "P", "B")},
             "all": _est(agg, ("e2e", f, n), "loss_pct"), "unsent": _est(agg, ("e2e", f, n), "unsent_pct")}
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
             "p": _est(agg, (pth, f, n), "tfrc_p_pct"), "rtt": _est(agg, (pth, f, n), "tfrc_rtt_ms"),
             "thr": _est(agg, (pth, f, n), "throughput_kbps")}
            for pth, frames in (("link", grid.link_frames), ("e2e", grid.e2e_frames)) for f in frames for n in grid.n]
    out["tfrc"] = Table("tfrc-view", "What the TFRC connections measured (mean over the connections of a run)",
                        [Column("path", "path"), Column("frame", "frame", "ms"), Column("conn", "connections"),
                         Column("p", "loss-event rate p", "%", "ours"), Column("rtt", "RTT estimate R", "ms", "ours"),
                         Column("thr", "video throughput", "kbit/s", "ours")],
                        rows, source="ours (the paper gives no such table)",
                        note="p and R are each connection's last values; the equation gives a rate "
                             "falling with R and with the square root of p (RFC 5348 §3.1).")

    return out


# --- findings ----------------------------------------------------------------------------------


def findings(grid: Grid, rep_rows: list[dict[str, Any]]) -> list[Finding]:
    """The paper's claims as findings, each with its statistic over paired repetitions and, where
    the paper gives one, its size (from its Tables 3–6)."""
    out: list[Finding] = []
    nmax, nmin = max(grid.n), min(grid.n)
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}

    def pd(sel: dict[str, Any], treatment: str, a: Any, b: Any, m: str) -> Estimate | None:
        return core.paired_where(rep_rows, sel, treatment, a, b, m)

    def weakest(parts: list[Part]) -> Estimate | None:
        return min((p.estimate for p in parts if p.estimate is not None), key=lambda e: e.mean, default=None)

    if nmax > nmin:
        parts = [Part(f"{f:g} ms", pd({"path": "link", "frame": f}, "n", nmax, nmin, "throughput_kbps"),
                      above(size=PAPER_T3[(f, nmax)][1] - PAPER_T3[(f, nmin)][1]))
                 for f in grid.link_frames if (f, nmax) in PAPER_T3]
        out.append(Finding("throughput-grows-with-connections",
                           f"throughput over the WiMAX link grows from {nmin} to {nmax} connections (Table 3, both frames)",
                           Label.SUBSTANTIVE, above(), f"paired throughput N={nmax} − N={nmin}, kbit/s, weakest frame length",
                           weakest(parts), parts=tuple(parts)))
        size = 1e3 * (PAPER_T4[nmax][2] - PAPER_T4[nmin][2])
        out.append(Finding("delay-grows-with-connections",
                           f"mean end-to-end delay grows from {nmin} to {nmax} connections (Table 4, 20 ms)",
                           Label.SUBSTANTIVE, above(size=size), f"paired delay N={nmax} − N={nmin}, ms",
                           pd({"path": "e2e", "frame": 20.0}, "n", nmax, nmin, "delay_ms")))
        if (20.0, nmax) in grid.decode and (20.0, nmin) in grid.decode:
            out.append(Finding("psnr-equivalent-across-connections",
                               f"with 20 ms frames, {nmax} connections give video quality equivalent to {nmin} "
                               "(Sec. 4: within 1 dB)", Label.SUBSTANTIVE, within(1.0),
                               f"paired PSNR N={nmax} − N={nmin}, dB", pd({"path": "e2e", "frame": 20.0}, "n", nmax, nmin,
                                                                          "psnr_db")))
    e = _est(agg, ("link", 5.0, nmin), "period_s")
    e_shift = None if e is None else Estimate(e.mean - DISPLAY_S, e.half_width, e.n, e.independent)
    out.append(Finding("one-connection-5ms-slower-than-display",
                       f"with one connection and 5 ms frames the sending period exceeds the display period "
                       f"({DISPLAY_S:.1f} s) (Table 3)", Label.SUBSTANTIVE,
                       above(size=PAPER_T3[(5.0, 1)][0] - DISPLAY_S), "sending period − display period, s", e_shift))
    if 5.0 in grid.link_frames and 20.0 in grid.link_frames:
        out.append(Finding("longer-frame-more-throughput",
                           f"with {nmin} connection(s) a 20 ms frame gives more throughput than a 5 ms frame (Table 3)",
                           Label.SUBSTANTIVE, above(size=PAPER_T3[(20.0, nmin)][1] - PAPER_T3[(5.0, nmin)][1]),
                           "paired throughput 20 ms − 5 ms, kbit/s",
                           pd({"path": "link", "n": nmin}, "frame", 20.0, 5.0, "throughput_kbps")))
    ns = [n for n in grid.n if (5.0, n) in grid.decode and (20.0, n) in grid.decode]
    if ns:
        parts = [Part(f"N = {n}", pd({"path": "e2e", "n": n}, "frame", 20.0, 5.0, "psnr_db"),
                      above(size=PAPER_T5[(20.0, n)][0] - PAPER_T5[(5.0, n)][0])) for n in ns]
        out.append(Finding("psnr-higher-with-20ms-frames",
                           f"PSNR is higher with 20 ms frames than with 5 ms frames (Table 5; N = {', '.join(map(str, ns))})",
                           Label.SUBSTANTIVE, above(), "paired PSNR 20 ms − 5 ms, dB, smallest over N", weakest(parts),
                           parts=tuple(parts)))
    if 20.0 in grid.e2e_frames and 20.0 in grid.link_frames:
        parts = [Part(f"N = {n}", pd({"frame": 20.0, "n": n}, "path", "link", "e2e", "throughput_kbps"),
                      above(size=PAPER_T3[(20.0, n)][1] - PAPER_T4[n][1])) for n in grid.n]
        out.append(Finding("core-lowers-throughput",
                           "adding the core network lowers the video's throughput at 20 ms (Table 4 below Table 3)",
                           Label.SUBSTANTIVE, above(), "paired throughput link only − end to end, kbit/s, smallest over N",
                           weakest(parts), parts=tuple(parts)))
    parts = [Part(f"{f:g} ms", _est(agg, ("e2e", f, nmax), "delay_ms"), below(100.0, size=1e3 * PAPER_T6[(f, nmax)]))
             for f in grid.e2e_frames]
    out.append(Finding("delay-below-100ms", f"the mean end-to-end delay with {nmax} connection(s) stays below 100 ms "
                       "at every frame length (Sec. 4, Table 6)", Label.SUBSTANTIVE, below(100.0),
                       "mean delay, ms, largest over frames",
                       max((p.estimate for p in parts if p.estimate is not None), key=lambda x: x.mean, default=None),
                       parts=tuple(parts)))
    # By construction: every uplink PDU is judged by the channel, so the link-only runs lose at
    # least its stationary loss.
    ch = [r for r in rep_rows if r["path"] == "link" and r["loss_pct"] == r["loss_pct"]]
    if ch:
        e = replace(mean_ci([r["loss_pct"] - CHANNEL_LOSS_PCT for r in ch],
                            independent=not any(core.identical(core.select(ch, **c)) for c in cells(grid)
                                                if c["path"] == "link")), reps=grid.reps)
        out.append(Finding("link-loss-at-least-channel", "link-only runs lose at least the Gilbert–Elliott channel's "
                           f"stationary {CHANNEL_LOSS_PCT:.2f} % of the video's packets, to within 0.5 pp (every uplink "
                           "PDU is judged by it)", Label.BY_CONSTRUCTION, above(-0.5),
                           "video packet loss − stationary channel loss, link only, all cells, pp", e))
    return out


# --- figures and the reading ---------------------------------------------------------------------


def fig2(run_dir: Path, video: Video, path: Path, title: str) -> dict[str, Any]:
    """Fig. 2: for one run, each GOP's first and last slice arrival at node C against the GOP's
    index, coloured by connection (top), and the receiver's reorder buffer over time (bottom:
    packets held until every earlier frame has been released, ``qoelab.video.reorder``, at the
    smallest playout delay D at which every complete frame is in time). A frame is released
    when its last packet arrives, or, when one of its packets was lost, at its playout time:
    greedy senders run far ahead of playout, so one lost slice holds everything behind it until
    then, which is most of what the curve shows. Returns the numbers it drew."""
    import numpy as np

    from qoelab.video.recvlog import receive_log_from_table
    from qoelab.video.reorder import reorder
    from qoelab.video.trace import read_trace

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


def figures(grid: Grid, tabs: dict[str, Table], runs: Path, video: Video) -> list[Figure]:
    n4 = max(grid.n)
    f2 = 20.0 if 20.0 in grid.e2e_frames else grid.e2e_frames[-1]
    figs = []
    run0 = runs / "runs" / f"cell={_cell_id({'path': 'e2e', 'frame': f2, 'n': n4})}__rep=0"
    if (run0 / "packets.parquet").is_file():
        title = f"Fig. 2 (ours): GOP arrivals at node C, {n4} connection(s), {f2:g} ms frames, repetition 0"
        figs.append(Figure("fig2", f"Fig. 2 (ours): GOP arrival sequence and reorder-buffer occupancy, {n4} connection(s)",
                           "fig2_gop_arrivals.png", lambda p: fig2(run0, video, p, title), "paper Fig. 2"))
    figs.append(Figure("fig3", "Fig. 3 (ours): packet loss by frame type", "fig3_loss_by_type.png",
                       bars(tabs["fig3"].rows, [(t, f"{t} frames") for t in ("I", "P", "B")], None, "packets lost (%)",
                            "Fig. 3 (ours): loss by frame type, SS1 to node C (95 % intervals)",
                            lambda r: f"{r['frame']:g} ms\n{r['conn']}", rotate=False), "paper Fig. 3"))
    t5 = tabs["table5"].rows
    if t5:
        groups = {c: [r for r in t5 if r["conn"] == c] for c in sorted({r["conn"] for r in t5})}
        figs.append(Figure("table5", "Table 5: PSNR against frame length, ours and the paper's", "table5_psnr.png",
                           lines(groups, "frame", "psnr", "TDD frame length (ms)", "mean PSNR-Y (dB)",
                                 "Table 5: mean PSNR, ours (solid) and the paper's (dashed)", paper="paper_psnr"),
                           "paper Table 5"))
    return figs


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding]) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), then the
    findings with their intervals."""
    conns = ", ".join(str(n) for n in grid.n)
    md = []
    sel = lambda t, **kw: [r for r in tabs[t].rows if all(r[k] == v for k, v in kw.items())]  # noqa: E731
    for f in grid.link_frames:
        rs = sel("table3", frame=f)
        md.append(f"- **Table 3, {f:g} ms frames** (WiMAX link only), N = {conns}: throughput {series_str(rs, 'thr')} "
                  f"kbit/s (paper {series_str(rs, 'paper_thr')}); sending period {series_str(rs, 'period')} s (paper "
                  f"{series_str(rs, 'paper_period')}).")
    t4 = tabs["table4"].rows
    if t4:
        md.append(f"- **Table 4** (SS1 to node C, 20 ms), N = {conns}: throughput {series_str(t4, 'thr')} kbit/s "
                  f"(paper {series_str(t4, 'paper_thr')}); mean delay {series_str(t4, 'delay', scale=1e-3)} s "
                  f"(paper {series_str(t4, 'paper_delay')}).")
    t5 = [r for r in tabs["table5"].rows if r["psnr"] is not None and not math.isnan(r["psnr"].mean)]
    if t5:
        diffs = [r["psnr"].mean - r["paper_psnr"] for r in t5]
        md.append("- **Table 5** (PSNR-Y, dB, decoded cells): " + "; ".join(
            f"{r['frame']:g} ms {r['conn']}: {r['psnr'].mean:.2f} (paper {r['paper_psnr']:.2f})" for r in t5)
                  + f". Ours minus the paper's, mean over these cells: {sum(diffs) / len(diffs):+.2f} dB.")
    for f in grid.e2e_frames:
        rs = sel("table6", frame=f)
        md.append(f"- **Table 6, {f:g} ms**, N = {conns}: mean delay {series_str(rs, 'delay', scale=1e-3)} s "
                  f"(paper {series_str(rs, 'paper_delay')}).")
    r24 = next(iter(sel("fig2", frame=20.0, conn=_conn(max(grid.n)))), None)
    if r24 is not None and r24["startup"] is not None:
        md.append(f"- **Fig. 2**: with {r24['conn']} at 20 ms every arriving slice is in time after a start-up delay of "
                  f"{r24['startup'].mean:.3g} s (paper: about {PAPER_FIG2_STARTUP_S:g} s).")
    for pth, frames in (("link only", grid.link_frames), ("end to end", grid.e2e_frames)):
        for f in frames:
            rs = sel("tfrc", path=pth, frame=f)
            if rs:
                md.append(f"- **TFRC's view**, {pth}, {f:g} ms, N = {conns}: loss-event rate {series_str(rs, 'p')} %, "
                          f"RTT {series_str(rs, 'rtt')} ms.")
    md += ["", "Which of the paper's trends hold (95 % intervals over paired repetitions):", "", findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


def _setup(grid: Grid, quick: bool, setting: dict[str, Any]) -> str:
    lines_ = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell, {grid.duration_s:g} s each; the same "
        "seed for repetition r of every cell (all cells differ only in treatments), so differences are paired.",
        f"Link-only frames {', '.join(f'{f:g}' for f in grid.link_frames)} ms; end-to-end frames "
        f"{', '.join(f'{f:g}' for f in grid.e2e_frames)} ms; N = {', '.join(map(str, grid.n))} TFRC connections. "
        f"PSNR decoded on {len(grid.decode)} (frame, N) cells: " + ", ".join(f"{f:g} ms/N={n}" for f, n in grid.decode) + ".",
        "Video: bundled `cif_bbb_qp26` (Big Buck Bunny, CIF, 30 fps, H.264 QP 26, GOP 15, 1063 frames, 900-B slices), "
        "about 595 kbit/s against the paper's 437 kbit/s 'Paris': a third more data to send, so our sending periods "
        "are longer and our throughputs are not expected to match the paper's where TFRC, not the source, limits them.",
        f"PSNR: mean PSNR-Y against the source, real decoding with {setting['concealment']} error concealment of lost "
        "slices and frames (not the paper's EvalVid); no playout deadline (every slice that arrives counts; Fig. 2 gives "
        "the start-up delay that makes it so).",
        f"Grants: {setting['grant_scheduling'].replace('_', ' ')} (rtPS before nrtPS), where the paper says round robin. "
        f"rtPS CBR at {CBR_RATES[setting['cbr']]} of payload; {setting['overhead_symbols']} overhead symbols per subframe. "
        "Other choices where the paper contradicts itself (scenarios/wimax/README.md): CBR packets of 1000 B at IP level "
        "(972-B payload) so that they fit the 1024-B maximum; the uplink PHY rate the paper's 10.67 Mbit/s with our "
        "frame layout, which makes the downlink 1.7–2.5 Mbit/s, not the paper's 2.69 Mbit/s; the downlink FTP and CBR "
        "go from node B to SS3.",
    ]
    if not split_available():
        lines_.append("**This build lacks the multi-connection keys (`split`, `pacing = \"greedy\"`): only N = 1 ran, "
                      "paced by the trace's timestamps (datagrams the TFRC send buffer cannot hold are dropped at the "
                      "sender and count as never sent).**")
    else:
        lines_.append("Each connection i sends GOPs g with g mod N = i, greedily (its TFRC send buffer kept full), "
                      f"starting {START_S:g} + {OFFSET_S:g}·i s into the run.")
    return "\n\n".join(lines_)


# --- the reproduction --------------------------------------------------------------------------


def plan(quick: bool, reps: int | None = None) -> Grid:
    grid = effective(QUICK if quick else FULL)
    if reps is not None:
        if reps < 1:
            raise QoelabError(f"--reps {reps}: must be at least 1")
        grid = replace(grid, reps=reps)
    return grid


def _decoded(grid: Grid, rs: runner.RunSet) -> list[Path]:
    """The run folders of ``rs`` whose PSNR is measured (the decoded cells, end to end)."""
    exp = rs.experiments["wimax"]
    return [core.run_dir(exp, rs.folders["wimax"], _cell_id(p), r) for p in exp.cells
            if p["path"] == "e2e" and (p["frame"], p["n"]) in grid.decode for r in range(exp.reps)]


def _sets_kw(grid: Grid, video: Video) -> dict[str, Any]:
    return {"post_units": lambda rs: len(_decoded(grid, rs))}


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[[int, int], None] | None = None,
        executor: Any = None, reps: int | None = None, sensitivity: bool = False,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) the experiment into ``out`` (and, with ``sensitivity``, each declared
    alternative into ``out/sensitivity/``), decodes the PSNR cells, and writes the report there.
    Returns a summary (``{"shard": ...}`` for one task of a job array)."""
    grid = plan(quick, reps)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log(f"qoelab reproduce wimax{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing {out} "
        f"({grid.reps} repetitions, {len(cells(grid))} cells)")
    with runner.stage(out, "video encode"):
        video = load_video(out)

    def decode(rs: runner.RunSet, step: Callable[[int], None]) -> None:
        from qoelab.sweep import is_done

        todo = [d for d in _decoded(grid, rs) if is_done(d) and not (d / "psnr.json").is_file()]
        with runner.stage(out, "decode"):
            runner.parallel(partial(_psnr, video=video), todo, jobs, step)

    res = runner.reproduce(out, CHOICES, lambda s: {"wimax": experiment(grid, video, s)},
                           lambda rs: findings(grid, rs.rows_of()), sensitivity=sensitivity, jobs=jobs, progress=progress,
                           executor=executor, log=log, post=decode, **_sets_kw(grid, video))
    if res is None:
        return {"shard": executor.shard}
    rep_rows, found, setting = res.main.rows_of(), res.findings, res.main.setting
    with runner.stage(out, "report"):
        tabs = tables(grid, rep_rows)
        names = {"table3": "table3.csv", "table4": "table4.csv", "table5": "table5.csv", "table6": "table6.csv",
                 "fig2": "fig2_startup.csv", "fig3": "fig3_loss_by_type.csv", "tfrc": "tfrc_view.csv"}
        for k, t in tabs.items():
            t.write_csv(out, names[k])
        write_repetitions(out, rep_rows, TREATMENTS)
        figs = [f.write(out) for f in figures(grid, tabs, res.main.folders["wimax"], video)]
    summary = (f"One CIF video over N = {', '.join(map(str, grid.n))} TFRC connections across a WiMAX TDD uplink "
               f"(Gilbert–Elliott channel) and a wired core: {summary_line(found)}.")
    publish(out, paper="wimax", quick=quick, title="Multi-connection TFRC over WiMAX (Al-Majeed & Fleury)",
            tables=list(tabs.values()), findings=found, source="paper Sec. 4", figures=figs,
            reading=reading(grid, tabs, found), summary=summary, setup=_setup(grid, quick, setting),
            cost=runner.cost(out, res.sets), seeds=sorted({r["seed"] for r in rep_rows}), choices=CHOICES,
            versions=runner.versions(res.sets),
            command=f"qoelab reproduce wimax{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}")
    log(f"wimax: {summary_line(found)}; wrote {out}/report.md")
    return {"findings": found, "runs": len(rep_rows)}


def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (runs and decodes, for ``reproduce all``'s total)."""
    grid, video = plan(quick), load_video(None)
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: {"wimax": experiment(grid, video, s)},
                                   sensitivity=sensitivity), _sets_kw(grid, video)["post_units"])


# --- CLI ---------------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce wimax`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "wimax", "Al-Majeed & Fleury: multi-connection TFRC video over a WiMAX uplink (Tables 3-6, Figs. 2-3)",
        run, quick_help="few repetitions, PSNR on 4 cells (CI, about 2 minutes)",
        reps_help="repetitions per cell (default 2 with --quick, else 15 as in the paper)",
        jobs_help="parallel runs and decodes (default 1; 0 = one per CPU)", unit="runs and decodes")
