"""Per-trace calibration of the fast estimator's constants (λ, κ in `estimate.py`).

The estimator's shipped constants were fitted on one clip; error propagation and concealment
depend on the content (on a mandelbrot zoom the best κ is about 0.5, not 0.9). `calibrate()`
fits them for one trace: it drops random slices at a few loss levels (`losses`, each with the
seeds `seeds`), decodes each damaged stream for real (`evaluate`, PSNR-Y against the source from
the recipe), and grid-searches λ ∈ `LAMBDA_GRID`, κ ∈ `KAPPA_GRID` for the least RMS error of
the estimated mean PSNR-Y against the decoded one, together with γ ∈ `GAMMA_GRID`, the exponent of the concealment cost. The result is stored beside the trace as
`<stem>.calibration.toml` with the trace's SHA-256, every run's numbers and the fit's RMS
error; `video estimate` uses it automatically and says so (`--uncalibrated` ignores it).

The grid is coarse on purpose (0.05 steps): the optimum is flat along λ·κ (a stronger carry of
errors trades against a stronger concealment error), and a finer fit to a handful of decodes would
only fit their noise.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import VideoInputError
from ..pictures.metrics import psnr
from ..sources.encode import read_frames_csv
from ..sources.source import load_small_toml
from ..traces.trace import NalTrace, read_trace
from .estimate import GAMMA, KAPPA, LAMBDA, Estimate, estimate

__all__ = ["Calibration", "calibrate", "read_calibration", "write_calibration", "random_slice_loss", "constants_for",
           "calibration_path",
           "LAMBDA_GRID", "KAPPA_GRID", "DEFAULT_LOSSES", "DEFAULT_SEEDS"]

LAMBDA_GRID = np.round(np.arange(0.50, 1.0501, 0.05), 2)
KAPPA_GRID = np.round(np.arange(0.10, 1.5001, 0.05), 2)
GAMMA_GRID = (0.25, 0.5, 0.75, 1.0)
DEFAULT_LOSSES = (0.01, 0.05, 0.10)
DEFAULT_SEEDS = (1000, 1001)
_LAMBDA_RANGE = (0.0, 1.5)
_KAPPA_RANGE = (0.0, 3.0)
_GAMMA_RANGE = (0.0, 2.0)


def mean_psnr_y(e: Estimate, frames_path: str | os.PathLike[str]) -> float:
    """Mean estimated PSNR-Y against the source of `e` (needs a frames file with `ref_mse_y`)."""
    if e.psnr_y is None:
        raise VideoInputError(frames_path, "frames file has no distortion against the source (ref_mse_y)")
    return float(np.mean(e.psnr_y))


def random_slice_loss(trace: NalTrace, loss: float, seed: int) -> np.ndarray:
    """Per NAL unit: lost, for a random fraction `loss` of the slices (seeded)."""
    rng = np.random.default_rng(seed)
    return (rng.random(trace.n_nal) < loss) & trace.vcl


@dataclass
class Calibration:
    lam: float
    kappa: float
    gamma: float
    rms_db: float  # RMS error of the calibrated estimate over the runs
    rms_uncalibrated_db: float
    trace_sha256: str
    runs: int
    table: list[dict] = field(default_factory=list)  # loss, seed, real, estimate (default), estimate (calibrated)

    def as_dict(self) -> dict:
        return {
            "estimator": {"lambda": self.lam, "kappa": self.kappa, "gamma": self.gamma},
            "fit": {"rms_error_db": round(self.rms_db, 4), "rms_error_uncalibrated_db": round(self.rms_uncalibrated_db, 4),
                    "runs": self.runs, "default_lambda": LAMBDA, "default_kappa": KAPPA, "default_gamma": GAMMA,
                    "gamma_grid": list(GAMMA_GRID),
                    "lambda_grid": [float(LAMBDA_GRID[0]), float(LAMBDA_GRID[-1]), 0.05],
                    "kappa_grid": [float(KAPPA_GRID[0]), float(KAPPA_GRID[-1]), 0.05]},
            "trace": {"sha256": self.trace_sha256},
            "runs": self.table,
        }


def _sha256(path: Path) -> str:
    from ..sources.source import sha256_of

    return sha256_of(path, "trace")


def calibrate(trace_path, bitstream_path, recipe_path, frames_path, *, losses=DEFAULT_LOSSES, seeds=DEFAULT_SEEDS,
              source_dirs=(), threads: int = 1) -> Calibration:
    """Fit λ and κ for one trace from real decodes (see the module doc)."""
    from ..receiver.recvlog import synthetic_log, write_receive_log
    from .evaluate import evaluate

    for p in losses:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
            raise VideoInputError("calibrate.losses", f"each loss must be a fraction in (0, 1), got {p!r}")
    if not losses or not seeds:
        raise VideoInputError("calibrate", "need at least one loss level and one seed")
    trace = read_trace(trace_path)
    frames = read_frames_csv(frames_path)
    if not np.isfinite(frames["ref_mse_y"]).all():
        raise VideoInputError(frames_path, "frames file has no distortion against the source (ref_mse_y)")
    runs: list[tuple[float, int, np.ndarray, float]] = []  # (loss, seed, received, real PSNR-Y)
    with tempfile.TemporaryDirectory(prefix="qoelab-calib-") as tmp:
        for loss in losses:
            for seed in seeds:
                lost = random_slice_loss(trace, loss, seed)
                log = Path(tmp) / "recv.parquet"
                write_receive_log(synthetic_log(trace, lost), log)
                res = evaluate(trace_path, bitstream_path, log, recipe_path=recipe_path, source_dirs=source_dirs,
                               threads=threads)
                runs.append((float(loss), int(seed), ~lost, res.summary["mean_psnr_y_vs_source_db"]))
    real = np.array([r[3] for r in runs])
    err = np.empty((len(GAMMA_GRID), LAMBDA_GRID.size, KAPPA_GRID.size))
    ref_mse = frames["ref_mse_y"]
    for g, gamma in enumerate(GAMMA_GRID):
        for i, lam in enumerate(LAMBDA_GRID):
            # The estimated error is affine in κ (every step adds κ-scaled or κ-free terms), so two
            # estimates per (γ, λ) give the whole κ axis exactly.
            est = np.empty((len(runs), KAPPA_GRID.size))
            for r, (_, _, rec, _) in enumerate(runs):
                e0 = estimate(trace, rec, frames, lam=lam, kappa=0.0, gamma=gamma, planes=("y",)).err_mse_y
                e1 = estimate(trace, rec, frames, lam=lam, kappa=1.0, gamma=gamma, planes=("y",)).err_mse_y
                mse = ref_mse[None, :] + e0[None, :] + KAPPA_GRID[:, None] * (e1 - e0)[None, :]
                est[r] = psnr(mse).mean(axis=1)
            err[g, i] = np.sqrt(np.mean((est - real[:, None]) ** 2, axis=0))
    g, i, j = (int(k) for k in np.unravel_index(int(np.argmin(err)), err.shape))  # first minimum in grid order
    lam, kappa, gamma = float(LAMBDA_GRID[i]), float(KAPPA_GRID[j]), float(GAMMA_GRID[g])
    table = []
    sq_default = []
    for (loss, seed, rec, real_db) in runs:
        p0 = mean_psnr_y(estimate(trace, rec, frames, planes=("y",)), frames_path)
        p1 = mean_psnr_y(estimate(trace, rec, frames, lam=lam, kappa=kappa, gamma=gamma, planes=("y",)), frames_path)
        sq_default.append((p0 - real_db) ** 2)
        table.append({"loss": loss, "seed": seed, "real_psnr_y_db": round(real_db, 4),
                      "estimate_default_db": round(p0, 4), "estimate_calibrated_db": round(p1, 4)})
    return Calibration(lam, kappa, gamma, float(err[g, i, j]), math.sqrt(float(np.mean(sq_default))), _sha256(Path(trace_path)),
                       len(runs), table)


def write_calibration(path: str | os.PathLike[str], c: Calibration) -> None:
    """Writes the calibration file atomically; a symbolic link (or a folder) at `path` is
    refused, never written through (:func:`qoelab.outdir.write_atomic`)."""
    import tomli_w

    from qoelab.outdir import write_atomic

    write_atomic(Path(path), tomli_w.dumps(c.as_dict()))


def read_calibration(path: str | os.PathLike[str], trace_path: str | os.PathLike[str] | None = None) -> Calibration:
    """A calibration file, checked (ranges, and that it belongs to `trace_path` if given)."""
    p = Path(path)
    doc = load_small_toml(p, "calibration")

    def get(section: str, key: str, lo: float, hi: float) -> float:
        v = doc.get(section, {}).get(key) if isinstance(doc.get(section), dict) else None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
            raise VideoInputError(p, f"{section}.{key}: must be a number in [{lo:g}, {hi:g}], got {v!r}")
        return float(v)

    lam = get("estimator", "lambda", *_LAMBDA_RANGE)
    kappa = get("estimator", "kappa", *_KAPPA_RANGE)
    gamma = get("estimator", "gamma", *_GAMMA_RANGE)
    rms = get("fit", "rms_error_db", 0.0, 1e3)
    rms0 = get("fit", "rms_error_uncalibrated_db", 0.0, 1e3)
    runs = int(get("fit", "runs", 1, 1e6))
    digest = doc.get("trace", {}).get("sha256") if isinstance(doc.get("trace"), dict) else None
    if not isinstance(digest, str) or len(digest) != 64:
        raise VideoInputError(p, "trace.sha256: missing or not a SHA-256")
    if trace_path is not None and _sha256(Path(trace_path)) != digest:
        raise VideoInputError(p, f"trace.sha256: the calibration is for another trace than {Path(trace_path).name}")
    table = doc.get("runs", [])
    return Calibration(lam, kappa, gamma, rms, rms0, digest, runs, table if isinstance(table, list) else [])


def calibration_path(trace_path: str | os.PathLike[str]) -> Path | None:
    """`<stem>.calibration.toml` beside a `<stem>.trace.csv[.gz]`, if there is one (anything
    there, so that a FIFO, folder or dangling link is reported by the reader, not ignored)."""
    p = Path(trace_path)
    for ext in (".trace.csv.gz", ".trace.csv"):
        if p.name.endswith(ext):
            cand = p.with_name(p.name[: -len(ext)] + ".calibration.toml")
            return cand if os.path.lexists(cand) else None
    return None


def constants_for(trace_path: str | os.PathLike[str], *, use_calibration: bool = True) -> tuple[dict, str]:
    """The estimator constants for a trace (`{"lam", "kappa", "gamma"}`) and a note saying where
    they come from: its calibration if there is one (checked), else the defaults."""
    path = calibration_path(trace_path) if use_calibration else None
    if path is None:
        return ({"lam": LAMBDA, "kappa": KAPPA, "gamma": GAMMA},
                "uncalibrated: default constants (fitted on the bundled CIF clip; content dependent)")
    c = read_calibration(path, trace_path)
    return ({"lam": c.lam, "kappa": c.kappa, "gamma": c.gamma},
            f"calibrated for this trace ({path.name}: {c.runs} decodes, RMS error {c.rms_db:.2f} dB)")
