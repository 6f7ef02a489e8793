"""The closed forms of `qoelab verify` against values worked out by hand from the papers' own
equations (the arithmetic is in the comments), and against independent derivations."""

import math

import pytest

from qoelab.verify import closed_forms as cf


def test_padhye_eq30_by_hand():
    # p = 1 %, RTT = 100 ms, T0 = 1 s, b = 1:
    # RTT·sqrt(2bp/3) = 0.1·0.0816497 = 0.00816497
    # T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²) = 1·0.1837117·0.01·1.0032 = 0.00184300
    # B = 1 / 0.01000797 = 99.920 packets/s (docs/models/tcp.md's table: 99.8 with SRTT 100.1 ms)
    assert cf.padhye_full(0.01, 0.1, 1.0) == pytest.approx(99.920, rel=1e-4)
    # The receiver window caps it: Wmax/RTT.
    assert cf.padhye_full(0.01, 0.1, 1.0, wmax=5) == pytest.approx(50.0)
    # Timeout share of the denominator: 0.00184300 / 0.01000797.
    assert cf.padhye_timeout_share(0.01, 0.1, 1.0) == pytest.approx(0.18415, rel=1e-3)
    # b = 2 (delayed ACKs, per-ACK growth): 0.1·sqrt(0.04/3) = 0.01154701;
    # min(1, 3·sqrt(0.0075)) = 0.2598076, ·0.01·1.0032 = 0.00260639; B = 1/0.0141534 = 70.654
    assert cf.padhye_full(0.01, 0.1, 1.0, b=2.0) == pytest.approx(70.654, rel=1e-4)


def test_td_only_term_is_mathis_with_c_sqrt_3_over_2():
    # Mathis et al. 1997: (1/RTT)·C/sqrt(p), C = sqrt(3/2) = 1.2247; p = 1 %, RTT = 100 ms: 122.47
    assert cf.padhye_td_only(0.01, 0.1) == pytest.approx(122.474, rel=1e-4)
    for p in (0.001, 0.02, 0.3):
        assert cf.padhye_td_only(p, 0.05) == pytest.approx(math.sqrt(1.5) / (0.05 * math.sqrt(p)))
    # The full model never exceeds its timeout-free term.
    assert cf.padhye_full(0.05, 0.02, 1.0) < cf.padhye_td_only(0.05, 0.02)


def test_md1_by_hand():
    # S = 8000 bit / 10 Mbit/s = 0.8 ms; ρ = 0.5: 0.5·0.8/(2·0.5) = 0.4 ms; ρ = 0.8: 0.64/0.4 = 1.6 ms
    assert cf.md1_wait(0.5, 0.8e-3) == pytest.approx(0.4e-3)
    assert cf.md1_wait(0.8, 0.8e-3) == pytest.approx(1.6e-3)
    # Half the M/M/1 wait ρS/(1 − ρ): deterministic service halves the residual term.
    assert cf.md1_wait(0.7, 1.0) == pytest.approx(0.5 * 0.7 / 0.3)
    with pytest.raises(ValueError):
        cf.md1_wait(1.0, 1.0)


def test_gilbert_elliott_by_hand():
    # Gilbert (k_G = 0, k_B = 1), p = 0.01, r = 0.5: π_B = 0.01/0.51 = 0.0196078; bursts 1/r = 2.
    assert cf.ge_loss_rate(0.01, 0.5) == pytest.approx(0.0196078, rel=1e-5)
    assert cf.ge_mean_burst(0.01, 0.5) == pytest.approx(2.0)
    # p = 0.02, r = 0.3, k_G = 0.01, k_B = 0.8: π_B = 0.0625, π_G = 0.9375;
    # P(L) = 0.9375·0.01 + 0.0625·0.8 = 0.059375
    # P(L,L) = 0.009375·(0.98·0.01 + 0.02·0.8) + 0.05·(0.3·0.01 + 0.7·0.8) = 0.000241875 + 0.02815
    # burst = 0.059375 / 0.030983125 = 1.916366
    assert cf.ge_loss_rate(0.02, 0.3, 0.01, 0.8) == pytest.approx(0.059375)
    assert cf.ge_mean_burst(0.02, 0.3, 0.01, 0.8) == pytest.approx(1.916366, rel=1e-6)
    # Equal loss in both states is Bernoulli: runs are geometric with mean 1/(1 − k).
    assert cf.ge_mean_burst(0.1, 0.2, 0.3, 0.3) == pytest.approx(1 / 0.7)


def test_gilbert_elliott_burst_against_a_direct_simulation_of_the_chain():
    # An independent check of the run-length formula: step the chain as links.md describes
    # (judge the packet in the current state, then step) with Python's own generator.
    import random

    rng = random.Random(1)
    p, r, kg, kb = 0.05, 0.2, 0.05, 0.7
    bad, lost_prev, losses, runs = False, False, 0, 0
    for _ in range(400_000):
        lost = rng.random() < (kb if bad else kg)
        bad = (rng.random() >= r) if bad else (rng.random() < p)
        losses += lost
        runs += lost and not lost_prev
        lost_prev = lost
    assert losses / runs == pytest.approx(cf.ge_mean_burst(p, r, kg, kb), rel=0.03)
    assert losses / 400_000 == pytest.approx(cf.ge_loss_rate(p, r, kg, kb), rel=0.03)


def test_jain_and_rtt_exponent_by_hand():
    assert cf.jain([3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert cf.jain([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert cf.jain([1.0, 2.0]) == pytest.approx(9 / 10)
    # 4× the throughput at half the RTT: a = ln 4 / ln 2 = 2.
    assert cf.rtt_exponent(4.0, 1.0, 0.02, 0.04) == pytest.approx(2.0)
    assert cf.rtt_exponent(2.0, 1.0, 0.02, 0.08) == pytest.approx(0.5)


def test_cubic_response_by_hand():
    # (C(3+β)/(4(1−β)))^¼ = (0.4·3.7/1.2)^¼ = 1.233333^¼ = 1.053830; RTT/p = 0.1/0.001 = 100, 100^¾ = 31.6228
    assert cf.cubic_avg_window(0.001, 0.1) == pytest.approx(1.053830 * 31.62278, rel=1e-5)
    # Reno-friendly: sqrt(3/(2p)), p = 1 %: sqrt(150) = 12.2474
    assert cf.cubic_reno_friendly_window(0.01) == pytest.approx(12.2474, rel=1e-5)
    assert cf.cubic_response(0.01, 0.04)[1] == "reno-friendly"
    assert cf.cubic_response(0.0005, 0.3)[1] == "cubic"


def test_cubic_average_window_is_the_mean_of_rfc9438_w_cubic_over_a_loss_cycle():
    # Independent derivation: with one loss every 1/p packets, a cycle runs W(t) = C(t − K)³ + W_max
    # from βW_max at t = 0 to W_max at t = K = ∛(W_max(1 − β)/C) (RFC 9438 eq. 1, 2). Find W_max for
    # which the packets sent in a cycle, ∫W(t)/RTT dt, equal 1/p, then average W over the cycle.
    c, beta, rtt, p = 0.4, 0.7, 0.2, 0.001

    def cycle(w_max: float) -> tuple[float, float]:
        k = (w_max * (1 - beta) / c) ** (1 / 3)
        n = 20_000
        ws = [c * ((i + 0.5) * k / n - k) ** 3 + w_max for i in range(n)]
        return sum(ws) * (k / n) / rtt, sum(ws) / n  # packets in the cycle, mean window

    lo, hi = 1.0, 1e5
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cycle(mid)[0] < 1 / p else (lo, mid)
    assert cycle(lo)[1] == pytest.approx(cf.cubic_avg_window(p, rtt, c, beta), rel=1e-4)


def test_bad_arguments():
    for f in (lambda: cf.padhye_full(0.0, 0.1, 1.0), lambda: cf.padhye_td_only(1.0, 0.1),
              lambda: cf.cubic_avg_window(-0.1, 0.1), lambda: cf.jain([]), lambda: cf.ge_mean_burst(0.1, 0.1, 0.0, 0.0)):
        with pytest.raises(ValueError):
            f()


def test_linux_cubic_alpha_and_aimd_by_hand():
    # beta_scale = 8·(1024 + 717)/3/(1024 − 717) = 13928/3 = 4642 (integer), /307 = 15: α = 8/15.
    assert cf.linux_cubic_alpha(0.7) == pytest.approx(8 / 15)
    # β = 0.5 (512): 8·1536/3 = 4096, /512 = 8: α = 1, Reno's.
    assert cf.linux_cubic_alpha(0.5) == pytest.approx(1.0)
    # AIMD(α, β) with RFC 9438's α is Reno's sqrt(3/(2p)); p = 2 %: 8.660.
    a = 3 * 0.3 / 1.7
    assert cf.aimd_avg_window(0.02, a, 0.7) == pytest.approx(math.sqrt(3 / 0.04))
    # Linux's α: sqrt((8/15)·1.7/(0.6·0.02)) = sqrt(75.556) = 8.692, 0.37 % above.
    assert cf.aimd_avg_window(0.02, 8 / 15, 0.7) == pytest.approx(8.6923, rel=1e-4)
    w, region = cf.cubic_response_linux(0.02, 0.04)
    assert (region, w) == ("reno-friendly", pytest.approx(8.6923, rel=1e-4))
    assert cf.cubic_response_linux(0.0005, 0.3)[1] == "cubic"


def test_cwnd_restart_by_hand():
    # cwnd 100, IW 10, RTO 0.3 s: idle 0.25 s is not idle (the caller restarts only past one RTO);
    # 0.5 s: one subtraction leaves 0.2 > 0, halve once: 50; 0.7 s: 0.4, 0.1 → 25; 2 s: down to
    # the restart window 10 (100 → 50 → 25 → 12 → 10).
    assert cf.cwnd_restart(100, 10, 0.5, 0.3) == 50
    assert cf.cwnd_restart(100, 10, 0.7, 0.3) == 25
    assert cf.cwnd_restart(100, 10, 2.0, 0.3) == 10
    # An RTO exactly: (0.6 − 0.3) − 0.3 = 0, not > 0: one halving only.
    assert cf.cwnd_restart(100, 10, 0.6, 0.3) == 50
    # A window below IW stays: restart = min(IW, cwnd).
    assert cf.cwnd_restart(6, 10, 5.0, 0.3) == 6
