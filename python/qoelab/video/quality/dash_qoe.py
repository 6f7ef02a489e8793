"""QoE summary of DASH sessions from the `app` probe of the `dash` player.

`qoe_table(run.probe_app)` gives one row per flow that ran a player: start-up delay by both
definitions (first request → first byte, first request → playback start), stalls (count,
total seconds), bitrate switches (count, mean |Δ| of the declared bitrate), the mean declared
bitrate of the segments downloaded, and the mean per-segment download rate. It reads only the
probe rows (`dash_*`, see `docs/models/dash.md`), so it also works on a saved
`probe_app.parquet`. A stall still going at the end of the run has no row yet and is not
counted here (the flow summary's `dash_stall_s` counts it up to the flow's stop).
"""

from __future__ import annotations

import pyarrow as pa

COLUMNS = [
    "flow",
    "segments",
    "startup_first_byte_s",
    "startup_s",
    "stalls",
    "stall_s",
    "switches",
    "switch_mean_bps",
    "mean_bitrate_bps",
    "mean_rate_bps",
]


def qoe_table(probe_app: pa.Table) -> pa.Table:
    """One row per flow with `dash_*` probe rows, in order of first appearance."""
    flows = probe_app.column("flow").to_pylist()
    names = probe_app.column("name").to_pylist()
    values = probe_app.column("value").to_pylist()
    per: dict[str, dict[str, list[float]]] = {}
    for f, n, v in zip(flows, names, values):
        if n.startswith("dash_"):
            per.setdefault(f, {}).setdefault(n, []).append(v)
    nan = float("nan")
    rows: dict[str, list] = {c: [] for c in COLUMNS}
    for f, d in per.items():
        bitrates = d.get("dash_bitrate_bps", [])
        rungs = d.get("dash_rung", [])
        jumps = [abs(b - a) for a, b, ra, rb in zip(bitrates, bitrates[1:], rungs, rungs[1:]) if ra != rb]
        bytes_ = d.get("dash_bytes", [])
        secs = d.get("dash_download_s", [])
        rates = [b * 8 / s for b, s in zip(bytes_, secs) if s > 0]
        stalls = d.get("dash_stall_s", [])

        def mean(v: list[float]) -> float:
            return sum(v) / len(v) if v else nan

        rows["flow"].append(f)
        rows["segments"].append(len(rungs))
        rows["startup_first_byte_s"].append(d.get("dash_startup_first_byte_s", [nan])[0])
        rows["startup_s"].append(d.get("dash_startup_s", [nan])[0])
        rows["stalls"].append(len(stalls))
        rows["stall_s"].append(sum(stalls))
        rows["switches"].append(len(jumps))
        rows["switch_mean_bps"].append(mean(jumps))
        rows["mean_bitrate_bps"].append(mean(bitrates))
        rows["mean_rate_bps"].append(mean(rates))
    return pa.table(rows)
