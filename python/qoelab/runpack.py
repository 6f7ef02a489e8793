"""Carrying finished runs between machines: ``qoelab runs pack`` and ``qoelab runs unpack``.

A full reproduction can take longer than one machine is kept (the TFD grid at 20 repetitions is
about 40 CPU hours). Its sweeps resume from their finished run folders, so a long run can go on
elsewhere if those folders travel with it. A run folder holds its tables and its time series;
a report reads only some of them (TFD: ``flows.parquet`` and ``links.parquet``), and the time
series are most of the bytes (``queues.parquet`` and ``throughput.parquet``: 94 % of the TFD
runs').

:func:`pack` writes every finished run under a folder (``done`` marker present and every file
matching its SHA-256, :func:`qoelab.sweep.damage`) into one ``.tar.xz``, with the files named by
``drop`` left out: such a run's ``done`` marker lists the files it still holds, as for any run,
and keeps the size and SHA-256 of each file left out under ``dropped``, so what the run wrote
stays on record. ``sweep.json`` files (which scenario a sweep folder's runs belong to) travel
too. ``after`` names earlier archives whose runs are not packed again: a long run is carried as
parts, each with the runs finished since the last.

:func:`unpack` restores an archive's runs into a folder: each run folder is written complete or
not at all (a temporary folder renamed into place) and checked against its ``done`` marker; a
run already finished there is kept as it is. The archive is read twice: first every header is
checked (names inside the archive and of the shape a run folder has, regular files or hard
links to earlier members, sizes within bounds and the disk's free space), then the files are
written; a damaged or hostile archive is refused before anything is written.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable

from qoelab.errors import QoelabError

#: The archive's own description (format, counts, what was left out), its first member.
INDEX = "qoelab-pack.json"
FORMAT = 1
#: The marker of a finished run and the record of its sweep folder.
DONE, SWEEP = "done", "sweep.json"
#: Bounds checked from the headers before anything is written.
MAX_MEMBERS = 10_000_000
MAX_MEMBER_BYTES = 1 << 30
MAX_TOTAL_BYTES = 256 << 30
MAX_INDEX_BYTES = 1 << 20


def _error(path: Path, why: str) -> QoelabError:
    return QoelabError(f"{path}: {why}")


def _finished_runs(root: Path) -> tuple[list[Path], list[Path]]:
    """The run folders under ``root`` (folders holding a ``done`` marker) and the ``sweep.json``
    files, in path order; symbolic links are neither followed nor packed."""
    runs, sweeps = [], []
    for d, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(x for x in dirs if not x.startswith("."))  # .claims, .partial-* folders
        p = Path(d)
        if DONE in files and not (p / DONE).is_symlink():
            runs.append(p)
            dirs[:] = []
        elif SWEEP in files and not (p / SWEEP).is_symlink():
            sweeps.append(p / SWEEP)
    return sorted(runs), sorted(sweeps)


def packed_runs(archive: Path) -> set[str]:
    """The run folders (relative paths) an archive holds, from its headers."""
    with _open(archive) as tar:
        return {str(PurePosixPath(m.name).parent) for m in _members(archive, tar) if PurePosixPath(m.name).name == DONE}


def pack(root: Path, archive: Path, drop: Iterable[str] = (), after: Iterable[Path] = (),
         progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Writes the finished runs under ``root`` (less those in the ``after`` archives) into
    ``archive`` (``.tar.xz``, replaced atomically), leaving out the files named in ``drop``.
    Returns counts: ``runs`` packed, ``skipped`` (in an earlier part), ``damaged`` (not packed:
    a file differs from its ``done`` marker), ``sweeps`` (``sweep.json`` files), and under
    ``dropped`` how many packed runs held each name of ``drop``."""
    from qoelab import outdir
    from qoelab.sweep import damage

    drop = sorted(set(drop))
    for name in drop:
        if name in (DONE, "cell.json", "timing.json") or "/" in name or not name:
            raise QoelabError(f"--drop {name!r}: names a file every run keeps (done, cell.json, timing.json) or no file")
    root = Path(root)
    if not root.is_dir() or root.is_symlink():
        raise _error(root, "not a folder of runs")
    skip: set[str] = set()
    for a in after:
        skip |= packed_runs(Path(a))
    runs, sweeps = _finished_runs(root)
    counts: dict[str, Any] = {"runs": 0, "skipped": 0, "damaged": 0, "sweeps": len(sweeps),
                              "dropped": dict.fromkeys(drop, 0)}
    outdir.check_folder(Path(archive).parent, "-o/--output's folder")
    with outdir.atomic_file(Path(archive), "-o/--output") as fh, \
            tarfile.open(fileobj=fh, mode="w:xz", format=tarfile.PAX_FORMAT, preset=9) as tar:
        index = {"format": FORMAT, "root": root.name, "dropped": drop}
        _add_bytes(tar, INDEX, (json.dumps(index, sort_keys=True) + "\n").encode(), 0)
        for s in sweeps:
            _add_file(tar, s, s.relative_to(root).as_posix())
        for i, d in enumerate(runs):
            rel = d.relative_to(root).as_posix()
            if progress:
                progress(i, len(runs))
            if rel in skip:
                counts["skipped"] += 1
                continue
            if damage(d) is not None:
                counts["damaged"] += 1
                continue
            marker = json.loads((d / DONE).read_text())
            files: dict[str, Any] = marker["files"]
            dropped = dict(marker.get("dropped", {}))
            for name in drop:
                if name in files:
                    dropped[name] = files.pop(name)
                    counts["dropped"][name] += 1
            for name in sorted(files):
                _add_file(tar, d / name, f"{rel}/{name}")
            slim = {"files": files, **({"dropped": dropped} if dropped else {})}
            _add_bytes(tar, f"{rel}/{DONE}", (json.dumps(slim, indent=1, sort_keys=True) + "\n").encode(),
                       int((d / DONE).stat().st_mtime))
            counts["runs"] += 1
        if progress:
            progress(len(runs), len(runs))
    return counts


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), mtime, 0o644
    tar.addfile(info, io.BytesIO(data))


def _add_file(tar: tarfile.TarFile, path: Path, name: str) -> None:
    """A regular file under its archive name; a second name of the same file (a run adopted
    from an identical one, :func:`qoelab.sweep.adopt`) becomes a hard link to the first."""
    info = tar.gettarinfo(str(path), arcname=name)
    if not (info.isfile() or info.islnk()):
        raise _error(path, "not a regular file; cannot pack it")
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o644
    if info.isfile():
        with open(path, "rb") as f:
            tar.addfile(info, f)
    else:
        tar.addfile(info)


def _open(archive: Path) -> tarfile.TarFile:
    from qoelab.paths import open_regular

    fh = open_regular(archive, "archive", lambda p, why: QoelabError(f"{p}: {why}"))
    try:
        return tarfile.open(fileobj=fh, mode="r:*")
    except (tarfile.TarError, OSError, EOFError) as e:
        fh.close()
        raise _error(archive, f"not a qoelab runs archive ({type(e).__name__})") from None


def _checked_name(archive: Path, name: str) -> PurePosixPath:
    p = PurePosixPath(name)
    if not name or p.is_absolute() or any(part in ("", ".", "..") for part in name.split("/")) or "\\" in name \
            or any(part.startswith(".") for part in p.parts) or len(name) > 4096 or "\x00" in name:
        raise _error(archive, f"a member's name is not a plain relative path ({name[:80]!r})")
    return p


def _members(archive: Path, tar: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """Every header, checked: plain relative names, regular files or hard links to an earlier
    member, sizes and count within bounds."""
    out: list[tarfile.TarInfo] = []
    seen: set[str] = set()
    total = 0
    try:
        for m in tar:
            if len(out) >= MAX_MEMBERS:
                raise _error(archive, f"more than {MAX_MEMBERS} members")
            _checked_name(archive, m.name)
            if m.isdir():
                continue
            if m.islnk():
                _checked_name(archive, m.linkname)
                if m.linkname not in seen:
                    raise _error(archive, f"{m.name}: a hard link to {m.linkname[:80]!r}, which is no earlier member")
            elif not m.isfile():
                raise _error(archive, f"{m.name}: neither a regular file nor a hard link")
            if m.size > MAX_MEMBER_BYTES:
                raise _error(archive, f"{m.name}: {m.size} bytes, more than the {MAX_MEMBER_BYTES} allowed")
            if m.name in seen:
                raise _error(archive, f"{m.name}: appears twice")
            seen.add(m.name)
            total += m.size
            if total > MAX_TOTAL_BYTES:
                raise _error(archive, f"holds more than the {MAX_TOTAL_BYTES} bytes allowed")
            out.append(m)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise _error(archive, f"damaged archive ({type(e).__name__})") from None
    if not out or out[0].name != INDEX:
        raise _error(archive, f"not a qoelab runs archive (no {INDEX} first)")
    return out


def unpack(archive: Path, dest: Path, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Restores the runs of ``archive`` into ``dest``. Returns counts: ``runs`` written,
    ``present`` (finished there already: kept), ``sweeps`` (``sweep.json`` written)."""
    from qoelab import outdir
    from qoelab.sweep import damage

    archive, dest = Path(archive), Path(dest)
    outdir.check_folder(dest)
    with _open(archive) as tar:
        members = _members(archive, tar)
    _read_index(archive, members[0])
    runs: dict[str, list[tarfile.TarInfo]] = {}
    sweeps: set[str] = set()
    for m in members[1:]:
        p = PurePosixPath(m.name)
        if p.name == SWEEP:
            sweeps.add(m.name)
        else:
            runs.setdefault(str(p.parent), []).append(m)
    for rel, ms in runs.items():
        names = [PurePosixPath(m.name).name for m in ms]
        if names[-1] != DONE or names.count(DONE) != 1:
            raise _error(archive, f"{rel}: not a finished run (its done marker is not its last member)")
    need = sum(m.size for m in members)
    free = shutil.disk_usage(outdir.existing_ancestor(dest)).free
    if need > free:
        raise _error(dest, f"needs {need} bytes to unpack {archive.name}, and {free} are free")
    counts = {"runs": 0, "present": 0, "sweeps": 0}
    dest.mkdir(parents=True, exist_ok=True)
    with _open(archive) as tar:
        checked = {m.name for m in members}
        pending: dict[str, Path] = {}  # run folder -> its temporary folder, while being written
        present: set[str] = set()  # run folders finished in dest already: kept
        done_runs = 0
        try:
            for m in tar:
                if m.name == INDEX or m.isdir():
                    continue
                if m.name not in checked:  # the archive changed since its headers were checked
                    raise _error(archive, "changed while it was being unpacked")
                p = PurePosixPath(m.name)
                if m.name in sweeps:
                    counts["sweeps"] += _put_sweep(archive, tar, m, dest / p)
                    continue
                rel = str(p.parent)
                target = dest / rel
                if rel in present:
                    continue
                if rel not in pending:
                    if damage(target) is None:
                        present.add(rel)
                        counts["present"] += 1
                        continue
                    if os.path.lexists(target):
                        raise _error(target, "exists and is no finished run; remove it (the sweep would redo it) "
                                             "and unpack again")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    pending[rel] = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-{os.getpid()}-",
                                                         dir=target.parent))
                tmp = pending[rel]
                out = tmp / p.name
                if m.islnk():
                    src = dest / m.linkname
                    if not src.is_file() or src.is_symlink():
                        src = pending.get(str(PurePosixPath(m.linkname).parent), dest / "\x00") / PurePosixPath(m.linkname).name
                    try:
                        os.link(src, out)
                    except OSError:
                        raise _error(archive, f"{m.name}: its hard link target {m.linkname} was not unpacked") from None
                else:
                    f = tar.extractfile(m)
                    assert f is not None
                    with f, open(out, "xb") as o:
                        shutil.copyfileobj(f, o, 1 << 20)
                os.utime(out, (m.mtime, m.mtime))
                if p.name == DONE:
                    why = damage(tmp)
                    if why is not None:
                        raise _error(archive, f"{rel}: does not match its done marker ({why})")
                    os.rename(tmp, target)
                    del pending[rel]
                    counts["runs"] += 1
                    done_runs += 1
                    if progress:
                        progress(done_runs, len(runs))
        except (tarfile.TarError, EOFError) as e:
            raise _error(archive, f"damaged archive ({type(e).__name__})") from None
        finally:
            for tmp in pending.values():
                shutil.rmtree(tmp, ignore_errors=True)
    return counts


def _read_index(archive: Path, m: tarfile.TarInfo) -> dict[str, Any]:
    if m.size > MAX_INDEX_BYTES:
        raise _error(archive, f"{INDEX} is {m.size} bytes, more than the {MAX_INDEX_BYTES} allowed")
    with _open(archive) as tar:
        first = tar.next()  # the first member (checked by _members)
        f = tar.extractfile(first) if first is not None else None
        try:
            index = json.loads(f.read(MAX_INDEX_BYTES + 1)) if f else None
        except ValueError:
            index = None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise _error(archive, f"{INDEX}: not format {FORMAT} of a qoelab runs archive")
    return index


def _put_sweep(archive: Path, tar: tarfile.TarFile, m: tarfile.TarInfo, target: Path) -> int:
    """Writes a sweep folder's ``sweep.json`` (1), or keeps the one there if it names the same
    base scenario (0: its grid or repetitions may have grown since); another scenario means the
    folder holds another sweep's runs: refused, as the sweep itself refuses to resume there."""
    from qoelab import outdir

    if m.size > MAX_INDEX_BYTES or not m.isfile():
        raise _error(archive, f"{m.name}: not a sweep record of at most {MAX_INDEX_BYTES} bytes")
    f = tar.extractfile(m)
    data = f.read() if f else b""
    if os.path.lexists(target):
        from qoelab.paths import read_file

        have = read_file(target, "sweep record", MAX_INDEX_BYTES, lambda p, why: QoelabError(f"{p}: {why}"))
        if _scenario_of(have) is None or _scenario_of(have) != _scenario_of(data):
            raise _error(target, f"records another sweep than {archive.name}'s {m.name}; unpack into another folder")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    outdir.write_atomic(target, data)
    return 1


def _scenario_of(record: bytes) -> str | None:
    """The ``scenario_sha256`` a ``sweep.json`` records (None if it records none)."""
    try:
        d = json.loads(record)
    except ValueError:
        return None
    v = d.get("scenario_sha256") if isinstance(d, dict) else None
    return v if isinstance(v, str) else None
