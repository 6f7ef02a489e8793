"""A bundled trace at another mean rate, made by scaling the slice sizes of an encoded one.

    python -m qoelab.video.traces.rescale [--out data/traces]

writes ``hd1080_62M.trace.csv.gz`` and ``hd1080_62M.recipe.toml`` from ``hd1080_40M``: the TFD
paper states a 40 Mbit/s target, but its delivered streams carry about 62 Mbit/s each (its
Table II at K = 0: 63 Mbit/s for N = 1, 622 for N = 10), so the reproduction runs both rates as
calibrations (``qoelab reproduce tfd --calibration``).

The transformation, exactly (integer arithmetic, so the file is byte-identical on every machine):

- every slice NAL unit (types I, P, B; start code included) becomes
  ``floor((size · factor_ppm + 500 000) / 1 000 000)`` bytes, i.e. ``size · factor`` rounded half
  up, with ``factor = factor_ppm / 10^6``;
- non-VCL units (type X: AUD, SPS, PPS, SEI) keep their size, as they would in a re-encode;
- frames, their order, display numbers, types and timestamps are unchanged, and the simulator
  packetises the rows by the same rule as any trace (``ceil(size / max_payload)`` datagrams).

``factor_ppm`` is the smallest integer for which the trace's mean rate *at IP level* (what the
TFD reproduction measures as a stream's throughput: payload plus 40 bytes of IPv4/UDP/RTP
headers per datagram of at most 1448 payload bytes) reaches the target. The shape is the
source's scaled: every frame's slice bytes grow by the same factor, so the peak-to-mean ratio
over any window and the GOP structure are the source's, and the source's VBV (maxrate 40 Mbit/s,
bufsize 30 Mbit) becomes one of maxrate 40·f and bufsize 30·f. The recipe records both, the
source file's SHA-256, and the statistics ``tests/video/test_rescaled_trace.py`` re-checks.

Why scaling rather than a re-encode at 62 Mbit/s: a re-encode needs a VBV the paper does not
state (Blu-ray's H.264 maximum is 40 Mbit/s, so no standard buffer exists at 62), takes two
7-minute passes on two cores, and would change the size process (I/P/B ratios move with the
quantiser); scaling changes the rate alone, so the two calibrations differ in nothing else.
What it does not give: a decodable stream or its quality (no ``frames.csv``; the trace is for
the simulator only).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

from qoelab.paths import root

from .trace import NalTrace, read_trace, write_trace

__all__ = ["SOURCE", "TARGET_IP_BPS", "scale_vcl", "ip_mean_rate_bps", "ip_max_window_rate_bps", "factor_ppm_for",
           "build_hd62"]

REPO = root()  # the folder holding data/ (a checkout, or an installed wheel's bundle)
SOURCE = "hd1080_40M"
NAME = "hd1080_62M"
#: The paper's delivered rate per stream (Table II, K = 0: 622 Mbit/s for N = 10).
TARGET_IP_BPS = 62_000_000
#: IP-level counting, as the TFD reproduction's ``mean_rate_bps``: headers per datagram and the
#: largest payload of one datagram.
IP_HEADER_BYTES = 40
MAX_PAYLOAD_BYTES = 1448
PPM = 1_000_000


def scale_vcl(t: NalTrace, factor_ppm: int) -> NalTrace:
    """``t`` with every slice NAL unit's size multiplied by ``factor_ppm / 10^6`` (rounded half
    up, never below 1 byte) and the non-VCL units unchanged.

    # Panics
    Raises ``ValueError`` for a factor below 1 ppm."""
    if factor_ppm < 1:
        raise ValueError(f"factor_ppm must be at least 1, got {factor_ppm}")
    size = t.size_bytes.astype(np.int64)
    scaled = np.maximum(1, (size * factor_ppm + PPM // 2) // PPM)
    return NalTrace(t.frame.copy(), t.display.copy(), t.type_code.copy(), np.where(t.vcl, scaled, size), t.ts_ms.copy())


def _ip_bytes_per_frame(t: NalTrace) -> np.ndarray:
    ip = t.size_bytes + IP_HEADER_BYTES * np.ceil(t.size_bytes / MAX_PAYLOAD_BYTES).astype(np.int64)
    return np.bincount(t.frame, weights=ip, minlength=t.n_frames)


def ip_mean_rate_bps(t: NalTrace) -> float:
    """Mean rate at IP level (payload + headers per datagram), over the trace's frame count at its
    frame rate."""
    return float(_ip_bytes_per_frame(t).sum()) * 8 * t.fps() / t.n_frames


def ip_max_window_rate_bps(t: NalTrace, window_s: float = 1.0) -> float:
    """Largest IP-level rate over ``round(window_s · fps)`` consecutive frames."""
    fps = t.fps()
    n = min(t.n_frames, max(1, round(window_s * fps)))
    c = np.concatenate(([0.0], np.cumsum(_ip_bytes_per_frame(t))))
    return float((c[n:] - c[:-n]).max()) * 8 * fps / n


def factor_ppm_for(t: NalTrace, target_ip_bps: float) -> int:
    """The smallest factor (in ppm) whose scaled trace has an IP-level mean rate ≥ the target
    (bisection: the rate never falls as the factor grows)."""
    lo, hi = 1, PPM
    while ip_mean_rate_bps(scale_vcl(t, hi)) < target_ip_bps:
        lo, hi = hi, hi * 2
        if hi > 1000 * PPM:
            raise ValueError(f"no factor up to 1000 reaches {target_ip_bps} bit/s")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ip_mean_rate_bps(scale_vcl(t, mid)) >= target_ip_bps:
            hi = mid
        else:
            lo = mid
    return hi


def _sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def build_hd62(out: Path, source_dir: Path | None = None) -> Path:
    """Writes ``hd1080_62M.trace.csv.gz`` and its recipe into ``out``; returns the trace path."""
    import tomli_w
    import tomllib

    src_dir = source_dir or out
    src = src_dir / f"{SOURCE}.trace.csv.gz"
    src_recipe = tomllib.loads((src_dir / f"{SOURCE}.recipe.toml").read_text())
    t = read_trace(src)
    f_ppm = factor_ppm_for(t, TARGET_IP_BPS)
    s = scale_vcl(t, f_ppm)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{NAME}.trace.csv.gz"
    write_trace(path, s)
    f = f_ppm / PPM
    cfg = src_recipe["config"]
    stats = read_trace(path).stats().as_dict()
    recipe = {
        "name": NAME,
        "kind": "scaled",
        "notes": (f"{SOURCE} with every slice NAL unit's size multiplied by {f:.6f} (rounded half up; non-VCL units "
                  "unchanged; frames, types and timestamps unchanged), so that its mean rate at IP level (40 bytes "
                  "of IPv4/UDP/RTP headers per datagram of at most 1448 payload bytes) is the TFD paper's delivered "
                  "62 Mbit/s per stream (its Table II, K = 0) instead of the stated 40 Mbit/s target. The size "
                  "process and the VBV shape are the source's, scaled. Not decodable: no frames.csv. Rebuild: "
                  "python -m qoelab.video.traces.rescale (see python/qoelab/video/traces/rescale.py)."),
        "command": ["python", "-m", "qoelab.video.traces.rescale"],
        "source_trace": {"name": SOURCE, "file": src.name, "sha256": _sha256(src)},
        "transform": {
            "rule": "slice NAL (I/P/B): floor((size * factor_ppm + 500000) / 1000000), at least 1; non-VCL (X): unchanged",
            "factor_ppm": f_ppm,
            "target_ip_mean_rate_bps": TARGET_IP_BPS,
            "ip_header_bytes": IP_HEADER_BYTES,
            "max_payload_bytes": MAX_PAYLOAD_BYTES,
        },
        # The source encode's VBV, scaled by the factor (what the scaled frame sizes obey).
        "implied_vbv": {"maxrate_bps": round(cfg["maxrate_bps"] * f, 1), "bufsize_bits": round(cfg["bufsize_bits"] * f, 1)},
        "expected": {
            **stats,
            "ip_mean_rate_bps": round(ip_mean_rate_bps(s), 1),
            "ip_max_1s_rate_bps": round(ip_max_window_rate_bps(s), 1),
            "source_ip_mean_rate_bps": round(ip_mean_rate_bps(t), 1),
            "source_ip_max_1s_rate_bps": round(ip_max_window_rate_bps(t), 1),
        },
    }
    (out / f"{NAME}.recipe.toml").write_text(tomli_w.dumps(recipe), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qoelab.video.traces.rescale", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "data" / "traces")
    args = ap.parse_args(argv)
    p = build_hd62(args.out, REPO / "data" / "traces")
    print(f"wrote {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
