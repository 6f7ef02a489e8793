"""Progress of long commands, on a terminal and in a log.

On a terminal, a rich progress bar. When stderr is not a terminal (``nohup … > log``, CI, a
batch queue), rich draws nothing, and a grid that runs for hours would leave an empty log; there
:func:`progress` prints one plain line every ``interval_s`` seconds (and a last one at the end of
a command that printed any) instead::

    tfd grid: 1205/8800 runs (13.7 %), 0:10:02 elapsed, about 12:40:00 left

The estimate counts only what this process did: runs a resumed sweep finds already finished
arrive in the first update and do not make the rate look faster than it is. Wall-clock time is
read only for these messages, never for results.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console

Update = Callable[[float, float], None]


def _hms(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class LogLines:
    """The non-terminal form: ``update(done, total)`` prints a line when ``interval_s`` has
    passed since the last one, and, for a command that ran long enough to print one, when
    ``done`` reaches ``total``. Commands shorter than ``interval_s`` print nothing."""

    def __init__(self, console: Console, description: str, unit: str, interval_s: float,
                 fmt: Callable[[float], str] = lambda x: f"{x:.0f}", clock: Callable[[], float] = time.monotonic):
        self.console, self.description, self.unit, self.interval_s, self.fmt, self.clock = console, description, unit, interval_s, fmt, clock
        self.start = clock()
        self.first_done: float | None = None
        self.last_line = self.start
        self.finished = False
        self.printed = False

    def line(self, done: float, total: float) -> str:
        elapsed = self.clock() - self.start
        text = f"{self.description}: {self.fmt(done)}/{self.fmt(total)} {self.unit}"
        if total > 0:
            text += f" ({100 * done / total:.1f} %)"
        text += f", {_hms(elapsed)} elapsed"
        gained = done - (self.first_done or 0.0)
        if 0 < done < total and gained > 0 and elapsed > 0:
            text += f", about {_hms((total - done) * elapsed / gained)} left"
        return text

    def update(self, done: float, total: float) -> None:
        if self.first_done is None:
            self.first_done = done
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
        yield lambda done, total: None
        return
    if not console.is_terminal:
        yield LogLines(console, description, unit, interval_s, fmt).update
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    # The count at its widest ("30.0/30.0 s simulated" once the total is known), the two times
    # (h:mm:ss each) and the gaps between the five columns; the label and the bar share the rest.
    counts = max(len(f"{fmt(x)}/{fmt(x)} {unit}") for x in (0.0, 1e4))
    rest = max(console.width - counts - 2 * len("0:00:00") - 4, 20)
    label = shorten(description, max(rest - _MIN_BAR - 1, 12))
    bar = min(40, max(rest - len(label) - 1, 5))
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(bar_width=bar),
                  TextColumn("{task.fields[count]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=console, transient=transient) as p:
        task = p.add_task(label, total=None, count="")
        yield lambda done, total: p.update(task, completed=done, total=total, count=f"{fmt(done)}/{fmt(total)} {unit}")
