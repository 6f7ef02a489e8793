"""The claims of the SQF paper's Sec. V as findings of the layer (:func:`findings`), judged from
the measured tables of one sender mode, and recomputed from a folder's committed per-repetition
tables (:func:`findings_from_folder`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qoelab.experiment import Estimate, Finding, Label, Premise, Verdict, above, below, within
from qoelab.experiment import core
from qoelab.reproduce.sqf.measure import METRICS
from qoelab.reproduce.sqf.paper import (JITTER_N, LABEL, MODES, NEGLIGIBLE, PAPER_JAIN, PAPER_SHARE,
                                        SHARE_TOLERANCE_MBPS, TABLE1_N)


#: Why each finding has its label, or what its verdict rests on: typed prose, never a number
#: (the numbers come from the tables; ``tests/reproduce/test_sqf.py`` checks there is none).
WHY = {
    "sqf_video": "SQF serves the video first only while it has fewer bytes queued than every active download; "
                 "a frame's burst can end that (the mechanism section measures how often and for how long).",
    "sqf_audio": "By construction: the audio sends one small packet per frame, so its queue is always the shortest "
                 "(served first) and never the longest (never dropped by LQD) while a download is active.",
    "fifo_audio": "A shared FIFO drops whatever arrives at a full buffer; more downloads keep it full more often.",
    "fifo_video": "As for the audio; the video's larger share of the arrivals makes TCP back off against it.",
    "fq_audio": "By construction: the audio's rate is far below its fair share, which DRR with longest-queue drop guarantees.",
    "fq_video": "By construction: the video's mean rate is above its fair share as soon as there are two or more "
                "downloads, and DRR never gives a flow more than its share when all are backlogged.",
    "fq_jitter_audio": "Round-robin: a packet waits for one quantum of every backlogged flow, and there are more of them.",
    "fq_jitter_video": "As for the audio, and the video's own backlog adds to it.",
    "sqf_jitter_audio": "Served first, the audio waits at most for the packet in service instead of the FIFO's backlog.",
    "sqf_jitter_video": "The video is served first while it keeps priority; once it loses it, it waits behind the downloads.",
    "fifo_share": "The downloads take the capacity the FIFO's losses take from the video.",
    "fq_share": "By construction: DRR gives each download its share, so their sum grows with their number.",
    "sqf_share": "If SQF protects the video the downloads get the rest of the line whatever their number; if it does "
                 "not, the video's losses hand its capacity to them.",
    "fig8_zero": "The jitter figure's premise: without added jitter SQF keeps the frame-spread video first against the downloads.",
    "fig8_delta": "Gaussian delays at the source release packets in bursts, which fill the video's queue past the downloads'.",
    "fig8_fast": "On a faster line a burst drains sooner, so it takes more jitter to build the same backlog.",
}


def _est(r: dict[str, Any] | None, m: str) -> Estimate | None:
    return None if r is None else r.get(m)


def _mean(r: dict[str, Any], m: str) -> float:
    e = r.get(m)
    return float("nan") if e is None else e.mean


def _worst(rows, q: str, m: str) -> dict[str, Any] | None:
    rs = [r for r in rows if r["discipline"] == q and r.get(m) is not None]
    return max(rs, key=lambda r: r[m].mean) if rs else None


def _rate(s: str) -> float:
    return float(s.removesuffix("Mbps"))


def findings(mode: str, reps: list[dict[str, Any]], agg: list[dict[str, Any]], jit_reps: list[dict[str, Any]],
             jit_agg: list[dict[str, Any]]) -> list[Finding]:
    """The claims of Sec. V for one sender mode (the findings' group), judged from the measured
    tables. Differences between two cells of the same repetition are paired
    (:func:`qoelab.experiment.core.paired`: they share seed, offsets and start times); where the
    paper gives a size (Table I, Fig. 6 from n = 1 to 20) the rule carries it. Fig. 8 runs on
    the ES sender only; its δ claims rest on its δ = 0 premise."""
    rows = [r for r in agg if r["mode"] == mode]
    rr = [r for r in reps if r["mode"] == mode]
    ns = sorted({r["n"] for r in rows})
    lo, hi = ns[0], ns[-1]
    second = next((n for n in ns if n > 1), hi)
    paper_range = (lo, hi) == (TABLE1_N[0], TABLE1_N[-1])
    F: list[Finding] = []

    def over_n(q: str, m: str) -> Estimate | None:
        return core.paired(rr, "n", hi, lo, m, by=("discipline",)).get((q,))

    def add(key, claim, label, rule, statistic, est, premises=()):
        sc, unit = _finding_unit(statistic)
        F.append(Finding(key, claim, label, rule, statistic, est, WHY[key], premises, group=mode, scale=sc, unit=unit))

    def share_size(q: str) -> float | None:
        return PAPER_SHARE.values[(q, hi)] - PAPER_SHARE.values[(q, lo)] if paper_range else None

    for stream, label in (("video", Label.SUBSTANTIVE), ("audio", Label.BY_CONSTRUCTION)):
        w = _worst(rows, "sqf", f"{stream}_loss")
        add(f"sqf_{stream}", f"Fig. 6, SQF: {stream} loss negligible for every n", label, below(NEGLIGIBLE),
            f"SQF {stream} loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", _est(w, f"{stream}_loss"))
    for stream, size in (("audio", 0.24 if paper_range else None), ("video", None)):
        add(f"fifo_{stream}", f"Fig. 6, FIFO: {stream} loss grows with n", Label.SUBSTANTIVE, above(size=size),
            f"FIFO {stream} loss, n = {hi} minus n = {lo}, paired", over_n("fifo", f"{stream}_loss"))
    w = _worst(rows, "drr", "audio_loss")
    add("fq_audio", "Fig. 6, FQ: audio loss low", Label.BY_CONSTRUCTION, below(NEGLIGIBLE),
        f"FQ audio loss at its worst n ({w['n'] if w else '–'}), against {NEGLIGIBLE:.1%}", _est(w, "audio_loss"))
    r2 = next((r for r in rows if r["discipline"] == "drr" and r["n"] == second), None)
    add("fq_video", "Fig. 6, FQ: video loss high as soon as n > 1", Label.BY_CONSTRUCTION, above(0.01),
        f"FQ video loss at n = {second}, against 1 %", _est(r2, "video_loss"))
    for stream in ("audio", "video"):
        add(f"fq_jitter_{stream}", f"Fig. 7, FQ: {stream} jitter increases with n", Label.SUBSTANTIVE, above(),
            f"FQ {stream} jitter (ms), n = {hi} minus n = {lo}, paired", over_n("drr", f"{stream}_jitter_ms"))
    delivered = {q: 1 - _mean(next((r for r in rows if r["discipline"] == q and r["n"] == hi), {}), "video_loss")
                 for q in ("fifo", "sqf")}
    for stream in ("audio", "video"):
        prem = () if stream == "audio" else (
            Premise(f"both disciplines deliver at least half the video's packets at n = {hi}, so its jitter is measured "
                    "on the video", min(delivered.values()) >= 0.5,
                    "delivered: " + ", ".join(f"{LABEL[q]} {100 * v:.3g} %" for q, v in delivered.items())),)
        add(f"sqf_jitter_{stream}", f"Fig. 7, SQF: beneficial for the {stream} jitter (against FIFO)", Label.SUBSTANTIVE,
            above(), f"{stream} jitter (ms), FIFO minus SQF at n = {hi}, paired",
            core.paired(rr, "discipline", "fifo", "sqf", f"{stream}_jitter_ms", by=("n",)).get((hi,)), prem)
    add("fifo_share", "Table I, FIFO: data share grows with n", Label.SUBSTANTIVE, above(size=share_size("fifo")),
        f"FIFO data share (Mbit/s), n = {hi} minus n = {lo}, paired", over_n("fifo", "data_share_mbps"))
    add("fq_share", "Table I, FQ: data share grows with n", Label.BY_CONSTRUCTION, above(size=share_size("drr")),
        f"FQ data share (Mbit/s), n = {hi} minus n = {lo}, paired", over_n("drr", "data_share_mbps"))
    add("sqf_share", "Table I, SQF: data share constant in n", Label.SUBSTANTIVE, within(SHARE_TOLERANCE_MBPS),
        f"SQF data share (Mbit/s), n = {hi} minus n = {lo}, paired, within ±{SHARE_TOLERANCE_MBPS:g} Mbit/s",
        over_n("sqf", "data_share_mbps"))
    if mode == "es" and jit_agg:
        slow = min({r["access_rate"] for r in jit_agg}, key=_rate)
        fast = max({r["access_rate"] for r in jit_agg}, key=_rate)
        deltas = sorted({r["delta_ms"] for r in jit_agg})
        d5 = next((x for x in deltas if x >= 5), deltas[-1])
        z = next((r for r in jit_agg if r["access_rate"] == slow and r["delta_ms"] == 0), None)
        add("fig8_zero", f"Fig. 8: at δ = 0 SQF protects the video (n = {JITTER_N}, {slow})", Label.SUBSTANTIVE,
            below(NEGLIGIBLE), f"video loss at δ = 0, {slow}, against {NEGLIGIBLE:.1%}", _est(z, "video_loss"))
        zero = F[-1]
        prem = (Premise("at δ = 0 SQF protects the video (the fig8_zero finding holds)", zero.verdict is Verdict.HOLDS,
                        f"fig8_zero: {zero.verdict.value}"),)
        add("fig8_delta", f"Fig. 8: δ = {d5:g} ms de-prioritises the video on {slow}", Label.SUBSTANTIVE,
            above(NEGLIGIBLE), f"video loss at δ = {d5:g} ms minus δ = 0, {slow}, paired, against {NEGLIGIBLE:.1%}",
            core.paired(jit_reps, "delta_ms", d5, 0.0, "video_loss", by=("access_rate",)).get((slow,)), prem)
        if fast != slow:
            add("fig8_fast", f"Fig. 8: the threshold is larger on {fast}", Label.SUBSTANTIVE, above(),
                f"video loss at δ = {d5:g} ms, {slow} minus {fast}, paired",
                core.paired(jit_reps, "access_rate", slow, fast, "video_loss", by=("delta_ms",)).get((d5,)), prem)
    return F


#: Why the Jain findings have their label (typed prose, no numbers).
JAIN_WHY = {
    "sqf_jain": "SQF serves whichever queue is shortest and LQD drops from the longest, so how the downloads share "
                "depends on how equal queues are settled; the mechanism section measures it under both tie rules.",
    "sqf_jain_key": "The same cells with ties broken by flow key (smallest served first, largest dropped first): equal "
                    "backlogs are frequent, and a key order gives each of them to the same download.",
}


def jain_findings(agg: list[dict[str, Any]], mech: list[dict[str, Any]]) -> list[Finding]:
    """Table I's Jain claim for SQF (the downloads share the rest of the line fairly), judged at
    the largest n of each sender mode against the paper's smallest SQF value (``size``: the
    paper's value at that n), and the same statistic in the mechanism grid's testbed cells with
    ties broken by flow key. Reported in the mechanism section, not yet part of :func:`findings`
    (nor of ``findings.csv``): folding them in changes what a committed folder's findings are
    recomputed from, so it goes with the next regeneration of the committed folders."""
    paper = PAPER_JAIN.values
    floor = min(v for (q, _), v in paper.items() if q == "sqf")
    F: list[Finding] = []
    for mode in MODES:
        rows = [r for r in agg if r["mode"] == mode and r["discipline"] == "sqf"]
        if not rows:
            continue
        r = max(rows, key=lambda r: r["n"])
        size = paper.get(("sqf", r["n"]))
        F.append(Finding("sqf_jain", f"Table I, SQF, {MODES[mode][0]}: the downloads share fairly (Jain's index at "
                         f"least {floor:g})",
                         Label.SUBSTANTIVE, above(floor, size=size),
                         f"SQF Jain's index of the downloads at n = {r['n']}", r.get("jain"), JAIN_WHY["sqf_jain"],
                         group=mode))
    for r in mech:
        if r["setup"] == "testbed" and r["ties"] == "key":
            F.append(Finding("sqf_jain_key", f"Table I, SQF, {MODES[r['mode']][0]}: the downloads share fairly "
                             f"(Jain's index at least {floor:g}), ties broken by flow key", Label.SUBSTANTIVE, above(floor, size=paper.get(("sqf", r["n"]))),
                             f"SQF Jain's index of the downloads at n = {r['n']}, key ties (mechanism grid)",
                             r.get("dl_jain"), JAIN_WHY["sqf_jain_key"], group=r["mode"]))
    return F


#: Columns of the per-repetition CSVs that are not floats.
_INT_COLUMNS = ("n", "rep", "seed", "streams")
_STR_COLUMNS = ("mode", "discipline", "access_rate", "output", "source")


def _read_reps(path: Path) -> list[dict[str, Any]]:
    """A per-repetition CSV as written by :meth:`Table.write_csv` (floats by ``repr``, so they
    read back exactly)."""
    import csv

    def typed(k: str, v: str) -> Any:
        return v if k in _STR_COLUMNS else int(v) if k in _INT_COLUMNS else float(v) if v else float("nan")

    with path.open(newline="") as f:
        return [{k: typed(k, v) for k, v in r.items()} for r in csv.DictReader(f)]


def findings_from_folder(folder: Path) -> dict[str, list[Finding]]:
    """The findings of a report folder, recomputed from its per-repetition tables
    (``testbed_reps.csv``, ``fig8_jitter_reps.csv``) by the code that wrote them, so a committed
    folder whose runs are not kept can be checked against the findings it states."""
    tb_reps = _read_reps(folder / "testbed_reps.csv")
    jit_reps = _read_reps(folder / "fig8_jitter_reps.csv")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    out = {m: findings(m, tb_reps, tb, jit_reps, jit) for m in MODES}
    if (folder / "regime_reps.csv").exists():  # the paper's regime (issue 36 item 2)
        from qoelab.reproduce.sqf.regime import regime_findings

        ivb = folder / "ivb_reps.csv"
        out["regime"] = regime_findings(_read_reps(folder / "regime_reps.csv"), _read_reps(ivb) if ivb.exists() else [])
    return out


def _finding_unit(statistic: str) -> tuple[float, str]:
    """A finding's scale and unit: losses in percent, their differences in percentage points,
    the rest in the statistic's own unit."""
    if "loss" in statistic:
        return 100.0, " pp" if "minus" in statistic else " %"
    return 1.0, ""

