"""A video over TCP judged at a playout deadline (qoelab.video.receiver.messages): late frames freeze their
display slot; with `late = "decode"` they still serve as references, with `"discard"` they do not;
a real run over TCP with an outage makes exactly the frames caught behind it late."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.quality.evaluate import evaluate
from qoelab.video.receiver.messages import FRAMES_PER_CYCLE, deliver_messages, frame_times, read_messages
from qoelab.video.traces.trace import read_trace

DELAY_S = 0.2


def _messages(trace, late_frames=(), late_by_ns=2_000_000_000, start_ns=5_000_000, flow="v", repetition=0):
    """One row per frame, delivered 30 ms after it was written, the frames in `late_frames` by
    `late_by_ns` more."""
    n = trace.n_frames
    written = start_ns + np.round(trace.frame_ts_ms() * 1e6).astype(np.int64)
    delivered = written + 30_000_000
    delivered[list(late_frames)] += late_by_ns
    return pa.table({
        "flow": pa.array([flow] * n, pa.string()),
        "end": pa.array(np.ones(n, np.uint64)),
        "tag": pa.array(np.arange(n, dtype=np.uint64) + np.uint64(repetition * FRAMES_PER_CYCLE)),
        "bytes": pa.array(trace.frame_bytes().astype(np.uint64)),
        "written_ns": pa.array(written),
        "delivered_ns": pa.array(delivered),
    })


def _dec_of_disp(trace):
    disp = trace.frame_display()
    dec = np.empty_like(disp)
    dec[disp] = np.arange(disp.size)
    return dec


@pytest.fixture(scope="module")
def late_p(short_clip, tmp_path_factory):
    """The clip's messages with the first P frame of GOP 1 late, evaluated both ways."""
    trace = read_trace(short_clip.trace)
    types = trace.frame_type()
    dec = _dec_of_disp(trace)
    # The first P frame in display order within GOP 1 (slots 15..29): B frames and later P frames predict from it.
    slot = next(d for d in range(16, 30) if types[dec[d]] == 1)
    tmp = tmp_path_factory.mktemp("msgs")
    path = tmp / "messages.parquet"
    pq.write_table(_messages(trace, [dec[slot]]), path)
    out = {}
    for late in ("discard", "decode"):
        out[late] = evaluate(short_clip.trace, short_clip.bitstream, path, playout_delay_s=DELAY_S,
                             recipe_path=None, late=late)
    return trace, slot, out


def test_only_the_late_frame_is_flagged_and_its_slot_is_frozen(late_p):
    trace, slot, out = late_p
    for late, r in out.items():
        f = r.frames.to_pydict()
        assert [d for d in range(trace.n_frames) if f["late"][d]] == [slot], late
        assert r.summary["frames_late"] == 1
        assert not f["identical_to_decode"][slot], f"{late}: a frozen slot is not the decoded picture"
        # Everything up to the anchor before it is untouched (the B frames between that anchor and
        # the late P frame predict from it too: damaged if it is discarded).
        prev_anchor = max(d for d in range(slot) if f["type"][d] != "B")
        assert all(f["identical_to_decode"][: prev_anchor + 1]), late
    assert all(out["decode"].frames["identical_to_decode"].to_pylist()[:slot])
    assert out["discard"].summary["nal_late"] == out["decode"].summary["nal_late"] > 0


def test_decode_keeps_the_late_reference_and_discard_damages_its_dependents(late_p):
    trace, slot, out = late_p
    dis, dec = out["discard"].frames.to_pydict(), out["decode"].frames.to_pydict()
    gop_end = 30
    after = range(slot + 1, gop_end)
    # Decoded for reference: every later picture of the GOP decodes exactly.
    assert all(dec["identical_to_decode"][d] for d in after)
    # Discarded: the pictures predicted from it (the GOP's later P/B frames) are damaged.
    assert sum(not dis["identical_to_decode"][d] for d in after) >= 3
    # The next GOP starts with an I frame: both recover.
    assert dis["identical_to_decode"][gop_end] and dec["identical_to_decode"][gop_end]
    psnr = lambda r: np.nanmean(np.asarray(r.frames["psnr_y_vs_decode"].to_numpy(zero_copy_only=False), float))
    assert out["decode"].summary["late_frames_decoded"] and not out["discard"].summary["late_frames_decoded"]
    assert np.isfinite(psnr(out["discard"]))


def test_frozen_slot_shows_the_previous_picture(short_clip, tmp_path):
    """With `decode`, the late slot's picture equals the one shown before it (written decode)."""
    trace = read_trace(short_clip.trace)
    dec = _dec_of_disp(trace)
    slot = 20
    path = tmp_path / "m.parquet"
    pq.write_table(_messages(trace, [dec[slot]]), path)
    raw = tmp_path / "decoded.yuv"
    evaluate(short_clip.trace, short_clip.bitstream, path, playout_delay_s=DELAY_S, late="decode", decoded_out=raw)
    w, h = 352, 288
    pics = np.fromfile(raw, np.uint8).reshape(-1, h * 3 // 2, w)
    assert pics.shape[0] == trace.n_frames
    assert np.array_equal(pics[slot], pics[slot - 1])
    assert not np.array_equal(pics[slot + 1], pics[slot])


def test_frame_times_deadline_and_ideal_line(short_clip):
    trace = read_trace(short_clip.trace)
    t = _messages(trace, [7], late_by_ns=150_000_000, start_ns=1_000_000_000, repetition=2)
    ft = frame_times(trace, read_messages(t), DELAY_S, repetition=2)
    assert ft.start_ns == 1_000_000_000
    ts = np.round(trace.frame_ts_ms() * 1e6).astype(np.int64)
    assert np.array_equal(ft.ideal_ns, 1_000_000_000 + ts)
    assert np.array_equal(ft.deadline_ns, ft.ideal_ns + 200_000_000)
    # 30 ms + 150 ms = 180 ms < 200 ms: in time; 2 s late: late.
    assert not ft.late.any() and ft.in_time.all()
    assert np.allclose(ft.delay_ns()[7], 180e6) and np.allclose(np.delete(ft.delay_ns(), 7), 30e6)
    t2 = _messages(trace, [7], late_by_ns=171_000_000)
    assert np.flatnonzero(frame_times(trace, read_messages(t2), DELAY_S).late).tolist() == [7]


def test_undelivered_frames_count_as_lost(short_clip):
    trace = read_trace(short_clip.trace)
    t = _messages(trace).slice(0, 40)
    d = deliver_messages(trace, t, DELAY_S)
    assert d.received[trace.frame < 40].all() and not d.arrived[trace.frame >= 40].any()


@pytest.mark.parametrize("edit, needle", [
    (lambda t: t.set_column(3, "bytes", pa.array(np.asarray(t["bytes"]) + 1)), "the trace says"),
    (lambda t: t.drop(["written_ns"]), "lacks column(s) written_ns"),
    (lambda t: pa.concat_tables([t, t.set_column(0, "flow", pa.array(["w"] * t.num_rows))]), "name one"),
    (lambda t: t.set_column(5, "delivered_ns", pa.array(np.asarray(t["written_ns"]) - 1)), "before it was written"),
    (lambda t: pa.concat_tables([t, t.slice(3, 1)]), "delivered twice"),
])
def test_bad_messages_name_the_file_and_reason(short_clip, tmp_path, edit, needle):
    trace = read_trace(short_clip.trace)
    path = tmp_path / "bad.parquet"
    pq.write_table(edit(_messages(trace)), path)
    with pytest.raises(VideoInputError) as e:
        deliver_messages(trace, path, DELAY_S)
    assert needle in str(e.value) and "bad.parquet" in str(e.value)


def test_a_run_over_tcp_with_an_outage_makes_the_frames_behind_it_late(short_clip, tmp_path):
    """The bundled clip's frames over TCP on a 5 Mbit/s path; a 1-s outage at 0.5 s: frames
    written before the outage are in time, frames written during it are late (TCP holds them
    until the path is back and its timer fires), and frames well after it are in time again."""
    from qoelab.scenario import Scenario

    scen = tmp_path / "s.toml"
    scen.write_text(f"""
name = "late"
[sim]
duration = "6s"
seed = 1
[[links]]
a = "A"
b = "B"
rate = "5Mbps"
delay = "10ms"
[[flows]]
name = "v"
src = "A"
dst = "B"
transport = {{ kind = "tcp" }}
app = {{ kind = "video", trace = "{Path(short_clip.trace).resolve()}" }}
packet_log = true
[[outages]]
links = ["A->B", "B->A"]
at = "0.5s"
duration = "1s"
""")
    res = Scenario.load(scen).run()
    trace = read_trace(short_clip.trace)
    ft = frame_times(trace, read_messages(res.messages, "v"), DELAY_S)
    assert ft.delivered.all(), "TCP delivers every frame once the path is back"
    w = ft.written_ns - ft.start_ns
    assert not ft.late[w < 400_000_000].any()
    assert ft.late[(w > 600_000_000) & (w < 1_400_000_000)].all()
    # In order: nothing is delivered before the path is back, so delivery times are monotone.
    assert (np.diff(ft.delivered_ns) >= 0).all()
    assert ft.delivered_ns[(w > 600_000_000) & (w < 1_400_000_000)].min() >= ft.start_ns + 1_500_000_000


def test_cli_evaluates_a_messages_table_and_refuses_a_bad_policy(short_clip, tmp_path):
    import subprocess
    import sys

    trace = read_trace(short_clip.trace)
    path = tmp_path / "messages.parquet"
    pq.write_table(_messages(trace, [5]), path)
    base = [sys.executable, "-m", "qoelab.cli", "video", "evaluate", str(short_clip.trace), str(short_clip.bitstream),
            str(path), "--playout-delay", "200ms", "--no-source"]
    ok = subprocess.run(base + ["--late", "decode", "--json", str(tmp_path / "s.json")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "late frames" in ok.stdout and "decoded for reference" in ok.stdout
    bad = subprocess.run(base + ["--late", "keep"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--late" in bad.stderr and "Traceback" not in bad.stderr
    rep = subprocess.run(base + ["--repetition", "3"], capture_output=True, text=True)
    assert rep.returncode == 2 and "repetition 3" in rep.stderr and "Traceback" not in rep.stderr


def test_the_transcoder_judged_at_a_deadline(tmp_path):
    """The bundled transcoder scenario, 600 frames (20 s) over 2 outages, with a 2-s discard
    threshold: classic TCP makes more frames late than the interactive transcoder, whose cuts
    shrink the backlog the outages leave (the paper's Fig. 5 / Table 1 direction). The message
    sizes are the rungs' (not one trace's), so frame_times_at checks none."""
    from qoelab.paths import root
    from qoelab.scenario import Scenario
    from qoelab.video.receiver.messages import frame_times_at

    late = {}
    for interactive in (True, False):
        sc = Scenario.load(root() / "scenarios" / "interactive" / "transcoder.toml")
        sc.set("sim.duration", "40s")
        sc.set("flows[0].app.frames", 600)
        sc.set("flows[0].app.interactive", interactive)
        sc.set("outages[0].count", 2)
        res = sc.run()
        ts_ns = np.arange(600, dtype=np.int64) * 1_000_000_000 // 30
        ft = frame_times_at(ts_ns, read_messages(res.messages, "video"), 2.0)
        assert ft.delivered.all() and (np.diff(ft.delivered_ns) >= 0).all()
        assert (ft.delay_ns() >= 0).all(), "no frame arrives before its ideal time"
        late[interactive] = int(ft.late.sum())
    assert late[False] > late[True], late
