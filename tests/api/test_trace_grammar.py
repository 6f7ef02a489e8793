"""One trace grammar: the simulator's video source and `qoelab.video.traces.trace.read_trace` accept and
reject the same files, with the same line-numbered reason (docs/models/video.md, "Trace grammar").

Each bad trace is given to both entry points: a scenario whose video flow streams it (checked
with `Scenario.validate`, the simulator's build) and the Python reader. Both must refuse it with
one line naming the same line and reason, without quoting the file's text.
"""

from __future__ import annotations

import gzip
import zlib

import pytest

from qoelab import Scenario, ScenarioError
from qoelab.video.errors import VideoInputError
from qoelab.video.traces.trace import read_trace

H = "nal,frame,display,type,size_bytes,ts_ms\n"
GOOD = H + "0,0,0,X,6,0\n1,0,0,I,900,0\n2,1,2,P,700,40\n3,2,1,B,100,80\n4,3,3,P,500,120\n"

SCEN = """
[sim]
duration = "1s"
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"
[[flows]]
name = "v"
src = "A"
dst = "B"
transport = {{ kind = "rtp" }}
app = {{ kind = "video", trace = "{trace}" }}
"""

# (id, file content, fragment every reader's message must contain)
BAD = [
    ("empty", "", "empty trace"),
    ("no-newline-at-end", GOOD[:-1], "line 6: truncated trace"),
    ("cut-mid-line", GOOD[:-9], "truncated trace"),
    ("header-only", H, "trace has no rows"),
    ("unknown-column", GOOD.replace("display", "disp", 1), "column 3 is none of them"),
    ("duplicate-column", H.replace("display", "frame") + "0,0,0,I,9,0\n", "`frame` is named twice"),
    ("lacks-type", "frame,size_bytes,ts_ms\n0,100,0\n", "it lacks column `type`"),
    ("lacks-ts", "frame,type,size_bytes\n0,I,100\n", "it lacks column `ts_ms`"),
    ("too-few-fields", GOOD.replace("2,1,2,P,700,40", "2,1,2,P,700"), "line 4: expected 6 fields, got 5"),
    ("too-many-fields", GOOD.replace("2,1,2,P,700,40", "2,1,2,P,700,40,1"), "line 4: expected 6 fields, got 7"),
    ("blank-line", GOOD.replace("\n2,", "\n\n2,"), "line 4: expected 6 fields, got 1"),
    ("nal-skips", GOOD.replace("2,1,2,P", "5,1,2,P"), "line 4: column `nal`: must be the running index 2"),
    ("nal-not-int", GOOD.replace("2,1,2,P", "x,1,2,P"), "line 4: column `nal`: expected an integer"),
    ("first-frame-not-0", H + "0,1,0,I,9,0\n", "line 2: column `frame`: the first frame must be 0"),
    ("frame-negative", GOOD.replace("2,1,2,P,700", "2,-1,2,P,700"), "line 4: column `frame`: must count up by 0 or 1"),
    ("frame-jumps", GOOD.replace("3,2,1,B", "3,5,1,B"), "line 5: column `frame`: must count up by 0 or 1"),
    ("frame-goes-back", GOOD.replace("4,3,3,P", "4,1,3,P"), "line 6: column `frame`: must count up by 0 or 1"),
    ("frame-plus-sign", GOOD.replace("2,1,2,P", "2,+1,2,P"), "line 4: column `frame`: expected an integer"),
    ("frame-underscore", GOOD.replace("2,1,2,P", "2,1_0,2,P"), "line 4: column `frame`: expected an integer"),
    ("frame-float", GOOD.replace("2,1,2,P", "2,1.0,2,P"), "line 4: column `frame`: expected an integer"),
    ("type-unknown", GOOD.replace(",P,700", ",Q,700"), "line 4: column `type`: must be one of I, P, B, X"),
    ("type-lowercase", GOOD.replace(",P,700", ",p,700"), "line 4: column `type`: must be one of"),
    ("size-zero", GOOD.replace(",700,", ",0,"), "line 4: column `size_bytes`: must be within 1..=4294967295"),
    ("size-negative", GOOD.replace(",700,", ",-5,"), "line 4: column `size_bytes`: must be within"),
    ("size-2^32", GOOD.replace(",700,", ",4294967296,"), "line 4: column `size_bytes`: must be within"),
    ("size-2^40", GOOD.replace(",700,", ",1099511627776,"), "line 4: column `size_bytes`: must be within"),
    ("size-huge-digits", GOOD.replace(",700,", ",99999999999999999999999,"), "line 4: column `size_bytes`: expected an integer"),
    ("size-exponent", GOOD.replace(",700,", ",7e2,"), "line 4: column `size_bytes`: expected an integer"),
    ("ts-nan", GOOD.replace(",700,40", ",700,nan"), "line 4: column `ts_ms`: expected a number"),
    ("ts-inf", GOOD.replace(",700,40", ",700,inf"), "line 4: column `ts_ms`: expected a number"),
    ("ts-negative", H + "0,0,0,I,9,-1\n", "line 2: column `ts_ms`: must be within"),
    ("ts-huge", GOOD.replace(",700,40", ",700,1e300"), "line 4: column `ts_ms`: must be within"),
    ("ts-text", GOOD.replace(",700,40", ",700,4o"), "line 4: column `ts_ms`: expected a number"),
    ("ts-decreases", GOOD.replace(",100,80", ",100,30"), "line 5: column `ts_ms`: decreases from frame 1 to frame 2"),
    ("ts-differs-in-frame", GOOD.replace("1,0,0,I,900,0", "1,0,0,I,900,1"), "line 3: column `ts_ms`: differs within frame 0"),
    ("display-differs-in-frame", GOOD.replace("1,0,0,I", "1,0,1,I"), "line 3: column `display`: differs within frame 0"),
    ("display-duplicate", GOOD.replace("3,2,1,B", "3,2,2,B"), "line 5: column `display`: display numbers must be a permutation"),
    ("display-out-of-range", GOOD.replace("4,3,3,P", "4,3,9,P"), "line 6: column `display`: display numbers must be a permutation"),
    ("frame-without-slice", GOOD.replace("3,2,1,B", "3,2,1,X"), "line 5: frame 2 has no slice"),
    ("last-frame-without-slice", GOOD + "5,4,4,X,6,160\n", "line 7: frame 4 has no slice"),
    ("mixed-slice-types", GOOD.replace("2,1,2,P,700,40\n", "2,1,2,P,700,40\n3,1,2,B,5,40\n").replace("3,2,1,B,100", "4,2,1,B,100").replace("4,3,3,P", "5,3,3,P"), "line 5: column `type`: frame 1 mixes slice types"),
    ("binary", b"\x00\x01\x02\xff", "line 1: not ASCII text"),
    ("utf8", GOOD.replace("1,0,0,I,900", "1,0,0,I,9\u00e900"), "line 3: not ASCII text"),
    ("passwd-like", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n", "header must name"),
]

GOOD_VARIANTS = [
    ("full", GOOD),
    ("crlf", GOOD.replace("\n", "\r\n")),
    ("spaces", GOOD.replace(",", " , ")),
    ("reduced-columns", "frame,type,size_bytes,ts_ms\n0,I,3000,0\n1,P,1000,40\n"),
    ("reordered", "ts_ms,size_bytes,type,frame\n0,3000,I,0\n40,1000,P,1\n"),
    ("fractional-ts", H + "0,0,0,I,9,0.5\n1,1,1,P,9,.75\n2,2,2,P,9,1e1\n"),
    ("size-2^32-1", H + "0,0,0,I,4294967295,0\n"),
]


def _write(tmp_path, name, content, gz=False):
    p = tmp_path / (name + (".csv.gz" if gz else ".csv"))
    data = content.encode() if isinstance(content, str) else content
    p.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return p


def _both(p):
    """(simulator's message, Python reader's message), each None if the file was accepted."""
    import tomllib

    sim_msg = py_msg = None
    sc = Scenario.from_dict(tomllib.loads(SCEN.format(trace=p.as_posix())), source="scen", base_dir=p.parent)
    try:
        sc.validate()
    except ScenarioError as e:
        sim_msg = str(e)
    try:
        read_trace(p)
    except VideoInputError as e:
        py_msg = str(e)
    return sim_msg, py_msg


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name, content, fragment", BAD, ids=[b[0] for b in BAD])
def test_both_readers_refuse_with_the_same_reason(tmp_path, name, content, fragment, gz):
    p = _write(tmp_path, name, content, gz)
    sim_msg, py_msg = _both(p)
    assert sim_msg is not None and py_msg is not None, (sim_msg, py_msg)
    for msg in (sim_msg, py_msg):
        assert "\n" not in msg and fragment in msg, msg
    # The same reason after each front end's own prefix (file / key path).
    assert sim_msg.endswith(py_msg.split(": ", 1)[1]), (sim_msg, py_msg)


@pytest.mark.parametrize("name, content", GOOD_VARIANTS, ids=[g[0] for g in GOOD_VARIANTS])
def test_both_readers_accept_the_same_files(tmp_path, name, content):
    p = _write(tmp_path, name, content)
    assert _both(p) == (None, None)


def test_errors_never_quote_the_file(tmp_path):
    secret = "hunter2:x:0:0:secret-line"
    for content in (secret + "\n", f"frame,type,size_bytes,ts_ms\n0,I,{secret},0\n", f"{secret}\n0\n"):
        p = _write(tmp_path, "s", content)
        for msg in _both(p):
            assert msg is not None and "hunter2" not in msg and "secret" not in msg, msg


def test_decompressed_size_is_bounded(tmp_path):
    # 300 MiB of digits compress to about 300 kB: refused after 256 MiB, not read to the end.
    chunk = b"0" * (1 << 20)
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = b"".join(co.compress(chunk) for _ in range(300)) + co.flush()
    p = tmp_path / "bomb.csv.gz"
    p.write_bytes(data)
    assert p.stat().st_size < 2_000_000
    for msg in _both(p):
        assert msg is not None and "larger than 256 MiB" in msg, msg
