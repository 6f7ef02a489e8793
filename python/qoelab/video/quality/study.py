"""The estimator's error on three dissimilar sources, uncalibrated and calibrated.

    python -m qoelab.video.quality.study [--frames 300] [--out DIR]

prints the Markdown table of `docs/models/video.md` (Validation). Each source is encoded in the
multi-TFRC setting (CIF, 30 fps, H.264 QP 26, GOP 15 IBBP, 900-byte slices):

- `natural`: the bundled Big Buck Bunny clip (animated film with camera motion);
- `pattern`: lavfi `mandelbrot`, a synthetic zoom into fine detail;
- `motion`: lavfi `life` (blurred), organic motion over the whole picture at every frame.

Each trace is calibrated (`calibrate.py`: slice loss 1, 5, 10 %, seeds 1000 and 1001), then
checked on other seeds (`CHECK_SEEDS`) at the same loss levels against real decodes, with the
default constants and with the trace's own.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..receiver.recvlog import synthetic_log, write_receive_log
from ..sources.encode import EncodeConfig, EncodeResult, encode, read_frames_csv
from ..sources.source import SourceSpec
from ..traces.trace import read_trace
from .calibrate import DEFAULT_LOSSES, calibrate, mean_psnr_y, random_slice_loss
from .estimate import estimate
from .evaluate import evaluate

__all__ = ["SOURCES", "CHECK_SEEDS", "study_encode", "study_source", "markdown"]

CHECK_SEEDS = (1, 2)


def _cfg(source: SourceSpec, frames: int) -> EncodeConfig:
    return EncodeConfig(input="study", source=source, width=352, height=288, fps=30.0, frames=frames, codec="h264",
                        gop=15, bframes=2, refs=1, qp=26, slice_max_bytes=900, preset="medium", threads=2)


def _sources() -> dict[str, SourceSpec]:
    from ..sources.bundle import _PINGPONG

    cif: dict[str, Any] = dict(width=352, height=288, fps=30.0)
    return {
        "natural": SourceSpec("clip", clip="bigbuckbunny", retime=True, filters=_PINGPONG, **cif),
        "pattern": SourceSpec("lavfi", generator="mandelbrot", params={"size": "352x288", "rate": "30",
                                                                       "start_scale": "1.5", "end_scale": "0.3"}, **cif),
        "motion": SourceSpec("lavfi", generator="life", params={"size": "352x288", "rate": "30", "mold": "10",
                                                                "ratio": "0.1", "seed": "7"},
                             filters="gblur=sigma=1.5", **cif),
    }


SOURCES = tuple(_sources())


def study_encode(name: str, out: Path, frames: int) -> EncodeResult:
    return encode(_cfg(_sources()[name], frames), out, f"study_{name}")


def study_source(name: str, out: Path, frames: int = 300) -> list[dict]:
    """Encode, calibrate and check one source; one row per (loss, seed) of the check."""
    r = study_encode(name, out, frames)
    c = calibrate(r.trace, r.bitstream, r.recipe, r.frames)
    trace = read_trace(r.trace)
    fr = read_frames_csv(r.frames)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qoelab-study-") as tmp:
        for loss in DEFAULT_LOSSES:
            for seed in CHECK_SEEDS:
                lost = random_slice_loss(trace, loss, seed)
                log = Path(tmp) / "recv.parquet"
                write_receive_log(synthetic_log(trace, lost), log)
                real = evaluate(r.trace, r.bitstream, log, recipe_path=r.recipe).summary
                e0 = mean_psnr_y(estimate(trace, ~lost, fr, planes=("y",)), r.frames)
                e1 = mean_psnr_y(estimate(trace, ~lost, fr, lam=c.lam, kappa=c.kappa, gamma=c.gamma,
                                          planes=("y",)), r.frames)
                rows.append({"source": name, "loss": loss, "seed": seed, "lambda": c.lam, "kappa": c.kappa, "gamma": c.gamma,
                             "undamaged_db": real["ref_mean_psnr_y_vs_source_db"],
                             "real_db": real["mean_psnr_y_vs_source_db"], "default_db": e0, "calibrated_db": e1})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| source | λ, κ, γ (calibrated) | slice loss | seed | undamaged | real decode | default estimate (error) "
             "| calibrated estimate (error) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['source']} | {r['lambda']:.2f}, {r['kappa']:.2f}, {r['gamma']:.2f} | {100 * r['loss']:.0f} % | {r['seed']} "
                     f"| {r['undamaged_db']:.2f} dB | {r['real_db']:.2f} dB "
                     f"| {r['default_db']:.2f} dB ({r['default_db'] - r['real_db']:+.2f}) "
                     f"| {r['calibrated_db']:.2f} dB ({r['calibrated_db'] - r['real_db']:+.2f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qoelab.video.quality.study", description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--out", type=Path)
    ap.add_argument("sources", nargs="*", help=f"any of {', '.join(SOURCES)} (default all)")
    args = ap.parse_args(argv)
    args.sources = args.sources or list(SOURCES)
    for name in args.sources:
        if name not in SOURCES:
            ap.error(f"unknown source {name!r}")
    with tempfile.TemporaryDirectory(prefix="qoelab-study-") as tmp:
        out = args.out or Path(tmp)
        rows = [row for name in args.sources for row in study_source(name, out, args.frames)]
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
