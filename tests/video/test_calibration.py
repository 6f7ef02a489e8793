"""Per-trace calibration of the estimator (issue 22, item 4): `video calibrate` fits λ, κ, γ
from real decodes and stores them beside the trace; `video estimate` uses them automatically and
says so; a calibration that does not belong to the trace, or is out of range, is refused."""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import pytest
import tomli_w

from qoelab.video.cli import main
from qoelab.video.quality.calibrate import read_calibration
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.traces.trace import read_trace


@pytest.fixture(scope="module")
def calibrated(short_clip, tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    for p in (short_clip.trace, short_clip.bitstream, short_clip.recipe, short_clip.frames):
        shutil.copy(p, d / p.name)
    trace_path = d / short_clip.trace.name
    rc = main(["video", "calibrate", str(trace_path), str(d / short_clip.bitstream.name), "--losses", "0.03,0.08",
               "--seeds", "1000"])
    assert rc == 0
    trace = read_trace(trace_path)
    lost = (np.random.default_rng(9).random(trace.n_nal) < 0.05) & trace.vcl
    write_receive_log(synthetic_log(trace, lost), d / "recv.parquet")
    return d, trace_path


def _estimate(capsys, trace_path, *extra):
    out = trace_path.parent / "e.json"
    rc = main(["video", "estimate", str(trace_path), str(trace_path.parent / "recv.parquet"), "--json", str(out),
               *extra])
    err = capsys.readouterr().err
    return rc, err, (json.loads(out.read_text()) if rc == 0 else None)


def test_calibration_file_beside_the_trace(calibrated):
    d, trace_path = calibrated
    path = d / "short.calibration.toml"
    c = read_calibration(path, trace_path)
    assert c.runs == 2 and len(c.table) == 2
    assert {r["loss"] for r in c.table} == {0.03, 0.08}
    # The grid holds the default constants, so the fit is never worse than them on its own runs.
    assert c.rms_db <= c.rms_uncalibrated_db
    for row in c.table:
        assert row["real_psnr_y_db"] < 45 and abs(row["estimate_calibrated_db"] - row["real_psnr_y_db"]) <= c.rms_db * 2 + 1e-9


def test_estimate_uses_the_calibration_and_says_so(calibrated, capsys):
    d, trace_path = calibrated
    c = read_calibration(d / "short.calibration.toml")
    rc, err, s = _estimate(capsys, trace_path)
    assert rc == 0, err
    assert s["calibration"].startswith("calibrated for this trace")
    assert (s["lambda"], s["kappa"], s["gamma"]) == (c.lam, c.kappa, c.gamma)
    rc, err, s0 = _estimate(capsys, trace_path, "--uncalibrated")
    assert rc == 0 and s0["calibration"].startswith("uncalibrated")
    assert (s0["lambda"], s0["kappa"], s0["gamma"]) == (0.9, 0.9, 1.0)
    if (c.lam, c.kappa, c.gamma) != (0.9, 0.9, 1.0):
        assert s["mean_psnr_y_vs_source_db"] != s0["mean_psnr_y_vs_source_db"]


@pytest.mark.parametrize("edit, fragment", [
    (lambda doc: doc["estimator"].update(gamma=5.0), "estimator.gamma: must be a number in [0, 2]"),
    (lambda doc: doc["estimator"].update(lambda_="x") or doc["estimator"].pop("lambda"), "estimator.lambda"),
    (lambda doc: doc["trace"].update(sha256="0" * 64), "trace.sha256: the calibration is for another trace"),
])
def test_bad_calibration_is_a_clean_error(calibrated, tmp_path, capsys, edit, fragment):
    d, trace_path = calibrated
    copy = tmp_path / "b"
    shutil.copytree(d, copy)
    path = copy / "short.calibration.toml"
    doc = tomllib.loads(path.read_text())
    edit(doc)
    path.write_text(tomli_w.dumps(doc))
    rc, err, _ = _estimate(capsys, copy / trace_path.name)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"qoelab: {path}: ") and fragment in lines[0], err


def test_estimated_error_is_affine_in_kappa(short_clip):
    """The calibration's fast κ axis relies on it: E(κ) = E(0) + κ·(E(1) − E(0)) for every frame."""
    from qoelab.video.quality.estimate import estimate
    from qoelab.video.sources.encode import read_frames_csv

    trace = read_trace(short_clip.trace)
    frames = read_frames_csv(short_clip.frames)
    rec = ~((np.random.default_rng(4).random(trace.n_nal) < 0.1) & trace.vcl)
    for lam, gamma in ((0.6, 0.5), (1.0, 1.0)):
        e0, e1, ek = (estimate(trace, rec, frames, lam=lam, kappa=k, gamma=gamma).err_mse_y for k in (0.0, 1.0, 0.37))
        assert (e1 > e0).any()
        np.testing.assert_allclose(ek, e0 + 0.37 * (e1 - e0), rtol=1e-12, atol=1e-9)
