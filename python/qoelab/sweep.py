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
    axes = []
    for s in specs:
        if "=" not in s:
            raise QoelabError(f"--grid {s!r}: expected key.path=v1,v2,...")
        k, vs = s.split("=", 1)
        values = [parse_value(v.strip()) for v in _split_values(vs)]
        if not values or any(v == "" for v in values):
            raise QoelabError(f"--grid {s!r}: empty value")
        axes.append((k.strip(), values))
    return axes


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
    res = sc.run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    res.write(run_dir, plot=False)
    (run_dir / "cell.json").write_text(json.dumps({"params": dict(cell.params), "rep": cell.rep}, sort_keys=True) + "\n")
    (run_dir / "timing.json").write_text(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "started_unix": round(started, 3),
                                                     "finished_unix": round(time.time(), 3), **_code_version()}, sort_keys=True) + "\n")
    (run_dir / "done").write_text("")
    return cell.run_id


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
    is fine (finished cells are kept)."""
    digest = hashlib.sha256(scenario.to_toml().encode()).hexdigest()
    meta = out_dir / "sweep.json"
    if meta.exists():
        old = json.loads(meta.read_text())
        if old.get("scenario_sha256") != digest:
            raise QoelabError(
                f"{out_dir}: holds runs of a different base scenario than {scenario.source} "
                "(it changed since they ran); use another output directory or remove this one"
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = meta.with_suffix(".json.partial")
    tmp.write_text(json.dumps({"scenario_sha256": digest, "source": scenario.source,
                               "axes": {k: [str(v) for v in vs] for k, vs in axes}, "reps": reps}, indent=2) + "\n")
    os.replace(tmp, meta)


def is_done(run_dir: Path) -> bool:
    return (run_dir / "done").exists()


def resolve_jobs(jobs: int) -> int:
    """``-j N``: N parallel runs; 0 means one per CPU this process may use."""
    if jobs < 0:
        raise QoelabError(f"-j/--jobs {jobs}: must be 0 (one per CPU) or a positive number of runs")
    if jobs == 0:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return jobs


def run_sweep(
    scenario: Scenario,
    axes: list[tuple[str, list[Any]]],
    reps: int,
    out_dir: Path,
    jobs: int,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Runs every missing cell; returns counts ``{total, skipped, ran}``."""
    if reps < 1:
        raise QoelabError(f"--reps {reps}: must be at least 1")
    jobs = resolve_jobs(jobs)
    all_cells = cells(axes, reps)
    # Validate every cell up front so a typo in the grid fails before hours of compute.
    for c in all_cells[: max(1, len(all_cells) // reps)]:
        sc = scenario.copy()
        for k, v in c.params:
            sc.set(k, v)
        sc.validate()
    _check_same_sweep(scenario, axes, reps, out_dir)
    runs = out_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for stale in runs.glob(".*.partial-*"):
        shutil.rmtree(stale, ignore_errors=True)
    todo = [c for c in all_cells if not is_done(runs / c.run_id)]
    for c in todo:  # unfinished leftovers (no marker) are discarded
        if (runs / c.run_id).exists():
            shutil.rmtree(runs / c.run_id)
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
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            cell_of = {ex.submit(_run_one, scenario, c, runs / c.run_id): c for c in todo}
            pending = set(cell_of)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=lambda f: cell_of[f].run_id):
                    try:
                        f.result()
                    except QoelabError:
                        for p in pending:
                            p.cancel()
                        raise
                    except BrokenProcessPool as e:
                        # A worker died (killed, out of memory, crashed). The finished runs
                        # stay; a rerun resumes after them.
                        raise QoelabError(f"{runs}: a worker process died ({e}); the {done} finished runs are kept, "
                                          "run the same command again to resume") from e
                    done += 1
                    if progress:
                        progress(done, len(all_cells))
    collect(out_dir, all_cells)
    return {"total": len(all_cells), "skipped": len(all_cells) - len(todo), "ran": len(todo)}


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
