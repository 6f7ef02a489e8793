"""Encoding a video into a bitstream plus the NAL trace the simulator streams.

`encode()` runs ffmpeg (libx264 or libx265) with access-unit delimiters and parameter sets
repeated at every IDR, then reads the Annex B stream back: NAL units and access units from the
byte stream (`bitstream.py`), frame types from the slice headers, and display order from a
reference decode. With `codec = "mpeg2"` it runs ffmpeg's `mpeg2video` encoder (closed GOPs,
a sequence header before every GOP) and reads the elementary stream with `mpeg2.py`: the trace's
rows are then RTP payloads (RFC 2250, cut as VLC does by default), not NAL units. The same pass compares every decoded picture with the source and with its
neighbours; those per-frame numbers (`*.frames.csv`) are what the fast estimator needs.

Outputs for `name` in `out_dir`:
- `name.h264` / `name.hevc` / `name.m2v`: the bitstream (optional);
- `name.trace.csv[.gz]`: the NAL trace (see `trace.py`);
- `name.frames.csv`: per display-order frame, reference-decode distortion against the source and
  against the previous picture / previous anchor (MSE, luma and all planes);
- `name.recipe.toml`: the command, source, encoder version, timings and the trace statistics.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import av
import numpy as np

from ..errors import VideoInputError
from ..pictures.decode import DecodeReport, decode_display_order, probe_video, read_source_frames, video_decoder
from ..pictures.metrics import plane_mse, psnr
from ..tools import ffmpeg_version, run_ffmpeg
from ..traces.bitstream import group_access_units, parse_nal_units
from ..traces.mpeg2 import PACKING, group_pictures, parse_mpeg2_units
from ..traces.mpeg2 import packets as mpeg2_packets
from ..traces.trace import NalTrace, read_trace, write_trace
from .source import SourceSpec, source_from_input

__all__ = ["EncodeConfig", "EncodeResult", "encode", "analyze_bitstream", "FRAMES_COLUMNS", "read_frames_csv"]

_TYPE_CODE = {"I": 0, "P": 1, "B": 2}
# Encoder option ranges (checked, not clamped). QP and CRF: 0..51 for 8-bit H.264 (x264 accepts
# up to 69 only for high bit depths and would clamp) and HEVC (x265: 0..51). The pipeline
# encodes only these two codecs (no mpeg2video).
QP_RANGE = {"h264": (0, 51), "hevc": (0, 51), "mpeg2": (1, 31)}
#: File extension and libavcodec decoder of each codec's elementary stream.
EXT = {"h264": "h264", "hevc": "hevc", "mpeg2": "m2v"}
DECODER = {"h264": "h264", "hevc": "hevc", "mpeg2": "mpeg2video"}
#: Default RTP payload an MPEG-2 picture is packed into (RFC 2250): a 1500-byte MTU less the
#: 40 bytes of IP, UDP and RTP headers, what the simulator's RTP transport carries per datagram.
MPEG2_RTP_PAYLOAD = 1460
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo")
MAX_SIDE = 16384  # pixels (x264/x265 limit)
MAX_FRAMES = 10_000_000
MAX_GOP = 100_000
MAX_RATE_BPS = 10_000_000_000
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name(name: str) -> str:
    """An output base name: letters, digits, `._-`, not starting with a dot, so that every output
    file stays in the output folder."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise VideoInputError("--name", f"must be a plain file name (letters, digits, ._-; no path), got {str(name)[:60]!r}")
    return name


@dataclass
class EncodeConfig:
    """How to encode. Sizes in pixels, rates in bit/s, times in seconds.

    `input` is a file path or `lavfi:<filtergraph source>` (e.g. `lavfi:testsrc2=size=352x288:rate=30`).
    Rate control: exactly one of `qp` (fixed QP), `crf`, `bitrate_bps`; the last two with optional
    VBV `maxrate_bps`/`bufsize_bits` (the hypothetical reference decoder's buffer, H.264 Annex C;
    x264 enforces it only when both are given).
    `passes = 2` (only with `bitrate_bps`) runs the encoder's analysis pass first, so the target
    mean rate is met over the whole input instead of being approached on the fly.
    """

    input: str
    width: int = 352
    height: int = 288
    fps: float = 30.0
    frames: int | None = None  # None: until the input ends
    start_s: float = 0.0  # seek into a file input
    filters: str = ""  # extra ffmpeg -vf chain applied before fps/scale
    retime: bool = False  # reinterpret input frames at `fps` (setpts) instead of dropping/duplicating
    codec: str = "h264"  # "h264" (libx264), "hevc" (libx265) or "mpeg2" (ffmpeg's mpeg2video)
    gop: int = 15  # frames between IDR pictures (fixed, no scene-cut)
    bframes: int = 2  # consecutive B frames (fixed pattern, no pyramid)
    refs: int = 1  # reference frames for P (1 keeps the estimator's dependency model exact)
    qp: int | None = None
    crf: float | None = None
    bitrate_bps: int | None = None
    maxrate_bps: int | None = None
    bufsize_bits: int | None = None
    passes: int = 1  # 1: one-pass; 2: two-pass (bitrate_bps only)
    slice_max_bytes: int | None = None  # x264 slice-max-size (bytes of a slice NAL payload)
    slices: int | None = None  # fixed number of slices per picture
    preset: str = "medium"
    threads: int = 2  # fixed: x264/x265 output depends on the thread count
    extra_params: str = ""  # appended to -x264-params / -x265-params
    rtp_payload_bytes: int | None = None  # mpeg2 only: RTP payload per packet (default 1460)
    rtp_packing: str | None = None  # mpeg2 only: "vlc" (default) or "slices" (see mpeg2.py)

    source: SourceSpec | None = None  # set by project recipes; else derived from `input`

    def check(self) -> EncodeConfig:
        """Range-check every option before ffmpeg runs (`VideoInputError` naming the option).
        What is checked is what is encoded and recorded: nothing is clamped."""
        def whole(name: str, lo: int, hi: int, *, optional: bool = False) -> None:
            v = getattr(self, name)
            if v is None and optional:
                return
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise VideoInputError(f"encode.{name}", f"must be a whole number in {lo}..{hi}, got {v!r}")

        def number(name: str, lo: float, hi: float, *, optional: bool = False, open_lo: bool = False) -> None:
            v = getattr(self, name)
            if v is None and optional:
                return
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
            if not ok or v > hi or v < lo or (open_lo and v == lo):
                raise VideoInputError(f"encode.{name}", f"must be a number in {'(' if open_lo else '['}{lo:g}, {hi:g}], got {v!r}")

        if self.codec not in QP_RANGE:
            raise VideoInputError("encode.codec", f"must be h264, hevc or mpeg2, got {self.codec!r}")
        if self.codec == "mpeg2":
            for name in ("crf", "slice_max_bytes", "slices"):
                if getattr(self, name) is not None:
                    raise VideoInputError(f"encode.{name}", "not an option of the mpeg2 encoder (one slice per macroblock row)")
            if self.extra_params:
                raise VideoInputError("encode.extra_params", "not an option of the mpeg2 encoder")
        elif self.rtp_payload_bytes is not None or self.rtp_packing is not None:
            raise VideoInputError("encode.rtp_payload_bytes", "only for mpeg2 (H.264/H.265 traces are per NAL unit)")
        if self.rtp_packing is not None and self.rtp_packing not in PACKING:
            raise VideoInputError("encode.rtp_packing", f"must be one of {', '.join(PACKING)}, got {self.rtp_packing!r}")
        whole("rtp_payload_bytes", 100, 65_000, optional=True)
        for side in ("width", "height"):
            whole(side, 2, MAX_SIDE)
            if getattr(self, side) % 2:
                raise VideoInputError(f"encode.{side}", f"must be even (4:2:0 chroma), got {getattr(self, side)}")
        number("fps", 0, 1000, open_lo=True)
        whole("frames", 1, MAX_FRAMES, optional=True)
        number("start_s", 0, 1e7)
        whole("gop", 1, MAX_GOP)
        whole("bframes", 0, 16)
        whole("refs", 1, 16)
        qlo, qhi = QP_RANGE[self.codec]
        whole("qp", qlo, qhi, optional=True)
        number("crf", qlo, qhi, optional=True)
        whole("bitrate_bps", 1, MAX_RATE_BPS, optional=True)
        whole("maxrate_bps", 1, MAX_RATE_BPS, optional=True)
        whole("bufsize_bits", 1, MAX_RATE_BPS, optional=True)
        whole("passes", 1, 2)
        whole("slice_max_bytes", 100, 1_000_000, optional=True)
        whole("slices", 1, (self.height + 15) // 16 if isinstance(self.height, int) else 1, optional=True)
        whole("threads", 1, 64)
        if self.preset not in PRESETS:
            raise VideoInputError("encode.preset", f"must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        if not re.fullmatch(r"[A-Za-z0-9_=:.,+-]*", self.extra_params):
            raise VideoInputError("encode.extra_params", "may use only letters, digits and _=:.,+-")
        if self.bframes >= self.gop > 1:
            raise VideoInputError("encode.bframes", f"must be less than the GOP ({self.gop}), got {self.bframes}")
        if self.frames is None and (self.input.startswith("lavfi:") or (self.source and self.source.kind != "file"
                                                                         and self.source.kind != "clip")):
            raise VideoInputError("encode.frames", "a generated (lavfi) source never ends: give the number of frames")
        self.rate_control()
        return self

    def rate_control(self) -> list[str]:
        chosen = [x is not None for x in (self.qp, self.crf, self.bitrate_bps)]
        if sum(chosen) != 1:
            raise VideoInputError("encode", "choose exactly one of qp, crf, bitrate")
        if self.passes == 2 and self.bitrate_bps is None:
            raise VideoInputError("encode", "two-pass encoding needs a target bitrate")
        if (self.maxrate_bps or self.bufsize_bits) and self.qp is not None:
            raise VideoInputError("encode", "maxrate/bufsize (VBV) need rate control: use bitrate or crf, not qp")
        if self.qp is not None:
            return ["-qscale:v", str(self.qp)] if self.codec == "mpeg2" else ["-qp", str(self.qp)]
        args = ["-crf", f"{self.crf:g}"] if self.crf is not None else ["-b:v", str(self.bitrate_bps)]
        if self.maxrate_bps:
            args += ["-maxrate", str(self.maxrate_bps)]
        if self.bufsize_bits:
            args += ["-bufsize", str(self.bufsize_bits)]
        return args


@dataclass
class EncodeResult:
    bitstream: Path | None
    trace: Path
    frames: Path
    recipe: Path
    stats: dict
    encode_s: float
    analyze_s: float
    command: list[str] = field(default_factory=list)
    command_pass1: list[str] = field(default_factory=list)  # empty for one-pass encodes


def source_spec(cfg: EncodeConfig, out: Path) -> SourceSpec:
    """The source of an encode as a recipe records it (see `source.py`)."""
    if cfg.source is not None:
        return cfg.source.check("encode.source")
    if not cfg.input.startswith("lavfi:"):
        if not os.path.isfile(cfg.input):
            raise VideoInputError(cfg.input, "no such video file")
        probe_video(cfg.input)  # unreadable files fail here with a clear message
    return source_from_input(cfg.input, width=cfg.width, height=cfg.height, fps=cfg.fps, retime=cfg.retime,
                             start_s=cfg.start_s, filters=cfg.filters, base=out)


def _codec_args(cfg: EncodeConfig) -> list[str]:
    if cfg.codec == "mpeg2":
        # Fixed GOP of N = gop pictures (no scene cut), M = bframes + 1, open GOPs as on DVD
        # (the B pictures that open a GOP refer to the previous GOP's last P; ffmpeg's closed-GOP
        # mode shortens every GOP instead); the first GOP is closed and M pictures shorter.
        # ffmpeg writes a sequence header before every GOP; slices are one macroblock row each.
        # The quantiser may go down to 1 (ffmpeg's floor is 2, in lambda units 2·118): with the
        # floor a soft SD picture saturates below the target (4.6 Mbit/s for 5 on the bundled
        # clip) and the rate control cannot spend the rate asked for.
        return ["-c:v", "mpeg2video", "-g", str(cfg.gop), "-bf", str(cfg.bframes), "-sc_threshold", "1000000000",
                "-qmin", "1", "-lmin", "1", "-mblmin", "1", "-threads", str(cfg.threads), "-f", "mpeg2video"]
    common = [
        f"keyint={cfg.gop}",
        f"min-keyint={cfg.gop}",
        "scenecut=0",
        f"bframes={cfg.bframes}",
        "b-adapt=0",
        "b-pyramid=none" if cfg.codec == "h264" else "b-pyramid=0",
        f"ref={cfg.refs}",
        "aud=1",
        "repeat-headers=1",
    ]
    if cfg.codec == "h264":
        if cfg.slice_max_bytes:
            common.append(f"slice-max-size={cfg.slice_max_bytes}")
        if cfg.slices:
            common.append(f"slices={cfg.slices}")
        common.append(f"threads={cfg.threads}")
        params = ":".join(common + ([cfg.extra_params] if cfg.extra_params else []))
        return ["-c:v", "libx264", "-preset", cfg.preset, "-x264-params", params, "-f", "h264"]
    if cfg.codec == "hevc":
        if cfg.slice_max_bytes:
            raise VideoInputError("encode", "libx265 has no maximum slice size; use slices")
        if cfg.slices:
            common.append(f"slices={cfg.slices}")
        common += ["open-gop=0", f"pools={cfg.threads}", "frame-threads=1", "log-level=error"]
        params = ":".join(common + ([cfg.extra_params] if cfg.extra_params else []))
        return ["-c:v", "libx265", "-preset", cfg.preset, "-x265-params", params, "-f", "hevc"]
    raise VideoInputError("encode", f"codec must be h264 or hevc, got {cfg.codec!r}")


def encoder_version(data: bytes, codec: str = "h264") -> str:
    """x264/x265 version string from the encoder's user-data SEI, if present; for MPEG-2,
    ffmpeg's own encoder (its version is ffmpeg's)."""
    if codec == "mpeg2":
        return f"mpeg2video (ffmpeg {ffmpeg_version()})"
    m = re.search(rb"x264 - core \d+( r\d+ [0-9a-f]+)?", data[:200_000])
    if m:
        return m.group(0).decode()
    m = re.search(rb"x265 \(build \d+\) - [0-9A-Za-z.+_:-]+", data[:200_000])
    return m.group(0).decode() if m else "unknown"


def encode(cfg: EncodeConfig, out_dir: str | os.PathLike[str], name: str, *, keep_bitstream: bool = True,
           gzip_trace: bool = False, notes: str = "") -> EncodeResult:
    """Encode `cfg.input`, then analyse the bitstream into trace, frames file and recipe."""
    check_name(name)
    cfg.check()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise VideoInputError(out, "output folder is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VideoInputError(out, f"cannot create output folder: {exc.strerror}") from None
    ext = EXT[cfg.codec]
    spec = source_spec(cfg, out)
    src = spec.input_args(base=out)
    limit = ["-frames:v", str(cfg.frames)] if cfg.frames is not None else []
    tmp = None
    if keep_bitstream:
        bs_path = out / f"{name}.{ext}"
    else:
        tmp = tempfile.TemporaryDirectory(prefix="qoelab-encode-")
        bs_path = Path(tmp.name) / f"{name}.{ext}"
    passlog = tempfile.TemporaryDirectory(prefix="qoelab-passlog-") if cfg.passes == 2 else None
    try:
        rc = cfg.rate_control()
        cmd1: list[str] = []
        t0 = time.perf_counter()
        if passlog is not None:
            # Pass 1 writes only the statistics file (and x264's mbtree data) beside it; its
            # output is discarded. ffmpeg takes the last -f, so "null" overrides the codec's.
            log = ["-passlogfile", str(Path(passlog.name) / name)]
            cmd1 = [*src, *limit, "-an", *rc, *_codec_args(cfg), "-pass", "1", *log, "-f", "null", os.devnull]
            run_ffmpeg(cmd1, what="encoding (pass 1)", path=cfg.input)
            rc = [*rc, "-pass", "2", *log]
        cmd = [*src, *limit, "-an", *rc, *_codec_args(cfg), str(bs_path)]
        run_ffmpeg(cmd, what="encoding", path=cfg.input)
        encode_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace, frames_table, data = analyze_bitstream(bs_path, cfg.codec, cfg.fps, cfg.width, cfg.height,
                                                      source_args=src, source_path=cfg.input,
                                                      rtp_payload_bytes=cfg.rtp_payload_bytes or MPEG2_RTP_PAYLOAD,
                                                      rtp_packing=cfg.rtp_packing or "vlc")
        analyze_s = time.perf_counter() - t0
        version = encoder_version(data, cfg.codec)
    finally:
        if tmp is not None:
            tmp.cleanup()
        if passlog is not None:
            passlog.cleanup()
    trace_path = out / f"{name}.trace.csv{'.gz' if gzip_trace else ''}"
    write_trace(trace_path, trace)
    frames_path = out / f"{name}.frames.csv"
    write_frames_csv(frames_path, frames_table)
    stats = read_trace(trace_path).stats().as_dict()
    recipe: dict[str, Any] = {
        "name": name,
        "notes": notes,
        "source": spec.as_dict(),
        "config": {k: v for k, v in asdict(cfg).items() if v is not None and k != "source"} | _recorded_input(spec),
        "encoder": {"ffmpeg": ffmpeg_version(), "codec_library": version},
        "command": ["ffmpeg", *_recorded(cmd[:-1], passlog, out, spec), f"{name}.{ext}"],
        **({"command_pass1": ["ffmpeg", *_recorded(cmd1, passlog, out, spec)]} if cmd1 else {}),
        "timing": {"encode_s": round(encode_s, 2), "analyze_s": round(analyze_s, 2), "cpus": os.cpu_count()},
        "expected": stats,
        "reference_quality": {
            # Frames coded without loss (MSE 0) count as PSNR_MAX, as everywhere else.
            "mean_psnr_y_db": round(float(np.mean(psnr(frames_table["ref_mse_y"]))), 3),
        },
    }
    recipe_path = out / f"{name}.recipe.toml"
    write_recipe(recipe_path, recipe)
    return EncodeResult(bs_path if keep_bitstream else None, trace_path, frames_path, recipe_path, stats,
                        encode_s, analyze_s, recipe["command"], recipe.get("command_pass1", []))


def _recorded_input(spec: SourceSpec) -> dict:
    """`config.input` as recorded: no absolute path of the encoding machine (a file source is
    relative to the recipe, a bundled clip relative to the repository)."""
    if spec.kind == "file":
        return {"input": spec.path}
    if spec.kind == "clip":
        from .source import CLIPS

        return {"input": f"data/clips/{CLIPS[spec.clip][0]}"}
    return {}


def _recorded(cmd: list[str], passlog: tempfile.TemporaryDirectory | None, out: Path,
              spec: SourceSpec | None = None) -> list[str]:
    """A command as the recipe records it (documentation, never run from the recipe): the
    temporary pass-log folder becomes `.` (run both passes in the same folder), a bundled
    clip's path is relative to the repository and another source file's to the recipe's
    folder."""
    clip = None
    if spec is not None and spec.kind == "clip":
        from .source import clip_path

        clip = Path(clip_path(spec.clip)).resolve()
    rec = []
    for a in cmd:
        if passlog is not None and a.startswith(passlog.name):
            a = os.path.relpath(a, passlog.name)
        elif a.startswith("file:/") and clip is not None and Path(a[len("file:"):]) == clip:
            a = str(Path("data") / "clips" / clip.name)  # a bundled clip: relative to the repository
        elif a.startswith("file:/"):
            a = os.path.relpath(a[len("file:"):], out.resolve())
        rec.append(a)
    return rec


def write_recipe(path: Path, recipe: dict) -> None:
    import tomli_w

    path.write_text(tomli_w.dumps(recipe), encoding="utf-8")


FRAMES_COLUMNS = ("display", "frame", "type", "size_bytes", "ref_mse_y", "ref_mse_yuv",
                  "prev_mse_y", "prev_mse_yuv", "anchor_mse_y", "anchor_mse_yuv")


def analyze_bitstream(path: Path, codec: str, fps: float, width: int, height: int, *,
                      source_args: list[str] | None, source_path: str = "source",
                      threads: int = 2, rtp_payload_bytes: int = MPEG2_RTP_PAYLOAD, rtp_packing: str = "vlc",
                      ) -> tuple[NalTrace, dict[str, np.ndarray], bytes]:
    """Trace and per-frame reference numbers of an Annex B stream (or, for `codec = "mpeg2"`, an
    MPEG-2 video elementary stream, whose trace rows are RTP payloads of at most
    `rtp_payload_bytes`, cut by the `rtp_packing` rule of `mpeg2.py`).

    Without `source_args` the `ref_mse_*` columns are NaN.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise VideoInputError(path, f"cannot read bitstream: {exc.strerror}") from None
    try:
        if codec == "mpeg2":
            nals = parse_mpeg2_units(data)
            aus = group_pictures(nals)
        else:
            nals = parse_nal_units(data, codec)
            aus = group_access_units(nals, codec)
    except ValueError as exc:
        raise VideoInputError(path, f"malformed bitstream: {exc}") from None
    n = len(aus)
    ftype = np.empty(n, np.int8)
    for k, au in enumerate(aus):
        types = {nals[i].slice_type for i in au if nals[i].vcl} - {"?"}
        # A picture with any B slice is a B frame, else any P slice a P frame (§7.4.3 slice_type).
        ftype[k] = 2 if "B" in types else 1 if "P" in types else 0
    packets = [b"".join(data[nals[i].offset: nals[i].offset + nals[i].size] for i in au) for au in aus]
    # First pass: decode with pts = decode index to learn display order.
    ctx = video_decoder(DECODER[codec], threads)
    # A picture the decoder returns without a pts counts as -1, which the check below refuses.
    order: list[int] = []
    for k, pkt_data in enumerate(packets):
        pkt = av.Packet(pkt_data)
        pkt.pts = pkt.dts = k
        try:
            order.extend(-1 if f.pts is None else f.pts for f in ctx.decode(pkt))
        except av.error.FFmpegError as exc:
            raise VideoInputError(path, f"undamaged stream does not decode at frame {k}: {exc}") from None
    order.extend(-1 if f.pts is None else f.pts for f in ctx.decode(None))
    if sorted(order) != list(range(n)):
        raise VideoInputError(path, f"decoder output {len(order)} pictures for {n} access units")
    display = np.empty(n, np.int64)
    display[np.asarray(order)] = np.arange(n)
    # Trace rows.
    frame_col, disp_col, type_col, size_col, ts_col = [], [], [], [], []
    frame_ms = 1000.0 / fps
    for k, au in enumerate(aus):
        if codec == "mpeg2":
            # One row per RTP payload (RFC 2250); each carries data of the picture.
            rows = [(int(ftype[k]), s) for s in mpeg2_packets(nals, au, rtp_payload_bytes, rtp_packing)]
        else:
            rows = [(int(ftype[k]) if nals[i].vcl else 3, nals[i].size) for i in au]
        for t, s in rows:
            frame_col.append(k)
            disp_col.append(display[k])
            type_col.append(t)
            size_col.append(s)
            ts_col.append(round(k * frame_ms, 3))
    trace = NalTrace(np.asarray(frame_col, np.int64), np.asarray(disp_col, np.int64),
                     np.asarray(type_col, np.int8), np.asarray(size_col, np.int64), np.asarray(ts_col, np.float64))
    # Second pass, in display order: distortion against the source and the neighbours.
    by_display_type = np.empty(n, np.int8)
    by_display_type[display] = ftype
    decode_of_display = np.empty(n, np.int64)
    decode_of_display[display] = np.arange(n)
    cols = {c: np.full(n, np.nan) for c in FRAMES_COLUMNS[4:]}
    src_iter = (read_source_frames(source_args, width, height, path=source_path, limit=n)
                if source_args is not None else None)
    grey = np.full((height * 3 // 2, width), 128, np.uint8)
    prev = grey
    anchor = grey
    rep = DecodeReport()
    for d, pic in enumerate(decode_display_order(packets, display, DECODER[codec], width, height, threads=threads, report=rep)):
        if src_iter is not None:
            src = next(src_iter, None)
            if src is None:
                raise VideoInputError(source_path, f"source ended after {d} frames, bitstream has {n}")
            cols["ref_mse_y"][d], cols["ref_mse_yuv"][d] = plane_mse(pic, src, height)
        cols["prev_mse_y"][d], cols["prev_mse_yuv"][d] = plane_mse(pic, prev, height)
        cols["anchor_mse_y"][d], cols["anchor_mse_yuv"][d] = plane_mse(pic, anchor, height)
        prev = pic
        if by_display_type[d] != 2:
            anchor = pic
    if src_iter is not None:
        src_iter.close()
    if rep.decoded != n:
        raise VideoInputError(path, f"reference decode gave {rep.decoded} of {n} pictures")
    table: dict[str, np.ndarray] = {
        "display": np.arange(n),
        "frame": decode_of_display,
        "type": by_display_type,
        "size_bytes": trace.frame_bytes()[decode_of_display],
        **cols,
    }
    return trace, table, data


def write_frames_csv(path: Path, table: dict[str, np.ndarray]) -> None:
    names = np.array(["I", "P", "B"])
    lines = [",".join(FRAMES_COLUMNS)]
    for i in range(table["display"].size):
        row = [str(table["display"][i]), str(table["frame"][i]), names[table["type"][i]], str(table["size_bytes"][i])]
        row += [f"{table[c][i]:.6g}" for c in FRAMES_COLUMNS[4:]]
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def read_frames_csv(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Read a `*.frames.csv` written by `encode` (validated)."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VideoInputError(p, f"cannot read frames file: {exc}") from None
    if not lines or tuple(lines[0].split(",")) != FRAMES_COLUMNS:
        raise VideoInputError(p, f"line 1: header must be {','.join(FRAMES_COLUMNS)}")
    rows = [ln.split(",") for ln in lines[1:]]
    for i, r in enumerate(rows):
        if len(r) != len(FRAMES_COLUMNS):
            raise VideoInputError(p, f"line {i + 2}: expected {len(FRAMES_COLUMNS)} fields, got {len(r)}")
    try:
        out: dict[str, np.ndarray] = {
            "display": np.array([int(r[0]) for r in rows], np.int64),
            "frame": np.array([int(r[1]) for r in rows], np.int64),
            "type": np.array([_TYPE_CODE[r[2]] for r in rows], np.int8),
            "size_bytes": np.array([int(r[3]) for r in rows], np.int64),
        }
        for j, c in enumerate(FRAMES_COLUMNS[4:], start=4):
            out[c] = np.array([float(r[j]) for r in rows], np.float64)
    except (ValueError, KeyError) as exc:
        raise VideoInputError(p, f"malformed value: {exc}") from None
    if not np.array_equal(out["display"], np.arange(len(rows))):
        raise VideoInputError(p, "display column must count 0, 1, 2, ...")
    return out
