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
