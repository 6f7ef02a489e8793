"""The MPEG-2 ladder of the symbiotic transcoder (TCP Interactive paper, Sec. 3.1.2): one source
encoded by ffmpeg's `mpeg2video` at several rates, with per-frame sizes and per-frame PSNR-Y/U/V
against the source for every rung.

The paper's stream is "MPEG-2 ISO/IEC 13818-2 broadcast DTV (704x480) ... 2 Mbps at main level
profile", re-encoded on line by a full-logic transcoder. We replace the on-line re-encode with a
ladder: every rung is a full single-pass encode of the same source (ffmpeg's single-pass
rate control: a per-picture quantiser from the picture's predicted complexity and the bits spent
so far, corrected by the VBV fullness; in the spirit of TM-5's step 1–2, not its exact algorithm), with closed GOPs of N = 15, M = 2 at the same frames
in every rung, so a switch between rungs at a GOP boundary decodes. A transcoder that changes its
target rate at a GOP boundary then sends the frames of the rung whose rate fits, and a frame's
quality is the rung's PSNR of that frame (`docs/models/transcoder.md`).

Source: the bundled Big Buck Bunny clip ping-pong looped (as the other bundles), its 16:9 picture
squeezed into 704x480 as 16:9 SD DTV stores it, at 30 fps (ATSC allows 30 and 29.97 Hz for
704x480; 30 keeps frame times at whole multiples of 1/30 s), 60 s = 1800 frames = 120 GOPs of
0.5 s. Rate control per rung: `-b:v R -maxrate R -bufsize 1835008` (MP@ML's VBV, ISO/IEC 13818-2
Table 8-13). GOP: broadcast MPEG-2 uses N = 15, M = 3, but ffmpeg's closed GOPs with M = 3 have
3k + 1 frames (N = 15 comes out as 13), so we keep N = 15 (0.5 s) and take M = 2 (one B picture
between anchors). Rates: 2.0 to 0.5 Mbit/s; below about 0.5 Mbit/s ffmpeg's mpeg2video saturates at
its largest quantiser on this content (targets of 0.45, 0.35 and 0.25 Mbit/s all came out at
0.50 Mbit/s), so the bottom rung is 0.5 Mbit/s. The back-off factors 0.35, 0.55 and 0.75 from
2 Mbit/s land on distinct rungs (0.65, 1.1, 1.5).

Bundled files (the bitstreams are not kept):

- `<name>.frames.csv.gz`: `rung,target_bps,frame,display,type,size_bytes,psnr_y,psnr_u,psnr_v`,
  one row per rung and decode-order frame (`frame`), with its display index, picture type
  (I/P/B), coded size (all its start-code units: sequence and GOP headers go with the picture
  they precede) and the PSNR of its decoded picture against the source picture it shows.
- `<name>.recipe.toml`: commands, encoder version, timings and `[expected]` statistics.
- `<name>.source.csv.gz`: `display,var_y,var_u,var_v`, each source picture's variance per plane
  (population variance of its samples, as the MPEG Software Simulation Group's `mpeg2encode`
  computes it in `stats.c`, `calcSNR1`), so that a frame's variance-normalised SNR, the SNR that
  encoder prints (`10 log10(variance / MSE)`), follows from its PSNR without the pictures:
  :func:`snr_offset_db` (issue 38 item 6).

Rebuild (from the repository root): `python -m qoelab.video.sources.bundle mpeg2_ladder`.
"""

from __future__ import annotations

import gzip
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from ..errors import VideoInputError
from ..tools import ffmpeg_version, run_ffmpeg
from ..traces.mpeg2 import GOP_HEADER, group_pictures, parse_mpeg2_units, temporal_references
from .encode import write_recipe

__all__ = ["DEFAULT_RATES_BPS", "LADDER_COLUMNS", "SOURCE_COLUMNS", "build_mpeg2_ladder", "read_ladder", "frame_quality",
           "read_source_variance", "snr_offset_db", "source_variance", "write_source_variance"]

DEFAULT_RATES_BPS = (2_000_000, 1_500_000, 1_100_000, 800_000, 650_000, 500_000)
LADDER_COLUMNS = ("rung", "target_bps", "frame", "display", "type", "size_bytes", "psnr_y", "psnr_u", "psnr_v")
SOURCE_COLUMNS = ("display", "var_y", "var_u", "var_v")
MPML_VBV_BITS = 1_835_008
WIDTH, HEIGHT, FPS, GOP, BFRAMES = 704, 480, 30, 15, 1


def _source(clip: Path, duration_s: float) -> tuple[list[str], str]:
    """ffmpeg input arguments and the filter graph of the source pictures."""
    from .source import pingpong

    graph = pingpong("scale=1280:720") + f",setpts=N/({FPS}*TB),scale={WIDTH}:{HEIGHT}:flags=bicubic,format=yuv420p"
    return ["-i", str(clip)], graph


def encode_args(src_in: list[str], graph: str, n: int, rate: int, threads: int, out: Path) -> list[str]:
    """ffmpeg arguments of one rung's encode (the recipe's command): `n` frames of the source
    through `graph` at `rate` bit/s into the elementary stream `out`."""
    return [*src_in, "-vf", graph, "-r", str(FPS), "-frames:v", str(n), "-an",
            "-c:v", "mpeg2video", "-profile:v", "main", "-level:v", "main",
            "-b:v", str(rate), "-maxrate", str(rate), "-bufsize", str(MPML_VBV_BITS),
            "-g", str(GOP), "-bf", str(BFRAMES), "-flags", "+cgop", "-sc_threshold", "1000000000",
            "-threads", str(threads), "-f", "mpeg2video", str(out)]


def _pictures(data: bytes) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per decode-order picture: coded size, display index, type."""
    units = parse_mpeg2_units(data)
    pics = group_pictures(units)
    refs = temporal_references(data, units)
    sizes, display, types = [], [], []
    gop_start, seen, k = 0, 0, 0
    for pic in pics:
        if any(units[i].nal_type == GOP_HEADER for i in pic):  # GOP header: temporal_reference restarts
            gop_start = seen
        sizes.append(sum(units[i].size for i in pic))
        display.append(gop_start + refs[k])
        types.append(next(units[i].slice_type for i in pic if units[i].vcl))
        k += 1
        seen += 1
    return np.asarray(sizes, np.int64), np.asarray(display, np.int64), types


_PSNR_LINE = re.compile(r"n:(\d+) .*psnr_y:(\S+) psnr_u:(\S+) psnr_v:(\S+)")


def _psnr_stats(path: Path, n: int) -> np.ndarray:
    """(n, 3) PSNR Y/U/V per display-order frame from ffmpeg's psnr stats file."""
    out = np.full((n, 3), np.nan)
    for ln in path.read_text().splitlines():
        m = _PSNR_LINE.search(ln)
        if m:
            i = int(m.group(1)) - 1
            if 0 <= i < n:
                out[i] = [100.0 if v == "inf" else float(v) for v in m.groups()[1:]]
    if np.isnan(out).any():
        raise VideoInputError(path, f"psnr stats: {int(np.isnan(out[:, 0]).sum())} of {n} frames missing")
    return out


def build_mpeg2_ladder(out: str | os.PathLike[str], *, duration_s: float = 60.0, rates_bps=DEFAULT_RATES_BPS,
                       name: str = "mpeg2_ladder", clip: Path | None = None, threads: int = 2) -> dict:
    from .encode import check_name
    from .source import CLIP

    check_name(name)
    if not (isinstance(duration_s, (int, float)) and 0 < duration_s <= 600 and (duration_s * FPS) % GOP == 0):
        raise VideoInputError("mpeg2_ladder.duration", f"must be in (0, 600] s and a whole number of {GOP}-frame GOPs")
    rates = sorted({int(r) for r in rates_bps}, reverse=True)
    if not rates or rates[-1] < 50_000 or rates[0] > 15_000_000:
        raise VideoInputError("mpeg2_ladder.rates", "must be rates in [50 kbit/s, 15 Mbit/s] (MP@ML)")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VideoInputError(out, f"cannot create output folder: {exc.strerror}") from None
    clip = clip or CLIP
    try:
        clip = clip.relative_to(Path.cwd())
    except ValueError:
        pass
    n = int(round(duration_s * FPS))
    src_in, graph = _source(clip, duration_s)
    rows: list[str] = []
    rungs, commands, timings = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="qoelab-m2ladder-") as tmp:
        for k, rate in enumerate(rates):
            rid = f"r{k}_{rate // 1000}k"
            m2v = Path(tmp) / f"{rid}.m2v"
            cmd = encode_args(src_in, graph, n, rate, threads, m2v)
            t0 = time.perf_counter()
            run_ffmpeg(cmd, what=f"encoding {rid}", path=str(clip))
            enc_s = time.perf_counter() - t0
            commands[rid] = ["ffmpeg", *cmd[:-1], f"{rid}.m2v"]
            stats = Path(tmp) / f"{rid}.psnr"
            t0 = time.perf_counter()
            _run_psnr(m2v, src_in, graph, n, stats)
            timings[rid] = {"encode_s": round(enc_s, 2), "psnr_s": round(time.perf_counter() - t0, 2)}
            data = m2v.read_bytes()
            sizes, display, types = _pictures(data)
            if sizes.size != n or sorted(display.tolist()) != list(range(n)):
                raise VideoInputError(m2v, f"{sizes.size} pictures with display indices not 0..{n - 1}")
            psnr = _psnr_stats(stats, n)
            for f in range(n):
                if f % GOP == 0 and types[f] != "I":
                    raise VideoInputError(m2v, f"frame {f} starts a GOP but is {types[f]}")
                if display[f] // GOP != f // GOP:
                    raise VideoInputError(m2v, f"frame {f} is shown in another GOP (display {display[f]}): GOP not closed")
                y, u, v = psnr[display[f]]
                rows.append(f"{k},{rate},{f},{display[f]},{types[f]},{sizes[f]},{y:.2f},{u:.2f},{v:.2f}")
            rungs.append({"rung": k, "id": rid, "target_bps": rate, "total_bytes": int(sizes.sum()),
                          "mean_rate_bps": round(float(sizes.sum() * 8 * FPS / n), 1),
                          "mean_psnr_y": round(float(np.round(psnr[:, 0], 2).mean()), 3),
                          "mean_psnr_u": round(float(np.round(psnr[:, 1], 2).mean()), 3),
                          "mean_psnr_v": round(float(np.round(psnr[:, 2], 2).mean()), 3),
                          "i_frames": int(sum(t == "I" for t in types))})
    path = out / f"{name}.frames.csv.gz"
    body = ("\n".join([",".join(LADDER_COLUMNS), *rows]) + "\n").encode("ascii")
    path.write_bytes(gzip.compress(body, mtime=0))
    recipe = {
        "name": name,
        "kind": "mpeg2_ladder",
        "notes": "The symbiotic transcoder's ladder (TCP Interactive paper, Sec. 3.1.2: MPEG-2 MP@ML 704x480 at 2 Mbit/s): "
                 f"ffmpeg mpeg2video single-pass at {len(rates)} rates, closed GOPs N = {GOP}, M = {BFRAMES + 1} aligned "
                 f"across rungs, VBV {MPML_VBV_BITS} bits (MP@ML), maxrate = rate; {FPS} fps, "
                 f"{duration_s:g} s of Big Buck Bunny (CC BY 3.0) ping-pong looped, 16:9 squeezed into 704x480. "
                 "Per-frame PSNR-Y/U/V of each rung's decode against the source (ffmpeg psnr filter).",
        "source": {"kind": "clip", "clip": "bigbuckbunny", "width": WIDTH, "height": HEIGHT, "fps": float(FPS),
                   "retime": True, "filters": graph},
        "config": {"duration_s": float(duration_s), "fps": FPS, "gop": GOP, "bframes": BFRAMES, "closed_gop": True,
                   "vbv_bits": MPML_VBV_BITS, "rates_bps": rates, "threads": threads},
        "encoder": {"ffmpeg": ffmpeg_version(), "codec_library": f"mpeg2video (ffmpeg {ffmpeg_version()})"},
        "commands": commands,
        "timing": {"per_rung": timings, "cpus": os.cpu_count()},
        "files": {"frames": path.name},
        "expected": {"frames": n, "gops": n // GOP, "rungs": rungs},
    }
    write_recipe(out / f"{name}.recipe.toml", recipe)
    source = write_source_variance(out, name, clip=clip, duration_s=duration_s)
    return {"frames": path, "rungs": rungs, "source": source}


def source_variance(clip: Path, duration_s: float) -> np.ndarray:
    """(n, 3): each source picture's population variance per plane Y/U/V (the ladder's source
    graph, 4:2:0), from ffmpeg's raw pictures streamed one at a time."""
    import subprocess

    from ..tools import error_line, ffmpeg_exe, guard_inputs

    n = int(round(duration_s * FPS))
    src_in, graph = _source(clip, duration_s)
    args = [*src_in, "-vf", graph, "-r", str(FPS), "-frames:v", str(n), "-an", "-f", "rawvideo", "-pix_fmt", "yuv420p",
            "-"]
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *guard_inputs(args)]
    ysz, csz = WIDTH * HEIGHT, (WIDTH // 2) * (HEIGHT // 2)
    out = np.empty((n, 3))
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        k = 0
        while k < n:
            buf = proc.stdout.read(ysz + 2 * csz)
            if len(buf) < ysz + 2 * csz:
                break
            pic = np.frombuffer(buf, np.uint8).astype(np.float64)
            out[k] = [pic[:ysz].var(), pic[ysz:ysz + csz].var(), pic[ysz + csz:].var()]
            k += 1
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        rc = proc.wait()
    if rc != 0 or k != n:
        raise VideoInputError(clip, f"source pictures: {k} of {n} read ({error_line(err, rc)})")
    return out


def write_source_variance(out: str | os.PathLike[str], name: str = "mpeg2_ladder", *, clip: Path | None = None,
                          duration_s: float = 60.0) -> Path:
    """Writes ``<name>.source.csv.gz`` (module doc) into ``out`` and returns its path."""
    from .source import CLIP

    var = source_variance(clip or CLIP, duration_s)
    rows = [f"{i},{y:.4f},{u:.4f},{v:.4f}" for i, (y, u, v) in enumerate(var)]
    path = Path(out) / f"{name}.source.csv.gz"
    path.write_bytes(gzip.compress(("\n".join([",".join(SOURCE_COLUMNS), *rows]) + "\n").encode("ascii"), mtime=0))
    return path


def read_source_variance(path: str | os.PathLike[str], n: int) -> np.ndarray:
    """(n, 3) variances Y/U/V by display index from a ``*.source.csv.gz`` of ``n`` pictures."""
    p = Path(path)
    lines = _gzip_lines(p, "source variances", 16 << 20)
    if not lines or tuple(lines[0].split(",")) != SOURCE_COLUMNS:
        raise VideoInputError(p, f"line 1: header must be {','.join(SOURCE_COLUMNS)}")
    if len(lines) - 1 != n:
        raise VideoInputError(p, f"{len(lines) - 1} pictures, the ladder has {n}")
    out = np.empty((n, 3))
    for i, ln in enumerate(lines[1:]):
        f = ln.split(",")
        try:
            if len(f) != 4 or int(f[0]) != i:
                raise ValueError
            out[i] = [float(x) for x in f[1:]]
        except ValueError:
            raise VideoInputError(p, f"line {i + 2}: expected {i},var_y,var_u,var_v") from None
    if not (np.isfinite(out).all() and (out > 0).all()):
        raise VideoInputError(p, "variances must be finite and positive")
    return out


def snr_offset_db(variance: np.ndarray) -> np.ndarray:
    """What turns a PSNR into the variance-normalised SNR of ``mpeg2encode``: SNR = 10 log10(var /
    MSE) = PSNR + 10 log10(var / 255²), per picture and plane."""
    return 10.0 * np.log10(np.asarray(variance, np.float64) / 255.0**2)


def _run_psnr(m2v: Path, src_in: list[str], graph: str, n: int, stats: Path) -> None:
    # The stats file is named relative to ffmpeg's working folder (the temporary folder), so no
    # path with filter-graph metacharacters reaches the graph.
    import subprocess

    from ..tools import error_line, ffmpeg_exe, guard_inputs

    args = ["-i", m2v.name, *src_in[:1], str(Path(src_in[1]).resolve()), "-filter_complex",
            f"[1:v]{graph},trim=end_frame={n}[ref];[0:v][ref]psnr=stats_file={stats.name}", "-f", "null", "-"]
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", "-y", *guard_inputs(args)]
    proc = subprocess.run(cmd, cwd=m2v.parent, capture_output=True, check=False)
    if proc.returncode != 0:
        raise VideoInputError(m2v, f"PSNR failed: {error_line(proc.stderr.decode(errors='replace'), proc.returncode)}")


def _gzip_lines(p: Path, what: str, limit: int) -> list[str]:
    """The lines of the gzipped ASCII file ``p``, at most ``limit`` bytes before and after
    decompression (a clear error naming the file otherwise)."""
    import io

    from qoelab.paths import read_file

    raw = read_file(p, what, limit, VideoInputError)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
            data = gz.read(limit + 1)
        if len(data) > limit:
            raise VideoInputError(p, f"{what} is larger than {limit >> 20} MiB (decompressed)")
        return data.decode("ascii").splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise VideoInputError(p, f"cannot read {what}: {type(exc).__name__}") from None


def read_ladder(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Columns of a `*.frames.csv.gz` ladder (rows by rung, then decode-order frame)."""
    p = Path(path)
    lines = _gzip_lines(p, "ladder", 64 << 20)  # the simulator's limit, decompressed (`app::transcoder`)
    if not lines or tuple(lines[0].split(",")) != LADDER_COLUMNS:
        raise VideoInputError(p, f"line 1: header must be {','.join(LADDER_COLUMNS)}")
    cols: dict[str, list] = {c: [] for c in LADDER_COLUMNS}
    for i, ln in enumerate(lines[1:], start=2):
        f = ln.split(",")
        if len(f) != len(LADDER_COLUMNS):
            raise VideoInputError(p, f"line {i}: expected {len(LADDER_COLUMNS)} fields")
        try:
            for c, v in zip(LADDER_COLUMNS, f):
                cols[c].append(v if c == "type" else float(v) if c.startswith("psnr") else int(v))
        except ValueError:
            raise VideoInputError(p, f"line {i}: malformed number") from None
    return {c: np.asarray(v) for c, v in cols.items()}


def frame_quality(ladder: dict[str, np.ndarray], rung, frame) -> dict[str, np.ndarray]:
    """Per sent frame, what the ladder says of it: `display` index, `size_bytes` and
    `psnr_y/u/v`, for decode-order frames `frame` sent from rungs `rung` (arrays of equal length,
    e.g. the transcoder's `tc_frame` and `tc_rung` probe values)."""
    r = np.asarray(rung, dtype=np.int64)
    f = np.asarray(frame, dtype=np.int64)
    n = int(ladder["frame"].max()) + 1
    rungs = int(ladder["rung"].max()) + 1
    if r.shape != f.shape:
        raise VideoInputError("frame_quality", "rung and frame must have the same length")
    if r.size and (r.min() < 0 or r.max() >= rungs or f.min() < 0 or f.max() >= n):
        raise VideoInputError("frame_quality", f"rung must be in 0..{rungs - 1} and frame in 0..{n - 1}")
    i = r * n + f  # rows are by rung, then decode-order frame (checked by read_ladder's callers)
    return {c: ladder[c][i] for c in ("display", "size_bytes", "psnr_y", "psnr_u", "psnr_v")}
