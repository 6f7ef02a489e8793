"""The bundled MPEG-2 ladder of the symbiotic transcoder matches its recipe, its GOPs are closed
and aligned across rungs (so a switch at a GOP boundary decodes), and its reader refuses bad files."""

from __future__ import annotations

import gzip
import tomllib
from pathlib import Path

import numpy as np
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.sources.mpeg2_ladder import (LADDER_COLUMNS, frame_quality, read_ladder, read_source_variance,
                                                snr_offset_db, source_variance)
from qoelab.video.sources.source import CLIP

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
RECIPE = tomllib.loads((TRACES / "mpeg2_ladder.recipe.toml").read_text())


@pytest.fixture(scope="module")
def ladder():
    return read_ladder(TRACES / RECIPE["files"]["frames"])


def test_each_rung_matches_the_recipe(ladder):
    exp, cfg = RECIPE["expected"], RECIPE["config"]
    n = exp["frames"]
    assert n == cfg["duration_s"] * cfg["fps"] and exp["gops"] * cfg["gop"] == n
    assert [r["target_bps"] for r in exp["rungs"]] == cfg["rates_bps"]
    for r in exp["rungs"]:
        sel = ladder["rung"] == r["rung"]
        assert sel.sum() == n, r["id"]
        assert (ladder["target_bps"][sel] == r["target_bps"]).all()
        assert (ladder["frame"][sel] == np.arange(n)).all()
        sizes = ladder["size_bytes"][sel]
        assert int(sizes.sum()) == r["total_bytes"]
        assert r["mean_rate_bps"] == pytest.approx(sizes.sum() * 8 * cfg["fps"] / n, abs=0.1)
        for plane in "yuv":
            assert ladder[f"psnr_{plane}"][sel].mean() == pytest.approx(r[f"mean_psnr_{plane}"], abs=1e-3)
        assert int((ladder["type"][sel] == "I").sum()) == r["i_frames"] == exp["gops"]
        # Single-pass rate control lands near each target (the bottom rung is the encoder's floor
        # on this content, see the module notes).
        assert 0.95 * r["target_bps"] <= r["mean_rate_bps"] <= 1.05 * r["target_bps"], r["id"]


def test_rungs_trade_rate_for_quality(ladder):
    rungs = RECIPE["expected"]["rungs"]
    rates = [r["mean_rate_bps"] for r in rungs]
    assert rates == sorted(rates, reverse=True) and len(set(r["target_bps"] for r in rungs)) == len(rungs)
    for plane in "yuv":
        q = [r[f"mean_psnr_{plane}"] for r in rungs]
        assert q == sorted(q, reverse=True), plane  # less rate, less quality, in every plane
    # The paper's back-off factors from the 2-Mbit/s top land on distinct rungs.
    targets = [r["target_bps"] for r in rungs]
    picks = {A: next(i for i, t in enumerate(targets) if t <= 2_000_000 * A) for A in (0.35, 0.55, 0.75)}
    assert len(set(picks.values())) == 3, picks


def test_gops_are_closed_and_aligned_across_rungs(ladder):
    cfg = RECIPE["config"]
    gop, n = cfg["gop"], RECIPE["expected"]["frames"]
    types = ladder["type"].reshape(-1, n)
    display = ladder["display"].reshape(-1, n)
    frame = np.arange(n)
    for k in range(types.shape[0]):
        assert ((types[k] == "I") == (frame % gop == 0)).all(), k
        # Closed: every picture of a GOP, in decode order, is shown inside that GOP.
        assert (display[k] // gop == frame // gop).all(), k
        assert sorted(display[k].tolist()) == list(range(n))
    assert (display == display[0]).all()  # the same picture structure in every rung


def test_reader_refuses_bad_files(tmp_path):
    p = tmp_path / "l.frames.csv.gz"
    p.write_bytes(gzip.compress(b"rung,frame\n0,0\n"))
    with pytest.raises(VideoInputError, match="header must be"):
        read_ladder(p)
    p.write_bytes(gzip.compress((",".join(LADDER_COLUMNS) + "\n0,2000000,0,0,I,x,1,1,1\n").encode()))
    with pytest.raises(VideoInputError, match="line 2: malformed number"):
        read_ladder(p)
    p.write_bytes(b"not gzip")
    with pytest.raises(VideoInputError, match="cannot read ladder"):
        read_ladder(p)


def test_frame_quality_picks_the_row_of_each_rung_and_frame(ladder):
    n = RECIPE["expected"]["frames"]
    rung = np.array([0, 2, 5, 5])
    frame = np.array([0, 17, 17, n - 1])
    q = frame_quality(ladder, rung, frame)
    for k, (r, f) in enumerate(zip(rung, frame)):
        row = np.flatnonzero((ladder["rung"] == r) & (ladder["frame"] == f))
        assert row.size == 1
        for c in ("display", "size_bytes", "psnr_y", "psnr_u", "psnr_v"):
            assert q[c][k] == ladder[c][row[0]], (c, r, f)
    assert q["psnr_y"][1] > q["psnr_y"][2]  # the same picture is worse on a lower rung
    with pytest.raises(VideoInputError, match="rung must be in"):
        frame_quality(ladder, [6], [0])


# --- the source pictures' variances: the variance-normalised SNR (issue 38 item 6) ---------------

def test_snr_offset_turns_a_psnr_into_the_reference_encoders_snr():
    # mpeg2encode's stats.c: SNR = 10 log10(v / e) with v the source plane's population variance
    # and e the MSE; PSNR = 10 log10(255^2 / e). On a random picture pair the identity must hold.
    rng = np.random.default_rng(7)
    org = rng.integers(40, 200, size=(48, 64)).astype(np.float64)
    rec = np.clip(org + rng.normal(0, 3.0, org.shape).round(), 0, 255)
    mse = float(np.mean((org - rec) ** 2))
    psnr = 10 * np.log10(255.0**2 / mse)
    snr = 10 * np.log10(org.var() / mse)
    assert psnr + float(snr_offset_db(np.array([org.var()]))[0]) == pytest.approx(snr, abs=1e-9)
    assert snr < psnr  # a picture's variance is below 255^2


def test_the_bundled_source_variances_are_the_sources(ladder):
    n = int(ladder["frame"].max()) + 1
    var = read_source_variance(TRACES / "mpeg2_ladder.source.csv.gz", n)
    assert var.shape == (n, 3) and (var > 0).all()
    # Recomputed from the clip through the ladder's own source graph: its first GOP.
    fresh = source_variance(CLIP, 0.5)
    assert fresh == pytest.approx(var[:15], rel=1e-6, abs=1e-4)


def test_source_variance_reader_refuses_bad_files(tmp_path):
    bad = tmp_path / "s.source.csv.gz"
    bad.write_bytes(gzip.compress(b"display,var_y\n0,1\n"))
    with pytest.raises(VideoInputError, match="header"):
        read_source_variance(bad, 1)
    bad.write_bytes(gzip.compress(b"display,var_y,var_u,var_v\n0,1,2,3\n"))
    with pytest.raises(VideoInputError, match="1 pictures, the ladder has 2"):
        read_source_variance(bad, 2)
    bad.write_bytes(gzip.compress(b"display,var_y,var_u,var_v\n0,1,0,3\n"))
    with pytest.raises(VideoInputError, match="positive"):
        read_source_variance(bad, 1)
    bad.write_bytes(gzip.compress(b"display,var_y,var_u,var_v\n5,1,2,3\n"))
    with pytest.raises(VideoInputError, match="line 2"):
        read_source_variance(bad, 1)
