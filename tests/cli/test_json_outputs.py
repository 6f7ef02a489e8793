"""Every JSON file the CLI writes is strict JSON of native types (issue 22 item 6).

Python's ``json`` writes ``NaN``/``Infinity`` (not JSON) and fails on numpy scalars; a writer
that lets either through produces a file other tools reject, or crashes after the run. Each
command below writes its JSON into a temporary folder; every ``*.json`` file found there (and
every ``done`` marker of a sweep) must load with non-finite constants refused, and hold only
dicts, lists, strings, booleans, None, ints and finite floats.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qoelab.cli import main

SCENARIO = """
[sim]
duration = "1s"
seed = 3
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"
queue = { kind = "fifo", limit = "20p" }
[[flows]]
name = "tcp"
src = "A"
dst = "B"
transport = { kind = "tcp" }
app = { kind = "bulk" }
[[flows]]
name = "udp"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
"""


@pytest.fixture
def scen(tmp_path: Path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO)
    return p


def test_run_summary_json(scen: Path, tmp_path: Path, strict_json_tree) -> None:
    out = tmp_path / "run"
    assert main(["run", str(scen), "-o", str(out)]) == 0
    assert (out / "summary.json").exists()
    assert strict_json_tree(out) >= 1


def test_sweep_jsons(scen: Path, tmp_path: Path, strict_json_tree) -> None:
    out = tmp_path / "sweep"
    assert main(["sweep", str(scen), "--grid", "links[0].rate=5Mbps,10Mbps", "--reps", "2", "-o", str(out)]) == 0
    # sweep.json, and per run: summary.json, cell.json, timing.json and the done marker.
    assert strict_json_tree(out) >= 1 + 4 * 4


def test_bench_json(tmp_path: Path, strict_json_tree) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", "dumbbell-10m", "--reps", "1", "--json", str(out)]) == 0
    assert strict_json_tree(tmp_path) == 1


def test_verify_json(tmp_path: Path, strict_json_tree) -> None:
    out = tmp_path / "verify.json"
    rc = main(["verify", "--quick", "--only", "md1", "ge_loss_rate", "--json", str(out)])
    assert rc in (0, 1)  # 1 would mean a FAIL row; the JSON is written either way
    assert strict_json_tree(tmp_path) == 1
