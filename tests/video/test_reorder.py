"""The receiver's reorder buffer (qoelab.video.receiver.reorder): decoding order, deadlines, occupancy,
packets missing from the log, and one video over four greedy TFRC connections end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from qoelab.video.errors import VideoInputError
from qoelab.video.receiver.recvlog import receive_log_from_table
from qoelab.video.receiver.reorder import COMPLETE, LATE, LOST, reorder
from qoelab.video.traces.trace import NalTrace


REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "data" / "traces"
H = 40  # IP + UDP + TFRC headers per packet
MAXP = 1000  # payload per packet in the synthetic logs
FPS = 30.0
MS = 1_000_000


def small_trace(n_frames: int = 60, seed: int = 0) -> NalTrace:
    """Two NAL units a frame, some of them spanning two or three packets."""
    rng = np.random.default_rng(seed)
    frame = np.repeat(np.arange(n_frames), 2)
    size = rng.integers(200, 2600, frame.size)
    return NalTrace(frame=frame, display=frame.copy(), type_code=np.where(frame % 15 == 0, 0, 1).astype(np.int8),
                    size_bytes=size.astype(np.int64), ts_ms=frame * (1000.0 / FPS))


def packetise(trace: NalTrace) -> tuple[np.ndarray, np.ndarray]:
    """(nal, payload) of every packet, in trace order."""
    counts = -(-trace.size_bytes // MAXP)
    nal = np.repeat(np.arange(trace.n_nal), counts)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    k = np.arange(nal.size) - first[nal]
    payload = np.minimum(MAXP, trace.size_bytes[nal] - k * MAXP)
    return nal, payload


def log_table(trace: NalTrace, nal: np.ndarray, payload: np.ndarray, recv_ns: np.ndarray,
              flows: np.ndarray | None = None, sent_ns: np.ndarray | None = None) -> pa.Table:
    recv_ns = np.asarray(recv_ns, np.int64)
    lost = recv_ns < 0
    flows = np.array(["v"] * nal.size, object) if flows is None else flows
    sent = np.zeros(nal.size, np.int64) if sent_ns is None else sent_ns
    return pa.table({
        "flow": pa.array(flows.tolist(), pa.string()),
        "seq": pa.array(np.arange(nal.size, dtype=np.uint64)),
        "nal": pa.array(nal.astype(np.int64)),
        "frame": pa.array(trace.frame[nal]),
        "size_bytes": pa.array((payload + H).astype(np.uint32)),
        "sent_ns": pa.array(sent),
        "recv_ns": pa.array(np.where(lost, 0, recv_ns), mask=lost),
    })


def reference(trace: NalTrace, nal, payload, recv, deadline_ns, t0=0):
    """An event-driven buffer, packet by packet in arrival order: the head frame leaves when it is
    complete, or is given up at its playout time. Returns [(frame, time, played)] in the order
    frames leave, and the held-by-reordering count after each arrival."""
    n_frames = trace.n_frames
    need = np.bincount(trace.frame, weights=trace.size_bytes, minlength=n_frames)
    have = np.zeros(n_frames)
    playout = [t0 + round(f * 1e9 / FPS) + deadline_ns for f in range(n_frames)]
    out, head, held, occ = [], 0, [], []

    def advance(now):
        nonlocal head
        while head < n_frames:
            if have[head] == need[head] and done_at[head] <= playout[head]:
                out.append((head, max(done_at[head], out[-1][1] if out else done_at[head]), True))
            elif playout[head] <= now:
                out.append((head, playout[head], False))
            else:
                return
            head += 1

    done_at = np.full(n_frames, np.iinfo(np.int64).max)
    order = np.argsort(np.where(recv < 0, np.iinfo(np.int64).max, recv), kind="stable")
    for i in order:
        if recv[i] < 0:
            continue
        advance(recv[i] - 1)
        f = trace.frame[nal[i]]
        if f >= head:
            have[f] += payload[i]
            if have[f] == need[f]:
                done_at[f] = recv[i]
            held.append(f)
        advance(recv[i])
        occ.append((recv[i], sum(1 for g in held if g > head)))
    advance(np.iinfo(np.int64).max - 1)
    return out, occ


def test_frames_leave_in_decoding_order_for_any_arrival_order():
    trace = small_trace()
    nal, payload = packetise(trace)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        # Arrival times: the packets in a random order over 3 s, a few lost.
        times = np.sort(rng.integers(10 * MS, 3000 * MS, nal.size))
        recv = np.empty(nal.size, np.int64)
        recv[rng.permutation(nal.size)] = times
        recv[rng.random(nal.size) < 0.03] = -1
        d = int(rng.integers(0, 3000)) * MS
        r = reorder(trace, receive_log_from_table(log_table(trace, nal, payload, recv)), d / 1e9, fps=FPS, t0_ns=0)
        assert np.all(np.diff(r.release_ns) >= 0), seed
        played = r.status == COMPLETE
        assert np.all(r.release_ns[played] >= r.last_arrival_ns[played])
        assert np.all(r.release_ns <= r.playout_ns)
        assert np.all(r.release_ns[~played] == r.playout_ns[~played])
        ref, _ = reference(trace, nal, payload, recv, d)
        assert [f for f, _, _ in ref] == list(range(trace.n_frames)), seed
        assert np.array_equal([t for _, t, _ in ref], r.release_ns), seed
        assert np.array_equal([p for _, _, p in ref], played), seed


def test_a_frame_completing_after_its_deadline_is_late_and_a_missing_one_lost():
    trace = small_trace(30)
    nal, payload = packetise(trace)
    recv = (trace.frame[nal] * (1e9 / FPS)).astype(np.int64) + 20 * MS  # 20 ms after its time
    last_of_7 = np.flatnonzero(trace.frame[nal] == 7)[-1]
    recv[last_of_7] += 500 * MS  # frame 7 completes 480 ms after its playout at D = 0.1 s
    recv[np.flatnonzero(trace.frame[nal] == 12)[0]] = -1  # frame 12 never completes
    r = reorder(trace, receive_log_from_table(log_table(trace, nal, payload, recv)), 0.1, fps=FPS, t0_ns=0)
    assert r.status[7] == LATE and r.status[12] == LOST
    assert r.counts() == {"complete": 28, "late": 1, "lost": 1}
    assert r.last_arrival_ns[7] == recv[last_of_7] and r.last_arrival_ns[12] == r.NULL
    # Frame 8 is not held up by frame 7: 7 is given up at its playout time.
    assert r.release_ns[8] == max(r.playout_ns[7], r.last_arrival_ns[8])
    # With a long enough deadline nothing is late; the smallest such deadline is reported.
    r2 = reorder(trace, receive_log_from_table(log_table(trace, nal, payload, recv)), r.min_deadline_ns / 1e9,
                 fps=FPS, t0_ns=0)
    assert r2.counts() == {"complete": 29, "late": 0, "lost": 1}
    assert r.min_deadline_ns == 520 * MS


def test_occupancy_is_zero_in_order_and_grows_when_a_connection_stalls():
    trace = small_trace(120)
    nal, payload = packetise(trace)
    recv = 10 * MS + np.arange(nal.size, dtype=np.int64) * MS  # in order, 1 ms apart
    flows = np.array([f"c{(f // 15) % 4}" for f in trace.frame[nal]], object)
    r = reorder(trace, receive_log_from_table(log_table(trace, nal, payload, recv, flows)), 10.0, fps=FPS, t0_ns=0)
    assert r.max_occupancy() == (0, 0)
    assert r.counts()["complete"] == trace.n_frames
    # Connection 1 (GOPs 1 and 5) stalls for 2 s: everything behind it waits.
    stalled = recv + np.where(flows == "c1", 2000 * MS, 0)
    r = reorder(trace, receive_log_from_table(log_table(trace, nal, payload, stalled, flows)), 10.0, fps=FPS, t0_ns=0)
    _, occ = reference(trace, nal, payload, stalled, 10_000 * MS)
    peak_pkts, peak_bytes = r.max_occupancy()
    assert peak_pkts == max(n for _, n in occ) > 0
    # Before GOP 1 completes, every packet of frames 30+ that has arrived is held.
    gop1_done = stalled[trace.frame[nal] < 30].max()
    behind = (trace.frame[nal] >= 30) & (stalled < gop1_done)
    at = np.searchsorted(r.occupancy_t_ns, gop1_done - 1, side="right") - 1
    assert r.occupancy_pkts[at] == behind.sum()
    assert r.occupancy_bytes[at] == (payload[behind] + H).sum()
    # Fig. 2: GOP 1 arrives over [its first, its last packet], on connection c1.
    assert r.gops["flow"][1] == "c1" and r.gops["last_arrival_ns"][1] == gop1_done


def test_a_packet_missing_from_the_log_loses_its_frame():
    """A datagram dropped at a TFRC send buffer never gets into the packet log: the NAL unit it
    belonged to is short of payload, so its frame is lost although every logged packet arrived."""
    trace = small_trace(20)
    nal, payload = packetise(trace)
    multi = np.flatnonzero(np.bincount(nal) >= 2)[0]
    gone = np.flatnonzero(nal == multi)[0]
    keep = np.arange(nal.size) != gone
    recv = 10 * MS + np.arange(nal.size, dtype=np.int64) * MS
    r = reorder(trace, receive_log_from_table(log_table(trace, nal[keep], payload[keep], recv[keep])), 5.0,
                fps=FPS, t0_ns=0)
    assert r.header_bytes == H
    f = trace.frame[multi]
    assert r.status[f] == LOST
    assert r.counts() == {"complete": trace.n_frames - 1, "late": 0, "lost": 1}


def test_bad_input_names_the_log():
    trace = small_trace(5)
    nal, payload = packetise(trace)
    t = log_table(trace, nal, payload, np.arange(nal.size) * MS)
    log = receive_log_from_table(t, "run/packets")
    with pytest.raises(VideoInputError, match="must be a finite time"):
        reorder(trace, log, -1.0)
    other = small_trace(3)
    with pytest.raises(VideoInputError, match="run/packets: row .* unknown NAL unit"):
        reorder(other, log, 1.0)


# --- end to end ---------------------------------------------------------------------------------

def run_split(n: int, transport: dict, app_extra: dict, *, limit: str = "5000p", secs: int = 120):
    from qoelab import Scenario

    flows = []
    for i in range(n):
        app = {"kind": "video", "trace": str(TRACES / "cif_bbb_qp26.trace.csv"),
               "split": {"connections": n, "index": i}, **app_extra}
        flows.append({"name": f"c{i}", "src": "S", "dst": "D", "start": f"{500 * i}ms",
                      "transport": transport, "app": app, "packet_log": True})
    sc = Scenario.from_dict({
        "sim": {"duration": f"{secs}s", "seed": 1},
        "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "10ms", "queue": {"kind": "fifo", "limit": limit}}],
        "flows": flows}, base_dir=REPO)
    return sc.run()


def test_four_greedy_tfrc_connections_reassemble_every_frame_once():
    from qoelab.video.traces.trace import read_trace

    trace = read_trace(TRACES / "cif_bbb_qp26.trace.csv")
    res = run_split(4, {"kind": "tfrc"}, {"pacing": "greedy"})
    flows = res.tables["flows"].to_pydict()
    assert sum(flows["drop_queue_pkts"]) == 0 and sum(flows["tfrc_buffer_drops"]) == 0
    log = receive_log_from_table(res.tables["packets"], "packets", [f"c{i}" for i in range(4)])
    # Every NAL unit's packets once each: the trace's 900-B slices fit one 1460-B datagram.
    assert np.array_equal(np.sort(log.nal), np.arange(trace.n_nal))
    r = reorder(trace, log, 10.0)
    assert r.counts() == {"complete": trace.n_frames, "late": 0, "lost": 0}
    assert np.all(np.diff(r.release_ns) >= 0)
    # The GOPs of connection k are those g with g mod 4 = k, and the occupancy is not zero: the
    # connections start 0.5 s apart, so later GOPs wait for earlier ones.
    assert all(f == f"c{g % 4}" for g, f in zip(r.gops["gop"], r.gops["flow"]))
    assert r.max_occupancy()[0] > 0
    # Too short a deadline makes frames late, never out of order.
    short = reorder(trace, log, r.min_deadline_ns / 2e9)
    assert short.counts()["late"] > 0 and np.all(np.diff(short.release_ns) >= 0)


def test_send_buffer_drops_of_timed_tfrc_are_lost_frames():
    """Timed (burst) pacing into a small TFRC send buffer over a slow link: datagrams are
    dropped at the sender and never logged. 500-B payloads split the 900-B slices in two, so
    some NAL units lose one of their two packets: their frames must be lost all the same."""
    from qoelab.video.traces.trace import read_trace

    trace = read_trace(TRACES / "cif_bbb_qp26.trace.csv")
    res = run_split(1, {"kind": "tfrc", "send_buffer": "5p"}, {"max_payload": "500B"}, secs=40)
    drops = res.tables["flows"].to_pydict()["tfrc_buffer_drops"][0]
    assert drops > 0
    log = receive_log_from_table(res.tables["packets"], "packets", ["c0"])
    want = -(-trace.size_bytes // 500)
    got = np.bincount(log.nal, minlength=trace.n_nal)
    assert (want - got).sum() == drops  # what the log misses is what the send buffer dropped
    partial = np.flatnonzero((got > 0) & (got < want))
    assert partial.size > 0
    r = reorder(trace, log, 30.0)
    assert np.all(r.status[trace.frame[partial]] == LOST)
    assert np.all(r.status[trace.frame[got < want]] == LOST)
