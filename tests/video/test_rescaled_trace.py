"""The 62 Mbit/s HD trace is hd1080_40M scaled as its recipe states, at the stated rate and with
the source's shape (python/qoelab/video/traces/rescale.py)."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import numpy as np
import pytest

from qoelab.video.traces import rescale
from qoelab.video.traces.trace import NalTrace, read_trace

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
RECIPE = tomllib.loads((TRACES / "hd1080_62M.recipe.toml").read_text())


@pytest.fixture(scope="module")
def pair() -> tuple[NalTrace, NalTrace]:
    return read_trace(TRACES / "hd1080_40M.trace.csv.gz"), read_trace(TRACES / "hd1080_62M.trace.csv.gz")


def test_the_bundled_file_is_the_recipe_applied_to_the_recorded_source(tmp_path: Path):
    src = TRACES / RECIPE["source_trace"]["file"]
    assert hashlib.sha256(src.read_bytes()).hexdigest() == RECIPE["source_trace"]["sha256"]
    rescale.build_hd62(tmp_path, TRACES)
    assert (tmp_path / "hd1080_62M.trace.csv.gz").read_bytes() == (TRACES / "hd1080_62M.trace.csv.gz").read_bytes()
    assert tomllib.loads((tmp_path / "hd1080_62M.recipe.toml").read_text()) == RECIPE


def test_mean_rate_at_ip_level_is_the_papers_delivered_rate(pair):
    _, t = pair
    ip = rescale.ip_mean_rate_bps(t)
    assert ip == pytest.approx(62e6, rel=1e-4)
    assert ip == pytest.approx(RECIPE["expected"]["ip_mean_rate_bps"], abs=0.1)
    # The factor is the smallest that reaches the target: one ppm less falls short.
    f = RECIPE["transform"]["factor_ppm"]
    src = read_trace(TRACES / "hd1080_40M.trace.csv.gz")
    assert rescale.ip_mean_rate_bps(rescale.scale_vcl(src, f - 1)) < 62e6 <= rescale.ip_mean_rate_bps(rescale.scale_vcl(src, f))


def test_shape_is_the_sources_scaled(pair):
    s, t = pair
    f = RECIPE["transform"]["factor_ppm"] / 1e6
    # Same frames, types, order and timestamps; non-VCL units untouched; every slice × f (± rounding).
    for a, b in ((s.frame, t.frame), (s.display, t.display), (s.type_code, t.type_code), (s.ts_ms, t.ts_ms)):
        assert np.array_equal(a, b)
    assert np.array_equal(s.size_bytes[~s.vcl], t.size_bytes[~t.vcl])
    assert np.all(np.abs(t.size_bytes[s.vcl] - s.size_bytes[s.vcl] * f) <= 0.5 + 1e-9)
    # Peak-to-mean over 1 s, at IP level and in the encoder's bytes, is the source's to 0.1 %.
    for peak, mean in ((rescale.ip_max_window_rate_bps, rescale.ip_mean_rate_bps),
                       (lambda x: x.stats().max_1s_rate_bps, lambda x: x.stats().mean_rate_bps)):
        assert peak(t) / mean(t) == pytest.approx(peak(s) / mean(s), rel=1e-3)
    st = t.stats()
    assert st.gop_pattern == s.stats().gop_pattern and st.frame_types == s.stats().frame_types
    for key in ("frames", "nal_units", "total_bytes", "max_nal_bytes", "max_frame_bytes"):
        assert getattr(st, key) == RECIPE["expected"][key], key
    assert st.max_1s_rate_bps == pytest.approx(RECIPE["expected"]["max_1s_rate_bps"], rel=1e-9)


def test_scaled_trace_obeys_the_sources_vbv_scaled(pair):
    """The source obeys Blu-ray's VBV (maxrate 40 Mbit/s, 30 Mbit buffer, within x264's 1 %);
    scaled, every 1-frame, 1-s and 10-s window obeys maxrate·f and bufsize·f, the recorded
    implied VBV (non-VCL units, not scaled, only make the bound looser)."""
    _, t = pair
    vbv = RECIPE["implied_vbv"]
    fb = t.frame_bytes()
    c = np.concatenate(([0], np.cumsum(fb)))
    for k in (1, 30, 300):
        most = int((c[k:] - c[:-k]).max()) * 8
        assert most <= (vbv["bufsize_bits"] + vbv["maxrate_bps"] * (k - 1) / 30) * 1.01, k


def test_scale_vcl_rounds_half_up_and_leaves_non_vcl_alone():
    t = NalTrace(np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([3, 0, 2], dtype=np.int8),
                 np.array([10, 3, 1]), np.array([0.0, 0.0, 33.3]))
    s = rescale.scale_vcl(t, 1_500_000)
    assert s.size_bytes.tolist() == [10, 5, 2]  # X kept; 4.5 → 5; 1.5 → 2
    assert rescale.scale_vcl(t, 1_000_000).size_bytes.tolist() == [10, 3, 1]
    assert rescale.scale_vcl(t, 1).size_bytes.tolist() == [10, 1, 1]  # never below one byte
    with pytest.raises(ValueError):
        rescale.scale_vcl(t, 0)
