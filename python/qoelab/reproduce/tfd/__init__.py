"""``qoelab reproduce tfd``: Chodorek & Chodorek, *Performance evaluation of the TFD-capable
dynamic QoS assurance of HD video streaming* (shared/papers/tfd-dynamic-qos-hd-video.txt).

The experiment (paper §IV, Fig. 2): N = 1..10 HD video streams over RTP/UDP and K = 0..10 bulk
TCP CUBIC flows share one 1 Gbit/s link; four scenarios:

- ``s1`` best effort: drop-tail FIFO routers;
- ``s2`` RSVP, each stream reserving 150 % of the trace's own encoder target bit rate
  (:func:`~qoelab.reproduce.tfd.build.s2_rate_bps`: 60 Mbit/s for the 40 Mbit/s trace, 91.4 for
  the 62 Mbit/s one; the ``s2_basis`` choice);
- ``s3`` RSVP, each stream reserving the trace's peak rate (its largest IP-level rate over a
  1-s window, one GOP);
- ``s4`` TFD: senders announce the next 300 ms, routers reserve it (``kind = "tfd"``).

Reservations of s2–s4 are served by the same scheduler (``crates/core/src/queue/tfd.rs``; SCFQ by
default, a plain reserved-rate scheduler as the ``scheduler`` choice's alternative), whose rules (lending, headroom, hold time, admission limit)
are ours, declared in :data:`CHOICES` with the senders' pacing and what cannot be varied yet;
``--sensitivity`` runs every finding of the headline calibration under each alternative (on a
declared subset of cells, :data:`~qoelab.reproduce.tfd.build.SENS_FULL`). Each stream starts
at a random clip of the 152 s trace and a random moment within it (seeded per repetition). Each
grid is an experiment of the layer (:func:`experiments`, run by
:mod:`qoelab.experiment.runner`): one sweep folder per repetition, ``sweep/rep<r>/``, so an
interrupted run resumes where it stopped.

Our reading of Fig. 2 (not in the text): video servers → R1, TCP servers → R2; R1→R3 and
R2→R3; R3→R4 is the shared link; R4→R5 → video receivers; TCP receivers on R4. All links
1 Gbit/s; access links 0.5 ms, router links 1 ms, the shared link 2 ms (RTT ≈ 10 ms).

**Calibrations.** Two things the paper leaves open change the results most, so they are an axis
(:class:`Calibration`), and each calibration has its own grid, tables and findings:

- the trace's rate: ``40M`` (``hd1080_40M``, the paper's stated 40 Mbit/s target, 40.7 Mbit/s at
  IP level) or ``62M`` (``hd1080_62M``, the same trace scaled to the 62 Mbit/s per stream that
  the paper's Table II delivers at K = 0; ``qoelab.video.traces.rescale``);
- the routers' best-effort buffer: ``50p`` (ns-2's default queue, the paper's emulator) or
  ``1000p``.

The TCP flows' ``profile`` is explicit (default ``linux``; ``rfc`` is the behaviour of the
runs in ``scenarios/tfd/expected/rfc-40M-1000p/``) and recorded in each report.

The package: :mod:`~qoelab.reproduce.tfd.build` (the testbed: calibrations, trace, one cell as a
scenario, the metrics of a run, the paper's tables), :mod:`~qoelab.reproduce.tfd.findings` (the
statistics, the findings, the headline rule) and :mod:`~qoelab.reproduce.tfd.report` (tables,
figures, READMEs, ``report.json``); this module declares the choices and runs it.

Outputs in the report folder: one folder per calibration (``<profile>-<trace>-<buffer>/``) with
``table1.csv``/``table2.csv`` (ours beside the paper's), ``table1.md``/``table2.md``,
``findings.csv``, ``repetitions.csv``, difference heat maps ``diff_*.png``, Fig. 3-style
``fig3_per_vs_n.png`` and ``README.md`` with the reading (and, with ``--sensitivity``, the
variants' runs under ``sensitivity/`` and ``sensitivity.csv``); and a ``README.md`` above them
comparing the calibrations' findings, with ``report.json`` and ``report.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from qoelab import paths
from qoelab.errors import QoelabError
from qoelab.experiment import Choice, Factorial, Finding, Verdict, summary_count
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.choices import choices_md, defaults, value_text
from qoelab.experiment.core import Experiment
from qoelab.experiment.tables import duration_str
from qoelab.reproduce.tfd.build import (BUFFER, CALIBRATIONS, CLIP_S, CLIPS, DEFAULT_PROFILE, EXAMPLE_CELLS, FULL,
                                        FULL_S, HEADLINE, LEGACY, LEGACY_PROFILE, NS2_BUFFER, PROFILES, QUICK, S2_BASES, S2_SHARE,
                                        SCENARIOS, SENS_FULL, SENS_QUICK, SENS_REPS, TARGET_BPS, TRACE, TRACES, Calibration, Grid,
                                        build_scenario, cell_metrics, cell_toml, max_frame_bytes, mean_rate_bps, paper_tables,
                                        parse_calibrations, peak_rate_bps, reservation_sizes, s2_rate_bps,
                                        target_rate_bps, trace_path)
from qoelab.reproduce.tfd.findings import (complete_reps, findings, findings_from_repetitions, findings_from_tables,
                                           headline_rule, recorded_intervals, rep_statistics, summary)
from qoelab.reproduce.tfd.report import METRICS, cell_tables, write_findings_csv, write_overview, write_report

__all__ = ["BUFFER", "CALIBRATIONS", "CHOICES", "CLIPS", "CLIP_S", "DEFAULT_PROFILE", "EXAMPLE_CELLS", "FULL", "FULL_S",
           "HEADLINE", "LEGACY", "LEGACY_PROFILE", "METRICS", "NS2_BUFFER", "PROFILES", "QUICK", "S2_BASES", "S2_SHARE", "SCENARIOS",
           "TARGET_BPS", "TRACE", "TRACES", "Calibration", "Grid", "build_scenario", "cell_metrics", "cell_tables",
           "cell_toml", "complete_reps", "experiments", "findings", "findings_from_repetitions", "findings_from_tables",
           "headline_rule",
           "mean_rate_bps", "paper_tables", "parse_calibrations", "peak_rate_bps", "recorded_intervals", "register",
           "rep_statistics", "reservation_sizes", "run", "run_calibration", "s2_rate_bps", "size", "summary",
           "target_rate_bps", "trace_path", "write_repetitions_findings", "write_tables_findings"]

#: The choices the calibrations realise (each calibration is one setting of both: its own grid,
#: tables and report), as the Factorial below declares.
CAL_CHOICES = ("trace", "buffer")

CHOICES = (
    Choice("trace", HEADLINE.trace, tuple(t for t in TRACES if t != HEADLINE.trace),
           "the 62 Mbit/s per stream that the paper's Table II delivers at K = 0 (its stated target is 40 Mbit/s); "
           "each calibration is a trace and a buffer"),
    Choice("buffer", HEADLINE.buffer, (NS2_BUFFER,),
           "the routers' best-effort buffer: ours, picked by the headline rule on the setup's premise of no loss at "
           "K = 0; 50 packets is ns-2's default queue"),
    Choice("lend_idle", True, (False,),
           "the reservation routers lend capacity a reservation leaves idle to best effort (work-conserving SCFQ); the "
           "paper's utilisation of 80–99 % suggests its routers did not"),
    Choice("headroom", 0.1, (0.0,), "our TFD router reserves 10 % above the announced rate; the paper gives no rule"),
    Choice("hold", 2.5, (1.0,), "a TFD reservation lives 2.5 announcement horizons without a refresh (one lost or "
                                "late refresh tolerated); 1.0: exactly the horizon"),
    Choice("admission", 0.9, (0.99,), "admission control refuses reservations beyond 90 % of the link: ours"),
    Choice("pacing", "frame", ("burst",), "the video senders spread each frame's datagrams over the frame interval, "
                                          "as a paced RTP sender; burst: back to back at the frame's time"),
    Choice("announcement", "oracle", ("forecast", "frame"),
           "the TFD sender announces exactly the bytes its next 300 ms will carry (an encoder with its GOP in hand, "
           "or a stored file's index: the paper's senders replay stored HD clips); forecast: a live sender's rate "
           "estimate, an EWMA of the bytes of past horizons (the draft's F flag); frame: a live sender that knows only "
           "the frame it is sending, scaled to the horizon (the draft's B flag, a one-frame buffer)"),
    Choice("rsvp_policing", "tspec", ("none",),
           "RFC 2211 and 2212: traffic beyond the Tspec token bucket (r = the reserved rate, b = the trace's largest "
           "frame at IP level) does not conform and is forwarded as best effort; every port holding the reservation "
           "polices (RFC 2211 asks it of each network element; RFC 2212's edge policing with reshaping inside is not "
           "modelled); none: the excess queues in the reserved class, as before issue 36"),
    Choice("scheduler", "scfq", ("reserved_rate",),
           "self-clocked fair queueing (Golestani 1994) serves the reservations: a reserved flow gets at least its rate "
           "and shares spare capacity by weight; the paper names no scheduler. reserved_rate: each reservation served "
           "at exactly its rate, never faster (a VirtualClock rate regulator per flow in front of one priority class "
           "above best effort: rate-controlled static priority, Zhang & Ferrari 1993), no unused reservation given to "
           "another; best effort gets what is left (with lend_idle = false at most C − Σ r)"),
    Choice("s2_basis", "target", tuple(b for b in S2_BASES if b != "target"),
           "s2 reserves 150 % of the trace's own encoder target bit rate (the paper: \"made according to 150% (s2) … of "
           "target bit rate\"; 40 Mbit/s for hd1080_40M, 40 × 1.524057 = 60.96 Mbit/s for hd1080_62M, the target its "
           "scaled sizes imply); stated: 150 % of the paper's stated 40 Mbit/s whatever the trace (60 Mbit/s, as before "
           "issue 36); mean: 150 % of the trace's measured mean at IP level"),
)
FACTORIALS = (Factorial(CAL_CHOICES),)
_RULES = {"headroom": "headroom", "hold": "hold", "admission": "max_reserved_share", "scheduler": "scheduler"}


def experiments(cal: Calibration, profile: str, grid: Grid, reps: int, trace: Path, peak_bps: int,
                quick: bool = False, setting: dict[str, Any] | None = None) -> dict[str, Experiment]:
    """A calibration's grid (scenario × N × K, ``reps`` repetitions) as an experiment of the layer
    (:mod:`qoelab.experiment.core`), under ``setting`` (the routers' rules and the senders'
    pacing; default: their defaults). A cell's random clips and offsets are drawn from its
    repetition (``build_scenario``'s ``seed`` is ``1 + rep``, so repetition 0 is the bundled cell
    files'), the same for the four scenarios of a cell; the scenario is a treatment, so they share
    the simulator's seed too. The experiment's name carries the calibration and the profile, and
    its scenarios the trace and the buffer, so a folder of one calibration refuses to resume with
    another's cells."""
    s = setting or defaults(CHOICES)
    rules = {key: s[c] for c, key in _RULES.items() if s[c] != defaults(CHOICES)[c]}
    police = s["rsvp_policing"] == "tspec"
    # Read from the trace when a scenario is first built (size() builds none): the Tspec bucket
    # and s2's reservation.
    bucket: list[int] = []

    def build(c: dict[str, Any], rep: int = 0):
        from qoelab.scenario import Scenario

        if not bucket:
            bucket.extend((max_frame_bytes(trace) if police else 0, s2_rate_bps(trace, s["s2_basis"])))
        d = build_scenario(c["scenario"], int(c["n"]), int(c["k"]), 1 + rep, grid.duration_s, trace, peak_bps,
                           pacing=s["pacing"], buffer=cal.buffer, lend=s["lend_idle"], profile=profile, rules=rules,
                           police=police, bucket_bytes=bucket[0], announce=s["announcement"], s2_bps=bucket[1])
        return Scenario.from_dict(d, source=f"reproduce tfd {d['name']}", base_dir=paths.root())

    def metrics(d: Path, c: dict[str, Any]) -> dict[str, float]:
        return cell_metrics(d, grid.duration_s)

    return {"sweep": Experiment(f"tfd-{cal.folder(profile)}", [{"scenario": sc, "n": n, "k": k} for sc in grid.scenarios
                                                               for n in grid.n for k in grid.k],
                                build, metrics, paired=("scenario",), reps=reps, per_rep=True)}


#: The metrics of a run (:func:`cell_metrics`), aggregated over repetitions.
RUN_METRICS = ("per_pct", "utilisation_pct", "video_mbps", "tcp_mbps", "video_offered_mbps", "video_delay_ms",
               "video_delay_p99_ms", "video_jitter_ms")


def aggregate_reps(rows: list[dict[str, Any]]):
    """Each cell's metrics over its finished repetitions (:func:`qoelab.experiment.core.aggregate`:
    the mean, and ``<metric>_ci95`` the half-width of its Student-t 95 % interval, NaN with one
    repetition), how many there were, each repetition's own cells (``{rep: {cell: metrics}}``),
    whether the repetitions are independent (some cell's runs differ between them) and the
    seeds. Cells are keyed ``(scenario, K, N)``."""
    # Runs measured before the delay columns existed lack them: NaN, not a KeyError.
    rows = [{**dict.fromkeys(RUN_METRICS, math.nan), **r} for r in rows]
    by_rep: dict[int, dict[tuple[str, int, int], dict[str, float]]] = {}
    for r in rows:
        by_rep.setdefault(r["rep"], {})[(r["scenario"], r["k"], r["n"])] = {m: r[m] for m in RUN_METRICS}
    out: dict[tuple[str, int, int], dict[str, float]] = {}
    nreps: dict[tuple[str, int, int], int] = {}
    for a in core.aggregate(rows, ("scenario", "k", "n"), RUN_METRICS):
        key = (a["scenario"], a["k"], a["n"])
        out[key] = {}
        for m in RUN_METRICS:
            e = a[m]
            out[key][m], out[key][f"{m}_ci95"] = (e.mean, e.half_width) if e is not None else (math.nan, math.nan)
        nreps[key] = a[RUN_METRICS[0]].n
    cells: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["scenario"], r["k"], r["n"]), []).append(r)
    independent = not cells or not all(core.identical(rs) for rs in cells.values())
    return out, nreps, by_rep, independent, sorted({r["seed"] for r in rows})


def _grid_findings(grid: Grid, rows: list[dict[str, Any]], group: str = "") -> list[Finding]:
    ours, _, by_rep, independent, _ = aggregate_reps(rows)
    return findings(grid, ours, complete_reps(grid, by_rep), independent=independent, group=group) if ours else []


# --- the run ---------------------------------------------------------------------------------


def run(out: Path, quick: bool = False, reps: int | None = None, jobs: int = 1,
        progress: Callable[..., None] | None = None, report_only: bool = False,
        calibrations: tuple[Calibration, ...] | None = None, profile: str = DEFAULT_PROFILE,
        executor: Any = None, sensitivity: bool = False) -> dict[str, Any]:
    """Runs the missing cells of each calibration's grid (all of them on a fresh folder; with
    ``sensitivity``, the headline's grid under each declared alternative of the routers' rules
    too) and writes each calibration's report (``out/<profile>-<trace>-<buffer>/``) and the
    overview (``out/README.md``, ``out/findings.csv``, ``report.json``). Returns
    ``{"calibrations": {key: result}, ...}`` with each result as :func:`run_calibration`
    returns it. One progress display counts every run of every calibration.

    With ``report_only`` nothing runs: the reports are written from the runs already finished, so
    a long grid stopped part-way (the 20-repetition one takes many hours on two cores) can be
    read before it completes; a calibration with no runs is left out."""
    cals = calibrations or CALIBRATIONS
    if profile not in PROFILES:
        raise QoelabError(f"--profile {profile}: unknown TCP profile (known: {', '.join(PROFILES)})")
    for c in cals:
        _refuse_old_layout(out / c.folder(profile))
    if report_only and not any(_has_runs(out / c.folder(profile)) for c in cals):
        raise QoelabError(f"{out}: no runs to report on (run without --report-only first)")
    out.mkdir(parents=True, exist_ok=True)
    todo = [c for c in cals if not report_only or _has_runs(out / c.folder(profile))]
    plans = {c.key: _plan(out / c.folder(profile), c, profile, quick, reps, sensitivity and c == HEADLINE) for c in todo}
    total = sum(runner.size(p["sets"]) for p in plans.values())
    results: dict[str, dict[str, Any]] = {}
    base = 0
    for cal in todo:
        pl = plans[cal.key]
        results[cal.key] = run_calibration(out / cal.folder(profile), cal, profile, quick=quick, reps=reps, jobs=jobs,
                                           progress=runner.offset(progress, base, total), report_only=report_only,
                                           executor=executor, plan=pl)
        base += runner.size(pl["sets"])
    if getattr(executor, "shard", None):  # one task of a job array: the reports come after all
        return {"shard": executor.shard, "calibrations": results}
    if sensitivity and HEADLINE.key in results:
        _attach_calibrations(results)
    with runner.stage(out, "report"):
        grid = QUICK if quick else FULL
        every = [s for r in results.values() for s in r["sets"]]
        write_overview(out, grid, profile, results, CHOICES, runner.cost(out, every), runner.versions(every))
    return {"calibrations": results, "profile": profile, "out": out}


def _attach_calibrations(results: dict[str, dict[str, Any]]) -> None:
    """The headline's findings under the other calibrations that ran: each is a setting of the
    ``trace`` × ``buffer`` factorial (:data:`FACTORIALS`)."""
    h = results[HEADLINE.key]
    by: dict[str, list[Finding]] = {}
    for key, r in results.items():
        cal = r["meta"]["cal"]
        changes = {n: v for n, v in (("trace", cal.trace), ("buffer", cal.buffer)) if v != getattr(HEADLINE, n)}
        if changes:
            by[",".join(f"{n}={value_text(v)}" for n, v in changes.items())] = r["findings"]
    fs = runner.attach(h["findings"], by)
    h["findings"] = [_join(f, g) for f, g in zip(h["findings"], fs)]
    runner.write_sensitivity(h["out"], h["findings"], HEADLINE.key)
    write_findings_csv(h["out"] / "findings.csv", h["findings"], findings(h["grid"], h["paper_grid"]), HEADLINE.key)


def _join(f: Finding, g: Finding) -> Finding:
    """``f`` with ``g``'s verdicts under other settings added to its own."""
    return replace(f, under=f.under + g.under, on_cells=f.on_cells + g.on_cells)


def size(quick: bool, sensitivity: bool = False, calibrations: tuple[Calibration, ...] | None = None,
         profile: str = DEFAULT_PROFILE) -> int:
    """The progress units of ``run`` (every calibration's runs; with ``sensitivity`` the
    headline's variants too), for ``reproduce all``'s total."""
    grid, sgrid, reps = (QUICK, SENS_QUICK, 1) if quick else (FULL, SENS_FULL, 20)
    sreps = _sens_reps(quick, reps)
    rules = tuple(c for c in CHOICES if c.name not in CAL_CHOICES)
    return sum(runner.size(runner.sets(Path("."), rules, lambda s: experiments(c, profile, grid, reps, Path(), 0, quick, s),
                                       sensitivity=sensitivity and c == HEADLINE,
                                       variant_experiments=lambda s: experiments(c, profile, sgrid, sreps, Path(), 0, quick, s)))
               for c in calibrations or CALIBRATIONS)


def _refuse_old_layout(folder: Path) -> None:
    """A calibration folder written before the experiment layer kept every repetition's runs in
    one ``sweep/runs/``; its runs are not this version's cells, so it is refused, not resumed
    (nor reported on) as if empty."""
    if (folder / "sweep" / "runs").is_dir():
        raise QoelabError(f"{folder / 'sweep' / 'runs'}: runs of an earlier qoelab (one folder for all repetitions); this "
                          "version keeps repetition r in sweep/rep<r>/: write to a new output folder")


def _has_runs(folder: Path) -> bool:
    """Whether a calibration's folder holds its main grid's runs (of any repetition)."""
    return any(d.is_dir() for d in (folder / "sweep").glob("rep*/runs"))


def _plan(out: Path, cal: Calibration, profile: str, quick: bool, reps: int | None, sensitivity: bool) -> dict[str, Any]:
    """What a calibration runs: its grid, trace, peak rate and the settings (:func:`runner.sets`;
    with ``sensitivity``, the routers' rules' variants on the sensitivity grid, with the
    default on that grid too)."""
    grid = QUICK if quick else FULL
    sgrid = SENS_QUICK if quick else SENS_FULL
    reps = reps or (1 if quick else 20)
    sreps = _sens_reps(quick, reps)
    trace = trace_path(out) if cal.trace_path == TRACE else paths.root() / cal.trace_path
    if not trace.exists():
        raise QoelabError(f"{cal.trace_path}: the trace of calibration {cal.key} is missing (python -m qoelab.video.traces.rescale)")
    peak = peak_rate_bps(trace)
    rules = tuple(c for c in CHOICES if c.name not in CAL_CHOICES)
    sets = runner.sets(out, rules, lambda s: experiments(cal, profile, grid, reps, trace, peak, quick, {**_cal(cal), **s}),
                       sensitivity=sensitivity, layout=lambda base, names: {"sweep": base / "sweep"},
                       variant_experiments=lambda s: experiments(cal, profile, sgrid, sreps, trace, peak, quick,
                                                                 {**_cal(cal), **s}))
    return {"grid": grid, "sgrid": sgrid, "reps": reps, "sens_reps": sreps, "trace": trace, "peak": peak, "sets": sets}


def _sens_reps(quick: bool, reps: int) -> int:
    """Repetitions per cell of the sensitivity's settings: ``reps``, capped at
    :data:`~qoelab.reproduce.tfd.build.SENS_REPS` in a full run."""
    return reps if quick else min(reps, SENS_REPS)


def _cal(cal: Calibration) -> dict[str, Any]:
    return {**defaults(CHOICES), "trace": cal.trace, "buffer": cal.buffer}


def run_calibration(out: Path, cal: Calibration, profile: str, quick: bool = False, reps: int | None = None,
                    jobs: int = 1, progress: Callable[..., None] | None = None, report_only: bool = False,
                    executor: Any = None, plan: dict[str, Any] | None = None, sensitivity: bool = False) -> dict[str, Any]:
    """One calibration's grid and report in ``out`` (with ``sensitivity``, the routers' rules'
    variants too)."""
    out.mkdir(parents=True, exist_ok=True)
    _refuse_old_layout(out)
    pl = plan or _plan(out, cal, profile, quick, reps, sensitivity)
    grid, sets, trace, peak = pl["grid"], pl["sets"], pl["trace"], pl["peak"]
    t0 = time.time()
    if report_only:
        runner.read(sets)
    elif not runner.execute(sets, jobs, progress, executor=executor):
        return {"shard": executor.shard, "runs": sets[0].counts.get("sweep")}
    wall = time.time() - t0
    main = sets[0]
    ours, nreps, by_rep, independent, seeds = aggregate_reps(main.rows_of())
    if not ours:
        raise QoelabError(f"{out}: no finished runs of this grid")
    full_reps = complete_reps(grid, by_rep)
    fs = findings(grid, ours, full_reps, independent=independent, group=cal.key)
    if len(sets) > 1:
        # Every alternative is judged on the sensitivity cells (a shared one on the default's
        # rows there), and compared with the default on them.
        fs = runner.attach(fs, {s.name: _grid_findings(pl["sgrid"], s.rows_of(), cal.key) for s in sets[1:]},
                           on_cells=[s.name for s in sets[1:]])
        runner.write_sensitivity(out, fs, cal.key)
    # Each repetition is its own sweep folder (``sweep/rep<r>``), so its cost is that folder's.
    per_rep = core.timings(main.experiments["sweep"], main.folders["sweep"])
    versions: list[str] = []
    for _, c in per_rep:
        versions += [v for v in c["versions"] if v not in versions]
    # ``jobs`` and ``wall_s`` describe this invocation; a --report-only one ran nothing.
    meta = {"quick": quick, "reps": pl["reps"], "report_only": report_only, "jobs": None if report_only else jobs,
            "calibration": cal.key, "trace_rate": cal.trace, "buffer": cal.buffer, "profile": profile,
            "headline": cal == HEADLINE, "duration_s": grid.duration_s, "trace": _shown(trace),
            "s3_peak_bps": peak, "trace_mean_bps": mean_rate_bps(trace), "s2_rate_bps": s2_rate_bps(trace, defaults(CHOICES)["s2_basis"]),
            "s2_basis": defaults(CHOICES)["s2_basis"], "sizes": reservation_sizes(trace),
            "tspec_bucket_bytes": max_frame_bytes(trace),
            "wall_s": None if report_only else wall, "runs": main.counts.get("sweep"),
            "reps_done_min": min(nreps.get(c, 0) for c in _keys(grid)), "reps_done_max": max(nreps.values()),
            "cells": len(_keys(grid)), "cells_reported": len(ours),
            "runs_cpu_s": sum(c["cpu_s"] for _, c in per_rep), "runs_wall_s": sum(c["wall_s"] for _, c in per_rep),
            "runs_timed": sum(c["runs"] for _, c in per_rep), "code_versions": versions,
            # The repetitions' folders run one after the other: the grid's running time is the
            # sum of theirs.
            "runs_active_wall_s": sum(c["active_wall_s"] for _, c in per_rep),
            # Each repetition's own cost: how long the grid ran for it (the union of its runs'
            # intervals, with however many workers) and its CPU time.
            "per_rep_cost": [{"rep": r, "runs": c["runs"], "active_wall_s": c["active_wall_s"], "cpu_s": c["cpu_s"]}
                             for r, c in per_rep if c["runs"]],
            "reps_complete": len(full_reps)}
    meta["substantive_hold"], meta["substantive_decided"] = summary_count(fs)
    meta["provenance"] = provenance.of(runner.versions(sets))
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    meta["choices"] = choices_md(tuple(c for c in CHOICES if c.name not in CAL_CHOICES))
    meta["sensitivity_grid"] = (f"N ∈ {list(pl['sgrid'].n)} × K ∈ {list(pl['sgrid'].k)}, every scenario, "
                                f"{pl['sens_reps']} repetition{'s' if pl['sens_reps'] != 1 else ''} per cell ({'quick' if quick else 'full'} mode)")
    with runner.stage(out, "report"):
        write_report(out, grid, ours, meta, fs, full_reps, nreps)
    meta["cal"] = cal
    pgrid = {key: v for key, v in paper_tables().items() if key[1] in grid.k and key[2] in grid.n}
    return {"ours": ours, "meta": meta, "reps": full_reps, "findings": fs, "out": out, "nreps": nreps, "seeds": seeds,
            "sets": sets, "grid": grid, "paper_grid": pgrid}


def _keys(grid: Grid) -> list[tuple[str, int, int]]:
    return [(sc, k, n) for sc in grid.scenarios for k in grid.k for n in grid.n]


def _shown(p: Path) -> str:
    """A path as the report shows it: relative to the repository when it lies inside it, so that
    a report committed from one checkout does not name another machine's folders."""
    try:
        return str(p.resolve().relative_to(paths.root().resolve()))
    except ValueError:
        return str(p)


def write_tables_findings(folder: Path, path: Path, grid: Grid = FULL, **first: Any) -> None:
    """``findings.csv`` of a committed report folder whose repetitions were not kept, from
    :func:`findings_from_tables` (``tests/reproduce/test_tfd.py`` keeps the committed one equal);
    ``first`` adds leading columns (the overview's profile)."""
    _write_recomputed(path, findings_from_tables(folder, grid), grid, folder.name, **first)


def _write_recomputed(path: Path, fs: list[Finding], grid: Grid, calibration: str, **first: Any) -> None:
    """A recomputed ``findings.csv``: ``fs`` beside the verdicts of the paper's own tables."""
    paper = {key: v for key, v in paper_tables().items() if key[1] in grid.k and key[2] in grid.n}
    write_findings_csv(path, fs, findings(grid, paper), calibration, **first)


def write_repetitions_findings(folder: Path, path: Path, grid: Grid = FULL, **first: Any) -> None:
    """``findings.csv`` of a report folder whose runs are not kept, recomputed from what it
    keeps for this: each complete repetition's statistics (``repetitions.csv``,
    :func:`findings_from_repetitions`) and, where the sensitivity ran, the verdicts under each
    alternative (``sensitivity.csv``; every variant there was judged on the sensitivity's cells,
    the default's among them). ``first`` adds leading columns (the overview's profile)."""
    meta = folder / "meta.json"
    group = json.loads(meta.read_text())["calibration"] if meta.is_file() else folder.name
    fs = findings_from_repetitions(folder, grid, group=group)
    sens = folder / "sensitivity.csv"
    if sens.is_file():
        got = runner.read_sensitivity(sens)
        fs = runner.attach_verdicts(fs, got, on_cells=tuple(got))
    _write_recomputed(path, fs, grid, group, **first)


LEGACY_BANNER = ("> **Legacy, mixed provenance** (PROVENANCE.md): committed before results had to come from one clean "
                 "commit; its runs are not kept. The verdicts in this README are those of the code that wrote it; "
                 "`findings.csv` holds them recomputed from the committed tables under today's rules "
                 "(docs/experiments.md, Verdict rules).\n\n")


def refresh_legacy(folder: Path, versions: list[str] | None, what: str, grid: Grid = FULL) -> None:
    """Marks a committed calibration folder of an earlier code (its runs gone) as legacy: its
    ``PROVENANCE.md`` (:func:`qoelab.experiment.provenance.legacy_note`), the banner on its
    README and its ``findings.csv`` recomputed from its tables under today's rules."""
    write_tables_findings(folder, folder / "findings.csv", grid)
    readme = folder / "README.md"
    text = readme.read_text()
    if not text.startswith("> **Legacy"):
        readme.write_text(LEGACY_BANNER + text)
    provenance.legacy_note(folder, versions=versions, what=what,
                           recomputed="`findings.csv` is recomputed from the committed `table1.csv` and `table2.csv` "
                                      "(per-cell means) and the paired intervals the README recorded, by "
                                      "`qoelab.reproduce.tfd.write_tables_findings`.")


# --- CLI -------------------------------------------------------------------------------------


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce tfd`` to the CLI (:func:`qoelab.reproduce.add_paper_command`, with the
    calibrations, the TCP profile and ``--report-only``)."""
    from qoelab.reproduce import add_paper_command

    def options(a: argparse.Namespace) -> dict[str, Any]:
        return {"report_only": a.report_only, "calibrations": parse_calibrations(a.calibration), "profile": a.profile}

    def done(r: dict[str, Any], out: Path) -> None:
        for key, c in r["calibrations"].items():
            m = c["meta"]
            now = "nothing run now" if m["wall_s"] is None else f"{m['wall_s']:.0f} s now"
            print(f"{key}: {m['substantive_hold']} of {m['substantive_decided']} substantive findings hold "
                  f"({now}; {m['runs_timed']} runs, {duration_str(m['runs_cpu_s'])} of CPU in all)")
        print(f"wrote {out}/README.md")

    t = add_paper_command(subparsers, "tfd", "Chodorek & Chodorek: TFD-capable dynamic QoS for HD video vs RSVP (Tables I, II, "
                          "Fig. 3)", run, quick_help="short runs on a coarse grid (CI, a few minutes on 2 cores)",
                          reps_help="repetitions per cell (default 1 with --quick, else 20 as in the paper)",
                          label="tfd grid", options=options, done=done)
    t.add_argument("--report-only", action="store_true",
                   help="run nothing; write the report from the runs already finished in the folder (a grid stopped part-way)")
    t.add_argument("--calibration", default="all", metavar="LIST",
                   help=f"calibrations to run: all (default), headline ({HEADLINE.key}) or a comma-separated list of "
                        f"{', '.join(c.key for c in CALIBRATIONS)} (trace rate - routers' buffer)")
    t.add_argument("--profile", default=DEFAULT_PROFILE, choices=PROFILES,
                   help=f"TCP profile of the bulk flows (default {DEFAULT_PROFILE}; rfc reproduces expected/rfc-40M-1000p)")
    return t
