"""`reproduce tfd` passes the executor options to its sweeps (issue 17, item 2): with
``--shard I/N`` it runs exactly its share of the grid and stops before the report, which the
same command without ``--shard`` writes."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli


def test_reproduce_tfd_shard_runs_its_share_of_each_grid_and_no_report(tmp_path: Path):
    from qoelab.executors import shard_of
    from qoelab.reproduce import tfd

    out = tmp_path / "tfd"
    code, o, err = run_cli("reproduce", "tfd", "--quick", "--calibration", "headline", "--shard", "1/40", "-o", str(out))
    assert code == 0, err
    assert "shard 1/40 done" in o and not (out / "README.md").exists(), o
    # The quick grid has one repetition: its folder sweep/rep0 holds the shard's share of the cells.
    exp = tfd.experiments(tfd.HEADLINE, tfd.DEFAULT_PROFILE, tfd.QUICK, 1, Path(), 0, True)["sweep"]
    assert len(exp.cells) == 36
    ids = [exp.id_of(c) for c in exp.cells]
    want = sorted(f"cell={i}__rep=0" for i in shard_of(ids, (1, 40)))
    cal = out / tfd.HEADLINE.folder(tfd.DEFAULT_PROFILE)
    got = sorted(p.parent.name for p in (cal / "sweep" / "rep0" / "runs").glob("*/done"))
    assert got == want and len(want) == 1
