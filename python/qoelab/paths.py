"""Where bundled files live (the `scenarios/` and `data/` folders), and the one reader of a
user's file by path.

In a checkout (the editable install of the README) they are the repository's. A wheel
(`scripts/build_wheel.sh`) carries copies of both inside the package, in `qoelab/_bundle/`, so
an installed qoelab finds them without a checkout; `qoelab examples DIR` copies them out for
editing. ``QOELAB_HOME`` overrides both: a folder holding `scenarios/` and `data/`.

Every input read by path (scenario files, recipes, calibrations, receive logs, frames files,
segment tables, ladders, ``report.json``, figures) goes through :func:`open_regular` /
:func:`read_file`, the front end's twin of the core's ``crates/core/src/input.rs``: opened with
``O_NONBLOCK`` (a FIFO does not block the open), ``fstat`` of the open descriptor must say
*regular file* (a FIFO, device, socket or folder is refused naming what it is), and at most a
stated number of bytes is read. A path handed to another program (ffmpeg, PyAV) is checked with
:func:`check_regular` first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable

from qoelab.errors import QoelabError

if TYPE_CHECKING:
    import pyarrow


#: The copies a wheel carries (absent in a checkout: the build script makes them).
BUNDLE = Path(__file__).resolve().parent / "_bundle"


def root() -> Path:
    """The folder holding `scenarios/` and `data/`: ``QOELAB_HOME``, the wheel's bundle, or
    the repository of a checkout."""
    env = os.environ.get("QOELAB_HOME")
    if env:
        return Path(env)
    if (BUNDLE / "scenarios").is_dir():
        return BUNDLE
    return Path(__file__).resolve().parents[2]


def in_checkout() -> bool:
    """Whether this qoelab runs from a repository checkout (docs, tests, git are there)."""
    return (Path(__file__).resolve().parents[2] / "Cargo.toml").is_file()


def scenario_path(name: str) -> Path:
    """A bundled scenario by name (``bench/dumbbell-10m``) or a path to a file."""
    p = Path(name)
    if p.suffix == ".toml" or p.is_file():
        return p
    cand = root() / "scenarios" / name
    for c in (cand / "scenario.toml", cand.with_suffix(".toml")):
        if c.exists():
            return c
    if p.exists():
        return p  # a folder or a device that names no bundled scenario: the loader says what it is
    raise QoelabError(f"{name}: no such scenario file or bundled scenario (looked in {root() / 'scenarios'})")


def _kind(mode: int) -> str:
    """What a path names, when it is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class InputFileError(QoelabError):
    """A file given as input cannot be read: ``str(e)`` is ``path: reason``."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.reason))


#: ``error(path, reason)``: the exception a reader raises (its caller's type: a
#: ``ScenarioError``, a ``VideoInputError``, or :class:`InputFileError`).
ErrorType = Callable[[str, str], Exception]


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def open_regular(path: str | os.PathLike[str], what: str, error: ErrorType = InputFileError) -> BinaryIO:
    """``path`` opened for reading in binary mode, if it is a regular file (symlinks to one are
    followed). The descriptor is opened with ``O_NONBLOCK`` and checked with ``fstat``, so a FIFO
    or a device is refused without blocking; the caller closes the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise error(os.fspath(path), f"cannot read {what}: {_why(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(os.fspath(path), f"cannot read {what}: {_kind(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_file(path: str | os.PathLike[str], what: str, limit: int, error: ErrorType = InputFileError) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (a larger file is
    refused before more than ``limit + 1`` bytes are read). Errors name the file and never
    quote it."""
    with open_regular(path, what, error) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise error(os.fspath(path), f"{what} is {size} bytes, more than the {limit} allowed")
            data = fh.read(limit + 1)
        except OSError as e:
            raise error(os.fspath(path), f"cannot read {what}: {_why(e)}") from None
    if len(data) > limit:  # grew since fstat
        raise error(os.fspath(path), f"{what} is more than the {limit} bytes allowed")
    return data


def arrow_source(fh: BinaryIO) -> "pyarrow.BufferReader":
    """The whole of the open file ``fh`` as an in-memory reader whose bytes Arrow owns, to hand
    to ``pyarrow.parquet`` / ``pyarrow.csv`` in place of the Python file object.

    Given a Python file, Arrow wraps it in a ``PyReadableFile`` that its dataset fragments keep;
    a thread-pool worker may drop the last reference while the interpreter is exiting, and the
    destructor's ``PyGILState_Ensure`` then ends the thread inside a ``noexcept`` destructor:
    ``terminate called without an active exception``, SIGABRT after the work is done (seen on
    an exit-2 error path; apache/arrow#34314). A copy in an Arrow-allocated buffer holds no
    Python object, so nothing of ours outlives the call. The copy is one read of the file's
    ``fstat`` size (the readers would hold the whole table in memory too)."""
    import pyarrow as pa

    size = os.fstat(fh.fileno()).st_size
    buf = pa.allocate_buffer(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = fh.readinto(view[got:])  # type: ignore[attr-defined]  # os.fdopen(..., "rb") has it
        if not n:  # shrank since fstat
            break
        got += n
    view.release()
    return pa.BufferReader(buf.slice(0, got) if got < size else buf)


def read_text(path: str | os.PathLike[str], what: str, limit: int, error: ErrorType = InputFileError,
              encoding: str = "utf-8") -> str:
    """:func:`read_file` decoded; text that is not ``encoding`` is refused naming the byte
    offset, never the bytes."""
    data = read_file(path, what, limit, error)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        label = "UTF-8" if encoding.lower().replace("-", "") == "utf8" else encoding.upper()
        raise error(os.fspath(path), f"cannot read {what}: not {label} text (byte {e.start})") from None


def check_regular(path: str | os.PathLike[str], what: str, error: ErrorType = InputFileError) -> Path:
    """Checks that ``path`` is a regular file (as :func:`open_regular` does), for a path that
    another program will open (ffmpeg, PyAV); returns it."""
    open_regular(path, what, error).close()
    return Path(path)


def open_inside(folder: str | os.PathLike[str], rel: str, what: str, error: ErrorType = InputFileError) -> BinaryIO:
    """The regular file ``rel`` (a relative path) inside ``folder``, opened for reading without
    following a symbolic link anywhere below ``folder``: each folder on the way is opened with
    ``O_NOFOLLOW`` relative to the previous one, and the file itself too, so a link planted in
    an output folder is never read through. Errors name ``folder/rel``."""
    import errno
    from pathlib import PurePosixPath

    shown = os.path.join(os.fspath(folder), rel)
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise error(shown, f"cannot read {what}: not a path inside {os.fspath(folder)}")
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(folder, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY))
            for part in parts[:-1]:
                fds.append(os.open(part, flags | os.O_DIRECTORY, dir_fd=fds[-1]))
            fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=fds[-1])
        except OSError as e:
            link = e.errno in (errno.ELOOP, errno.EMLINK) or (e.errno == errno.ENOTDIR and os.path.islink(
                os.path.join(os.fspath(folder), *parts[:len(fds)])))
            why = "a symbolic link, not followed" if link else _why(e)
            raise error(shown, f"cannot read {what}: {why}") from None
    finally:
        for d in fds:
            os.close(d)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(shown, f"cannot read {what}: {_kind(st.st_mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
