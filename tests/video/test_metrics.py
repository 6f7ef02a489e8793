"""Reference formulas: PSNR, SSIM (both definitions), EvalVid's MOS and MIV rules."""

from __future__ import annotations

import numpy as np
import pytest

from qoelab.video.pictures.metrics import (PSNR_MAX, EvalVidMos, miv, mos, mos_evalvid, plane_mse, psnr,
                                           psnr_evalvid, ssim_y_block, ssim_y_gaussian)


def test_psnr_formula_and_cap():
    assert psnr(255.0**2) == 0.0
    assert abs(float(psnr(1.0)) - 48.1308) < 1e-4  # 20 log10(255)
    assert float(psnr(0.0)) == PSNR_MAX
    # EvalVid's psnr tool writes 0 for identical pictures (psnr.c: `yrmse ? ... : 0`).
    assert psnr_evalvid(np.array([0.0, 1.0])).tolist() == [0.0, pytest.approx(48.1308, abs=1e-4)]


def test_evalvid_mos_thresholds():
    # EvalVid: > 37 → 5, > 31 → 4, > 25 → 3, > 20 → 2, else 1 (strict inequalities).
    p = np.array([50, 37.01, 37, 31.5, 31, 25.1, 25, 20.5, 20, 3])
    assert mos(p).tolist() == [5, 5, 4, 4, 3, 3, 2, 2, 1, 1]


def test_evalvid_mos_and_miv_on_a_hand_built_sequence():
    """EvalVid 2.7 mos.c, worked by hand.

    damaged PSNR   38  37.0004  30  0  22  45  31.0004  19
      printed      38.000  37.000  30.000  0.000 (identical: skipped)  22.000  45.000  31.000  19.000
      MOS Q        5   4   3   -   2   5   3   1       (37.000 is not > 37; 31.000 is not > 31)
    reference      39 ×5, 32 ×3  → R = 5 5 5 5 5 4 4 4
    After the skip the sequences are compared index by index (EvalVid does not re-align):
      Q  5 4 3 2 5 3 1
      R  5 5 5 5 5 4 4
      Q < R and Q < 4:  0 0 1 1 0 1 1   (frame 1: 4 < 5 but not < 4)
    windows of 4, sliding by one: [0011] 50 %, [0110] 50 %, [1101] 75 %, [1011] 75 %.
    mean MOS 23/7, reference 37/8; with a window longer than the sequence one window of 7: 4/7.
    """
    dmg = np.array([38.0, 37.0004, 30.0, 0.0, 22.0, 45.0, 31.0004, 19.0])
    ref = np.array([39.0] * 5 + [32.0] * 3)
    e = EvalVidMos(dmg, ref, interval=4)
    assert e.mos.tolist() == [5, 4, 3, 0, 2, 5, 3, 1]
    assert e.miv.tolist() == [50.0, 50.0, 75.0, 75.0]
    s = e.summary()
    assert s["mean_mos"] == pytest.approx(23 / 7) and s["mean_ref_mos"] == pytest.approx(37 / 8)
    assert s["mos_skipped_frames"] == 1 and s["miv_windows"] == 4
    assert s["mean_miv_percent"] == pytest.approx(62.5) and s["max_miv_percent"] == 75.0
    assert s["mos_histogram_percent"]["5"] == pytest.approx(200 / 7)
    assert EvalVidMos(dmg, ref, interval=25).miv.tolist() == [pytest.approx(400 / 7)]
    # Exact (unrounded) thresholds would give 5 for 37.0004: the printed value is what counts.
    assert mos(np.array([37.0004])).tolist() == [5] and mos_evalvid(np.array([37.0004])).tolist() == [4]


def test_miv_counts_only_mos_below_four():
    ref = np.full(30, 5)
    dmg = np.full(30, 4)  # every frame worse than the reference, none below 4
    assert miv(dmg, ref, 25).tolist() == [0.0] * 6
    dmg[:3] = 3
    assert miv(dmg, ref, 25).tolist() == [12.0, 8.0, 4.0, 0.0, 0.0, 0.0]


def test_plane_mse_weights():
    h, w = 16, 16
    a = np.full((h * 3 // 2, w), 100, np.uint8)
    b = a.copy()
    b[:h] += 2  # luma only: MSE_Y = 4, all planes 4 * 256 / 384
    y, yuv = plane_mse(a, b, h)
    assert y == 4.0 and abs(yuv - 4.0 * 256 / 384) < 1e-12


def test_block_ssim_constants_and_windows():
    h, w = 16, 16
    a = np.full((h * 3 // 2, w), 100, np.uint8)
    b = a.copy()
    b[:h] += 2
    # Flat 8×8 windows: variances and covariance are 0, so SSIM is the luminance term on the
    # window sums with x264's integer constant c1 = round(0.01² · 255² · 64) = 416.
    s1, s2 = 64 * 100, 64 * 102
    assert ssim_y_block(a, b, h) == pytest.approx((2 * s1 * s2 + 416) / (s1 * s1 + s2 * s2 + 416), rel=1e-7)
    assert ssim_y_block(a, a, h) == 1.0
    # Only whole 4×4 blocks count: a change in the last 2 columns of an 18-wide picture is invisible.
    c = np.full((27, 18), 90, np.uint8)
    d = c.copy()
    d[:18, 16:] = 0
    assert ssim_y_block(c, d, 18) == 1.0
    rng = np.random.default_rng(0)
    img = np.full((h * 3 // 2, w), 128, np.uint8)
    noisy = np.clip(img + rng.normal(0, 20, img.shape), 0, 255).astype(np.uint8)
    assert 0 < ssim_y_block(img, noisy, h) < 0.5  # structure destroyed


def test_gaussian_ssim_is_wangs_and_differs_from_block():
    h, w = 16, 16
    a = np.full((h * 3 // 2, w), 100, np.uint8)
    b = a.copy()
    b[:h] += 2
    c1 = (0.01 * 255) ** 2
    assert ssim_y_gaussian(a, b, h) == pytest.approx((2 * 100 * 102 + c1) / (100**2 + 102**2 + c1), abs=1e-6)
    # A smooth pattern with noise: the two windows weigh structure differently (0.80 vs 0.88).
    yy, xx = np.mgrid[0:72, 0:48]
    img = (128 + 60 * np.sin(xx / 5.0) * np.cos(yy / 7.0)).astype(np.uint8)
    noisy = np.clip(img + np.random.default_rng(1).normal(0, 8, img.shape), 0, 255).astype(np.uint8)
    assert ssim_y_block(img, noisy, 48) - ssim_y_gaussian(img, noisy, 48) > 0.05


def _ssim_brute_force(x: np.ndarray, y: np.ndarray) -> float:
    """Wang et al.'s SSIM written out window by window: an explicit 11×11 Gaussian (σ = 1.5,
    normalised), weighted moments, every window wholly inside the picture, mean of the map."""
    k = np.exp(-(np.arange(-5, 6) ** 2) / (2 * 1.5**2))
    w = np.outer(k, k) / np.outer(k, k).sum()
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    x, y = x.astype(float), y.astype(float)
    vals = []
    for i in range(5, x.shape[0] - 5):
        for j in range(5, x.shape[1] - 5):
            px, py = x[i - 5:i + 6, j - 5:j + 6], y[i - 5:i + 6, j - 5:j + 6]
            mx, my = (w * px).sum(), (w * py).sum()
            vx, vy = (w * (px - mx) ** 2).sum(), (w * (py - my) ** 2).sum()
            cxy = (w * (px - mx) * (py - my)).sum()
            vals.append((2 * mx * my + c1) * (2 * cxy + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))
    return float(np.mean(vals))


def test_gaussian_ssim_border_rule_is_wangs_valid_windows():
    # A picture whose borders differ from its interior: a rule that averages over reflected
    # border windows (the previous one) is off by ~1e-3 here; the valid-window rule is exact.
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:40, 0:36]
    img = (128 + 60 * np.sin(xx / 4.0) * np.cos(yy / 6.0)).astype(np.uint8)
    noisy = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
    noisy[:, :3] = 255 - noisy[:, :3]                      # a damaged border strip
    want = _ssim_brute_force(img, noisy)
    assert ssim_y_gaussian(img, noisy, 40) == pytest.approx(want, abs=1e-9)
    # the reflected-border mean over every pixel is measurably different
    from scipy.ndimage import gaussian_filter
    g = dict(sigma=1.5, truncate=3.5, mode="reflect")
    x, y = img.astype(float), noisy.astype(float)
    mx, my = gaussian_filter(x, **g), gaussian_filter(y, **g)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    full = np.mean((2 * mx * my + c1) * (2 * (gaussian_filter(x * y, **g) - mx * my) + c2)
                   / ((mx**2 + my**2 + c1) * (gaussian_filter(x * x, **g) - mx**2 + gaussian_filter(y * y, **g) - my**2 + c2)))
    assert abs(full - want) > 1e-3
