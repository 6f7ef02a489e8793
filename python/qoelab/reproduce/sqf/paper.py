"""The SQF paper as data: its schedulers and sender modes as we name them, the values typed from
its Table I and its statements, the thresholds our findings read its words with, and the
choices it leaves open (:data:`CHOICES`)."""

from __future__ import annotations

from typing import Any

from qoelab.experiment import Choice
from qoelab.experiment.tables import PaperValues

DISCIPLINES = ("fifo", "drr", "sqf", "pfq", "fq_codel")
LABEL = {"fifo": "FIFO", "drr": "FQ (DRR+LQD)", "sqf": "SQF", "pfq": "PFQ", "fq_codel": "FQ-CoDel"}
BUFFER = "50p"
TABLE1_N = (1, 5, 10, 15, 20)

VIDEO_TRACE = "../../data/traces/sqf_mpeg2_5M.trace.csv.gz"
AUDIO_TRACE = "../../data/traces/sqf_audio_mp2_64k.trace.csv"
#: Length of both traces (their loop period), s: clip offsets are drawn in [0, this).
TRACE_S = 60.0
#: The downloads' TCP (issue 16: the Linux profile), explicit in every builder.
TCP = {"kind": "tcp", "cc": "cubic", "profile": "linux"}
#: VLC's two send modes: (label, the video app's sender keys).
MODES: dict[str, tuple[str, dict[str, Any]]] = {
    "es": ("VLC ES (RTP, frame-spread)", {"pacing": "frame"}),
    "ts": ("VLC TS (constant rate per 200 ms)", {"pacing": "ts", "ts_shaping": "200ms", "max_payload": "1316B"}),
}
#: Largest start offset of the video (and its audio) and of the downloads, s.
START_SPREAD_S = 1.0
#: n of the Fig. 8 runs. The paper does not give it.
JITTER_N = 5
#: Loss below this is "negligible" in the findings (0.1 %).
NEGLIGIBLE = 1e-3

#: The sensitivity grid (see :func:`_sensitivity`): labelled video sources and TCP variants. The
#: video sources there are the earlier H.264 720p stand-in, kept as a variant.
SMOOTH_PEAK = "8Mbps"
_H264_APP = {"kind": "video", "trace": "../../data/traces/sqf_video_5M.trace.csv.gz", "loop": True, "pacing": "frame"}
SENS_SOURCES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("H.264 trace, frame-paced", _H264_APP),
    (f"H.264 trace, peak {SMOOTH_PEAK}", {**_H264_APP, "peak_rate": SMOOTH_PEAK}),
    ("CBR 5 Mbit/s", {"kind": "cbr", "rate": "5Mbps", "payload": "1316B"}),
    ("Poisson 5 Mbit/s", {"kind": "poisson", "rate": "5Mbps", "payload": "1316B"}),
)
SENS_TCP: tuple[tuple[str, dict[str, Any]], ...] = (
    ("MSS 1448, ACK each", {**TCP, "mss": "1448B", "delayed_ack": False}),
    ("MSS 1448, delayed ACKs", {**TCP, "mss": "1448B", "delayed_ack": True}),
    ("64 kB aggregates (GRO)", {**TCP, "mss": "64000B", "delayed_ack": False}),
)
#: The sensitivity grid's buffer: 50 MTU in bytes, so that 64 kB aggregates and 1.5 kB segments
#: compete for the same space.
SENS_BUFFER = "75000B"

# --- The paper's values (BMO11), typed from the text -------------------------------------------
#: Table I: data bandwidth share (Mbit/s) / Jain's index, for n = 1, 5, 10, 15, 20.
PAPER_TABLE1: dict[str, list[tuple[float, float]]] = {
    "fifo": [(4.1, 0.95), (4.4, 0.91), (4.8, 0.95), (5.1, 0.95), (5.6, 0.99)],
    "drr": [(4.1, 0.99), (7.5, 0.99), (8.5, 0.95), (8.9, 0.99), (9.1, 0.99)],
    "sqf": [(4.1, 0.95), (4.1, 0.90), (4.1, 0.91), (4.1, 0.95), (4.1, 0.95)],
}
#: Statements of Sec. V-C/E and IV-A that have no table; quoted in the report.
PAPER_STATEMENTS = [
    ("Fig. 6, SQF", "loss rate negligible independently of n (1..20)"),
    ("Fig. 6, FIFO", "audio loss grows linearly from 1 % to more than 25 % as n goes 1 -> 20; video slightly less"),
    ("Fig. 6, FQ", "audio loss low (64 kbit/s < fair share); video loss high as soon as n > 1"),
    ("Fig. 7, FQ", "jitter increases with n for audio and video (round-robin time)"),
    ("Fig. 7, SQF", "beneficial for audio and video, independently of n"),
    ("Table I", "data share grows with n under FIFO and FQ, constant (4.1 Mbit/s) under SQF"),
    ("Fig. 8", "on 10 Mbit/s the video is de-prioritised when delta >= 5 ms; larger threshold on 100 Mbit/s"),
    ("Sec. IV-A", "n = 20: p(T) close to 0 below a peak rate of ~6 Mbit/s; T_bar > 180 min there; FQ limit 480 kbit/s"),
]


# --- What the paper leaves open, and what we chose ----------------------------------------------
CHOICES = (
    Choice("ties", "neutral", ("key_video_last", "key_video_first"),
           "BMO11 Algorithm 1 leaves ties between equal queues open, and they are frequent (an ES video packet and a "
           "TCP segment are both 1,500 B); the project's rule is that no flow gains by its key or position, so equal "
           "queues are served in head-of-line arrival order and LQD draws among equal longest queues from the port's "
           "seeded stream. The alternatives break ties by flow key (smallest served, largest dropped) with the "
           "testbed file's order (web server first: the video loses every tie) or the video server declared first "
           "(the video wins every tie) (issue 36)"),
    Choice("delayed_ack", True, (False,), "the testbed's Linux receivers delay ACKs (with quick-ACK mode), as the "
                                          "kernel does by default"),
    Choice("nic_ring", "none", (64, 256),
           "the paper gives the router's output card \"a buffer size of 50 MTU sized packets\" and one egress "
           "discipline, so the discipline is the only buffer; a 2011 driver also had a transmit ring below it, filled "
           "as soon as a descriptor was free (r8169: 64 descriptors, e1000: 256; no byte queue limits before Linux 3.3), "
           "in which packets are FIFO whatever the discipline (crates/core/src/queue/ring.rs)"),
    Choice("router_gro", False, (True,),
           "the paper's router queues \"MTU sized packets\"; its 2011 Linux drivers also merged a poll's in-order "
           "TCP segments (GRO) into one packet for the qdisc, segmented again on the way out. The alternative turns "
           "GRO on at the router's three interfaces with e1000's 50-us interrupt throttle "
           "(crates/core/src/link/gro.rs, docs/models/gro.md)"),
)

PAPER_SHARE = PaperValues("paper Table I", ("discipline", "n"),
                          {(q, n): v[0] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})
PAPER_JAIN = PaperValues("paper Table I", ("discipline", "n"),
                         {(q, n): v[1] for q, vals in PAPER_TABLE1.items() for n, v in zip(TABLE1_N, vals)})


#: "Constant" data share (Table I, SQF): the change from the smallest to the largest n within
#: this many Mbit/s (the paper's SQF column does not vary in its one printed decimal).
SHARE_TOLERANCE_MBPS = 0.5
