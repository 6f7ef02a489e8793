"""Video over TCP (docs/models/video.md, "Video over TCP"): the `messages` table from the API
and the CLI, with one row per frame of the bundled trace in order and the trace's frame sizes;
a UDP video has none; a datagram-only key over TCP is one line naming the file and key path,
exit code 2, and no result folder."""

from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from qoelab.paths import root
from qoelab.scenario import Scenario

TRACE = root() / "data" / "traces" / "cif_bbb_qp26.trace.csv"

SCEN = f"""
name = "video-tcp"
[sim]
duration = "5s"
seed = 3
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "10ms"
[[flows]]
name = "v"
src = "A"
dst = "B"
transport = {{ kind = "tcp" }}
app = {{ kind = "video", trace = "{TRACE}" }}
packet_log = true
"""


def _frames() -> tuple[np.ndarray, np.ndarray]:
    """(bytes, time in ns) of each frame of the trace, in decode order."""
    t = pacsv.read_csv(TRACE)
    frame = t["frame"].to_numpy()
    size = t["size_bytes"].to_numpy().astype(np.int64)
    ts = t["ts_ms"].to_numpy()
    n = int(frame.max()) + 1
    first = np.searchsorted(frame, np.arange(n))
    return np.bincount(frame, weights=size, minlength=n).astype(np.int64), np.round(ts[first] * 1e6).astype(np.int64)


def _run(tmp_path: Path, text: str):
    scen = tmp_path / "api.toml"
    scen.write_text(text)
    return Scenario.load(scen).run()


def test_every_frame_written_in_the_run_is_delivered_in_order_with_its_bytes(tmp_path: Path):
    res = _run(tmp_path, SCEN)
    m = res.messages
    assert m.column_names == ["flow", "end", "tag", "bytes", "written_ns", "delivered_ns"]
    sizes, times = _frames()
    # Frames written in the run (5 s) are delivered: the 10 Mbit/s path carries the clip easily.
    due = int((times < 4_500_000_000).sum())
    tags = m["tag"].to_numpy()
    assert m.num_rows >= due
    assert np.array_equal(tags, np.arange(m.num_rows)), "one message per frame, in decode order"
    assert np.array_equal(m["bytes"].to_numpy(), sizes[: m.num_rows])
    assert np.array_equal(m["written_ns"].to_numpy(), times[: m.num_rows])
    # Never sooner than the path's one-way delay (10 ms) plus the frame's bits at 10 Mbit/s.
    floor = 10_000_000 + m["bytes"].to_numpy() * 8 * 100
    assert (m["delivered_ns"].to_numpy() - m["written_ns"].to_numpy() >= floor).all()


def test_cli_writes_messages_parquet_and_a_udp_video_has_none(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN)
    code, _, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"), "--no-plot")
    assert code == 0, err
    m = pq.read_table(tmp_path / "r" / "messages.parquet")
    assert m.num_rows > 100 and set(m["flow"].to_pylist()) == {"v"}
    udp = _run(tmp_path, SCEN.replace('kind = "tcp"', 'kind = "udp"'))
    assert "messages" not in udp.tables
    with pytest.raises(AttributeError):
        udp.messages


@pytest.mark.parametrize("key, value", [("max_payload", '"1000B"'), ("pacing", '"frame"'),
                                        ("peak_rate", '"2Mbps"'), ("source_jitter", '"5ms"')])
def test_a_datagram_key_over_tcp_is_one_line_exit_2(tmp_path: Path, key, value):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN.replace(f'trace = "{TRACE}"', f'trace = "{TRACE}", {key} = {value}'))
    code, out, err = run_cli("run", str(scen), "-o", str(tmp_path / "r"))
    assert code == 2, (out, err)
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert len(lines) == 1, err
    assert str(scen) in lines[0] and f"flows[0].app.{key}: cannot be used over a stream transport" in lines[0]
    assert "Traceback" not in err and "panicked" not in err
    assert not (tmp_path / "r").exists()
