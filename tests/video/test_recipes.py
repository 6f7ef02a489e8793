"""Each bundled trace's statistics match its recorded recipe."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from qoelab.video.pictures.metrics import psnr
from qoelab.video.sources.encode import read_frames_csv
from qoelab.video.traces.trace import read_trace

from pathlib import Path

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"

# Video NAL traces; audio and DASH recipes (with a `kind`) are checked in test_bundled_audio_dash.py.
RECIPES = [p for p in sorted(TRACES.glob("*.recipe.toml")) if "kind" not in tomllib.loads(p.read_text())]


# Mean rate against the ABR target (see each recipe's notes for the measured gap).
TARGET_TOLERANCE = 0.10
# x264 enforces the VBV by predicting frame sizes, so a window may overshoot the exact bound a
# little; 1 % of the bound is the allowance.
VBV_TOLERANCE = 0.01


def max_window_bits(frame_bytes: np.ndarray, k: int) -> int:
    """Most bits in any k consecutive frames (decode order), by brute force over windows."""
    return max(int(frame_bytes[i:i + k].sum()) * 8 for i in range(frame_bytes.size - k + 1))


def _check_vbv(frame_bytes: np.ndarray, fps: float, maxrate_bps: int, bufsize_bits: int, max_1s_rate_bps: float):
    """The VBV (H.264 Annex C leaky bucket: buffer `bufsize`, filled at most at `maxrate`, each
    frame removed at its decode time) never underflows, so the frames removed at the decode
    times of frames i..j hold at most bufsize + maxrate·(j − i)/fps bits. Over 1 s (k = fps
    frames) the mean rate may thus exceed maxrate by up to bufsize/1 s; over one frame the
    burst is bounded by the buffer. Checked for 1 frame, 1 s and 10 s windows, and the recorded
    max 1-s rate is that of the trace."""
    k1 = round(fps)
    assert max_window_bits(frame_bytes, k1) * fps / k1 == pytest.approx(max_1s_rate_bps, abs=1.0)  # recorded to 0.1 bit/s, float rounding
    for k in (1, k1, 10 * k1):
        bound = bufsize_bits + maxrate_bps * (k - 1) / fps
        assert max_window_bits(frame_bytes, k) <= bound * (1 + VBV_TOLERANCE), (k, bound)


def test_vbv_check_catches_an_overflowing_trace():
    fps, maxrate, bufsize = 30.0, 3_000_000, 1_000_000
    ok = np.full(300, maxrate // 8 // 30, np.int64)
    _check_vbv(ok, fps, maxrate, bufsize, 3_000_000.0)
    burst = ok.copy()
    burst[100] += bufsize // 8  # one frame a whole buffer larger than the steady rate allows
    with pytest.raises(AssertionError):
        _check_vbv(burst, fps, maxrate, bufsize, float(max_window_bits(burst, 30)))


def test_bundled_traces_exist():
    names = {p.name.removesuffix(".recipe.toml") for p in RECIPES}
    assert {"cif_bbb_qp26", "hd1080_40M", "sqf_video_5M"} <= names


@pytest.mark.parametrize("recipe_path", RECIPES, ids=lambda p: p.name.removesuffix(".recipe.toml"))
def test_trace_statistics_match_recipe(recipe_path):
    recipe = tomllib.loads(recipe_path.read_text())
    stem = recipe_path.name.removesuffix(".recipe.toml")
    trace_path = next(TRACES.glob(f"{stem}.trace.csv*"))
    stats = read_trace(trace_path).stats().as_dict()
    exp = recipe["expected"]
    for key in ("frames", "nal_units", "total_bytes", "gop_pattern", "gop_length", "frame_types", "max_nal_bytes",
                "max_frame_bytes"):
        assert stats[key] == exp[key], key
    for key in ("mean_rate_bps", "max_1s_rate_bps"):
        assert stats[key] == pytest.approx(exp[key], rel=1e-9), key
    cfg = recipe["config"]
    # The recipe's own settings hold in the trace.
    assert stats["frames"] == cfg["frames"]
    assert stats["fps"] == pytest.approx(cfg["fps"])
    assert stats["gop_length"] == cfg["gop"]
    assert stats["gop_pattern"].startswith("I" + "B" * cfg["bframes"] + "P")
    if "slice_max_bytes" in cfg:
        assert stats["max_nal_bytes"] <= cfg["slice_max_bytes"] + 4  # plus the start code
    if "bitrate_bps" in cfg:
        # x264 ABR lands near, not on, the target; the tolerance is TARGET_TOLERANCE below.
        assert stats["mean_rate_bps"] == pytest.approx(cfg["bitrate_bps"], rel=TARGET_TOLERANCE)
    if "maxrate_bps" in cfg:
        _check_vbv(read_trace(trace_path).frame_bytes(), stats["fps"], cfg["maxrate_bps"], cfg["bufsize_bits"],
                   stats["max_1s_rate_bps"])
    frames = read_frames_csv(TRACES / f"{stem}.frames.csv")
    assert frames["display"].size == stats["frames"]
    assert np.isfinite(frames["ref_mse_y"]).all() and (frames["ref_mse_y"] >= 0).all()
    assert np.mean(psnr(frames["ref_mse_y"])) == pytest.approx(recipe["reference_quality"]["mean_psnr_y_db"], abs=1e-3)


def test_cif_trace_is_the_multi_tfrc_setting():
    t = read_trace(TRACES / "cif_bbb_qp26.trace.csv")
    s = t.stats()
    assert s.frames == 1063 and s.fps == 30.0 and s.gop_length == 15
    assert s.gop_pattern.startswith("IBBPBBP")
    assert s.max_nal_bytes <= 900


@pytest.mark.parametrize("recipe_path", RECIPES, ids=lambda p: p.name.removesuffix(".recipe.toml"))
def test_recipe_source_rebuilds_the_recorded_input(recipe_path):
    """The migrated `[source]` of each bundled recipe gives exactly the ffmpeg input its encode
    ran with (the recorded `command`), apart from how the bundled clip's path is spelled."""
    from qoelab.video.quality.evaluate import load_recipe_source
    from qoelab.video.sources.source import clip_path

    recipe = tomllib.loads(recipe_path.read_text())
    spec = load_recipe_source(recipe_path)
    built = spec.input_args(base=recipe_path.parent)
    clip = str(clip_path("bigbuckbunny"))
    built = [a.replace(f"file:{clip}", "data/clips/bigbuckbunny.mp4").replace(f"movie={clip}", "movie=data/clips/bigbuckbunny.mp4")
             for a in built]
    cmd = recipe["command"][1:]
    assert cmd[: len(built)] == built
    assert spec.width == recipe["config"]["width"] and spec.fps == recipe["config"]["fps"]
