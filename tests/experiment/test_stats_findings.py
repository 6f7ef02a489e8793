import math

import pytest

from qoelab.experiment import mean_ci, paired_ci


def test_mean_ci_matches_hand_computed_student_t():
    # xs = 1..5: mean 3, sd = sqrt(2.5), t_{0.975,4} = 2.776445...
    e = mean_ci([1, 2, 3, 4, 5])
    assert e.mean == 3 and e.n == 5
    assert e.half_width == pytest.approx(2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)


def test_single_repetition_has_no_interval_and_never_excludes_zero():
    e = mean_ci([4.0])
    assert math.isnan(e.half_width) and not e.excludes_zero()


def test_paired_is_tighter_than_independent_when_runs_share_noise():
    noise = [0.0, 5.0, -3.0, 8.0, -6.0]
    xs = [10 + v + 0.1 for v in noise]
    ys = [10 + v for v in noise]
    d = paired_ci(xs, ys)
    assert d.mean == pytest.approx(0.1) and d.half_width < 1e-9 and d.excludes_zero()
    assert not mean_ci(xs).excludes_zero() or mean_ci(xs).half_width > 1
    with pytest.raises(ValueError):
        paired_ci([1, 2], [1])


def test_estimates_over_repetitions_that_are_not_independent_have_no_interval():
    e = mean_ci([13.7, 13.7, 13.7], independent=False)
    assert e.mean == pytest.approx(13.7) and math.isnan(e.half_width) and not e.excludes_zero() and not e.independent
    assert not paired_ci([1.0, 2.0], [0.0, 0.5], independent=False).independent


def test_floats_are_written_with_the_digits_every_machine_agrees_on():
    """Two sums of the same numbers in different orders (as NumPy's SIMD kernels do on
    different CPUs) differ in the last place; written, they are the same bytes."""
    from qoelab.experiment.stats import DIGITS, portable
    from qoelab.experiment.tables import Column, Table

    xs = [0.1 * k for k in range(1, 200)]
    a, b = sum(xs), sum(reversed(xs))
    assert a != b and portable(a) == portable(b)
    assert DIGITS == 12 and portable(19.077167434694534) == 19.0771674347
    assert math.isnan(portable(float("nan"))) and portable(float("inf")) == float("inf")
    assert portable(123456789) == 123456789.0

    def csv(v: float) -> str:
        t = Table("t", "T", [Column("x", "x"), Column("e", "e")], [{"x": v, "e": mean_ci([v, v + 1.0, v + 2.0])}])
        return t.csv_text() + t.markdown() + repr(t.json())

    assert csv(a) == csv(b)


def test_a_half_width_below_round_off_is_zero():
    """Repetitions equal but for the last place (22.000000000000004 beside 22.0) have no
    spread: the interval is 0 wide, not 1e-14."""
    from qoelab.experiment.stats import ROUND_OFF

    e = mean_ci([22.0, 22.000000000000004, 22.0, 22.0])
    assert e.half_width == 0.0 and e.n == 4
    real = mean_ci([22.0, 22.0 * (1 + 100 * ROUND_OFF), 22.0])
    assert real.half_width > 0


def test_the_quick_note_follows_the_estimates_a_table_shows():
    """A table is flagged "quick: not evidence" when an estimate it shows rests on fewer than
    MIN_EVIDENCE_REPS repetitions; a row's other key (a metric defined only in the runs where
    its event happened, n = 3 of 10) does not flag it."""
    from qoelab.experiment.findings import MIN_EVIDENCE_REPS
    from qoelab.experiment.tables import QUICK_NOTE, Column, Table

    full = mean_ci([float(x) for x in range(MIN_EVIDENCE_REPS)])
    few = mean_ci([1.0, 2.0, 4.0])
    row = {"n": 5, "loss": full, "first_event_s": few}
    shown = Table("t", "T", [Column("n", "n"), Column("loss", "loss")], [row])
    assert not shown.quick_intervals() and QUICK_NOTE not in shown.markdown()
    both = Table("t", "T", [Column("n", "n"), Column("loss", "loss"), Column("first_event_s", "first")], [row])
    assert both.quick_intervals() and QUICK_NOTE in both.markdown()
