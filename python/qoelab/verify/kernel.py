"""``qoelab verify --kernel``: the Linux kernel's TCP against qoelab's linux profile, on the
same emulated dumbbell (issue 34, item 5).

For each grid point (congestion control, RTT, flows, random loss) the dumbbell of
``scenarios/emulation/dumbbell`` runs twice:

- **kernel**: two real hosts (network namespaces) through qoelab's emulated network in real
  time (``qoelab emulate``): ``iperf3 -C <cc> -P <flows> -t <seconds>`` from ``sender`` to
  ``receiver``; goodput from iperf3's receiver report, retransmissions from the sender's
  ``nstat`` (``TcpRetransSegs``; the namespace's counters start at zero), congestion windows
  from ``ss -tin`` sampled every 100 ms on the sender, and the bottleneck's drops, the drops in
  the first 2 s of the transfer and the mean queue from qoelab's own counters of ``R1 -> R2``;
- **simulation**: the same scenario with simulated endpoints (``profile = "linux"``, the same
  congestion control, ``flows`` bulk flows started as iperf3 starts its streams:
  :func:`iperf3_flows`), the same quantities from the run's tables and probes.

The bottleneck, its buffer and its loss model are the same component in both runs; only the
endpoints differ. Each host's namespace has the tested congestion control as its default
(:func:`set_default_cc`): iperf3 chooses it only after ``connect()``, and a connection begun
under BBR keeps BBR's pacing. The hosts' devices have TSO, GSO and GRO off (``qoelab.emulate.hosts``). The
tolerances are issue 34's: goodput within 5 % (10 % with random loss), bottleneck drops and
retransmissions within 15 %, drops in the first 2 s within a factor 1.5; BBR: goodput within
10 %, mean queue within 25 %. Counts near zero get a floor of 2 packets (15 % of 3 drops is
less than one). Nothing here tunes the model: the table says where the linux profile stands.

Kernel runs vary run to run; ``--reps`` repeats them and the simulation, paired by seed (run r
of each has seed r, and the twin puts as many packets through the bottleneck before its data as
iperf3 does, :func:`control_packets`, so the loss draws meet the same packets), and compares
means, printing each side's range; whether the runs decide a verdict is judged on the pairs.
Needs root and network namespaces; elsewhere it prints one line saying why and exits 0.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import tempfile
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from qoelab.errors import QoelabError

#: The grid (issue 34 item 5): congestion controls (kernel name → core name), RTTs, flows, loss.
CCS = {"cubic": "cubic", "reno": "newreno", "bbr": "bbr"}
RTTS_MS = (0, 40, 160)
FLOWS = (1, 4)
LOSSES = (0.0, 0.01, 0.03)
#: The reduced grid CI runs.
QUICK = [("cubic", 40, 1, 0.0), ("cubic", 40, 1, 0.01)]
#: Seconds of transfer per run (full grid; ``--quick`` uses 10).
SECONDS = 30.0
#: The bottleneck: 10 Mbit/s, 50 packets (issue 34).
RATE = "10Mbps"
BUFFER = "50p"
#: The start of the window counted as "the first 2 s" of a transfer.
EARLY_S = 2.0
#: Counts closer than this to the reference always pass (a floor for near-zero counts).
COUNT_FLOOR = 2.0


@dataclass(frozen=True)
class Point:
    cc: str
    rtt_ms: int
    flows: int
    loss: float

    @property
    def label(self) -> str:
        return f"RTT {self.rtt_ms} ms, {self.flows} flow{'s' if self.flows > 1 else ''}, loss {self.loss * 100:g} %"


def parse_point(text: str) -> tuple[int, int, float]:
    """``RTT_MS,FLOWS,LOSS_PERCENT`` (``160,1,0``) naming a point of the full grid: its RTT in
    ms, its flow count and its random loss in percent; anything else is a usage error that
    names the grid's values."""
    where = f"--point {text!r}"
    parts = text.split(",")
    if len(parts) != 3:
        raise QoelabError(f"{where}: expected RTT_MS,FLOWS,LOSS_PERCENT (for example 160,1,0)")
    try:
        rtt, flows, loss = int(parts[0]), int(parts[1]), float(parts[2])
    except ValueError:
        raise QoelabError(f"{where}: expected numbers RTT_MS,FLOWS,LOSS_PERCENT (for example 160,1,0)") from None
    if rtt not in RTTS_MS:
        raise QoelabError(f"{where}: RTT {rtt} ms is not on the grid ({', '.join(map(str, RTTS_MS))})")
    if flows not in FLOWS:
        raise QoelabError(f"{where}: {flows} flows is not on the grid ({', '.join(map(str, FLOWS))})")
    match = [q for q in LOSSES if abs(q * 100 - loss) < 1e-9]
    if not match:
        raise QoelabError(f"{where}: loss {loss:g} % is not on the grid ({', '.join(f'{q * 100:g}' for q in LOSSES)})")
    return rtt, flows, match[0]


def grid(quick: bool, ccs: Sequence[str] | None = None, points: Sequence[str] | None = None) -> list[Point]:
    """The points to run: the full grid (or the quick subset), only the congestion controls
    ``ccs`` and only the points ``points`` (:func:`parse_point`) when given, in grid order."""
    if quick:
        pts = [Point(*q) for q in QUICK]
    else:
        pts = [Point(cc, r, n, p) for cc in CCS for r in RTTS_MS for n in FLOWS for p in LOSSES]
    if points:
        if quick:
            raise QoelabError("--point selects points of the full grid; not with --quick")
        wanted = {parse_point(t) for t in points}
        pts = [p for p in pts if (p.rtt_ms, p.flows, p.loss) in wanted]
    return [p for p in pts if not ccs or p.cc in ccs]


def scenario(p: Point, seconds: float, *, real: bool, seed: int = 1) -> dict[str, Any]:
    """The dumbbell of one grid point: real ``sender``/``receiver`` for the kernel run, or
    simulated ones with ``flows`` linux-profile bulk flows. The RTT is split over the three links
    in proportion 2 : 1 : 1 each way (as in scenarios/emulation/dumbbell)."""
    one_way = p.rtt_ms / 2
    bottleneck: dict[str, Any] = {"a": "R1", "b": "R2", "rate": RATE, "delay": f"{one_way / 4:g}ms",
                                  "queue": {"kind": "fifo", "limit": BUFFER}}
    if p.loss > 0:
        bottleneck["loss_ab"] = {"kind": "bernoulli", "p": p.loss}
    d: dict[str, Any] = {
        "name": f"verify-kernel-{p.cc}-rtt{p.rtt_ms}-n{p.flows}-loss{p.loss:g}",
        "sim": {"duration": f"{seconds + (30.0 if real else data_start_s(p)):.6f}s", "seed": seed},
        "nodes": [{"name": "sender", "real": real}, {"name": "receiver", "real": real}],
        "links": [
            {"a": "sender", "b": "R1", "rate": "1Gbps", "delay": f"{one_way / 2:g}ms"},
            bottleneck,
            {"a": "R2", "b": "receiver", "rate": "1Gbps", "delay": f"{one_way / 4:g}ms"},
        ],
        "output": {"probes": ["drops"] + ([] if real else ["cwnd"]), "queue_sample": "10ms"},
    }
    if not real:
        d["flows"] = iperf3_flows(p)
    return d


#: After a stream's cookie, iperf3 connects the next stream about half a millisecond later
#: (captures in the sender namespace: 0.9, 0.6 and 0.5 ms at RTT 0, 40 and 160 ms), so the
#: streams' SYNs are one handshake plus this apart.
IPERF3_NEXT_STREAM_MS = 0.75


def _connect_step_ms(p: Point) -> float:
    """The time between two streams' SYNs, ms: a handshake (the path's RTT) and iperf3's reaction."""
    return float(p.rtt_ms) + IPERF3_NEXT_STREAM_MS


#: From the last cookie's ACK to the first data, ms: iperf3 writes once the server's
#: ``TEST_RUNNING`` has arrived on the control connection, just after that ACK (the kernel's
#: ``tcp:tcp_probe`` trace at 160 ms: the first data's ACK 164 ms after the cookie's).
IPERF3_REACTION_MS = 2.0
#: The delayed-ACK timeout of the client's control connection, ms (Linux's initial ato,
#: ``TCP_ATO_MIN`` = 40 ms, plus a jiffy: 41–44 ms in the captures).
CONTROL_ATO_MS = 41.0


def _control_round_ms(p: Point) -> float:
    """One exchange on the control connection before the streams, ms (the captures at RTT 0:
    0.2-0.3 ms)."""
    return max(float(p.rtt_ms), 0.3)


def stream_start_s(p: Point) -> float:
    """When the first simulated stream sends its SYN, seconds: after the control connection's
    three exchanges (handshake with cookie, parameters, ``CREATE_STREAMS``), as in iperf3."""
    return 3 * _control_round_ms(p) / 1e3


def data_start_s(p: Point) -> float:
    """When the simulated iperf3 streams start their data (:func:`iperf3_flows`), seconds: the
    last stream's cookie is ACKed (flows + 1) connection steps after the first stream's SYN, and
    the data follows :data:`IPERF3_REACTION_MS` later. Data written before that ACK (as the twin
    did until 2026-11-28) shares the initial window with the cookie: nine segments go out, not
    ten, and they echo the SYN-ACK's timestamp, so the receiver's first RTT sample is the
    tenth's, queued behind the nine, and its Dynamic Right-Sizing measures rounds out of step."""
    return stream_start_s(p) + ((p.flows + 1) * _connect_step_ms(p) + IPERF3_REACTION_MS) / 1e3


#: iperf3's test cookie, written on each stream right after it connects (``COOKIE_SIZE``).
COOKIE = "37B"
#: IP sizes of the sender's packets that are not a stream's data: a SYN (with its options), a
#: pure ACK and the cookie (with timestamps), the control connection's 4-byte length and
#: 143-byte parameters (iperf3 3.12, ``-J``, this harness's options).
_SYN, _ACK, _COOKIE, _LEN, _PARAMS = 60, 52, 89, 56, 195


def control_packets(p: Point) -> list[tuple[float, int]]:
    """(ms, IP bytes) of every packet the sender puts through the bottleneck before the data
    that the twin's streams do not send themselves, as a capture in the sender namespace shows
    them (``tshark``, iperf3 3.12, RTT 0, 40 and 160 ms, 1 and 4 streams): the control
    connection's SYN, then an ACK and the cookie, then an ACK and the parameters (length and
    JSON); each stream's own handshake ACK, a packet of its own before the cookie (Linux sends
    it from ``tcp_rcv_synsent_state_process`` before ``connect()`` returns; the model's
    handshake ACK rides on the cookie); the control connection's delayed ACK of
    ``CREATE_STREAMS`` when its timer fires before ``TEST_START`` comes, and then one ACK each
    for ``TEST_START`` and ``TEST_RUNNING``, else a single ACK for all three. The bottleneck's
    loss model draws for each packet in arrival order, so with these the twin's draw k meets
    the kernel's packet k, and run r of both sides sees the same losses until their packets
    part (a lost control packet, which the kernel retransmits, shifts them by one)."""
    c, step, t1 = _control_round_ms(p), _connect_step_ms(p), stream_start_s(p) * 1e3
    data = data_start_s(p) * 1e3
    tick = 0.01  # packets the kernel sends back to back go out in this order
    out = [(0.0, _SYN), (c, _ACK), (c + tick, _COOKIE), (2 * c, _ACK), (2 * c + tick, _LEN), (2 * c + 2 * tick, _PARAMS)]
    # Each stream's handshake ACK: just before the SYN-ACK's return sends the model's ACK with
    # the cookie (the path's RTT after the SYN; at RTT 0 right after the SYN).
    out += [(t1 + i * step + max(0.9 * p.rtt_ms, tick), _ACK) for i in range(p.flows)]
    if t1 + CONTROL_ATO_MS < data - 1.0:
        out += [(t1 + CONTROL_ATO_MS, _ACK), (data - 1.0, _ACK), (data - 1.0 + tick, _ACK)]
    else:
        out += [(data - 1.0, _ACK)]
    return sorted(out)


def iperf3_flows(p: Point) -> list[dict[str, Any]]:
    """``p.flows`` linux-profile bulk flows that start as ``iperf3 -P`` starts its streams
    (``iperf_create_streams``): each connects once the one before is up and writes the 37-byte
    cookie; the data of every stream follows together once all are up and the server's
    ``TEST_RUNNING`` has come back, here one RTT after the last connection (the kernel runs show
    the streams' SYNs 41.5 ms apart at RTT 40 ms). The cookie's ACK is each connection's first
    RTT sample, on a path still idle: CUBIC's HyStart keeps it as its ``delay_min``. Streams
    started together instead have their first samples from initial windows queued behind each
    other's, up to 37 ms late at 40 ms with four streams: their HyStart then never fired, and
    slow start overshot to three times the kernel's drops. Beside them, one datagram for each
    of :func:`control_packets` (flows ``ctl0``…): the same packets through the bottleneck, in
    the same order, as the kernel's run (since 2026-11-29; before, the twin's draws met the
    kernel's packets nine or more places later)."""
    step_ms = _connect_step_ms(p)
    t1 = stream_start_s(p) * 1e3
    data_at = data_start_s(p) * 1e3
    streams = [{"name": f"tcp{i}", "src": "sender", "dst": "receiver", "start": f"{t1 + i * step_ms:.3f}ms",
                "app": {"kind": "bulk", "cookie": COOKIE, "delay": f"{data_at - t1 - i * step_ms:.3f}ms"},
                "transport": {"kind": "tcp", "profile": "linux", "cc": CCS[p.cc]}} for i in range(p.flows)]
    # UDP: IP 20 + UDP 8 bytes of header; one datagram at the flow's start, which stops at
    # once (the next would come a payload's worth of seconds later at 1 bit/s).
    ctl = [{"name": f"ctl{k}", "src": "sender", "dst": "receiver", "start": f"{t:.3f}ms", "stop": f"{t + 0.001:.3f}ms",
            "transport": {"kind": "udp"}, "app": {"kind": "cbr", "payload": f"{size - 28}B", "rate": "1bps"}}
           for k, (t, size) in enumerate(control_packets(p))]
    return streams + ctl


def core_knows(cc: str) -> bool:
    """Whether this build's core has the congestion control of kernel name ``cc`` (BBR arrives in
    issue 34 item 3)."""
    from qoelab.errors import ScenarioError
    from qoelab.scenario import Scenario

    try:
        Scenario.from_dict(scenario(Point(cc, 40, 1, 0.0), 1.0, real=False)).validate()
    except ScenarioError:
        return False
    return True


@dataclass
class Measure:
    """One run's quantities (kernel or simulation)."""

    goodput_bps: float
    retrans: float
    drops: float
    early_drops: float
    mean_queue_bytes: float
    cwnd_pkts: float
    #: Kernel runs: the emulation's lag p99 (µs) and the intervals it marked behind.
    lag_p99_us: float = math.nan
    behind: float = 0.0


def _bottleneck(tables: dict[str, Any], t0: float, seconds: float) -> tuple[float, float, float]:
    """R1 -> R2: queue drops over the run, queue drops in [t0, t0 + 2 s), mean queue in the
    transfer's window."""
    links = {r["link"]: r for r in tables["links"].to_pylist()}
    drops = float(links["R1->R2"]["drop_queue_pkts"])
    early = 0.0
    if "probe_drops" in tables:
        pd = tables["probe_drops"].to_pydict()
        early = float(sum(1 for t, ln, c in zip(pd["t_ns"], pd["link"], pd["cause"])
                          if ln == "R1->R2" and c in ("arrival", "queued") and t0 <= t * 1e-9 < t0 + EARLY_S))
    q = tables["queues"].to_pydict()
    w = [b for ln, t, b in zip(q["link"], q["t_s"], q["bytes"]) if ln == "R1->R2" and t0 <= t < t0 + seconds]
    return drops, early, (statistics.fmean(w) if w else math.nan)


def measure_sim(p: Point, seconds: float, seed: int) -> Measure:
    from qoelab.scenario import Scenario

    res = Scenario.from_dict(scenario(p, seconds, real=False, seed=seed)).run()
    # The streams (not the control connection's stand-ins); the kernel's window starts at its
    # first stream's SYN, as this one does.
    f = [r for r in res.tables["flows"].to_pylist() if r["flow"].startswith("tcp")]
    drops, early, queue = _bottleneck(res.tables, stream_start_s(p), seconds)
    cw = res.tables["probe_cwnd"].to_pydict()
    return Measure(
        # iperf3 reports its -t seconds of data; the run adds the streams' start before them.
        goodput_bps=sum(r["delivered_bytes"] for r in f) * 8 / seconds,
        retrans=float(sum(r["retransmitted_segments"] or 0 for r in f)),
        drops=drops, early_drops=early, mean_queue_bytes=queue,
        cwnd_pkts=_time_mean_cwnd(cw, seconds) / 1448.0,
    )


def _time_mean_cwnd(cw: dict[str, list], seconds: float) -> float:
    """The mean over flows of each sender's time-averaged congestion window, bytes."""
    per: dict[str, list[tuple[float, float]]] = {}
    for t, fl, end, c in zip(cw["t_ns"], cw["flow"], cw["end"], cw["cwnd_bytes"]):
        if end == 0:
            per.setdefault(fl, []).append((t * 1e-9, float(c)))
    means = []
    for pts in per.values():
        area = sum(c * (min(t2, seconds) - t1) for (t1, c), (t2, _) in zip(pts, pts[1:] + [(seconds, 0.0)]) if t1 < seconds)
        means.append(area / seconds)
    return statistics.fmean(means) if means else math.nan


_NSTAT = re.compile(r"^TcpRetransSegs\s+(\d+)", re.M)
_CWND = re.compile(r"\bcwnd:(\d+)")
_SEGS = re.compile(r"\bdata_segs_out:(\d+)")


def measure_kernel(p: Point, seconds: float, seed: int = 1) -> Measure:
    from qoelab.emulate import emulate
    from qoelab.scenario import Scenario

    sc = Scenario.from_dict(scenario(p, seconds, real=True, seed=seed))
    with tempfile.TemporaryDirectory(prefix="qoelab-verify-kernel-") as d, namespace_default_cc(p.cc):
        out = Path(d)
        sampler = ("while :; do echo t=$(date +%s.%N); ss -tin state established '( dport = :5201 )'; sleep 0.1; done "
                   "> $QOELAB_OUT/ss.log")
        client = (f"{set_default_cc(p.cc)}sysctl -n {_DEFAULT_CC_KEY} > $QOELAB_OUT/cc.txt; sleep 0.5; "
                  f"iperf3 -c $QOELAB_ADDR_RECEIVER -C {p.cc} -P {p.flows} -t {seconds:g} -J "
                  "> $QOELAB_OUT/iperf.json; nstat -asz TcpRetransSegs > $QOELAB_OUT/nstat.txt")
        em = emulate(sc, out, daemons=[("receiver", f"{set_default_cc(p.cc)}iperf3 -s"), ("sender", sampler)],
                     execs=[("sender", client)])
        got = (out / "cc.txt").read_text().strip() if (out / "cc.txt").exists() else "(unread)"
        if got != p.cc:
            raise RuntimeError(f"the sender namespace's default congestion control is {got!r}, not {p.cc!r}: "
                               "iperf3 would run the default's init first")
        rep = json.loads((out / "iperf.json").read_text())
        if "error" in rep:
            raise RuntimeError(f"iperf3: {rep['error']}")
        m = _NSTAT.search((out / "nstat.txt").read_text())
        retrans = float(m.group(1)) if m else math.nan
        cwnd = _ss_mean_cwnd((out / "ss.log").read_text())
        data = [r for r in em.results.tables["real_flows"].to_pylist() if r["dst_port"] == 5201 and r["sent_bytes"] > 100_000]
        t0 = min((r["start_s"] for r in data), default=0.0)
        drops, early, queue = _bottleneck(em.results.tables, t0, seconds)
    s = em.results.summary
    return Measure(goodput_bps=float(rep["end"]["sum_received"]["bits_per_second"]), retrans=retrans, drops=drops,
                   early_drops=early, mean_queue_bytes=queue, cwnd_pkts=cwnd, lag_p99_us=s["lag_p99_s"] * 1e6,
                   behind=float(s["lag_behind_intervals"]))


#: The per-namespace default congestion control (``/proc/sys`` path as ``sysctl`` names it).
_DEFAULT_CC_KEY = "net.ipv4.tcp_congestion_control"
_ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


def set_default_cc(cc: str) -> str:
    """Shell prefix that makes ``cc`` the default congestion control of the namespace it runs in.

    Why: ``iperf3 -C cc`` sets ``TCP_CONGESTION`` after ``connect()`` (iperf 3.12, seen with
    ``strace``), so the connection is established under the namespace's default, which a new
    namespace inherits from the host's (this machine: BBR). BBR's init turns on the kernel's
    internal pacing (``bbr_init`` sets ``sk_pacing_status`` to ``SK_PACING_NEEDED``), and
    switching to CUBIC or Reno does not turn it off: the kernel's "CUBIC" then paced its segments
    at 2× (slow start) or 1.2× cwnd/srtt (``tcp_update_pacing_rate``), one segment every 8 ms in
    the second round at RTT 160 ms. Until 2026-11-28 the table's CUBIC and Reno kernel rows were
    such paced runs."""
    return f"sysctl -qw {_DEFAULT_CC_KEY}={cc} && "


@contextmanager
def namespace_default_cc(cc: str) -> Iterator[None]:
    """Context in which a network namespace may make ``cc`` its default: a namespace other than
    the host's may only choose one of ``tcp_allowed_congestion_control`` (``EPERM`` otherwise,
    ``tcp_set_default_congestion_control``), and this machine's list is "reno bbr". The host's
    list gains ``cc`` for the duration and is restored after; the host's own default is not
    touched."""
    allowed = _ALLOWED.read_text().split()
    if cc in allowed:
        yield
        return
    _ALLOWED.write_text(" ".join(allowed + [cc]))
    try:
        yield
    finally:
        _ALLOWED.write_text(" ".join(allowed))


def _ss_mean_cwnd(text: str) -> float:
    """Mean congestion window (segments) of the data connections over ``ss -tin`` samples (the
    iperf3 control connection, which sends a few segments, left out)."""
    vals = []
    # One connection's figures share a line; `ss` leaves `data_segs_out` out of a connection
    # that has sent no data yet, so the two fields are paired line by line, never by position.
    for line in text.splitlines():
        c, n = _CWND.search(line), _SEGS.search(line)
        if c and n and int(n.group(1)) > 100:
            vals.append(int(c.group(1)))
    return statistics.fmean(vals) if vals else math.nan


# --- verdicts ----------------------------------------------------------------------------------

@dataclass
class Check:
    metric: str
    kernel: float
    sim: float
    tolerance: str
    verdict: str
    #: The simulated means the verdict accepts (None: a row without a tolerance).
    band: tuple[float, float] | None = None
    #: Whether the runs decide the verdict (:func:`resolution`): ``yes``, ``no (≈N runs)``, or
    #: ``1 run`` (no spread to judge by); empty for rows without a tolerance.
    resolved: str = ""


def _rel_band(kernel: float, frac: float, floor: float = 0.0) -> tuple[float, float]:
    """The simulated means within ``frac`` of ``kernel`` (at least ``floor`` either side)."""
    half = max(frac * abs(kernel), floor)
    return kernel - half, kernel + half


def _factor_band(kernel: float, f: float) -> tuple[float, float]:
    """The simulated means within a factor ``f`` of ``kernel``, or within :data:`COUNT_FLOOR`
    of it (the union of the two, one interval since both hold ``kernel``)."""
    return min(kernel / f, kernel - COUNT_FLOOR), max(kernel * f, kernel + COUNT_FLOOR)


#: More runs than this per side are not worth naming: the verdict sits on the tolerance's edge.
MAX_RUNS_NAMED = 1000


def resolution(band: tuple[float, float] | None, kernel: Sequence[float], sim: Sequence[float]) -> str:
    """Whether the runs decide a check: the 95 % interval of (simulation's mean − kernel's
    mean) lies wholly inside the accepted band (the pass is decided) or wholly outside it (the
    FAIL is). Otherwise the verdict is not decided at this many runs, and the rough number of
    runs per side that would decide it at the measured spread is named (the half-width shrinks
    as 1/√n; the band is taken as fixed at the kernel's mean). One run on either side has no
    spread to judge by. The kernel varies run to run and the simulation varies by seed, so a
    3-run mean of a drop count under random loss (the kernel's 0–98) can miss a ±15 % band by
    chance, and a pass can be luck too; this says which verdicts the runs decide. ``band``: the
    simulated means the check accepts (:func:`checks`), in the units of ``kernel`` and ``sim``.

    Runs are paired when both sides have as many: :func:`run` gives run r of each side seed r,
    so that they see the same loss draws (:func:`control_packets`), and the interval is then
    Student's on the differences of the pairs (n − 1 degrees of freedom), which is valid for
    any pairing fixed before the runs and narrower the more the pairs agree. With unequal
    counts, Welch's interval of two independent means."""
    if band is None or not kernel or not sim or not all(math.isfinite(x) for x in (*band, *kernel, *sim)):
        return ""
    if len(kernel) < 2 or len(sim) < 2:
        return "1 run"
    from qoelab.experiment.stats import t95

    k, s = statistics.fmean(kernel), statistics.fmean(sim)
    d, lo, hi = s - k, band[0] - k, band[1] - k
    paired = len(kernel) == len(sim)
    if paired:
        se = statistics.stdev(b - a for a, b in zip(kernel, sim)) / math.sqrt(len(kernel))
    else:
        vk, vs = statistics.variance(kernel) / len(kernel), statistics.variance(sim) / len(sim)
        se = math.sqrt(vk + vs)
    if se == 0.0:
        return "yes"
    if paired:
        dof = len(kernel) - 1
    else:
        # Welch–Satterthwaite degrees of freedom, rounded down (the wider interval).
        dof = int((vk + vs) ** 2 / ((vk ** 2 / (len(kernel) - 1) if vk else 0.0) + (vs ** 2 / (len(sim) - 1) if vs else 0.0)))
    h = t95(max(1, dof)) * se
    if (lo <= d - h and d + h <= hi) or d + h < lo or d - h > hi:
        return "yes"
    # The fewest runs per side whose interval, at the measured spread, clears the nearer edge
    # (Student's t at n' − 1 degrees of freedom, the half-width shrinking as 1/√n').
    gap = min(abs(d - lo), abs(d - hi))
    n = max(len(kernel), len(sim))
    for more in range(n + 1, MAX_RUNS_NAMED + 1):
        if t95(more - 1) * se * math.sqrt(n / more) < gap:
            return f"no (≈{more} runs)"
    return f"no (>{MAX_RUNS_NAMED} runs)"


def checks(p: Point, k: Measure, s: Measure | None) -> list[Check]:
    """Issue 34's comparisons of one grid point (``s`` None: the core has no such controller).
    A check passes when the simulated mean lies in its band around the kernel's."""
    nan = math.nan
    sv = s if s is not None else Measure(nan, nan, nan, nan, nan, nan)

    def check(metric: str, kv: float, svv: float, tolerance: str, band: tuple[float, float]) -> Check:
        ok = math.isfinite(kv) and math.isfinite(svv) and band[0] <= svv <= band[1]
        return Check(metric, kv, svv, tolerance, "-" if s is None else ("pass" if ok else "FAIL"), band)

    def info(metric: str, kv: float, svv: float) -> Check:
        return Check(metric, kv, svv, "info", "-")

    gp_k, gp_s = k.goodput_bps / 1e6, sv.goodput_bps / 1e6
    if p.cc == "bbr":
        q_k, q_s = k.mean_queue_bytes / 1e3, sv.mean_queue_bytes / 1e3
        return [
            check("goodput Mbit/s", gp_k, gp_s, "±10 %", _rel_band(gp_k, 0.10)),
            check("mean queue KB", q_k, q_s, "±25 %", _rel_band(q_k, 0.25)),
            info("retransmissions", k.retrans, sv.retrans),
            info("bottleneck drops", k.drops, sv.drops),
        ]
    gp_tol = 0.10 if p.loss > 0 else 0.05
    return [
        check("goodput Mbit/s", gp_k, gp_s, f"±{gp_tol * 100:g} %", _rel_band(gp_k, gp_tol)),
        check("retransmissions", k.retrans, sv.retrans, "±15 %", _rel_band(k.retrans, 0.15, COUNT_FLOOR)),
        check("bottleneck drops", k.drops, sv.drops, "±15 %", _rel_band(k.drops, 0.15, COUNT_FLOOR)),
        check("drops in first 2 s", k.early_drops, sv.early_drops, "×1.5", _factor_band(k.early_drops, 1.5)),
        info("mean cwnd pkts", k.cwnd_pkts, sv.cwnd_pkts),
    ]


@dataclass
class Result:
    point: Point
    kernel: list[Measure]
    sim: list[Measure] = field(default_factory=list)
    note: str = ""

    def mean(self, runs: list[Measure]) -> Measure | None:
        if not runs:
            return None
        return Measure(*(statistics.fmean(getattr(m, f) for m in runs) for f in Measure.__dataclass_fields__))

    def checks(self) -> list[Check]:
        """Issue 34's comparisons of the means, each with whether the runs decide it."""
        k = self.mean(self.kernel)
        assert k is not None
        out = checks(self.point, k, self.mean(self.sim))
        for c in out:
            if c.band is not None and c.verdict != "-":
                f, scale = _FIELD[c.metric]
                c.resolved = resolution(c.band, [getattr(m, f) / scale for m in self.kernel],
                                        [getattr(m, f) / scale for m in self.sim])
        return out

    def to_json(self) -> dict[str, Any]:
        return {"point": asdict(self.point), "kernel": [asdict(m) for m in self.kernel],
                "sim": [asdict(m) for m in self.sim], "note": self.note,
                "checks": [asdict(c) for c in self.checks()]}


def run(points: Sequence[Point], seconds: float, reps: int, progress: Callable[[float, float], Any] | None = None) -> list[Result]:
    """Runs every point: the kernel ``reps`` times and the simulation ``reps`` times, paired: run
    ``r`` of each has seed ``r`` (1..``reps``), so that under random loss the kernel's run and the
    simulation's see the same loss draws (the bottleneck's loss model is the same component,
    drawing in the order packets arrive). Until 2026-11-28 every kernel run had seed 1: its
    repetitions of a lossy point repeated one loss sequence, against five in the simulation."""
    known = {cc: core_knows(cc) for cc in {p.cc for p in points}}
    out = []
    for i, p in enumerate(points):
        r = Result(p, [measure_kernel(p, seconds, seed) for seed in range(1, reps + 1)])
        notes = []
        if known[p.cc]:
            r.sim = [measure_sim(p, seconds, seed) for seed in range(1, reps + 1)]
        else:
            notes.append(f"the core has no kind = \"{CCS[p.cc]}\" congestion control yet: kernel side only")
        behind = sum(m.behind for m in r.kernel)
        if behind:
            notes.append(f"the emulation fell behind real time in {behind:g} interval(s) of 1 s (lag p99 up to "
                         f"{max(m.lag_p99_us for m in r.kernel):.0f} µs): its delays there include the lateness")
        r.note = "; ".join(notes)
        out.append(r)
        if progress:
            progress(i + 1, len(points))
    return out


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:.2f}" if abs(x) < 100 else f"{x:,.0f}"


def _spread(runs: list[Measure], f: str, scale: float) -> str:
    vals = [getattr(r, f) / scale for r in runs]
    if len(vals) < 2:
        return ""
    return f" ({_fmt(min(vals))}–{_fmt(max(vals))})"


_FIELD = {"goodput Mbit/s": ("goodput_bps", 1e6), "retransmissions": ("retrans", 1.0), "bottleneck drops": ("drops", 1.0),
          "drops in first 2 s": ("early_drops", 1.0), "mean queue KB": ("mean_queue_bytes", 1e3),
          "mean cwnd pkts": ("cwnd_pkts", 1.0)}


def markdown(results: Sequence[Result], seconds: float, reps: int) -> str:
    """The table of ``docs/validation.md``: one row per grid point and metric."""
    lines = [f"Kernel: Linux {_uname()}, iperf3, {seconds:g} s per run, {reps} run{'s' if reps > 1 else ''} per point "
             "(mean, range in brackets); simulation: profile linux, "
             f"seed{'s 1..' + str(reps) if reps > 1 else ' 1'}.", "",
             "| cc | point | metric | kernel | qoelab | tolerance | verdict | decided |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        for c in r.checks():
            f, scale = _FIELD[c.metric]
            lines.append(f"| {r.point.cc} | {r.point.label} | {c.metric} | {_fmt(c.kernel)}{_spread(r.kernel, f, scale)} "
                         f"| {_fmt(c.sim)}{_spread(r.sim, f, scale)} | {c.tolerance} | {c.verdict} | {c.resolved} |")
        if r.note:
            lines.append(f"| {r.point.cc} | {r.point.label} | note | {r.note} | | | | |")
    return "\n".join(lines) + "\n"


def load(doc: dict[str, Any]) -> list[Result]:
    """The results of a run saved with ``--json`` (its ``results``), to judge or tabulate again
    without running anything (the verdicts and ``decided`` are recomputed from the runs)."""
    def runs(ms: list[dict[str, Any]]) -> list[Measure]:
        return [Measure(**{f: m[f] for f in Measure.__dataclass_fields__ if f in m}) for m in ms]

    return [Result(Point(**r["point"]), runs(r["kernel"]), runs(r["sim"]), r.get("note", "")) for r in doc["results"]]


def _uname() -> str:
    import platform

    return platform.release()
