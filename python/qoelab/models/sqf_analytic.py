"""De-prioritisation of a Poisson video stream under SQF: the model of Sec. IV of [BMO11].

Reading list
------------
- [BMO11] T. Bonald, L. Muscariello, N. Ostallo, "Self-Prioritization of Audio and Video
  Traffic", ICC 2011, Sec. IV ("Analytical results"), Fig. 3 and Fig. 4
  (``shared/papers/sqf-self-prioritization.txt``, hal-01244042).
- ``docs/models/sqf-analytic.md``: assumptions, parameters, validation and the comparison with
  the paper's numbers.

The setting
-----------
One video stream shares a bottleneck link of capacity ``C`` (packets/s) and a buffer of ``B``
packets with ``n`` TCP flows that saturate the buffer and hold equal shares of it. Video packets
arrive as a Poisson process of intensity ``lambda`` (the video's "peak rate"). All packets have
the same size, which is the data unit. Under Shortest Queue First the video is served first as
long as its backlog ``x`` is smaller than every TCP flow's backlog ``(B - x)/n``.

What each function implements
-----------------------------
=================================  ===========================================================
function                           paper
=================================  ===========================================================
:func:`priority_threshold_pkts`    eq. (1) solved for x: ``x < B/(n+1)``
:func:`single_stream_prioritised`  eq. (1)
:func:`multi_stream_condition`     eq. (3): ``x_i < (B - x)/n`` for all i, ``x = sum_i x_i``
:func:`q_of_t`                     ``q(t) = Pr(N(t) >= C t + B/(n+1))``, N(t) ~ Poisson(lambda t)
:func:`p_deprioritised`            eq. (2): ``p(T) = max_k q_k``,
                                   ``q_k = 1 - (1 - q(T/k))^k``
:func:`mean_prioritised_time`      ``T_bar = integral_0^inf (1 - p(t)) dt`` (Sec. IV-A, Fig. 4)
:func:`p_deprioritised_fq`         the FQ reference curve of Fig. 3: 0 if
                                   ``lambda < C/(n+1)``, else 1
:func:`p_deprioritised_multi`      Sec. IV-B: m streams of peak rate lambda treated as one
                                   stream of rate ``m lambda`` (sufficient condition (1))
:func:`figure3`, :func:`figure4`   Fig. 3 and Fig. 4, computed from eq. (2)
:func:`deprioritised_fraction`     not in the paper: the measured counterpart of p for the
                                   simulator cross-check (fraction of time the video flow is
                                   not strictly the shortest active queue)
=================================  ===========================================================

Interpretations where the paper is ambiguous
--------------------------------------------
1. **Units.** The paper takes the video packet as the data unit and gives the buffer as
   "200 packets, with a packet size of 1250B". So rates in bit/s are converted to packets/s of
   ``pkt_bytes``: ``C = 10 Mbit/s / (8 * 1250 B) = 1000 packet/s``, and a peak rate of
   6 Mbit/s is ``lambda = 600 packet/s``. The threshold ``B/(n+1)`` stays fractional
   (9.52 packets for B = 200, n = 20).
2. **The range of k in eq. (2).** The extracted text reads ``max_{k > 1}``; we take
   ``k >= 1`` (k = 1, the whole period as one interval, is a valid partition and the text
   before eq. (2) says "over all k"). For the Fig. 3/4 parameters the maximum sits at
   k ~ 10^4 to 10^5, so the choice changes nothing there.
3. **Integer arrivals.** ``N(t) >= C t + b`` with integer N is ``N(t) >= ceil(C t + b)``,
   taken literally (the ">=" of the paper, not ">"). Values of ``C t + b`` within a relative
   1e-12 of an integer are treated as that integer, to be immune to rounding.
4. **The maximum over k is exact**, not sampled. Write ``m(s) = ceil(C s + b)`` and
   ``s = T/k``. On each interval of s where m is constant,
   ``k log(1 - q(T/k)) = lambda T * log F_m(mu) / mu`` with ``mu = lambda s`` and ``F_m`` the
   Poisson CDF at ``m - 1``. ``F_m(mu)`` is a Gamma survival function of mu, hence log-concave
   and equal to 1 at 0, so ``log F_m(mu)/mu`` is non-increasing in mu: within a piece the best
   k is the smallest one. Enumerating every ``k <= sqrt(C T)`` plus the smallest k of each
   remaining piece therefore finds the exact maximum in O(sqrt(C T)) evaluations.
5. **T_bar.** The paper defines ``T_bar = integral (1 - p(t)) dt`` with p(t) from eq. (2) for
   every t; we integrate exactly that. ``1 - p(t)`` is evaluated by trapezoid on ``[0, T0]``;
   beyond ``T0`` (chosen so that the optimal partition has at least ``min_intervals``
   intervals) ``log(1 - p(t))`` is linear in t up to a bounded offset, with slope
   ``psi* = min_s log(1 - q(s))/s``, and the tail is ``(1 - p(T0)) / |psi*|``. The relative
   error of the tail is of order ``m* s* |psi*|`` (s* the optimal interval length, m* its
   arrival threshold), i.e. negligible whenever T_bar is much longer than s*.
6. **Peak rate.** The x-axis "video peak rate" of Fig. 3/4 is the Poisson intensity lambda
   ("the theoretical peak rate is equal to lambda").
7. **What p(T) is.** If ``N(s) - C s >= b`` on some interval, the video backlog reaches b, so
   every q_k is the probability of a sub-event of "condition (1) is violated during T": eq. (2)
   is a *lower bound* on the de-prioritisation probability of the queue it stands for (and
   ignores the residual service of a TCP packet, which adds further backlog under
   non-preemptive SQF). The paper calls it an estimate; we compute it as written.
8. **1 - p(t) as a survival function.** The paper reads ``1 - p(t)`` as
   ``Pr(time of prioritisation > t)``. With integer thresholds it is not exactly monotone in t
   (it jumps up by a few per cent where the optimal interval crosses a threshold step); T_bar
   integrates it as defined, without monotonising.

Numerics: Poisson tails come from ``scipy.special.pdtrc`` (upper tail, accurate down to
~1e-308) and ``pdtr`` (CDF, used when the tail exceeds 1/2); ``log(1 - p)`` is accumulated as
``k * log1p(-q)`` and ``p = -expm1(log(1 - p))``, so probabilities as small as 1e-300 and as
close to 1 as the double allows are represented.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special

__all__ = [
    "BUFFER_PKTS",
    "LINK_RATE_BPS",
    "N_TCP_VALUES",
    "PKT_BYTES",
    "VIDEO_DURATION_S",
    "Figure3Data",
    "Figure4Data",
    "deprioritised_fraction",
    "figure3",
    "figure4",
    "mean_prioritised_time",
    "multi_stream_condition",
    "p_deprioritised",
    "p_deprioritised_fq",
    "p_deprioritised_multi",
    "peak_rate_for_mean_time",
    "peak_rate_for_p",
    "priority_threshold_pkts",
    "q_of_t",
    "single_stream_prioritised",
]

# Parameters of Fig. 3 and Fig. 4 of [BMO11].
LINK_RATE_BPS: float = 10e6
"""Link capacity of Fig. 3/4, bit/s (10 Mbit/s)."""
BUFFER_PKTS: float = 200.0
"""Buffer size B of Fig. 3/4, packets."""
PKT_BYTES: float = 1250.0
"""Packet size of Fig. 3/4, bytes; also the size of every video packet (the data unit)."""
VIDEO_DURATION_S: float = 600.0
"""Period T of Fig. 3: a 10-minute video, seconds."""
N_TCP_VALUES: tuple[int, ...] = (5, 10, 20)
"""Numbers of competing TCP flows in Fig. 3/4."""

# 1 - p below this is treated as zero when truncating the integral for T_bar.
_LOG_NEGLIGIBLE = math.log(1e-17)
# Relative tolerance when deciding whether C t + b is an integer (interpretation 3).
_INTEGER_RTOL = 1e-12


# --------------------------------------------------------------------------------------------
# Conditions (1) and (3)
# --------------------------------------------------------------------------------------------


def priority_threshold_pkts(n_tcp: int, buffer_pkts: float = BUFFER_PKTS) -> float:
    """Video backlog at which the video stops being the shortest queue, eq. (1): ``B/(n+1)``.

    Args:
        n_tcp: number of saturating TCP flows, >= 1.
        buffer_pkts: buffer size B, packets, > 0.

    Returns:
        ``B/(n+1)`` in packets (fractional).
    """
    _check_n_tcp(n_tcp)
    _check_positive("buffer_pkts", buffer_pkts)
    return float(buffer_pkts) / (n_tcp + 1)


def single_stream_prioritised(x_pkts: float, n_tcp: int, buffer_pkts: float = BUFFER_PKTS) -> bool:
    """Condition (1): the video (backlog ``x``) has priority iff ``x < B/(n+1)``.

    Equivalent to ``x < (B - x)/n``, the backlog of each TCP flow when they share the rest of
    the buffer equally.
    """
    if not (math.isfinite(x_pkts) and 0 <= x_pkts <= buffer_pkts):
        raise ValueError(f"x_pkts must lie in [0, buffer_pkts={buffer_pkts}], got {x_pkts}")
    return x_pkts < priority_threshold_pkts(n_tcp, buffer_pkts)


def multi_stream_condition(
    video_backlogs_pkts: ArrayLike, n_tcp: int, buffer_pkts: float = BUFFER_PKTS
) -> bool:
    """Condition (3): all m video streams have priority iff ``x_i < (B - x)/n`` for every i.

    Args:
        video_backlogs_pkts: backlogs ``x_1..x_m`` of the video streams, packets, >= 0, with
            ``sum <= B`` (the TCP flows hold the rest of the buffer in equal shares).
        n_tcp: number of saturating TCP flows, >= 1.
        buffer_pkts: buffer size B, packets.

    Returns:
        True iff every stream is strictly below each TCP flow's backlog ``(B - x)/n``.
        With one stream this is exactly condition (1).
    """
    _check_n_tcp(n_tcp)
    _check_positive("buffer_pkts", buffer_pkts)
    x = np.asarray(video_backlogs_pkts, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("video_backlogs_pkts must be a non-empty 1-D sequence")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("video_backlogs_pkts must be finite and >= 0")
    total = float(x.sum())
    if total > buffer_pkts:
        raise ValueError(
            f"video backlogs sum to {total} packets, more than the buffer {buffer_pkts}"
        )
    tcp_share = (buffer_pkts - total) / n_tcp
    return bool(np.all(x < tcp_share))


# --------------------------------------------------------------------------------------------
# q(t), eq. (2), T_bar
# --------------------------------------------------------------------------------------------


def q_of_t(
    t_s: ArrayLike,
    peak_rate_bps: float,
    n_tcp: int,
    *,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> NDArray[np.float64]:
    """``q(t) = Pr(N(t) >= C t + B/(n+1))`` with ``N(t) ~ Poisson(lambda t)`` (Sec. IV-A).

    The probability that, over an interval of length t, video arrivals exceed what the link
    serves plus what condition (1) lets the video buffer.

    Args:
        t_s: interval length(s), seconds, >= 0.
        peak_rate_bps: video peak rate (Poisson intensity), bit/s, >= 0.
        n_tcp: number of saturating TCP flows, >= 1.
        link_rate_bps: link capacity, bit/s, > 0.
        buffer_pkts: buffer size B, packets, > 0.
        pkt_bytes: packet size (the data unit), bytes, > 0.

    Returns:
        An array of the shape of ``t_s`` with values in [0, 1].
    """
    lam, cap, b = _model_rates(peak_rate_bps, n_tcp, link_rate_bps, buffer_pkts, pkt_bytes)
    t = np.asarray(t_s, dtype=float)
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("t_s must be finite and >= 0")
    threshold = _arrival_threshold(cap * t + b)
    return np.asarray(special.pdtrc(threshold - 1.0, lam * t), dtype=float)


def p_deprioritised(
    duration_s: float,
    peak_rate_bps: float,
    n_tcp: int,
    *,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> float:
    """Eq. (2): ``p(T) = max_{k >= 1} 1 - (1 - q(T/k))^k``, maximised exactly over integer k.

    Args:
        duration_s: period T, seconds, >= 0 (Fig. 3 uses 600 s).
        peak_rate_bps: video peak rate (Poisson intensity), bit/s, >= 0.
        n_tcp: number of saturating TCP flows, >= 1.
        link_rate_bps: link capacity, bit/s, > 0.
        buffer_pkts: buffer size B, packets, > 0.
        pkt_bytes: packet size (the data unit), bytes, > 0.

    Returns:
        The probability of de-prioritisation during T, in [0, 1].
    """
    lam, cap, b = _model_rates(peak_rate_bps, n_tcp, link_rate_bps, buffer_pkts, pkt_bytes)
    _check_duration(duration_s)
    log_keep, _ = _log_not_deprioritised(float(duration_s), lam, cap, b)
    return float(-math.expm1(log_keep))


def p_deprioritised_fq(
    peak_rate_bps: float, n_tcp: int, *, link_rate_bps: float = LINK_RATE_BPS
) -> float:
    """The FQ curve of Fig. 3: 0 if ``lambda < C/(n+1)`` (below the fair share), else 1."""
    _check_n_tcp(n_tcp)
    _check_rate("peak_rate_bps", peak_rate_bps)
    _check_positive("link_rate_bps", link_rate_bps)
    return 0.0 if peak_rate_bps < link_rate_bps / (n_tcp + 1) else 1.0


def p_deprioritised_multi(
    duration_s: float,
    peak_rate_bps: float,
    m_streams: int,
    n_tcp: int,
    *,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> float:
    """Sec. IV-B: m streams of peak rate lambda, treated as one stream of rate ``m lambda``.

    Condition (1) on the total video backlog is sufficient for condition (3), so this is the
    paper's (conservative) estimate of the probability that some stream loses priority.
    """
    if isinstance(m_streams, bool) or not isinstance(m_streams, (int, np.integer)) or m_streams < 1:
        raise ValueError(f"m_streams must be an integer >= 1, got {m_streams!r}")
    _check_rate("peak_rate_bps", peak_rate_bps)
    return p_deprioritised(
        duration_s,
        m_streams * peak_rate_bps,
        n_tcp,
        link_rate_bps=link_rate_bps,
        buffer_pkts=buffer_pkts,
        pkt_bytes=pkt_bytes,
    )


def mean_prioritised_time(
    peak_rate_bps: float,
    n_tcp: int,
    *,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
    grid_points: int = 2048,
    min_intervals: int = 256,
) -> float:
    """``T_bar = integral_0^inf (1 - p(t)) dt`` with p(t) from eq. (2) (Sec. IV-A, Fig. 4).

    Args:
        peak_rate_bps: video peak rate, bit/s, >= 0.
        n_tcp: number of saturating TCP flows, >= 1.
        link_rate_bps, buffer_pkts, pkt_bytes: as in :func:`p_deprioritised`.
        grid_points: linear trapezoid points on ``[0, T0]`` (a geometric grid is added).
            ``1 - p(t)`` jumps where the integer threshold or the optimal k changes, so the
            trapezoid error falls like ``1/grid_points``: about 1e-3 relative at the default
            when the tail is small (T_bar of the order of seconds), far less otherwise.
        min_intervals: the tail beyond T0 is taken in closed form once the optimal partition
            of ``[0, T0]`` has at least this many intervals (interpretation 5 of the module
            docstring); larger values push more of the integral into quadrature.

    Returns:
        The mean time of prioritisation in seconds; ``math.inf`` if the rate is 0 or the
        result exceeds the double range (q(t) underflows for every t).
    """
    lam, cap, b = _model_rates(peak_rate_bps, n_tcp, link_rate_bps, buffer_pkts, pkt_bytes)
    if grid_points < 16 or min_intervals < 2:
        raise ValueError("grid_points must be >= 16 and min_intervals >= 2")
    if lam == 0.0:
        return math.inf

    psi_star, s_star, certified = (0.0, 0.0, False)
    if lam < cap:
        psi_star, s_star, certified = _asymptotic_log_rate(lam, cap, b)
        if certified and psi_star == 0.0:
            return math.inf

    # Grow T0 until 1 - p(T0) is negligible, or (if the decay rate is known) until the optimal
    # partition is fine enough for log(1 - p) to be linear in t.
    t0 = (math.floor(b) + 1.0 - b) / cap
    tail = 0.0
    for _ in range(200):
        log_keep, k_opt = _log_not_deprioritised(t0, lam, cap, b)
        if log_keep < _LOG_NEGLIGIBLE:
            break
        if certified and (k_opt >= min_intervals or t0 >= min_intervals * s_star):
            tail = math.exp(log_keep) / -psi_star
            break
        t0 *= 2.0
    else:  # pragma: no cover - p(t) -> 1 for lambda >= C, and psi* < 0 is certified otherwise
        raise RuntimeError(
            f"mean_prioritised_time: 1 - p(t) did not decay by t = {t0} s "
            f"(lambda = {lam} pkt/s, C = {cap} pkt/s, b = {b} pkt)"
        )

    grid = np.unique(
        np.concatenate(
            ([0.0], np.geomspace(t0 * 1e-6, t0, 129), np.linspace(0.0, t0, grid_points + 1))
        )
    )
    keep = np.array([math.exp(_log_not_deprioritised(float(t), lam, cap, b)[0]) for t in grid])
    return float(np.trapezoid(keep, grid)) + tail


def peak_rate_for_p(
    p_target: float,
    n_tcp: int,
    *,
    duration_s: float = VIDEO_DURATION_S,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> float:
    """The peak rate (bit/s) at which ``p(duration_s)`` equals ``p_target``.

    p is continuous and non-decreasing in the peak rate (each q(T/k) is a Poisson tail,
    increasing in its mean), so the root is unique; it is found to 1e-7 of the link rate.
    """
    if not 0.0 < p_target < 1.0:
        raise ValueError(f"p_target must lie in (0, 1), got {p_target}")

    def excess(rate_bps: float) -> float:
        p = p_deprioritised(
            duration_s,
            rate_bps,
            n_tcp,
            link_rate_bps=link_rate_bps,
            buffer_pkts=buffer_pkts,
            pkt_bytes=pkt_bytes,
        )
        return p - p_target

    return _increasing_root(excess, link_rate_bps)


def peak_rate_for_mean_time(
    mean_time_s: float,
    n_tcp: int,
    *,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> float:
    """The peak rate (bit/s) at which T_bar falls to ``mean_time_s`` (to 1e-7 of the link rate)."""
    _check_positive("mean_time_s", mean_time_s)

    def excess(rate_bps: float) -> float:
        t_bar = mean_prioritised_time(
            rate_bps,
            n_tcp,
            link_rate_bps=link_rate_bps,
            buffer_pkts=buffer_pkts,
            pkt_bytes=pkt_bytes,
        )
        return math.log(mean_time_s) - math.log(t_bar)

    return _increasing_root(excess, link_rate_bps)


# --------------------------------------------------------------------------------------------
# Measured counterpart for the simulator cross-check
# --------------------------------------------------------------------------------------------


def deprioritised_fraction(
    video_backlog: ArrayLike, other_backlogs: ArrayLike, dt: float | ArrayLike
) -> float:
    """Fraction of time the video flow was de-prioritised, from sampled per-flow backlogs.

    At sample i the video is de-prioritised iff it has data queued and some *other active*
    flow (backlog > 0) has a backlog less than or equal to the video's: that is condition (1)
    ("lower data volume than each TCP flow", strict) applied to the flows SQF actually
    compares. An empty video queue is not de-prioritised, and inactive (empty) flows are
    ignored because SQF keeps virtual queues only for active flows.

    Args:
        video_backlog: video backlog at each sample, shape (N,), >= 0 (bytes or packets; same
            unit as ``other_backlogs``).
        other_backlogs: backlogs of the other flows, shape (F, N) (one row per flow) or (N,)
            for a single flow; F may be 0.
        dt: time each sample holds (sample-and-hold): a scalar for uniform sampling or an
            array of shape (N,), seconds, >= 0 with a positive sum.

    Returns:
        The time-weighted fraction in [0, 1].
    """
    video = np.asarray(video_backlog, dtype=float)
    if video.ndim != 1 or video.size == 0:
        raise ValueError("video_backlog must be a non-empty 1-D array")
    others = np.asarray(other_backlogs, dtype=float)
    if others.ndim == 1:
        others = others[np.newaxis, :]
    if others.ndim != 2 or others.shape[1] != video.size:
        raise ValueError(
            f"other_backlogs must have shape (F, {video.size}) or ({video.size},), "
            f"got {np.shape(other_backlogs)}"
        )
    for name, arr in (("video_backlog", video), ("other_backlogs", others)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError(f"{name} must be finite and >= 0")
    weights = np.broadcast_to(np.asarray(dt, dtype=float), video.shape)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or not weights.sum() > 0:
        raise ValueError("dt must be finite, >= 0 and have a positive sum")

    if others.shape[0] == 0:
        return 0.0
    shortest_other = np.where(others > 0, others, np.inf).min(axis=0)
    deprioritised = (video > 0) & (video >= shortest_other)
    return float(np.sum(weights * deprioritised) / np.sum(weights))


# --------------------------------------------------------------------------------------------
# Fig. 3 and Fig. 4
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure3Data:
    """The curves of Fig. 3: ``p_sqf[i, j]`` is p(T) for ``n_values[i]`` at rate j."""

    peak_rates_bps: NDArray[np.float64]
    n_values: tuple[int, ...]
    duration_s: float
    p_sqf: NDArray[np.float64]
    p_fq: NDArray[np.float64]


@dataclass(frozen=True)
class Figure4Data:
    """The curves of Fig. 4: ``mean_time_s[i, j]`` is T_bar (s) for ``n_values[i]`` at rate j."""

    peak_rates_bps: NDArray[np.float64]
    n_values: tuple[int, ...]
    mean_time_s: NDArray[np.float64]
    fq_limit_bps: NDArray[np.float64]


def figure3(
    path: str | Path,
    *,
    n_values: Sequence[int] = N_TCP_VALUES,
    duration_s: float = VIDEO_DURATION_S,
    peak_rates_bps: ArrayLike | None = None,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> Figure3Data:
    """Compute Fig. 3 from eq. (2) and write it as a PNG to ``path``.

    Defaults are the paper's: a 10-min video, 10 Mbit/s, B = 200 packets of 1250 B,
    n = 5, 10, 20; peak rates from 0 to the link rate in steps of 1 % of it.
    """
    rates = (
        np.linspace(0.0, link_rate_bps, 201)
        if peak_rates_bps is None
        else np.asarray(peak_rates_bps, dtype=float)
    )
    ns = tuple(int(n) for n in n_values)
    kw = dict(link_rate_bps=link_rate_bps, buffer_pkts=buffer_pkts, pkt_bytes=pkt_bytes)
    p_sqf = np.array([[p_deprioritised(duration_s, r, n, **kw) for r in rates] for n in ns])
    p_fq = np.array(
        [[p_deprioritised_fq(r, n, link_rate_bps=link_rate_bps) for r in rates] for n in ns]
    )
    data = Figure3Data(rates, ns, float(duration_s), p_sqf, p_fq)

    fig, ax = _new_figure()
    for i, n in enumerate(ns):
        (line,) = ax.plot(rates / 1e6, p_sqf[i], label=f"SQF, n = {n}")
        ax.step(
            rates / 1e6,
            p_fq[i],
            where="post",
            ls="--",
            lw=1,
            color=line.get_color(),
            label=f"FQ, n = {n}",
        )
    ax.set_xlabel("video peak rate λ (Mbit/s)")
    ax.set_ylabel(f"probability of de-prioritisation p(T), T = {duration_s / 60:g} min")
    ax.set_title(
        f"Fig. 3 recomputed from eq. (2): C = {link_rate_bps / 1e6:g} Mbit/s, "
        f"B = {buffer_pkts:g} × {pkt_bytes:g} B",
        fontsize=9,
    )
    ax.set_xlim(rates[0] / 1e6, rates[-1] / 1e6)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncols=2)
    _save(fig, path)
    return data


def figure4(
    path: str | Path,
    *,
    n_values: Sequence[int] = N_TCP_VALUES,
    peak_rates_bps: ArrayLike | None = None,
    link_rate_bps: float = LINK_RATE_BPS,
    buffer_pkts: float = BUFFER_PKTS,
    pkt_bytes: float = PKT_BYTES,
) -> Figure4Data:
    """Compute Fig. 4 (T_bar from eq. (2)) and write it as a PNG to ``path``.

    Defaults as in :func:`figure3`; peak rates from 2 % to 98 % of the link rate. T_bar is
    plotted in minutes on a log axis, with the FQ limit ``C/(n+1)`` as vertical lines (T_bar
    is infinite below it and 0 above under FQ).
    """
    rates = (
        np.linspace(0.02, 0.98, 49) * link_rate_bps
        if peak_rates_bps is None
        else np.asarray(peak_rates_bps, dtype=float)
    )
    ns = tuple(int(n) for n in n_values)
    t_bar = np.array([[mean_prioritised_time(r, n, link_rate_bps=link_rate_bps, buffer_pkts=buffer_pkts,
                                             pkt_bytes=pkt_bytes) for r in rates] for n in ns])
    fq = np.array([link_rate_bps / (n + 1) for n in ns])
    data = Figure4Data(rates, ns, t_bar, fq)

    fig, ax = _new_figure()
    for i, n in enumerate(ns):
        (line,) = ax.semilogy(rates / 1e6, t_bar[i] / 60.0, label=f"SQF, n = {n}")
        ax.axvline(fq[i] / 1e6, ls="--", lw=1, color=line.get_color(), label=f"FQ limit, n = {n}")
    ax.axhline(180.0, ls=":", lw=1, color="0.4", label="180 min")
    ax.set_xlabel("video peak rate λ (Mbit/s)")
    ax.set_ylabel("mean time of prioritisation T̄ (min)")
    ax.set_title(
        f"Fig. 4 recomputed from eq. (2): C = {link_rate_bps / 1e6:g} Mbit/s, "
        f"B = {buffer_pkts:g} × {pkt_bytes:g} B",
        fontsize=9,
    )
    ax.set_xlim(0.0, link_rate_bps / 1e6)
    ax.set_ylim(1e-3, 1e6)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, ncols=2)
    _save(fig, path)
    return data


# --------------------------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------------------------


def _model_rates(
    peak_rate_bps: float, n_tcp: int, link_rate_bps: float, buffer_pkts: float, pkt_bytes: float
) -> tuple[float, float, float]:
    """Validate and convert to ``(lambda, C, b)`` in packets/s, packets/s, packets."""
    _check_rate("peak_rate_bps", peak_rate_bps)
    _check_positive("link_rate_bps", link_rate_bps)
    _check_positive("pkt_bytes", pkt_bytes)
    b = priority_threshold_pkts(n_tcp, buffer_pkts)
    bits = 8.0 * float(pkt_bytes)
    return float(peak_rate_bps) / bits, float(link_rate_bps) / bits, b


def _arrival_threshold(x: ArrayLike) -> NDArray[np.float64]:
    """``ceil(x)`` for x >= 0, with values within 1e-12 (relative) of an integer snapped to it."""
    x = np.asarray(x, dtype=float)
    return np.ceil(x - _INTEGER_RTOL * np.maximum(1.0, x))


def _log1m_tail(threshold: NDArray[np.float64], mu: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log Pr(Poisson(mu) < threshold) = log(1 - q)``, accurate for q near 0 and near 1."""
    threshold, mu = np.broadcast_arrays(np.asarray(threshold, float), np.asarray(mu, float))
    upper = special.pdtrc(threshold - 1.0, mu)
    near_one = upper >= 0.5
    out = np.log1p(-np.where(near_one, 0.0, upper))
    if np.any(near_one):
        with np.errstate(divide="ignore"):
            out[near_one] = np.log(special.pdtr(threshold[near_one] - 1.0, mu[near_one]))
    return out


def _log_chernoff_bound(
    ks: NDArray[np.float64], threshold: NDArray[np.float64], mu: NDArray[np.float64]
) -> NDArray[np.float64]:
    """An upper bound on ``log(-k log(1 - q))`` with ``q = Pr(Poisson(mu) >= threshold)``.

    ``q <= exp(-(mu - m + m ln(m/mu)))`` for ``m > mu`` (Chernoff) and
    ``-log(1 - q) <= q/(1 - q)``; +inf where the bound says nothing (``m <= mu``).
    """
    out = np.full(ks.shape, np.inf)
    ok = (threshold > mu) & (mu > 0)
    m, u = threshold[ok], mu[ok]
    log_q = -(u - m + m * np.log(m / u))
    # Rounding can leave the exponent at ~0 when m is barely above mu: keep +inf there (a NaN
    # would compare false and prune a candidate that must be evaluated).
    informative = log_q < -1e-12
    bound = np.full(m.shape, np.inf)
    lq = log_q[informative]
    bound[informative] = np.log(ks[ok][informative]) + lq - np.log(-np.expm1(lq))
    out[ok] = bound
    out[mu == 0] = -np.inf
    return out


def _log_not_deprioritised(t_s: float, lam: float, cap: float, b: float) -> tuple[float, int]:
    """``log(1 - p(T))`` by eq. (2) and the maximising k, exactly (interpretation 4).

    Candidates: every k <= K1 = ceil(sqrt(C T)), and for each threshold piece
    ``m = ceil(C s + b)`` reachable with k > K1 the smallest such k in the piece (and its
    successor, against rounding at the piece boundary).
    """
    if t_s == 0.0 or lam == 0.0:
        return 0.0, 1
    k1 = max(1, math.ceil(math.sqrt(cap * t_s)))
    m_first = math.floor(b) + 1.0
    m_last = math.ceil(cap * t_s / k1 + b)
    pieces = np.arange(m_first, m_last + 1.0)
    k_piece = np.maximum(np.ceil(t_s / ((pieces - b) / cap)), k1 + 1.0)
    ks = np.unique(np.concatenate((np.arange(1.0, k1 + 1.0), k_piece, k_piece + 1.0)))
    s = t_s / ks
    threshold = _arrival_threshold(cap * s + b)
    mu = lam * s
    # Exact values are needed only where the Chernoff bound leaves a chance to beat the best
    # of the most promising candidates; this prunes most pdtrc calls without changing the max.
    log_bound = _log_chernoff_bound(ks, threshold, mu)
    order = np.argsort(-log_bound)
    first = order[:32]
    log_keep = ks[first] * _log1m_tail(threshold[first], mu[first])
    i = int(np.argmin(log_keep))
    best, k_best = float(log_keep[i]), float(ks[first][i])
    rest = order[32:]
    if best == 0.0:
        rest = rest[log_bound[rest] > -np.inf]
    else:
        rest = rest[log_bound[rest] >= math.log(-best)]
    if rest.size:
        more = ks[rest] * _log1m_tail(threshold[rest], mu[rest])
        j = int(np.argmin(more))
        if more[j] < best:
            best, k_best = float(more[j]), float(ks[rest][j])
    return best, int(k_best)


def _asymptotic_log_rate(
    lam: float, cap: float, b: float, max_pieces: int = 1 << 22
) -> tuple[float, float, bool]:
    """``psi* = min_s log(1 - q(s))/s`` for lambda < C, its argmin s*, and whether it is certain.

    Within a threshold piece ``log(1 - q(s))/s`` is non-increasing (interpretation 4), so the
    minimum sits at a right end ``s_m = (m - b)/C``. Pieces are scanned until the Chernoff
    bound ``q(s) <= Pr(N(s) >= C s) <= exp(-lambda s I(C/lambda))``,
    ``I(x) = x ln x - x + 1``, shows that no later s can do better.
    """
    x = cap / lam
    rate_fn = lam * (x * math.log(x) - x + 1.0)
    best, s_best = 0.0, (math.floor(b) + 1.0 - b) / cap
    m_start, block = math.floor(b) + 1.0, 1024
    while m_start - math.floor(b) <= max_pieces:
        m = np.arange(m_start, m_start + block)
        s = (m - b) / cap
        psi = _log1m_tail(m, lam * s) / s
        i = int(np.argmin(psi))
        if psi[i] < best:
            best, s_best = float(psi[i]), float(s[i])
        s_end = float(s[-1])
        e = math.exp(-rate_fn * s_end)
        bound = math.inf if e >= 1.0 else e / (1.0 - e) / s_end
        if bound <= -best:
            return best, s_best, True
        m_start += block
        block *= 2
    return best, s_best, False


def _increasing_root(excess: Callable[[float], float], link_rate_bps: float) -> float:
    """Root of a non-decreasing function of the rate, bracketed from the link rate outwards."""
    hi = link_rate_bps
    f_hi = excess(hi)
    while f_hi < 0:
        hi *= 2.0
        if hi > 1e3 * link_rate_bps:
            raise ValueError("target not reached below 1000 times the link rate")
        f_hi = excess(hi)
    lo = hi / 2.0
    f_lo = excess(lo)
    while f_lo >= 0:
        lo /= 2.0
        if lo < 1e-9 * link_rate_bps:
            raise ValueError("target already reached at 1e-9 of the link rate")
        f_lo = excess(lo)
    if f_hi == 0.0:
        return hi
    return float(optimize.brentq(excess, lo, hi, xtol=1e-7 * link_rate_bps, rtol=1e-12))


def _check_n_tcp(n_tcp: int) -> None:
    if isinstance(n_tcp, bool) or not isinstance(n_tcp, (int, np.integer)) or n_tcp < 1:
        raise ValueError(f"n_tcp must be an integer >= 1, got {n_tcp!r}")


def _check_positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")


def _check_rate(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")


def _check_duration(duration_s: float) -> None:
    if not (math.isfinite(duration_s) and duration_s >= 0):
        raise ValueError(f"duration_s must be finite and >= 0, got {duration_s!r}")


def _new_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _save(fig, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)


def main(argv: Sequence[str] | None = None) -> None:
    """Write fig3.png and fig4.png to a folder and print the n = 20 numbers of Sec. IV-A."""
    parser = argparse.ArgumentParser(prog="python -m qoelab.models.sqf_analytic")
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    figure3(args.outdir / "fig3.png")
    figure4(args.outdir / "fig4.png")
    n = 20
    print(
        f"n = {n}, T = {VIDEO_DURATION_S:g} s, C = {LINK_RATE_BPS / 1e6:g} Mbit/s, "
        f"B = {BUFFER_PKTS:g}"
    )
    print(f"  p(T) at 6 Mbit/s: {p_deprioritised(VIDEO_DURATION_S, 6e6, n):.4f}")
    print(f"  T_bar at 6 Mbit/s: {mean_prioritised_time(6e6, n) / 60:.2f} min")
    for target in (0.01, 0.05, 0.5):
        print(f"  p(T) = {target:g} at {peak_rate_for_p(target, n) / 1e6:.3f} Mbit/s")
    print(f"  T_bar = 180 min at {peak_rate_for_mean_time(180 * 60, n) / 1e6:.3f} Mbit/s")


if __name__ == "__main__":
    main()
