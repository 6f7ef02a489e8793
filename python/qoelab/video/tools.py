"""Locating and running ffmpeg.

ffmpeg comes from the pinned `imageio-ffmpeg` wheel. `QOELAB_FFMPEG` overrides it (an absolute
path), which is also how tests simulate a missing binary.

Every input ffmpeg opens for the project is restricted to the `file` protocol
(`-protocol_whitelist file` before each `-i`; standard input, `-i -`, to `pipe`), so a name from a
recipe or the command line can never make ffmpeg open a URL, a `concat:` or a `subfile,` input.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Sequence

from .errors import VideoInputError

__all__ = ["ffmpeg_exe", "ffmpeg_version", "run_ffmpeg", "has_filter", "guard_inputs"]


def ffmpeg_exe() -> str:
    """Path of the ffmpeg binary, or `VideoInputError` when there is none."""
    override = os.environ.get("QOELAB_FFMPEG")
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise VideoInputError(override, "ffmpeg not found or not executable (from QOELAB_FFMPEG)")
        return override
    try:
        import imageio_ffmpeg
    except ImportError as exc:  # the wheel is a pinned dependency, but say so clearly
        raise VideoInputError("ffmpeg", f"imageio-ffmpeg is not installed ({exc})") from None
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as exc:
        raise VideoInputError("ffmpeg", f"no ffmpeg binary: {exc}") from None
    if not os.path.isfile(exe):
        raise VideoInputError(exe, "ffmpeg not found")
    return exe


@functools.cache
def _version(exe: str) -> str:
    out = subprocess.run([exe, "-hide_banner", "-version"], capture_output=True, text=True, check=False)
    first = out.stdout.splitlines()[0] if out.stdout else "unknown"
    return first.replace("ffmpeg version ", "").split(" Copyright")[0]


def ffmpeg_version() -> str:
    """The ffmpeg version string, e.g. `n9.0.2-17-g2a571b6068-20260930`."""
    return _version(ffmpeg_exe())


@functools.cache
def _filters(exe: str) -> frozenset[str]:
    out = subprocess.run([exe, "-hide_banner", "-filters"], capture_output=True, text=True, check=False)
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and len(parts[0]) <= 3:
            names.add(parts[1])
    return frozenset(names)


def has_filter(name: str) -> bool:
    """Whether this ffmpeg build has the named filter (e.g. `libvmaf`)."""
    return name in _filters(ffmpeg_exe())


def guard_inputs(args: Sequence[str]) -> list[str]:
    """`args` with `-protocol_whitelist file` (or `pipe` for standard input) before every `-i`."""
    out: list[str] = []
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a == "-i" and i + 1 < len(args):
            src = args[i + 1]
            out += ["-protocol_whitelist", "pipe" if src in ("-", "pipe:", "pipe:0") else "file", "-i", src]
            next(it, None)
        else:
            out.append(a)
    return out


def run_ffmpeg(args: Sequence[str], *, what: str, path: str, stdin: bytes | None = None) -> None:
    """Run ffmpeg with `args`; a failure becomes `VideoInputError(path, ...)` with ffmpeg's last line."""
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *guard_inputs(args)]
    if stdin is not None:
        cmd.remove("-nostdin")
    proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        raise VideoInputError(path, f"{what} failed: {error_line(proc.stderr.decode(errors='replace'), proc.returncode)}")


def error_line(stderr: str, rc: int) -> str:
    """The line of ffmpeg's error output that says why: a refused protocol if any, else the last
    line; without the `[component @ 0x...]` prefix (an address, different on every run)."""
    lines = stderr.strip().splitlines()
    if not lines:
        return f"exit status {rc}"
    pick = next((ln for ln in lines if "not on whitelist" in ln), lines[-1])
    return re.sub(r"^\[[^\]]* @ 0x[0-9a-f]+\] ", "", pick)
