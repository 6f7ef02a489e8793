"""The frame/NAL trace that the simulator's video source streams.

One CSV row per NAL unit in decode order, with the header

    nal,frame,display,type,size_bytes,ts_ms

- `nal`: 0-based running index;
- `frame`: decode-order frame number (0-based, consecutive);
- `display`: display-order number of that frame;
- `type`: the frame's type `I`, `P` or `B` for slices, `X` for non-VCL units (AUD, SPS, PPS, SEI),
  which belong to the frame they precede;
- `size_bytes`: size of the NAL unit including its start code;
- `ts_ms`: the frame's send/decode timestamp in ms, `frame * 1000 / fps` for our encodes.

The simulator sends each row as `ceil(size_bytes / max_payload)` packets at `ts_ms`. A file whose
name ends in `.gz` is read and written gzip-compressed. The full grammar (what a reader accepts,
`nal` and `display` being optional, the limits) is in `docs/models/video.md`.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import VideoInputError

__all__ = ["COLUMNS", "NalTrace", "read_trace", "write_trace", "TraceStats", "max_window_rate_bps"]

COLUMNS = ("nal", "frame", "display", "type", "size_bytes", "ts_ms")
_TYPES = {"I": 0, "P": 1, "B": 2, "X": 3}
TYPE_NAMES = np.array(["I", "P", "B", "X"])


@dataclass
class NalTrace:
    """A validated trace, as columns. Frame-level arrays are indexed by decode-order frame number."""

    frame: np.ndarray  # int64, per NAL
    display: np.ndarray  # int64, per NAL
    type_code: np.ndarray  # int8, per NAL: 0=I 1=P 2=B 3=X
    size_bytes: np.ndarray  # int64, per NAL
    ts_ms: np.ndarray  # float64, per NAL

    @property
    def n_nal(self) -> int:
        return int(self.frame.size)

    @property
    def n_frames(self) -> int:
        return int(self.frame[-1]) + 1 if self.frame.size else 0

    @property
    def vcl(self) -> np.ndarray:
        return self.type_code != 3

    def frame_start(self) -> np.ndarray:
        """Index of each frame's first NAL, plus a final `n_nal` (so `frame_start()[f+1]` ends it)."""
        return np.searchsorted(self.frame, np.arange(self.n_frames + 1), side="left")

    def frame_type(self) -> np.ndarray:
        """Per decode-order frame: 0=I, 1=P, 2=B."""
        out = np.full(self.n_frames, 3, dtype=np.int8)
        vcl = self.vcl
        out[self.frame[vcl]] = self.type_code[vcl]
        return out

    def frame_display(self) -> np.ndarray:
        out = np.empty(self.n_frames, dtype=np.int64)
        out[self.frame] = self.display
        return out

    def frame_ts_ms(self) -> np.ndarray:
        out = np.empty(self.n_frames, dtype=np.float64)
        out[self.frame] = self.ts_ms
        return out

    def frame_bytes(self) -> np.ndarray:
        return np.bincount(self.frame, weights=self.size_bytes, minlength=self.n_frames).astype(np.int64)

    def fps(self) -> float:
        """Frame rate implied by the timestamps (frames per second)."""
        ts = self.frame_ts_ms()
        if ts.size < 2 or ts[-1] <= ts[0]:
            raise ValueError("fewer than two distinct timestamps")
        return (ts.size - 1) * 1000.0 / (ts[-1] - ts[0])

    def stats(self) -> "TraceStats":
        return TraceStats.of(self)


@dataclass(frozen=True)
class TraceStats:
    """Statistics a recipe records and a test re-checks."""

    frames: int
    nal_units: int
    total_bytes: int
    fps: float
    duration_s: float
    mean_rate_bps: float
    gop_pattern: str  # display-order frame types of the first GOP, e.g. "IBBPBBPBBPBBPBP"
    gop_length: int  # frames between I frames (0 if only one)
    frame_types: dict[str, int]
    max_nal_bytes: int
    max_frame_bytes: int  # largest access unit (all its NAL units, start codes included)
    max_1s_rate_bps: float  # largest rate over round(fps) consecutive frames (decode order), bit/s


    @classmethod
    def of(cls, t: NalTrace) -> "TraceStats":
        ftype = t.frame_type()
        disp = t.frame_display()
        by_display = np.empty_like(ftype)
        by_display[disp] = ftype
        letters = "".join(TYPE_NAMES[by_display])
        i_pos = [i for i, c in enumerate(letters) if c == "I"]
        gop = i_pos[1] - i_pos[0] if len(i_pos) > 1 else 0
        pattern = letters[: gop or len(letters)][:64]
        fps = t.fps()
        total = int(t.size_bytes.sum())
        vcl_sizes = t.size_bytes[t.vcl]
        return cls(
            frames=t.n_frames,
            nal_units=t.n_nal,
            total_bytes=total,
            fps=round(float(fps), 3),
            duration_s=round(float(t.n_frames / round(fps, 3)), 6),
            mean_rate_bps=round(float(total * 8 / (t.n_frames / round(fps, 3))), 1),
            gop_pattern=pattern,
            gop_length=gop,
            frame_types={k: int((ftype == v).sum()) for k, v in _TYPES.items() if k != "X"},
            max_nal_bytes=int(vcl_sizes.max()) if vcl_sizes.size else 0,
            max_frame_bytes=int(t.frame_bytes().max()) if t.n_frames else 0,
            max_1s_rate_bps=max_window_rate_bps(t.frame_bytes(), fps),
        )

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def max_window_rate_bps(frame_bytes: np.ndarray, fps: float, window_s: float = 1.0) -> float:
    """Largest mean rate (bit/s, rounded to 0.1) over `round(window_s * fps)` consecutive frames.

    Frames are taken in decode order, as the encoder's VBV (H.264 Annex C) removes them; the
    window's length is its frame count divided by `fps`. A trace shorter than the window gives
    its mean rate.
    """
    n = max(1, round(window_s * fps))
    b = np.asarray(frame_bytes, dtype=np.int64)
    if b.size == 0:
        return 0.0
    n = min(n, b.size)
    c = np.concatenate(([0], np.cumsum(b)))
    return round(float((c[n:] - c[:-n]).max()) * 8 * float(fps) / n, 1)


def read_trace(path: str | os.PathLike[str]) -> NalTrace:
    """Read and validate a trace; any defect is a one-line `VideoInputError`.

    The simulator's own reader does the reading (``_native.read_trace``), so a file is accepted
    here exactly when a scenario's video source accepts it: one grammar, written down in
    ``docs/models/video.md`` ("Trace grammar"). Messages name the line and column and never
    quote the file's text.
    """
    from qoelab import _native

    p = Path(path)
    try:
        cols = _native.read_trace(os.fspath(p))
    except _native.TraceError as exc:
        raise VideoInputError(p, str(exc)) from None
    return NalTrace(
        cols["frame"], cols["display"], cols["type_code"], cols["size_bytes"], cols["ts_ms"]
    )


def trace_csv(t: NalTrace) -> str:
    """A trace in the canonical format (timestamps with 3 decimals), as text."""
    rows = [",".join(COLUMNS)]
    names = TYPE_NAMES[t.type_code]
    for i in range(t.n_nal):
        rows.append(f"{i},{t.frame[i]},{t.display[i]},{names[i]},{t.size_bytes[i]},{t.ts_ms[i]:.3f}")
    return "\n".join(rows) + "\n"


def write_trace(path: str | os.PathLike[str], t: NalTrace) -> None:
    """Write a trace in the canonical format (:func:`trace_csv`; gzipped for a ``.gz`` path)."""
    p = Path(path)
    data = trace_csv(t)
    if p.suffix == ".gz":
        # mtime=0 keeps the file byte-identical across runs.
        with open(p, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
            gz.write(data.encode("ascii"))
    else:
        p.write_text(data, encoding="ascii")

