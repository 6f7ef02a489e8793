"""EvalVid-style evaluation with real decoding.

Given the sender's trace and bitstream and the simulator's receive log:

1. decide per NAL unit whether it arrived by its playout deadline (`recvlog.deliver`);
2. rebuild the damaged bitstream from the NAL units that did (lost parameter sets are reported,
   never restored);
3. decode it with FFmpeg's error concealment and put every picture in its display slot,
   repeating the previous slot for pictures that never came out (`decode.py`);
4. compare each slot with the undamaged decode: PSNR (Y and YUV), SSIM (Y), optionally VMAF; and,
   when the encode's recipe is given, with the source video (the PSNR EvalVid reports);
5. summarise: frame loss by type, decodable frame rate, mean PSNR/SSIM, EvalVid's MOS and MIV.

Per-frame results are an Arrow table (written as Parquet); the summary is a plain dict.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .bitstream import parse_nal_units
from .decode import DecodeReport, decode_display_order, probe_video, read_source_frames
from .errors import VideoInputError
from .estimate import decodable, frame_delivery
from .metrics import PSNR_MAX, mos, miv, plane_mse, psnr, ssim_y
from .recvlog import NalDelivery, deliver, read_receive_log
from .tools import ffmpeg_exe, has_filter
from .trace import TYPE_NAMES, NalTrace, read_trace

__all__ = ["EvalResult", "evaluate", "format_summary", "evaluate_delivery", "source_args_from_recipe", "codec_of"]

_PARAM_SETS = {"h264": {7: "SPS", 8: "PPS"}, "hevc": {32: "VPS", 33: "SPS", 34: "PPS"}}


@dataclass
class EvalResult:
    frames: pa.Table  # one row per display slot
    summary: dict

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        import pyarrow.parquet as pq

        pq.write_table(self.frames, path)


def codec_of(path: str | os.PathLike[str]) -> str:
    ext = Path(path).suffix.lower()
    if ext in (".h264", ".264", ".avc"):
        return "h264"
    if ext in (".hevc", ".h265", ".265"):
        return "hevc"
    raise VideoInputError(path, "cannot tell the codec from the extension (use .h264 or .hevc)")


def source_args_from_recipe(recipe_path: str | os.PathLike[str]) -> list[str]:
    """ffmpeg input arguments that regenerate an encode's source, with file paths resolved
    relative to the recipe."""
    p = Path(recipe_path)
    try:
        recipe = tomllib.loads(p.read_text(encoding="utf-8"))
        args = list(recipe["source"]["ffmpeg_input_args"])
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise VideoInputError(p, f"cannot read source from recipe: {exc}") from None
    for i, a in enumerate(args[:-1]):
        if a == "-i" and "lavfi" not in args[:i] and not os.path.isabs(args[i + 1]):
            args[i + 1] = str((p.parent / args[i + 1]).resolve())
    return args


def evaluate(trace_path, bitstream_path, log_path, *, playout_delay_s: float = 0.5, flows=None,
             recipe_path=None, vmaf: bool = False, damaged_out=None, stream_start_ns=None,
             threads: int = 1, miv_interval: int = 25) -> EvalResult:
    """Evaluate a simulated delivery of `bitstream_path` described by `trace_path`."""
    trace = read_trace(trace_path)
    log = read_receive_log(log_path, flows)
    delivery = deliver(trace, log, playout_delay_s, stream_start_ns)
    return evaluate_delivery(trace, bitstream_path, delivery, recipe_path=recipe_path, vmaf=vmaf,
                             damaged_out=damaged_out, threads=threads, miv_interval=miv_interval)


def _load_bitstream(path, trace: NalTrace, codec: str):
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise VideoInputError(path, f"cannot read bitstream: {exc.strerror}") from None
    try:
        nals = parse_nal_units(data, codec)
    except ValueError as exc:
        raise VideoInputError(path, f"malformed bitstream: {exc}") from None
    if len(nals) != trace.n_nal:
        raise VideoInputError(path, f"bitstream has {len(nals)} NAL units, the trace {trace.n_nal}: not the traced encode")
    sizes = np.array([u.size for u in nals])
    wrong = np.flatnonzero(sizes != trace.size_bytes)
    if wrong.size:
        i = int(wrong[0])
        raise VideoInputError(path, f"NAL unit {i} is {sizes[i]} bytes, the trace says {trace.size_bytes[i]}: not the traced encode")
    return data, nals


def evaluate_delivery(trace: NalTrace, bitstream_path, delivery: NalDelivery, *, recipe_path=None,
                      vmaf: bool = False, damaged_out=None, threads: int = 1, miv_interval: int = 25) -> EvalResult:
    """Like `evaluate`, with the delivery already worked out (e.g. from `recvlog.synthetic_log`)."""
    t_start = time.perf_counter()
    codec = codec_of(bitstream_path)
    data, nals = _load_bitstream(bitstream_path, trace, codec)
    info = probe_video(str(bitstream_path))
    width, height = info["width"], info["height"]
    fps = trace.fps()
    received = delivery.received
    n = trace.n_frames
    starts = trace.frame_start()

    def chunk(i: int) -> bytes:
        return data[nals[i].offset: nals[i].offset + nals[i].size]

    ref_packets = [b"".join(chunk(i) for i in range(starts[k], starts[k + 1])) for k in range(n)]
    dmg_packets = [b"".join(chunk(i) for i in range(starts[k], starts[k + 1]) if received[i]) or None for k in range(n)]
    if damaged_out is not None:
        Path(damaged_out).write_bytes(b"".join(p for p in dmg_packets if p))
    lost_ps = [(i, int(trace.frame[i]), _PARAM_SETS[codec][nals[i].nal_type])
               for i in np.flatnonzero(~received) if nals[i].nal_type in _PARAM_SETS[codec] and not nals[i].vcl]
    display = trace.frame_display()
    src_iter = None
    if recipe_path is not None:
        src_iter = read_source_frames(source_args_from_recipe(recipe_path), width, height, path=str(recipe_path), limit=n)
    rep_ref, rep_dmg = DecodeReport(), DecodeReport()
    ref_iter = decode_display_order(ref_packets, display, codec, width, height, threads=threads, report=rep_ref)
    dmg_iter = decode_display_order(dmg_packets, display, codec, width, height, threads=threads, report=rep_dmg)
    cols = {c: np.full(n, np.nan) for c in ("mse_y", "mse_yuv", "ssim_y", "src_mse_y", "src_mse_yuv", "ref_src_mse_y", "ref_src_mse_yuv")}
    identical = np.zeros(n, bool)
    tmpdir = tempfile.TemporaryDirectory(prefix="qoelab-vmaf-") if vmaf else None
    vmaf_note = "not computed (pass vmaf=True / --vmaf)"
    if vmaf and not has_filter("libvmaf"):
        vmaf_note = "unavailable: this ffmpeg has no libvmaf filter"
        tmpdir.cleanup()
        tmpdir = None
    ref_yuv = dmg_yuv = None
    if tmpdir is not None:
        ref_yuv = open(Path(tmpdir.name) / "ref.yuv", "wb")
        dmg_yuv = open(Path(tmpdir.name) / "dmg.yuv", "wb")
    try:
        for d, (ref, dmg) in enumerate(zip(ref_iter, dmg_iter, strict=True)):
            cols["mse_y"][d], cols["mse_yuv"][d] = plane_mse(dmg, ref, height)
            identical[d] = cols["mse_yuv"][d] == 0.0
            cols["ssim_y"][d] = 1.0 if identical[d] else ssim_y(dmg, ref, height)
            if src_iter is not None:
                src = next(src_iter, None)
                if src is None:
                    raise VideoInputError(recipe_path, f"source ended after {d} frames, the trace has {n}")
                cols["src_mse_y"][d], cols["src_mse_yuv"][d] = plane_mse(dmg, src, height)
                cols["ref_src_mse_y"][d], cols["ref_src_mse_yuv"][d] = plane_mse(ref, src, height)
            if ref_yuv is not None:
                ref_yuv.write(ref.tobytes())
                dmg_yuv.write(dmg.tobytes())
        if src_iter is not None:
            src_iter.close()
        vmaf_scores = None
        if tmpdir is not None:
            ref_yuv.close()
            dmg_yuv.close()
            vmaf_scores = _vmaf(Path(tmpdir.name), width, height, fps, n, threads)
            vmaf_note = "computed (libvmaf, default model)"
    finally:
        if tmpdir is not None:
            tmpdir.cleanup()
    if rep_ref.decoded != n:
        raise VideoInputError(bitstream_path, f"undamaged stream decoded to {rep_ref.decoded} of {n} pictures")
    decode_s = time.perf_counter() - t_start

    fd = frame_delivery(trace, received)
    ok = decodable(trace, fd)
    ftype = trace.frame_type()
    dec_of_disp = np.empty(n, np.int64)
    dec_of_disp[display] = np.arange(n)
    status = np.where(fd.intact, "intact", np.where(fd.lost, "lost", "damaged"))[dec_of_disp]
    psnr_y, psnr_yuv = psnr(cols["mse_y"]), psnr(cols["mse_yuv"])
    have_src = src_iter is not None
    if have_src:
        q_y, ref_q_y = psnr(cols["src_mse_y"]), psnr(cols["ref_src_mse_y"])
    else:
        q_y, ref_q_y = psnr_y, np.full(n, PSNR_MAX)
    m, ref_m = mos(q_y), mos(ref_q_y)
    table = {
        "display": np.arange(n),
        "frame": dec_of_disp,
        "type": TYPE_NAMES[ftype[dec_of_disp]],
        "slices": fd.slices[dec_of_disp],
        "slices_received": fd.slices_received[dec_of_disp],
        "status": status,
        "decodable": ok[dec_of_disp],
        "decoded": rep_dmg.decoded_mask,
        "identical": identical,
        "psnr_y": psnr_y,
        "psnr_yuv": psnr_yuv,
        "ssim_y": cols["ssim_y"],
    }
    if have_src:
        table |= {"src_psnr_y": q_y, "src_psnr_yuv": psnr(cols["src_mse_yuv"]),
                  "ref_src_psnr_y": ref_q_y, "ref_src_psnr_yuv": psnr(cols["ref_src_mse_yuv"])}
    table |= {"mos": m, "ref_mos": ref_m}
    table["vmaf"] = pa.array(vmaf_scores if vmaf_scores is not None else [None] * n, pa.float64())
    frames = pa.table(table)

    by_type = {}
    for code, name in ((0, "I"), (1, "P"), (2, "B")):
        sel = ftype == code
        by_type[name] = {
            "frames": int(sel.sum()),
            "lost": int((fd.lost & sel).sum()),
            "damaged": int((~fd.intact & ~fd.lost & sel).sum()),
            "not_decodable": int((~ok & sel).sum()),
        }
    vcl = trace.vcl
    summary = {
        "frames": n,
        "fps": round(fps, 3),
        "playout_delay_ms": delivery.playout_delay_ns / 1e6,
        "stream_start_ns": delivery.stream_start_ns,
        "nal_units": trace.n_nal,
        "nal_received": int(received.sum()),
        "nal_lost": int((delivery.sent & ~delivery.arrived).sum()),
        "nal_late": int(delivery.late.sum()),
        "nal_unsent": int((~delivery.sent).sum()),
        "slices_lost_fraction": float(1 - received[vcl].mean()),
        "parameter_sets_lost": [{"nal": i, "frame": f, "kind": k} for i, f, k in lost_ps],
        "frame_loss_by_type": by_type,
        "decodable_frame_rate": float(ok.mean()),
        "decoder_pictures": rep_dmg.decoded,
        "predicted_pictures": int((~fd.lost).sum()),
        "repeated_slots": rep_dmg.repeated,
        "decoder_errors": rep_dmg.errors,
        "misordered_pictures": rep_dmg.misordered,
        "identical_frames": int(identical.sum()),
        "mean_psnr_y_vs_decode_db": float(psnr_y.mean()),
        "mean_psnr_yuv_vs_decode_db": float(psnr_yuv.mean()),
        "mean_ssim_y_vs_decode": float(np.mean(cols["ssim_y"])),
        "mean_mos": float(m.mean()),
        "mean_ref_mos": float(ref_m.mean()),
        "mos_histogram": {str(s): int((m == s).sum()) for s in range(1, 6)},
        "miv_interval": miv_interval,
        "mean_miv_percent": float(miv(m, ref_m, miv_interval).mean()),
        "vmaf": vmaf_note,
        "evaluate_s": round(time.perf_counter() - t_start, 3),
        "decode_and_compare_s": round(decode_s, 3),
    }
    if have_src:
        summary |= {
            "mean_psnr_y_db": float(q_y.mean()),
            "mean_psnr_yuv_db": float(psnr(cols["src_mse_yuv"]).mean()),
            "reference_mean_psnr_y_db": float(ref_q_y.mean()),
        }
    if vmaf_scores is not None:
        summary["mean_vmaf"] = float(np.mean(vmaf_scores))
    return EvalResult(frames, summary)


def _vmaf(tmp: Path, width: int, height: int, fps: float, n: int, threads: int) -> list[float]:
    log = tmp / "vmaf.json"
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}", "-r", f"{fps:g}"]
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error", *raw, "-i", str(tmp / "dmg.yuv"),
           *raw, "-i", str(tmp / "ref.yuv"),
           "-lavfi", f"[0:v][1:v]libvmaf=log_fmt=json:log_path={log}:n_threads={max(1, threads)}", "-f", "null", "-"]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise VideoInputError("libvmaf", f"VMAF failed: {msg[-1] if msg else proc.returncode}")
    frames = json.loads(log.read_text())["frames"]
    scores = [float(f["metrics"]["vmaf"]) for f in frames]
    if len(scores) != n:
        raise VideoInputError("libvmaf", f"VMAF scored {len(scores)} of {n} frames")
    return scores


def _param_sets_line(lost: list[dict]) -> str:
    if not lost:
        return "none"
    shown = ", ".join(f"{p['kind']} (nal {p['nal']}, frame {p['frame']})" for p in lost[:4])
    return f"{len(lost)}: {shown}" + (", ..." if len(lost) > 4 else "")


def format_summary(s: dict) -> str:
    """The summary as an aligned text table."""
    rows = [
        ("frames", f"{s['frames']} at {s['fps']:g} fps, playout delay {s['playout_delay_ms']:g} ms"),
        ("NAL units", f"{s['nal_units']}: received {s['nal_received']}, lost {s['nal_lost']}, late {s['nal_late']}, unsent {s['nal_unsent']}"),
        ("slice loss", f"{100 * s['slices_lost_fraction']:.2f} %"),
        ("parameter sets lost", _param_sets_line(s["parameter_sets_lost"])),
    ]
    for t, v in s["frame_loss_by_type"].items():
        rows.append((f"{t} frames", f"{v['frames']}: lost {v['lost']}, damaged {v['damaged']}, not decodable {v['not_decodable']}"))
    rows += [
        ("decodable frame rate", f"{s['decodable_frame_rate']:.4f}"),
        ("decoder pictures", f"{s['decoder_pictures']} (predicted {s['predicted_pictures']}), repeated slots {s['repeated_slots']}"),
    ]
    if "mean_psnr_y_db" in s:
        rows.append(("PSNR vs source", f"Y {s['mean_psnr_y_db']:.2f} dB, YUV {s['mean_psnr_yuv_db']:.2f} dB (undamaged: Y {s['reference_mean_psnr_y_db']:.2f} dB)"))
    rows += [
        ("PSNR vs undamaged", f"Y {s['mean_psnr_y_vs_decode_db']:.2f} dB, YUV {s['mean_psnr_yuv_vs_decode_db']:.2f} dB (identical frames count as {PSNR_MAX:g} dB)"),
        ("SSIM vs undamaged", f"{s['mean_ssim_y_vs_decode']:.4f}"),
        ("MOS", f"{s['mean_mos']:.2f} (undamaged {s['mean_ref_mos']:.2f}); histogram {s['mos_histogram']}"),
        ("MIV", f"{s['mean_miv_percent']:.1f} % of frames worse than undamaged per {s['miv_interval']}-frame interval"),
        ("VMAF", f"{s['mean_vmaf']:.2f}" if "mean_vmaf" in s else s["vmaf"]),
        ("time", f"{s['evaluate_s']:.2f} s"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)
