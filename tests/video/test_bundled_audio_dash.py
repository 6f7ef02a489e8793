"""The SQF audio trace and the DASH ladder match their recipes."""

from __future__ import annotations

import math
import tomllib
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from qoelab.video.sources.dash import read_segments
from qoelab.video.traces.trace import read_trace

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
MPD_NS = {"m": "urn:mpeg:dash:schema:mpd:2011"}


def _recipes(kind):
    out = []
    for p in sorted(TRACES.glob("*.recipe.toml")):
        r = tomllib.loads(p.read_text())
        if r.get("kind") == kind:
            out.append(pytest.param(p, r, id=r["name"]))
    return out


def test_bundled_audio_and_dash_exist():
    assert _recipes("audio") and _recipes("dash")


@pytest.mark.parametrize("recipe_path, recipe", _recipes("audio"))
def test_audio_trace(recipe_path, recipe):
    t = read_trace(TRACES / f"{recipe['name']}.trace.csv")
    exp = recipe["expected"]
    sizes = t.size_bytes
    assert t.n_nal == exp["packets"] and int(sizes.sum()) == exp["total_bytes"]
    assert (t.frame_type() == 0).all()  # every audio frame stands alone
    step = np.diff(t.frame_ts_ms())
    assert np.allclose(step, exp["frame_ms"])
    mean = sizes.sum() * 8 / (t.n_nal * exp["frame_ms"] / 1000)
    assert mean == pytest.approx(exp["mean_rate_bps"], abs=0.1)
    assert mean == pytest.approx(recipe["config"]["bitrate_bps"], rel=0.05)
    if recipe["config"]["codec"] == "opus":
        assert sizes.min() < 0.8 * sizes.max()  # VBR, not CBR
    else:
        # MPEG-1 Layer II at 48 kHz: 1152 samples (24 ms) per frame, every frame rate x 24 ms.
        assert recipe["config"]["codec"] == "mp2" and exp["frame_ms"] == 24.0
        assert (sizes == recipe["config"]["bitrate_bps"] * 24 // 8000).all()


@pytest.mark.parametrize("recipe_path, recipe", _recipes("dash"))
def test_dash_trace(recipe_path, recipe):
    rows = read_segments(TRACES / recipe["files"]["segments"])
    exp = recipe["expected"]
    cfg = recipe["config"]
    by = defaultdict(list)
    for r in rows:
        by[(r["representation"], r["segment_s"])].append(r)
    for rep in exp["representations"]:
        for L in cfg["segment_lengths_s"]:
            segs = by[(rep["id"], float(L))]
            assert len(segs) == exp["segments_per_length"][str(L)]
            # One encode per representation: every segmentation covers the same bytes and time.
            assert sum(s["size_bytes"] for s in segs) == rep["total_bytes"]
            assert sum(s["duration_s"] for s in segs) == pytest.approx(cfg["duration_s"])
            assert [s["segment"] for s in segs] == list(range(len(segs)))
        assert rep["mean_rate_bps"] == pytest.approx(rep["total_bytes"] * 8 / cfg["duration_s"], abs=0.1)
        # Closed GOPs of gop_s and no scene-cut: one keyframe per GOP, none more.
        assert rep["keyframes"] == math.ceil(exp["frames"] / round(cfg["gop_s"] * cfg["fps"]))
        assert 0.5 * rep["target_bps"] <= rep["mean_rate_bps"] <= 1.2 * rep["target_bps"]
    rates = [rep["mean_rate_bps"] for rep in exp["representations"]]
    assert rates == sorted(rates)  # the ladder climbs
    for L, mpd_name in zip(cfg["segment_lengths_s"], recipe["files"]["mpds"]):
        root = ET.parse(TRACES / mpd_name).getroot()
        tmpl = root.find(".//m:SegmentTemplate", MPD_NS)
        assert int(tmpl.get("duration")) == int(L * 1000)
        ids = [r.get("id") for r in root.findall(".//m:Representation", MPD_NS)]
        assert ids == [rep["id"] for rep in exp["representations"]]


def test_the_bundled_ladder_is_three_minutes_of_whole_segments():
    """Issue 20: the HEVC ladder on a clip of at least 3 minutes, a whole number of segments at
    every segment length (no short last segment), the MPDs saying the same length."""
    recipe = tomllib.loads((TRACES / "dash_hevc.recipe.toml").read_text())
    cfg, exp = recipe["config"], recipe["expected"]
    dur = cfg["duration_s"]
    assert dur >= 180.0 and exp["frames"] == round(dur * cfg["fps"])
    rows = read_segments(TRACES / recipe["files"]["segments"])
    for L in cfg["segment_lengths_s"]:
        assert exp["segments_per_length"][str(L)] * L == dur
        assert {r["duration_s"] for r in rows if r["segment_s"] == L} == {float(L)}
    for mpd_name in recipe["files"]["mpds"]:
        root = ET.parse(TRACES / mpd_name).getroot()
        assert root.get("mediaPresentationDuration") == f"PT{dur:.3f}S"
    # The recipe's commands encode that length.
    for cmd in recipe["commands"].values():
        assert cmd[cmd.index("-t") + 1] == f"{dur:g}"
