"""Reference formulas: PSNR, EvalVid MOS mapping, MIV, SSIM sanity."""

from __future__ import annotations

import numpy as np

from qoelab.video.metrics import PSNR_MAX, miv, mos, plane_mse, psnr, ssim_y


def test_psnr_formula_and_cap():
    assert psnr(255.0**2) == 0.0
    assert abs(float(psnr(1.0)) - 48.1308) < 1e-4  # 20 log10(255)
    assert float(psnr(0.0)) == PSNR_MAX


def test_evalvid_mos_thresholds():
    # EvalVid: > 37 → 5, > 31 → 4, > 25 → 3, > 20 → 2, else 1 (strict inequalities).
    p = np.array([50, 37.01, 37, 31.5, 31, 25.1, 25, 20.5, 20, 3])
    assert mos(p).tolist() == [5, 5, 4, 4, 3, 3, 2, 2, 1, 1]


def test_miv_percentage_per_interval():
    ref = np.full(50, 5)
    dmg = ref.copy()
    dmg[:5] = 3  # 5 of the first 25 worse
    dmg[30:55] = 4  # 20 of the second 25 worse
    assert miv(dmg, ref, 25).tolist() == [20.0, 80.0]


def test_plane_mse_weights_and_ssim():
    h, w = 16, 16
    a = np.full((h * 3 // 2, w), 100, np.uint8)
    b = a.copy()
    b[:h] += 2  # luma only: MSE_Y = 4, all planes 4 * 256 / 384
    y, yuv = plane_mse(a, b, h)
    assert y == 4.0 and abs(yuv - 4.0 * 256 / 384) < 1e-12
    assert ssim_y(a, a, h) == 1.0
    # Flat pictures: only the luminance term is left, (2 mx my + C1) / (mx² + my² + C1).
    c1 = (0.01 * 255) ** 2
    expected = (2 * 100 * 102 + c1) / (100**2 + 102**2 + c1)
    assert abs(ssim_y(a, b, h) - expected) < 1e-6
    rng = np.random.default_rng(0)
    img = np.full((h * 3 // 2, w), 128, np.uint8)
    noisy = np.clip(img + rng.normal(0, 20, img.shape), 0, 255).astype(np.uint8)
    assert 0 < ssim_y(img, noisy, h) < 0.5  # structure destroyed
