"""A run that fails inside a sweep worker is reported as a one-line error naming the run.

The TFD grid once stopped after hours with ``BrokenProcessPool`` and no hint of the cause: a
seed-dependent scenario error raised in a worker could not be unpickled in the parent, which
``concurrent.futures`` treats as a dead worker.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from qoelab import _native
from qoelab.errors import QoelabError, ScenarioError
from qoelab.scenario import Scenario
from qoelab.sweep import is_done, run_sweep
from tests.conftest import one_link_udp

SCEN = one_link_udp("sweep-errors")


class FailsAtSeed5(Scenario):
    """Runs normally except with seed 5 (repetition 1), where it fails as a build whose random
    draws depend on the seed can (the up-front validation sees repetition 0 only)."""

    def copy(self) -> "FailsAtSeed5":
        return FailsAtSeed5(copy.deepcopy(self.data), self.source, self.base_dir)

    def run(self, *args, **kwargs):
        if int(self.data["sim"]["seed"]) == 5:
            raise ScenarioError(self.source, "flows[0].app.offset: beyond the end of the trace (test)")
        return super().run(*args, **kwargs)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failing_run_is_named_and_finished_runs_are_kept(tmp_path: Path, jobs: int):
    sc = FailsAtSeed5(copy.deepcopy(SCEN), "grid.toml")
    out = tmp_path / "sw"
    with pytest.raises(QoelabError) as e:
        run_sweep(sc, [("links[0].rate", ["5Mbps", "10Mbps"])], 2, out, jobs)
    msg = str(e.value)
    assert "rep=1" in msg and "grid.toml: flows[0].app.offset: beyond the end of the trace" in msg, msg
    assert "\n" not in msg
    runs = out / "runs"
    assert all(is_done(runs / d.name) for d in runs.iterdir() if "rep=0" in d.name)
    assert not any(is_done(runs / d.name) for d in runs.iterdir() if "rep=1" in d.name)


def test_scenario_errors_survive_pickling():
    e = pickle.loads(pickle.dumps(ScenarioError("f.toml", "links[0].rate: bad")))
    assert (type(e), e.source, e.message, str(e)) == (ScenarioError, "f.toml", "links[0].rate: bad", "f.toml: links[0].rate: bad")
    n = pickle.loads(pickle.dumps(_native.ScenarioError("links[0].rate: bad")))
    assert type(n) is _native.ScenarioError and str(n) == "links[0].rate: bad"
