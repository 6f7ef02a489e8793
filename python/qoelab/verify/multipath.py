"""``qoelab verify`` rows for MPTCP's coupled congestion control: RFC 6356 §2 goal 2 ("do no
harm") on a shared bottleneck. A two-subflow connection (LIA, OLIA or BALIA) and one NewReno
flow share a 10 Mbit/s drop-tail bottleneck (100 packets, 20 ms RTT) for 300 s; the row's value
is the median over 10 seeds of the connection's goodput over the TCP flow's (RFC 6356: at most
what one TCP would take, i.e. about 1; the issue's bound 1.1). Each seed draws the flows' start
times (the only randomness of a loss-free drop-tail run), so the seeds are independent phases.

The grid runs each controller under both ways of counting the increase
(``coupled_counting``): RFC 6356 §3's bytes and Linux's one MSS per ACK (``mptcp_coupled.c``).
"""

from __future__ import annotations

import functools
import random
import statistics
from typing import Any

from qoelab.scenario import Scenario
from qoelab.verify.core import Params, Tolerance, Validation

SEEDS = 10
SECS = 300.0


def shared_bottleneck(coupled: str, counting: str, seed: int, secs: float = SECS) -> dict[str, Any]:
    """The scenario of one seed: client A with two interfaces and client C, both through R1 → R2
    (10 Mbit/s, 8 ms, FIFO of 100 packets) to B; access links 1 Gbit/s, 1 ms. The MPTCP flow
    and the NewReno flow start at independent uniform times in [0, 1) s drawn from ``seed``."""
    rng = random.Random(seed)
    starts = [rng.random(), rng.random()]
    acc = {"rate": "1Gbps", "delay": "1ms"}
    return {
        "sim": {"duration": f"{secs:g}s", "seed": seed},
        "links": [{"a": "A", "b": "R1", **acc, "a_addr": "10.1.0.1"},
                  {"a": "A", "b": "R1", **acc, "a_addr": "10.1.1.1"},
                  {"a": "R1", "b": "R2", "rate": "10Mbps", "delay": "8ms", "queue": {"kind": "fifo", "limit": "100p"}},
                  {"a": "R2", "b": "B", **acc}, {"a": "C", "b": "R1", **acc}],
        "flows": [{"name": "mp", "src": "A", "dst": "B", "start": f"{starts[0] * 1e3:.3f}ms",
                   "transport": {"kind": "mptcp", "coupled": coupled, "coupled_counting": counting},
                   "app": {"kind": "bulk"}, "subflows": [{"src_addr": "10.1.0.1"}, {"src_addr": "10.1.1.1"}]},
                  {"name": "tcp", "src": "C", "dst": "B", "start": f"{starts[1] * 1e3:.3f}ms",
                   "transport": {"kind": "tcp", "cc": "newreno"}, "app": {"kind": "bulk"}}],
    }


@functools.cache
def _ratio(coupled: str, counting: str, seed: int) -> tuple[float, float]:
    r = Scenario.from_dict(shared_bottleneck(coupled, counting, seed), source="<verify>").run()
    mp, tcp = r.flow("mp")["goodput_bps"], r.flow("tcp")["goodput_bps"]
    return mp / tcp, (mp + tcp) / 1e6


def measure_goal2(params: Params) -> dict[str, Any]:
    runs = [_ratio(params["coupled"], params["counting"], s) for s in range(1, SEEDS + 1)]
    ratios = [r for r, _ in runs]
    return {"value": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "total_mbps": statistics.median(t for _, t in runs)}


GRID = [{"coupled": c, "counting": n} for c in ("lia", "olia", "balia") for n in ("bytes", "acks")]

GOAL2 = Validation(
    name="mptcp_goal2",
    title="MPTCP (2 subflows) beside one NewReno flow on a shared 10 Mbit/s drop-tail bottleneck, 300 s: "
          "goodput ratio MPTCP ÷ TCP, median of 10 seeds",
    citation="RFC 6356 §2 goal 2 (do no harm: no more than a single TCP on the shared path) and goal 1 (at least "
             "as much as it); OLIA: Khalili et al., IEEE/ACM ToN 2013; BALIA: Peng et al., IEEE/ACM ToN 2016; "
             "per-ACK counting and the cwnd-limited check: Linux out-of-tree MPTCP net/mptcp/mptcp_coupled.c",
    grid=GRID,
    quick=[p for p in GRID if p["counting"] == "bytes"],
    measure=measure_goal2,
    reference=lambda params, m: 1.0,
    tolerance=Tolerance(0.5, 0.1, why=(
        "the issue's bound for goal 2 is 1.1 × one TCP; below, a connection under half a share would break goal 1 "
        "(improve throughput), so the band is one-sided in spirit: 0.5 … 1.1")),
    describe=lambda p: f"{p['coupled']}, counting {p['counting']}",
    digits=3,
)
