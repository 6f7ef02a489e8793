"""An HEVC DASH ladder: per-segment size trace and MPDs, in the manner of the UHD HEVC-DASH dataset
used by the MPTCP paper (H.265, 720p/1080p/2160p, 2-20 Mbit/s, segments of 2, 4, 6, 10, 20 s).

Each representation is encoded once with libx265 using closed GOPs of `gop_s` seconds (no
scene-cut), so that every multiple of `gop_s` is a stream access point. A segmentation of length
L then groups whole GOPs: segment k holds the frames in `[k·L, (k+1)·L)`. The dataset encoded
each segment length separately (GOP = segment), which costs slightly fewer bits at long segments;
we trade that for one encode per representation. Media segments are not kept, only their sizes:

- `<name>.segments.csv`: `representation,codec,width,height,target_bps,segment_s,segment,start_s,duration_s,size_bytes`
- `<name>_<L>s.mpd`: a static MPD per segment length (SegmentTemplate, `bandwidth` = the
  representation's peak segment rate at that length);
- `<name>.recipe.toml`: commands, encoder version, timings and expected statistics.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import av
import numpy as np

from ..errors import VideoInputError
from ..tools import ffmpeg_version, run_ffmpeg
from .encode import write_recipe
from .source import pingpong

__all__ = ["Rendition", "DEFAULT_LADDER", "SEGMENT_LENGTHS_S", "BUNDLED_DURATION_S", "build_ladder", "read_segments"]


@dataclass(frozen=True)
class Rendition:
    id: str
    width: int
    height: int
    bitrate_bps: int


DEFAULT_LADDER = (
    Rendition("720p_2M", 1280, 720, 2_000_000),
    Rendition("1080p_6M", 1920, 1080, 6_000_000),
    Rendition("2160p_20M", 3840, 2160, 20_000_000),
)
SEGMENT_LENGTHS_S = (2, 4, 6, 10, 20)
# The bundled ladder's content length: three minutes, a multiple of every segment length, so
# that every segmentation ends on a whole segment.
BUNDLED_DURATION_S = 180.0
SEGMENT_COLUMNS = ("representation", "codec", "width", "height", "target_bps", "segment_s", "segment",
                   "start_s", "duration_s", "size_bytes")


def _source_args(duration_s: float, fps: float) -> list[str]:
    """The bundled Big Buck Bunny clip, ping-pong looped and retimed to `fps`."""
    from .source import CLIP

    try:
        clip = CLIP.relative_to(Path.cwd())
    except ValueError:
        clip = CLIP
    graph = pingpong("scale=1280:720") + f",setpts=N/({fps:g}*TB)"
    return ["-i", str(clip), "-vf", graph, "-r", f"{fps:g}", "-t", f"{duration_s:g}"]


def _frame_sizes(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per decode-order packet: size and keyframe flag."""
    sizes, keys = [], []
    with av.open(str(path)) as c:
        for pkt in c.demux(c.streams.video[0]):
            if pkt.size:
                sizes.append(pkt.size)
                keys.append(pkt.is_keyframe)
    return np.asarray(sizes, np.int64), np.asarray(keys, bool)


def build_ladder(out: str | os.PathLike[str], *, duration_s: float = BUNDLED_DURATION_S, fps: float = 24.0, gop_s: float = 2.0,
                 ladder=DEFAULT_LADDER, segment_lengths_s=SEGMENT_LENGTHS_S, name: str = "dash_hevc",
                 preset: str = "ultrafast", threads: int = 2) -> dict:
    from .encode import PRESETS, check_name

    for key, v, hi in (("duration", duration_s, 3600.0), ("fps", fps, 240.0), ("gop_s", gop_s, 60.0)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v <= hi:
            raise VideoInputError(f"dash.{key}", f"must be a number in (0, {hi:g}], got {v!r}")
    if duration_s * fps < 1:
        raise VideoInputError("dash.duration", f"{duration_s:g} s at {fps:g} fps is less than one frame")
    if preset not in PRESETS:
        raise VideoInputError("dash.preset", f"must be one of {', '.join(PRESETS)}")
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 64:
        raise VideoInputError("dash.threads", f"must be a whole number in 1..64, got {threads!r}")
    check_name(name)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise VideoInputError(out, "output folder is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VideoInputError(out, f"cannot create output folder: {exc.strerror}") from None
    gop = int(round(gop_s * fps))
    if abs(gop - gop_s * fps) > 1e-9:
        raise VideoInputError("dash", f"GOP of {gop_s} s is not a whole number of frames at {fps} fps")
    for L in segment_lengths_s:
        if abs(L / gop_s - round(L / gop_s)) > 1e-9:
            raise VideoInputError("dash", f"segment length {L} s is not a multiple of the {gop_s}-s GOP")
    src = _source_args(duration_s, fps)
    n_frames = int(round(duration_s * fps))
    rows, reps, commands, timings = [], [], {}, {}
    with tempfile.TemporaryDirectory(prefix="qoelab-dash-") as tmp:
        for r in ladder:
            coded = Path(tmp) / f"{r.id}.hevc"
            params = ":".join([f"keyint={gop}", f"min-keyint={gop}", "scenecut=0", "open-gop=0", "bframes=3",
                               f"vbv-maxrate={r.bitrate_bps * 3 // 2000}", f"vbv-bufsize={r.bitrate_bps * 2 // 1000}",
                               f"pools={threads}", "log-level=error"])
            # The scaling joins the source's filter graph (one -vf per output).
            cmd = [*src[:3], src[3] + f",scale={r.width}:{r.height}:flags=bicubic,format=yuv420p", *src[4:],
                   "-an", "-c:v", "libx265", "-preset", preset, "-b:v", str(r.bitrate_bps), "-x265-params", params,
                   "-f", "hevc", str(coded)]
            t0 = time.perf_counter()
            run_ffmpeg(cmd, what=f"encoding {r.id}", path=str(src[1]))
            timings[r.id] = round(time.perf_counter() - t0, 2)
            commands[r.id] = ["ffmpeg", *cmd[:-1], f"{r.id}.hevc"]
            sizes, keys = _frame_sizes(coded)
            if sizes.size != n_frames:
                raise VideoInputError(coded, f"{sizes.size} frames, expected {n_frames}")
            version = _x265_version(coded)
            # Decode order differs from display order only inside a GOP, so GOP-aligned segment
            # boundaries fall at the same positions in both orders.
            for L in segment_lengths_s:
                per = int(round(L * fps))
                for k, start in enumerate(range(0, n_frames, per)):
                    if not keys[start]:
                        raise VideoInputError(coded, f"segment {k} of {L} s does not start at a keyframe")
                    end = min(start + per, n_frames)
                    rows.append((r.id, "hevc", r.width, r.height, r.bitrate_bps, L, k, start / fps,
                                 (end - start) / fps, int(sizes[start:end].sum())))
            reps.append({"id": r.id, "width": r.width, "height": r.height, "target_bps": r.bitrate_bps,
                         "total_bytes": int(sizes.sum()),
                         "mean_rate_bps": round(float(sizes.sum() * 8 / duration_s), 1),
                         "keyframes": int(keys.sum())})
    seg_path = out / f"{name}.segments.csv"
    lines = [",".join(SEGMENT_COLUMNS)] + [",".join(_fmt(v) for v in row) for row in rows]
    seg_path.write_text("\n".join(lines) + "\n", encoding="ascii")
    mpds = []
    for L in segment_lengths_s:
        mpd = out / f"{name}_{L}s.mpd"
        mpd.write_text(_mpd(rows, ladder, L, duration_s, fps), encoding="utf-8")
        mpds.append(mpd.name)
    recipe = {
        "name": name,
        "kind": "dash",
        "notes": "HEVC DASH ladder in the manner of the UHD HEVC-DASH dataset (MPTCP paper): one libx265 encode per "
                 f"representation with closed {gop_s:g}-s GOPs, segmented at {list(segment_lengths_s)} s; Big Buck Bunny "
                 "(CC BY 3.0) ping-pong looped and upscaled (soft content: rates at 2160p are easy to reach).",
        "source": {"kind": "clip", "clip": "bigbuckbunny", "width": 1280, "height": 720, "fps": float(fps),
                   "retime": True, "filters": pingpong("scale=1280:720")},
        "config": {"duration_s": duration_s, "fps": fps, "gop_s": gop_s, "preset": preset, "threads": threads,
                   "segment_lengths_s": list(segment_lengths_s)},
        "encoder": {"ffmpeg": ffmpeg_version(), "codec_library": version},
        "commands": commands,
        "timing": {"encode_s": timings, "cpus": os.cpu_count()},
        "files": {"segments": seg_path.name, "mpds": mpds},
        "expected": {"frames": n_frames, "representations": reps,
                     "segments_per_length": {str(L): math.ceil(duration_s / L) for L in segment_lengths_s}},
    }
    write_recipe(out / f"{name}.recipe.toml", recipe)
    return {"trace": seg_path, "mpds": mpds, "representations": reps, "segment_lengths_s": list(segment_lengths_s)}


def _fmt(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _x265_version(path: Path) -> str:
    import re

    with path.open("rb") as f:  # the SEI sits in the first access unit; the stream may be 100s of MB
        head = f.read(100_000)
    m = re.search(rb"x265 \(build \d+\) - [0-9A-Za-z.+_:-]+", head)
    return m.group(0).decode() if m else "x265 (version not found in SEI)"


def _iso_duration(s: float) -> str:
    return f"PT{s:.3f}S"


def _mpd(rows, ladder, L: float, duration_s: float, fps: float) -> str:
    peak: dict[str, int] = {}
    for rep, _, _, _, _, seg_s, _, _, dur, size in rows:
        if seg_s == L:
            peak[rep] = max(peak.get(rep, 0), int(math.ceil(size * 8 / dur)))
    reps = "\n".join(
        f'      <Representation id={quoteattr(r.id)} codecs="hvc1.1.6.L{150 if r.height > 1080 else 120}.90" '
        f'width="{r.width}" height="{r.height}" frameRate="{fps:g}" bandwidth="{peak[r.id]}"/>'
        for r in ladder)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by qoelab.video.sources.dash: media segments are not shipped; sizes are in the .segments.csv. -->
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011"
     type="static" mediaPresentationDuration="{_iso_duration(duration_s)}" minBufferTime="PT{2 * L:g}S">
  <Period id="0" start="PT0S">
    <AdaptationSet mimeType="video/mp4" segmentAlignment="true" startWithSAP="1">
      <SegmentTemplate timescale="1000" duration="{int(L * 1000)}" startNumber="0"
                       initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/seg_{L:g}s_$Number$.m4s"/>
{reps}
    </AdaptationSet>
  </Period>
</MPD>
"""


def read_segments(path: str | os.PathLike[str]) -> list[dict]:
    """Rows of a `*.segments.csv` as dicts (numbers converted)."""
    p = Path(path)
    lines = p.read_text(encoding="ascii").splitlines()
    if not lines or tuple(lines[0].split(",")) != SEGMENT_COLUMNS:
        raise VideoInputError(p, f"line 1: header must be {','.join(SEGMENT_COLUMNS)}")
    out = []
    for i, ln in enumerate(lines[1:], start=2):
        f = ln.split(",")
        if len(f) != len(SEGMENT_COLUMNS):
            raise VideoInputError(p, f"line {i}: expected {len(SEGMENT_COLUMNS)} fields")
        try:
            out.append({"representation": f[0], "codec": f[1], "width": int(f[2]), "height": int(f[3]),
                        "target_bps": int(f[4]), "segment_s": float(f[5]), "segment": int(f[6]),
                        "start_s": float(f[7]), "duration_s": float(f[8]), "size_bytes": int(f[9])})
        except ValueError:
            raise VideoInputError(p, f"line {i}: malformed number") from None
    return out
