"""Decoding access units with error concealment, and re-aligning the output to display order.

The damaged stream is fed to FFmpeg's decoder (through PyAV) one access unit per packet, so a lost
first slice does not merge two pictures. Each packet carries its frame's display number as `pts`;
the decoder reorders pictures by their picture order count and hands the `pts` back, so every
decoded picture lands in its display slot. Slots the decoder leaves empty (the whole frame was
lost, or it could not be decoded) are filled by repeating the previous slot, as EvalVid's fixyuv
does; a missing first frame is mid-grey (Y=U=V=128).

Within a damaged picture FFmpeg conceals the missing macroblocks (motion-vector guessing from
neighbours, else copying the co-located block of the previous picture); pictures that reference a
damaged one carry its error on. `flags2=showall` makes the decoder output pictures decoded from a
stream that started without an intact IDR, so what is shown is what a player that never gives up
would show.
"""

from __future__ import annotations

import subprocess
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field

import av
import numpy as np

from ..errors import VideoInputError
from ..tools import error_line, ffmpeg_exe, guard_inputs

__all__ = ["DecodeReport", "decode_display_order", "read_source_frames", "probe_video"]


@dataclass
class DecodeReport:
    """What the decoder did with a stream."""

    packets: int = 0
    decoded: int = 0  # pictures output by the decoder (and placed)
    repeated: int = 0  # display slots filled by repeating the previous picture
    errors: int = 0  # packets the decoder rejected
    misordered: int = 0  # pictures output after a later display slot was already shown (dropped)
    decoded_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


def video_decoder(codec: str, threads: int) -> av.VideoCodecContext:
    """A decoding context for the video codec named `codec` (an FFmpeg decoder name)."""
    ctx = av.CodecContext.create(codec, "r")
    if not isinstance(ctx, av.VideoCodecContext):
        raise VideoInputError("decoder", f"{codec[:30]!r} is not a video decoder")
    ctx.thread_count = threads
    return ctx


def _decoder(codec: str, threads: int) -> av.VideoCodecContext:
    ctx = video_decoder(codec, threads)
    ctx.options = {"flags2": "+showall", "flags": "+output_corrupt", "ec": "guess_mvs+deblock"}
    return ctx


def decode_display_order(
    packets: Sequence[bytes | None],
    display: np.ndarray,
    codec: str,
    width: int,
    height: int,
    *,
    threads: int = 1,
    report: DecodeReport | None = None,
) -> Iterator[np.ndarray]:
    """Decode `packets` (one access unit per decode-order frame, `None` when nothing of it arrived)
    and yield one yuv420p picture of shape `(height * 3 // 2, width)` per display slot, in display
    order. `report`, if given, is filled in as a side effect.
    """
    n = len(packets)
    rep = report if report is not None else DecodeReport()
    rep.decoded_mask = np.zeros(n, dtype=bool)
    ctx = _decoder(codec, threads)
    prev: np.ndarray = np.full((height * 3 // 2, width), 128, dtype=np.uint8)
    next_slot = 0

    def place(frame: av.VideoFrame) -> Iterator[np.ndarray]:
        nonlocal prev, next_slot
        slot = frame.pts
        if slot is None or slot < next_slot or slot >= n:
            rep.misordered += 1
            return
        if frame.width != width or frame.height != height:
            raise VideoInputError("decoder", f"picture {slot} is {frame.width}x{frame.height}, expected {width}x{height}")
        if frame.format.name != "yuv420p":
            frame = frame.reformat(format="yuv420p")
        pic = frame.to_ndarray()
        while next_slot < slot:
            rep.repeated += 1
            next_slot += 1
            yield prev
        rep.decoded += 1
        rep.decoded_mask[slot] = True
        prev = pic
        next_slot = slot + 1
        yield pic

    for k, data in enumerate(packets):
        if not data:
            continue
        pkt = av.Packet(data)
        pkt.pts = int(display[k])
        pkt.dts = k
        rep.packets += 1
        try:
            frames = ctx.decode(pkt)
        except av.error.FFmpegError:
            rep.errors += 1
            continue
        for fr in frames:
            yield from place(fr)
    try:
        tail = ctx.decode(None)
    except av.error.FFmpegError:
        rep.errors += 1
        tail = []
    for fr in tail:
        yield from place(fr)
    while next_slot < n:
        rep.repeated += 1
        next_slot += 1
        yield prev


def probe_video(path: str) -> dict:
    """Width, height, frame rate and frame count (if known) of a video file, via PyAV."""
    try:
        # Files only: a name can never make the demuxer open a URL or another protocol.
        with av.open(path, options={"protocol_whitelist": "file"}) as c:
            if not c.streams.video:
                raise VideoInputError(path, "no video stream")
            s = c.streams.video[0]
            rate = s.average_rate or s.guessed_rate
            return {
                "width": s.codec_context.width,
                "height": s.codec_context.height,
                "fps": float(rate) if rate else None,
                "frames": s.frames or None,
                "codec": s.codec_context.name,
            }
    except av.error.FFmpegError as exc:
        raise VideoInputError(path, f"unreadable video: {exc.strerror or exc}") from None


def read_source_frames(
    args: Sequence[str], width: int, height: int, *, path: str, limit: int | None = None
) -> Generator[np.ndarray, None, None]:
    """Yield yuv420p pictures from an ffmpeg input (`args` are its input options and `-i ...` plus
    any `-vf`), scaled to `width`x`height`."""
    frame_bytes = width * height * 3 // 2
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *guard_inputs(args)]
    if limit is not None:
        cmd += ["-frames:v", str(limit)]
    cmd += ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}", "-"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        while True:
            buf = proc.stdout.read(frame_bytes)
            if len(buf) < frame_bytes:
                break
            yield np.frombuffer(buf, dtype=np.uint8).reshape(height * 3 // 2, width)
    finally:
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
        rc = proc.wait()
        if proc.stderr:
            proc.stderr.close()
    if rc != 0:
        raise VideoInputError(path, f"cannot read source video: {error_line(err, rc)}")
