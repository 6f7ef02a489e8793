"""Output folders: checked before a run, filled in a temporary sibling, swapped in whole.

A results folder either holds one complete run or is untouched:

1. :func:`check` runs before the simulation starts. The target must be a directory or not
   exist yet, and its parent must be (or become) a writable directory; a file, ``/dev/null``, a
   read-only place or a non-empty folder that is not a results folder is refused with one line
   (``QoelabError``, exit code 2), before any compute is spent.
2. :func:`staged` yields a fresh temporary folder beside the target (``.<name>.partial-<pid>-…``,
   so a rename never crosses file systems) into which the run writes everything, captures
   included.
3. On success the temporary folder replaces the target: with ``renameat2(RENAME_EXCHANGE)``
   where the kernel has it (one atomic step; the old contents are then removed), otherwise by
   renaming the old folder aside first. No file of an earlier run survives beside the new ones.
   On failure or interruption the temporary folder is removed and the target is unchanged.

A folder is only ever replaced if it is empty or looks like qoelab's own results (it holds a
``summary.json``), so ``-o ~`` cannot delete a home directory.

Nothing is written, replaced or read back through a symbolic link where qoelab writes: an
output folder, a file inside one (``runs/``, ``sweep.json``, ``index.html``, ``run.png``, a
calibration file) or a temporary name found to be a symlink is refused with one line
(:func:`refuse_symlink`). Single files are written by :func:`write_atomic` /
:func:`atomic_file`: a temporary file created with ``O_EXCL | O_NOFOLLOW`` under a random name
beside the target, renamed over it when complete.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator

from qoelab.errors import QoelabError

#: The file whose presence marks a folder as a qoelab results folder (safe to replace).
MARKER = "summary.json"


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def output_arg(value: str | None, what: str = "-o/--output") -> Path | None:
    """An output folder named on the command line (None: not given); an empty or blank name
    is refused (``Path("")`` would be the current folder)."""
    if value is None:
        return None
    if not value.strip():
        raise QoelabError(f"{what}: empty folder name")
    return Path(value)


def refuse_symlink(path: Path, what: str = "") -> Path:
    """``path``, unless it is a symbolic link (dangling or not): qoelab never writes, replaces
    or reads back its outputs through one. Raises :class:`QoelabError` naming the path."""
    if os.path.islink(path):
        where = f"{what} {path}" if what else str(path)
        raise QoelabError(f"{where}: is a symbolic link; qoelab does not write through symlinks "
                          "(remove it or choose another path)")
    return Path(path)


def write_atomic(path: Path, data: str | bytes, what: str = "") -> Path:
    """Writes ``data`` (text as UTF-8) to ``path`` through :func:`atomic_file`."""
    with atomic_file(path, what) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)


@contextlib.contextmanager
def atomic_file(path: Path, what: str = "") -> Iterator[BinaryIO]:
    """Yields a new binary file that replaces ``path`` when the block ends normally (nothing
    changes on an exception). The temporary file is created beside ``path`` with a random name
    and ``O_EXCL | O_NOFOLLOW`` (:func:`tempfile.mkstemp`), so a name planted in the folder,
    symlink or not, is never opened; ``path`` itself must not be a symbolic link or a folder.
    Raises :class:`QoelabError` naming the path."""
    path = Path(path)
    where = f"{what} {path}" if what else str(path)
    refuse_symlink(path, what)
    if path.is_dir():
        raise QoelabError(f"{where}: is a directory; cannot write a file there")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent or ".")
    except OSError as e:
        raise QoelabError(f"{where}: cannot write: {_why(e)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, path)
    except OSError as e:
        raise QoelabError(f"{where}: cannot write: {_why(e)}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _refuse_dotdot_through_missing(target: Path, what: str) -> None:
    """A ``..`` after a folder that does not exist (``a/missing/../c``): the kernel resolves the
    path only once ``a/missing`` exists, so writing there would first create a folder outside
    the output folder and leave it behind. Refused, naming the folder."""
    prefix = Path(target.anchor) if target.is_absolute() else Path(".")
    for part in target.parts[1:] if target.is_absolute() else target.parts:
        if part == ".." and not os.path.lexists(prefix):
            raise QoelabError(f"{what} {target}: '..' follows {prefix}, which does not exist (it would be created "
                              "outside the output folder and left behind); name the folder without it")
        prefix = prefix / part


def check(target: Path, what: str = "-o/--output") -> Path:
    """Checks that ``target`` can receive a run's results, creating nothing. Returns the
    target. Raises :class:`QoelabError` naming the path and the reason."""
    target = Path(target)
    _refuse_dotdot_through_missing(target, what)
    if target.name in ("", ".", ".."):
        # A results folder is replaced as a whole: it needs a name of its own in its parent.
        target = Path(os.path.abspath(target))
        if target.name == "":
            raise QoelabError(f"{what} {target}: cannot replace the root directory; name a folder")
    refuse_symlink(target, what)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise QoelabError(f"{what} {target}: cannot use as output folder: {_why(e)}") from None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise QoelabError(f"{what} {target}: exists and is not a directory")
        try:
            entries = [p.name for p in os.scandir(target)]
        except OSError as e:
            raise QoelabError(f"{what} {target}: cannot read the folder: {_why(e)}") from None
        if entries and MARKER not in entries:
            raise QoelabError(
                f"{what} {target}: exists, is not empty and holds no earlier qoelab results ({MARKER}); "
                "it would be replaced as a whole, so choose a new or empty folder"
            )
    _check_writable(target.parent, target, what)
    return target


def check_folder(target: Path, what: str = "-o/--output") -> Path:
    """Checks a folder that is kept and added to (a sweep or a reproduction, which resume):
    it is a directory or can be created, and can be written in, and is not a symbolic link.
    Creates nothing."""
    target = Path(target)
    _refuse_dotdot_through_missing(target, what)
    refuse_symlink(target, what)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise QoelabError(f"{what} {target}: cannot use as output folder: {_why(e)}") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise QoelabError(f"{what} {target}: exists and is not a directory")
    _check_writable(target if st is not None else target.parent, target, what)
    return target


def _check_writable(start: Path, target: Path, what: str) -> None:
    # The nearest existing ancestor must be a directory we can write in (the missing folders
    # are created when the results are written). Writability as the kernel sees it (root
    # ignores modes, read-only mounts do not): make and remove a probe folder there.
    try:
        parent = existing_ancestor(start)
        if not parent.is_dir():
            raise QoelabError(f"{what} {target}: {parent} exists and is not a directory")
        probe = tempfile.mkdtemp(prefix=f".{target.name}.probe-", dir=parent)
        os.rmdir(probe)
    except OSError as e:
        raise QoelabError(f"{what} {target}: cannot write in {parent}: {_why(e)}") from None


def existing_ancestor(p: Path) -> Path:
    """``p`` made absolute, or its nearest ancestor that exists (a symbolic link counts as
    existing, not followed)."""
    p = Path(os.path.abspath(p))
    while not os.path.lexists(p):
        p = p.parent
    return p


def _partial_prefix(target: Path) -> str:
    return f".{target.name}.partial-{os.getpid()}-"


@contextlib.contextmanager
def staged(target: Path) -> Iterator[Path]:
    """Yields a temporary folder beside ``target``; on normal exit it replaces ``target``
    atomically, on an exception (or Ctrl-C) it is removed and ``target`` is left as it was.
    Call :func:`check` first for a clear error on an unusable target."""
    target = Path(target)
    created = [p for p in Path(os.path.abspath(target)).parents if not os.path.lexists(p)]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_partial_prefix(target), dir=target.parent))
    except OSError as e:
        raise QoelabError(f"{target}: cannot create a temporary folder beside it: {_why(e)}") from None
    try:
        yield tmp
        replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for p in created:  # innermost first: the folders made for this run, if still empty
            try:
                os.rmdir(p)
            except OSError:
                break
        raise


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two paths atomically (Linux ``renameat2``); False where unsupported."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def replace(tmp: Path, target: Path) -> None:
    """Puts the finished folder ``tmp`` in the place of ``target`` (which may not exist)."""
    try:
        os.rename(tmp, target)  # target absent (or an empty folder): one atomic rename
        return
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    if _exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # now holds the earlier run
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def remove_stale(parent: Path, name: str) -> None:
    """Removes temporary folders of ``name`` left in ``parent`` by processes that no longer
    run (a crash or ``kill -9`` mid-write); those of live processes are kept."""
    for p in parent.glob(f".{name}.partial-*"):
        rest = p.name[len(f".{name}.partial-"):]
        pid = rest.split("-", 1)[0]
        if pid.isdigit() and pid_alive(int(pid)):
            continue
        shutil.rmtree(p, ignore_errors=True)


def safe_name(text: str) -> str:
    """``text`` as one harmless file name: characters other than letters, digits, ``.``, ``_``
    and ``-`` become ``_``, and a leading dot does too (no hidden files, no ``..``)."""
    s = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "._-" else "_" for ch in text)
    if s.startswith("."):
        s = "_" + s[1:]
    return s[:200] or "_"


def unique_name(text: str) -> str:
    """``text`` as a harmless file name that no other text maps to: :func:`safe_name` where that
    keeps ``text`` as it is (names of letters, digits, ``.``, ``_`` and ``-``), else the
    :func:`safe_name` form, ``+`` (which :func:`safe_name` never writes) and 16 hex digits of the
    SHA-256 of ``text``. Two scenario files whose names differ only in non-ASCII letters
    (``café``, ``cafè``) get different folders; a plain name keeps its own (``a`` → ``a``)."""
    import hashlib

    s = safe_name(text)
    if s == text:
        return s
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{s[:180]}+{digest}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
