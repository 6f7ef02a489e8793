"""Per-frame picture quality: MSE/PSNR, SSIM, EvalVid's PSNR→MOS map and MIV.

- PSNR is `10 log10(255² / MSE)` over 8-bit samples. "YUV" PSNR pools the MSE of all three
  4:2:0 planes weighted by their sample counts (4:1:1), as ffmpeg's `psnr` filter does.
  Identical pictures (MSE 0) have no finite PSNR: `psnr()` caps them at `PSNR_MAX` = 100 dB
  (used where a mean must stay finite, e.g. an encode's reference quality), while the
  evaluation's per-frame columns hold NaN for them and count them separately, and EvalVid's
  `psnr` tool writes 0 (`psnr_evalvid`), which its `mos` tool then skips.
- SSIM (luma), two definitions:
  - `ssim_y_block` (default, "8x8 blocks"): x264's SSIM as ffmpeg's `ssim` filter and EvalVid's
    `psnr ... ssim` compute it: sums over 4×4 blocks, combined into 8×8 windows that step by 4
    pixels, constants `c1 = round(0.01² · 255² · 64)`, `c2 = round(0.03² · 255² · 64 · 63)` on
    the sums (so variances use the 1/(N−1) estimator), averaged over the `(w/4 − 1)(h/4 − 1)`
    windows;
  - `ssim_y_gaussian` ("gaussian"): Wang et al. (2004), an 11×11 Gaussian window (σ = 1.5),
    K1 = 0.01, K2 = 0.03, averaged over the windows wholly inside the picture (the border rule
    of Wang's `ssim_index.m` and of scikit-image with `use_sample_covariance=False`).
  On a decoded-vs-source pair they differ by about 0.005, so the definition is always named.
- MOS follows EvalVid 2.7's `mos.c` (Klaue et al., 2003, Table 1): PSNR > 37 → 5, > 31 → 4,
  > 25 → 3, > 20 → 2, else 1, applied to the PSNR as `psnr.c` prints it (three decimals); a
  printed value of 0 (identical pictures) is skipped, so it has no MOS (0 here) and does not
  count in the mean.
- MIV (EvalVid 2.7 `mos.c`): over sliding windows of `interval` frames (one window per start
  frame, `L − interval + 1` of them; one window of `L` frames if `L < interval`), the percentage
  of frames whose MOS is below the reference's MOS for the same frame *and* below 4. Both MOS
  sequences are taken after the skip above, as EvalVid reads them.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

__all__ = ["PSNR_MAX", "plane_mse", "psnr", "psnr_evalvid", "ssim_y", "ssim_y_block", "ssim_y_gaussian",
           "SSIM_DEFINITIONS", "mos", "mos_evalvid", "miv", "EvalVidMos"]

PSNR_MAX = 100.0


def plane_mse(a: np.ndarray, b: np.ndarray, height: int) -> tuple[float, float]:
    """(luma MSE, all-planes MSE) of two yuv420p pictures of shape `(height * 3 // 2, width)`."""
    d = np.subtract(a, b, dtype=np.int32)
    d *= d
    rows = d.sum(axis=1, dtype=np.int64)  # exact integer sums
    sy = int(rows[:height].sum())
    return sy / (height * a.shape[1]), int(rows.sum()) / d.size


def psnr(mse: np.ndarray | float) -> np.ndarray:
    """PSNR in dB of 8-bit samples; `PSNR_MAX` where MSE is 0."""
    m = np.asarray(mse, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = 10.0 * np.log10(255.0**2 / m)
    return np.minimum(out, PSNR_MAX)


def psnr_evalvid(mse: np.ndarray | float) -> np.ndarray:
    """PSNR as EvalVid's `psnr` tool writes it: 0 where the pictures are identical (MSE 0)."""
    m = np.asarray(mse, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = 10.0 * np.log10(255.0**2 / m)
    return np.where(m == 0, 0.0, out)


# x264 / ffmpeg vf_ssim constants on 8×8-window sums (64 samples).
_BC1 = int(0.01 * 0.01 * 255 * 255 * 64 + 0.5)
_BC2 = int(0.03 * 0.03 * 255 * 255 * 64 * 63 + 0.5)


def ssim_y_block(a: np.ndarray, b: np.ndarray, height: int) -> float:
    """Mean SSIM of the luma planes with 8×8 windows stepping by 4 (ffmpeg's `ssim` filter)."""
    h4, w4 = height // 4, a.shape[1] // 4
    if h4 < 2 or w4 < 2:
        raise ValueError(f"picture of {a.shape[1]}x{height} is too small for 8x8 SSIM windows")
    # int32 is exact here: a window sum of products is at most 64·255² ≈ 4.2e6, and the largest
    # intermediate, 64·Σ(x² + y²), is 64·64·2·255² ≈ 5.3e8 < 2³¹.
    x = a[: h4 * 4, : w4 * 4].astype(np.int32)
    y = b[: h4 * 4, : w4 * 4].astype(np.int32)

    def blocks(v: np.ndarray) -> np.ndarray:  # 4×4 block sums (strided adds: numpy's 4-long reductions are slow)
        c = v[:, 0::4] + v[:, 1::4] + v[:, 2::4] + v[:, 3::4]
        return c[0::4] + c[1::4] + c[2::4] + c[3::4]

    def windows(s: np.ndarray) -> np.ndarray:  # 2×2 blocks → 8×8 windows, step 4
        t = s[:-1] + s[1:]
        return t[:, :-1] + t[:, 1:]

    s1, s2 = windows(blocks(x)), windows(blocks(y))
    ss = windows(blocks(x * x + y * y))
    s12 = windows(blocks(x * y))
    var = ss * 64 - s1 * s1 - s2 * s2
    covar = s12 * 64 - s1 * s2
    f32 = np.float32
    num = (2 * s1 * s2 + _BC1).astype(f32) * (2 * covar + _BC2).astype(f32)
    den = (s1 * s1 + s2 * s2 + _BC1).astype(f32) * (var + _BC2).astype(f32)
    return float(np.mean(num / den, dtype=np.float64))


_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2


def ssim_y_gaussian(a: np.ndarray, b: np.ndarray, height: int) -> float:
    """Mean SSIM of the luma planes with Wang et al.'s 11×11 Gaussian window.

    The border rule is that of Wang's reference implementation (`ssim_index.m`, its
    `filter2(..., 'valid')`): only windows wholly inside the picture count, so the mean is over
    the `(h − 10) × (w − 10)` window centres; statistics are the window's Gaussian-weighted
    moments (the population estimator). scikit-image's `structural_similarity(...,
    gaussian_weights=True, use_sample_covariance=False, data_range=255)` follows the same rule
    (it crops 5 pixels); its default `use_sample_covariance=True` scales the variances by
    N/(N−1) and differs by a few 1e-4. Pictures smaller than the window: the mean over windows
    reflected at the borders (no valid centre exists)."""
    x = a[:height].astype(np.float64)
    y = b[:height].astype(np.float64)
    if np.array_equal(x, y):
        return 1.0
    g = dict(sigma=1.5, truncate=3.5, mode="reflect")  # 11-tap window, weights summing to 1
    mx, my = gaussian_filter(x, **g), gaussian_filter(y, **g)
    sxx = gaussian_filter(x * x, **g) - mx * mx
    syy = gaussian_filter(y * y, **g) - my * my
    sxy = gaussian_filter(x * y, **g) - mx * my
    num = (2 * mx * my + _C1) * (2 * sxy + _C2)
    den = (mx * mx + my * my + _C1) * (sxx + syy + _C2)
    s = num / den
    r = _SSIM_RADIUS
    if s.shape[0] > 2 * r and s.shape[1] > 2 * r:
        s = s[r:-r, r:-r]  # centres whose window lies wholly inside: unaffected by the reflection
    return float(np.mean(s))


#: Half-width of the 11×11 Gaussian window (σ = 1.5, truncated at 3.5σ).
_SSIM_RADIUS = 5


SSIM_DEFINITIONS = {"block": ssim_y_block, "gaussian": ssim_y_gaussian}
ssim_y = ssim_y_block  # the default definition


def mos(psnr_db: np.ndarray) -> np.ndarray:
    """EvalVid's PSNR→MOS mapping, elementwise (int8 in 1..5), on exact PSNR values."""
    p = np.asarray(psnr_db, dtype=np.float64)
    out = np.ones(p.shape, dtype=np.int8)
    for threshold, score in ((20, 2), (25, 3), (31, 4), (37, 5)):
        out[p > threshold] = score
    return out


def mos_evalvid(psnr_db: np.ndarray) -> np.ndarray:
    """Per-frame MOS as EvalVid's `mos` reads a `psnr` output file: the value printed with three
    decimals, mapped by `mos`; 0 (no MOS) where the printed value is 0 (identical pictures)."""
    p = np.round(np.asarray(psnr_db, dtype=np.float64), 3)
    out = mos(p)
    out[p == 0] = 0
    return out


def miv(mos_damaged: np.ndarray, mos_reference: np.ndarray, interval: int = 25) -> np.ndarray:
    """EvalVid's MIV windows: per sliding window of `interval` frames, the percentage of frames
    with MOS below the reference's and below 4. Frames with MOS 0 (skipped) are removed from each
    sequence first, as EvalVid does. A frame beyond the end of the reference sequence does not
    count (EvalVid reads past its array there)."""
    if interval <= 0:
        raise ValueError("interval must be positive")
    q = np.asarray(mos_damaged)
    r = np.asarray(mos_reference)
    q, r = q[q != 0], r[r != 0]
    n = q.size
    if n == 0:
        return np.zeros(0)
    rr = np.zeros(n, np.int64)  # beyond the reference: never "below the reference"
    m = min(n, r.size)
    rr[:m] = r[:m]
    worse = ((q < rr) & (q < 4)).astype(np.int64)
    width = min(n, interval)
    c = np.concatenate([[0], np.cumsum(worse)])
    return 100.0 * (c[width:] - c[:-width]) / width


class EvalVidMos:
    """EvalVid's `mos` numbers for one damaged and one reference PSNR sequence (vs the source)."""

    def __init__(self, psnr_damaged: np.ndarray, psnr_reference: np.ndarray, interval: int = 25) -> None:
        self.mos = mos_evalvid(psnr_damaged)  # per frame; 0 = skipped
        self.ref_mos = mos_evalvid(psnr_reference)
        self.interval = interval
        self.miv = miv(self.mos, self.ref_mos, interval)

    @staticmethod
    def _mean(m: np.ndarray) -> float | None:
        kept = m[m != 0]
        return float(kept.mean()) if kept.size else None

    def summary(self) -> dict:
        kept = self.mos[self.mos != 0]
        return {
            "mean_mos": self._mean(self.mos),
            "mean_ref_mos": self._mean(self.ref_mos),
            "mos_skipped_frames": int((self.mos == 0).sum()),
            "mos_histogram_percent": {str(s): (100.0 * float((kept == s).sum()) / kept.size if kept.size else 0.0)
                                      for s in range(1, 6)},
            "miv_interval": self.interval,
            "miv_windows": int(self.miv.size),
            "mean_miv_percent": float(self.miv.mean()) if self.miv.size else None,
            "max_miv_percent": float(self.miv.max()) if self.miv.size else None,
        }
