"""The video pipeline: real encodes → NAL traces → simulated delivery → decoded quality.

One sub-package per stage; each imports only the stages listed before it (checked by
`scripts/module_cycles.py` and `tests/tools/test_module_cycles.py`):

- `traces`: the NAL trace the simulator streams, and the bitstream parsers it is made from;
- `pictures`: decoding with concealment, and per-picture metrics (PSNR, SSIM, MOS, MIV);
- `sources`: source videos, ffmpeg (libx264/libx265/mpeg2video) encodes plus their traces, the
  DASH and MPEG-2 ladders, the bundled traces' recipes;
- `receiver`: what arrived in time: receive logs, messages over a stream, the reorder buffer;
- `quality`: EvalVid-style evaluation with real decoding (PSNR, SSIM, VMAF, MOS, MIV), the fast
  estimate for sweeps and its calibration, frozen slots of the MPEG-2 ladder, DASH QoE.

`errors` and `tools` (locating and running ffmpeg) are shared by all; `cli` is `qoelab video`.
This subpackage does not need the native simulator module.
"""

from typing import TYPE_CHECKING, Any

from .errors import VideoInputError

if TYPE_CHECKING:
    from .traces.trace import NalTrace, read_trace, write_trace

__all__ = ["VideoInputError", "NalTrace", "read_trace", "write_trace"]


def __getattr__(name: str) -> Any:
    # The trace module brings numpy: imported on first use (PEP 562), so the CLI starts quickly.
    if name in ("NalTrace", "read_trace", "write_trace"):
        from .traces import trace

        return getattr(trace, name)
    raise AttributeError(f"module 'qoelab.video' has no attribute {name!r}")
