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
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Estimate, Finding, Label, Part, above, below, mean_ci, summary_line, within
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.tables import publish, write_repetitions
from qoelab.reproduce.wimax.build import (EXAMPLE_CELL, FULL, METRICS, QUICK, TREATMENTS, Grid, Video, _cell_id,
                                          _packets, _psnr, build_scenario, cell_toml, cells, concealments_of, effective,
                                          experiment, load_video, run_metrics, split_available, with_concealment)
from qoelab.reproduce.wimax.paper import (BASE, CBR_RATES, CHANNEL_LOSS_PCT, CHOICES, CONNECTIONS, DISPLAY_S, FRAMES_MS,
                                          PAPER_T3, PAPER_T4, PAPER_T5, PAPER_T6, TRACE)
from qoelab.reproduce.wimax.report import _est, fig2, figures, reading, tables, _setup

__all__ = ["BASE", "CBR_RATES", "CHOICES", "CONNECTIONS", "EXAMPLE_CELL", "FRAMES_MS", "FULL", "METRICS", "PAPER_T3",
           "PAPER_T4", "PAPER_T5", "PAPER_T6", "QUICK", "TRACE", "Video", "build_scenario", "cell_toml", "cells",
           "effective", "experiment", "fig2", "findings", "load_video", "paths", "register", "run", "run_metrics",
           "split_available", "tables", "_packets"]



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


# --- the reproduction --------------------------------------------------------------------------


def plan(quick: bool, reps: int | None = None) -> Grid:
    """The grid of a mode, with ``--reps`` applied."""
    return core.with_reps(effective(QUICK if quick else FULL), reps)


def _decoded(grid: Grid, rs: runner.RunSet) -> list[Path]:
    """The run folders of ``rs`` whose PSNR is measured (the decoded cells, end to end)."""
    exp = rs.experiments["wimax"]
    return [core.run_dir(exp, rs.folders["wimax"], _cell_id(p), r) for p in exp.cells
            if p["path"] == "e2e" and (p["frame"], p["n"]) in grid.decode for r in range(exp.reps)]


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[..., None] | None = None,
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

        todo = [(d, c) for d in _decoded(grid, rs) for c in concealments_of(rs.setting)
                if is_done(d) and not (d / f"psnr_{c}.json").is_file()]
        with runner.stage(out, "decode"):
            runner.parallel(partial(_decode_one, video=video), todo, jobs, step)

    res = runner.reproduce(out, CHOICES, lambda s: {"wimax": experiment(grid, video, s)},
                           lambda rs: findings(grid, with_concealment(rs.rows_of(), rs.setting["concealment"])),
                           sensitivity=sensitivity, jobs=jobs, progress=progress, executor=executor, log=log, post=decode,
                           post_units=lambda rs: len(_decoded(grid, rs)) * len(concealments_of(rs.setting)))
    if res is None:
        return {"shard": executor.shard}
    found, setting = res.findings, res.main.setting
    rep_rows = with_concealment(res.main.rows_of(), setting["concealment"])
    # Table 3 under the other grant policy, from its sensitivity runs when they exist.
    other = next((s for s in res.sets if s.setting["grant_scheduling"] != setting["grant_scheduling"]
                  and all(s.setting[k] == v for k, v in setting.items() if k != "grant_scheduling")), None)
    with runner.stage(out, "report"):
        tabs = tables(grid, rep_rows, grants=setting["grant_scheduling"],
                      other=None if other is None else (other.setting["grant_scheduling"], other.rows_of()))
        names = {"table3": "table3.csv", "table3_other": "table3_grants.csv", "table4": "table4.csv",
                 "table5": "table5.csv", "table6": "table6.csv",
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
            command=provenance.command("wimax", quick=quick, sensitivity=sensitivity, reps=reps))
    log(f"wimax: {summary_line(found)}; wrote {out}/report.md")
    return {"findings": found, "runs": len(rep_rows)}


def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (runs and decodes, for ``reproduce all``'s total)."""
    grid, video = plan(quick), load_video(None)
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: {"wimax": experiment(grid, video, s)},
                                   sensitivity=sensitivity), lambda rs: len(_decoded(grid, rs)) * len(concealments_of(rs.setting)))


def _decode_one(item: tuple[Path, str], video: Video) -> float:
    return _psnr(item[0], video, item[1])


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce wimax`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "wimax", "Al-Majeed & Fleury: multi-connection TFRC video over a WiMAX uplink (Tables 3-6, Figs. 2-3)",
        run, quick_help="few repetitions, PSNR on 4 cells (CI, about 2 minutes)",
        reps_help="repetitions per cell (default 2 with --quick, else 15 as in the paper)",
        jobs_help="parallel runs and decodes (default 1; 0 = one per CPU)", unit="runs and decodes")
