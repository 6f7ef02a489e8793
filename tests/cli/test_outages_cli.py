"""Outages (``[[outages]]``, docs/models/outages.md) from a scenario file: a good one runs and
reports its schedule; a bad one is one line naming the file and the key path, exit code 2, and
no result folder."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import run_cli

SCEN = """
name = "outage-cli"
[sim]
duration = "4s"
seed = 3
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"
[[flows]]
name = "t"
src = "A"
dst = "B"
transport = { kind = "tcp", profile = "freebsd" }
app = { kind = "bulk" }
[[outages]]
links = ["A->B"]
at = "1s"
duration = "1s"
"""


def test_outage_runs_and_reports_its_schedule(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN)
    code, _, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"), "--no-plot")
    assert code == 0, err
    o = pq.read_table(tmp_path / "r" / "outages.parquet").to_pylist()
    assert o == [{"link": "A->B", "start_ns": 1_000_000_000, "end_ns": 2_000_000_000}]
    links = pq.read_table(tmp_path / "r" / "links.parquet").to_pylist()
    down = {r["link"]: r["drop_down_pkts"] for r in links}
    assert down["A->B"] > 0 and down["B->A"] == 0


@pytest.mark.parametrize(
    "mutate, expect",
    [
        (lambda s: s.replace('links = ["A->B"]', 'links = ["A->C"]'), 'outages[0].links[0]: unknown link direction "A->C"'),
        (lambda s: s.replace('duration = "1s"', 'duration = "0s"'), "outages[0].duration: must be positive"),
        (lambda s: s.replace('at = "1s"', 'at = "later"'), "outages[0].at: expected a time"),
        (lambda s: s.replace('at = "1s"', 'count = 2\nmin_gap = "2s"\nmax_gap = "1s"'), "outages[0].max_gap:"),
        (lambda s: s.replace('at = "1s"', 'at = "1s"\ncount = 3'), "outages[0].count: belongs to the random form"),
        (lambda s: s.replace('at = "1s"', 'gap = "1s"'), "outages[0].gap: unknown field `gap`"),
        # A handover's gap is an outage: its errors come the same way (docs/models/handovers.md).
        (lambda s: s.replace("[[outages]]", "[[handovers]]").replace('duration = "1s"', 'rate = "fast"'),
         "handovers[0].rate: "),
        (lambda s: s.replace("[[outages]]", "[[handovers]]").replace('duration = "1s"', 'gap = "1s"')
         .replace('links = ["A->B"]', 'links = ["A->X"]'), 'handovers[0].links[0]: unknown link direction "A->X"'),
    ],
)
def test_bad_outage_one_line_exit_2(tmp_path: Path, mutate, expect):
    scen = tmp_path / "s.toml"
    scen.write_text(mutate(SCEN))
    code, out, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"))
    assert code == 2, (out, err)
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert str(scen) in lines[0] and expect in lines[0], lines[0]
    assert "Traceback" not in err and "panicked" not in err
    assert not (tmp_path / "r").exists()
