"""``qoelab reproduce sqf``: the experiments of Bonald, Muscariello, Ostallo, "Self-Prioritization
of Audio and Video Traffic", ICC 2011 (BMO11), rerun in the simulator.

Reading list
------------
- ``shared/papers/sqf-self-prioritization.txt``: Sec. IV (model), Sec. V (testbed).
- ``scenarios/sqf/README.md``: the scenarios and what we chose where the paper is silent.
- ``docs/models/sqf.md``, ``drr.md``, ``pfq.md``, ``fq_codel.md``, ``sqf-analytic.md``,
  ``video.md`` (the MPEG-2 trace and the VLC sender modes).

The video is the bundled MPEG-2 trace (``sqf_mpeg2_5M``, SD, 5 Mbit/s, MP@ML VBV) with its
MPEG-1 Layer II audio (``sqf_audio_mp2_64k``). VLC can stream it two ways, and the paper does
not say which beyond "RTP, audio and video on separate ports" (the elementary-stream mode);
both run, as a bracket (:data:`MODES`):

- ``es``: elementary-stream RTP, each frame's packets spread over the frame interval
  (``pacing = "frame"``);
- ``ts``: VLC's MPEG-TS mux, a constant rate per 200-ms chunk (``pacing = "ts"``), 1316-byte
  datagrams (7 TS packets).

Every cell runs :attr:`Plan.reps` times. Repetition ``r`` has its own random clip offsets and
start times (:func:`draws`, seeded by ``r`` alone), the same for every cell of that repetition,
and every cell of a repetition runs with the same seed (the layer's, :func:`qoelab.experiment.core.seed_of`:
every parameter of these grids is a treatment), so cells are compared paired. The downloads'
TCP is Linux's (``profile = "linux"``), set explicitly in every builder.

What runs: each grid is an :class:`~qoelab.experiment.core.Experiment` (:func:`experiments`),
its cells a builder from parameters (and the repetition) to a scenario and its metrics a
function of the finished run; :func:`qoelab.experiment.runner.reproduce` runs them all (one
sweep folder per grid and repetition under ``runs/``, so an interrupted reproduction resumes
where it stopped), and with ``--sensitivity`` the testbed and Fig. 8 grids again under each
declared alternative of :data:`CHOICES` (under ``sensitivity/``):

==============  ==========================================================================
``testbed``     ``scenarios/sqf/testbed.toml``: sender mode × queue discipline × n downloads
                (Fig. 6, Fig. 7, Table I)
``alone``       the premise: each sender mode with no download at all, FIFO
``jitter``      SQF, n = 5, the ES sender of Fig. 6 (same trace), source jitter δ × access
                rate 10/100 Mbit/s (Fig. 8)
``model``       ``scenarios/sqf/model-check.toml``: Poisson source of peak rate λ × n
                saturating TCP flows; first passage of eq. (1) and the time after it
``whatif``      SQF only, labelled what-ifs the paper leaves open (one repetition): video
                source (the earlier H.264 trace frame-paced and with an 8 Mbit/s peak, CBR and
                Poisson at 5 Mbit/s) × the TCP side (MTU segments ACKed one by one; delayed
                ACKs; 64 kB aggregates as a router with GRO/TSO hands to its qdisc) × n
``mechanism``   SQF with backlog samples and the drops/queue/rto probes
                (:mod:`~qoelab.reproduce.sqf.mechanism`): the testbed at n = 20 (full: n = 5, 20,
                both senders) and the model check's n = 20 cell, under neutral and key ties:
                which queue is longest, who LQD drops, the de-prioritised episodes, and the
                downloads' goodput, timeouts and service gaps (TCP starvation)
==============  ==========================================================================

The package: :mod:`~qoelab.reproduce.sqf.paper` (the paper's values, typed from Table I once
as :class:`~qoelab.experiment.tables.PaperValues` and always labelled as the paper's, and the
choices it leaves open), :mod:`~qoelab.reproduce.sqf.build` (the plan, a repetition's draws,
the builders, the experiments), :mod:`~qoelab.reproduce.sqf.measure` (a finished run → one
row), :mod:`~qoelab.reproduce.sqf.findings` (the claims of Sec. V, judged by the layer's
rules) and :mod:`~qoelab.reproduce.sqf.report` (tables, figures, the generated reading,
``report.md``); this module runs it. Statistics, tables, figures and ``report.json`` come from
:mod:`qoelab.experiment`; every number the reading quotes comes from the tables beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

from qoelab.experiment import Finding, summary_count, summary_line
from qoelab.experiment import core, provenance, runner
from qoelab.experiment.tables import finding_json, provenance_md
from qoelab.experiment.tables import report as report_json  # `report` is this package's submodule
from qoelab.reproduce.sqf.build import Draws, Plan, _base, draws, experiments, plan, video_app
from qoelab.reproduce.sqf.findings import WHY, findings, findings_from_folder
from qoelab.reproduce.sqf.measure import METRICS
from qoelab.reproduce.sqf.paper import (BUFFER, CHOICES, DISCIPLINES, LABEL, MODES, PAPER_JAIN, PAPER_SHARE,
                                        PAPER_TABLE1, SENS_SOURCES, SENS_TCP, SMOOTH_PEAK, START_SPREAD_S, TABLE1_N,
                                        TRACE_S)
from qoelab.reproduce.sqf.report import MODEL_CHECK_WHY, _findings_csv, report_md, write
from qoelab.reproduce.sqf import regime

__all__ = ["BUFFER", "CHOICES", "DISCIPLINES", "Draws", "LABEL", "METRICS", "MODEL_CHECK_WHY", "MODES",
           "PAPER_JAIN", "PAPER_SHARE", "PAPER_TABLE1", "Plan", "SENS_SOURCES", "SENS_TCP", "SMOOTH_PEAK",
           "START_SPREAD_S", "TABLE1_N", "TRACE_S", "WHY", "draws", "experiments", "findings", "findings_from_folder",
           "plan", "register", "run", "size", "summary_count", "video_app"]


def run(out: Path, *, quick: bool = False, jobs: int = 1, log=print, sensitivity: bool = False,
        progress: Callable[..., None] | None = None, executor: Any = None,
        reps: int | None = None) -> dict[str, Any]:
    """Runs (or resumes) every grid (and, with ``sensitivity``, the testbed and Fig. 8 grids under
    each declared alternative, into ``out/sensitivity/``) and writes the report folder ``out``.
    Returns a summary. ``progress(done, total)`` is called as runs finish (total over the whole
    reproduction). ``reps`` overrides the repetitions of every grid (default: :func:`plan`'s)."""
    p = plan(quick, reps)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    log(f"qoelab reproduce sqf{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing {out} "
        f"({p.reps} repetitions)")
    traces = out / "traces"  # the regime's scaled MPEG-2 traces (regime.scaled_trace)
    res = runner.reproduce(out, CHOICES, lambda s: experiments(p, s, traces=traces), _findings_of, sensitivity=sensitivity, jobs=jobs,
                           progress=progress, executor=executor, log=log,
                           variant_experiments=lambda s: experiments(p, s, findings_only=True, traces=traces),
                           default_on_variant_grid=False)
    t_sim = time.time() - t0
    if res is None:  # one task of a job array: the report comes after all
        return {"shard": executor.shard}
    with runner.stage(out, "report"):
        all_findings = {m: [f for f in res.findings if f.group == m] for m in MODES}
        T, figures, reading, ana = write(out, p, res.main, all_findings)
        # The paper's regime (issue 36 item 2): its own tables, section and findings group.
        regime_F = [f for f in res.findings if f.group == "regime"]
        RT = regime.write(out, res.main.rows_of("regime"), res.main.rows_of("ivb"))
        _findings_csv(out, {**all_findings, "regime": regime_F})
        regime_md = regime.section_md(regime.regime_plan(quick, p.reps), RT, regime_F)
    prov = provenance.of(runner.versions(res.sets),
                         command=provenance.command("sqf", quick=quick, sensitivity=sensitivity, reps=reps))
    md = report_md(p, quick, t_sim, T, ana, reading) + regime_md + [provenance_md(prov)]
    (out / "report.md").write_text("\n".join(md) + "\n")
    report_json(out, paper="sqf", mode="quick" if p.quick else "full", title="SQF reproduction (BMO11, ICC 2011)",
           tables=[T["alone"], *(T[f"{k}-{m}"] for m in MODES for k in ("table1", "fig6")), T["fig8"], T["model"],
                   RT["regime"], RT["regime-model"], RT["ivb"]],
           figures=figures, findings=[finding_json(f, source="paper Sec. V") for F in all_findings.values() for f in F]
                    + [finding_json(f, source="paper Sec. IV") for f in regime_F],
           reading="\n".join(reading[2:] + regime_md) + "\n", cost=runner.cost(out, res.sets), choices=CHOICES,
           summary=f"Self-prioritisation of the MPEG-2 video and its audio on a 10 Mbit/s access line, two VLC sender "
                   "modes: " + "; ".join(f"{m}: {summary_line(F)}" for m, F in all_findings.items())
                   + f"; below the fair share (the paper's regime): {summary_line(regime_F)}.",
           setup=f"{p.reps} repetitions per cell; testbed runs of {p.duration}; n = {', '.join(map(str, p.n_values))}; "
                 f"buffer {BUFFER}; Linux TCP CUBIC.",
           provenance=prov)
    summary = {"quick": quick, "reps": p.reps, "wall_s": time.time() - t0, "analytic": ana,
               "findings": {m: dict(zip(("holds", "tested"), summary_count(F)))
                            for m, F in {**all_findings, "regime": regime_F}.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    log(f"report: {out / 'report.md'} ({time.time() - t0:.0f} s)")
    return summary


def _findings_of(rs: runner.RunSet) -> list[Finding]:
    """Both sender modes' findings from one setting's testbed and Fig. 8 runs."""
    tb_reps, jit_reps = rs.rows_of("testbed"), rs.rows_of("jitter")
    tb = core.aggregate(tb_reps, ("mode", "discipline", "n"), METRICS)
    jit = core.aggregate(jit_reps, ("access_rate", "delta_ms"), ("video_loss", "audio_loss"))
    return ([f for m in MODES for f in findings(m, tb_reps, tb, jit_reps, jit)]
            + regime.regime_findings(rs.rows_of("regime"), rs.rows_of("ivb")))



def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (for ``reproduce all``'s total)."""
    p = plan(quick)
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: experiments(p, s), sensitivity=sensitivity,
                                   variant_experiments=lambda s: experiments(p, s, findings_only=True),
                                   default_on_variant_grid=False))


def register(subparsers) -> argparse.ArgumentParser:
    """Adds ``reproduce sqf`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(
        subparsers, "sqf", "Bonald, Muscariello, Ostallo: Self-Prioritization of Audio and Video Traffic (ICC 2011)", run,
        quick_help="short runs and a coarse grid (CI)",
        reps_help="repetitions per cell of every grid (default 2 with --quick, else 10: the evidence a committed "
                  "full run needs; the paper ran each point once)")
