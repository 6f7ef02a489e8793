"""Where an encode's source video comes from, as data the project turns into ffmpeg arguments.

A recipe (`<stem>.recipe.toml`) travels with a trace bundle and is read back by `video evaluate`
to regenerate the source for PSNR/SSIM/VMAF against it. It therefore never holds ffmpeg
arguments: its `[source]` table names a source from a fixed vocabulary, every value is checked,
and `input_args()` builds the arguments.

`kind` (with its own keys):
- `"clip"`: a clip bundled in `data/clips/` by name (`clip = "bigbuckbunny"`), found in the
  project whatever folder the recipe was moved to; its SHA-256 is checked.
- `"file"`: a video file, `path` relative to the recipe's folder (or absolute) and its
  `sha256`. When the path does not lead to a file with that hash (the bundle was moved without
  its source), the file is looked up by name in the search path: `search_dirs` passed by the
  caller (`video evaluate --source-dir`), then the folders in `QOELAB_SOURCE_PATH`
  (`os.pathsep`-separated). It is opened with ffmpeg's `file:` protocol only.
- `"lavfi"`: one lavfi test source (`generator`, from `GENERATORS`) with `params`, a table of
  `key = value` checked against a conservative character set; options that read files
  (`filename`, `pattern`) are refused.
- `"hd_stand_in"`: the eight-clip stand-in for the TFD paper's HD clips
  (`stand_in.hd_sources(seed)`), built by the project from its `seed`.

Common keys: `width`, `height` (even, 2–16384), `fps` (0 < fps ≤ 1000), `retime` (bool),
`start_s` (≥ 0, files and clips only), `filters` (an extra filter chain; only the filters in
`SAFE_FILTERS`, none of which reads or writes files, and no quoting).

Every ffmpeg input the project opens gets `-protocol_whitelist file` (see `tools.py`), so even a
crafted file name cannot make ffmpeg fetch a URL or read another protocol.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qoelab.paths import root

from ..errors import VideoInputError

__all__ = ["read_small_text", "load_small_toml", "SourceSpec", "CLIP", "CLIPS", "pingpong", "GENERATORS", "SAFE_FILTERS", "check_filters", "parse_lavfi", "load_source",
           "sha256_of", "clip_path", "source_from_input", "migrate_legacy_source"]

CLIP_DIR = root() / "data" / "clips"
# Bundled clips by name: file and SHA-256 (checked before use).
CLIPS = {
    "bigbuckbunny": ("bigbuckbunny.mp4", "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd"),
}
# The bundled clip most recipes start from.
CLIP = CLIP_DIR / CLIPS["bigbuckbunny"][0]
KINDS = ("clip", "file", "lavfi", "hd_stand_in")
# lavfi test sources a recipe may name. Their file-reading options are refused below.
GENERATORS = frozenset({"testsrc", "testsrc2", "smptebars", "smptehdbars", "rgbtestsrc", "yuvtestsrc", "mandelbrot",
                        "life", "cellauto", "color", "mptestsrc", "allrgb", "allyuv", "colorchart", "zoneplate"})
_FILE_OPTIONS = frozenset({"filename", "f", "pattern", "p"})
# Filters allowed in a recorded filter chain: geometry, timing, format and noise only. None of them
# opens a file (unlike e.g. movie, psnr's stats_file, signature, vidstab, sendcmd).
SAFE_FILTERS = frozenset({"scale", "crop", "pad", "split", "reverse", "trim", "setpts", "settb", "setsar", "concat",
                          "loop", "format", "fps", "gblur", "noise", "hflip", "vflip", "transpose", "null", "copy"})
_VALUE = re.compile(r"[A-Za-z0-9_.#+*/()-]+")
_ARG = re.compile(r"[A-Za-z0-9_.#+*/()=:-]*")
_LABEL = re.compile(r"(\[[A-Za-z0-9_]+\])*")
_MAX_SIDE = 16384


def pingpong(scale: str) -> str:
    """Filter graph playing the bundled clip's (`CLIP`) 132 frames forward then backward, forever, after `scale`
    (e.g. `crop=960:720,scale=352:288`)."""
    return (f"{scale}:flags=bicubic,split[f][b];"
            "[b]reverse,trim=start_frame=1:end_frame=131,setpts=PTS-STARTPTS[r];"
            "[f][r]concat=n=2:v=1:a=0,loop=loop=-1:size=262")


def read_small_text(path: str | os.PathLike[str], limit: int = 1 << 20) -> str:
    """A small UTF-8 file's text, reading at most `limit` bytes (a device or FIFO such as
    `/dev/zero` reports size 0 and never ends). `OSError`/`UnicodeDecodeError` pass through;
    `ValueError` when the file is larger than `limit`."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data.decode("utf-8")


def load_small_toml(path: str | os.PathLike[str], what: str, limit: int = 1 << 20) -> dict:
    """A small TOML file (recipe, calibration) as a dict, or `VideoInputError` naming the file;
    the message never quotes the file's content."""
    import tomllib

    try:
        text = read_small_text(path, limit)
    except OSError as exc:
        raise VideoInputError(path, f"cannot read {what}: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError:
        raise VideoInputError(path, f"cannot read {what}: not UTF-8 text") from None
    except ValueError as exc:
        raise VideoInputError(path, f"{what} {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise VideoInputError(path, f"not a TOML {what}: {exc}") from None


def sha256_of(path: str | os.PathLike[str]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def clip_path(name: str, where: str = "source.clip") -> Path:
    """The bundled clip `name`, checked against its recorded hash."""
    if name not in CLIPS:
        raise VideoInputError(where, f"unknown bundled clip {name!r} (known: {', '.join(sorted(CLIPS))})")
    file, digest = CLIPS[name]
    p = CLIP_DIR / file
    if not p.is_file():
        raise VideoInputError(p, "bundled clip is missing")
    if sha256_of(p) != digest:
        raise VideoInputError(p, "bundled clip does not have its recorded SHA-256")
    return p


def check_filters(chain: str, where: str) -> str:
    """`chain` if it is a filter chain of `SAFE_FILTERS` without quoting, else `VideoInputError`."""
    if not chain:
        return chain
    if len(chain) > 4000:
        raise VideoInputError(where, "filter chain longer than 4000 characters")
    for part in re.split(r"[,;]", chain):
        m = re.fullmatch(r"((?:\[[A-Za-z0-9_]+\])*)([a-z0-9_]+)(?:=([^\[\]]*))?((?:\[[A-Za-z0-9_]+\])*)", part)
        if not m:
            raise VideoInputError(where, f"cannot read filter {part[:40]!r} (labels, a name and key=value options only)")
        name, args = m.group(2), m.group(3) or ""
        if name not in SAFE_FILTERS:
            raise VideoInputError(where, f"filter {name!r} is not allowed (allowed: {', '.join(sorted(SAFE_FILTERS))})")
        if not _ARG.fullmatch(args):
            raise VideoInputError(where, f"filter {name!r}: options may use only letters, digits and _.#+*/()=:-")
    return chain


def parse_lavfi(graph: str, where: str) -> tuple[str, dict[str, str]]:
    """`generator=k=v:k=v` → (generator, params), checked."""
    name, _, rest = graph.partition("=")
    if name not in GENERATORS:
        raise VideoInputError(where, f"lavfi source must be one test source ({', '.join(sorted(GENERATORS))}) "
                                     f"with key=value options, got {graph[:40]!r}")
    params: dict[str, str] = {}
    for item in filter(None, rest.split(":")):
        k, eq, v = item.partition("=")
        if not eq:
            raise VideoInputError(where, f"lavfi {name}: option {item[:30]!r} must be key=value")
        params[k] = v
    _check_params(name, params, where)
    return name, params


def _check_params(gen: str, params: dict, where: str) -> None:
    if not isinstance(params, dict):
        raise VideoInputError(where, "params must be a table of key = value")
    for k, v in params.items():
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", str(k)):
            raise VideoInputError(where, f"lavfi {gen}: bad option name {str(k)[:30]!r}")
        if k in _FILE_OPTIONS:
            raise VideoInputError(where, f"lavfi {gen}: option {k!r} reads a file and is not allowed")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)) or not _VALUE.fullmatch(str(v)):
            raise VideoInputError(where, f"lavfi {gen}: option {k} must be a plain value (letters, digits, _.#+*/()-)")


@dataclass
class SourceSpec:
    """A source from the fixed vocabulary (see the module doc). Build with `load_source` or
    `source_from_input`; `check()` validates every value."""

    kind: str
    width: int
    height: int
    fps: float
    retime: bool = False
    start_s: float = 0.0
    filters: str = ""
    clip: str = ""  # kind "clip"
    path: str = ""  # kind "file": relative to the recipe's folder, or absolute
    sha256: str = ""  # kind "file"
    generator: str = ""  # kind "lavfi"
    params: dict = field(default_factory=dict)  # kind "lavfi"
    seed: int = 0  # kind "hd_stand_in"

    def check(self, where: str = "source") -> SourceSpec:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise VideoInputError(where, f"kind must be one of {', '.join(KINDS)}, got {str(self.kind)[:30]!r}")
        for key in ("width", "height"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or not 2 <= v <= _MAX_SIDE or v % 2:
                raise VideoInputError(f"{where}.{key}", f"must be an even whole number of pixels in 2..{_MAX_SIDE}, got {v!r}")
        if isinstance(self.fps, bool) or not isinstance(self.fps, (int, float)) or not (0 < self.fps <= 1000):
            raise VideoInputError(f"{where}.fps", f"must be a number in (0, 1000], got {self.fps!r}")
        if not isinstance(self.retime, bool):
            raise VideoInputError(f"{where}.retime", "must be true or false")
        if (isinstance(self.start_s, bool) or not isinstance(self.start_s, (int, float)) or not math.isfinite(self.start_s)
                or self.start_s < 0):
            raise VideoInputError(f"{where}.start_s", f"must be a finite number ≥ 0, got {self.start_s!r}")
        if self.start_s and self.kind not in ("clip", "file"):
            raise VideoInputError(f"{where}.start_s", "only a file or clip can be seeked")
        if not isinstance(self.filters, str):
            raise VideoInputError(f"{where}.filters", "must be a string")
        check_filters(self.filters, f"{where}.filters")
        if self.kind == "clip":
            if not isinstance(self.clip, str) or self.clip not in CLIPS:
                raise VideoInputError(f"{where}.clip", f"unknown bundled clip {str(self.clip)[:30]!r} (known: {', '.join(sorted(CLIPS))})")
        elif self.kind == "file":
            if not isinstance(self.path, str) or not self.path or "\0" in self.path:
                raise VideoInputError(f"{where}.path", "must name a file")
            if not isinstance(self.sha256, str) or not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
                raise VideoInputError(f"{where}.sha256", "must be the file's SHA-256 (64 hex digits)")
        elif self.kind == "lavfi":
            if not isinstance(self.generator, str) or self.generator not in GENERATORS:
                raise VideoInputError(f"{where}.generator", f"must be one of {', '.join(sorted(GENERATORS))}")
            _check_params(self.generator, self.params, f"{where}.params")
        elif self.kind == "hd_stand_in":
            if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
                raise VideoInputError(f"{where}.seed", "must be a whole number ≥ 0")
        return self

    def as_dict(self) -> dict:
        out: dict = {"kind": self.kind}
        if self.kind == "clip":
            out["clip"] = self.clip
        elif self.kind == "file":
            out |= {"path": self.path, "sha256": self.sha256}
        elif self.kind == "lavfi":
            out |= {"generator": self.generator, "params": dict(self.params)}
        else:
            out["seed"] = self.seed
        out |= {"width": self.width, "height": self.height, "fps": float(self.fps), "retime": self.retime}
        if self.start_s:
            out["start_s"] = float(self.start_s)
        if self.filters:
            out["filters"] = self.filters
        return out

    def resolve_file(self, base: Path | None, search_dirs: list[Path] | tuple = ()) -> Path:
        """The file of a `file` source: `path` from `base`, else by name along the search path,
        the first with the recorded SHA-256."""
        p = Path(self.path)
        candidates = [p if p.is_absolute() or base is None else base / p]
        env = os.environ.get("QOELAB_SOURCE_PATH", "")
        for d in [*search_dirs, *(Path(x) for x in env.split(os.pathsep) if x)]:
            candidates.append(Path(d) / p.name)
        for c in candidates:
            if c.is_file() and sha256_of(c) == self.sha256:
                return c.resolve()
        raise VideoInputError(self.path, "source file not found with its recorded SHA-256 beside the recipe or in the "
                                         "search path (--source-dir, QOELAB_SOURCE_PATH)")

    def input_args(self, base: Path | None = None, search_dirs: list[Path] | tuple = ()) -> list[str]:
        """ffmpeg input options, `-i`, and the filter chain giving the source at the coded size
        and rate. `base` is the folder relative `file` paths start from."""
        self.check()
        if self.kind == "lavfi":
            opts = ":".join(f"{k}={v}" for k, v in self.params.items())
            args = ["-f", "lavfi", "-i", self.generator + (f"={opts}" if opts else "")]
        elif self.kind == "hd_stand_in":
            from .stand_in import hd_sources

            clip = clip_path("bigbuckbunny")
            if not re.fullmatch(r"[A-Za-z0-9_./-]+", str(clip)):
                raise VideoInputError(clip, "the bundled clip's path has characters a filter graph cannot carry")
            args = ["-f", "lavfi", "-i", hd_sources(self.seed, clip=str(clip))[0]]
        else:
            f = clip_path(self.clip) if self.kind == "clip" else self.resolve_file(base, search_dirs)
            args = (["-ss", f"{self.start_s:g}"] if self.start_s else []) + ["-i", f"file:{f}"]
        chain = [self.filters] if self.filters else []
        chain.append(f"setpts=N/({self.fps:g}*TB)" if self.retime else f"fps={self.fps:g}")
        chain.append(f"scale={self.width}:{self.height}:flags=bicubic,format=yuv420p")
        return args + ["-vf", ",".join(chain), "-r", f"{self.fps:g}"]


def source_from_input(text: str, *, width: int, height: int, fps: float, retime: bool, start_s: float,
                      filters: str, base: Path) -> SourceSpec:
    """The spec of `video encode INPUT`: `lavfi:<generator>=k=v:...`, a bundled clip's file, or a
    file (recorded relative to `base`, the folder the recipe is written to)."""
    common: dict[str, Any] = dict(width=width, height=height, fps=fps, retime=retime, start_s=start_s, filters=filters)
    if text.startswith("lavfi:"):
        gen, params = parse_lavfi(text[len("lavfi:"):], "input")
        return SourceSpec("lavfi", generator=gen, params=params, **common).check("input")
    p = Path(text)
    if not p.is_file():
        raise VideoInputError(text, "no such video file")
    for name, (file, _) in CLIPS.items():
        if p.resolve() == (CLIP_DIR / file).resolve():
            return SourceSpec("clip", clip=name, **common).check("input")
    rel = os.path.relpath(p.resolve(), base.resolve())
    return SourceSpec("file", path=rel, sha256=sha256_of(p), **common).check("input")


_SPEC_KEYS = {"kind", "width", "height", "fps", "retime", "start_s", "filters", "clip", "path", "sha256",
              "generator", "params", "seed"}


def load_source(recipe: dict, recipe_path: str | os.PathLike[str]) -> SourceSpec:
    """The checked `[source]` of a parsed recipe. Recipes that carry raw ffmpeg arguments
    (`source.ffmpeg_input_args`, written before this format) are refused."""
    src = recipe.get("source")
    if not isinstance(src, dict):
        raise VideoInputError(recipe_path, "source: missing table")
    if "ffmpeg_input_args" in src:
        raise VideoInputError(recipe_path, "source.ffmpeg_input_args: raw ffmpeg arguments are not accepted (a "
                                           "recipe names its source by kind; `qoelab video migrate-recipe` converts "
                                           "a recipe qoelab wrote)")
    unknown = sorted(set(src) - _SPEC_KEYS)
    if unknown:
        raise VideoInputError(recipe_path, f"source.{unknown[0]}: unknown key")
    for key in ("kind", "width", "height", "fps"):
        if key not in src:
            raise VideoInputError(recipe_path, f"source.{key}: missing")
    spec = SourceSpec(**src)
    try:
        return spec.check("source")
    except VideoInputError as err:
        raise VideoInputError(recipe_path, f"{err.path}: {err.reason}") from None


_TAIL = re.compile(r"(?:(?P<pre>.*),)?(?:setpts=N/\((?P<rt>[0-9.]+)\*TB\)|fps=(?P<fps>[0-9.]+)),"
                   r"scale=(?P<w>\d+):(?P<h>\d+):flags=bicubic,format=yuv420p")


def migrate_legacy_source(recipe: dict, recipe_path: str | os.PathLike[str]) -> SourceSpec:
    """The `[source]` of a recipe written before the vocabulary, from its raw
    `ffmpeg_input_args`, if and only if they have one of the two shapes `encode` used to write
    (`[-ss S] -i FILE -vf CHAIN -r FPS` or `-f lavfi -i GENERATOR -vf CHAIN -r FPS`) and every
    part passes the same checks as a new recipe. The file is hashed now (the legacy format had no
    hash), so migrate only bundles you trust. Anything else is refused."""
    p = Path(recipe_path)
    raw = recipe.get("source")
    src: dict[str, Any] = raw if isinstance(raw, dict) else {}
    args = src.get("ffmpeg_input_args")
    where = "source.ffmpeg_input_args"
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise VideoInputError(p, f"{where}: missing or not a list of strings: nothing to migrate")
    a = list(args)
    start_s, lavfi = 0.0, False
    if a[:2] == ["-f", "lavfi"]:
        lavfi, a = True, a[2:]
    elif a[:1] == ["-ss"] and len(a) > 1:
        try:
            start_s = float(a[1])
        except ValueError:
            raise VideoInputError(p, f"{where}: -ss needs a number") from None
        a = a[2:]
    if len(a) != 6 or a[0] != "-i" or a[2] != "-vf" or a[4] != "-r":
        raise VideoInputError(p, f"{where}: not a shape qoelab wrote ([-ss S] -i INPUT -vf CHAIN -r FPS); refused")
    m = _TAIL.fullmatch(a[3])
    if not m:
        raise VideoInputError(p, f"{where}: the -vf chain does not end as qoelab wrote it; refused")
    fps = float(m.group("rt") or m.group("fps"))
    if f"{fps:g}" != a[5]:
        raise VideoInputError(p, f"{where}: -r {a[5][:20]!r} differs from the chain's rate {fps:g}; refused")
    common: dict[str, Any] = dict(width=int(m.group("w")), height=int(m.group("h")), fps=fps,
                                  retime=m.group("rt") is not None, start_s=start_s, filters=m.group("pre") or "")
    if lavfi:
        gen, params = parse_lavfi(a[1], f"{p}: {where}")
        return SourceSpec("lavfi", generator=gen, params=params, **common).check(f"{p}: source")
    f = Path(a[1]) if Path(a[1]).is_absolute() else p.parent / a[1]
    if not f.is_file():
        raise VideoInputError(p, f"{where}: the source file {a[1][:80]!r} is not there to hash")
    for name, (file, _) in CLIPS.items():
        if f.resolve() == (CLIP_DIR / file).resolve():
            return SourceSpec("clip", clip=name, **common).check(f"{p}: source")
    rel = os.path.relpath(f.resolve(), p.parent.resolve())
    return SourceSpec("file", path=rel, sha256=sha256_of(f), **common).check(f"{p}: source")
