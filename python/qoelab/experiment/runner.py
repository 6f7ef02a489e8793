"""Running a reproduction's declaration: its experiments under our defaults and, with
``--sensitivity``, under each declared alternative; the findings of each; what it all cost.

A paper declares ``experiments(setting)``, its experiments under one setting of its choices (a
dict choice → value, :mod:`qoelab.experiment.choices`), and ``findings(run_set)``, its findings
from one setting's rows. :func:`sets` lays out the settings to run (the default, then each
variant of :func:`~qoelab.experiment.choices.variants`, each in its own folder
``sensitivity/<variant>/``), :func:`execute` runs every experiment of every setting under one
executor and one progress display whose total is known before anything runs (runs, and the
paper's post-run stages such as decoding), and :func:`attach` writes each variant's verdict
beside each finding (:attr:`~qoelab.experiment.findings.Finding.under`).

The variants' experiments keep the default's names and cells, so a variant's repetition ``r``
runs with the default's seed: a choice's effect is paired with the default run by run. A run
whose scenario and seed equal a run of a setting executed before it (a choice that leaves that
scenario alone) takes over that run's outputs instead of running again
(:func:`qoelab.experiment.core.adopt_identical`).

Cost: :func:`stage` times a post-run stage (decoding, picture measurements, the report itself)
into ``stages.json`` in the report folder, accumulated over invocations, so a report's cost
counts its work beyond the simulations (:func:`cost`).
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import resource
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from qoelab.experiment import core
from qoelab.experiment.choices import Choice, Factorial, defaults, runs_alike, variants
from qoelab.experiment.core import Experiment
from qoelab.experiment.findings import CELLS_DEFAULT, Finding, Verdict


@dataclass
class RunSet:
    """One setting's experiments (by name) and their folders; ``rows`` once they ran."""

    name: str  # "" for the default setting, else the variant's ``choice=value[,…]``
    setting: dict[str, Any]
    experiments: dict[str, Experiment]
    folders: dict[str, Path]
    base: Path
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: The runs are the default's (a variant of analysis choices only): nothing runs for it.
    shared: bool = False
    #: :func:`qoelab.experiment.core.run`'s counts per experiment, once run.
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Its experiments are the variants' smaller grid, on which the default runs too (``sets``'
    #: ``default_on_variant_grid``): its findings are compared with the default's there.
    on_variant_cells: bool = False

    @property
    def is_default(self) -> bool:
        return self.name == ""

    def rows_of(self, name: str | None = None) -> list[dict[str, Any]]:
        """The rows of experiment ``name`` (the only one when None)."""
        if name is None:
            (name,) = self.experiments
        return self.rows[name]

    def pairs(self) -> list[tuple[Experiment, Path]]:
        return [(e, self.folders[k]) for k, e in self.experiments.items()]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9=.,_-]+", "_", name)


def default_layout(base: Path, names: list[str]) -> dict[str, Path]:
    """``base/runs`` for a single experiment, ``base/runs/<name>`` for several."""
    if len(names) == 1:
        return {names[0]: base / "runs"}
    return {n: base / "runs" / n for n in names}


def sets(out: Path, choices: tuple[Choice, ...], experiments: Callable[[dict[str, Any]], dict[str, Experiment]], *,
         sensitivity: bool = False, factorials: tuple[Factorial, ...] = (),
         variant_experiments: Callable[[dict[str, Any]], dict[str, Experiment]] | None = None,
         default_on_variant_grid: bool = True,
         layout: Callable[[Path, list[str]], dict[str, Path]] = default_layout) -> list[RunSet]:
    """The settings to run: the default (its runs under ``out``), then, with ``sensitivity``,
    each variant (under ``out/sensitivity/<variant>``). ``variant_experiments`` builds the
    variants' experiments when they run fewer cells than the default: only the cells the
    findings use (``default_on_variant_grid=False``: the default's findings are then those of
    its own runs), or a smaller grid (the default: it is then also run at the default setting,
    as variant ``default``, so that every variant is compared on the same cells)."""
    base = defaults(choices)
    E = experiments(base)
    out_sets = [RunSet("", base, E, layout(out, list(E)), out)]
    if not sensitivity:
        return out_sets
    vexp = variant_experiments or experiments
    todo = variants(choices, factorials)
    if variant_experiments is not None and default_on_variant_grid:
        todo = [(CELLS_DEFAULT, base)] + todo
    for name, setting in todo:
        if runs_alike(choices, setting) and name != CELLS_DEFAULT:
            out_sets.append(RunSet(name, setting, E, out_sets[0].folders, out, shared=True))
            continue
        folder = out / "sensitivity" / _slug(name)
        ve = vexp(setting)
        out_sets.append(RunSet(name, setting, ve, layout(folder, list(ve)), folder,
                               on_variant_cells=variant_experiments is not None and default_on_variant_grid))
    return out_sets


def size(run_sets: list[RunSet], post_units: Callable[[RunSet], int] | None = None) -> int:
    """The progress total of :func:`execute`: every run of every setting, and each setting's
    post-run units."""
    mine = [s for s in run_sets if not s.shared]
    runs = sum(core.size(e) for s in mine for e in s.experiments.values())
    return runs + (sum(post_units(s) for s in mine) if post_units else 0)


def execute(run_sets: list[RunSet], jobs: int = 1, progress: Callable[..., None] | None = None, *,
            executor: Any = None, log: Callable[[str], None] | None = None,
            post: Callable[[RunSet, Callable[[int], None]], None] | None = None,
            post_units: Callable[[RunSet], int] | None = None) -> bool:
    """Runs every experiment of every setting (resumable), then for each setting ``post`` (e.g.
    decoding, whose results the metrics read) and its rows, under one executor and one progress
    display over :func:`size`. ``post(run_set, step)`` calls ``step(k)`` after its ``k``-th
    unit (of ``post_units(run_set)``). Returns False for one task of a job array (``--shard``): its runs
    are done, the rows, post stages and report come after all tasks."""
    from qoelab.executors import ExecutorSpec

    from qoelab.sweep import check_runs

    # Every setting's runs together under the one limit of a sweep (each experiment alone is
    # checked again by core.run), before any folder is made.
    check_runs(size(run_sets))
    total = size(run_sets, post_units)
    done = 0

    def stepper(base: int) -> Callable[..., None]:
        def step(d: int, _t: int, reused: int = 0) -> None:
            if progress:
                progress(base + d, total, reused=reused)
        return step

    # A run whose scenario and seed equal an earlier setting's run (a choice that leaves that
    # scenario alone) takes over its outputs instead of running again (core.adopt_identical).
    donors: dict[str, Path] = {}
    several = sum(not s.shared for s in run_sets) > 1
    with contextlib.ExitStack() as stack:
        ex = executor
        if isinstance(ex, ExecutorSpec):
            from qoelab.sweep import resolve_jobs

            ex = stack.enter_context(replace(ex, jobs=resolve_jobs(jobs)).open())
        for s in run_sets:
            if s.shared:
                continue
            for name, exp in s.experiments.items():
                t0 = time.monotonic()
                keys = core.run_keys(exp, s.folders[name]) if several else {}
                taken = core.adopt_identical(exp, s.folders[name], keys, donors) if donors else 0
                s.counts[name] = c = core.run(exp, s.folders[name], jobs, stepper(done), executor=ex)
                c["adopted"] = taken
                for d, k in keys.items():
                    donors.setdefault(k, d)
                done += core.size(exp)
                if log:
                    log(f"  {s.name or 'default'}: {exp.name}: {c['ran']} ran, {c['skipped']} reused"
                        + (f" ({taken} taken over from identical runs)" if taken else "")
                        + f", {time.monotonic() - t0:.1f} s")
    if getattr(executor, "shard", None):
        return False
    for s in run_sets:
        if post is not None and not s.shared:
            base = done

            def unit(k: int, base: int = base) -> None:
                if progress:
                    progress(base + k, total)

            post(s, unit)
            done += post_units(s) if post_units else 0
        s.rows = _rows(s, run_sets[0])
    if progress:
        progress(total, total)
    return True


@dataclass
class Outcome:
    """What :func:`reproduce` ran: every setting (the default first) and the default's findings
    with each variant's verdict attached."""

    sets: list[RunSet]
    findings: list[Finding]

    @property
    def main(self) -> RunSet:
        return self.sets[0]


def reproduce(out: Path, choices: tuple[Choice, ...], experiments: Callable[[dict[str, Any]], dict[str, Experiment]],
              findings: Callable[[RunSet], list[Finding]], *, sensitivity: bool = False, jobs: int = 1,
              progress: Callable[..., None] | None = None, executor: Any = None,
              log: Callable[[str], None] | None = None, factorials: tuple[Factorial, ...] = (),
              variant_experiments: Callable[[dict[str, Any]], dict[str, Experiment]] | None = None,
              default_on_variant_grid: bool = True,
              post: Callable[[RunSet, Callable[[int], None]], None] | None = None,
              post_units: Callable[[RunSet], int] | None = None,
              layout: Callable[[Path, list[str]], dict[str, Path]] = default_layout) -> Outcome | None:
    """:func:`sets`, :func:`execute`, then each setting's ``findings`` and :func:`attach`. None
    for one task of a job array (its share ran; the report comes after all)."""
    run_sets = sets(out, choices, experiments, sensitivity=sensitivity, factorials=factorials,
                    variant_experiments=variant_experiments, default_on_variant_grid=default_on_variant_grid,
                    layout=layout)
    if not execute(run_sets, jobs, progress, executor=executor, log=log, post=post, post_units=post_units):
        return None
    main = findings(run_sets[0])
    if len(run_sets) > 1:
        with stage(out, "findings under the alternatives"):
            main = attach(main, {s.name: findings(s) for s in run_sets[1:]},
                          on_cells=[s.name for s in run_sets[1:] if s.on_variant_cells])
        write_sensitivity(out, main)
    return Outcome(run_sets, main)


def write_sensitivity(out: Path, findings: list[Finding], group: str | None = None) -> Path:
    """``out/sensitivity.csv``: one row per finding and variant (:func:`sensitivity_rows`)."""
    from qoelab.experiment.tables import Table

    rows = sensitivity_rows(findings, group)
    return Table.of_rows("sensitivity", "verdicts under each alternative", rows).write_csv(Path(out), "sensitivity.csv")


def read_sensitivity(path: Path) -> dict[str, dict[tuple[str, str], Verdict]]:
    """The verdicts a ``sensitivity.csv`` (:func:`write_sensitivity`) holds, for
    :func:`attach_verdicts`: by variant, in the file's order, then by finding (group, key) (a file
    without a group column gives the group "")."""
    out: dict[str, dict[tuple[str, str], Verdict]] = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            out.setdefault(r["variant"], {})[(r.get("group", ""), r["key"])] = Verdict(r["verdict"])
    return out


def _rows(s: RunSet, default: RunSet) -> dict[str, list[dict[str, Any]]]:
    if s.shared:  # the default's runs: a copy of its rows (the findings may add columns)
        return {k: [dict(r) for r in v] for k, v in default.rows.items()}
    return {name: core.rows(exp, s.folders[name]) for name, exp in s.experiments.items()}


def read(run_sets: list[RunSet]) -> None:
    """Reads the rows of the runs already finished, running nothing (a report of a grid stopped
    part-way); the default setting first."""
    for s in run_sets:
        s.rows = _rows(s, run_sets[0])


def offset(progress: Callable[..., None] | None, base: int, total: int) -> Callable[..., None] | None:
    """A progress callback for one part of a larger job: ``progress(base + done, total)`` (and
    the runs it found finished, ``reused``, passed on)."""
    if progress is None:
        return None
    return lambda d, _t, reused=0: progress(base + d, total, reused=reused)


def attach(main: list[Finding], by_variant: dict[str, list[Finding]], on_cells: list[str] | tuple[str, ...] = ()) -> list[Finding]:
    """``main`` with each variant's verdict beside each finding (matched by group and key; a
    finding a variant does not produce is *untestable* there). ``on_cells`` names the variants
    judged on fewer cells than ``main`` (:attr:`~qoelab.experiment.findings.Finding.on_cells`):
    with the default among them (:data:`~qoelab.experiment.findings.CELLS_DEFAULT`), the others
    are compared with it."""
    return attach_verdicts(main, {v: {(f.group, f.key): f.verdict for f in fs} for v, fs in by_variant.items()}, on_cells)


def attach_verdicts(main: list[Finding], got: dict[str, dict[tuple[str, str], Verdict]],
                    on_cells: list[str] | tuple[str, ...] = ()) -> list[Finding]:
    """:func:`attach` from each variant's verdicts by finding (group, key), as a report computes
    them or :func:`read_sensitivity` reads them back."""
    named = set(on_cells)
    cells = tuple(v for v in got if v in named)
    return [replace(f, under=tuple((v, got[v].get((f.group, f.key), Verdict.UNTESTABLE)) for v in got), on_cells=cells)
            for f in main]


def sensitivity_rows(findings: list[Finding], group: str | None = None) -> list[dict[str, Any]]:
    """One row per finding and variant (for ``sensitivity.csv``): the key, the default's verdict,
    the variant and its verdict."""
    return [{**({"group": group or f.group} if group is not None or f.group else {}), "key": f.key,
             "default": f.verdict.value, "variant": v, "verdict": w.value} for f in findings for v, w in f.under]


def parallel(fn: Callable[[Any], Any], items: list[Any], jobs: int, step: Callable[[int], None] | None = None) -> list[Any]:
    """``fn`` of each item (a post-run stage: decoding, picture measurements), in ``jobs``
    processes when there are several items, calling ``step(k)`` after the ``k``-th."""
    out = []
    if jobs > 1 and len(items) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            for k, r in enumerate(pool.map(fn, items)):
                out.append(r)
                if step:
                    step(k + 1)
        return out
    for k, it in enumerate(items):
        out.append(fn(it))
        if step:
            step(k + 1)
    return out


# --- cost --------------------------------------------------------------------------------------


STAGES = "stages.json"


@contextlib.contextmanager
def stage(out: Path, name: str) -> Iterator[None]:
    """Times a post-run stage (wall, and CPU of this process and of the children it waited for)
    and adds it to ``out/stages.json`` under ``name``."""
    t0, c0 = time.monotonic(), _cpu()
    try:
        yield
    finally:
        wall, cpu = time.monotonic() - t0, _cpu() - c0
        path = Path(out) / STAGES
        try:
            d = json.loads(path.read_text()) if path.is_file() and not path.is_symlink() else {}
        except (OSError, ValueError, RecursionError):
            d = {}
        s = d.get(name) or {"wall_s": 0.0, "cpu_s": 0.0}
        d[name] = {"wall_s": round(s["wall_s"] + wall, 3), "cpu_s": round(s["cpu_s"] + cpu, 3)}
        from qoelab.outdir import write_atomic

        write_atomic(path, json.dumps(d, indent=1, sort_keys=True) + "\n")  # never through a planted link


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def stages(out: Path) -> dict[str, dict[str, float]]:
    """The stages timed in ``out`` (:func:`stage`)."""
    try:
        return json.loads((Path(out) / STAGES).read_text())
    except (OSError, ValueError):
        return {}


def versions(run_sets: list[RunSet]) -> list[str]:
    """The code versions every run of every setting ran with, in first-use order
    (:func:`qoelab.sweep.timing`): the ``runs_code`` of the report's provenance
    (:mod:`qoelab.experiment.provenance`)."""
    out: list[str] = []
    for s in run_sets:
        if s.shared:
            continue
        for exp, folder in s.pairs():
            for _, t in core.timings(exp, folder):
                out += [v for v in t["versions"] if v not in out]
    return out


def cost(out: Path, run_sets: list[RunSet]) -> dict[str, Any]:
    """The cost of a reproduction: every setting's runs (:func:`qoelab.experiment.core.cost`) and
    every stage timed in ``out`` (:func:`stage`), summed, with each part."""
    runs = core.cost(*(p for s in run_sets if not s.shared for p in s.pairs()))
    st = stages(out)
    return {"runs": runs["runs"], "reused": runs["reused"], "sim_wall_s": runs["sim_wall_s"], "cpu_s": round(runs["cpu_s"] + sum(
        v["cpu_s"] for v in st.values()), 3), "runs_cpu_s": runs["cpu_s"],
            "stages": {k: v for k, v in sorted(st.items())},
            "wall_s": round(runs["sim_wall_s"] + sum(v["wall_s"] for v in st.values()), 3)}
