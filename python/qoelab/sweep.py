"""Parameter sweeps on a local process pool, resumable.

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
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from qoelab import outdir
from qoelab.errors import NativeScenarioError, QoelabError
from qoelab.scenario import Scenario, parse_value


@dataclass(frozen=True)
class Cell:
    params: tuple[tuple[str, Any], ...]
    rep: int

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
    from qoelab import __version__

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
    """Runs one cell into ``run_dir``. A scenario error comes back as one line naming the run
    (raised in a worker process, it must also survive pickling to reach the parent)."""
    try:
        return _run_cell(scenario, cell, run_dir)
    except (QoelabError, NativeScenarioError) as e:
        raise QoelabError(f"{run_dir}: {e}") from e


def _run_cell(scenario: Scenario, cell: Cell, run_dir: Path) -> str:
    sc = scenario.copy()
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
    # Everything, the done marker last, goes to a temporary folder renamed into place: a run
    # folder either is complete or does not exist.
    with outdir.staged(run_dir) as tmp:
        res.write_into(tmp, plot=False)
        (tmp / "cell.json").write_text(json.dumps({"params": dict(cell.params), "rep": cell.rep}, sort_keys=True, default=str) + "\n")
        (tmp / "timing.json").write_text(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "started_unix": round(started, 3),
                                                     "finished_unix": round(time.time(), 3), **_code_version()}, sort_keys=True) + "\n")
        files = {f.name: {"bytes": f.stat().st_size, "sha256": _sha256(f)} for f in sorted(tmp.iterdir())}
        (tmp / "done").write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n")
    return cell.run_id


def _tick(_now: float, _end: float) -> None:
    return None


def _sha256(f: Path) -> str:
    h = hashlib.sha256()
    with open(f, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def damage(run_dir: Path) -> str | None:
    """Why the run in ``run_dir`` cannot be used as finished, or None if it can.

    A run finished by this version lists its files with sizes and SHA-256 in its ``done``
    marker, and every one must match. An older, empty marker is trusted as far as its tables
    read: ``flows.parquet``'s footer, ``summary.json`` and ``cell.json`` must parse."""
    done = run_dir / "done"
    if not done.is_file():
        return "unfinished (no done marker)"
    try:
        text = done.read_text()
        manifest = json.loads(text)["files"] if text.strip() else None
    except (OSError, ValueError, KeyError, TypeError):
        return "its done marker is damaged"
    if manifest is not None:
        try:
            for name, m in sorted(manifest.items()):
                f = run_dir / name
                if "/" in name or not f.is_file():
                    return f"{name} is missing"
                if f.stat().st_size != m["bytes"] or _sha256(f) != m["sha256"]:
                    return f"{name} changed since the run finished"
        except (OSError, KeyError, TypeError, AttributeError):
            return "its done marker is damaged"
        return None
    try:
        pq.read_metadata(run_dir / "flows.parquet")
        json.loads((run_dir / "summary.json").read_text())
        json.loads((run_dir / "cell.json").read_text())
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
    ``done`` marker's mtime and last ``wall_s``."""
    runs, wall, cpu = 0, 0.0, 0.0
    first_used: dict[str, tuple[float, str]] = {}
    spans: list[tuple[float, float]] = []
    keep = None if only is None else {c.run_id for c in only}
    for t in sorted((out_dir / "runs").glob("*/timing.json")):
        if not is_done(t.parent) or (keep is not None and t.parent.name not in keep):
            continue
        d = json.loads(t.read_text())
        runs += 1
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
    return {"runs": runs, "wall_s": wall, "cpu_s": cpu, "versions": versions, "active_wall_s": union_length(spans)}


def union_length(spans: list[tuple[float, float]]) -> float:
    """Total length covered by the intervals ``(start, end)`` (overlaps counted once)."""
    total, cur_start, cur_end = 0.0, None, None
    for a, b in sorted(spans):
        if cur_end is None or a > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = a, b
        else:
            cur_end = max(cur_end, b)
    if cur_end is not None:
        total += cur_end - cur_start
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
            if not meta.is_file():
                raise ValueError("not a regular file")
            old = json.loads(meta.read_text())
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
    tmp = meta.with_name(f".sweep.json.partial-{os.getpid()}")
    tmp.write_text(json.dumps({"scenario_sha256": digest, "source": scenario.source,
                               "axes": {k: [str(v) for v in vs] for k, vs in axes}, "reps": reps}, indent=2) + "\n")
    os.replace(tmp, meta)


def is_done(run_dir: Path) -> bool:
    return (run_dir / "done").exists()


#: Most runs one sweep may hold (the TFD grid with the paper's 20 repetitions has 8,800); a
#: typo in ``--reps`` should not fill memory with cells before failing.
MAX_RUNS = 1_000_000

#: ``-j`` may ask for at most this many runs per CPU (more only adds memory and switching).
JOBS_PER_CPU = 4


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resolve_jobs(jobs: int) -> int:
    """``-j N``: N parallel runs; 0 means one per CPU this process may use; at most
    :data:`JOBS_PER_CPU` per CPU."""
    n = cpu_count()
    if jobs < 0:
        raise QoelabError(f"-j/--jobs {jobs}: must be 0 (one per CPU) or a positive number of runs")
    if jobs == 0:
        return n
    if jobs > JOBS_PER_CPU * n:
        raise QoelabError(f"-j/--jobs {jobs}: at most {JOBS_PER_CPU * n} ({JOBS_PER_CPU} per CPU, {n} CPUs usable here)")
    return jobs


class _FolderLock:
    """An exclusive ``flock`` on ``<out>/.sweep.lock`` for the sweep's lifetime, so two sweeps
    on one folder never run a cell twice. The kernel drops it when the holder dies (workers
    die with it), so a crashed sweep leaves no stale lock. The file holds the owner's pid."""

    def __init__(self, out_dir: Path):
        import fcntl

        self.path = out_dir / ".sweep.lock"
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                owner = os.pread(self.fd, 32, 0).decode(errors="replace").strip() or "?"
            finally:
                os.close(self.fd)
            raise QoelabError(f"{out_dir}: another sweep (pid {owner}) is running in this folder; "
                              "wait for it to finish or use another output folder") from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _worker_init(parent_pid: int) -> None:
    """In each pool worker: Ctrl-C is the parent's to handle (it stops the workers itself),
    and a worker dies with its parent rather than run on orphaned."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "sched_getaffinity"):  # Linux: the kernel kills us when the parent dies
        try:
            import ctypes

            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the line above
        os._exit(1)
    import threading

    def watch() -> None:  # elsewhere (and as a second line): poll the parent
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="qoelab-parent-watch").start()


def _stop_pool(ex: ProcessPoolExecutor) -> None:
    """Cancels queued runs and ends running ones within about a second (SIGTERM, then
    SIGKILL). A killed run leaves at most a temporary folder, removed on resume."""
    import multiprocessing

    # The pool's own list where it keeps one (CPython does), else every child we started.
    procs = list((getattr(ex, "_processes", None) or {}).values()) or multiprocessing.active_children()
    ex.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 1.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(1.0)


def run_sweep(
    scenario: Scenario,
    axes: list[tuple[str, list[Any]]],
    reps: int,
    out_dir: Path,
    jobs: int,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Runs every missing cell; returns counts ``{total, skipped, ran, repaired}``.

    Resume: a finished run whose files changed or do not read (see :func:`damage`) is
    recomputed, and counted in ``repaired``. Ctrl-C cancels the runs not started and stops
    the running ones; finished runs are kept."""
    if reps < 1:
        raise QoelabError(f"--reps {reps}: must be at least 1")
    jobs = resolve_jobs(jobs)
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
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        runs = out_dir / "runs"
        runs.mkdir(exist_ok=True)
        lock = _FolderLock(out_dir)
    except OSError as e:
        raise QoelabError(f"-o/--output {out_dir}: cannot use as sweep folder: {e.strerror or e}") from None
    try:
        _check_same_sweep(scenario, axes, reps, out_dir)
        return _run_cells(scenario, all_cells, out_dir, jobs, progress)
    finally:
        lock.release()


def _run_cells(scenario: Scenario, all_cells: list[Cell], out_dir: Path, jobs: int,
               progress: Callable[[int, int], None] | None) -> dict[str, int]:
    runs = out_dir / "runs"
    for stale in runs.glob(".*.partial-*"):  # temporary folders of runs killed mid-write
        shutil.rmtree(stale, ignore_errors=True)  # we hold the folder lock: nobody else writes
    todo, repaired = [], 0
    for c in all_cells:
        d = runs / c.run_id
        if not d.exists():
            todo.append(c)
            continue
        why = damage(d)
        if why is None:
            continue
        if is_done(d):
            repaired += 1
            _warn(f"{d}: {why}; running it again")
        shutil.rmtree(d)  # unfinished or damaged: recomputed
        todo.append(c)
    done = len(all_cells) - len(todo)
    if progress:
        progress(done, len(all_cells))
    if jobs <= 1:
        for c in todo:
            _run_one(scenario, c, runs / c.run_id)
            done += 1
            if progress:
                progress(done, len(all_cells))
    else:
        # At most `jobs` runs are handed to the pool at a time: nothing waits in its queue, so
        # stopping cancels no more than it must and never starts a run after Ctrl-C.
        ex = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),))
        queue = iter(todo)
        inflight: dict[Any, Cell] = {}
        failed: BaseException | None = None
        try:
            while True:
                while failed is None and len(inflight) < jobs and (c := next(queue, None)) is not None:
                    inflight[ex.submit(_run_one, scenario, c, runs / c.run_id)] = c
                if not inflight:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=lambda f: inflight[f].run_id):
                    inflight.pop(f)
                    try:
                        f.result()
                    except BrokenProcessPool as e:
                        # A worker died (killed, out of memory, crashed). The finished runs
                        # stay; a rerun resumes after them.
                        raise QoelabError(f"{runs}: a worker process died ({e}); the {done} finished runs are kept, "
                                          "run the same command again to resume") from e
                    except QoelabError as e:
                        # A bad cell: start nothing new, let the running ones finish (their
                        # results are good), then report it.
                        failed = failed or e
                        continue
                    done += 1
                    if progress:
                        progress(done, len(all_cells))
        except BaseException:
            _stop_pool(ex)
            for stale in runs.glob(".*.partial-*"):  # the stopped runs' temporary folders
                shutil.rmtree(stale, ignore_errors=True)
            raise
        if failed is not None:
            ex.shutdown(wait=True)
            raise failed
        ex.shutdown(wait=True)
    collect(out_dir, all_cells)
    return {"total": len(all_cells), "skipped": len(all_cells) - len(todo), "ran": len(todo), "repaired": repaired}


def _warn(msg: str) -> None:
    import sys

    sys.stderr.write(f"qoelab: {msg}\n")


def collect(out_dir: Path, all_cells: list[Cell]) -> None:
    """Combines finished runs into ``flows.parquet`` and ``summary.parquet`` (one row per run
    per flow, and per run), with the grid parameters and rep as leading columns."""
    flows, summaries = [], []
    for c in all_cells:
        d = out_dir / "runs" / c.run_id
        if not is_done(d):
            continue
        t = pq.read_table(d / "flows.parquet")
        extra = {k: [str(v)] * t.num_rows for k, v in c.params}
        extra["rep"] = [c.rep] * t.num_rows
        extra["run_id"] = [c.run_id] * t.num_rows
        for i, (k, v) in enumerate(extra.items()):
            t = t.add_column(i, k, pa.array(v))
        flows.append(t)
        s = json.loads((d / "summary.json").read_text())
        summaries.append({**{k: str(v) for k, v in c.params}, "rep": c.rep, "run_id": c.run_id, **s})
    if flows:
        _atomic_parquet(pa.concat_tables(flows, promote_options="default"), out_dir / "flows.parquet")
        _atomic_parquet(pa.Table.from_pylist(summaries), out_dir / "summary.parquet")


def _atomic_parquet(t: pa.Table, path: Path) -> None:
    tmp = path.with_suffix(".parquet.partial")
    pq.write_table(t, tmp, compression="zstd")
    os.replace(tmp, path)
