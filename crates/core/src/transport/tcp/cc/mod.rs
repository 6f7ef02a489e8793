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

use super::{Behaviours, Tcb};

pub mod hystart;
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
}

/// A congestion event that starts loss recovery.
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
    /// Timeouts in a row, including this one (1 for the first).
    pub consecutive: u32,
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
    /// A pacing rate, for controllers that pace. `None`: send as the window allows.
    fn pacing_rate(&self, _tcb: &Tcb) -> Option<Rate> {
        None
    }
    /// Sending starts again with nothing in flight, `idle` after the last data segment was sent
    /// (Linux `CA_EVENT_TX_START` from `tcp_event_data_sent`).
    fn on_tx_start(&mut self, _now: SimTime, _idle: Dur) {}
    /// Whether the controller computes cwnd from its own model on every ACK (Linux
    /// `cong_control`, as BBR does): the transport then leaves cwnd alone after an idle period
    /// (`tcp_slow_start_after_idle_check` returns early for such controllers).
    fn cong_control(&self) -> bool {
        false
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
