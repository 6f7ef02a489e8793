"""``qoelab reproduce qos``: every QoS mechanism the core has, side by side on two testbeds: the
question our users bring (issue 40 item 5), which no paper answers, so the report has no paper
column and its findings are comparisons with FIFO drop-tail.

Reading list
------------
- ``docs/qos-study.md``: the question, the testbeds, the disciplines, what is chosen and why.
- :mod:`qoelab.mechanisms`: the disciplines as data (shared with ``qoelab demo``).
- :mod:`qoelab.reproduce.sqf.build` and :mod:`qoelab.reproduce.tfd.build`: the testbeds' builders,
  reused as they are.

The package: :mod:`~qoelab.reproduce.qos.build` (testbeds, disciplines, declared choices,
cells, metrics, the two experiments) and :mod:`~qoelab.reproduce.qos.report` (findings, tables,
figures, reading); this module runs them on the experiment layer (:func:`qoelab.experiment.runner.reproduce`),
decodes the CIF video's deliveries (a post-run stage) and publishes ``report.json`` and ``report.md``
with ``qos_sqf.csv``, ``qos_tfd.csv``, their figures and the repetitions.
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path
from typing import Any, Callable

from qoelab.experiment import summary_line
from qoelab.experiment import provenance, runner
from qoelab.experiment.core import run_dir
from qoelab.experiment.tables import publish, write_repetitions
from qoelab.reproduce.qos.build import (CHOICES, CIF_TRACE, PLAYOUT_DELAY_S, disciplines, experiments, label,
                                        plan, psnr_cache)
from qoelab.reproduce.qos.report import figures, findings, reading, setup, tables

__all__ = ["CHOICES", "disciplines", "experiments", "label", "findings", "plan", "register", "run", "size"]


def _cif_runs(rs: runner.RunSet) -> list[Path]:
    """The finished SQF-testbed runs of the CIF video (what the decode stage decodes)."""
    from qoelab.sweep import is_done

    exp = rs.experiments["sqf"]
    return [d for c in exp.cells if c["video"] == "cif" for r in range(exp.reps)
            if is_done(d := run_dir(exp, rs.folders["sqf"], exp.id_of(c), r))]


def _units(rs: runner.RunSet) -> int:
    exp = rs.experiments["sqf"]
    return sum(c["video"] == "cif" for c in exp.cells) * exp.reps


def _decode_one(d: Path, *, bitstream: Path, recipe: Path) -> None:
    from qoelab import paths
    from qoelab.outdir import write_atomic
    from qoelab.video.quality.evaluate import evaluate

    e = evaluate(paths.root() / CIF_TRACE, bitstream, d / "packets.parquet", playout_delay_s=PLAYOUT_DELAY_S,
                 flows=["video"], recipe_path=recipe)
    keep = {k: e.summary[k] for k in ("mean_psnr_y_vs_source_db", "nal_lost", "decodable_frame_rate")}
    write_atomic(psnr_cache(d), json.dumps(keep, indent=1, sort_keys=True) + "\n")


def run(out: Path, *, quick: bool = False, jobs: int = 1, progress: Callable[..., None] | None = None,
        executor: Any = None, reps: int | None = None, sensitivity: bool = False,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs (or resumes) both testbeds under every discipline into ``out`` (with ``sensitivity``,
    under each declared alternative too, into ``out/sensitivity/``), decodes the CIF video's
    deliveries and writes the report there. Returns a summary (``{"shard": ...}`` for one task
    of a job array)."""
    p = plan(quick, reps)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log(f"qoelab reproduce qos{' --quick' if quick else ''}{' --sensitivity' if sensitivity else ''}: writing {out} "
        f"({p.reps} repetitions)")
    coded: list[tuple[Path, Path]] = []

    def decode(rs: runner.RunSet, step: Callable[[int], None]) -> None:
        todo = [d for d in _cif_runs(rs) if not psnr_cache(d).is_file()]
        if todo and not coded:
            from qoelab.video.sources.bundle import cif_bitstream

            with runner.stage(out, "video encode"):
                coded.append(cif_bitstream(out / "video"))
        with runner.stage(out, "decode"):
            if todo:
                bit, recipe = coded[0]
                runner.parallel(partial(_decode_one, bitstream=bit, recipe=recipe), todo, jobs, step)

    res = runner.reproduce(out, CHOICES, lambda s: experiments(p, s), lambda rs: findings(rs.rows), sensitivity=sensitivity,
                           jobs=jobs, progress=progress, executor=executor, log=log, post=decode, post_units=_units)
    if res is None:
        return {"shard": executor.shard}
    found, main = res.findings, res.main
    with runner.stage(out, "report"):
        tabs = tables(main.rows)
        for k, t in tabs.items():
            t.write_csv(out, f"qos_{k}.csv")
            write_repetitions(out, main.rows[k], ("video", "discipline") if k == "sqf" else ("discipline",),
                              name=f"repetitions_{k}.csv")
        figs = [f.write(out) for f in figures(tabs)]
    seeds = sorted({r["seed"] for rs in main.rows.values() for r in rs})
    summary = (f"Every queue discipline of the core ({len(disciplines('sqf'))} on the SQF testbed, "
               f"{len(disciplines('tfd'))} with the reservations on the TFD dumbbell) against FIFO, paired by "
               f"repetition: {summary_line(found)}.")
    publish(out, paper="qos", quick=quick, title="QoS mechanisms side by side (qoelab study)", tables=list(tabs.values()),
            findings=found, source="qoelab QoS study", figures=figs, reading=reading(tabs, found), summary=summary,
            setup=setup(p, main.setting), cost=runner.cost(out, res.sets), seeds=seeds, choices=CHOICES,
            versions=runner.versions(res.sets),
            command=provenance.command("qos", quick=quick, sensitivity=sensitivity, reps=reps))
    log(f"qos: {summary_line(found)}; wrote {out}/report.md")
    return {"findings": found, "tables": tabs, "plan": p}


def size(quick: bool, sensitivity: bool = False) -> int:
    """The progress units of ``run`` (runs and decodes, for ``reproduce all``'s total)."""
    p = plan(quick)
    return runner.size(runner.sets(Path("."), CHOICES, lambda s: experiments(p, s), sensitivity=sensitivity), _units)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``reproduce qos`` to the CLI, under the ``reproduce`` group."""
    from qoelab.reproduce import add_paper_command

    return add_paper_command(subparsers, "qos", "qoelab's QoS study: every queue discipline on the SQF testbed and the "
                             "TFD dumbbell, against FIFO (no paper)", run,
                             quick_help="2 repetitions and short dumbbell runs (CI, about a minute on 2 cores)",
                             reps_help="repetitions per cell (default 2 with --quick, else 10)",
                             label="qos study", unit="units")
