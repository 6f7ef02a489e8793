"""A setting of the choices that leaves some scenarios alone runs only the others: runs whose
scenario and seed equal an earlier setting's take over its outputs (``core.adopt_identical``),
and give the same rows as running them would."""

import json

from qoelab.experiment import core, runner
from qoelab.experiment.choices import Choice
from qoelab.experiment.core import Experiment
from qoelab.sweep import damage, timing
from toy import build, metrics  # noqa: F401  (the shared toy experiment)

CHOICES = (Choice("fast", "2Gbps", ("3Gbps",), "the toy's fast link"),
           Choice("slow", "950Mbps", ("900Mbps",), "the toy's slow link"))


def experiments(setting):
    cells = [{"rate": setting["slow"]}, {"rate": setting["fast"]}]
    return {"toy": Experiment("toy", cells, build, metrics, paired=("rate",), reps=2)}


def _run(out):
    sets = runner.sets(out, CHOICES, experiments, sensitivity=True)
    runner.execute(sets)
    return sets


def test_a_variant_runs_only_the_scenarios_it_changes(tmp_path):
    sets = _run(tmp_path / "a")
    default, fast, slow = sets
    assert (fast.name, slow.name) == ("fast=3Gbps", "slow=900Mbps")
    assert default.counts["toy"]["ran"] == 4 and default.counts["toy"]["adopted"] == 0
    # Each variant changes one of the two cells: its other cell's two runs are the default's.
    for s in (fast, slow):
        assert s.counts["toy"]["adopted"] == 2 and s.counts["toy"]["ran"] == 2 and s.counts["toy"]["skipped"] == 2
    kept = slow.folders["toy"] / "runs" / "cell=rate=2Gbps__rep=1"
    assert damage(kept) is None
    t = json.loads((kept / "timing.json").read_text())
    assert t["cpu_s"] == 0.0 and t["reused_from"].endswith("cell=rate=2Gbps__rep=1")
    assert timing(slow.folders["toy"])["reused"] == 2
    assert runner.cost(tmp_path / "a", sets)["reused"] == 4
    # The rows (metrics, seeds, output digests) and every file but the timing and its checksum
    # are those a run of each variant alone writes.
    for s in (fast, slow):
        alone = tmp_path / f"alone-{s.name}"
        core.run(Experiment("toy", s.experiments["toy"].cells, build, metrics, paired=("rate",), reps=2), alone)
        assert s.rows["toy"] == core.rows(s.experiments["toy"], alone)
        for run in sorted((alone / "runs").iterdir()):
            mine = s.folders["toy"] / "runs" / run.name
            names = sorted(f.name for f in run.iterdir() if f.name not in ("timing.json", "done"))
            assert names == sorted(f.name for f in mine.iterdir() if f.name not in ("timing.json", "done"))
            assert all((run / n).read_bytes() == (mine / n).read_bytes() for n in names), run.name
    # A resume takes over nothing more and runs nothing.
    again = _run(tmp_path / "a")
    assert all(s.counts["toy"]["ran"] == 0 and s.counts["toy"]["adopted"] == 0 for s in again)


def test_a_changed_scenario_or_seed_is_never_taken_over(tmp_path):
    exp = experiments({"slow": "950Mbps", "fast": "2Gbps"})["toy"]
    keys = core.run_keys(exp, tmp_path)
    assert len(set(keys.values())) == 4  # two cells × two repetitions (two seeds)
    other = Experiment("toy2", exp.cells, build, metrics, paired=("rate",), reps=2)  # other name, other seeds
    assert not set(keys.values()) & set(core.run_keys(other, tmp_path).values())
    # A damaged donor is not taken over: the run is computed instead.
    core.run(exp, tmp_path / "d")
    donors = {k: d for d, k in core.run_keys(exp, tmp_path / "d").items()}
    victim = tmp_path / "d" / "runs" / "cell=rate=2Gbps__rep=0" / "flows.parquet"
    victim.write_bytes(victim.read_bytes()[:-3])
    assert core.adopt_identical(exp, tmp_path / "e", core.run_keys(exp, tmp_path / "e"), donors) == 3
    assert not (tmp_path / "e" / "runs" / "cell=rate=2Gbps__rep=0").exists()


def test_only_a_smaller_grid_with_the_default_on_it_compares_variants_there(tmp_path):
    """Variants on a smaller grid beside the default there (TFD) are marked as such, so their
    findings are compared with that default; variants on the cells the findings use, without the
    default there (SQF, MPTCP), and variants on the default's own grid are not."""
    def fewer(setting):
        return {"toy": Experiment("toy", [{"rate": setting["slow"]}], build, metrics, paired=("rate",), reps=2)}

    on = runner.sets(tmp_path, CHOICES, experiments, sensitivity=True, variant_experiments=fewer)
    assert [s.name for s in on] == ["", "default", "fast=3Gbps", "slow=900Mbps"]
    assert [s.on_variant_cells for s in on] == [False, True, True, True]
    off = runner.sets(tmp_path, CHOICES, experiments, sensitivity=True, variant_experiments=fewer,
                      default_on_variant_grid=False)
    assert [s.name for s in off] == ["", "fast=3Gbps", "slow=900Mbps"] and not any(s.on_variant_cells for s in off)
    assert not any(s.on_variant_cells for s in runner.sets(tmp_path, CHOICES, experiments, sensitivity=True))
