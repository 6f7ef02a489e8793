"""The WiMAX channel's validation table (docs/models/wimax.md): saturated uplinks in whole runs.

For every frame length, DL:UL split 1:1 and 1:3 and 1, 3 and 10 subscriber stations, each
station is offered 12 Mbit/s of UDP in 1000-B packets (more than the uplink carries) for 10 s.
The table gives the bytes on the air per frame (packets plus the 10-B MAC overhead each) over
the run against the per-frame capacity of the frame layout, and the spread between stations
(max/min − 1). The capacity comes from the layout formula of the model page: symbols
⌊F / 136 µs⌋ − 1, split DL:UL, minus 3 overhead symbols, 180 B per data symbol.

Usage: python scripts/wimax_validation.py [--write]   (--write replaces the table in the page)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from qoelab import Scenario

FRAMES_US = [5_000, 8_000, 10_000, 12_500, 20_000]
SYMBOL_US = 136
BYTES_PER_SYMBOL = 180  # 720 data subcarriers × 16-QAM 1/2 (2 bits) / 8
PAGE = Path(__file__).resolve().parent.parent / "docs" / "models" / "wimax.md"
DURATION_S = 10


def ul_capacity(frame_us: int, dl: int, ul: int) -> int:
    """Uplink bytes per frame of the model's layout."""
    n = frame_us // SYMBOL_US - 1
    dl_sym = (n * dl + (dl + ul) // 2) // (dl + ul)
    return (n - dl_sym - 3) * BYTES_PER_SYMBOL


def run(frame_us: int, split: str, stations: int) -> tuple[float, float]:
    """Bytes on the air per frame and the spread between stations."""
    links, flows = [], []
    for i in range(stations):
        links.append(
            {
                "a": f"ss{i}",
                "b": "bs",
                "rate": "10.588236Mbps",
                "delay": "1ms",
                "mtu": 1024,
                "queue": {"kind": "fifo", "limit": "50p"},
                "channel": {"kind": "wimax", "medium": "bs", "frame": f"{frame_us}us", "dl_ul": split},
            }
        )
        flows.append(
            {
                "name": f"up{i}",
                "src": f"ss{i}",
                "dst": "bs",
                "transport": {"kind": "udp"},
                "app": {"kind": "cbr", "rate": "12Mbps", "payload": "972B"},
            }
        )
    sc = Scenario.from_dict({"sim": {"duration": f"{DURATION_S}s", "seed": 1}, "links": links, "flows": flows})
    res = sc.run()
    t = res.tables["links"]
    names, tx = t.column("link").to_pylist(), t.column("tx_bytes").to_pylist()
    pkts = t.column("tx_pkts").to_pylist()
    per = [tx[names.index(f"ss{i}->bs")] + 10 * pkts[names.index(f"ss{i}->bs")] for i in range(stations)]
    frames = DURATION_S * 1_000_000 / frame_us
    return sum(per) / frames, max(per) / min(per) - 1


def table() -> str:
    rows = [
        "| frame | DL:UL | stations | capacity (B/frame) | measured (B/frame) | error | station spread |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in FRAMES_US:
        for split in ("1:1", "1:3"):
            dl, ul = map(int, split.split(":"))
            cap = ul_capacity(f, dl, ul)
            for n in (1, 3, 10):
                got, spread = run(f, split, n)
                rows.append(
                    f"| {f / 1000:g} ms | {split} | {n} | {cap} | {got:.1f} | {100 * (got / cap - 1):+.2f} % "
                    f"| {100 * spread:.2f} % |"
                )
    return "\n".join(rows)


def main() -> None:
    text = table()
    print(text)
    if "--write" in sys.argv:
        page = PAGE.read_text()
        begin, end = "<!-- wimax-validation:begin -->", "<!-- wimax-validation:end -->"
        new = re.sub(f"{begin}.*?{end}", f"{begin}\n{text}\n{end}", page, flags=re.S)
        PAGE.write_text(new)


if __name__ == "__main__":
    main()
