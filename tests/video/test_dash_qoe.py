"""The QoE table from the DASH player's probe rows agrees with the player's own summary."""

import math
from pathlib import Path

import pytest

from qoelab import Scenario
from qoelab.video.quality.dash_qoe import qoe_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("abr", ["throughput", "bba", "bola"])
def test_qoe_table_matches_the_flow_summary(abr: str) -> None:
    traces = ROOT / "data" / "traces"
    s = Scenario.from_dict(
        {
            "sim": {"duration": "200s", "seed": 3},
            "links": [{"a": "C", "b": "S", "rate": "12Mbps", "delay": "15ms", "queue": {"kind": "fifo", "limit": "200p"}}],
            "flows": [
                {
                    "name": "dash",
                    "src": "C",
                    "dst": "S",
                    "transport": {"kind": "tcp", "cc": "cubic"},
                    "app": {
                        "kind": "dash",
                        "mpd": str(traces / "dash_hevc_2s.mpd"),
                        "segments": str(traces / "dash_hevc.segments.csv"),
                        "abr": {"kind": abr},
                        "max_buffer": "12s",
                    },
                    "peer_app": {"kind": "http_server"},
                }
            ],
            "output": {"probes": ["app"]},
        }
    )
    r = s.run()
    q = qoe_table(r.probe_app).to_pylist()
    assert len(q) == 1
    row, flow = q[0], r.flow("dash")
    # The whole 180-s ladder in 2-s segments, played once within the 200-s run.
    assert row["segments"] == flow["dash_segments"] == 90
    for k in ["startup_first_byte_s", "startup_s", "stalls", "stall_s", "switches", "mean_rate_bps"]:
        assert math.isclose(row[k], flow[f"dash_{k}"], rel_tol=1e-9, abs_tol=1e-9), k
    # Start-up: the first byte comes before playback, which needs a whole segment.
    assert 0 < row["startup_first_byte_s"] < row["startup_s"]
    # Every policy starts on the lowest rung (throughput before any sample, BBA at R_min, BOLA
    # with an empty buffer), and 12 Mbit/s carries the 7.6 Mbit/s rung: at least one switch.
    assert row["switches"] >= 1
    assert 2.5e6 <= row["mean_bitrate_bps"] <= 25.5e6
