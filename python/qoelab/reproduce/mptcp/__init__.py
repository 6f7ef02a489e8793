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
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Estimate, Finding, Label, Premise, above, mean_ci, summary_line, within
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.tables import publish, write_repetitions
from qoelab.reproduce.mptcp.build import (FULL, METRICS, QUICK, TREATMENTS, Grid, _cell_id, build_scenario, cells,
                                          clip_s, experiment, mptcp_dash_refusal, run_metrics, segment_rates)
from qoelab.reproduce.mptcp.paper import (ABRS, BASE, CHOICES, CONFIGS, FACTOR, PAPER_FIG4_MS, PAPER_FIG5, PAPER_REPS,
                                          READING_LABEL, READINGS, TABLE1, TRANSPORT_LABEL)
from qoelab.reproduce.mptcp.report import _main_rows, _setup, consistent_readings, figures, reading, tables

__all__ = ["ABRS", "BASE", "CHOICES", "CONFIGS", "FACTOR", "FULL", "METRICS", "PAPER_FIG4_MS", "PAPER_FIG5", "PAPER_REPS",
           "QUICK", "READINGS", "READING_LABEL", "TABLE1", "TRANSPORT_LABEL", "QoelabError", "build_scenario", "cells",
           "clip_s", "consistent_readings", "experiment", "findings", "mptcp_dash_refusal", "run", "run_metrics",
           "segment_rates", "tables", "paths", "_cell_id", "_main_rows"]



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


# --- the reproduction ----------------------------------------------------------------------------


def plan(quick: bool, reps: int | None = None) -> Grid:
    """The grid of a mode, with ``--reps`` applied."""
    return core.with_reps(QUICK if quick else FULL, reps)


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[..., None] | None = None,
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
            command=provenance.command("mptcp", quick=quick, sensitivity=sensitivity, reps=reps))
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
