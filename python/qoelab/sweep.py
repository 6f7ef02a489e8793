"""Parameter sweeps, resumable, on a local process pool or a Dask cluster (:mod:`qoelab.executors`).

A sweep is the product of ``--grid key=v1,v2`` axes times ``--reps`` repetitions (seed =
base seed + rep). Each run writes ``runs/<id>/`` through a temporary directory renamed into place
when complete, then a ``done`` marker; a run with a marker is never recomputed, and an interrupted
run leaves at most a ``.partial`` directory that is discarded on resume. The combined tables
(``flows.parquet``, ``summary.parquet``) are rebuilt from the finished runs.

Runs go repetition by repetition (every cell of rep 0, then of rep 1, ...), so a long sweep
stopped part-way holds whole repetitions of the grid. Each run also writes ``timing.json`` (wall
and CPU seconds, start and end on the wall clock, qoelab version, git commit): outside the results
proper, so the results stay byte-identical between runs, and summed by :func:`timing` into the
cost of a grid run over several sittings.

Each cell is claimed before it runs (:mod:`qoelab.claims`: a file created with O_EXCL, kept
alive by a heartbeat, reclaimable when its holder is dead or silent for the lease), so two
sweeps on one folder, the shards of a job array or many cluster workers run every cell exactly
once between them. Results depend only on scenario and seed, so a run's files (all but
``timing.json`` and the ``done`` marker that checksums it) are the same bytes whatever executed
it.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from qoelab import claims, outdir
from qoelab.claims import Claims, Heartbeat
from qoelab.errors import NativeScenarioError, QoelabError
from qoelab.executors import Dask, Executor, ExecutorSpec, WorkerDied, resolve_jobs, shard_of
from qoelab.paths import arrow_source
from qoelab.scenario import Scenario, parse_value


@dataclass(frozen=True)
class Cell:
    """One run of a sweep. A grid cell (:func:`cells`) holds key paths set on the base scenario,
    and its seed is the base seed plus ``rep``. A built cell (:func:`run_cells`, ``built``) holds
    only ``(("cell", id),)``: its scenario comes whole from the caller, run with ``seed``."""

    params: tuple[tuple[str, Any], ...]
    rep: int
    seed: int | None = None
    built: bool = False

    @property
    def run_id(self) -> str:
        parts = [f"{k}={v}" for k, v in self.params] + [f"rep={self.rep}"]
        raw = "__".join(parts)
        safe = re.sub(r"[^A-Za-z0-9=._-]+", "_", raw)
        if len(safe) > 120:
            safe = safe[:100] + "-" + hashlib.sha1(raw.encode()).hexdigest()[:12]
        return safe


def parse_grid(specs: list[str]) -> list[tuple[str, list[Any]]]:
    """``--grid key=v1,v2,...`` axes. An axis named twice, a repeated value (two runs of one
    cell would be two rows of one experiment) or an empty value is an error."""
    axes: list[tuple[str, list[Any]]] = []
    for s in specs:
        if "=" not in s:
            raise QoelabError(f"--grid {s!r}: expected key.path=v1,v2,...")
        k, vs = s.split("=", 1)
        k = k.strip()
        try:
            values = [parse_value(v.strip()) for v in _split_values(vs)]
        except ValueError as e:
            raise QoelabError(f"--grid {k}: {e}") from None
        if not values or any(v == "" for v in values):
            raise QoelabError(f"--grid {s!r}: empty value")
        if any(k == other for other, _ in axes):
            raise QoelabError(f"--grid {k}: the same key is given as two axes; list its values in one --grid")
        seen: dict[str, Any] = {}
        for v in values:
            key = _canonical(v)
            if key in seen:
                raise QoelabError(f"--grid {k}: value {_show(v)} is given twice (each cell runs once; use --reps for repetitions)")
            seen[key] = v
        axes.append((k, values))
    return axes


def _canonical(v: Any) -> str:
    """A value's identity for duplicate checks: type and content (``1`` and ``1.0`` differ, as
    their run ids do)."""
    return f"{type(v).__name__}:{json.dumps(v, sort_keys=True, default=str)}"


def _show(v: Any) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:59] + "…"


def check_run_ids(all_cells: list["Cell"]) -> None:
    """Run ids name folders, so two cells must never share one: values that differ only in
    characters a folder name cannot hold (``"v 1"`` and ``"v/1"`` both give ``v_1``) are an
    error naming both."""
    by_id: dict[str, Cell] = {}
    for c in all_cells:
        other = by_id.setdefault(c.run_id, c)
        if other is c:
            continue
        diff = [(k, a, b) for (k, a), (_, b) in zip(other.params, c.params) if _canonical(a) != _canonical(b)]
        what = "; ".join(f"{k}: {_show(a)} and {_show(b)}" for k, a, b in diff) or "identical parameters"
        raise QoelabError(f"--grid: two cells map to the same run folder {c.run_id!r} ({what}); "
                          "make the values differ in letters, digits or . _ = -")


def _split_values(s: str) -> list[str]:
    """Splits on commas outside brackets/braces/quotes (so ``{kind="fifo"},{...}`` works)."""
    out, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


def cells(axes: list[tuple[str, list[Any]]], reps: int) -> list[Cell]:
    """Every cell of the grid for rep 0, then for rep 1, ... (repetition-major)."""
    keys = [k for k, _ in axes]
    combos = list(itertools.product(*[v for _, v in axes]))
    return [Cell(tuple(zip(keys, combo)), r) for r in range(reps) for combo in combos]


def _code_version() -> dict[str, str]:
    from qoelab._native import __version__

    v = {"qoelab": __version__}
    try:
        root = Path(__file__).resolve().parents[2]
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            v["git"] = r.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10)
            if dirty.returncode == 0 and dirty.stdout.strip():
                v["git"] += "-dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return v


def _run_one(scenario: Scenario, cell: Cell, run_dir: Path) -> str:
    """Runs one cell into ``run_dir`` (no claim: a caller that runs one cell by itself). A
    scenario error comes back as one line naming the run (raised in a worker process, it must
    also survive pickling to reach the parent)."""
    _task(scenario, cell, str(run_dir), None, None, "shared", None)
    return cell.run_id


#: What :func:`_task` returns when the cell's claim was lost before the commit.
LOST = "lost"


class _Lost(Exception):
    pass


def _task(scenario: Scenario, cell: Cell, run_dir: str, claim: str | None, token: str | None, mode: str,
          probe: tuple[str, str] | None) -> dict[str, bytes] | str | None:
    """One cell, as run by any executor (in this process, a pool worker or a Dask worker).

    ``mode`` ``"shared"``: writes the run folder in place (a temporary folder renamed into place
    if the claim at ``claim`` still holds ``token``) and returns None, or :data:`LOST`.
    ``"return"``: returns the run's files (name → bytes) for the client to write. ``"auto"``:
    in place if this worker reads the client's probe file ``probe = (path, token)`` (it shares
    the client's file system), else returned."""
    try:
        if mode == "return" or (mode == "auto" and not (probe and claims.still_held(Path(probe[0]), probe[1]))):
            with tempfile.TemporaryDirectory(prefix="qoelab-run-") as t:
                _produce(scenario, cell, Path(t))
                return {f.name: f.read_bytes() for f in sorted(Path(t).iterdir())}
        if claim is not None and is_done(Path(run_dir)) and damage(Path(run_dir)) is None:
            # A retry of a task whose worker died after committing the run (before it could
            # report): the run is there, it is not run twice.
            return None
        if claim is not None:  # an earlier attempt's temporary folder (its worker died)
            _remove_partials(Path(run_dir).parent, cell)
        try:
            with outdir.staged(Path(run_dir)) as tmp:
                _produce(scenario, cell, tmp)
                _seal(tmp)
                if claim is not None and not claims.still_held(Path(claim), token or ""):
                    raise _Lost
        except _Lost:
            return LOST
        return None
    except (QoelabError, NativeScenarioError) as e:
        raise QoelabError(f"{run_dir}: {e}") from e


def _produce(scenario: Scenario, cell: Cell, into: Path) -> None:
    """Runs the cell and writes its files (all but the ``done`` marker) into ``into``."""
    sc = scenario.copy()
    if cell.built:
        sc.set("sim.seed", cell.seed)
    else:
        for k, v in cell.params:
            sc.set(k, v)
        base_seed = int(sc.data.get("sim", {}).get("seed", 1))
        sc.set("sim.seed", base_seed + cell.rep)
    started = time.time()
    w0, c0 = time.perf_counter(), time.process_time()
    # A progress callback runs Python code now and then, so Ctrl-C reaches a serial sweep
    # during a long run instead of after it.
    res = sc.run(progress=_tick)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    res.write_into(into, plot=False)
    _write_meta(into, {"params": dict(cell.params), "rep": cell.rep, **({"seed": cell.seed} if cell.built else {})},
                {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "started_unix": round(started, 3),
                 "finished_unix": round(time.time(), 3), **_code_version()})


def _write_meta(into: Path, cell: dict[str, Any], timing: dict[str, Any]) -> None:
    """A run's ``cell.json`` (its parameters, repetition and seed) and ``timing.json``."""
    (into / "cell.json").write_text(json.dumps(cell, sort_keys=True, default=str) + "\n")
    (into / "timing.json").write_text(json.dumps(timing, sort_keys=True) + "\n")


def adopt(donor: Path, run_dir: Path, params: dict[str, Any], rep: int, seed: int) -> bool:
    """Makes ``run_dir`` a finished run holding the outputs of ``donor``, a finished run of the
    same scenario with the same seed (the caller's claim, :func:`qoelab.experiment.core.run_key`):
    by determinism running it again would write the same bytes. Its own ``cell.json`` names the
    recipient's cell; its ``timing.json`` costs nothing (0 s), names the donor
    (``reused_from``) and keeps the code version that computed the results. Files are hard links
    where the file system allows (copies otherwise); the ``done`` marker checksums them as for
    any run. False, and nothing written, if ``run_dir`` exists or ``donor`` is not a usable run."""
    if os.path.lexists(run_dir) or damage(donor) is not None:
        return False
    try:
        made = json.loads(_read_run_file(donor, "timing.json"))
    except (OSError, ValueError):
        return False
    with outdir.staged(run_dir) as tmp:
        for f in sorted(donor.iterdir()):
            if f.name in ("done", "cell.json", "timing.json") or f.is_symlink() or not f.is_file():
                continue
            try:
                os.link(f, tmp / f.name)
            except OSError:
                shutil.copyfile(f, tmp / f.name)
        now = round(time.time(), 3)
        kept = {k: made[k] for k in ("qoelab", "git") if isinstance(made, dict) and k in made}
        _write_meta(tmp, {"params": params, "rep": rep, "seed": seed},
                    {"wall_s": 0.0, "cpu_s": 0.0, "started_unix": now, "finished_unix": now,
                     "reused_from": os.path.relpath(donor, run_dir.parent), **kept})
        _seal(tmp)
    return True


def _seal(tmp: Path) -> None:
    """Writes the ``done`` marker, last: every file's size and SHA-256. Everything goes to a
    temporary folder renamed into place, so a run folder either is complete or does not exist."""
    files = {f.name: {"bytes": f.stat().st_size, "sha256": _sha256(f)} for f in sorted(tmp.iterdir())}
    (tmp / "done").write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n")


def _tick(_now: float, _end: float) -> None:
    return None


def _sha256(f: Path) -> str:
    h = hashlib.sha256()
    with _open_run_file(f.parent, f.name) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _open_run_file(run_dir: Path, name: str) -> Any:
    """A file of a run folder, opened without following a symbolic link (one planted in the
    sweep folder is never read through: the run counts as damaged and is redone)."""
    from qoelab.paths import open_inside

    return open_inside(run_dir, name, "run file", lambda p, why: OSError(why))


def _read_run_file(run_dir: Path, name: str) -> str:
    with _open_run_file(run_dir, name) as fh:
        return fh.read().decode("utf-8")


def damage(run_dir: Path) -> str | None:
    """Why the run in ``run_dir`` cannot be used as finished, or None if it can.

    A run finished by this version lists its files with sizes and SHA-256 in its ``done``
    marker, and every one must match. An older, empty marker is trusted as far as its tables
    read: ``flows.parquet``'s footer, ``summary.json`` and ``cell.json`` must parse."""
    if os.path.islink(run_dir):
        return "a symbolic link, not followed"
    done = run_dir / "done"
    if not done.is_file() or done.is_symlink():
        return "unfinished (no done marker)"
    try:
        text = _read_run_file(run_dir, "done")
        manifest = json.loads(text)["files"] if text.strip() else None
    except (OSError, ValueError, KeyError, TypeError):
        return "its done marker is damaged"
    if manifest is not None:
        try:
            for name, m in sorted(manifest.items()):
                f = run_dir / name
                if "/" in name or not f.is_file():
                    return f"{name} is missing"
                if f.is_symlink():
                    return f"{name} is a symbolic link"
                if f.stat().st_size != m["bytes"] or _sha256(f) != m["sha256"]:
                    return f"{name} changed since the run finished"
        except (OSError, KeyError, TypeError, AttributeError):
            return "its done marker is damaged"
        return None
    try:
        with _open_run_file(run_dir, "flows.parquet") as fh:
            pq.read_metadata(arrow_source(fh))
        json.loads(_read_run_file(run_dir, "summary.json"))
        json.loads(_read_run_file(run_dir, "cell.json"))
    except (OSError, ValueError, pa.ArrowException) as e:
        return f"a table does not read ({type(e).__name__})"
    return None


def timing(out_dir: Path, only: list[Cell] | None = None) -> dict[str, Any]:
    """Sums the ``timing.json`` of the finished runs under ``out_dir/runs`` (of the cells in
    ``only``, if given): how many runs, their CPU and wall seconds (one core each), the code
    versions they ran with (in the order they were first used), and ``active_wall_s``: the
    length of the union of the runs' time intervals, i.e. the wall time the sweep was running
    with however many workers it had, pauses between sittings excluded. A run's interval is
    ``started_unix``..``finished_unix``; runs timed before those were recorded end at their
    ``done`` marker's mtime and last ``wall_s``. ``reused``: how many of the runs are another
    run's outputs taken over (:func:`adopt`: no cost of their own)."""
    runs, wall, cpu, reused = 0, 0.0, 0.0, 0
    first_used: dict[str, tuple[float, str]] = {}
    spans: list[tuple[float, float]] = []
    keep = None if only is None else {c.run_id for c in only}
    for t in sorted((out_dir / "runs").glob("*/timing.json")):
        if not is_done(t.parent) or (keep is not None and t.parent.name not in keep):
            continue
        try:
            d = json.loads(_read_run_file(t.parent, "timing.json"))
        except OSError:  # a symbolic link planted there: not this sweep's run
            continue
        runs += 1
        reused += "reused_from" in d
        wall += d["wall_s"]
        cpu += d["cpu_s"]
        if "finished_unix" in d:
            spans.append((d["started_unix"], d["finished_unix"]))
        else:
            end = (t.parent / "done").stat().st_mtime
            spans.append((end - d["wall_s"], end))
        version = d.get("git") or d.get("qoelab", "?")
        started = (spans[-1][0], version)
        first_used[version] = min(first_used.get(version, started), started)
    versions = [v for _, v in sorted(first_used.values())]
    return {"runs": runs, "wall_s": wall, "cpu_s": cpu, "versions": versions, "active_wall_s": union_length(spans),
            "reused": reused}


def union_length(spans: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals ``(start, end)`` (overlaps counted once)."""
    total = 0.0
    cur: tuple[float, float] | None = None  # the interval being merged
    for a, b in sorted(spans):
        if cur is None or a > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = (a, b)
        else:
            cur = (cur[0], max(cur[1], b))
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def _check_same_sweep(scenario: Scenario, axes: list[tuple[str, list[Any]]], reps: int, out_dir: Path) -> None:
    """A results directory belongs to one base scenario: resuming with a changed scenario would
    silently mix runs of two experiments, so it is refused. Adding grid values or repetitions
    is fine (finished cells are kept). A damaged ``sweep.json`` is refused too: without it the
    runs cannot be told to belong to this scenario."""
    digest = hashlib.sha256(scenario.to_toml().encode()).hexdigest()
    meta = out_dir / "sweep.json"
    if meta.exists() or meta.is_symlink():
        try:
            if not meta.is_file() or meta.is_symlink():
                raise ValueError("not a regular file")
            old = json.loads(_read_run_file(out_dir, "sweep.json"))
            if not isinstance(old, dict) or not isinstance(old.get("scenario_sha256"), str):
                raise ValueError("no scenario_sha256")
        except (OSError, ValueError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).split("\n")[0]
            raise QoelabError(
                f"{meta}: damaged ({why}); it records which scenario the runs beside it belong to, "
                "so the sweep cannot resume: restore it, or remove the folder to start over"
            ) from None
        if old["scenario_sha256"] != digest:
            raise QoelabError(
                f"{out_dir}: holds runs of a different base scenario than {scenario.source} "
                "(it changed since they ran); use another output directory or remove this one"
            )
    outdir.write_atomic(meta, json.dumps({"scenario_sha256": digest, "source": scenario.source,
                                          "axes": {k: [str(v) for v in vs] for k, vs in axes}, "reps": reps}, indent=2) + "\n")


def is_done(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a finished run's ``done`` marker (a symbolic link, there or as
    the run folder, is no run of this sweep)."""
    return not os.path.islink(run_dir) and (run_dir / "done").is_file() and not (run_dir / "done").is_symlink()


#: Most runs one sweep may hold (the TFD grid with the paper's 20 repetitions has 8,800); a
#: typo in ``--reps`` should not fill memory with cells before failing.
MAX_RUNS = 1_000_000

#: Most repetitions per cell (``--reps``), the same for ``sweep``, ``bench`` and every
#: ``reproduce`` (the papers ask 5 to 30); checked before anything is built from it.
MAX_REPS = 10_000


def check_reps(reps: int) -> int:
    """``--reps``: at least 1 and at most :data:`MAX_REPS`; returns it."""
    if reps < 1:
        raise QoelabError(f"--reps {reps}: must be at least 1")
    if reps > MAX_REPS:
        shown = str(reps) if len(str(reps)) <= 20 else str(reps)[:20] + "…"
        raise QoelabError(f"--reps {shown}: at most {MAX_REPS} repetitions per cell")
    return reps


def check_runs(runs: int, what: str = "--reps") -> int:
    """A grid's number of runs (cells × repetitions): at most :data:`MAX_RUNS`, for every
    sweep and every reproduction; returns it."""
    if runs > MAX_RUNS:
        raise QoelabError(f"{what}: {runs} runs, more than the {MAX_RUNS} a sweep may hold")
    return runs


def run_sweep(
    scenario: Scenario,
    axes: list[tuple[str, list[Any]]],
    reps: int,
    out_dir: Path,
    jobs: int,
    progress: Callable[..., None] | None = None,
    *,
    executor: ExecutorSpec | Executor | None = None,
) -> dict[str, int]:
    """Runs every missing cell; returns counts ``{total, skipped, ran, repaired, others}``.

    ``executor``: None runs on ``jobs`` local processes (as before executors existed); an
    :class:`~qoelab.executors.ExecutorSpec` says where (``cluster``, ``scheduler``) and which
    share (``shard``) to run, with ``jobs`` local processes if neither cluster nor scheduler is
    given, and is opened and closed here; an open :class:`~qoelab.executors.Executor` is used
    as it is (so several sweeps share one cluster).

    Each cell is claimed before it runs (:mod:`qoelab.claims`), so any number of sweeps on one
    folder run each cell once; a sweep waits at the end for cells that others are running,
    and ``others`` counts those. With a shard, only the shard's cells run and ``total`` counts
    them; the combined tables hold every finished run of the grid.

    Resume: a finished run whose files changed or do not read (see :func:`damage`) is
    recomputed, and counted in ``repaired``. Ctrl-C cancels the runs not started and stops
    the running ones; finished runs are kept."""
    check_reps(reps)
    jobs = resolve_jobs(jobs)
    if executor is None:
        executor = ExecutorSpec(jobs=jobs)
    elif isinstance(executor, ExecutorSpec):
        executor = dataclasses.replace(executor, jobs=jobs)
    total = reps * math.prod(len(v) for _, v in axes)
    if total > MAX_RUNS:
        raise QoelabError(f"--grid/--reps: {total} runs ({' x '.join(str(len(v)) for _, v in axes) or '1'} cells x {reps} reps), "
                          f"more than the {MAX_RUNS} a sweep may hold")
    all_cells = cells(axes, reps)
    check_run_ids(all_cells)
    if out_dir.exists() and not out_dir.is_dir():
        raise QoelabError(f"-o/--output {out_dir}: exists and is not a directory")
    # Validate every cell up front so a typo in the grid fails before hours of compute.
    for c in all_cells[: max(1, len(all_cells) // reps)]:
        sc = scenario.copy()
        for k, v in c.params:
            sc.set(k, v)
        sc.validate()
    return _execute(scenario, scenario, axes, reps, all_cells, out_dir, executor, progress)


def _execute(source: Any, recorded: Any, axes: list, reps: int, all_cells: list[Cell], out_dir: Path, executor: Any,
             progress: Callable[..., None] | None) -> dict[str, int]:
    """What :func:`run_sweep` and :func:`run_cells` share once their cells are known: the folder,
    its claims, the same-sweep check (``recorded`` with ``axes``), this shard's cells run from
    ``source`` on the executor, and the combined tables."""
    # Nothing is written through a symbolic link planted in the folder (runs/, .claims/).
    for p in (out_dir, out_dir / "runs", out_dir / claims.FOLDER, out_dir / "sweep.json", out_dir / "flows.parquet",
              out_dir / "summary.parquet"):
        outdir.refuse_symlink(p)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "runs").mkdir(exist_ok=True)
        held = Claims(out_dir)
    except OSError as e:
        raise QoelabError(f"-o/--output {out_dir}: cannot use as sweep folder: {e.strerror or e}") from None
    _check_same_sweep(recorded, axes, reps, out_dir)
    shard = executor.shard if isinstance(executor, ExecutorSpec) else getattr(executor, "shard", None)
    mine = shard_of(all_cells, shard)
    if isinstance(executor, ExecutorSpec):
        with executor.open() as ex:
            counts = _run_cells(source, mine, out_dir, ex, held, progress)
    else:
        counts = _run_cells(source, mine, out_dir, executor, held, progress)
    collect(out_dir, all_cells)
    return counts


@dataclass(frozen=True)
class _CellSet:
    """The cells of :func:`run_cells` as :func:`_check_same_sweep` digests them: each id with its
    scenario, the seed left out (the cell's runs set it)."""

    by_id: dict[str, Scenario]
    source: str

    def to_toml(self) -> str:
        def unseeded(sc: Scenario) -> dict[str, Any]:
            d = dict(sc.data)
            d["sim"] = {k: v for k, v in d.get("sim", {}).items() if k != "seed"}
            return d

        return json.dumps({cid: unseeded(sc) for cid, sc in sorted(self.by_id.items())}, sort_keys=True, default=str)


def run_cells(
    items: list[tuple[str, Scenario]],
    reps: int,
    seed: Callable[[str, int], int],
    out_dir: Path,
    jobs: int,
    progress: Callable[..., None] | None = None,
    *,
    executor: ExecutorSpec | Executor | None = None,
) -> dict[str, int]:
    """Runs ``reps`` repetitions of each built cell ``(cell id, scenario)`` into
    ``out_dir/runs/cell=<id>__rep=<r>``, repetition ``r`` of cell ``id`` with seed
    ``seed(id, r)``; the rest is :func:`run_sweep`'s: the same claims, resume, executors,
    shards, counts and combined tables. The folder belongs to one set of cells: it records the
    digest of the cell ids and scenarios (seeds aside), and a resume with other cells or changed
    scenarios is refused (more repetitions are fine)."""
    check_reps(reps)
    check_runs(reps * len(items))
    jobs = resolve_jobs(jobs)
    if executor is None:
        executor = ExecutorSpec(jobs=jobs)
    elif isinstance(executor, ExecutorSpec):
        executor = dataclasses.replace(executor, jobs=jobs)
    by_id: dict[str, Scenario] = {}
    for cid, sc in items:
        if cid in by_id:
            raise QoelabError(f"{out_dir}: two cells share the id {cid!r}")
        sc.validate()
        by_id[cid] = sc
    all_cells = [Cell((("cell", cid),), r, int(seed(cid, r)), True) for r in range(reps) for cid, _ in items]
    check_run_ids(all_cells)
    if out_dir.exists() and not out_dir.is_dir():
        raise QoelabError(f"-o/--output {out_dir}: exists and is not a directory")
    return _execute(by_id, _CellSet(by_id, str(out_dir)), [("cell", list(by_id))], reps, all_cells, out_dir, executor,
                    progress)


#: Seconds between two looks at cells that other sweeps are running.
POLL_S = 1.0


def _run_cells(scenario: Scenario | dict[str, Scenario], mine: list[Cell], out_dir: Path, ex: Executor, held: Claims,
               progress: Callable[..., None] | None) -> dict[str, int]:
    runs = out_dir / "runs"
    todo = [c for c in mine if not (runs / c.run_id).exists() or damage(runs / c.run_id) is not None]
    done = len(mine) - len(todo)
    counts = {"total": len(mine), "skipped": done, "ran": 0, "repaired": 0, "others": 0}
    if progress:
        progress(done, len(mine), reused=done)
    if not todo:
        return counts
    probe = None
    if ex.may_share and isinstance(ex, Dask):
        # Workers that read this file with this token share the folder and write runs in place.
        probe = (str(held.dir / f".probe-{secrets.token_hex(8)}"), secrets.token_hex(8))
        Path(probe[0]).write_text(json.dumps({"token": probe[1]}) + "\n")
    mode = "auto" if probe else ("shared" if ex.may_share else "return")
    queue = collections.deque(todo)
    waiting: list[Cell] = []  # claimed by other sweeps when we looked
    inflight: dict[Any, tuple[Cell, str]] = {}
    failed: BaseException | None = None
    last_look = 0.0

    def finished_elsewhere() -> None:
        nonlocal done
        counts["others"] += 1
        done += 1
        if progress:
            progress(done, len(mine))

    try:
        with Heartbeat(held):
            while True:
                while failed is None and queue and len(inflight) < ex.capacity():
                    c = queue.popleft()
                    token = _claim(held, runs, c, counts)
                    if token == "done":
                        finished_elsewhere()
                    elif token is None:
                        waiting.append(c)
                    else:
                        sc = scenario if isinstance(scenario, Scenario) else scenario[c.params[0][1]]
                        h = ex.submit(_task, sc, c, str(runs / c.run_id), str(held.path(c.run_id)), token, mode, probe)
                        inflight[h] = (c, token)
                if failed is None and not queue and waiting and time.monotonic() - last_look >= POLL_S:
                    # Look again at the cells others hold: finished, or free to claim (their
                    # holder released or died).
                    last_look = time.monotonic()
                    for c in waiting:
                        if is_done(runs / c.run_id) and damage(runs / c.run_id) is None:
                            finished_elsewhere()
                        else:
                            queue.append(c)
                    waiting = []
                    continue
                if not inflight:
                    if failed is not None or not waiting:
                        break
                    time.sleep(POLL_S)
                    continue
                for h in sorted(ex.wait(list(inflight), POLL_S), key=lambda h: inflight[h][0].run_id):
                    c, token = inflight.pop(h)
                    try:
                        got = ex.result(h, c.run_id)
                        if isinstance(got, dict):
                            got = _write_returned(got, runs / c.run_id, held, c, token)
                    except WorkerDied as e:
                        raise QoelabError(f"{runs}: {e}; the {done} finished runs are kept, "
                                          "run the same command again to resume") from e
                    except QoelabError as e:
                        # A bad cell: start nothing new, let the running ones finish (their
                        # results are good), then report it.
                        held.release(c.run_id)
                        failed = failed or e
                        continue
                    held.release(c.run_id)
                    if got == LOST:  # taken over while it ran: the new holder commits it
                        waiting.append(c)
                        continue
                    counts["ran"] += 1
                    done += 1
                    if progress:
                        progress(done, len(mine))
    except BaseException:
        ex.stop()
        for c, _ in inflight.values():  # the stopped runs' temporary folders
            _remove_partials(runs, c)
        held.release_all()
        raise
    finally:
        if probe:
            Path(probe[0]).unlink(missing_ok=True)
    held.release_all()
    if failed is not None:
        raise failed
    return counts


def _claim(held: Claims, runs: Path, c: Cell, counts: dict[str, int]) -> str | None:
    """Claims cell ``c``: its token, ``"done"`` if it is finished (by another sweep), or None
    if another sweep holds it. A damaged run is removed once claimed (nobody else writes it)."""
    d = outdir.refuse_symlink(runs / c.run_id)
    if d.exists() and damage(d) is None:
        return "done"
    token = held.take(c.run_id)
    if token is None:
        return None
    if d.exists():
        why = damage(d)
        if why is None:  # finished between our look and our claim
            held.release(c.run_id)
            return "done"
        if is_done(d):
            counts["repaired"] += 1
            _warn(f"{d}: {why}; running it again")
        shutil.rmtree(d)  # unfinished or damaged: recomputed
    _remove_partials(runs, c)  # left by a holder that died
    return token


def _remove_partials(runs: Path, c: Cell) -> None:
    # Run ids hold only letters, digits and "=._-": no glob metacharacters.
    for stale in runs.glob(f".{c.run_id}.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)


def _write_returned(files: dict[str, bytes], run_dir: Path, held: Claims, c: Cell, token: str) -> str | None:
    """Writes a run whose files a worker returned, as a worker sharing the folder would."""
    try:
        with outdir.staged(run_dir) as tmp:
            for name, data in files.items():
                if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith(".") or name == "done":
                    raise QoelabError(f"{run_dir}: a worker returned a file named {name!r}")
                (tmp / name).write_bytes(data)
            _seal(tmp)
            if not held.holds(c.run_id, token):
                raise _Lost
    except _Lost:
        return LOST
    return None


def _warn(msg: str) -> None:
    import sys

    sys.stderr.write(f"qoelab: {msg}\n")


def collect(out_dir: Path, all_cells: list[Cell]) -> None:
    """Combines finished runs into ``flows.parquet`` and ``summary.parquet`` (one row per run
    per flow, and per run), with the grid parameters and rep as leading columns."""
    flows, summaries = [], []
    types = _param_types(all_cells)
    first_rep: dict[tuple, bytes] = {}
    identical: dict[tuple, int] = {}
    for c in all_cells:
        d = out_dir / "runs" / c.run_id
        if not is_done(d):
            continue
        with _open_run_file(d, "flows.parquet") as fh:
            t = pq.read_table(arrow_source(fh))
        key = tuple((k, str(v)) for k, v in c.params)
        # compared as IPC bytes: Table.equals() says NaN != NaN (goodput of a UDP flow)
        ipc = _ipc_bytes(t.replace_schema_metadata(None))  # the metadata names each run's seed
        if key not in first_rep:
            first_rep[key] = ipc
        elif ipc == first_rep[key]:
            identical[key] = identical.get(key, 1) + 1
        extra = {k: [v] * t.num_rows for k, v in with_plain_names(_typed_params(c.params, types), t.column_names)}
        extra["rep"] = [c.rep] * t.num_rows
        extra["run_id"] = [c.run_id] * t.num_rows
        for i, (k, v) in enumerate(extra.items()):
            t = t.add_column(i, k, pa.array(v))
        flows.append(t)
        s = json.loads(_read_run_file(d, "summary.json"))
        summaries.append({**dict(with_plain_names(_typed_params(c.params, types), list(s))), "rep": c.rep,
                          "run_id": c.run_id, **s})
    if identical:
        # Repetitions differ only by their seed: identical ones mean nothing in the scenario
        # draws from it (no random loss, start, jitter, …), so the interval over them is empty.
        cell = ", ".join(f"{k}={v}" for k, v in next(iter(identical))) or "the scenario"
        _warn(f"{len(identical)} of {len(first_rep)} cells ran repetitions with identical flows tables "
              f"(e.g. {cell}: {next(iter(identical.values()))} identical runs): nothing in the scenario "
              "depends on the seed, so repetitions add no information")
    if flows:
        _atomic_parquet(pa.concat_tables(flows, promote_options="default"), out_dir / "flows.parquet")
        _atomic_parquet(pa.Table.from_pylist(summaries), out_dir / "summary.parquet")


def _param_types(cells: list[Cell]) -> dict[str, str]:
    """How each grid parameter is tabulated: "int" or "float" when every value is that number;
    a quantity kind ("rate_bps", "time_s", "bytes", "packets") when every value is a string
    with a unit of that kind; else "str"."""
    from qoelab.units import quantity

    values: dict[str, list[Any]] = {}
    for c in cells:
        for k, v in c.params:
            values.setdefault(k, []).append(v)
    out: dict[str, str] = {}
    for k, vs in values.items():
        if all(isinstance(v, int) and not isinstance(v, bool) for v in vs):
            out[k] = "int"
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vs):
            out[k] = "float"
        else:
            kinds = {(q[0] if (q := quantity(v)) else None) if isinstance(v, str) else None for v in vs}
            kind = kinds.pop() if len(kinds) == 1 else None
            out[k] = kind if kind is not None else "str"
    return out


def _typed_params(params: tuple[tuple[str, Any], ...], types: dict[str, str]) -> list[tuple[str, Any]]:
    """The grid columns of one run: numbers as numbers (so 1, 2, 4, 10 sort as numbers); a
    quantity as its original string plus `<key>.si`, its value in SI units (bit/s, s, bytes,
    packets: so "5Mbps" sorts before "20Mbps"); anything else as its string."""
    from qoelab.units import quantity

    out: list[tuple[str, Any]] = []
    for k, v in params:
        kind = types.get(k, "str")
        if kind == "int":
            out.append((k, int(v)))
        elif kind == "float":
            out.append((k, float(v)))
        elif kind == "str":
            out.append((k, str(v)))
        else:
            q = quantity(v)
            out += [(k, str(v)), (f"{k}.si", q[1] if q else None)]
    return out


def plain_name(key: str) -> str:
    """A grid column's name as a Python identifier, for pandas ``query()`` and attribute access:
    every run of characters other than letters, digits and ``_`` becomes one ``_``
    (``links[0].queue.limit`` → ``links_0_queue_limit``, ``….si`` → ``…_si``)."""
    name = re.sub(r"[^0-9A-Za-z_]+", "_", key).strip("_") or "param"
    return f"p_{name}" if name[0].isdigit() else name


def with_plain_names(cols: list[tuple[str, Any]], taken: list[str]) -> list[tuple[str, Any]]:
    """``cols`` (grid columns named by scenario path) each followed by its :func:`plain_name`
    twin holding the same value; a plain name that is the path itself, or that another column
    (of ``cols`` or ``taken``, the table's own columns) already has, is left out."""
    used = set(taken) | {k for k, _ in cols}
    out: list[tuple[str, Any]] = []
    for k, v in cols:
        out.append((k, v))
        plain = plain_name(k)
        if plain not in used:
            used.add(plain)
            out.append((plain, v))
    return out


def _ipc_bytes(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def _atomic_parquet(t: pa.Table, path: Path) -> None:
    # A temporary name of this writer's own (random, O_EXCL): concurrent sweeps (or shards) on
    # one folder each rebuild it.
    with outdir.atomic_file(path) as fh:
        pq.write_table(t, fh, compression="zstd")
