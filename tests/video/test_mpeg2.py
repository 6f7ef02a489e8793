"""The MPEG-2 video elementary-stream reader and its RTP packetisations (VLC's, RFC 2250's
slice-aligned one), on a real encode."""

from __future__ import annotations

import av
import numpy as np
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.sources.encode import EncodeConfig, encode
from qoelab.video.traces.mpeg2 import (PICTURE_START, SEQUENCE_HEADER, group_pictures, parse_mpeg2_units,
                                       rfc2250_packets, temporal_references, vlc_packets)
from qoelab.video.traces.trace import read_trace

FRAMES = 40
PAYLOAD = 1000


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpeg2")
    cfg = EncodeConfig(input="lavfi:testsrc2=size=720x576:rate=25", width=720, height=576, fps=25.0, frames=FRAMES,
                       codec="mpeg2", gop=12, bframes=2, bitrate_bps=4_000_000, maxrate_bps=9_800_000,
                       bufsize_bits=1_835_008, rtp_payload_bytes=PAYLOAD)
    res = encode(cfg, out, "m2", keep_bitstream=True)
    return res, res.bitstream.read_bytes()


def test_units_cover_the_file_and_pictures_have_the_encoders_types(encoded):
    res, data = encoded
    units = parse_mpeg2_units(data)
    assert sum(u.size for u in units) == len(data)
    assert units[0].nal_type == SEQUENCE_HEADER
    pics = group_pictures(units)
    assert len(pics) == FRAMES
    ours = [next(units[i].slice_type for i in p if units[i].vcl) for p in pics]
    # The decoder's own picture types, in decode order (one packet per picture).
    ctx = av.CodecContext.create("mpeg2video", "r")
    theirs: dict[int, str] = {}
    for k, p in enumerate(pics):
        pkt = av.Packet(b"".join(data[units[i].offset: units[i].offset + units[i].size] for i in p))
        pkt.pts = pkt.dts = k
        for fr in ctx.decode(pkt):
            theirs[fr.pts] = "?IPB"[int(fr.pict_type)]  # AVPictureType 1, 2, 3
    for fr in ctx.decode(None):
        theirs[fr.pts] = "?IPB"[int(fr.pict_type)]  # AVPictureType 1, 2, 3
    assert [theirs[k] for k in range(FRAMES)] == ours
    assert ours.count("I") == 4 and ours[0] == "I" and ours[1] == "P"  # N = 12, first GOP closed
    # Every picture has one slice per macroblock row: 576 / 16 = 36.
    assert all(sum(units[i].vcl for i in p) == 36 for p in pics)
    assert all(sum(units[i].first_slice for i in p) == 1 for p in pics)
    # Display order from temporal_reference agrees with the reference decode's.
    t = read_trace(res.trace)
    tr = temporal_references(data, units)
    gop_start = np.cumsum([0] + [1 if ours[k] == "I" else 0 for k in range(1, FRAMES)])
    base, disp, seen = 0, [], 0
    for k in range(FRAMES):
        if ours[k] == "I" and k > 0:
            base = seen
        disp.append(base + tr[k])
        seen = max(seen, base + tr[k] + 1)
    assert list(t.frame_display()) == disp
    assert gop_start[-1] == 3


def test_trace_rows_are_vlc_rtp_payloads(encoded):
    """The default packing: each picture cut into (payload - 4)-byte pieces, each after the
    4-byte RFC 2250 header, as VLC's rtp_packetize_mpv sends it."""
    res, data = encoded
    t = read_trace(res.trace)
    units = parse_mpeg2_units(data)
    pics = group_pictures(units)
    assert t.n_frames == FRAMES
    rows_per_frame = np.bincount(t.frame, minlength=FRAMES)
    pic_bytes = np.array([sum(units[i].size for i in p) for p in pics])
    assert list(t.frame_bytes()) == list(pic_bytes + 4 * rows_per_frame)
    assert int(t.size_bytes.sum()) == len(data) + 4 * t.n_nal
    assert list(rows_per_frame) == [-(-b // (PAYLOAD - 4)) for b in pic_bytes]
    for k in range(FRAMES):
        rows = t.size_bytes[t.frame == k]
        assert (rows[:-1] == PAYLOAD).all() and 4 < rows[-1] <= PAYLOAD
    assert (t.type_code != 3).all()  # every packet carries data of its picture


def test_slice_aligned_packing_of_a_real_stream(encoded):
    _, data = encoded
    units = parse_mpeg2_units(data)
    pics = group_pictures(units)
    rows = [rfc2250_packets(units, p, PAYLOAD) for p in pics]
    assert sum(map(sum, rows)) == len(data)
    big_slices = {units[i].size for p in pics for i in p if units[i].vcl and units[i].size > PAYLOAD}
    for r in rows:
        # Greedy: two neighbouring packets of a picture never both fit into one.
        assert all(a + b > PAYLOAD for a, b in zip(r[:-1], r[1:]))
        # A packet over the payload is one slice (with the picture's headers when it is the first).
        for s in r:
            if s > PAYLOAD:
                assert any(s - h in big_slices for h in range(0, 400)), s
    assert vlc_packets(3000, 1000) == [1000, 1000, 1000, 16] and vlc_packets(996, 1000) == [1000]
    with pytest.raises(ValueError):
        vlc_packets(10, 4)


def test_packing_keeps_headers_with_the_first_slice():
    from qoelab.video.traces.bitstream import NalUnit

    hdr = NalUnit(0, 100, PICTURE_START, False, False, "X")
    big = NalUnit(100, 3000, 1, True, True, "I")
    small = [NalUnit(3100 + 400 * i, 400, 2 + i, True, False, "I") for i in range(5)]
    units = [hdr, big, *small]
    assert rfc2250_packets(units, list(range(7)), 1000) == [3100, 800, 800, 400]
    with pytest.raises(ValueError):
        rfc2250_packets(units, [0], 0)


@pytest.mark.parametrize("blob, msg", [
    (b"\x00\x00\x01\x00\x00\x08", "no sequence header"),
    (b"\x00\x00\x01\xb3" + b"\x00" * 8 + b"\x00\x00\x01\x01\xff", "slice before any picture header"),
    (b"\x00\x00\x01\xb3" + b"\x00" * 8 + b"\x00\x00\x01\x00\x00\x20", "picture_coding_type 4"),
    (b"\x00\x00\x01\xb3" + b"\x00" * 8 + b"\x00\x00\x01\x00\x00", "truncated picture header"),
])
def test_malformed_streams_are_refused(blob, msg):
    with pytest.raises(ValueError, match=msg):
        parse_mpeg2_units(blob)


def test_mpeg2_refuses_h264_only_options():
    for kw in ({"slices": 4}, {"slice_max_bytes": 1000}, {"crf": 20.0}):
        with pytest.raises(VideoInputError):
            EncodeConfig(input="lavfi:testsrc2", frames=10, codec="mpeg2", **({"bitrate_bps": 1_000_000} if "crf" not in kw else {}),
                         **kw).check()
    with pytest.raises(VideoInputError, match="only for mpeg2"):
        EncodeConfig(input="lavfi:testsrc2", frames=10, codec="h264", qp=26, rtp_payload_bytes=1400).check()
