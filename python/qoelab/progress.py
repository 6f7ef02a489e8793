"""Progress of long commands, on a terminal and in a log.

On a terminal, a rich progress bar. When stderr is not a terminal (``nohup … > log``, CI, a
batch queue), rich draws nothing, and a grid that runs for hours would leave an empty log; there
:func:`progress` prints one plain line every ``interval_s`` seconds (and a last one at the end of
a command that printed any) instead::

    tfd grid: 1205/8800 runs (13.7 %), 0:10:02 elapsed, about 12:40:00 left

The estimate counts only what this process did: an update may say how many of its runs were
found already finished (``update(done, total, reused=k)``, as each sweep of a resumed
reproduction does when it starts), and those, like whatever the first update reports, do not
make the rate look faster than it is. Wall-clock time is read only for these messages, never
for results.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console

#: ``update(done, total, reused=0)``: ``done`` of ``total`` units are finished; ``reused`` of
#: those this call adds were found finished (an earlier invocation's), not done now.
Update = Callable[..., None]


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Estimate:
    """The time left, from the rate of the work this process did: ``done`` less the units
    reported as ``reused`` and less what the first update found."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.start = clock()
        self.reused = 0.0
        self.first: float | None = None

    def update(self, done: float, reused: float = 0.0) -> None:
        self.reused += reused
        if self.first is None:
            self.first = done - self.reused

    def left(self, done: float, total: float) -> float | None:
        """Seconds left at the rate so far; None before any unit was done here."""
        elapsed = self.clock() - self.start
        gained = done - self.reused - (self.first or 0.0)
        if 0 < done < total and gained > 0 and elapsed > 0:
            return (total - done) * elapsed / gained
        return None


class LogLines:
    """The non-terminal form: ``update(done, total)`` prints a line when ``interval_s`` has
    passed since the last one, and, for a command that ran long enough to print one, when
    ``done`` reaches ``total``. Commands shorter than ``interval_s`` print nothing."""

    def __init__(self, console: Console, description: str, unit: str, interval_s: float,
                 fmt: Callable[[float], str] = lambda x: f"{x:.0f}", clock: Callable[[], float] = time.monotonic):
        self.console, self.description, self.unit, self.interval_s, self.fmt, self.clock = console, description, unit, interval_s, fmt, clock
        self.start = clock()
        self.estimate = Estimate(clock)
        self.last_line = self.start
        self.finished = False
        self.printed = False

    def line(self, done: float, total: float) -> str:
        elapsed = self.clock() - self.start
        text = f"{self.description}: {self.fmt(done)}/{self.fmt(total)} {self.unit}"
        if total > 0:
            text += f" ({100 * done / total:.1f} %)"
        text += f", {_hms(elapsed)} elapsed"
        left = self.estimate.left(done, total)
        if left is not None:
            text += f", about {_hms(left)} left"
        return text

    def update(self, done: float, total: float, reused: float = 0.0) -> None:
        self.estimate.update(done, reused)
        now = self.clock()
        end = total > 0 and done >= total
        if (end and self.printed and not self.finished) or (not self.finished and now - self.last_line >= self.interval_s):
            self.console.print(self.line(done, total), markup=False, highlight=False, soft_wrap=True)
            self.last_line = now
            self.printed = True
            self.finished = end


#: Narrowest progress bar drawn beside a label (characters).
_MIN_BAR = 10


def shorten(label: str, width: int) -> str:
    """``label`` in at most ``width`` characters: a path keeps its end (the scenario's own name)
    behind an ellipsis, ``running …/scenarios/demo/scenario.toml``."""
    if len(label) <= width:
        return label
    head, sep, tail = label.partition(" ")
    if sep and len(head) + 2 < width:  # keep the verb: "running …/demo/scenario.toml"
        return f"{head} …{tail[len(tail) - (width - len(head) - 2):]}"
    return "…" + label[len(label) - (width - 1):]


@contextmanager
def progress(console: Console, description: str, *, unit: str = "runs", interval_s: float = 60.0,
             disable: bool = False, fmt: Callable[[float], str] = lambda x: f"{x:.0f}", transient: bool = False) -> Iterator[Update]:
    """Yields ``update(done, total)``: a rich bar on a terminal, :class:`LogLines` otherwise,
    nothing when ``disable``."""
    if disable:
        yield lambda done, total, reused=0.0: None
        return
    if not console.is_terminal:
        yield LogLines(console, description, unit, interval_s, fmt).update
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # The count at its widest ("30.0/30.0 s simulated" once the total is known), the two times
    # (h:mm:ss each) and the gaps between the five columns; the label and the bar share the rest.
    counts = max(len(f"{fmt(x)}/{fmt(x)} {unit}") for x in (0.0, 1e4))
    rest = max(console.width - counts - 2 * len("0:00:00") - 4, 20)
    label = shorten(description, max(rest - _MIN_BAR - 1, 12))
    bar = min(40, max(rest - len(label) - 1, 5))
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(bar_width=bar),
                  TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                  TextColumn("[progress.remaining]{task.fields[left]}"), console=console, transient=transient) as p:
        task = p.add_task(label, total=None, count="", left="-:--:--")
        est = Estimate()

        def update(done: float, total: float, reused: float = 0.0) -> None:
            # The time left from this process's own rate (rich's own column would count runs
            # found finished as if they had just been done).
            est.update(done, reused)
            left = est.left(done, total)
            shown = "0:00:00" if total and done >= total else ("-:--:--" if left is None else _hms(left))
            p.update(task, completed=done, total=total, count=f"{fmt(done)}/{fmt(total)} {unit}", left=shown)

        yield update
