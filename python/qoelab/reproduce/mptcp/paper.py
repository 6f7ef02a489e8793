"""The MPTCP paper as data: its Table 1, the numbers of its figures' captions and text, the
loss readings and labels we name its settings with, and the choices it leaves open
(:data:`CHOICES`)."""

from __future__ import annotations

from qoelab.experiment import Choice

#: The testbed, relative to the repository.
BASE = "scenarios/mptcp/base.toml"
FOLDER = "scenarios/mptcp"

# --- the paper's values, transcribed from its text ----------------------------------------------

#: Table 1: configuration → path ("path1", "path2" of MPTCP; "sptcp") → (packet loss %,
#: latency ms, bandwidth Mbit/s).
TABLE1: dict[str, dict[str, tuple[float, float, float]]] = {
    "balanced": {"path1": (10.0, 10.0, 15.0), "path2": (10.0, 10.0, 15.0), "sptcp": (20.0, 10.0, 30.0)},
    "unbalanced": {"path1": (15.0, 15.0, 25.0), "path2": (5.0, 5.0, 5.0), "sptcp": (10.0, 10.0, 30.0)},
}
#: Fig. 4's caption: mean "buffering delay" (start-up), ms. The caption gives one SPTCP value,
#: not one per configuration.
PAPER_FIG4_MS = {("mptcp", "balanced"): 6.5, ("mptcp", "unbalanced"): 27.0, ("sptcp", "balanced"): 3.0,
                 ("sptcp", "unbalanced"): 3.0}
#: Sec. 5.2 (Fig. 5): mean retransmitted packets per 1-s tick. SPTCP's one value is not given
#: per configuration.
PAPER_FIG5 = {("mptcp", "balanced"): 14.0, ("mptcp", "unbalanced"): 9.0, ("sptcp", "balanced"): 1.0,
              ("sptcp", "unbalanced"): 1.0}
#: Figs. 6/7 (per-segment download rate) are graphs; the text gives no number, only the
#: ordering (Sec. 5.3): MPTCP above SPTCP in both configurations, balanced above unbalanced.
PAPER_FIG6_SOURCE = "paper Figs. 6/7 and Sec. 5.3 (ordering only: the text gives no value; not read from the figure)"
#: Repetitions per setting (Sec. 5.3).
PAPER_REPS = 5
READINGS = ("literal", "div10", "div100", "control")
#: Loss multiplier of each reading.
FACTOR = {"literal": 1.0, "div10": 0.1, "div100": 0.01, "control": 0.0}
READING_LABEL = {"literal": "literal", "div10": "loss ÷ 10", "div100": "loss ÷ 100", "control": "no loss (control)"}
CONFIGS = ("balanced", "unbalanced")
TRANSPORT_LABEL = {"mptcp": "MPTCP", "sptcp": "SPTCP", "sptcp_best": "SPTCP on MPTCP's path 1"}
COUPLED = ("lia", "olia", "uncoupled")
#: ABR policies (``docs/models/dash.md``).
ABRS = ("throughput", "bba", "bola")
LOSS_DIRECTIONS = ("downstream", "upstream", "both")
#: The MPTCP connection's settings (README: the out-of-tree kernel's defaults), the scheduler
#: aside (a choice).
MPTCP = {"kind": "mptcp", "reinject": True, "penalise": True, "tcp": {"profile": "linux"}}
#: The client's and server's interface addresses of the two paths (base.toml).
PATHS = (("10.1.0.1", "10.2.0.1"), ("10.1.1.1", "10.2.1.1"))
# --- what the paper leaves open ------------------------------------------------------------------

CHOICES = (
    Choice("coupled", "lia", ("olia", "uncoupled"),
           "RFC 6356's coupled increase, the controller MPTCP deployments select; the paper names none (issue 37: "
           "the v0.92 kernel runs the system default, uncoupled CUBIC, unless a coupled module is selected)",
           {"balia": "BALIA (Peng et al. 2016) is not implemented yet (issue 37)"}),
    Choice("abr", "throughput", ("bba", "bola"),
           "rate-based, as the paper's VLC player (Sec. 4); dash.js's rule (harmonic mean of 5 × 0.9)",
           {"vlc": "VLC's own adaptive logic is not implemented yet (issue 37)"}),
    Choice("loss_direction", "downstream", ("upstream", "both"),
           "Table 1's loss acts on the video the paper measures (server → client); netem on the client would shape "
           "its egress instead (issue 37)"),
    Choice("scheduler", "min_rtt", ("round_robin",), "Linux's default MPTCP packet scheduler (net/mptcp/sched.c)"),
    Choice("subflows", "disjoint", (), "one subflow per client interface, as the paper's two access paths",
           {"full_mesh": "the server's second interface (full mesh, 4 subflows) is not modelled yet (issue 37)"}),
)
