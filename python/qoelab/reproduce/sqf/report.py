"""The SQF reproduction's report: its tables (long ones for CSV and ``report.json``, wide views
for ``report.md``), figures, the reading generated from the tables, ``report.md``, the
Fig. 3/4 analytics."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from qoelab.experiment import Estimate, Finding, summary_line
from qoelab.experiment import core, runner
from qoelab.experiment.choices import choices_md
from qoelab.experiment.figures import lines_on, pyplot, save
from qoelab.experiment.tables import Column, Figure, Table, cell_md, findings_md, pivot
from qoelab.reproduce.sqf.build import Plan
from qoelab.reproduce.sqf import mechanism
from qoelab.reproduce.sqf.findings import _mean, _rate, jain_findings
from qoelab.reproduce.sqf.measure import METRICS, MODEL_METRICS
from qoelab.reproduce.sqf.paper import (BUFFER, CHOICES, DISCIPLINES, JITTER_N, LABEL, MODES, PAPER_JAIN, PAPER_SHARE,
                                        PAPER_STATEMENTS, PAPER_TABLE1, SENS_BUFFER, SENS_SOURCES, SENS_TCP, TABLE1_N)


# --------------------------------------------------------------------------------------------
# Tables and figures
# --------------------------------------------------------------------------------------------

def _pct(e: Estimate | None) -> str:
    """A loss estimate in percent, ``mean ± half-width %``."""
    s = cell_md(e, Column("", "", scale=100.0))
    return s if e is None else f"{s} %"


def _num(e: Estimate | None) -> str:
    return cell_md(e, Column("", ""))


def _label_n(n: int) -> str:
    return f"n = {n}"


def _tables(p: Plan, tb: list[dict[str, Any]], al: list[dict[str, Any]], jit: list[dict[str, Any]],
            model: list[dict[str, Any]], sens: list[dict[str, Any]]) -> dict[str, Table]:
    """Every table of the report, by id: the long tables (CSV and ``report.json``) and the wide
    views of ``report.md`` (:func:`qoelab.experiment.tables.pivot`)."""
    T: dict[str, Table] = {}
    metric_cols = [Column(m, m) for m in METRICS]
    T["testbed"] = Table("testbed", "Testbed: every cell", [Column("mode", "mode"), Column("discipline", "discipline"),
                                                             Column("n", "n"), *metric_cols], tb, ci="half_width")
    T["alone"] = Table("premise", "Premise: the video alone (FIFO, no downloads)", [
        Column("sender", "sender"), Column("video_loss", "video loss", "%", "ours", 100.0),
        Column("audio_loss", "audio loss", "%", "ours", 100.0), Column("video_mbps", "video", "Mbit/s", "ours"),
        Column("video_loss_max", "largest single-run video loss", "%", "ours", 100.0)],
        [{**r, "sender": MODES[r["mode"]][0]} for r in al], source="paper Sec. V (premise)")
    T["alone_csv"] = Table("premise_csv", "premise", [Column("mode", "mode"), Column("video_loss", "video_loss"),
                                                     Column("audio_loss", "audio_loss"), Column("video_mbps", "video_mbps"),
                                                     Column("video_loss_max", "video_loss_max")], al, ci="half_width")
    for mode, (label, _) in MODES.items():
        rows = [{**r, "scheduler": LABEL[r["discipline"]]} for r in tb if r["mode"] == mode]
        rows = PAPER_JAIN.join(PAPER_SHARE.join(rows, "paper_share"), "paper_jain")
        T[f"table1-{mode}"] = Table(f"table1-{mode}", f"Table I, {label}", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("data_share_mbps", "data share", "Mbit/s", "ours"),
            PAPER_SHARE.column("paper_share", "data share", "Mbit/s"),
            Column("jain", "Jain's index", "", "ours"), PAPER_JAIN.column("paper_jain", "Jain's index")],
            rows, source="paper Table I", csv="testbed.csv")
        T[f"fig6-{mode}"] = Table(f"fig6-{mode}", f"Fig. 6/7, {label}: loss and jitter", [
            Column("scheduler", "scheduler"), Column("n", "n"),
            Column("video_loss", "video loss", "%", "ours", 100.0), Column("audio_loss", "audio loss", "%", "ours", 100.0),
            Column("video_jitter_ms", "video jitter", "ms", "ours"), Column("audio_jitter_ms", "audio jitter", "ms", "ours")],
            rows, source="paper Fig. 6, Fig. 7", csv="testbed.csv")
        # The wide views of report.md: scheduler × n.
        idx = (Column("scheduler", "scheduler"),)
        T[f"loss-md-{mode}"] = pivot(f"loss-md-{mode}", "Loss rate audio / video (mean ± 95 % half-width over the "
                                     "repetitions)", rows, idx, "n", sorted({r["n"] for r in rows}),
                                     lambda r: f"{_pct(r['audio_loss'])} / {_pct(r['video_loss'])}", label=_label_n)
        T[f"jitter-md-{mode}"] = pivot(f"jitter-md-{mode}", "Jitter (mean |IPDV|, RFC 3393, ms) audio / video", rows, idx,
                                       "n", sorted({r["n"] for r in rows}),
                                       lambda r: f"{_num(r['audio_jitter_ms'])} / {_num(r['video_jitter_ms'])}",
                                       label=_label_n)
        ns = [n for n in TABLE1_N if any(r["n"] == n for r in rows)] or sorted({r["n"] for r in rows})
        both = []
        for q in p.disciplines:
            if q in PAPER_TABLE1:
                both += [{"scheduler": f"{LABEL[q]} (paper)", "n": n, "text": f"{v[0]:.1f}/{v[1]:.2f}"}
                         for n, v in zip(TABLE1_N, PAPER_TABLE1[q])]
            both += [{"scheduler": f"{LABEL[q]} (ours)", "n": r["n"], "text": f"{_num(r['data_share_mbps'])}/{_mean(r, 'jain'):.2f}"}
                     for r in rows if r["discipline"] == q]
        T[f"table1-md-{mode}"] = pivot(f"table1-md-{mode}", "Data bandwidth share (Mbit/s, mean ± 95 % half-width) / "
                                       "Jain's index; *paper* rows are BMO11 Table I", both, idx, "n", ns,
                                       lambda r: r["text"], label=_label_n)
    T["fig8"] = Table("fig8", f"Fig. 8: SQF, n = {JITTER_N}, video loss vs source jitter δ", [
        Column("access_rate", "access"), Column("delta_ms", "δ", "ms"),
        Column("video_loss", "video loss", "%", "ours", 100.0), Column("audio_loss", "audio loss", "%", "ours", 100.0)],
        jit, source="paper Fig. 8", csv="fig8_jitter.csv")
    T["fig8_csv"] = Table("fig8_csv", "Fig. 8", [Column(k, k) for k in ("access_rate", "delta_ms", "video_loss", "audio_loss")],
                          jit, ci="half_width")
    T["fig8-md"] = pivot("fig8-md", f"Fig. 8 (SQF, n = {JITTER_N}, {MODES['es'][0]}): video loss vs source jitter δ",
                         jit, (Column("access_rate", "access"),), "delta_ms", [float(x) for x in p.jitter_ms],
                         lambda r: _pct(r["video_loss"]), label=lambda x: f"δ = {x:g} ms")
    T["model"] = Table("model-check", "Model vs simulator (Sec. IV; Linux TCP profile)", [
        Column("n", "n"), Column("peak_rate_mbps", "λ", "Mbit/s"),
        Column("first_lost_priority_s", "SQF test first true", "s", "ours"),
        Column("first_x_ge_b_s", "x ≥ B/(n+1) first", "s", "ours"),
        Column("deprioritised_time_fraction", "time de-prioritised", "%", "ours", 100.0),
        Column("deprioritised_after_first", "after the first loss", "%", "ours", 100.0),
        Column("video_loss", "video loss", "%", "ours", 100.0),
        Column("model_p_T", "model p(T)"), Column("model_T_bar_s", "model T̄", "s")],
        [{**r, "model_p_T": _mean(r, "model_p_T"), "model_T_bar_s": _mean(r, "model_T_bar_s")} for r in model],
        source="paper Sec. IV, Fig. 3/4", csv="model_check.csv",
        note="(–: the event did not happen in any repetition's run.)")
    T["model_csv"] = Table("model_csv", "model check", [Column("n", "n"), Column("peak_rate_mbps", "peak_rate_mbps"),
                                                       *[Column(m, m) for m in MODEL_METRICS]], model, ci="half_width")
    T["sensitivity"] = Table.of_rows("whatif", "What-ifs", sens)
    cols = sorted({r["n"] for r in sens if r["n"]})
    alone = {r["video_source"]: r for r in sens if r["n"] == 0}
    wide = [{**r, "alone": (f"{_pct1(alone[r['video_source']]['video_loss'])} / "
                            f"{_pct1(alone[r['video_source']]['audio_loss'])}") if r["video_source"] in alone else "–"}
            for r in sens if r["n"]]
    T["sensitivity-md"] = pivot("sensitivity-md", f"What-ifs (SQF, buffer {SENS_BUFFER}, one repetition): video loss / "
                                "audio loss", wide, (Column("video_source", "video source"),
                                                     Column("tcp", "TCP as the router sees it"), Column("alone", "alone")),
                                "n", cols, lambda r: f"{_pct1(r['video_loss'])} / {_pct1(r['audio_loss'])}", label=_label_n,
                                note="Each row changes one factor against the testbed. The column 'alone' has no "
                                     "download at all: what the 10 Mbit/s line and its buffer by themselves do to that "
                                     "sender.")
    return T


def _pct1(x: float) -> str:
    """One run's loss in percent."""
    return "nan" if x is None or math.isnan(x) else f"{100 * x:.3g} %"


def _fig_lines(rows, key: str, ylabel: str, title: str, *, logy: bool = False) -> Callable[[Path], None]:
    """Figs. 6/7 (ours): one panel per stream, a line per discipline against n, 95 % intervals."""

    def draw(path: Path) -> None:
        fig, axes = pyplot().subplots(1, 2, figsize=(10, 4), sharey=True)
        for ax, stream in zip(axes, ("audio", "video")):
            lines_on(ax, {LABEL[q]: [r for r in rows if r["discipline"] == q] for q in DISCIPLINES}, "n",
                     f"{stream}_{key}", "number of data downloads n", ylabel if stream == "audio" else "", stream,
                     scale=100.0 if key == "loss" else 1.0, log=logy)
        fig.suptitle(title, fontsize=10)
        save(fig, path, dpi=120)

    return draw


def _fig8(rows) -> Callable[[Path], None]:
    """Fig. 8 (ours): video loss against the source jitter δ, one line per access rate."""

    def draw(path: Path) -> None:
        fig, ax = pyplot().subplots(figsize=(6, 4))
        ax.axvline(5, ls=":", color="0.5", label="paper: threshold ~5 ms on 10 Mbit/s")
        rates = sorted({r["access_rate"] for r in rows}, key=_rate)
        lines_on(ax, {f"access {a}": [r for r in rows if r["access_rate"] == a] for a in rates}, "delta_ms", "video_loss",
                 "source jitter std δ (ms)", "video loss (%)  [0 plotted at 1e-3]",
                 f"Fig. 8 (ours): SQF, n = {JITTER_N}, MPEG-2 video, {MODES['es'][0]}; 95 % intervals", scale=100.0, log=True)
        save(fig, path, dpi=120)

    return draw


def _figures(tb: list[dict[str, Any]], jit: list[dict[str, Any]]) -> list[Figure]:
    figs = []
    for m, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == m]
        figs.append(Figure(f"fig6-{m}", f"Fig. 6 (ours, {label}): loss vs n", f"fig6_loss_{m}.png",
                           _fig_lines(rows, "loss", "loss rate (%)  [0 plotted at 1e-3]",
                                      f"Fig. 6 (ours, {label}): loss vs n, 95 % intervals", logy=True), "paper Fig. 6"))
    for m, (label, _) in MODES.items():
        rows = [r for r in tb if r["mode"] == m]
        figs.append(Figure(f"fig7-{m}", f"Fig. 7 (ours, {label}): jitter vs n", f"fig7_jitter_{m}.png",
                           _fig_lines(rows, "jitter_ms", "mean |IPDV| (ms)", f"Fig. 7 (ours, {label}): jitter vs n"),
                           "paper Fig. 7"))
    figs.append(Figure("fig8", "Fig. 8 (ours): video loss vs source jitter", "fig8_jitter.png", _fig8(jit), "paper Fig. 8"))
    return figs


def _s(e: Estimate | None) -> str:
    if e is None or math.isnan(e.mean):
        return "never in the run"
    return f"{e.mean:.3g} s"


def _reading_md(all_findings: dict[str, list[Finding]], alone: list[dict[str, Any]],
                model: list[dict[str, Any]]) -> list[str]:
    """The reading, generated from the tables of this report (numbers included): the findings
    through :func:`qoelab.experiment.tables.findings_md`."""
    L = ["## Reading (generated from the tables above)", ""]
    L += ["### Premise: the video alone on the line (FIFO, no download)", ""]
    for r in alone:
        L.append(f"- {MODES[r['mode']][0]}: video loss {_pct(r['video_loss'])}, audio loss {_pct(r['audio_loss'])} over "
                 f"{r['video_loss'].n} repetitions (largest single run: {_pct1(r['video_loss_max'])}).")
    L.append("")
    for mode, F in all_findings.items():
        L += [f"### The paper's claims, {MODES[mode][0]}", "",
              f"Substantive claims: {summary_line(F)} (by-construction and trivial ones are listed but not counted).", ""]
        L += [findings_md(F, why=True)]
    if model:
        L += ["### Model check (Sec. IV) under the Linux TCP profile", ""]
        for r in model:
            L.append(
                f"- n = {r['n']}, λ = {r['peak_rate_mbps']:g} Mbit/s: SQF's test (an active download with no more bytes "
                f"than the video) first true at {_s(r['first_lost_priority_s'])}, eq. (1)'s x ≥ B/(n+1) first at "
                f"{_s(r['first_x_ge_b_s'])}; share of the time de-prioritised {_pct(r['deprioritised_time_fraction'])}, "
                f"of the time after the first loss of priority {_pct(r['deprioritised_after_first'])}; video loss "
                f"{_pct(r['video_loss'])}; model p(T) {_mean(r, 'model_p_T'):.3g}, mean time of prioritisation "
                f"{_s(r['model_T_bar_s'])} (means over {r['model_p_T'].n} repetitions; a first time is averaged over the "
                f"repetitions in which it happened).")
        L += ["", MODEL_CHECK_WHY, ""]
    return L


#: What the model-check table measures (typed, no numbers: they are in the table above it).
MODEL_CHECK_WHY = (
    "What the columns mean. The model's p(T) is the probability that the video's backlog reaches "
    "B/(n+1) at least once before T, with every download holding an equal share of a full buffer; it "
    "says nothing about what happens afterwards. The share of the time de-prioritised (the column the "
    "earlier report set beside p(T)) counts every sample where some active download has no more bytes "
    "queued than the video, so it is mostly time *after* the first loss of priority (the column 'after the "
    "first loss of priority' is the share of that remaining time; what the queues, the drops and the "
    "downloads do in that state is measured in the mechanism section below, not assumed). The two are "
    "different quantities: p(T) is to be compared with whether, and when, priority is first lost. That "
    "first loss comes much earlier than the model's mean time wherever a download's own backlog falls "
    "to the video's (SQF's test turns true before eq. (1)'s x ≥ B/(n+1) does): the model's premise that "
    "the downloads hold equal shares of a full buffer does not hold for ACK-clocked TCP, whose backlogs "
    "swing between one packet and many."
)


def _analytic(out: Path, quick: bool) -> dict[str, Any]:
    """Fig. 3/4 from eq. (2) and the paper's n = 20 statements, computed."""
    from qoelab.models import sqf_analytic as sa

    kw3: dict[str, Any] = {}
    kw4: dict[str, Any] = {}
    if quick:
        kw3 = {"peak_rates_bps": np.linspace(0, 10e6, 41)}
        kw4 = {"peak_rates_bps": np.linspace(0.02, 0.98, 25) * 10e6}
    f3 = sa.figure3(out / "fig3_analytic.png", **kw3)
    f4 = sa.figure4(out / "fig4_analytic.png", **kw4)
    rows = []
    for i, n in enumerate(f3.n_values):
        for j, r in enumerate(f3.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "p_T_sqf": f3.p_sqf[i, j], "p_T_fq": f3.p_fq[i, j]})
    Table.of_rows("fig3", "Fig. 3", rows).write_csv(out, "fig3_analytic.csv")
    rows = []
    for i, n in enumerate(f4.n_values):
        for j, r in enumerate(f4.peak_rates_bps):
            rows.append({"n": n, "peak_rate_mbps": r / 1e6, "T_bar_min": f4.mean_time_s[i, j] / 60})
    Table.of_rows("fig4", "Fig. 4", rows).write_csv(out, "fig4_analytic.csv")
    return {
        "p_T_n20_at_6mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 6e6, 20),
        "p_T_n20_at_5mbps": sa.p_deprioritised(sa.VIDEO_DURATION_S, 5e6, 20),
        "rate_p_half_n20_mbps": sa.peak_rate_for_p(0.5, 20) / 1e6,
        "T_bar_n20_at_6mbps_min": sa.mean_prioritised_time(6e6, 20) / 60,
        "rate_T_bar_180min_n20_mbps": sa.peak_rate_for_mean_time(180 * 60, 20) / 1e6,
        "fq_limit_n20_kbps": 10e6 / 21 / 1e3,
    }


def _findings_csv(out: Path, all_findings: dict[str, list[Finding]]) -> None:
    Table.of_rows("findings", "findings", [
        {"mode": m, "key": f.key, "claim": f.claim, "label": f.label.value, "verdict": f.verdict.value,
         "statistic": f.statistic, "mean": f.estimate.mean if f.estimate else float("nan"),
         "half_width": f.estimate.half_width if f.estimate else float("nan"), "reps": f.n, "note": f.note,
         "quick": f.quick, "sensitivity": f.sensitivity_text()}
        for m, F in all_findings.items() for f in F]).write_csv(out, "findings.csv")


def write(out: Path, p: Plan, rs: runner.RunSet, all_findings: dict[str, list[Finding]]):
    """The default setting's tables (CSV), figures and the reading's lines."""
    tb_reps = rs.rows_of("testbed")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    al_reps = rs.rows_of("alone")
    al = core.aggregate(al_reps, ("mode",), ("video_loss", "audio_loss", "video_mbps"))
    for r in al:
        r["video_loss_max"] = max(x["video_loss"] for x in al_reps if x["mode"] == r["mode"])
    jit_reps = rs.rows_of("jitter")
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    model_reps = rs.rows_of("model")
    model = core.aggregate(model_reps, ("n", "peak_rate_mbps"), MODEL_METRICS)
    sens = [{"video_source": SENS_SOURCES[r["video_source"]][0],
             "tcp": SENS_TCP[r["tcp"]][0] if "tcp" in r else "no downloads", "n": r.get("n", 0),
             **{k: r[k] for k in ("video_loss", "audio_loss", "data_share_mbps")}}
            for r in rs.rows_of("whatif_alone") + rs.rows_of("whatif")]
    sens.sort(key=lambda r: ([s for s, _ in SENS_SOURCES].index(r["video_source"]),
                             -1 if r["n"] == 0 else [t for t, _ in SENS_TCP].index(r["tcp"]), r["n"]))
    ana = _analytic(out, p.quick)
    T = _tables(p, tb, al, jit, model, sens)
    T["testbed"].write_csv(out, "testbed.csv")
    Table.of_rows("testbed_reps", "testbed, per repetition", tb_reps).write_csv(out, "testbed_reps.csv")
    T["alone_csv"].write_csv(out, "premise_alone.csv")
    T["fig8_csv"].write_csv(out, "fig8_jitter.csv")
    Table.of_rows("fig8_reps", "Fig. 8, per repetition", jit_reps).write_csv(out, "fig8_jitter_reps.csv")
    T["model_csv"].write_csv(out, "model_check.csv")
    T["model"].csv = "model_check.csv"
    Table.of_rows("model_reps", "model check, per repetition", model_reps).write_csv(out, "model_check_reps.csv")
    T["sensitivity"].write_csv(out, "whatif.csv")
    Table.of_rows("paper_table1", "BMO11 Table I", [
        {"scheduler": q, "n": n, "paper_data_share_mbps": PAPER_SHARE.values[(q, n)], "paper_jain": PAPER_JAIN.values[(q, n)]}
        for q in PAPER_TABLE1 for n in TABLE1_N]).write_csv(out, "paper_table1.csv")
    _findings_csv(out, all_findings)
    reading = _reading_md(all_findings, al, model) + _mechanism(out, T, rs, tb)
    return T, [f.write(out) for f in _figures(tb, jit)], reading, ana


def _mechanism(out: Path, T: dict[str, Any], rs: runner.RunSet, tb: list[dict[str, Any]]) -> list[str]:
    """The mechanism grid's tables (``mechanism.csv``, ``mechanism_reps.csv``, the report's
    table ``T["mechanism"]``) and its reading, with Table I's Jain claim judged."""
    reps = rs.rows_of("mechanism")
    if not reps:
        return []
    rows = core.aggregate(reps, mechanism.KEYS, mechanism.METRICS)
    T["mechanism"] = mechanism.table(rows)
    Table("mechanism_csv", "mechanism", [*(Column(k, k) for k in mechanism.KEYS),
                                          *(Column(m, m) for m in mechanism.METRICS)], rows,
          ci="half_width").write_csv(out, "mechanism.csv")
    Table.of_rows("mechanism_reps", "mechanism, per repetition", reps).write_csv(out, "mechanism_reps.csv")
    F = jain_findings(tb, rows)
    return mechanism.reading(rows) + ["### Table I's Jain claim for SQF", "",
                                      f"Substantive claims: {summary_line(F)}.", "", findings_md(F, why=True), ""]


def report_md(p: Plan, quick: bool, t_sim: float, T: dict[str, Any], ana: dict[str, Any], reading: list[str]) -> list[str]:
    md = [
        "# SQF reproduction (BMO11, ICC 2011)",
        "",
        f"Mode: {'quick' if quick else 'full'}; {p.reps} repetitions per cell (seeded random clip offsets and start times); "
        f"testbed runs of {p.duration} simulated time; n = {', '.join(map(str, p.n_values))}; buffer {BUFFER} on the 10 Mbit/s "
        f"access line. Video: the MPEG-2 trace `sqf_mpeg2_5M` with its Layer II audio; downloads: TCP CUBIC, Linux profile. "
        f"Sender modes: {'; '.join(f'`{m}` = {l}' for m, (l, _) in MODES.items())}. Simulation wall time of this invocation: "
        f"{t_sim:.0f} s (runs already done by an earlier invocation are reused, not re-timed).",
        "",
        "Files: `testbed.csv` (means and 95 % half-widths, `_ci`), `testbed_reps.csv`, `premise_alone.csv`, `fig8_jitter.csv`, "
        "`fig8_jitter_reps.csv`, `model_check.csv`, `model_check_reps.csv`, `whatif.csv`, `findings.csv`, "
        "`paper_table1.csv`, `mechanism.csv`, `mechanism_reps.csv`, `fig3_analytic.csv`, `fig4_analytic.csv`, "
        "`report.json`, the PNG figures and, with "
        "`--sensitivity`, `sensitivity.csv`; raw runs under `runs/` (and `sensitivity/`).",
        "",
        "## What the paper reports (typed from its text; not measured here)",
        "",
    ]
    md += [f"- **{k}**: {v}" for k, v in PAPER_STATEMENTS]
    md += ["", "## Open choices", "", "What the paper leaves open and we chose (`--sensitivity` runs the findings under "
           "each alternative):", "", choices_md(CHOICES)]
    md += ["## Our measurements", "", "### Premise: the video alone (FIFO, no downloads)", "", T["alone"].markdown(title=False)]
    for mode, (label, _) in MODES.items():
        md += [f"### Fig. 6/7, {label}", "", T[f"loss-md-{mode}"].markdown(), T[f"jitter-md-{mode}"].markdown()]
        md += [f"### Table I, {label}", "", T[f"table1-md-{mode}"].markdown()]
    md += ["### Fig. 8", "", T["fig8-md"].markdown()]
    md += ["### Model vs simulator (Sec. IV; Linux TCP profile)", "", T["model"].markdown(title=False)]
    if "mechanism" in T:
        md += ["### De-prioritisation mechanism and TCP starvation (SQF; backlog samples, drop and timeout records)", "",
               T["mechanism"].markdown(title=True)]
    md += ["### What-ifs (one repetition)", "", T["sensitivity-md"].markdown()]
    md += ["### Analytical model (Fig. 3/4 recomputed from eq. (2))", "", "`fig3_analytic.png`, `fig4_analytic.png`.", ""]
    md += [f"- {k}: {v:.4g}" for k, v in ana.items()]
    return md + [""] + reading

