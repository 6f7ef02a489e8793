import math

import pytest

from qoelab.experiment import Estimate, Finding, Label, Verdict, judge_positive, mean_ci, paired_ci, summary_count


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


def test_judge_positive_three_way():
    assert judge_positive(Estimate(1.0, 0.5, 5)) is Verdict.HOLDS
    assert judge_positive(Estimate(-1.0, 0.5, 5)) is Verdict.DOES_NOT_HOLD
    assert judge_positive(Estimate(0.2, 0.5, 5)) is Verdict.WITHIN_NOISE
    assert judge_positive(Estimate(0.2, float("nan"), 1)) is Verdict.HOLDS
    assert judge_positive(Estimate(2.0, 0.5, 5), threshold=2.4) is Verdict.WITHIN_NOISE
    assert judge_positive(None) is Verdict.UNDECIDED


def test_summary_counts_only_decided_substantive_findings():
    fs = [
        Finding("a", "x", Label.SUBSTANTIVE, Verdict.HOLDS),
        Finding("b", "x", Label.SUBSTANTIVE, Verdict.WITHIN_NOISE),
        Finding("c", "x", Label.SUBSTANTIVE, Verdict.UNDECIDED),
        Finding("d", "x", Label.TRIVIAL, Verdict.HOLDS),
        Finding("e", "x", Label.BY_CONSTRUCTION, Verdict.HOLDS),
    ]
    assert summary_count(fs) == (1, 2)


def test_judge_below_three_way():
    from qoelab.experiment import judge_below

    assert judge_below(Estimate(0.0002, 0.0001, 5), 1e-3) is Verdict.HOLDS
    assert judge_below(Estimate(0.01, 0.002, 5), 1e-3) is Verdict.DOES_NOT_HOLD
    assert judge_below(Estimate(0.0009, 0.0005, 5), 1e-3) is Verdict.WITHIN_NOISE
    # One repetition: the mean decides; NaN or no estimate: undecided.
    assert judge_below(Estimate(0.002, float("nan"), 1), 1e-3) is Verdict.DOES_NOT_HOLD
    assert judge_below(None, 1e-3) is Verdict.UNDECIDED
    assert judge_below(Estimate(float("nan"), float("nan"), 0), 1e-3) is Verdict.UNDECIDED


def test_judge_within_positional_tolerance():
    from qoelab.experiment import judge_within

    assert judge_within(Estimate(0.1, 0.2, 5), 0.5) is Verdict.HOLDS
    assert judge_within(Estimate(-0.9, 0.2, 5), 0.5) is Verdict.DOES_NOT_HOLD
    assert judge_within(Estimate(1.0, 0.3, 5), 0.5) is Verdict.DOES_NOT_HOLD
    assert judge_within(Estimate(0.4, 0.3, 5), 0.5) is Verdict.WITHIN_NOISE
    assert judge_within(Estimate(0.6, float("nan"), 1), 0.5) is Verdict.DOES_NOT_HOLD


def test_judge_within_three_way():
    from qoelab.experiment import judge_within

    assert judge_within(Estimate(0.5, 1.0, 5), bound=2.0) is Verdict.HOLDS
    assert judge_within(Estimate(-0.5, 1.0, 5), bound=2.0) is Verdict.HOLDS
    assert judge_within(Estimate(3.5, 1.0, 5), bound=2.0) is Verdict.DOES_NOT_HOLD
    assert judge_within(Estimate(-3.5, 1.0, 5), bound=2.0) is Verdict.DOES_NOT_HOLD
    assert judge_within(Estimate(1.5, 1.0, 5), bound=2.0) is Verdict.WITHIN_NOISE
    assert judge_within(Estimate(1.9, float("nan"), 1), bound=2.0) is Verdict.HOLDS
    assert judge_within(Estimate(-2.1, float("nan"), 1), bound=2.0) is Verdict.DOES_NOT_HOLD
    assert judge_within(None, bound=2.0) is Verdict.UNDECIDED


def test_judge_all_is_a_conjunction():
    from qoelab.experiment import judge_all

    H, N, W, U = Verdict.HOLDS, Verdict.DOES_NOT_HOLD, Verdict.WITHIN_NOISE, Verdict.UNDECIDED
    assert judge_all([H, H]) is H
    assert judge_all([H, W]) is W
    assert judge_all([W, N]) is N
    assert judge_all([H, U]) is U
    assert judge_all([]) is U
