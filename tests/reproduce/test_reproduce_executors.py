"""`reproduce tfd` passes the executor options to its sweeps (issue 17, item 2): with
``--shard I/N`` it runs exactly its share of every grid and stops before the report, which the
same command without ``--shard`` writes."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli


def test_reproduce_tfd_shard_runs_its_share_of_each_grid_and_no_report(tmp_path: Path):
    from qoelab.reproduce import tfd
    from qoelab.sweep import cells, shard_of

    out = tmp_path / "tfd"
    code, o, err = run_cli("reproduce", "tfd", "--quick", "--calibration", "headline", "--shard", "1/40", "-o", str(out))
    assert code == 0, err
    assert "shard 1/40 done" in o and not (out / "README.md").exists(), o
    g = tfd.QUICK
    axes = [("tfd.scenario", list(g.scenarios)), ("tfd.n", list(g.n)), ("tfd.k", list(g.k))]
    want = sorted(c.run_id for c in shard_of(cells(axes, 1), (1, 40)))
    cal = out / tfd.HEADLINE.folder(tfd.DEFAULT_PROFILE)
    got = sorted(p.parent.name for p in (cal / "sweep" / "runs").glob("*/done"))
    assert got == want and len(want) == 1
    for side in ("sensitivity", "held"):
        assert len(list((cal / side / "runs").glob("*/done"))) >= 1, side
