#!/usr/bin/env python3
"""The emulation's limits (docs/performance.md, "Emulation"): the packet rate and bit rate at
which the real-time loop's lateness (lag) stays under 100 µs and 1 ms at the 99th percentile,
for 1500-byte and 100-byte datagrams.

Two real hosts through one simulated router on 10 Gbit/s links of 100 µs (so the network itself
never queues); iperf3 sends UDP at a fixed rate for ``--seconds`` from one to the other; for each
rate the run's lag (p50, p99, max, events over 1 ms), the datagrams the hosts' kernels dropped
because the loop did not read them in time, and the rate the receiver got. Needs root. Prints a
Markdown table; ``--json FILE`` keeps the rows.

    sudo python scripts/emulation_limits.py --seconds 5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

SCENARIO = {
    "name": "emulation-limits",
    "sim": {"duration": "60s"},
    "nodes": [{"name": "A", "real": True}, {"name": "B", "real": True}],
    "links": [{"a": "A", "b": "R", "rate": "10Gbps", "delay": "100us", "queue": {"kind": "fifo", "limit": "10000p"}},
              {"a": "R", "b": "B", "rate": "10Gbps", "delay": "100us", "queue": {"kind": "fifo", "limit": "10000p"}}],
}

#: Offered packet rates per datagram size (IP bytes), packets per second.
RATES = {1500: [1_000, 10_000, 20_000, 40_000, 60_000, 80_000, 120_000],
         100: [1_000, 10_000, 20_000, 40_000, 80_000, 120_000, 160_000]}


def one(size: int, pps: int, seconds: float, rt_priority: int) -> dict:
    from qoelab.emulate import emulate
    from qoelab.scenario import Scenario

    sc = Scenario.from_dict(SCENARIO)
    payload = size - 28
    with tempfile.TemporaryDirectory() as d:
        em = emulate(sc, Path(d), daemons=[("B", "iperf3 -s")], rt_priority=rt_priority,
                     execs=[("A", f"sleep 0.5; iperf3 -u -c $QOELAB_ADDR_B -b {pps * payload * 8} -l {payload} "
                                  f"-t {seconds:g} --pacing-timer 100")])
        s = em.results.summary
        flows = [r for r in em.results.tables["real_flows"].to_pylist() if r["proto"] == "udp" and r["dst_port"] == 5201]
        data = max(flows, key=lambda r: r["sent_pkts"]) if flows else None
    return {
        "size": size, "offered_pps": pps, "offered_mbps": pps * size * 8 / 1e6,
        "sent_pps": (data["sent_pkts"] / seconds) if data else 0.0,
        "carried_pps": (data["recv_pkts"] / seconds) if data else 0.0,
        "lag_p50_us": s["lag_p50_s"] * 1e6, "lag_p99_us": s["lag_p99_s"] * 1e6, "lag_max_us": s["lag_max_s"] * 1e6,
        "late_events": s["lag_late_events"], "events": s["lag_events"],
        "host_dropped": s.get("emu_host_tx_dropped_pkts", 0), "rt_priority": s["emu_rt_priority"],
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rt-priority", type=int, default=10)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    from qoelab.emulate import unavailable

    why = unavailable()
    if why:
        print(f"skipped: {why}")
        return 0
    rows = []
    print("| datagram | offered pkt/s | offered Mbit/s | entered pkt/s | carried pkt/s | lag p50 µs | lag p99 µs "
          "| lag max µs | events > 1 ms | host drops |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size, rates in RATES.items():
        for pps in rates:
            r = one(size, pps, a.seconds, a.rt_priority)
            rows.append(r)
            print(f"| {size} B | {pps:,} | {r['offered_mbps']:.1f} | {r['sent_pps']:,.0f} | {r['carried_pps']:,.0f} "
                  f"| {r['lag_p50_us']:.0f} "
                  f"| {r['lag_p99_us']:.0f} | {r['lag_max_us']:.0f} | {r['late_events']:,} of {r['events']:,} "
                  f"| {r['host_dropped']:,.0f} |", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
