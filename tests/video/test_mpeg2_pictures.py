"""Frozen display slots of the MPEG-2 ladder measured on real pictures: the PSNR is ffmpeg's
definition computed exactly, a re-encode that is not the ladder's bitstream is refused before any
number is produced, pairs outside the ladder are refused, and a re-decoded picture matches the
ladder's own PSNR of it."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.quality.mpeg2_pictures import FRAME_BYTES, Y_BYTES, frozen_psnr, plane_psnr
from qoelab.video.sources.mpeg2_ladder import read_ladder

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"
LADDER = TRACES / "mpeg2_ladder.frames.csv.gz"


def test_plane_psnr_is_ffmpegs_definition_exactly():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, FRAME_BYTES, dtype=np.uint8)
    b = rng.integers(0, 256, (3, FRAME_BYTES), dtype=np.uint8)
    got = plane_psnr(a[None, :], b)
    assert got.shape == (3, 3)
    planes = ((0, Y_BYTES), (Y_BYTES, Y_BYTES * 5 // 4), (Y_BYTES * 5 // 4, FRAME_BYTES))
    for k, (lo, hi) in enumerate(planes):
        mse = ((b[:, lo:hi].astype(np.float64) - a[lo:hi]) ** 2).mean(axis=1)
        assert got[:, k] == pytest.approx(10 * np.log10(255.0**2 / mse), abs=1e-12)
    assert plane_psnr(a, a).tolist() == [100.0, 100.0, 100.0]  # identical planes: ffmpeg's "inf" as 100 dB
    c = a.copy()
    c[Y_BYTES] ^= 1  # one U sample off by one: Y and V identical, U finite and high
    y, u, v = plane_psnr(c, a)
    assert (y, v) == (100.0, 100.0) and u == pytest.approx(10 * np.log10(255.0**2 * (Y_BYTES // 4)))


def test_pairs_outside_the_ladder_are_refused(tmp_path: Path):
    with pytest.raises(VideoInputError, match=r"outside the ladder \(6 rungs, 1800 pictures\)"):
        frozen_psnr(LADDER, [(6, 0, 1)], tmp_path)
    with pytest.raises(VideoInputError, match="outside the ladder"):
        frozen_psnr(LADDER, [(0, 5, 1800)], tmp_path)
    assert frozen_psnr(LADDER, [], tmp_path) == {}


def test_a_reencode_that_is_not_the_ladders_bitstream_is_refused(tmp_path: Path):
    lad = tmp_path / "lad"
    lad.mkdir()
    shutil.copy(TRACES / "mpeg2_ladder.recipe.toml", lad / "mpeg2_ladder.recipe.toml")
    lines = gzip.decompress(LADDER.read_bytes()).decode().splitlines()
    # rung 5, frame 3: one byte more than the encoder makes
    k = next(i for i, ln in enumerate(lines) if ln.startswith("5,500000,3,"))
    f = lines[k].split(",")
    f[5] = str(int(f[5]) + 1)
    lines[k] = ",".join(f)
    (lad / "mpeg2_ladder.frames.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    work = tmp_path / "work"
    with pytest.raises(VideoInputError, match=r"does not give the ladder's bitstream.*frame 3 is \d+ bytes"):
        frozen_psnr(lad / "mpeg2_ladder.frames.csv.gz", [(5, 0, 1)], work)
    assert not (work / "source.yuv").exists()  # refused before the source was rendered


def test_frozen_pictures_are_measured_on_the_ladders_own_pictures(tmp_path: Path):
    lad = read_ladder(LADDER)
    sel = lad["rung"] == 5
    by_display = {int(d): (y, u, v) for d, y, u, v in zip(lad["display"][sel], lad["psnr_y"][sel],
                                                           lad["psnr_u"][sel], lad["psnr_v"][sel])}
    got = frozen_psnr(LADDER, [(5, 100, 100), (5, 100, 101), (5, 100, 160)], tmp_path / "w")
    # its own slot: the ladder's PSNR of that picture (ffmpeg's psnr filter, rounded to 0.01 dB)
    assert got[(5, 100, 100)] == pytest.approx(by_display[100], abs=0.0051)
    # a picture frozen for 2 s shows less of the source than one frame later or in its own slot
    assert got[(5, 100, 160)][0] < got[(5, 100, 101)][0] < got[(5, 100, 100)][0]
    assert not any((tmp_path / "w").iterdir())  # the raw source and the bitstream are removed
