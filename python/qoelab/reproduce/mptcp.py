"""``qoelab reproduce mptcp``: Wejin & Amca, *Experimental performance analysis of multipath TCP
path characteristics in streaming UHD HEVC-DASH over wireless networks*
(shared/papers/mptcp-uhd-hevc-dash.txt).

A DASH player on a client with two interfaces fetches the bundled HEVC ladder (720p / 1080p /
2160p, 6-s segments) from an HTTP server over two disjoint paths, each shaped on its access
link as the paper's Table 1 says, either over one MPTCP connection with a subflow per path or
over single-path TCP (SPTCP) on path 1. The testbed is ``scenarios/mptcp/base.toml`` (its
README lists what we chose); :func:`build_scenario` sets one cell on it; :data:`CHOICES`
declares what the paper leaves open, and ``--sensitivity`` runs every finding under each
alternative (:mod:`qoelab.experiment.runner`).

Cells (:func:`cells`): a loss ``reading`` of Table 1 (``literal``; ``div10`` and ``div100``,
every loss rate divided by 10 or 100, because the literal rates contradict the paper's own
Fig. 5; ``control``, no loss), a ``config`` (``balanced``, ``unbalanced``), a ``transport``
(``mptcp`` over both paths; ``sptcp``, single-path TCP over path 1 set to Table 1's SPTCP row;
in the control also ``sptcp_best``, single-path TCP over MPTCP's path 1, the better path, for
RFC 6356's goal), the MPTCP ``coupled`` congestion control and the player's ``abr`` policy (the
choices' values; BBA and BOLA also beside the default in the ÷ 100 reading, for the QoE table
per ABR policy). Every parameter is a treatment: repetition ``r`` of every cell runs with the
same seed, so every difference is paired.

Metrics per run (:func:`run_metrics`), from the flows table's ``dash_*`` and ``rev_*`` columns
(the video is the reverse direction of the player's connection) and the ``subflows`` table.

Outputs (``docs/report-format.md``): ``report.json``, ``report.md``, a CSV per table
(``table1.csv``, ``fig4_startup.csv``, ``fig5_retransmissions.csv``, ``fig6_download.csv``,
``qoe.csv``, ``qoe_abr.csv``, ``subflows.csv``), ``repetitions.csv`` (one row per run),
``sensitivity.csv`` (with ``--sensitivity``) and the figures ``fig4_startup.png``,
``fig5_retransmissions.png``, ``fig6_segment_rates.png``.
"""

from __future__ import annotations

import argparse
import math
import tomllib
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import (Choice, Estimate, Finding, Label, Premise, Verdict, above, mean_ci, summary_line,
                               within)
from qoelab.experiment import core, runner
from qoelab.experiment.figures import bars, pyplot, save
from qoelab.experiment.tables import (Column, Figure, PaperValues, Table, findings_md, interval_str, publish,
                                      write_repetitions)
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
#: ABR policies (``docs/models/dash.md``).
ABRS = ("throughput", "bba", "bola")
LOSS_DIRECTIONS = ("downstream", "upstream", "both")
#: The MPTCP connection's settings (README: the out-of-tree kernel's defaults), the scheduler
#: aside (a choice).
MPTCP = {"kind": "mptcp", "reinject": True, "penalise": True, "tcp": {"profile": "linux"}}
#: The client's and server's interface addresses of the two paths (base.toml).
PATHS = (("10.1.0.1", "10.2.0.1"), ("10.1.1.1", "10.2.1.1"))

# --- what the paper leaves open ------------------------------------------------------------------

CHOICES = (
    Choice("coupled", "lia", ("olia", "uncoupled"),
           "RFC 6356's coupled increase, the controller MPTCP deployments select; the paper names none (issue 37: "
           "the v0.92 kernel runs the system default, uncoupled CUBIC, unless a coupled module is selected)",
           {"balia": "BALIA (Peng et al. 2016) is not implemented yet (issue 37)"}),
    Choice("abr", "throughput", ("bba", "bola"),
           "rate-based, as the paper's VLC player (Sec. 4); dash.js's rule (harmonic mean of 5 × 0.9)",
           {"vlc": "VLC's own adaptive logic is not implemented yet (issue 37)"}),
    Choice("loss_direction", "downstream", ("upstream", "both"),
           "Table 1's loss acts on the video the paper measures (server → client); netem on the client would shape "
           "its egress instead (issue 37)"),
    Choice("scheduler", "min_rtt", ("round_robin",), "Linux's default MPTCP packet scheduler (net/mptcp/sched.c)"),
    Choice("subflows", "disjoint", (), "one subflow per client interface, as the paper's two access paths",
           {"full_mesh": "the server's second interface (full mesh, 4 subflows) is not modelled yet (issue 37)"}),
)


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


def build_scenario(reading: str, config: str, transport: str, coupled: str = "lia", abr: str = "throughput", *,
                   loss_direction: str = "downstream", scheduler: str = "min_rtt", loops: int = FULL.loops,
                   duration_s: float = FULL.duration_s) -> dict[str, Any]:
    """One cell as plain scenario data: ``base.toml`` with path 1 and path 2 set to ``config``'s
    Table 1 rows under ``reading`` (loss in ``loss_direction``), and the DASH flow over
    ``transport``: ``mptcp`` (a subflow per path, ``coupled`` congestion control, the
    ``scheduler``), ``sptcp`` (path 1 set to the SPTCP row) or ``sptcp_best`` (single-path TCP
    over MPTCP's path 1 as it is), the player with the ``abr`` policy. The app probe is on."""
    for name, v, known in (("reading", reading, READINGS), ("config", config, CONFIGS),
                           ("transport", transport, tuple(TRANSPORT_LABEL)), ("coupled", coupled, COUPLED),
                           ("abr", abr, ABRS), ("loss_direction", loss_direction, LOSS_DIRECTIONS)):
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
    if transport == "mptcp":
        f.pop("src_addr", None)
        f.pop("dst_addr", None)
        f["transport"] = {**MPTCP, "scheduler": scheduler, "coupled": coupled}
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


def cells(grid: Grid, setting: dict[str, Any] | None = None, *, mptcp: bool = True,
          abr_table: bool = True) -> list[dict[str, Any]]:
    """The experiment's cells under ``setting`` (the choices; default: :data:`CHOICES`'
    defaults): every reading × configuration × transport with the setting's ABR policy and
    MPTCP controller, and (``abr_table``) the other ABR policies beside it in the readings of
    :attr:`Grid.abr_readings`; without ``mptcp``, the single-path cells only."""
    s = setting or runner.defaults(CHOICES)
    tps = lambda rd: ["mptcp", "sptcp"] + (["sptcp_best"] if rd == "control" else [])  # noqa: E731
    main = [(rd, cf, tp, s["abr"]) for rd in grid.readings for cf in CONFIGS for tp in tps(rd)]
    extra = [(rd, cf, tp, a) for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS
             if a != s["abr"]] if abr_table else []
    return [{"reading": rd, "config": cf, "transport": tp, "coupled": s["coupled"] if tp == "mptcp" else "-", "abr": a}
            for rd, cf, tp, a in main + extra if mptcp or tp != "mptcp"]


def _cell_id(p: dict[str, Any]) -> str:
    tail = f"-{p['coupled']}" if p["transport"] == "mptcp" else ""
    abr = f"-{p['abr']}" if p["abr"] != "throughput" else ""
    return f"{p['reading']}-{p['config']}-{p['transport']}{tail}{abr}"


def _build(p: dict[str, Any], grid: Grid, setting: dict[str, Any]):
    from qoelab.scenario import Scenario

    d = build_scenario(p["reading"], p["config"], p["transport"], p["coupled"] if p["transport"] == "mptcp" else "lia",
                       p["abr"], loss_direction=setting["loss_direction"], scheduler=setting["scheduler"],
                       loops=grid.loops, duration_s=grid.duration_s)
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / FOLDER)


METRICS = ("startup_first_byte_ms", "startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches",
           "rate_mbps", "retx_per_s", "path1_share_pct", "reinjected_kb")
TREATMENTS = ("reading", "config", "transport", "coupled", "abr")


def experiment(grid: Grid, mptcp: bool, setting: dict[str, Any] | None = None, *, abr_table: bool = True) -> core.Experiment:
    s = setting or runner.defaults(CHOICES)
    return core.Experiment("mptcp", cells(grid, s, mptcp=mptcp, abr_table=abr_table), partial(_build, grid=grid, setting=s),
                           partial(run_metrics, duration_s=grid.duration_s), paired=TREATMENTS, reps=grid.reps,
                           cell_id=_cell_id)


# --- metrics of one run ----------------------------------------------------------------------------


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


# --- tables ------------------------------------------------------------------------------------------


def _main_rows(grid: Grid) -> list[dict[str, Any]]:
    """The (reading, config, transport) rows of the main tables, in display order."""
    return [{"reading": rd, "config": cf, "transport": tp}
            for rd in grid.readings for cf in CONFIGS
            for tp in (("mptcp", "sptcp", "sptcp_best") if rd == "control" else ("mptcp", "sptcp"))]


_IDX = [Column("reading", "loss reading"), Column("config", "configuration"), Column("transport", "transport")]


def tables(grid: Grid, rep_rows: list[dict[str, Any]], mptcp: bool, setting: dict[str, Any]) -> dict[str, Table]:
    """Table 1 as applied, Fig. 4 (start-up), Fig. 5 (retransmissions/s), Figs. 6/7 (download
    rate), the QoE table, the QoE per ABR policy and the subflow shares; ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, METRICS)}

    def est(rd: str, cf: str, tp: str, m: str, abr: str | None = None) -> Estimate | str | None:
        row = agg.get((rd, cf, tp, setting["coupled"] if tp == "mptcp" else "-", abr or setting["abr"]))
        return ("not run" if tp == "mptcp" and not mptcp else None) if row is None else row[m]

    def rows_of(ms: dict[str, str], base: list[dict[str, Any]] | None = None, **extra: Any) -> list[dict[str, Any]]:
        return [{"reading": READING_LABEL[r["reading"]], "config": r["config"], "transport": TRANSPORT_LABEL[r["transport"]],
                 **{k: est(r["reading"], r["config"], r["transport"], m) for k, m in ms.items()},
                 **{k: f(r) for k, f in extra.items()}} for r in (base or _main_rows(grid))]

    out: dict[str, Table] = {}
    rows = [{"config": cf, "path": name, "paper_loss": TABLE1[cf][p][0], "paper_latency": TABLE1[cf][p][1],
             "paper_rate": TABLE1[cf][p][2], "delay_each_way": TABLE1[cf][p][1] / 2,
             **{f"loss_{rd}": TABLE1[cf][p][0] * FACTOR[rd] for rd in grid.readings}}
            for cf in CONFIGS for p, name in (("path1", "MPTCP path 1"), ("path2", "MPTCP path 2"), ("sptcp", "SPTCP (path 1)"))]
    out["table1"] = Table("table1", "Table 1: path characteristics, the paper's and the loss applied in each reading",
                          [Column("config", "configuration"), Column("path", "path"),
                           Column("paper_loss", "paper: packet loss", "%", "paper"),
                           Column("paper_latency", "paper: latency", "ms", "paper"),
                           Column("paper_rate", "paper: bandwidth", "Mbit/s", "paper"),
                           Column("delay_each_way", "our delay each way", "ms")]
                          + [Column(f"loss_{rd}", f"loss applied, {READING_LABEL[rd]}", "%") for rd in grid.readings],
                          rows, source="paper Table 1",
                          note=f"Latency read as the RTT the path adds (half each way); loss {setting['loss_direction']} "
                               "(the `loss_direction` choice; scenarios/mptcp/README.md).")
    p4 = PaperValues("paper Fig. 4 (caption)", ("transport", "config"), PAPER_FIG4_MS)
    out["fig4"] = Table("fig4-startup", "Fig. 4: start-up delay, first request → first byte and → playback start",
                        _IDX + [Column("first_byte", "to first byte", "ms", "ours"),
                                Column("playback", "to playback start", "ms", "ours"),
                                p4.column("paper", "paper: buffering delay (mean)", "ms")],
                        rows_of({"first_byte": "startup_first_byte_ms", "playback": "startup_ms"},
                                paper=lambda r: p4.values.get((r["transport"], r["config"]))),
                        source="paper Fig. 4", note="The paper's values are its Fig. 4 caption's means (one SPTCP value "
                                                    "for both configurations); it does not say which of the two "
                                                    "definitions it measured.")
    p5 = PaperValues("paper Sec. 5.2 (Fig. 5)", ("transport", "config"), PAPER_FIG5)
    out["fig5"] = Table("fig5-retransmissions", "Fig. 5: retransmitted segments per second (the video's direction)",
                        _IDX + [Column("retx", "retransmissions", "1/s", "ours"),
                                p5.column("paper", "paper: retransmissions", "1/s")],
                        rows_of({"retx": "retx_per_s"}, paper=lambda r: p5.values.get((r["transport"], r["config"]))),
                        source="paper Fig. 5 and Sec. 5.2",
                        note=f"Ours: retransmitted data segments of the server's direction over the whole run "
                             f"({grid.duration_s:g} s); the paper's: packets per 1-s tick of its capture on both "
                             "interfaces (one SPTCP value, not per configuration).")
    out["fig6"] = Table("fig6-download", "Figs. 6/7: mean per-segment download rate and mean bitrate played",
                        _IDX + [Column("rate", "mean segment download rate", "Mbit/s", "ours"),
                                Column("bitrate", "mean bitrate played", "Mbit/s", "ours")],
                        rows_of({"rate": "rate_mbps", "bitrate": "bitrate_mbps"}), source=PAPER_FIG6_SOURCE,
                        note="Download rate of a segment: its bytes × 8 over request → last byte (the player's "
                             "own measure). The paper gives no value, only MPTCP > SPTCP and balanced > unbalanced.")
    qoe = ("startup_ms", "stalls", "stall_s", "played_s", "bitrate_mbps", "switches")
    out["qoe"] = Table("qoe", f"QoE per session, {setting['abr']} ABR (the `abr` choice)",
                       _IDX + [Column("startup_ms", "start-up to playback", "ms", "ours"),
                               Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                               Column("played_s", "media played", "s", "ours"),
                               Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                               Column("switches", "switches", "", "ours")],
                       rows_of({m: m for m in qoe}), source="ours (the paper reports no QoE table)",
                       note=f"{grid.loops * clip_s():g} s of media per session; a session that has not played it all by the "
                            f"end of the run ({grid.duration_s:g} s) stalled for the rest.")
    abr_m = ("startup_ms", "stalls", "stall_s", "bitrate_mbps", "switches", "rate_mbps")
    rows = [{"reading": READING_LABEL[rd], "config": cf, "transport": TRANSPORT_LABEL[tp], "abr": a,
             **{m: est(rd, cf, tp, m, a) for m in abr_m}}
            for rd in grid.abr_readings for cf in CONFIGS for tp in ("mptcp", "sptcp") for a in ABRS]
    out["qoe_abr"] = Table("qoe-abr", "QoE per ABR policy (defaults of docs/models/dash.md)",
                           _IDX + [Column("abr", "ABR policy"), Column("startup_ms", "start-up to playback", "ms", "ours"),
                                   Column("stalls", "stalls", "", "ours"), Column("stall_s", "stall time", "s", "ours"),
                                   Column("bitrate_mbps", "mean bitrate", "Mbit/s", "ours"),
                                   Column("switches", "switches", "", "ours"),
                                   Column("rate_mbps", "mean segment download rate", "Mbit/s", "ours")],
                           rows, source="ours (the paper uses VLC's rate-based adaptation only)",
                           note="BBA's reservoir and cushion are 90/240 and 126/240 of the 30-s buffer target; BOLA's "
                                "γp is 5 (docs/models/dash.md).")
    cap = {cf: TABLE1[cf]["path1"][2] / (TABLE1[cf]["path1"][2] + TABLE1[cf]["path2"][2]) * 100 for cf in CONFIGS}
    mp = [{**r, "transport": "mptcp"} for r in _main_rows(grid) if r["transport"] == "mptcp"]
    out["subflows"] = Table("subflows", "MPTCP subflows: path 1's share of the video bytes received",
                            _IDX + [Column("share", "path 1's share", "%", "ours"),
                                    Column("rate1", "path 1's share of the capacity", "%"),
                                    Column("reinjected", "reinjected", "kB", "ours")],
                            rows_of({"share": "path1_share_pct", "reinjected": "reinjected_kb"}, mp,
                                    rate1=lambda r: cap[r["config"]]),
                            source="ours (the paper gives no per-subflow numbers)")
    return out


# --- findings ------------------------------------------------------------------------------------


def findings(grid: Grid, rep_rows: list[dict[str, Any]], mptcp: bool, setting: dict[str, Any]) -> list[Finding]:
    """The paper's claims as findings, per loss reading, each with its paired statistic, under
    ``setting`` (the MPTCP controller and ABR policy of its cells)."""
    ran = (Premise("the simulator builds a DASH flow over MPTCP", mptcp, mptcp_dash_refusal() or ""),)
    main = [r for r in rep_rows if r["coupled"] in (setting["coupled"], "-") and r["abr"] == setting["abr"]]
    out: list[Finding] = []

    def add(key: str, claim: str, label: Label, rule, statistic: str, e: Estimate | None, why: str = "") -> None:
        out.append(Finding(key, claim, label, rule, statistic, e, why, ran if "MPTCP" in statistic else ()))

    def tp(rd: str, cf: str, m: str, other: str = "sptcp") -> Estimate | None:
        return core.paired_where(main, {"reading": rd, "config": cf}, "transport", "mptcp", other, m)

    def cfg(rd: str, a: str, b: str, m: str) -> Estimate | None:
        return core.paired_where(main, {"reading": rd, "transport": "mptcp"}, "config", a, b, m)

    for rd in (r for r in grid.readings if r != "control"):
        tag = READING_LABEL[rd]
        for cf in CONFIGS:
            add(f"mptcp-faster-{cf}-{rd}", f"{tag}, {cf}: MPTCP downloads segments faster than SPTCP (Sec. 5.3, Fig. 6)",
                Label.SUBSTANTIVE, above(), "paired mean segment download rate MPTCP − SPTCP, Mbit/s",
                tp(rd, cf, "rate_mbps"))
        add(f"balanced-faster-{rd}", f"{tag}: MPTCP downloads faster over balanced than over unbalanced paths (Sec. 5.3)",
            Label.SUBSTANTIVE, above(), "paired mean segment download rate balanced − unbalanced (MPTCP), Mbit/s",
            cfg(rd, "balanced", "unbalanced", "rate_mbps"))
        for cf in CONFIGS:
            size = PAPER_FIG5[("mptcp", cf)] - PAPER_FIG5[("sptcp", cf)]
            add(f"mptcp-more-retransmissions-{cf}-{rd}", f"{tag}, {cf}: MPTCP retransmits more per second than SPTCP "
                "(Sec. 5.2, Fig. 5)", Label.SUBSTANTIVE, above(size=size), "paired retransmissions/s MPTCP − SPTCP",
                tp(rd, cf, "retx_per_s"))
        size = PAPER_FIG4_MS[("mptcp", "unbalanced")] - PAPER_FIG4_MS[("mptcp", "balanced")]
        add(f"unbalanced-slower-startup-{rd}", f"{tag}: MPTCP starts playback later over unbalanced than over balanced "
            "paths (Sec. 5.1, Fig. 4)", Label.SUBSTANTIVE, above(size=size),
            "paired start-up to playback unbalanced − balanced (MPTCP), ms", cfg(rd, "unbalanced", "balanced", "startup_ms"))
        # Fig. 5: SPTCP retransmits about one packet per second. "About": within a factor of 2,
        # tested on log2 of the rate (the mean over both configurations' runs).
        sp = core.select(main, reading=rd, transport="sptcp")
        xs = [math.log2(r["retx_per_s"]) if r["retx_per_s"] > 0 else -10.0 for r in sp]
        ind = not any(core.identical(core.select(sp, config=cf)) for cf in CONFIGS)
        add(f"fig5-sptcp-rate-{rd}", f"{tag}: SPTCP retransmits about one segment per second, as in Fig. 5 (within a "
            "factor of 2)", Label.SUBSTANTIVE, within(1.0), "log2(SPTCP retransmissions/s ÷ 1), both configurations",
            replace(mean_ci(xs, independent=ind), reps=len(xs) // len(CONFIGS)) if xs else None,
            "decides which reading of Table 1's loss rates is consistent with Fig. 5")
    if "control" in grid.readings:
        for cf in CONFIGS:
            add(f"control-mptcp-beats-best-path-{cf}", f"no loss, {cf}: MPTCP over both disjoint paths downloads faster "
                "than single-path TCP over the better of them (RFC 6356's goal)", Label.TRIVIAL, above(),
                "paired mean segment download rate MPTCP − SPTCP on path 1, Mbit/s", tp("control", cf, "rate_mbps", "sptcp_best"),
                "true of any multipath transport that uses a second, idle path")
    return out


def consistent_readings(found: list[Finding]) -> list[str]:
    """The loss readings whose SPTCP retransmission rate is consistent with Fig. 5."""
    return [f.key.removeprefix("fig5-sptcp-rate-") for f in found
            if f.key.startswith("fig5-sptcp-rate-") and f.verdict is Verdict.HOLDS]


# --- figures and the reading ---------------------------------------------------------------------


def _segments_fig(series: dict[tuple[str, str, str], list[tuple[int, float, float]]], readings: tuple[str, ...]):
    """Figs. 6/7 (ours): each segment's download rate against its index, repetition 0 of each
    cell, one panel per loss reading."""

    def draw(path: Path) -> None:
        fig, axes = pyplot().subplots(1, len(readings), figsize=(4.0 * len(readings), 3.8), sharey=True, squeeze=False)
        style = {"mptcp": "-", "sptcp": "--", "sptcp_best": ":"}
        for ax, rd in zip(axes[0], readings):
            for (r, cf, tp), pts in series.items():
                if r == rd and pts:
                    ax.plot([p[0] for p in pts], [p[2] for p in pts], style[tp], marker=".", ms=3,
                            color="C0" if cf == "balanced" else "C1", label=f"{cf[:3]}. {TRANSPORT_LABEL[tp]}")
            ax.set_title(READING_LABEL[rd], fontsize=9)
            ax.set_xlabel("segment")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
        axes[0][0].set_ylabel("download rate (Mbit/s)")
        fig.suptitle("Figs. 6/7 (ours): per-segment download rate, repetition 0 of each cell", fontsize=9)
        save(fig, path)

    return draw


def figures(grid: Grid, tabs: dict[str, Table], exp: core.Experiment, runs: Path, setting: dict[str, Any]) -> list[Figure]:
    tick = lambda r: f"{r['reading']}\n{r['config'][:3]}. {r['transport']}"  # noqa: E731
    series = {}
    for p in exp.cells:
        d = core.run_dir(exp, runs, _cell_id(p), 0)
        if p["abr"] == setting["abr"] and (d / "probe_app.parquet").is_file():
            series[(p["reading"], p["config"], p["transport"])] = segment_rates(d)
    return [
        Figure("fig4", "Fig. 4 (ours): start-up delay, both definitions", "fig4_startup.png",
               bars(tabs["fig4"].rows, [("first_byte", "to first byte"), ("playback", "to playback")], "paper",
                    "start-up delay (ms)", "Fig. 4 (ours): start-up delay; × the paper's caption means", tick, log=True),
               "paper Fig. 4"),
        Figure("fig5", "Fig. 5 (ours): retransmissions per second", "fig5_retransmissions.png",
               bars(tabs["fig5"].rows, [("retx", "ours")], "paper", "retransmitted segments / s",
                    "Fig. 5 (ours): retransmissions per second; × the paper's", tick), "paper Fig. 5"),
        Figure("fig6", "Figs. 6/7 (ours): per-segment download rate, one run of each cell", "fig6_segment_rates.png",
               _segments_fig(series, grid.readings), "paper Figs. 6/7"),
    ]


def reading(grid: Grid, tabs: dict[str, Table], found: list[Finding], mptcp: bool) -> str:
    """The reading: each table's numbers beside the paper's (all from the tables), the loss
    reading consistent with Fig. 5, then the findings with their intervals."""
    md = []
    mp, sp = TRANSPORT_LABEL["mptcp"], TRANSPORT_LABEL["sptcp"]
    for rd in grid.readings:
        lab = READING_LABEL[rd]
        parts = []
        for cf in CONFIGS:
            r4, r5, r6 = ({r["transport"]: r for r in tabs[t].rows if r["reading"] == lab and r["config"] == cf}
                          for t in ("fig4", "fig5", "fig6"))
            parts.append(f"{cf}: segment download rate MPTCP {_m(r6[mp]['rate'])} vs SPTCP {_m(r6[sp]['rate'])} Mbit/s; "
                         f"retransmissions/s MPTCP {_m(r5[mp]['retx'])} (paper {_m(r5[mp]['paper'])}) vs SPTCP "
                         f"{_m(r5[sp]['retx'])} (paper {_m(r5[sp]['paper'])}); start-up to playback MPTCP "
                         f"{_m(r4[mp]['playback'])} vs SPTCP {_m(r4[sp]['playback'])} ms (to first byte "
                         f"{_m(r4[mp]['first_byte'])} vs {_m(r4[sp]['first_byte'])} ms; paper {_m(r4[mp]['paper'])} "
                         f"vs {_m(r4[sp]['paper'])} ms)")
            if rd == "control":
                parts[-1] += f"; {TRANSPORT_LABEL['sptcp_best']} {_m(r6[TRANSPORT_LABEL['sptcp_best']]['rate'])} Mbit/s"
        md.append(f"- **{lab}**: " + "; ".join(parts) + ".")
    stalled = [r for r in tabs["qoe"].rows if isinstance(r["stalls"], Estimate) and r["stalls"].mean > 0]
    md.append("- **Stalls**: " + ("; ".join(f"{r['reading']}, {r['config']}, {r['transport']}: {_m(r['stalls'])} stalls, "
                                            f"{_m(r['stall_s'])} s" for r in stalled) if stalled else "no session stalled")
              + ".")
    for r in tabs["qoe_abr"].rows:
        if isinstance(r["bitrate_mbps"], Estimate):
            md.append(f"- **ABR {r['abr']}**, {r['reading']}, {r['config']}, {r['transport']}: mean bitrate "
                      f"{_m(r['bitrate_mbps'])} Mbit/s, {_m(r['switches'])} switches, {_m(r['stalls'])} stalls, "
                      f"start-up {_m(r['startup_ms'])} ms.")
    for r in tabs["subflows"].rows:
        if isinstance(r["share"], Estimate):
            md.append(f"- **Subflows**, {r['reading']}, {r['config']}: path 1 carried {_m(r['share'])} % of the video "
                      f"bytes (its share of the capacity {_m(r['rate1'])} %); reinjected {interval_str(r['reinjected'])} kB.")
    ok = consistent_readings(found)
    md.append("- **Which loss reading fits Fig. 5** (SPTCP about one retransmission per second): "
              + (", ".join(READING_LABEL[x] for x in ok) if ok else "none of the readings run") + ".")
    if not mptcp:
        md.append("- **MPTCP**: not run (see the setup); every finding that compares it is untestable.")
    md += ["", "The paper's claims, per loss reading (95 % intervals over paired repetitions):", "",
           findings_md(found).rstrip()]
    return "\n".join(md) + "\n"


def _setup(grid: Grid, quick: bool, refusal: str | None, setting: dict[str, Any]) -> str:
    lines = [
        f"{'Quick' if quick else 'Full'} run: {grid.reps} repetition(s) per cell (the paper: {PAPER_REPS}), the {clip_s():g}-s "
        f"HEVC ladder played {'once' if grid.loops == 1 else f'{grid.loops} times'} ({grid.loops * clip_s():g} s of media, "
        f"6-s segments), runs of {grid.duration_s:g} s; the same seed for repetition r of every cell, so differences are "
        "paired.",
        "Testbed (scenarios/mptcp/README.md): two disjoint paths C–R1–S and C–R2–S, each shaped on its access link "
        f"(rate, latency read as the RTT the path adds, half each way, Bernoulli loss {setting['loss_direction']}, "
        f"100-packet drop-tail queues); DASH player with {setting['abr']} ABR, 30-s buffer target; TCP with Linux's "
        "profile (CUBIC).",
        f"Loss readings run: {', '.join(READING_LABEL[r] for r in grid.readings)}. The literal Table 1 loss (10–20 %) "
        "contradicts Fig. 5's one retransmission per second for SPTCP, so the table is also run with every loss "
        "÷ 10 and ÷ 100; the control has no loss and adds single-path TCP over MPTCP's path 1 (the better path).",
        f"MPTCP: a subflow per path, {setting['scheduler']} scheduler, {setting['coupled']} coupling, reinjection and "
        "penalisation on. Every choice above that the paper leaves open is declared below with its alternatives.",
    ]
    if refusal is not None:
        lines.append(f"**The MPTCP cells did not run: this simulator refuses a DASH flow over MPTCP ({refusal}).** "
                     "Only the single-path cells ran; every finding that needs MPTCP is untestable.")
    return "\n\n".join(lines)


# --- the reproduction ----------------------------------------------------------------------------


def plan(quick: bool, reps: int | None = None) -> Grid:
    grid = QUICK if quick else FULL
    if reps is not None:
        if reps < 1:
            raise QoelabError(f"--reps {reps}: must be at least 1")
        grid = replace(grid, reps=reps)
    return grid


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[[int, int], None] | None = None,
        executor: Any = None, reps: int | None = None, sensitivity: bool = False,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) the experiment into ``out`` (and, with ``sensitivity``, each declared
    alternative into ``out/sensitivity/``) and writes the report there. Returns a summary
    (``{"shard": ...}`` for one task of a job array)."""
    grid = plan(quick, reps)
    refusal = mptcp_dash_refusal()
    mptcp = refusal is None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log(f"qoelab reproduce mptcp{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing {out} "
        f"({grid.reps} repetitions)" + ("" if mptcp else "; the MPTCP cells cannot run on this simulator"))
    res = runner.reproduce(
        out, CHOICES, lambda s: {"mptcp": experiment(grid, mptcp, s)},
        lambda rs: findings(grid, rs.rows_of(), mptcp, rs.setting), sensitivity=sensitivity, jobs=jobs,
        progress=progress, executor=executor, log=log,
        variant_experiments=lambda s: {"mptcp": experiment(grid, mptcp, s, abr_table=False)}, default_on_variant_grid=False)
    if res is None:
        return {"shard": executor.shard}
    setting, rep_rows, found = res.main.setting, res.main.rows_of(), res.findings
    with runner.stage(out, "report"):
        tabs = tables(grid, rep_rows, mptcp, setting)
        names = {"table1": "table1.csv", "fig4": "fig4_startup.csv", "fig5": "fig5_retransmissions.csv",
                 "fig6": "fig6_download.csv", "qoe": "qoe.csv", "qoe_abr": "qoe_abr.csv", "subflows": "subflows.csv"}
        for k, t in tabs.items():
            t.write_csv(out, names[k])
        write_repetitions(out, rep_rows, TREATMENTS)
        figs = [f.write(out) for f in figures(grid, tabs, res.main.experiments["mptcp"], res.main.folders["mptcp"], setting)]
    ok = consistent_readings(found)
    summary = (f"HEVC DASH over two disjoint paths, MPTCP against single-path TCP, Table 1 under {len(grid.readings)} loss "
               f"readings: {summary_line(found)}; the loss reading consistent with Fig. 5: "
               f"{', '.join(READING_LABEL[x] for x in ok) or 'none'}."
               + ("" if mptcp else " The MPTCP cells did not run on this simulator (see the setup)."))
    publish(out, paper="mptcp", quick=quick, title="MPTCP vs single-path TCP for UHD HEVC DASH (Wejin & Amca)",
            tables=list(tabs.values()), findings=found, source="paper Sec. 5", figures=figs,
            reading=reading(grid, tabs, found, mptcp), summary=summary, setup=_setup(grid, quick, refusal, setting),
            cost=runner.cost(out, res.sets), seeds=sorted({r["seed"] for r in rep_rows}), choices=CHOICES,
            versions=runner.versions(res.sets),
            command=f"qoelab reproduce mptcp{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}")
    log(f"mptcp: {summary_line(found)}; wrote {out}/report.md")
    return {"findings": found, "runs": len(rep_rows), "mptcp": mptcp}


def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (for ``reproduce all``'s total)."""
    grid, mptcp = plan(quick), mptcp_dash_refusal() is None
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: {"mptcp": experiment(grid, mptcp, s)},
                                   sensitivity=sensitivity,
                                   variant_experiments=lambda s: {"mptcp": experiment(grid, mptcp, s, abr_table=False)},
                                   default_on_variant_grid=False))


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce mptcp`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "mptcp", "Wejin & Amca: MPTCP vs single-path TCP for HEVC DASH (Table 1, Figs. 4-7)", run,
        quick_help="3 loss readings, 2 repetitions, 240-s runs (CI)",
        reps_help="repetitions per cell (default 2 with --quick, else 5 as in the paper)")
