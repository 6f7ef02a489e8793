"""Per-frame picture quality: MSE/PSNR, SSIM, EvalVid's PSNR→MOS map and MIV.

- PSNR is `10 log10(255² / MSE)` over 8-bit samples. "YUV" PSNR pools the MSE of all three
  4:2:0 planes weighted by their sample counts (4:1:1), as ffmpeg's `psnr` filter does. Identical
  pictures (MSE 0) get `PSNR_MAX` = 100 dB so that means stay finite; such frames are flagged.
- SSIM is Wang et al. (2004) on the luma plane with an 11×11 Gaussian window (σ = 1.5),
  K1 = 0.01, K2 = 0.03, averaged over the picture.
- MOS follows EvalVid (Klaue et al., 2003, Table 1): PSNR > 37 → 5, > 31 → 4, > 25 → 3,
  > 20 → 2, else 1.
- MIV ("distortion in interval", EvalVid): for each interval of `interval` frames, the percentage
  of frames whose MOS is below the MOS of the same frame in the reference (undamaged) video.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

__all__ = ["PSNR_MAX", "plane_mse", "psnr", "ssim_y", "mos", "miv"]

PSNR_MAX = 100.0


def plane_mse(a: np.ndarray, b: np.ndarray, height: int) -> tuple[float, float]:
    """(luma MSE, all-planes MSE) of two yuv420p pictures of shape `(height * 3 // 2, width)`."""
    d = a.astype(np.int32) - b.astype(np.int32)
    d *= d
    y = float(d[:height].mean())
    yuv = float(d.mean())
    return y, yuv


def psnr(mse: np.ndarray | float) -> np.ndarray:
    """PSNR in dB of 8-bit samples; `PSNR_MAX` where MSE is 0."""
    m = np.asarray(mse, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = 10.0 * np.log10(255.0**2 / m)
    return np.minimum(out, PSNR_MAX)


_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2


def ssim_y(a: np.ndarray, b: np.ndarray, height: int) -> float:
    """Mean SSIM of the luma planes of two yuv420p pictures."""
    x = a[:height].astype(np.float32)
    y = b[:height].astype(np.float32)
    if np.array_equal(x, y):
        return 1.0
    g = dict(sigma=1.5, truncate=3.5, mode="reflect")  # 11-tap window
    mx, my = gaussian_filter(x, **g), gaussian_filter(y, **g)
    sxx = gaussian_filter(x * x, **g) - mx * mx
    syy = gaussian_filter(y * y, **g) - my * my
    sxy = gaussian_filter(x * y, **g) - mx * my
    num = (2 * mx * my + _C1) * (2 * sxy + _C2)
    den = (mx * mx + my * my + _C1) * (sxx + syy + _C2)
    return float(np.mean(num / den))


def mos(psnr_db: np.ndarray) -> np.ndarray:
    """EvalVid's PSNR→MOS mapping, elementwise (int8 in 1..5)."""
    p = np.asarray(psnr_db, dtype=np.float64)
    out = np.ones(p.shape, dtype=np.int8)
    for threshold, score in ((20, 2), (25, 3), (31, 4), (37, 5)):
        out[p > threshold] = score
    return out


def miv(mos_damaged: np.ndarray, mos_reference: np.ndarray, interval: int = 25) -> np.ndarray:
    """Percentage of frames per interval whose MOS is below the reference's (EvalVid MIV)."""
    if interval <= 0:
        raise ValueError("interval must be positive")
    worse = (np.asarray(mos_damaged) < np.asarray(mos_reference)).astype(np.float64)
    n = worse.size
    starts = np.arange(0, n, interval)
    if n == 0:
        return np.zeros(0)
    sums = np.add.reduceat(worse, starts)
    counts = np.diff(np.append(starts, n))
    return 100.0 * sums / counts
