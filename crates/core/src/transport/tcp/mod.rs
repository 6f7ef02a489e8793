//! TCP: a byte-stream sender and receiver with pluggable congestion control.
//!
//! Reading list, in the order the code applies it:
//! - RFC 9293 (TCP): segments, the 3-way handshake, sequence numbers (ours are 64-bit and never
//!   wrap; the pcap writer emits the low 32 bits).
//! - RFC 6928: initial window of 10 segments; RFC 5681 §3.1: slow start, congestion avoidance,
//!   the loss window after a timeout; RFC 3465: Appropriate Byte Counting (L = 2 SMSS).
//! - RFC 5681 §3.2 and RFC 6582: fast retransmit on the third duplicate ACK, NewReno fast
//!   recovery with `recover` and partial ACKs (used when SACK is off).
//! - RFC 2018: SACK blocks at the receiver; RFC 6675: the sender's scoreboard, `IsLost()`,
//!   `SetPipe()` and `NextSeg()` loss recovery (used when SACK is on).
//! - RFC 6298: SRTT/RTTVAR, RTO, backoff, Karn's rule ([`rtt`]); RFC 7323 §4: timestamps and
//!   `TS.Recent`; RFC 7323 §2: window scale (announced on the SYN, applied to the window field
//!   on the wire; windows inside the simulator are kept in bytes).
//! - RFC 5681 §4.2 / RFC 1122 §4.2.3.2: delayed ACKs.
//! - RFC 8985: RACK-TLP loss detection and tail loss probes, in place of RFC 6675's `IsLost()`
//!   when `rack` is on ([`rack`]).
//! - RFC 9438: CUBIC ([`cc::cubic`]); Linux `tcp_bbr.c`: BBR v1 ([`cc::bbr`]) on delivery-rate
//!   samples ([`rate`], draft-cheng-iccrg-delivery-rate-estimation).
//!
//! Sequence space: the SYN takes sequence number 0 (ISS = 0 in both directions, for
//! determinism), application bytes occupy 1, 2, …. The reverse direction carries no data, so
//! every data segment acknowledges 1.
//!
//! Hot path: an ACK costs O(log h) where h is the number of SACK holes (binary searches in
//! [`sack`]); `SetPipe()` is O(1) from counters kept by the scoreboard, `IsLost()` walks at most
//! three ranges. Nothing allocates per ACK once the scoreboard has grown to its largest size.
//!
//! What is *not* modelled is listed in `docs/models/tcp.md`: FIN/close, Nagle, the rounding of
//! a scaled window (the peer uses the window in bytes; only the pcap field is shifted),
//! zero-window probes (the receiving application reads at once), limited transmit (RFC 3042),
//! F-RTO, D-SACK, ECN, pacing.

pub mod cc;
pub mod jitter;
pub mod overhead;
mod probes;
pub mod profile;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
pub mod rtt;
pub mod sack;
pub mod socket;
pub mod tso;

#[cfg(test)]
mod tests;

use super::{Endpoint, EndpointSetup, FlowCtx, Outgoing, Service, SocketInfo, TransportEvent};
use crate::engine::{SimRng, TimerKind};
use crate::trace::probe::{ProbeEvent, ProbeKind};

/// The sender's retransmission timer (RFC 6298), its only timer kind.
pub const RTO: TimerKind = TimerKind(0);
/// The receiver's delayed-ACK timer (RFC 5681 §4.2). Kind 1, so that a full-duplex
/// [`socket::TcpSocket`] holds both in one block. It is also the receiver's compressed-SACK
/// timer (`compressed_ack_timer`, with `sack_compress`): SACKs are held only after three
/// duplicate ACKs, each of which ended any delayed ACK, and in-order data arriving while they
/// are held fills a gap and is ACKed at once, which sends them; so the two never wait together.
pub const DELACK: TimerKind = TimerKind(1);
/// The sender's RACK reorder timer (RFC 8985 §6.2 step 5), with `rack` only.
pub const RACK_REO: TimerKind = TimerKind(2);
/// The sender's tail-loss-probe timer (RFC 8985 §7.2), with `rack` only.
pub const TLP: TimerKind = TimerKind(3);
/// The sender's pacing timer (`pacing`): the next segment may leave.
pub const PACE: TimerKind = TimerKind(4);
/// The sender's overhead timer (`overhead`): the random wait before a send ends.
pub const OVERHEAD: TimerKind = TimerKind(5);
/// Smallest `initial_rto`, `min_rto` and `max_rto` a scenario may give.
pub const MIN_RTO: Dur = Dur::from_micros(1);
use crate::packet::{tcp_flags, Dir, Ecn, PacketData, TcpHdr, IPV4_HEADER, L4, MAX_SACK_BLOCKS, TCP_HEADER};
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use cc::{AckSample, CcConfig, CongestionControl, LossEvent, LossKind, RtoEvent, TxStart};
pub use profile::{
    Behaviours, CubicRule, CwndLimitRule, HystartRule, IdleRule, PipeRule, Profile, PrrRule, RenoRule, RtoRule,
    SsthreshRule,
};
use rtt::RttEstimator;
use sack::{Marker, RangeSet, Scoreboard};
use serde::{Deserialize, Serialize};

/// Duplicate-ACK threshold (RFC 5681 §3.2, RFC 6675 `DupThresh`).
pub const DUPTHRESH: u32 = 3;
/// Timestamp option on every segment: 10 bytes + 2 NOPs (RFC 7323 §3, Linux layout).
pub const TS_OPTION_BYTES: u32 = 12;
/// RTO used after a SYN timeout once data flows (RFC 6298 §5.7).
const RTO_AFTER_SYN_TIMEOUT: Dur = Dur::from_secs(3);
/// "Arbitrarily high" initial ssthresh (RFC 5681 §3.1). `i64::MAX` so that it survives a trip
/// through signed 64-bit columns.
pub const INITIAL_SSTHRESH: u64 = i64::MAX as u64;

/// TCP parameters, `kind = "tcp"` in a scenario's transport table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Congestion control: `"cubic"` (default), `"newreno"` or `"bbr"`, or a table such as
    /// `{ kind = "cubic", beta = 0.7, c = 0.4 }` (see [`CcConfig`]).
    #[serde(deserialize_with = "cc::deserialize_cc")]
    #[schemars(schema_with = "CcConfig::name_or_table_schema")]
    pub cc: CcConfig,
    /// SACK (RFC 2018 blocks, RFC 6675 recovery). Default true (Linux); false gives NewReno
    /// recovery (RFC 6582).
    pub sack: bool,
    /// Timestamp option (RFC 7323): 12 bytes per segment, RTT sampled on every ACK. Default true.
    pub timestamps: bool,
    /// Which stack's defaults the behaviour keys below start from: `"linux"` (default: Linux
    /// 6.x), `"rfc"` (the RFCs as written), `"ns3"` or `"freebsd"` (see [`profile`] and
    /// `docs/models/tcp.md`).
    /// A key given explicitly overrides the profile.
    pub profile: Profile,
    /// Delayed ACKs (RFC 5681 §4.2): ACK every second full-sized segment or after
    /// `delack_timeout`. Profile default: off in `rfc` (ACK every segment), on otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<bool>,
    /// Delayed-ACK timeout, time. Profile default: `"40ms"` in `rfc` and `linux` (Linux's
    /// `TCP_DELACK_MIN`, where its adaptive `ato` starts), `"200ms"` in `ns3`, `"100ms"` in
    /// `freebsd`. RFC 5681 §4.2 requires < 500 ms.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub delack_timeout: Option<Dur>,
    /// Linux's delayed-ACK engine (`tcp_event_data_recv`, `tcp_send_delayed_ack`): quick-ACK mode
    /// (every segment ACKed at once) for the first 16 segments and after out-of-order data, and
    /// the timeout adapted to the arrival spacing (`ato`). Only with `delayed_ack`. Profile
    /// default: on in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quickack: Option<bool>,
    /// SACK compression (Linux `__tcp_ack_snd_check`, `tcp_compressed_ack_kick`): while data is
    /// held out of order, after three duplicate ACKs for the same `rcv_nxt` the receiver holds
    /// further SACKs, sending one when min(1 ms, 5 % of its RTT estimate) plus 100 µs of timer
    /// slack has passed (`net.ipv4.tcp_comp_sack_delay_ns`, `tcp_comp_sack_slack_ns`), when 44
    /// are held (`tcp_comp_sack_nr`), or with the next ACK it sends for another reason. Only with
    /// `quickack` and `sack`. Profile default: on in `linux` (Linux's `tcp_comp_sack_nr = 44`;
    /// 0 turns it off there), off otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sack_compress: Option<bool>,
    /// The receiver's rule for PSH (Linux 6.6 and later, `tcp_measure_rcv_mss`, "tcp: fix
    /// delayed ACKs for MSS boundary condition"): a full-sized segment with PSH sets
    /// `ICSK_ACK_PUSHED`, so it is ACKed once read instead of waiting for a second segment or
    /// the delayed-ACK timer. false gives the rule of earlier kernels (PUSHED only for a segment
    /// shorter than `rcv_mss`), such as the Linux 4.x of the out-of-tree MPTCP kernel. Only
    /// with `quickack`. Profile default: on in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub psh_ack: Option<bool>,
    /// RTO rule: `"rfc6298"` (RTO floored at `min_rto` as a whole) or `"linux"` (the variance
    /// term floored: RTO ≥ SRTT + `min_rto`). Profile default: `"linux"` in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_rule: Option<RtoRule>,
    /// Restart the retransmission timer when the segment at `snd_una` is retransmitted (Linux
    /// `tcp_xmit_retransmit_queue`). Profile default: on in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rto_rearm: Option<bool>,
    /// Proportional Rate Reduction (RFC 6937, with the slow-start reduction bound) as the sending
    /// rule in SACK loss recovery; only with `sack`. Profile default: on in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prr: Option<bool>,
    /// HyStart in CUBIC's slow start: leave slow start before the queue overflows (which HyStart:
    /// `hystart_rule`). Only with `cc = "cubic"`. Profile default: on in `linux` and `ns3`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// What ssthresh is computed from on a fast retransmit (and on a TLP loss response):
    /// `"flight_size"` (RFC 5681, RFC 9438), `"pipe"` (RFC 6675 pipe with the head marked lost,
    /// ns-3's NewReno), `"cwnd"` (Linux, ns-3's CUBIC) or `"flight_capped"` (min(FlightSize,
    /// cwnd)). Default: `"flight_capped"` in `linux`, and in any profile that says
    /// `"flight_size"` when `rack` is on; in `ns3`, `"pipe"` with NewReno and `"cwnd"` with
    /// CUBIC; otherwise `"flight_size"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssthresh_rule: Option<SsthreshRule>,
    /// Which HyStart (with `hystart`): `"linux"` (Linux 6.x `tcp_cubic.c`: ACK-train and
    /// delay-increase detection), `"rfc9406"` (HyStart++) or `"ns3"` (ns-3.44 `TcpCubic`'s port
    /// of Linux 2.6's, see [`HystartRule`]). Profile default: `"linux"` in `linux`, `"ns3"` in
    /// `ns3`, `"rfc9406"` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hystart_rule: Option<HystartRule>,
    /// PRR's arithmetic (with `prr`): `"linux"` (`tcp_cwnd_reduction`), `"rfc6937"` or `"ns3"`
    /// (`TcpPrrRecovery`), see [`PrrRule`]. Profile default: `"linux"` in `linux`, `"ns3"` in
    /// `ns3`, `"rfc6937"` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prr_rule: Option<PrrRule>,
    /// What counts as in flight with SACK (without RACK, which keeps its own count):
    /// `"rfc6675"` (RFC 6675 `SetPipe()`) or `"ns3"` (ns-3.44 `TcpTxBuffer::BytesInFlight()`:
    /// a retransmitted segment counts until it is cumulatively acknowledged, SACKed or not; see
    /// [`PipeRule`]). Profile default: `"ns3"` in `ns3` (unless `rack` is on), `"rfc6675"`
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipe_rule: Option<PipeRule>,
    /// Lower bound on the RTO, time. Profile default `"1s"` in `rfc` and `ns3` (RFC 6298 §2.4),
    /// `"200ms"` in `linux` (`TCP_RTO_MIN`), `"30ms"` in `freebsd` (`TCPTV_MIN`). Range: 1 µs to
    /// `max_rto`.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub min_rto: Option<Dur>,
    /// Upper bound on the RTO, time. Profile default `"60s"` in `rfc` and `ns3` (RFC 6298 §2.5,
    /// ns-3's `MaxRto`), `"120s"` in `linux` (`TCP_RTO_MAX`), `"64s"` in `freebsd`
    /// (`TCPTV_REXMTMAX`). Range: ≥ `min_rto`.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub max_rto: Option<Dur>,
    /// RTO before the first RTT sample, time. Profile default `"1s"` (RFC 6298 §2.1). Range: ≥ 1 µs.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub initial_rto: Option<Dur>,
    /// Send buffer, bytes: at most this many bytes are unacknowledged at once. Writes beyond it
    /// are always accepted and wait in the application's queue. Default `"4MiB"`.
    #[serde(with = "serde_units::bytes")]
    pub snd_buf: u64,
    /// Receive buffer, bytes. Without `rcv_autotune` it is the advertised window from the first
    /// segment on (the receiving application reads at once, so the window is the whole buffer);
    /// default `"4MiB"`. With `rcv_autotune` it is the largest buffer autotuning may grow to
    /// (Linux `tcp_rmem[2]`), of which the window is a share (`scaling_ratio`: half until a
    /// segment is measured, 160/256 for full 1448-byte segments); default `"32MiB"` (Linux's
    /// `tcp_rmem[2]` since 6.16). The window-scale shift on the SYN comes from it.
    #[serde(with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub rcv_buf: Option<u64>,
    /// Receive-buffer autotuning as Linux does it (`net.ipv4.tcp_moderate_rcvbuf`): the buffer
    /// starts at `rcv_buf_init` (window ≈ 64 KB), `tcp_grow_window` opens the offered window
    /// segment by segment, and Dynamic Right-Sizing (`tcp_rcv_space_adjust`) grows the buffer,
    /// once per receiver RTT, to about twice what the application read in the last RTT, up to
    /// `rcv_buf` (see [`rcvbuf`]). Profile default: on in `linux`, off otherwise (FreeBSD's
    /// `net.inet.tcp.recvbuf_auto` is not modelled). On MPTCP it tunes the connection-level buffer
    /// (`mptcp_rcv_space_adjust`), not the subflows'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcv_autotune: Option<bool>,
    /// With `rcv_autotune`, the buffer a connection starts with (Linux `tcp_rmem[1]`), bytes:
    /// the first window is the largest multiple of the MSS within half of it (65160 B for the
    /// default with MSS 1448). Default `"128KiB"` (at least four segments), or `rcv_buf` if that
    /// is smaller. Range: at least four segments (two of window), at most `rcv_buf`.
    #[serde(with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub rcv_buf_init: Option<u64>,
    /// Initial window, segments. Profile default 10 (RFC 6928).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_cwnd: Option<u32>,
    /// RACK-TLP (RFC 8985): time-based loss detection with a reordering window, detection of
    /// lost retransmissions, and tail loss probes, in place of RFC 6675's `IsLost()`. Only with
    /// `sack`. Profile default: on in `linux`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack: Option<bool>,
    /// Pacing as Linux's `fq` qdisc does for a TCP socket (`tcp_update_pacing_rate`, `fq_dequeue`):
    /// after each segment the next waits len / rate, rate = 200 % of cwnd / SRTT while cwnd <
    /// ssthresh / 2 (`tcp_pacing_ss_ratio`) and 120 % after (`tcp_pacing_ca_ratio`), len the
    /// segment's IP length; no pacing before the first RTT sample. A forced retransmission (fast
    /// retransmit, RTO) leaves at once. Default: off in every profile (Linux paces only under
    /// `fq` or BBR; the default qdisc is `fq_codel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<bool>,
    /// TSO/GSO-sized sending as Linux does it (`tcp_tso_autosize`, `tcp_tso_should_defer`): new
    /// data leaves in buffers of about 1 ms at the pacing rate (2 to 45 segments of 1448 B), and
    /// when the window lets out less than a full buffer (and less than a third of the window) the
    /// sender waits for the ACK due within min(1 ms, SRTT/2) instead of sending a segment or two; under
    /// `pacing`, each buffer leaves back to back and the pacing wait follows the whole buffer.
    /// Profile default: on in `linux` (Linux always builds GSO buffers, `sk_setup_caps`, even
    /// with `ethtool -K … gso off`; not on MPTCP subflows, nor with `overhead`), off otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tso: Option<bool>,
    /// Random sender overhead, time: ns-2's `overhead_` (Floyd & Jacobson 1992, §4; see
    /// [`overhead`]). When the window lets a segment out, the sender first waits a time drawn
    /// uniformly from [0, `overhead`] (from the flow's own seeded stream), then sends everything
    /// the window allows at that moment; send opportunities during the wait add nothing. A
    /// timeout's retransmission waits too; a fast retransmission, a NewReno partial-ACK
    /// retransmission and a tail loss probe leave at once. Segments never leave out of order.
    /// One bottleneck service time is what Floyd & Jacobson use against the phase effects of
    /// drop-tail queues. Default `"0s"` (off) in every profile. Range: at most `"1s"`. Not with
    /// `pacing` or `tso`; not on MPTCP subflows.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Dur>,
    /// Slow start after idle: when the application writes after the sender has sent nothing for
    /// longer than the RTO, with nothing in flight, cwnd restarts from the restart window
    /// min(IW, cwnd), by the profile's rule: `linux` halves cwnd per RTO of idle down to it
    /// (`tcp_cwnd_restart`, `net.ipv4.tcp_slow_start_after_idle = 1`) and raises ssthresh to ¾ of
    /// the old cwnd; `rfc` sets it (RFC 5681 §4.1); `freebsd` sets it and raises ssthresh
    /// (`newreno_cc_after_idle`). Profile default: on, except in `ns3` (ns-3.44 has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start_after_idle: Option<bool>,
    /// The host's send-path jitter, time: every batch of segments an end emits at one instant
    /// leaves after a delay drawn uniformly from [0, `host_jitter`] (from the end's own seeded
    /// stream; never reordering the end's segments), the processing and interrupt latency of a
    /// real host between TCP's transmit and the wire. It makes runs with different seeds
    /// independent samples where a real testbed varies (see [`jitter`]). Profile default:
    /// `"50us"` in `linux`, `"0s"` (none) otherwise. Range: at most `"1s"`.
    #[serde(with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub host_jitter: Option<Dur>,
    /// Sender maximum segment size, bytes. Default: MTU − 20 (IPv4) − 20 (TCP) − 12 (timestamps
    /// if on), i.e. 1448 for MTU 1500.
    #[serde(with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub mss: Option<u64>,
    /// Explicit Congestion Notification (RFC 3168 §6.1): the SYN asks for ECN (ECE and CWR
    /// set), a receiver with `ecn` on accepts on its SYN-ACK (ECE set); once both ends agree,
    /// new data segments are sent ECT(0), the receiver echoes a CE mark with ECE on its ACKs
    /// until a segment with CWR arrives, and the sender reduces cwnd through its congestion
    /// controller as for a loss, at most once per window of data, and sets CWR on its next new
    /// segment. Default false in every profile: Linux's default `net.ipv4.tcp_ecn = 2` accepts
    /// ECN when the peer asks but never asks itself, so a connection between two default Linux
    /// hosts runs without ECN (`tcp_ecn = 1` is this key on both ends). See `docs/models/ecn.md`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcConfig::default(),
            sack: true,
            timestamps: true,
            profile: Profile::default(),
            delayed_ack: None,
            delack_timeout: None,
            quickack: None,
            sack_compress: None,
            psh_ack: None,
            rto_rule: None,
            rto_rearm: None,
            prr: None,
            hystart: None,
            ssthresh_rule: None,
            hystart_rule: None,
            prr_rule: None,
            pipe_rule: None,
            min_rto: None,
            max_rto: None,
            initial_rto: None,
            snd_buf: 4 << 20,
            rcv_buf: None,
            rcv_autotune: None,
            rcv_buf_init: None,
            init_cwnd: None,
            rack: None,
            pacing: None,
            tso: None,
            overhead: None,
            slow_start_after_idle: None,
            host_jitter: None,
            mss: None,
            ecn: false,
        }
    }
}

impl TcpConfig {
    /// The profile's defaults with every explicit key applied.
    pub fn resolved(&self) -> Behaviours {
        let d = self.profile.defaults();
        // RACK reads the SACK scoreboard; without SACK a profile's RACK is off.
        let rack = self.sack && self.rack.unwrap_or(d.rack);
        let cubic_rule = match &self.cc {
            CcConfig::Cubic(c) => c.rule.unwrap_or(d.cubic_rule),
            _ => d.cubic_rule,
        };
        Behaviours {
            rto_rule: self.rto_rule.unwrap_or(d.rto_rule),
            rto_rearm: self.rto_rearm.unwrap_or(d.rto_rearm),
            min_rto: self.min_rto.unwrap_or(d.min_rto),
            max_rto: self.max_rto.unwrap_or(d.max_rto),
            initial_rto: self.initial_rto.unwrap_or(d.initial_rto),
            // PRR paces recovery by the SACK scoreboard's pipe; without SACK a profile's PRR is off.
            prr: self.sack && self.prr.unwrap_or(d.prr),
            hystart: self.hystart.unwrap_or(d.hystart),
            delayed_ack: self.delayed_ack.unwrap_or(d.delayed_ack),
            delack_timeout: self.delack_timeout.unwrap_or(d.delack_timeout),
            quickack: self.quickack.unwrap_or(d.quickack),
            sack_compress: self.sack_compress.unwrap_or(d.sack_compress),
            psh_ack: self.psh_ack.unwrap_or(d.psh_ack),
            init_cwnd: self.init_cwnd.unwrap_or(d.init_cwnd),
            rack,
            ssthresh_rule: self.ssthresh_rule.unwrap_or(match (self.profile, &self.cc) {
                // ns-3.44 TcpCubic::GetSsThresh ignores the bytes in flight it is given.
                (Profile::Ns3, CcConfig::Cubic(_)) => SsthreshRule::Cwnd,
                _ if rack && d.ssthresh_rule == SsthreshRule::FlightSize => SsthreshRule::FlightCapped,
                _ => d.ssthresh_rule,
            }),
            prr_rule: self.prr_rule.unwrap_or(d.prr_rule),
            // RACK counts its own pipe (Linux's packets_out − sacked_out − lost_out + retrans_out).
            pipe_rule: self.pipe_rule.unwrap_or(if rack { PipeRule::Rfc6675 } else { d.pipe_rule }),
            hystart_rule: self.hystart_rule.unwrap_or(d.hystart_rule),
            pacing: self.pacing.unwrap_or(d.pacing),
            // A profile's TSO gives way to an explicit `overhead` (the two would both time sends).
            tso: self.tso.unwrap_or(d.tso && self.overhead.is_none_or(|o| o == Dur::ZERO)),
            rcv_autotune: self.rcv_autotune.unwrap_or(d.rcv_autotune),
            abc: match &self.cc {
                CcConfig::NewReno(c) => c.abc.unwrap_or(d.abc),
                _ => d.abc,
            },
            cubic_rule,
            reno_rule: match &self.cc {
                CcConfig::NewReno(c) => c.rule.unwrap_or(d.reno_rule),
                _ => d.reno_rule,
            },
            alpha_switch: match &self.cc {
                CcConfig::Cubic(c) => c.alpha_switch.unwrap_or(cubic_rule == CubicRule::Rfc9438),
                _ => d.alpha_switch,
            },
            slow_start_after_idle: self.slow_start_after_idle.unwrap_or(d.slow_start_after_idle),
            idle_rule: d.idle_rule,
            cwnd_limit_rule: d.cwnd_limit_rule,
            host_jitter: self.host_jitter.unwrap_or(d.host_jitter),
        }
    }

    /// The receive buffer, bytes: `rcv_buf`, or its default (4 MiB, or Linux's `tcp_rmem[2]` of
    /// 32 MiB with `rcv_autotune`).
    pub fn rcv_buf_bytes(&self) -> u64 {
        self.rcv_buf.unwrap_or(if self.resolved().rcv_autotune { rcvbuf::TCP_RMEM_MAX } else { 4 << 20 })
    }

    /// The buffer an autotuned connection starts with, bytes: `rcv_buf_init`, or Linux's
    /// `tcp_rmem[1]` (128 KiB) within `rcv_buf`, and never below four segments of `mss` (two
    /// of window: jumbo segments, such as the 64-kB GRO aggregates some scenarios send, would
    /// otherwise get no window at all).
    pub fn rcv_buf_init_bytes(&self, mss: u64) -> u64 {
        self.rcv_buf_init.unwrap_or(rcvbuf::TCP_RMEM_DEFAULT.max(4 * mss).min(self.rcv_buf_bytes()))
    }

    /// Option bytes on every data segment and pure ACK (before SACK blocks).
    pub fn option_bytes(&self) -> u32 {
        if self.timestamps {
            TS_OPTION_BYTES
        } else {
            0
        }
    }

    /// SMSS for a first hop of `mtu_bytes`.
    pub fn mss_for(&self, mtu_bytes: u32) -> u64 {
        self.mss.unwrap_or((mtu_bytes as u64).saturating_sub((IPV4_HEADER + TCP_HEADER + self.option_bytes()) as u64))
    }

    /// Checks the receive buffer (`rcv_buf`, `rcv_buf_init`, `rcv_autotune`) for segments of
    /// `mss` bytes; errors name the field. MPTCP checks its connection-level buffer with it.
    pub fn validate_rcv_buf(&self, mss: u64) -> Result<(), String> {
        let rcv_buf = self.rcv_buf_bytes();
        if rcv_buf < mss {
            return Err(format!("rcv_buf: {rcv_buf} B is smaller than one segment ({mss} B)"));
        }
        if rcv_buf > u32::MAX as u64 {
            return Err(format!("rcv_buf: {rcv_buf} B exceeds the largest window (4 GiB)"));
        }
        if self.resolved().rcv_autotune {
            // Half the buffer is window: it must hold two segments.
            if rcvbuf::win_from_space(rcv_buf) < 2 * mss {
                return Err(format!(
                    "rcv_buf: {rcv_buf} B is below four segments ({} B; with rcv_autotune half the buffer is window)",
                    4 * mss
                ));
            }
            let init = self.rcv_buf_init_bytes(mss);
            if rcvbuf::win_from_space(init) < 2 * mss {
                return Err(format!(
                    "rcv_buf_init: {init} B is below four segments ({} B; half of it is window)",
                    4 * mss
                ));
            }
            if init > rcv_buf {
                return Err(format!("rcv_buf_init: {init} B is above rcv_buf ({rcv_buf} B)"));
            }
        } else if self.rcv_buf_init.is_some() {
            return Err("rcv_buf_init: only with rcv_autotune = true".into());
        }
        Ok(())
    }

    /// Checks the parameters against a first-hop MTU. Errors name the field.
    pub fn validate(&self, mtu_bytes: u32) -> Result<(), String> {
        let room = (mtu_bytes as u64).saturating_sub((IPV4_HEADER + TCP_HEADER + self.option_bytes()) as u64);
        let mss = self.mss_for(mtu_bytes);
        if mss == 0 || mss > room {
            return Err(format!("mss: {mss} B does not fit MTU {mtu_bytes} B (at most {room} B)"));
        }
        if self.snd_buf < mss {
            return Err(format!("snd_buf: {} B is smaller than one segment ({mss} B)", self.snd_buf));
        }
        let b = self.resolved();
        if self.pipe_rule == Some(PipeRule::Ns3) && b.rack {
            return Err("pipe_rule: \"ns3\" needs rack = false (RACK keeps its own count of bytes in flight)".into());
        }
        self.validate_rcv_buf(mss)?;
        if matches!(&self.cc, CcConfig::NewReno(c) if c.abc == Some(false)) && b.reno_rule == RenoRule::Linux {
            return Err(
                "cc.abc: false needs cc.rule = \"rfc5681\" (the profile's Linux Reno counts the segments each \
                        ACK delivers; it has no per-ACK counting)"
                    .into(),
            );
        }
        if b.init_cwnd == 0 {
            return Err("init_cwnd: must be at least 1 segment".into());
        }
        // A timer of zero (or a few nanoseconds) would fire again at the same instant after
        // each expiry and the run would never advance: the RTO bounds start at 1 µs.
        for (key, v) in [("initial_rto", b.initial_rto), ("min_rto", b.min_rto), ("max_rto", b.max_rto)] {
            if v < MIN_RTO {
                return Err(format!("{key}: must be ≥ 1 µs, got {v:?}"));
            }
        }
        if b.min_rto > b.max_rto {
            return Err(format!("min_rto: {:?} is above max_rto {:?}", b.min_rto, b.max_rto));
        }
        if b.host_jitter > jitter::MAX_JITTER {
            return Err(format!("host_jitter: must be at most 1s, got {}s", b.host_jitter.as_secs_f64()));
        }
        if b.delayed_ack && (b.delack_timeout == Dur::ZERO || b.delack_timeout >= Dur::from_millis(500)) {
            return Err("delack_timeout: must be in (0, 500ms) (RFC 5681 §4.2)".into());
        }
        if self.prr == Some(true) && !self.sack {
            return Err("prr: needs sack = true (the recovery rule counts SACKed data)".into());
        }
        if self.rack == Some(true) && !self.sack {
            return Err("rack: needs sack = true (RACK marks losses from SACKed data)".into());
        }
        if self.hystart == Some(true) && !matches!(self.cc, CcConfig::Cubic(_)) {
            return Err("hystart: only with cc = \"cubic\"".into());
        }
        if let Some(o) = self.overhead {
            if o > overhead::MAX_OVERHEAD {
                return Err(format!("overhead: must be at most 1s, got {}s", o.as_secs_f64()));
            }
            if o > Dur::ZERO && b.pacing {
                return Err("overhead: not with pacing = true (pacing already times every segment)".into());
            }
            if o > Dur::ZERO && b.tso {
                return Err("overhead: not with tso = true (TSO's deferral already times every buffer)".into());
            }
            if o > Dur::ZERO && self.cc.build().rate_based() {
                return Err(format!(
                    "overhead: not with cc = {:?} (its pacing already times every segment)",
                    self.cc.kind()
                ));
            }
        }
        self.cc.validate()
    }

    /// Builds both endpoints.
    ///
    /// # Panics
    /// If [`validate`](Self::validate) fails (the scenario layer calls it first).
    pub fn build(&self, s: &EndpointSetup) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
        let ends: (Box<dyn Endpoint>, Box<dyn Endpoint>) =
            (Box::new(socket::TcpSocket::active(self, s)), Box::new(socket::TcpSocket::passive(self, s)));
        jitter::wrap(ends, self.resolved().host_jitter, s.seed, &s.flow_name)
    }
}

/// State shared between the transport and its congestion controller (ns-3's `TcpSocketState`).
/// All sizes in bytes.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Tcb {
    /// Sender maximum segment size (SMSS).
    pub mss: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Smoothed RTT (RFC 6298), once sampled.
    pub srtt: Option<Dur>,
    pub min_rtt: Option<Dur>,
    /// Oldest unacknowledged sequence number.
    pub snd_una: u64,
    /// Highest sequence number sent + 1 (RFC 6675 `HighData` + 1).
    pub snd_max: u64,
    /// In fast recovery (RFC 6582) or SACK loss recovery (RFC 6675).
    pub in_recovery: bool,
    /// Packets delivered and deemed lost so far, and when data was last delivered (Linux
    /// `tp->delivered`, `tp->lost`, `tp->delivered_mstamp`): kept for a rate-based controller
    /// ([`rate`]), 0 otherwise.
    pub delivered: u64,
    pub lost: u64,
    pub delivered_mstamp: SimTime,
}

impl Tcb {
    fn new(mss: u64, cwnd: u64) -> Self {
        Tcb {
            mss,
            cwnd,
            ssthresh: INITIAL_SSTHRESH,
            srtt: None,
            min_rtt: None,
            snd_una: 1,
            snd_max: 1,
            in_recovery: false,
            delivered: 0,
            lost: 0,
            delivered_mstamp: SimTime::ZERO,
        }
    }
    #[cfg(test)]
    pub(crate) fn for_test(mss: u64, cwnd: u64) -> Self {
        Tcb::new(mss, cwnd)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Closed,
    SynSent,
    Established,
}

/// Time in the timestamp option's unit (µs), truncated to 32 bits as on the wire.
pub(crate) fn ts_now(now: SimTime) -> u32 {
    (now.as_nanos() / 1_000) as u32
}

/// Window-scale shift for a receive buffer of `buf_bytes`: the smallest that brings the buffer
/// into the 16-bit window field, at most 14 (RFC 7323 §2.3). A buffer above 65535 << 14 bytes
/// (1 GiB) does not fit even then; its wire field saturates at 65535.
pub fn window_shift(buf_bytes: u64) -> u8 {
    let mut shift = 0;
    while shift < 14 && buf_bytes >> shift > 0xffff {
        shift += 1;
    }
    shift
}

/// MSS option value for a sender maximum segment size of `smss` bytes that carries
/// `opt_bytes` of options on every segment: the option counts no TCP options, so the peer
/// subtracts them itself (RFC 9293 §3.7.1, RFC 6691 §2). 1460 for 1448 with timestamps.
pub(crate) fn mss_option(smss: u64, opt_bytes: u32) -> u16 {
    (smss + opt_bytes as u64).min(0xffff) as u16
}

fn syn_option_bytes(cfg: &TcpConfig) -> u32 {
    // MSS (4) + window scale (3) + SACK-permitted (2) + timestamps (10), padded to 4 bytes.
    let raw: u32 = 4 + 3 + if cfg.sack { 2 } else { 0 } + if cfg.timestamps { 10 } else { 0 };
    raw.div_ceil(4) * 4
}

/// The sending endpoint (at the flow's source).
#[derive(Debug)]
pub struct TcpSender {
    src_port: u16,
    dst_port: u16,
    sack: bool,
    timestamps: bool,
    opt_bytes: u32,
    syn_opt_bytes: u32,
    /// Our receive window, bytes: the buffer reverse data would use, advertised on every
    /// segment we send though the reverse direction carries none (with `rcv_autotune`, the
    /// initial window; a full-duplex socket stamps its receiving half's current one).
    rcv_wnd: u32,
    /// Our window-scale shift (RFC 7323 §2.3).
    wscale: u8,
    /// Our MSS option (RFC 9293 §3.7.1), bytes.
    mss_opt: u16,
    init_cwnd: u64,
    /// Restart the RTO when the segment at `snd_una` is retransmitted (Linux).
    rto_rearm: bool,
    /// Proportional Rate Reduction (RFC 6937) in SACK recovery, and its state: bytes delivered
    /// and sent since recovery began, and `RecoverFS` (Linux: cwnd before the reduction).
    prr: bool,
    /// Linux's or ns-3's PRR arithmetic.
    prr_rule: PrrRule,
    /// What ssthresh is computed from on a fast retransmit.
    ssthresh_rule: SsthreshRule,
    /// What counts as in flight; under [`PipeRule::Ns3`], the byte ranges retransmitted and not
    /// yet cumulatively acknowledged, those of them SACKed since, and the SACKed ones' bytes
    /// (counted in flight on top of RFC 6675's pipe). Empty under `Rfc6675` and with RACK.
    pipe_rule: PipeRule,
    rxt_sent: RangeSet,
    rxt_sacked: RangeSet,
    rxt_sacked_bytes: u64,
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    snd_buf: u64,
    /// RACK-TLP state (RFC 8985), when `rack` is on; and whether the probe timer is to be
    /// restarted (new data went out, or the cumulative ACK advanced).
    rack: Option<Box<rack::Rack>>,
    tlp_restart: bool,
    /// Opened by the peer (the passive end of a full-duplex socket): writes before the
    /// handshake completes wait for it instead of sending a SYN.
    passive: bool,
    state: State,
    tcb: Tcb,
    cc: Box<dyn CongestionControl>,
    rtt: RttEstimator,
    board: Scoreboard,
    /// End (exclusive) of the bytes the application has written.
    write_end: u64,
    /// Peer's advertised window, bytes.
    rwnd: u64,
    /// RFC 6582 `recover` / RFC 6675 `RecoveryPoint` (exclusive: the recovery ends when
    /// `snd_una >= recover`).
    recover: u64,
    dupacks: u32,
    /// A partial ACK has been seen in this NewReno recovery (RFC 6582 §3.2 step 5 timer rule).
    partial_seen: bool,
    consecutive_rtos: u32,
    syn_sent_at: SimTime,
    syn_retransmitted: bool,
    /// Karn's-rule RTT probe when timestamps are off: (end seq of the timed segment, send time).
    probe: Option<(u64, SimTime)>,
    /// Peer's latest TSval, echoed in our segments.
    peer_ts: u32,
    /// Whether the last send attempt stopped because of cwnd (not lack of data or window).
    cwnd_limited: bool,
    /// This send attempt stopped with room in the window because pacing or the host overhead
    /// held the segment (`held`): the last-send rule counts that as window use, Linux's
    /// `tcp_write_xmit` does not (`tcp_pacing_check` breaks without setting `is_cwnd_limited`).
    held_with_room: bool,
    /// When an ACK may grow cwnd ([`CwndLimitRule`]); under Linux's rule, `tcp_cwnd_validate`'s
    /// per-window state: the window was the limit at some send of the current window
    /// (`tp->is_cwnd_limited`), the most segments out in it (`max_packets_out`), and the
    /// window's right edge (`cwnd_usage_seq`: a new window starts once `snd_una` reaches it).
    cwnd_limit_rule: CwndLimitRule,
    win_cwnd_limited: bool,
    max_packets_out: u64,
    cwnd_usage_seq: u64,
    /// Pacing (`fq`, or the controller's rate): on, and when the next segment may leave.
    pacing: bool,
    pace_next: SimTime,
    /// Delivery-rate samples, for a rate-based controller ([`rate`]); and whether its pacing is
    /// Linux's internal pacing (no `fq`).
    rate: Option<Box<rate::RateSampler>>,
    internal_pacing: bool,
    /// TSO/GSO-sized sending ([`tso`]): on; the buffer being sent (segments, IP bytes, and its
    /// size goal in segments); when the last segment left; when each new segment still
    /// unacknowledged was sent (end sequence number, time), oldest first.
    tso: bool,
    skb_segs: u64,
    skb_bytes: u64,
    skb_payload: u64,
    skb_goal: u64,
    /// Where the buffer's newest segment sits in this call's output (its index and sequence
    /// number): it gets PSH when the buffer closes with two or more segments (Linux
    /// `__tcp_transmit_skb` sets PSH on every GSO buffer, `tcp_gso_segment` keeps it on the last
    /// segment). `None` when that segment left in an earlier call.
    skb_tail: Option<(usize, u64)>,
    /// The buffer stays open across sends until [`end_batch`](Self::end_batch): a caller that
    /// writes one segment at a time (MPTCP's scheduler) builds buffers as Linux's
    /// `tcp_push_pending_frames` after a batch of appends does.
    batch: bool,
    last_tx: Option<SimTime>,
    tx_times: std::collections::VecDeque<(u64, SimTime)>,
    /// Random sender overhead ([`overhead`]), when `overhead` is above zero.
    overhead: Option<Box<overhead::Overhead>>,
    /// Slow start after idle and its rule; when the last data segment was sent (Linux
    /// `lsndtime`); Linux's application-limited cwnd validation (`tcp_cwnd_validate`): the most
    /// segments out since the window was last full (`snd_cwnd_used`) and when it was last full or
    /// last decayed (`snd_cwnd_stamp`).
    slow_start_after_idle: bool,
    idle_rule: IdleRule,
    lsndtime: Option<SimTime>,
    cwnd_used: u64,
    cwnd_stamp: SimTime,
    notified: (u64, u64),
    /// The state last reported to the `tcp_state` probe ("" before the first report), and the
    /// controller's (mode, round) last reported to the `bbr` probe.
    probed_state: &'static str,
    probed_cc: (&'static str, u64),
    // Counters.
    segs_sent: u64,
    bytes_sent: u64,
    rxt_segs: u64,
    rxt_bytes: u64,
    rto_count: u64,
    fast_rxt_count: u64,
    /// An MPTCP subflow under coupled congestion control: the congestion-avoidance increase
    /// is the connection's (RFC 6356 §3), so ACKs in congestion avoidance while the window is
    /// the limit only add their bytes and their count to `ca_acked` for it to apply.
    coupled_ca: bool,
    ca_acked: (u64, u64),
    /// ECN (RFC 3168 §6.1): `ecn` asks for it on the SYN; `ecn_ok` once the SYN-ACK accepted.
    ecn: bool,
    ecn_ok: bool,
    /// A window reduction happened: the next new data segment carries CWR (§6.1.2).
    cwr_pending: bool,
    /// `snd_max` at the last window reduction (ECN or loss recovery): ECE reduces again only
    /// once an ACK acknowledges data above it (Linux `high_seq` of `TCP_CA_CWR`), so at most
    /// once per window of data.
    cwr_until: Option<u64>,
    /// Window reductions made in answer to ECE.
    ecn_reductions: u64,
}

impl TcpSender {
    /// # Panics
    /// If `cfg.validate(s.mtu_bytes)` fails.
    pub fn new(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        if let Err(e) = cfg.validate(s.mtu_bytes) {
            panic!("flow {}: invalid tcp config: {e}", s.flow_name);
        }
        let mss = cfg.mss_for(s.mtu_bytes);
        let b = cfg.resolved();
        let tcb = Tcb::new(mss, b.init_cwnd as u64 * mss);
        let cc = cfg.cc.build_seeded(&b, SimRng::stream(s.seed, &format!("flow:{}:tcp_cc", s.flow_name)));
        let (rate_based, cc_paces) = (cc.rate_based(), cc.pacing_rate(&tcb).is_some());
        TcpSender {
            src_port: s.src_port,
            dst_port: s.dst_port,
            sack: cfg.sack,
            timestamps: cfg.timestamps,
            opt_bytes: cfg.option_bytes(),
            syn_opt_bytes: syn_option_bytes(cfg),
            rcv_wnd: if b.rcv_autotune {
                rcvbuf::initial_window(cfg.rcv_buf_init_bytes(mss), mss) as u32
            } else {
                cfg.rcv_buf_bytes().min(u32::MAX as u64) as u32
            },
            wscale: window_shift(cfg.rcv_buf_bytes()),
            mss_opt: mss_option(mss, cfg.option_bytes()),
            init_cwnd: b.init_cwnd as u64 * mss,
            snd_buf: cfg.snd_buf,
            rack: b.rack.then(Box::default),
            tlp_restart: false,
            passive: false,
            state: State::Closed,
            tcb,
            cc,
            rtt: RttEstimator::new(b.initial_rto, b.min_rto, b.max_rto).with_rule(b.rto_rule),
            rto_rearm: b.rto_rearm,
            // Linux runs no PRR under a controller with `cong_control` (`tcp_cong_control`).
            prr: b.prr && !rate_based,
            prr_rule: b.prr_rule,
            ssthresh_rule: b.ssthresh_rule,
            pipe_rule: b.pipe_rule,
            rxt_sent: RangeSet::default(),
            rxt_sacked: RangeSet::default(),
            rxt_sacked_bytes: 0,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            board: Scoreboard::new(1),
            write_end: 1,
            rwnd: mss,
            recover: 0,
            dupacks: 0,
            partial_seen: false,
            consecutive_rtos: 0,
            syn_sent_at: SimTime::ZERO,
            syn_retransmitted: false,
            probe: None,
            peer_ts: 0,
            cwnd_limited: true,
            held_with_room: false,
            cwnd_limit_rule: b.cwnd_limit_rule,
            win_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            pacing: b.pacing || cc_paces,
            pace_next: SimTime::ZERO,
            rate: rate_based.then(|| Box::new(rate::RateSampler::new(cfg.sack))),
            internal_pacing: cc_paces && !b.pacing,
            tso: b.tso,
            skb_segs: 0,
            skb_bytes: 0,
            skb_payload: 0,
            skb_goal: 1,
            skb_tail: None,
            batch: false,
            last_tx: None,
            tx_times: std::collections::VecDeque::new(),
            overhead: cfg.overhead.filter(|o| *o > Dur::ZERO).map(|o| {
                let rng = SimRng::stream(s.seed, &format!("flow:{}:tcp_overhead", s.flow_name));
                Box::new(overhead::Overhead::new(o, rng))
            }),
            slow_start_after_idle: b.slow_start_after_idle,
            idle_rule: b.idle_rule,
            lsndtime: None,
            cwnd_used: 0,
            cwnd_stamp: SimTime::ZERO,
            notified: (0, 0),
            probed_state: "",
            probed_cc: ("", 0),
            segs_sent: 0,
            bytes_sent: 0,
            rxt_segs: 0,
            rxt_bytes: 0,
            rto_count: 0,
            fast_rxt_count: 0,
            coupled_ca: false,
            ca_acked: (0, 0),
            ecn: cfg.ecn,
            ecn_ok: false,
            cwr_pending: false,
            cwr_until: None,
            ecn_reductions: 0,
        }
    }

    /// Leaves the congestion-avoidance increase to an MPTCP connection (see `coupled_ca`).
    pub(crate) fn set_coupled_ca(&mut self) {
        self.coupled_ca = true;
    }

    /// Bytes acknowledged in congestion avoidance since the last call, and the ACKs that
    /// acknowledged them (coupled subflows), counting only ACKs that arrived while the window
    /// was the limit (Linux `tcp_is_cwnd_limited` in `mptcp_ccc_cong_avoid`).
    pub(crate) fn take_ca_acked(&mut self) -> (u64, u64) {
        std::mem::take(&mut self.ca_acked)
    }

    /// The control block, for an MPTCP connection's coupled increase and penalisation.
    pub(crate) fn tcb_mut(&mut self) -> &mut Tcb {
        &mut self.tcb
    }

    /// One of the end-of-run counters of [`Endpoint::summary`] by name (0 if unknown).
    pub fn summary_value(&self, name: &str) -> u64 {
        match name {
            "segments_sent" => self.segs_sent,
            "bytes_sent" => self.bytes_sent,
            "retransmitted_bytes" => self.rxt_bytes,
            "ecn_reductions" => self.ecn_reductions,
            _ => 0,
        }
    }

    /// Whether ECN was negotiated on the handshake (RFC 3168 §6.1.1).
    pub fn ecn_ok(&self) -> bool {
        self.ecn_ok
    }

    /// Window reductions made in answer to ECE (RFC 3168 §6.1.2).
    pub fn ecn_reductions(&self) -> u64 {
        self.ecn_reductions
    }

    /// Timeouts since the last ACK that advanced `snd_una` (0: not in timeout recovery).
    pub fn consecutive_rtos(&self) -> u32 {
        self.consecutive_rtos
    }

    /// Whether the last send attempt stopped because of the congestion window.
    pub fn cwnd_limited(&self) -> bool {
        self.cwnd_limited
    }

    /// Send window, bytes: the peer's advertised window capped by the send buffer (new data
    /// goes out only while `snd_max − snd_una` stays within it).
    pub fn snd_wnd(&self) -> u64 {
        self.rwnd.min(self.snd_buf)
    }

    /// Marks the window as the limit although the subflow's own queue ran dry: an MPTCP
    /// connection holds the data back because this subflow has no room for it.
    pub(crate) fn mark_cwnd_limited(&mut self) {
        self.cwnd_limited = true;
        self.track_cwnd_use(true);
    }

    /// Whether an ACK may grow cwnd now, by the profile's [`CwndLimitRule`].
    fn window_in_use(&self) -> bool {
        match self.cwnd_limit_rule {
            CwndLimitRule::LastSend => self.cwnd_limited,
            // `tcp_is_cwnd_limited`: "If in slow start, ensure cwnd grows to twice what was ACKed."
            CwndLimitRule::Linux => {
                self.win_cwnd_limited
                    || (self.tcb.cwnd < self.tcb.ssthresh && self.tcb.cwnd / self.tcb.mss < 2 * self.max_packets_out)
            }
        }
    }

    /// Under Linux's rule, `tcp_cwnd_validate`'s bookkeeping after a send attempt that sent or
    /// found the window full (`limited`, `tcp_write_xmit`'s `is_cwnd_limited`): a new window
    /// starts once `snd_una` reaches the last one's right edge; a limited send marks the window
    /// limited; otherwise the most packets out grows while the window was not limited.
    fn track_cwnd_use(&mut self, limited: bool) {
        if self.cwnd_limit_rule != CwndLimitRule::Linux {
            return;
        }
        let packets_out = (self.tcb.snd_max - self.tcb.snd_una).div_ceil(self.tcb.mss);
        if self.tcb.snd_una >= self.cwnd_usage_seq
            || limited
            || (!self.win_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.win_cwnd_limited = limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.tcb.snd_max;
        }
    }

    /// The sending half of the passive end of a full-duplex socket: ports swapped (it sends
    /// from the flow's destination port), no SYN of its own (the receiving half answers the
    /// peer's SYN); it starts sending once the handshake's final ACK arrives.
    pub(crate) fn new_passive(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        let swapped = EndpointSetup { src_port: s.dst_port, dst_port: s.src_port, ..s.clone() };
        // The reverse direction's data is sent Not-ECT: only the initiator's SYN negotiates.
        let mut snd = TcpSender { passive: true, ecn: false, ..TcpSender::new(cfg, &swapped) };
        // The reverse direction's sender draws from a stream of its own.
        snd.overhead = snd
            .overhead
            .map(|o| Box::new(o.with_rng(SimRng::stream(s.seed, &format!("flow:{}:peer_tcp_overhead", s.flow_name)))));
        if snd.rate.is_some() {
            snd.cc = cfg
                .cc
                .build_seeded(&cfg.resolved(), SimRng::stream(s.seed, &format!("flow:{}:peer_tcp_cc", s.flow_name)));
        }
        snd
    }

    /// The handshake's final ACK (or the first segment after it) reached the passive end
    /// (RFC 9293 §3.10.7.3, SYN-RECEIVED → ESTABLISHED): the sending half opens, with an RTT
    /// sample from the echoed SYN-ACK timestamp when timestamps are on (RFC 7323 §4.1).
    pub(crate) fn establish_passive(&mut self, h: &TcpHdr, cx: &mut FlowCtx) {
        debug_assert!(self.passive && self.state == State::Closed);
        self.state = State::Established;
        self.peer_ts = h.ts_val;
        self.rwnd = h.wnd as u64;
        if self.timestamps && h.ts_ecr != 0 {
            let r = Dur::from_micros(ts_now(cx.now).wrapping_sub(h.ts_ecr) as u64);
            self.rtt.on_sample_at(r, self.tcb.snd_una, self.tcb.snd_max);
            self.tcb.srtt = self.rtt.srtt();
            self.tcb.min_rtt = self.rtt.min_rtt();
        }
        self.tcb.cwnd = self.init_cwnd; // RFC 6928 §2
        self.try_send(cx, false);
        self.rack_timers(cx);
    }

    /// Takes the peer's window and timestamp from a segment that acknowledges nothing of ours.
    pub(crate) fn observe(&mut self, h: &TcpHdr) {
        self.peer_ts = h.ts_val;
        self.rwnd = h.wnd as u64;
    }

    /// Whether the sending half has ever sent data.
    pub(crate) fn sent_any(&self) -> bool {
        self.segs_sent > 0
    }

    // ---- Queries (nouns, per STYLE.md). ----

    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.tcb.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.tcb.ssthresh
    }
    pub fn mss(&self) -> u64 {
        self.tcb.mss
    }
    pub fn srtt(&self) -> Option<Dur> {
        self.rtt.srtt()
    }
    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Dur {
        self.rtt.rto()
    }
    pub fn snd_una(&self) -> u64 {
        self.tcb.snd_una
    }
    pub fn snd_max(&self) -> u64 {
        self.tcb.snd_max
    }
    pub fn tcb(&self) -> &Tcb {
        &self.tcb
    }
    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }
    pub fn in_recovery(&self) -> bool {
        self.tcb.in_recovery
    }
    /// Application bytes acknowledged so far.
    pub fn acked_bytes(&self) -> u64 {
        self.tcb.snd_una - 1
    }
    /// Bytes written by the application but never sent (for the TCP Interactive paper's sender,
    /// which drops stale frames that are still queued).
    pub fn unsent_bytes(&self) -> u64 {
        self.write_end - self.tcb.snd_max
    }
    /// Consecutive retransmission timeouts since new data was last acknowledged.
    pub fn backoff(&self) -> u32 {
        self.consecutive_rtos
    }
    /// The sending state now, as an application's synchronous probe sees it.
    pub fn info(&self) -> SocketInfo {
        SocketInfo {
            cwnd_bytes: self.tcb.cwnd,
            ssthresh_bytes: self.tcb.ssthresh,
            srtt: self.rtt.srtt(),
            rto: self.rtt.rto(),
            backoff: self.consecutive_rtos,
            in_flight_bytes: self.in_flight(),
            unacked_bytes: self.unacked_bytes(),
            unsent_bytes: self.unsent_bytes(),
            acked_bytes: self.acked_bytes(),
            established: self.is_established(),
        }
    }
    /// Bytes sent but not yet cumulatively acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.tcb.snd_max - self.tcb.snd_una
    }
    /// Bytes the sender believes are in the network: RFC 6675 `pipe` (with SACK) or RFC 5681
    /// FlightSize adjusted for bytes deemed lost and retransmitted.
    pub fn in_flight(&self) -> u64 {
        if let Some(r) = &self.rack {
            return r.q.pipe(self.tcb.snd_una, self.tcb.snd_max);
        }
        let (l, above) = self.loss_frontier();
        self.pipe(l, above)
    }
    pub fn retransmitted_segments(&self) -> u64 {
        self.rxt_segs
    }
    pub fn rto_count(&self) -> u64 {
        self.rto_count
    }
    pub fn fast_retransmit_count(&self) -> u64 {
        self.fast_rxt_count
    }

    // ---- Internals. ----

    /// Bytes in flight without RACK, given the loss frontier: RFC 6675's pipe, plus under
    /// [`PipeRule::Ns3`] the retransmitted bytes SACKed since (ns-3.44
    /// `TcpTxBuffer::BytesInFlight()` = `m_sentSize − (m_sackedOut + m_lostOut) + m_retrans`,
    /// where `Update` clears a SACKed segment's lost flag but not its retransmitted one).
    fn pipe(&self, lost: u64, above: u64) -> u64 {
        self.board.pipe(self.tcb.snd_max, lost, above) + self.rxt_sacked_bytes
    }

    /// A measure that grows when data is newly deemed lost: RACK's count of loss marks, else
    /// the RFC 6675 loss frontier. See [`Self::newly_lost`].
    fn lost_mark(&self) -> u64 {
        match self.rack.as_deref() {
            Some(r) => r.q.loss_marks(),
            None => self.loss_frontier().0,
        }
    }

    /// Whether data was deemed lost since [`Self::lost_mark`] returned `prior` (Linux
    /// `rs->losses` > 0). The frontier is compared against `snd_una` too, which a cumulative
    /// ACK moves without marking anything.
    fn newly_lost(&self, prior: u64) -> bool {
        let floor = if self.rack.is_some() { prior } else { prior.max(self.tcb.snd_una) };
        self.lost_mark() > floor
    }

    /// The loss frontier L (every un-SACKed byte below it is deemed lost) and the SACKed bytes at
    /// or above it.
    fn loss_frontier(&self) -> (u64, u64) {
        let marked = self.board.marker(Marker::Lost);
        if self.sack {
            let (f, above) = self.board.lost_frontier(DUPTHRESH, self.tcb.mss); // RFC 6675 §4 IsLost
            if f > marked {
                return (f, above);
            }
        }
        (marked, self.board.sacked_bytes() - self.board.sacked_below_marker(Marker::Lost))
    }

    /// RFC 6675 §4 `NextSeg()` (rules 1 and 2; the optional rules 3 and 4 are not used), which
    /// also serves NewReno and timeout recovery: retransmit the lowest lost, un-SACKed,
    /// not-yet-retransmitted segment, else new data if the peer's window and the send buffer
    /// allow. Returns (seq, len, is_retransmission).
    fn next_seg(&self, lost: u64) -> Option<(u64, u64, bool)> {
        let mss = self.tcb.mss;
        let snd_max = self.tcb.snd_max;
        let r = self.board.marker(Marker::HighRxt);
        if r < lost {
            // Rule 1: S2 > HighRxt, un-SACKed and IsLost(S2).
            let (hole, next_sacked) = self.board.ranges().next_absent(r);
            if hole < lost && hole < snd_max {
                let end = (hole + mss).min(next_sacked.unwrap_or(u64::MAX)).min(snd_max);
                return Some((hole, end - hole, true));
            }
        }
        // Rule 2: new data.
        self.next_new().map(|(seq, len)| (seq, len, false))
    }

    /// The next new segment, if the application has written it and it fits within
    /// min(rwnd, snd_buf) of snd_una (RFC 9293 §3.8.6.2.1 send window): (seq, len).
    fn next_new(&self) -> Option<(u64, u64)> {
        let snd_max = self.tcb.snd_max;
        if snd_max < self.write_end {
            let len = self.tcb.mss.min(self.write_end - snd_max);
            if snd_max + len - self.tcb.snd_una <= self.rwnd.min(self.snd_buf) {
                return Some((snd_max, len));
            }
        }
        None
    }

    /// Sends as long as `pipe + segment <= cwnd` (RFC 6675 §5 step C; RFC 5681 FlightSize rule).
    /// With `force`, the first segment goes out regardless (fast retransmit, partial-ACK
    /// retransmission, RTO retransmission).
    fn try_send(&mut self, cx: &mut FlowCtx, force: bool) {
        if self.state != State::Established {
            return;
        }
        let before = self.segs_sent;
        self.held_with_room = false;
        if self.rack.is_some() {
            self.try_send_rack(cx, force);
        } else {
            self.try_send_sack(cx, force);
        }
        let sent = self.segs_sent > before;
        // `tcp_write_xmit`: `is_cwnd_limited` is set when the cwnd quota ran out (or TSO
        // deferred against cwnd), not when pacing held a segment; then `is_cwnd_limited |=
        // tcp_packets_in_flight(tp) >= tcp_snd_cwnd(tp)`, and `tcp_cwnd_validate` if anything
        // was sent or the window was the limit.
        let limited = match self.cwnd_limit_rule {
            CwndLimitRule::LastSend => self.cwnd_limited,
            CwndLimitRule::Linux => {
                (self.cwnd_limited && !self.held_with_room)
                    || self.in_flight().div_ceil(self.tcb.mss) >= self.tcb.cwnd / self.tcb.mss
            }
        };
        if sent || limited {
            self.track_cwnd_use(limited);
        }
        self.cwnd_validate(sent, limited, cx.now);
    }

    /// [`try_send`](Self::try_send) without RACK: RFC 6675 `NextSeg()` and pipe.
    fn try_send_sack(&mut self, cx: &mut FlowCtx, mut force: bool) {
        loop {
            let (lost, above) = self.loss_frontier();
            let Some((seq, len, rxt)) = self.next_seg(lost) else {
                self.cwnd_limited = false;
                break;
            };
            // Only a retransmission is ever forced; new data always waits for the window.
            if !(force && rxt) && self.pipe(lost, above) + len > self.tcb.cwnd {
                self.cwnd_limited = true;
                break;
            }
            if self.held(seq, rxt, force && rxt, cx) {
                break;
            }
            force = false;
            self.transmit(seq, len, rxt, cx);
        }
        if !self.batch {
            self.close_skb(cx);
        }
    }

    /// [`try_send`](Self::try_send) under RACK: lost segments (RFC 8985 marks them, in any
    /// order) go first, lowest sequence first, then new data (Linux `tcp_xmit_retransmit_queue`
    /// then `tcp_write_xmit`).
    fn try_send_rack(&mut self, cx: &mut FlowCtx, mut force: bool) {
        loop {
            let r = self.rack.as_deref().expect("rack on");
            let next = match r.q.next_lost() {
                Some((seq, len)) => Some((seq, len, true)),
                None => self.next_new().map(|(seq, len)| (seq, len, false)),
            };
            let Some((seq, len, rxt)) = next else {
                self.cwnd_limited = false;
                break;
            };
            if !(force && rxt) && self.in_flight() + len > self.tcb.cwnd {
                self.cwnd_limited = true;
                break;
            }
            if self.held(seq, rxt, force && rxt, cx) {
                break;
            }
            force = false;
            self.transmit(seq, len, rxt, cx);
        }
        if !self.batch {
            self.close_skb(cx);
        }
    }

    /// Whether a segment that fits the window still waits, after the window check of either
    /// send loop: the overhead, pacing (between buffers) or TSO's deferral (new data) holds it;
    /// a forced retransmission waits for none of the first two.
    fn held(&mut self, seq: u64, rxt: bool, forced: bool, cx: &mut FlowCtx) -> bool {
        if !forced && (self.overhead_holds(cx) || (self.skb_segs == 0 && self.paced(cx))) {
            // Data waits and the window has room for it: only the overhead or pacing (which
            // spreads the window over the RTT) holds it back. The window is in use, as Linux's
            // `tcp_is_cwnd_limited` sees a paced bulk sender (the flag stays set for the window
            // once the flight reached cwnd, and in slow start while cwnd < 2 × max_packets_out),
            // not application-limited. (Under Linux's rule `try_send` reads `held_with_room`.)
            self.cwnd_limited = true;
            self.held_with_room = true;
            return true;
        }
        !rxt && self.tso_defers(seq, cx.now)
    }

    /// With `tso` on, at the start of a buffer of new data at `seq`: whether to wait for the
    /// next ACK for a bigger one (`tcp_tso_should_defer`); sets `cwnd_limited` as Linux does.
    fn tso_defers(&mut self, seq: u64, now: SimTime) -> bool {
        if !self.tso || self.skb_segs > 0 {
            return false;
        }
        let una = self.tcb.snd_una;
        while self.tx_times.front().is_some_and(|&(end, _)| end <= una) {
            self.tx_times.pop_front();
        }
        let wnd = self.rwnd.min(self.snd_buf);
        let i = tso::DeferInput {
            now,
            last_tx: self.last_tx,
            recovering: self.recovering(),
            cwnd: self.tcb.cwnd,
            in_flight: self.in_flight(),
            send_win: (una + wnd).saturating_sub(seq),
            snd_wnd: wnd,
            mss: self.tcb.mss,
            max_segs: self.tso_segs(),
            unsent: self.write_end.saturating_sub(seq),
            head_tx: self.tx_times.front().map(|&(_, t)| t),
            srtt: self.rtt.srtt(),
        };
        match tso::should_defer(&i) {
            tso::Defer::SendNow => false,
            tso::Defer::Wait { cwnd_limited } => {
                self.cwnd_limited = cwnd_limited;
                true
            }
        }
    }

    /// Segments per buffer: 1 without `tso`, else `tcp_tso_autosize` at the pacing rate
    /// Linux computes whether or not it paces (`tcp_update_pacing_rate`, as `pace_after`).
    fn tso_segs(&self) -> u64 {
        if !self.tso {
            return 1;
        }
        self.gso_segs()
    }

    /// `tcp_tso_autosize`'s buffer size, segments, whether or not `tso` is on.
    fn gso_segs(&self) -> u64 {
        let rate = self.cc_pacing_bytes().or_else(|| {
            self.rtt.srtt().map(|srtt| {
                let pct = self.pacing_pct();
                let r = pct * self.tcb.cwnd as u128 * 1_000_000_000 / (100 * srtt.as_nanos().max(1) as u128);
                r.min(u64::MAX as u128) as u64
            })
        });
        tso::autosize(rate, self.rtt.min_rtt(), self.tcb.mss)
    }

    /// Keeps the buffer being built open across writes until [`end_batch`](Self::end_batch).
    pub(crate) fn begin_batch(&mut self) {
        self.batch = true;
    }

    /// Ends a batch of writes: the buffer built from them closes.
    pub(crate) fn end_batch(&mut self, cx: &mut FlowCtx) {
        if std::mem::take(&mut self.batch) {
            self.close_skb(cx);
        }
    }

    /// Ends the buffer being sent: a buffer of two or more segments carries PSH on its last
    /// (Linux forces PSH on GSO packets "to expedite GRO flush at receiver", and the receiver
    /// ACKs a full-sized PSH segment once it is read, [`TcpReceiver`]'s `pushed`); under pacing,
    /// the next buffer waits this one's length over the rate.
    fn close_skb(&mut self, cx: &mut FlowCtx) {
        let now = cx.now;
        if let Some((i, seq)) = self.skb_tail.take().filter(|_| self.skb_segs >= 2) {
            if let Some(L4::Tcp(h)) = cx.out.get_mut(i).map(|o| &mut o.l4) {
                if h.seq == seq {
                    h.flags |= tcp_flags::PSH;
                }
            }
        }
        if self.skb_segs > 0 {
            let bytes = std::mem::take(&mut self.skb_bytes);
            let payload = std::mem::take(&mut self.skb_payload);
            self.skb_segs = 0;
            if self.internal_pacing {
                self.pace_internal(payload, now);
            } else if self.pacing {
                self.pace_after(bytes, now);
            }
        }
    }

    /// With `overhead` on, whether this send opportunity waits (ns-2 `send_much`): a new wait is
    /// drawn and its timer armed, or one is pending; the release itself sends.
    fn overhead_holds(&mut self, cx: &mut FlowCtx) -> bool {
        let Some(o) = self.overhead.as_deref_mut() else {
            return false;
        };
        match o.gate(cx.now) {
            overhead::Gate::Send => false,
            overhead::Gate::Wait => true,
            overhead::Gate::Arm(at) => {
                cx.set_timer(OVERHEAD, at);
                true
            }
        }
    }

    /// The overhead timer fired: send what the window allows (forced past cwnd if a timeout's
    /// retransmission waited for it).
    fn on_overhead(&mut self, cx: &mut FlowCtx) {
        let Some(o) = self.overhead.as_deref_mut() else {
            return;
        };
        let force = o.release();
        self.try_send(cx, force);
        self.overhead.as_deref_mut().expect("overhead on").released();
    }

    /// Slow start after idle, before the application's new data is queued with nothing in flight
    /// (Linux `tcp_slow_start_after_idle_check` from `tcp_skb_entail`; FreeBSD `tcp_output`'s
    /// `cc_after_idle`): if nothing was sent for longer than the RTO, cwnd restarts from the
    /// restart window RW = min(IW, cwnd) by the profile's [`IdleRule`].
    fn restart_after_idle(&mut self, now: SimTime) {
        if !self.slow_start_after_idle || self.cc.rate_based() || self.tcb.snd_una != self.tcb.snd_max {
            return;
        }
        let Some(last) = self.lsndtime else { return };
        let rto = self.rtt.rto();
        let idle = now.since(last);
        if idle <= rto {
            return;
        }
        let mss = self.tcb.mss;
        // Linux counts cwnd in whole segments (`snd_cwnd`).
        let cwnd = self.tcb.cwnd / mss;
        let rw = (self.init_cwnd / mss).min(cwnd);
        match self.idle_rule {
            IdleRule::Linux => {
                // `tcp_cwnd_restart`: ssthresh = `tcp_current_ssthresh` (nothing is in flight, so
                // no reduction is under way), then one halving per RTO of idle beyond the first.
                self.tcb.ssthresh = self.tcb.ssthresh.max(((cwnd >> 1) + (cwnd >> 2)) * mss);
                let (mut c, mut left) = (cwnd, idle.as_nanos() as i128);
                loop {
                    left -= rto.as_nanos() as i128;
                    if left <= 0 || c <= rw {
                        break;
                    }
                    c >>= 1;
                }
                self.tcb.cwnd = c.max(rw) * mss;
                self.cwnd_used = 0;
                self.cwnd_stamp = now;
            }
            // RFC 5681 §4.1: cwnd = RW.
            IdleRule::Rfc5681 => self.tcb.cwnd = self.tcb.cwnd.min(rw * mss),
            IdleRule::Freebsd => {
                // `newreno_cc_after_idle`: RFC 5681 §4.1, and RFC 2861 §2's ssthresh.
                self.tcb.ssthresh = self.tcb.ssthresh.max(self.tcb.cwnd - (self.tcb.cwnd >> 2));
                self.tcb.cwnd = self.tcb.cwnd.min(rw * mss);
            }
        }
    }

    /// Linux `tcp_cwnd_validate` after a send attempt that `sent` or was cwnd-limited, under
    /// the Linux idle rule (the same sysctl, `tcp_slow_start_after_idle`, governs it): a window
    /// not filled for an RTO decays halfway towards what was used (`tcp_cwnd_application_limited`,
    /// RFC 2861's "slow part").
    fn cwnd_validate(&mut self, sent: bool, limited: bool, now: SimTime) {
        if !self.slow_start_after_idle || self.idle_rule != IdleRule::Linux || self.cc.rate_based() {
            return;
        }
        if !(sent || limited) {
            return;
        }
        if self.window_in_use() {
            // "Network is feed fully."
            self.cwnd_used = 0;
            self.cwnd_stamp = now;
            return;
        }
        let mss = self.tcb.mss;
        self.cwnd_used = self.cwnd_used.max((self.tcb.snd_max - self.tcb.snd_una).div_ceil(mss));
        if now.since(self.cwnd_stamp) < self.rtt.rto() {
            return;
        }
        // `tcp_cwnd_application_limited`: only in the open state, and only when the application
        // (not a full send buffer) is what limits (`SOCK_NOSPACE` clear: nothing waits to be sent).
        if !self.recovering() && self.write_end <= self.tcb.snd_max {
            let cwnd = self.tcb.cwnd / mss;
            let used = self.cwnd_used.max(self.init_cwnd / mss);
            if used < cwnd {
                self.tcb.ssthresh = self.tcb.ssthresh.max(((cwnd >> 1) + (cwnd >> 2)) * mss);
                self.tcb.cwnd = ((cwnd + used) >> 1) * mss;
            }
            self.cwnd_used = 0;
        }
        self.cwnd_stamp = now;
    }

    /// With pacing on, whether the next segment must wait for the pacing timer (armed here).
    fn paced(&self, cx: &mut FlowCtx) -> bool {
        if !self.pacing || cx.now >= self.pace_next {
            return false;
        }
        if cx.timer_deadline(PACE) != self.pace_next {
            cx.set_timer(PACE, self.pace_next);
        }
        true
    }

    /// The pacing rate's share of cwnd / SRTT, percent (`tcp_update_pacing_rate`:
    /// `tcp_pacing_ss_ratio` = 200 while cwnd < ssthresh / 2, `tcp_pacing_ca_ratio` = 120 after).
    fn pacing_pct(&self) -> u128 {
        if self.tcb.cwnd < self.tcb.ssthresh / 2 {
            200
        } else {
            120
        }
    }

    /// Pacing (`fq_dequeue`): the next segment leaves `bytes` / rate after now, rate =
    /// ratio × cwnd / SRTT (`tcp_update_pacing_rate`); no pacing before an RTT sample.
    fn pace_after(&mut self, bytes: u64, now: SimTime) {
        if let Some(rate) = self.cc_pacing_bytes() {
            // `fq` at the controller's rate (`sk_pacing_rate`).
            let ns = (bytes as u128 * 1_000_000_000).div_ceil(rate.max(1) as u128);
            self.pace_next = now + Dur::from_nanos(ns.min(u64::MAX as u128) as u64);
            return;
        }
        let Some(srtt) = self.rtt.srtt() else {
            return;
        };
        let pct = self.pacing_pct();
        // delay = bytes / (pct/100 · cwnd / srtt) = bytes · srtt · 100 / (pct · cwnd), in ns.
        let den = pct * self.tcb.cwnd.max(1) as u128;
        let ns = (bytes as u128 * srtt.as_nanos() as u128 * 100).div_ceil(den);
        self.pace_next = now + Dur::from_nanos(ns.min(u64::MAX as u128) as u64);
    }

    fn transmit(&mut self, seq: u64, len: u64, rxt: bool, cx: &mut FlowCtx) {
        debug_assert!(len > 0 && seq + len <= self.write_end, "{}: flow {} bad segment {seq}+{len}", cx.now, cx.flow);
        // Linux `tcp_event_data_sent`: data leaves with nothing in flight (CA_EVENT_TX_START),
        // then `lsndtime` is stamped.
        if self.in_flight() == 0 {
            let app_limited = self.rate.as_deref().is_some_and(|r| r.is_app_limited());
            let idle = self.lsndtime.map_or(Dur::ZERO, |last| cx.now.since(last));
            self.cc.on_tx_start(&TxStart { now: cx.now, app_limited, idle }, &mut self.tcb);
        }
        self.lsndtime = Some(cx.now);
        self.rate_on_send(seq, len, rxt, cx.now);
        if let Some(r) = self.rack.as_deref_mut() {
            // RFC 8985 §5.2: Segment.xmit_ts of every (re)transmission.
            if rxt {
                let id = r.q.id_at(seq).expect("a retransmission starts at a segment RACK holds");
                r.q.resent(id, cx.now);
            } else {
                r.q.push(seq, seq + len, cx.now);
                self.tlp_restart = true;
            }
        }
        if rxt {
            self.board.raise(Marker::HighRxt, seq + len);
            if self.pipe_rule == PipeRule::Ns3 && self.rack.is_none() {
                // ns-3 `TcpTxBuffer::GetTransmittedSegment` sets the segment's `m_retrans`.
                self.rxt_sent.insert(seq, seq + len, |_, _| {});
            }
            self.rxt_segs += 1;
            self.rxt_bytes += len;
            cx.probe(ProbeEvent::Retransmit { flow: cx.flow, end: cx.end(), seq, bytes: len });
            // Karn (RFC 6298 §3): a retransmitted segment gives no RTT sample.
            if matches!(self.probe, Some((end, _)) if seq < end) {
                self.probe = None;
            }
        } else {
            self.tcb.snd_max = seq + len;
            if !self.timestamps && self.probe.is_none() {
                self.probe = Some((seq + len, cx.now));
            }
        }
        self.segs_sent += 1;
        self.bytes_sent += len;
        if self.tcb.in_recovery {
            self.prr_out += len; // RFC 6937 §3: prr_out += (data sent)
        }
        // RFC 3168 §6.1.2: CWR on the first new data segment after a reduction; §6.1.5: a
        // retransmission is sent Not-ECT (and without CWR).
        let mut flags = tcp_flags::ACK;
        let mut ecn = Ecn::NotEct;
        if self.ecn_ok && !rxt {
            ecn = Ecn::Ect0;
            if std::mem::take(&mut self.cwr_pending) {
                flags |= tcp_flags::CWR;
            }
        }
        let hdr = TcpHdr { payload: len as u32, ..self.header(flags, seq, 1, cx.now) };
        // The segment's IP length: its size on the wire, and what pacing spaces by.
        let ip_len = IPV4_HEADER + TCP_HEADER + self.opt_bytes + len as u32;
        cx.send(Outgoing { dir: Dir::Fwd, size_bytes: ip_len, l4: L4::Tcp(hdr), path: 0, tfd: None, ecn });
        self.skb_tail = Some((cx.out.len() - 1, seq));
        // RFC 6298 §5.1: start the timer if it is not running. Linux also restarts it when it
        // retransmits the head of the queue (`tcp_xmit_retransmit_queue`), so the retransmission
        // gets a whole RTO to be acknowledged.
        if cx.timer_deadline(RTO) == SimTime::NEVER || (rxt && self.rto_rearm && seq == self.tcb.snd_una) {
            cx.set_timer(RTO, cx.now + self.rtt.rto());
        }
        if self.tso {
            self.last_tx = Some(cx.now);
            if !rxt {
                self.tx_times.push_back((seq + len, cx.now));
            } else if seq == self.tcb.snd_una {
                // Linux stamps a retransmitted head with its new send time.
                if let Some(f) = self.tx_times.front_mut().filter(|f| f.0 > seq) {
                    f.1 = cx.now;
                }
            }
        }
        if self.pacing || self.tso || self.batch {
            // One buffer of `skb_goal` segments leaves back to back (one segment without `tso`);
            // under pacing the wait follows the whole buffer (`fq_dequeue` paces per buffer).
            // In a batch (an MPTCP subflow, whose scheduler decides what it sends and which
            // neither defers nor paces) the buffers are those Linux would build from it, so
            // that they carry PSH as Linux's do.
            if self.skb_segs == 0 {
                self.skb_goal = if self.batch { self.gso_segs() } else { self.tso_segs() };
            }
            self.skb_segs += 1;
            self.skb_bytes += ip_len as u64;
            self.skb_payload += len;
            if self.skb_segs >= self.skb_goal {
                self.close_skb(cx);
            }
        }
    }

    /// The header of a segment we send, without payload. Every segment advertises our receive
    /// window; a SYN announces our options (RFC 9293 §3.7.1 MSS, RFC 2018 §2 SACK-permitted,
    /// RFC 7323 §2.2 window scale and §3.2 timestamps), as `syn_opt_bytes` counts them.
    fn header(&self, flags: u8, seq: u64, ack: u64, now: SimTime) -> TcpHdr {
        let syn = flags & tcp_flags::SYN != 0;
        TcpHdr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq,
            ack,
            flags,
            wnd: self.rcv_wnd,
            wscale: self.wscale,
            timestamps: self.timestamps,
            sack_perm: syn && self.sack,
            mss: if syn { self.mss_opt } else { 0 },
            ts_val: if self.timestamps { ts_now(now) } else { 0 },
            ts_ecr: if self.timestamps { self.peer_ts } else { 0 },
            ..TcpHdr::default()
        }
    }

    fn send_control(&mut self, flags: u8, seq: u64, ack: u64, size_bytes: u32, cx: &mut FlowCtx) {
        let hdr = self.header(flags, seq, ack, cx.now);
        cx.send(Outgoing { dir: Dir::Fwd, size_bytes, l4: L4::Tcp(hdr), path: 0, tfd: None, ecn: Ecn::NotEct });
    }

    fn send_syn(&mut self, cx: &mut FlowCtx) {
        self.state = State::SynSent;
        self.syn_sent_at = cx.now;
        // RFC 3168 §6.1.1: an ECN-setup SYN carries ECE and CWR.
        let ecn_setup = if self.ecn { tcp_flags::ECE | tcp_flags::CWR } else { 0 };
        self.send_control(tcp_flags::SYN | ecn_setup, 0, 0, IPV4_HEADER + TCP_HEADER + self.syn_opt_bytes, cx);
        cx.set_timer(RTO, cx.now + self.rtt.rto());
    }

    fn on_syn_ack(&mut self, h: &TcpHdr, cx: &mut FlowCtx) {
        self.state = State::Established;
        // RFC 3168 §6.1.1: an ECN-setup SYN-ACK has ECE set and CWR clear.
        self.ecn_ok = self.ecn && h.flags & (tcp_flags::ECE | tcp_flags::CWR) == tcp_flags::ECE;
        self.peer_ts = h.ts_val;
        self.rwnd = h.wnd as u64;
        cx.cancel_timer(RTO);
        if self.syn_retransmitted {
            // RFC 6298 §5.7: RTO = 3 s once data flows; no sample from an ambiguous handshake.
            // RFC 5681 §3.1: a lost SYN or SYN-ACK means an initial window of one segment.
            self.rtt.reinit(RTO_AFTER_SYN_TIMEOUT);
            self.tcb.cwnd = self.tcb.mss;
        } else {
            let r = if self.timestamps {
                Dur::from_micros(ts_now(cx.now).wrapping_sub(h.ts_ecr) as u64)
            } else {
                cx.now.since(self.syn_sent_at)
            };
            self.rtt.on_sample_at(r, self.tcb.snd_una, self.tcb.snd_max);
            self.tcb.cwnd = self.init_cwnd; // RFC 6928 §2
        }
        self.tcb.srtt = self.rtt.srtt();
        self.tcb.min_rtt = self.rtt.min_rtt();
        self.try_send(cx, false);
        if self.segs_sent == 0 {
            // Nothing to piggyback the handshake's final ACK on.
            self.send_control(tcp_flags::ACK, 1, 1, IPV4_HEADER + TCP_HEADER + self.opt_bytes, cx);
        }
    }

    /// RTT sample from an ACK that advanced `snd_una` (RFC 7323 §4.1 with timestamps, else
    /// Karn's rule on one timed segment, RFC 6298 §3).
    fn rtt_sample(&mut self, h: &TcpHdr, now: SimTime) -> Option<Dur> {
        if self.timestamps {
            return Some(Dur::from_micros(ts_now(now).wrapping_sub(h.ts_ecr) as u64));
        }
        match self.probe {
            Some((end, sent)) if h.ack >= end => {
                self.probe = None;
                Some(now.since(sent))
            }
            _ => None,
        }
    }

    /// `(FlightSize, base)` of a multiplicative decrease: RFC 5681's FlightSize (`snd_max −
    /// snd_una`) and what the `ssthresh_rule` computes ssthresh from, given RFC 6675's `pipe`.
    fn reduction_base(&self, pipe: u64) -> (u64, u64) {
        let flight = self.tcb.snd_max - self.tcb.snd_una;
        let base = match self.ssthresh_rule {
            SsthreshRule::FlightSize => flight,
            SsthreshRule::Pipe => pipe,
            SsthreshRule::Cwnd => self.tcb.cwnd,
            SsthreshRule::FlightCapped => flight.min(self.tcb.cwnd),
        };
        (flight, base)
    }

    fn enter_recovery(&mut self, cx: &mut FlowCtx) {
        let una = self.tcb.snd_una;
        self.recover = self.tcb.snd_max; // RFC 6582 §3.2 step 2; RFC 6675 §5 (4.1) RecoveryPoint
        self.tcb.in_recovery = true;
        self.partial_seen = false;
        self.fast_rxt_count += 1;
        // RFC 5681 §3.2 step 2 / RFC 6675 §5 (4.3): the segment at snd_una is lost.
        self.board.raise(Marker::Lost, (una + self.tcb.mss).min(self.tcb.snd_max));
        // RFC 6675 pipe with the head marked lost (ns-3's `BytesInFlight()` in `EnterRecovery`).
        let pipe = self.in_flight();
        // RFC 6937 §3: RecoverFS, prr_delivered, prr_out. Linux (`tcp_init_cwnd_reduction`)
        // takes the cwnd before the reduction as RecoverFS, ns-3 (`TcpPrrRecovery::EnterRecovery`)
        // the pipe.
        self.recover_fs = match self.prr_rule {
            PrrRule::Linux => self.tcb.cwnd,
            PrrRule::Rfc6937 => self.tcb.snd_max - una,
            PrrRule::Ns3 => pipe,
        }
        .max(1);
        self.prr_delivered = 0;
        self.prr_out = 0;
        if let Some(r) = self.rack.as_deref_mut() {
            // Linux `tcp_init_cwnd_reduction`: a recovery ends any TLP episode.
            r.tlp_end = None;
        }
        let (flight, base) = self.reduction_base(pipe);
        let ev = LossEvent { now: cx.now, kind: LossKind::FastRetransmit, flight_size: flight, base };
        self.cc.on_loss(&ev, &mut self.tcb); // ssthresh; cwnd = ssthresh (RFC 6675 §5 (4.2))
        self.window_reduced();
        if !self.sack && self.rate.is_none() {
            self.tcb.cwnd = self.tcb.ssthresh + 3 * self.tcb.mss; // RFC 5681 §3.2 step 3
        }
        cx.notify(TransportEvent::FastRetransmit {
            seq: una,
            cwnd_bytes: self.tcb.cwnd,
            ssthresh_bytes: self.tcb.ssthresh,
        });
    }

    /// A window reduction (loss recovery or ECE): with ECN, the next new segment carries CWR
    /// (RFC 3168 §6.1.2; Linux `tcp_init_cwnd_reduction` → `tcp_ecn_queue_cwr`), and ECE
    /// echoes of marks from the window in flight reduce no further.
    fn window_reduced(&mut self) {
        if self.ecn_ok {
            self.cwr_pending = true;
            self.cwr_until = Some(self.tcb.snd_max);
        }
    }

    /// Whether an ECE on the ACK being processed may reduce the window (RFC 3168 §6.1.2: at
    /// most once per window of data, and not during loss recovery; Linux `tcp_enter_cwr` from
    /// `TCP_CA_Open` only, which `TCP_CA_CWR` leaves once `snd_una` is above `high_seq`).
    fn ece_may_reduce(&self, h: &TcpHdr) -> bool {
        self.ecn_ok
            && h.flags & tcp_flags::ECE != 0
            && !self.tcb.in_recovery
            && self.cwr_until.is_none_or(|u| self.tcb.snd_una > u)
    }

    /// RFC 3168 §6.1.2: the sender's answer to ECE, a congestion window reduction as for a
    /// loss ([`LossKind::Ecn`] through the congestion controller: NewReno halves, CUBIC applies
    /// β), without retransmitting anything.
    fn ecn_reduce(&mut self, cx: &mut FlowCtx) {
        let pipe = self.in_flight();
        let (flight, base) = self.reduction_base(pipe);
        let ev = LossEvent { now: cx.now, kind: LossKind::Ecn, flight_size: flight, base };
        self.cc.on_loss(&ev, &mut self.tcb);
        // cwnd is never reduced below one segment (RFC 3168 §6.1.2).
        self.tcb.cwnd = self.tcb.cwnd.max(self.tcb.mss);
        self.ecn_reductions += 1;
        self.window_reduced();
    }

    /// RFC 6937 §3, on an ACK during recovery: sets cwnd to `pipe + sndcnt`, so that the sending
    /// rule `pipe + segment <= cwnd` sends `sndcnt` bytes. Proportional while pipe is above
    /// ssthresh; below it the conservative bound (PRR-CRB), plus one segment (the slow-start
    /// reduction bound, PRR-SSRB) always under `rfc6937`, else only if `safe` (Linux and RFC
    /// 9937: the ACK advanced `snd_una` and marked nothing newly lost; ns-3: it covers
    /// retransmitted data).
    fn prr_step(&mut self, delivered: u64, safe: bool) {
        self.prr_delivered += delivered;
        let pipe = self.in_flight();
        let ssthresh = self.tcb.ssthresh;
        let mut sndcnt = if pipe > ssthresh {
            // sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
            let want = (self.prr_delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128);
            (want as u64).saturating_sub(self.prr_out)
        } else {
            // limit = MAX(prr_delivered - prr_out, DeliveredData) (+ MSS for SSRB);
            // sndcnt = MIN(ssthresh - pipe, limit)
            let ssrb = self.prr_rule == PrrRule::Rfc6937 || safe;
            let limit =
                self.prr_delivered.saturating_sub(self.prr_out).max(delivered) + if ssrb { self.tcb.mss } else { 0 };
            (ssthresh - pipe).min(limit)
        };
        if self.prr_out == 0 {
            // The fast retransmit goes out whatever the arithmetic says (Linux `tcp_cwnd_reduction`).
            sndcnt = sndcnt.max(self.tcb.mss);
        }
        self.tcb.cwnd = pipe + sndcnt;
    }

    /// ns-3.44's PRR on one ACK in recovery (`TcpSocketBase::DupAck` and `ProcessAck` calling
    /// `TcpPrrRecovery::DoRecovery`): an ACK that SACKs new data is a duplicate ACK and counts one
    /// more segment as delivered while `prr_delivered` < RecoverFS; an ACK that advances
    /// `snd_una` by at least a segment (a partial ACK) runs the step again, so an ACK that does
    /// both is counted twice, as in ns-3. The bound is SSRB only when the ACK covers
    /// retransmitted data. On a partial ACK whose new head has not been retransmitted, ns-3
    /// sends one segment whatever the window (`DoRetransmit`): the return value asks for it.
    fn prr_step_ns3(&mut self, advanced: u64, delivered: u64, dup: bool, high_rxt: u64) -> bool {
        let mss = self.tcb.mss;
        if dup {
            let extra = if self.prr_delivered < self.recover_fs { mss } else { 0 };
            if delivered + extra > 0 {
                self.prr_step(delivered + extra, false);
            }
        }
        if advanced == 0 || self.tcb.snd_una >= self.recover {
            return false;
        }
        // ns-3 `m_isRetransDataAcked`: the cumulative ACK covers retransmitted data.
        let safe = self.tcb.snd_una - advanced < high_rxt;
        if delivered >= mss {
            self.prr_step(delivered, safe);
        }
        // `IsRetransmittedDataAcked(ack + SMSS)`: the segment now at the head was retransmitted.
        self.tcb.snd_una >= self.board.marker(Marker::HighRxt)
    }

    fn on_ack(&mut self, h: &TcpHdr, cx: &mut FlowCtx) {
        let now = cx.now;
        let una = self.tcb.snd_una;
        let snd_max = self.tcb.snd_max;
        if h.ack > snd_max || h.ack < una {
            return; // acknowledges data never sent, or an old ACK overtaken by a newer one
        }
        self.peer_ts = h.ts_val;
        self.rwnd = h.wnd as u64;
        let prior_in_flight = self.in_flight();
        if let Some(r) = self.rate.as_deref_mut() {
            r.begin_ack();
        }
        let prior_sacked = self.board.sacked_bytes();
        let high_rxt = self.board.marker(Marker::HighRxt);
        let mss = self.tcb.mss;
        // What this ACK marks newly lost (Linux `rs->losses`, for PRR's safe ACK).
        let linux_prr = self.prr && self.prr_rule == PrrRule::Linux;
        let prior_lost = if linux_prr { self.lost_mark() } else { 0 };

        let mut new_sacked = 0;
        // RACK (RFC 8985 §6.2 steps 1–2): the segments this ACK delivers.
        let mut delivered = rack::Delivered::default();
        let min_rtt = self.rtt.min_rtt().unwrap_or(Dur::ZERO);
        let prior_fack = self.rack.as_deref().map_or(0, |r| r.fack());
        let rate = &mut self.rate;
        if let Some(r) = self.rack.as_deref_mut() {
            for &(s, e) in &h.sack[..(h.nsack as usize).min(MAX_SACK_BLOCKS)] {
                new_sacked += self.board.update_with(s, e.min(snd_max), |a, b| {
                    if let Some(rs) = rate.as_deref_mut() {
                        rs.sacked(a, b);
                    }
                    r.q.sack(a, b, |seg| delivered.add(seg, now, prior_fack, min_rtt))
                });
            }
        } else if self.sack {
            let (rxt_sent, rxt_sacked, n) = (&self.rxt_sent, &mut self.rxt_sacked, &mut self.rxt_sacked_bytes);
            for &(s, e) in &h.sack[..(h.nsack as usize).min(MAX_SACK_BLOCKS)] {
                // RFC 6675 §4 Update(); each byte is newly SACKed once, so a retransmitted byte
                // enters `rxt_sacked` once (always empty under PipeRule::Rfc6675).
                new_sacked += self.board.update_with(s, e.min(snd_max), |a, b| {
                    if let Some(rs) = rate.as_deref_mut() {
                        rs.sacked(a, b);
                    }
                    rxt_sent.each_in(a, b, |x, y| {
                        rxt_sacked.insert(x, y, |_, _| {});
                        *n += y - x;
                    })
                });
            }
        }

        let mut force = false;
        let mut ts_rtt = None;
        // Whether this ACK's ECE is answered (decided on the ACK's snd_una, as Linux does).
        let mut ece = false;
        if h.ack > una {
            let acked = h.ack - una;
            let mut acked_segs = 0u64;
            self.tcb.snd_una = h.ack;
            self.board.advance(h.ack);
            if let Some(r) = self.rate.as_deref_mut() {
                r.acked(h.ack);
            }
            // ns-3 `TcpTxBuffer::DiscardUpTo` → `RemoveFromCounts`: acknowledged segments leave
            // the retransmitted count.
            self.rxt_sent.remove_below(h.ack, |_, _| {});
            let n = &mut self.rxt_sacked_bytes;
            self.rxt_sacked.remove_below(h.ack, |a, b| *n -= b - a);
            if let Some(r) = self.rack.as_deref_mut() {
                r.q.ack(h.ack, |seg| {
                    acked_segs += 1;
                    delivered.add(seg, now, prior_fack, min_rtt)
                });
                self.tlp_restart = true;
            }
            self.dupacks = 0; // RFC 6675 §5: a cumulative ACK resets DupAcks
            self.consecutive_rtos = 0;
            let rtt = self.rtt_sample(h, now);
            ts_rtt = rtt;
            if let Some(r) = rtt {
                self.rtt.on_sample_at(r, self.tcb.snd_una, self.tcb.snd_max);
                self.tcb.srtt = self.rtt.srtt();
                self.tcb.min_rtt = self.rtt.min_rtt();
            }
            let mut restart = true;
            ece = self.ece_may_reduce(h);
            if self.tcb.in_recovery {
                if h.ack >= self.recover {
                    // Full ACK: recovery ends.
                    self.tcb.in_recovery = false;
                    if self.prr {
                        // RFC 6937 §3: on leaving recovery, cwnd = ssthresh.
                        self.tcb.cwnd = self.tcb.ssthresh;
                    }
                    if !self.sack && self.rate.is_none() {
                        // RFC 6582 §3.2 step 6, option (1): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS).
                        let flight = self.tcb.snd_max - self.tcb.snd_una;
                        self.tcb.cwnd = self.tcb.ssthresh.min(flight.max(mss) + mss);
                    }
                } else if !self.sack {
                    // RFC 6582 §3.2 step 5, partial ACK: retransmit the first unacknowledged
                    // segment, deflate cwnd by the data acked, add back one SMSS if >= SMSS acked.
                    self.board.raise(Marker::Lost, (h.ack + mss).min(self.tcb.snd_max));
                    let back = if acked >= mss { mss } else { 0 };
                    if self.rate.is_none() {
                        self.tcb.cwnd = (self.tcb.cwnd.saturating_sub(acked) + back).max(mss);
                    }
                    force = true;
                    // Reset the timer only on the first partial ACK ("Impatient", RFC 6582 §4).
                    restart = !self.partial_seen;
                    self.partial_seen = true;
                }
            } else if ece {
                // The window is reduced below (Linux `tcp_cong_control`: no increase on an ACK
                // that enters CWR).
            } else if self.coupled_ca && self.tcb.cwnd >= self.tcb.ssthresh {
                // As the subflow's own controller would (NewReno's `cwnd_limited` check, RFC
                // 7661 §4.2), an application- or connection-limited subflow does not grow.
                if self.window_in_use() {
                    self.ca_acked.0 += acked;
                    self.ca_acked.1 += 1;
                }
            } else {
                let ca_rtt = delivered.ca_rtt().or(rtt);
                let ack = AckSample {
                    now,
                    acked_bytes: acked,
                    acked_segs: if self.rack.is_some() { acked_segs } else { acked.div_ceil(mss) },
                    rtt,
                    ca_rtt,
                    prior_in_flight,
                    cwnd_limited: self.window_in_use(),
                };
                self.cc.on_ack(&ack, &mut self.tcb);
            }
            // RFC 6298 §5.2 / §5.3.
            if self.tcb.snd_una == self.tcb.snd_max {
                cx.cancel_timer(RTO);
            } else if restart {
                cx.set_timer(RTO, now + self.rtt.rto());
            }
            cx.notify(TransportEvent::Acked { total_bytes: self.tcb.snd_una - 1 });
        } else if h.payload == 0 && h.flags & tcp_flags::SYN == 0 && snd_max > una && (!self.sack || new_sacked > 0) {
            // A duplicate ACK (RFC 5681 §2; with SACK, RFC 6675 §2: one that SACKs new data).
            ece = self.ece_may_reduce(h);
            self.dupacks += 1;
            if let Some(r) = self.rate.as_deref_mut().filter(|_| !self.sack) {
                r.reno_dupack();
            } else if self.tcb.in_recovery && !self.sack {
                self.tcb.cwnd += mss; // RFC 5681 §3.2 step 4: inflate for the segment that left
            }
        }

        if self.rack.is_some() {
            self.rack_on_ack(h, una, new_sacked, &delivered, cx);
        }
        if !self.tcb.in_recovery && self.tcb.snd_una < self.tcb.snd_max {
            // RFC 5681 §3.2 (third duplicate ACK) or RFC 6675 §5 step 2 (IsLost(HighACK + 1));
            // under RACK, once it has marked a segment lost (Linux `tcp_time_to_recover`).
            let lost = match &self.rack {
                Some(r) => r.q.lost_bytes() > 0,
                None => self.dupacks >= DUPTHRESH || (self.sack && self.loss_frontier().0 > self.tcb.snd_una),
            };
            // RFC 6582 §3.2 step 2 / RFC 6675 §5.1: not before the ACK covers `recover`.
            if lost && self.tcb.snd_una >= self.recover {
                self.enter_recovery(cx);
                force = true;
            }
        }
        if ece && !self.tcb.in_recovery {
            // A loss detected on the same ACK takes precedence (its recovery reduces once).
            self.ecn_reduce(cx);
        }
        if self.prr && self.tcb.in_recovery {
            // RFC 6937 §3: DeliveredData = change in snd_una + change in SACKed bytes.
            let delivered = (h.ack - una + self.board.sacked_bytes()).saturating_sub(prior_sacked);
            match self.prr_rule {
                // Linux `tcp_cwnd_reduction`: nothing delivered, nothing to do; the extra
                // segment only on a safe ACK (FLAG_SND_UNA_ADVANCED && !newly_lost).
                PrrRule::Linux => {
                    if delivered > 0 {
                        let safe = h.ack > una && !self.newly_lost(prior_lost);
                        self.prr_step(delivered, safe);
                    }
                }
                PrrRule::Rfc6937 => self.prr_step(delivered, false),
                PrrRule::Ns3 => {
                    if self.prr_step_ns3(h.ack - una, delivered, new_sacked > 0, high_rxt) {
                        // ns-3 `DoRetransmit`: the next lost segment, else new data, outside cwnd.
                        let (lost, _) = self.loss_frontier();
                        if let Some((seq, len, rxt)) = self.next_seg(lost) {
                            self.transmit(seq, len, rxt, cx);
                            force = false;
                        }
                    }
                }
            }
        }
        self.rate_on_ack(prior_in_flight, ts_rtt, now);
        self.try_send(cx, force);
    }

    fn on_rto(&mut self, cx: &mut FlowCtx) {
        match self.state {
            State::Closed => return,
            State::SynSent => {
                // RFC 6298 §5.5–5.6 for the SYN.
                self.rtt.back_off();
                self.syn_retransmitted = true;
                self.rto_count += 1;
                self.consecutive_rtos += 1;
                cx.notify(TransportEvent::RtoFired {
                    rto_ns: self.rtt.rto().as_nanos(),
                    backoff: self.consecutive_rtos,
                    cwnd_bytes: self.tcb.cwnd,
                    ssthresh_bytes: self.tcb.ssthresh,
                });
                self.probe_rto(cx);
                self.send_syn(cx);
                return;
            }
            State::Established => {}
        }
        let (una, snd_max) = (self.tcb.snd_una, self.tcb.snd_max);
        if una == snd_max {
            return;
        }
        self.rto_count += 1;
        self.consecutive_rtos += 1;
        // RFC 5681 §3.1 eq. (4) uses FlightSize. With SACK, data SACKed during a long recovery
        // has left the network but still counts in `snd_max - snd_una` (up to the whole send
        // buffer), so we use RFC 6675's pipe instead, as ns-3 does (`BytesInFlight`).
        let flight = if self.sack { self.in_flight() } else { snd_max - una };
        let (prior_cwnd, prior_ssthresh) = (self.tcb.cwnd, self.tcb.ssthresh);
        if self.consecutive_rtos == 1 {
            // RFC 5681 §3.1 eq. (4); on repeated timeouts ssthresh is held (same section's note).
            self.tcb.ssthresh = (flight / 2).max(2 * self.tcb.mss);
        }
        self.tcb.cwnd = self.tcb.mss; // RFC 5681 §3.1: loss window LW = 1 SMSS
        let ev = RtoEvent {
            now: cx.now,
            flight_size: flight,
            prior_cwnd,
            prior_ssthresh,
            consecutive: self.consecutive_rtos,
        };
        self.cc.on_rto(&ev, &mut self.tcb);
        self.tcb.in_recovery = false;
        self.dupacks = 0;
        // RFC 6582 §3.2 step 1 / RFC 6675 §5.1: no new fast recovery until snd_max is acked.
        self.recover = snd_max;
        // Every un-SACKed byte outstanding is now deemed lost and none retransmitted; the
        // scoreboard is kept so retransmissions skip SACKed data (RFC 6675 §5.1).
        self.board.raise(Marker::Lost, snd_max);
        self.board.reset(Marker::HighRxt);
        // ns-3 `TcpTxBuffer::ResetSentList` clears every segment's retransmitted flag.
        self.rxt_sent.clear();
        self.rxt_sacked.clear();
        self.rxt_sacked_bytes = 0;
        if self.rack.is_some() {
            // RFC 8985 §6.3: the head is lost, and whatever RACK's clock says is; the window is
            // that of a recovery (0 until reordering has been seen).
            let reo = self.rack_reo_wnd(true);
            self.rack.as_deref_mut().expect("rack on").mark_on_rto(cx.now, reo);
        }
        self.rate_on_rto();
        self.probe = None; // Karn
        self.rtt.back_off(); // RFC 6298 §5.5
        cx.notify(TransportEvent::RtoFired {
            rto_ns: self.rtt.rto().as_nanos(),
            backoff: self.consecutive_rtos,
            cwnd_bytes: self.tcb.cwnd,
            ssthresh_bytes: self.tcb.ssthresh,
        });
        self.probe_rto(cx);
        if let Some(o) = self.overhead.as_deref_mut() {
            // ns-2 `TcpAgent::timeout` sends through `send_much(0, …)`: the retransmission waits
            // for the overhead like any send, then leaves forced.
            if let Some(at) = o.defer_forced(cx.now) {
                cx.set_timer(OVERHEAD, at);
            }
        } else {
            self.try_send(cx, true); // §5.4: retransmit the earliest unacknowledged segment
        }
        cx.set_timer(RTO, cx.now + self.rtt.rto()); // §5.6
    }

    /// RFC 8985 §6.2 step 4: the reordering window now.
    fn rack_reo_wnd(&self, in_recovery: bool) -> Dur {
        let r = self.rack.as_deref().expect("rack on");
        let min_rtt = self.rtt.min_rtt().unwrap_or(Dur::ZERO);
        let srtt = self.rtt.srtt().unwrap_or(min_rtt);
        r.reo_wnd(in_recovery, DUPTHRESH, min_rtt, srtt)
    }

    /// Whether a fast recovery or a timeout recovery is under way.
    fn recovering(&self) -> bool {
        self.tcb.in_recovery || self.tcb.snd_una < self.recover
    }

    /// RACK's part of an ACK (RFC 8985 §6.2 steps 3–5, §7.4): RACK's state from the delivered
    /// segments, loss detection and the reorder timer, and the end of a TLP episode.
    fn rack_on_ack(&mut self, h: &TcpHdr, prior_una: u64, new_sacked: u64, d: &rack::Delivered, cx: &mut FlowCtx) {
        let reo = self.rack_reo_wnd(self.recovering());
        let r = self.rack.as_deref_mut().expect("rack on");
        r.update(d);
        if r.advanced() {
            match r.detect_loss(cx.now, reo).0 {
                Some(wait) => cx.set_timer(RACK_REO, cx.now + wait),
                None => cx.cancel_timer(RACK_REO),
            }
        }
        // RFC 8985 §7.4, as Linux `tcp_process_tlp_ack` (without DSACK).
        if let Some(end) = r.tlp_end {
            if h.ack >= end {
                if !r.tlp_rxt || (h.ack == prior_una && new_sacked == 0) {
                    // The probe was new data, or a pure duplicate ACK says both copies arrived.
                    r.tlp_end = None;
                } else if h.ack > end {
                    // The probe repaired a loss: the congestion response RACK would have made.
                    r.tlp_end = None;
                    r.tlp_recoveries += 1;
                    if !self.tcb.in_recovery {
                        let (flight, base) = self.reduction_base(self.in_flight());
                        let ev = LossEvent { now: cx.now, kind: LossKind::FastRetransmit, flight_size: flight, base };
                        self.cc.on_loss(&ev, &mut self.tcb);
                    }
                }
            }
        }
    }

    /// The RACK reorder timer fired (RFC 8985 §6.2; Linux `tcp_rack_reo_timeout`): mark what is
    /// now lost, start a recovery if none is under way, and repair.
    fn on_rack_reo(&mut self, cx: &mut FlowCtx) {
        if self.state != State::Established || self.tcb.snd_una == self.tcb.snd_max {
            return;
        }
        let reo = self.rack_reo_wnd(self.recovering());
        let r = self.rack.as_deref_mut().expect("rack on");
        let (wait, marked) = r.detect_loss(cx.now, reo);
        if let Some(w) = wait {
            cx.set_timer(RACK_REO, cx.now + w);
        }
        let mut force = false;
        if marked && !self.tcb.in_recovery && self.tcb.snd_una >= self.recover {
            self.enter_recovery(cx);
            force = true;
        }
        if self.prr && self.tcb.in_recovery && marked {
            match self.prr_rule {
                // `tcp_rack_reo_timeout`: tcp_cwnd_reduction(sk, 1, 0, 0), and only when
                // the timer starts the recovery.
                PrrRule::Linux if force => self.prr_step(self.tcb.mss, false),
                PrrRule::Linux => {}
                _ => self.prr_step(0, false),
            }
        }
        self.try_send(cx, force);
    }

    /// The probe timer fired (RFC 8985 §7.3): send one segment, new data if the window allows,
    /// else the last segment again, whatever cwnd says (Linux `tcp_send_loss_probe`); then re-arm
    /// the RTO.
    fn on_tlp(&mut self, cx: &mut FlowCtx) {
        let r = self.rack.as_deref().expect("rack on");
        if self.state != State::Established
            || self.tcb.snd_una == self.tcb.snd_max
            || self.recovering()
            || r.tlp_end.is_some()
        {
            return;
        }
        let last = r.q.last();
        let rxt = match self.next_new() {
            Some((seq, len)) => {
                self.transmit(seq, len, false, cx);
                false
            }
            None => match last {
                Some(s) if !s.sacked => {
                    self.transmit(s.seq, s.len(), true, cx);
                    true
                }
                _ => return,
            },
        };
        let r = self.rack.as_deref_mut().expect("rack on");
        r.tlp_end = Some(self.tcb.snd_max);
        r.tlp_rxt = rxt;
        r.tlp_probes += 1;
        cx.set_timer(RTO, cx.now + self.rtt.rto());
    }

    /// Arms or cancels the probe timer after an event (RFC 8985 §7.2): only in the open state
    /// with data in flight, no probe outstanding and no reorder timer pending; restarted when
    /// new data went out or the cumulative ACK advanced; never later than the RTO.
    fn rack_timers(&mut self, cx: &mut FlowCtx) {
        let Some(r) = self.rack.as_deref() else { return };
        let restart = std::mem::take(&mut self.tlp_restart);
        let eligible = self.state == State::Established
            && self.tcb.snd_max > self.tcb.snd_una
            && !self.recovering()
            && r.tlp_end.is_none()
            && cx.timer_deadline(RACK_REO) == SimTime::NEVER;
        if !eligible {
            cx.cancel_timer(TLP);
            return;
        }
        if !restart && cx.timer_deadline(TLP) != SimTime::NEVER {
            return;
        }
        let one = self.tcb.snd_max - self.tcb.snd_una <= self.tcb.mss;
        let at = (cx.now + rack::Rack::pto(self.rtt.srtt(), one)).min(cx.timer_deadline(RTO));
        cx.set_timer(TLP, at);
    }

    /// TLP probes sent and TLP episodes that ended with a congestion response (0, 0 without RACK).
    pub fn tlp_counts(&self) -> (u64, u64) {
        self.rack.as_deref().map_or((0, 0), |r| (r.tlp_probes, r.tlp_recoveries))
    }

    /// Whether RACK has seen reordering (false without RACK).
    pub fn reordering_seen(&self) -> bool {
        self.rack.as_deref().is_some_and(|r| r.reordering_seen())
    }

    fn notify_cwnd(&mut self, cx: &mut FlowCtx) {
        let now = (self.tcb.cwnd, self.tcb.ssthresh);
        if now != self.notified {
            self.notified = now;
            cx.notify(TransportEvent::CwndChanged { cwnd_bytes: now.0, ssthresh_bytes: now.1 });
            cx.probe(ProbeEvent::Cwnd { flow: cx.flow, end: cx.end(), cwnd_bytes: now.0, ssthresh_bytes: now.1 });
        }
        if cx.probing(ProbeKind::TcpState) {
            self.probe_state(cx);
        }
        if cx.probing(ProbeKind::Bbr) {
            self.probe_cc(cx);
        }
    }
}

impl Endpoint for TcpSender {
    fn service(&self) -> Service {
        Service::Stream
    }

    fn write(&mut self, bytes: u64, cx: &mut FlowCtx) {
        if self.state == State::Established && self.write_end == self.tcb.snd_max {
            // New data after the queue ran dry (Linux `tcp_skb_entail` of a new buffer).
            self.restart_after_idle(cx.now);
        }
        self.rate_check_app_limited();
        self.write_end = self.write_end.saturating_add(bytes);
        match self.state {
            State::Closed if self.passive => {}
            State::Closed => self.send_syn(cx),
            State::SynSent => {}
            State::Established => self.try_send(cx, false),
        }
        self.rack_timers(cx);
        self.notify_cwnd(cx);
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let Some(h) = pkt.tcp() else { return };
        match self.state {
            State::SynSent => {
                if h.flags & (tcp_flags::SYN | tcp_flags::ACK) == tcp_flags::SYN | tcp_flags::ACK && h.ack == 1 {
                    self.on_syn_ack(h, cx);
                }
            }
            State::Established => {
                if h.flags & tcp_flags::SYN == 0 {
                    self.on_ack(h, cx);
                }
            }
            State::Closed => {}
        }
        self.rack_timers(cx);
        self.notify_cwnd(cx);
    }

    fn info(&self) -> Option<SocketInfo> {
        Some(TcpSender::info(self))
    }

    /// The RTO timer, and with RACK the reorder and probe timers (and the pacing or overhead
    /// timer when on).
    fn timer_kinds(&self) -> u8 {
        if self.overhead.is_some() {
            OVERHEAD.0 + 1
        } else if self.pacing {
            PACE.0 + 1
        } else if self.rack.is_some() {
            4
        } else {
            1
        }
    }

    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        match kind {
            RTO => self.on_rto(cx),
            RACK_REO => self.on_rack_reo(cx),
            TLP => self.on_tlp(cx),
            PACE => self.try_send(cx, false),
            OVERHEAD => self.on_overhead(cx),
            _ => return,
        }
        self.rack_timers(cx);
        self.notify_cwnd(cx);
    }

    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("segments_sent", self.segs_sent as f64),
            ("bytes_sent", self.bytes_sent as f64),
            ("retransmitted_segments", self.rxt_segs as f64),
            ("retransmitted_bytes", self.rxt_bytes as f64),
            ("rto_count", self.rto_count as f64),
            ("fast_retransmits", self.fast_rxt_count as f64),
            ("acked_bytes", self.acked_bytes() as f64),
            ("cwnd_bytes", self.tcb.cwnd as f64),
            ("srtt_s", self.rtt.srtt().map_or(f64::NAN, |d| d.as_secs_f64())),
            ("min_rtt_s", self.rtt.min_rtt().map_or(f64::NAN, |d| d.as_secs_f64())),
            ("mean_rtt_s", self.rtt.mean_rtt().map_or(f64::NAN, |d| d.as_secs_f64())),
            ("rto_s", self.rtt.rto().as_secs_f64()),
        ]
    }
}

/// The receiving endpoint (at the flow's destination).
#[derive(Debug)]
pub struct TcpReceiver {
    /// Our port (the flow's destination port) and the peer's.
    port: u16,
    peer_port: u16,
    sack: bool,
    timestamps: bool,
    opt_bytes: u32,
    syn_opt_bytes: u32,
    delayed_ack: bool,
    delack_timeout: Dur,
    rcv_buf: u64,
    /// Our window-scale shift (RFC 7323 §2.3), from `rcv_buf`.
    wscale: u8,
    /// Receive-buffer autotuning (`rcv_autotune`): the window's state; `None`: the window is
    /// `rcv_buf` throughout.
    tune: Option<Box<rcvbuf::RcvBuf>>,
    /// Bytes held out of order (with `rcv_autotune`, they occupy the buffer).
    ooo_bytes: u64,
    mss: u64,
    syn_seen: bool,
    rcv_nxt: u64,
    /// Out-of-order data held above `rcv_nxt`.
    ooo: RangeSet,
    /// A byte of each of the most recently reported SACK blocks, newest first (RFC 2018 §4).
    recent: [u64; MAX_SACK_BLOCKS],
    n_recent: usize,
    /// In-order bytes received since the last ACK (delayed ACKs).
    pending_bytes: u64,
    /// Linux's estimate of the peer's segment size and its inputs (`tcp_measure_rcv_mss`): the
    /// largest segment size seen (`icsk_ack.rcv_mss`, at most our advertised MSS, `advmss`), the
    /// payload of the previous in-order segment when it was short (`last_seg_size`), and
    /// `ICSK_ACK_PUSHED`: a full-sized segment with PSH, or a short one, arrived since the last
    /// ACK, so the ACK goes as soon as the application has read everything (`tcp_cleanup_rbuf`).
    /// Our receiver sends no data, so it is never in Linux's ping-pong (interactive) mode, and
    /// `ICSK_ACK_PUSHED2`, which acts only there, has no effect.
    rcv_mss: u64,
    advmss: u64,
    last_seg_size: u64,
    pushed: bool,
    /// A full-sized segment with PSH sets `pushed` (`psh_ack`, Linux 6.6 and later).
    psh_ack: bool,
    /// Linux's delayed-ACK engine (see [`TcpConfig::quickack`]): quick ACKs left, the adaptive
    /// delayed-ACK timeout `ato`, and the arrival time of the last in-order data (`lrcvtime`;
    /// `None` before the first).
    quickack: bool,
    quick: u32,
    ato: Dur,
    lrcvtime: Option<SimTime>,
    /// SACK compression (`sack_compress`): on; the duplicate ACKs sent at once for
    /// `comp_rcv_nxt` (`dup_ack_counter`, `compressed_ack_rcv_nxt`); the SACKs held
    /// (`compressed_ack`).
    sack_compress: bool,
    comp_dup: u32,
    comp_rcv_nxt: u64,
    compressed: u32,
    /// The receiver's own RTO (`icsk_rto`), which `tcp_event_data_recv` compares with the gap
    /// since the last data: the profile's estimator fed the handshake's one RTT sample
    /// (`tcp_synack_rtt_meas`; this side sends no data, so it never gets another), the initial
    /// RTO before it. `synack_at`: when the SYN-ACK left.
    rtt: RttEstimator,
    synack_at: Option<SimTime>,
    /// RFC 7323 §4.3 `TS.Recent` and `Last.ACK.sent`.
    ts_recent: u32,
    last_ack_sent: u64,
    acks_sent: u64,
    dup_segments: u64,
    ooo_segments: u64,
    /// ECN (RFC 3168 §6.1): `ecn` accepts an ECN-setup SYN; `ecn_ok` once it did.
    ecn: bool,
    ecn_ok: bool,
    /// A CE mark arrived and no CWR since: every ACK carries ECE (§6.1.3; Linux
    /// `TCP_ECN_DEMAND_CWR`).
    ece: bool,
    /// Data segments that arrived marked CE.
    ce_segments: u64,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        let b = cfg.resolved();
        let mss = cfg.mss_for(s.mtu_bytes);
        let advmss = mss_option(mss, cfg.option_bytes()) as u64;
        TcpReceiver {
            port: s.dst_port,
            peer_port: s.src_port,
            sack: cfg.sack,
            timestamps: cfg.timestamps,
            opt_bytes: cfg.option_bytes(),
            syn_opt_bytes: syn_option_bytes(cfg),
            delayed_ack: b.delayed_ack,
            delack_timeout: b.delack_timeout,
            rcv_buf: cfg.rcv_buf_bytes(),
            wscale: window_shift(cfg.rcv_buf_bytes()),
            tune: b.rcv_autotune.then(|| {
                let max = cfg.rcv_buf_bytes();
                Box::new(rcvbuf::RcvBuf::new(cfg.rcv_buf_init_bytes(mss), max, window_shift(max), advmss, mss))
            }),
            ooo_bytes: 0,
            mss,
            syn_seen: false,
            rcv_nxt: 0,
            ooo: RangeSet::default(),
            recent: [0; MAX_SACK_BLOCKS],
            n_recent: 0,
            pending_bytes: 0,
            rcv_mss: initial_rcv_mss(advmss, cfg.rcv_buf_bytes()),
            advmss,
            last_seg_size: 0,
            pushed: false,
            psh_ack: b.psh_ack,
            quickack: b.quickack,
            quick: 0,
            ato: TCP_ATO_MIN,
            lrcvtime: None,
            // Linux's rule sits in its delayed-ACK engine and holds SACKs: with both, and SACK.
            sack_compress: cfg.sack && b.quickack && b.delayed_ack && b.sack_compress,
            comp_dup: 0,
            comp_rcv_nxt: 0,
            compressed: 0,
            rtt: RttEstimator::new(b.initial_rto, b.min_rto, b.max_rto).with_rule(b.rto_rule),
            synack_at: None,
            ts_recent: 0,
            last_ack_sent: 0,
            acks_sent: 0,
            dup_segments: 0,
            ooo_segments: 0,
            ecn: cfg.ecn,
            ecn_ok: false,
            ece: false,
            ce_segments: 0,
        }
    }

    /// The receiving half of the active end of a full-duplex socket: ports swapped (it receives
    /// on the flow's source port).
    pub(crate) fn new_active(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        let swapped = EndpointSetup { src_port: s.dst_port, dst_port: s.src_port, ..s.clone() };
        TcpReceiver::new(cfg, &swapped)
    }

    /// The peer's SYN-ACK reached the active end: its sequence space starts (the receiving half
    /// of the end that sent the SYN, which sends no SYN-ACK of its own).
    pub(crate) fn accept_syn_ack(&mut self, h: &TcpHdr) {
        if !self.syn_seen {
            self.syn_seen = true;
            self.rcv_nxt = h.seq + 1;
            self.last_ack_sent = self.rcv_nxt;
            self.ts_recent = h.ts_val;
        }
    }

    /// Whether the sequence space has started (SYN seen).
    pub(crate) fn synced(&self) -> bool {
        self.syn_seen
    }

    /// Whether any data arrived.
    pub(crate) fn got_data(&self) -> bool {
        self.rcv_nxt > 1
    }

    /// A data segment of the other half carried our acknowledgment of everything up to
    /// `rcv_nxt` (RFC 9293 §3.10.7.4: the ACK rides on outgoing data), so a delayed ACK that
    /// was pending is no longer needed (RFC 1122 §4.2.3.2).
    pub(crate) fn ack_carried(&mut self, cx: &mut FlowCtx) {
        self.last_ack_sent = self.rcv_nxt;
        self.pending_bytes = 0;
        cx.cancel_timer(DELACK);
    }

    /// Next expected sequence number.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Number of ACK segments sent (SYN-ACKs included).
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }
    /// Out-of-order byte ranges currently held.
    pub fn ooo_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ooo.iter()
    }

    /// The receive-buffer autotuning state, with `rcv_autotune`.
    pub fn autotune(&self) -> Option<&rcvbuf::RcvBuf> {
        self.tune.as_deref()
    }

    /// The window for a segment we send now, bytes. Without autotuning the whole buffer, since
    /// the application reads in-order data at once and out-of-order data sits inside the window
    /// it was sent into. With it, Linux's `tcp_select_window` (which records what was offered):
    /// on a SYN-ACK the initial window, unscaled.
    pub(crate) fn advertise(&mut self, syn: bool) -> u32 {
        let Some(t) = self.tune.as_deref_mut() else {
            return self.rcv_buf.min(u32::MAX as u64) as u32;
        };
        if syn {
            return t.rcv_wnd() as u32;
        }
        let (w, low) = t.select(self.rcv_nxt, self.ooo_bytes);
        if low {
            // `__tcp_select_window`: the buffer is filling up, quick-ACK mode ends.
            self.quick = 0;
        }
        w
    }

    fn send_ack(&mut self, mut flags: u8, cx: &mut FlowCtx) {
        let syn = flags & tcp_flags::SYN != 0;
        // RFC 3168 §6.1.1: the SYN-ACK accepting ECN has ECE set; §6.1.3: later ACKs echo CE.
        if (syn && self.ecn_ok) || (!syn && self.ece) {
            flags |= tcp_flags::ECE;
        }
        let mut hdr = TcpHdr {
            src_port: self.port,
            dst_port: self.peer_port,
            seq: if syn { 0 } else { 1 },
            ack: self.rcv_nxt,
            flags,
            wnd: self.advertise(syn),
            // RFC 7323 §2.3: announced on the SYN-ACK, applied to the field from then on.
            wscale: self.wscale,
            timestamps: self.timestamps,
            sack_perm: syn && self.sack,
            mss: if syn { mss_option(self.mss, self.opt_bytes) } else { 0 },
            payload: 0,
            ts_val: if self.timestamps { ts_now(cx.now) } else { 0 },
            ts_ecr: if self.timestamps { self.ts_recent } else { 0 },
            ..TcpHdr::default()
        };
        let mut size = IPV4_HEADER + TCP_HEADER;
        if syn {
            size += self.syn_opt_bytes;
        } else {
            size += self.opt_bytes;
            if self.sack && !self.ooo.is_empty() {
                // RFC 2018 §4: the first block holds the most recently received segment; the
                // others repeat the most recently reported blocks.
                let mut n = 0;
                for i in 0..self.n_recent {
                    if let Some(r) = self.ooo.containing(self.recent[i]) {
                        if !hdr.sack[..n].contains(&r) {
                            hdr.sack[n] = r;
                            n += 1;
                        }
                    }
                }
                for (i, b) in hdr.sack[..n].iter().enumerate() {
                    self.recent[i] = b.0;
                }
                self.n_recent = n;
                hdr.nsack = n as u8;
                // Kind + length (2) + 8 per block, padded with NOPs to a multiple of 4.
                size += (2 + 8 * n as u32).div_ceil(4) * 4;
            }
        }
        // RFC 3168 §6.1.4: pure ACKs are sent Not-ECT.
        cx.send(Outgoing { dir: Dir::Rev, size_bytes: size, l4: L4::Tcp(hdr), path: 0, tfd: None, ecn: Ecn::NotEct });
        if self.quick > 0 && self.rcv_nxt > self.last_ack_sent {
            // Linux `tcp_dec_quickack_mode`: one quick ACK used per ACK of new data.
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = TCP_ATO_MIN;
            }
        }
        self.last_ack_sent = self.rcv_nxt;
        self.pending_bytes = 0;
        // `tcp_event_ack_sent` → `inet_csk_clear_xmit_timer(ICSK_TIME_DACK)`: `icsk_ack.pending`,
        // PUSHED included, is cleared.
        self.pushed = false;
        self.acks_sent += 1;
        cx.cancel_timer(DELACK);
        // `tcp_event_ack_sent`: any ACK carries the held SACKs (the timer was cancelled above).
        self.compressed = 0;
    }

    fn on_data(&mut self, h: &TcpHdr, cx: &mut FlowCtx) {
        let (s, e) = (h.seq, h.seq + h.payload as u64);
        // RFC 7323 §4.3: TS.Recent from segments that cover Last.ACK.sent.
        if self.timestamps && s <= self.last_ack_sent && (h.ts_val.wrapping_sub(self.ts_recent) as i32) >= 0 {
            self.ts_recent = h.ts_val;
        }
        let right_edge = match self.tune.as_deref() {
            Some(t) => t.right_edge(),
            None => self.rcv_nxt + self.rcv_buf,
        };
        if e > right_edge {
            // Beyond the advertised window: dropped (a correct sender never does this).
            self.send_ack(tcp_flags::ACK, cx);
            return;
        }
        if e <= self.rcv_nxt {
            // Entirely old: re-ACK at once (RFC 9293 §3.10.7.4; RFC 5681 §4.2). Linux also
            // enters quick-ACK mode ("A retransmit, 2nd most common case", `tcp_data_queue`).
            self.dup_segments += 1;
            if self.quickack {
                self.incr_quickack();
                self.ato = TCP_ATO_MIN;
            }
            self.send_ack(tcp_flags::ACK, cx);
            return;
        }
        if let Some(t) = self.tune.as_deref_mut() {
            // Linux `tcp_init_transfer` on the segment that establishes the connection, then
            // `tcp_rcv_rtt_measure_ts` on every acceptable data segment.
            t.on_established(cx.now);
            if self.timestamps {
                t.rtt_measure_ts(h.ts_ecr, ts_now(cx.now), e - s);
            }
        }
        if s > self.rcv_nxt {
            // Out of order: keep it, ACK at once (RFC 5681 §4.2) with SACK blocks, or under
            // SACK compression hold the ACK (`ofo_ack`).
            self.ooo_segments += 1;
            if self.compressed > 0
                && self.ooo.len() >= LINUX_NUM_SACKS
                && !self.ooo.iter().any(|(a, b)| a <= e && s <= b)
            {
                // `tcp_sack_new_ofo_skb` → `tcp_sack_compress_send_ack`: a fifth block would
                // push the oldest out of the receiver's four, so the held SACKs go first.
                self.send_ack(tcp_flags::ACK, cx);
            }
            let held = self.ooo_bytes;
            self.ooo_bytes += self.ooo.insert(s, e, |_, _| {});
            if let Some(t) = self.tune.as_deref_mut() {
                // `tcp_data_queue_ofo` grows the window for SACK flows only ("do not grow
                // window to force DUPACK and trigger fast retransmit"), before the segment is
                // charged to the buffer; then, for every flow, `tcp_rcvbuf_grow` makes room for
                // the out-of-order span.
                if self.sack {
                    t.grow(e - s, held);
                }
                let span = self.ooo.span_from(self.rcv_nxt);
                t.ofo_grow(span);
            }
            // RFC 2018 §4 (Linux `tcp_sack_new_ofo_skb`): the block holding this segment moves to
            // the front; the others keep their order, one entry per block, so that segments
            // that arrive while SACKs are held do not push an older block out of the list.
            let mut kept = [s; MAX_SACK_BLOCKS];
            let mut blocks = [self.ooo.containing(s); MAX_SACK_BLOCKS];
            let mut n = 1;
            for &r in &self.recent[..self.n_recent] {
                let b = self.ooo.containing(r);
                if n < MAX_SACK_BLOCKS && b.is_some() && !blocks[..n].contains(&b) {
                    (kept[n], blocks[n]) = (r, b);
                    n += 1;
                }
            }
            self.recent = kept;
            self.n_recent = n;
            self.ofo_ack(cx);
            return;
        }
        let had_gap = !self.ooo.is_empty();
        // The buffer holds the out-of-order data and this segment until the application reads.
        let held = self.ooo_bytes + (e - s);
        self.rcv_nxt = e;
        let mut removed = 0;
        while let Some((a, b)) = self.ooo.first() {
            if a > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(b);
            self.ooo.remove_below(self.rcv_nxt, |a, b| removed += b - a);
        }
        self.ooo_bytes -= removed;
        cx.notify(TransportEvent::Delivered { total_bytes: self.rcv_nxt - 1 });
        self.measure_rcv_mss(e - s, h.flags);
        if let Some(t) = self.tune.as_deref_mut() {
            // `tcp_event_data_recv`: `tcp_measure_rcv_mss`, the window-based RTT probe, then
            // `tcp_grow_window`, whose growth asks for a quick ACK in Linux's delayed-ACK engine.
            t.measure_rcv_mss(e - s);
            if !self.timestamps {
                t.rtt_measure(self.rcv_nxt, cx.now);
            }
            if t.grow(e - s, held) && self.delayed_ack && self.quickack {
                // `icsk_ack.quick |= 1`: an even count gains one, so that while the window grows
                // the ACK it asks for does not use up the quick ACKs left.
                self.quick |= 1;
            }
        }
        self.ack_in_order(had_gap, e - s, cx);
        // The application reads at once: `tcp_rcv_space_adjust`, then `tcp_cleanup_rbuf`. An
        // ACK still scheduled goes now if PUSHED is set and the read emptied the buffer (no
        // out-of-order data charged to it, `sk_rmem_alloc == 0`); else the window update may
        // send one.
        let pushed_ack =
            self.delayed_ack && self.quickack && self.pushed && self.pending_bytes > 0 && self.ooo.is_empty();
        if let Some(t) = self.tune.as_deref_mut() {
            let span = self.ooo.span_from(self.rcv_nxt);
            t.space_adjust(self.rcv_nxt, span, cx.now);
            if pushed_ack || t.update_due(self.rcv_nxt, self.ooo_bytes) {
                self.send_ack(tcp_flags::ACK, cx);
            }
        } else if pushed_ack {
            self.send_ack(tcp_flags::ACK, cx);
        }
    }

    /// Linux `tcp_measure_rcv_mss` (6.6 and later) on an in-order segment of `len` payload bytes
    /// with header flags `flags`: a segment at least `rcv_mss` long raises `rcv_mss` (to at most
    /// `advmss`) and, with PSH, sets PUSHED ("tcp: fix delayed ACKs for MSS boundary condition";
    /// not before 6.6, nor with `psh_ack = false`);
    /// a shorter one sets PUSHED unless it is the second in a row of one size that a sender of
    /// small segments would send (then `rcv_mss` becomes that size). The thresholds count the
    /// TCP header with its options, as Linux's do.
    fn measure_rcv_mss(&mut self, len: u64, flags: u8) {
        let lss = std::mem::take(&mut self.last_seg_size);
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.advmss);
            if self.psh_ack && flags & tcp_flags::PSH != 0 {
                self.pushed = true;
            }
            return;
        }
        let with_header = len + (TCP_HEADER + self.opt_bytes) as u64;
        let remnant = tcp_flags::FIN | tcp_flags::SYN | tcp_flags::PSH; // and URG, never set
        if with_header >= TCP_MSS_DEFAULT + TCP_HEADER as u64
            || (with_header >= TCP_MIN_MSS + TCP_HEADER as u64 && flags & remnant == 0)
        {
            self.last_seg_size = len;
            if len == lss {
                self.rcv_mss = len;
                return;
            }
        }
        self.pushed = true;
    }

    /// The ACK decision for in-order data of `len` bytes (`had_gap`: it filled a gap).
    fn ack_in_order(&mut self, had_gap: bool, len: u64, cx: &mut FlowCtx) {
        if self.delayed_ack && self.quickack {
            self.linux_delack(had_gap, len, cx);
            return;
        }
        if had_gap || !self.delayed_ack {
            // RFC 5681 §4.2: ACK at once when a segment fills (part of) a gap.
            self.send_ack(tcp_flags::ACK, cx);
            return;
        }
        // RFC 5681 §4.2 / RFC 1122 §4.2.3.2: ACK at least every second full-sized segment, and
        // within `delack_timeout` of the first unacknowledged one.
        self.pending_bytes += len;
        if self.pending_bytes >= 2 * self.mss {
            self.send_ack(tcp_flags::ACK, cx);
        } else if cx.timer_deadline(DELACK) == SimTime::NEVER {
            cx.set_timer(DELACK, cx.now + self.delack_timeout);
        }
    }
}

impl TcpReceiver {
    /// RFC 3168 §6.1.3 on an arriving data segment, before it is acknowledged: CWR stops the
    /// echo (Linux `tcp_ecn_accept_cwr`), then a CE mark starts it again (`__tcp_ecn_check_ce`;
    /// a new congestion episode also sends the next ACKs at once, Linux's quick-ACK mode).
    fn ecn_check(&mut self, pkt: &PacketData, h: &TcpHdr) {
        if h.flags & tcp_flags::CWR != 0 {
            self.ece = false;
        }
        if pkt.ip.ecn == Ecn::Ce {
            self.ce_segments += 1;
            if !self.ece && self.quickack {
                self.quick = self.quick.max(2);
                self.ato = TCP_ATO_MIN;
            }
            self.ece = true;
        }
    }

    /// Data segments that arrived marked CE (RFC 3168).
    pub fn ce_segments(&self) -> u64 {
        self.ce_segments
    }

    /// The ACK decision for an out-of-order segment (Linux `__tcp_ack_snd_check` with the
    /// out-of-order queue non-empty). Without SACK compression: at once. With it: at once in
    /// quick-ACK mode, when more than one full segment of in-order data is unacknowledged, for
    /// the first three duplicates of one `rcv_nxt`, and when `tcp_comp_sack_nr` are held;
    /// otherwise held, and the compressed-ACK timer started if it is not running.
    fn ofo_ack(&mut self, cx: &mut FlowCtx) {
        if !self.sack_compress || self.quick > 0 || self.pending_bytes > self.rcv_mss || self.compressed >= COMP_SACK_NR
        {
            self.send_ack(tcp_flags::ACK, cx);
            return;
        }
        if self.comp_rcv_nxt != self.rcv_nxt {
            self.comp_rcv_nxt = self.rcv_nxt;
            self.comp_dup = 0;
        }
        if self.comp_dup < TCP_FASTRETRANS_THRESH {
            self.comp_dup += 1;
            self.send_ack(tcp_flags::ACK, cx);
            return;
        }
        self.compressed += 1;
        if cx.timer_deadline(DELACK) == SimTime::NEVER {
            debug_assert_eq!(self.pending_bytes, 0, "a delayed ACK waits beside held SACKs");
            cx.set_timer(DELACK, cx.now + self.comp_sack_delay() + COMP_SACK_SLACK);
        }
    }

    /// The compressed-ACK timer's delay: 5 % of the receiver's RTT estimate (`rcv_rtt_est`, or
    /// the SRTT of its handshake sample when smaller), at most `tcp_comp_sack_delay_ns`, in
    /// Linux's arithmetic (µs × 8, so `rtt × 125 / 20` ns). No estimate yet: 0.
    fn comp_sack_delay(&self) -> Dur {
        let mut rtt_us8 = self.tune.as_deref().map_or(0, |t| t.rcv_rtt().map_or(0, |d| d.as_nanos() / 1000 * 8));
        if let Some(srtt) = self.rtt.srtt() {
            let srtt_us8 = srtt.as_nanos() / 1000 * 8;
            if srtt_us8 > 0 && srtt_us8 < rtt_us8 {
                rtt_us8 = srtt_us8;
            }
        }
        Dur::from_nanos(rtt_us8 * 125 / 20).min(COMP_SACK_DELAY)
    }

    /// Linux `tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)`: up to 16 quick ACKs, at most half the
    /// receive window in segments (at least 2).
    fn incr_quickack(&mut self) {
        let half_wnd_segs = match self.tune.as_deref() {
            // `tcp_incr_quickack` counts the window offered now (`rcv_wnd`).
            Some(t) => t.quickack_budget(),
            None => self.rcv_buf / (2 * self.mss),
        };
        let n = (half_wnd_segs.min(u32::MAX as u64) as u32).clamp(2, TCP_MAX_QUICKACKS);
        self.quick = self.quick.max(n);
    }

    /// In-order data under Linux's delayed-ACK engine: `tcp_event_data_recv` (the first data
    /// starts quick-ACK mode; `ato` follows the arrival spacing) then `__tcp_ack_snd_check`
    /// (ACK now in quick-ACK mode, after a gap was filled, or once more than one full segment
    /// is unacknowledged; else within `ato`).
    fn linux_delack(&mut self, had_gap: bool, len: u64, cx: &mut FlowCtx) {
        let now = cx.now;
        match self.lrcvtime {
            None => {
                // "The _first_ data packet received, initialize delayed ACK engine."
                self.incr_quickack();
                self.ato = TCP_ATO_MIN;
            }
            Some(last) => {
                let m = now.since(last);
                if m <= Dur(TCP_ATO_MIN.as_nanos() / 2) {
                    self.ato = Dur(self.ato.as_nanos() / 2) + Dur(TCP_ATO_MIN.as_nanos() / 2);
                } else if m < self.ato {
                    self.ato = (Dur(self.ato.as_nanos() / 2) + m).min(TCP_DELACK_MAX);
                } else if m > self.rtt.rto() {
                    // "Too long gap. Apparently sender failed to restart window, so that we
                    // send ACKs quickly."
                    self.incr_quickack();
                }
            }
        }
        self.lrcvtime = Some(now);
        self.pending_bytes += len;
        if had_gap || self.quick > 0 || self.pending_bytes > self.rcv_mss {
            self.send_ack(tcp_flags::ACK, cx);
        } else if cx.timer_deadline(DELACK) == SimTime::NEVER {
            // `tcp_send_delayed_ack`: ato, at least `delack_timeout`, at most TCP_DELACK_MAX.
            let ato = self.ato.max(self.delack_timeout).min(TCP_DELACK_MAX);
            cx.set_timer(DELACK, now + ato);
        }
    }
}

/// Linux `tcp_initialize_rcv_mss`: the receiver's first guess of the peer's segment size, at
/// most `TCP_MSS_DEFAULT` (and half the initial window), at least `TCP_MIN_MSS`.
fn initial_rcv_mss(advmss: u64, rcv_wnd: u64) -> u64 {
    advmss.min(rcv_wnd / 2).min(TCP_MSS_DEFAULT).max(TCP_MIN_MSS)
}

/// Linux `TCP_MSS_DEFAULT` and `TCP_MIN_MSS`, bytes.
const TCP_MSS_DEFAULT: u64 = 536;
const TCP_MIN_MSS: u64 = 88;
/// Linux `TCP_ATO_MIN` (= `TCP_DELACK_MIN`), `TCP_DELACK_MAX` and `TCP_MAX_QUICKACKS`.
const TCP_ATO_MIN: Dur = Dur::from_millis(40);
const TCP_DELACK_MAX: Dur = Dur::from_millis(200);
const TCP_MAX_QUICKACKS: u32 = 16;
/// SACK compression's defaults: `net.ipv4.tcp_comp_sack_delay_ns`, `tcp_comp_sack_slack_ns`
/// (the timer fires at its hard expiry, delay + slack, on a quiet host) and `tcp_comp_sack_nr`;
/// `TCP_FASTRETRANS_THRESH` duplicate ACKs go at once; the receiver's SACK array holds
/// `TCP_NUM_SACKS` blocks.
const COMP_SACK_DELAY: Dur = Dur::from_millis(1);
const COMP_SACK_SLACK: Dur = Dur::from_micros(100);
const COMP_SACK_NR: u32 = 44;
const TCP_FASTRETRANS_THRESH: u32 = 3;
const LINUX_NUM_SACKS: usize = 4;

impl Endpoint for TcpReceiver {
    fn service(&self) -> Service {
        Service::Stream
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let Some(h) = pkt.tcp() else { return };
        if h.flags & tcp_flags::SYN != 0 {
            // SYN (first or retransmitted): answer with SYN-ACK.
            self.syn_seen = true;
            self.rcv_nxt = self.rcv_nxt.max(h.seq + 1);
            self.ts_recent = h.ts_val;
            // RFC 3168 §6.1.1: an ECN-setup SYN has ECE and CWR set.
            let setup = tcp_flags::ECE | tcp_flags::CWR;
            self.ecn_ok = self.ecn && h.flags & setup == setup;
            self.send_ack(tcp_flags::SYN | tcp_flags::ACK, cx);
            // Karn: a retransmitted SYN-ACK gives no sample.
            self.synack_at = (self.synack_at.is_none() && self.rtt.srtt().is_none()).then_some(cx.now);
            return;
        }
        if let Some(t) = self.synack_at.take() {
            // `tcp_synack_rtt_meas` → `tcp_rtt_estimator`'s first sample m (Linux: SRTT = m,
            // RTTVAR = max(2m, rto_min), "make sure rto = 3*rtt").
            self.rtt.on_sample_at(cx.now.since(t), 0, 0);
        }
        if self.syn_seen && h.payload > 0 {
            if self.ecn_ok {
                self.ecn_check(pkt, h);
            }
            self.on_data(h, cx);
        }
    }

    fn timer_kinds(&self) -> u8 {
        2
    }

    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        // The delayed ACK's timeout, or `tcp_compressed_ack_kick` (see [`DELACK`]).
        if kind == DELACK && (self.pending_bytes > 0 || self.compressed > 0) {
            self.send_ack(tcp_flags::ACK, cx);
        }
    }

    fn delivered_bytes(&self) -> Option<u64> {
        Some(self.rcv_nxt.saturating_sub(1))
    }

    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("acks_sent", self.acks_sent as f64),
            ("duplicate_segments", self.dup_segments as f64),
            ("out_of_order_segments", self.ooo_segments as f64),
        ]
    }
}
