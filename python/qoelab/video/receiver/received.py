"""A bitstream a real receiver wrote, as a delivery of the one that was sent.

In an emulation a real receiver (``ffmpeg`` reading RTP in a namespace, say) writes what
reached it as an Annex B byte stream: the sent stream's NAL units that arrived whole, in order,
each behind a start code (an RTP depacketizer drops a NAL unit it got only part of, RFC 6184
§5.8). :func:`delivery_from_bitstreams` recovers which NAL units of the sent stream those are,
by their bytes, and returns the :class:`~qoelab.video.receiver.recvlog.NalDelivery` the evaluator
(:func:`qoelab.video.quality.evaluate.evaluate_delivery`) takes for a simulated delivery, so a real
stream is scored by the same decode and the same metrics (PSNR against the source, SSIM, MOS).

Matching: the received NAL units are walked in order, each matched to the next sent NAL unit
with the same payload (start code and trailing zero bytes aside) at or after the previous
match; a received unit with no such match (a partial unit a depacketizer passed on, or bytes
that were never sent) counts as nothing received. Every matched unit counts as on time: the
receiver wrote it, and when is the player's business, which a file does not record.
"""

from __future__ import annotations

import numpy as np

from ..errors import VideoInputError
from ..traces.bitstream import split_nal_units
from ..traces.trace import NalTrace
from .recvlog import _NULL, NalDelivery

__all__ = ["received_nal_units", "delivery_from_bitstreams"]


def _payloads(data: bytes) -> list[bytes]:
    return [data[p:e].rstrip(b"\0") for _, p, e in split_nal_units(data)]


def received_nal_units(sent: bytes, received: bytes) -> tuple[np.ndarray, int]:
    """Per NAL unit of ``sent``, whether ``received`` holds it whole; and how many of
    ``received``'s units matched none (see the module docs)."""
    s = _payloads(sent)
    got = np.zeros(len(s), bool)
    index: dict[bytes, list[int]] = {}
    for i, p in enumerate(s):
        index.setdefault(p, []).append(i)
    pos, unmatched = 0, 0
    for p in _payloads(received):
        cands = index.get(p, [])
        k = int(np.searchsorted(cands, pos))
        if k == len(cands):
            unmatched += 1
            continue
        got[cands[k]] = True
        pos = cands[k] + 1
    return got, unmatched


def delivery_from_bitstreams(trace: NalTrace, sent: bytes, received: bytes) -> tuple[NalDelivery, int]:
    """The delivery of ``trace`` (the sent stream's NAL trace) that ``received`` shows, and the
    number of received units that matched no sent one. Raises :class:`VideoInputError` when
    ``sent`` does not have the trace's NAL units."""
    got, unmatched = received_nal_units(sent, received)
    if got.size != trace.n_nal:
        raise VideoInputError("sent bitstream", f"has {got.size} NAL units, the trace {trace.n_nal}")
    n = trace.n_nal
    ts_ns = np.round(trace.ts_ms * 1e6).astype(np.int64)
    arrival = np.where(got, ts_ns, _NULL)
    return NalDelivery(received=got, arrived=got.copy(), sent=np.ones(n, bool), arrival_ns=arrival,
                       deadline_ns=ts_ns, stream_start_ns=0, playout_delay_ns=0), unmatched
