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
COUPLED = ("uncoupled", "lia", "olia", "balia")
#: ABR policies (``docs/models/dash.md``); ``vlc`` is VLC 2.2's rate-based logic.
ABRS = ("vlc", "throughput", "bba", "bola")
LOSS_DIRECTIONS = ("upstream", "downstream", "both")
#: What the player compares as each representation's bitrate: the mean rate (MP4Box's
#: ``@bandwidth``) or the bundled MPD's peak segment rate.
MPD_BANDWIDTHS = ("mean", "peak")
#: The MPTCP connection-level receive buffer: ``autotuned`` from tcp_rmem (the linux profile's
#: ``rcv_autotune``) or ``fixed`` at 4 MiB (docs/models/mptcp.md).
RCV_BUFS = ("autotuned", "fixed")
#: The MPTCP connection's settings (README: the out-of-tree kernel's defaults), the scheduler
#: aside (a choice). A coupled controller counts its increase per ACK, as the kernel's modules do.
MPTCP = {"kind": "mptcp", "reinject": True, "penalise": True, "coupled_counting": "acks", "tcp": {"profile": "linux"}}
#: The client's and server's interface addresses of the two paths (base.toml).
PATHS = (("10.1.0.1", "10.2.0.1"), ("10.1.1.1", "10.2.1.1"))
#: The hosts' receiver rule for PSH (the ``psh_ack`` choice): ``on``, Linux ≥ 6.6's (a
#: full-sized PSH segment is ACKed once read; the linux profile's), or ``off``, the rule of the
#: testbed's Linux 4.4 (``tcp.psh_ack``, docs/models/tcp.md).
PSH_ACKS = ("on", "off")
#: How the MPTCP connection's subflows are formed (the ``subflows`` choice): one per path, or the
#: fullmesh path manager's every client × server address pair.
SUBFLOWS = ("disjoint", "full_mesh")
# --- what the paper leaves open ------------------------------------------------------------------

CHOICES = (
    Choice("coupled", "uncoupled", ("lia", "olia", "balia"),
           "the testbed's kernel (MPTCP v0.92, Sec. 4) runs each subflow with the system's congestion control, CUBIC, "
           "uncoupled, unless a coupled module (lia, olia, balia, wvegas) is selected; the paper selects none (its "
           "Sec. 2 describes coupling in general). The coupled alternatives count per ACK, as mptcp_coupled.c does"),
    Choice("abr", "vlc", ("throughput", "bba", "bola"),
           "the paper's player is VLC (Sec. 4); Ubuntu 16.04 ships VLC 2.2.2, whose DASH logic by default is "
           "RateBasedAdaptationLogic (3/4 of the mean download rate; docs/models/dash.md); dash.js's rule, BBA and "
           "BOLA are the other families"),
    Choice("mpd_bandwidth", "mean", ("peak",),
           "the dataset's MPDs (Le Feuvre et al., made with GPAC's MP4Box) state @bandwidth as the representation's "
           "file size × 8 / duration, its mean rate; our bundled MPD states the peak 6-s segment rate"),
    Choice("loss_direction", "upstream", ("downstream", "both"),
           "netem shapes a host's egress, and Table 1's paths are the client's two interfaces (Sec. 4: tc and netem "
           "on the paths), so the loss falls on the client's packets (requests and ACKs); the paper's Fig. 5 does "
           "not decide it: SPTCP's one retransmission per second fits the control as well (see the reading)"),
    Choice("scheduler", "min_rtt", ("round_robin",), "Linux's default MPTCP packet scheduler (net/mptcp/sched.c)"),
    Choice("rcv_buf", "autotuned", ("fixed",),
           "the testbed's kernel autotunes the connection-level receive buffer (net.ipv4.tcp_moderate_rcvbuf = 1, "
           "tcp_rmem 4096 131072 6291456; v0.92's mptcp_check_rtt, upstream's mptcp_rcv_space_adjust), and the paper "
           "sets no buffer; the alternative is the fixed 4 MiB window this simulator used before"),
    Choice("subflows", "disjoint", ("full_mesh",),
           "one subflow per client interface to the server's interface on the same path: Table 1 characterises two "
           "paths and the paper's figures show two; the alternative is v0.92's fullmesh path manager (mptcp_fullmesh.c) "
           "with the server's second interface announced (Sec. 4: Ethernet and Wi-Fi), a subflow for every client × "
           "server address pair (4), the cross pairs through a 1-Gbit/s core joining the two access networks"),
    Choice("psh_ack", "on", ("off",),
           "the linux profile is one kernel, Linux 6.x, held against this machine's kernel (docs/validation.md), "
           "whose receivers ACK a full-sized PSH segment at once (tcp_measure_rcv_mss, since 6.6); the testbed's "
           "v0.92 ran on Linux 4.4, which does not, and under the 6.6 rule an uncoupled subflow takes 0.84 of a "
           "TCP flow's share of a drop-tail queue, 1.03 without it (docs/models/mptcp.md)"),
)
