"""The receiver's reorder buffer for one video split over several connections.

A video sent as N flows (the video source's ``split``, ``docs/models/multiconn.md``) reaches
the receiver as N interleaved packet streams; the reorder buffer merges them and hands whole
frames to the decoder in decoding order, each by its playout time.

Model (all times in ns):

- **Packets.** The run's per-packet log of the N flows (``packet_log = true``; columns as in
  :mod:`qoelab.video.receiver.recvlog`), merged. A duplicate ``(flow, seq)`` counts once, with its earliest
  arrival.
- **Complete.** A NAL unit is complete once all its payload has arrived: the payloads of its
  received packets (packet size less the per-packet headers ``header_bytes``) add up to its size
  in the trace. Packets that never entered the log — datagrams dropped at a TFRC send buffer
  (non-greedy pacing), or never sent — therefore leave their NAL incomplete, exactly like a
  packet lost in the network. A frame is complete at ``C_f``, the last arrival of a packet of
  its NAL units, once all of them are complete.
- **Playout.** Frame ``f`` (decode-order number) plays at ``P_f = T0 + f / fps + D``: ``T0``
  the video's start at the sender (the earliest send time in the log, unless given), ``D`` the
  playout deadline, i.e. the start-up delay (pre-roll) counted from the first packet's
  departure. Choosing the sender's start rather than the first arrival makes ``D`` the delay a
  viewer waits from the moment the stream starts, the paper's start-up delay.
- **Status.** ``complete`` if ``C_f ≤ P_f``; ``late`` if the frame completes after ``P_f``;
  ``lost`` if it never completes. Late and lost frames are given up at ``P_f`` and packets of
  them arriving afterwards are discarded.
- **Release.** The buffer releases frames in decoding order: a complete frame leaves at
  ``R_f = max(C_f, R_{f−1})`` (as soon as it and every earlier frame are complete or given up),
  a frame given up leaves at ``R_f = P_f``; hence ``R = cummax(X)`` with ``X_f = C_f`` or
  ``P_f``. Always ``R_f ≤ P_f``.
- **Occupancy.** At time ``t``, the packets (and their bytes) that have arrived but cannot leave
  because an *earlier* frame has not been released: a packet of frame ``g`` arriving at ``a``
  counts during ``[a, R_{g−1})``. Waiting for the rest of its own frame is reassembly, not
  reordering, and does not count, so packets arriving in order occupy nothing. This is the
  buffer the paper sizes from its Fig. 2 (GOP arrival start and end times at the receiver, 4
  connections: "about 6 s of frames … should be stored in the reordering buffer");
  :attr:`Reorder.gops` gives Fig. 2's start and end times themselves.

The smallest deadline for which no complete frame would be late is
:attr:`Reorder.min_deadline_ns`: ``max_f (C_f − T0 − f / fps)`` over the frames that complete.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VideoInputError
from ..traces.trace import NalTrace
from .recvlog import _NULL, ReceiveLog, check_log_matches_trace

__all__ = ["COMPLETE", "LATE", "LOST", "STATUS_NAMES", "Reorder", "reorder", "infer_header_bytes"]

COMPLETE, LATE, LOST = 0, 1, 2
STATUS_NAMES = np.array(["complete", "late", "lost"])


@dataclass
class Reorder:
    """What the reorder buffer did with one video; per-frame arrays are indexed by decode-order
    frame number, times are ns (``NULL``, the int64 maximum, where there is none)."""

    last_arrival_ns: np.ndarray  # int64: arrival of the frame's last packet (NULL if incomplete)
    status: np.ndarray  # int8: COMPLETE, LATE or LOST
    playout_ns: np.ndarray  # int64: P_f
    release_ns: np.ndarray  # int64: R_f, when the frame leaves the buffer (played or given up)
    occupancy_t_ns: np.ndarray  # int64: times at which the occupancy changes, increasing
    occupancy_pkts: np.ndarray  # int64: packets held from that time on
    occupancy_bytes: np.ndarray  # int64: their bytes (IP packet sizes, as logged)
    gops: dict[str, np.ndarray]  # per GOP: gop, flow, first_arrival_ns, last_arrival_ns
    t0_ns: int
    deadline_ns: int
    fps: float
    min_deadline_ns: int  # smallest D with no complete frame late (0 if none completes)
    header_bytes: int

    NULL = _NULL

    def counts(self) -> dict[str, int]:
        return {str(n): int(np.sum(self.status == k)) for k, n in enumerate(STATUS_NAMES)}

    def max_occupancy(self) -> tuple[int, int]:
        """Largest occupancy reached, (packets, bytes)."""
        if self.occupancy_pkts.size == 0:
            return 0, 0
        return int(self.occupancy_pkts.max()), int(self.occupancy_bytes.max())


def _distinct_packets(log: ReceiveLog) -> np.ndarray:
    """Indices of the distinct packets (flow, seq), each at its earliest arrival."""
    flow_codes = np.unique(log.flow, return_inverse=True)[1]
    order = np.lexsort((log.recv_ns, log.seq, flow_codes))
    fc, sq = flow_codes[order], log.seq[order]
    first = np.ones(order.size, bool)
    first[1:] = (fc[1:] != fc[:-1]) | (sq[1:] != sq[:-1])
    return order[first]


def infer_header_bytes(trace: NalTrace, log: ReceiveLog) -> int:
    """The per-packet header bytes: a packet carries at most its NAL unit's size of payload,
    all of it when the NAL unit fits one packet, so the largest ``size_bytes − NAL size`` over
    the log is the header (exact as soon as one NAL unit of the log fits one packet, as every
    900-B slice of the bundled CIF trace does)."""
    return int(np.max(log.size_bytes - trace.size_bytes[log.nal]))


def reorder(trace: NalTrace, log: ReceiveLog, deadline_s: float, *, fps: float | None = None,
            t0_ns: int | None = None, header_bytes: int | None = None, gop: int = 15) -> Reorder:
    """Runs the reorder buffer over `log` (the packets of one video's N flows) for `trace`.

    `deadline_s` is D (≥ 0); `fps` defaults to the trace's frame rate; `t0_ns` to the earliest
    send time in the log; `header_bytes` to :func:`infer_header_bytes`; `gop` (frames) only
    groups :attr:`Reorder.gops`. Bad input raises :class:`VideoInputError` naming the log."""
    n_nal, n_frames = trace.n_nal, trace.n_frames
    if log.nal.size == 0:
        raise VideoInputError(log.path, "no packets")
    check_log_matches_trace(trace, log)
    if not (np.isfinite(deadline_s) and deadline_s >= 0):
        raise VideoInputError("playout deadline", f"must be a finite time >= 0 s, got {deadline_s}")
    fps = trace.fps() if fps is None else float(fps)
    if not (np.isfinite(fps) and fps > 0):
        raise VideoInputError("fps", f"must be a finite rate > 0, got {fps}")
    if gop < 1:
        raise VideoInputError("gop", f"must be at least 1 frame, got {gop}")
    h = infer_header_bytes(trace, log) if header_bytes is None else int(header_bytes)
    if h < 0:
        raise VideoInputError(log.path, f"header bytes must be >= 0, got {h}")

    pkt = _distinct_packets(log)
    nal, recv, size = log.nal[pkt], log.recv_ns[pkt], log.size_bytes[pkt]
    frame = log.frame[pkt]
    got = recv != _NULL

    # NAL units complete: all payload arrived.
    payload = np.bincount(nal[got], weights=(size[got] - h).astype(np.float64), minlength=n_nal)
    nal_complete = payload == trace.size_bytes
    # Frames complete: every NAL unit of theirs; C_f the last arrival among their packets.
    frame_incomplete = np.bincount(trace.frame[~nal_complete], minlength=n_frames) > 0
    last = np.full(n_frames, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(last, frame[got], recv[got])
    complete = ~frame_incomplete
    last = np.where(complete, last, _NULL)

    t0 = int(np.min(log.sent_ns)) if t0_ns is None else int(t0_ns)
    d_ns = int(round(deadline_s * 1e9))
    f = np.arange(n_frames)
    playout = t0 + np.round(f * (1e9 / fps)).astype(np.int64) + d_ns
    in_time = complete & (last <= playout)
    status = np.where(in_time, COMPLETE, np.where(complete, LATE, LOST)).astype(np.int8)
    release = np.maximum.accumulate(np.where(in_time, last, playout))

    # Occupancy: a packet of frame g arriving at a is held during [a, R_{g-1}).
    prev_release = np.concatenate([[np.iinfo(np.int64).min], release[:-1]])
    until = prev_release[frame]
    held = got & (recv < until)
    times = np.concatenate([recv[held], until[held]])
    dp = np.concatenate([np.ones(held.sum(), np.int64), -np.ones(held.sum(), np.int64)])
    db = np.concatenate([size[held], -size[held]]).astype(np.int64)
    order = np.argsort(times, kind="stable")
    times, dp, db = times[order], np.cumsum(dp[order]), np.cumsum(db[order])
    # One point per distinct time, with the value after all its changes.
    keep = np.ones(times.size, bool)
    keep[:-1] = times[1:] != times[:-1]
    occ_t, occ_p, occ_b = times[keep], dp[keep], db[keep]

    # Fig. 2: per GOP, the first and last arrival of its packets, and the flow that carried it.
    g = frame[got] // gop
    n_gops = (n_frames + gop - 1) // gop
    first_a = np.full(n_gops, _NULL, np.int64)
    last_a = np.full(n_gops, np.iinfo(np.int64).min, np.int64)
    np.minimum.at(first_a, g, recv[got])
    np.maximum.at(last_a, g, recv[got])
    last_a = np.where(last_a == np.iinfo(np.int64).min, _NULL, last_a)
    gop_flow = np.full(n_gops, "", dtype=object)
    gop_flow[g] = log.flow[pkt][got]

    lag = last[complete] - t0 - np.round(f[complete] * (1e9 / fps)).astype(np.int64)
    min_d = int(max(0, lag.max())) if lag.size else 0
    return Reorder(
        last_arrival_ns=last, status=status, playout_ns=playout, release_ns=release,
        occupancy_t_ns=occ_t, occupancy_pkts=occ_p, occupancy_bytes=occ_b,
        gops={"gop": np.arange(n_gops), "flow": gop_flow, "first_arrival_ns": first_a, "last_arrival_ns": last_a},
        t0_ns=t0, deadline_ns=d_ns, fps=fps, min_deadline_ns=min_d, header_bytes=h,
    )
