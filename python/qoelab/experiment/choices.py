"""The choices a paper leaves open, declared: what we chose, what else a reader could have
chosen, and why ours.

A reproduction declares each choice next to the paper's values (``CHOICES`` in its module)::

    CHOICES = (
        Choice("coupled", default="lia", alternatives=("olia", "uncoupled"),
               why="..."),
        Choice("loss_direction", default="downstream", alternatives=("upstream", "both"), why="..."),
    )

A choice is a parameter of the paper's scenario builder, mapped onto scenario keys that exist:
every alternative listed in ``alternatives`` must build. An alternative whose mechanism does not
exist yet is declared in ``unavailable`` (value → the reason, naming the issue that builds it):
the report lists it as *not available yet* and the sensitivity run skips it; it is never faked.

The sensitivity run (:mod:`qoelab.experiment.sensitivity`) varies one choice at a time
(:func:`variants`); two choices that interact are declared as a :class:`Factorial`, whose
every combination of alternatives runs too. Steegen et al. (2016), *Increasing transparency
through a multiverse analysis*, is the idea; keeping it small (only what a reader could
reasonably have chosen otherwise) is the discipline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Choice:
    """One open choice: ``name`` (the builder's parameter), our ``default``, the realisable
    ``alternatives``, ``why`` the default (a sentence with its source: the paper's text, a kernel
    default, a standard), and ``unavailable`` alternatives with the reason each cannot run yet.
    ``runs = False`` marks a choice of the analysis only (e.g. a receiver's deadline applied to
    the runs' logs): its variants reuse the default's runs."""

    name: str
    default: Any
    alternatives: tuple[Any, ...]
    why: str
    unavailable: Mapping[Any, str] = field(default_factory=dict)
    runs: bool = True

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"choice name {self.name!r}: lower-case letters, digits and _ only")
        if not self.why.strip():
            raise ValueError(f"choice {self.name}: `why` must say why the default")
        vals = [self.default, *self.alternatives, *self.unavailable]
        if len({repr(v) for v in vals}) != len(vals):
            raise ValueError(f"choice {self.name}: the default, alternatives and unavailable values must differ")

    def json(self) -> dict[str, Any]:
        """The choice in ``report.json``'s ``choices`` list."""
        return {"name": self.name, "default": _plain(self.default), "alternatives": [_plain(a) for a in self.alternatives],
                "why": self.why, "unavailable": {str(_plain(k)): v for k, v in self.unavailable.items()},
                "runs": self.runs}


@dataclass(frozen=True)
class Factorial:
    """Two (or more) declared choices that interact: every combination of their values runs."""

    names: tuple[str, ...]


def _plain(v: Any) -> Any:
    return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)


def value_text(v: Any) -> str:
    """A choice's value as it appears in a variant's name (``choice=value``)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def defaults(choices: tuple[Choice, ...]) -> dict[str, Any]:
    """Every choice at its default: the setting of the main run."""
    return {c.name: c.default for c in choices}


def variants(choices: tuple[Choice, ...], factorials: tuple[Factorial, ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    """The settings the sensitivity run adds to the default: each available alternative of each
    choice, the others at their defaults, then every combination of a :class:`Factorial`'s
    choices away from the all-defaults one (without repeating a one-at-a-time setting). Each
    comes with its name, ``choice=value`` joined by ``,``."""
    by = {c.name: c for c in choices}
    base = defaults(choices)
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()

    def add(changes: dict[str, Any]) -> None:
        name = ",".join(f"{k}={value_text(v)}" for k, v in changes.items())
        if name and name not in seen:
            seen.add(name)
            out.append((name, {**base, **changes}))

    for c in choices:
        for a in c.alternatives:
            add({c.name: a})
    for fac in factorials:
        unknown = [n for n in fac.names if n not in by]
        if unknown:
            raise ValueError(f"factorial {fac.names}: unknown choice(s) {unknown}")
        combos: list[dict[str, Any]] = [{}]
        for n in fac.names:
            c = by[n]
            combos = [{**d, n: v} for d in combos for v in (c.default, *c.alternatives)]
        for d in combos:
            add({k: v for k, v in d.items() if v != by[k].default})
    return out


def runs_alike(choices: tuple[Choice, ...], setting: dict[str, Any]) -> bool:
    """Whether ``setting`` differs from the defaults only in analysis choices (``runs=False``):
    its runs are the default's."""
    return all(not c.runs or setting.get(c.name, c.default) == c.default for c in choices)


def choices_md(choices: tuple[Choice, ...]) -> str:
    """The declared choices as a Markdown table (name, default, alternatives, why)."""
    lines = ["| choice | our default | alternatives | why the default |", "|---|---|---|---|"]
    for c in choices:
        alts = [value_text(a) for a in c.alternatives]
        alts += [f"{value_text(a)} (not available yet: {why})" for a, why in c.unavailable.items()]
        lines.append(f"| `{c.name}` | {value_text(c.default)} | {'; '.join(alts) or '–'} | {c.why} |")
    return "\n".join(lines) + "\n"
