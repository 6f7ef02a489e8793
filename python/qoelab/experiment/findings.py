"""A paper's finding as data, tested against our measurements.

Every reproduction states each of the paper's claims as a :class:`Finding`: what is claimed, how
we test it (the statistic and its 95 % interval over repetitions), and how much the verdict is
worth (:class:`Label`):

- *substantive*: the claim could have failed in our model; holding is evidence.
- *trivial*: true of any sensible model (e.g. no competing traffic ⇒ no loss).
- *by construction*: true because of how the mechanism or the scenario is defined (e.g. a flow
  with a reservation above its peak rate loses nothing to the scheduler).

A report's summary counts only substantive findings (:func:`summary_count`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from qoelab.experiment.stats import Estimate


class Label(str, Enum):
    SUBSTANTIVE = "substantive"
    TRIVIAL = "trivial"
    BY_CONSTRUCTION = "by construction"


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    WITHIN_NOISE = "within noise"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Finding:
    """One claim, its label, the statistic that tests it and the verdict.

    ``statistic`` names what ``estimate`` measures (e.g. "PER(s4) − PER(s3), mean over the grid,
    pp"); ``why`` explains the label or the verdict in words (no numbers: numbers come from the
    estimate)."""

    key: str
    claim: str
    label: Label
    verdict: Verdict
    statistic: str = ""
    estimate: Estimate | None = None
    why: str = ""


def judge_positive(est: Estimate | None, *, threshold: float = 0.0) -> Verdict:
    """Verdict for a claim "the quantity is above ``threshold``" from its estimate: *holds* when
    the whole 95 % interval is above, *does not hold* when it is wholly below, *within noise*
    when it straddles. With one repetition (no interval) the mean decides alone and the verdict
    is *holds* / *does not hold*; with no estimate, *undecided*."""
    import math

    if est is None or math.isnan(est.mean):
        return Verdict.UNDECIDED
    if est.n < 2 or math.isnan(est.half_width):
        return Verdict.HOLDS if est.mean > threshold else Verdict.DOES_NOT_HOLD
    if est.low > threshold:
        return Verdict.HOLDS
    if est.high < threshold:
        return Verdict.DOES_NOT_HOLD
    return Verdict.WITHIN_NOISE


def judge_below(est: Estimate | None, threshold: float) -> Verdict:
    """Verdict for a claim "the quantity is below ``threshold``" (e.g. a loss is negligible):
    *holds* when the whole 95 % interval is below, *does not hold* when it is wholly above,
    *within noise* when it straddles; with one repetition the mean decides; with no estimate,
    *undecided*."""
    import math

    if est is None or math.isnan(est.mean):
        return Verdict.UNDECIDED
    if est.n < 2 or math.isnan(est.half_width):
        return Verdict.HOLDS if est.mean < threshold else Verdict.DOES_NOT_HOLD
    if est.high < threshold:
        return Verdict.HOLDS
    if est.low > threshold:
        return Verdict.DOES_NOT_HOLD
    return Verdict.WITHIN_NOISE


def judge_within(est: Estimate | None, bound: float) -> Verdict:
    """Verdict for a claim "the quantity lies within ± ``bound``" (e.g. two utilisations within 2
    points, a share constant to within a tolerance): *holds* when the whole 95 % interval is
    inside [−bound, bound], *does not hold* when it is wholly outside (above ``bound`` or below
    ``-bound``), *within noise* otherwise. With one repetition the mean decides alone; with no
    estimate, *undecided*."""
    import math

    if est is None or math.isnan(est.mean):
        return Verdict.UNDECIDED
    if est.n < 2 or math.isnan(est.half_width):
        return Verdict.HOLDS if abs(est.mean) <= bound else Verdict.DOES_NOT_HOLD
    if -bound <= est.low and est.high <= bound:
        return Verdict.HOLDS
    if est.low > bound or est.high < -bound:
        return Verdict.DOES_NOT_HOLD
    return Verdict.WITHIN_NOISE


def judge_all(verdicts: list[Verdict]) -> Verdict:
    """The verdict of a conjunction of claims: *does not hold* if any part does not, *holds* if
    every part holds, *undecided* if a part is undecided, else *within noise*."""
    if any(v is Verdict.DOES_NOT_HOLD for v in verdicts):
        return Verdict.DOES_NOT_HOLD
    if any(v is Verdict.UNDECIDED for v in verdicts) or not verdicts:
        return Verdict.UNDECIDED
    if all(v is Verdict.HOLDS for v in verdicts):
        return Verdict.HOLDS
    return Verdict.WITHIN_NOISE


def summary_count(findings: list[Finding]) -> tuple[int, int]:
    """(substantive findings that hold, substantive findings decided), for a report's summary."""
    subst = [f for f in findings if f.label is Label.SUBSTANTIVE and f.verdict is not Verdict.UNDECIDED]
    return sum(f.verdict is Verdict.HOLDS for f in subst), len(subst)
