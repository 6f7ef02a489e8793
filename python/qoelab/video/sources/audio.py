"""A VBR audio trace in the NAL-trace format (one row per coded audio frame).

Audio frames are independently decodable, so every row is a frame of type `I` with
`frame == display == nal`; `ts_ms` is the frame's presentation time. The simulator streams it like
a video trace.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from ..errors import VideoInputError
from ..tools import ffmpeg_version, run_ffmpeg
from ..traces.trace import NalTrace, read_trace, write_trace
from .encode import write_recipe

__all__ = ["AUDIO_SOURCE", "build_audio_trace", "audio_trace_from_file"]

# Speech-like on/off activity: pink noise gated at 0.25 Hz, over a gliding tone, so that the VBR
# encoder's rate varies between talk spurts and pauses.
AUDIO_SOURCE = ("anoisesrc=c=pink:r=48000:a=0.25:seed=64,"
                "volume='0.3+0.7*gt(sin(2*PI*0.25*t)+0.3*sin(2*PI*1.7*t),0)':eval=frame[n];"
                "sine=f=220:r=48000,volume=0.3,vibrato=f=0.5:d=0.8[s];[n][s]amix=inputs=2:normalize=0")


def audio_trace_from_file(path: str | os.PathLike[str]) -> NalTrace:
    """One trace row per packet of the first audio stream of `path`."""
    try:
        with av.open(str(path)) as c:
            if not c.streams.audio:
                raise VideoInputError(path, "no audio stream")
            s = c.streams.audio[0]
            if s.time_base is None:
                raise VideoInputError(path, "audio stream has no time base")
            sizes, ts = [], []
            for pkt in c.demux(s):
                if pkt.size == 0 or pkt.pts is None:
                    continue
                sizes.append(pkt.size)
                ts.append(float(pkt.pts * s.time_base) * 1000.0)
    except av.error.FFmpegError as exc:
        raise VideoInputError(path, f"unreadable audio: {exc.strerror or exc}") from None
    n = len(sizes)
    idx = np.arange(n, dtype=np.int64)
    t = np.round(np.asarray(ts) - ts[0], 3)
    return NalTrace(idx, idx.copy(), np.zeros(n, np.int8), np.asarray(sizes, np.int64), t)


#: Audio codecs: file extension, frame duration (ms), the encoder's arguments after the bitrate.
#: Opus: VBR, 20-ms frames. MPEG-1 Audio Layer II (ISO/IEC 11172-3), ffmpeg's `mp2` encoder: a
#: constant 1152 samples per frame, 24 ms at 48 kHz, so at 64 kbit/s every frame is 192 bytes.
AUDIO_CODECS = {
    "opus": ("opus", 20.0, ["-c:a", "libopus"], ["-vbr", "on", "-frame_duration", "20", "-application", "audio"]),
    "mp2": ("mp2", 24.0, ["-c:a", "mp2"], ["-ar", "48000"]),
}


def build_audio_trace(out: Path, name: str, *, bitrate_bps: int = 64_000, duration_s: float = 60.0,
                      encoder_bitrate_bps: int | None = None, codec: str = "opus"):
    """Encode the synthetic source, mono 48 kHz, with Opus VBR (default) or MPEG-1 Layer II
    (`codec = "mp2"`, constant rate). libopus spends less than its nominal rate on this mono
    source, so `encoder_bitrate_bps` (default `bitrate_bps`) is the nominal setting that gives
    the wanted mean; the recipe records both and the measured mean."""
    if codec not in AUDIO_CODECS:
        raise VideoInputError("audio.codec", f"must be one of {', '.join(AUDIO_CODECS)}, got {codec!r}")
    ext, frame_ms, enc, tail = AUDIO_CODECS[codec]
    nominal = encoder_bitrate_bps or bitrate_bps
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="qoelab-audio-") as tmp:
        coded = Path(tmp) / f"{name}.{ext}"
        cmd = ["-f", "lavfi", "-i", AUDIO_SOURCE, "-t", f"{duration_s:g}", "-ac", "1", *enc,
               "-b:a", str(nominal), *tail, str(coded)]
        t0 = time.perf_counter()
        run_ffmpeg(cmd, what="audio encoding", path="lavfi audio source")
        encode_s = time.perf_counter() - t0
        trace = audio_trace_from_file(coded)
    trace_path = out / f"{name}.trace.csv"
    write_trace(trace_path, trace)
    back = read_trace(trace_path)
    sizes = back.size_bytes
    stats = {
        "packets": int(back.n_nal),
        "frame_ms": frame_ms,
        "total_bytes": int(sizes.sum()),
        "duration_s": round(back.n_nal * frame_ms / 1000, 3),
        "mean_rate_bps": round(float(sizes.sum() * 8 / (back.n_nal * frame_ms / 1000)), 1),
        "min_packet_bytes": int(sizes.min()),
        "max_packet_bytes": int(sizes.max()),
    }
    recipe = {
        "name": name,
        "kind": "audio",
        "notes": (f"VBR audio of {bitrate_bps / 1e3:g} kbit/s mean (SQF paper): Opus VBR, 20-ms frames, mono 48 kHz, "
                  "synthetic speech-like on/off source." if codec == "opus" else
                  f"Audio of {bitrate_bps / 1e3:g} kbit/s (SQF paper: MPEG audio streamed by VLC): MPEG-1 Layer II (ffmpeg mp2), "
                  "constant rate, 1152-sample (24-ms) frames, mono 48 kHz, synthetic speech-like on/off source."),
        "source": {"kind": "audio_stand_in"},  # AUDIO_SOURCE; `command` shows it
        "config": {"bitrate_bps": bitrate_bps, "encoder_bitrate_bps": nominal, "duration_s": duration_s, "codec": codec},
        "encoder": {"ffmpeg": ffmpeg_version(),
                    "codec_library": f"{'libopus' if codec == 'opus' else 'mp2'} (in ffmpeg {ffmpeg_version()})"},
        "command": ["ffmpeg", *cmd[:-1], f"{name}.{ext}"],
        "timing": {"encode_s": round(encode_s, 2), "cpus": os.cpu_count()},
        "expected": stats,
    }
    write_recipe(out / f"{name}.recipe.toml", recipe)
    return recipe
