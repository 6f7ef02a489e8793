"""Every JSON the video commands write is standard JSON of native types (issue 22, item 6):
`evaluate --json` crashed (`int64 is not JSON serializable`) whenever an SPS or PPS was lost."""

from __future__ import annotations

import json
import math

import numpy as np

from qoelab.video.cli import main
from qoelab.video.quality.evaluate import json_native
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.traces.bitstream import parse_nal_units
from qoelab.video.traces.trace import read_trace


def _strict_load(path):
    def no_constants(name):
        raise AssertionError(f"{path}: non-standard JSON constant {name}")

    return json.loads(path.read_text(), parse_constant=no_constants)


def _native_only(obj, where="$"):
    if isinstance(obj, dict):
        for k, v in obj.items():
            _native_only(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _native_only(v, f"{where}[{i}]")
    else:
        assert obj is None or type(obj) in (bool, int, float, str), (where, type(obj))


def test_evaluate_json_with_lost_parameter_sets(short_clip, tmp_path, capsys):
    trace = read_trace(short_clip.trace)
    nals = parse_nal_units(short_clip.bitstream.read_bytes(), "h264")
    lost = np.zeros(trace.n_nal, bool)
    ps = [i for i, u in enumerate(nals) if u.nal_type in (7, 8) and trace.frame[i] == 15]  # 2nd GOP's SPS, PPS
    assert len(ps) == 2
    lost[ps] = True
    lost[np.flatnonzero((trace.frame == 20) & trace.vcl)[:1]] = True
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    out = tmp_path / "summary.json"
    rc = main(["video", "evaluate", str(short_clip.trace), str(short_clip.bitstream), str(log), "--json", str(out),
               "--out", str(tmp_path / "frames.parquet")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "2 parameter set(s) lost" in captured.err
    s = _strict_load(out)
    _native_only(s)
    assert [(p["kind"], p["nal"], p["frame"]) for p in s["parameter_sets_lost"]] == [
        ("SPS", ps[0], 15), ("PPS", ps[1], 15)]
    assert s["nal_lost"] == 3 and "PSNR vs source" in captured.out


def test_estimate_json_round_trips(short_clip, tmp_path, capsys):
    trace = read_trace(short_clip.trace)
    lost = (np.random.default_rng(0).random(trace.n_nal) < 0.05) & trace.vcl
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    out = tmp_path / "e.json"
    rc = main(["video", "estimate", str(short_clip.trace), str(log), "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    s = _strict_load(out)
    _native_only(s)
    assert s["calibration"].startswith("uncalibrated") and s["frames"] == 60


def test_json_native_converts_numpy_and_non_finite():
    obj = {"a": np.int64(3), "b": [np.float32(0.5), np.bool_(True)], "c": np.arange(2), "d": math.nan,
           "e": (np.uint8(7),), 4: -math.inf}
    out = json_native(obj)
    assert out == {"a": 3, "b": [0.5, True], "c": [0, 1], "d": None, "e": [7], "4": None}
    _native_only(out)
    json.dumps(out, allow_nan=False)


def test_run_and_demo_video_quality_json_round_trip(tmp_path):
    """The JSON the main CLI writes around a video run: `run`'s summary.json and the demo's
    video_quality.json (the estimator's summary), strict standard JSON of native types."""
    from qoelab.cli import main as qoelab_main
    from qoelab.cli import video_quality

    out = tmp_path / "demo"
    assert qoelab_main(["run", "demo", "--set", "sim.duration=2s", "-o", str(out), "--no-plot"]) == 0
    s = _strict_load(out / "summary.json")
    _native_only(s)
    video_quality(out, "video")
    q = _strict_load(out / "video_quality.json")
    _native_only(q)
    assert q["frames"] == 1063 and isinstance(q["frames"], int)
