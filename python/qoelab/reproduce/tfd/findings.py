"""The TFD paper's findings: the statistics each is tested on, from one repetition's cells
(:func:`rep_statistics`), the findings themselves (:func:`findings`, with the layer's rules and
the paper's own value of each statistic as its size), the findings of a committed folder whose
runs are not kept (:func:`findings_from_tables`), and the rule that picks the headline
calibration (:func:`headline_rule`)."""

from __future__ import annotations

import csv
import math
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable

from qoelab.experiment import Estimate, Finding, Label, Part, above, below, core, mean_ci, paired_ci, within
from qoelab.reproduce.tfd.build import FULL, NS2_BUFFER, Grid, paper_tables


def _keys(grid: Grid) -> list[tuple[str, int, int]]:
    return [(sc, k, n) for sc in grid.scenarios for k in grid.k for n in grid.n]


def summary(grid: Grid, ours: dict) -> dict[str, dict[str, float]]:
    """Per scenario: mean PER over all cells and over K > 0, mean utilisation over K > 0, share
    of K > 0 cells with PER < 0.005 % (zero when rounded to two decimals), and the lowest
    video throughput as a fraction of the required rate: of what the videos sent in the same
    cell (ours), or of the K = 0 throughput of the same N (the paper's tables have no more)."""
    s: dict[str, dict[str, float]] = {}
    for sc in grid.scenarios:
        cells = [(k, n) for k in grid.k for n in grid.n if (sc, k, n) in ours]
        loaded = [(k, n) for k, n in cells if k > 0]
        req = {n: ours[(sc, 0, n)]["video_mbps"] for n in grid.n if (sc, 0, n) in ours}

        def fraction(k: int, n: int) -> float:
            v = ours[(sc, k, n)]
            if v.get("video_offered_mbps"):  # ours: delivered / offered in the same cell
                return v["video_mbps"] / v["video_offered_mbps"]
            return v["video_mbps"] / req[n] if req.get(n) else float("nan")  # the paper's: / its K = 0 rate

        def mean(xs: list[float]) -> float:
            return sum(xs) / len(xs) if xs else float("nan")

        s[sc] = {
            # 1 when every cell of the grid has a result: only then are means comparable
            # between scenarios (a grid stopped part-way holds different cells for each).
            "complete": float(len(cells) == len(grid.k) * len(grid.n)),
            "per_mean": mean([ours[(sc, k, n)]["per_pct"] for k, n in cells]),
            "per_mean_loaded": mean([ours[(sc, k, n)]["per_pct"] for k, n in loaded]),
            "util_mean_loaded": mean([ours[(sc, k, n)]["utilisation_pct"] for k, n in loaded]),
            "zero_per_share": mean([float(ours[(sc, k, n)]["per_pct"] < 0.005) for k, n in loaded]),
            "min_video_fraction": min((x for k, n in loaded if not math.isnan(x := fraction(k, n))), default=float("nan")),
        }
    return s


def complete_reps(grid: Grid, by_rep: dict[int, dict]) -> list[dict]:
    """The repetitions that hold every cell of the grid, each as its own cells' metrics."""
    keys = _keys(grid)
    return [by_rep[r] for r in sorted(by_rep) if all(k in by_rep[r] for k in keys)]


def rep_statistics(grid: Grid, cells: dict) -> dict[str, float]:
    """The numbers the findings test, from one repetition's cells (or from per-cell means):
    ``k0_max_per`` (largest PER over the K = 0 cells present), and for each scenario whose grid
    is complete ``per_<sc>`` (mean PER), ``util_<sc>`` (mean utilisation over K > 0),
    ``zero_<sc>`` (share of K > 0 cells with PER < 0.005 %), ``minfrac_<sc>`` (lowest video
    delivered / required over K > 0), and ``s1_slope`` (least-squares slope of s1's PER over N
    at the largest K, percentage points per stream). A statistic whose cells are missing is
    absent, so a finding that needs it is undecided rather than decided on different cells."""
    s = summary(grid, cells)
    out: dict[str, float] = {}
    k0 = [cells[(sc, 0, n)]["per_pct"] for sc in grid.scenarios for n in grid.n if (sc, 0, n) in cells]
    if k0:
        out["k0_max_per"] = max(k0)
    for sc in grid.scenarios:
        if s[sc]["complete"]:
            out[f"per_{sc}"] = s[sc]["per_mean"]
            out[f"util_{sc}"] = s[sc]["util_mean_loaded"]
            out[f"zero_{sc}"] = s[sc]["zero_per_share"]
            out[f"minfrac_{sc}"] = s[sc]["min_video_fraction"]
    kmax = max(grid.k)
    pts = [(n, cells[("s1", kmax, n)]["per_pct"]) for n in grid.n if ("s1", kmax, n) in cells]
    if kmax > 0 and len(pts) == len(grid.n) >= 3:
        mn = sum(n for n, _ in pts) / len(pts)
        mp = sum(p for _, p in pts) / len(pts)
        out["s1_slope"] = sum((n - mn) * (p - mp) for n, p in pts) / sum((n - mn) ** 2 for n, _ in pts)
    return out


#: Why each label (the reasons are in the report and in docs/models/tfd-router.md, "Findings
#: and their labels").
_WHY = {
    "k0_zero": "with no competing traffic it tests the setup, not a mechanism: loss here means the buffers do not "
               "absorb the videos' own bursts, against the paper's premise of a well-dimensioned network (the headline "
               "rule uses it)",
    "per_s4_below_s3": "our TFD router reserves what the encoder announces for the next 300 ms, plus 10 %, and queues a TFD "
                       "flow up to its announcement, so s4 loses only where admission control refuses a reservation; the "
                       "claim reduces to s3 losing anything",
    "s4_mostly_zero": "as above: s4's PER is zero unless admission control refuses an announcement",
}


def findings(grid: Grid, ours: dict, reps: list[dict] | None = None, recorded: dict[str, Estimate] | None = None,
             *, independent: bool = True, group: str = "", stats: list[dict[str, float]] | None = None) -> list[Finding]:
    """The paper's findings, each a :class:`qoelab.experiment.Finding` with its label, the
    statistic that tests it (over the complete repetitions ``reps``: differences between
    scenarios paired, since repetition r runs every scenario with the same seed), the rule and,
    as its size, the same statistic on the paper's own tables. With fewer than two repetitions
    the grid's values are the one sample (inconclusive by the layer's rules). A statistic whose
    cells are missing makes its finding untestable. ``recorded`` gives estimates by finding key
    that replace the computed ones (the paired intervals a committed report recorded while its
    runs existed, :func:`recorded_intervals`); ``independent`` False marks repetitions whose
    runs gave identical outputs. ``stats`` gives the repetitions' statistics themselves (as
    :func:`rep_statistics` computed them) in place of ``reps``: :func:`findings_from_repetitions`."""
    if stats is not None:
        samples = stats
    else:
        samples = [rep_statistics(grid, r) for r in reps] if reps and len(reps) >= 2 else [rep_statistics(grid, ours)]
    pst = rep_statistics(grid, {key: v for key, v in paper_tables().items() if key[1] in grid.k and key[2] in grid.n})

    def est(f: Callable[[dict[str, float]], float], key: str = "", minus: str | None = None) -> Estimate | None:
        """The statistic ``f`` over the samples (``mean_ci``), or with ``minus`` the paired
        difference ``f − st[minus]`` (``paired_ci``); None when a sample lacks it or it is NaN."""
        if recorded and key in recorded:
            return recorded[key]
        try:
            xs = [f(st) for st in samples]
            e = (paired_ci(xs, [st[minus] for st in samples], independent=independent) if minus
                 else mean_ci(xs, independent=independent))
        except KeyError:
            return None
        return None if math.isnan(e.mean) else e

    def size(f: Callable[[dict[str, float]], float], minus: str | None = None) -> float | None:
        try:
            v = f(pst) - (pst[minus] if minus else 0.0)
        except KeyError:
            return None
        return None if math.isnan(v) else v

    out: list[Finding] = []

    def add(key: str, claim: str, label: Label, rule, statistic: str, e: Estimate | None, **kw: Any) -> None:
        out.append(Finding(key, claim, label, rule, statistic, e, _WHY.get(key, ""), group=group, **kw))

    add("k0_zero", "K = 0 ⇒ PER = 0 in every scenario", Label.TRIVIAL, below(0.005),
        "largest PER over the K = 0 cells, % (zero: below 0.005 %)", est(lambda st: st["k0_max_per"]))
    for x, y, claim, label in (("s1", "s2", "mean PER of s2 (RSVP, 150 %) below s1 (best effort)", Label.SUBSTANTIVE),
                               ("s2", "s3", "mean PER of s3 (RSVP, peak rate) below s2", Label.SUBSTANTIVE),
                               ("s3", "s4", "mean PER of s4 (TFD) below s3", Label.BY_CONSTRUCTION)):
        add(f"per_{y}_below_{x}", claim, label, above(size=size(itemgetter(f"per_{x}"), f"per_{y}")),
            f"PER({x}) − PER({y}), mean over the grid, points",
            est(itemgetter(f"per_{x}"), f"per_{y}_below_{x}", minus=f"per_{y}"))
    add("s4_mostly_zero", "PER(s4) = 0 (below 0.005 %) in most cells with K > 0", Label.BY_CONSTRUCTION,
        above(0.5, size=size(itemgetter("zero_s4"))), "share of K > 0 cells with PER(s4) < 0.005 %",
        est(itemgetter("zero_s4")))
    for y in ("s2", "s3"):
        add(f"util_s4_above_{y}", f"mean link utilisation (K > 0) of s4 above {y}", Label.SUBSTANTIVE,
            above(size=size(itemgetter("util_s4"), f"util_{y}")),
            f"utilisation(s4) − utilisation({y}), mean over K > 0 cells, points",
            est(itemgetter("util_s4"), f"util_s4_above_{y}", minus=f"util_{y}"))
    add("util_s4_close_s1", "mean link utilisation (K > 0) of s4 within 2 points of s1", Label.SUBSTANTIVE, within(2.0),
        "utilisation(s4) − utilisation(s1), mean over K > 0 cells, points (must lie within ± 2)",
        est(itemgetter("util_s4"), minus="util_s1"))
    e4, e1 = est(lambda st: st["minfrac_s4"]), est(lambda st: 0.98 - st["minfrac_s1"])
    add("video_s4_98_s1_not", "s4 keeps every cell's video throughput ≥ 98 % of the required rate, s1 does not",
        Label.SUBSTANTIVE, above(), "0.98 − s1's lowest delivered / required fraction over K > 0 cells (and s4's lowest ≥ 0.98)",
        e1, parts=(Part("s4 ≥ 0.98", e4, above(0.98 - 1e-9)), Part("s1 < 0.98", e1, above(size=size(lambda st: 0.98 - st["minfrac_s1"])))))
    def slope(st: dict[str, float]) -> float:
        return -st["s1_slope"]

    add("s1_inverted", "s1 at the largest K: PER falls as N grows", Label.SUBSTANTIVE, above(size=size(slope)),
        "−(least-squares slope of PER(s1) over N at the largest K), points per stream", est(slope))
    return out


def recorded_intervals(readme: str) -> dict[str, Estimate]:
    """The paired differences a report of the earlier format recorded in its README ("| mean PER
    %: s4 − s3 | -0.000664 ± 0.000072 | …", over "the N complete repetitions"), as estimates of
    the findings that test them (PER(x) − PER(y) is the negative of "y below x"'s statistic)."""
    import re

    m = re.search(r"over the (\d+) complete repetitions", readme)
    if not m:
        return {}
    n = int(m.group(1))
    out: dict[str, Estimate] = {}
    for what, x, y, mean, hw in re.findall(r"\| mean (PER %|utilisation %, K>0): (s\d) − (s\d) \| ([-+][\d.]+) ± ([\d.]+) \|", readme):
        mean_f, hw_f = float(mean), float(hw)
        if what == "PER %":  # PER(x) − PER(y): x below y's statistic is PER(y) − PER(x)
            out[f"per_{x}_below_{y}"] = Estimate(-mean_f, hw_f, n)
        elif x == "s4":
            out[f"util_s4_above_{y}"] = Estimate(mean_f, hw_f, n)
    return out


def read_tables(folder: Path) -> dict[tuple[str, int, int], dict[str, float]]:
    """Our per-cell means from a report's ``table1.csv`` and ``table2.csv`` (a committed
    ``expected/`` folder holds no runs). The videos' offered rate is not in them, so the
    delivered / required fraction falls back to the K = 0 rate of the same N, as for the paper."""
    out: dict[tuple[str, int, int], dict[str, float]] = {}
    for name in ("table1.csv", "table2.csv"):
        with open(folder / name, newline="") as fh:
            for r in csv.DictReader(fh):
                key = (r["scenario"], int(r["K"]), int(r["N"]))
                out.setdefault(key, {}).update({c.removesuffix("_ours"): float(v) for c, v in r.items() if c.endswith("_ours")})
    return out


def findings_from_tables(folder: Path, grid: Grid = FULL) -> list[Finding]:
    """The findings of a committed report folder whose runs are not kept: from its per-cell means
    (one sample, so inconclusive by the layer's rules), with the paired intervals its README
    recorded where it has them (the folder's findings are recomputed from its committed
    tables: say so in its report)."""
    readme = folder / "README.md"
    recorded = recorded_intervals(readme.read_text()) if readme.exists() else {}
    return findings(grid, read_tables(folder), recorded=recorded)


def findings_from_repetitions(folder: Path, grid: Grid = FULL, group: str = "") -> list[Finding]:
    """The findings of a report folder whose runs are not kept, recomputed from the statistics
    of each complete repetition its ``repetitions.csv`` holds (:func:`rep_statistics`, written
    by the report for this purpose): the same paired intervals and verdicts as the report's,
    without the sensitivity (``sensitivity.csv`` holds that). A statistic a row lacks is absent,
    so a finding that needs it is untestable, as in the report. Identical rows mark repetitions
    that are not independent (their runs' outputs were identical): no interval is given over them."""
    path = folder / "repetitions.csv"
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"{path}: no repetitions")
    stats = [{k: float(v) for k, v in r.items() if k != "rep" and v != ""} for r in rows]
    return findings(grid, {}, stats=stats, group=group, independent=not core.identical(stats))


def _k0_rate_per_stream(grid: Grid, cells: dict) -> float:
    """Mean over N of the K = 0 video throughput per stream in s1, Mbit/s (the offered load, which
    the paper's Table II measures too)."""
    xs = [cells[("s1", 0, n)]["video_mbps"] / n for n in grid.n if ("s1", 0, n) in cells]
    return sum(xs) / len(xs) if xs else float("nan")


def headline_rule(grid: Grid, results: dict[str, dict[str, Any]]) -> tuple[str | None, list[str]]:
    """The calibration the data supports as the headline, and the steps that chose it. It uses
    only what the paper states about its setup, never its findings' numbers:

    1. the trace whose rate (its mean at IP level, what a stream offers) is nearest the
       paper's Table II at K = 0 per stream: the offered load, which no mechanism changes;
    2. among those, the buffer with which the setup comes closest to being well dimensioned
       as the paper's was, no loss at K = 0 (the paper: "experimentally determined"): the
       smallest largest-PER over the K = 0 cells (the ``k0_zero`` statistic);
    3. on a tie (e.g. both lossless), ns-2's default queue (the paper's emulator) over ours.
    """
    if not results:
        return None, []
    paper = {key: v for key, v in paper_tables().items() if key[1] in grid.k and key[2] in grid.n}
    p_rate = _k0_rate_per_stream(grid, paper)
    if math.isnan(p_rate):
        return None, ["the grid has no K = 0 cells of s1: no unloaded rate to compare the traces with"]
    gap = {key: abs(math.log(r["meta"]["trace_mean_bps"] / 1e6 / p_rate)) for key, r in results.items()}
    best_trace = min(gap.values())
    step1 = [key for key in results if gap[key] <= best_trace + 1e-9]
    steps = [f"trace rate nearest the paper's {p_rate:.1f} Mbit/s per stream: {', '.join(step1)}"]
    k0: dict[str, float] = {}
    for key in step1:
        e = {f.key: f for f in results[key]["findings"]}["k0_zero"].estimate
        k0[key] = e.mean if e is not None else math.inf
    least = min(k0.values())
    step2 = [key for key in step1 if k0[key] <= least + 1e-12]
    steps.append("largest PER at K = 0 " + ", ".join(f"{key} {k0[key]:.4f} %" for key in step1)
                 + f", least: {', '.join(step2)}")
    pick = next((key for key in step2 if key.endswith(NS2_BUFFER)), step2[0])
    if len(step2) > 1:
        steps.append(f"tie, ns-2's default queue preferred: {pick}")
    return pick, steps


