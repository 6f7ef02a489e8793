"""`qoelab bench`: simulator speed on the canonical scenarios in ``scenarios/bench/``.

Reports events per wall-second and bottleneck packets per wall-second (packets sent on the
forward bottleneck direction, the fairer cross-simulator metric since event granularity
differs), plus the outcomes that show the run was the intended one (TCP goodput, UDP loss).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from qoelab import _native
from qoelab.paths import root
from qoelab.results import Results
from qoelab.scenario import Scenario

BENCH_SCENARIOS = ("dumbbell-10m", "tfd-1g")


def bench_one(path: Path, reps: int = 1) -> dict[str, Any]:
    sc = Scenario.load(path)
    meta = sc.data.get("bench", {})
    bottleneck = meta.get("bottleneck", "R1->R2")
    text = sc.to_toml()
    walls = []
    for _ in range(reps):
        events, wall, native = _native.bench(text, str(sc.base_dir))
        walls.append(wall)
    res = Results(native)
    links = res.tables["links"]
    names = links.column("link").to_pylist()
    i = names.index(bottleneck)
    bn_pkts = int(links.column("tx_pkts")[i].as_py())
    rev = names.index("->".join(reversed(bottleneck.split("->"))))
    bn_rev = int(links.column("tx_pkts")[rev].as_py())
    flows = res.tables["flows"]
    kinds = np.array(flows.column("transport").to_pylist())
    good = flows.column("goodput_bps").to_numpy()
    sent = flows.column("sent_pkts").to_numpy()
    recv = flows.column("recv_pkts").to_numpy()
    udp = kinds != "tcp"
    wall = statistics.median(walls)
    dur = res.summary["duration_s"]
    return {
        "scenario": path.stem if path.name != "scenario.toml" else path.parent.name,
        "wall_s": wall,
        "walls": walls,
        "events": int(events),
        "events_per_s": events / wall,
        "bn_fwd_pkts": bn_pkts,
        "bn_rev_pkts": bn_rev,
        "bn_fwd_pkts_per_wall_s": bn_pkts / wall,
        "sim_s_per_wall_s": dur / wall,
        "tcp_goodput_mbps": float(np.nansum(good[~udp])) / 1e6 if (~udp).any() else float("nan"),
        "udp_loss": float(1 - recv[udp].sum() / sent[udp].sum()) if udp.any() and sent[udp].sum() else float("nan"),
        "bn_fwd_drops": int(links.column("drop_queue_pkts")[i].as_py()),
        "bn_utilisation": float(links.column("utilisation")[i].as_py()),
    }


def bench_paths(names: list[str] | None) -> list[Path]:
    """The bundled bench scenarios by name (``dumbbell-10m``); an unknown name is an error
    listing the known ones (names never reach outside ``scenarios/bench/``)."""
    from qoelab.errors import QoelabError

    d = root() / "scenarios" / "bench"
    known = sorted(p.stem for p in d.glob("*.toml"))
    for n in names or []:
        if n not in known:
            raise QoelabError(f"bench {n!r}: no such bench scenario (known: {', '.join(known)})")
    return [d / f"{n}.toml" for n in (names or BENCH_SCENARIOS)]


def ns3_reference() -> dict[str, dict[str, Any]]:
    """The ns-3 anchor's medians, if ``../shared/anchors/ns3`` is beside the repository."""
    import json

    f = root().parent / "shared" / "anchors" / "ns3" / "results" / "python.jsonl"
    if not f.exists():
        return {}
    runs: dict[str, list[dict[str, Any]]] = {}
    for line in f.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            runs.setdefault(r["scenario"].lower(), []).append(r)
    return {k: {"wall_s": statistics.median(x["wall_run_s"] for x in v), "events": v[0]["events"],
                "bn_fwd_pkts": v[0]["bn_fwd_pkts"], "tcp_goodput_mbps": v[0]["tcp_goodput_mbps"],
                "udp_loss": v[0]["udp_loss"]} for k, v in runs.items()}


