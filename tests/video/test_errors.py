"""Bad input through the CLI: one clear line on stderr and exit code 2."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qoelab.video.cli import main
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.traces.trace import read_trace


def run_cli(capsys, *argv):
    rc = main(["video", *map(str, argv)])
    err = capsys.readouterr().err
    return rc, err


def assert_one_line(err, path, fragment):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"qoelab: {path}: "), lines[0]  # the same shape as every other qoelab error
    assert fragment in lines[0]
    assert "Traceback" not in err


def test_truncated_trace(short_clip, tmp_path, capsys):
    text = short_clip.trace.read_text()
    bad = tmp_path / "cut.trace.csv"
    bad.write_text(text[: len(text) // 2])  # cut mid-line
    trace = read_trace(short_clip.trace)
    log = tmp_path / "log.csv"
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), log)
    rc, err = run_cli(capsys, "evaluate", bad, short_clip.bitstream, log)
    assert rc == 2
    assert_one_line(err, bad, "truncated trace")


def test_malformed_trace_in_estimate(short_clip, tmp_path, capsys):
    bad = tmp_path / "bad.trace.csv"
    lines = short_clip.trace.read_text().splitlines()
    lines[7] = lines[7].replace(",P,", ",Z,").replace(",B,", ",Z,").replace(",I,", ",Z,").replace(",X,", ",Z,")
    bad.write_text("\n".join(lines) + "\n")
    log = tmp_path / "log.parquet"
    trace = read_trace(short_clip.trace)
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), log)
    rc, err = run_cli(capsys, "estimate", bad, log)
    assert rc == 2
    assert_one_line(err, bad, "line 8: column `type`: must be one of")


def test_receive_log_naming_unknown_packets(short_clip, tmp_path, capsys):
    trace = read_trace(short_clip.trace)
    table = synthetic_log(trace, np.zeros(trace.n_nal, bool))
    nal = table.column("nal").to_numpy().copy()
    nal[10] = trace.n_nal + 5
    table = table.set_column(table.schema.get_field_index("nal"), "nal", pa.array(nal))
    log = tmp_path / "unknown.parquet"
    pq.write_table(table, log)
    rc, err = run_cli(capsys, "evaluate", short_clip.trace, short_clip.bitstream, log)
    assert rc == 2
    assert_one_line(err, log, f"names unknown NAL unit {trace.n_nal + 5}")


def test_receive_log_with_wrong_columns(short_clip, tmp_path, capsys):
    log = tmp_path / "cols.csv"
    log.write_text("flow,seq,nal,frame,size_bytes,sent_ns\nv,0,0,0,6,0\n")
    rc, err = run_cli(capsys, "estimate", short_clip.trace, log)
    assert rc == 2
    assert_one_line(err, log, "lacks column(s) recv_ns")
    log2 = tmp_path / "types.parquet"
    pq.write_table(pa.table({"flow": ["v"], "seq": [0], "nal": [0.5], "frame": [0], "size_bytes": [6],
                             "sent_ns": [0], "recv_ns": [1]}), log2)
    rc, err = run_cli(capsys, "estimate", short_clip.trace, log2)
    assert rc == 2
    assert_one_line(err, log2, "column nal must be integer")


def test_receive_log_frame_mismatch(short_clip, tmp_path, capsys):
    trace = read_trace(short_clip.trace)
    table = synthetic_log(trace, np.zeros(trace.n_nal, bool))
    frame = table.column("frame").to_numpy().copy()
    frame[-1] += 1
    table = table.set_column(table.schema.get_field_index("frame"), "frame", pa.array(frame))
    log = tmp_path / "frame.parquet"
    pq.write_table(table, log)
    rc, err = run_cli(capsys, "estimate", short_clip.trace, log)
    assert rc == 2
    assert_one_line(err, log, "the log says frame")


def test_unreadable_video(tmp_path, capsys):
    bad = tmp_path / "garbage.mp4"
    bad.write_bytes(b"this is not a video" * 100)
    rc, err = run_cli(capsys, "encode", bad, "--out", tmp_path, "--frames", "5")
    assert rc == 2
    assert_one_line(err, bad, "unreadable video")
    missing = tmp_path / "missing.mp4"
    rc, err = run_cli(capsys, "encode", missing, "--out", tmp_path)
    assert rc == 2
    assert_one_line(err, missing, "no such video file")


def test_bitstream_not_matching_trace(short_clip, tmp_path, capsys):
    bad = tmp_path / "other.h264"
    data = short_clip.bitstream.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    trace = read_trace(short_clip.trace)
    log = tmp_path / "log.parquet"
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), log)
    rc, err = run_cli(capsys, "evaluate", short_clip.trace, bad, log)
    assert rc == 2
    assert_one_line(err, bad, "not the traced encode")


def test_missing_ffmpeg(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QOELAB_FFMPEG", str(tmp_path / "no-ffmpeg"))
    rc, err = run_cli(capsys, "encode", "lavfi:testsrc2=size=64x64:rate=30", "--out", tmp_path, "--frames", "3")
    assert rc == 2
    assert_one_line(err, tmp_path / "no-ffmpeg", "ffmpeg not found")


def test_cli_encode_and_estimate_work(tmp_path, capsys):
    rc = main(["video", "encode", "lavfi:testsrc2=size=176x144:rate=30", "--out", str(tmp_path), "--name", "t",
               "--size", "176x144", "--frames", "30", "--qp", "30", "--slice-max-size", "500"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    trace = read_trace(tmp_path / "t.trace.csv")
    assert trace.n_frames == 30 and trace.stats().max_nal_bytes <= 504
    log = tmp_path / "log.parquet"
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), log)
    rc = main(["video", "estimate", str(tmp_path / "t.trace.csv"), str(log), "--json", str(tmp_path / "e.json")])
    assert rc == 0
    assert '"decodable_frame_rate": 1.0' in (tmp_path / "e.json").read_text()


def test_a_decoder_that_is_not_for_video_is_refused_with_a_clear_error():
    from qoelab.video.errors import VideoInputError
    from qoelab.video.pictures.decode import video_decoder

    assert video_decoder("h264", 1).thread_count == 1
    with pytest.raises(VideoInputError, match="'aac' is not a video decoder"):
        video_decoder("aac", 1)


def test_a_decoded_picture_without_pts_is_refused_not_a_type_error(short_clip, monkeypatch):
    # mypy found that the first (display order) pass sorted the decoder's pts values, which may
    # be None: a picture without one raised TypeError instead of the clean error.
    import qoelab.video.sources.encode as enc
    from qoelab.video.errors import VideoInputError

    real = enc.video_decoder

    class NoPts:
        def __init__(self, ctx):
            self.ctx = ctx

        def decode(self, pkt):
            frames = self.ctx.decode(pkt)
            for f in frames:
                f.pts = None
            return frames

    monkeypatch.setattr(enc, "video_decoder", lambda codec, threads: NoPts(real(codec, threads)))
    with pytest.raises(VideoInputError, match="decoder output"):
        enc.analyze_bitstream(short_clip.bitstream, "h264", 30.0, 352, 288, source_args=None)
