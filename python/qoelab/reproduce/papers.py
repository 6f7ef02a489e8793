"""The five papers qoelab reproduces, as data: one entry per paper, in the order of the report,
and qoelab's own QoS study (``qos``), which no paper answers: its entry names no text, and its
report has no paper column.

Each entry names the paper (title, authors, venue), its full text under ``../shared/papers`` (the
file name only: the text is not shipped), the question it asks in one sentence, and the module of
its reproduction (``qoelab.reproduce.<module>``) or ``None`` while it has none. A reproduction
module exposes ``run(out, *, quick, jobs, progress, executor) -> dict`` and writes
``out/report.json`` in the format of ``docs/report-format.md``; ``qoelab reproduce all`` runs
every paper whose ``module`` is set and marks the others "not yet reproduced".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    key: str  # also the sub-command: `qoelab reproduce <key>`
    title: str
    authors: str
    venue: str
    text: str  # file name of the full text in ../shared/papers ("" for a study of our own)
    question: str
    module: str | None  # qoelab.reproduce.<module>, or None: not yet reproduced
    issue: int | None = None  # the issue that tracks its reproduction while it has none


PAPERS: tuple[Paper, ...] = (
    Paper(
        key="tfd",
        title="Performance Evaluation of the TFD-capable Dynamic QoS Assurance of HD Video Streaming in "
              "Well-dimensioned Network",
        authors="A. Chodorek, R. R. Chodorek",
        venue="",
        text="tfd-dynamic-qos-hd-video.txt",
        question="Do routers that reserve bandwidth dynamically from the TFD IP option protect N HD videos against "
                 "K TCP flows on a 1 Gbit/s network better than RSVP's static reservations and best effort?",
        module="tfd",
    ),
    Paper(
        key="sqf",
        title="Self-Prioritization of Audio and Video Traffic",
        authors="T. Bonald, L. Muscariello, N. Ostallo",
        venue="ICC 2011",
        text="sqf-self-prioritization.txt",
        question="Does Shortest Queue First with Longest Queue Drop on a 10 Mbit/s access line protect audio and "
                 "video against downloads without signalling, compared with FIFO and DRR fair queuing?",
        module="sqf",
    ),
    Paper(
        key="wimax",
        title="Effective Multi-Connection Video Streaming over WiMAX",
        authors="S. S. Al-Majeed, M. Fleury",
        venue="",
        text="multi-tfrc-wimax.txt",
        question="Does splitting one video over several TFRC connections across a WiMAX TDD uplink with a "
                 "Gilbert-Elliott channel raise its decoded PSNR?",
        module="wimax",
    ),
    Paper(
        key="interactive",
        title="Symbiotic Streaming of Elastic Traffic on Interactive Transport",
        authors="J. I. Khan, R. Zaghal, Q. Gu",
        venue="",
        text="tcp-interactive-symbiotic-transcoder.txt",
        question="Can a transcoder that hears TCP's retransmission timeouts trade video quality for delay when the "
                 "path breaks, and by how much?",
        module="interactive",
    ),
    Paper(
        key="mptcp",
        title="Experimental performance analysis of multipath TCP path characteristics in streaming UHD HEVC-DASH "
              "over wireless networks",
        authors="J. S. Wejin, H. Amca",
        venue="",
        text="mptcp-uhd-hevc-dash.txt",
        question="Does Multipath TCP stream UHD HEVC DASH better than single-path TCP over balanced and unbalanced "
                 "paths?",
        module="mptcp",
    ),
    Paper(
        key="qos",
        title="QoS mechanisms side by side: which protects the video best, at what cost to the rest?",
        authors="qoelab's own study (no paper)",
        venue="",
        text="",
        question="On the SQF testbed (10 Mbit/s access line) and the TFD dumbbell (1 Gbit/s), how do FIFO, DRR, SQF, "
                 "FQ-CoDel, PIE, RED, CoDel, DiffServ EF and (on the dumbbell) RSVP and TFD reservations change the "
                 "video's loss, delay, jitter and decoded quality, and the downloads' goodput and fairness?",
        module="qos",
    ),
)

BY_KEY: dict[str, Paper] = {p.key: p for p in PAPERS}
