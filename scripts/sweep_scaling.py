#!/usr/bin/env python3
"""Measures how a sweep scales with the number of Dask workers (issue 17, item 5).

Runs the same sweep (``scenarios/bench/dumbbell-10m.toml`` lengthened to ``--duration``, ``--runs``
repetitions, each a different seed) serially in this process, then on a ``LocalCluster`` of 1, 2
and 4 single-threaded workers, each into a fresh folder, and prints for each: the cluster's
start-up time, the sweep's wall time, runs per minute, efficiency against linear scaling from
the 1-worker cluster, and the CPU time the sweep's own process (the Dask client: claims,
dispatch) spent per run, which bounds how many workers one client can feed. The machine's load average and CPU count are printed before and after:
on a shared machine the figures mean little without them. Checks along the way that every
configuration produced the same bytes as the serial sweep (timing files excluded).

Usage: python scripts/sweep_scaling.py [--runs 24] [--duration 600s] [--workers 1,2,4] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from qoelab.executors import ExecutorSpec, cpu_count
from qoelab.paths import scenario_path
from qoelab.scenario import Scenario
from qoelab.sweep import run_sweep, timing


def results(out: Path) -> dict[str, bytes]:
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted((out / "runs").glob("*/*")) if f.name not in ("timing.json", "done")}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--duration", default="600s")
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--json")
    a = ap.parse_args()
    sc = Scenario.load(scenario_path("bench/dumbbell-10m"))
    sc.set("sim.duration", a.duration)
    tmp = Path(tempfile.mkdtemp(prefix="qoelab-scaling-"))
    rows = []
    print(f"CPUs usable: {cpu_count()} (os.cpu_count {os.cpu_count()}); load average before: {os.getloadavg()}")
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        run_sweep(sc, [], a.runs, tmp / "serial", 1)
        serial_wall, serial_cpu = time.perf_counter() - t0, time.process_time() - c0
        serial = results(tmp / "serial")
        cost = timing(tmp / "serial")
        rows.append({"executor": "serial (-j 1, no Dask)", "workers": 1, "startup_s": 0.0, "wall_s": serial_wall,
                     "runs_per_min": 60 * a.runs / serial_wall, "cpu_s": cost["cpu_s"], "load": os.getloadavg()[0],
                     "client_cpu_ms_per_run": 1000 * serial_cpu / a.runs})
        for n in [int(x) for x in a.workers.split(",")]:
            t0 = time.perf_counter()
            with ExecutorSpec(cluster=n).open() as ex:
                ex.capacity()  # the workers are up
                startup = time.perf_counter() - t0
                t1, c1 = time.perf_counter(), time.process_time()
                run_sweep(sc, [], a.runs, tmp / f"dask{n}", 1, executor=ex)
                wall, client_cpu = time.perf_counter() - t1, time.process_time() - c1
            assert results(tmp / f"dask{n}") == serial, f"{n} workers: results differ from the serial sweep"
            cost = timing(tmp / f"dask{n}")
            rows.append({"executor": f"LocalCluster, {n} worker(s)", "workers": n, "startup_s": startup, "wall_s": wall,
                         "runs_per_min": 60 * a.runs / wall, "cpu_s": cost["cpu_s"], "load": os.getloadavg()[0],
                         "client_cpu_ms_per_run": 1000 * client_cpu / a.runs})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = next(r for r in rows if r["executor"].startswith("LocalCluster") and r["workers"] == 1)["runs_per_min"]
    print(f"load average after: {os.getloadavg()}; {a.runs} runs of {a.duration} simulated each")
    print("| executor | start-up s | sweep wall s | runs/min | efficiency vs linear | CPU s (sum of runs) | "
          "sweep process CPU ms per run | load (1 min) at end |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        r["efficiency"] = r["runs_per_min"] / (r["workers"] * base)
        print(f"| {r['executor']} | {r['startup_s']:.1f} | {r['wall_s']:.1f} | {r['runs_per_min']:.1f} | "
              f"{100 * r['efficiency']:.0f} % | {r['cpu_s']:.1f} | {r['client_cpu_ms_per_run']:.1f} | {r['load']:.2f} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
