"""The video pipeline: real encodes → NAL traces → simulated delivery → decoded quality.

- `encode`: ffmpeg (libx264/libx265) encode plus the NAL trace the simulator streams;
- `evaluate`: EvalVid-style evaluation with real decoding (PSNR, SSIM, VMAF, MOS, MIV);
- `estimate`: fast decodability and PSNR estimate for sweeps;
- `dash`: an HEVC DASH ladder with MPDs and a per-segment size trace.

This subpackage does not need the native simulator module.
"""

from typing import TYPE_CHECKING, Any

from .errors import VideoInputError

if TYPE_CHECKING:
    from .trace import NalTrace, read_trace, write_trace

__all__ = ["VideoInputError", "NalTrace", "read_trace", "write_trace"]


def __getattr__(name: str) -> Any:
    # The trace module brings numpy: imported on first use (PEP 562), so the CLI starts quickly.
    if name in ("NalTrace", "read_trace", "write_trace"):
        from . import trace

        return getattr(trace, name)
    raise AttributeError(f"module 'qoelab.video' has no attribute {name!r}")
