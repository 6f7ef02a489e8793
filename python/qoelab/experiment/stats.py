"""Estimates over repetitions: mean and the half-width of its Student-t 95 % interval.

Repetitions of one cell are independent runs (different seeds); two variants run with the same
seed share their random draws (clip offsets, start times), so their difference is estimated from
the per-repetition differences (:func:`paired_ci`), which is tighter than comparing two
independent intervals.

Runs whose outputs are identical across seeds are not independent samples: their "interval"
would have zero width and say nothing about the real system's variability. Whoever computes
an estimate over them says so (``independent=False``: the layer's
:func:`qoelab.experiment.core.aggregate` and :func:`~qoelab.experiment.core.paired` do it from the
runs' rows), and the estimate then carries no interval (``half_width`` NaN).

Results are written portably (:func:`portable`): a run's metrics and every float of a table
carry 12 significant digits, because the last digits of a NumPy reduction depend on the CPU
(NumPy picks its SIMD kernels per machine, and they sum in different orders), and committed
results are compared byte for byte on whatever machine CI runs. For the same reason a
half-width below :data:`ROUND_OFF` of its mean is round-off, not spread, and is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


#: Significant digits of every float the layer writes or aggregates (:func:`portable`).
DIGITS = 12
#: A half-width below this share of its mean's magnitude is round-off (:func:`mean_ci`).
ROUND_OFF = 1e-9


def portable(x: float) -> float:
    """``x`` rounded to :data:`DIGITS` significant digits (NaN and infinities unchanged): the
    digits of a computed float that every machine agrees on."""
    x = float(x)
    return x if not math.isfinite(x) else float(f"{x:.{DIGITS}g}")


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` repetitions and the half-width of its 95 % interval (NaN when ``n < 2``:
    one repetition says nothing about the noise; and when the repetitions are not
    ``independent``: their outputs were identical across seeds)."""

    mean: float
    half_width: float
    n: int
    independent: bool = True
    #: The repetitions the samples come from, when they pool several cells (``n`` samples from
    #: fewer repetitions each): what a finding's evidence is counted in. None: ``n``.
    reps: int | None = None

    @property
    def repetitions(self) -> int:
        return self.n if self.reps is None else self.reps

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width

    def excludes_zero(self) -> bool:
        """True when the interval lies entirely on one side of zero (never with ``n < 2``)."""
        if self.n < 2 or math.isnan(self.half_width):
            return False
        return self.low > 0 or self.high < 0


def t95(dof: int) -> float:
    """The two-sided 95 % quantile of Student's t with ``dof`` degrees of freedom."""
    from scipy import stats

    if dof < 1:
        raise ValueError(f"Student-t needs at least 1 degree of freedom, got {dof}")
    return float(stats.t.ppf(0.975, dof))


def mean_ci(xs: Sequence[float], *, independent: bool = True) -> Estimate:
    """Mean of ``xs`` and the half-width of its Student-t 95 % interval (none when the samples
    are not ``independent``)."""
    n = len(xs)
    if n == 0:
        raise ValueError("mean_ci needs at least one value")
    mean = math.fsum(xs) / n
    if n < 2 or not independent:
        return Estimate(mean, float("nan"), n, independent)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    hw = t95(n - 1) * sd / math.sqrt(n)
    return Estimate(mean, 0.0 if hw <= ROUND_OFF * abs(mean) else hw, n)


def paired_ci(xs: Sequence[float], ys: Sequence[float], *, independent: bool = True) -> Estimate:
    """The mean of ``x_i − y_i`` over paired repetitions, with its 95 % interval."""
    if len(xs) != len(ys):
        raise ValueError(f"paired_ci needs paired samples, got {len(xs)} and {len(ys)} values")
    return mean_ci([x - y for x, y in zip(xs, ys)], independent=independent)


def sd(xs: Sequence[float]) -> float | None:
    """The sample standard deviation of ``xs`` (None with fewer than 2 values)."""
    if len(xs) < 2:
        return None
    mu = math.fsum(xs) / len(xs)
    return math.sqrt(math.fsum((x - mu) ** 2 for x in xs) / (len(xs) - 1))
