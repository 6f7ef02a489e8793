"""Each bundled trace's statistics match its recorded recipe."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from qoelab.video.encode import read_frames_csv
from qoelab.video.metrics import psnr
from qoelab.video.trace import read_trace

from pathlib import Path

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"

# Video NAL traces; audio and DASH recipes (with a `kind`) are checked in test_bundled_audio_dash.py.
RECIPES = [p for p in sorted(TRACES.glob("*.recipe.toml")) if "kind" not in tomllib.loads(p.read_text())]


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
    for key in ("frames", "nal_units", "total_bytes", "gop_pattern", "gop_length", "frame_types", "max_nal_bytes"):
        assert stats[key] == exp[key], key
    assert stats["mean_rate_bps"] == pytest.approx(exp["mean_rate_bps"], rel=1e-9)
    cfg = recipe["config"]
    # The recipe's own settings hold in the trace.
    assert stats["frames"] == cfg["frames"]
    assert stats["fps"] == pytest.approx(cfg["fps"])
    assert stats["gop_length"] == cfg["gop"]
    assert stats["gop_pattern"].startswith("I" + "B" * cfg["bframes"] + "P")
    if "slice_max_bytes" in cfg:
        assert stats["max_nal_bytes"] <= cfg["slice_max_bytes"] + 4  # plus the start code
    if "bitrate_bps" in cfg:
        # x264 ABR in one pass lands near, not on, the target (HD: -16 %, see its recipe notes).
        assert stats["mean_rate_bps"] == pytest.approx(cfg["bitrate_bps"], rel=0.20)
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
