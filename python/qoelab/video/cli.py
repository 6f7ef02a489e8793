"""`qoelab video ...`: encode, evaluate, estimate, calibrate, migrate-recipe, dash.

`register(subparsers)` adds the `video` group to the main CLI's argparse subparsers; each handler
takes the parsed namespace and returns an exit code. Bad input (`VideoInputError`) prints one line
`PATH: reason` on stderr and returns 2. `python -m qoelab.video.cli ...` runs the group alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from .errors import VideoInputError

__all__ = ["register", "main", "parse_duration_s", "parse_rate_bps"]

#: Longest duration an argument may give, s: 2^62 ns, as scenario times.
MAX_DURATION_S = 2.0**62 / 1e9
_UNITS_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0}
_UNITS_BPS = {"": 1, "bps": 1, "k": 1e3, "kbps": 1e3, "m": 1e6, "mbps": 1e6, "g": 1e9, "gbps": 1e9}


def parse_duration_s(text: str) -> float:
    """`"500ms"`, `"0.5s"` or `"0.5"` (seconds) → seconds."""
    m = re.fullmatch(r"\s*([0-9.]+(?:e[-+]?\d+)?)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in _UNITS_S:
        raise argparse.ArgumentTypeError(f"expected a duration like 500ms or 0.5s, got {text!r}")
    try:
        s = float(m.group(1)) * _UNITS_S[m.group(2)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration like 500ms or 0.5s, got {text!r}") from None
    # Range-checked in seconds before anything turns it into integer nanoseconds (1e308 s once
    # overflowed there): the scenario's time range, 2^62 ns.
    if not s <= MAX_DURATION_S:
        raise argparse.ArgumentTypeError(f"{text!r}: must be below 146 years ({MAX_DURATION_S:.4g} s)")
    return s


def parse_rate_bps(text: str) -> int:
    """`"5Mbps"`, `"5M"`, `"64k"` or `"64000"` → bit/s."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in _UNITS_BPS:
        raise argparse.ArgumentTypeError(f"expected a rate like 5Mbps or 64k, got {text!r}")
    try:
        bps = float(m.group(1)) * _UNITS_BPS[m.group(2)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate like 5Mbps or 64k, got {text!r}") from None
    if not bps <= 1e15:  # the scenario's largest rate; checked before it becomes an integer
        raise argparse.ArgumentTypeError(f"{text!r}: must be at most 1e15 bit/s")
    return int(round(bps))


def _size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return v


def _guarded(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except VideoInputError as err:
            print(f"qoelab: {err}", file=sys.stderr)
            return 2
        except OSError as err:  # an output path that cannot be written (missing folder, read-only, a directory)
            where = err.filename if err.filename is not None else "output"
            print(f"qoelab: {where}: cannot write: {err.strerror or type(err).__name__}", file=sys.stderr)
            return 2

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _stem(trace: Path) -> str:
    for ext in (".trace.csv.gz", ".trace.csv"):
        if trace.name.endswith(ext):
            return trace.name[: -len(ext)]
    raise VideoInputError(trace, "a trace file's name ends in .trace.csv or .trace.csv.gz")


def _fractions(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected fractions like 0.01,0.05,0.1, got {text!r}") from None
    if not vals or any(not (0 < v < 1) for v in vals):
        raise argparse.ArgumentTypeError(f"each loss must be a fraction in (0, 1), got {text!r}")
    return vals


def _seeds(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 1000,1001, got {text!r}") from None
    if not vals or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(f"seeds are whole numbers ≥ 0, got {text!r}")
    return vals


def _check_outputs(args: argparse.Namespace, *names: str) -> None:
    """Each output file option names a writable place, checked before any work is done."""
    import os

    for name in names:
        path = getattr(args, name, None)
        if path is None:
            continue
        opt = "--" + name.replace("_", "-")
        parent = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            raise VideoInputError(path, f"{opt}: is a directory, expected a file name")
        if path.is_symlink():
            raise VideoInputError(path, f"{opt}: is a symbolic link; qoelab does not write through symlinks")
        if not parent.is_dir():
            raise VideoInputError(path, f"{opt}: folder {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise VideoInputError(path, f"{opt}: folder {parent} is not writable")


def _beside(trace: Path, suffix: str) -> Path | None:
    name = trace.name
    for ext in (".trace.csv.gz", ".trace.csv"):
        if name.endswith(ext):
            cand = trace.with_name(name[: -len(ext)] + suffix)
            return cand if cand.exists() else None
    return None


def cmd_encode(args: argparse.Namespace) -> int:
    from .sources.encode import EncodeConfig, encode

    w, h = args.size
    cfg = EncodeConfig(input=args.input, width=w, height=h, fps=args.fps, frames=args.frames, start_s=args.start,
                       filters=args.filters, retime=args.retime, codec=args.codec, gop=args.gop,
                       bframes=args.bframes, refs=args.refs, qp=args.qp, crf=args.crf, bitrate_bps=args.bitrate,
                       maxrate_bps=args.maxrate, bufsize_bits=args.bufsize, passes=args.passes, slice_max_bytes=args.slice_max_size,
                       slices=args.slices, preset=args.preset, threads=args.threads)
    if sum(x is not None for x in (cfg.qp, cfg.crf, cfg.bitrate_bps)) == 0:
        cfg.qp = 26
    r = encode(cfg, args.out, args.name, keep_bitstream=not args.no_bitstream, gzip_trace=args.gzip)
    s = r.stats
    print(f"{r.trace}: {s['frames']} frames, {s['nal_units']} NAL units, {s['mean_rate_bps'] / 1e3:.1f} kbit/s, "
          f"GOP {s['gop_pattern']}; encode {r.encode_s:.2f} s, analyse {r.analyze_s:.2f} s")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .quality.evaluate import evaluate, format_summary

    _check_outputs(args, "out", "json", "damaged_out", "decoded_out")
    recipe = args.recipe if args.recipe is not None else (None if args.no_source else _beside(args.trace, ".recipe.toml"))
    r = evaluate(args.trace, args.bitstream, args.log, playout_delay_s=args.playout_delay, flows=args.flow or None,
                 recipe_path=recipe, source_dirs=args.source_dir or (), vmaf=args.vmaf, ssim=args.ssim,
                 damaged_out=args.damaged_out, decoded_out=args.decoded_out, threads=args.threads,
                 miv_interval=args.miv_interval, late=args.late, repetition=args.repetition)
    if args.out:
        r.write_parquet(args.out)
    if args.json:
        r.write_json(args.json)
    print(format_summary(r.summary))
    lost_ps = r.summary["parameter_sets_lost"]
    if lost_ps:
        first = lost_ps[0]
        print(f"warning: {len(lost_ps)} parameter set(s) lost, first {first['kind']} (nal {first['nal']}, "
              f"frame {first['frame']}); pictures that needed them may not decode", file=sys.stderr)
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from .quality.calibrate import constants_for
    from .quality.estimate import estimate
    from .quality.evaluate import json_native
    from .receiver.recvlog import deliver, read_receive_log
    from .sources.encode import read_frames_csv
    from .traces.trace import read_trace

    _check_outputs(args, "out", "json")
    trace = read_trace(args.trace)
    log = read_receive_log(args.log, args.flow or None)
    d = deliver(trace, log, args.playout_delay)
    frames_path = args.frames if args.frames is not None else _beside(args.trace, ".frames.csv")
    frames = read_frames_csv(frames_path) if frames_path else None
    consts, calibration = constants_for(args.trace, use_calibration=not args.uncalibrated)
    e = estimate(trace, d.received, frames, **consts)
    summary = e.summary() | {"calibration": calibration, "lambda": consts["lam"], "kappa": consts["kappa"],
                             "gamma": consts["gamma"]}
    if args.out:
        import pyarrow.parquet as pq

        cols: dict[str, Collection[Any]] = {
            "display": range(e.decodable.size), "decodable": e.decodable, "shown": e.shown,
            "err_mse_y_vs_decode": e.err_mse_y, "err_mse_yuv_vs_decode": e.err_mse_yuv}
        if e.psnr_y is not None and e.psnr_yuv is not None:
            cols |= {"psnr_y_vs_source": e.psnr_y, "psnr_yuv_vs_source": e.psnr_yuv}
        pq.write_table(pa.table({k: list(v) for k, v in cols.items()}), args.out)
    if args.json:
        Path(args.json).write_text(json.dumps(json_native(summary), indent=2, allow_nan=False) + "\n")
    for k, v in summary.items():
        print(f"{k:<26} {v:.4f}" if isinstance(v, float) else f"{k:<26} {v}")
    if frames is None:
        print("note: no frames file beside the trace: PSNR not estimated", file=sys.stderr)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .quality.calibrate import calibrate, write_calibration

    stem = _stem(args.trace)
    recipe = args.recipe if args.recipe is not None else _beside(args.trace, ".recipe.toml")
    frames = args.frames if args.frames is not None else _beside(args.trace, ".frames.csv")
    if recipe is None:
        raise VideoInputError(args.trace, "no recipe beside the trace (calibration decodes against the source; use --recipe)")
    if frames is None:
        raise VideoInputError(args.trace, "no frames file beside the trace (use --frames)")
    from qoelab.outdir import refuse_symlink

    refuse_symlink(args.trace.with_name(stem + ".calibration.toml"))  # before the decodes, not after
    c = calibrate(args.trace, args.bitstream, recipe, frames, losses=args.losses, seeds=args.seeds,
                  source_dirs=args.source_dir or (), threads=args.threads)
    out = args.trace.with_name(stem + ".calibration.toml")
    write_calibration(out, c)
    print(f"{out}: lambda {c.lam:g}, kappa {c.kappa:g}, gamma {c.gamma:g} from {c.runs} decodes; RMS error {c.rms_db:.2f} dB "
          f"(default constants: {c.rms_uncalibrated_db:.2f} dB)")
    return 0


def cmd_migrate_recipe(args: argparse.Namespace) -> int:
    import tomli_w

    from .sources.source import load_small_toml, migrate_legacy_source

    path = args.recipe
    recipe = load_small_toml(path, "recipe")
    spec = migrate_legacy_source(recipe, path)
    recipe["source"] = spec.as_dict()
    path.write_text(tomli_w.dumps(recipe), encoding="utf-8")
    print(f"{path}: source is now kind {spec.kind!r}" + (f" ({spec.path}, sha256 {spec.sha256[:12]}…)" if spec.kind == "file" else ""))
    return 0


def cmd_dash(args: argparse.Namespace) -> int:
    from .sources.dash import build_ladder

    r = build_ladder(args.out, duration_s=args.duration, fps=args.fps, name=args.name)
    print(f"{r['trace']}: {len(r['representations'])} representations, segment lengths {r['segment_lengths_s']} s")
    return 0


def register(subparsers) -> argparse.ArgumentParser:
    """Add the `video` command group to an argparse subparsers object."""
    video = subparsers.add_parser("video", help="encode video, evaluate delivered quality, DASH ladders")
    sub = video.add_subparsers(dest="video_command", required=True, metavar="{encode,evaluate,estimate,calibrate,migrate-recipe,dash}")

    p = sub.add_parser("encode", help="encode a video and write its NAL trace")
    p.add_argument("input", help="video file, or lavfi:<source>, e.g. lavfi:testsrc2=size=352x288:rate=30")
    p.add_argument("--out", type=Path, default=Path("."), help="output directory (default .)")
    p.add_argument("--name", default="video", help="base name of the outputs (default video)")
    p.add_argument("--codec", choices=["h264", "hevc"], default="h264", help="encoder: libx264 or libx265 (default h264)")
    p.add_argument("--size", type=_size, default=(352, 288), help="WIDTHxHEIGHT (default 352x288)")
    p.add_argument("--fps", type=float, default=30.0, help="output frame rate in frames/s (default 30)")
    p.add_argument("--frames", type=int, help="number of frames (default: whole input)")
    p.add_argument("--start", type=parse_duration_s, default=0.0, help="seek into a file input")
    p.add_argument("--filters", default="", help="extra ffmpeg -vf chain applied first")
    p.add_argument("--retime", action="store_true", help="play input frames at --fps instead of resampling")
    p.add_argument("--gop", type=int, default=15, help="frames per GOP (IDR interval, default 15)")
    p.add_argument("--bframes", type=int, default=2, help="B frames between anchors (default 2: IBBP)")
    p.add_argument("--refs", type=int, default=1, help="reference frames per P/B frame (default 1)")
    rc = p.add_mutually_exclusive_group()
    rc.add_argument("--qp", type=int, help="fixed QP (default 26 if no rate control is given)")
    rc.add_argument("--crf", type=float, help="constant rate factor (quality-targeted rate control), e.g. 23")
    rc.add_argument("--bitrate", type=parse_rate_bps, help="target rate, e.g. 5Mbps")
    p.add_argument("--maxrate", type=parse_rate_bps, help="VBV maximum rate")
    p.add_argument("--bufsize", type=parse_rate_bps, help="VBV buffer size in bits, e.g. 10M")
    p.add_argument("--passes", type=int, choices=[1, 2], default=1,
                   help="2: two-pass rate control (needs --bitrate; default 1)")
    p.add_argument("--slice-max-size", type=int, help="maximum slice size in bytes (H.264)")
    p.add_argument("--slices", type=int, help="fixed number of slices per picture")
    p.add_argument("--preset", default="medium", help="the encoder's speed preset, e.g. fast, slow (default medium)")
    p.add_argument("--threads", type=int, default=2, help="encoder threads (default 2)")
    p.add_argument("--no-bitstream", action="store_true", help="do not keep the bitstream")
    p.add_argument("--gzip", action="store_true", help="write the trace gzip-compressed")
    p.set_defaults(func=_guarded(cmd_encode), handler=_guarded(cmd_encode))

    p = sub.add_parser("evaluate", help="decode what the receiver got and measure per-frame quality")
    p.add_argument("trace", type=Path, help="the NAL trace `qoelab video encode` wrote (.trace.csv)")
    p.add_argument("bitstream", type=Path, help="the encoded bitstream the trace describes (.h264/.hevc)")
    p.add_argument("log", type=Path, help="receive log (Parquet or CSV), the messages table of a video over TCP, or the "
                                          "bitstream a real receiver wrote (.h264/.hevc, from `qoelab emulate`)")
    p.add_argument("--playout-delay", type=parse_duration_s, default=0.5, help="e.g. 150ms (default 500ms)")
    p.add_argument("--flow", action="append", help="use only this flow's packets (repeatable)")
    p.add_argument("--late", choices=["discard", "decode"], default="discard",
                   help="a frame past its deadline is discarded like a lost one (default), or decoded for "
                        "reference with its display slot frozen")
    p.add_argument("--repetition", type=int, default=0,
                   help="with a messages table of a looped video: which repetition to evaluate (default 0)")
    p.add_argument("--recipe", type=Path, help="encode recipe, for PSNR against the source (default: beside the trace)")
    p.add_argument("--no-source", action="store_true", help="do not compare with the source")
    p.add_argument("--source-dir", action="append", type=Path,
                   help="folder to look for a recipe's source file in (repeatable; also QOELAB_SOURCE_PATH)")
    p.add_argument("--vmaf", action="store_true", help="also compute VMAF and MS-SSIM with libvmaf (slow)")
    p.add_argument("--ssim", choices=["block", "gaussian"], default="block",
                   help="SSIM definition: block (8x8, ffmpeg/EvalVid; default) or gaussian (Wang et al.)")
    p.add_argument("--miv-interval", type=int, default=25, help="MIV window in frames (default 25)")
    p.add_argument("--decoded-out", type=Path, help="write the damaged decode here (raw yuv420p, one picture per slot)")
    p.add_argument("--damaged-out", type=Path, help="write the damaged bitstream here")
    p.add_argument("--out", type=Path, help="per-frame results (Parquet)")
    p.add_argument("--json", type=Path, help="summary (JSON)")
    p.add_argument("--threads", type=int, default=1, help="decoder threads (default 1)")
    p.set_defaults(func=_guarded(cmd_evaluate), handler=_guarded(cmd_evaluate))

    p = sub.add_parser("estimate", help="fast decodability and PSNR estimate, no decoding")
    p.add_argument("trace", type=Path, help="the NAL trace `qoelab video encode` wrote (.trace.csv)")
    p.add_argument("log", type=Path, help="receive log (Parquet or CSV), e.g. a run's packets table")
    p.add_argument("--frames", type=Path, help="encode's frames file (default: beside the trace)")
    p.add_argument("--playout-delay", type=parse_duration_s, default=0.5, help="e.g. 150ms (default 500ms)")
    p.add_argument("--flow", action="append", help="use only this flow's packets (repeatable)")
    p.add_argument("--uncalibrated", action="store_true", help="ignore a calibration beside the trace")
    p.add_argument("--out", type=Path, help="per-frame estimates (Parquet)")
    p.add_argument("--json", type=Path, help="summary (JSON)")
    p.set_defaults(func=_guarded(cmd_estimate), handler=_guarded(cmd_estimate))

    p = sub.add_parser("calibrate", help="fit the estimator's constants for one trace from a few real decodes")
    p.add_argument("trace", type=Path, help="the NAL trace `qoelab video encode` wrote (.trace.csv)")
    p.add_argument("bitstream", type=Path, help="the encoded bitstream the trace describes (.h264/.hevc)")
    p.add_argument("--recipe", type=Path, help="encode recipe (default: beside the trace)")
    p.add_argument("--frames", type=Path, help="encode's frames file (default: beside the trace)")
    p.add_argument("--losses", type=_fractions, default=[0.01, 0.05, 0.10], help="slice loss levels (default 0.01,0.05,0.1)")
    p.add_argument("--seeds", type=_seeds, default=[1000, 1001], help="seeds per loss level (default 1000,1001)")
    p.add_argument("--source-dir", action="append", type=Path, help="folder to look for the source file in")
    p.add_argument("--threads", type=_positive_int, default=1, help="decoder threads (default 1)")
    p.set_defaults(func=_guarded(cmd_calibrate), handler=_guarded(cmd_calibrate))

    p = sub.add_parser("migrate-recipe", help="convert a recipe with raw ffmpeg_input_args to a checked [source]")
    p.add_argument("recipe", type=Path, help="the encode recipe to convert (rewritten in place)")
    p.set_defaults(func=_guarded(cmd_migrate_recipe), handler=_guarded(cmd_migrate_recipe))

    p = sub.add_parser("dash", help="encode an HEVC DASH ladder and write its MPDs and segment-size trace")
    p.add_argument("--out", type=Path, default=Path("."), help="output directory (default .)")
    p.add_argument("--name", default="dash_hevc", help="base name of the MPDs and the segment trace (default dash_hevc)")
    p.add_argument("--duration", type=float, default=60.0, help="content length in s (default 60; checked: 0 < d ≤ 3600)")
    p.add_argument("--fps", type=float, default=24.0, help="frame rate in frames/s (default 24)")
    p.set_defaults(func=_guarded(cmd_dash), handler=_guarded(cmd_dash))
    return video


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qoelab")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
