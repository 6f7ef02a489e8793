"""The fast estimator against real decodes of the bundled CIF clip (1063 frames)."""

from __future__ import annotations

import numpy as np
import pytest

from qoelab.video.quality.estimate import estimate
from qoelab.video.quality.evaluate import evaluate
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.sources.encode import read_frames_csv
from qoelab.video.traces.trace import read_trace

from pathlib import Path

TRACES = Path(__file__).resolve().parents[2] / "data" / "traces"

# Seeds differ from those used to fit LAMBDA and KAPPA (100-102, docs/models/video.md).
CASES = [(0.01, 1), (0.05, 2), (0.10, 3)]


def test_regenerated_cif_encode_is_the_bundled_one(cif_clip):
    """The estimator test below decodes a regenerated stream; it must be the bundled trace's."""
    assert cif_clip.trace.read_bytes() == (TRACES / "cif_bbb_qp26.trace.csv").read_bytes()


@pytest.mark.parametrize("loss, seed", CASES)
def test_estimated_mean_psnr_within_1_5_db_of_real_decode(cif_clip, tmp_path, loss, seed):
    trace = read_trace(cif_clip.trace)
    rng = np.random.default_rng(seed)
    lost = (rng.random(trace.n_nal) < loss) & trace.vcl  # random slice loss
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    real = evaluate(cif_clip.trace, cif_clip.bitstream, log, recipe_path=cif_clip.recipe)
    est = estimate(trace, ~lost, read_frames_csv(cif_clip.frames))
    real_psnr = real.summary["mean_psnr_y_vs_source_db"]
    est_psnr = float(np.mean(est.psnr_y))
    print(f"loss {loss:.0%}: real {real_psnr:.2f} dB, estimate {est_psnr:.2f} dB, "
          f"YUV real {real.summary['mean_psnr_yuv_vs_source_db']:.2f} est {float(np.mean(est.psnr_yuv)):.2f}")
    assert abs(est_psnr - real_psnr) <= 1.5
    assert abs(float(np.mean(est.psnr_yuv)) - real.summary["mean_psnr_yuv_vs_source_db"]) <= 1.5
    # The loss must actually hurt, or the comparison says nothing.
    assert real_psnr < real.summary["ref_mean_psnr_y_vs_source_db"] - 0.3
    # Decodability is exact for this encode (one reference frame, no B pyramid):
    f = real.frames.to_pydict()
    assert list(est.decodable) == f["decodable"]
    # Decodable frames are bit-exact; a non-decodable one can still come out identical when the
    # lost area was static or is not referenced, so only the implication holds.
    identical = np.array(f["identical_to_decode"])
    assert identical[est.decodable].all()
    assert list(est.shown) == f["decoded"]
