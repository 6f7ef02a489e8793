"""Emulation: real hosts and real applications through the simulated network, in real time.

A scenario node with ``real = true`` becomes a Linux network namespace whose TUN device carries
the node's addresses (:mod:`qoelab.emulate.hosts`); the native module runs the network in real
time between the devices (the ``qoelab-emu`` crate); the users' commands run inside the
namespaces. ``docs/models/emulation.md`` describes the model and its limits.

>>> from qoelab.emulate import unavailable
>>> isinstance(unavailable(), (str, type(None)))
True
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from qoelab.emulate.hosts import Command, EmulationUnavailable, Hosts, unavailable
from qoelab.errors import QoelabError, ScenarioError

if TYPE_CHECKING:
    from qoelab.results import Results
    from qoelab.scenario import Scenario

__all__ = ["emulate", "parse_exec", "unavailable", "EmulationUnavailable", "Emulation"]


@dataclass
class Emulation:
    """An emulation's results: the run's tables (those of ``qoelab run`` plus ``real_flows``,
    ``real_rejects``, ``lag`` and ``commands``) and the commands as they ended."""

    results: "Results"
    commands: list[Command]
    #: Why the network stopped: ``duration``, ``commands`` (every waited command ended).
    ended: str


def parse_exec(spec: str, flag: str = "--exec") -> tuple[str, str]:
    """``NODE=COMMAND`` → ``(node, command)``; a usage error names the flag."""
    node, sep, command = spec.partition("=")
    if not sep or not node.strip() or not command.strip():
        raise QoelabError(f"{flag} {spec!r}: expected NODE=COMMAND")
    return node.strip(), command


def hosts_of(sc: "Scenario") -> list[dict[str, Any]]:
    """Every node of the scenario with its addresses (``real`` marks the real ones)."""
    from qoelab import _native

    try:
        return list(_native.emu_hosts(sc.to_toml(), str(sc.base_dir)))
    except _native.ScenarioError as e:
        raise ScenarioError(sc.source, str(e)) from None


def addr_env(hosts: Sequence[dict[str, Any]]) -> dict[str, str]:
    """``QOELAB_ADDR_<NODE>``: every node's primary address, for commands (``<NODE>`` is the
    name in upper case, other characters than letters and digits as ``_``)."""
    import re

    return {"QOELAB_ADDR_" + re.sub(r"[^A-Z0-9]", "_", h["name"].upper()): h["addrs"][0] for h in hosts}


def check_commands(sc: "Scenario", hosts: Sequence[dict[str, Any]], specs: Sequence[tuple[str, str, str]]) -> None:
    """Every ``(flag, node, command)`` names a real node; the error names the flag and the real nodes."""
    real = [h["name"] for h in hosts if h["real"]]
    if not real:
        raise ScenarioError(sc.source, "nodes: no node is real; mark the hosts to emulate with real = true")
    for flag, node, _ in specs:
        if node not in real:
            raise QoelabError(f"{flag} {node}=…: {node!r} is not a real node of {sc.source} (real nodes: {', '.join(real)})")


def emulate(
    sc: "Scenario",
    out_dir: Path,
    execs: Sequence[tuple[str, str]] = (),
    daemons: Sequence[tuple[str, str]] = (),
    *,
    spin_us: int = 0,
    rt_priority: int = 10,
    tick: Callable[[float, float], Any] | None = None,
) -> Emulation:
    """Runs ``sc`` in real time with its real nodes as namespaces. ``daemons`` start first and
    run in the background; ``execs`` start next and are waited for: the network runs for the
    scenario's duration or until every ``execs`` command has ended, whichever is first.
    Commands' output goes to ``out_dir/exec/NODE-K.log``; captures (``output.pcap``) to
    ``out_dir``. Commands see ``QOELAB_OUT`` (``out_dir``: files they write there end up in the
    results folder), ``QOELAB_NODE``, ``QOELAB_RUN_ID`` and ``QOELAB_ADDR_<NODE>`` for every node. The loop runs under ``SCHED_FIFO`` at ``rt_priority`` (0: the normal
    scheduler; the commands never inherit it). ``tick(elapsed_s, duration_s)`` is called about five times a second from
    another thread while the network runs.

    Raises :class:`EmulationUnavailable` where emulation cannot run (not root, no namespaces),
    :class:`QoelabError` for bad arguments, and ``KeyboardInterrupt`` on Ctrl-C or SIGTERM after
    tearing down (no results then)."""
    import numpy as np

    from qoelab import _native
    from qoelab.results import Results

    hosts = hosts_of(sc)
    specs = [("--daemon", n, c) for n, c in daemons] + [("--exec", n, c) for n, c in execs]
    check_commands(sc, hosts, specs)
    duration_s = _duration_s(sc)
    stop_r, stop_w = os.pipe()
    os.set_blocking(stop_r, False)
    os.set_blocking(stop_w, False)
    ended = "duration"
    in_main = threading.current_thread() is threading.main_thread()
    previous_wakeup = None
    # Before SIGTERM raises: NumPy's C API fetched now, not inside `_native.emulate` where a
    # pending KeyboardInterrupt would fail its import and panic.
    _native.numpy_api()
    # SIGTERM tears down as Ctrl-C does, from the first namespace on.
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt) if in_main else None
    done = threading.Event()
    try:
        env = {**addr_env(hosts), "QOELAB_OUT": str(out_dir)}
        with Hosts([h for h in hosts if h["real"]], env=env) as run:
            for flag, node, command in specs:
                run.start_command(node, command, wait=flag == "--exec", log_dir=out_dir / "exec")
            commands_done = threading.Event()

            def commands_ended() -> None:
                commands_done.set()
                os.write(stop_w, b"c")

            run.when_commands_end(commands_ended)
            if in_main:
                # A signal wakes the loop through this pipe (the C-level handler writes to it
                # while the native loop holds no GIL); the Python-level handler then raises.
                previous_wakeup = signal.set_wakeup_fd(stop_w, warn_on_full_buffer=False)
            if tick is not None:
                _ticker(tick, duration_s, done)
            taps = [(h.name, h.fd) for h in run.hosts]
            try:
                tables = _native.emulate(sc.to_toml(), taps, str(sc.base_dir), str(out_dir), stop_r, spin_us,
                                         rt_priority=rt_priority)
            except _native.ScenarioError as e:
                raise ScenarioError(sc.source, str(e)) from None
            except _native.EmuError as e:
                raise QoelabError(str(e)) from None
            finally:
                done.set()
            if commands_done.is_set():
                ended = "commands"
            run.stop_commands()
            summary = tables["summary"]
            summary["key"].append("emu_host_tx_dropped_pkts")
            summary["value"] = np.append(summary["value"], float(run.tx_dropped()))
            commands = list(run.commands)
    finally:
        if in_main:
            if previous_wakeup is not None:
                signal.set_wakeup_fd(previous_wakeup)
            if previous_term is not None:
                signal.signal(signal.SIGTERM, previous_term)
        os.close(stop_r)
        os.close(stop_w)
    res = Results(tables, sc)
    res.tables["commands"] = _commands_table(commands, out_dir)
    return Emulation(res, commands, ended)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _duration_s(sc: "Scenario") -> float:
    """The scenario's ``sim.duration`` in seconds (the core checked it when listing the hosts)."""
    from qoelab.units import quantity

    q = quantity(str(sc.get("sim.duration")))
    return q[1] if q is not None and q[0] == "time_s" else float("nan")


def _ticker(tick: Callable[[float, float], Any], duration_s: float, done: threading.Event) -> None:
    t0 = time.monotonic()

    def loop() -> None:
        while not done.wait(0.2):
            tick(time.monotonic() - t0, duration_s)

    threading.Thread(target=loop, name="qoelab-emulate-tick", daemon=True).start()


def _commands_table(commands: Sequence[Command], out_dir: Path) -> Any:
    import pyarrow as pa

    return pa.table({
        "node": pa.array([c.node for c in commands], pa.string()),
        "index": pa.array([c.index for c in commands], pa.uint64()),
        "command": pa.array([c.command for c in commands], pa.string()),
        "waited": pa.array([c.wait for c in commands], pa.bool_()),
        "exit_code": pa.array([c.exit_code for c in commands], pa.int64()),
        "stopped": pa.array([c.stopped for c in commands], pa.bool_()),
        "log": pa.array([str(c.log.relative_to(out_dir)) for c in commands], pa.string()),
    })
