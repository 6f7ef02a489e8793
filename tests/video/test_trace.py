"""The NAL trace format: round trip and malformed input."""

from __future__ import annotations

import numpy as np
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.traces.trace import read_trace, write_trace

GOOD = """nal,frame,display,type,size_bytes,ts_ms
0,0,0,X,6,0.000
1,0,0,I,900,0.000
2,0,0,I,500,0.000
3,1,2,P,700,33.333
4,2,1,B,100,66.667
"""


def write(tmp_path, text, name="t.trace.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_round_trip_plain_and_gzip(tmp_path):
    t = read_trace(write(tmp_path, GOOD))
    assert t.n_nal == 5 and t.n_frames == 3
    assert list(t.frame_type()) == [0, 1, 2]
    assert list(t.frame_display()) == [0, 2, 1]
    assert list(t.frame_bytes()) == [1406, 700, 100]
    for name in ("a.trace.csv", "a.trace.csv.gz"):
        write_trace(tmp_path / name, t)
        back = read_trace(tmp_path / name)
        assert np.array_equal(back.size_bytes, t.size_bytes) and np.array_equal(back.display, t.display)
    assert (tmp_path / "a.trace.csv").read_text() == GOOD


@pytest.mark.parametrize(
    "text, fragment",
    [
        (GOOD[:-15], "truncated trace"),  # cut mid-line
        (GOOD.replace("size_bytes", "bytes"), "header must name"),
        (GOOD.replace("3,1,2,P,700", "3,1,2,Q,700"), "`type`: must be one of I, P, B, X"),
        (GOOD.replace("3,1,2,P,700", "7,1,2,P,700"), "running index"),
        (GOOD.replace("4,2,1,B", "4,3,1,B"), "count up by 0 or 1"),
        (GOOD.replace("1,0,0,I,900", "1,0,0,I,-9"), "`size_bytes`: must be within 1..=4294967295"),
        (GOOD.replace("2,0,0,I,500,0.000", "2,0,0,I,500,1.000"), "`ts_ms`: differs within frame 0"),
        (GOOD.replace("3,1,2,P,700,33.333", "3,1,2,P,7x0,33.333"), "`size_bytes`: expected an integer"),
        ("\n".join(GOOD.splitlines()[:-1]) + "\n", "must be a permutation"),  # truncated at a frame boundary
        (GOOD.replace("4,2,1,B,100", "4,2,1,X,100"), "has no slice"),
        ("", "empty trace"),
    ],
)
def test_malformed_trace_is_one_line_error(tmp_path, text, fragment):
    p = write(tmp_path, text)
    with pytest.raises(VideoInputError) as err:
        read_trace(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ") and "\n" not in msg
    assert fragment in msg


def test_missing_trace(tmp_path):
    with pytest.raises(VideoInputError, match="cannot read trace"):
        read_trace(tmp_path / "nope.csv")
