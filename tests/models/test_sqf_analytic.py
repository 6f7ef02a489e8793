"""Tests of the SQF de-prioritisation model (Sec. IV of Bonald, Muscariello, Ostallo, ICC 2011).

See docs/models/sqf-analytic.md ("Validation") for what each group checks and for the numbers
behind the n = 20 tests. Run with ``PYTHONPATH=python python -m pytest tests/models``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import poisson

from qoelab.models import sqf_analytic as sqf

T_VIDEO = 600.0  # the 10-minute video of Fig. 3, seconds
C_PKTS = 1000.0  # 10 Mbit/s in 1250-byte packets per second
MBPS = 1e6


def brute_force_p(duration_s: float, rate_bps: float, n: int, k_max: int) -> float:
    """Eq. (2) written out directly: every k in 1..k_max, q from scipy.stats.poisson."""
    lam = rate_bps / 1e4
    b = 200 / (n + 1)
    k = np.arange(1, k_max + 1, dtype=float)
    s = duration_s / k
    q = poisson.sf(np.ceil(C_PKTS * s + b) - 1, lam * s)
    # 1 - (1 - q)^k, without the cancellation of the literal form when p is small
    return float(np.max(-np.expm1(k * np.log1p(-q))))


def sliding_window_mc(duration_s: float, rate_bps: float, n: int, runs: int, seed: int) -> float:
    """Monte Carlo of Pr(some interval of [0, T] has N >= C * length + B/(n+1)).

    The fluid video backlog after arrival j is max over i <= j of (j - i + 1) - C (t_j - t_i)
    (Lindley's recursion unrolled); the event is that it reaches B/(n+1).
    """
    rng = np.random.default_rng(seed)
    lam, b = rate_bps / 1e4, 200 / (n + 1)
    hits = 0
    for _ in range(runs):
        t = np.sort(rng.uniform(0.0, duration_s, rng.poisson(lam * duration_s)))
        a = np.arange(t.size) - C_PKTS * t
        backlog = a + 1.0 - np.minimum.accumulate(a)
        hits += bool(backlog.size and backlog.max() >= b)
    return hits / runs


# ---------------------------------------------------------------------------------------------
# Conditions (1) and (3)
# ---------------------------------------------------------------------------------------------


def test_eq1_threshold_is_b_over_n_plus_1_and_matches_equal_tcp_shares():
    assert sqf.priority_threshold_pkts(20, 200) == pytest.approx(200 / 21)
    assert sqf.priority_threshold_pkts(1, 2) == 1.0
    # x < B/(n+1)  <=>  x < (B - x)/n : the derivation of eq. (1) from equal TCP shares.
    for n in (1, 5, 20):
        for x in np.linspace(0, 200, 801):
            assert sqf.single_stream_prioritised(x, n, 200) == (x < (200 - x) / n)


def test_eq3_with_one_stream_is_eq1():
    for n in (1, 5, 20):
        for x in np.linspace(0, 200, 401):
            expected = sqf.single_stream_prioritised(x, n, 200)
            assert sqf.multi_stream_condition([x], n, 200) == expected


def test_eq1_on_the_total_is_sufficient_for_eq3_but_not_necessary():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        m = int(rng.integers(1, 6))
        n = int(rng.integers(1, 25))
        x = rng.uniform(0, 20, m)
        if sqf.single_stream_prioritised(float(x.sum()), n, 200):
            assert sqf.multi_stream_condition(x, n, 200)
    # Three streams of 4 packets with n = 20: total 12 >= 9.52, yet each 4 < (200 - 12)/20.
    assert not sqf.single_stream_prioritised(12.0, 20, 200)
    assert sqf.multi_stream_condition([4.0, 4.0, 4.0], 20, 200)
    assert not sqf.multi_stream_condition([4.0, 4.0, 9.5], 20, 200)  # 9.5 >= (200 - 17.5)/20


@pytest.mark.parametrize(
    "call",
    [
        lambda: sqf.priority_threshold_pkts(0, 200),
        lambda: sqf.multi_stream_condition([-1.0], 5, 200),
        lambda: sqf.multi_stream_condition([150.0, 60.0], 5, 200),
        lambda: sqf.p_deprioritised(600, -1.0, 5),
        lambda: sqf.p_deprioritised(-1.0, 1e6, 5),
        lambda: sqf.p_deprioritised(600, 1e6, 5, buffer_pkts=0),
        lambda: sqf.p_deprioritised_multi(600, 1e6, 0, 5),
        lambda: sqf.q_of_t([-1.0], 1e6, 5),
    ],
)
def test_invalid_arguments_raise(call):
    with pytest.raises(ValueError):
        call()


# ---------------------------------------------------------------------------------------------
# q(t) and eq. (2)
# ---------------------------------------------------------------------------------------------


def test_q_matches_hand_computed_poisson_tail():
    # B = 2, n = 1: b = 1. At t = 0.5 ms, C t + b = 1.5, so q = Pr(N >= 2) = 1 - e^-mu (1 + mu)
    # with mu = lambda t = 800 * 0.0005 = 0.4 (8 Mbit/s in 1250-byte packets).
    q = sqf.q_of_t(0.0005, 8e6, 1, buffer_pkts=2)
    assert q == pytest.approx(1 - math.exp(-0.4) * 1.4, rel=1e-12)
    # At t = 10 ms and 6 Mbit/s with n = 20: C t + b = 19.52 -> N >= 20, mu = 6.
    mu = 6.0
    hand = 1 - sum(math.exp(-mu) * mu**j / math.factorial(j) for j in range(20))
    assert sqf.q_of_t(0.01, 6e6, 20) == pytest.approx(hand, rel=1e-9)
    assert sqf.q_of_t(0.0, 6e6, 20) == 0.0


def test_p_is_a_probability_everywhere():
    for n in (1, 5, 20, 199):
        for duration in (0.0, 1e-4, 0.3, 10.0, 600.0):
            for rate in (0.0, 1e3, 2e6, 6e6, 9.99e6, 1e7, 1.5e7, 1e8):
                p = sqf.p_deprioritised(duration, rate, n)
                assert 0.0 <= p <= 1.0


def test_p_vanishes_for_vanishing_peak_rate():
    assert sqf.p_deprioritised(T_VIDEO, 0.0, 20) == 0.0
    assert sqf.p_deprioritised(0.0, 6e6, 20) == 0.0
    # With b = 9.52 every interval needs >= 10 arrivals; q(s) <= (lambda s)^10/10!, so p -> 0
    # like lambda^10 for small lambda.
    small = [sqf.p_deprioritised(T_VIDEO, r, 20) for r in (1e5, 1e4, 1e3)]
    assert small[0] < 1e-20
    assert small[0] > small[1] > small[2]


@pytest.mark.parametrize("rate_bps", [1e5, 2e6, 8e6, 1e7, 2e7])
@pytest.mark.parametrize("duration_s", [1e-4, 5e-4, 1e-3])
def test_closed_form_when_every_interval_has_threshold_two(rate_bps, duration_s):
    # B = 2, n = 1 gives b = 1. For T <= 1/C, 0 < C T/k <= 1 for every k, so the threshold is
    # ceil(C T/k + 1) = 2 and 1 - q(s) = e^(-lambda s) (1 + lambda s). Then
    # log(1 - q_k) = -lambda T + k log(1 + lambda T/k) grows with k, so k = 1 is the maximiser:
    # p(T) = 1 - e^(-lambda T) (1 + lambda T).
    mu = rate_bps / 1e4 * duration_s
    expected = 1 - math.exp(-mu) * (1 + mu)
    p = sqf.p_deprioritised(duration_s, rate_bps, 1, buffer_pkts=2)
    assert p == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize(
    ("duration_s", "rate_bps", "n"),
    [(3.0, 6e6, 20), (3.0, 9e6, 5), (0.7, 11e6, 10), (20.0, 8e6, 10), (20.0, 3e6, 20)],
)
def test_exact_maximum_over_k_agrees_with_brute_force(duration_s, rate_bps, n):
    # The module enumerates O(sqrt(C T)) candidate k; the brute force tries all 200 000.
    expected = brute_force_p(duration_s, rate_bps, n, k_max=200_000)
    p = sqf.p_deprioritised(duration_s, rate_bps, n)
    assert p == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_p_is_at_least_q_of_the_whole_period():
    # k = 1 is one of the partitions in eq. (2).
    for rate in (2e6, 6e6, 9.5e6, 1.1e7):
        for duration in (0.05, 1.0, 600.0):
            assert sqf.p_deprioritised(duration, rate, 10) >= float(sqf.q_of_t(duration, rate, 10))


def test_p_is_monotone_in_peak_rate():
    rates = np.linspace(0, 1.2e7, 241)
    for n in sqf.N_TCP_VALUES:
        p = np.array([sqf.p_deprioritised(T_VIDEO, r, n) for r in rates])
        assert np.all(np.diff(p) >= 0.0)


def test_curves_have_the_papers_shape_and_move_left_as_n_grows():
    rates = np.linspace(0, 1e7, 101)
    curves = {n: np.array([sqf.p_deprioritised(T_VIDEO, r, n) for r in rates]) for n in (5, 10, 20)}
    for p in curves.values():
        assert p[0] == 0.0 and p[rates <= 3e6].max() < 1e-3  # about 0 ...
        assert p[-1] > 0.999  # ... to about 1 at the link rate
    # More TCP flows lower B/(n+1), so every q and hence p grows with n at a fixed rate.
    assert np.all(curves[5] <= curves[10]) and np.all(curves[10] <= curves[20])
    midpoints = [sqf.peak_rate_for_p(0.5, n) for n in (5, 10, 20)]
    assert midpoints[0] > midpoints[1] > midpoints[2]


def test_fq_reference_curve_switches_at_the_fair_share():
    for n in (5, 10, 20):
        share = 1e7 / (n + 1)
        assert sqf.p_deprioritised_fq(share * 0.999, n) == 0.0
        assert sqf.p_deprioritised_fq(share, n) == 1.0
    # The paper rounds C/21 = 476 kbit/s to "480 kbit/s".
    assert 1e7 / 21 == pytest.approx(480e3, rel=0.01)


def test_multi_stream_is_one_stream_of_the_total_rate():
    assert sqf.p_deprioritised_multi(T_VIDEO, 2e6, 3, 20) == sqf.p_deprioritised(T_VIDEO, 6e6, 20)


def test_eq2_is_a_lower_bound_of_the_sliding_window_event():
    # Eq. (2) only looks at aligned intervals of equal length, so it underestimates the
    # probability that *some* interval has N >= C s + b (the fluid video backlog reaching b).
    duration, rate, n, runs = 10.0, 6e6, 20, 400
    p_model = sqf.p_deprioritised(duration, rate, n)
    p_mc = sliding_window_mc(duration, rate, n, runs=runs, seed=11)
    sigma = math.sqrt(max(p_mc * (1 - p_mc), 1e-4) / runs)
    assert p_model < p_mc - 3 * sigma
    # ... and both agree that de-prioritisation is impossible without bursts of >= 10 packets.
    assert sliding_window_mc(duration, 1e5, n, runs=50, seed=12) == 0.0


# ---------------------------------------------------------------------------------------------
# T_bar
# ---------------------------------------------------------------------------------------------


def test_mean_time_is_the_integral_of_one_minus_p():
    # 9 Mbit/s, n = 20: 1 - p(t) < 1e-12 by t = 60 s, so a plain trapezoid of the public
    # p_deprioritised needs no tail.
    t = np.linspace(0.0, 60.0, 6001)
    keep = 1.0 - np.array([sqf.p_deprioritised(ti, 9e6, 20) for ti in t])
    assert keep[-1] < 1e-12
    assert sqf.mean_prioritised_time(9e6, 20) == pytest.approx(np.trapezoid(keep, t), rel=2e-3)


def test_mean_time_and_p_agree_in_the_exponential_regime():
    # Once T spans many optimal intervals, log(1 - p(T)) ~ -T / T_bar (module docstring, item 5).
    for rate, n in ((6e6, 20), (5e6, 20), (8e6, 10)):
        t_bar = sqf.mean_prioritised_time(rate, n)
        p = sqf.p_deprioritised(T_VIDEO, rate, n)
        assert -math.log1p(-p) == pytest.approx(T_VIDEO / t_bar, rel=0.01)


def test_mean_time_is_stable_under_refinement():
    # One case dominated by the closed-form tail, one computed by quadrature alone.
    for rate, n in ((6e6, 20), (9.5e6, 20)):
        base = sqf.mean_prioritised_time(rate, n)
        finer_tail = sqf.mean_prioritised_time(rate, n, min_intervals=2048)
        finer_grid = sqf.mean_prioritised_time(rate, n, grid_points=4096)
        assert finer_tail == pytest.approx(base, rel=5e-3)
        assert finer_grid == pytest.approx(base, rel=5e-3)


def test_mean_time_decreases_with_rate_and_with_n():
    rates = np.array([2e6, 5e6, 8e6, 9.9e6, 1.2e7])
    for n in (5, 20):
        t_bar = np.array([sqf.mean_prioritised_time(r, n) for r in rates])
        assert np.all(np.diff(t_bar) < 0)
    for rate in (4e6, 9e6):
        values = [sqf.mean_prioritised_time(rate, n) for n in (5, 10, 20)]
        assert values[0] > values[1] > values[2]
    assert sqf.mean_prioritised_time(0.0, 20) == math.inf


# ---------------------------------------------------------------------------------------------
# The paper's n = 20 statements (Sec. IV-A). Numbers and reasons: docs/models/sqf-analytic.md.
# ---------------------------------------------------------------------------------------------


def test_n20_at_6_mbps_is_the_middle_of_the_transition_not_its_foot():
    # Paper: "p is close to 0 as long as the peak rate is less than 6 Mbit/s". Eq. (2) as
    # written gives p(10 min, 6 Mbit/s) = 0.453: 6 Mbit/s is where p crosses 1/2.
    p6 = sqf.p_deprioritised(T_VIDEO, 6 * MBPS, 20)
    assert p6 == pytest.approx(0.453, abs=0.005)
    assert sqf.peak_rate_for_p(0.5, 20) == pytest.approx(6.06 * MBPS, abs=0.02 * MBPS)
    # "Close to 0" (p <= 1 %) holds up to 4.54 Mbit/s.
    assert sqf.peak_rate_for_p(0.01, 20) == pytest.approx(4.54 * MBPS, abs=0.02 * MBPS)


def test_n20_mean_time_exceeds_180_min_up_to_5_1_mbps_not_6():
    # Paper: "T_bar is larger than 180 min as long as the peak rate is less than 6 Mbit/s".
    assert sqf.mean_prioritised_time(6 * MBPS, 20) / 60 == pytest.approx(16.6, abs=0.2)
    assert sqf.peak_rate_for_mean_time(180 * 60, 20) == pytest.approx(5.11 * MBPS, abs=0.02 * MBPS)


# ---------------------------------------------------------------------------------------------
# deprioritised_fraction
# ---------------------------------------------------------------------------------------------


def test_deprioritised_fraction_on_a_hand_made_series():
    video = [0, 1, 3, 3, 5]
    others = [[2, 2, 2, 0, 9], [4, 0, 1, 0, 4]]
    # 0: video empty; 1: 1 < 2 (the empty flow is inactive); 2: 3 >= 1; 3: no active other;
    # 4: 5 >= 4. De-prioritised at samples 2 and 4.
    assert sqf.deprioritised_fraction(video, others, 0.1) == pytest.approx(2 / 5)
    assert sqf.deprioritised_fraction(video, others, [1, 1, 1, 1, 6]) == pytest.approx(7 / 10)


def test_deprioritised_fraction_ties_count_as_deprioritised_and_shapes():
    # Condition (1) is strict: an equal backlog is no longer "lower than each TCP flow".
    assert sqf.deprioritised_fraction([2.0], [2.0], 1.0) == 1.0
    assert sqf.deprioritised_fraction([2.0, 1.0], [3.0, 1.5], 1.0) == 0.0
    assert sqf.deprioritised_fraction([2.0, 1.0], np.empty((0, 2)), 1.0) == 0.0


def test_deprioritised_fraction_agrees_with_eq1_under_equal_tcp_shares():
    n, buffer_pkts = 20, 200.0
    for x in np.linspace(0, 199, 797):
        others = np.full((n, 1), (buffer_pkts - x) / n)
        measured = sqf.deprioritised_fraction([x], others, 1.0)
        assert measured == (0.0 if sqf.single_stream_prioritised(x, n, buffer_pkts) else 1.0)


@pytest.mark.parametrize(
    ("video", "others", "dt"),
    [
        ([1, 2], [[1, 2, 3]], 1.0),
        ([1, -2], [[1, 2]], 1.0),
        ([1, 2], [[1, np.nan]], 1.0),
        ([1, 2], [[1, 2]], [0.0, 0.0]),
        ([1, 2], [[1, 2]], [1.0, -1.0]),
        ([], [[]], 1.0),
    ],
)
def test_deprioritised_fraction_rejects_bad_input(video, others, dt):
    with pytest.raises(ValueError):
        sqf.deprioritised_fraction(video, others, dt)


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


def test_figure3_is_computed_from_eq2_and_written(tmp_path):
    rates = np.array([0.0, 4e6, 6e6, 8e6, 9.5e6])
    data = sqf.figure3(tmp_path / "fig3.png", peak_rates_bps=rates)
    assert (tmp_path / "fig3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert data.p_sqf.shape == (3, rates.size)
    for i, n in enumerate(data.n_values):
        for j, r in enumerate(rates):
            assert data.p_sqf[i, j] == sqf.p_deprioritised(T_VIDEO, r, n)
            assert data.p_fq[i, j] == sqf.p_deprioritised_fq(r, n)


def test_figure4_is_computed_from_eq2_and_written(tmp_path):
    rates = np.array([5e6, 6e6, 7e6])
    data = sqf.figure4(tmp_path / "fig4.png", n_values=(20,), peak_rates_bps=rates)
    assert (tmp_path / "fig4.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert data.mean_time_s[0, 1] == sqf.mean_prioritised_time(6e6, 20)
    assert np.all(np.diff(data.mean_time_s[0]) < 0)
    assert data.fq_limit_bps[0] == pytest.approx(1e7 / 21)
