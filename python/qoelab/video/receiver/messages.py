"""A video over a stream transport (TCP, MPTCP): which frames made their playout deadline.

Over a stream the video source writes each frame as one message (`docs/models/video.md`, "Video
over TCP"), and a flow with ``packet_log = true`` gets the run's ``messages`` table
(`docs/outputs.md`): per frame, when the source wrote it (``written_ns``) and when its last byte
reached the receiving application in order (``delivered_ns``). Nothing is lost on a stream: a
frame is either delivered (late or in time) or still in the sender's buffer or in flight when the
run ends, and then it has no row.

Deadline, as for a datagram video (:mod:`qoelab.video.receiver.recvlog`): the frame with decode-order
number ``f`` and timestamp ``ts_f`` is due at ``start + ts_f + D``, ``D`` the playout delay (the
receiver's discard threshold) and ``start`` the sender's clock offset ``min(written_ns − ts)``
over the repetition's frames. The *ideal* line of the TCP Interactive paper's Fig. 5 is
``start + ts_f``: the frame's arrival with no delay at all.

A frame is *in time* if ``delivered_ns ≤ deadline``, *late* if delivered after it, *undelivered*
if the run ended first. What the player does with a late frame is the ``late`` policy of
:func:`deliver_messages`:

- ``"discard"`` (the default, EvalVid's rule and the datagram receiver's): a late frame is thrown
  away like a lost one: its display slot repeats the previous picture (frozen), and frames that
  predict from it are decoded with the decoder's concealment.
- ``"decode"``: a late frame is still decoded, so frames predicted from it decode cleanly, but its
  own display slot is frozen (it came too late to be shown), as a player that keeps decoding
  behind its display clock does.

Either way a late frame's slot shows the previous picture and counts in PSNR/SSIM. An
undelivered frame is treated as lost.

A looped video's messages carry ``tag = frame + 10⁹ × repetition``; one repetition is
evaluated at a time (``repetition``, default the first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import VideoInputError
from ..traces.trace import NalTrace
from .recvlog import _NULL, NalDelivery

__all__ = ["MESSAGE_COLUMNS", "FRAMES_PER_CYCLE", "LATE_POLICIES", "FrameTimes", "read_messages", "frame_times",
           "frame_times_at", "deliver_messages"]

MESSAGE_COLUMNS = ("flow", "end", "tag", "bytes", "written_ns", "delivered_ns")
FRAMES_PER_CYCLE = 1_000_000_000  # the core's `app::video::FRAMES_PER_CYCLE`
LATE_POLICIES = ("discard", "decode")


def _table(src: str | os.PathLike[str] | pa.Table, path: str) -> pa.Table:
    if isinstance(src, pa.Table):
        return src
    from qoelab.paths import arrow_source, open_regular

    p = Path(src)
    if not os.path.lexists(p):
        raise VideoInputError(path, "no such messages table")
    with open_regular(p, "messages table", lambda _p, why: VideoInputError(path, why)) as fh:
        try:
            if p.suffix.lower() == ".csv":
                import pyarrow.csv as pcsv

                return pcsv.read_csv(arrow_source(fh))
            import pyarrow.parquet as pq

            return pq.read_table(arrow_source(fh))
        except (pa.ArrowException, OSError) as exc:
            raise VideoInputError(path, f"cannot read messages table: {exc}") from None


def read_messages(src: str | os.PathLike[str] | pa.Table, flow: str | None = None, *,
                  path: str | None = None) -> dict[str, np.ndarray]:
    """The messages delivered to the destination of one flow (`flow`, or the only flow of the
    table), type-checked, as arrays ``tag, bytes, written_ns, delivered_ns``. Errors name `path`
    (default: the file, or "messages")."""
    where = path if path is not None else (str(src) if not isinstance(src, pa.Table) else "messages")
    t = _table(src, where)
    missing = [c for c in MESSAGE_COLUMNS if c not in t.column_names]
    if missing:
        raise VideoInputError(where, f"not a messages table: lacks column(s) {', '.join(missing)}; "
                                     f"expected {', '.join(MESSAGE_COLUMNS)}")
    for c in MESSAGE_COLUMNS:
        typ = t.schema.field(c).type
        ok = (pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_dictionary(typ)) \
            if c == "flow" else pa.types.is_integer(typ)
        if not ok:
            raise VideoInputError(where, f"column {c} must be {'string' if c == 'flow' else 'integer'}, got {typ}")
        if t.column(c).null_count:
            raise VideoInputError(where, f"column {c} has {t.column(c).null_count} null value(s)")
    flows = np.asarray(t.column("flow").cast(pa.string()).to_pylist(), dtype=object)
    names = sorted(set(flows.tolist()))
    if flow is None:
        if len(names) != 1:
            raise VideoInputError(where, f"messages of {len(names)} flows ({', '.join(names[:5])}): name one")
        flow = names[0]
    elif flow not in names:
        raise VideoInputError(where, f"no messages of flow {flow!r} (flows: {', '.join(names[:5]) or 'none'})")
    keep = (flows == flow) & (t.column("end").to_numpy() == 1)
    if not keep.any():
        raise VideoInputError(where, f"flow {flow!r} delivered no message to its destination")
    out = {c: t.column(c).to_numpy()[keep].astype(np.int64 if c != "tag" else np.uint64)
           for c in ("tag", "bytes", "written_ns", "delivered_ns")}
    bad = np.flatnonzero(out["delivered_ns"] < out["written_ns"])
    if bad.size:
        raise VideoInputError(where, f"message {int(out['tag'][bad[0]])} of flow {flow!r} delivered before it was written")
    return out


@dataclass
class FrameTimes:
    """Per decode-order frame of one repetition (arrays of length `n_frames`); times in ns,
    :data:`~qoelab.video.receiver.recvlog._NULL` where the frame was not delivered."""

    written_ns: np.ndarray
    delivered_ns: np.ndarray
    ideal_ns: np.ndarray  # start + ts: arrival with no delay (Fig. 5's ideal line)
    deadline_ns: np.ndarray
    start_ns: int
    playout_delay_ns: int

    @property
    def delivered(self) -> np.ndarray:
        return self.delivered_ns != _NULL

    @property
    def late(self) -> np.ndarray:
        return self.delivered & (self.delivered_ns > self.deadline_ns)

    @property
    def in_time(self) -> np.ndarray:
        return self.delivered & (self.delivered_ns <= self.deadline_ns)

    def delay_ns(self) -> np.ndarray:
        """Delivery minus the ideal line (float, NaN where undelivered): the frame's delay."""
        return np.where(self.delivered, (self.delivered_ns - self.ideal_ns).astype(np.float64), np.nan)


def frame_times(trace: NalTrace, msgs: dict[str, np.ndarray], playout_delay_s: float, *, repetition: int = 0,
                path: str = "messages") -> FrameTimes:
    """Match one repetition's messages to the trace's frames (their sizes must be the trace's)
    and apply the playout deadline."""
    ts_ns = np.round(trace.frame_ts_ms() * 1e6).astype(np.int64)
    return frame_times_at(ts_ns, msgs, playout_delay_s, frame_bytes=trace.frame_bytes(), repetition=repetition,
                          path=path)


def frame_times_at(ts_ns: np.ndarray, msgs: dict[str, np.ndarray], playout_delay_s: float, *,
                   frame_bytes: np.ndarray | None = None, repetition: int = 0, path: str = "messages") -> FrameTimes:
    """As :func:`frame_times`, for frames whose timestamps are `ts_ns` (decode order, ns from the
    clip's start) and whose sizes vary with what the sender chose (a transcoder's rungs): the
    messages' sizes are checked against `frame_bytes` only if it is given."""
    if not (playout_delay_s >= 0 and np.isfinite(playout_delay_s)):
        raise VideoInputError("playout delay", f"must be a finite time >= 0 s, got {playout_delay_s}")
    if isinstance(repetition, bool) or not isinstance(repetition, int) or repetition < 0:
        raise VideoInputError("repetition", f"must be a whole number >= 0, got {repetition!r}")
    ts_ns = np.asarray(ts_ns, dtype=np.int64)
    n = ts_ns.size
    rep = (msgs["tag"] // np.uint64(FRAMES_PER_CYCLE)).astype(np.int64)
    frame = (msgs["tag"] % np.uint64(FRAMES_PER_CYCLE)).astype(np.int64)
    sel = rep == repetition
    if not sel.any():
        raise VideoInputError(path, f"no frame of repetition {repetition} was delivered "
                                    f"(repetitions present: {', '.join(map(str, np.unique(rep)[:5]))})")
    frame = frame[sel]
    if int(frame.max()) >= n:
        raise VideoInputError(path, f"message for frame {int(frame.max())}, the video has {n} frames: not this video")
    if np.unique(frame).size != frame.size:
        raise VideoInputError(path, f"repetition {repetition} has a frame delivered twice: not one video's messages")
    if frame_bytes is not None:
        size = msgs["bytes"][sel]
        want = np.asarray(frame_bytes)[frame]
        wrong = np.flatnonzero(size != want)
        if wrong.size:
            f = int(frame[wrong[0]])
            raise VideoInputError(path, f"frame {f} is {int(size[wrong[0]])} bytes, the trace says "
                                        f"{int(want[wrong[0]])}: not this video")
    written = np.full(n, _NULL, np.int64)
    delivered = np.full(n, _NULL, np.int64)
    written[frame] = msgs["written_ns"][sel]
    delivered[frame] = msgs["delivered_ns"][sel]
    start = int(np.min(written[frame] - ts_ns[frame]))
    delay_ns = int(round(playout_delay_s * 1e9))
    ideal = start + ts_ns
    return FrameTimes(written, delivered, ideal, ideal + delay_ns, start, delay_ns)


def deliver_messages(trace: NalTrace, src: str | os.PathLike[str] | pa.Table, playout_delay_s: float, *,
                     flow: str | None = None, repetition: int = 0, late: str = "discard",
                     path: str | None = None) -> NalDelivery:
    """The :class:`~qoelab.video.receiver.recvlog.NalDelivery` of a video sent over a stream, from the
    run's messages table (a path or a table), for :func:`qoelab.video.quality.evaluate.evaluate_delivery`.
    Every NAL unit of a frame shares the frame's delivery. `late`: see the module docs."""
    if late not in LATE_POLICIES:
        raise VideoInputError("late", f"must be one of {', '.join(LATE_POLICIES)}, got {late!r}")
    where = path if path is not None else (str(src) if not isinstance(src, pa.Table) else "messages")
    ft = frame_times(trace, read_messages(src, flow, path=where), playout_delay_s, repetition=repetition, path=where)
    f = trace.frame
    arrived = ft.delivered[f]
    arrival = ft.delivered_ns[f]
    deadline = ft.deadline_ns[f]
    received = arrived & (arrival <= deadline)
    return NalDelivery(received, arrived, arrived.copy(), arrival, deadline, ft.start_ns, ft.playout_delay_ns,
                       decode_late=late == "decode")
