"""Annex B byte streams: NAL units, access units and the few slice-header fields we need.

Reading list:
- ITU-T H.264 (08/2021) §7.3.1 NAL unit syntax, §7.3.3 slice header, §7.4.1.2.3 order of NAL units
  and access units, Annex B byte stream format.
- ITU-T H.265 (08/2021) §7.3.1.2 NAL unit header, §7.3.6.1 slice segment header, §7.4.2.4.4 order
  of NAL units.

We read only what the trace needs: the NAL type, whether a slice starts a picture
(`first_mb_in_slice == 0`; `first_slice_segment_in_pic_flag`) and the slice type. Everything else
(POC, reference lists) is left to the decoder. A NAL unit's size includes its start code, so the
sizes of a stream's NAL units add up to the file size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Codec", "NalUnit", "split_nal_units", "parse_nal_units", "group_access_units"]

Codec = str  # "h264" or "hevc"

# H.264 Table 7-1.
_H264_VCL = frozenset(range(1, 6))
# H.265 Table 7-1: 0..31 are VCL; 16..23 are IRAP.
_HEVC_VCL = frozenset(range(0, 32))
_HEVC_AUD = 35
_H264_AUD = 9


@dataclass(frozen=True, slots=True)
class NalUnit:
    """One NAL unit in a byte stream.

    `offset` is the position of its start code and `size` counts the start code too.
    `slice_type` is "I", "P" or "B" for slices and "X" for non-VCL units.
    """

    offset: int
    size: int
    nal_type: int
    vcl: bool
    first_slice: bool
    slice_type: str


def split_nal_units(data: bytes) -> list[tuple[int, int, int]]:
    """Positions of NAL units: `(start_code_offset, payload_offset, end)` for each.

    A four-byte start code `00 00 00 01` is counted as a whole (its leading zero belongs to the
    NAL unit that follows, as `zero_byte` does in Annex B §B.1.1).
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    if buf.size < 4:
        return []
    # Candidate `00 00 01` triplets.
    z = np.flatnonzero((buf[:-2] == 0) & (buf[1:-1] == 0) & (buf[2:] == 1))
    units = []
    for i, pos in enumerate(z):
        start = int(pos - 1) if pos > 0 and buf[pos - 1] == 0 else int(pos)
        payload = int(pos) + 3
        units.append([start, payload, 0])
    for i in range(len(units)):
        units[i][2] = units[i + 1][0] if i + 1 < len(units) else len(data)
    return [tuple(u) for u in units]  # type: ignore[misc]


def _rbsp(payload: bytes, limit: int = 64) -> bytes:
    """The first `limit` bytes of a NAL payload with emulation prevention bytes removed (§7.4.1)."""
    out = bytearray()
    zeros = 0
    for b in payload[: limit + limit // 2]:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
        if len(out) >= limit:
            break
    return bytes(out)


class _Bits:
    """Big-endian bit reader with Exp-Golomb codes (§9.1)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def u(self, n: int) -> int:
        v = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3]  # IndexError on a truncated header
            v = (v << 1) | ((byte >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise ValueError("Exp-Golomb code longer than 32 bits")
        return (1 << zeros) - 1 + self.u(zeros)


_H264_SLICE = {0: "P", 1: "B", 2: "I", 3: "P", 4: "I"}  # slice_type % 5, SP/SI as P/I (Table 7-6)
_HEVC_SLICE = {0: "B", 1: "P", 2: "I"}  # Table 7-7


def _parse_one(data: bytes, start: int, payload: int, end: int, codec: Codec) -> NalUnit:
    if payload >= end:
        raise ValueError(f"empty NAL unit at byte {start}")
    head = data[payload]
    if head & 0x80:
        raise ValueError(f"forbidden_zero_bit set in NAL unit at byte {start}")
    if codec == "h264":
        nal_type = head & 0x1F
        vcl = nal_type in _H264_VCL
        if not vcl:
            return NalUnit(start, end - start, nal_type, False, False, "X")
        bits = _Bits(_rbsp(data[payload + 1 : end]))
        first_mb = bits.ue()
        slice_type = _H264_SLICE[bits.ue() % 5]
        return NalUnit(start, end - start, nal_type, True, first_mb == 0, slice_type)
    if codec == "hevc":
        nal_type = (head >> 1) & 0x3F
        vcl = nal_type in _HEVC_VCL
        if not vcl:
            return NalUnit(start, end - start, nal_type, False, False, "X")
        bits = _Bits(_rbsp(data[payload + 2 : end]))
        first = bits.u(1)
        if 16 <= nal_type <= 23:
            bits.u(1)  # no_output_of_prior_pics_flag
        bits.ue()  # slice_pic_parameter_set_id
        if not first:
            # The slice type of a later segment needs PPS/SPS fields to reach; the first segment
            # of the picture carries the picture's type, which is all the trace records.
            return NalUnit(start, end - start, nal_type, True, False, "?")
        # Assumes num_extra_slice_header_bits == 0 (x265's choice).
        slice_type = _HEVC_SLICE.get(bits.ue(), "?")
        return NalUnit(start, end - start, nal_type, True, True, slice_type)
    raise ValueError(f"unknown codec {codec!r}")


def parse_nal_units(data: bytes, codec: Codec) -> list[NalUnit]:
    """All NAL units of an Annex B byte stream, in stream order.

    Raises `ValueError` when the stream does not start with a start code or a header is malformed.
    """
    units = split_nal_units(data)
    if not units or units[0][0] != 0:
        raise ValueError("not an Annex B byte stream (no start code at byte 0)")
    out = []
    for start, payload, end in units:
        try:
            out.append(_parse_one(data, start, payload, end, codec))
        except IndexError:
            raise ValueError(f"truncated slice header in NAL unit at byte {start}") from None
    return out


def _is_aud(nal: NalUnit, codec: Codec) -> bool:
    return nal.nal_type == (_H264_AUD if codec == "h264" else _HEVC_AUD)


def group_access_units(nals: list[NalUnit], codec: Codec) -> list[list[int]]:
    """Indices of the NAL units of each access unit, in decode order.

    An access unit starts at an AUD, or else at the first non-VCL unit before a slice that starts a
    picture (§7.4.1.2.3): parameter sets and SEI belong to the picture they precede.
    """
    aus: list[list[int]] = []
    cur: list[int] = []
    cur_has_vcl = False
    pending: list[int] = []  # non-VCL units seen since the current picture's last slice
    for i, nal in enumerate(nals):
        if _is_aud(nal, codec):
            # An AUD is the first unit of an access unit: everything before it is the previous one's.
            if cur_has_vcl:
                aus.append(cur + pending)
                cur = []
            else:
                cur = cur + pending
            pending, cur_has_vcl = [], False
            cur.append(i)
        elif not nal.vcl:
            (pending if cur_has_vcl else cur).append(i)
        else:
            if nal.first_slice and cur_has_vcl:
                aus.append(cur)
                cur, cur_has_vcl = pending, False
            else:
                cur.extend(pending)
            pending = []
            cur.append(i)
            cur_has_vcl = True
    cur.extend(pending)
    if cur:
        if not cur_has_vcl:
            if not aus:
                raise ValueError("byte stream has no slices")
            aus[-1].extend(cur)  # trailing non-VCL units (e.g. end of stream) join the last picture
        else:
            aus.append(cur)
    return aus
