"""Per-cell claims: which process is running a cell of a sweep folder, so that two sweeps on
one folder, the shards of a job array, or the workers of a cluster never run a cell twice.

A claim is a small file ``<sweep>/.claims/<run id>`` (beside ``runs/``, which holds only runs). The rules:

1. **Take.** ``open(O_CREAT | O_EXCL)``: of any number of processes creating the same claim,
   on one machine or on several sharing the folder over NFS (v3 and later make exclusive
   create atomic on the server), exactly one succeeds. The file then holds JSON: host, boot id,
   pid, start time and a random token naming this claim.
2. **Hold.** The holder refreshes the claim's modification time every :data:`HEARTBEAT_S`
   seconds (:class:`Heartbeat`) while the cell runs.
3. **Release.** When the run folder is committed (renamed into place with its ``done`` marker),
   the holder removes its claim. Anyone who takes a claim afterwards finds the cell finished and
   lets it go, so a finished cell is never redone.
4. **Stale claims.** A claim is stale, and may be taken over, when its holder is known dead
   (same host and boot, process gone: at once, so a rerun after ``kill -9`` does not wait), or
   when its modification time has not moved for :data:`LEASE_S` seconds (a dead host, a
   killed job-array task). Age is measured against the file system's own clock: the taker
   touches a file of its own in the same folder and compares modification times, so clocks of
   different hosts need not agree. Taking over renames the stale claim to a name of the
   taker's own (``rename`` is atomic; of two takers only one finds the file), checks that the
   file it moved is the stale one it judged (and puts it back if another taker's fresh claim
   slipped in between), then creates its own claim with O_EXCL as in rule 1.
5. **Commit check.** Just before a finished run is renamed into place, the writer checks that
   the claim still holds its token. A holder that lost its claim (paused longer than the
   lease) discards its result instead of committing it.

What this relies on: exclusive create and rename atomic on the shared file system (local file
systems, NFSv3+, Lustre, GPFS; not NFSv2 nor object-store mounts), and modification times set
by the file server. What it cannot exclude: a holder paused for longer than the lease that
resumes between its commit check and its rename may commit a run that its successor also
commits. Both runs are byte-identical (results depend only on scenario and seed) and each
commit is one atomic rename, so the folder stays complete and correct; only compute is
duplicated.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from pathlib import Path

from qoelab.outdir import pid_alive

#: Seconds between two refreshes of a held claim.
HEARTBEAT_S = 15.0

#: Seconds without a refresh after which a claim of another host (or of an unknown holder) is
#: stale. Ten heartbeats: a loaded file server or a stopped-and-continued process survives.
LEASE_S = 150.0

FOLDER = ".claims"


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


HOST = socket.gethostname()
BOOT = _boot_id()


class Claims:
    """The claims of one sweep folder, taken by this process."""

    def __init__(self, sweep: Path, lease_s: float = LEASE_S):
        self.dir = sweep / FOLDER
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lease_s = lease_s
        self.held: dict[str, str] = {}  # run id -> token
        self._lock = threading.Lock()

    def path(self, run_id: str) -> Path:
        return self.dir / run_id

    def take(self, run_id: str) -> str | None:
        """Claims ``run_id``; returns the claim's token, or None if another live holder has it."""
        token = self._create(run_id)
        if token is None:
            holder = self._read(self.path(run_id))
            if not self._stale(run_id, holder) or not self._break(run_id, holder):
                return None
            token = self._create(run_id)
            if token is None:
                return None
        with self._lock:
            self.held[run_id] = token
        return token

    def _create(self, run_id: str) -> str | None:
        token = secrets.token_hex(8)
        try:
            fd = os.open(self.path(run_id), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            return None
        try:
            os.write(fd, (json.dumps({"host": HOST, "boot": BOOT, "pid": os.getpid(), "started_unix": round(time.time(), 3),
                                      "token": token}, sort_keys=True) + "\n").encode())
        finally:
            os.close(fd)
        return token

    @staticmethod
    def _read(p: Path) -> dict | None:
        """The claim's content with its modification time, None if it is gone. A claim being
        written (empty) or damaged reads as ``{}``: judged by its age alone."""
        try:
            st = p.stat()
            text = p.read_text()
        except FileNotFoundError:
            return None
        except OSError:
            return {}
        try:
            d = json.loads(text)
            d = d if isinstance(d, dict) else {}
        except ValueError:
            d = {}
        d["mtime"] = st.st_mtime
        return d

    def _fs_now(self) -> float:
        """Now, on the clock of the file system holding the claims."""
        me = self.dir / f".now-{HOST}-{os.getpid()}"
        with open(me, "w"):
            pass
        os.utime(me)
        t = me.stat().st_mtime
        return t

    def _stale(self, run_id: str, holder: dict | None) -> bool:
        if holder is None:
            return True  # released between our create and our read
        if holder.get("host") == HOST and holder.get("boot") == BOOT and BOOT and isinstance(holder.get("pid"), int):
            if not pid_alive(holder["pid"]):
                return True
        return self._fs_now() - holder.get("mtime", 0.0) > self.lease_s

    def _break(self, run_id: str, judged: dict | None) -> bool:
        """Removes the stale claim ``judged``; False if someone else's claim is there now."""
        if judged is None:
            return True
        p = self.path(run_id)
        aside = self.dir / f".{run_id}.broken-{secrets.token_hex(6)}"
        try:
            os.rename(p, aside)
        except FileNotFoundError:
            return True  # another taker removed it first; the O_EXCL create decides
        moved = self._read(aside)
        if moved is not None and moved.get("token") != judged.get("token"):
            # Another taker's fresh claim slipped in between: put it back, unless yet another
            # claim was created meanwhile (then two claims existed for an instant; the commit
            # check keeps only one result).
            try:
                os.link(aside, p)
            except FileExistsError:
                pass
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True

    def holds(self, run_id: str, token: str) -> bool:
        """Whether the claim of ``run_id`` is still the one with ``token`` (the commit check)."""
        return still_held(self.path(run_id), token)

    def release(self, run_id: str) -> None:
        with self._lock:
            token = self.held.pop(run_id, None)
        if token is not None and still_held(self.path(run_id), token):
            self.path(run_id).unlink(missing_ok=True)

    def release_all(self) -> None:
        for run_id in list(self.held):
            self.release(run_id)
        (self.dir / f".now-{HOST}-{os.getpid()}").unlink(missing_ok=True)

    def refresh(self) -> None:
        """Moves the modification time of every held claim to now (the heartbeat)."""
        with self._lock:
            held = list(self.held)
        for run_id in held:
            try:
                os.utime(self.path(run_id))
            except OSError:
                pass  # lost (broken as stale): the commit check will say so


def still_held(p: Path, token: str) -> bool:
    try:
        return json.loads(p.read_text()).get("token") == token
    except (OSError, ValueError, AttributeError):
        return False


class Heartbeat:
    """A daemon thread refreshing the claims of a :class:`Claims` every ``interval_s``."""

    def __init__(self, claims: Claims, interval_s: float = HEARTBEAT_S):
        self.claims, self.interval_s = claims, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="qoelab-claim-heartbeat")

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.claims.refresh()
