"""Examples as tests: every bundled scenario builds and runs in short mode (ns-3's
examples-to-run). Each run passes the core's end-of-run conservation check
(sent = received + dropped + in flight, per flow and direction)."""

from pathlib import Path

import pytest

from conftest import ROOT
from qoelab import Scenario

SHORT_S = 2.0


def _emulation(p: Path) -> bool:
    """A scenario with real nodes runs under `qoelab emulate` (tests/emulate), not `run`."""
    import tomllib

    return any(n.get("real") for n in tomllib.loads(p.read_text()).get("nodes", []))


SCENARIOS = sorted(p for p in (ROOT / "scenarios").rglob("*.toml") if not _emulation(p))


def _seconds(d: str) -> float:
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
    for u in sorted(units, key=len, reverse=True):
        if d.endswith(u):
            return float(d[: -len(u)]) * units[u]
    raise ValueError(d)


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(ROOT / "scenarios")) for p in SCENARIOS])
def test_scenario_runs_short(path: Path):
    sc = Scenario.load(path)
    if _seconds(sc.get("sim.duration")) > SHORT_S:
        sc.set("sim.duration", f"{SHORT_S}s")
    sc.data.get("output", {}).pop("pcap", None)
    res = sc.run()
    f = res.tables["flows"]
    assert f.num_rows >= 1
    sent = sum(f.column("sent_pkts").to_pylist())
    assert sent > 0, "a scenario whose flows send nothing in its first seconds is probably broken"
    # docs/outputs.md: a transport's or application's counter column is present only when some
    # flow of the run has it (null on the others' rows); `delivered_bytes` is in every run.
    import pyarrow.compute as pc

    from qoelab.outputs import COUNTERS

    assert "delivered_bytes" in f.column_names
    for table, counters in COUNTERS.items():
        if table in res.tables:
            t = res.tables[table]
            for c in set(t.column_names) & counters - {"delivered_bytes"}:
                assert pc.count(t.column(c)).as_py() > 0, f"{table}.{c} is present although no row has it"


def test_bundled_scenarios_found():
    names = {p.relative_to(ROOT / "scenarios").as_posix() for p in SCENARIOS}
    assert {"demo/scenario.toml", "bench/dumbbell-10m.toml", "bench/tfd-1g.toml"} <= names
