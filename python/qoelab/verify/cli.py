"""``qoelab verify [--quick] [--only NAME …] [--json FILE] [--markdown FILE] [-j N]``: runs the validation suite
and prints one table per validation (parameters, measured, reference, tolerance, verdict).

Exit status: 0 when no row is ``FAIL`` (``pass`` and ``known limit`` only), 1 when any row is
``FAIL``, 2 for bad arguments (an unknown validation name, an output file in a missing or unwritable folder).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any, Sequence

from rich.table import Table

from qoelab.errors import QoelabError
from qoelab.outdir import write_atomic

EXIT_FAIL = 1


def register(sub: Any) -> None:
    v = sub.add_parser("verify", help="run the model-validation suite (closed forms, ns-3 anchor)")
    v.add_argument("--quick", action="store_true", help="the reduced grid CI runs (44 rows, 10-100 s on 2 cores)")
    v.add_argument("--only", nargs="+", metavar="NAME", help="run only these validations (names as in the table titles)")
    v.add_argument("--json", metavar="FILE", help="also write every row as JSON")
    v.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown (the form of docs/validation.md)")
    v.add_argument("-j", "--jobs", type=int, default=1, help="parallel runs (default 1; 0 = one per CPU)")
    k = v.add_argument_group("kernel", "--kernel: Linux's TCP (iperf3 in namespaces) against the linux profile on the "
                                       "same emulated dumbbell (root; docs/validation.md)")
    k.add_argument("--kernel", action="store_true", help="run the kernel comparison instead of the suite")
    k.add_argument("--cc", nargs="+", choices=["cubic", "reno", "bbr"], help="only these congestion controls")
    k.add_argument("--seconds", type=float, help="transfer time per run (default 30; 10 with --quick)")
    k.add_argument("--reps", type=int, default=1, help="runs per grid point, kernel and simulation (default 1)")
    k.add_argument("--point", nargs="+", metavar="RTT,FLOWS,LOSS",
                   help="only these points of the grid: RTT in ms, flows, random loss in percent (160,1,0)")
    v.set_defaults(func=cmd_verify)


def select(names: Sequence[str] | None) -> list[Any]:
    """The validations to run, in suite order; an unknown name is a usage error listing the known."""
    from qoelab.verify.suite import SUITE

    if not names:
        return list(SUITE)
    known = [v.name for v in SUITE]
    bad = [n for n in names if n not in known]
    if bad:
        raise QoelabError(f"--only: unknown validation {', '.join(repr(b) for b in bad)}; known: {', '.join(known)}")
    return [v for v in SUITE if v.name in names]


def _check_json_path(path: str, flag: str = "--json") -> Path:
    """An output file the user named: not a symbolic link (never written through), its folder
    must exist and be writable (checked before the runs, so a mistake costs nothing)."""
    from qoelab.outdir import output_arg, refuse_symlink

    p = refuse_symlink(output_arg(path, flag) or Path(path), flag)
    if p.is_dir():
        raise QoelabError(f"{flag} {path}: is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise QoelabError(f"{flag} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise QoelabError(f"{flag} {path}: folder {parent} is not writable")
    return p


def cmd_kernel(a: argparse.Namespace) -> int:
    """``verify --kernel``: see :mod:`qoelab.verify.kernel`."""
    from qoelab.cli import err, out
    from qoelab.emulate import unavailable
    from qoelab.progress import progress
    from qoelab.verify import kernel

    if a.only:
        raise QoelabError("--only selects validations of the suite; with --kernel use --cc")
    seconds = a.seconds if a.seconds is not None else (10.0 if a.quick else kernel.SECONDS)
    if not 2.0 <= seconds <= 3600.0:
        raise QoelabError(f"--seconds {seconds:g}: expected 2 to 3600")
    if not 1 <= a.reps <= 100:
        raise QoelabError(f"--reps {a.reps}: expected 1 to 100")
    json_path = _check_json_path(a.json) if a.json else None
    md_path = _check_json_path(a.markdown, "--markdown") if a.markdown else None
    points = kernel.grid(a.quick, a.cc, a.point)
    why = unavailable()
    if why:
        out.print(f"verify --kernel: skipped: {why}", markup=False, highlight=False)
        return 0
    t0 = time.perf_counter()
    with progress(err, "verify --kernel", unit="points", transient=True) as update:
        results = kernel.run(points, seconds, a.reps, progress=update)
    wall = time.perf_counter() - t0
    t = Table(title=f"verify --kernel: Linux TCP vs the linux profile, {seconds:g} s, {a.reps} run(s) per point",
              title_justify="left")
    for h in ("cc", "point", "metric", "kernel", "qoelab", "tolerance", "verdict", "decided"):
        t.add_column(h, justify="right" if h in ("kernel", "qoelab") else "left")
    style = {"pass": "green", "FAIL": "bold red", "-": "dim"}
    judged = [(r, r.checks()) for r in results]
    fails = sum(c.verdict == "FAIL" for _, cs in judged for c in cs)
    for r, cs in judged:
        for c in cs:
            t.add_row(r.point.cc, r.point.label, c.metric, kernel._fmt(c.kernel), kernel._fmt(c.sim), c.tolerance,
                      f"[{style.get(c.verdict, '')}]{c.verdict}[/]", c.resolved)
    out.print(t)
    for r in results:
        if r.note:
            out.print(f"  {r.point.cc}, {r.point.label}: {r.note}", markup=False, highlight=False)
    n = sum(len(cs) for _, cs in judged)
    undecided = sum(c.resolved.startswith("no") for _, cs in judged for c in cs)
    out.print(f"{len(results)} points, {n} comparisons, {fails} FAIL, {undecided} not decided by the runs "
              f"(column decided); wall {wall:.0f} s")
    if json_path:
        doc = {"seconds": seconds, "reps": a.reps, "wall_s": wall, "results": [r.to_json() for r in results]}
        write_atomic(json_path, json.dumps(doc, indent=2, default=str) + "\n")
    if md_path:
        write_atomic(md_path, kernel.markdown(results, seconds, a.reps))
    return EXIT_FAIL if fails else 0


def cmd_verify(a: argparse.Namespace) -> int:
    if a.kernel:
        return cmd_kernel(a)
    from qoelab.cli import err, out
    from qoelab.progress import progress
    from qoelab.executors import resolve_jobs
    from qoelab.verify.core import FAIL, deviation, fmt_reference, fmt_value, markdown, run_suite

    if a.jobs < 0:
        raise QoelabError(f"-j {a.jobs}: expected 0 (one per CPU) or a positive number of jobs")
    suite = select(a.only)
    json_path = _check_json_path(a.json) if a.json else None
    md_path = _check_json_path(a.markdown, "--markdown") if a.markdown else None
    jobs = resolve_jobs(a.jobs)
    t0 = time.perf_counter()
    with progress(err, "verify" + (" --quick" if a.quick else ""), unit="points", transient=True) as update:
        rows = run_suite(suite, quick=a.quick, jobs=jobs, progress=update)
    wall = time.perf_counter() - t0
    by_name: dict[str, list[Any]] = {}
    for r in rows:
        by_name.setdefault(r.validation, []).append(r)
    style = {"pass": "green", "FAIL": "bold red", "known limit": "yellow"}
    for v in suite:
        t = Table(title=f"{v.name}: {v.title}", title_justify="left", caption=f"reference: {v.citation}",
                  caption_justify="left")
        for h, j in (("parameters", "left"), (f"measured{' ' + v.unit if v.unit else ''}", "right"),
                     ("reference", "right"), ("deviation", "right"), ("tolerance", "right"), ("verdict", "left")):
            t.add_column(h, justify=j)  # type: ignore[arg-type]
        for r in by_name.get(v.name, []):
            verdict = f"[{style[r.verdict]}]{r.verdict}[/]"
            t.add_row(r.label, fmt_value(r.measured, v.digits), fmt_reference(r.reference, v.digits),
                      deviation(r.measured, r.reference, v.tolerance.relative), r.tolerance, verdict)
        out.print(t)
        for r in by_name.get(v.name, []):
            if r.reason:
                out.print(f"  known limit, {r.label}: {r.reason}", markup=False, highlight=False)
    counts = {k: sum(r.verdict == k for r in rows) for k in ("pass", "known limit", "FAIL")}
    out.print(f"{len(rows)} rows: {counts['pass']} pass, {counts['known limit']} known limit, {counts['FAIL']} FAIL; "
              f"wall {wall:.1f} s with -j {jobs}")
    for r in rows:
        if r.verdict == FAIL:
            out.print(f"FAIL {r.id}: measured {fmt_value(r.measured, 4)}, reference {fmt_reference(r.reference, 4)}, "
                      f"tolerance {r.tolerance}", markup=False, highlight=False)
    if json_path:
        doc = {"quick": a.quick, "wall_s": wall, "jobs": jobs, "rows": [r.to_json() for r in rows]}
        write_atomic(json_path, json.dumps(doc, indent=2, default=str) + "\n")
    if md_path:
        write_atomic(md_path, markdown(suite, rows))
    return EXIT_FAIL if counts["FAIL"] else 0
