"""A trace bundle evaluates with the same numbers after it is moved (issue 22, item 5): the
recipe names its source by kind, a file source by a path relative to the bundle plus its SHA-256,
found through the search path when the relative path no longer leads to it."""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import pytest

from qoelab.video.cli import main
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.sources.bundle import _PINGPONG
from qoelab.video.sources.encode import EncodeConfig, encode
from qoelab.video.sources.source import CLIP, sha256_of
from qoelab.video.traces.trace import read_trace

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


def _legacy_cif_recipe() -> dict:
    """The bundled CIF recipe as it was before sources had a vocabulary (raw ffmpeg arguments)."""
    import subprocess

    text = subprocess.run(["git", "show", "c26808b:data/traces/cif_bbb_qp26.recipe.toml"], capture_output=True,
                          text=True, check=True, cwd=CLIP.parents[2]).stdout
    return tomllib.loads(text)


def test_migrate_recipe_of_the_previous_format(tmp_path, capsys):
    import tomli_w

    from qoelab.video.quality.evaluate import load_recipe_source

    legacy = _legacy_cif_recipe()
    old_args = legacy["source"]["ffmpeg_input_args"]
    assert old_args[1] == "../clips/bigbuckbunny.mp4"
    (tmp_path / "clips").mkdir()
    (tmp_path / "traces").mkdir()
    shutil.copy(CLIP, tmp_path / "clips" / "bigbuckbunny.mp4")
    recipe = tmp_path / "traces" / "cif.recipe.toml"
    recipe.write_text(tomli_w.dumps(legacy))
    rc = main(["video", "migrate-recipe", str(recipe)])
    assert rc == 0, capsys.readouterr().err
    spec = load_recipe_source(recipe)
    assert (spec.kind, spec.path, spec.sha256) == ("file", "../clips/bigbuckbunny.mp4", sha256_of(CLIP))
    new_args = spec.input_args(base=recipe.parent)
    # The same ffmpeg input as before, the file now opened through file: by absolute path.
    assert new_args[0] == "-i" and new_args[1] == f"file:{(tmp_path / 'clips' / 'bigbuckbunny.mp4').resolve()}"
    assert new_args[2:] == old_args[2:]


@pytest.mark.parametrize("args, fragment", [
    (["-i", "x.mp4", "-vf", "fps=30,scale=352:288:flags=bicubic,format=yuv420p", "-r", "30", "out.png"], "not a shape"),
    (["-f", "lavfi", "-i", "movie=/etc/passwd", "-vf", "fps=30,scale=352:288:flags=bicubic,format=yuv420p", "-r", "30"],
     "lavfi source must be one test source"),
    (["-i", "x.mp4", "-vf", "signature=filename=/tmp/s,fps=30,scale=352:288:flags=bicubic,format=yuv420p", "-r", "30"],
     "filter 'signature' is not allowed"),
    (["-i", "x.mp4", "-vf", "fps=30,scale=352:288,format=yuv420p,psnr", "-r", "30"], "does not end as qoelab wrote"),
])
def test_migrate_recipe_refuses_anything_else(tmp_path, capsys, args, fragment):
    import tomli_w

    (tmp_path / "x.mp4").write_bytes(CLIP.read_bytes())
    recipe = tmp_path / "r.recipe.toml"
    before = tomli_w.dumps({"name": "r", "source": {"ffmpeg_input_args": args}})
    recipe.write_text(before)
    rc = main(["video", "migrate-recipe", str(recipe)])
    err = capsys.readouterr().err
    assert rc == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert recipe.read_text() == before and not (tmp_path / "out.png").exists()
