//! Congestion controllers: the [`CongestionControl`] trait and its configs.
//!
//! A controller owns only its own parameters and state; `cwnd`, `ssthresh`, SRTT and the other
//! shared variables live in the transport's [`Tcb`] (as in ns-3 `tcp-congestion-ops.h`). The
//! transport does everything that is not a congestion-control decision: loss detection, fast
//! recovery's window inflation (RFC 6582) or pipe accounting (RFC 6675), the timeout's loss
//! window (RFC 5681 §3.1), and the RTO. The controller decides growth per ACK and the reduction
//! on a congestion event.
//!
//! Adding a controller: a file here with `FooConfig` (serde, `deny_unknown_fields`, `Default`),
//! `Foo: CongestionControl` and `impl BuildCc for FooConfig`, then one line in the [`CcConfig`]
//! registry below. The bare-name form `cc = "foo"` and the names in error messages follow.
//!
//! A rate-based controller (BBR) says so with [`CongestionControl::rate_based`]: as with a Linux
//! module that has `cong_control`, the transport then keeps delivery-rate samples
//! ([`super::rate`]), passes one to [`CongestionControl::on_rate_sample`] on every ACK, and leaves
//! cwnd to the controller in loss recovery too (no PRR, no NewReno window inflation). A
//! controller that returns a [`pacing_rate`](CongestionControl::pacing_rate) is paced at it
//! (Linux's internal pacing when the socket needs it, `SK_PACING_NEEDED`).

use super::{Behaviours, Tcb};

pub mod hystart;
use crate::engine::SimRng;
use crate::registry::{quoted_list, registry};
use crate::time::{Dur, SimTime};
use crate::units::Rate;
use serde::{Deserialize, Deserializer};
use std::fmt;

registry! {
    /// Congestion controller selection. In a scenario either a bare name, `cc = "cubic"`, or a
    /// table with parameters, `cc = { kind = "cubic", c = 0.4, beta = 0.7 }`.
    pub enum CcConfig: dyn BuildCc {
        // NewReno: RFC 5681 + RFC 6582 (the recovery part lives in the transport).
        newreno::NewReno(NewRenoConfig) = "newreno",
        // CUBIC, RFC 9438.
        cubic::Cubic(CubicConfig) = "cubic",
        // BBR v1, as Linux `net/ipv4/tcp_bbr.c`.
        bbr::Bbr(BbrConfig) = "bbr",
        #[cfg(test)] toy::Toy(ToyConfig) = "toy",
    }
}

/// Builds a controller from its config; every [`CcConfig`] kind implements it.
pub trait BuildCc {
    fn build(&self) -> Box<dyn CongestionControl>;
    /// Builds the controller for a TCP end whose profile and keys resolved to `b` (for
    /// behaviours that live in the controller, such as HyStart++). Default: [`build`](Self::build).
    fn build_with(&self, _b: &Behaviours) -> Box<dyn CongestionControl> {
        self.build()
    }
    /// Builds the controller with the TCP end's own seeded random stream, for controllers that
    /// draw (BBR's first gain-cycle phase). Default: [`build_with`](Self::build_with).
    fn build_seeded(&self, b: &Behaviours, _rng: SimRng) -> Box<dyn CongestionControl> {
        self.build_with(b)
    }
    /// Checks parameter ranges; the error names the field (`cc.beta: ...`).
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// One ACK that advanced `snd_una` outside loss recovery.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AckSample {
    pub now: SimTime,
    /// Bytes newly acknowledged cumulatively by this ACK.
    pub acked_bytes: u64,
    /// Segments newly acknowledged cumulatively by this ACK (Linux counts packets, whatever their
    /// size: the `acked` of `cong_avoid`). From RACK's per-segment records when it runs, else
    /// `acked_bytes` in whole segments, rounded up.
    pub acked_segs: u64,
    /// The RTT measured from this ACK, if it yielded a valid sample.
    pub rtt: Option<Dur>,
    /// The RTT of the newest never-retransmitted segment this ACK delivered (cumulatively or by
    /// SACK), from its send time: Linux's `ca_rtt_us`, which `pkts_acked` hooks such as CUBIC's
    /// HyStart read. With RACK on (its per-segment send times); else the sample `rtt`.
    pub ca_rtt: Option<Dur>,
    /// Bytes in flight (RFC 6675 pipe or RFC 5681 FlightSize) just before this ACK.
    pub prior_in_flight: u64,
    /// Whether the sender was limited by cwnd when it last tried to send (RFC 7661's idea:
    /// a window that is not used is not grown).
    pub cwnd_limited: bool,
}

/// Why the transport decided data was lost.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossKind {
    /// Three duplicate ACKs (RFC 5681 §3.2) or the SACK `IsLost()` rule (RFC 6675 §5).
    FastRetransmit,
    /// An ACK echoed a CE mark (ECE, RFC 3168 §6.1.2): reduce the window as for a loss, but
    /// nothing is retransmitted and no recovery follows.
    Ecn,
}

/// A congestion event: a loss that starts recovery, or an ECN echo (see [`LossKind`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LossEvent {
    pub now: SimTime,
    pub kind: LossKind,
    /// RFC 5681 FlightSize (`snd_max - snd_una`) when the loss was detected, bytes.
    pub flight_size: u64,
    /// What the multiplicative decrease applies to, bytes: FlightSize, pipe or cwnd, as the TCP
    /// end's [`SsthreshRule`](super::SsthreshRule) says (FlightSize unless a profile or key
    /// chooses otherwise).
    pub base: u64,
}

/// A retransmission timeout. When the hook runs the transport has already applied RFC 5681
/// §3.1: `ssthresh = max(FlightSize / 2, 2 * SMSS)` on the first timeout of a series (held on
/// later ones) and `cwnd = 1 * SMSS`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RtoEvent {
    pub now: SimTime,
    /// RFC 5681 FlightSize when the timer fired, bytes.
    pub flight_size: u64,
    /// cwnd before the timeout, bytes.
    pub prior_cwnd: u64,
    /// ssthresh before the timeout (before the transport's RFC 5681 value), bytes.
    pub prior_ssthresh: u64,
    /// Timeouts in a row, including this one (1 for the first).
    pub consecutive: u32,
}

/// The congestion state of the sender (Linux `icsk_ca_state`, the states we model), ordered as
/// Linux orders them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// No loss being repaired (`TCP_CA_Open`).
    Open,
    /// Fast recovery (RFC 6582, RFC 6675; `TCP_CA_Recovery`).
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acknowledged
    /// (`TCP_CA_Loss`).
    Loss,
}

/// One ACK's delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation; Linux `struct
/// rate_sample`), for a [`rate_based`](CongestionControl::rate_based) controller. Counts are
/// in packets (segments), as Linux counts them.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RateSample {
    pub now: SimTime,
    /// Packets delivered over `interval`; `None` if this ACK gives no valid sample (nothing
    /// delivered carried timing information).
    pub delivered: Option<u64>,
    /// The sampling interval, max(send phase, ACK phase); `None` if invalid (no sample, or
    /// shorter than the minimum RTT).
    pub interval: Option<Dur>,
    /// `tp->delivered` when the sampled segment was sent.
    pub prior_delivered: u64,
    /// Packets newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Packets newly deemed lost while processing this ACK.
    pub losses: u64,
    /// Packets in flight before and after this ACK (`tcp_packets_in_flight`).
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// The sampled segment was sent while the sender was application-limited.
    pub is_app_limited: bool,
    /// The ACK may have been delayed by the receiver (it acks one lone runt segment).
    pub is_ack_delayed: bool,
    /// RTT of the most recently sent segment this ACK delivered (send time to now).
    pub rtt: Option<Dur>,
    /// The congestion state after this ACK.
    pub ca_state: CaState,
    /// When the next segment may leave under pacing (`tcp_wstamp_ns`); `now` if at once.
    pub next_departure: SimTime,
}

/// Data is about to leave with nothing in flight (Linux `CA_EVENT_TX_START`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TxStart {
    pub now: SimTime,
    /// The sender is application-limited (it had been idle for lack of data; kept only for a
    /// rate-based controller, false otherwise).
    pub app_limited: bool,
    /// Time since the last data segment was sent (Linux `lsndtime`); zero before the first.
    pub idle: Dur,
}

/// A controller's state as Linux's `ss -ti` shows it (`tcp_cc_info`), for the `bbr` probe.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CcInfo {
    /// The mode (BBR: `"startup"`, `"drain"`, `"probe_bw"`, `"probe_rtt"`).
    pub mode: &'static str,
    /// Rounds (packet-timed round trips) so far.
    pub round: u64,
    /// The bandwidth estimate, bit/s of payload.
    pub bw_bps: f64,
    /// The minimum-RTT estimate (`None` before a sample).
    pub min_rtt: Option<Dur>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    /// The pacing rate, bit/s of payload.
    pub pacing_rate_bps: f64,
}

/// A congestion controller (see the module docs for the division of labour).
pub trait CongestionControl: Send + fmt::Debug {
    /// An ACK advanced `snd_una` while not in loss recovery: grow `tcb.cwnd`.
    fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb);
    /// Loss recovery starts: set `tcb.ssthresh` and `tcb.cwnd` (the transport then adds
    /// NewReno's inflation of 3 segments when SACK is off).
    fn on_loss(&mut self, loss: &LossEvent, tcb: &mut Tcb);
    /// The retransmission timer expired (after the transport's RFC 5681 reduction).
    fn on_rto(&mut self, _rto: &RtoEvent, _tcb: &mut Tcb) {}
    /// A pacing rate (of payload bytes), for controllers that pace: a controller that returns one
    /// when built is paced at its rate throughout, whatever the `pacing` key says. `None`: send
    /// as the window allows.
    fn pacing_rate(&self, _tcb: &Tcb) -> Option<Rate> {
        None
    }
    /// Whether the controller sets cwnd itself from rate samples on every ACK, in recovery too
    /// (Linux `cong_control`; see the module docs). Asked once, when the end is built.
    fn rate_based(&self) -> bool {
        false
    }
    /// Every ACK, with its rate sample (only for a [`rate_based`](Self::rate_based) controller,
    /// after the transport's own processing of the ACK).
    fn on_rate_sample(&mut self, _rs: &RateSample, _tcb: &mut Tcb) {}
    /// Whether data sent from now on is to be marked application-limited (BBR's PROBE_RTT sets
    /// Linux's `tp->app_limited`); asked after each [`on_rate_sample`](Self::on_rate_sample).
    fn app_limited(&self) -> bool {
        false
    }
    /// Data is about to leave with nothing in flight (Linux `CA_EVENT_TX_START` from
    /// `tcp_event_data_sent`), for every controller.
    fn on_tx_start(&mut self, _ev: &TxStart, _tcb: &mut Tcb) {}
    /// The controller's state for the `bbr` probe, if it has one to show.
    fn info(&self, _tcb: &Tcb) -> Option<CcInfo> {
        None
    }
}

/// Slow start shared by the loss-based controllers: RFC 5681 §3.1 eq. (2), cwnd grows by
/// min(N, L) per ACK, N the bytes newly acked. With Appropriate Byte Counting (RFC 3465 §2.2)
/// L = 2 * SMSS, so an ACK covering two segments grows cwnd by two; without it L = SMSS. Stops
/// at `ssthresh` (the rest of the ACK is not carried into congestion avoidance).
pub fn slow_start(ack: &AckSample, tcb: &mut Tcb, abc: bool) {
    let l = if abc { 2 * tcb.mss } else { tcb.mss }; // RFC 3465 §2.2 L
    let inc = ack.acked_bytes.min(l);
    tcb.cwnd = (tcb.cwnd + inc).min(tcb.ssthresh.max(tcb.cwnd)); // RFC 5681 §3.1 eq. (2)
}

/// Linux `tcp_cong_avoid_ai(tp, w, acked)`: `acked` segments add to the credit `cnt`; each `w`
/// of credit grows cwnd by one segment. Returns the new cwnd, segments.
pub fn linux_cong_avoid_ai(cnt: &mut u32, cwnd: u32, w: u32, acked: u32) -> u32 {
    let w = w.max(1);
    let mut cwnd = cwnd;
    // "If credits accumulated at a higher w, apply them gently now."
    if *cnt >= w {
        *cnt = 0;
        cwnd += 1;
    }
    *cnt += acked;
    if *cnt >= w {
        let d = *cnt / w;
        *cnt -= d * w;
        cwnd += d;
    }
    cwnd
}

/// Linux `tcp_enter_loss`'s ssthresh on a first timeout: the controller's `ssthresh` of the cwnd
/// the timeout found (`ssthresh(prior_cwnd)`, bytes), unless the timeout interrupts a fast
/// recovery, whose reduced ssthresh stands. (A repeated timeout holds ssthresh: the caller's
/// `consecutive == 1` check.)
pub fn linux_enter_loss_ssthresh(rto: &RtoEvent, tcb: &Tcb, ssthresh: impl FnOnce(u64) -> u64) -> u64 {
    if tcb.in_recovery {
        rto.prior_ssthresh
    } else {
        ssthresh(rto.prior_cwnd)
    }
}

/// Linux `tcp_slow_start`, in whole segments: cwnd grows by every segment the ACK delivered
/// (no per-ACK limit), up to ssthresh. Returns the segments left over, which Linux's Reno
/// passes on to congestion avoidance.
pub fn linux_slow_start(acked_segs: u64, tcb: &mut Tcb) -> u64 {
    let mss = tcb.mss.max(1);
    let cwnd = tcb.cwnd / mss;
    let grown = (cwnd + acked_segs).min((tcb.ssthresh / mss).max(cwnd));
    tcb.cwnd = grown * mss;
    acked_segs - (grown - cwnd)
}

impl Default for CcConfig {
    /// CUBIC: the default of Linux, Windows and macOS, and of ns-3.44.
    fn default() -> Self {
        CcConfig::Cubic(CubicConfig::default())
    }
}

impl CcConfig {
    pub fn build(&self) -> Box<dyn CongestionControl> {
        self.config().build()
    }

    /// Builds the controller with the TCP end's resolved behaviours (see [`BuildCc::build_with`]).
    pub fn build_with(&self, b: &Behaviours) -> Box<dyn CongestionControl> {
        self.config().build_with(b)
    }

    /// Builds the controller with the end's behaviours and random stream (see
    /// [`BuildCc::build_seeded`]).
    pub fn build_seeded(&self, b: &Behaviours, rng: SimRng) -> Box<dyn CongestionControl> {
        self.config().build_seeded(b, rng)
    }

    /// Checks parameter ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        self.config().validate()
    }
}

/// Serialised form: the tagged table. Deserialised form: the table or a bare name, which stands
/// for the table `{ kind = name }` (so every field takes its default).
pub(crate) fn deserialize_cc<'de, D: Deserializer<'de>>(d: D) -> Result<CcConfig, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = CcConfig;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            for name in CcConfig::NAMES {
                write!(f, "{name:?}, ")?;
            }
            f.write_str("or a table with `kind`")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CcConfig, E> {
            if !CcConfig::NAMES.contains(&v) {
                let names = quoted_list(CcConfig::NAMES, "or");
                return Err(E::custom(format!("unknown congestion control {v:?}, expected {names}")));
            }
            let table = serde::de::value::MapDeserializer::new(std::iter::once(("kind", v)));
            CcConfig::deserialize(table)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<CcConfig, A::Error> {
            CcConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}
