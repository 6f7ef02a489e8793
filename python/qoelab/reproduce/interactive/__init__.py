"""``qoelab reproduce interactive``: Khan, Zaghal & Gu, *Symbiotic Streaming of Elastic Traffic on
Interactive Transport* (shared/papers/tcp-interactive-symbiotic-transcoder.txt), §3, Table 1 and
Figs. 4–7.

A transcoder T re-sends a 2-Mbit/s MPEG-2 stream (704×480, 30 fps, 60 s) to a client C over TCP
(FreeBSD profile, NewReno) through a router R; a congestion injector withdraws the route R–C
for 3 s, 3, 6 or 9 times within the video. In *interactive* mode the transcoder hears each
retransmission timeout and cuts its target rate by the retraction ratio A (0.35, 0.55, 0.75),
then recovers additively; in *classic* mode it sends 2 Mbit/s and TCP buffers the backlog. The
testbed is ``scenarios/interactive/transcoder.toml`` (README, ``docs/models/transcoder.md``);
:func:`build_scenario` sets one cell on it. Its free parameters (the bottleneck's rate, the
recovery step, the RTO floor, the receiver's deadline) are :data:`CHOICES`; ``--sensitivity``
runs every finding under each alternative.

Cells (:func:`cells`): ``mode`` (``A=0.35``, ``A=0.55``, ``A=0.75``, ``classic``) × ``outages``
(3, 6, 9). ``mode`` is a treatment: repetition ``r`` of a given outage count has one seed, so
one outage schedule, in every mode, and every comparison between modes is paired. The outages
fall within the video: ``count`` bursts of 3 s, each after a gap uniform in [g/4, g] counted
from 2 s on, g = (58 s − 2 s) / count − 3 s, so every burst is over by 58 s.

The receiver (:mod:`~qoelab.reproduce.interactive.frames`): frame ``f`` (decode order) is due at
``start + f/30 s + D``, ``D`` the discard threshold (the ``deadline`` choice). A late frame is
still decoded (TCP delivers every byte, in order) but its display slot shows the last picture
shown (frozen); the player then re-synchronises on it and resumes at the live position (the
``receiver`` choice: ``resync``; ``rebuffer`` waits for it instead, ``freeze`` never
re-synchronises; :func:`~qoelab.reproduce.interactive.frames.play`).

Metrics per run (:func:`~qoelab.reproduce.interactive.frames.run_metrics`): the average frame
delay, the total transfer time (Fig. 7), timeouts and timeouts per burst (Fig. 4), the mean rate
written, the SNR (PSNR) Y/U/V *as sent*, the share of frames late at each threshold, and the SNR
*as shown* by the deadline receiver, frozen slots measured on real decoded pictures (a post-run
stage, :func:`~qoelab.reproduce.interactive.frames.add_shown`).

Outputs (``docs/report-format.md``): ``report.json``, ``report.md``, a CSV per table
(``table1.csv``, ``table1_outages.csv``, ``fig4_timeouts.csv``, ``fig7_transfer.csv``,
``thresholds.csv``), ``repetitions.csv`` (one row per run), ``sensitivity.csv`` (with
``--sensitivity``) and the figures ``fig4_backoff.png``, ``fig5_arrival.png``,
``fig6_quality_delay.png``, ``fig7_transfer.png``.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.experiment import Choice, Estimate, Finding, Label, Premise, above, below, mean_ci, summary_line, within
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.choices import defaults
from qoelab.experiment.figures import bars
from qoelab.experiment.tables import Column, Figure, PaperValues, Table, publish, write_repetitions
from qoelab.reproduce.interactive.figures import fig4, fig5, fig6
from qoelab.reproduce.interactive.frames import (FPS, LADDER, MAIN_D, RECEIVERS, THRESHOLDS, Run,
                                                  add_shown, frozen_pairs, ladder, load_run, measured, play,
                                                  run_metrics, slot_plan, timeouts_per_burst)
from qoelab.reproduce.interactive.paper import (ALL, BACKOFF, BURST_S, FIRST_S, LAST_END_S, MAIN_OUTAGES, MODES,
                                                 OUTAGE_COUNTS, PAPER_FIG4, PAPER_TABLE1, TREATMENTS)
from qoelab.reproduce.interactive.reading import reading, setup_md

__all__ = ["CHOICES", "FPS", "LADDER", "MODES", "Run", "add_shown", "build_scenario", "cells", "findings", "ladder",
           "load_run", "play", "RECEIVERS", "run", "run_metrics", "slot_plan", "tables", "timeouts_per_burst"]

BASE = "scenarios/interactive/transcoder.toml"
FOLDER = "scenarios/interactive"

# --- what the paper leaves open ------------------------------------------------------------------

CHOICES = (
    Choice("bottleneck", 2.2, (3.0,), "R–C in Mbit/s: 10 % above the top rung (2 Mbit/s); the paper does not state its "
                                      "link rates"),
    Choice("recovery", "100kbps", ("25kbps", "200kbps"),
           "the target's additive step per GOP once the path recovered: ours (the paper gives none), 200 kbit/s per "
           "second at 0.5-s GOPs"),
    Choice("rto_floor", "1s", ("200ms",),
           "RFC 6298's 1-s minimum RTO, the paper's era (FreeBSD); chosen so that a 3-s burst gives Fig. 4's two "
           "timeouts (calibrated); Linux's floor is 200 ms"),
    Choice("deadline", MAIN_D, tuple(d for d in THRESHOLDS if d != MAIN_D),
           "the receiver's discard threshold D in s, which the paper leaves unstated: ours", runs=False),
    Choice("ladder_floor", "0.5Mbps", (), "the bundled ladder's lowest rung; below it the transcoder cannot cut",
           {"0.75Mbps": "the transcoder has no floor key: a ladder without its lowest rung (issue 38)"}),
    Choice("backoff_rule", "lazy", ("per_timeout",),
           "one cut per GOP, later timeouts of the same GOP counted only (our reading of §2's lazy binary back-off); "
           "per_timeout: a cut at every timeout. With the 1-s RTO floor a burst's timeouts are at least 1 s apart, "
           "longer than a 0.5-s GOP, so the two rules cut alike; they part only with a lower floor"),
    Choice("receiver", "resync", ("rebuffer", "freeze"),
           "a live player drops a late frame and resumes at the live position, re-synchronising its playout on the "
           "newest arrival (the paper's client plays a live, interactive stream; it states no rule): ours; "
           "`rebuffer` stalls until the late frame arrives; `freeze` never re-synchronises (before issue 38)",
           runs=False),
)


@dataclass(frozen=True)
class Grid:
    """Repetitions (seeds) per cell and the run length (long enough for a classic backlog to
    drain: the last frame of 9 outages arrives by about 95 s)."""

    reps: int
    duration_s: float


FULL = Grid(10, 150.0)
QUICK = Grid(3, 150.0)


# --- the scenario ----------------------------------------------------------------------------------


def gap_range(count: int) -> tuple[float, float]:
    """The range (s) of the gap before each of ``count`` bursts (module doc): every burst ends by
    58 s."""
    if count < 1:
        raise ValueError(f"outages {count}: must be at least 1")
    g = (LAST_END_S - FIRST_S) / count - BURST_S
    return (g / 4, g)


def build_scenario(mode: str, outages: int, rate: float = 2.2, *, duration_s: float = FULL.duration_s,
                   recovery: str = "100kbps", rto_floor: str = "1s", backoff_rule: str = "lazy") -> dict:
    """One cell as plain data: the bundled testbed with the transcoder in ``mode`` (its additive
    ``recovery`` step), ``outages`` 3-s bursts within the video, an R–C bottleneck of ``rate``
    Mbit/s, TCP's minimum RTO ``rto_floor`` and the transcoder's ``backoff_rule``."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    if outages not in OUTAGE_COUNTS:
        raise ValueError(f"outages {outages!r}: expected one of {OUTAGE_COUNTS}")
    d = tomllib.loads((paths.root() / BASE).read_text())
    d["name"] = f"interactive-{mode}-{outages}x-{rate:g}M"
    d["description"] = f"TCP Interactive transcoder, {mode}, {outages} outages of 3 s, R–C {rate:g} Mbit/s"
    d["sim"] = {"duration": f"{duration_s:g}s", "seed": 1}
    (rc,) = [l for l in d["links"] if (l["a"], l["b"]) == ("R", "C")]
    rc["rate"] = f"{rate:g}Mbps"
    (f,) = d["flows"]
    f["app"]["interactive"] = mode != "classic"
    f["app"]["backoff"] = BACKOFF.get(mode, 0.55)
    f["app"]["recovery"] = recovery
    if backoff_rule != "lazy":  # the default adds no key, so its cells are the files they were
        f["app"]["backoff_rule"] = backoff_rule
    f["transport"]["min_rto"] = rto_floor
    lo, hi = gap_range(outages)
    (o,) = d["outages"]
    o.update({"count": outages, "duration": f"{BURST_S:g}s", "min_gap": f"{lo:.6g}s", "max_gap": f"{hi:.6g}s",
              "after": f"{FIRST_S:g}s"})
    d["output"] = {"probes": ["app", "rto"]}
    return d


def cells() -> list[dict[str, Any]]:
    """Every mode × outage count."""
    return [{"mode": m, "outages": n} for n in OUTAGE_COUNTS for m in MODES]


def _cell_id(p: dict[str, Any]) -> str:
    return f"{p['mode'].replace('=', '')}-{p['outages']}x"


def _build(p: dict[str, Any], grid: Grid, setting: dict[str, Any]):
    from qoelab.scenario import Scenario

    d = build_scenario(p["mode"], p["outages"], setting["bottleneck"], duration_s=grid.duration_s,
                       recovery=setting["recovery"], rto_floor=setting["rto_floor"],
                       backoff_rule=setting["backoff_rule"])
    return Scenario.from_dict(d, f"{BASE} ({_cell_id(p)})", base_dir=paths.root() / FOLDER)


def experiment(grid: Grid, setting: dict[str, Any] | None = None) -> core.Experiment:
    return core.Experiment("interactive", cells(), partial(_build, grid=grid, setting=setting or defaults(CHOICES)),
                           run_metrics, paired=("mode",), reps=grid.reps, cell_id=_cell_id)


# --- tables ------------------------------------------------------------------------------------------


def tables(rep_rows: list[dict[str, Any]], setting: dict[str, Any]) -> dict[str, Table]:
    """Table 1 (and for each outage count), Fig. 4's timeouts, Fig. 7's transfer times and the
    receiver's discard threshold; ours beside the paper's."""
    agg = {tuple(r[k] for k in TREATMENTS): r for r in core.aggregate(rep_rows, TREATMENTS, ALL)}
    rate, d_main = setting["bottleneck"], setting["deadline"]

    def est(mode: str, m: str, outages: int = MAIN_OUTAGES) -> Estimate | None:
        row = agg.get((mode, outages))
        return None if row is None else row[m]

    out: dict[str, Table] = {}
    pt = PaperValues("paper Table 1", ("mode",), {(k,): v[0] for k, v in PAPER_TABLE1.items()})
    rows = []
    for mode in MODES:
        r: dict[str, Any] = {"mode": mode if mode != "classic" else "classic (iTCP off)",
                             "delay": est(mode, "delay_s"), "paper_delay": PAPER_TABLE1[mode][0]}
        for k, c in enumerate("yuv"):
            r[f"snr_{c}"] = est(mode, f"snr_{c}")
            r[f"paper_{c}"] = PAPER_TABLE1[mode][1 + k]
        for c in "yuv":
            r[f"vsnr_{c}"] = est(mode, f"vsnr_{c}")
        for c in "yuv":
            r[f"shown_{c}"] = est(mode, f"shown_{c}")
        r["late"] = est(mode, f"late_pct_{d_main:g}")
        rows.append(r)
    cols = [Column("mode", "mode"), Column("delay", "average delay", "s", "ours"),
            pt.column("paper_delay", "paper: average delay", "unit unstated")]
    for c in "yuv":
        cols += [Column(f"snr_{c}", f"SNR-{c.upper()} as sent", "dB", "ours"),
                 Column(f"paper_{c}", f"paper: SNR-{c.upper()}", "dB", "paper")]
    cols += [Column(f"vsnr_{c}", f"var.-normalised SNR-{c.upper()} as sent", "dB", "ours") for c in "yuv"]
    cols += [Column(f"shown_{c}", f"SNR-{c.upper()} as shown", "dB", "ours") for c in "yuv"]
    cols.append(Column("late", f"frames late (D = {d_main:g} s)", "%", "ours"))
    out["table1"] = Table("table1", f"Table 1: average delay vs picture quality ({MAIN_OUTAGES} outages, "
                          f"{rate:g} Mbit/s)", cols, rows, source="paper Table 1",
                          note="Delay: delivery − the ideal line start + f/30 s, mean over frames. SNR as sent: the "
                               "ladder's PSNR of each frame sent (real decodes of each rung); var.-normalised: 10 log10(variance of "
                               "the source picture / MSE), the SNR MPEG-2's reference encoder prints (mpeg2encode "
                               "stats.c); as shown: the deadline "
                               f"receiver's screen at D = {d_main:g} s, frozen slots measured on decoded pictures. The "
                               "paper states neither the burst count of Table 1 nor its units.")

    def behind(mode: str, n: int) -> str:
        xs = [r[f"behind_pct_{d_main:g}"] for r in core.select(rep_rows, mode=mode, outages=n)]
        return f"{sum(x >= 100.0 for x in xs)} of {len(xs)}"

    rows = [{"outages": n, "mode": mode, **{m: est(mode, m, n) for m in
                                             ("delay_s", "snr_y", "shown_y", f"late_pct_{d_main:g}", "rate_mbps")},
             "behind": behind(mode, n)}
            for n in OUTAGE_COUNTS for mode in MODES]
    out["table1_outages"] = Table("table1-outages", "Table 1 for 3, 6 and 9 outages", [
        Column("outages", "outages"), Column("mode", "mode"), Column("delay_s", "average delay", "s", "ours"),
        Column("snr_y", "SNR-Y as sent", "dB", "ours"), Column("shown_y", "SNR-Y as shown", "dB", "ours"),
        Column(f"late_pct_{d_main:g}", f"frames late (D = {d_main:g} s)", "%", "ours"),
        Column("behind", f"runs never back on schedule after their first late frame (D = {d_main:g} s)", "",
               "ours"),
        Column("rate_mbps", "mean rate sent", "Mbit/s", "ours")], rows, source="ours (the paper gives one Table 1)")

    rows = [{"outages": n, "mode": mode, "timeouts": est(mode, "timeouts", n),
             "per_burst": est(mode, "timeouts_per_burst", n),
             "paper": PAPER_FIG4[0] / PAPER_FIG4[1] if (n, mode) == (6, "A=0.55") else None}
            for n in OUTAGE_COUNTS for mode in MODES]
    out["fig4"] = Table("fig4-timeouts", "Fig. 4: retransmission timeouts, in all and per 3-s burst", [
        Column("outages", "outages"), Column("mode", "mode"), Column("timeouts", "timeouts", "", "ours"),
        Column("per_burst", "timeouts per burst", "", "ours"), Column("paper", "paper: per burst", "", "paper")],
        rows, source="paper §3.2 (12 timeouts in 6 bursts)",
        note="A timeout counts to the burst before it (from its start to the next burst's start).")

    rows = []
    for n in OUTAGE_COUNTS:
        for mode in MODES:
            rows.append({"outages": n, "mode": mode, "transfer": est(mode, "transfer_s", n),
                         "undelivered": est(mode, "undelivered", n)})
    out["fig7"] = Table("fig7-transfer", "Fig. 7: total transfer time (first frame written → last frame delivered)", [
        Column("outages", "outages"), Column("mode", "mode"), Column("transfer", "total transfer time", "s", "ours"),
        Column("undelivered", "frames undelivered at the end", "", "ours")], rows,
        source="paper Fig. 7 (bars, no values in the text)",
        note="The paper's middle bar (iTCP on, symbiosis off) equals classic here by construction: a notice is a "
             "callback at the simulated instant and costs no time (docs/models/transcoder.md).")

    rows = []
    for d in THRESHOLDS:
        for mode in MODES:
            rows.append({"threshold": d, "mode": mode, "late": est(mode, f"late_pct_{d:g}"),
                         "frozen": est(mode, f"frozen_pct_{d:g}"), "stall": est(mode, f"stall_s_{d:g}"),
                         "shown_y": est(mode, f"shown_y_{d:g}")})
    out["thresholds"] = Table("thresholds", f"Sensitivity: the receiver's discard threshold ({MAIN_OUTAGES} outages, "
                              f"{rate:g} Mbit/s, player `{setting['receiver']}`)", [
        Column("threshold", "discard threshold D", "s"), Column("mode", "mode"),
        Column("late", "frames late for the first schedule", "%", "ours"),
        Column("frozen", "display slots frozen", "%", "ours"), Column("stall", "stalled (offset growth)", "s", "ours"),
        Column("shown_y", "SNR-Y as shown", "dB", "ours")], rows,
        source="ours (the paper does not state its threshold)",
        note="Late: frames arriving after start + f/30 s + D, the schedule before any re-synchronisation. Frozen: "
             "slots showing an earlier picture under the player; stalled: how far its playout fell behind that "
             "schedule by re-synchronising (resync) or waiting (rebuffer); the SNR as shown counts every frozen slot "
             "as the picture on screen against the slot's source.")

    return out




# --- findings ------------------------------------------------------------------------------------


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else float("nan")


def findings(rep_rows: list[dict[str, Any]], setting: dict[str, Any]) -> list[Finding]:
    """The paper's claims under ``setting`` (its deadline picks the receiver's threshold), each
    with its paired statistic and, where Table 1 gives one, the paper's size."""
    d = setting["deadline"]
    out: list[Finding] = []

    def pair(a: str, b: str, m: str, outages: int = MAIN_OUTAGES, f: Callable[[float], float] | None = None):
        rs = [{**r, m: f(r[m])} if f else r for r in core.select(rep_rows, outages=outages)]
        return core.paired_where(rs, {}, "mode", a, b, m)

    def t1(a: str, k: int) -> float:
        return PAPER_TABLE1[a][k]

    for a in ("A=0.35", "A=0.55", "A=0.75"):
        out.append(Finding(f"delay-several-fold-{a[2:]}", f"{a}: interactive mode cuts the average frame delay "
                           "several-fold (Table 1: 2.5–3.1×), more than 2× here", Label.SUBSTANTIVE,
                           above(1.0, size=math.log2(t1("classic", 0) / t1(a, 0))),
                           f"paired log2(delay classic ÷ delay {a})", pair("classic", a, "delay_s", f=_log2)))
    for a in ("A=0.35", "A=0.55", "A=0.75"):
        out.append(Finding(f"snr-cost-{a[2:]}", f"{a}: at the cost of SNR: classic's frames as sent have the higher "
                           "SNR-Y (Table 1: +3.7 to +9.7 dB)", Label.BY_CONSTRUCTION, above(size=t1("classic", 1) - t1(a, 1)),
                           f"paired SNR-Y as sent classic − {a}, dB", pair("classic", a, "snr_y"),
                           "a lower rung has a lower PSNR in every plane (tests/video/test_mpeg2_ladder.py), and only "
                           "interactive mode sends lower rungs"))
    floor = ("which rungs a cut reaches is set by the ladder's floor and the lazy back-off rule, two of our choices that "
             "cannot be varied yet")
    for a, b in (("A=0.75", "A=0.35"), ("A=0.75", "A=0.55"), ("A=0.35", "A=0.55")):
        size = t1(a, 1) - t1(b, 1)
        out.append(Finding(f"snr-{a[2:].replace('.', '')}-above-{b[2:].replace('.', '')}".replace("snr-0", "snr-a0")
                           .replace("above-0", "above-a0"),
                           f"{a.replace('=', ' = ')} keeps a higher SNR-Y than {b.replace('=', ' = ')} (Table 1: "
                           f"{size:+.2f} dB" + (", although a smaller A cuts deeper)" if a == "A=0.35" else ")"),
                           Label.SUBSTANTIVE, above(size=size), f"paired SNR-Y as sent {a} − {b}, dB",
                           pair(a, b, "snr_y"), floor))
    out.append(Finding("delay-a075-like-a035", "A = 0.75 delays frames about as much as A = 0.35 (Table 1: 10.50 "
                       "against 10.31, within 10 %)", Label.SUBSTANTIVE, within(math.log2(1.1)),
                       "paired log2(delay A=0.75 ÷ delay A=0.35), tested as within ± log2(1.1)",
                       pair("A=0.75", "A=0.35", "delay_s", f=_log2)))
    for n in OUTAGE_COUNTS:
        out.append(Finding(f"transfer-shorter-{n}", f"{n} bursts: the total transfer time is shorter with the "
                           "transcoder's response (A = 0.55) than classic (Fig. 7)", Label.BY_CONSTRUCTION, above(),
                           "paired transfer time classic − A=0.55, s", pair("classic", "A=0.55", "transfer_s", n),
                           "arithmetic: classic must send every byte of the 2-Mbit/s stream through a bottleneck barely "
                           "above it after the outages, while interactive mode sends fewer bytes"))
    rs = [r for r in core.select(rep_rows, mode="A=0.55") if r["timeouts_per_burst"] == r["timeouts_per_burst"]]
    e = mean_ci([r["timeouts_per_burst"] - 2.0 for r in rs],
                independent=not any(core.identical(core.select(rs, outages=n)) for n in OUTAGE_COUNTS)) if rs else None
    out.append(Finding("two-timeouts-per-burst", "a 3-s burst causes about two timeouts (Fig. 4: 12 in 6 bursts), "
                       "within ± 0.5", Label.CALIBRATED, within(0.5), "timeouts per burst − 2, A = 0.55, every outage count",
                       None if e is None else replace(e, reps=len(rs) // len(OUTAGE_COUNTS)),
                       "the 1-s RTO floor (the rto_floor choice) was chosen to give Fig. 4's two timeouts per burst"))
    out.append(Finding("classic-loses-frames", f"classic TCP loses many more frames to lateness than interactive "
                       f"(Fig. 6; A = 0.35, D = {d:g} s)", Label.SUBSTANTIVE, above(),
                       f"paired frames late classic − A=0.35, % (D = {d:g} s)", pair("classic", "A=0.35", f"late_pct_{d:g}")))
    for dd, label, why in ((d, Label.BY_CONSTRUCTION, "a frame written during a 3-s burst cannot arrive before the burst "
                            "ends: with D below the burst's length every burst makes frames late in any mode"),
                           (max(THRESHOLDS), Label.THRESHOLD_AFTER_DATA,
                            "this threshold was tried after the one-second receiver missed the claim")):
        xs = [r[f"late_pct_{dd:g}"] for r in core.select(rep_rows, mode="A=0.35", outages=MAIN_OUTAGES)]
        rows = core.select(rep_rows, mode="A=0.35", outages=MAIN_OUTAGES)
        out.append(Finding(f"itcp-delivers-all-{dd:g}s", f"interactive mode delivers (almost) every frame in time "
                           f"(Fig. 6: \"all the frames\"; A = 0.35, at most 5 % late at D = {dd:g} s)", label, below(5.0),
                           f"frames late with A = 0.35, % (D = {dd:g} s)",
                           mean_ci(xs, independent=not core.identical(rows)) if xs else None, why))
    out.append(Finding("shown-snr-itcp-better", f"(ours) counting frozen slots, interactive mode shows the better "
                       f"picture: SNR-Y as shown A = 0.55 above classic (D = {d:g} s)", Label.SUBSTANTIVE, above(),
                       "paired SNR-Y as shown A=0.55 − classic, dB", pair("A=0.55", "classic", f"shown_y_{d:g}"),
                       "the paper's Table 1 (classic best) cannot count classic's late frames as frozen",
                       (Premise("the receiver re-synchronises after late frames", setting["receiver"] != "freeze",
                                "ours freezes from the first late frame on, so the SNR as shown measures when the first "
                                "burst hit (issue 38)"),)))
    return out


# --- figures and the reading -------------------------------------------------------------------------


def figures(tabs: dict[str, Table], exp: core.Experiment, runs: Path) -> list[Figure]:
    runs0 = {mode: load_run(core.run_dir(exp, runs, _cell_id({"mode": mode, "outages": MAIN_OUTAGES}), 0)) for mode in MODES}
    return [
        Figure("fig4", "Fig. 4 (ours): incoming and outgoing frame sizes, target ratio and timeouts, A = 0.55",
               "fig4_backoff.png", fig4(runs0["A=0.55"]), "paper Fig. 4"),
        Figure("fig5", "Fig. 5 (ours): frame arrival time against the ideal line", "fig5_arrival.png", fig5(runs0),
               "paper Fig. 5"),
        Figure("fig6", "Fig. 6 (ours): SNR-Y against delay per frame", "fig6_quality_delay.png",
               fig6({m: runs0[m] for m in ("classic", "A=0.35")}), "paper Fig. 6"),
        Figure("fig7", "Fig. 7 (ours): total transfer time for 3, 6 and 9 bursts", "fig7_transfer.png",
               bars([{**r, "label": f"{r['outages']} bursts, {r['mode']}"} for r in tabs["fig7"].rows],
                    [("transfer", "total transfer time")], None, "total transfer time (s)",
                    "Fig. 7 (ours): total transfer time (60-s video), 95 % intervals; classic = iTCP on, symbiosis off",
                    lambda r: r["label"]), "paper Fig. 7"),
    ]


def plan(quick: bool, reps: int | None = None) -> Grid:
    """The grid of a mode, with ``--reps`` applied."""
    return core.with_reps(QUICK if quick else FULL, reps)


def _dirs(rs: runner.RunSet) -> list[Path]:
    exp = rs.experiments["interactive"]
    return [core.run_dir(exp, rs.folders["interactive"], _cell_id(p), r) for p in exp.cells for r in range(exp.reps)]


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[..., None] | None = None,
        executor: Any = None, reps: int | None = None, sensitivity: bool = False,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) the experiment into ``out`` (and, with ``sensitivity``, each declared
    alternative into ``out/sensitivity/``), measures the frozen pictures, and writes the report."""
    grid = plan(quick, reps)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log(f"qoelab reproduce interactive{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing "
        f"{out} ({grid.reps} repetitions, {len(cells())} cells)")

    def measure(rs: runner.RunSet, step: Callable[[int], None]) -> None:
        with runner.stage(out, "picture measurements"):
            measured(out, frozen_pairs(_dirs(rs)), log)
        step(1)

    def found(rs: runner.RunSet) -> list[Finding]:
        rows = rs.rows_of()
        if rows:  # the player is an analysis choice: its screen is measured for each setting
            add_shown(rows, [core.run_dir(rs.experiments["interactive"], rs.folders["interactive"], _cell_id(r), r["rep"])
                             for r in rows], out, log, receiver=rs.setting["receiver"])
        return findings(rows, rs.setting)

    res = runner.reproduce(out, CHOICES, lambda s: {"interactive": experiment(grid, s)}, found, sensitivity=sensitivity,
                           jobs=jobs, progress=progress, executor=executor, log=log, post=measure,
                           post_units=lambda rs: 1)
    if res is None:
        return {"shard": executor.shard}
    rep_rows, setting = res.main.rows_of(), res.main.setting
    with runner.stage(out, "report"):
        tabs = tables(rep_rows, setting)
        names = {"table1": "table1.csv", "table1_outages": "table1_outages.csv", "fig4": "fig4_timeouts.csv",
                 "fig7": "fig7_transfer.csv", "thresholds": "thresholds.csv"}
        for k, t in tabs.items():
            t.write_csv(out, names[k])
        write_repetitions(out, rep_rows, TREATMENTS)
        figs = [f.write(out) for f in figures(tabs, res.main.experiments["interactive"], res.main.folders["interactive"])]
    summary = (f"A transcoder that hears TCP's timeouts against one that does not, 3/6/9 route outages of 3 s, "
               f"{grid.reps} seeds: {summary_line(res.findings)}.")
    publish(out, paper="interactive", quick=quick, title="TCP Interactive and the symbiotic transcoder (Khan, Zaghal & Gu)",
            tables=list(tabs.values()), findings=res.findings, source="paper §3", figures=figs,
            reading=reading(tabs, res.findings, setting), summary=summary, setup=setup_md(grid, quick, setting),
            cost=runner.cost(out, res.sets), seeds=sorted({r["seed"] for r in rep_rows}), choices=CHOICES,
            versions=runner.versions(res.sets),
            command=provenance.command("interactive", quick=quick, sensitivity=sensitivity, reps=reps))
    log(f"interactive: {summary_line(res.findings)}; wrote {out}/report.md")
    return {"findings": res.findings, "runs": len(rep_rows)}


def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (for ``reproduce all``'s total)."""
    grid = plan(quick)
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: {"interactive": experiment(grid, s)},
                                   sensitivity=sensitivity), lambda rs: 1)


def register(subparsers):
    """Adds ``reproduce interactive`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "interactive", "Khan, Zaghal & Gu: TCP Interactive and the symbiotic transcoder (Table 1, "
        "Figs. 4-7)", run, quick_help="3 seeds per cell (CI)",
        reps_help="repetitions (seeds) per cell (default 3 with --quick, else 10)")
