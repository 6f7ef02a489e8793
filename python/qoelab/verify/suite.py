"""The validations of ``qoelab verify``, each declared as data: grid, measured value, reference,
tolerance (with its justification) and documented limits. ``docs/validation.md`` explains each
one and holds the full table.

Every measurement builds a small scenario as plain data, runs it through the core with a fixed
seed and reduces the result tables; nothing here runs per event. Parameters that need a TCP
*profile* (``tcp_profile``) use it only if the core knows profiles (:func:`tcp_profile`); until
then they run the default TCP and say so in the row's parameters.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow.compute as pc

from qoelab import paths
from qoelab.errors import ScenarioError
from qoelab.scenario import Scenario
from qoelab.verify import closed_forms as cf
from qoelab.verify import multipath
from qoelab.verify.core import Limit, Params, Tolerance, Validation

DATA = Path(__file__).parent / "data"

# --- scenario builders ----------------------------------------------------------------------


def _run(data: dict[str, Any]) -> Any:
    return Scenario.from_dict(data, source="<verify>").run()


@functools.cache
def tcp_profile(name: str) -> str | None:
    """``name`` if the core accepts ``transport.profile = name`` (TCP profiles, issue 16 item 1),
    else None: the row then runs the core's default TCP and its label says so."""
    sc = Scenario.from_dict({
        "sim": {"duration": "1s"},
        "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "1ms"}],
        "flows": [{"name": "t", "src": "S", "dst": "D", "transport": {"kind": "tcp", "profile": name},
                   "app": {"kind": "bulk"}}],
    }, source="<verify>")
    try:
        sc.validate()
    except ScenarioError:
        return None
    return name


def _with_profile(transport: dict[str, Any], profile: str | None) -> dict[str, Any]:
    return {**transport, "profile": profile} if profile else dict(transport)


def _lossy_path(rtt_ms: float, secs: float, loss: dict[str, Any], transport: dict[str, Any], seed: int = 5) -> Any:
    """One bulk TCP flow over a 100 Mbit/s link of one-way delay RTT/2 with ``loss`` on the data
    direction and a buffer (1000 packets) that never fills at the rates these losses allow, so
    the RTT is the propagation RTT and every loss is the loss model's."""
    return _run({
        "sim": {"duration": f"{secs}s", "seed": seed},
        "links": [{"a": "S", "b": "D", "rate": "100Mbps", "delay": f"{rtt_ms / 2}ms",
                   "queue": {"kind": "fifo", "limit": "1000p"}, "loss_ab": loss}],
        "flows": [{"name": "tcp", "src": "S", "dst": "D", "transport": transport, "app": {"kind": "bulk"}}],
    })


def _pct(x: float) -> str:
    return f"{x * 100:g} %"


# --- Padhye (NewReno, SACK off) -------------------------------------------------------------

PADHYE_SECS = 1000.0
#: First timeout T0 of eq. (30): the scenarios set min_rto = 1 s, and SRTT + 4·RTTVAR stays
#: below it at RTTs ≤ 300 ms with a steady path.
PADHYE_T0 = 1.0
#: Receiver window of eq. (30) in packets: the 4 MiB buffer over 1448-byte segments.
WMAX = (4 << 20) / 1448


#: The closed-form TCP rows (Padhye, the SACK bound, CUBIC's response function) validate the
#: RFC algorithms, so they pin the RFC-pure profile once the core has profiles (today's TCP is
#: that profile); None until then.
_RFC = tcp_profile("rfc")
#: The Linux profile, for the rows that validate Linux's own behaviours.
_LINUX = tcp_profile("linux")


def measure_padhye(params: Params, sack: bool = False) -> dict[str, Any]:
    tr = _with_profile({"kind": "tcp", "cc": "newreno", "sack": sack, "min_rto": "1s"}, params.get("tcp_profile"))
    r = _lossy_path(params["rtt_ms"], PADHYE_SECS, {"kind": "bernoulli", "p": params["p"]}, tr)
    f = r.flow("tcp")
    return {"value": f["segments_sent"] / PADHYE_SECS, "srtt_s": f["srtt_s"], "rto_count": f["rto_count"]}


def ref_padhye(params: Params, m: dict[str, Any]) -> float:
    return cf.padhye_full(params["p"], m["srtt_s"], PADHYE_T0, 1.0, WMAX)


def _padhye_timeouts_matter(params: Params) -> bool:
    return cf.padhye_timeout_share(params["p"], params["rtt_ms"] / 1e3, PADHYE_T0) >= 0.25


def _between_full_and_td(value: float, params: Params, m: dict[str, Any]) -> bool:
    lo = 0.75 * cf.padhye_full(params["p"], m["srtt_s"], PADHYE_T0, 1.0, WMAX)
    return lo <= value <= 1.10 * cf.padhye_td_only(params["p"], m["srtt_s"])


def _profile_suffix(p: Params) -> str:
    return f", profile={p['tcp_profile']}" if p.get("tcp_profile") else ""


def _describe_p_rtt(p: Params) -> str:
    return f"p={_pct(p['p'])}, RTT={p['rtt_ms']:g} ms{_profile_suffix(p)}"


PADHYE_GRID = [{"p": p, "rtt_ms": rtt, "tcp_profile": _RFC} for rtt in (20, 50, 100, 150, 200, 300)
               for p in (0.005, 0.01, 0.02, 0.05)]
PADHYE_QUICK = [g for g in PADHYE_GRID if (g["p"], g["rtt_ms"]) in ((0.005, 100), (0.02, 100), (0.01, 200), (0.05, 300), (0.02, 20))]

PADHYE = Validation(
    name="padhye",
    title="NewReno (SACK off) send rate vs Padhye et al. eq. (30)",
    citation="J. Padhye, V. Firoiu, D. Towsley, J. Kurose, Modeling TCP Throughput: A Simple Model and its "
             "Empirical Validation, SIGCOMM 1998, eq. (30), b = 1, T0 = 1 s (min_rto), RTT = measured SRTT",
    grid=PADHYE_GRID,
    quick=PADHYE_QUICK,
    measure=measure_padhye,
    reference=ref_padhye,
    tolerance=Tolerance(0.25, 0.25, why=(
        "eq. (30) takes p as the loss-indication rate (one per window with losses) while the path drops "
        "packets independently, so several losses of one window count once and the sender does better; "
        "under random loss the timeout-free term itself is ~7 % above the periodic-loss value (Mathis et al. "
        "1997: C = 1.31 vs 1.22)")),
    unit="pkt/s",
    describe=_describe_p_rtt,
    limits=(Limit(
        applies=_padhye_timeouts_matter,
        reason=("eq. (30)'s timeout term (≥ 25 % of its denominator here) assumes that after a first loss the "
                "rest of the round is lost too (drop-tail correlation), so Reno sees fewer than 3 duplicate ACKs "
                "with probability min(1, 3/w); under independent loss the rest of the window arrives and NewReno "
                "times out far less often. The measured rate must then lie between eq. (30) (−25 %) and its "
                "timeout-free term (+10 %)"),
        check=_between_full_and_td),),
)

# --- SACK against the timeout-free bound ----------------------------------------------------


def measure_padhye_sack(params: Params) -> dict[str, Any]:
    return measure_padhye(params, sack=True)


def ref_td_only(params: Params, m: dict[str, Any]) -> float:
    return cf.padhye_td_only(params["p"], m["srtt_s"])


def _lost_retransmissions_matter(params: Params) -> bool:
    # Share of time a TD-only sender would spend in RTOs after lost retransmissions: about
    # (losses per second) × p × T0 = B_TD · p² · T0; counts when it alone exceeds the tolerance.
    b = cf.padhye_td_only(params["p"], params["rtt_ms"] / 1e3)
    return b * params["p"] ** 2 * PADHYE_T0 >= 0.15


def _between_full_and_td_sack(value: float, params: Params, m: dict[str, Any]) -> bool:
    lo = 0.75 * cf.padhye_full(params["p"], m["srtt_s"], PADHYE_T0, 1.0, WMAX)
    return lo <= value <= 1.15 * cf.padhye_td_only(params["p"], m["srtt_s"])


PADHYE_SACK = Validation(
    name="padhye_sack",
    title="SACK (RFC 6675, NewReno CC) send rate vs the timeout-free bound",
    citation="Padhye et al. 1998, eq. (20) (triple-duplicate periods only) = Mathis, Semke, Mahdavi, Ott, The "
             "Macroscopic Behavior of the TCP Congestion Avoidance Algorithm, CCR 27(3) 1997, C = sqrt(3/2): "
             "B = 1/(RTT·sqrt(2p/3)), RTT = measured SRTT",
    grid=PADHYE_GRID,
    quick=PADHYE_QUICK,
    measure=measure_padhye_sack,
    reference=ref_td_only,
    tolerance=Tolerance(0.15, 0.15, why=(
        "SACK repairs all losses of a window in one recovery, so the timeouts of eq. (30) (which model Reno's "
        "failure to recover several losses) do not apply and the timeout-free term is the right bound; "
        "±15 % covers the random- vs periodic-loss constant (+7 %, Mathis et al.), loss events rarer than "
        "packet losses (+), and the timeouts that remain when a retransmission is itself lost (−)")),
    unit="pkt/s",
    describe=_describe_p_rtt,
    limits=(Limit(
        applies=_lost_retransmissions_matter,
        reason=("documented TCP limit (docs/models/tcp.md): no detection of lost retransmissions other than the "
                "RTO, so each lost retransmission (probability p) costs T0 = 1 s; here that alone costs more than "
                "the tolerance. The measured rate must still lie between eq. (30) (−25 %) and the bound (+15 %)"),
        check=_between_full_and_td_sack),),
)

# --- M/D/1 ----------------------------------------------------------------------------------

MD1_RATE = 10e6
MD1_IP_BYTES = 1000.0


def measure_md1(params: Params) -> dict[str, Any]:
    rho = params["rho"]
    secs = 1000 if rho >= 0.8 else 400
    # 972 B payload + 28 B UDP/IP headers = 1000 B packets; a 10 Gbit/s access link keeps the
    # arrivals at the 10 Mbit/s link (almost exactly) Poisson.
    payload_rate = rho * MD1_RATE * 972.0 / MD1_IP_BYTES
    r = _run({
        "sim": {"duration": f"{secs}s", "seed": 3},
        "links": [
            {"a": "S", "b": "R", "rate": "10Gbps", "delay": "0ms", "queue": {"kind": "fifo", "limit": "100000p"}},
            {"a": "R", "b": "D", "rate": "10Mbps", "delay": "0ms", "queue": {"kind": "fifo", "limit": "100000p"}},
        ],
        "flows": [{"name": "p", "src": "S", "dst": "D", "transport": {"kind": "udp"},
                   "app": {"kind": "poisson", "rate": f"{payload_rate}bps", "payload": "972B"}}],
    })
    service = MD1_IP_BYTES * 8 / MD1_RATE
    fixed = service + MD1_IP_BYTES * 8 / 10e9
    wait = r.flow("p")["delay_mean_s"] - fixed
    util = r.links.column("utilisation").to_pylist()[2]
    return {"value": wait * 1e3, "utilisation": util, "packets": r.flow("p")["recv_pkts"]}


def ref_md1(params: Params, m: dict[str, Any]) -> float:
    return cf.md1_wait(params["rho"], MD1_IP_BYTES * 8 / MD1_RATE) * 1e3


MD1 = Validation(
    name="md1",
    title="Poisson arrivals of 1000-byte packets at a 10 Mbit/s link: mean wait vs M/D/1",
    citation="Pollaczek–Khinchine mean-value formula for M/D/1: W = ρS/(2(1 − ρ)) (e.g. Kleinrock, Queueing "
             "Systems vol. 1, 1975, §5.7)",
    grid=[{"rho": x} for x in (0.3, 0.5, 0.7, 0.8, 0.9)],
    quick=[{"rho": x} for x in (0.3, 0.8)],
    measure=measure_md1,
    reference=ref_md1,
    tolerance=Tolerance(0.05, 0.05, why=(
        "sampling error of a mean over 1.5·10⁵–10⁶ correlated waits: the busy-period correlation grows as "
        "1/(1 − ρ)², which is why loads ≥ 0.8 run 1000 s")),
    unit="ms",
    describe=lambda p: f"ρ={p['rho']:g}",
)

# --- Gilbert–Elliott ------------------------------------------------------------------------

GE_GRID = [
    {"p": 0.01, "r": 0.5, "loss_good": 0.0, "loss_bad": 1.0},
    {"p": 0.05, "r": 0.25, "loss_good": 0.0, "loss_bad": 1.0},
    {"p": 0.002, "r": 0.1, "loss_good": 0.0, "loss_bad": 1.0},
    {"p": 0.02, "r": 0.3, "loss_good": 0.01, "loss_bad": 0.8},
]


@functools.cache
def _ge_run(p: float, r: float, loss_good: float, loss_bad: float) -> tuple[float, float, int]:
    """(loss rate, mean run length of consecutive losses, packets judged) of a 100 Mbit/s CBR
    stream of 1000-byte packets through a 1 Gbit/s link with the GE model, 100 s (1.29·10⁶ packets)."""
    res = _run({
        "sim": {"duration": "100s", "seed": 11},
        "links": [{"a": "S", "b": "D", "rate": "1Gbps", "delay": "1ms", "queue": {"kind": "fifo", "limit": "1000p"},
                   "loss_ab": {"kind": "gilbert_elliott", "p": p, "r": r, "loss_good": loss_good, "loss_bad": loss_bad}}],
        "flows": [{"name": "u", "src": "S", "dst": "D", "transport": {"kind": "udp"},
                   "app": {"kind": "cbr", "rate": "100Mbps", "payload": "972B"}, "packet_log": True}],
    })
    t = res.packets.sort_by([("seq", "ascending")])
    # Packets still in flight at the end were never judged lost or received: leave them out.
    judged = pc.or_(pc.is_valid(t["recv_ns"]), pc.not_equal(t["drop"], "none"))
    t = t.filter(judged)
    lost = pc.not_equal(t["drop"], "none").to_numpy(zero_copy_only=False).astype(np.int8)
    n = len(lost)
    starts = int(lost[0]) + int(np.count_nonzero(np.diff(lost) == 1))
    return float(lost.sum() / n), float(lost.sum() / starts) if starts else math.nan, n


def measure_ge_rate(params: Params) -> dict[str, Any]:
    rate, _, n = _ge_run(params["p"], params["r"], params["loss_good"], params["loss_bad"])
    return {"value": rate, "packets": n}


def measure_ge_burst(params: Params) -> dict[str, Any]:
    _, burst, n = _ge_run(params["p"], params["r"], params["loss_good"], params["loss_bad"])
    return {"value": burst, "packets": n}


def _describe_ge(p: Params) -> str:
    return f"p={p['p']:g}, r={p['r']:g}, k_G={p['loss_good']:g}, k_B={p['loss_bad']:g}"


GE_WHY = ("sampling error over 1.29·10⁶ packets (≥ 5·10³ loss runs per point); the chain is stepped per "
          "packet with its own random stream, so only chance moves the estimate")

GE_RATE = Validation(
    name="ge_loss_rate",
    title="Gilbert–Elliott loss: long-run loss rate",
    citation="Gilbert, BSTJ 39(5) 1960; Elliott, BSTJ 42(5) 1963; as qoelab steps it (docs/models/links.md): "
             "π_B = p/(p + r), loss = π_G·k_G + π_B·k_B",
    grid=GE_GRID,
    quick=GE_GRID[:1] + GE_GRID[3:],
    measure=measure_ge_rate,
    reference=lambda params, m: cf.ge_loss_rate(params["p"], params["r"], params["loss_good"], params["loss_bad"]),
    tolerance=Tolerance(0.05, 0.05, why=GE_WHY),
    describe=_describe_ge,
    digits=4,
)

GE_BURST = Validation(
    name="ge_burst",
    title="Gilbert–Elliott loss: mean length of a run of consecutive losses",
    citation="Gilbert 1960 (k_G = 0, k_B = 1: 1/r); in general P(L)/(P(L) − P(L,L)) with "
             "P(L,L) = Σ π_s k_s Σ T(s,s') k_s' (packet judged, then the chain steps)",
    grid=GE_GRID,
    quick=GE_GRID[:1] + GE_GRID[3:],
    measure=measure_ge_burst,
    reference=lambda params, m: cf.ge_mean_burst(params["p"], params["r"], params["loss_good"], params["loss_bad"]),
    tolerance=Tolerance(0.05, 0.05, why=GE_WHY),
    unit="pkts",
    describe=_describe_ge,
)

# --- Fairness -------------------------------------------------------------------------------


def _dumbbell(rtts_ms: list[float], rate: str, buffer: str, transport: dict[str, Any], secs: float, seed: int = 2) -> Any:
    """Bulk flows through a drop-tail bottleneck R1→R2 (1 ms one-way); flow i's access links
    carry the rest of its base RTT (half on each side)."""
    n = len(rtts_ms)
    links: list[dict[str, Any]] = [{"a": "R1", "b": "R2", "rate": rate, "delay": "1ms",
                                    "queue": {"kind": "fifo", "limit": buffer}}]
    flows = []
    for i, rtt in enumerate(rtts_ms):
        side = (rtt / 2 - 1) / 2
        links.append({"a": f"S{i}", "b": "R1", "rate": "10Gbps", "delay": f"{side}ms", "queue": {"kind": "fifo", "limit": "10000p"}})
        links.append({"a": "R2", "b": f"D{i}", "rate": "10Gbps", "delay": f"{side}ms", "queue": {"kind": "fifo", "limit": "10000p"}})
        flows.append({"name": f"tcp{i}", "src": f"S{i}", "dst": f"D{i}", "start": f"{100 + 10 * i}ms",
                      "transport": transport, "app": {"kind": "bulk"}})
    return _run({"sim": {"duration": f"{secs}s", "seed": seed}, "links": links, "flows": flows}), n


def measure_jain(params: Params) -> dict[str, Any]:
    r, n = _dumbbell([22.0] * params["n"], "10Mbps", "50p", {"kind": "tcp", "cc": params["cc"]}, 60)
    goodputs = [r.flow(f"tcp{i}")["goodput_bps"] for i in range(n)]
    return {"value": cf.jain(goodputs), "total_mbps": sum(goodputs) / 1e6}


FAIRNESS = Validation(
    name="fairness",
    title="Equal-RTT bulk flows through a 10 Mbit/s drop-tail bottleneck (50 packets): Jain's index of goodputs",
    citation="R. Jain, D. Chiu, W. Hawe, A Quantitative Measure of Fairness…, DEC TR-301, 1984; equal shares "
             "are the AIMD fixed point (Chiu & Jain, Computer Networks 17, 1989)",
    grid=[{"n": n, "cc": cc} for cc in ("newreno", "cubic") for n in (2, 5, 10)],
    quick=[{"n": 5, "cc": "newreno"}, {"n": 5, "cc": "cubic"}],
    measure=measure_jain,
    reference=lambda params, m: 1.0,
    tolerance=Tolerance(0.05, 0.0, relative=False, why=(
        "60 s runs of synchronised drop-tail AIMD flows keep some share noise; 0.95 is the usual "
        "'fair' threshold and the one of crates/core/tests/tcp_validation.rs")),
    describe=lambda p: f"n={p['n']}, {p['cc']}, SACK",
    digits=4,
)

# --- RTT unfairness -------------------------------------------------------------------------

RTT_CASES = {
    # CUBIC runs on a 100 Mbit/s path (BDP 330–1330 packets) so that it leaves the
    # Reno-friendly region; NewReno on 10 Mbit/s, where it converges in the run time.
    "newreno": ("10Mbps", "100p", 120.0),
    "cubic": ("100Mbps", "500p", 120.0),
}


def service_time_s(rate: str) -> float:
    """One bottleneck service time: a 1,500-byte packet at `rate` ("10Mbps"), seconds."""
    return 1500 * 8 / (float(rate.removesuffix("Mbps")) * 1e6)


def rtt_unfairness_run(cc: str, base_ms: list[float], overhead: bool, seed: int = 4) -> dict[str, Any]:
    """One run of the `rtt_unfairness` dumbbell for `cc` with base RTTs `base_ms` (short, long),
    the senders randomised by ns-2's `overhead_` of one bottleneck service time when `overhead`
    (Floyd & Jacobson 1992, §4): goodputs, RTTs with the mean queueing delay, exponent."""
    rate, buffer, secs = RTT_CASES[cc]
    transport: dict[str, Any] = {"kind": "tcp", "cc": cc}
    if overhead:
        transport["overhead"] = f"{service_time_s(rate) * 1e6:g}us"
    r, _ = _dumbbell(base_ms, rate, buffer, transport, secs, seed=seed)
    x = [r.flow(f"tcp{i}")["goodput_bps"] for i in range(2)]
    links = r.links
    i = links.column("link").to_pylist().index("R1->R2")
    queue_s = links.column("mean_backlog_bytes")[i].as_py() * 8 / links.column("rate_bps")[i].as_py()
    # Lakshman & Madhow's RTT includes the queueing delay both flows see at the bottleneck.
    rtts = [b / 1e3 + queue_s for b in base_ms]
    return {"goodput_bps": x, "rtt_s": rtts, "mean_queue_ms": queue_s * 1e3,
            "exponent": cf.rtt_exponent(x[0], x[1], rtts[0], rtts[1]),
            "fast_retransmits": [r.flow(f"tcp{i}")["fast_retransmits"] for i in range(2)],
            "rto_count": [r.flow(f"tcp{i}")["rto_count"] for i in range(2)]}


#: Seeds of the `rtt_unfairness` ensemble. With random overhead a run is one draw of a random
#: process; at 20/40 ms the queueing delay inside both RTTs leaves an effective RTT ratio of
#: 1.2–1.3, so one run's goodput noise moves the exponent by more than the tolerance.
RTT_SEEDS = tuple(range(1, 9))


def measure_rtt_exponent(params: Params) -> dict[str, Any]:
    """The exponent of the seed ensemble: mean goodputs against mean RTTs (each with the
    bottleneck's mean queueing delay) over :data:`RTT_SEEDS`, with the per-seed exponents' range."""
    runs = [rtt_unfairness_run(params["cc"], list(params["rtt_ms"]), overhead=True, seed=s) for s in RTT_SEEDS]
    x = [sum(m["goodput_bps"][i] for m in runs) / len(runs) for i in range(2)]
    rtt = [sum(m["rtt_s"][i] for m in runs) / len(runs) for i in range(2)]
    per_seed = [m["exponent"] for m in runs]
    return {"value": cf.rtt_exponent(x[0], x[1], rtt[0], rtt[1]), "goodput_mbps": [g / 1e6 for g in x],
            "per_seed_min": min(per_seed), "per_seed_max": max(per_seed), "seeds": len(runs),
            "mean_queue_ms": sum(m["mean_queue_ms"] for m in runs) / len(runs)}


RTT_UNFAIRNESS = Validation(
    name="rtt_unfairness",
    title="Two bulk flows of different RTT through one drop-tail bottleneck, senders randomised by one service "
          "time of overhead: exponent a of throughput ∝ RTT^−a",
    citation="T. V. Lakshman, U. Madhow, IEEE/ACM ToN 5(3) 1997 (AIMD: a = 1 with independent losses, a = 2 "
             "when drop-tail losses hit both flows together); S. Ha, I. Rhee, L. Xu, CUBIC, SIGOPS OSR 42(5) "
             "2008, §3 (window growth in real time: a = 1 with synchronised losses, a = 1/4 with independent "
             "losses from RFC 9438 §5.1's response function); both senders wait a random time uniform in "
             "[0, one bottleneck service time of a 1,500-byte packet] before each send (transport key "
             "`overhead`, ns-2's overhead_), as S. Floyd, V. Jacobson, Internetworking: Research and Experience "
             "3(3) 1992, §4, do against drop-tail phase effects; the exponent of an 8-seed ensemble (mean "
             "goodputs against mean RTTs)",
    grid=[{"cc": cc, "rtt_ms": r} for cc in ("newreno", "cubic") for r in ((20, 40), (20, 80), (40, 160))],
    quick=[{"cc": "newreno", "rtt_ms": (20, 80)}, {"cc": "cubic", "rtt_ms": (40, 160)}],
    measure=measure_rtt_exponent,
    reference=lambda params, m: (1.0, 2.0) if params["cc"] == "newreno" else (0.25, 1.0),
    tolerance=Tolerance(0.25, 0.25, relative=False, why=(
        "the theoretical ranges are limits of fully independent and fully synchronised losses; a finite "
        "two-flow run sits in between with some noise, and CUBIC's Reno-friendly region (a like NewReno's) "
        "still governs the short-RTT flow's start")),
    describe=lambda p: f"{p['cc']}, RTT {p['rtt_ms'][0]}/{p['rtt_ms'][1]} ms",
)

# --- CUBIC response function ----------------------------------------------------------------

CUBIC_SECS = 600.0


def _cubic_window(params: Params, response: Callable[[float, float], tuple[float, str]]) -> dict[str, Any]:
    """One CUBIC flow under Bernoulli loss: its average window, segments sent per round trip
    (the send rate times the mean of the run's RTT samples, so a round that a delayed ACK
    stretches counts as one round), and the region ``response`` (the closed form it is judged
    against) places it in. The flow's SRTT at the end of the run is kept beside it."""
    tr = _with_profile({"kind": "tcp", "cc": "cubic"}, params.get("tcp_profile"))
    r = _lossy_path(params["rtt_ms"], CUBIC_SECS, {"kind": "bernoulli", "p": params["p"]}, tr)
    f = r.flow("tcp")
    rtt = f["mean_rtt_s"]
    _, region = response(params["p"], rtt)
    return {"value": f["segments_sent"] / CUBIC_SECS * rtt, "rtt_s": rtt, "srtt_s": f["srtt_s"], "region": region}


def measure_cubic_window(params: Params) -> dict[str, Any]:
    return _cubic_window(params, cf.cubic_response)


#: (RTT ms, loss probability) points of the CUBIC window validations (RFC 9438's and Linux's).
_CUBIC_GRID = [(40, 0.01), (40, 0.02), (40, 0.05), (100, 0.0001), (200, 0.001), (300, 0.0005), (300, 0.0002)]


CUBIC_RESPONSE = Validation(
    name="cubic_response",
    title="CUBIC (SACK) average window vs RFC 9438's response function, Bernoulli loss",
    citation="RFC 9438 §5.1: AVG_W_cubic = (C(3+β)/(4(1−β)))^¼ · RTT^¾/p^¾ (CUBIC region) and "
             "AVG_W_est = sqrt(3/(2p)) (Reno-friendly region), whichever is larger; C = 0.4, β = 0.7; the "
             "measured window is segments sent per round trip: the send rate times the mean RTT sample",
    grid=[{"rtt_ms": r, "p": p, "tcp_profile": _RFC} for r, p in _CUBIC_GRID],
    quick=[{"rtt_ms": 40, "p": 0.02, "tcp_profile": _RFC}, {"rtt_ms": 300, "p": 0.0005, "tcp_profile": _RFC}],
    measure=measure_cubic_window,
    reference=lambda params, m: cf.cubic_response(params["p"], m["rtt_s"])[0],
    tolerance=Tolerance(0.10, 0.30, why=(
        "the closed form assumes one loss exactly every 1/p packets; under Bernoulli loss, long loss-free "
        "intervals let W_est pass cwnd_prior, after which α_cubic = 1 (RFC 9438 §4.3), and carry W_cubic into "
        "its convex region, both of which only raise the average (for Reno, random loss alone gives +7 %: "
        "Mathis et al.); the AIMD(1, 0.7) average, the Reno-friendly ceiling, is +37 %")),
    unit="segments",
    describe=lambda p: (f"RTT={p['rtt_ms']:g} ms, p={_pct(p['p'])} ({cf.cubic_response(p['p'], p['rtt_ms'] / 1e3)[1]})"
                        f"{_profile_suffix(p)}"),
)

# --- Linux's CUBIC: fixed TCP-friendly α -------------------------------------------------------


def measure_cubic_linux_window(params: Params) -> dict[str, Any]:
    return _cubic_window(params, cf.cubic_response_linux)

CUBIC_LINUX = Validation(
    name="cubic_linux",
    title="Linux CUBIC (profile linux: fixed TCP-friendly α, SACK, RACK, PRR, delayed ACKs) average window vs "
          "AIMD with Linux's α and RFC 9438's CUBIC-region response, Bernoulli loss",
    citation="Linux tcp_cubic.c bictcp_update (tcp_friendliness: tcp_cwnd += 1 per cwnd·beta_scale/8 acknowledged, "
             "beta_scale = 15 for β = 717/1024, so α = 8/15, never switched to 1); AIMD(α, β) average window "
             "sqrt(α(1+β)/(2(1−β)p)) (RFC 9438 §5.1's derivation with Linux's α); RFC 9438 §5.1 "
             "AVG_W_cubic = (C(3+β)/(4(1−β)))^¼ · RTT^¾/p^¾; the larger of the two; C = 0.4, β = 0.7; the measured "
             "window is segments sent per round trip: the send rate times the mean RTT sample (a round that a "
             "delayed ACK stretches counts as one)",
    grid=[{"rtt_ms": r, "p": p, "tcp_profile": _LINUX} for r, p in _CUBIC_GRID],
    quick=[{"rtt_ms": 40, "p": 0.02, "tcp_profile": _LINUX}, {"rtt_ms": 300, "p": 0.0005, "tcp_profile": _LINUX}],
    measure=measure_cubic_linux_window,
    reference=lambda params, m: cf.cubic_response_linux(params["p"], m["rtt_s"])[0],
    tolerance=Tolerance(0.20, 0.30, why=(
        "below: Linux grows cwnd towards its Reno estimate at (tcp_cwnd − cwnd)/cwnd per ACK, so the window "
        "trails it by about one RTT of growth (6–10 % under the closed form's own periodic loss, "
        "cc::cubic::tests::linux_rule_keeps_alpha_fixed_under_periodic_loss), and the whole Linux stack spends "
        "a round trip or more per loss event in PRR recovery without growth and reduces from cwnd, not "
        "FlightSize; above: random rather than periodic loss, and loss-free stretches that carry W_cubic into "
        "its convex region (as for cubic_response)")),
    unit="segments",
    describe=lambda p: (f"RTT={p['rtt_ms']:g} ms, p={_pct(p['p'])} "
                        f"({cf.cubic_response_linux(p['p'], p['rtt_ms'] / 1e3)[1]}){_profile_suffix(p)}"),
)

# --- The kernel dumbbell (hand-measured Linux figures) -----------------------------------------


@functools.cache
def kernel_hand() -> dict[str, Any]:
    """The Linux kernel's figures on the namespace dumbbell, measured by hand
    (``data/kernel_hand.json``; the committed harness is issue 34 item 5)."""
    return json.loads((DATA / "kernel_hand.json").read_text())


#: The bottleneck of the kernel dumbbell: tbf at 10 Mbit/s counts the 14-byte Ethernet header,
#: so on IP bytes it serves 10 Mbit/s × 1500/1514.
KERNEL_BOTTLENECK_BPS = round(10e6 * 1500 / 1514)


def kernel_dumbbell(rtt_ms: float, flows: int, secs: float, seed: int, transport: dict[str, Any],
                    probes: list[str] | None = None) -> Any:
    """The twin of the hand-measured kernel dumbbell (``data/kernel_hand.json``'s note): a
    10 Gbit/s access link carrying the path's RTT (2 µs one way when ``rtt_ms`` is 0), a
    9.9075 Mbit/s bottleneck with a 49-packet FIFO, 2 µs to the receiver; ``flows`` bulk flows
    from t = 0."""
    access = f"{rtt_ms / 2}ms" if rtt_ms else "2us"
    data: dict[str, Any] = {
        "sim": {"duration": f"{secs}s", "seed": seed},
        "links": [{"a": "S", "b": "R", "rate": "10Gbps", "delay": access, "queue": {"kind": "fifo", "limit": "10000p"}},
                  {"a": "R", "b": "D", "rate": f"{KERNEL_BOTTLENECK_BPS}bps", "delay": "2us",
                   "queue": {"kind": "fifo", "limit": "49p"}}],
        "flows": [{"name": f"f{i}", "src": "S", "dst": "D", "transport": transport, "app": {"kind": "bulk"}}
                  for i in range(flows)],
    }
    if probes:
        data["output"] = {"probes": probes}
    return _run(data)


def _bottleneck_drops(r: Any) -> int:
    links = r.links
    return int(links.column("drop_queue_pkts")[links.column("link").to_pylist().index("R->D")].as_py())


# --- HyStart's exit point -------------------------------------------------------------------------

HYSTART_SECS = 3.0


def measure_hystart_exit(params: Params) -> dict[str, Any]:
    """The window at which slow start ends without a loss (the first ssthresh below "infinite"
    before any fast retransmit or timeout), in segments: one plain bulk flow (no first write,
    as the kernel reference's sender) on ``qoelab verify --kernel``'s dumbbell, where the
    reference was measured."""
    from qoelab.verify import kernel

    tr = _with_profile({"kind": "tcp", "cc": "cubic"}, params["tcp_profile"])
    data = kernel.scenario(kernel.Point("cubic", int(params["rtt_ms"]), 1, 0.0), HYSTART_SECS, real=False, seed=1)
    data["flows"] = [{"name": "f0", "src": "sender", "dst": "receiver", "transport": tr, "app": {"kind": "bulk"}}]
    data["output"]["probes"] = ["cwnd", "tcp_events"]
    r = _run(data)
    rows = r.series("cwnd", flow="f0").to_pylist()
    losses = [e["t_s"] for e in r.series("tcp_events", flow="f0").to_pylist() if e["event"] in ("rto", "fast_retransmit")]
    first_loss = min(losses, default=math.inf)
    exit_row = next((x for x in rows if x["ssthresh_bytes"] < 2**62), None)
    if exit_row is None or exit_row["t_s"] >= first_loss:
        return {"value": math.nan, "exit": "by a loss" if exit_row else "none"}
    return {"value": exit_row["cwnd_bytes"] / 1448, "t_s": exit_row["t_s"]}


def ref_hystart_exit(params: Params, m: dict[str, Any]) -> tuple[float, float]:
    """The range of the kernel's HyStart exits over its runs that had one (``hystart_plain``:
    a sender with no first write; at 160 ms two of five runs left slow start by a loss)."""
    runs = [c for c in kernel_hand()["hystart_plain"]["cases"][params["case"]]["hystart_exit_cwnd"] if c is not None]
    return float(min(runs)), float(max(runs))


HYSTART_EXIT = Validation(
    name="hystart_exit",
    title="HyStart (profile linux: tcp_cubic.c's ACK-train and delay detectors) exit window of one CUBIC flow on the "
          "kernel dumbbell vs the Linux kernel's, measured by hand",
    citation="Linux 6.18 tcp_cubic.c hystart_update on qoelab verify --kernel's emulated dumbbell (10 Mbit/s, "
             "50 packets), one plain sender (no first write), 5 runs per RTT, exit windows from nstat "
             "TcpExtTCPHystartTrainCwnd / DelayCwnd, python/qoelab/verify/data/kernel_hand.json hystart_plain "
             "(measured 2026-11-28); the reference is the range over the runs that left slow start by HyStart",
    grid=[{"case": "rtt0-1flow", "rtt_ms": 0, "tcp_profile": _LINUX},
          {"case": "rtt40-1flow", "rtt_ms": 40, "tcp_profile": _LINUX},
          {"case": "rtt160-1flow", "rtt_ms": 160, "tcp_profile": _LINUX}],
    quick=[{"case": "rtt0-1flow", "rtt_ms": 0, "tcp_profile": _LINUX},
           {"case": "rtt40-1flow", "rtt_ms": 40, "tcp_profile": _LINUX}],
    measure=measure_hystart_exit,
    reference=ref_hystart_exit,
    tolerance=Tolerance(0.25, 0.25, why=(
        "five hand runs per RTT: the kernel's own exits spread by a factor of 1.7 at 40 ms (59-99 segments) "
        "and at 160 ms (149-229, or none), the ACK-train detector's 2-ms test deciding on the hosts' timing; "
        "the band asks for the same detector firing at the same stage of slow start")),
    unit="segments",
    describe=lambda p: f"RTT≈{p['rtt_ms']:g} ms, one flow, {_describe_profile(p['tcp_profile'])}",
)

# --- Slow start after idle ------------------------------------------------------------------------

IDLE_SECS = 200.0


def measure_idle_restart(params: Params) -> dict[str, Any]:
    """A `web` flow (1-MB files, exponential think times) over a 1 Gbit/s, 40-ms path that never
    queues: at each file's first segment after an idle period longer than the RTO, cwnd against
    Linux's `tcp_cwnd_restart` computed from the cwnd before it and the idle time (from the packet
    log). The RTO is SRTT + 200 ms (the Linux rule's floor on a steady path), and the SRTT lies
    between the minimum RTT and 1.25 times it; restarts where that range changes the formula's
    answer (idle periods near a whole number of RTOs) are left out. Every ACK is immediate and
    there is no host jitter, so that RTT samples are the path's."""
    tr = _with_profile({"kind": "tcp", "cc": "cubic", "delayed_ack": False, "host_jitter": "0s"}, params["tcp_profile"])
    r = _run({
        "sim": {"duration": f"{IDLE_SECS}s", "seed": 3},
        "links": [{"a": "S", "b": "D", "rate": "1Gbps", "delay": "20ms", "queue": {"kind": "fifo", "limit": "10000p"}}],
        "flows": [{"name": "w", "src": "S", "dst": "D", "transport": tr, "packet_log": True,
                   "app": {"kind": "web", "size": "1MB", "think": params["think"]}}],
        "output": {"probes": ["cwnd"]},
    })
    min_rtt = r.flow("w")["min_rtt_s"]
    rto_lo, rto_hi = 0.2 + min_rtt, 0.2 + 1.25 * min_rtt
    sent = np.sort(r.packets.filter(pc.greater(r.packets["size_bytes"], 100))["sent_ns"].to_numpy()) / 1e9
    rows = r.series("cwnd", flow="w").to_pylist()
    times = np.array([x["t_s"] for x in rows])
    cwnd = np.array([x["cwnd_bytes"] for x in rows]) // 1448
    gaps = np.diff(sent)
    checked = matched = skipped = 0
    for i in np.nonzero(gaps > rto_lo)[0]:
        idle, start = gaps[i], sent[i + 1]
        before = int(cwnd[np.searchsorted(times, start - 1e-3, side="right") - 1])
        after = int(cwnd[np.searchsorted(times, start, side="right") - 1])
        want = {cf.cwnd_restart(before, 10, idle, rto) if idle > rto else before for rto in (rto_lo, rto_hi)}
        if len(want) > 1:
            skipped += 1
            continue
        checked += 1
        matched += int(after in want)
    return {"value": matched / checked if checked else math.nan, "restarts": checked, "skipped": skipped,
            "rto_s": [rto_lo, rto_hi]}


IDLE_RESTART = Validation(
    name="idle_restart",
    title="Slow start after idle (profile linux): cwnd at each restart vs tcp_cwnd_restart's formula",
    citation="Linux net/ipv4/tcp_output.c tcp_cwnd_restart (net.ipv4.tcp_slow_start_after_idle = 1, "
             "tcp_slow_start_after_idle_check): while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1, restart = "
             "min(IW, cwnd); RFC 2861 §3; the share of restarts where the window is exactly that",
    grid=[{"think": t, "tcp_profile": _LINUX} for t in ("300ms", "1s", "3s")],
    quick=[{"think": "1s", "tcp_profile": _LINUX}],
    measure=measure_idle_restart,
    reference=lambda params, m: 1.0,
    tolerance=Tolerance(0.0, 0.0, relative=False, why=(
        "an exact rule on exact inputs: every restart must match (restarts whose answer depends on where in "
        "its possible range the RTO lies are left out)")),
    describe=lambda p: (f"1-MB files, think {p['think']} (exponential), {_describe_profile(p['tcp_profile'])}, "
                        "no delayed ACKs, no jitter"),
    digits=4,
)

# --- Independent repetitions --------------------------------------------------------------------

SPREAD_SEEDS = tuple(range(1, 11))


def measure_seed_spread(params: Params) -> dict[str, Any]:
    """Bottleneck drops of the kernel dumbbell over :data:`SPREAD_SEEDS` (same scenario, seed only
    differs): their coefficient of variation."""
    tr = _with_profile({"kind": "tcp", "cc": "cubic"}, params["tcp_profile"])
    drops = [_bottleneck_drops(kernel_dumbbell(params["rtt_ms"], params["flows"], 60, s, tr)) for s in SPREAD_SEEDS]
    k = kernel_hand()["cases"][params["case"]]["drops"]
    return {"value": float(np.std(drops, ddof=1) / np.mean(drops)), "drops": drops, "distinct": len(set(drops)),
            "kernel_drops": k, "kernel_cv": float(np.std(k, ddof=1) / np.mean(k))}


def ref_seed_spread(params: Params, m: dict[str, Any]) -> tuple[float, float]:
    return m["kernel_cv"] / 3, m["kernel_cv"] * 3


SEED_SPREAD = Validation(
    name="seed_spread",
    title="Independent repetitions: coefficient of variation of a drop-tail bottleneck's drops over 10 seeds "
          "(profile linux, host_jitter) vs the kernel's over its runs",
    citation="the Linux kernel's run-to-run spread on this machine's namespace dumbbell, measured by hand "
             "(python/qoelab/verify/data/kernel_hand.json, 2026-11-26; 5 runs at RTT≈0, 3 at 40 ms); runs "
             "of one scenario differ only by seed, through the hosts' send-path jitter",
    grid=[{"case": "rtt0-4flows", "rtt_ms": 0, "flows": 4, "tcp_profile": _LINUX},
          {"case": "rtt40-4flows", "rtt_ms": 40, "flows": 4, "tcp_profile": _LINUX}],
    quick=[{"case": "rtt0-4flows", "rtt_ms": 0, "flows": 4, "tcp_profile": _LINUX}],
    measure=measure_seed_spread,
    reference=ref_seed_spread,
    tolerance=Tolerance(0.0, 0.0, relative=False, why=(
        "within a factor of three of the kernel's spread either way: the kernel's is measured from 3–5 runs, "
        "and a spread of zero (seeds that change nothing: pseudo-replicates) must fail")),
    describe=lambda p: f"RTT≈{p['rtt_ms']:g} ms, {p['flows']} flows, 60 s, {_describe_profile(p['tcp_profile'])}",
    digits=3,
)

# --- Spurious retransmissions ---------------------------------------------------------------


def measure_spurious(params: Params) -> dict[str, Any]:
    tr = _with_profile({"kind": "tcp"}, params["tcp_profile"])
    r = _lossy_path(params["rtt_ms"], 400, {"kind": "bernoulli", "p": 0.01}, tr, seed=1)
    f = r.flow("tcp")
    retx = f["retransmitted_segments"]
    return {"value": f["duplicate_segments"] / retx if retx else 0.0, "duplicates": f["duplicate_segments"],
            "retransmitted": retx, "rto_count": f["rto_count"]}


def _describe_profile(profile: str | None) -> str:
    return f"profile={profile}" if profile else "default TCP (no profiles in this core)"



SPURIOUS = Validation(
    name="spurious",
    title="Duplicate segments at the receiver / retransmitted segments, one bulk flow, 1 % Bernoulli loss, 400 s",
    citation="issue 16 target (Linux: RTO = SRTT + max(4·RTTVAR, 200 ms), re-armed on retransmission, "
             "RACK-TLP, RFC 8985): a segment is sent twice needlessly only after a spurious timeout",
    grid=[{"rtt_ms": r, "tcp_profile": _LINUX} for r in (20, 50, 100, 160, 200, 300)],
    quick=[{"rtt_ms": r, "tcp_profile": _LINUX} for r in (20, 160)],
    measure=measure_spurious,
    reference=lambda params, m: 0.02,
    tolerance=Tolerance(math.inf, 0.0, relative=False, why=(
        "with a timer that does not fire while ACKs still arrive, duplicates come only from the rare "
        "spurious timeout; 2 % is the issue's acceptance figure")),
    describe=lambda p: f"RTT={p['rtt_ms']:g} ms, {_describe_profile(p['tcp_profile'])}",
)

# --- ns-3 cross-check -----------------------------------------------------------------------


@functools.cache
def ns3_anchor() -> dict[str, Any]:
    """ns-3.44's measured figures for the two anchor scenarios (``data/ns3_anchor.json``)."""
    return json.loads((DATA / "ns3_anchor.json").read_text())


@functools.cache
def _anchor_run(scenario: str, profile: str | None) -> tuple[float, float]:
    """(TCP goodput in Mbit/s, UDP loss) of ``scenarios/bench/<scenario>.toml``, computed as the
    anchor does: sink bytes × 8 / (duration − 0.1 s); 1 − received/sent UDP packets (packets in
    flight at the end count as lost)."""
    sc = Scenario.load(paths.root() / "scenarios" / "bench" / f"{scenario}.toml")
    if profile:
        for f in sc.data["flows"]:
            if f["transport"]["kind"] == "tcp":
                f["transport"]["profile"] = profile
    r = sc.run()
    fl = r.flows
    kind = fl.column("transport").to_pylist()
    dur = r.summary["duration_s"]
    tcp = sum(b for k, b in zip(kind, fl.column("delivered_bytes").to_pylist()) if k == "tcp")
    sent = sum(s for k, s in zip(kind, fl.column("sent_pkts").to_pylist()) if k == "udp")
    recv = sum(s for k, s in zip(kind, fl.column("recv_pkts").to_pylist()) if k == "udp")
    return tcp * 8 / (dur - 0.1) / 1e6, 1.0 - recv / sent


def measure_ns3(params: Params) -> dict[str, Any]:
    goodput, loss = _anchor_run(params["scenario"], params["tcp_profile"])
    return {"value": goodput if params["metric"] == "tcp_goodput_mbps" else loss}


_NS3 = tcp_profile("ns3")

NS3 = Validation(
    name="ns3",
    title="The ns-3 anchor scenarios (scenarios/bench/) against ns-3.44's measured figures",
    citation="ns-3.44 (PyPI ns3 3.44.post0), shared/anchors/ns3/README.md and results/python.jsonl, measured "
             "2026-11-21; copied to python/qoelab/verify/data/ns3_anchor.json",
    grid=[{"scenario": s, "metric": m, "tcp_profile": _NS3}
          for s in ("dumbbell-10m", "tfd-1g") for m in ("tcp_goodput_mbps", "udp_loss")],
    quick=[{"scenario": s, "metric": m, "tcp_profile": _NS3}
           for s in ("dumbbell-10m", "tfd-1g") for m in ("tcp_goodput_mbps", "udp_loss")],
    measure=measure_ns3,
    reference=lambda params, m: float(ns3_anchor()["scenarios"][params["scenario"]][params["metric"]]),
    tolerance=Tolerance(0.10, 0.10, why="the issue's acceptance band for a cross-simulator check"),
    describe=lambda p: f"{p['scenario']}, {'TCP goodput Mbit/s' if p['metric'] == 'tcp_goodput_mbps' else 'UDP loss'}, "
                       f"{_describe_profile(p['tcp_profile'])}",
    digits=4,
)

# --- BBR v1 ---------------------------------------------------------------------------------

#: The BBR rows' bottleneck: 10 Mbit/s (833.3 packets/s of 1,500 B) with a 50-packet FIFO.
BBR_RATE_BPS = 10e6
BBR_PPS = BBR_RATE_BPS / 8 / 1500
BBR_BUFFER = 50
BBR_SECS = 120.0
#: The steady-state window: after the first PROBE_RTT (10 s), whose sample is the min-RTT
#: estimate from then on (before it the estimate is the handshake's RTT).
BBR_STEADY_FROM = 12.0


@functools.cache
def _bbr_run(n: int, rtt_ms: float) -> dict[str, float]:
    """``n`` bulk BBR flows through the :func:`_dumbbell` bottleneck (10 Mbit/s, 50 packets, equal
    RTTs ``rtt_ms``) for 120 s: total goodput, the time-averaged bottleneck queue (packets) over
    [12 s, end), from the ``queues`` samples, and the flows' last min-RTT estimate (``bbr`` probe)."""
    links: list[dict[str, Any]] = [{"a": "R1", "b": "R2", "rate": "10Mbps", "delay": "1ms",
                                    "queue": {"kind": "fifo", "limit": f"{BBR_BUFFER}p"}}]
    flows = []
    side = (rtt_ms / 2 - 1) / 2
    for i in range(n):
        links.append({"a": f"S{i}", "b": "R1", "rate": "10Gbps", "delay": f"{side}ms"})
        links.append({"a": "R2", "b": f"D{i}", "rate": "10Gbps", "delay": f"{side}ms"})
        flows.append({"name": f"bbr{i}", "src": f"S{i}", "dst": f"D{i}", "start": f"{100 + 10 * i}ms",
                      "transport": {"kind": "tcp", "cc": "bbr"}, "app": {"kind": "bulk"}})
    r = _run({"sim": {"duration": f"{BBR_SECS}s", "seed": 2}, "links": links, "flows": flows,
              "output": {"probes": ["bbr"]}})
    q = r.tables["queues"].filter(pc.equal(r.tables["queues"]["link"], "R1->R2"))
    t = q["t_s"].to_numpy()
    pk = q["packets"].to_numpy().astype(float)
    w = np.diff(np.append(t, BBR_SECS))
    sel = t >= BBR_STEADY_FROM
    b = r.tables["probe_bbr"]
    min_rtt, cwnds = [], []
    for i in range(n):
        f = b.filter(pc.equal(b["flow"], f"bbr{i}"))
        min_rtt.append(f["min_rtt_ns"][-1].as_py() / 1e9)
        # Time-weighted mean cwnd (at each new round) over the steady window.
        ft, fc = f["t_ns"].to_numpy() / 1e9, f["cwnd_bytes"].to_numpy() / 1448
        fw = np.diff(np.append(ft, BBR_SECS))
        fs = ft >= BBR_STEADY_FROM
        cwnds.append(float((fc[fs] * fw[fs]).sum() / fw[fs].sum()))
    return {"goodput_bps": sum(r.flow(f"bbr{i}")["goodput_bps"] for i in range(n)),
            "queue_pkts": float((pk[sel] * w[sel]).sum() / w[sel].sum()), "min_rtt_s": float(np.mean(min_rtt)),
            "cwnd_pkts": cwnds, "drops": sum(r.flow(f"bbr{i}")["drop_queue_pkts"] for i in range(n))}


def measure_bbr_bandwidth(params: Params) -> dict[str, Any]:
    m = _bbr_run(params["n"], params["rtt_ms"])
    return {"value": m["goodput_bps"] / 1e6, **m}


def ref_bbr_bandwidth(params: Params, m: dict[str, Any]) -> float:
    # The payload rate (1448 of every 1500 bytes) less the time at 4 packets in PROBE_RTT.
    return BBR_RATE_BPS * 1448 / 1500 * (1 - cf.bbr_probe_rtt_share(m["min_rtt_s"])) / 1e6


def measure_bbr_queue(params: Params) -> dict[str, Any]:
    m = _bbr_run(params["n"], params["rtt_ms"])
    return {"value": m["queue_pkts"], **m}


def ref_bbr_queue(params: Params, m: dict[str, Any]) -> float:
    if params["n"] == 1:
        return cf.bbr_single_flow_queue(BBR_PPS, m["min_rtt_s"])
    return cf.bbr_shared_queue(BBR_PPS, m["min_rtt_s"], m["cwnd_pkts"], BBR_BUFFER)


BBR_RTTS = (20, 40, 80)


def _describe_bbr(p: Params) -> str:
    return f"{p['n']} flow{'s' if p['n'] > 1 else ''}, RTT={p['rtt_ms']:g} ms"


BBR_BANDWIDTH = Validation(
    name="bbr_bandwidth",
    title="BBR v1 through a 10 Mbit/s, 50-packet drop-tail bottleneck, 120 s: total goodput",
    citation="N. Cardwell et al., BBR: Congestion-Based Congestion Control, ACM Queue 14(5) 2016; Linux "
             "net/ipv4/tcp_bbr.c: the bottleneck's payload rate less PROBE_RTT's share, (200 ms + min_rtt) "
             "every 10 s + 200 ms + 2 min_rtt (docs/models/bbr.md)",
    grid=[{"n": n, "rtt_ms": rtt} for n in (1, 2) for rtt in BBR_RTTS],
    quick=[{"n": 1, "rtt_ms": 40}],
    measure=measure_bbr_bandwidth,
    reference=ref_bbr_bandwidth,
    tolerance=Tolerance(0.02, 0.015, why=(
        "STARTUP (about 8 rounds) and its losses cost well under 1 % of 120 s; above, a PROBE_RTT shorter "
        "than modelled (the estimate is refreshed at once when the queue is already empty)")),
    unit="Mbit/s",
    describe=_describe_bbr,
    digits=4,
)

BBR_QUEUE = Validation(
    name="bbr_queue",
    title="One BBR v1 flow through a 10 Mbit/s, 50-packet drop-tail bottleneck: mean queue in steady state "
          "(12–120 s)",
    citation="Linux net/ipv4/tcp_bbr.c's gain cycle (bbr_is_next_cycle_phase, bbr_inflight, "
             "bbr_quantization_budget): paced at 99 % of an exact estimate, one flow is pacing-limited and its "
             "queue is the cycle's: the 0.75 phase ends at even(⌈B⌉ + 6) in flight, the 1.25 phase at "
             "even(⌈1.25 B⌉ + 6) + 2 (closed_forms.bbr_single_flow_queue), B at the flow's min-RTT estimate",
    grid=[{"n": 1, "rtt_ms": rtt} for rtt in BBR_RTTS],
    quick=[{"n": 1, "rtt_ms": 40}],
    measure=measure_bbr_queue,
    reference=ref_bbr_queue,
    tolerance=Tolerance(2.0, 2.0, relative=False, why=(
        "the phase ends compare whole packets in flight before an ACK (2 of them delivered by it with delayed "
        "ACKs) and at the next paced departure, which the closed form resolves to about ±1.5 packets")),
    unit="pkts",
    describe=_describe_bbr,
)

BBR_SHARED_QUEUE = Validation(
    name="bbr_shared_queue",
    title="Two BBR v1 flows through a 10 Mbit/s, 50-packet drop-tail bottleneck: mean queue in steady state "
          "(12–120 s)",
    citation="Linux net/ipv4/tcp_bbr.c: each flow's max filter holds more than its share, so the flows pace above "
             "the bottleneck and are cwnd-limited: queue = Σ cwnd − B, at most the buffer (closed_forms."
             "bbr_shared_queue; cwnd the flows' mean from the bbr probe, B at their min-RTT estimate); M. Hock, "
             "R. Bless, M. Zitterbart, Experimental Evaluation of BBR Congestion Control, ICNP 2017, §IV",
    grid=[{"n": 2, "rtt_ms": rtt} for rtt in BBR_RTTS],
    quick=[{"n": 2, "rtt_ms": 40}],
    measure=measure_bbr_queue,
    reference=ref_bbr_queue,
    tolerance=Tolerance(0.25, 0.10, why=(
        "the queue is below the windows' sum while a flow is in PROBE_RTT or in a recovery's packet "
        "conservation, and below the buffer's 50 packets where the windows exceed it (drop-tail losses)")),
    unit="pkts",
    describe=_describe_bbr,
)

# --- TFRC (RFC 5348) ------------------------------------------------------------------------

TFRC_GRID = [{"rtt_ms": rtt, "p": p} for rtt in (20.0, 100.0) for p in (0.005, 0.01, 0.02, 0.05, 0.1)]
TFRC_QUICK = [{"rtt_ms": 20.0, "p": 0.01}, {"rtt_ms": 100.0, "p": 0.05}]


@functools.cache
def _tfrc_run(rtt_ms: float, p: float) -> dict[str, float]:
    """One TFRC flow of 1000-B payloads from a 50 Mbit/s CBR source (far above its allowed
    rate) over a 1 Gbit/s link of one-way delay RTT/2, Bernoulli loss ``p`` on the data
    direction, 200 s (the cells of crates/core/tests/tfrc.rs and scripts/tfrc_table.py)."""
    secs = 200.0
    res = _run({
        "sim": {"duration": f"{secs}s", "seed": 7},
        "links": [{"a": "S", "b": "D", "rate": "1Gbps", "delay": f"{int(rtt_ms * 500)}us",
                   "queue": {"kind": "fifo", "limit": "10000p"}, "loss_ab": {"kind": "bernoulli", "p": p}}],
        "flows": [{"name": "tfrc", "src": "S", "dst": "D", "transport": {"kind": "tfrc"},
                   "app": {"kind": "cbr", "rate": "50Mbps", "payload": "1000B"}}],
    })
    f = res.flow("tfrc")
    sent = f["tfrc_sent_pkts"]
    # X counts payload bytes at the nominal s (the MSS): 1000-B packets leave at X / 1000 per second.
    return {"pkts_per_s": sent / secs, "s": f["tfrc_s_bytes"], "payload": f["tfrc_mean_payload_bytes"],
            "rtt_s": f["tfrc_rtt_s"],
            "p_event": f["tfrc_loss_events"] / sent, "p_loss": f["tfrc_lost_pkts"] / sent}


def measure_tfrc_rate(params: Params) -> dict[str, Any]:
    m = _tfrc_run(params["rtt_ms"], params["p"])
    return {"value": m["pkts_per_s"], **m}


def ref_tfrc_rate(params: Params, m: dict[str, Any]) -> float:
    return cf.tfrc_equation(m["s"], m["rtt_s"], m["p_event"]) / m["payload"]


def _describe_tfrc(p: Params) -> str:
    return f"p={_pct(p['p'])}, RTT={p['rtt_ms']:g} ms"


TFRC_RATE = Validation(
    name="tfrc_rate",
    title="TFRC send rate vs RFC 5348's equation at the measured loss event rate",
    citation="RFC 5348 §3.1 (b = 1, t_RTO = 4R); the issue 18 acceptance band",
    grid=TFRC_GRID,
    quick=TFRC_QUICK,
    measure=measure_tfrc_rate,
    reference=ref_tfrc_rate,
    tolerance=Tolerance(0.10, 0.10, why="the issue's band: the long-run rate within 10 % of the equation"),
    unit="pkt/s",
    describe=_describe_tfrc,
    limits=(Limit(
        applies=lambda p: p["p"] >= 0.1,
        reason=("documented TFRC property (docs/models/tfrc.md): the equation is convex in p and p is estimated "
                "from eight geometric intervals, so the mean rate lies below the rate at the mean p (Rhee & Xu, "
                "SIGCOMM 2005); measured 13–17 % below at 10 % loss. The rate must still be below the equation "
                "and within 20 %"),
        check=lambda value, params, m: 0.8 * ref_tfrc_rate(params, m) < value < ref_tfrc_rate(params, m)),),
)


def measure_tfrc_events(params: Params) -> dict[str, Any]:
    m = _tfrc_run(params["rtt_ms"], params["p"])
    return {"value": m["p_event"] * 100, **m}


def ref_tfrc_events(params: Params, m: dict[str, Any]) -> float:
    # Losses within one RTT of an event's first loss join it: with W packets per RTT a loss
    # starts an event about once in 1 + p·W.
    w = m["pkts_per_s"] * m["rtt_s"]
    return m["p_loss"] / (1 + m["p_loss"] * w) * 100


TFRC_EVENTS = Validation(
    name="tfrc_loss_events",
    title="TFRC loss event rate vs the packet loss rate thinned by one-RTT loss events",
    citation="RFC 5348 §5.2 (losses within one RTT of a loss event's first loss belong to it)",
    grid=TFRC_GRID,
    quick=TFRC_QUICK,
    measure=measure_tfrc_events,
    reference=ref_tfrc_events,
    tolerance=Tolerance(0.05, 0.05, why="the issue's 5 % band for the loss event rate against the loss rate"),
    unit="%",
    describe=_describe_tfrc,
    digits=4,
)

SUITE: tuple[Validation, ...] = (PADHYE, PADHYE_SACK, MD1, GE_RATE, GE_BURST, FAIRNESS, RTT_UNFAIRNESS,
                                 CUBIC_RESPONSE, CUBIC_LINUX, HYSTART_EXIT, IDLE_RESTART, SEED_SPREAD, SPURIOUS, NS3,
                                 TFRC_RATE, TFRC_EVENTS, BBR_BANDWIDTH, BBR_QUEUE, BBR_SHARED_QUEUE,
                                 multipath.GOAL2)
