"""The reference values of ``qoelab verify``: closed forms from the literature, in plain numpy-free
Python so each can be checked by hand (``tests/verify/test_closed_forms.py`` does, against values
worked out from the papers' own equations).

Units: rates in packets (segments) per second, times in seconds, windows in segments.
"""

from __future__ import annotations

import math


def padhye_full(p: float, rtt: float, t0: float, b: float = 1.0, wmax: float = math.inf) -> float:
    """Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
    Validation", SIGCOMM 1998, eq. (30), the approximate full model: send rate (packets/s,
    retransmissions included) of a Reno sender for loss-indication rate ``p``, round-trip time
    ``rtt``, first timeout ``t0``, ``b`` packets acknowledged per ACK and receiver window
    ``wmax`` (packets)::

        B(p) = min( Wmax/RTT, 1 / ( RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²) ) )
    """
    _check_p(p)
    ca = rtt * math.sqrt(2.0 * b * p / 3.0)
    to = t0 * min(1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
    return min(wmax / rtt, 1.0 / (ca + to))


def padhye_timeout_share(p: float, rtt: float, t0: float, b: float = 1.0) -> float:
    """The share of eq. (30)'s denominator that is the timeout term (0 = no timeouts predicted)."""
    _check_p(p)
    ca = rtt * math.sqrt(2.0 * b * p / 3.0)
    to = t0 * min(1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)) * p * (1.0 + 32.0 * p * p)
    return to / (ca + to)


def padhye_td_only(p: float, rtt: float, b: float = 1.0) -> float:
    """Padhye et al. 1998, eq. (20) for small p, the triple-duplicate-only (timeout-free) send rate
    ``1 / (RTT·sqrt(2bp/3))`` packets/s. With b = 1 it is Mathis, Semke, Mahdavi, Ott, "The
    Macroscopic Behavior of the TCP Congestion Avoidance Algorithm", CCR 27(3), 1997:
    ``(1/RTT)·C/sqrt(p)`` with C = sqrt(3/2) (periodic loss, every segment ACKed)."""
    _check_p(p)
    return 1.0 / (rtt * math.sqrt(2.0 * b * p / 3.0))


def md1_wait(rho: float, service_s: float) -> float:
    """Mean waiting time in queue of M/D/1 (Pollaczek–Khinchine with deterministic service):
    ``W = ρ·S / (2(1 − ρ))`` seconds for load ``ρ`` in [0, 1) and service time ``S``."""
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"load must be in [0, 1), got {rho}")
    return rho * service_s / (2.0 * (1.0 - rho))


def ge_stationary_bad(p: float, r: float) -> float:
    """Gilbert–Elliott chain stepped per packet (G→B with ``p``, B→G with ``r``): π_B = p/(p+r)."""
    return p / (p + r)


def ge_loss_rate(p: float, r: float, loss_good: float = 0.0, loss_bad: float = 1.0) -> float:
    """Long-run loss rate of the Gilbert–Elliott model as qoelab defines it (each packet judged
    in the current state, then the chain steps): ``π_G·k_G + π_B·k_B`` with π_B = p/(p+r),
    i.e. ``(r·loss_good + p·loss_bad)/(p+r)`` (Elliott 1963; ``docs/models/links.md``)."""
    pb = ge_stationary_bad(p, r)
    return (1.0 - pb) * loss_good + pb * loss_bad


def ge_mean_burst(p: float, r: float, loss_good: float = 0.0, loss_bad: float = 1.0) -> float:
    """Mean length of a run of consecutive lost packets in the stationary Gilbert–Elliott chain.

    A run starts at a loss preceded by a non-loss, so mean run length = P(L) / P(no loss, then
    loss) = P(L) / (P(L) − P(L, L)) with P(L, L) = Σ_s π_s·k_s·Σ_s' T(s, s')·k_s' (the packet
    is judged in state s, then the chain steps to s'). For Gilbert's model (k_G = 0, k_B = 1)
    this is 1/r, the mean sojourn in the bad state."""
    pb = ge_stationary_bad(p, r)
    pg = 1.0 - pb
    kg, kb = loss_good, loss_bad
    p_l = pg * kg + pb * kb
    p_ll = pg * kg * ((1.0 - p) * kg + p * kb) + pb * kb * (r * kg + (1.0 - r) * kb)
    if p_l <= 0.0:
        raise ValueError("no losses: the burst length is undefined")
    return p_l / (p_l - p_ll)


def jain(xs: list[float]) -> float:
    """Jain, Chiu, Hawe (DEC TR-301, 1984): ``(Σx)² / (n·Σx²)``, 1 when all equal, 1/n when one
    flow takes everything."""
    n = len(xs)
    sq = sum(x * x for x in xs)
    if n == 0 or sq == 0.0:
        raise ValueError("Jain's index needs at least one non-zero value")
    return sum(xs) ** 2 / (n * sq)


def rtt_exponent(thr_short: float, thr_long: float, rtt_short: float, rtt_long: float) -> float:
    """The exponent a of throughput ∝ RTT^(−a) between two flows: ``ln(x_s/x_l) / ln(R_l/R_s)``."""
    return math.log(thr_short / thr_long) / math.log(rtt_long / rtt_short)


def cubic_avg_window(p: float, rtt: float, c: float = 0.4, beta: float = 0.7) -> float:
    """RFC 9438 §5.1 (Ha, Rhee, Xu 2008), CUBIC region under a deterministic loss model (one loss
    every 1/p packets): average window in segments
    ``AVG_W_cubic = ((C·(3 + β))/(4·(1 − β)))^(1/4) · RTT^(3/4) / p^(3/4)``."""
    _check_p(p)
    return (c * (3.0 + beta) / (4.0 * (1.0 - beta))) ** 0.25 * rtt**0.75 / p**0.75


def cubic_reno_friendly_window(p: float, beta: float = 0.7) -> float:
    """RFC 9438 §5.1: in the Reno-friendly region, AIMD(α_cubic, β) with α_cubic = 3(1 − β)/(1 + β)
    has the average window ``sqrt(α(1 + β)/(2(1 − β)p)) = sqrt(3/(2p))`` segments, Reno's."""
    _check_p(p)
    alpha = 3.0 * (1.0 - beta) / (1.0 + beta)
    return math.sqrt(alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * p))


def aimd_avg_window(p: float, alpha: float, beta: float) -> float:
    """AIMD(α, β) under a deterministic loss model (one loss every 1/p packets): the window
    climbs from βW to W by α segments per RTT, so a cycle carries (1 − β²)W²/(2α) = 1/p packets and
    the average window is ``(1 + β)W/2 = sqrt(α(1 + β)/(2(1 − β)p))`` segments (RFC 9438 §5.1's
    derivation of AVG_W_est, with α left free)."""
    _check_p(p)
    return math.sqrt(alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * p))


def linux_cubic_alpha(beta: float = 0.7) -> float:
    """Linux ``tcp_cubic.c``'s TCP-friendly slope in segments per RTT: ``tcp_cwnd`` grows by one
    per ``cwnd · beta_scale / 8`` segments acknowledged, ``beta_scale = 8(1024 + β₁₀₂₄)/3/(1024 −
    β₁₀₂₄)`` in integer arithmetic (``cubictcp_register``), so α = 8 / beta_scale: 8/15 for β = 0.7
    (β₁₀₂₄ = 717), against RFC 9438's 3(1 − β)/(1 + β) = 0.529."""
    b = min(max(round(beta * 1024), 1), 1023)
    return 8.0 / max(8 * (1024 + b) // 3 // (1024 - b), 1)


def cubic_response_linux(p: float, rtt: float, c: float = 0.4, beta: float = 0.7) -> tuple[float, str]:
    """CUBIC's average window (segments) with Linux's fixed TCP-friendly α: the larger of RFC 9438
    §5.1's CUBIC-region average and AIMD(α_linux, β)'s, and which region that is."""
    wc = cubic_avg_window(p, rtt, c, beta)
    we = aimd_avg_window(p, linux_cubic_alpha(beta), beta)
    return (wc, "cubic") if wc >= we else (we, "reno-friendly")


def cwnd_restart(cwnd: int, iw: int, idle: float, rto: float) -> int:
    """Linux ``tcp_cwnd_restart`` (``net/ipv4/tcp_output.c``), in segments: after an idle period of
    ``idle`` seconds (> ``rto``), cwnd halves once per RTO beyond the first, never below the
    restart window min(IW, cwnd): ``while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1``."""
    restart = min(iw, cwnd)
    delta = idle
    while True:
        delta -= rto
        if delta <= 0 or cwnd <= restart:
            break
        cwnd >>= 1
    return max(cwnd, restart)


def cubic_response(p: float, rtt: float, c: float = 0.4, beta: float = 0.7) -> tuple[float, str]:
    """CUBIC's average window (segments) as RFC 9438 §5.1 states it: the larger of the CUBIC-region
    and Reno-friendly averages, and which region that is (``"cubic"`` or ``"reno-friendly"``)."""
    wc = cubic_avg_window(p, rtt, c, beta)
    we = cubic_reno_friendly_window(p, beta)
    return (wc, "cubic") if wc >= we else (we, "reno-friendly")


def _check_p(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"loss rate must be in (0, 1), got {p}")


def tfrc_equation(s: float, r: float, p: float) -> float:
    """RFC 5348 §3.1's throughput equation with b = 1 and t_RTO = 4R: bytes/s for segment size
    ``s`` bytes, RTT ``r`` seconds and loss event rate ``p``.

    >>> round(tfrc_equation(1000.0, 0.1, 0.01))
    112332
    """
    return s / (r * math.sqrt(2 * p / 3) + 4 * r * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))


def _even(x: int) -> int:
    """Rounded up to even (``bbr_quantization_budget``: ``(cwnd + 1) & ~1``)."""
    return (x + 1) // 2 * 2


def bbr_probe_rtt_share(min_rtt: float, probe_rtt: float = 0.2, window: float = 10.0) -> float:
    """The share of time BBR v1 spends in PROBE_RTT when nothing refreshes its min-RTT estimate:
    ``probe_rtt`` + one round at 4 packets every ``window`` + ``probe_rtt`` + two rounds (the
    estimate's own refresh by the samples of the round trip after PROBE_RTT, before a queue
    builds again). Linux ``tcp_bbr.c``: ``bbr_min_rtt_win_sec`` = 10, ``bbr_probe_rtt_mode_ms`` =
    200.

    >>> round(bbr_probe_rtt_share(0.0412), 4)
    0.0235
    """
    return (probe_rtt + min_rtt) / (window + probe_rtt + 2 * min_rtt)


def bbr_single_flow_queue(pps: float, min_rtt: float, tso_goal: int = 2, per_ack: int = 2) -> float:
    """Mean bottleneck queue (packets) of one BBR v1 flow in PROBE_BW, from ``tcp_bbr.c``'s gain
    cycle, for a bottleneck of ``pps`` packets/s and a min-RTT estimate ``min_rtt`` s (the
    propagation RTT with one packet's serialisation), when the bandwidth estimate is exact.

    Paced at 99 % of the estimate, the flow is pacing-limited and its queue is set by the cycle,
    whose phase ends compare the in-flight count before an ACK (B = pps × min_rtt in the pipe,
    the queue, and the ``per_ack`` packets the ACK delivers: 2 with delayed ACKs) with targets:
    the 0.75 phase ends at ``even(⌈B⌉ + 3g)`` (``bbr_inflight`` at gain 1, g the TSO goal),
    leaving ``q_end`` queued; six 1.0 phases of one min_rtt each drain 1 % of the rate; the 1.25
    phase (at least one min_rtt) lasts until in flight + g reaches ``even(⌈1.25 B⌉ + 3g) + 2``
    (queue ``q_peak``), growing at 0.2375 × pps; the 0.75 phase drains at 0.2575 × pps back to
    ``q_end``. The mean is the time average over the cycle, scaled by the share of time outside
    PROBE_RTT (queue ≈ 0 there).

    >>> round(bbr_single_flow_queue(10e6 / 8 / 1500, 0.0412), 2)
    5.67
    """
    b = pps * min_rtt
    q_end = max(0.0, _even(math.ceil(b) + 3 * tso_goal) - b - per_ack)
    q_low = max(0.0, q_end - 0.01 * pps * min_rtt * 6)
    q_peak = max(_even(math.ceil(1.25 * b) + 3 * tso_goal) + 2 - tso_goal - b - per_ack, q_low + 0.2375 * pps * min_rtt)
    t_cruise = 6 * min_rtt
    t_probe = (q_peak - q_low) / (0.2375 * pps)
    t_drain = (q_peak - q_end) / (0.2575 * pps)
    area = t_cruise * (q_end + q_low) / 2 + t_probe * (q_low + q_peak) / 2 + t_drain * (q_peak + q_end) / 2
    return area / (t_cruise + t_probe + t_drain) * (1 - bbr_probe_rtt_share(min_rtt))


def bbr_shared_queue(pps: float, min_rtt: float, cwnds: list[float], buffer: float) -> float:
    """Mean bottleneck queue (packets) of n ≥ 2 BBR v1 flows with windows ``cwnds`` (packets):
    each flow's max filter holds the best rate it has seen, more than its share, so together
    they pace above the bottleneck and every flow is cwnd-limited; the queue is the windows less
    the pipe B = pps × min_rtt, at most the buffer ("the cwnd cap minus the BDP").

    >>> round(bbr_shared_queue(10e6 / 8 / 1500, 0.0212, [30.0, 30.0], 50), 1)
    42.3
    """
    return min(buffer, sum(cwnds) - pps * min_rtt)
