"""Error concealment at the decoder: what a receiver shows for a frame that arrived damaged.

A concealment is one function here plus one line in :data:`CONCEALMENTS`. Each takes the
access units the network delivered (one per decode-order frame, ``None`` where nothing of the
frame arrived) and the frames' delivery, and returns the access units the decoder is fed.
Frames not fed show the previous picture (the decoder's output repeats its last picture for an
empty display slot: :func:`qoelab.video.pictures.decode.decode_display_order`).

- ``ffmpeg``: every slice that arrived is decoded; FFmpeg's error concealment
  (``ec = guess_mvs+deblock``) fills the missing macroblocks of a damaged frame.
- ``evalvid_pfr``: EvalVid's previous-frame replacement (Klaue et al. 2003, the ``etmp4``
  reconstruction and ``fixyuv``): a frame with any slice (or parameter set) lost counts as lost,
  is not decoded, and its display slot shows the last picture shown. Later frames that arrived
  whole are decoded against whatever their references became, as EvalVid's FFmpeg decode does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .estimate import FrameDelivery


def ffmpeg(packets: Sequence[bytes | None], fd: FrameDelivery) -> list[bytes | None]:
    return list(packets)


def evalvid_pfr(packets: Sequence[bytes | None], fd: FrameDelivery) -> list[bytes | None]:
    whole = fd.intact & (fd.nonvcl_lost == 0)
    return [p if whole[k] else None for k, p in enumerate(packets)]


#: name → concealment; the registry of ``concealment=`` (``evaluate``, ``reproduce wimax``).
CONCEALMENTS: dict[str, Callable[[Sequence[bytes | None], FrameDelivery], list[bytes | None]]] = {
    "ffmpeg": ffmpeg,
    "evalvid_pfr": evalvid_pfr,
}
