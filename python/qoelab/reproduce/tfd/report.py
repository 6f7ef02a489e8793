"""The TFD reproduction's report: Tables I and II of a calibration beside the paper's
(:func:`cell_tables`), its files (:func:`write_report`: tables, figures, findings, the
per-repetition statistics and the README), and the overview of every calibration with the
report.json of the headline (:func:`write_overview`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from qoelab.experiment import Estimate, Finding, Label, Verdict, summary_line
from qoelab.experiment import core
from qoelab.experiment.choices import choices_md
from qoelab.experiment.provenance import describe
from qoelab.experiment.figures import heatmap, pyplot, save
from qoelab.experiment.tables import Column, Table, duration_str, pivot, pm_str, publish
from qoelab.reproduce.tfd.build import CALIBRATIONS, DEFAULT_PROFILE, FULL, HEADLINE, QUICK, Grid, paper_tables
from qoelab.reproduce.tfd.findings import _k0_rate_per_stream, findings, headline_rule, rep_statistics, summary


METRICS = (
    ("per_pct", "PER [%]", "{:.2f}"),
    ("utilisation_pct", "link utilisation [%]", "{:.1f}"),
    ("video_mbps", "overall video throughput [Mbit/s]", "{:.0f}"),
    ("tcp_mbps", "overall TCP throughput [Mbit/s]", "{:.0f}"),
)


#: The delay cost of the video, beside Table I (the paper reports none; issue 36 item 7): the
#: mean one-way delay over every received video packet, the worst stream's 99th percentile, and
#: the streams' mean RFC 3550 interarrival jitter (:func:`~qoelab.reproduce.tfd.build.cell_metrics`).
DELAY_METRICS = (
    ("video_delay_ms", "video delay, mean [ms]", "{:.2f}"),
    ("video_delay_p99_ms", "video delay, worst stream's p99 [ms]", "{:.2f}"),
    ("video_jitter_ms", "video jitter, RFC 3550 [ms]", "{:.3f}"),
)

#: The paper's two tables: (name, its metrics, source); Table I carries our delay columns too.
TABLES = (("table1", METRICS[:2] + DELAY_METRICS, "paper Table I"), ("table2", METRICS[2:4], "paper Table II"))


def cell_tables(grid: Grid, ours: dict, nreps: dict, key: str) -> dict[str, Any]:
    """Tables I and II of one calibration, ours beside the paper's, as the layer's
    :class:`~qoelab.experiment.tables.Table`\\ s: ``table1``/``table2`` (``report.json``: our
    estimates and the paper's values), ``table1_csv``/``table2_csv`` (the CSV: ours rounded to
    4 decimals, the paper's, and our 95 % half-widths) and ``table1_md``/``table2_md`` (one
    K × N :func:`~qoelab.experiment.tables.pivot` per metric and scenario)."""
    paper = paper_tables()
    T: dict[str, Any] = {}
    ours_only = {m for m, _, _ in DELAY_METRICS}
    for name, metrics, src in TABLES:
        rows = []
        for (sc, k, n), v in sorted(ours.items()):
            row: dict[str, Any] = {"scenario": sc, "K": k, "N": n}
            for m, _, _ in metrics:
                mean, ci = v.get(m, float("nan")), v.get(f"{m}_ci95", float("nan"))
                row[m] = Estimate(mean, ci, nreps.get((sc, k, n), 0))
                row[f"{m}_ours"] = None if math.isnan(mean) else round(mean, 4)
                row[f"{m}_ours_ci95"] = None if math.isnan(ci) else round(ci, 4)
                if m not in ours_only:
                    row[f"paper_{m}"] = row[f"{m}_paper"] = paper[(sc, k, n)][m]
            rows.append(row)
        index = [Column("scenario", "scenario"), Column("K", "K"), Column("N", "N")]
        csv_keys = ([f"{m}_{who}" for m, _, _ in metrics for who in ("ours", "paper") if who == "ours" or m not in ours_only]
                    + [f"{m}_ours_ci95" for m, _, _ in metrics])
        T[f"{name}_csv"] = Table(f"{name}_csv", name, index + [Column(c, c) for c in csv_keys], rows)
        cols = list(index)
        for m, label, _ in metrics:
            cols += [Column(m, label, "", "ours")] + ([] if m in ours_only else [Column(f"paper_{m}", label, "", "paper")])
        T[name] = Table(f"{name}-{key}", f"{src[6:]}, calibration {key}: ours beside the paper's", cols, rows, source=src)
        views = []
        for m, label, fmt in metrics:
            def text(r: dict[str, Any], m: str = m, fmt: str = fmt) -> str:
                e = r[m]
                if math.isnan(e.mean):
                    return "-"
                pm = "" if math.isnan(e.half_width) else "±" + fmt.format(e.half_width)
                paper_text = f" ({fmt.format(r[f'paper_{m}'])})" if f"paper_{m}" in r else ""
                return f"{fmt.format(e.mean)}{pm}{paper_text}"

            for sc in grid.scenarios:
                # Every K of the grid, with or without runs.
                views.append(pivot(f"{name}-{m}-{sc}", f"{label}, scenario {sc} (rows K, columns N)",
                                   [r for r in rows if r["scenario"] == sc], (Column("K", "K \\ N"),), "N",
                                   list(grid.n), text, missing="-", keys=[(k,) for k in grid.k]))
        T[f"{name}_md"] = views
    return T


def write_report(out: Path, grid: Grid, ours: dict, meta: dict, fo: list[Finding], reps: list[dict] | None = None,
                 nreps: dict | None = None) -> None:
    """A calibration's files in ``out``: ``table1``/``table2`` (CSV and Markdown), the figures,
    ``findings.csv`` (``fo``: ours, with the sensitivity if it ran), ``repetitions.csv`` (each
    complete repetition's statistics: the findings' input, kept so that they can be recomputed
    without the runs, which are not committed) and ``README.md`` (:func:`reading`)."""
    paper = paper_tables()
    T = cell_tables(grid, ours, nreps or {}, meta.get("calibration", ""))
    for table in ("table1", "table2"):
        # CSV: one row per cell, ours beside the paper's; Markdown: a K × N view per metric and scenario.
        T[f"{table}_csv"].write_csv(out, f"{table}.csv")
        md = [f"# {table.title()}: ours (paper)\n", f"Duration {grid.duration_s} s, {meta['reps_done_min']}–{meta['reps_done_max']} "
              "repetition(s) per cell (± is the half-width of a Student-t 95 % confidence interval over them, shown from 2 "
              "repetitions on); paper values typed from the paper (20 repetitions, 152 s)."
              + (" The video's delay columns are ours alone: the paper reports no delay." if table == "table1" else "")
              + "\n"]
        md += [f"\n## {t.title}\n\n" + t.markdown(title=False).rstrip("\n") for t in T[f"{table}_md"]]
        (out / f"{table}.md").write_text("\n".join(md) + "\n")
    plots(out, grid, ours, paper)
    pgrid = {key: v for key, v in paper.items() if key[1] in grid.k and key[2] in grid.n}
    write_findings_csv(out / "findings.csv", fo, findings(grid, pgrid), meta.get("calibration", ""))
    write_repetitions(out, grid, reps or [])
    (out / "README.md").write_text(reading(grid, ours, paper, meta, fo, len(reps or [])))


def write_repetitions(out: Path, grid: Grid, reps: list[dict]) -> Path:
    """``repetitions.csv``: one row per complete repetition, its statistics
    (:func:`~qoelab.reproduce.tfd.findings.rep_statistics`), from which
    :func:`~qoelab.reproduce.tfd.findings.findings_from_repetitions` recomputes the findings."""
    stats = [{"rep": i, **rep_statistics(grid, r)} for i, r in enumerate(reps)]
    return Table("repetitions", "each complete repetition's statistics",
                 [Column(c, c) for c in ["rep"] + sorted({k for st in stats for k in st} - {"rep"})], stats
                 ).write_csv(out, "repetitions.csv")


def plots(out: Path, grid: Grid, ours: dict, paper: dict) -> None:
    """``diff_<metric>.png`` (ours minus the paper's per cell, a heat map per scenario) and
    ``fig3_per_vs_n.png`` (Fig. 3: PER against N per K, ours solid, the paper's dashed)."""
    import numpy as np

    plt = pyplot()
    for m, label, _ in METRICS:
        fig, axs = plt.subplots(1, len(grid.scenarios), figsize=(4 * len(grid.scenarios), 3.6), squeeze=False)
        for ax, sc in zip(axs[0], grid.scenarios):
            d = [[ours[(sc, k, n)][m] - paper[(sc, k, n)][m] if (sc, k, n) in ours else np.nan for n in grid.n]
                 for k in grid.k]
            im = heatmap(ax, d, grid.n, grid.k, "N (video streams)", "K (TCP flows)", f"{sc}: ours − paper")
            fig.colorbar(im, ax=ax, shrink=0.8)
        fig.suptitle(f"Difference in {label}")
        save(fig, out / f"diff_{m}.png", dpi=90)
    fig, axs = plt.subplots(1, len(grid.scenarios), figsize=(4 * len(grid.scenarios), 3.6), squeeze=False)
    ks = [k for k in grid.k if k > 0]
    for ax, sc in zip(axs[0], grid.scenarios):
        for i, k in enumerate(ks):
            col = plt.cm.viridis(i / max(1, len(ks) - 1))
            ax.plot(grid.n, [ours.get((sc, k, n), {}).get("per_pct", np.nan) for n in grid.n], "-o", color=col, ms=3)
            ax.plot(grid.n, [paper[(sc, k, n)]["per_pct"] for n in grid.n], "--", color=col, alpha=0.6)
        ax.set_title(f"PER vs N, {sc}")
        ax.set_xlabel("N")
        ax.set_ylabel("PER [%]")
        # Ours and the paper's differ by up to four orders of magnitude in s2–s4: a symmetric-log
        # axis (linear below 0.001 %, so PER = 0 has a place) shows both sets of curves.
        ax.set_yscale("symlog", linthresh=1e-3, linscale=0.5)
        ax.set_ylim(bottom=0)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=plt.cm.viridis(i / max(1, len(ks) - 1)), label=f"K = {k}") for i, k in enumerate(ks)]
    handles += [Line2D([], [], color="k", ls="-", marker="o", label="ours"), Line2D([], [], color="k", ls="--", label="paper")]
    fig.legend(handles=handles, loc="center right", fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0, 0.93, 1))
    fig.savefig(out / "fig3_per_vs_n.png", dpi=90)
    plt.close(fig)


def findings_md(fo: list[Finding], fp: list[Finding]) -> list[str]:
    """The findings table (ours with the statistic, its interval, the verdict's note and the
    sensitivity; and the paper's own tables' verdict) and the summary line, which counts only
    substantive findings."""
    paper = {f.key: _by_means(f) for f in fp}
    sens = any(f.under for f in fo)
    md = [f"**{summary_line(fo)}**; trivial, by-construction and calibrated findings are listed but not counted.", "",
          Table("findings", "findings", [
              Column("claim", "the paper's finding"), Column("label", "label"), Column("statistic", "statistic"),
              Column("estimate", "ours: mean ± 95 %"), Column("verdict", "ours"), Column("note", "why this verdict")]
              + ([Column("sensitivity", "sensitivity")] if sens else []) + [Column("paper", "the paper's own table (by its means)")],
              [{"claim": f.claim, "label": f.label.value, "statistic": f.statistic, "estimate": pm_str(f.estimate),
                "verdict": f"**{f.verdict.value}**" + (" (quick: not evidence)" if f.quick else ""), "note": f.note,
                "sensitivity": f.sensitivity_text(), "paper": paper.get(f.key)}
               for f in fo]).markdown(title=False).rstrip("\n")]
    md += ["", "Labels: *trivial* and *by construction* findings hold for reasons that do not test the mechanisms:"]
    md += [f"- {f.key} ({f.label.value}): {f.why}." for f in fo if f.label is not Label.SUBSTANTIVE and f.why]
    return md


def _by_means(f: Finding) -> str:
    """What the paper's own tables say of a claim: its statistic on their means (one value, no
    interval: not a verdict of the layer's rules) on the claim's side of the threshold or not."""
    parts = [(p.estimate, p.rule) for p in f.parts] if f.parts else [(f.estimate, f.rule)]
    ok = []
    for e, r in parts:
        if e is None or math.isnan(e.mean):
            return "no value"
        ok.append(e.mean > r.threshold if r.kind == "above" else e.mean < r.threshold if r.kind == "below"
                  else abs(e.mean) <= r.threshold)
    return "holds" if all(ok) else "does not hold"


def _finding_rows(fs: list[Finding], **first: Any) -> list[dict[str, Any]]:
    """One CSV row per finding: ``first`` (e.g. the calibration), then key, label, verdict and
    the estimate's mean, half-width and n (empty where there is none), the verdict's note, the
    quick flag and the sensitivity."""
    return [{**first, "key": f.key, "label": f.label.value, "verdict": f.verdict.value,
             "mean": None if f.estimate is None else f.estimate.mean,
             "half_width": None if f.estimate is None else f.estimate.half_width,
             "n": None if f.estimate is None else f.estimate.n, "note": f.note, "quick": f.quick,
             "sensitivity": f.sensitivity_text()} for f in fs]


def write_findings_csv(path: Path, fo: list[Finding], fp: list[Finding], calibration: str = "", **first: Any) -> None:
    paper = {f.key: _by_means(f) for f in fp}
    rows = [{**r, "paper_verdict": paper.get(f.key), "claim": f.claim, "statistic": f.statistic}
            for r, f in zip(_finding_rows(fo, calibration=calibration, **first), fo)]
    Table.of_rows("findings", "findings", rows).write_csv(path.parent, path.name)


def _cost_md(meta: dict) -> list[str]:
    rows = meta.get("per_rep_cost") or []
    if not rows:
        return []
    hours = [{"rep": r["rep"], "runs": r["runs"], "wall": f"{r['active_wall_s'] / 3600:.2f}", "cpu": f"{r['cpu_s'] / 3600:.2f}"}
             for r in rows]
    hours.append({"rep": "all", "runs": sum(r["runs"] for r in rows), "wall": f"{meta['runs_active_wall_s'] / 3600:.2f}",
                  "cpu": f"{meta['runs_cpu_s'] / 3600:.2f}"})
    table = Table("cost", "compute per repetition", [Column("rep", "repetition"), Column("runs", "runs"),
                                                     Column("wall", "wall h"), Column("cpu", "CPU h")], hours)
    return ["", "Compute per repetition (wall time: the union of the repetition's runs' intervals, so runs in parallel "
            "count once and pauses between sittings not at all; CPU: the runs' own):", "",
            table.markdown(title=False).rstrip("\n")]


#: The reservation routers' admission limit, as a share of the 1 Gbit/s link (``max_reserved_share``).
ADMISSION_SHARE = 0.9
LINK_BPS = 1_000_000_000


def delay_md(grid: Grid, ours: dict) -> list[str]:
    """The video's delay cost per scenario (the paper reports none): each delay metric of
    :data:`DELAY_METRICS` averaged over the scenario's cells, and its largest cell, from ``ours``."""
    rows = []
    for sc in grid.scenarios:
        cells = {key: v for key, v in ours.items() if key[0] == sc}
        row: dict[str, Any] = {"scenario": sc}
        for m, _, fmt in DELAY_METRICS:
            xs = {key: v[m] for key, v in cells.items() if not math.isnan(v.get(m, math.nan))}
            if not xs:
                row[m] = "-"
                continue
            worst = max(xs, key=lambda key: xs[key])
            row[m] = f"{fmt.format(sum(xs.values()) / len(xs))} (max {fmt.format(xs[worst])} at K = {worst[1]}, N = {worst[2]})"
        rows.append(row)
    return ["", "### Delay cost of the video (ours; the paper reports none)", "",
            "Mean over each scenario's cells (the largest cell in brackets), per cell averaged over its repetitions; "
            "`table1.md` has every cell.", "",
            Table("delay", "delay", [Column("scenario", "scenario")] + [Column(m, label) for m, label, _ in DELAY_METRICS],
                  rows).markdown(title=False).rstrip("\n")]


def reading(grid: Grid, ours: dict, paper: dict, meta: dict, fo: list[Finding], n_complete: int) -> str:
    """A calibration's README: its setup and compute, the summary beside the paper's, the
    findings table (:func:`findings_md`), the choices and the known reasons for differences."""
    s = summary(grid, ours)
    pgrid = {key: v for key, v in paper.items() if key[1] in grid.k and key[2] in grid.n}
    ps = summary(grid, pgrid)
    fp = findings(grid, pgrid)
    reps = (f"{meta['reps_done_min']} repetition(s)" if meta["reps_done_min"] == meta["reps_done_max"]
            else f"{meta['reps_done_min']}–{meta['reps_done_max']} repetitions (of {meta['reps']} asked; the grid is not finished)")
    lines = [
        f"# TFD reproduction, calibration {meta['calibration']} (TCP profile {meta['profile']}): what matches and what does not\n",
        f"Calibration: trace `{meta['trace']}` ({meta['trace_mean_bps'] / 1e6:.1f} Mbit/s mean at IP level), routers' best-effort "
        f"buffer {meta['buffer']}, TCP profile `{meta['profile']}`"
        + (" (the headline calibration)" if meta.get("headline") else "") + ". "
        f"Grid: scenarios {', '.join(grid.scenarios)}, N ∈ {list(grid.n)}, K ∈ {list(grid.k)}, "
        f"{grid.duration_s} s per run, {reps}; {meta['cells_reported']} of {meta['cells']} cells reported. "
        f"Compute: {meta['runs_timed']} runs took {duration_str(meta['runs_cpu_s'])} of CPU time ({duration_str(meta['runs_wall_s'])} of run wall time, "
        f"one core each); the grid was running for {duration_str(meta.get('runs_active_wall_s', float('nan')))} of wall time (the union "
        f"of the runs' intervals, pauses between sittings excluded); code {', '.join(meta['code_versions']) or 'unrecorded'}. "
        + (f"s2 reserves {meta['s2_rate_bps'] / 1e6:.1f} Mbit/s per stream (150 % of the trace's "
           f"{meta['sizes']['target_bps'] / 1e6:.2f} Mbit/s encoder target, `s2_basis = {meta['s2_basis']}`)"
           if meta.get("sizes") else f"s2 reserves {meta['s2_rate_bps'] / 1e6:.0f} Mbit/s per stream (150 % of the paper's "
           "40 Mbit/s target)")
        + f"; s3 reserves the trace's 1-s peak rate, {meta['s3_peak_bps'] / 1e6:.1f} Mbit/s per stream"
        + (f"; under the default `rsvp_policing = tspec` both senders' Tspec bucket is the trace's largest frame, "
           f"{meta['tspec_bucket_bytes'] / 1e3:.0f} kB at IP level, and each reservation port forwards a stream's "
           "packets beyond it as best effort (RFC 2211/2212)" if meta.get("tspec_bucket_bytes") else "") + ".\n",
    ]
    if meta.get("provenance"):
        lines.append(describe(meta["provenance"]) + "\n")
    # Each column: its key in ``summary``, title and format; a cell is "ours / paper".
    cols = (("per_mean", "mean PER % (ours / paper)", ".3f"), ("per_mean_loaded", "mean PER %, K>0", ".3f"),
            ("util_mean_loaded", "mean utilisation %, K>0", ".1f"), ("zero_per_share", "cells K>0 with PER=0", ".0%"),
            ("min_video_fraction", "min video delivered / required (ours: / offered; paper: / K=0)", ".3f"))
    lines.append(Table("summary", "summary", [Column("scenario", "scenario")] + [Column(k, t) for k, t, _ in cols], [
        {"scenario": sc if s[sc]["complete"] else f"{sc} (partial)",
         **{k: f"{s[sc][k]:{fmt}} / {ps[sc][k]:{fmt}}" for k, _, fmt in cols}} for sc in grid.scenarios]
    ).markdown(title=False).rstrip("\n"))
    lines += delay_md(grid, ours)
    lines += sizes_md(meta)
    lines += ["", "## The paper's findings", ""]
    lines += [("Statistics over the " f"{n_complete} complete repetitions, paired by seed (Student-t 95 % intervals), "
               "judged by the layer's rules (docs/experiments.md): a claim holds when its interval clears the threshold, "
               "does not hold when it lies wholly on the other side (or excludes the paper's own value of the statistic), "
               "is inconclusive otherwise, and untestable when a premise fails.") if n_complete >= 2 else
              "One repetition: the statistics are the grid's values, which give no interval, so every finding is "
              "inconclusive by the layer's rules (at least 2 repetitions are needed, 10 to count as evidence).", ""]
    lines += findings_md(fo, fp)
    lines += ["", "`findings.csv` holds these rows; `repetitions.csv` each complete repetition's statistics, from which "
              "they are computed (`rep_statistics`)."]
    lines += _cost_md(meta)
    admitted = int(ADMISSION_SHARE * LINK_BPS // meta["s3_peak_bps"]) if meta["s3_peak_bps"] else max(grid.n)
    lines += [
        "",
        "See `table1.md`, `table2.md`, `diff_*.png` and `fig3_per_vs_n.png` for the cell-by-cell comparison;",
        "`docs/models/tfd-router.md` for the reading of the differences.",
        "",
        "Known reasons for differences (see docs/models/tfd-router.md): our traces stand in synthetic and upscaled",
        "clips for the paper's VQEG clips (two-pass H.264 with Blu-ray's VBV; the 62 Mbit/s trace is that encode's",
        "slices scaled); routers are our scheduler (SCFQ by default), not the authors' ns-2 emulator; delays are ours.",
        "",
        f"- s2's {meta['s2_rate_bps'] / 1e6:.0f} Mbit/s reservation is {meta['s2_rate_bps'] / meta['trace_mean_bps']:.2f}× this "
        f"trace's mean rate and s3's {meta['s3_peak_bps'] / meta['trace_mean_bps']:.2f}×; "
        + ("a stream's packets beyond its Tspec bucket (rate r, depth the largest frame) are forwarded as best effort "
           "(`rsvp_policing = tspec`); with `none` they queue in its reserved class and get only spare capacity."
           if meta.get("tspec_bucket_bytes") else
           "a stream above its reservation queues in its own buffer and gets only spare capacity."),
    ]
    if admitted < max(grid.n):
        lines.append(f"- Admission control ({ADMISSION_SHARE:.0%} of the link) admits s3's peak-rate reservation for at most "
                     f"{admitted} streams: in cells with more, the others run best effort.")
    lines += [
        "- s2, s3 and s4 share one work-conserving scheduler (SCFQ): an idle static reservation is lent to best",
        "  effort, so RSVP costs no utilisation here, unlike in the paper (the `lend_idle` choice's alternative holds",
        "  it idle; `scheduler = reserved_rate` serves each reservation at exactly its rate; `--sensitivity` runs every",
        "  finding under each).",
    ]
    if meta.get("choices"):
        lines += ["", "## Open choices", "", "The routers' rules and the senders' pacing are ours, not the paper's; each is "
                  "declared with its alternatives (`--sensitivity` runs every finding under each, on "
                  f"{meta.get('sensitivity_grid', 'the grid')}):", "", meta["choices"]]
    return "\n".join(lines) + "\n"


def sizes_md(meta: dict[str, Any]) -> list[str]:
    """The derivation of s2's and s3's reservation sizes from the paper's definitions (§IV: "150%
    (s2) or peak (s3) of target bit rate") and this calibration's trace, with the numbers
    (:func:`qoelab.reproduce.tfd.build.reservation_sizes`); nothing for a report written before
    they were recorded."""
    z = meta.get("sizes")
    if not z:
        return []
    mbps = lambda b: f"{b / 1e6:.2f} Mbit/s"  # noqa: E731
    return [
        "", "### Reservation sizes, derived", "",
        "The paper sizes s2 at \"150%\" and s3 at the \"peak … of target bit rate\" (§IV). Our reading, per stream, at IP "
        "level (RSVP Tspecs count IP datagram bytes, RFC 2210):", "",
        "| quantity | definition | this trace |", "|---|---|---|",
        f"| target T | the trace's encoder target (its recipe: `config.bitrate_bps`; a scaled trace: its source's × the "
        f"factor) | {mbps(z['target_bps'])} |",
        f"| mean | the trace's mean rate at IP level (40 B of IPv4/UDP/RTP per ≤ 1448-B payload) | {mbps(z['mean_bps'])} |",
        f"| **s2** (`s2_basis = target`, default) | 1.5 × T | **{mbps(z['s2_target_bps'])}** "
        f"({z['s2_target_bps'] / z['mean_bps']:.2f}× the mean) |",
        f"| s2, `s2_basis = stated` | 1.5 × the paper's stated 40 Mbit/s, whatever the trace | {mbps(z['s2_stated_bps'])} |",
        f"| s2, `s2_basis = mean` | 1.5 × the mean | {mbps(z['s2_mean_bps'])} |",
        f"| **s3** | the stream's peak: the largest IP-level rate over any 1-s window (one GOP) | **{mbps(z['s3_bps'])}** "
        f"({z['s3_bps'] / z['mean_bps']:.2f}× the mean) |", "",
        "T is the encoder's elementary-stream target; the 1.5 margin is not raised by the headers' 2.9 % "
        "(the paper's \"150 %\" of a 40 Mbit/s target is 60 Mbit/s).",
    ]


def write_overview(out: Path, grid: Grid, profile: str, results: dict[str, dict[str, Any]], choices: Any = (),
                   cost: dict[str, Any] | None = None, versions: list[str] | None = None) -> None:
    """``out/README.md`` and ``out/findings.csv``: every calibration's findings side by side, the
    substantive count of each, the headline and the evidence for it."""
    paper = paper_tables()
    pgrid = {key: v for key, v in paper.items() if key[1] in grid.k and key[2] in grid.n}
    fp = findings(grid, pgrid)
    p_rate = _k0_rate_per_stream(grid, pgrid)
    keys = [c.key for c in CALIBRATIONS if c.key in results]
    pick, steps = headline_rule(grid, results)
    md = [f"# TFD reproduction: the calibrations (TCP profile {profile})\n",
          f"Grid N ∈ {list(grid.n)}, K ∈ {list(grid.k)}, {grid.duration_s} s per run. Each calibration has its own folder "
          f"(`{profile}-<trace>-<buffer>/`) with its tables beside the paper's, figures and reading; tables never mix "
          "calibrations.", "",
          f"**Headline: {HEADLINE.key}.** It is chosen on what the paper states about its setup, never on its findings "
          "(`headline_rule`): (1) the trace whose rate matches the paper's unloaded rate, Table II at K = 0 (the offered "
          "load, which no mechanism changes); (2) the buffer that comes closest to the paper's premise of a well-dimensioned "
          "network, no loss at K = 0 (\"experimentally determined\"); (3) on a tie, ns-2's default 50 packets. "
          + (f"On these runs the rule picks **{pick}**" + (" (the headline)." if pick == HEADLINE.key else
                                                             f", not the headline {HEADLINE.key}: re-read the choice.")
             + " Steps: " + "; ".join(steps) + "." if pick else "")
          + " The other calibrations show how much each finding depends on these two choices.", ""]
    cals = Table("calibrations", "calibrations", [
        Column("key", "calibration"), Column("mean", "trace mean at IP level, Mbit/s"),
        Column("k0", "K = 0 video per stream, ours / paper, Mbit/s"), Column("buffer", "buffer"),
        Column("reps", "complete repetitions"), Column("hold", "substantive findings holding")],
        [{"key": f"{key}{' (headline)' if m.get('headline') else ''}", "mean": f"{m['trace_mean_bps'] / 1e6:.1f}",
          "k0": f"{_k0_rate_per_stream(grid, results[key]['ours']):.1f} / {p_rate:.1f}", "buffer": m["buffer"],
          "reps": m["reps_complete"], "hold": f"{m['substantive_hold']} of {m['substantive_decided']}"}
         for key in keys for m in [results[key]["meta"]]])
    per_cal = {key: {f.key: f for f in results[key]["findings"]} for key in keys}
    side = Table("findings", "findings by calibration", [Column("claim", "the paper's finding"), Column("label", "label")]
                 + [Column(key, key) for key in keys] + [Column("paper", "the paper's own table")],
                 [{"claim": f.claim, "label": f.label.value, "paper": _by_means(f),
                   **{key: per_cal[key][f.key].verdict.value for key in keys if f.key in per_cal[key]}} for f in fp])
    md += [cals.markdown(title=False), side.markdown(title=False)]
    md += ["The summary counts only *substantive* findings; a *trivial* one (no traffic, no loss) and the ones true "
           "*by construction* of our TFD router (it reserves exactly what the encoder announces) are shown but prove "
           "nothing about the mechanisms. Each calibration's README gives the statistics and intervals."]
    (out / "README.md").write_text("\n".join(md) + "\n")
    Table.of_rows("findings", "findings", [r for key in keys for r in _finding_rows(results[key]["findings"], calibration=key,
                                                                                   profile=profile)]
                  ).write_csv(out, "findings.csv")
    _publish(out, grid, profile, results, "\n".join(md), choices, cost or {}, versions or [])


def _publish(out: Path, grid: Grid, profile: str, results: dict[str, dict[str, Any]], overview: str, choices: Any,
             cost: dict[str, Any], versions: list[str]) -> None:
    """``out/report.json`` (``docs/report-format.md``) and ``out/report.md``, through the layer's
    :func:`~qoelab.experiment.tables.publish`: Tables I and II of the headline calibration (or, if
    it did not run, the first that did) beside the paper's (:func:`cell_tables`, the tables its
    ``table1.csv``/``table2.csv`` come from), its figures, its findings, and as reading the
    overview of every calibration followed by the headline's own; the cost is every
    calibration's main grid (:func:`qoelab.experiment.core.cost`)."""
    key = HEADLINE.key if HEADLINE.key in results else next(iter(results))
    r = results[key]
    m = r["meta"]
    folder = Path(r["out"]).relative_to(out).as_posix()
    T = cell_tables(QUICK if m["quick"] else FULL, r["ours"], r["nreps"], key)
    tables = []
    for name, _, _ in TABLES:
        T[name].csv = f"{folder}/{name}.csv"
        tables.append(T[name])
    figures = [{"id": "fig3", "title": f"Fig. 3 (ours, {key}): PER vs N", "path": f"{folder}/fig3_per_vs_n.png",
                "source": "paper Fig. 3"}]
    figures += [{"id": f"diff-{m}", "title": f"{label}: ours minus the paper's ({key})", "path": f"{folder}/diff_{m}.png"}
                for m, label, _ in METRICS if (Path(r["out"]) / f"diff_{m}.png").is_file()]
    counts = [f"{k} {x['meta']['substantive_hold']} of {x['meta']['substantive_decided']}" for k, x in results.items() if k != key]
    summary = (f"Calibration {key}{' (the headline)' if key == HEADLINE.key else ''}: {summary_line(r['findings'])}"
               + (f" (the other calibrations: {', '.join(counts)})" if counts else "")
               + "; trivial, by-construction and calibrated findings are listed but not counted.")
    every = [c.key for c in CALIBRATIONS]
    command = ("qoelab reproduce tfd" + (" --quick" if m["quick"] else "")
               + ("" if sorted(results) == sorted(every) else f" --calibration {','.join(results)}")
               + ("" if profile == DEFAULT_PROFILE else f" --profile {profile}")
               + (" --sensitivity" if any(f.under for f in r["findings"]) else ""))
    publish(out, paper="tfd", quick=m["quick"], title=f"TFD reproduction (Chodorek & Chodorek), TCP profile {profile}",
            tables=tables, findings=r["findings"], source="paper Sec. IV", group=key, figures=figures,
            reading=overview + "\n\n" + (Path(r["out"]) / "README.md").read_text(), summary=summary,
            setup=f"Grid N ∈ {list(grid.n)}, K ∈ {list(grid.k)}, {grid.duration_s} s per run; calibrations "
                  f"{', '.join(results)}; tables and findings of {key}"
                  f"{' (the headline)' if key == HEADLINE.key else ''}; {m['reps_done_min']}–{m['reps_done_max']} "
                  "repetition(s) per cell.",
            cost=cost, seeds=r["seeds"], command=command, choices=choices, versions=versions)


