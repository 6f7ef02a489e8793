"""EvalVid-style evaluation with real decoding.

Given the sender's trace and bitstream and the simulator's receive log:

1. decide per NAL unit whether it arrived by its playout deadline (`recvlog.deliver`);
2. rebuild the damaged bitstream from the NAL units that did (lost parameter sets are reported,
   never restored);
3. decode it with FFmpeg's error concealment and put every picture in its display slot,
   repeating the previous slot for pictures that never came out (`decode.py`);
4. compare each slot with two references, each labelled in column and summary names:
   - `*_vs_source`: the source video, regenerated from the encode's recipe (what EvalVid,
     Netflix's VMAF tool and papers report);
   - `*_vs_decode`: the undamaged decode of the same bitstream (isolates the loss);
   with PSNR (Y and YUV), SSIM (Y; 8×8 blocks as ffmpeg's `ssim` filter, or Wang's Gaussian
   window), and with `vmaf=True` libvmaf's VMAF (model `VMAF_MODEL`) and MS-SSIM (libvmaf's
   `float_ms_ssim`). The undamaged decode is also compared with the source (`ref_*`);
5. summarise: frame loss by type, decodable frame rate, mean metrics, EvalVid's MOS and MIV
   (`metrics.EvalVidMos`, from PSNR-Y against the source).

PSNR of identical pictures (MSE 0) is NaN in the per-frame table and left out of the means (the
summary counts them); EvalVid writes 0 there and its MOS skips them.

Per-frame results are an Arrow table (written as Parquet); the summary is a plain dict of JSON
types.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..errors import VideoInputError
from ..pictures.decode import DecodeReport, decode_display_order, probe_video, read_source_frames
from ..pictures.metrics import SSIM_DEFINITIONS, EvalVidMos, plane_mse, psnr_evalvid
from ..receiver.messages import LATE_POLICIES, MESSAGE_COLUMNS, deliver_messages
from ..receiver.recvlog import NalDelivery, deliver, read_receive_log
from ..sources.source import SourceSpec, load_small_toml, load_source
from ..tools import ffmpeg_exe, guard_inputs, has_filter
from ..traces.bitstream import parse_nal_units
from ..traces.trace import TYPE_NAMES, NalTrace, read_trace
from .estimate import decodable, frame_delivery

__all__ = ["EvalResult", "evaluate", "format_summary", "evaluate_delivery", "load_recipe_source", "codec_of",
           "VMAF_MODEL", "SSIM_NAMES", "json_native"]

_PARAM_SETS = {"h264": {7: "SPS", 8: "PPS"}, "hevc": {32: "VPS", 33: "SPS", 34: "PPS"}}
VMAF_MODEL = "vmaf_v0.6.1"  # libvmaf's built-in default model, named explicitly
MS_SSIM_MIN_SIDE = 176  # pixels: 176 / 2⁴ = 11, the window at MS-SSIM's coarsest scale
SSIM_NAMES = {"block": "SSIM-Y, 8x8 blocks stepping by 4 (ffmpeg ssim filter, x264, EvalVid)",
              "gaussian": "SSIM-Y, 11x11 Gaussian window, sigma 1.5 (Wang et al. 2004)"}


def json_native(obj):
    """`obj` with numpy scalars and arrays turned into Python numbers and lists, and non-finite
    floats into None, so that `json.dumps` writes standard JSON."""
    if isinstance(obj, dict):
        return {str(k): json_native(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_native(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [json_native(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@dataclass
class EvalResult:
    frames: pa.Table  # one row per display slot
    summary: dict

    def write_parquet(self, path: str | os.PathLike[str]) -> None:
        import pyarrow.parquet as pq

        pq.write_table(self.frames, path)

    def write_json(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(json_native(self.summary), indent=2, allow_nan=False) + "\n")


def codec_of(path: str | os.PathLike[str]) -> str:
    ext = Path(path).suffix.lower()
    if ext in (".h264", ".264", ".avc"):
        return "h264"
    if ext in (".hevc", ".h265", ".265"):
        return "hevc"
    raise VideoInputError(path, "cannot tell the codec from the extension (use .h264 or .hevc)")


_MAX_RECIPE_BYTES = 1 << 20


def load_recipe_source(recipe_path: str | os.PathLike[str]) -> SourceSpec:
    """The checked source of an encode's recipe (see `source.py`: never raw ffmpeg arguments)."""
    p = Path(recipe_path)
    recipe = load_small_toml(p, "recipe", _MAX_RECIPE_BYTES)
    return load_source(recipe, p)


def evaluate(trace_path, bitstream_path, log_path, *, playout_delay_s: float = 0.5, flows=None,
             recipe_path=None, source_dirs=(), vmaf: bool = False, ssim: str = "block", damaged_out=None,
             decoded_out=None, stream_start_ns=None, threads: int = 1, miv_interval: int = 25, late: str = "discard",
             repetition: int = 0) -> EvalResult:
    """Evaluate a simulated delivery of `bitstream_path` described by `trace_path`.

    `log_path`: the run's per-packet receive log (a datagram video, :mod:`.recvlog`), or its
    `messages` table (a video over TCP/MPTCP, :mod:`.messages`; then `flows` names at most one
    flow, `repetition` picks the loop repetition, and `stream_start_ns` is not used), or the
    bitstream a real receiver wrote (`.h264`/`.hevc`: an emulation, :mod:`..receiver.received`; every unit
    it holds counts as on time). `late`: what the player does with a late frame, ``"discard"``
    or ``"decode"`` (see `.messages`).
    """
    trace = read_trace(trace_path)
    if _is_bitstream(log_path):
        from ..receiver.received import delivery_from_bitstreams

        sent, _ = _load_bitstream(bitstream_path, trace, codec_of(bitstream_path))
        delivery, _ = delivery_from_bitstreams(trace, sent, _read_received(log_path, len(sent)))
    elif _is_messages(log_path):
        if flows and len(flows) > 1:
            raise VideoInputError(log_path, f"a messages table is evaluated one flow at a time, got {len(flows)} flows")
        delivery = deliver_messages(trace, log_path, playout_delay_s, flow=flows[0] if flows else None,
                                    repetition=repetition, late=late)
    else:
        if late not in LATE_POLICIES:
            raise VideoInputError("late", f"must be one of {', '.join(LATE_POLICIES)}, got {late!r}")
        log = read_receive_log(log_path, flows)
        delivery = deliver(trace, log, playout_delay_s, stream_start_ns)
        delivery.decode_late = late == "decode"
    return evaluate_delivery(trace, bitstream_path, delivery, recipe_path=recipe_path, source_dirs=source_dirs,
                             vmaf=vmaf, ssim=ssim, damaged_out=damaged_out, decoded_out=decoded_out, threads=threads,
                             miv_interval=miv_interval)


def _is_bitstream(path) -> bool:
    """Whether `path` names an Annex B bitstream (by its extension), not a log."""
    return Path(path).suffix.lower() in (".h264", ".264", ".avc", ".hevc", ".h265", ".265")


def _read_received(path, sent_bytes: int) -> bytes:
    """A received bitstream: at most the sent one's size plus a start code per 100 bytes (a
    receiver writes no more than it got), read without reading more."""
    limit = sent_bytes + sent_bytes // 100 + 4096
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise VideoInputError(path, f"cannot read the received bitstream: {exc.strerror}") from None
    if len(data) > limit:
        raise VideoInputError(path, f"received bitstream is larger than the sent one ({sent_bytes} bytes): not its receiver's")
    return data


def _is_messages(path) -> bool:
    """Whether `path` holds a `messages` table (by its columns), not a per-packet receive log."""
    p = Path(path)
    try:
        if p.suffix.lower() == ".csv":
            with open(p, encoding="utf-8", errors="replace") as f:
                names = f.readline().strip().split(",")
        else:
            import pyarrow.parquet as pq

            names = pq.read_schema(p).names
    except (OSError, pa.ArrowException, ValueError):
        return False  # the receive-log reader names the problem
    return set(MESSAGE_COLUMNS) <= set(names) and "nal" not in names


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


def evaluate_delivery(trace: NalTrace, bitstream_path, delivery: NalDelivery, *, recipe_path=None, source_dirs=(),
                      vmaf: bool = False, ssim: str = "block", damaged_out=None, decoded_out=None, threads: int = 1,
                      miv_interval: int = 25) -> EvalResult:
    """Like `evaluate`, with the delivery already worked out (e.g. from `recvlog.synthetic_log`).

    `recipe_path`: the encode's recipe, to regenerate the source (without it only the `_vs_decode`
    metrics exist, and no MOS/MIV). `source_dirs`: where to look for a `file` source that is not
    beside the recipe. `ssim`: `"block"` (default) or `"gaussian"`. `decoded_out`: write the
    damaged decode, one yuv420p picture per display slot, as raw video.
    """
    if ssim not in SSIM_DEFINITIONS:
        raise VideoInputError("ssim", f"must be one of {', '.join(SSIM_DEFINITIONS)}, got {ssim!r}")
    if isinstance(miv_interval, bool) or not isinstance(miv_interval, int) or miv_interval < 1:
        raise VideoInputError("miv_interval", f"must be a whole number ≥ 1, got {miv_interval!r}")
    ssim_fn = SSIM_DEFINITIONS[ssim]
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
    fed = delivery.arrived if delivery.decode_late else received  # what reaches the decoder
    dmg_packets = [b"".join(chunk(i) for i in range(starts[k], starts[k + 1]) if fed[i]) or None for k in range(n)]
    if damaged_out is not None:
        Path(damaged_out).write_bytes(b"".join(p for p in dmg_packets if p))
    lost_ps = [(int(i), int(trace.frame[i]), _PARAM_SETS[codec][nals[i].nal_type])
               for i in np.flatnonzero(~received) if nals[i].nal_type in _PARAM_SETS[codec] and not nals[i].vcl]
    display = trace.frame_display()
    src_iter = None
    if recipe_path is not None:
        spec = load_recipe_source(recipe_path)
        if (spec.width, spec.height) != (width, height):
            raise VideoInputError(recipe_path, f"source.width/height: {spec.width}x{spec.height}, the bitstream is "
                                               f"{width}x{height}")
        args = spec.input_args(base=Path(recipe_path).parent, search_dirs=[Path(d) for d in source_dirs])
        src_iter = read_source_frames(args, width, height, path=str(recipe_path), limit=n)
    have_src = src_iter is not None
    rep_ref, rep_dmg = DecodeReport(), DecodeReport()
    ref_iter = decode_display_order(ref_packets, display, codec, width, height, threads=threads, report=rep_ref)
    dmg_iter = decode_display_order(dmg_packets, display, codec, width, height, threads=threads, report=rep_dmg)
    late_frame = np.zeros(n, bool)
    np.logical_or.at(late_frame, trace.frame, delivery.late)
    if delivery.decode_late:
        dmg_iter = _freeze(dmg_iter, late_frame[np.argsort(display)], height, width)
    names = ["mse_y_dec", "mse_yuv_dec", "ssim_dec"]
    if have_src:
        names += ["mse_y_src", "mse_yuv_src", "ssim_src", "ref_mse_y_src", "ref_mse_yuv_src", "ref_ssim_src"]
    cols = {c: np.full(n, np.nan) for c in names}
    identical = np.zeros(n, bool)
    vmaf_note = "not computed (pass vmaf=True / --vmaf)"
    tmpdir = None
    if vmaf:
        if has_filter("libvmaf"):
            tmpdir = tempfile.TemporaryDirectory(prefix="qoelab-vmaf-")
        else:
            vmaf_note = "unavailable: this ffmpeg has no libvmaf filter"
    yuv_files = {}
    decoded_file = open(decoded_out, "wb") if decoded_out is not None else None
    vmaf_scores: dict[str, dict[str, list[float | None]]] = {}
    libvmaf_version = None
    try:
        if tmpdir is not None:
            for key in ("dmg", "ref") + (("src",) if have_src else ()):
                yuv_files[key] = open(Path(tmpdir.name) / f"{key}.yuv", "wb")
        for d, (ref, dmg) in enumerate(zip(ref_iter, dmg_iter, strict=True)):
            cols["mse_y_dec"][d], cols["mse_yuv_dec"][d] = plane_mse(dmg, ref, height)
            identical[d] = cols["mse_yuv_dec"][d] == 0.0
            cols["ssim_dec"][d] = 1.0 if identical[d] else ssim_fn(dmg, ref, height)
            if src_iter is not None:
                src = next(src_iter, None)
                if src is None:
                    raise VideoInputError(recipe_path, f"source ended after {d} frames, the trace has {n}")
                cols["mse_y_src"][d], cols["mse_yuv_src"][d] = plane_mse(dmg, src, height)
                cols["ref_mse_y_src"][d], cols["ref_mse_yuv_src"][d] = plane_mse(ref, src, height)
                cols["ref_ssim_src"][d] = ssim_fn(ref, src, height)
                cols["ssim_src"][d] = cols["ref_ssim_src"][d] if identical[d] else ssim_fn(dmg, src, height)
                if yuv_files:
                    yuv_files["src"].write(src.tobytes())
            if yuv_files:
                yuv_files["ref"].write(ref.tobytes())
                yuv_files["dmg"].write(dmg.tobytes())
            if decoded_file is not None:
                decoded_file.write(dmg.tobytes())
        if src_iter is not None:
            src_iter.close()
        if tmpdir is not None:
            for f in yuv_files.values():
                f.close()
            tmp = Path(tmpdir.name)
            refs = {"decode": "ref"} | ({"source": "src"} if have_src else {})
            for label, key in refs.items():
                vmaf_scores[label], libvmaf_version = _vmaf(tmp / "dmg.yuv", tmp / f"{key}.yuv", tmp / f"{key}.json",
                                                            width, height, fps, n, threads)
            vmaf_note = f"libvmaf {libvmaf_version}, model {VMAF_MODEL}; " + (
                "MS-SSIM from libvmaf float_ms_ssim" if min(width, height) >= MS_SSIM_MIN_SIDE
                else f"no MS-SSIM (needs at least {MS_SSIM_MIN_SIDE} pixels a side)")
    finally:
        for f in yuv_files.values():
            f.close()
        if decoded_file is not None:
            decoded_file.close()
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

    def pnan(mse: np.ndarray) -> np.ndarray:  # PSNR, NaN for identical pictures
        with np.errstate(divide="ignore"):
            return np.where(mse == 0, np.nan, 10.0 * np.log10(255.0**2 / np.where(mse == 0, 1.0, mse)))

    table = {
        "display": np.arange(n),
        "frame": dec_of_disp,
        "type": TYPE_NAMES[ftype[dec_of_disp]],
        "slices": fd.slices[dec_of_disp],
        "slices_received": fd.slices_received[dec_of_disp],
        "status": status,
        "decodable": ok[dec_of_disp],
        "decoded": rep_dmg.decoded_mask,
        "late": late_frame[dec_of_disp],
        "identical_to_decode": identical,
        "psnr_y_vs_decode": pnan(cols["mse_y_dec"]),
        "psnr_yuv_vs_decode": pnan(cols["mse_yuv_dec"]),
        "ssim_y_vs_decode": cols["ssim_dec"],
    }
    evm = None
    if have_src:
        evm = EvalVidMos(psnr_evalvid(cols["mse_y_src"]), psnr_evalvid(cols["ref_mse_y_src"]), miv_interval)
        table |= {
            "identical_to_source": cols["mse_yuv_src"] == 0,
            "psnr_y_vs_source": pnan(cols["mse_y_src"]),
            "psnr_yuv_vs_source": pnan(cols["mse_yuv_src"]),
            "ssim_y_vs_source": cols["ssim_src"],
            "ref_psnr_y_vs_source": pnan(cols["ref_mse_y_src"]),
            "ref_psnr_yuv_vs_source": pnan(cols["ref_mse_yuv_src"]),
            "ref_ssim_y_vs_source": cols["ref_ssim_src"],
            "mos": evm.mos,
            "ref_mos": evm.ref_mos,
        }
    for label in ("source", "decode"):
        if label == "source" and not have_src:
            continue
        sc = vmaf_scores.get(label)
        table[f"vmaf_vs_{label}"] = pa.array(sc["vmaf"] if sc else [None] * n, pa.float64())
        table[f"ms_ssim_y_vs_{label}"] = pa.array(sc["ms_ssim"] if sc else [None] * n, pa.float64())
    frames = pa.table(table)

    def mean(x) -> float | None:
        v = np.asarray(x, dtype=np.float64)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else None

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
        "frames": int(n),
        "fps": round(float(fps), 3),
        "playout_delay_ms": delivery.playout_delay_ns / 1e6,
        "stream_start_ns": int(delivery.stream_start_ns),
        "nal_units": int(trace.n_nal),
        "nal_received": int(received.sum()),
        "nal_lost": int((delivery.sent & ~delivery.arrived).sum()),
        "nal_late": int(delivery.late.sum()),
        "nal_unsent": int((~delivery.sent).sum()),
        "slices_lost_fraction": float(1 - received[vcl].mean()),
        "parameter_sets_lost": [{"nal": i, "frame": f, "kind": k} for i, f, k in lost_ps],
        "frame_loss_by_type": by_type,
        "decodable_frame_rate": float(ok.mean()),
        "decoder_pictures": int(rep_dmg.decoded),
        "predicted_pictures": int((~fd.lost).sum()),
        "repeated_slots": int(rep_dmg.repeated),
        "frames_late": int(late_frame.sum()),
        "late_frames_decoded": bool(delivery.decode_late),
        "decoder_errors": int(rep_dmg.errors),
        "misordered_pictures": int(rep_dmg.misordered),
        "references": "source (regenerated from the recipe) and decode (the undamaged decode)" if have_src
                      else "decode (the undamaged decode) only: no recipe, no source",
        "ssim_definition": SSIM_NAMES[ssim],
        "psnr_identical_frames": "left out of PSNR means (no finite PSNR), counted in identical_*",
        "vmaf": vmaf_note,
        "identical_to_decode": int(identical.sum()),
        "mean_psnr_y_vs_decode_db": mean(table["psnr_y_vs_decode"]),
        "mean_psnr_yuv_vs_decode_db": mean(table["psnr_yuv_vs_decode"]),
        "mean_ssim_y_vs_decode": mean(cols["ssim_dec"]),
    }
    if evm is not None:
        summary |= {
            "identical_to_source": int(table["identical_to_source"].sum()),
            "mean_psnr_y_vs_source_db": mean(table["psnr_y_vs_source"]),
            "mean_psnr_yuv_vs_source_db": mean(table["psnr_yuv_vs_source"]),
            "mean_ssim_y_vs_source": mean(cols["ssim_src"]),
            "ref_mean_psnr_y_vs_source_db": mean(table["ref_psnr_y_vs_source"]),
            "ref_mean_psnr_yuv_vs_source_db": mean(table["ref_psnr_yuv_vs_source"]),
            "ref_mean_ssim_y_vs_source": mean(cols["ref_ssim_src"]),
            "mos_rule": "EvalVid 2.7 mos.c on PSNR-Y vs source (identical frames skipped)",
            **evm.summary(),
        }
    else:
        summary["mos_rule"] = "not computed: EvalVid's MOS and MIV need PSNR against the source (give the recipe)"
    for label, sc in vmaf_scores.items():
        summary[f"mean_vmaf_vs_{label}"] = mean(sc["vmaf"])
        summary[f"mean_ms_ssim_y_vs_{label}"] = mean(sc["ms_ssim"])
    summary["evaluate_s"] = round(time.perf_counter() - t_start, 3)
    summary["decode_and_compare_s"] = round(decode_s, 3)
    return EvalResult(frames, json_native(summary))


def _freeze(pictures: Iterator[np.ndarray], frozen: np.ndarray, height: int, width: int) -> Iterator[np.ndarray]:
    """Yield `pictures` (one per display slot), with each slot flagged in `frozen` showing the
    picture shown before it instead (mid-grey if the first slot is frozen)."""
    shown = np.full((height * 3 // 2, width), 128, dtype=np.uint8)
    for d, pic in enumerate(pictures):
        if not frozen[d]:
            shown = pic
        yield shown


def _vmaf(dist: Path, ref: Path, log: Path, width: int, height: int, fps: float, n: int,
          threads: int) -> tuple[dict[str, list[float | None]], str]:
    """Per-frame VMAF (model `VMAF_MODEL`) and MS-SSIM of `dist` against `ref` (raw yuv420p),
    and libvmaf's version."""
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{width}x{height}", "-r", f"{fps:g}"]
    # MS-SSIM halves the picture four times and needs an 11×11 window at the last scale.
    ms = min(width, height) >= MS_SSIM_MIN_SIDE
    graph = (f"[0:v][1:v]libvmaf=model=version={VMAF_MODEL}:" + ("feature=name=float_ms_ssim:" if ms else "")
             + f"log_fmt=json:log_path={log}:n_threads={max(1, threads)}")
    cmd = [ffmpeg_exe(), "-hide_banner", "-nostdin", "-loglevel", "error",
           *guard_inputs([*raw, "-i", str(dist), *raw, "-i", str(ref)]), "-lavfi", graph, "-f", "null", "-"]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    if proc.returncode != 0:
        msg = proc.stderr.decode(errors="replace").strip().splitlines()
        raise VideoInputError("libvmaf", f"VMAF failed: {msg[-1] if msg else proc.returncode}")
    doc = json.loads(log.read_text())
    frames = doc["frames"]
    if len(frames) != n:
        raise VideoInputError("libvmaf", f"VMAF scored {len(frames)} of {n} frames")
    out: dict[str, list[float | None]] = {"vmaf": [float(f["metrics"]["vmaf"]) for f in frames],
           "ms_ssim": [float(f["metrics"]["float_ms_ssim"]) if ms else None for f in frames]}
    return out, str(doc.get("version", "unknown"))


def _param_sets_line(lost: list[dict]) -> str:
    if not lost:
        return "none"
    shown = ", ".join(f"{p['kind']} (nal {p['nal']}, frame {p['frame']})" for p in lost[:4])
    return f"{len(lost)}: {shown}" + (", ..." if len(lost) > 4 else "")


def format_summary(s: dict) -> str:
    """The summary as an aligned text table; every quality row names its reference."""
    def num(v, fmt: str) -> str:
        return "n/a" if v is None else format(v, fmt)

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
        ("late frames", f"{s['frames_late']} (display frozen; " + ("decoded for reference)" if s["late_frames_decoded"]
                                                                   else "discarded like lost ones)")),
        ("SSIM definition", s["ssim_definition"]),
    ]
    for label in ("source", "decode"):
        if f"mean_psnr_y_vs_{label}_db" not in s:
            continue
        ref = "" if label == "decode" else (f" (undamaged: Y {num(s['ref_mean_psnr_y_vs_source_db'], '.2f')} dB, "
                                            f"SSIM {num(s['ref_mean_ssim_y_vs_source'], '.4f')})")
        rows.append((f"PSNR vs {label}", f"Y {num(s[f'mean_psnr_y_vs_{label}_db'], '.2f')} dB, "
                                        f"YUV {num(s[f'mean_psnr_yuv_vs_{label}_db'], '.2f')} dB; "
                                        f"identical frames {s[f'identical_to_{label}']} (not in the mean)" + ref))
        rows.append((f"SSIM vs {label}", num(s[f"mean_ssim_y_vs_{label}"], ".4f")))
        if f"mean_vmaf_vs_{label}" in s:
            rows.append((f"VMAF vs {label}", f"{num(s[f'mean_vmaf_vs_{label}'], '.2f')} ({VMAF_MODEL}); "
                                            f"MS-SSIM {num(s[f'mean_ms_ssim_y_vs_{label}'], '.4f')}"))
    if "mean_mos" in s:
        rows += [
            ("MOS (EvalVid)", f"{num(s['mean_mos'], '.2f')} (undamaged {num(s['mean_ref_mos'], '.2f')}); "
                              f"% per score {{{', '.join(f'{k}: {v:.1f}' for k, v in s['mos_histogram_percent'].items())}}}"),
            ("MIV (EvalVid)", f"mean {num(s['mean_miv_percent'], '.1f')} %, max {num(s['max_miv_percent'], '.1f')} % over "
                              f"{s['miv_windows']} sliding {s['miv_interval']}-frame windows (MOS < reference and < 4)"),
        ]
    else:
        rows.append(("MOS, MIV", s["mos_rule"]))
    rows += [("VMAF", s["vmaf"]), ("time", f"{s['evaluate_s']:.2f} s")]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows)
