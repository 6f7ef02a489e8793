"""The emulation's watchdog: removes a run's namespaces when the run's process goes away.

``qoelab emulate`` starts this file as its own process (``python watchdog.py RUN_ID``, in a
session of its own so that Ctrl-C in the terminal does not reach it) with a pipe on standard
input whose write end only ``qoelab emulate`` holds. When that end closes (the run finished and
tore down, or it crashed, or it was killed with ``kill -9``), the read returns end-of-file and
the watchdog removes whatever the run left: it kills every process inside the run's namespaces,
or on its way into one, and deletes them. A TUN device needs no cleaning: it vanishes with its
descriptor, which dies with the process that held it.

Stdlib only, and importable without the package (it runs as a plain file: no numpy, no native
module), so it starts in milliseconds. The same functions serve ``qoelab emulate --cleanup``.

Names: a run's namespaces are ``qoelab-<run id>-<node>`` (:func:`ns_name`); its lock is
``/run/qoelab/<run id>.lock``, held (``flock``) by the running ``qoelab emulate``. A run is
stale when its lock is free or missing.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Every name this module creates or removes starts with it; nothing else is ever touched.
PREFIX = "qoelab-"
NETNS_DIR = Path("/run/netns")
LOCK_DIR = Path("/run/qoelab")
_RUN_ID = re.compile(r"[0-9a-f]{8}")


def safe(node: str) -> str:
    """A node's name as namespace and log names use it: letters, digits, ``_`` and ``.`` (others
    become ``_``), at most 32 characters."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", node)[:32] or "_"


def ns_name(run_id: str, node: str) -> str:
    """The namespace of ``node`` in run ``run_id``: ``qoelab-<run id>-<safe node name>``."""
    return f"{PREFIX}{run_id}-{safe(node)}"


def run_of(ns: str) -> str | None:
    """The run id of one of our namespace names, or None for any other name."""
    if not ns.startswith(PREFIX):
        return None
    rid = ns[len(PREFIX):len(PREFIX) + 8]
    return rid if _RUN_ID.fullmatch(rid) and ns[len(PREFIX) + 8:len(PREFIX) + 9] == "-" else None


def namespaces(run_id: str | None = None) -> list[str]:
    """Our namespaces that exist, of one run or of every run, sorted."""
    try:
        names = sorted(p.name for p in NETNS_DIR.iterdir())
    except OSError:
        return []
    return [n for n in names if (r := run_of(n)) is not None and (run_id is None or r == run_id)]


def lock_path(run_id: str) -> Path:
    return LOCK_DIR / f"{run_id}.lock"


def is_live(run_id: str) -> bool:
    """Whether a ``qoelab emulate`` still holds run ``run_id``'s lock."""
    try:
        fd = os.open(lock_path(run_id), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _ns_key(ns: str) -> tuple[int, int] | None:
    """The identity (device, inode) of namespace ``ns``, as ``/proc/<pid>/ns/net`` shows it."""
    try:
        st = os.stat(NETNS_DIR / ns)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _members(run_id: str, keys: set[tuple[int, int]]) -> list[int]:
    """The processes of run ``run_id``: those inside one of its namespaces (``keys``), and those
    still on their way in, ``ip netns exec qoelab-<run id>-…`` before it has entered one (a command
    started just before ``kill -9`` can be there while the namespaces are swept)."""
    prefix = f"{PREFIX}{run_id}-".encode()
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            st = os.stat(p / "ns" / "net")
            if (st.st_dev, st.st_ino) in keys:
                out.append(int(p.name))
                continue
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (len(argv) > 3 and os.path.basename(argv[0]) == b"ip" and argv[1:3] == [b"netns", b"exec"]
                and argv[3].startswith(prefix)):
            out.append(int(p.name))
    return out


def _sweep(run_id: str, keys: set[tuple[int, int]], quiet_scans: int = 3, within_s: float = 10.0) -> None:
    """Kills (SIGKILL) the run's processes until ``quiet_scans`` scans 50 ms apart find none."""
    quiet, deadline = 0, time.monotonic() + within_s
    while quiet < quiet_scans and time.monotonic() < deadline:
        pids = _members(run_id, keys)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        quiet = 0 if pids else quiet + 1
        time.sleep(0.05)


def cleanup(run_id: str) -> list[str]:
    """Removes run ``run_id``'s namespaces, every process in them or entering them, and its lock
    file; returns the namespaces removed. A process that opened a namespace's file before the
    name was deleted can still enter it afterwards, so the sweep runs again once they are gone."""
    gone = namespaces(run_id)
    keys = {k for ns in gone if (k := _ns_key(ns)) is not None}
    _sweep(run_id, keys)
    for ns in gone:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)
    _sweep(run_id, keys)
    try:
        lock_path(run_id).unlink()
    except OSError:
        pass
    return gone


def cleanup_stale() -> list[str]:
    """Removes the namespaces (and lock files) of every run whose ``qoelab emulate`` is gone;
    returns the namespaces removed. Live runs and every other namespace are left alone."""
    runs = sorted({r for n in namespaces() if (r := run_of(n)) is not None})
    try:
        runs += sorted(p.stem for p in LOCK_DIR.glob("*.lock") if _RUN_ID.fullmatch(p.stem) and p.stem not in runs)
    except OSError:
        pass
    removed: list[str] = []
    for r in runs:
        if not is_live(r):
            removed += cleanup(r)
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not _RUN_ID.fullmatch(argv[1]):
        sys.stderr.write("usage: watchdog.py RUN_ID (8 hex digits); standard input is the run's pipe\n")
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    cleanup(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
