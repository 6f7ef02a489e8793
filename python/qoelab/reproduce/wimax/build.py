"""The WiMAX reproduction's testbed and measurements: the grids of each mode, one cell as a
scenario on ``scenarios/wimax/base.toml``, the experiment under a setting of the choices, the
encode the runs stream (rebuilt for decoding) and a finished run's numbers: sending period,
throughput, delay, loss by frame type, start-up delay, TFRC's view and the decoded PSNR."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import core
from qoelab.experiment.choices import defaults
from qoelab.reproduce.wimax.paper import (BASE, CBR_RATES, CHOICES, CONNECTIONS, FRAMES_MS, GOP, OFFSET_S, START_S, TRACE,
                                          TRACE_NAME)



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


def base_dict() -> dict[str, Any]:
    """The base scenario as plain data."""
    return tomllib.loads((paths.root() / BASE).read_text())


def _fmt_ms(frame_ms: float) -> str:
    return f"{frame_ms:g}ms"


def build_scenario(path: str, frame_ms: float, n: int, cbr: str = "paper", *, duration_s: float = FULL.duration_s,
                   seed: int = 1, trace: str | None = None, overhead_symbols: int | None = None,
                   grants: str | None = None, segment_size: str = "mss") -> dict[str, Any]:
    """One cell as plain scenario data: the base scenario with every WiMAX connection at
    ``frame_ms`` (and ``overhead_symbols`` per subframe and the grant policy ``grants``, if
    given: the base's otherwise), the video's TFRC with ``segment_size`` (RFC 5348 §4.1), the
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
            if grants is not None:
                link["channel"]["grants"] = grants
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
            "transport": {"kind": "tfrc", "segment_size": segment_size},
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
                       overhead_symbols=setting["overhead_symbols"], grants=setting["grant_scheduling"],
                       segment_size=setting["tfrc_s"])
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / "scenarios" / "wimax")


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
    from qoelab.video.sources.bundle import cif_bitstream

    bit, recipe = cif_bitstream(folder / "video", TRACE_NAME)
    return Video(types, frames, ts, bit, recipe)


def _packets(run_dir: Path):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(run_dir / "packets.parquet")
    return t.filter(pc.starts_with(t.column("flow"), "video"))


def run_metrics(run_dir: Path, p: dict[str, Any], *, video: Video, decode: set[tuple[float, int]],
                concealments: tuple[str, ...] | None = None) -> dict[str, float]:
    """One run's numbers: the video's sending period (first packet sent to last received, s),
    throughput over it (received slice bytes, kbit/s), mean one-way packet delay (ms), packet
    loss in the network (%, of sent packets) overall, the start-up delay a reorder buffer needs
    (s, see below) and by I/P/B frame type, the share of the
    trace's slices never sent within the run (%), the loss-event rate (%) and RTT (ms) the TFRC
    connections measured (from ``flows.parquet``), and (for the decoded cells) the mean PSNR-Y
    against the source under each concealment (``psnr_<concealment>_db``, cached in the run folder
    as ``psnr_<concealment>.json``); :func:`with_concealment` picks one as ``psnr_db``."""
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
    for c in CONCEALMENTS:
        out[f"psnr_{c}_db"] = nan
        if p["path"] == "e2e" and (p["frame"], p["n"]) in decode and video.bitstream is not None:
            if concealments is None or c in concealments:
                out[f"psnr_{c}_db"] = _psnr(run_dir, video, c)
    out["psnr_db"] = out[f"psnr_{defaults(CHOICES)['concealment']}_db"]
    return out


#: The concealments every decoded cell is measured under (the choice ``concealment``).
CONCEALMENTS = ("evalvid_pfr", "ffmpeg")


def concealments_of(setting: dict[str, Any]) -> tuple[str, ...]:
    """The concealments a setting's runs are decoded under: every one for the default setting
    (whose runs the ``concealment`` alternative shares: it reruns nothing), only the setting's
    own for every other alternative, whose findings read no other (a sensitivity run of the full
    grid decodes 300 pictures sequences fewer per alternative)."""
    return CONCEALMENTS if setting == defaults(CHOICES) else (setting["concealment"],)


def with_concealment(rows: list[dict[str, Any]], concealment: str) -> list[dict[str, Any]]:
    """``rows`` with ``psnr_db`` set to the PSNR under ``concealment`` (a copy of each row)."""
    return [r | {"psnr_db": r.get(f"psnr_{concealment}_db", float("nan"))} for r in rows]


def _psnr(run_dir: Path, video: Video, concealment: str = "evalvid_pfr") -> float:
    """Mean PSNR-Y against the source of the run's delivery under ``concealment`` (cached as
    ``psnr_<concealment>.json``). No playout deadline: a slice counts if it arrived at all, as
    the paper's EvalVid evaluation of ns-2's loss output counts it; the start-up delay that makes
    this so is Fig. 2's."""
    cache = run_dir / f"psnr_{concealment}.json"
    if cache.is_file() and not cache.is_symlink():  # a planted link is never read
        return float(json.loads(cache.read_text())["mean_psnr_y_vs_source_db"])
    from qoelab.video.quality.evaluate import evaluate

    r = evaluate(paths.root() / TRACE, video.bitstream, run_dir / "packets.parquet", playout_delay_s=1e6,
                 recipe_path=video.recipe, stream_start_ns=0, concealment=concealment)
    keep = {k: r.summary[k] for k in ("mean_psnr_y_vs_source_db", "ref_mean_psnr_y_vs_source_db",
                                      "mean_psnr_y_vs_decode_db", "nal_lost", "nal_unsent", "decodable_frame_rate",
                                      "frame_loss_by_type")}
    keep["concealment"] = concealment
    from qoelab.outdir import write_atomic

    write_atomic(cache, json.dumps(keep, indent=1, sort_keys=True) + "\n")  # a random O_EXCL temporary name
    return float(keep["mean_psnr_y_vs_source_db"])


METRICS = ("period_s", "throughput_kbps", "delay_ms", "startup_s", "loss_pct", "loss_I_pct", "loss_P_pct", "loss_B_pct",
           "unsent_pct", "tfrc_p_pct", "tfrc_rtt_ms", "psnr_db") + tuple(f"psnr_{c}_db" for c in CONCEALMENTS)
TREATMENTS = ("path", "frame", "n")


def experiment(grid: Grid, video: Video, setting: dict[str, Any] | None = None) -> core.Experiment:
    return core.Experiment("wimax", cells(grid), partial(_build, grid=grid, setting=setting or defaults(CHOICES)),
                           partial(run_metrics, video=video, decode=set(grid.decode),
                                   concealments=concealments_of(setting or defaults(CHOICES))),
                           paired=TREATMENTS, reps=grid.reps, cell_id=_cell_id)


def effective(grid: Grid) -> Grid:
    """``grid`` as this build can run it: N = 1 only when the multi-connection keys are missing
    (:func:`split_available`)."""
    if split_available():
        return grid
    return Grid(grid.link_frames, grid.e2e_frames, (1,), tuple(c for c in grid.decode if c[1] == 1), grid.reps,
                grid.duration_s)
