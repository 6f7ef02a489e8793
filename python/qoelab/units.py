"""Quantities with units as scenario files write them ("5Mbps", "10ms", "64KB", "50p"), read
into SI numbers: bit/s, seconds, bytes, packets.

The grammar and the unit names are those of the core's parser (`crates/core/src/units.rs`), so
a value the simulator accepts reads here to the same number. Used where a value leaves qoelab
as data (sweep tables), not to check scenarios: the core does that.
"""

from __future__ import annotations

import re

#: unit → (quantity kind, factor to the SI unit of that kind)
UNITS: dict[str, tuple[str, float]] = {
    **{u: ("rate_bps", 1.0) for u in ("bps", "b/s")},
    **{u: ("rate_bps", 1e3) for u in ("kbps", "Kbps", "kb/s")},
    **{u: ("rate_bps", 1e6) for u in ("Mbps", "Mb/s")},
    **{u: ("rate_bps", 1e9) for u in ("Gbps", "Gb/s")},
    "Tbps": ("rate_bps", 1e12),
    "ns": ("time_s", 1e-9), "us": ("time_s", 1e-6), "µs": ("time_s", 1e-6), "ms": ("time_s", 1e-3),
    "s": ("time_s", 1.0), "min": ("time_s", 60.0), "h": ("time_s", 3600.0),
    "B": ("bytes", 1.0), "KB": ("bytes", 1e3), "kB": ("bytes", 1e3), "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9), "KiB": ("bytes", 1024.0), "MiB": ("bytes", 1024.0**2),
    "GiB": ("bytes", 1024.0**3),
    "p": ("packets", 1.0),
}

_QUANTITY = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]+)\s*")


def quantity(text: str) -> tuple[str, float] | None:
    """`"5Mbps"` → `("rate_bps", 5e6)`; `"10ms"` → `("time_s", 0.01)`; None if `text` is not
    one number with a known unit."""
    m = _QUANTITY.fullmatch(text)
    if not m or m.group(2) not in UNITS:
        return None
    kind, factor = UNITS[m.group(2)]
    return kind, float(m.group(1)) * factor
