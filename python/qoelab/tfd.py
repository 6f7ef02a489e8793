"""The IP Traffic Flow Description option: encode and decode its 12 bytes.

The codec is the core's (``crates/core/src/ip/tfd.rs``), with the same strict rules: B and F
together, reserved bits, a NaN or negative float, a wrong type or length are errors.

>>> b = encode("LS", 1_500_000, 300)      # 1.5 MB in the next 300 ms: a 40 Mbit/s stream
>>> b.hex(" ")
'9e 0c 0c 00 00 16 e3 60 00 00 01 2c'
>>> decode(b)["rate_bps"]
40000000.0
"""

from __future__ import annotations

from typing import Any

from qoelab._native import TfdError, tfd_decode, tfd_encode

__all__ = ["encode", "decode", "TfdError"]


def encode(flags: str, next_data: int | float, next_time_ms: int, *, ipv6: bool = False) -> bytes:
    """The option's 12 bytes. ``flags`` is a string of letters from ``BFDMLSE``; a float
    ``next_data`` is sent as IEEE-754 binary32 and sets flag D."""
    return tfd_encode(flags, next_data, next_time_ms, ipv6)


def decode(data: bytes, *, ipv6: bool = False) -> dict[str, Any]:
    """``{flags, next_data, next_time_ms, source, rate_bps}`` from exactly 12 option bytes."""
    return tfd_decode(bytes(data), ipv6)
