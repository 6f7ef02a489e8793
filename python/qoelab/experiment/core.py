"""An experiment as a declaration: cells, repetitions, seeds, metrics, paired differences.

A reproduction declares an :class:`Experiment`:

- ``cells``: the parameters of each cell (a dict of plain values) and ``build``, a function from
  those parameters to a :class:`~qoelab.scenario.Scenario`; with ``per_rep = True``, ``build``
  takes the repetition too (``build(params, rep)``), for scenarios with per-repetition random
  draws (clip offsets, start times) that every cell of the repetition shares;
- ``metrics``: a function from a finished run folder (and the cell's parameters) to one row of
  named numbers;
- ``paired``: the parameter names that are *treatments*. Cells that differ only in them share
  their seeds repetition by repetition, so their differences are paired (:func:`paired`).

:func:`run` runs every repetition of every cell through :func:`qoelab.sweep.run_cells` (so the
executors, ``--shard``, claims and resume work as for any sweep); :func:`run_many` runs several
experiments under one progress display and one executor; :func:`rows` reads one row per run
back; :func:`aggregate` turns them into :class:`~qoelab.experiment.stats.Estimate`\\ s and
:func:`paired` into paired differences.

Folders: the runs of an experiment are ``out/runs/cell=<id>__rep=<r>/``. A ``per_rep``
experiment's scenarios differ between repetitions, so each repetition is its own sweep folder:
``out/rep<r>/runs/cell=<id>__rep=0/`` (:func:`run_dir` names either); asking for more
repetitions later adds folders and reuses the finished ones.

Seeds (:func:`seed_of`): repetition ``r`` of a cell runs with
``1 + int(sha256("<experiment>/<params without treatments>/<r>")[:8], 16) mod (2**31 - 1)``,
the parameters written as sorted-key JSON. The seed therefore depends on the experiment's name,
the cell (treatments aside) and the repetition, never on the order of the cells, the executor or
the number of repetitions asked for.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from qoelab.errors import QoelabError
from qoelab.executors import Executor, ExecutorSpec
from qoelab.experiment.stats import Estimate, mean_ci, paired_ci, portable
from qoelab.scenario import Scenario


@dataclass(frozen=True)
class Experiment:
    """A declared experiment (see the module doc). ``name`` names the seeds and the run folder."""

    name: str
    cells: list[dict[str, Any]]
    build: Callable[..., Scenario]  # build(params), or build(params, rep) when per_rep
    metrics: Callable[[Path, dict[str, Any]], dict[str, float]]
    paired: tuple[str, ...] = ()
    reps: int = 1
    cell_id: Callable[[dict[str, Any]], str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    per_rep: bool = False

    def scenario(self, params: dict[str, Any], rep: int) -> Scenario:
        """The scenario of repetition ``rep`` of the cell ``params`` (without its seed)."""
        return self.build(params, rep) if self.per_rep else self.build(params)

    def id_of(self, params: dict[str, Any]) -> str:
        """The cell's id: ``cell_id(params)`` if declared, else ``k=v`` pairs in declaration order
        with characters a folder name cannot hold replaced by ``_``."""
        if self.cell_id is not None:
            return self.cell_id(params)
        return re.sub(r"[^A-Za-z0-9=._-]+", "_", "__".join(f"{k}={v}" for k, v in params.items()))


def seed_of(experiment: str, params: dict[str, Any], paired: tuple[str, ...], rep: int) -> int:
    """The seed of repetition ``rep`` of the cell ``params`` (see the module doc): equal for cells
    that differ only in the ``paired`` parameters, in ``1 .. 2**31 - 1``."""
    if rep < 0:
        raise ValueError(f"repetition {rep}: must be >= 0")
    key = {k: v for k, v in params.items() if k not in paired}
    text = f"{experiment}/{json.dumps(key, sort_keys=True, default=str)}/{rep}"
    return 1 + int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % (2**31 - 1)


def _index(exp: Experiment) -> dict[str, dict[str, Any]]:
    by_id: dict[str, dict[str, Any]] = {}
    for p in exp.cells:
        cid = exp.id_of(p)
        if cid in by_id:
            raise QoelabError(f"experiment {exp.name}: cells {by_id[cid]} and {p} share the id {cid!r}")
        by_id[cid] = p
    return by_id


def run_dir(exp: Experiment, out: Path, cid: str, rep: int) -> Path:
    """The folder of repetition ``rep`` of cell ``cid`` (see the module doc)."""
    if exp.per_rep:
        return out / f"rep{rep}" / "runs" / f"cell={cid}__rep=0"
    return out / "runs" / f"cell={cid}__rep={rep}"


def _sweeps(exp: Experiment, out: Path) -> list[tuple[Path, int | None]]:
    """The sweep folders of ``exp`` under ``out``, each with its repetition (None: all)."""
    return [(out / f"rep{r}", r) for r in range(exp.reps)] if exp.per_rep else [(out, None)]


def run(exp: Experiment, out: Path, jobs: int = 1, progress: Callable[..., None] | None = None, *,
        executor: ExecutorSpec | Executor | None = None) -> dict[str, int]:
    """Runs the missing repetitions of every cell into ``out`` (a sweep folder; resumable);
    returns :func:`qoelab.sweep.run_cells`'s counts (summed over the repetitions' folders of a
    ``per_rep`` experiment)."""
    from qoelab.sweep import check_runs, run_cells

    check_runs(size(exp))  # every paper's grid under the same limit, before any folder is made
    by_id = _index(exp)
    if not exp.per_rep:
        items = [(cid, exp.scenario(p, 0)) for cid, p in by_id.items()]
        return run_cells(items, exp.reps, lambda cid, r: seed_of(exp.name, by_id[cid], exp.paired, r), out, jobs,
                         progress, executor=executor)
    counts = {"total": 0, "skipped": 0, "ran": 0, "repaired": 0, "others": 0}
    for folder, r in _sweeps(exp, out):
        assert r is not None  # a per_rep experiment's folders each hold one repetition
        items = [(cid, exp.scenario(p, r)) for cid, p in by_id.items()]
        base = r * len(items)

        def step(done: int, _total: int, reused: int = 0, base: int = base) -> None:
            if progress:
                progress(base + done, exp.reps * len(items), reused=reused)

        def seed(cid: str, _rep: int, r: int = r) -> int:
            return seed_of(exp.name, by_id[cid], exp.paired, r)

        got = run_cells(items, 1, seed, folder, jobs, step, executor=executor)
        for k in counts:
            counts[k] += got.get(k, 0)
    return counts


def run_key(exp: Experiment, params: dict[str, Any], rep: int) -> str:
    """What determines repetition ``rep`` of the cell ``params``'s outputs: a digest of its
    scenario with the run's seed and the scenario's source name (which its tables' metadata
    carry). Two runs with equal keys write the same bytes (results depend only on the scenario
    and the seed), whatever experiment, setting or folder they belong to."""
    sc = exp.scenario(params, rep)
    data = dict(sc.data)
    data["sim"] = {**data.get("sim", {}), "seed": seed_of(exp.name, params, exp.paired, rep)}
    text = json.dumps({"source": sc.source, "base_dir": str(sc.base_dir), "scenario": data}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _runs(exp: Experiment, out: Path) -> Iterator[tuple[Path, str, dict[str, Any], int]]:
    """Every run of ``exp`` under ``out``, in cell order then repetition order: its folder
    (:func:`run_dir`), cell id, parameters and repetition."""
    for cid, p in _index(exp).items():
        for r in range(exp.reps):
            yield run_dir(exp, out, cid, r), cid, p, r


def run_keys(exp: Experiment, out: Path) -> dict[Path, str]:
    """:func:`run_key` of every run of ``exp`` under ``out``, by run folder (:func:`run_dir`)."""
    return {d: run_key(exp, p, r) for d, _, p, r in _runs(exp, out)}


def adopt_identical(exp: Experiment, out: Path, keys: dict[Path, str], donors: dict[str, Path]) -> int:
    """Takes over, for each run of ``exp`` under ``out`` not yet finished, the outputs of a
    finished run in ``donors`` (run key → run folder) with the same :func:`run_key`, instead of
    running it again (:func:`qoelab.sweep.adopt`). A setting of a reproduction's choices that
    changes only some of its scenarios (a router rule that best effort never meets) then runs
    only those. Returns how many runs were taken over."""
    from qoelab.sweep import adopt, is_done

    n = 0
    for d, cid, p, r in _runs(exp, out):
        donor = donors.get(keys[d])
        if donor is None or donor == d or is_done(d):
            continue
        n += adopt(donor, d, {"cell": cid}, 0 if exp.per_rep else r, seed_of(exp.name, p, exp.paired, r))
    return n


def with_reps(grid: Any, reps: int | None) -> Any:
    """A reproduction's grid (a frozen dataclass with a ``reps`` field) with ``--reps`` applied:
    itself when None; a :class:`QoelabError` naming the option outside 1..MAX_REPS (the same
    limit as ``sweep`` and ``bench``)."""
    if reps is None:
        return grid
    import dataclasses

    from qoelab.sweep import check_reps

    check_reps(reps)

    return dataclasses.replace(grid, reps=reps)


def size(exp: Experiment) -> int:
    """How many runs ``exp`` holds: cells times repetitions."""
    return len(exp.cells) * exp.reps


def run_many(plan: list[tuple[Experiment, Path]], jobs: int = 1, progress: Callable[..., None] | None = None, *,
             executor: ExecutorSpec | Executor | None = None,
             log: Callable[[str], None] | None = None) -> dict[str, dict[str, int]]:
    """Runs several experiments, each into its folder, under one executor (an
    :class:`~qoelab.executors.ExecutorSpec` is opened once for all of them) and one progress
    display: ``progress(done, total)`` counts the runs of every experiment of the plan. Returns
    :func:`run`'s counts per experiment name; ``log`` gets one line per experiment."""
    import contextlib
    import dataclasses
    import time

    names = [e.name for e, _ in plan]
    if len(set(names)) != len(names):
        raise QoelabError(f"run_many: experiment names repeat: {names}")
    from qoelab.sweep import check_runs

    total = check_runs(sum(size(e) for e, _ in plan))
    out: dict[str, dict[str, int]] = {}
    with contextlib.ExitStack() as stack:
        ex = executor
        if isinstance(ex, ExecutorSpec):
            from qoelab.executors import resolve_jobs

            ex = stack.enter_context(dataclasses.replace(ex, jobs=resolve_jobs(jobs)).open())
        base = 0
        for exp, folder in plan:
            t0 = time.monotonic()

            def step(done: int, _total: int, reused: int = 0, base: int = base) -> None:
                if progress:
                    progress(base + done, total, reused=reused)

            out[exp.name] = c = run(exp, folder, jobs, step, executor=ex)
            base += size(exp)
            if log:
                log(f"  {exp.name}: {c['ran']} ran, {c['skipped']} reused, {time.monotonic() - t0:.1f} s")
    return out


def rows(exp: Experiment, out: Path) -> list[dict[str, Any]]:
    """One row per finished run, in cell order then repetition order: the cell's parameters,
    ``rep``, ``seed``, ``output`` (:func:`output_digest`) and the metrics (floats
    :func:`~qoelab.experiment.stats.portable`). A missing run (e.g. another shard's) is left out."""
    from qoelab.sweep import is_done

    return [{**p, "rep": r, "seed": seed_of(exp.name, p, exp.paired, r), "output": output_digest(d),
             **{k: portable(v) if isinstance(v, float) else v for k, v in exp.metrics(d, p).items()}}
            for d, _, p, r in _runs(exp, out) if is_done(d)]


def output_digest(run_dir: Path) -> str:
    """A digest of a finished run's flows table, its schema metadata aside (which names the
    scenario and so the seed): equal for two runs exactly when their per-flow outcomes are, the
    criterion of the sweep's warning about identical repetitions. Empty when the run has no
    flows table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        t = pq.read_table(run_dir / "flows.parquet").replace_schema_metadata(None)
    except (OSError, pa.ArrowException):
        return ""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:  # IPC bytes: NaN equals NaN, unlike Table.equals
        w.write_table(t)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()[:16]


def _same(v: Any) -> Any:
    """A row's value as a key of :func:`identical` (NaN equal to NaN)."""
    return "nan" if isinstance(v, float) and math.isnan(v) else repr(v)


def identical(rep_rows: list[dict[str, Any]]) -> bool:
    """Whether two or more runs gave identical outputs whatever their seed: runs that are not
    independent samples (an interval over them would have zero width and say nothing;
    :mod:`qoelab.experiment.stats`). Rows that carry ``output`` (:func:`output_digest`, also
    in the per-repetition CSVs a report writes) are compared by it; others by every value but
    ``rep`` and ``seed`` (a constant metric alone does not make runs identical, their outputs
    do)."""
    if len(rep_rows) < 2:
        return False
    if all(r.get("output") for r in rep_rows):
        return len({r["output"] for r in rep_rows}) == 1
    keys = {tuple(sorted((k, _same(v)) for k, v in r.items() if k not in ("rep", "seed", "output"))) for r in rep_rows}
    return len(keys) == 1


def aggregate(rep_rows: list[dict[str, Any]], keys: tuple[str, ...], metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows grouped by ``keys`` (in first-seen order), each metric an :class:`Estimate` over the
    group's repetitions; NaN values (a metric that does not exist in a run) are left out of it
    (None when no value is left). A group whose runs are :func:`identical` gets estimates
    without an interval, marked not independent."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rep_rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for k, rs in groups.items():
        row: dict[str, Any] = dict(zip(keys, k))
        ind = not identical(rs)
        for m in metrics:
            xs = [float(r[m]) for r in rs if r[m] == r[m]]
            row[m] = mean_ci(xs, independent=ind) if xs else None
        out.append(row)
    return out


def paired(rep_rows: list[dict[str, Any]], treatment: str, a: Any, b: Any, metric: str,
           by: tuple[str, ...] = ()) -> dict[tuple, Estimate]:
    """The paired difference ``metric(a) − metric(b)`` of the ``treatment`` parameter, per group
    of ``by``: repetitions matched by ``rep`` (they share the seed). A repetition missing on one
    side is left out; a group with no pair is absent. Where either side's runs are
    :func:`identical`, the difference is not independent (no interval)."""
    sides: dict[tuple, dict[Any, dict[int, dict[str, Any]]]] = {}
    for r in rep_rows:
        if r[treatment] in (a, b):
            sides.setdefault(tuple(r[k] for k in by), {}).setdefault(r[treatment], {})[r["rep"]] = r
    out = {}
    for g, s in sides.items():
        reps = sorted(set(s.get(a, {})) & set(s.get(b, {})))
        if reps:
            ind = not (identical([s[a][i] for i in reps]) or identical([s[b][i] for i in reps]))
            out[g] = paired_ci([float(s[a][i][metric]) for i in reps], [float(s[b][i][metric]) for i in reps],
                               independent=ind)
    return out


def paired_where(rep_rows: list[dict[str, Any]], sel: dict[str, Any], treatment: str, a: Any, b: Any,
                 metric: str) -> Estimate | None:
    """:func:`paired` over the runs matching ``sel`` (every key equal) whose ``metric`` is not
    NaN, as one estimate (None when no pair exists)."""
    rs = [r for r in rep_rows if all(r[k] == v for k, v in sel.items()) and r[metric] == r[metric]]
    return paired(rs, treatment, a, b, metric).get(())


def select(rep_rows: list[dict[str, Any]], **sel: Any) -> list[dict[str, Any]]:
    """The rows whose keys equal ``sel``'s values."""
    return [r for r in rep_rows if all(r[k] == v for k, v in sel.items())]


def timings(exp: Experiment, out: Path) -> list[tuple[int | None, dict[str, Any]]]:
    """:func:`qoelab.sweep.timing` of each sweep folder of ``exp`` under ``out`` that holds runs,
    with its repetition (a ``per_rep`` experiment's folders hold one each; None: one folder holds
    them all), in repetition order: what a report says each repetition cost."""
    from qoelab.sweep import timing

    return [(r, timing(f)) for f, r in _sweeps(exp, out) if (f / "runs").is_dir()]


def cost(*outs: Path | tuple[Experiment, Path]) -> dict[str, Any]:
    """The compute cost of the runs under each of ``outs`` (a sweep folder, or an experiment with
    its folder: all its repetitions' folders, :func:`timings`), for ``report.json``'s ``cost``:
    runs, their summed simulation wall and CPU seconds, and how many runs took over an identical
    run's outputs (:func:`adopt_identical`; counted in ``runs``, no cost of their own)."""
    from qoelab.sweep import timing

    ts: list[dict[str, Any]] = []
    for o in outs:
        if isinstance(o, tuple):
            ts += [t for _, t in timings(*o)]
        elif (Path(o) / "runs").is_dir():
            ts.append(timing(Path(o)))
    return {"runs": sum(t["runs"] for t in ts), "sim_wall_s": round(sum(t["wall_s"] for t in ts), 3),
            "cpu_s": round(sum(t["cpu_s"] for t in ts), 3), "reused": sum(t.get("reused", 0) for t in ts)}
