"""Real hosts: one network namespace per real node, with a TUN device, addresses and routes,
and the users' commands running inside.

Each real node becomes the namespace ``qoelab-<run id>-<node>`` (``ip netns``, so that a user
can enter it while the run lasts: ``ip netns exec qoelab-…-client bash``) holding:

- ``lo``, up;
- ``qoe0``, a TUN device that ``qoelab emulate`` reads and writes (opened by the native module
  inside the namespace), up, with the scenario's MTU (the smallest of its links), every address
  of the node as a /32, and a default route through it from the node's primary address;
- IPv6 off (the simulated network carries IPv4 only) and the device's segmentation and receive
  offloads (TSO, GSO, GRO) off, so the host's TCP sends datagrams of at most one MTU as a host
  on a real link would.

Teardown is layered: the context manager removes everything on normal exit, on an exception and
on Ctrl-C; the watchdog (:mod:`qoelab.emulate.watchdog`) removes it if this process dies without
doing so (a crash, ``kill -9``); ``qoelab emulate --cleanup`` removes what a run whose watchdog
was killed too left behind. Only names with the run's prefix are ever touched.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Sequence

from qoelab.emulate import watchdog
from qoelab.errors import QoelabError

#: The TUN device's name inside each namespace.
DEVICE = "qoe0"

#: Seconds a command gets between SIGTERM and SIGKILL when the run ends.
GRACE_S = 2.0


class EmulationUnavailable(QoelabError):
    """This machine (or user) cannot run an emulation: not root, no ``ip``, no TUN devices."""


def unavailable() -> str | None:
    """Why an emulation cannot run here, in one line, or None if it can."""
    if sys.platform != "linux":
        return "emulation needs Linux (network namespaces and TUN devices)"
    if os.geteuid() != 0:
        return "emulation needs root (it creates network namespaces and TUN devices)"
    if shutil.which("ip") is None:
        return "emulation needs the `ip` command (iproute2: apt-get install iproute2)"
    if not os.path.exists("/dev/net/tun"):
        return "emulation needs /dev/net/tun (the tun kernel module)"
    r = subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False)
    if r.returncode != 0:
        return f"emulation needs network namespaces (unshare --net failed: {r.stderr.decode().strip()[:120]})"
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise QoelabError(f"ip {' '.join(args)}: {r.stderr.strip() or f'exit status {r.returncode}'}")


@dataclass
class Host:
    """One real node as set up: its namespace and its device's descriptor."""

    name: str
    addrs: list[str]
    mtu: int
    ns: str
    fd: int = -1


@dataclass
class Command:
    """A user's command in a real node's namespace."""

    node: str
    index: int
    command: str
    #: Waited for (the run ends when every waited command has ended) or run in the background.
    wait: bool
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None
    #: The command was still running when the run ended and was stopped.
    stopped: bool = False
    _log_fh: IO[bytes] | None = field(default=None, repr=False)


class Hosts:
    """The namespaces of one run (a context manager): made on entry, removed on exit."""

    def __init__(self, hosts: Sequence[dict[str, Any]], env: dict[str, str] | None = None):
        self.run_id = secrets.token_hex(4)
        self.hosts = [Host(h["name"], list(h["addrs"]), int(h["mtu"]), watchdog.ns_name(self.run_id, h["name"]))
                      for h in hosts]
        names = [h.ns for h in self.hosts]
        if len(set(names)) != len(names):
            raise QoelabError("two real nodes reduce to the same namespace name; rename them (letters, digits, _ and .)")
        self.env = env or {}
        self.commands: list[Command] = []
        self._lock_fd: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "Hosts":
        why = unavailable()
        if why:
            raise EmulationUnavailable(why)
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def by_name(self, node: str) -> Host:
        return next(h for h in self.hosts if h.name == node)

    def _start(self) -> None:
        from qoelab import _native

        watchdog.LOCK_DIR.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(watchdog.lock_path(self.run_id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        # The watchdog first: from here on, whatever happens to this process, it cleans up.
        self._watchdog = subprocess.Popen(
            [sys.executable, "-I", watchdog.__file__, self.run_id], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        for h in self.hosts:
            _ip("netns", "add", h.ns)
            _ip("-n", h.ns, "link", "set", "lo", "up")
            r = subprocess.run(["ip", "netns", "exec", h.ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
                                "net.ipv6.conf.default.disable_ipv6=1"], capture_output=True, check=False)
            if r.returncode != 0:
                raise QoelabError(f"{h.ns}: cannot turn IPv6 off: {r.stderr.decode().strip()}")
            try:
                h.fd = _native.open_tun(f"/run/netns/{h.ns}", DEVICE)
            except _native.EmuError as e:
                raise QoelabError(f"node {h.name!r}: {e}") from None
            _ip("-n", h.ns, "link", "set", DEVICE, "mtu", str(h.mtu), "up")
            for a in h.addrs:
                _ip("-n", h.ns, "addr", "add", f"{a}/32", "dev", DEVICE)
            _ip("-n", h.ns, "route", "add", "default", "dev", DEVICE, "src", h.addrs[0])
            if shutil.which("ethtool"):
                # Best effort: a TUN device without offload flags segments in software anyway.
                subprocess.run(["ip", "netns", "exec", h.ns, "ethtool", "-K", DEVICE, "tso", "off", "gso", "off",
                                "gro", "off"], capture_output=True, check=False)

    def start_command(self, node: str, command: str, wait: bool, log_dir: Path) -> Command:
        """Runs ``sh -c command`` in ``node``'s namespace, its output (stdout and stderr) in
        ``log_dir/NODE-K.log`` (K counts the run's commands from 0)."""
        h = self.by_name(node)
        k = len(self.commands)
        log_dir.mkdir(parents=True, exist_ok=True)
        c = Command(node, k, command, wait, log_dir / f"{watchdog.safe(node)}-{k}.log")
        c._log_fh = open(c.log, "wb")
        env = {**os.environ, **self.env, "QOELAB_NODE": node, "QOELAB_RUN_ID": self.run_id}
        c.proc = subprocess.Popen(["ip", "netns", "exec", h.ns, "sh", "-c", command], stdin=subprocess.DEVNULL,
                                  stdout=c._log_fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.commands.append(c)
        return c

    def when_commands_end(self, notify: Any) -> threading.Thread | None:
        """Calls ``notify()`` from a thread once every waited command has ended (None if there is
        none to wait for)."""
        waited = [c for c in self.commands if c.wait]
        if not waited:
            return None

        def watch() -> None:
            for c in waited:
                assert c.proc is not None
                c.proc.wait()
            notify()

        t = threading.Thread(target=watch, name="qoelab-emulate-commands", daemon=True)
        t.start()
        return t

    def stop_commands(self) -> None:
        """Stops what still runs: SIGTERM to each command's process group, SIGKILL after
        :data:`GRACE_S`; records exit codes."""
        running = [c for c in self.commands if c.proc is not None and c.proc.poll() is None]
        for c in running:
            c.stopped = True
            _signal_group(c.proc, signal.SIGTERM)
        for c in running:
            assert c.proc is not None
            try:
                c.proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(c.proc, signal.SIGKILL)
                c.proc.wait()
        for c in self.commands:
            if c.proc is not None:
                c.exit_code = c.proc.returncode
            if c._log_fh is not None:
                c._log_fh.close()
                c._log_fh = None

    def tx_dropped(self) -> int:
        """Datagrams the hosts' kernels dropped on their devices because the loop did not read
        them in time (the device's queue was full), summed."""
        total = 0
        for h in self.hosts:
            r = subprocess.run(["ip", "-n", h.ns, "-j", "-s", "link", "show", DEVICE], capture_output=True, text=True,
                               check=False)
            try:
                total += int(json.loads(r.stdout)[0]["stats64"]["tx"]["dropped"])
            except (ValueError, LookupError, TypeError):
                pass
        return total

    def close(self) -> None:
        """Removes everything of the run; safe to call more than once."""
        try:
            self.stop_commands()
        finally:
            for h in self.hosts:
                if h.fd >= 0:
                    os.close(h.fd)
                    h.fd = -1
            watchdog.cleanup(self.run_id)
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None
            if self._watchdog is not None:
                # End of file: the watchdog finds nothing left and exits.
                if self._watchdog.stdin is not None:
                    self._watchdog.stdin.close()
                try:
                    self._watchdog.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._watchdog.kill()
                self._watchdog = None


def _signal_group(proc: subprocess.Popen[bytes] | None, sig: int) -> None:
    if proc is None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
