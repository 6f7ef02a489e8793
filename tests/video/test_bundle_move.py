"""A trace bundle evaluates with the same numbers after it is moved (issue 22, item 5): the
recipe names its source by kind, a file source by a path relative to the bundle plus its SHA-256,
found through the search path when the relative path no longer leads to it."""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import pytest

from qoelab.video.bundle import CLIP, _PINGPONG
from qoelab.video.cli import main
from qoelab.video.encode import EncodeConfig, encode
from qoelab.video.recvlog import synthetic_log, write_receive_log
from qoelab.video.source import sha256_of
from qoelab.video.trace import read_trace

_TIMING = ("evaluate_s", "decode_and_compare_s")


@pytest.fixture(scope="module")
def file_bundle(tmp_path_factory):
    """30 CIF frames encoded from a video file that is not a bundled clip, with a lossy log."""
    root = tmp_path_factory.mktemp("move")
    (root / "media").mkdir()
    movie = root / "media" / "movie.mp4"
    shutil.copy(CLIP, movie)
    cfg = EncodeConfig(input=str(movie), width=352, height=288, fps=30.0, frames=30, filters=_PINGPONG, retime=True,
                       gop=15, bframes=2, qp=30, slice_max_bytes=900, preset="veryfast")
    r = encode(cfg, root / "bundle", "mv")
    trace = read_trace(r.trace)
    lost = (np.random.default_rng(3).random(trace.n_nal) < 0.05) & trace.vcl
    write_receive_log(synthetic_log(trace, lost), root / "bundle" / "recv.parquet")
    return root, movie, r


def _evaluate(capsys, bundle, *extra):
    out = bundle / "summary.json"
    rc = main(["video", "evaluate", str(bundle / "mv.trace.csv"), str(bundle / "mv.h264"), str(bundle / "recv.parquet"),
               "--json", str(out), *map(str, extra)])
    err = capsys.readouterr().err
    if rc != 0:
        return rc, err, None
    s = json.loads(out.read_text())
    return rc, err, {k: v for k, v in s.items() if k not in _TIMING}


def test_recipe_records_the_file_relative_to_the_bundle_with_its_hash(file_bundle):
    root, movie, r = file_bundle
    src = tomllib.loads(r.recipe.read_text())["source"]
    assert src["kind"] == "file" and src["path"] == "../media/movie.mp4"
    assert src["sha256"] == sha256_of(movie)
    assert str(root) not in r.recipe.read_text()  # no absolute path of this machine


def test_moved_bundle_evaluates_with_the_same_numbers(file_bundle, tmp_path, capsys, monkeypatch):
    root, movie, r = file_bundle
    rc, err, before = _evaluate(capsys, root / "bundle")
    assert rc == 0, err
    assert before["mean_psnr_y_vs_source_db"] < before["ref_mean_psnr_y_vs_source_db"]  # the loss shows
    # 1. Bundle and media moved together, deeper: the relative path still holds.
    shutil.copytree(root, tmp_path / "a" / "b" / "copy")
    rc, err, s = _evaluate(capsys, tmp_path / "a" / "b" / "copy" / "bundle")
    assert rc == 0, err
    assert s == before
    # 2. The bundle alone, elsewhere: the source is not found, a clean error says where to look.
    alone = tmp_path / "alone" / "bundle"
    shutil.copytree(root / "bundle", alone)
    rc, err, _ = _evaluate(capsys, alone)
    assert rc == 2 and "--source-dir" in err and len(err.strip().splitlines()) == 1
    # ... and found by name and hash through --source-dir or QOELAB_SOURCE_PATH.
    rc, err, s = _evaluate(capsys, alone, "--source-dir", root / "media")
    assert rc == 0, err
    assert s == before
    monkeypatch.setenv("QOELAB_SOURCE_PATH", str(root / "media"))
    rc, err, s = _evaluate(capsys, alone)
    assert rc == 0, err
    assert s == before
    # 3. A different file of the same name in the search path is not taken for the source.
    other = tmp_path / "other"
    other.mkdir()
    (other / "movie.mp4").write_bytes(movie.read_bytes()[:-1000])
    monkeypatch.setenv("QOELAB_SOURCE_PATH", str(other))
    rc, err, _ = _evaluate(capsys, alone)
    assert rc == 2 and "SHA-256" in err


def test_bundled_traces_evaluate_from_a_moved_copy(cif_clip, tmp_path, capsys):
    """The bundled CIF recipe (a bundled clip by name) works from any folder."""
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for p in (cif_clip.trace, cif_clip.bitstream, cif_clip.recipe):
        shutil.copy(p, moved / p.name)
    trace = read_trace(cif_clip.trace)
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), moved / "recv.parquet")
    rc = main(["video", "evaluate", str(moved / cif_clip.trace.name), str(moved / cif_clip.bitstream.name),
               str(moved / "recv.parquet"), "--json", str(moved / "s.json")])
    assert rc == 0, capsys.readouterr().err
    s = json.loads((moved / "s.json").read_text())
    recipe = tomllib.loads(cif_clip.recipe.read_text())
    assert s["ref_mean_psnr_y_vs_source_db"] == pytest.approx(recipe["reference_quality"]["mean_psnr_y_db"], abs=1e-3)
