"""Recipes for the bundled traces in `data/traces/`, and the command that rebuilds them.

    python -m qoelab.video.sources.bundle cif [hd] [sqf] [sqf_mpeg2] [dash] [mpeg2_ladder] [mpeg2_source] [--out data/traces]

Each recipe writes `<name>.trace.csv[.gz]`, `<name>.frames.csv` and `<name>.recipe.toml` (the
DASH ladder and the MPEG-2 ladder write their own files, see `dash.py` and `mpeg2_ladder.py`). Bitstreams are not kept. Run from the
repository root so the recorded paths are repository-relative.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from qoelab.paths import root

from .encode import EncodeConfig, EncodeResult, encode
from .source import CLIP, pingpong

__all__ = ["cif_config", "build_cif", "cif_bitstream", "main"]

REPO = root()  # the folder holding data/ (a checkout, or an installed wheel's bundle)

# The multi-TFRC paper's setting (Paris, CIF, 30 Hz, QP 26, GOP 15 IPBB..., 900-byte slices, 1063
# frames), on the bundled Big Buck Bunny clip: 4:3 centre crop scaled to CIF, its 132 frames
# retimed to 30 fps and played forward then backward (no repeated frame at the turns) until 1063
# frames.
CIF_FRAMES = 1063


_PINGPONG = pingpong("crop=960:720,scale=352:288")


def cif_config(input_path: str | Path = CLIP, frames: int = CIF_FRAMES) -> EncodeConfig:
    return EncodeConfig(input=str(input_path), width=352, height=288, fps=30.0, frames=frames,
                        filters=_PINGPONG, retime=True, codec="h264", gop=15, bframes=2, refs=1,
                        qp=26, slice_max_bytes=900, preset="medium", threads=2)


def build_cif(out: Path, *, keep_bitstream: bool = False, input_path: str | Path | None = None,
              frames: int = CIF_FRAMES, name: str = "cif_bbb_qp26") -> EncodeResult:
    clip = Path(input_path) if input_path else CLIP
    try:
        clip_arg = clip.relative_to(Path.cwd())
    except ValueError:
        clip_arg = clip
    return encode(cif_config(clip_arg, frames), out, name, keep_bitstream=keep_bitstream,
                  notes="CIF 352x288, 30 fps, H.264 QP 26, GOP 15 IBBP, 900-byte slices (multi-TFRC paper's setting) "
                        "on Big Buck Bunny (CC BY 3.0, Blender Foundation), ping-pong looped to 1063 frames.")


def cif_bitstream(folder: Path, name: str = "cif_bbb_qp26") -> tuple[Path, Path]:
    """The bundled CIF trace's bitstream and recipe, re-encoded into ``folder`` once (about 10 s;
    bitstreams are not bundled) and checked against the bundled trace NAL by NAL (sizes and
    frames), so that another encoder cannot pass for it: what a real decode of a simulated
    delivery of that trace needs."""
    from qoelab.errors import QoelabError

    from ..traces.trace import read_trace

    bit, recipe = folder / f"{name}.h264", folder / f"{name}.recipe.toml"
    if not (bit.is_file() and recipe.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        build_cif(folder, keep_bitstream=True, name=name)
    bundled = read_trace(REPO / "data" / "traces" / f"{name}.trace.csv")
    mine = read_trace(folder / f"{name}.trace.csv")
    if mine.n_nal != bundled.n_nal or (mine.size_bytes != bundled.size_bytes).any() or (mine.frame != bundled.frame).any():
        raise QoelabError(f"{folder}: the re-encoded {name} differs from the bundled data/traces/{name}.trace.csv "
                          "(another x264?); PSNR would not match the simulated trace")
    return bit, recipe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qoelab.video.sources.bundle", description=__doc__.splitlines()[0])
    ap.add_argument("which", nargs="+", choices=["cif", "hd", "sqf", "sqf_mpeg2", "dash", "mpeg2_ladder", "mpeg2_source"])
    ap.add_argument("--out", type=Path, default=REPO / "data" / "traces")
    args = ap.parse_args(argv)
    for which in args.which:
        if which == "cif":
            r = build_cif(args.out)
        else:
            from . import bundle_more

            r = getattr(bundle_more, f"build_{which}")(args.out)
        print(f"{which}: {r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
