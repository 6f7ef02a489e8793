"""Video commands under bad or hostile input (issue 15, items 6 and 7): every encoder option is
range-checked before ffmpeg runs, recipes cannot inject ffmpeg arguments, output names cannot
leave the output folder, ffmpeg opens files only. Each case: exit 2, one line, nothing written."""

from __future__ import annotations

import shutil
import tomllib

import numpy as np
import pytest
import tomli_w

from qoelab.video.cli import main
from qoelab.video.errors import VideoInputError
from qoelab.video.receiver.recvlog import synthetic_log, write_receive_log
from qoelab.video.traces.trace import read_trace

LAVFI = "lavfi:testsrc2=size=64x64:rate=30"


def run_cli(capsys, *argv):
    rc = main(["video", *map(str, argv)])
    return rc, capsys.readouterr().err


def one_line(err: str, fragment: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qoelab: "), err
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err


BAD_ENCODE = [
    (["--frames", "0"], "encode.frames", "1..10000000"),
    (["--frames", "-5"], "encode.frames", "1..10000000"),
    (["--qp", "99"], "encode.qp", "0..51"),
    (["--qp", "-1"], "encode.qp", "0..51"),
    (["--crf", "52"], "encode.crf", "[0, 51]"),
    (["--crf", "nan"], "encode.crf", "[0, 51]"),
    (["--bitrate", "0"], "encode.bitrate_bps", "1..10000000000"),
    (["--bitrate", "100k", "--maxrate", "0"], "encode.maxrate_bps", "1.."),
    (["--gop", "0"], "encode.gop", "1..100000"),
    (["--bframes", "-1"], "encode.bframes", "0..16"),
    (["--bframes", "17"], "encode.bframes", "0..16"),
    (["--gop", "3", "--bframes", "3"], "encode.bframes", "less than the GOP"),
    (["--refs", "0"], "encode.refs", "1..16"),
    (["--size", "65x64"], "encode.width", "even"),
    (["--size", "0x64"], "encode.width", "2..16384"),
    (["--size", "64x20000"], "encode.height", "2..16384"),
    (["--fps", "0"], "encode.fps", "(0, 1000]"),
    (["--fps", "inf"], "encode.fps", "(0, 1000]"),
    (["--slices", "0"], "encode.slices", "1..4"),
    (["--slices", "5"], "encode.slices", "1..4"),
    (["--slice-max-size", "10"], "encode.slice_max_bytes", "100..1000000"),
    (["--threads", "0"], "encode.threads", "1..64"),
    (["--preset", "turbo"], "encode.preset", "must be one of"),
    (["--name", "../../escape"], "--name", "plain file name"),
    (["--name", "/tmp/abs"], "--name", "plain file name"),
    (["--name", ".hidden"], "--name", "plain file name"),
    (["--filters", "movie=/etc/passwd"], "input.filters", "'movie' is not allowed"),
    (["--filters", "scale=64:64,psnr=stats_file=x.log"], "input.filters", "'psnr' is not allowed"),
    (["--filters", "scale='64':64"], "input.filters", "options may use only"),
]


@pytest.mark.parametrize("extra, where, fragment", BAD_ENCODE, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_encode_options_are_range_checked_before_ffmpeg(tmp_path, capsys, monkeypatch, extra, where, fragment):
    # ffmpeg must not even be looked for: a missing binary would be a different error.
    monkeypatch.setenv("QOELAB_FFMPEG", str(tmp_path / "no-ffmpeg"))
    out = tmp_path / "out"
    argv = ["encode", LAVFI, "--out", out, "--size", "64x64", "--frames", "3", *extra]
    rc, err = run_cli(capsys, *argv)
    assert rc == 2
    one_line(err, f"qoelab: {where}: ")
    assert fragment in err
    assert not (tmp_path / "escape.trace.csv").exists() and not (tmp_path.parent / "escape.trace.csv").exists()
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("source, fragment", [
    ("lavfi:testsrc2=size=64x64:rate=30", "encode.frames: a generated (lavfi) source never ends"),
    ("lavfi:life=filename=/etc/passwd", "option 'filename' reads a file"),
    ("lavfi:movie=/etc/passwd", "lavfi source must be one test source"),
    ("lavfi:testsrc2,psnr=stats_file=/tmp/x", "lavfi source must be one test source"),
    ("lavfi:testsrc2=size=64x64:rate=30;[a]x", "plain value"),
])
def test_encode_input_vocabulary(tmp_path, capsys, monkeypatch, source, fragment):
    monkeypatch.setenv("QOELAB_FFMPEG", str(tmp_path / "no-ffmpeg"))
    frames = [] if "never ends" in fragment else ["--frames", "3"]
    rc, err = run_cli(capsys, "encode", source, "--out", tmp_path / "o", "--size", "64x64", *frames)
    assert rc == 2
    one_line(err, fragment)


def test_encode_name_cannot_write_outside_out(tmp_path, capsys):
    """Injection route: `video encode --name ../../x` wrote outside `--out` before."""
    out = tmp_path / "a" / "b"
    rc, err = run_cli(capsys, "encode", LAVFI, "--out", out, "--size", "64x64", "--frames", "3", "--name", "../../x")
    assert rc == 2
    one_line(err, "--name")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_recorded_recipe_is_what_was_encoded(tmp_path, capsys):
    rc, err = run_cli(capsys, "encode", LAVFI, "--out", tmp_path, "--name", "r", "--size", "64x64", "--frames", "12",
                      "--qp", "51", "--gop", "6", "--bframes", "1", "--preset", "ultrafast")
    assert rc == 0, err
    recipe = tomllib.loads((tmp_path / "r.recipe.toml").read_text())
    cfg = recipe["config"]
    assert (cfg["qp"], cfg["gop"], cfg["bframes"], cfg["frames"], cfg["preset"]) == (51, 6, 1, 12, "ultrafast")
    assert "-qp" in recipe["command"] and recipe["command"][recipe["command"].index("-qp") + 1] == "51"
    stats = read_trace(tmp_path / "r.trace.csv").stats()
    assert stats.frames == 12 and stats.gop_length == 6 and stats.gop_pattern == "IBPBPP"  # closed GOP: the last frame before an IDR is a P
    assert recipe["source"] == {"kind": "lavfi", "generator": "testsrc2", "params": {"size": "64x64", "rate": "30"},
                                "width": 64, "height": 64, "fps": 30.0, "retime": False}


@pytest.mark.parametrize("duration", ["0", "nan", "-1", "inf", "1e9"])
def test_dash_duration_is_checked(tmp_path, capsys, monkeypatch, duration):
    monkeypatch.setenv("QOELAB_FFMPEG", str(tmp_path / "no-ffmpeg"))
    rc, err = run_cli(capsys, "dash", "--out", tmp_path / "d", "--duration", duration)
    assert rc == 2
    one_line(err, "dash.duration: must be a number in (0, 3600]")
    assert not (tmp_path / "d").exists()


# ---- recipes from a shared bundle ----------------------------------------------------------------

@pytest.fixture()
def bundle(short_clip, tmp_path):
    """A copy of the short clip's bundle and a lossless receive log."""
    b = tmp_path / "bundle"
    b.mkdir()
    for p in (short_clip.trace, short_clip.bitstream, short_clip.recipe, short_clip.frames):
        shutil.copy(p, b / p.name)
    trace = read_trace(b / short_clip.trace.name)
    log = tmp_path / "recv.parquet"
    write_receive_log(synthetic_log(trace, np.zeros(trace.n_nal, bool)), log)
    return b, b / short_clip.trace.name, b / short_clip.bitstream.name, b / short_clip.recipe.name, log


def _edit_recipe(path, source: dict) -> None:
    r = tomllib.loads(path.read_text())
    r["source"] = source
    path.write_text(tomli_w.dumps(r))


def test_recipe_cannot_make_ffmpeg_write_files(bundle, tmp_path, capsys):
    """Injection route: a recipe's `ffmpeg_input_args` went to ffmpeg verbatim; an extra output
    in them made ffmpeg write any file (here a PNG outside the bundle)."""
    b, trace, bs, recipe, log = bundle
    evil = tmp_path / "evil.png"
    _edit_recipe(recipe, {"ffmpeg_input_args": ["-f", "lavfi", "-i", "testsrc2=size=352x288:rate=30", "-frames:v", "1",
                                                str(evil), "-f", "lavfi", "-i", "testsrc2=size=352x288:rate=30"]})
    rc, err = run_cli(capsys, "evaluate", trace, bs, log)
    assert rc == 2
    one_line(err, "source.ffmpeg_input_args: raw ffmpeg arguments are not accepted")
    assert not evil.exists()


@pytest.mark.parametrize("source, fragment", [
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352, "height": 288, "fps": 30.0,
      "filters": "movie=/etc/passwd"}, "source.filters: filter 'movie' is not allowed"),
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352, "height": 288, "fps": 30.0,
      "filters": "scale=352:288,signature=filename=/tmp/sig.bin"}, "filter 'signature' is not allowed"),
    ({"kind": "lavfi", "generator": "cellauto", "params": {"filename": "/etc/passwd"}, "width": 352, "height": 288,
      "fps": 30.0}, "option 'filename' reads a file"),
    ({"kind": "lavfi", "generator": "testsrc2", "params": {"size": "352x288,movie=/etc/passwd"}, "width": 352,
      "height": 288, "fps": 30.0}, "plain value"),
    ({"kind": "file", "path": "/etc/passwd", "sha256": "0" * 64, "width": 352, "height": 288, "fps": 30.0},
     "not found with its recorded SHA-256"),
    ({"kind": "file", "path": "http://example.com/x.mp4", "sha256": "0" * 64, "width": 352, "height": 288,
      "fps": 30.0}, "not found with its recorded SHA-256"),
    ({"kind": "shell", "width": 352, "height": 288, "fps": 30.0}, "source: kind must be one of"),
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352, "height": 288, "fps": 30.0, "args": ["-y"]},
     "source.args: unknown key"),
    ({"kind": "clip", "clip": "../../etc/passwd", "width": 352, "height": 288, "fps": 30.0},
     "unknown bundled clip"),
    ({"kind": "clip", "clip": ["x"], "width": 352, "height": 288, "fps": 30.0}, "source.clip: unknown bundled clip"),
    ({"kind": "lavfi", "generator": {"a": 1}, "width": 352, "height": 288, "fps": 30.0}, "source.generator: must be"),
    ({"kind": ["clip"], "width": 352, "height": 288, "fps": 30.0}, "source: kind must be one of"),
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352.0, "height": 288, "fps": 30.0}, "source.width"),
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352, "height": 288, "fps": 30.0, "retime": "yes"},
     "source.retime: must be true or false"),
    ({"kind": "clip", "clip": "bigbuckbunny", "width": 352, "height": 288}, "source.fps: missing"),
])
def test_recipe_source_vocabulary(bundle, capsys, source, fragment):
    b, trace, bs, recipe, log = bundle
    _edit_recipe(recipe, source)
    rc, err = run_cli(capsys, "evaluate", trace, bs, log)
    assert rc == 2
    one_line(err, fragment)
    assert "root:" not in err  # never the content of the named file


def test_ffmpeg_opens_files_only(tmp_path):
    from qoelab.video.tools import guard_inputs, run_ffmpeg

    assert guard_inputs(["-f", "lavfi", "-i", "x", "-i", "-"]) == [
        "-f", "lavfi", "-protocol_whitelist", "file", "-i", "x", "-protocol_whitelist", "pipe", "-i", "-"]
    # A 2×2 grey PGM picture as a data: URI: ffmpeg reads it unless the protocol is refused.
    uri = "data:image/x-portable-graymap;base64,UDUKMiAyCjI1NQoQIDBA"
    with pytest.raises(VideoInputError, match="Protocol 'data' not on whitelist 'file'"):
        run_ffmpeg(["-i", uri, "-f", "null", "-"], what="reading", path="data")
    pgm = tmp_path / "x.pgm"
    pgm.write_bytes(b"P5\n2 2\n255\n\x10\x20\x30\x40")
    run_ffmpeg(["-i", str(pgm), "-f", "null", "-"], what="reading", path="file")  # files still open
    with pytest.raises(VideoInputError, match="not on whitelist"):
        run_ffmpeg(["-i", f"subfile,,start,0,end,10,,:{pgm}", "-f", "null", "-"], what="reading", path="sub")


@pytest.mark.parametrize("content, fragment", [
    (None, "recipe larger than 1048576 bytes"),  # /dev/zero: size 0, never ends
    (b"\xff\xfe\x00bad", "not UTF-8 text"),
    (b"root:x:0:0:root:/root:/bin/bash\n", "not a TOML recipe"),
])
def test_recipe_that_is_not_a_recipe(bundle, tmp_path, capsys, content, fragment):
    b, trace, bs, recipe, log = bundle
    if content is None:
        path = "/dev/zero"
    else:
        path = tmp_path / "weird.toml"
        path.write_bytes(content)
    rc, err = run_cli(capsys, "evaluate", trace, bs, log, "--recipe", path)
    assert rc == 2
    one_line(err, fragment)
    assert "root:" not in err and "/bin/bash" not in err


@pytest.mark.parametrize("cmd, opt", [("estimate", "--json"), ("estimate", "--out"), ("evaluate", "--json"),
                                      ("evaluate", "--out"), ("evaluate", "--decoded-out"), ("evaluate", "--damaged-out")])
def test_unwritable_output_path_is_a_clean_error(bundle, tmp_path, capsys, cmd, opt):
    b, trace, bs, recipe, log = bundle
    inputs = [trace, log] if cmd == "estimate" else [trace, bs, log]
    target = tmp_path / "no" / "such" / "x.out"
    rc, err = run_cli(capsys, cmd, *inputs, opt, target)
    assert rc == 2
    one_line(err, f"qoelab: {target}: {opt}: folder {target.parent} does not exist")
    rc, err = run_cli(capsys, cmd, *inputs, opt, tmp_path)
    assert rc == 2
    one_line(err, f"qoelab: {tmp_path}: {opt}: is a directory")
