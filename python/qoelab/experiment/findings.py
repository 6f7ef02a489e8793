"""A paper's finding as data, and the rules that judge it: one place, tested
(``tests/experiment/test_verdict_rules.py``).

Every reproduction states each of the paper's claims as a :class:`Finding`: what is claimed,
the statistic that tests it with its 95 % interval over repetitions (an
:class:`~qoelab.experiment.stats.Estimate`), the :class:`Rule` the claim makes of that
statistic (above a threshold, below one, within a band; where the paper gives a size, that
size), the premises the test rests on (:class:`Premise`), and how much the verdict is worth
(:class:`Label`). The verdict is never typed: :func:`judge` computes it.

**Verdicts** (:class:`Verdict`):

- *holds*: the interval lies wholly on the claimed side of the threshold (for a band, wholly
  inside it). Where the paper gives a size, the note says whether the interval covers it or how
  far off it lies.
- *does not hold*: the interval lies wholly on the other side, or it straddles the threshold
  but excludes the paper's size (the paper's effect is ruled out even though ours is not
  distinguishable from none).
- *inconclusive*: neither; the note says about how many repetitions would decide it at the
  spread measured. One repetition (no interval) and repetitions that are not independent
  (identical outputs across seeds: :attr:`Estimate.independent`) are inconclusive too.
- *untestable*: a named premise fails (the scenario is not in the regime the claim is about,
  the cells did not run, the statistic has no value).

**Labels** (:class:`Label`): *substantive* (the claim could have failed in our model: holding
is evidence); *trivial* (true of any sensible model); *by construction* (true because of how a
mechanism or the scenario is defined); *calibrated* (a parameter was set from this very
result); *threshold chosen after the data* (the threshold or the reading that decides it was
picked after seeing the numbers). Only substantive findings are counted (:func:`summary_count`).

**Evidence.** A finding decided on fewer than :data:`MIN_EVIDENCE_REPS` repetitions is *quick:
not evidence* in every output (:attr:`Finding.quick`). A finding run under a reproduction's
declared choices (:mod:`qoelab.experiment.choices`) carries its verdict under each alternative
(:attr:`Finding.under`); it counts as holding only if it holds under every one. When the
alternatives run on fewer cells than the finding (a sensitivity grid), the default runs on those
cells too (:data:`CELLS_DEFAULT`) and each alternative is compared with it, on the same cells
(:attr:`Finding.on_cells`): a choice is never named for what the smaller grid changes, which is
shown as its own dependence, on *the cells*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property

from qoelab.experiment.stats import ROUND_OFF, Estimate, t95

#: Fewer repetitions than this decide a finding as *quick: not evidence*.
MIN_EVIDENCE_REPS = 10
#: The largest repetition count :func:`reps_to_decide` searches.
MAX_REPS_SEARCHED = 100_000
#: The variant that is the default setting run on the alternatives' own cells when those are
#: fewer than the default's (``qoelab.experiment.runner.sets``): the alternatives run there are
#: compared with it (:attr:`Finding.on_cells`).
CELLS_DEFAULT = "default"
#: How :meth:`Finding.depends_on` names a verdict that changes between the finding's cells and
#: the alternatives' fewer cells under the default itself.
THE_CELLS = "the cells"


class Label(str, Enum):
    SUBSTANTIVE = "substantive"
    TRIVIAL = "trivial"
    BY_CONSTRUCTION = "by construction"
    CALIBRATED = "calibrated"
    THRESHOLD_AFTER_DATA = "threshold chosen after the data"


class Verdict(str, Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    INCONCLUSIVE = "inconclusive"
    UNTESTABLE = "untestable"


#: The labels a report's summary counts.
COUNTED = (Label.SUBSTANTIVE,)


@dataclass(frozen=True)
class Rule:
    """What a claim says of its statistic: ``kind`` ``"above"`` (greater than ``threshold``),
    ``"below"`` (less than ``threshold``) or ``"within"`` (inside ``[−threshold, threshold]``);
    ``size`` the paper's own value of the statistic where it gives one (above / below only)."""

    kind: str
    threshold: float = 0.0
    size: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("above", "below", "within"):
            raise ValueError(f"rule kind {self.kind!r}: expected above, below or within")
        if self.kind == "within" and not self.threshold >= 0:
            raise ValueError(f"within ± {self.threshold}: the bound must be >= 0")
        if self.kind == "within" and self.size is not None:
            raise ValueError("a within-band rule takes no size")

    def text(self, scale: float = 1.0, unit: str = "") -> str:
        """The rule in words, e.g. ``> 0 (paper: 27)``; ``scale`` and ``unit`` show its numbers as
        the finding shows its statistic (e.g. 100 and " %" for a loss ratio)."""
        t, z = _n(self.threshold, scale, unit), None if self.size is None else _n(self.size, scale, unit)
        s = {"above": f"> {t}", "below": f"< {t}", "within": f"within ± {t}"}[self.kind]
        return s + (f" (paper: {z})" if z is not None else "")


def _n(x: float, scale: float = 1.0, unit: str = "") -> str:
    """A number of a rule or a note, as the finding shows it."""
    return f"{x * scale:.4g}{unit}"


def above(threshold: float = 0.0, *, size: float | None = None) -> Rule:
    """The claim: the statistic is above ``threshold`` (the paper's value ``size``, if given)."""
    return Rule("above", float(threshold), size)


def below(threshold: float, *, size: float | None = None) -> Rule:
    """The claim: the statistic is below ``threshold`` (the paper's value ``size``, if given)."""
    return Rule("below", float(threshold), size)


def within(bound: float) -> Rule:
    """The claim: the statistic lies within ± ``bound`` (an equivalence claim)."""
    return Rule("within", float(bound))


@dataclass(frozen=True)
class Premise:
    """A condition the test of a claim rests on (e.g. "the video is below its fair share");
    ``detail`` says what was measured."""

    name: str
    holds: bool
    detail: str = ""


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    note: str = ""


def reps_to_decide(est: Estimate, gap: float) -> int | None:
    """About how many repetitions give a 95 % half-width below ``gap`` at the spread ``est``
    measured (its standard deviation); None when no count would (zero gap or spread, or more
    than :data:`MAX_REPS_SEARCHED`)."""
    if est.n < 2 or not math.isfinite(est.half_width) or gap <= 0:
        return None
    sd = est.half_width * math.sqrt(est.n) / t95(est.n - 1)
    if sd <= 0:
        return None
    # t95 falls towards 1.96: start from the normal approximation, then step up.
    m = max(2, math.ceil((1.959964 * sd / gap) ** 2))
    if m > MAX_REPS_SEARCHED:
        return None
    while t95(m - 1) * sd / math.sqrt(m) >= gap:
        m += 1
        if m > MAX_REPS_SEARCHED:
            return None
    return m


def _covers(lo: float, hi: float, x: float) -> bool:
    """``x`` lies in ``[lo, hi]``, edges widened by round-off (:data:`~qoelab.experiment.stats.ROUND_OFF`
    of the largest magnitude): repetitions that all give the paper's value have a mean that can
    differ from it in the last place, and a zero-width interval there still covers it."""
    slack = ROUND_OFF * max(abs(lo), abs(hi), abs(x))
    return lo - slack <= x <= hi + slack


def _decide_note(est: Estimate, gaps: list[float]) -> str:
    got = [m for m in (reps_to_decide(est, g) for g in gaps) if m is not None]
    if not got:
        return "no repetition count decides it at this spread (the mean sits on the boundary)"
    return f"about {min(got)} repetitions would decide it at the spread measured (n = {est.n} now)"


def judge(est: Estimate | None, rule: Rule, premises: tuple[Premise, ...] = (), *, scale: float = 1.0,
          unit: str = "") -> Judgement:
    """The verdict of ``rule`` on ``est`` (module doc), with its note (numbers shown × ``scale``
    with ``unit``, as the finding shows its statistic)."""
    def n(x: float) -> str:
        return _n(x, scale, unit)

    failed = [p for p in premises if not p.holds]
    if failed:
        return Judgement(Verdict.UNTESTABLE, "; ".join(f"premise fails: {p.name}" + (f" ({p.detail})" if p.detail else "")
                                                       for p in failed))
    if est is None or not math.isfinite(est.mean):
        return Judgement(Verdict.UNTESTABLE, "the statistic has no value (its cells did not run, or the event never "
                                             "happened)")
    if not est.independent:
        return Judgement(Verdict.INCONCLUSIVE, f"not independent: the {est.n} repetitions' outputs are identical "
                                               "across seeds, so they give no interval")
    if est.n < 2 or not math.isfinite(est.half_width):
        return Judgement(Verdict.INCONCLUSIVE, "one repetition gives no interval: at least 2 are needed "
                                               f"({MIN_EVIDENCE_REPS} to count as evidence)")
    lo, hi, thr = est.low, est.high, rule.threshold
    if rule.kind == "within":
        if -thr <= lo and hi <= thr:
            return Judgement(Verdict.HOLDS, f"the interval lies within ± {n(thr)}")
        if lo > thr or hi < -thr:
            return Judgement(Verdict.DOES_NOT_HOLD, f"the interval lies outside ± {n(thr)}")
        return Judgement(Verdict.INCONCLUSIVE, _decide_note(est, [abs(thr - abs(est.mean))]))
    up = rule.kind == "above"
    side, other = ("above", "below") if up else ("below", "above")
    size = rule.size
    if (lo > thr) if up else (hi < thr):
        note = f"the interval lies {side} {n(thr)}"
        if size is not None:
            if _covers(lo, hi, size):
                note += f"; the paper's {n(size)} lies inside it"
            elif size > hi:
                note += f"; the paper's {n(size)} lies {n(size - hi)} above it"
            else:
                note += f"; the paper's {n(size)} lies {n(lo - size)} below it"
        return Judgement(Verdict.HOLDS, note)
    if (hi < thr) if up else (lo > thr):
        return Judgement(Verdict.DOES_NOT_HOLD, f"the interval lies {other} {n(thr)}, against the claim")
    if size is not None and not _covers(lo, hi, size):
        return Judgement(Verdict.DOES_NOT_HOLD, f"the interval [{n(lo)}, {n(hi)}] excludes the paper's {n(size)}, "
                                                "though not our no-effect threshold")
    gaps = [abs(est.mean - thr)] + ([abs(est.mean - size)] if size is not None else [])
    return Judgement(Verdict.INCONCLUSIVE, _decide_note(est, gaps))


def conjunction(judgements: list[Judgement]) -> Judgement:
    """Several claims at once: *does not hold* if any part does not; else *untestable* if a part
    is; else *inconclusive* if a part is; else *holds*. The note joins the deciding parts'."""
    if not judgements:
        return Judgement(Verdict.UNTESTABLE, "no part to test")
    for v in (Verdict.DOES_NOT_HOLD, Verdict.UNTESTABLE, Verdict.INCONCLUSIVE):
        notes = [j.note for j in judgements if j.verdict is v]
        if notes:
            return Judgement(v, "; ".join(dict.fromkeys(notes)))
    return Judgement(Verdict.HOLDS, "every part holds")


@dataclass(frozen=True)
class Part:
    """One conjunct of a finding that claims several things at once (e.g. "at both frame
    lengths"): its own estimate and rule."""

    name: str
    estimate: Estimate | None
    rule: Rule
    premises: tuple[Premise, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One claim, its label, the statistic that tests it, the rule and the premises; the verdict
    is computed (:attr:`judgement`).

    ``statistic`` names what ``estimate`` measures (e.g. "PER(s4) − PER(s3), mean over the grid,
    pp"); ``why`` explains the label in words (no numbers: numbers come from the estimate).
    With ``parts`` the finding is their conjunction and ``estimate`` is the one shown (e.g. the
    weakest part). ``under`` is filled by the sensitivity run: (variant, verdict) for every
    alternative of every declared choice."""

    key: str
    claim: str
    label: Label
    rule: Rule
    statistic: str = ""
    estimate: Estimate | None = None
    why: str = ""
    premises: tuple[Premise, ...] = ()
    parts: tuple[Part, ...] = ()
    under: tuple[tuple[str, Verdict], ...] = field(default=(), compare=False)
    #: The findings' group when a report has several sets of the same claims (e.g. a sender
    #: mode, a calibration): ``(group, key)`` identifies a finding.
    group: str = ""
    #: How the statistic is shown: its values × ``scale`` with ``unit`` (e.g. 100 and " %" for a
    #: loss ratio), in the interval, the rule and the verdict's note alike.
    scale: float = 1.0
    unit: str = ""
    #: The variants of ``under`` that ran on fewer cells than the finding's own (a sensitivity
    #: grid), :data:`CELLS_DEFAULT` among them: each of the others is compared with the default's
    #: verdict on those cells (:meth:`reference`), not with :attr:`verdict`.
    on_cells: tuple[str, ...] = field(default=(), compare=False)

    @cached_property
    def judgement(self) -> Judgement:
        if self.parts:
            failed = [p for p in self.premises if not p.holds]
            if failed:
                return judge(None, self.rule, tuple(failed))
            parts = [(p.name, judge(p.estimate, p.rule, p.premises, scale=self.scale, unit=self.unit))
                     for p in self.parts]
            return conjunction([Judgement(j.verdict, f"{name}: {j.note}") for name, j in parts])
        return judge(self.estimate, self.rule, self.premises, scale=self.scale, unit=self.unit)

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def note(self) -> str:
        return self.judgement.note

    @property
    def n(self) -> int:
        """The repetitions the verdict rests on (the fewest of the parts')."""
        ests = [p.estimate for p in self.parts] if self.parts else [self.estimate]
        return min((e.repetitions for e in ests if e is not None), default=0)

    @property
    def quick(self) -> bool:
        """Decided (holds, does not hold or inconclusive) on fewer than
        :data:`MIN_EVIDENCE_REPS` repetitions: *quick: not evidence*."""
        return self.verdict is not Verdict.UNTESTABLE and self.n < MIN_EVIDENCE_REPS

    @property
    def robust(self) -> bool | None:
        """Whether every alternative gives this verdict (None: no sensitivity run)."""
        if not self.under:
            return None
        return all(v is self.verdict for _, v in self.under)

    def cells_verdict(self) -> Verdict | None:
        """The default's verdict on the alternatives' fewer cells (None: they ran on the
        finding's own cells)."""
        if CELLS_DEFAULT not in self.on_cells:
            return None
        return dict(self.under).get(CELLS_DEFAULT)

    def reference(self, variant: str) -> Verdict:
        """The verdict ``variant``'s is compared with: the default's on the same cells (its
        verdict on the alternatives' cells for one of :attr:`on_cells`, else :attr:`verdict`)."""
        cells = self.cells_verdict()
        if cells is not None and variant in self.on_cells and variant != CELLS_DEFAULT:
            return cells
        return self.verdict

    def _hanging(self) -> dict[str, list[tuple[str, Verdict, Verdict]]]:
        """Per choice whose verdict differs under one of its alternatives (or :data:`THE_CELLS`):
        (alternative, its verdict, the default's on the same cells), in ``under``'s order."""
        by: dict[str, list[tuple[str, Verdict, Verdict]]] = {}
        for variant, v in self.under:
            if variant == CELLS_DEFAULT and variant in self.on_cells:
                by.setdefault(THE_CELLS, []).append((variant, v, self.verdict))
                continue
            choice, _, alt = variant.partition("=")
            by.setdefault(choice, []).append((alt or variant, v, self.reference(variant)))
        return {c: vs for c, vs in by.items() if any(v is not ref for _, v, ref in vs)}

    def sensitivity_text(self) -> str:
        """``robust``, ``depends on CHOICE (default: …; alt: …)`` or ``not run``. Alternatives
        run on fewer cells are set against the default on those cells ("default on these cells"
        where its verdict is not the finding's own), and a verdict the fewer cells change under the
        default itself reads ``depends on the cells (all cells: …; the alternatives' cells: …)``."""
        if not self.under:
            return "not run"
        if self.robust:
            return "robust"
        out = []
        for c, vs in self._hanging().items():
            if c == THE_CELLS:
                out.append(f"depends on {THE_CELLS} (all cells: {self.verdict.value}; the alternatives' cells: "
                           f"{vs[0][1].value})")
                continue
            ref = vs[0][2]
            head = "default" if ref is self.verdict else "default on these cells"
            out.append(f"depends on {c} ({head}: {ref.value}; " + "; ".join(f"{a}: {v.value}" for a, v, _ in vs) + ")")
        return "; ".join(out)

    def depends_on(self) -> list[str]:
        """The choices under one of whose alternatives the verdict differs from the default's on
        the same cells (and :data:`THE_CELLS` when the alternatives' fewer cells change it under
        the default itself)."""
        return list(self._hanging())

    @property
    def counts_as_holding(self) -> bool:
        """Holds, and under every alternative run."""
        return self.verdict is Verdict.HOLDS and all(v is Verdict.HOLDS for _, v in self.under)


def summary_count(findings: list[Finding]) -> tuple[int, int]:
    """(counted findings that hold under every alternative run, counted findings tested): only
    :data:`COUNTED` labels; *untestable* ones are not tested."""
    counted = [f for f in findings if f.label in COUNTED and f.verdict is not Verdict.UNTESTABLE]
    return sum(f.counts_as_holding for f in counted), len(counted)


def summary_line(findings: list[Finding]) -> str:
    """One sentence for a report's summary: the count, the findings that hang on a choice and
    the quick flag, e.g. "4 of 7 substantive findings hold under every alternative (2 hold only
    under some: depends on coupled); quick: not evidence (decided on fewer than 10 repetitions)"."""
    held, tested = summary_count(findings)
    ran = any(f.under for f in findings)
    s = f"{held} of {tested} substantive findings hold" + (" under every alternative" if ran else "")
    fragile = [f for f in findings if f.label in COUNTED and f.verdict is Verdict.HOLDS and not f.counts_as_holding]
    if fragile:
        hang = list(dict.fromkeys(c for f in fragile for c in f.depends_on()))
        s += f" ({len(fragile)} more hold only under our default: they depend on {', '.join(hang)})"
    if any(f.quick for f in findings if f.label in COUNTED):
        s += f"; quick: not evidence (decided on fewer than {MIN_EVIDENCE_REPS} repetitions)"
    return s
