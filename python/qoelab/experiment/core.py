"""An experiment as a declaration: cells, repetitions, seeds, metrics, paired differences.

A reproduction declares an :class:`Experiment`:

- ``cells``: the parameters of each cell (a dict of plain values) and ``build``, a function from
  those parameters to a :class:`~qoelab.scenario.Scenario`;
- ``metrics``: a function from a finished run folder (and the cell's parameters) to one row of
  named numbers;
- ``paired``: the parameter names that are *treatments*. Cells that differ only in them share
  their seeds repetition by repetition, so their differences are paired (:func:`paired`).

:func:`run` runs every repetition of every cell through :func:`qoelab.sweep.run_cells` (so the
executors, ``--shard``, claims and resume work as for any sweep); :func:`rows` reads one row
per run back; :func:`aggregate` turns them into :class:`~qoelab.experiment.stats.Estimate`\\ s
and :func:`paired` into paired differences.

Seeds (:func:`seed_of`): repetition ``r`` of a cell runs with
``1 + int(sha256("<experiment>/<params without treatments>/<r>")[:8], 16) mod (2**31 - 1)``,
the parameters written as sorted-key JSON. The seed therefore depends on the experiment's name,
the cell (treatments aside) and the repetition, never on the order of the cells, the executor or
the number of repetitions asked for.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from qoelab.errors import QoelabError
from qoelab.executors import Executor, ExecutorSpec
from qoelab.experiment.stats import Estimate, mean_ci, paired_ci
from qoelab.scenario import Scenario


@dataclass(frozen=True)
class Experiment:
    """A declared experiment (see the module doc). ``name`` names the seeds and the run folder."""

    name: str
    cells: list[dict[str, Any]]
    build: Callable[[dict[str, Any]], Scenario]
    metrics: Callable[[Path, dict[str, Any]], dict[str, float]]
    paired: tuple[str, ...] = ()
    reps: int = 1
    cell_id: Callable[[dict[str, Any]], str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

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


def run(exp: Experiment, out: Path, jobs: int = 1, progress: Callable[[int, int], None] | None = None, *,
        executor: ExecutorSpec | Executor | None = None) -> dict[str, int]:
    """Runs the missing repetitions of every cell into ``out`` (a sweep folder; resumable);
    returns :func:`qoelab.sweep.run_cells`'s counts."""
    from qoelab.sweep import run_cells

    by_id = _index(exp)
    items = [(cid, exp.build(p)) for cid, p in by_id.items()]
    return run_cells(items, exp.reps, lambda cid, r: seed_of(exp.name, by_id[cid], exp.paired, r), out, jobs,
                     progress, executor=executor)


def rows(exp: Experiment, out: Path) -> list[dict[str, Any]]:
    """One row per finished run, in cell order then repetition order: the cell's parameters,
    ``rep``, ``seed`` and the metrics. A missing run (e.g. another shard's) is left out."""
    from qoelab.sweep import is_done

    got = []
    for cid, p in _index(exp).items():
        for r in range(exp.reps):
            d = out / "runs" / f"cell={cid}__rep={r}"
            if not is_done(d):
                continue
            got.append({**p, "rep": r, "seed": seed_of(exp.name, p, exp.paired, r), **exp.metrics(d, p)})
    return got


def aggregate(rep_rows: list[dict[str, Any]], keys: tuple[str, ...], metrics: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows grouped by ``keys`` (in first-seen order), each metric an :class:`Estimate` over the
    group's repetitions; NaN values (a metric that does not exist in a run) are left out of it
    (None when no value is left)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rep_rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for k, rs in groups.items():
        row: dict[str, Any] = dict(zip(keys, k))
        for m in metrics:
            xs = [float(r[m]) for r in rs if r[m] == r[m]]
            row[m] = mean_ci(xs) if xs else None
        out.append(row)
    return out


def paired(rep_rows: list[dict[str, Any]], treatment: str, a: Any, b: Any, metric: str,
           by: tuple[str, ...] = ()) -> dict[tuple, Estimate]:
    """The paired difference ``metric(a) − metric(b)`` of the ``treatment`` parameter, per group
    of ``by``: repetitions matched by ``rep`` (they share the seed). A repetition missing on one
    side is left out; a group with no pair is absent."""
    sides: dict[tuple, dict[Any, dict[int, float]]] = {}
    for r in rep_rows:
        if r[treatment] in (a, b):
            sides.setdefault(tuple(r[k] for k in by), {}).setdefault(r[treatment], {})[r["rep"]] = float(r[metric])
    out = {}
    for g, s in sides.items():
        reps = sorted(set(s.get(a, {})) & set(s.get(b, {})))
        if reps:
            out[g] = paired_ci([s[a][i] for i in reps], [s[b][i] for i in reps])
    return out


def cost(out: Path) -> dict[str, Any]:
    """The compute cost of the runs under ``out`` (a sweep folder), for ``report.json``'s
    ``cost``: runs, their summed simulation wall and CPU seconds."""
    from qoelab.sweep import timing

    t = timing(out)
    return {"runs": t["runs"], "sim_wall_s": round(t["wall_s"], 3), "cpu_s": round(t["cpu_s"], 3)}
