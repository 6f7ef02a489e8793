"""The WiMAX paper as data: its frame lengths and connection counts, the values of its Tables
3–6 and Fig. 2, the constants our findings read its words with, and the choices it leaves open
or contradicts (:data:`CHOICES`)."""

from __future__ import annotations

from qoelab.experiment import Choice

#: The base scenario (network and cross traffic, no video), relative to the repository.
BASE = "scenarios/wimax/base.toml"
#: The bundled CIF trace (the paper's setting on Big Buck Bunny; ``data/traces/README.md``).
TRACE = "data/traces/cif_bbb_qp26.trace.csv"
TRACE_NAME = "cif_bbb_qp26"

#: The paper's TDD frame lengths (Tables 5, 6), ms.
FRAMES_MS = (5.0, 8.0, 10.0, 12.5, 20.0)
CONNECTIONS = (1, 2, 3, 4)
#: Frames per GOP (paper Sec. 3.2 and 3.6: GOPs of 15 frames are the unit given to a connection).
GOP = 15
#: Connection i starts ``START_S + i * OFFSET_S`` into the run (paper Sec. 4: offsets of 0.5 s;
#: the first start, 1 s, lets the cross traffic's TCP flows leave slow start; our choice).
START_S = 1.0
OFFSET_S = 0.5
#: The rtPS CBR sources' payload rates (972-B payloads, 1000-B IP packets): ``paper`` 1.5 Mbit/s
#: (Sec. 3.2, twice), ``gap`` 972 B every 0.03 s (the paper's "inter-packet gap was 0.03 s").
CBR_RATES = {"paper": "1.5Mbps", "gap": "259.2kbps"}
#: The paper's display period of its clip: 1063 frames at 30 frame/s.
DISPLAY_S = 1063 / 30
#: The channel's stationary loss, (r·0.01 + p·0.05)/(p + r) with p = 0.05, r = 0.06 (Sec. 3.4), %.
CHANNEL_LOSS_PCT = 100 * (0.06 * 0.01 + 0.05 * 0.05) / (0.05 + 0.06)
#: Table 3: (frame ms, n) → (sending period SS to BS in s, throughput in kbit/s).
# --- the paper's values, transcribed from its text --------------------------------------------

#: Table 3: (frame ms, n) → (sending period SS to BS in s, throughput in kbit/s).
PAPER_T3 = {(5.0, 1): (71.4, 217), (5.0, 2): (35.8, 437), (5.0, 3): (23.3, 663), (5.0, 4): (17.4, 889),
            (20.0, 1): (33.5, 467), (20.0, 2): (20.5, 754), (20.0, 3): (17.7, 874), (20.0, 4): (14.6, 1059)}
#: Table 4 (frame 20 ms, SS to node C): n → (sending period s, throughput kbit/s, mean delay s).
PAPER_T4 = {1: (35.2, 444, 0.035), 2: (22.4, 690, 0.036), 3: (21.6, 716, 0.039), 4: (15.6, 991, 0.062)}
#: Table 5: (frame ms, n) → (mean PSNR dB, standard deviation dB) over the paper's 15 runs.
PAPER_T5 = {
    (5.0, 1): (29.95, 2.90), (8.0, 1): (32.85, 3.32), (10.0, 1): (32.44, 3.45), (12.5, 1): (33.22, 3.45), (20.0, 1): (31.84, 3.78),
    (5.0, 2): (28.88, 3.07), (8.0, 2): (31.28, 3.81), (10.0, 2): (32.17, 3.38), (12.5, 2): (33.07, 3.47), (20.0, 2): (32.34, 3.49),
    (5.0, 3): (29.54, 3.25), (8.0, 3): (31.07, 3.04), (10.0, 3): (31.83, 3.14), (12.5, 3): (30.79, 3.25), (20.0, 3): (33.15, 3.68),
    (5.0, 4): (28.12, 3.11), (8.0, 4): (31.92, 3.51), (10.0, 4): (31.20, 3.45), (12.5, 4): (33.31, 3.80), (20.0, 4): (33.34, 3.74),
}
#: Table 6: (frame ms, n) → mean packet end-to-end delay, s.
PAPER_T6 = {
    (5.0, 1): 0.0195, (8.0, 1): 0.017, (10.0, 1): 0.017, (12.5, 1): 0.020, (20.0, 1): 0.035,
    (5.0, 2): 0.0446, (8.0, 2): 0.029, (10.0, 2): 0.029, (12.5, 2): 0.027, (20.0, 2): 0.036,
    (5.0, 3): 0.0725, (8.0, 3): 0.024, (10.0, 3): 0.028, (12.5, 3): 0.023, (20.0, 3): 0.039,
    (5.0, 4): 0.0982, (8.0, 4): 0.069, (10.0, 4): 0.067, (12.5, 4): 0.073, (20.0, 4): 0.062,
}
#: Fig. 2 (Sec. 4): "about 6 s of frames (amounting to 90 frames) should be stored in the
#: reordering buffer" (90 frames are 3 s at 30 frame/s: the text contradicts itself).
PAPER_FIG2_STARTUP_S = 6.0
PAPER_FIG2_FRAMES = 90
# --- what the paper leaves open or contradicts (scenarios/wimax/README.md, "Choices") -------------

CHOICES = (
    Choice("cbr", "paper", ("gap",),
           "the rtPS CBR sources at 1.5 Mbit/s, as Sec. 3.2 states twice (and Sec. 3.5 for A → B); its other "
           "statement, one 1000-B packet every 0.03 s, is 267 kbit/s"),
    Choice("overhead_symbols", 3, (2,),
           "symbols of each subframe taken by preamble, FCH and MAPs (DL) or ranging, CQICH and ACK regions (UL) in "
           "our frame layout (docs/models/wimax.md); the paper gives only the PHY rate"),
    Choice("grant_scheduling", "rtps_priority", (),
           "ours serves rtPS before nrtPS (IEEE 802.16 §6.3.5); the paper says its SS queues were served round robin "
           "(Sec. 3.1), which contradicts our default",
           {"round_robin": "round robin among the stations' service-class queues is not implemented yet (issue 38)"}),
    Choice("concealment", "ffmpeg", (),
           "FFmpeg's error concealment (guess_mvs+deblock) in our decoder; the paper used EvalVid",
           {"evalvid_pfr": "EvalVid's previous-frame replacement is not implemented yet (issue 38)"}),
)
