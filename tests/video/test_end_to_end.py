"""End to end on a short real clip: drop chosen slices, decode, compare with the prediction."""

from __future__ import annotations

import numpy as np
import pytest

from qoelab.video.quality.evaluate import evaluate
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.traces.trace import read_trace

GOP = 15


def _frames_by_display(trace):
    disp = trace.frame_display()
    dec = np.empty_like(disp)
    dec[disp] = np.arange(disp.size)
    return dec  # decode index of each display slot


def _slices(trace, k):
    return np.flatnonzero((trace.frame == k) & trace.vcl)


@pytest.fixture(scope="module")
def run(short_clip, tmp_path_factory):
    trace = read_trace(short_clip.trace)
    stats = trace.stats()
    assert stats.gop_pattern == "IBBPBBPBBPBBPBP" and trace.n_frames == 60
    dec = _frames_by_display(trace)
    lost = np.zeros(trace.n_nal, bool)
    # GOP 0: the middle slice of the P frame shown at slot 3 (the error spreads over the GOP).
    s = _slices(trace, dec[3])
    assert s.size >= 2, "the P frame should have several slices"
    lost[s[s.size // 2]] = True
    # GOP 1: the whole B frame at slot 16.
    lost[_slices(trace, dec[GOP + 1])] = True
    # GOP 2: the whole last P frame (slot 14 of the GOP); the B frame before it loses a reference.
    lost[_slices(trace, dec[2 * GOP + 14])] = True
    # GOP 3: one slice of the I frame.
    lost[_slices(trace, dec[3 * GOP])[5]] = True
    tmp = tmp_path_factory.mktemp("e2e")
    log = tmp / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    damaged = tmp / "damaged.h264"
    result = evaluate(short_clip.trace, short_clip.bitstream, log, playout_delay_s=0.2,
                      recipe_path=short_clip.recipe, vmaf=True, damaged_out=damaged)
    return trace, lost, result, damaged


def test_decoded_picture_count_matches_prediction(run):
    trace, lost, result, _ = run
    s = result.summary
    whole_frames_lost = 2
    assert s["predicted_pictures"] == trace.n_frames - whole_frames_lost
    assert s["decoder_pictures"] == s["predicted_pictures"]
    assert s["repeated_slots"] == whole_frames_lost
    f = result.frames.to_pydict()
    not_shown = [d for d in range(trace.n_frames) if not f["decoded"][d]]
    assert not_shown == [GOP + 1, 2 * GOP + 14]
    assert s["nal_lost"] == int(lost.sum()) and s["parameter_sets_lost"] == []


def test_decodable_frames_follow_the_reference_structure(run):
    trace, _, result, _ = run
    f = result.frames.to_pydict()
    expected = {0}  # GOP 0: only the I frame survives the damaged P at slot 3
    expected |= set(range(GOP, 2 * GOP)) - {GOP + 1}  # GOP 1: all but the lost B
    expected |= set(range(2 * GOP, 3 * GOP)) - {2 * GOP + 13, 2 * GOP + 14}  # B13 needs the lost P14
    # GOP 3: the damaged I frame spoils everything.
    got = {d for d in range(trace.n_frames) if f["decodable"][d]}
    assert got == expected


def test_untouched_frames_have_exactly_the_reference_psnr(run):
    _, _, result, _ = run
    f = result.frames.to_pydict()
    for d, ok in enumerate(f["decodable"]):
        if ok:
            assert f["identical_to_decode"][d], d
            assert f["psnr_y_vs_source"][d] == f["ref_psnr_y_vs_source"][d]
            assert f["psnr_yuv_vs_source"][d] == f["ref_psnr_yuv_vs_source"][d]
            assert f["ssim_y_vs_source"][d] == f["ref_ssim_y_vs_source"][d] < 1.0
            assert f["ssim_y_vs_decode"][d] == 1.0
            assert np.isnan(f["psnr_y_vs_decode"][d])  # identical: no finite PSNR (EvalVid writes 0)
            assert f["mos"][d] == f["ref_mos"][d] > 0


def test_damaged_frames_have_lower_psnr(run):
    _, _, result, _ = run
    f = result.frames.to_pydict()
    damaged = [d for d, ok in enumerate(f["decodable"]) if not ok]
    assert len(damaged) == 60 - 28
    for d in damaged:
        assert not f["identical_to_decode"][d], d
        assert f["psnr_y_vs_source"][d] < f["ref_psnr_y_vs_source"][d], d
        assert np.isfinite(f["psnr_y_vs_decode"][d]) and f["ssim_y_vs_decode"][d] < 1.0
        assert f["ssim_y_vs_source"][d] < f["ref_ssim_y_vs_source"][d], d
    s = result.summary
    assert s["mean_psnr_y_vs_source_db"] < s["ref_mean_psnr_y_vs_source_db"]
    assert s["mean_ssim_y_vs_source"] < s["ref_mean_ssim_y_vs_source"]
    # Means against the decode leave identical frames out: only the 32 damaged ones count.
    vs_dec = np.array(f["psnr_y_vs_decode"], dtype=float)
    assert np.isfinite(vs_dec).sum() == 32 == 60 - s["identical_to_decode"]
    assert s["mean_psnr_y_vs_decode_db"] == pytest.approx(float(np.nanmean(vs_dec)))


def test_vmaf_is_real_and_lower_when_damaged(run):
    _, _, result, _ = run
    f = result.frames.to_pydict()
    ok = np.array(f["decodable"])
    for ref in ("source", "decode"):
        v = np.array(f[f"vmaf_vs_{ref}"], dtype=float)
        assert np.isfinite(v).all() and (v >= 0).all() and (v <= 100).all()
        assert v[ok].mean() > v[~ok].mean()
        m = np.array(f[f"ms_ssim_y_vs_{ref}"], dtype=float)
        assert (m > 0).all() and (m <= 1).all() and m[ok].mean() > m[~ok].mean()
    # An intact frame equals the undamaged decode, so VMAF against it is the model's maximum,
    # while against the source it shows the coding loss.
    assert np.array(f["vmaf_vs_source"], dtype=float)[ok].mean() < np.array(f["vmaf_vs_decode"], dtype=float)[ok].mean()


def test_damaged_bitstream_is_the_received_nal_units(run, short_clip):
    trace, lost, _, damaged = run
    assert damaged.stat().st_size == int(trace.size_bytes[~lost].sum())
    assert short_clip.bitstream.stat().st_size == int(trace.size_bytes.sum())


def test_late_nal_units_count_as_lost(short_clip, tmp_path):
    trace = read_trace(short_clip.trace)
    late = np.zeros(trace.n_nal, bool)
    late[np.flatnonzero(trace.frame == 20)] = True
    log = tmp_path / "late.csv"
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool), late_nal=late, late_by_ms=300), log)
    r = evaluate(short_clip.trace, short_clip.bitstream, log, playout_delay_s=0.2)
    assert r.summary["nal_late"] == int(late.sum()) and r.summary["nal_lost"] == 0
    assert r.summary["predicted_pictures"] == 59 == r.summary["decoder_pictures"]
    r = evaluate(short_clip.trace, short_clip.bitstream, log, playout_delay_s=0.5)
    assert r.summary["nal_late"] == 0 and r.summary["identical_to_decode"] == 60
    assert r.summary["mean_psnr_y_vs_decode_db"] is None  # no frame differs: no finite PSNR


def test_hevc_encode_trace_and_evaluate(tmp_path):
    """H.265 too: trace from the slice headers, damaged decode, prediction holds."""
    from qoelab.video.sources.encode import EncodeConfig, encode

    cfg = EncodeConfig(input="lavfi:testsrc2=size=320x240:rate=30", width=320, height=240, frames=30,
                       codec="hevc", gop=15, bframes=2, qp=30, slices=4, preset="ultrafast", threads=1)
    r = encode(cfg, tmp_path, "hevc")
    trace = read_trace(r.trace)
    s = trace.stats()
    assert s.frames == 30 and s.gop_length == 15 and s.gop_pattern.startswith("IBBP")
    assert r.bitstream.stat().st_size == s.total_bytes
    lost = np.zeros(trace.n_nal, bool)
    p_frame = int(np.flatnonzero(trace.frame_type() == 1)[0])
    lost[_slices(trace, p_frame)[1]] = True
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    res = evaluate(r.trace, r.bitstream, log, recipe_path=r.recipe)
    f = res.frames.to_pydict()
    assert res.summary["decoder_pictures"] == res.summary["predicted_pictures"] == 30
    assert (np.bincount(trace.frame[trace.vcl]) == 4).all()  # four slice segments per picture
    for d, ok in enumerate(f["decodable"]):
        if ok:
            assert f["identical_to_decode"][d], d
    assert not all(f["decodable"]) and any(f["decodable"])
    assert res.summary["mean_psnr_y_vs_source_db"] < res.summary["ref_mean_psnr_y_vs_source_db"]


def test_vmaf_on_pictures_too_small_for_ms_ssim(tmp_path):
    """libvmaf's MS-SSIM cannot run below 176 pixels a side; VMAF still can, and says so."""
    from qoelab.video.sources.encode import EncodeConfig, encode

    cfg = EncodeConfig(input="lavfi:testsrc2=size=160x120:rate=30", width=160, height=120, frames=12, gop=6,
                       bframes=1, qp=30, preset="ultrafast", threads=1)
    r = encode(cfg, tmp_path, "small")
    trace = read_trace(r.trace)
    lost = np.zeros(trace.n_nal, bool)
    lost[_slices(trace, 3)] = True
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    res = evaluate(r.trace, r.bitstream, log, recipe_path=r.recipe, vmaf=True)
    s = res.summary
    assert "no MS-SSIM" in s["vmaf"] and s["mean_ms_ssim_y_vs_source"] is None
    assert 0 < s["mean_vmaf_vs_source"] <= 100
