"""Progress in a log (stderr not a terminal): periodic plain lines with an honest estimate."""

from __future__ import annotations

import io

from rich.console import Console

from qoelab.progress import LogLines, progress


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _lines(buf: io.StringIO) -> list[str]:
    return [line for line in buf.getvalue().splitlines() if line]


def test_lines_every_interval_and_at_the_end_with_an_estimate_from_this_process_only():
    buf, clock = io.StringIO(), Clock()
    log = LogLines(Console(file=buf, width=200), "grid", "runs", 60.0, clock=clock)
    log.update(100, 400)  # a resumed sweep: 100 runs were already finished
    clock.t = 30.0
    log.update(110, 400)  # before the interval: nothing
    assert _lines(buf) == []
    clock.t = 60.0
    log.update(120, 400)
    # 20 runs in 60 s → 280 left take 840 s; counting the 100 reused would say 155 s.
    assert _lines(buf) == ["grid: 120/400 runs (30.0 %), 0:01:00 elapsed, about 0:14:00 left"]
    clock.t = 61.0
    log.update(400, 400)
    assert _lines(buf)[-1] == "grid: 400/400 runs (100.0 %), 0:01:01 elapsed"
    clock.t = 500.0
    log.update(400, 400)  # nothing after the end
    assert len(_lines(buf)) == 2


def test_a_short_command_prints_nothing_in_a_log():
    buf, clock = io.StringIO(), Clock()
    log = LogLines(Console(file=buf), "run", "s simulated", 60.0, fmt=lambda x: f"{x:.1f}", clock=clock)
    for t in range(10):
        clock.t = t
        log.update(t, 9)
    assert buf.getvalue() == ""


def test_progress_in_a_log_uses_lines_and_disable_prints_nothing():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False)
    with progress(console, "grid", interval_s=0.0) as update:
        update(1, 2)
    assert _lines(buf)[0].startswith("grid: 1/2 runs (50.0 %)")
    buf2 = io.StringIO()
    with progress(Console(file=buf2, force_terminal=False), "grid", interval_s=0.0, disable=True) as update:
        update(1, 2)
    assert buf2.getvalue() == ""
