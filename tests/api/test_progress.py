"""Progress in a log (stderr not a terminal): periodic plain lines with an honest estimate."""

from __future__ import annotations

import io

from rich.console import Console

from qoelab.progress import LogLines, progress
from tests.conftest import one_link_udp


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


def test_runs_found_finished_by_later_sweeps_do_not_speed_the_estimate():
    """A resumed reproduction: each of its sweeps reports, as it starts, the runs an earlier
    invocation finished (``reused``); only the runs done now set the rate."""
    buf, clock = io.StringIO(), Clock()
    log = LogLines(Console(file=buf, width=200), "sqf reproduction", "runs", 60.0, clock=clock)
    log.update(0, 1000, reused=0)
    clock.t = 30.0
    log.update(10, 1000)  # 10 runs done now
    log.update(510, 1000, reused=500)  # the next sweep finds 500 finished
    clock.t = 60.0
    log.update(520, 1000)  # 10 more done now: 20 in 60 s, 480 left take 1440 s
    assert _lines(buf) == ["sqf reproduction: 520/1000 runs (52.0 %), 0:01:00 elapsed, about 0:24:00 left"]


def test_a_resumed_sweep_reports_the_runs_it_finds_finished(tmp_path):
    from qoelab.scenario import Scenario
    from qoelab.sweep import run_sweep

    sc = Scenario.from_dict(one_link_udp("p"))
    run_sweep(sc, [], 2, tmp_path, 1)
    calls: list = []
    run_sweep(sc, [], 3, tmp_path, 1, lambda d, t, reused=0: calls.append((d, t, reused)))
    assert calls[0] == (2, 3, 2) and calls[-1] == (3, 3, 0)


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


def _last_frame(buf: io.StringIO) -> str:
    import re

    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", buf.getvalue())
    return [line for line in re.split(r"[\r\n]", text) if line.strip()][-1]


def test_on_an_80_column_terminal_a_long_label_is_shortened_and_the_times_stay_whole():
    """A run of a deeply nested scenario file: the label keeps its verb and the file's end, and
    both times (elapsed, remaining) are drawn whole instead of squeezed to ``0:00:…``."""
    label = "running /home/user/experiments/campaign-2026/some/deeply/nested/folder/demo/scenario.toml"
    for unit, fmt in (("s simulated", lambda x: f"{x:.1f}"), ("runs", lambda x: f"{x:.0f}")):
        buf = io.StringIO()
        console = Console(file=buf, width=80, force_terminal=True, color_system=None)
        with progress(console, label, unit=unit, fmt=fmt) as update:
            update(12, 30)
        frame = _last_frame(buf)
        assert len(frame) <= 80, frame
        assert frame.startswith("running …") and "scenario.toml" in frame, frame
        assert frame.rstrip().endswith("0:00:00 -:--:--") or frame.rstrip().endswith("0:00:00 0:00:00"), frame
        assert f"12{'.0' if unit != 'runs' else ''}/30" in frame and "…" not in frame.split("scenario.toml")[1], frame


def test_shorten_keeps_the_verb_and_the_end():
    from qoelab.progress import shorten

    assert shorten("sweep demo", 30) == "sweep demo"
    s = shorten("running /a/b/c/d/demo/scenario.toml", 30)
    assert len(s) == 30 and s.startswith("running …") and s.endswith("demo/scenario.toml"), s
    assert len(shorten("x" * 50, 12)) == 12
