"""Sweeps on Dask (issue 17, item 2): a real ``dask scheduler`` and two ``dask worker``
processes talking TCP on localhost give the same bytes as a serial sweep, with workers writing
the run folders or returning them to the client; a worker SIGKILLed mid-sweep still leaves
every cell committed exactly once; ``--cluster local:2`` gives the same bytes too.

Executions and commits are counted by a hook outside the sweep code (``sweep_probe``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sweep_probe
from conftest import run_cli

# About 0.25 s of wall time per run on one core.
SCEN = sweep_probe.UDP_SCENARIO

#: Files that hold wall-clock times: the only ones allowed to differ between executors.
TIMED = {"timing.json", "done"}


def grid(n: int) -> list[str]:
    return ["--grid", "links[0].rate=" + ",".join(f"{100 + 10 * i}Mbps" for i in range(n)), "--reps", "2"]


def contents(out: Path) -> dict[str, bytes]:
    """Every file of every run (but the timed ones), plus the combined tables, by path."""
    files = {str(f.relative_to(out)): f.read_bytes() for f in sorted((out / "runs").glob("*/*")) if f.name not in TIMED}
    for d in (out / "runs").glob("*/done"):  # the manifest, less the timed file's entry
        m = json.loads(d.read_text())["files"]
        m.pop("timing.json")
        files[str(d.relative_to(out))] = json.dumps(m, sort_keys=True).encode()
    for t in ("flows.parquet", "summary.parquet"):
        files[t] = (out / t).read_bytes()
    return files


class Cluster:
    """A scheduler and workers as separate OS processes, always torn down."""

    def __init__(self, tmp: Path, env: dict[str, str]):
        self.tmp, self.env = tmp, env
        self.file = tmp / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []

    def _spawn(self, *args: str) -> subprocess.Popen:
        log = open(self.tmp / f"dask-{len(self.procs)}.log", "w")
        p = subprocess.Popen([sys.executable, "-m", "dask", *args], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                             cwd=self.tmp)
        self.procs.append(p)
        return p

    def start(self, workers: int) -> str:
        # Port 0: the scheduler picks a free port and writes its address to the scheduler file.
        self._spawn("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file))
        end = time.monotonic() + 120
        while not self.file.exists():
            assert time.monotonic() < end and self.procs[0].poll() is None, (self.tmp / "dask-0.log").read_text()
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written in one go, but give it a moment
        address = json.loads(self.file.read_text())["address"]
        for _ in range(workers):
            # No nanny: the worker is this OS process, so killing it kills the worker.
            self.workers.append(self._spawn("worker", "--scheduler-file", str(self.file), "--nthreads", "1", "--no-nanny",
                                            "--no-dashboard", "--host", "127.0.0.1"))
        from distributed import Client

        with Client(address, timeout="60s") as c:
            c.wait_for_workers(workers, timeout=120)
        return address

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@pytest.fixture
def cluster(tmp_path: Path):
    env = sweep_probe.install(tmp_path)
    c = Cluster(tmp_path, env)
    try:
        yield c
    finally:
        c.stop()


def test_scheduler_and_two_workers_give_the_serial_bytes(tmp_path: Path, cluster: Cluster):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN)
    code, _, err = run_cli("sweep", str(scen), *grid(3), "-o", str(tmp_path / "serial"))
    assert code == 0, err
    serial = contents(tmp_path / "serial")
    address = cluster.start(workers=2)
    for name, extra in (("shared", []), ("returned", ["--no-shared-fs"])):
        p = subprocess.run([sys.executable, "-m", "qoelab.cli", "sweep", str(scen), *grid(3), "--scheduler", address, *extra,
                            "-o", str(tmp_path / name)], env=cluster.env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        assert "6 runs (0 already done, 6 run now)" in p.stdout, p.stdout
        got = contents(tmp_path / name)
        assert got.keys() == serial.keys() and all(got[k] == serial[k] for k in serial), \
            [k for k in serial if got.get(k) != serial[k]]
    lines = sweep_probe.read(tmp_path)
    worker_pids = {w.pid for w in cluster.workers}
    # Shared file system: the workers wrote the run folders; --no-shared-fs: the client did.
    by = {name: {d["pid"] for d in lines if d["what"] == "commit" and Path(d["target"]).parent == tmp_path / name / "runs"}
          for name in ("shared", "returned")}
    assert by["shared"] <= worker_pids and len(by["shared"]) == 2, "both workers ran cells"
    assert not by["returned"] & worker_pids
    sims = {d["pid"] for d in lines if d["what"] == "end"}
    assert worker_pids <= sims


def test_a_worker_killed_mid_sweep_still_leaves_every_cell_done_exactly_once(tmp_path: Path, cluster: Cluster):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN.replace('"1s"', '"3s"'))  # about 0.8 s a run: the kill lands mid-run
    address = cluster.start(workers=2)
    out = tmp_path / "sw"
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "sweep", str(scen), *grid(4), "--scheduler", address, "-o", str(out)],
                         env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = cluster.workers[0]
    try:
        # Kill the first worker in the middle of a simulation: stop it, check from the
        # log (which it can no longer write) that it is inside a simulation, then SIGKILL.
        def mid_run() -> bool:
            lines = sweep_probe.read(tmp_path)
            started = [d for d in lines if d["pid"] == victim.pid and d["what"] == "start"]
            ended = [d for d in lines if d["pid"] == victim.pid and d["what"] == "end"]
            return len(started) > len(ended)

        end = time.monotonic() + 300
        while time.monotonic() < end and p.poll() is None:
            if mid_run():
                victim.send_signal(signal.SIGSTOP)
                time.sleep(0.05)
                if mid_run():
                    victim.kill()
                    break
                victim.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        victim.wait(timeout=10)
        o, e = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, e
    assert "8 runs (0 already done, 8 run now)" in o, o
    lines = sweep_probe.read(tmp_path)
    done = sorted(d.parent.name for d in (out / "runs").glob("*/done"))
    assert len(done) == 8
    assert sweep_probe.commits(lines, out / "runs") == {r: 1 for r in done}, "every cell committed exactly once"
    killed_runs = [d for d in lines if d["pid"] == victim.pid and d["what"] == "start"]
    killed_ends = [d for d in lines if d["pid"] == victim.pid and d["what"] == "end"]
    assert len(killed_runs) == len(killed_ends) + 1, "the kill interrupted a simulation"
    # The interrupted cell ran again on the surviving worker, which simulated every other cell
    # once: no cell was simulated twice to completion.
    ends = sorted((d["rate"], d["seed"]) for d in lines if d["what"] == "end")
    assert len(ends) == len(set(ends)) == 8
    assert not list((out / "runs").glob(".*partial*")) and not list((out / ".claims").iterdir())


def test_local_cluster_gives_the_serial_bytes(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN.replace('"1s"', '"300ms"'))
    for name, extra in (("serial", []), ("local", ["--cluster", "local:2"])):
        code, o, err = run_cli("sweep", str(scen), *grid(2), "-o", str(tmp_path / name), *extra)
        assert code == 0, err
        assert "4 runs (0 already done, 4 run now)" in o, o
    a, b = contents(tmp_path / "serial"), contents(tmp_path / "local")
    assert a.keys() == b.keys() and all(a[k] == b[k] for k in a)
