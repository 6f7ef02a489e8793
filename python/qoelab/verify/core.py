"""The machinery of ``qoelab verify``: a validation declared as data, its rows, their verdicts.

A :class:`Validation` names a model and its reference (with the citation), lists its parameter
grid (the full one and the ``--quick`` subset), and gives two module-level functions: ``measure``
builds a scenario from one parameter point, runs it through the core and reduces the results to
a number (plus details the reference may need, such as the measured SRTT), and ``reference``
computes the closed form. A :class:`Tolerance` says how far the measured value may lie from the
reference, and why. Each row gets a verdict:

``pass``
    within tolerance;
``FAIL``
    outside it;
``known limit``
    outside it, on a parameter point where the validation declares a documented limit (of the
    model or of the reference's assumptions; the reason is printed), *and* inside the weaker
    check that the limit still implies. A row outside both is a ``FAIL``: a limit never hides a
    failure it does not explain.

Runs are deterministic (fixed seeds), so the table is the same with any ``-j``.
"""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

Params = dict[str, Any]
Reference = float | tuple[float, float]

PASS = "pass"
FAIL = "FAIL"
LIMIT = "known limit"


@dataclass(frozen=True)
class Tolerance:
    """The accepted band around a reference (a value, or an interval ``(lo, hi)``):
    ``lo − below ≤ measured ≤ hi + above``, where ``below``/``above`` are fractions of the
    reference bound when ``relative`` (``below = 0.1`` is −10 %), absolute otherwise;
    ``math.inf`` leaves that side open. ``why`` is the justification printed in the docs."""

    below: float
    above: float
    relative: bool = True
    why: str = ""

    def band(self, reference: Reference) -> tuple[float, float]:
        lo, hi = (reference, reference) if isinstance(reference, (int, float)) else reference
        if self.relative:
            return (lo * (1.0 - self.below) if math.isfinite(self.below) else -math.inf,
                    hi * (1.0 + self.above) if math.isfinite(self.above) else math.inf)
        return lo - self.below, hi + self.above

    def accepts(self, measured: float, reference: Reference) -> bool:
        if not math.isfinite(measured):
            return False
        lo, hi = self.band(reference)
        return lo <= measured <= hi

    def describe(self) -> str:
        def amount(x: float) -> str:
            return f"{x * 100:g} %" if self.relative else f"{x:g}"

        if math.isinf(self.below) and math.isinf(self.above):
            return "any"
        if math.isinf(self.below):
            return "at most" if self.above == 0 else f"at most +{amount(self.above)}"
        if math.isinf(self.above):
            return "at least" if self.below == 0 else f"at least −{amount(self.below)}"
        if self.below == self.above:
            return f"±{amount(self.below)}"
        return f"−{amount(self.below)} … +{amount(self.above)}"


@dataclass(frozen=True)
class Limit:
    """A documented limit: ``applies(params)`` says on which parameter points (decided from the
    parameters alone, never from the measured value), ``reason`` is printed with the verdict,
    and ``check(measured, params, details)`` is the weaker condition the limit still implies."""

    applies: Callable[[Params], bool]
    reason: str
    check: Callable[[float, Params, dict[str, Any]], bool]


@dataclass(frozen=True)
class Validation:
    """One validation of the suite (see the module docstring)."""

    name: str
    title: str
    citation: str
    grid: Sequence[Params]
    quick: Sequence[Params]
    measure: Callable[[Params], dict[str, Any]]
    reference: Callable[[Params, dict[str, Any]], Reference]
    tolerance: Tolerance
    unit: str = ""
    scale: float = 1.0
    describe: Callable[[Params], str] = lambda p: ", ".join(f"{k}={v}" for k, v in p.items())
    limits: Sequence[Limit] = field(default_factory=tuple)
    digits: int = 3


@dataclass
class Row:
    """One parameter point of one validation, measured and judged."""

    validation: str
    params: Params
    label: str
    measured: float
    reference: Reference
    tolerance: str
    verdict: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.validation}[{self.label}]"

    def to_json(self) -> dict[str, Any]:
        ref = list(self.reference) if isinstance(self.reference, tuple) else self.reference
        return {"id": self.id, "validation": self.validation, "params": self.params, "measured": self.measured,
                "reference": ref, "tolerance": self.tolerance, "verdict": self.verdict, "reason": self.reason,
                "details": self.details}


def judge(v: Validation, params: Params, measured: dict[str, Any]) -> Row:
    """The verdict of one row (pure: no runs here, so the logic is tested on its own)."""
    value = float(measured["value"])
    ref = v.reference(params, measured)
    verdict, reason = FAIL, ""
    if v.tolerance.accepts(value, ref):
        verdict = PASS
    else:
        for lim in v.limits:
            if lim.applies(params) and lim.check(value, params, measured):
                verdict, reason = LIMIT, lim.reason
                break
    details = {k: x for k, x in measured.items() if k != "value"}
    return Row(v.name, dict(params), v.describe(params), value, ref, v.tolerance.describe(), verdict, reason, details)


def _measure_point(suite_module: str, name: str, index: int, quick: bool) -> tuple[str, int, dict[str, Any]]:
    """Runs one parameter point (in a worker process: found again by name and index)."""
    import importlib

    suite = importlib.import_module(suite_module).SUITE
    v = next(x for x in suite if x.name == name)
    params = (v.quick if quick else v.grid)[index]
    return name, index, v.measure(params)


def run_suite(suite: Sequence[Validation], *, quick: bool = False, jobs: int = 1,
              progress: Callable[[float, float], None] | None = None,
              suite_module: str = "qoelab.verify.suite") -> list[Row]:
    """Measures and judges every row of ``suite`` (in grid order, whatever ``jobs``).

    With ``jobs > 1`` the points run in a process pool; each worker imports ``suite_module``
    and finds the validation by name, so ``suite`` must be that module's ``SUITE`` (or a
    selection of it)."""
    points = [(v, i) for v in suite for i in range(len(v.quick if quick else v.grid))]
    results: dict[tuple[str, int], dict[str, Any]] = {}
    done = 0
    if progress:
        progress(0, len(points))
    if jobs <= 1:
        for v, i in points:
            results[(v.name, i)] = v.measure((v.quick if quick else v.grid)[i])
            done += 1
            if progress:
                progress(done, len(points))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = [ex.submit(_measure_point, suite_module, v.name, i, quick) for v, i in points]
            for f in _as_completed(futs):
                name, i, m = f.result()
                results[(name, i)] = m
                done += 1
                if progress:
                    progress(done, len(points))
    return [judge(v, (v.quick if quick else v.grid)[i], results[(v.name, i)]) for v, i in points]


def _as_completed(futs: Iterable[Any]) -> Iterable[Any]:
    from concurrent.futures import as_completed

    return as_completed(list(futs))


def fmt_value(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 1:
        return f"{x:.{max(digits - 1 - int(math.log10(a)), 0)}f}"
    return f"{x:.{digits}g}"


def fmt_reference(ref: Reference, digits: int = 3) -> str:
    if isinstance(ref, tuple):
        return f"[{fmt_value(ref[0], digits)}, {fmt_value(ref[1], digits)}]"
    return fmt_value(ref, digits)


def deviation(measured: float, reference: Reference, relative: bool) -> str:
    """How far the measured value lies from the reference: ``+12.3 %`` (relative tolerances) or
    ``−0.04`` (absolute); for an interval, the distance to its nearer end, ``in`` inside it."""
    if isinstance(reference, tuple):
        lo, hi = reference
        if lo <= measured <= hi:
            return "in"
        ref = lo if measured < lo else hi
    else:
        ref = reference
    if not math.isfinite(measured):
        return "-"
    if relative:
        return f"{(measured / ref - 1) * 100:+.1f} %" if ref else "-"
    return f"{measured - ref:+.3g}"


def markdown(suite: Sequence[Validation], rows: Sequence[Row]) -> str:
    """The rows as Markdown tables, one per validation (the form ``docs/validation.md`` holds)."""
    lines: list[str] = []
    for v in suite:
        mine = [r for r in rows if r.validation == v.name]
        if not mine:
            continue
        unit = f" ({v.unit})" if v.unit else ""
        lines += [f"**{v.name}**: {v.title}", "",
                  f"| parameters | measured{unit} | reference | deviation | tolerance | verdict |", "|---|---|---|---|---|---|"]
        for r in mine:
            verdict = f"**{r.verdict}**" if r.verdict == FAIL else r.verdict
            dev = deviation(r.measured, r.reference, v.tolerance.relative)
            lines.append(f"| {r.label} | {fmt_value(r.measured, v.digits)} | {fmt_reference(r.reference, v.digits)} "
                         f"| {dev} | {r.tolerance} | {verdict} |")
        lines.append("")
        for reason in dict.fromkeys(r.reason for r in mine if r.reason):
            lines += [f"*known limit*: {reason}.", ""]
    return "\n".join(lines)
