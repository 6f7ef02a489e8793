"""A bitstream a real receiver wrote, matched back to the sent one's NAL units
(qoelab.video.receiver.received): order, duplicates, partial units, bytes never sent."""

from __future__ import annotations

import numpy as np

from qoelab.video.receiver.received import received_nal_units


def _stream(payloads: list[bytes], start: bytes = b"\0\0\0\1") -> bytes:
    return b"".join(start + p for p in payloads)


P = [bytes([0x09, 0x10]), bytes([0x67, 1, 2, 3]), bytes([0x68, 4]), bytes([0x65]) + bytes(range(1, 60)),
     bytes([0x09, 0x10]), bytes([0x41, 7, 7, 7]), bytes([0x41, 8, 8, 8]), bytes([0x09, 0x10]), bytes([0x01, 9])]


def test_every_unit_received():
    got, unmatched = received_nal_units(_stream(P), _stream(P, b"\0\0\1"))
    assert got.all() and unmatched == 0


def test_lost_units_and_repeated_payloads_match_in_order():
    # Units 3 and 5 lost; the delimiters (equal payloads) must match their own positions.
    rx = [P[i] for i in range(len(P)) if i not in (3, 5)]
    got, unmatched = received_nal_units(_stream(P), _stream(rx))
    assert np.flatnonzero(~got).tolist() == [3, 5] and unmatched == 0


def test_a_partial_unit_counts_as_lost_and_unknown_bytes_as_unmatched():
    rx = P[:3] + [P[3][:20]] + P[4:] + [b"\x06\x05junk"]
    got, unmatched = received_nal_units(_stream(P), _stream(rx))
    assert np.flatnonzero(~got).tolist() == [3]
    assert unmatched == 2


def test_trailing_zero_bytes_do_not_matter():
    got, _ = received_nal_units(_stream(P), b"".join(b"\0\0\0\1" + p + b"\0\0" for p in P))
    assert got.all()
