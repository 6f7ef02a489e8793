"""The verdict rules and labels (qoelab.experiment.findings), each on a constructed table of
repetitions: the rows a reproduction's metrics would give, run through the layer's own
aggregation and pairing, then judged."""

from __future__ import annotations

import math

import pytest

from qoelab.experiment import Finding, Label, Part, Premise, Verdict, above, below, judge, summary_count, within
from qoelab.experiment import core
from qoelab.experiment.findings import MIN_EVIDENCE_REPS, reps_to_decide, summary_line
from qoelab.experiment.stats import Estimate, mean_ci, t95


def table(a: list[float], b: list[float], metric: str = "delay_ms") -> list[dict]:
    """Paired repetitions of two cells, ``n = 1`` and ``n = 4`` (one row per run)."""
    rows = [{"n": 1, "rep": r, "seed": 100 + r, metric: x} for r, x in enumerate(a)]
    rows += [{"n": 4, "rep": r, "seed": 100 + r, metric: x} for r, x in enumerate(b)]
    return rows


def diff(rows: list[dict], metric: str = "delay_ms") -> Estimate:
    return core.paired(rows, "n", 4, 1, metric)[()]


# --- holds ---------------------------------------------------------------------------------------


def test_holds_when_the_paired_interval_excludes_zero_in_the_papers_direction():
    base = [20.0, 25.0, 18.0, 30.0, 22.0]
    e = diff(table(base, [x + 27 + d for x, d in zip(base, (1, -1, 0.5, -0.5, 0))]))
    j = judge(e, above(0.0, size=27.0))
    assert j.verdict is Verdict.HOLDS
    assert "the paper's 27 lies inside it" in j.note


def test_holds_says_how_far_off_the_papers_size_is():
    base = [20.0, 25.0, 18.0, 30.0, 22.0]
    e = diff(table(base, [x + 5 + d for x, d in zip(base, (1, -1, 0.5, -0.5, 0))]))
    j = judge(e, above(0.0, size=27.0))
    assert j.verdict is Verdict.HOLDS and "lies" in j.note and "above it" in j.note


def test_the_papers_size_is_covered_up_to_round_off_not_beyond():
    """Repetitions that all give the paper's value have a zero-width interval whose mean may
    differ from it in the last place: the paper's size still lies inside it. A real gap, however
    small against the threshold, is reported as a gap."""
    x = 0.1 + 0.2  # 0.30000000000000004
    e = Estimate(x, 0.0, 3)
    assert "the paper's 0.3 lies inside it" in judge(e, above(0.0, size=0.3)).note
    far = judge(Estimate(0.3 * (1 + 1e-6), 0.0, 3), above(0.0, size=0.3))
    assert far.verdict is Verdict.HOLDS and "inside" not in far.note and "below it" in far.note
    assert judge(Estimate(x, 0.0, 3), below(1.0, size=0.3)).verdict is Verdict.HOLDS
    assert judge(Estimate(0.5, 0.6, 3), above(0.0, size=2.0)).verdict is Verdict.DOES_NOT_HOLD


# --- does not hold ------------------------------------------------------------------------------


def test_does_not_hold_when_the_interval_excludes_the_papers_direction():
    e = diff(table([10.0, 11.0, 12.0], [5.0, 6.2, 6.8]))
    assert judge(e, above()).verdict is Verdict.DOES_NOT_HOLD


def test_within_noise_that_excludes_the_papers_size_does_not_hold():
    """WiMAX's delay growth: +1.47 [−7.9, 10.8] ms against the paper's +27 ms is not 'within
    noise': the interval rules out the paper's effect."""
    base = [30.0, 35.0, 28.0, 40.0, 33.0, 31.0]
    e = diff(table(base, [x + d for x, d in zip(base, (9.0, -6.0, 12.0, -8.0, 4.0, -2.2))]))
    assert e.low < 0 < e.high < 27
    j = judge(e, above(0.0, size=27.0))
    assert j.verdict is Verdict.DOES_NOT_HOLD and "excludes the paper's 27" in j.note
    # Without the paper's size the same interval decides nothing.
    assert judge(e, above(0.0)).verdict is Verdict.INCONCLUSIVE


def test_below_a_threshold():
    assert judge(mean_ci([0.0002, 0.0001, 0.0003]), below(1e-3)).verdict is Verdict.HOLDS
    assert judge(mean_ci([0.010, 0.012, 0.011]), below(1e-3)).verdict is Verdict.DOES_NOT_HOLD
    assert judge(mean_ci([0.0001, 0.0019, 0.0009]), below(1e-3)).verdict is Verdict.INCONCLUSIVE


def test_within_a_band():
    assert judge(mean_ci([0.1, -0.1, 0.05]), within(0.5)).verdict is Verdict.HOLDS
    assert judge(mean_ci([1.0, 1.1, 0.9]), within(0.5)).verdict is Verdict.DOES_NOT_HOLD
    assert judge(mean_ci([-1.0, -1.1, -0.9]), within(0.5)).verdict is Verdict.DOES_NOT_HOLD
    assert judge(mean_ci([0.4, 0.2, 0.6]), within(0.5)).verdict is Verdict.INCONCLUSIVE


# --- inconclusive --------------------------------------------------------------------------------


def test_inconclusive_says_what_repetition_count_would_decide_it():
    e = diff(table([10.0, 11.0, 9.0, 10.4], [10.5, 10.0, 10.5, 10.6]))
    j = judge(e, above())
    assert j.verdict is Verdict.INCONCLUSIVE
    m = reps_to_decide(e, abs(e.mean))
    assert m is not None and m > e.n and f"about {m} repetitions would decide it" in j.note
    # That count really gives a half-width below the gap, and one fewer does not.
    sd = e.half_width * math.sqrt(e.n) / t95(e.n - 1)
    assert t95(m - 1) * sd / math.sqrt(m) < abs(e.mean) <= t95(m - 2) * sd / math.sqrt(m - 1)


def test_one_repetition_is_inconclusive_not_decided_by_its_mean():
    j = judge(mean_ci([3.0]), above())
    assert j.verdict is Verdict.INCONCLUSIVE and "one repetition" in j.note


def test_a_mean_on_the_boundary_is_never_decided():
    j = judge(mean_ci([1.0, -1.0, 2.0, -2.0]), above())
    assert j.verdict is Verdict.INCONCLUSIVE and "no repetition count" in j.note


# --- independence --------------------------------------------------------------------------------


def test_identical_repetitions_are_refused_an_interval():
    """Drop-tail runs that give the same output whatever the seed are not independent samples:
    the layer gives no interval over them (not a zero-width one) and the verdict is
    inconclusive, saying why; the reproduction goes on."""
    same = [{"n": 1, "rep": r, "seed": 100 + r, "loss": 0.25, "rate": 13.7} for r in range(3)]
    (agg,) = core.aggregate(same, ("n",), ("loss", "rate"))
    assert not agg["rate"].independent and math.isnan(agg["rate"].half_width) and agg["rate"].mean == pytest.approx(13.7)
    j = judge(agg["rate"], above(10.0))
    assert j.verdict is Verdict.INCONCLUSIVE and "not independent" in j.note
    # Paired against cells whose runs differ: still refused, one side is not independent.
    other = [{"n": 4, "rep": r, "seed": 100 + r, "loss": 0.1 * r, "rate": 10.0 + r} for r in range(3)]
    d = core.paired(same + other, "n", 4, 1, "rate")[()]
    assert not d.independent and judge(d, above()).verdict is Verdict.INCONCLUSIVE
    # One metric constant across runs that differ elsewhere is independent (e.g. zero loss).
    varied = [{**r, "rate": 13.7 + r["rep"]} for r in same]
    (agg,) = core.aggregate(varied, ("n",), ("loss",))
    assert agg["loss"].independent and agg["loss"].half_width == 0.0
    assert judge(agg["loss"], below(0.3)).verdict is Verdict.HOLDS


def test_a_constant_paired_offset_over_varying_runs_is_independent():
    e = diff(table([10.0, 12.0, 9.0], [11.0, 13.0, 10.0]))
    assert e.independent and e.half_width == pytest.approx(0.0)
    assert judge(e, above()).verdict is Verdict.HOLDS


# --- untestable ----------------------------------------------------------------------------------


def test_untestable_when_a_named_premise_fails():
    e = mean_ci([0.99, 0.98, 0.99])
    p = Premise("the video is below its fair share", False, "its mean rate is 1.04 × the fair share")
    j = judge(e, below(1e-3), (p,))
    assert j.verdict is Verdict.UNTESTABLE and "the video is below its fair share" in j.note and "1.04" in j.note
    assert judge(e, below(1e-3), (Premise("ok", True),)).verdict is Verdict.DOES_NOT_HOLD
    assert judge(None, above()).verdict is Verdict.UNTESTABLE


# --- conjunctions, labels, counting --------------------------------------------------------------


def test_a_conjunction_holds_only_if_every_part_does():
    good, noisy, bad = mean_ci([2.0, 2.1, 1.9]), mean_ci([0.5, -0.4, 0.2]), mean_ci([-2.0, -2.1, -1.9])

    def f(*ests):
        return Finding("k", "at both frame lengths", Label.SUBSTANTIVE, above(),
                       parts=tuple(Part(f"p{i}", e, above()) for i, e in enumerate(ests)))

    assert f(good, good).verdict is Verdict.HOLDS
    assert f(good, noisy).verdict is Verdict.INCONCLUSIVE and "p1:" in f(good, noisy).note
    assert f(noisy, bad).verdict is Verdict.DOES_NOT_HOLD
    assert f(good, None).verdict is Verdict.UNTESTABLE


@pytest.mark.parametrize("label", [Label.TRIVIAL, Label.BY_CONSTRUCTION, Label.CALIBRATED, Label.THRESHOLD_AFTER_DATA])
def test_only_substantive_findings_are_counted(label):
    e = mean_ci([1.0, 1.1, 0.9])
    fs = [Finding("a", "x", Label.SUBSTANTIVE, above(), "s", e), Finding("b", "y", label, above(), "s", e)]
    assert summary_count(fs) == (1, 1)
    assert label.value in {"trivial", "by construction", "calibrated", "threshold chosen after the data"}


def test_untestable_findings_are_not_counted_as_tested():
    fs = [Finding("a", "x", Label.SUBSTANTIVE, above(), "s", mean_ci([1.0, 1.1, 0.9])),
          Finding("b", "x", Label.SUBSTANTIVE, above(), "s", mean_ci([1.0, -1.1, 0.9])),
          Finding("c", "x", Label.SUBSTANTIVE, above(), "s", None)]
    assert summary_count(fs) == (1, 2)


def test_fewer_than_ten_repetitions_are_quick_not_evidence():
    few = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", mean_ci([1.0 + 0.01 * i for i in range(MIN_EVIDENCE_REPS - 1)]))
    enough = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", mean_ci([1.0 + 0.01 * i for i in range(MIN_EVIDENCE_REPS)]))
    assert few.quick and not enough.quick
    assert "quick: not evidence" in summary_line([few]) and "quick" not in summary_line([enough])
    assert not Finding("c", "x", Label.SUBSTANTIVE, above(), "s", None).quick  # untestable: nothing decided


def test_a_finding_holds_in_the_count_only_under_every_alternative():
    e = mean_ci([1.0, 1.1, 0.9])
    robust = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", e,
                     under=(("coupled=olia", Verdict.HOLDS), ("coupled=uncoupled", Verdict.HOLDS)))
    fragile = Finding("b", "y", Label.SUBSTANTIVE, above(), "s", e,
                      under=(("coupled=olia", Verdict.HOLDS), ("coupled=uncoupled", Verdict.DOES_NOT_HOLD)))
    assert robust.robust and robust.sensitivity_text() == "robust"
    assert not fragile.robust and fragile.depends_on() == ["coupled"]
    assert fragile.sensitivity_text() == "depends on coupled (default: holds; olia: holds; uncoupled: does not hold)"
    assert summary_count([robust, fragile]) == (1, 2)
    assert "1 more hold only under our default: they depend on coupled" in summary_line([robust, fragile])
    assert Finding("c", "x", Label.SUBSTANTIVE, above(), "s", e).sensitivity_text() == "not run"


def test_alternatives_on_fewer_cells_are_compared_with_the_default_on_those_cells():
    """TFD's alternatives run on a smaller grid beside the default there (variant `default`): a
    choice is named only where its verdict differs from that default's on the same cells; what
    the smaller grid changes under the default itself is 'the cells', never a choice; a variant
    on the finding's own cells (another calibration) is still compared with the finding; the
    count is unchanged (a finding holds only if every entry holds)."""
    from qoelab.experiment import runner

    e = mean_ci([1.0, 1.1, 0.9])  # holds over all cells
    H, N = Verdict.HOLDS, Verdict.DOES_NOT_HOLD
    cells = ("default", "lend_idle=False", "admission=0.99", "scheduler=reserved_rate")

    def on(verdicts, extra=()):
        return Finding("a", "x", Label.SUBSTANTIVE, above(), "s", e, under=tuple(zip(cells, verdicts)) + extra,
                       on_cells=cells)

    # The smaller grid turns the default's verdict; lend_idle agrees with the default there.
    f = on((N, N, H, N))
    assert f.depends_on() == ["the cells", "admission"]
    assert f.sensitivity_text() == ("depends on the cells (all cells: holds; the alternatives' cells: does not hold); "
                                    "depends on admission (default on these cells: does not hold; 0.99: holds)")
    assert not f.robust and not f.counts_as_holding and f.reference("lend_idle=False") is N
    # The same verdicts read against the finding's own (no on_cells) blame every choice that differs.
    g = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", e, under=tuple(zip(cells, (N, N, H, N))))
    assert g.depends_on() == ["default", "lend_idle", "scheduler"]
    # The cells agree: a choice that differs is named against the default, as before.
    f = on((H, H, N, H), extra=(("trace=40M", N),))
    assert f.depends_on() == ["admission", "trace"]
    assert f.sensitivity_text() == ("depends on admission (default: holds; 0.99: does not hold); "
                                    "depends on trace (default: holds; 40M: does not hold)")
    assert on((H, H, H, H)).robust and on((H, H, H, H)).counts_as_holding
    # Only the cells: every alternative agrees with the default there.
    f = on((N, N, N, N))
    assert f.depends_on() == ["the cells"] and summary_count([f]) == (0, 1)
    assert "they depend on the cells" in summary_line([f])
    # runner.attach fills on_cells with the named variants, in under's order.
    base = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", e)
    no = Finding("a", "x", Label.SUBSTANTIVE, above(), "s", mean_ci([-1.0, -1.1, -0.9]))
    got = runner.attach([base], {"default": [no], "lend_idle=False": [no], "trace=40M": [no]},
                        on_cells=["lend_idle=False", "default"])[0]
    assert got.on_cells == ("default", "lend_idle=False") and got.depends_on() == ["the cells", "trace"]
