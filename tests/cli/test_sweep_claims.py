"""Per-cell claims (issue 17, item 2): two sweeps on one folder run every cell exactly once,
stale claims are taken over, a live one is waited for, ``--shard`` partitions the cells, and
bad executor options end in one line with exit code 2.

Executions and commits are counted by a hook outside the sweep code (``sweep_probe``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sweep_probe
from conftest import run_cli

# About 0.25 s of wall time per run on one core.
SCEN = sweep_probe.UDP_SCENARIO


def rates(n: int) -> str:
    return "links[0].rate=" + ",".join(f"{100 + i}Mbps" for i in range(n))


def sweep_cmd(scen: Path, out: Path, n: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "qoelab.cli", "sweep", str(scen), "--grid", rates(n), "-o", str(out), *extra]


def run_ids(out: Path) -> list[str]:
    return sorted(p.parent.name for p in (out / "runs").glob("*/done"))


def test_two_concurrent_sweeps_on_one_folder_run_every_cell_exactly_once(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN.replace('"1s"', '"3s"'))  # about 0.75 s a run
    out = tmp_path / "sw"
    env = sweep_probe.install(tmp_path)
    n = 12
    first = subprocess.Popen(sweep_cmd(scen, out, n), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The second starts once the first is running cells (on a loaded machine its start-up could
    # otherwise outlast the whole first sweep, and they would not overlap).
    end = time.monotonic() + 300
    while not any(d["what"] == "start" for d in sweep_probe.read(tmp_path)) and time.monotonic() < end and first.poll() is None:
        time.sleep(0.05)
    second = subprocess.Popen(sweep_cmd(scen, out, n), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ps = [first, second]
    res = [p.communicate(timeout=600) for p in ps]
    for p, (o, e) in zip(ps, res):
        assert p.returncode == 0, e
    lines = sweep_probe.read(tmp_path)
    ends = [(d["rate"], d["seed"]) for d in lines if d["what"] == "end"]
    assert sorted(ends) == sorted((f"{100 + i}Mbps", 1) for i in range(n)), "each cell simulated exactly once"
    assert sweep_probe.commits(lines, out / "runs") == {r: 1 for r in run_ids(out)} and len(run_ids(out)) == n
    # Both did part of the work, and each says how much the other did.
    ran = []
    for o, _ in res:
        line = o.strip().splitlines()[-1]
        m = re.search(r"(\d+) runs \((\d+) already done, (\d+) run now(?:, (\d+) run by another sweep)?\)", line)
        assert m, line
        total, skipped, now, others = (int(x or 0) for x in m.groups())
        assert total == n and skipped + now + others == n, line
        ran.append(now)
    assert sum(ran) == n and min(ran) >= 1, res
    # Both finished with the whole grid in their tables, and left no claim behind.
    import pyarrow.parquet as pq

    assert pq.read_table(out / "summary.parquet").num_rows == n
    assert [p.name for p in (out / ".claims").iterdir()] == []


def test_a_claim_of_a_live_sweep_is_waited_for_and_a_dead_ones_taken_over(tmp_path: Path):
    from qoelab import claims

    scen = tmp_path / "s.toml"
    scen.write_text(SCEN)
    out = tmp_path / "sw"
    env = sweep_probe.install(tmp_path)
    (out / ".claims").mkdir(parents=True)
    # Cell 0 is held by this (live) test process; cell 1 by a process that has exited; cell 2
    # by another host that stopped refreshing its claim 10 minutes ago.
    ids = [f"links_0_.rate={100 + i}Mbps__rep=0" for i in range(4)]
    holder = {"host": claims.HOST, "boot": claims.BOOT, "pid": os.getpid(), "token": "held-by-test"}
    (out / ".claims" / ids[0]).write_text(json.dumps(holder))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (out / ".claims" / ids[1]).write_text(json.dumps({**holder, "pid": int(dead.stdout), "token": "dead"}))
    gone = out / ".claims" / ids[2]
    gone.write_text(json.dumps({"host": "elsewhere", "boot": "b", "pid": 1, "token": "silent"}))
    os.utime(gone, (time.time() - 600, time.time() - 600))
    p = subprocess.Popen(sweep_cmd(scen, out, 4), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Every cell but the held one finishes; the sweep waits for that one.
        end = time.monotonic() + 300
        while len(run_ids(out)) < 3 and time.monotonic() < end and p.poll() is None:
            time.sleep(0.1)
        time.sleep(1.5)
        assert p.poll() is None, p.communicate()
        assert len(run_ids(out)) == 3 and ids[0] not in run_ids(out)
        (out / ".claims" / ids[0]).unlink()  # the holder releases without finishing
        o, e = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, e
    assert "4 runs (0 already done, 4 run now)" in o, o
    assert run_ids(out) == sorted(ids)
    assert sorted(d["rate"] for d in sweep_probe.read(tmp_path) if d["what"] == "end") == [f"{100 + i}Mbps" for i in range(4)]


def test_claims_take_release_and_lease(tmp_path: Path):
    from qoelab.claims import Claims

    a, b = Claims(tmp_path), Claims(tmp_path)
    t = a.take("x")
    assert t and b.take("x") is None, "a live claim is exclusive"
    assert a.holds("x", t) and not a.holds("x", "other")
    a.release("x")
    assert not (tmp_path / ".claims" / "x").exists()
    t2 = b.take("x")
    assert t2 and t2 != t
    # A claim of another host is stale only once its lease has passed without a refresh.
    (tmp_path / ".claims" / "y").write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "t"}))
    assert a.take("y") is None
    old = time.time() - 2 * a.lease_s
    os.utime(tmp_path / ".claims" / "y", (old, old))
    ty = a.take("y")
    assert ty and a.holds("y", ty)
    # The heartbeat keeps a held claim young, so nobody takes it over.
    os.utime(tmp_path / ".claims" / "y", (old, old))
    a.refresh()
    assert b.take("y") is None and a.holds("y", ty)


def test_shards_partition_the_cells(tmp_path: Path, monkeypatch):
    from qoelab import outdir
    from qoelab.executors import ExecutorSpec, shard_of
    from qoelab.scenario import Scenario
    from qoelab.sweep import cells, run_sweep

    for total in (1, 7, 20):
        items = list(range(total))
        for n in (1, 2, 3, 8):
            parts = [shard_of(items, (i, n)) for i in range(n)]
            assert sorted(x for p in parts for x in p) == items
            assert max(map(len, parts)) - min(map(len, parts)) <= 1, "balanced"
    sc = Scenario.from_dict(__import__("tomllib").loads(SCEN.replace('"1s"', '"100ms"')), source="s.toml")
    committed: list[str] = []
    real = outdir.replace

    def counting(tmp, target):
        real(tmp, target)
        committed.append(Path(target).name)

    monkeypatch.setattr(outdir, "replace", counting)
    axes = [("links[0].rate", [f"{100 + i}Mbps" for i in range(7)])]
    out = tmp_path / "sw"
    got = [run_sweep(sc, axes, 1, out, 1, executor=ExecutorSpec(shard=(i, 3)))["ran"] for i in range(3)]
    assert got == [3, 2, 2]
    assert sorted(committed) == sorted(c.run_id for c in cells(axes, 1)), "every cell once over the shards"
    assert run_sweep(sc, axes, 1, out, 1) == {"total": 7, "skipped": 7, "ran": 0, "repaired": 0, "others": 0}


def test_shard_from_the_command_line(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN.replace('"1s"', '"100ms"'))
    out = tmp_path / "sw"
    outs = []
    for i in range(2):
        code, o, e = run_cli("sweep", str(scen), "--grid", rates(5), "--shard", f"{i}/2", "-o", str(out))
        assert code == 0, e
        outs.append(o)
    assert "shard 0/2: 3 runs (0 already done, 3 run now)" in outs[0] and "shard 1/2: 2 runs" in outs[1], outs
    code, o, e = run_cli("sweep", str(scen), "--grid", rates(5), "-o", str(out))
    assert code == 0 and "5 runs (5 already done, 0 run now)" in o, o + e


@pytest.mark.parametrize("args,needle", [
    (["--cluster", "local:0"], "--cluster 'local:0': expected local:N"),
    (["--cluster", "4"], "--cluster '4': expected local:N"),
    (["--cluster", "local:100000"], "--cluster local:100000: at most"),
    (["--scheduler", "http://h:8786"], "--scheduler 'http://h:8786': expected tcp://HOST:PORT"),
    (["--scheduler", "tcp://h:99999"], "--scheduler 'tcp://h:99999'"),
    (["--scheduler", "tcp://h"], "--scheduler 'tcp://h'"),
    (["--shard", "2/2"], "--shard 2/2: needs N >= 1 and 0 <= I < N"),
    (["--shard", "0/0"], "--shard 0/0"),
    (["--shard", "a/b"], "--shard 'a/b': expected I/N"),
    (["--shard", "0/2", "--cluster", "local:1"], "not allowed with argument"),
    (["--cluster", "local:1", "--scheduler", "tcp://h:1"], "not allowed with argument"),
    (["--no-shared-fs"], "--no-shared-fs: only with --cluster or --scheduler"),
    (["-j", "2", "--cluster", "local:1"], "-j/--jobs 2: not with --cluster"),
])
def test_bad_executor_options_exit_2_with_one_line(tmp_path: Path, args: list[str], needle: str):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN)
    for cmd in (["sweep", str(scen), "--grid", rates(2), "-o", str(tmp_path / "sw")],
                ["reproduce", "tfd", "--quick", "-o", str(tmp_path / "tfd")]):
        code, _, err = run_cli(*cmd, *args)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, (cmd, err)
        assert "Traceback" not in err
    assert not (tmp_path / "sw").exists() and not (tmp_path / "tfd").exists(), "nothing written before the error"
