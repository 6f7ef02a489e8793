"""Python access to the TFD option codec."""

import struct

import pytest

from qoelab import tfd


def test_vector_and_roundtrip():
    b = tfd.encode("LS", 1_500_000, 300)
    assert b == bytes.fromhex("9e0c0c000016e3600000012c")
    d = tfd.decode(b)
    assert d == {"flags": "LS", "next_data": 1_500_000, "next_time_ms": 300, "source": "encoder", "rate_bps": 40e6}
    v6 = tfd.encode("B", 1000, 10, ipv6=True)
    assert v6[:2] == bytes([0x1E, 10]) and tfd.decode(v6, ipv6=True)["source"] == "buffer"


def test_float_sets_d():
    b = tfd.encode("F", 1.5e6, 300)
    flags, data = struct.unpack(">H", b[2:4])[0], b[4:8]
    assert flags & 0x2000 and data == bytes.fromhex("49b71b00")
    assert tfd.decode(b)["flags"] == "FD"


@pytest.mark.parametrize(
    "raw, msg",
    [
        ("9e0cc0000016e3600000012c", "B"),          # B and F together
        ("9e0c00010016e3600000012c", "reserved"),   # a reserved bit
        ("9e0b0c000016e3600000012c", "length"),     # wrong length
        ("9e0c0c000016e360000001", "truncated"),    # short
        ("1e0c0c000016e3600000012c", "type"),       # IPv6 type in an IPv4 header
    ],
)
def test_strict_decoding(raw, msg):
    with pytest.raises(tfd.TfdError) as e:
        tfd.decode(bytes.fromhex(raw))
    assert msg.lower() in str(e.value).lower()


def test_encode_rejects_invalid():
    with pytest.raises(tfd.TfdError):
        tfd.encode("BF", 100, 300)
    with pytest.raises(tfd.TfdError):
        tfd.encode("X", 100, 300)
    with pytest.raises(tfd.TfdError):
        tfd.encode("", float("nan"), 300)
