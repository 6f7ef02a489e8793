"""Our metrics against the reference tools on a decoded-vs-source pair with 5 % slice loss:
ffmpeg's `psnr` and `ssim` filters and libvmaf (run here by ffmpeg directly on the damaged
decode we write and on the source ffmpeg regenerates itself)."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from qoelab.video.quality.evaluate import VMAF_MODEL, evaluate, load_recipe_source
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.tools import ffmpeg_exe, has_filter
from qoelab.video.traces.trace import read_trace


@pytest.fixture(scope="module")
def lossy(short_clip, tmp_path_factory):
    trace = read_trace(short_clip.trace)
    rng = np.random.default_rng(5)
    lost = (rng.random(trace.n_nal) < 0.05) & trace.vcl
    tmp = tmp_path_factory.mktemp("xtool")
    log = tmp / "recv.parquet"
    write_receive_log(synthetic_log(trace, lost), log)
    decoded = tmp / "decoded.yuv"
    res = evaluate(short_clip.trace, short_clip.bitstream, log, recipe_path=short_clip.recipe, vmaf=True,
                   decoded_out=decoded)
    assert res.summary["slices_lost_fraction"] > 0.02  # the loss happened
    return short_clip, res, decoded, tmp


def _ffmpeg_compare(clip, decoded, graph: str) -> None:
    spec = load_recipe_source(clip.recipe)
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{spec.width}x{spec.height}", "-r", f"{spec.fps:g}"]
    src = spec.input_args(base=clip.recipe.parent)
    vf = src.index("-vf")
    # The source's own filter chain, then the comparison filter with the damaged decode first.
    lavfi = f"[1:v]{src[vf + 1]}[src];[0:v][src]{graph}"
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *raw, "-i", str(decoded), *src[:vf],
           "-lavfi", lavfi, "-frames:v", "60", "-f", "null", "-"]
    subprocess.run(cmd, check=True, capture_output=True)


def test_psnr_equals_ffmpeg_psnr_filter(lossy):
    clip, res, decoded, tmp = lossy
    log = tmp / "psnr.log"
    _ffmpeg_compare(clip, decoded, f"psnr=shortest=1:stats_file={log}")
    ff_y, ff_all = [], []
    for line in log.read_text().splitlines():
        f = dict(kv.split(":", 1) for kv in line.split())
        ff_y.append(float(f["psnr_y"]) if f["psnr_y"] != "inf" else np.nan)
        ff_all.append(float(f["psnr_avg"]) if f["psnr_avg"] != "inf" else np.nan)
    ours = res.frames.to_pydict()
    assert len(ff_y) == len(ours["psnr_y_vs_source"]) == 60
    np.testing.assert_allclose(ours["psnr_y_vs_source"], ff_y, atol=0.01)
    np.testing.assert_allclose(ours["psnr_yuv_vs_source"], ff_all, atol=0.01)
    damaged = np.array(ours["status"]) != "intact"
    assert damaged.any()


def test_ssim_equals_ffmpeg_ssim_filter(lossy):
    clip, res, decoded, tmp = lossy
    log = tmp / "ssim.log"
    _ffmpeg_compare(clip, decoded, f"ssim=shortest=1:stats_file={log}")
    ff = [float(re.search(r"\bY:([0-9.]+)", line).group(1)) for line in log.read_text().splitlines()]
    ours = np.array(res.frames.column("ssim_y_vs_source").to_pylist())
    assert ours.size == len(ff) == 60
    np.testing.assert_allclose(ours, ff, atol=0.0005)
    # The Gaussian-window definition is a different number on the same pictures.
    assert res.summary["ssim_definition"].startswith("SSIM-Y, 8x8 blocks")


@pytest.mark.skipif(not has_filter("libvmaf"), reason="this ffmpeg has no libvmaf")
def test_vmaf_equals_libvmaf(lossy):
    clip, res, decoded, tmp = lossy
    log = tmp / "vmaf.json"
    _ffmpeg_compare(clip, decoded, f"libvmaf=shortest=1:model=version={VMAF_MODEL}:log_fmt=json:log_path={log}")
    import json

    ff = [f["metrics"]["vmaf"] for f in json.loads(log.read_text())["frames"]]
    ours = np.array(res.frames.column("vmaf_vs_source").to_pylist())
    assert ours.size == len(ff) == 60
    np.testing.assert_allclose(ours, ff, atol=0.1)
    s = res.summary
    assert VMAF_MODEL in s["vmaf"]
    # Against the source the undamaged picture is not perfect, unlike against the decode.
    assert s["mean_vmaf_vs_source"] < s["mean_vmaf_vs_decode"]
    assert 0 < s["mean_ms_ssim_y_vs_source"] < s["mean_ms_ssim_y_vs_decode"] <= 1
