//! TCP profiles: named sets of defaults for the behaviours that real stacks choose differently.
//!
//! A profile (`profile = "linux" | "rfc" | "ns3" | "freebsd"` in the TCP transport table) only
//! supplies defaults. Every behaviour is also its own key in [`TcpConfig`](super::TcpConfig),
//! and a key given explicitly wins over the profile, so `profile = "linux", delayed_ack = false` is
//! the Linux stack ACKing every segment. [`TcpConfig::resolved`](super::TcpConfig::resolved)
//! turns a config into the concrete [`Behaviours`] the sender and receiver run.
//!
//! Sources, per profile (details and the per-behaviour table are in `docs/models/tcp.md`):
//! - `rfc`: the RFCs as written (RFC 6298 RTO floored as a whole at 1 s, §2.4; RFC 6675 loss
//!   detection; ACK every segment; RFC 5681 §4.1's restart window after an idle period; CUBIC as
//!   RFC 9438 with §4.3's switch of α).
//! - `linux`: Linux 6.x defaults: `tcp_rtt_estimator`/`tcp_set_rto` in `net/ipv4/tcp_input.c`,
//!   the RTO re-armed when the head is retransmitted (`tcp_xmit_retransmit_queue`), PRR
//!   (`tcp_cwnd_reduction`, RFC 6937), delayed ACKs with quick-ACK mode (`tcp_event_data_recv`,
//!   `tcp_incr_quickack`, `tcp_send_delayed_ack`), CUBIC and HyStart as `net/ipv4/tcp_cubic.c`
//!   computes them (fixed TCP-friendly α, `hystart_update`), RACK-TLP (RFC 8985;
//!   `net.ipv4.tcp_recovery = 1`, `tcp_early_retrans = 3`; see [`super::rack`]), receive-buffer
//!   autotuning (`net.ipv4.tcp_moderate_rcvbuf = 1`, `tcp_rmem`; see [`super::rcvbuf`]), slow
//!   start after idle (`net.ipv4.tcp_slow_start_after_idle = 1`, `tcp_cwnd_restart`), the
//!   120-s RTO ceiling (`TCP_RTO_MAX`), and the host's send-path jitter ([`super::jitter`]).
//! - `ns3`: ns-3.44 `TcpSocketBase` attribute defaults that differ from `rfc`: `MinRto` 1 s,
//!   `DelAckCount` 2, `DelAckTimeout` 200 ms; and the choices of its congestion and recovery
//!   operations (`src/internet/model/`): ssthresh from bytes in flight for NewReno
//!   (`TcpNewReno::GetSsThresh` called from `TcpSocketBase::EnterRecovery` with `BytesInFlight()`)
//!   and from cwnd for CUBIC (`TcpCubic::GetSsThresh`), NewReno counting ACKs rather than bytes
//!   (`TcpNewReno::SlowStart`, `CongestionAvoidance`), and PRR as the recovery
//!   (`TcpL4Protocol::RecoveryType` = `TcpPrrRecovery`) in ns-3's own form (see [`PrrRule`]),
//!   and bytes in flight as `TcpTxBuffer::BytesInFlight()` counts them (see [`PipeRule`]).
//! - `freebsd`: FreeBSD (current) `sys/netinet/tcp_timer.h`: `TCPTV_MIN` (the RTO floor,
//!   `net.inet.tcp.rexmit_min`) = hz/33 = 30 ms at hz = 1000, `TCPTV_CPU_VAR` (the slop
//!   `TCPT_RANGESET` adds to every RTO, `net.inet.tcp.rexmit_slop`) = 200 ms, `TCPTV_DELACK` =
//!   hz/10 = 100 ms, `TCPTV_REXMTMAX` = 64 s, delayed ACKs on (`net.inet.tcp.delayed_ack = 1`),
//!   RFC 6675 SACK recovery, the restart window after idle (`tcp_output` → `cc_after_idle` →
//!   `newreno_cc_after_idle`, RFC 5681 §4.1 with RFC 2861's ssthresh).
//!   Older FreeBSD (before the comment "The prior minimum of 1*hz (1 second) badly breaks
//!   throughput" in that file) floored the RTO at 1 s: set `min_rto = "1s"` for that stack.

use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// Which stack's defaults a TCP flow starts from.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The RFCs as written (the simulator's behaviour before profiles existed).
    Rfc,
    /// Linux 6.x defaults (the default profile: our users compare with Linux testbeds).
    #[default]
    Linux,
    /// ns-3.44 `TcpSocketBase` defaults, for cross-checks against ns-3.
    Ns3,
    /// FreeBSD defaults (tick-based timers at hz = 1000).
    Freebsd,
}

/// How the retransmission timeout is computed from RTT samples.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RtoRule {
    /// RFC 6298 §2: RTO = max(SRTT + max(G, 4·RTTVAR), min_rto).
    Rfc6298,
    /// FreeBSD `TCP_REXMTVAL` + `TCPT_RANGESET`: RTO = max(SRTT + 4·RTTVAR, min_rto) + 200 ms
    /// (`tcp_rexmit_slop`).
    Freebsd,
    /// Linux `tcp_rtt_estimator` + `tcp_set_rto`: RTO = SRTT + rttvar, where rttvar tracks the
    /// largest mean deviation (×4) seen per round trip and is never below `min_rto`; so
    /// RTO ≥ SRTT + min_rto.
    Linux,
}

/// What the multiplicative decrease on a fast retransmit applies to (`ssthresh = β · base`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshRule {
    /// RFC 5681 §3.2 eq. (4), RFC 9438 §4.6: FlightSize, `snd_max − snd_una`.
    FlightSize,
    /// RFC 6675 `pipe` once the head is marked lost: ns-3.44 `TcpSocketBase::EnterRecovery`
    /// passes `BytesInFlight()` to `TcpNewReno::GetSsThresh`. With many segments of one window
    /// lost it is well below FlightSize.
    Pipe,
    /// cwnd when the loss is detected: Linux `tcp_reno_ssthresh` and `bictcp_recalc_ssthresh`,
    /// ns-3.44 `TcpCubic::GetSsThresh` (cwnd in whole segments).
    Cwnd,
    /// FlightSize, but never above cwnd: `min(snd_max − snd_una, cwnd)`. The default whenever
    /// RACK is on (a derived default, as `cwnd` is for ns-3's CUBIC): RACK repairs lost
    /// retransmissions within one recovery, so at the next loss `snd_max − snd_una` can hold far
    /// more SACKed data than the window, and a reduction from it would raise cwnd; Linux
    /// reduces from cwnd. An application-limited sender still reduces from what it had out.
    FlightCapped,
}

/// Which slow-start exit runs in CUBIC when `hystart` is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HystartRule {
    /// HyStart++ (RFC 9406), in the first slow start only.
    Rfc9406,
    /// Linux 6.x `tcp_cubic.c` (`cubictcp_acked`, `hystart_update`): from a window of 16
    /// segments (`hystart_low_window`), slow start ends (ssthresh = cwnd) when ACKs no more than
    /// 2 ms apart (`hystart_ack_delta_us`) have arrived for longer than half the minimum RTT
    /// since the round began (the whole minimum RTT plus `hystart_ack_delay` when paced), or when
    /// the minimum RTT of the round, once it has 8 samples (`HYSTART_MIN_SAMPLES`), exceeds the
    /// connection's minimum RTT by clamp(min RTT / 8, 4 ms, 16 ms) (`HYSTART_DELAY_MIN/MAX`).
    /// RTT samples are the ACK's newest delivered segment's (`ca_rtt_us`). Re-armed after a
    /// timeout (`cubictcp_state` on `TCP_CA_Loss`).
    Linux,
    /// ns-3.44 `TcpCubic::HystartUpdate`: Linux's original HyStart (ACK train and delay
    /// increase) with ns-3's thresholds: from a window of 16 segments (`HyStartLowWindow`), slow
    /// start ends (ssthresh = cwnd) when ACKs spaced at most 2 ms apart (`HyStartAckDelta`) have
    /// arrived for longer than the minimum SRTT since the round began, or when the minimum of
    /// the round's first 8 SRTT values exceeds the minimum SRTT plus clamp(minimum SRTT, 4 ms,
    /// 1 s) (`HystartDelayThresh`). Re-armed after a timeout (`CubicReset`).
    Ns3,
}

/// How Proportional Rate Reduction (RFC 6937, RFC 9937) is computed, when `prr` is on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PrrRule {
    /// Linux 6.x `tcp_cwnd_reduction` (`net/ipv4/tcp_input.c`, called from `tcp_cong_control`):
    /// RecoverFS = cwnd before the reduction (`prior_cwnd`); an ACK that delivers nothing
    /// changes nothing; below ssthresh the conservative bound (PRR-CRB), with the slow-start
    /// bound's extra segment only on a "safe" ACK, one that advances `snd_una` and marks
    /// nothing newly lost (`FLAG_SND_UNA_ADVANCED && !newly_lost`, since Linux 3.19's "PRR
    /// uses CRB mode by default and SS mode conditionally"; RFC 9937's SafeACK). The RACK
    /// reorder timer runs the step only when it starts a recovery, as one segment delivered
    /// (`tcp_rack_reo_timeout`).
    Linux,
    /// RFC 6937 §3 with its recommended slow-start reduction bound (PRR-SSRB) on every ACK:
    /// RecoverFS = FlightSize (`snd.nxt - snd.una`) when recovery starts.
    Rfc6937,
    /// ns-3.44 `TcpPrrRecovery`: RecoverFS = pipe when recovery starts; every duplicate ACK
    /// counts one more segment as delivered (while `prr_delivered` < RecoverFS), on top of the
    /// bytes it SACKs; the conservative reduction bound (PRR-CRB), with SSRB's extra segment
    /// only on an ACK that cumulatively acknowledges retransmitted data.
    Ns3,
}

/// What the sender counts as in flight with SACK and without RACK (RFC 6675 `pipe`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PipeRule {
    /// RFC 6675 §4 `SetPipe()`: per un-SACKed octet, 1 if not deemed lost, plus 1 if
    /// retransmitted; a SACKed octet counts nothing.
    Rfc6675,
    /// ns-3.44 `TcpTxBuffer::BytesInFlight()`: sent − SACKed − lost + retransmitted, where the
    /// retransmitted count (`m_retrans`) keeps every retransmitted segment until the cumulative
    /// ACK passes it; a SACK clears its lost flag but not its retransmitted flag (`Update`), so
    /// a retransmission that is SACKed still counts one segment in flight. The same as
    /// `rfc6675` until a retransmission is SACKed while a hole below it remains.
    Ns3,
}

/// How CUBIC computes its window (with `cc = "cubic"`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CubicRule {
    /// RFC 9438 as written: W_cubic(t + SRTT) as the target, α_cubic = 3(1 − β)/(1 + β) switched
    /// to 1 once W_est reaches `cwnd_prior` (§4.3).
    Rfc9438,
    /// Linux 6.x `tcp_cubic.c` `bictcp_update`: the target at t + the minimum RTT (`delay_min`);
    /// the TCP-friendly estimate grows by one segment per `cwnd · beta_scale / 8` acknowledged
    /// (`tcp_friendliness`, α = 8/15 for β = 0.7, never switched); while no W_max is known (before
    /// the first loss and after a timeout) at least 5 % growth per RTT (`ca->cnt` ≤ 20); after an
    /// idle period the epoch moves forward by it (`cubictcp_cwnd_event`, `CA_EVENT_TX_START`);
    /// a timeout takes ssthresh from cwnd, or keeps a fast recovery's (`tcp_enter_loss`).
    Linux,
}

/// NewReno's arithmetic (with `cc = "newreno"`; see [`super::cc::newreno`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RenoRule {
    /// RFC 5681 in bytes: ssthresh = max(FlightSize / 2, 2 · SMSS), slow start by at most
    /// L = 2 · SMSS per ACK (RFC 3465 §2.2), congestion avoidance by byte counting.
    Rfc5681,
    /// Linux 6.x `net/ipv4/tcp_cong.c` in whole segments: `tcp_reno_ssthresh` (max(cwnd >> 1,
    /// 2)), `tcp_slow_start` (every segment delivered, no per-ACK limit, the rest carried into
    /// congestion avoidance), `tcp_cong_avoid_ai` (one segment per cwnd segments delivered).
    Linux,
}

/// What an end does to cwnd when it sends again after an idle period longer than the RTO (with
/// `slow_start_after_idle`). Follows the profile.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IdleRule {
    /// Linux `tcp_cwnd_restart` (`net/ipv4/tcp_output.c`, called from
    /// `tcp_slow_start_after_idle_check` when a new buffer is queued with nothing in flight):
    /// ssthresh = max(ssthresh, ¾ cwnd) (`tcp_current_ssthresh`); cwnd halves once per RTO of
    /// idle beyond the first, never below the restart window min(IW, cwnd).
    Linux,
    /// RFC 5681 §4.1: cwnd = min(IW, cwnd) (the restart window RW); ssthresh unchanged.
    Rfc5681,
    /// FreeBSD `newreno_cc_after_idle` (`sys/netinet/cc/cc.c`): RFC 5681 §4.1's restart window and
    /// RFC 2861's ssthresh = max(ssthresh, ¾ cwnd).
    Freebsd,
}

/// When an ACK may grow cwnd: whether the window counts as in use. Follows the profile.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CwndLimitRule {
    /// The last send attempt stopped because of cwnd (the simulator's rule before profiles
    /// distinguished it; kept by `rfc`, `ns3` and `freebsd`).
    LastSend,
    /// Linux `tcp_is_cwnd_limited` (`include/net/tcp.h`): the window was the limit at some send
    /// of the current window (`tp->is_cwnd_limited`, kept per window by `tcp_cwnd_validate` in
    /// `net/ipv4/tcp_output.c`, set from `tcp_write_xmit`'s `packets_in_flight >= cwnd`), or, in
    /// slow start, cwnd < 2 × the most packets out in the window (`tp->max_packets_out`): cwnd
    /// grows in slow start while the sender uses at least half of it, whatever stops it.
    Linux,
}

/// The concrete behaviours of one TCP end: the profile's defaults with explicit keys applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviours {
    pub rto_rule: RtoRule,
    /// Restart the RTO timer when the segment at `snd_una` is retransmitted (Linux).
    pub rto_rearm: bool,
    pub min_rto: Dur,
    pub max_rto: Dur,
    pub initial_rto: Dur,
    /// Proportional Rate Reduction (RFC 6937) as the recovery sending rule.
    pub prr: bool,
    /// A HyStart in CUBIC's slow start (which one: `hystart_rule`).
    pub hystart: bool,
    pub delayed_ack: bool,
    pub delack_timeout: Dur,
    /// Linux's delayed-ACK engine: quick-ACK mode and the adaptive `ato`.
    pub quickack: bool,
    /// SACK compression (Linux `tcp_comp_sack_*`); it runs only with `quickack`, delayed ACKs and SACK.
    pub sack_compress: bool,
    /// A full-sized PSH segment is ACKed once read (Linux ≥ 6.6); only with `quickack`.
    pub psh_ack: bool,
    pub init_cwnd: u32,
    /// RACK-TLP (RFC 8985) loss detection and tail loss probes (needs SACK).
    pub rack: bool,
    /// Which HyStart runs (with `hystart`).
    pub hystart_rule: HystartRule,
    /// What ssthresh is computed from on a fast retransmit.
    pub ssthresh_rule: SsthreshRule,
    /// How PRR computes its sending count (when `prr` is on).
    pub prr_rule: PrrRule,
    /// What counts as in flight (with SACK, without RACK).
    pub pipe_rule: PipeRule,
    /// NewReno's Appropriate Byte Counting (RFC 3465, the `cc.abc` key); off: one ACK grows cwnd
    /// by at most one SMSS in slow start and SMSS²/cwnd in congestion avoidance.
    pub abc: bool,
    /// Pacing as Linux's `fq` qdisc (the `pacing` key).
    pub pacing: bool,
    /// TSO/GSO-sized buffers and deferral (the `tso` key, [`super::tso`]).
    pub tso: bool,
    /// Linux's receive-buffer autotuning (the `rcv_autotune` key): the window starts from
    /// `tcp_rmem[1]` and grows by `tcp_grow_window` and Dynamic Right-Sizing.
    pub rcv_autotune: bool,
    /// CUBIC's arithmetic (the `cc.rule` key).
    pub cubic_rule: CubicRule,
    /// NewReno's arithmetic (the `cc.rule` key).
    pub reno_rule: RenoRule,
    /// CUBIC's switch of α to 1 (the `cc.alpha_switch` key); by default on under RFC 9438's rule
    /// and off under Linux's.
    pub alpha_switch: bool,
    /// Slow start after idle (the `slow_start_after_idle` key), by the profile's rule.
    pub slow_start_after_idle: bool,
    pub idle_rule: IdleRule,
    /// When the window counts as in use, so that an ACK may grow it.
    pub cwnd_limit_rule: CwndLimitRule,
    /// The host's send-path jitter (the `host_jitter` key): the largest random delay between a
    /// segment's transmission by TCP and its departure; zero builds none.
    pub host_jitter: Dur,
}

/// Linux's send-path jitter default (`host_jitter` in the `linux` profile); see
/// [`super::jitter`] for the measurement behind it.
pub const LINUX_HOST_JITTER: Dur = Dur::from_micros(50);

impl Profile {
    /// The profile's defaults.
    pub fn defaults(self) -> Behaviours {
        let rfc = Behaviours {
            rto_rule: RtoRule::Rfc6298,
            rto_rearm: false,
            // RFC 6298 §2.4: an RTO below 1 s SHOULD be rounded up to 1 s.
            min_rto: Dur::from_secs(1),
            // RFC 6298 §2.5: a maximum, if any, of at least 60 s.
            max_rto: Dur::from_secs(60),
            initial_rto: Dur::from_secs(1),
            prr: false,
            hystart: false,
            delayed_ack: false,
            delack_timeout: Dur::from_millis(40),
            quickack: false,
            sack_compress: false,
            psh_ack: false,
            init_cwnd: 10,
            rack: false,
            hystart_rule: HystartRule::Rfc9406,
            ssthresh_rule: SsthreshRule::FlightSize,
            prr_rule: PrrRule::Rfc6937,
            pipe_rule: PipeRule::Rfc6675,
            abc: true,
            pacing: false,
            tso: false,
            rcv_autotune: false,
            cubic_rule: CubicRule::Rfc9438,
            reno_rule: RenoRule::Rfc5681,
            alpha_switch: true,
            // RFC 5681 §4.1: a TCP SHOULD restart from RW after an idle period longer than the RTO.
            slow_start_after_idle: true,
            idle_rule: IdleRule::Rfc5681,
            cwnd_limit_rule: CwndLimitRule::LastSend,
            host_jitter: Dur::ZERO,
        };
        match self {
            Profile::Rfc => rfc,
            Profile::Linux => Behaviours {
                rto_rule: RtoRule::Linux,
                rto_rearm: true,
                // TCP_RTO_MIN and TCP_RTO_MAX (include/net/tcp.h).
                min_rto: Dur::from_millis(200),
                max_rto: Dur::from_secs(120),
                // TCP_TIMEOUT_INIT (RFC 6298 §2.1).
                initial_rto: Dur::from_secs(1),
                prr: true,
                // tcp_cwnd_reduction (net/ipv4/tcp_input.c).
                prr_rule: PrrRule::Linux,
                hystart: true,
                delayed_ack: true,
                // TCP_DELACK_MIN / TCP_ATO_MIN; the adaptive ato starts here.
                delack_timeout: Dur::from_millis(40),
                quickack: true,
                // net.ipv4.tcp_comp_sack_nr = 44, tcp_comp_sack_delay_ns = 1 ms (__tcp_ack_snd_check).
                sack_compress: true,
                // tcp_measure_rcv_mss since 6.6: a full-sized PSH segment sets ICSK_ACK_PUSHED.
                psh_ack: true,
                // TCP_INIT_CWND (RFC 6928).
                init_cwnd: 10,
                // net.ipv4.tcp_recovery = 1 (TCP_RACK_LOSS_DETECTION), tcp_early_retrans = 3 (TLP).
                rack: true,
                // tcp_init_cwnd_reduction: the reduction starts from cwnd (at most what is out).
                ssthresh_rule: SsthreshRule::FlightCapped,
                // net.ipv4.tcp_moderate_rcvbuf = 1 (tcp_rcv_space_adjust, tcp_grow_window).
                rcv_autotune: true,
                // tcp_cubic.c: hystart = 1, hystart_detect = 3 (both detectors).
                hystart_rule: HystartRule::Linux,
                // tcp_cubic.c bictcp_update, tcp_friendliness = 1 (α fixed).
                cubic_rule: CubicRule::Linux,
                // net/ipv4/tcp_cong.c tcp_reno_ssthresh, tcp_reno_cong_avoid.
                reno_rule: RenoRule::Linux,
                alpha_switch: false,
                // net.ipv4.tcp_slow_start_after_idle = 1 (tcp_cwnd_restart).
                idle_rule: IdleRule::Linux,
                // include/net/tcp.h tcp_is_cwnd_limited, net/ipv4/tcp_output.c tcp_cwnd_validate.
                cwnd_limit_rule: CwndLimitRule::Linux,
                host_jitter: LINUX_HOST_JITTER,
                // sk_setup_caps sets NETIF_F_GSO: tcp_tso_autosize buffers and tcp_tso_should_defer.
                tso: true,
                ..rfc
            },
            Profile::Ns3 => Behaviours {
                // TcpSocketBase::MinRto, DelAckCount = 2, DelAckTimeout.
                min_rto: Dur::from_secs(1),
                // ns-3.44's TcpSocketBase has no restart after idle.
                slow_start_after_idle: false,
                delayed_ack: true,
                delack_timeout: Dur::from_millis(200),
                // TcpNewReno::GetSsThresh(tcb, BytesInFlight()); CUBIC's cwnd rule is applied
                // in TcpConfig::resolved, which knows the controller.
                ssthresh_rule: SsthreshRule::Pipe,
                // TcpL4Protocol::RecoveryType = TcpPrrRecovery.
                prr: true,
                prr_rule: PrrRule::Ns3,
                // TcpSocketBase::BytesInFlight() = TcpTxBuffer::BytesInFlight(), which counts
                // a SACKed retransmission until it is cumulatively acknowledged.
                pipe_rule: PipeRule::Ns3,
                // TcpNewReno::SlowStart / CongestionAvoidance count ACKs (segmentsAcked).
                abc: false,
                // TcpCubic::HyStart = true, HyStartDetect = BOTH.
                hystart: true,
                hystart_rule: HystartRule::Ns3,
                ..rfc
            },
            Profile::Freebsd => Behaviours {
                rto_rule: RtoRule::Freebsd,
                // TCPTV_MIN = hz / 33 ticks = 30 ms at hz = 1000 (net.inet.tcp.rexmit_min).
                min_rto: Dur::from_millis(30),
                // TCPTV_REXMTMAX = 64 s.
                max_rto: Dur::from_secs(64),
                // TCPTV_DELACK = hz / 10 = 100 ms.
                delayed_ack: true,
                delack_timeout: Dur::from_millis(100),
                // tcp_output: idle for an RTO → cc_after_idle → newreno_cc_after_idle.
                idle_rule: IdleRule::Freebsd,
                ..rfc
            },
        }
    }
}
