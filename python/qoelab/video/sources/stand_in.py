"""The stand-in for the TFD paper's eight VQEG HDTV clips (source kind `"hd_stand_in"`), which
cannot be downloaded here: a seeded lavfi filter graph over synthetic sources and the bundled
clip. `source.py` builds its ffmpeg input; `bundle_more.py` encodes the `hd1080_40M` trace from it.
"""

from __future__ import annotations

import random

__all__ = ["HD_CLIP_S", "HD_FPS", "HD_SEED", "hd_sources"]

HD_CLIP_S = 19
HD_FPS = 30
HD_SEED = 152


def hd_sources(seed: int = HD_SEED, clip: str = "data/clips/bigbuckbunny.mp4") -> list[str]:
    """Eight 19-s 1080p30 clips standing in for the TFD paper's eight VQEG HDTV clips (Aspen,
    ControlledBurn, RedKayak, RushFieldCuts, SnowMnt, SpeedBag, TouchdownPass, WestWindEasy),
    which cannot be downloaded here. They are lavfi sources (plus the bundled Big Buck Bunny clip
    through `movie=`, a path relative to the repository root) in a random order and from random
    start points (seeded), chosen for a natural mix of coding complexity: camera-like pans and
    zooms over fine texture, organic motion, a cartoon, a smooth sky. Every clip carries
    temporal grain like a camera sensor's, so none codes near-losslessly at 40 Mbit/s.

    Returns the filter graph and the clip names in their order.
    """
    rng = random.Random(seed)
    s = "s=1920x1080:r=30"
    n = HD_CLIP_S * HD_FPS

    def start() -> int:
        return rng.randrange(0, 10 * HD_FPS)

    def grain(strength: int) -> str:
        return f"format=yuv420p,noise=alls={strength}:allf=t:all_seed={rng.randrange(1 << 30)}"

    def texture(w: int, h: int, colour: str, sigma: float) -> str:
        # One still picture of fine, colour-varying detail (foliage, snow, gravel), held.
        return (f"color=c={colour}:s={w}x{h}:r=30,format=yuv420p,"
                f"noise=c0s=70:c1s=18:c2s=18:all_seed={rng.randrange(1 << 30)},gblur=sigma={sigma},"
                "trim=end_frame=1,loop=loop=-1:size=1,setpts=N/(30*TB)")

    clips = {
        # Camera pan across a detailed texture (trees, a crowd: Aspen, RushFieldCuts).
        "pan": lambda: (f"{texture(3200, 1800, '#4f6b3a', 1.1)},"
                        f"crop=1920:1080:x='640+600*sin(2*PI*t/{rng.uniform(14, 22):.2f})':y='360+300*sin(2*PI*t/31)',"
                        f"{grain(5)}"),
        # Slow zoom into a texture (SnowMnt, WestWindEasy).
        "zoom": lambda: (f"{texture(2880, 1620, '#8a8f99', 1.4)},trim=end_frame=1,"
                         f"zoompan=z='1+0.0009*on':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d={n}:{s.replace('r=', 'fps=')},"
                         f"{grain(5)}"),
        # Fine detail under a slow zoom from a random depth.
        "mandelbrot": lambda: f"mandelbrot={s}:maxiter=1024:start_scale={rng.uniform(0.5, 3.0):.3f}:end_scale=0.3,{grain(4)}",
        # Organic, irregular motion everywhere (ControlledBurn, RedKayak's water).
        "life": lambda: (f"life={s}:mold=10:ratio=0.1:life_color=#e0a040:death_color=#402010:"
                         f"seed={rng.randrange(1 << 30)},gblur=sigma=2.5,{grain(6)}"),
        # A steadily scrolling, detailed pattern.
        "cellauto": lambda: f"cellauto={s}:rule=110:seed={rng.randrange(1 << 30)},gblur=sigma=1,{grain(6)}",
        # Graphics and a moving object over a static background (TouchdownPass's overlays).
        "testsrc2": lambda: f"testsrc2={s},trim=start_frame={start()},{grain(10)}",
        # Smooth, low complexity: drifting clouds. (Not lavfi's `gradients`: its output differs
        # from run to run even with a seed, so the source could not be regenerated.)
        "clouds": lambda: (f"{texture(3200, 1800, '#7fa6d9', 24)},"
                           f"crop=1920:1080:x='t*{rng.uniform(20, 40):.1f}':y=360,{grain(6)}"),
        # Natural-looking animation with camera motion (the bundled 720p clip, upscaled, ping-pong).
        "bbb": lambda: (f"movie={clip},scale=1920:1080:flags=bicubic,split[f{{i}}][b{{i}}];"
                        f"[b{{i}}]reverse,trim=start_frame=1:end_frame=131,setpts=PTS-STARTPTS[r{{i}}];"
                        f"[f{{i}}][r{{i}}]concat=n=2:v=1:a=0,loop=loop=-1:size=262,settb=1/30,setpts=N,"
                        f"trim=start_frame={rng.randrange(262)},{grain(5)}"),
    }
    order = list(clips)
    rng.shuffle(order)
    parts = []
    for i, name in enumerate(order):
        body = clips[name]().replace("{i}", str(i))
        parts.append(f"{body},trim=end_frame={n},setpts=PTS-STARTPTS,format=yuv420p,setsar=1[c{i}]")
    graph = ";".join(parts) + ";" + "".join(f"[c{i}]" for i in range(len(order))) + f"concat=n={len(order)}:v=1:a=0"
    return [graph, ",".join(order)]
