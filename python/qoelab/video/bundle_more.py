"""Recipes for the larger bundled traces: HD (TFD paper), VBR video + audio (SQF paper), DASH.

See `bundle.py` for how to run them. They are CPU heavy (minutes on two cores); timings are
recorded in each recipe and in docs/performance.md.
"""

from __future__ import annotations

import random
from pathlib import Path

from .encode import EncodeConfig, EncodeResult, encode

__all__ = ["hd_sources", "hd_config", "build_hd", "sqf_video_config", "build_sqf", "build_dash"]

HD_CLIP_S = 19
HD_FPS = 30
HD_SEED = 152


def hd_sources(seed: int = HD_SEED) -> list[str]:
    """Eight 19-s 1080p30 clips of differing coding complexity, in a random order and from random
    start points (seeded), as lavfi sources. The TFD paper used eight 19-s natural HD clips; these
    are synthetic so that the recipe needs no large input files."""
    rng = random.Random(seed)
    s = "s=1920x1080:r=30"
    n = HD_CLIP_S * HD_FPS

    def start() -> int:
        return rng.randrange(0, 10 * HD_FPS)

    clips = {
        # Low complexity: static bars plus a moving counter.
        "testsrc2": lambda: f"testsrc2={s},trim=start_frame={start()}",
        # High spatial detail, slow zoom from a random depth.
        "mandelbrot": lambda: f"mandelbrot={s}:start_scale={rng.uniform(0.5, 3.0):.3f}:end_scale=0.3",
        # High entropy, fast-changing.
        "life": lambda: f"life={s}:mold=10:ratio=0.1:life_color=#00ff00:death_color=#aa2222:seed={rng.randrange(1 << 30)}",
        "cellauto": lambda: f"cellauto={s}:rule=110:seed={rng.randrange(1 << 30)}",
        # Smooth, very low complexity.
        "gradients": lambda: f"gradients={s}:speed=0.02:seed={rng.randrange(1 << 30)}",
        # Moving high-frequency rings.
        "zoneplate": lambda: f"zoneplate={s}:ku=60:kv=60:kt=8,trim=start_frame={start()}",
        "sierpinski": lambda: f"sierpinski={s}:type=carpet:seed={rng.randrange(1 << 30)}",
        # Static content under temporal film-grain noise.
        "noisybars": lambda: f"smptehdbars={s},noise=alls=12:allf=t+u:all_seed={rng.randrange(1 << 30)}",
    }
    order = list(clips)
    rng.shuffle(order)
    parts = []
    for i, name in enumerate(order):
        parts.append(f"{clips[name]()},trim=end_frame={n},setpts=PTS-STARTPTS,format=yuv420p,setsar=1[c{i}]")
    graph = ";".join(parts) + ";" + "".join(f"[c{i}]" for i in range(len(order))) + f"concat=n={len(order)}:v=1:a=0"
    return [graph, ",".join(order)]


def hd_config() -> EncodeConfig:
    graph, _ = hd_sources()
    return EncodeConfig(input=f"lavfi:{graph}", width=1920, height=1080, fps=30.0, frames=8 * HD_CLIP_S * HD_FPS,
                        codec="h264", gop=30, bframes=2, refs=1, bitrate_bps=40_000_000,
                        slices=8, preset="superfast", threads=2)


def build_hd(out: Path) -> EncodeResult:
    graph, order = hd_sources()
    return encode(hd_config(), out, "hd1080_40M", keep_bitstream=False, gzip_trace=True,
                  notes="1920x1080, 30 fps, H.264 ABR 40 Mbit/s mean (no VBV cap: complex clips peak far above), GOP 30 IBBP, "
                        f"8 slices per picture; eight synthetic 19-s clips ({order}) in seeded random order "
                        "from random start points, 152 s (the TFD paper's setting with synthetic content).")


def sqf_video_config(clip: Path) -> EncodeConfig:
    from .bundle import pingpong

    return EncodeConfig(input=str(clip), width=1280, height=720, fps=30.0, frames=1800,
                        filters=pingpong("scale=1280:720"), retime=True, codec="h264",
                        gop=60, bframes=2, refs=1, bitrate_bps=5_000_000, maxrate_bps=10_000_000,
                        bufsize_bits=10_000_000, slice_max_bytes=1400, preset="veryfast", threads=2)


def build_sqf(out: Path):
    from .audio import build_audio_trace
    from .bundle import CLIP

    try:
        clip = CLIP.relative_to(Path.cwd())
    except ValueError:
        clip = CLIP
    video = encode(sqf_video_config(clip), out, "sqf_video_5M", keep_bitstream=False, gzip_trace=True,
                   notes="VBR video of 5 Mbit/s mean (SQF paper): 1280x720, 30 fps, H.264 ABR 5 Mbit/s with "
                         "VBV 10 Mbit/s, GOP 60, 1400-byte slices, 60 s of Big Buck Bunny ping-pong looped.")
    audio = build_audio_trace(out, "sqf_audio_64k", bitrate_bps=64_000, duration_s=60.0, encoder_bitrate_bps=74_000)
    return video, audio


def build_dash(out: Path):
    from .dash import build_ladder

    return build_ladder(out)
