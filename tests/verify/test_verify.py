"""`qoelab verify` itself: verdict logic, a deliberately wrong model caught, the CLI (errors,
exit codes, JSON) and the `--quick` suite as CI runs it."""

import dataclasses
import doctest
import json
import math

import pytest

from conftest import run_cli
from qoelab.verify import FAIL, LIMIT, PASS, SUITE, Tolerance, judge, run_suite
from qoelab.verify import closed_forms as cf
from qoelab.verify import suite as S

#: Rows of `verify --quick` that fail today, by id. The spurious-retransmission row passes since
#: the `linux` TCP profile (Linux RTO rule, re-armed on retransmission). The ns-3 rows pass
#: since the `ns3` profile follows ns-3.44's ssthresh, PRR, HyStart and ACK counting (dumbbell)
#: and its count of bytes in flight, which keeps SACKed retransmissions (tfd-1g UDP loss, 30 %
#: above ns-3 before; docs/validation.md). When a row is fixed, or any other row
#: starts failing, this set no longer matches and the test below fails, so the list (and
#: docs/validation.md) must be updated with the new table.
#: The RTT-unfairness rows randomise the senders by one bottleneck service time (`overhead`,
#: Floyd & Jacobson 1992 §4), which removes the drop-tail phase bias, and take the exponent of an
#: 8-seed ensemble; the full table's NewReno 20/40 ms row fails (docs/validation.md).
# LIA and BALIA counting bytes (RFC 6356 §3) sit at the bound of 1.1 × one NewReno flow (median of
# 10 seeds): 1.10 and 1.11 (FAIL) before the linux profile took Linux's `tcp_is_cwnd_limited`
# (branch ss34), 1.09 and 1.08 (pass) after, which re-drew the runs; docs/validation.md,
# `mptcp_goal2`. They crossed it again with Linux 6.18's receive-buffer autotuning (2026-11-28):
# 1.18 and 1.13, per seed 1.04–1.30; with autotuning off on both ends 1.10, off on either one
# alone 1.18–1.21: the receiver's ACK pattern (quick ACKs while its window grows), not a window
# that binds, re-draws these drop-tail runs. With the receiver's `quick |= 1` and quick-ACK
# re-entry after a long gap (Linux `tcp_grow_window`, `tcp_event_data_recv`; 2026-11-28, later)
# both pass again (docs/validation.md, `mptcp_goal2`). With the linux PRR rule as Linux's
# `tcp_cwnd_reduction` (65ff207, 2026-11-29) they cross it again: 1.15 and 1.13; the NewReno flow
# takes 4.44 Mbit/s against 4.67 under RFC 6937's rule, and the median moves over 1.05-1.20 as the
# TCP's and the subflows' rules are varied (docs/validation.md, `mptcp_goal2`). With the linux
# profile's SACK compression BALIA passed (1.08), and with its GSO buffers it failed again (1.13;
# LIA 1.22). `cubic_linux` at 2 % was here from the PRR change until the CUBIC rows took the mean
# RTT sample instead of the end-of-run SRTT (2026-11-29; docs/validation.md, `cubic_linux`).
# With the linux profile's PSH, the receiver's PUSHED rule and Reno in whole segments (e5a967c,
# 2026-11-29) every coupled ratio falls below 1 (LIA 0.90, BALIA 0.90 counting bytes): the
# competing NewReno flow is the stronger side now, and nothing of the quick suite fails.
KNOWN_FAILING_QUICK: set[str] = set()


def test_docstring_runs():
    import qoelab.verify

    res = doctest.testmod(qoelab.verify)
    assert res.attempted > 0 and res.failed == 0


def test_tolerance_bands_and_descriptions():
    t = Tolerance(0.1, 0.3)
    assert t.band(10.0) == pytest.approx((9.0, 13.0))
    assert t.accepts(9.0, 10.0) and t.accepts(13.0, 10.0) and not t.accepts(8.99, 10.0) and not t.accepts(13.01, 10.0)
    assert t.describe() == "−10 % … +30 %"
    assert not t.accepts(math.nan, 10.0)
    r = Tolerance(0.25, 0.25, relative=False)
    assert r.accepts(0.75, (1.0, 2.0)) and r.accepts(2.25, (1.0, 2.0)) and not r.accepts(2.3, (1.0, 2.0))
    assert r.describe() == "±0.25"
    at_most = Tolerance(math.inf, 0.0, relative=False)
    assert at_most.accepts(-5.0, 0.02) and at_most.accepts(0.02, 0.02) and not at_most.accepts(0.0201, 0.02)
    assert at_most.describe() == "at most"


def test_a_limit_explains_only_what_it_covers():
    # Padhye at RTT 20 ms, p = 2 %: the timeout term is ≥ 25 % of eq. (30), so the limit applies.
    params = {"p": 0.02, "rtt_ms": 20}
    assert cf.padhye_timeout_share(0.02, 0.02, 1.0) >= 0.25
    within = judge(S.PADHYE, params, {"value": 295.0, "srtt_s": 0.02})
    assert within.verdict == LIMIT and "timeout term" in within.reason
    # Above the timeout-free term (+10 %): the limit does not explain it.
    assert judge(S.PADHYE, params, {"value": 1.2 * cf.padhye_td_only(0.02, 0.02), "srtt_s": 0.02}).verdict == FAIL
    # Far below eq. (30): not explained either.
    assert judge(S.PADHYE, params, {"value": 60.0, "srtt_s": 0.02}).verdict == FAIL
    # RTT 300 ms, p = 0.5 %: no timeouts to speak of, so no limit: 30 % off is a FAIL.
    far = {"p": 0.005, "rtt_ms": 300}
    ref = cf.padhye_full(0.005, 0.3, 1.0, 1.0, S.WMAX)
    assert judge(S.PADHYE, far, {"value": 1.3 * ref, "srtt_s": 0.3}).verdict == FAIL
    assert judge(S.PADHYE, far, {"value": 1.2 * ref, "srtt_s": 0.3}).verdict == PASS


def test_a_wrong_measured_function_fails():
    # A queue that serves at the wrong load (off by 0.05) must not pass M/D/1.
    wrong = dataclasses.replace(S.MD1, measure=lambda p: S.measure_md1({"rho": p["rho"] + 0.05}))
    assert [r.verdict for r in run_suite([wrong], quick=True)] == [FAIL, FAIL]
    # A Gilbert–Elliott measurement with p and r swapped must not pass the loss rate.
    swapped = dataclasses.replace(S.GE_RATE, measure=lambda p: S.measure_ge_rate({**p, "p": p["r"], "r": p["p"]}))
    assert all(r.verdict == FAIL for r in run_suite([swapped], quick=True))


def test_idle_restart_fails_without_the_restart():
    # The same web flow with slow start after idle off keeps its window across idle periods:
    # the rows must fail (the check can fail).
    def without(p):
        orig = S._with_profile
        try:
            S._with_profile = lambda tr, prof: {**orig(tr, prof), "slow_start_after_idle": False}
            return S.measure_idle_restart(p)
        finally:
            S._with_profile = orig

    wrong = dataclasses.replace(S.IDLE_RESTART, measure=without)
    rows = run_suite([wrong], quick=True)
    assert [r.verdict for r in rows] == [FAIL] and rows[0].measured < 0.5


def test_grids_are_well_formed():
    names = [v.name for v in SUITE]
    assert len(names) == len(set(names))
    for v in SUITE:
        assert v.quick and v.grid and v.citation and v.tolerance.why, v.name
        for p in v.quick:
            assert p in list(v.grid), f"{v.name}: quick point {p} is not in the full grid"
    # The issue asks for RTTs of 150 ms and more in the Padhye grids, loss rates 0.5–5 %.
    rtts = {p["rtt_ms"] for p in S.PADHYE.grid}
    assert max(rtts) >= 300 and any(r >= 150 for r in rtts) and min(rtts) <= 20
    assert {p["p"] for p in S.PADHYE.grid} >= {0.005, 0.05}
    assert {p["rho"] for p in S.MD1.grid} >= {0.3, 0.9}
    regions = {cf.cubic_response(p["p"], p["rtt_ms"] / 1e3)[1] for p in S.CUBIC_RESPONSE.quick}
    assert regions == {"cubic", "reno-friendly"}


def test_ns3_figures_match_the_anchor_file(root):
    # The stored figures are the anchor's, where the anchor is beside the repository.
    data = S.ns3_anchor()
    src = root.parent / "shared" / "anchors" / "ns3" / "results" / "python.jsonl"
    if not src.exists():
        pytest.skip("ns-3 anchor not beside the repository")
    runs = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    for key, d in data["scenarios"].items():
        mine = [r for r in runs if r["scenario"] == d["ns3_name"]]
        assert mine, key
        for m in ("tcp_goodput_mbps", "udp_loss", "udp_tx_pkts", "udp_rx_pkts"):
            assert {r[m] for r in mine} == {d[m]}, (key, m)


def test_bad_arguments_exit_2_with_one_line(tmp_path):
    code, out, err = run_cli("verify", "--only", "padhye", "nosuch")
    assert code == 2 and err.count("\n") == 1 and "'nosuch'" in err and "padhye" in err
    code, out, err = run_cli("verify", "-j", "-1")
    assert code == 2 and err.count("\n") == 1
    code, out, err = run_cli("verify", "--json", str(tmp_path / "missing" / "v.json"))
    assert code == 2 and err.count("\n") == 1 and "does not exist" in err
    code, out, err = run_cli("verify", "--quick", "--bogus")
    assert code == 2 and err.count("\n") == 1


def test_exit_0_when_nothing_fails(tmp_path):
    code, out, err = run_cli("verify", "--quick", "--only", "md1", "ge_loss_rate", "--json", str(tmp_path / "v.json"))
    assert code == 0, err
    rows = json.loads((tmp_path / "v.json").read_text())["rows"]
    assert [r["validation"] for r in rows] == ["md1", "md1", "ge_loss_rate", "ge_loss_rate"]
    assert all(r["verdict"] == "pass" for r in rows)
    assert "md1: Poisson arrivals" in out and "4 rows: 4 pass" in out


def test_quick_suite_as_ci_runs_it(tmp_path):
    """Every row of `verify --quick` is pass or known limit, except exactly the known failures."""
    code, out, err = run_cli("verify", "--quick", "-j", "2", "--json", str(tmp_path / "q.json"))
    doc = json.loads((tmp_path / "q.json").read_text())
    rows = doc["rows"]
    assert {r["validation"] for r in rows} == {v.name for v in SUITE}
    assert len(rows) == sum(len(v.quick) for v in SUITE)
    failing = {r["id"] for r in rows if r["verdict"] == "FAIL"}
    assert failing == KNOWN_FAILING_QUICK, f"failing now: {sorted(failing)}"
    assert {r["verdict"] for r in rows} <= {"pass", "known limit", "FAIL"}
    for r in rows:
        if r["verdict"] == "known limit":
            assert r["reason"], r["id"]
    # Exit status 1 exactly when a row fails, and the failures are listed on stdout.
    assert code == (1 if failing else 0)
    for i in failing:
        assert f"FAIL {i}" in out


def test_deviation_column():
    from qoelab.verify.core import deviation

    assert deviation(112.0, 100.0, True) == "+12.0 %"
    assert deviation(0.95, 1.0, False) == "-0.05"
    assert deviation(1.5, (1.0, 2.0), False) == "in"
    assert deviation(2.2, (1.0, 2.0), False) == "+0.2"
    assert deviation(0.5, (1.0, 2.0), True) == "-50.0 %"


def test_docs_table_covers_the_full_grid(root):
    """docs/validation.md holds the full table: one row per point of every validation's grid, with
    the tolerance the suite uses (so a changed grid or tolerance means a re-run table)."""
    from qoelab.verify.core import Row  # noqa: F401  (labels come from the validations themselves)

    text = (root / "docs" / "validation.md").read_text()
    for v in SUITE:
        assert f"**{v.name}**: {v.title}" in text, v.name
        section = text.split(f"**{v.name}**: {v.title}", 1)[1].split("\n\n**", 1)[0]
        for p in v.grid:
            assert f"| {v.describe(p)} |" in section, (v.name, p)
        assert f"| {v.tolerance.describe()} |" in section, v.name


def test_rtt_unfairness_takes_the_exponent_of_the_seed_ensemble(monkeypatch):
    """The row's value is the exponent of the mean goodputs against the mean RTTs over
    RTT_SEEDS (one run per seed), not any one seed's, nor the mean of the per-seed exponents."""
    seen: list[int] = []

    def fake(cc, base_ms, overhead, seed=4):
        assert overhead and cc == "newreno" and base_ms == [20, 40]
        seen.append(seed)
        x = [6e6, 2e6] if seed % 2 else [3e6, 3e6]
        rtt = [0.1 + 0.001 * seed, 0.12 + 0.001 * seed]
        return {"goodput_bps": x, "rtt_s": rtt, "mean_queue_ms": 80.0 + seed,
                "exponent": cf.rtt_exponent(x[0], x[1], rtt[0], rtt[1])}

    monkeypatch.setattr(S, "rtt_unfairness_run", fake)
    m = S.measure_rtt_exponent({"cc": "newreno", "rtt_ms": (20, 40)})
    assert seen == list(S.RTT_SEEDS) and len(seen) == 8
    runs = [fake("newreno", [20, 40], True, s) for s in S.RTT_SEEDS]
    seen.clear()
    mean = lambda k, i: sum(r[k][i] for r in runs) / len(runs)  # noqa: E731
    assert m["value"] == pytest.approx(cf.rtt_exponent(mean("goodput_bps", 0), mean("goodput_bps", 1),
                                                       mean("rtt_s", 0), mean("rtt_s", 1)))
    per_seed = [r["exponent"] for r in runs]
    assert m["value"] != pytest.approx(sum(per_seed) / len(per_seed))
    assert (m["per_seed_min"], m["per_seed_max"]) == (min(per_seed), max(per_seed))
