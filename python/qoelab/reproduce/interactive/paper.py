"""The TCP Interactive paper's values (Khan, Zaghal & Gu, §3, Table 1 and Fig. 4), transcribed
from its text, and the grid's fixed axes."""

from __future__ import annotations

from qoelab.reproduce.interactive.frames import METRICS, SHOWN

MODES = ("A=0.35", "A=0.55", "A=0.75", "classic")
BACKOFF = {"A=0.35": 0.35, "A=0.55": 0.55, "A=0.75": 0.75}
#: Table 1: mode → (average delay, SNR Y, SNR U, SNR V); the delay's unit is not stated.
PAPER_TABLE1: dict[str, tuple[float, float, float, float]] = {
    "A=0.35": (10.31, 16.14, 9.08, 9.92),
    "A=0.55": (12.81, 15.61, 8.67, 9.46),
    "A=0.75": (10.50, 21.59, 12.84, 14.01),
    "classic": (32.27, 25.31, 15.90, 17.21),
}
#: §3.2 (Fig. 4): 12 timeouts in 6 bursts.
PAPER_FIG4 = (12, 6)
OUTAGE_COUNTS = (3, 6, 9)
MAIN_OUTAGES = 6
BURST_S, FIRST_S, LAST_END_S = 3.0, 2.0, 58.0
TREATMENTS = ("mode", "outages")
ALL = (*METRICS, *SHOWN)
