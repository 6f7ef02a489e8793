"""``qoelab reproduce mptcp``: Wejin & Amca, *Experimental performance analysis of multipath TCP
path characteristics in streaming UHD HEVC-DASH over wireless networks*
(shared/papers/mptcp-uhd-hevc-dash.txt).

A DASH player on a client with two interfaces fetches the bundled HEVC ladder (720p / 1080p /
2160p, 6-s segments) from an HTTP server over two disjoint paths, each shaped on its access
link as the paper's Table 1 says, either over one MPTCP connection with a subflow per path or
over single-path TCP (SPTCP) on path 1. The testbed and every choice the paper leaves open are
``scenarios/mptcp/base.toml`` and ``scenarios/mptcp/README.md``; :func:`build_scenario` sets
one cell on it.

Cells (:func:`cells`): a loss ``reading`` of Table 1 (``literal``; ``div10`` and ``div100``,
every loss rate divided by 10 or 100, because the literal rates contradict the paper's own
Fig. 5; ``control``, no loss), a ``config`` (``balanced``, ``unbalanced``), a ``transport``
(``mptcp`` over both paths; ``sptcp``, single-path TCP over path 1 set to Table 1's SPTCP row;
in the control reading also ``sptcp_best``, single-path TCP over MPTCP's path 1, the better of
its two paths, for RFC 6356's goal "at least the better path's single TCP") and the MPTCP
``coupled`` congestion control (``lia``, Linux's default, in every MPTCP cell; ``olia`` and
``uncoupled`` only in the sensitivity cells of the full run) and the player's ``abr`` policy
(``throughput``, the paper's VLC's rate-based logic, everywhere; ``bba`` and ``bola`` beside it
in the ÷ 100 reading, for the QoE table per ABR policy). Every parameter is a *treatment*
of the experiment layer (:mod:`qoelab.experiment.core`): repetition ``r`` of every cell runs
with the same seed, so every difference is paired.

Metrics per run (:func:`run_metrics`), from the flows table's ``dash_*`` and ``rev_*`` columns
(the video is the reverse direction of the player's connection: the server's responses) and
the ``subflows`` table: start-up delay by both definitions, stalls, mean bitrate, switches, mean
per-segment download rate, retransmitted segments per second of run (Fig. 5) and, for MPTCP,
each path's share of the bytes received.

Should the simulator refuse a DASH flow over MPTCP (it did while its MPTCP carried data in one
direction only; :func:`mptcp_dash_refusal` gives the refusal), the MPTCP cells are left out, the report says so in its summary and setup, their table rows read "not run" and every
finding that needs them is *undecided*.

Outputs (``docs/report-format.md``): ``report.json``, ``report.md``, a CSV per table
(``table1.csv``, ``fig4_startup.csv``, ``fig5_retransmissions.csv``, ``fig6_download.csv``,
``qoe.csv``, ``qoe_abr.csv``, ``subflows.csv``, ``sensitivity_coupled.csv``),
``repetitions.csv`` (one row per run) and the figures ``fig4_startup.png``, ``fig5_retransmissions.png``,
``fig6_segment_rates.png``.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
import tomllib
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Estimate, Finding, Label, Verdict, judge_positive, judge_within, mean_ci, summary_count
from qoelab.experiment import core
from qoelab.experiment.tables import (Column, Figure, PaperValues, Table, findings_md, interval_str, publish,
                                      pyplot)
from qoelab.experiment.tables import mean_str as _m

#: The testbed, relative to the repository.
BASE = "scenarios/mptcp/base.toml"
FOLDER = "scenarios/mptcp"

# --- the paper's values, transcribed from its text ----------------------------------------------

#: Table 1: configuration → path ("path1", "path2" of MPTCP; "sptcp") → (packet loss %,
#: latency ms, bandwidth Mbit/s).
TABLE1: dict[str, dict[str, tuple[float, float, float]]] = {
    "balanced": {"path1": (10.0, 10.0, 15.0), "path2": (10.0, 10.0, 15.0), "sptcp": (20.0, 10.0, 30.0)},
    "unbalanced": {"path1": (15.0, 15.0, 25.0), "path2": (5.0, 5.0, 5.0), "sptcp": (10.0, 10.0, 30.0)},
}
#: Fig. 4's caption: mean "buffering delay" (start-up), ms. The caption gives one SPTCP value,
#: not one per configuration.
PAPER_FIG4_MS = {("mptcp", "balanced"): 6.5, ("mptcp", "unbalanced"): 27.0, ("sptcp", "balanced"): 3.0,
                 ("sptcp", "unbalanced"): 3.0}
#: Sec. 5.2 (Fig. 5): mean retransmitted packets per 1-s tick. SPTCP's one value is not given
#: per configuration.
PAPER_FIG5 = {("mptcp", "balanced"): 14.0, ("mptcp", "unbalanced"): 9.0, ("sptcp", "balanced"): 1.0,
              ("sptcp", "unbalanced"): 1.0}
#: Figs. 6/7 (per-segment download rate) are graphs; the text gives no number, only the
#: ordering (Sec. 5.3): MPTCP above SPTCP in both configurations, balanced above unbalanced.
PAPER_FIG6_SOURCE = "paper Figs. 6/7 and Sec. 5.3 (ordering only: the text gives no value; not read from the figure)"
#: Repetitions per setting (Sec. 5.3).
PAPER_REPS = 5

READINGS = ("literal", "div10", "div100", "control")
#: Loss multiplier of each reading.
FACTOR = {"literal": 1.0, "div10": 0.1, "div100": 0.01, "control": 0.0}
READING_LABEL = {"literal": "literal", "div10": "loss ÷ 10", "div100": "loss ÷ 100", "control": "no loss (control)"}
CONFIGS = ("balanced", "unbalanced")
TRANSPORT_LABEL = {"mptcp": "MPTCP", "sptcp": "SPTCP", "sptcp_best": "SPTCP on MPTCP's path 1"}
COUPLED = ("lia", "olia", "uncoupled")
#: ABR policies (``docs/models/dash.md``): ``throughput`` (rate-based, the paper's VLC) in every
#: cell; BBA-0 and BOLA-BASIC in the ABR cells.
ABRS = ("throughput", "bba", "bola")
#: The MPTCP connection's settings (README: the out-of-tree kernel's defaults).
MPTCP = {"kind": "mptcp", "scheduler": "min_rtt", "reinject": True, "penalise": True, "tcp": {"profile": "linux"}}
#: The client's and server's interface addresses of the two paths (base.toml).
PATHS = (("10.1.0.1", "10.2.0.1"), ("10.1.1.1", "10.2.1.1"))


@dataclass(frozen=True)
class Grid:
    """What one mode runs: the loss readings, repetitions, plays of the bundled clip
    (:func:`clip_s`), the run length (long enough for a session with stalls to finish), the
    cells of the coupled sensitivity (``(reading, config)``; empty: none) and the readings
    whose cells also run the BBA and BOLA policies (the QoE table per ABR policy)."""

    readings: tuple[str, ...]
    reps: int
    loops: int
    duration_s: float
    sensitivity: tuple[tuple[str, str], ...]
    abr_readings: tuple[str, ...]


# One play of the 180-s ladder (30 segments of 6 s) in runs of 240 s: the 60 s beyond the media
# leave room for start-up and stalls. The quick mode plays the same sessions (a shorter run would
# cut every session, a partial play of the ladder is not possible), fewer readings and repetitions.
FULL = Grid(READINGS, PAPER_REPS, 1, 240.0, (("div100", "balanced"),), ("div100",))
QUICK = Grid(("literal", "div100", "control"), 2, 1, 240.0, (), ("div100",))


# --- the scenario ----------------------------------------------------------------------------------


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


def _shape(link: dict[str, Any], row: tuple[float, float, float], factor: float) -> None:
    """Sets an access link to a Table 1 row: rate; latency read as the RTT the path adds, half in
    each direction; loss (× ``factor``) on the server → client direction (README, "Setup")."""
    loss_pct, lat_ms, rate_mbps = row
    link["rate"] = f"{rate_mbps:g}Mbps"
    link["delay"] = f"{lat_ms / 2:g}ms"
    p = loss_pct / 100 * factor
    if p > 0:
        link["loss_ba"] = {"kind": "bernoulli", "p": p}
    else:
        link.pop("loss_ba", None)


def build_scenario(reading: str, config: str, transport: str, coupled: str = "lia", abr: str = "throughput", *,
                   loops: int = FULL.loops, duration_s: float = FULL.duration_s) -> dict[str, Any]:
    """One cell as plain scenario data: ``base.toml`` with path 1 and path 2 set to ``config``'s
    Table 1 rows under ``reading``, and the DASH flow over ``transport``: ``mptcp`` (a subflow per
    path, ``coupled`` congestion control), ``sptcp`` (path 1 set to the SPTCP row) or
    ``sptcp_best`` (single-path TCP over MPTCP's path 1 as it is), the player with the ``abr``
    policy (its defaults). The app probe is on (the per-segment download rates of the
    figures)."""
    if reading not in FACTOR:
        raise ValueError(f"reading {reading!r}: expected one of {', '.join(READINGS)}")
    if config not in TABLE1:
        raise ValueError(f"config {config!r}: expected one of {', '.join(CONFIGS)}")
    if transport not in TRANSPORT_LABEL:
        raise ValueError(f"transport {transport!r}: expected one of {', '.join(TRANSPORT_LABEL)}")
    if coupled not in COUPLED:
        raise ValueError(f"coupled {coupled!r}: expected one of {', '.join(COUPLED)}")
    if abr not in ABRS:
        raise ValueError(f"abr {abr!r}: expected one of {', '.join(ABRS)}")
    d = base_dict()
    d["name"] = f"mptcp-{reading}-{config}-{transport}" + (f"-{coupled}" if transport == "mptcp" else "") + f"-{abr}"
    d["description"] = (f"Wejin & Amca, Table 1 {config}, loss {READING_LABEL[reading]}, "
                        f"{TRANSPORT_LABEL[transport]}" + (f" ({coupled})" if transport == "mptcp" else "")
                        + f", {abr} ABR")
    d["sim"] = {"duration": f"{duration_s:g}s", "seed": 1}
    d.setdefault("output", {})["probes"] = ["app"]
    access = [l for l in d["links"] if l["a"] == "C"]
    if [l["a_addr"] for l in access] != [a for a, _ in PATHS]:
        raise QoelabError(f"{BASE}: expected the access links of 10.1.0.1 and 10.1.1.1 (README, Setup)")
    rows = TABLE1[config]
    _shape(access[0], rows["sptcp" if transport == "sptcp" else "path1"], FACTOR[reading])
    _shape(access[1], rows["path2"], FACTOR[reading])
    (f,) = d["flows"]
    f["app"]["loops"] = loops
    f["app"]["abr"] = {"kind": abr}
    if transport == "mptcp":
        f.pop("src_addr", None)
        f.pop("dst_addr", None)
        f["transport"] = {**MPTCP, "coupled": coupled}
        f["subflows"] = [{"src_addr": s, "dst_addr": t} for s, t in PATHS]
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


def cells(grid: Grid, *, mptcp: bool = True) -> list[dict[str, Any]]:
    """The experiment's cells (see the module doc); without ``mptcp``, the single-path ones only."""
    out = []
    for rd in grid.readings:
        for cf in CONFIGS:
            tps = ["mptcp", "sptcp"] + (["sptcp_best"] if rd == "control" else [])
            for tp in tps:
                if tp == "mptcp" and not mptcp:
                    continue
                out.append({"reading": rd, "config": cf, "transport": tp, "coupled": "lia" if tp == "mptcp" else "-",
                            "abr": "throughput"})
    out += [{"reading": rd, "config": cf, "transport": tp, "coupled": "lia" if tp == "mptcp" else "-", "abr": a}
            for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS[1:]
            if mptcp or tp != "mptcp"]
    if mptcp:
        out += [{"reading": rd, "config": cf, "transport": "mptcp", "coupled": c, "abr": "throughput"}
                for rd, cf in grid.sensitivity for c in COUPLED if c != "lia"]
    return out


def _cell_id(p: dict[str, Any]) -> str:
    tail = f"-{p['coupled']}" if p["transport"] == "mptcp" else ""
    abr = f"-{p['abr']}" if p["abr"] != "throughput" else ""
    return f"{p['reading']}-{p['config']}-{p['transport']}{tail}{abr}"


def _build(p: dict[str, Any], grid: Grid):
    from qoelab.scenario import Scenario

    d = build_scenario(p["reading"], p["config"], p["transport"], p["coupled"] if p["transport"] == "mptcp" else "lia",
                       p["abr"], loops=grid.loops, duration_s=grid.duration_s)
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / FOLDER)


# --- metrics of one run ----------------------------------------------------------------------------

METRICS = ("startup_first_byte_ms", "startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches",
           "rate_mbps", "retx_per_s", "path1_share_pct", "reinjected_kb")
TREATMENTS = ("reading", "config", "transport", "coupled", "abr")


def run_metrics(run_dir: Path, p: dict[str, Any], *, duration_s: float) -> dict[str, float]:
    """One run's numbers from its flows table (the ``dash`` flow) and, for MPTCP, its
    ``subflows`` table: start-up delay to the first byte and to playback (ms), stalls and their
    time (s), media played (s), mean bitrate and mean per-segment download rate (Mbit/s),
    switches, retransmitted segments of the video's direction per second of run, and for MPTCP
    path 1's share of the video bytes received (%) and the bytes the server reinjected (kB; NaN
    where the flows table has no ``rev_reinjected_bytes``)."""
    import pyarrow.parquet as pq

    (row,) = [r for r in pq.read_table(run_dir / "flows.parquet").to_pylist() if r["flow"] == "dash"]
    nan = float("nan")
    out = {"startup_first_byte_ms": 1e3 * row["dash_startup_first_byte_s"], "startup_ms": 1e3 * row["dash_startup_s"],
           "stalls": float(row["dash_stalls"]), "stall_s": float(row["dash_stall_s"]),
           "played_s": float(row["dash_played_s"]), "bitrate_mbps": row["dash_mean_bitrate_bps"] / 1e6,
           "switches": float(row["dash_switches"]), "rate_mbps": row["dash_mean_rate_bps"] / 1e6,
           "retx_per_s": float(row["rev_retransmitted_segments"]) / duration_s,
           "path1_share_pct": nan, "reinjected_kb": nan}
    sub = run_dir / "subflows.parquet"
    if p["transport"] == "mptcp" and sub.is_file():
        rs = sorted((r for r in pq.read_table(sub).to_pylist() if r["flow"] == "dash"), key=lambda r: r["path"])
        total = sum(r["rev_recv_bytes"] for r in rs)
        if total > 0:
            out["path1_share_pct"] = 100.0 * rs[0]["rev_recv_bytes"] / total
        # The server sends the video: its reinjections are the reverse direction's.
        if row.get("rev_reinjected_bytes") is not None:
            out["reinjected_kb"] = float(row["rev_reinjected_bytes"]) / 1e3
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


def experiment(grid: Grid, mptcp: bool) -> core.Experiment:
    return core.Experiment("mptcp", cells(grid, mptcp=mptcp), partial(_build, grid=grid),
                           partial(run_metrics, duration_s=grid.duration_s), paired=TREATMENTS, reps=grid.reps,
                           cell_id=_cell_id)


# --- tables ------------------------------------------------------------------------------------------


def _key(rd: str, cf: str, tp: str, cp: str | None = None, abr: str = "throughput") -> tuple:
    return (rd, cf, tp, cp if cp is not None else ("lia" if tp == "mptcp" else "-"), abr)


def _main_rows(grid: Grid) -> list[dict[str, Any]]:
    """The (reading, config, transport) rows of the main tables, in display order."""
    return [{"reading": rd, "config": cf, "transport": tp}
            for rd in grid.readings for cf in CONFIGS
            for tp in (("mptcp", "sptcp", "sptcp_best") if rd == "control" else ("mptcp", "sptcp"))]


def tables(grid: Grid, rep_rows: list[dict[str, Any]], mptcp: bool) -> dict[str, Table]:
    """Table 1 as applied, Fig. 4 (start-up), Fig. 5 (retransmissions/s), Figs. 6/7 (download
    rate), the QoE table, the subflow shares and the coupled sensitivity; ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}
    not_run = "not run" if not mptcp else None

    def est(rd: str, cf: str, tp: str, m: str, cp: str | None = None, abr: str = "throughput") -> Estimate | str | None:
        row = agg.get(_key(rd, cf, tp, cp, abr))
        if row is None:
            return not_run if tp == "mptcp" else None
        return row[m]

    def label(r: dict[str, Any]) -> dict[str, Any]:
        return {"reading": READING_LABEL[r["reading"]], "config": r["config"], "transport": TRANSPORT_LABEL[r["transport"]]}

    base = _main_rows(grid)
    idx = [Column("reading", "loss reading"), Column("config", "configuration"), Column("transport", "transport")]
    out: dict[str, Table] = {}

    # Table 1 as the runs apply it: each reading's loss beside the paper's literal values.
    rows = []
    for cf in CONFIGS:
        for pth, name in (("path1", "MPTCP path 1"), ("path2", "MPTCP path 2"), ("sptcp", "SPTCP (path 1)")):
            loss, lat, rate = TABLE1[cf][pth]
            r: dict[str, Any] = {"config": cf, "path": name, "paper_loss": loss, "paper_latency": lat,
                                 "paper_rate": rate, "delay_each_way": lat / 2}
            for rd in grid.readings:
                r[f"loss_{rd}"] = loss * FACTOR[rd]
            rows.append(r)
    out["table1"] = Table("table1", "Table 1: path characteristics, the paper's and the loss applied in each reading",
                          [Column("config", "configuration"), Column("path", "path"),
                           Column("paper_loss", "paper: packet loss", "%", "paper"),
                           Column("paper_latency", "paper: latency", "ms", "paper"),
                           Column("paper_rate", "paper: bandwidth", "Mbit/s", "paper"),
                           Column("delay_each_way", "our delay each way", "ms")]
                          + [Column(f"loss_{rd}", f"loss applied, {READING_LABEL[rd]}", "%") for rd in grid.readings],
                          rows, source="paper Table 1",
                          note="Latency read as the RTT the path adds (half each way); loss on the server → client "
                               "direction only (scenarios/mptcp/README.md).")

    # Fig. 4: start-up delay, both definitions.
    p4 = PaperValues("paper Fig. 4 (caption)", ("transport", "config"), PAPER_FIG4_MS)
    rows = [{**label(r), "first_byte": est(r["reading"], r["config"], r["transport"], "startup_first_byte_ms"),
             "playback": est(r["reading"], r["config"], r["transport"], "startup_ms"),
             "paper": p4.values.get((r["transport"], r["config"]))} for r in base]
    out["fig4"] = Table("fig4-startup", "Fig. 4: start-up delay, first request → first byte and → playback start",
                        idx + [Column("first_byte", "to first byte", "ms", "ours"),
                               Column("playback", "to playback start", "ms", "ours"),
                               p4.column("paper", "paper: buffering delay (mean)", "ms")],
                        rows, source="paper Fig. 4",
                        note="The paper's values are its Fig. 4 caption's means (one SPTCP value for both "
                             "configurations); it does not say which of the two definitions it measured.")

    # Fig. 5: retransmissions per second.
    p5 = PaperValues("paper Sec. 5.2 (Fig. 5)", ("transport", "config"), PAPER_FIG5)
    rows = [{**label(r), "retx": est(r["reading"], r["config"], r["transport"], "retx_per_s"),
             "paper": p5.values.get((r["transport"], r["config"]))} for r in base]
    out["fig5"] = Table("fig5-retransmissions", "Fig. 5: retransmitted segments per second (the video's direction)",
                        idx + [Column("retx", "retransmissions", "1/s", "ours"),
                               p5.column("paper", "paper: retransmissions", "1/s")],
                        rows, source="paper Fig. 5 and Sec. 5.2",
                        note=f"Ours: retransmitted data segments of the server's direction over the whole run "
                             f"({grid.duration_s:g} s); the paper's: packets per 1-s tick of its capture on both "
                             "interfaces (one SPTCP value, not per configuration).")

    # Figs. 6/7: per-segment download rate (and the bitrate the player chose).
    rows = [{**label(r), "rate": est(r["reading"], r["config"], r["transport"], "rate_mbps"),
             "bitrate": est(r["reading"], r["config"], r["transport"], "bitrate_mbps")} for r in base]
    out["fig6"] = Table("fig6-download", "Figs. 6/7: mean per-segment download rate and mean bitrate played",
                        idx + [Column("rate", "mean segment download rate", "Mbit/s", "ours"),
                               Column("bitrate", "mean bitrate played", "Mbit/s", "ours")],
                        rows, source=PAPER_FIG6_SOURCE,
                        note="Download rate of a segment: its bytes × 8 over request → last byte (the player's "
                             "own measure). The paper gives no value, only MPTCP > SPTCP and balanced > unbalanced.")

    # The QoE table of the throughput ABR policy (the paper's VLC: rate-based).
    rows = [{**label(r), **{m: est(r["reading"], r["config"], r["transport"], m)
                            for m in ("startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches")}}
            for r in base]
    out["qoe"] = Table("qoe", "QoE per session, throughput ABR (rate-based, as the paper's VLC)",
                       idx + [Column("startup_ms", "start-up to playback", "ms", "ours"),
                              Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                              Column("played_s", "media played", "s", "ours"),
                              Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                              Column("switches", "switches", "", "ours")],
                       rows, source="ours (the paper reports no QoE table)",
                       note=f"{grid.loops * clip_s():g} s of media per session; a session that has not played it all by the "
                            f"end of the run ({grid.duration_s:g} s) stalled for the rest.")

    # The QoE table per ABR policy: throughput (rate-based), BBA-0, BOLA-BASIC.
    rows = [{"reading": READING_LABEL[rd], "config": cf, "transport": TRANSPORT_LABEL[tp], "abr": a,
             **{m: est(rd, cf, tp, m, abr=a) for m in ("startup_ms", "stalls", "stall_s", "bitrate_mbps", "switches",
                                                      "rate_mbps")}}
            for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS]
    out["qoe_abr"] = Table("qoe-abr", "QoE per ABR policy (defaults of docs/models/dash.md)",
                           idx + [Column("abr", "ABR policy"), Column("startup_ms", "start-up to playback", "ms", "ours"),
                                  Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                                  Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                                  Column("switches", "switches", "", "ours"),
                                  Column("rate_mbps", "mean segment download rate", "Mbit/s", "ours")],
                           rows, source="ours (the paper uses VLC's rate-based adaptation only)",
                           note="BBA's reservoir and cushion are 90/240 and 126/240 of the 30-s buffer target; BOLA's "
                                "γp is 5 (docs/models/dash.md).")

    # The subflows: path 1's share of the video bytes, MPTCP only.
    rows = [{**label(r), "share": est(r["reading"], r["config"], "mptcp", "path1_share_pct"),
             "reinjected": est(r["reading"], r["config"], "mptcp", "reinjected_kb"),
             "rate1": TABLE1[r["config"]]["path1"][2] / (TABLE1[r["config"]]["path1"][2]
                                                         + TABLE1[r["config"]]["path2"][2]) * 100}
            for r in base if r["transport"] == "mptcp"]
    out["subflows"] = Table("subflows", "MPTCP subflows: path 1's share of the video bytes received",
                            idx + [Column("share", "path 1's share", "%", "ours"),
                                   Column("rate1", "path 1's share of the capacity", "%"),
                                   Column("reinjected", "reinjected", "kB", "ours")],
                            rows, source="ours (the paper gives no per-subflow numbers)")

    # The coupled congestion control: LIA (default) against OLIA and uncoupled CUBIC, paired.
    rows = []
    for rd, cf in grid.sensitivity:
        for cp in COUPLED:
            r = {"reading": READING_LABEL[rd], "config": cf, "coupled": cp}
            for m in ("rate_mbps", "retx_per_s", "startup_ms", "bitrate_mbps", "path1_share_pct"):
                r[m] = est(rd, cf, "mptcp", m, cp)
                if cp != "lia":
                    sel = [x for x in rep_rows if x["reading"] == rd and x["config"] == cf and x["transport"] == "mptcp"
                           and x["abr"] == "throughput"]
                    r[f"{m}_d"] = core.paired(sel, "coupled", cp, "lia", m).get(())
            rows.append(r)
    cols = [Column("reading", "loss reading"), Column("config", "configuration"), Column("coupled", "coupled CC")]
    for m, t, u in (("rate_mbps", "segment download rate", "Mbit/s"), ("retx_per_s", "retransmissions", "1/s"),
                    ("startup_ms", "start-up to playback", "ms"), ("bitrate_mbps", "mean bitrate", "Mbit/s"),
                    ("path1_share_pct", "path 1's share", "%")):
        cols += [Column(m, t, u, "ours"), Column(f"{m}_d", f"{t}: − LIA (paired)", u, "ours")]
    out["sensitivity"] = Table("sensitivity-coupled", "Sensitivity: MPTCP's coupled congestion control (LIA, OLIA, "
                               "uncoupled CUBIC)", cols, rows, source="ours (the paper uses the kernel's default, LIA)",
                               note="" if rows else "Full run only.")
    return out


# --- findings ------------------------------------------------------------------------------------


def _pdiff(rep_rows: list[dict[str, Any]], sel: dict[str, Any], treatment: str, a: Any, b: Any, m: str) -> Estimate | None:
    """Paired difference m(a) − m(b) of ``treatment`` over the runs matching ``sel`` (None when no
    pair exists)."""
    rs = [r for r in rep_rows if all(r[k] == v for k, v in sel.items()) and r[m] == r[m]]
    return core.paired(rs, treatment, a, b, m).get(())


def _lia(rd: str, cf: str | None = None) -> dict[str, Any]:
    d = {"reading": rd, "coupled": "lia", "abr": "throughput"}
    if cf is not None:
        d["config"] = cf
    return d


def _tp_diff(rep_rows: list[dict[str, Any]], rd: str, cf: str, m: str, other: str = "sptcp") -> Estimate | None:
    """Paired m(MPTCP, LIA) − m(``other``) in one reading and configuration."""
    rs = [r for r in rep_rows if r["reading"] == rd and r["config"] == cf and r["coupled"] in ("lia", "-")
          and r["abr"] == "throughput" and r[m] == r[m]]
    return core.paired(rs, "transport", "mptcp", other, m).get(())


def findings(grid: Grid, rep_rows: list[dict[str, Any]], mptcp: bool) -> list[Finding]:
    """The paper's claims as findings, per loss reading, each with its paired statistic."""
    out: list[Finding] = []
    why_off = "" if mptcp else "the MPTCP cells did not run (see the setup)"

    def judged(est: Estimate | None, verdict: Verdict) -> Verdict:
        return verdict if est is not None else Verdict.UNDECIDED

    for rd in (r for r in grid.readings if r != "control"):
        tag = READING_LABEL[rd]
        for cf in CONFIGS:
            d = _tp_diff(rep_rows, rd, cf, "rate_mbps")
            out.append(Finding(f"mptcp-faster-{cf}-{rd}", f"{tag}, {cf}: MPTCP downloads segments faster than SPTCP "
                               "(Sec. 5.3, Fig. 6)", Label.SUBSTANTIVE, judged(d, judge_positive(d)),
                               "paired mean segment download rate MPTCP − SPTCP, Mbit/s", d, why_off))
        d = _pdiff(rep_rows, {**_lia(rd), "transport": "mptcp"}, "config", "balanced", "unbalanced", "rate_mbps")
        out.append(Finding(f"balanced-faster-{rd}", f"{tag}: MPTCP downloads faster over balanced than over unbalanced "
                           "paths (Sec. 5.3)", Label.SUBSTANTIVE, judged(d, judge_positive(d)),
                           "paired mean segment download rate balanced − unbalanced (MPTCP), Mbit/s", d, why_off))
        for cf in CONFIGS:
            d = _tp_diff(rep_rows, rd, cf, "retx_per_s")
            out.append(Finding(f"mptcp-more-retransmissions-{cf}-{rd}", f"{tag}, {cf}: MPTCP retransmits more per "
                               "second than SPTCP (Sec. 5.2, Fig. 5)", Label.SUBSTANTIVE, judged(d, judge_positive(d)),
                               "paired retransmissions/s MPTCP − SPTCP", d, why_off))
        d = _pdiff(rep_rows, {**_lia(rd), "transport": "mptcp"}, "config", "unbalanced", "balanced", "startup_ms")
        out.append(Finding(f"unbalanced-slower-startup-{rd}", f"{tag}: MPTCP starts playback later over unbalanced "
                           "than over balanced paths (Sec. 5.1, Fig. 4)", Label.SUBSTANTIVE,
                           judged(d, judge_positive(d)), "paired start-up to playback unbalanced − balanced (MPTCP), ms",
                           d, why_off))
        # Fig. 5: SPTCP retransmits about one packet per second. "About": within a factor of 2,
        # tested on log2 of the rate (the mean over both configurations' runs).
        xs = [math.log2(r["retx_per_s"]) if r["retx_per_s"] > 0 else -10.0
              for r in rep_rows if r["reading"] == rd and r["transport"] == "sptcp" and r["abr"] == "throughput"]
        e = mean_ci(xs) if xs else None
        out.append(Finding(f"fig5-sptcp-rate-{rd}", f"{tag}: SPTCP retransmits about one segment per second, as in "
                           "Fig. 5 (within a factor of 2)", Label.SUBSTANTIVE, judge_within(e, 1.0),
                           "log2(SPTCP retransmissions/s ÷ 1), both configurations", e,
                           "decides which reading of Table 1's loss rates is consistent with Fig. 5"))
    if "control" in grid.readings:
        for cf in CONFIGS:
            d = _tp_diff(rep_rows, "control", cf, "rate_mbps", "sptcp_best")
            out.append(Finding(f"control-mptcp-beats-best-path-{cf}", f"no loss, {cf}: MPTCP over both disjoint paths "
                               "downloads faster than single-path TCP over the better of them (RFC 6356's goal)",
                               Label.TRIVIAL, judged(d, judge_positive(d)),
                               "paired mean segment download rate MPTCP − SPTCP on path 1, Mbit/s", d,
                               why_off or "true of any multipath transport that uses a second, idle path"))
    return out


def consistent_readings(found: list[Finding]) -> list[str]:
    """The loss readings whose SPTCP retransmission rate is consistent with Fig. 5."""
    return [f.key.removeprefix("fig5-sptcp-rate-") for f in found
            if f.key.startswith("fig5-sptcp-rate-") and f.verdict is Verdict.HOLDS]


# --- figures -------------------------------------------------------------------------------------


def _bars(table: Table, keys: list[tuple[str, str]], paper: str | None, ylabel: str, title: str, log: bool = False):
    """A grouped bar chart of ``table``: one group per row, a bar per ``(key, label)``, the
    paper's value as a marker; 95 % intervals as error bars."""
    plt = pyplot()

    def draw(path: Path) -> None:
        rows = table.rows
        fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(rows) + 2), 4.2))
        w = 0.8 / len(keys)
        for j, (k, lab) in enumerate(keys):
            xs = [i + (j - (len(keys) - 1) / 2) * w for i in range(len(rows))]
            ys = [r[k].mean if isinstance(r[k], Estimate) else float("nan") for r in rows]
            err = [r[k].half_width if isinstance(r[k], Estimate) and r[k].half_width == r[k].half_width else 0
                   for r in rows]
            ax.bar(xs, ys, w, yerr=err, capsize=2, label=lab, color=f"C{j}")
        if paper:
            ys = [r.get(paper) if r.get(paper) is not None else float("nan") for r in rows]
            ax.plot(range(len(rows)), ys, "kx", ms=7, label="paper")
        ax.set_xticks(range(len(rows)), [f"{r['reading']}\n{r['config'][:3]}. {r['transport']}" for r in rows],
                      fontsize=6, rotation=90)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return draw


def _segments_fig(series: dict[tuple[str, str, str], list[tuple[int, float, float]]], readings: tuple[str, ...]):
    """Figs. 6/7 (ours): each segment's download rate against its index, repetition 0 of each
    cell, one panel per loss reading."""
    plt = pyplot()

    def draw(path: Path) -> None:
        fig, axes = plt.subplots(1, len(readings), figsize=(4.0 * len(readings), 3.8), sharey=True, squeeze=False)
        style = {"mptcp": "-", "sptcp": "--", "sptcp_best": ":"}
        for ax, rd in zip(axes[0], readings):
            for (r, cf, tp), pts in series.items():
                if r != rd or not pts:
                    continue
                ax.plot([p[0] for p in pts], [p[2] for p in pts], style[tp], marker=".", ms=3,
                        color="C0" if cf == "balanced" else "C1", label=f"{cf[:3]}. {TRANSPORT_LABEL[tp]}")
            ax.set_title(READING_LABEL[rd], fontsize=9)
            ax.set_xlabel("segment")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
        axes[0][0].set_ylabel("download rate (Mbit/s)")
        fig.suptitle("Figs. 6/7 (ours): per-segment download rate, repetition 0 of each cell", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    return draw


# --- the reading ---------------------------------------------------------------------------------


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding], mptcp: bool) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), the loss
    reading consistent with Fig. 5, then the findings with their intervals."""
    md = []

    def rows(t: str, **sel: str) -> list[dict[str, Any]]:
        return [r for r in tabs[t].rows if all(r[k] == v for k, v in sel.items())]

    for rd in grid.readings:
        lab = READING_LABEL[rd]
        parts = []
        for cf in CONFIGS:
            r5 = {r["transport"]: r for r in rows("fig5", reading=lab, config=cf)}
            r6 = {r["transport"]: r for r in rows("fig6", reading=lab, config=cf)}
            r4 = {r["transport"]: r for r in rows("fig4", reading=lab, config=cf)}
            mp, sp = TRANSPORT_LABEL["mptcp"], TRANSPORT_LABEL["sptcp"]
            parts.append(f"{cf}: segment download rate MPTCP {_m(r6[mp]['rate'])} vs SPTCP {_m(r6[sp]['rate'])} Mbit/s; "
                         f"retransmissions/s MPTCP {_m(r5[mp]['retx'])} (paper {_m(r5[mp]['paper'])}) vs SPTCP "
                         f"{_m(r5[sp]['retx'])} (paper {_m(r5[sp]['paper'])}); start-up to playback MPTCP "
                         f"{_m(r4[mp]['playback'])} vs SPTCP {_m(r4[sp]['playback'])} ms (to first byte "
                         f"{_m(r4[mp]['first_byte'])} vs {_m(r4[sp]['first_byte'])} ms; paper {_m(r4[mp]['paper'])} "
                         f"vs {_m(r4[sp]['paper'])} ms)")
            if rd == "control":
                best = TRANSPORT_LABEL["sptcp_best"]
                parts[-1] += f"; {best} {_m(r6[best]['rate'])} Mbit/s"
        md.append(f"- **{lab}**: " + "; ".join(parts) + ".")
    q = tabs["qoe"]
    stalled = [r for r in q.rows if isinstance(r["stalls"], Estimate) and r["stalls"].mean > 0]
    if stalled:
        md.append("- **Stalls**: " + "; ".join(f"{r['reading']}, {r['config']}, {r['transport']}: "
                                              f"{_m(r['stalls'])} stalls, {_m(r['stall_s'])} s"
                                              for r in stalled) + ".")
    else:
        md.append("- **Stalls**: no session stalled.")
    for r in tabs["qoe_abr"].rows:
        if isinstance(r["bitrate_mbps"], Estimate):
            md.append(f"- **ABR {r['abr']}**, {r['reading']}, {r['config']}, {r['transport']}: mean bitrate "
                      f"{_m(r['bitrate_mbps'])} Mbit/s, {_m(r['switches'])} switches, {_m(r['stalls'])} stalls, "
                      f"start-up {_m(r['startup_ms'])} ms.")
    for r in tabs["subflows"].rows:
        if isinstance(r["share"], Estimate):
            md.append(f"- **Subflows**, {r['reading']}, {r['config']}: path 1 carried {_m(r['share'])} % of the video "
                      f"bytes (its share of the capacity {_m(r['rate1'])} %).")
    for r in tabs["sensitivity"].rows:
        if r["coupled"] != "lia":
            md.append(f"- **Coupled CC**, {r['reading']}, {r['config']}: {r['coupled']} − LIA: segment download rate "
                      f"{interval_str(r['rate_mbps_d'])} Mbit/s, retransmissions/s {interval_str(r['retx_per_s_d'])}, "
                      f"path 1's share {interval_str(r['path1_share_pct_d'])} % (paired).")
    ok = consistent_readings(found)
    md.append("- **Which loss reading fits Fig. 5** (SPTCP about one retransmission per second): "
              + (", ".join(READING_LABEL[x] for x in ok) if ok else "none of the readings run") + ".")
    if not mptcp:
        md.append("- **MPTCP**: not run (see the setup); every finding that compares it is undecided.")
    md += ["", "The paper's claims, per loss reading (95 % intervals over paired repetitions):", "",
           findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


# --- the reproduction ----------------------------------------------------------------------------


def _setup(grid: Grid, quick: bool, refusal: str | None) -> str:
    lines = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell (the paper: {PAPER_REPS}), the {clip_s():g}-s "
        f"HEVC ladder played {_times(grid.loops)} ({grid.loops * clip_s():g} s of media, 6-s segments), runs of "
        f"{grid.duration_s:g} s; the same seed for repetition r of every cell, so differences are paired.",
        "Testbed (scenarios/mptcp/README.md): two disjoint paths C–R1–S and C–R2–S, each shaped on its access link "
        "(rate, latency read as the RTT the path adds, half each way, Bernoulli loss on the server → client direction, "
        "100-packet drop-tail queues); DASH player with throughput ABR (harmonic mean of 5 rates × 0.9), 30-s buffer "
        "target; TCP with Linux's profile (CUBIC).",
        f"Loss readings run: {', '.join(READING_LABEL[r] for r in grid.readings)}. The literal Table 1 loss (10–20 %) "
        "contradicts Fig. 5's one retransmission per second for SPTCP, so the table is also run with every loss "
        "÷ 10 and ÷ 100; the control has no loss and adds single-path TCP over MPTCP's path 1 (the better path).",
        "MPTCP: a subflow per path, min-RTT scheduler (Linux's default), LIA coupling (Linux's default), "
        "reinjection and penalisation on" + (f"; the sensitivity runs OLIA and uncoupled CUBIC at "
                                             f"{', '.join(f'{READING_LABEL[r]} {c}' for r, c in grid.sensitivity)}"
                                             if grid.sensitivity else "") + ".",
    ]
    if refusal is not None:
        lines.append(f"**The MPTCP cells did not run: this simulator refuses a DASH flow over MPTCP ({refusal}).** "
                     "Only the single-path cells ran; every finding that needs MPTCP is undecided.")
    return "\n\n".join(lines)


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[[int, int], None] | None = None,
        executor: Any = None, reps: int | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) the experiment into ``out`` and writes the report there. Returns a
    summary (``{"shard": ...}`` for one task of a job array)."""
    grid = QUICK if quick else FULL
    if reps is not None:
        if reps < 1:
            raise QoelabError(f"--reps {reps}: must be at least 1")
        grid = replace(grid, reps=reps)
    refusal = mptcp_dash_refusal()
    mptcp = refusal is None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    exp = experiment(grid, mptcp)
    log(f"qoelab reproduce mptcp{' --quick' if quick else ''}: writing {out} ({grid.reps} repetitions, "
        f"{len(exp.cells)} cells)" + ("" if mptcp else "; the MPTCP cells cannot run on this simulator"))
    core.run(exp, out / "runs", jobs, progress, executor=executor)
    if getattr(executor, "shard", None):
        return {"shard": executor.shard}
    rep_rows = core.rows(exp, out / "runs")
    tabs = tables(grid, rep_rows, mptcp)
    found = findings(grid, rep_rows, mptcp)
    names = {"table1": "table1.csv", "fig4": "fig4_startup.csv", "fig5": "fig5_retransmissions.csv",
             "fig6": "fig6_download.csv", "qoe": "qoe.csv", "qoe_abr": "qoe_abr.csv", "subflows": "subflows.csv",
             "sensitivity": "sensitivity_coupled.csv"}
    for k, t in tabs.items():
        t.write_csv(out, names[k])
    with open(out / "repetitions.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*TREATMENTS, "rep", "seed", *METRICS], lineterminator="\n")
        w.writeheader()
        for r in rep_rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    series = {}
    for p in exp.cells:
        if p["coupled"] in ("lia", "-") and p["abr"] == "throughput":
            d = core.run_dir(exp, out / "runs", _cell_id(p), 0)
            if (d / "probe_app.parquet").is_file():
                series[(p["reading"], p["config"], p["transport"])] = segment_rates(d)
    figures = [
        Figure("fig4", "Fig. 4 (ours): start-up delay, both definitions", "fig4_startup.png",
               _bars(tabs["fig4"], [("first_byte", "to first byte"), ("playback", "to playback")], "paper",
                     "start-up delay (ms)", "Fig. 4 (ours): start-up delay; × the paper's caption means", log=True),
               "paper Fig. 4"),
        Figure("fig5", "Fig. 5 (ours): retransmissions per second", "fig5_retransmissions.png",
               _bars(tabs["fig5"], [("retx", "ours")], "paper", "retransmitted segments / s",
                     "Fig. 5 (ours): retransmissions per second; × the paper's"), "paper Fig. 5"),
        Figure("fig6", "Figs. 6/7 (ours): per-segment download rate, one run of each cell", "fig6_segment_rates.png",
               _segments_fig(series, grid.readings), "paper Figs. 6/7"),
    ]
    text = reading(grid, tabs, found, mptcp)
    setup = _setup(grid, quick, refusal)
    held, decided = summary_count(found)
    ok = consistent_readings(found)
    summary = (f"HEVC DASH over two disjoint paths, MPTCP against single-path TCP, Table 1 under "
               f"{len(grid.readings)} loss readings: {held} of {decided} decided substantive findings hold; the loss "
               f"reading consistent with Fig. 5: {', '.join(READING_LABEL[x] for x in ok) or 'none'}."
               + ("" if mptcp else " The MPTCP cells did not run on this simulator (see the setup)."))
    publish(out, paper="mptcp", quick=quick, title="MPTCP vs single-path TCP for UHD HEVC DASH (Wejin & Amca)", tables=list(tabs.values()), findings=found,
            source="paper Sec. 5", figures=figures, reading=text, summary=summary, setup=setup,
            cost=core.cost(out / "runs"), seeds=sorted({r["seed"] for r in rep_rows}))
    wall = time.time() - t0
    log(f"mptcp: {held} of {decided} substantive findings hold ({wall:.0f} s); wrote {out}/report.md")
    return {"held": held, "decided": decided, "wall_s": wall, "runs": len(rep_rows), "mptcp": mptcp}


# --- CLI -----------------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce mptcp`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "mptcp", "Wejin & Amca: MPTCP vs single-path TCP for HEVC DASH (Table 1, Figs. 4-7)", run,
        quick_help="3 loss readings, 2 repetitions, 240-s runs (CI)",
        reps_help="repetitions per cell (default 2 with --quick, else 5 as in the paper)")
