"""MPEG-2 video elementary streams: start-code units, pictures and RFC 2250 packets.

Reading list:
- ISO/IEC 13818-2 (ITU-T H.262, 02/2000) §6.2.1 start codes (Table 6-1), §6.2.2.1 sequence
  header, §6.2.2.6 group of pictures header, §6.2.3 picture header (`temporal_reference`,
  `picture_coding_type`, Table 6-12), §6.2.4 slice, §6.3.9 temporal reference.
- RFC 2250 §3 (RTP payload format for MPEG-1/MPEG-2 video elementary streams): fragmentation
  rules (§3.1) and the MPEG video-specific header (§3.4).

The stream is cut at every start code (`00 00 01 xx`, the byte after it is the start-code
value), so the units' sizes add up to the file size. We read only the picture header's
`temporal_reference` and `picture_coding_type`; the rest (motion vectors, quantiser matrices,
extensions) is left to the decoder. A unit is returned as a :class:`~.bitstream.NalUnit` so that
the encode pipeline treats both syntaxes alike: `nal_type` is the start-code value, `vcl` marks
slices (start codes 0x01..0xAF), `first_slice` the first slice of a picture and `slice_type`
the picture's type ("I", "P", "B"; "X" for headers).

Packetisation (what a trace row is), two rules:

- ``"vlc"`` (:func:`vlc_packets`, the bundled trace's): VLC's RTP sender (`rtp_packetize_mpv`
  in modules/stream_out/rtpfmt.c) cuts each picture, headers included, into
  ⌈size / (max_payload − 4)⌉ pieces of at most `max_payload − 4` bytes, whatever the slice
  boundaries, and puts the 4-byte MPEG video-specific header (RFC 2250 §3.4) before each. One
  trace row is one such RTP payload, header included, so a picture's rows add up to its bytes
  plus 4 per packet.
- ``"slices"`` (:func:`rfc2250_packets`): RFC 2250 §3.1's recommendation, which VLC does not
  follow: the sequence, GOP and picture headers open a packet, a packet holds an integral
  number of slices and only a slice larger than the packet is fragmented. Units are packed
  greedily; a slice larger than `max_payload` is one row that the simulator sends as
  ⌈size / max_payload⌉ datagrams. The 4-byte header is not counted, so the rows add up to the
  file size. It gives more, smaller packets (a fragment's tail is often a few bytes), which
  matters to a buffer counted in packets.
"""

from __future__ import annotations

import numpy as np

from .bitstream import NalUnit

__all__ = ["SEQUENCE_HEADER", "GOP_HEADER", "PICTURE_START", "SEQUENCE_END", "PACKING", "MPEG_VIDEO_HEADER",
           "parse_mpeg2_units", "group_pictures", "temporal_references", "rfc2250_packets", "vlc_packets", "packets"]

#: RFC 2250 §3.4: the MPEG video-specific header (without the MPEG-2 extension VLC never sends).
MPEG_VIDEO_HEADER = 4
PACKING = ("vlc", "slices")

# ISO/IEC 13818-2 Table 6-1, start-code values.
PICTURE_START = 0x00
SLICE_FIRST, SLICE_LAST = 0x01, 0xAF
USER_DATA = 0xB2
SEQUENCE_HEADER = 0xB3
EXTENSION = 0xB5
SEQUENCE_END = 0xB7
GOP_HEADER = 0xB8
# Table 6-12, picture_coding_type (4, D-pictures, is MPEG-1 only and refused).
_CODING_TYPE = {1: "I", 2: "P", 3: "B"}


def _start_codes(data: bytes) -> np.ndarray:
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size < 4:
        return np.zeros(0, np.int64)
    return np.flatnonzero((buf[:-3] == 0) & (buf[1:-2] == 0) & (buf[2:-1] == 1)).astype(np.int64)


def parse_mpeg2_units(data: bytes) -> list[NalUnit]:
    """All start-code units of an MPEG-2 video elementary stream, in stream order.

    Raises `ValueError` when the stream does not begin with a sequence header, a picture header
    is truncated or carries an unknown `picture_coding_type`, or a slice comes before any
    picture header.
    """
    pos = _start_codes(data)
    if pos.size == 0 or pos[0] != 0 or data[3] != SEQUENCE_HEADER:
        raise ValueError("not an MPEG-2 video elementary stream (no sequence header at byte 0)")
    ends = np.append(pos[1:], len(data))
    out: list[NalUnit] = []
    ptype = None
    first = False
    for start, end in zip(pos.tolist(), ends.tolist()):
        if start + 4 > end:
            raise ValueError(f"truncated start code at byte {start}")
        code = data[start + 3]
        if code == PICTURE_START:
            # temporal_reference (10 bits), picture_coding_type (3 bits): §6.2.3.
            if start + 6 > end:
                raise ValueError(f"truncated picture header at byte {start}")
            t = (data[start + 5] >> 3) & 0x07
            if t not in _CODING_TYPE:
                raise ValueError(f"picture_coding_type {t} at byte {start} (only I, P, B are MPEG-2)")
            ptype, first = _CODING_TYPE[t], True
            out.append(NalUnit(start, end - start, code, False, False, "X"))
        elif SLICE_FIRST <= code <= SLICE_LAST:
            if ptype is None:
                raise ValueError(f"slice before any picture header at byte {start}")
            out.append(NalUnit(start, end - start, code, True, first, ptype))
            first = False
        else:
            out.append(NalUnit(start, end - start, code, False, False, "X"))
    return out


def temporal_references(data: bytes, units: list[NalUnit]) -> list[int]:
    """`temporal_reference` of each picture header, in stream order (§6.3.9: the display
    position within the GOP)."""
    return [((data[u.offset + 4] << 2) | (data[u.offset + 5] >> 6)) for u in units if u.nal_type == PICTURE_START]


def group_pictures(units: list[NalUnit]) -> list[list[int]]:
    """Indices of the units of each coded picture, in decode order.

    A picture owns the headers before it (sequence header and extensions, GOP header, user
    data, picture header and its extensions) and its slices; a trailing sequence end code joins
    the last picture.
    """
    pics: list[list[int]] = []
    cur: list[int] = []
    has_slice = False
    for i, u in enumerate(units):
        if not u.vcl and has_slice and u.nal_type in (SEQUENCE_HEADER, GOP_HEADER, PICTURE_START, USER_DATA):
            pics.append(cur)
            cur, has_slice = [], False
        cur.append(i)
        has_slice = has_slice or u.vcl
    if not has_slice:
        if not pics:
            raise ValueError("elementary stream has no slices")
        pics[-1].extend(cur)
    else:
        pics.append(cur)
    return pics


def rfc2250_packets(units: list[NalUnit], picture: list[int], max_payload: int) -> list[int]:
    """Sizes of the RTP payloads that carry one picture (RFC 2250 §3.1), packed greedily.

    Headers open the first packet and stay with the first slice; a unit joins the current
    packet if it fits, else it starts a new one; a slice larger than `max_payload` is a packet
    of its own (fragmented on the wire, each fragment a datagram). The sizes add up to the
    picture's bytes.
    """
    if max_payload < 1:
        raise ValueError("max_payload must be at least 1 byte")
    out: list[int] = []
    cur = 0
    cur_has_slice = False  # a packet of headers only always takes the next unit (§3.1)
    for i in picture:
        s = units[i].size
        if cur_has_slice and cur + s > max_payload:
            out.append(cur)
            cur, cur_has_slice = 0, False
        cur += s
        cur_has_slice = cur_has_slice or units[i].vcl
    if cur:
        out.append(cur)
    return out


def vlc_packets(picture_bytes: int, max_payload: int) -> list[int]:
    """RTP payload sizes of one picture as VLC sends it: the picture cut into
    ⌈picture_bytes / (max_payload − 4)⌉ pieces, each after a 4-byte MPEG video-specific header
    (RFC 2250 §3.4). Every payload is at most `max_payload`; they add up to
    `picture_bytes + 4 · count`."""
    room = max_payload - MPEG_VIDEO_HEADER
    if room < 1:
        raise ValueError(f"max_payload must exceed the {MPEG_VIDEO_HEADER}-byte MPEG video header")
    full, rest = divmod(picture_bytes, room)
    return [max_payload] * full + ([rest + MPEG_VIDEO_HEADER] if rest else [])


def packets(units: list[NalUnit], picture: list[int], max_payload: int, packing: str) -> list[int]:
    """One picture's RTP payload sizes under `packing` (see the module header)."""
    if packing == "vlc":
        return vlc_packets(sum(units[i].size for i in picture), max_payload)
    if packing == "slices":
        return rfc2250_packets(units, picture, max_payload)
    raise ValueError(f"packing must be one of {', '.join(PACKING)}, got {packing!r}")
