"""Emulation leaves nothing behind: after a normal end, Ctrl-C, SIGTERM and `kill -9` of
`qoelab emulate`, no namespace of the run and no process started in it remains (the TUN devices
die with their descriptors and their namespaces); `qoelab emulate --cleanup` removes a stale
run's namespaces by their prefix and touches nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, run_cli
from qoelab.emulate import watchdog

PING = ROOT / "scenarios" / "emulation" / "ping" / "scenario.toml"


def _ours() -> set[str]:
    return set(watchdog.namespaces())


def _marker_processes(marker: str) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if marker in (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


def _start(tmp_path: Path, marker: str) -> tuple[subprocess.Popen, set[str]]:
    """Starts `qoelab emulate` with a command that would outlive it; returns it once its
    namespaces exist and the command runs."""
    before = _ours()
    p = subprocess.Popen([sys.executable, "-m", "qoelab.cli", "emulate", str(PING), "-o", str(tmp_path / "out"),
                          "--daemon", f"server=sleep {marker}", "--exec", "client=sleep 600"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = _ours() - before
        if len(new) == 2 and _marker_processes(f"sleep {marker}"):
            return p, new
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    p.kill()
    raise AssertionError("the emulation did not start within 30 s")


def _gone(names: set[str], marker: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not (names & _ours()) and not _marker_processes(f"sleep {marker}"):
            return True
        time.sleep(0.05)
    return False


def test_kill_9_leaves_no_namespace_or_process(emulation, tmp_path):
    marker = "86400.4242"
    p, names = _start(tmp_path, marker)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert _gone(names, marker), f"left behind: {names & _ours()}, {_marker_processes(marker)}"
    assert not (tmp_path / "out").exists(), "a killed run leaves no results folder"


def test_ctrl_c_tears_down_and_writes_no_results(emulation, tmp_path):
    marker = "86400.4343"
    p, names = _start(tmp_path, marker)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err.decode()
    assert _gone(names, marker, 1.0), "torn down before exiting"
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out.partial-*")), "the temporary folder is removed"


def test_sigterm_tears_down_too(emulation, tmp_path):
    marker = "86400.4444"
    p, names = _start(tmp_path, marker)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err.decode(errors="replace")[-3000:]
    assert _gone(names, marker, 1.0)


def test_cleanup_removes_stale_runs_only(emulation):
    stale = watchdog.ns_name("0badc0de", "x")
    other = "qoelabtest-keep-me"
    for n in (stale, other):
        subprocess.run(["ip", "netns", "add", n], check=True)
    try:
        code, out, err = run_cli("emulate", "--cleanup")
        assert code == 0, err
        assert stale in out
        names = set(os.listdir("/run/netns"))
        assert stale not in names and other in names
    finally:
        for n in (stale, other):
            subprocess.run(["ip", "netns", "delete", n], capture_output=True)


def test_a_normal_end_leaves_nothing(emulation, tmp_path):
    before = _ours()
    code, out, err = run_cli("emulate", str(PING), "-o", str(tmp_path / "o"), "--exec",
                             "client=ping -c 3 -i 0.05 $QOELAB_ADDR_SERVER", "--daemon", "server=sleep 86400.4545")
    assert code == 0, err
    assert _ours() == before
    assert not _marker_processes("sleep 86400.4545")
    log = (tmp_path / "o" / "exec" / "client-1.log").read_text()  # daemons start (and count) first
    assert "3 received" in log
    assert (tmp_path / "o" / "exec" / "server-0.log").exists()
    assert "daemon server" in out and "stopped at the end" in out


def _impostor(tmp_path: Path, ns: str) -> subprocess.Popen:
    """A process that looks like `ip netns exec <ns> …` that has not yet entered the namespace
    (as a command started just before `kill -9` can be when the watchdog sweeps)."""
    (tmp_path / "netns").write_text("import time\ntime.sleep(600)\n")
    p = subprocess.Popen(["ip", "netns", "exec", ns], executable=sys.executable, cwd=tmp_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{p.pid}/cmdline").read_bytes().split(b"\0")[:4] == [b"ip", b"netns", b"exec", ns.encode()]:
                return p
        except OSError:
            pass
        time.sleep(0.01)
    p.kill()
    raise AssertionError("the stand-in did not start")


def test_the_watchdog_kills_a_command_still_on_its_way_into_the_run_and_nothing_of_another_run(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ours = _impostor(tmp_path / "a", watchdog.ns_name("0badc0de", "server"))
    other = _impostor(tmp_path / "b", watchdog.ns_name("0badc0df", "server"))
    try:
        watchdog.cleanup("0badc0de")
        assert ours.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None, "another run's command is left alone"
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()
