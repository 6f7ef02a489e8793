"""Where a sweep's runs execute: in this process, on a local process pool, or on a Dask cluster.

:func:`qoelab.sweep.run_sweep` decides which cells to run (claims, resume, damaged runs) and
hands each to an executor; the executor only runs tasks and says when they finish:

- :class:`Serial` (``-j 1``, the default) runs each task in the calling process.
- :class:`Pool` (``-j N``) is a local ``ProcessPoolExecutor``: workers ignore Ctrl-C and die
  with their parent; stopping terminates them within about a second.
- :class:`Dask` (``--cluster local:N`` starts a ``LocalCluster`` of N single-threaded worker
  processes; ``--scheduler tcp://HOST:PORT`` connects to a running ``dask.distributed``
  scheduler). A worker that can read the sweep folder (it finds the client's probe file with the
  client's token in it) writes the run folder itself; one that cannot (another machine without
  the shared file system, or ``--no-shared-fs``) returns the run's files to the client, which
  writes them. Either way the files are the same bytes. A worker that dies mid-run has its task
  rerun elsewhere by the scheduler (at most ``distributed.scheduler.allowed-failures`` times).

``--shard I/N`` is not an executor: it selects the cells with index ≡ I (mod N) in the sweep's
order (repetition-major, so each shard gets a share of every repetition) and runs them with
one of the executors above, for job arrays on batch schedulers without Dask.

At most :meth:`Executor.capacity` tasks are handed out at a time, so stopping never has a
queue of runs to drain and never starts a run after Ctrl-C.
"""

from __future__ import annotations

import logging
import os
import re
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable

from qoelab.errors import QoelabError


@dataclass(frozen=True)
class ExecutorSpec:
    """How to run a sweep. The defaults are a serial sweep in this process."""

    jobs: int = 1
    cluster: int | None = None
    scheduler: str | None = None
    shard: tuple[int, int] | None = None
    shared_fs: bool | None = None  # None: each worker finds out by reading the client's probe

    def open(self) -> "Executor":
        """The executor, started (a cluster's workers are up when this returns). Use it as a
        context manager: it is stopped on an exception, closed otherwise."""
        if self.cluster is not None and self.scheduler is not None:
            raise QoelabError("--cluster and --scheduler: give one of them (a local cluster, or an existing one)")
        if self.shard is not None and (self.cluster is not None or self.scheduler is not None):
            raise QoelabError("--shard: not with --cluster or --scheduler (a shard is one task of a batch job array)")
        if self.cluster is not None or self.scheduler is not None:
            ex: Executor = Dask(self.scheduler, self.cluster, self.shared_fs)
        elif self.shared_fs is False:
            raise QoelabError("--no-shared-fs: only with --cluster or --scheduler (local workers share the folder)")
        else:
            ex = Pool(self.jobs) if self.jobs > 1 else Serial()
        ex.shard = self.shard
        return ex


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


def parse_cluster(text: str) -> int:
    """``--cluster local:N``: N worker processes on this machine (1 to 4 per CPU)."""
    m = re.fullmatch(r"local:(\d{1,6})", text.strip())
    if not m or int(m.group(1)) < 1:
        raise QoelabError(f"--cluster {text!r}: expected local:N with N a positive number of workers, e.g. local:4")
    n, most = int(m.group(1)), JOBS_PER_CPU * cpu_count()
    if n > most:
        raise QoelabError(f"--cluster {text}: at most {most} workers ({JOBS_PER_CPU} per CPU, {cpu_count()} CPUs usable here)")
    return n


def parse_scheduler(text: str) -> str:
    """``--scheduler tcp://HOST:PORT`` (or ``tls://``): the address of a running scheduler."""
    m = re.fullmatch(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})", text.strip())
    if not m or not 1 <= int(m.group(3)) <= 65535:
        raise QoelabError(f"--scheduler {text!r}: expected tcp://HOST:PORT with a port from 1 to 65535, e.g. tcp://10.0.0.5:8786")
    return text.strip()


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard I/N``: this process runs the cells with index ≡ I (mod N), 0 ≤ I < N."""
    m = re.fullmatch(r"(\d{1,7})/(\d{1,7})", text.strip())
    if not m:
        raise QoelabError(f"--shard {text!r}: expected I/N, e.g. 0/8 (shard I of N, counted from 0)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or i >= n:
        raise QoelabError(f"--shard {text}: needs N >= 1 and 0 <= I < N")
    return i, n


def shard_of(items: list, shard: tuple[int, int] | None) -> list:
    """The items of shard ``(i, n)``: every n-th, starting at i. Over i = 0..n-1 the shards
    partition ``items``."""
    if shard is None:
        return list(items)
    i, n = shard
    return items[i::n]


class Executor:
    """Runs tasks ``fn(*args)``; see the module doc."""

    #: Whether tasks may be told to write into the sweep folder themselves.
    may_share: bool = True
    name = "serial"
    shard: tuple[int, int] | None = None

    def capacity(self) -> int:
        return 1

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        raise NotImplementedError

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        raise NotImplementedError

    def result(self, handle: Any, what: str) -> Any:
        return handle.result()

    def stop(self) -> None:
        """Ends everything now (Ctrl-C, an error): cancels queued tasks, ends running ones."""

    def close(self) -> None:
        """Normal end; the executor may not be used again."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.stop()


class Serial(Executor):
    """Each task runs at once in this process, when submitted."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        f: Future = Future()
        try:
            f.set_result(fn(*args))
        except Exception as e:  # Ctrl-C (KeyboardInterrupt) propagates
            f.set_exception(e)
        return f

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        return [h for h in handles if h.done()]


class Pool(Executor):
    """A local process pool of ``jobs`` workers."""

    name = "pool"

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.ex = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),))

    def capacity(self) -> int:
        return self.jobs

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self.ex.submit(fn, *args)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        finished, _ = wait(handles, timeout=timeout, return_when=FIRST_COMPLETED)
        return list(finished)

    def result(self, handle: Any, what: str) -> Any:
        try:
            return handle.result()
        except BrokenProcessPool as e:
            # A worker died (killed, out of memory, crashed). The finished runs stay; a rerun
            # resumes after them.
            raise WorkerDied(f"a worker process died ({e})") from e

    def stop(self) -> None:
        _stop_pool(self.ex)

    def close(self) -> None:
        self.ex.shutdown(wait=True)


class WorkerDied(QoelabError):
    """A worker died and the task cannot be finished by this executor."""


#: Seconds a ``--scheduler`` has to accept the connection and complete Dask's handshake.
SCHEDULER_TIMEOUT_S = 10.0


def _connect(client_type: Any, scheduler: str, what: str) -> Any:
    """A client of the scheduler at ``scheduler``, or :class:`QoelabError` after
    :data:`SCHEDULER_TIMEOUT_S`. ``distributed`` bounds the TCP connect but not its handshake:
    a port that accepts and never speaks would hold it forever, so the client is made on a
    helper thread that the caller stops waiting for at the deadline."""
    import threading

    box: dict[str, Any] = {}

    def make() -> None:
        try:
            box["client"] = client_type(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S:g}s")
        except BaseException as e:  # reported by the caller's thread
            box["error"] = e

    t = threading.Thread(target=make, name="qoelab-dask-connect", daemon=True)
    t.start()
    t.join(SCHEDULER_TIMEOUT_S + 2.0)
    if t.is_alive():
        raise QoelabError(f"{what}: no Dask scheduler answered within {SCHEDULER_TIMEOUT_S:g} s "
                          "(the address accepts connections but does not complete Dask's handshake)")
    if "error" in box:
        e = box["error"]
        if isinstance(e, (OSError, TimeoutError)):
            raise e
        raise QoelabError(f"{what}: cannot connect: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return box["client"]


class Dask(Executor):
    """A ``dask.distributed`` client, on a new ``LocalCluster`` or an existing scheduler."""

    name = "dask"

    def __init__(self, scheduler: str | None, n_local: int | None, shared_fs: bool | None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise QoelabError("--cluster/--scheduler: Dask is not installed (it is an extra: pip install 'qoelab[dask]'; "
                              "-j N runs local processes without it)") from None
        self.may_share = shared_fs is not False
        self.cluster = None
        what = f"--scheduler {scheduler}" if scheduler else f"--cluster local:{n_local}"
        try:
            if scheduler is None:
                # Single-threaded workers: a run is CPU-bound and holds the GIL in places; one
                # run per process is what -j does too. No dashboard: no port to collide on.
                self.cluster = LocalCluster(n_workers=n_local, threads_per_worker=1, processes=True,
                                            dashboard_address=None, silence_logs=logging.CRITICAL)
                self.client = Client(self.cluster)
            else:
                self.client = _connect(Client, scheduler, what)
        except (OSError, TimeoutError) as e:
            self._close_cluster()
            raise QoelabError(f"{what}: cannot connect: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        self.what = what
        self._nthreads, self._asked = 0, 0.0

    def capacity(self) -> int:
        # Asked again every few seconds, so workers that join or leave change the pace.
        if time.monotonic() - self._asked > 5.0 or self._nthreads == 0:
            try:
                if self._nthreads == 0:
                    self.client.wait_for_workers(1, timeout=120)
                self._nthreads = sum(self.client.nthreads().values())
            except (OSError, TimeoutError) as e:
                raise QoelabError(f"{self.what}: no worker joined within 120 s ({type(e).__name__})") from None
            self._asked = time.monotonic()
        return max(1, self._nthreads)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        # pure=False: a resubmitted cell is a new task, never a cached result.
        return self.client.submit(fn, *args, pure=False, retries=0)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        from distributed import wait as dwait

        try:
            done, _ = dwait(handles, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        return list(done)

    def result(self, handle: Any, what: str) -> Any:
        from distributed.scheduler import KilledWorker

        try:
            return handle.result()
        except KilledWorker as e:
            raise WorkerDied(f"the Dask workers running it died {self._allowed()} times ({type(e).__name__})") from e

    @staticmethod
    def _allowed() -> str:
        import dask

        return str(int(dask.config.get("distributed.scheduler.allowed-failures", 3)) + 1)

    def stop(self) -> None:
        # Queued and running tasks are cancelled; a task already running on a remote worker
        # may still finish (its run folder is then complete and correct).
        try:
            self.client.close(timeout=5)
        except Exception:  # already gone: nothing left to stop
            pass
        self._close_cluster()

    def close(self) -> None:
        self.stop()

    def _close_cluster(self) -> None:
        if self.cluster is not None:
            try:
                self.cluster.close(timeout=10)
            except Exception:  # workers already dead
                pass
            self.cluster = None


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


def add_arguments(p: Any) -> None:
    """The executor options of ``qoelab sweep`` and ``qoelab reproduce``."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--cluster", metavar="local:N", help="run on a new Dask LocalCluster of N single-threaded worker processes")
    g.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on the workers of a running Dask scheduler")
    g.add_argument("--shard", metavar="I/N", help="run only shard I of N (cells I, I+N, I+2N, ...): one task of a job array")
    p.add_argument("--no-shared-fs", action="store_true",
                   help="with --scheduler: workers return each run's files to this process, which writes them "
                        "(the default finds out per worker whether it shares the output folder)")


def spec_from_args(a: Any) -> ExecutorSpec:
    """An :class:`ExecutorSpec` from parsed options (``jobs`` still to be resolved by the
    caller, e.g. by :func:`qoelab.sweep.run_sweep`); bad values raise one-line errors naming
    the option."""
    cluster = parse_cluster(a.cluster) if a.cluster is not None else None
    scheduler = parse_scheduler(a.scheduler) if a.scheduler is not None else None
    shard = parse_shard(a.shard) if a.shard is not None else None
    jobs = getattr(a, "jobs", 1)
    if (cluster or scheduler) and jobs != 1:
        raise QoelabError(f"-j/--jobs {jobs}: not with --{'cluster' if cluster else 'scheduler'} (the cluster's workers run the cells)")
    if a.no_shared_fs and not (cluster or scheduler):
        raise QoelabError("--no-shared-fs: only with --cluster or --scheduler (local workers share the folder)")
    return ExecutorSpec(jobs=jobs, cluster=cluster, scheduler=scheduler, shard=shard, shared_fs=False if a.no_shared_fs else None)


def open_from_args(a: Any) -> Executor:
    """The executor the parsed options ask for, started, with ``-j`` resolved."""
    import dataclasses

    return dataclasses.replace(spec_from_args(a), jobs=resolve_jobs(getattr(a, "jobs", 1))).open()


def shard_note(shard: tuple[int, int]) -> str:
    """What a reproduction prints after running its shard instead of the report."""
    return (f"shard {shard[0]}/{shard[1]} done; when every shard has finished, run the same command without --shard "
            "to write the report (it reuses every finished run)")
