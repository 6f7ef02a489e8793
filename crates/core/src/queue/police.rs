//! Three-colour policing (`kind = "police"`): a single-rate (RFC 2697 srTCM) or two-rate
//! (RFC 2698 trTCM) three-colour marker meters every arrival, then passes, drops or re-marks
//! it by colour before handing it to a child discipline (a FIFO unless `child` says otherwise).
//! Linux reaches the same with `tc filter … action police` (one rate, two colours) or an OVS /
//! router meter; the RFCs specify the meter alone and leave the action to the operator.
//!
//! Reading list: RFC 2697 §3 (srTCM: Tc fills at CIR up to CBS, the overflow fills Te up to
//! EBS; both start full), RFC 2698 §3 (trTCM: Tp at PIR up to PBS, Tc at CIR up to CBS), RFC
//! 2597 §2 and §6 (AF drop precedences AFx1/AFx2/AFx3, the usual re-mark targets), RFC 2474 §3;
//! `docs/models/police.md`.
//!
//! Model: the buckets are updated at each arrival for the time since the previous one,
//! continuously (the RFCs' "CIR times per second … incremented by one" in the limit), in exact
//! integer units of 1/8·10⁹ byte so that no rounding accumulates. `B` is the packet's size as
//! the port counts it (its IP length). Colour-aware mode reads the pre-colour from the AF drop
//! precedence of the arriving DSCP: AFx2 is yellow, AFx3 red, anything else green.
//!
//! Not modelled: metering at a different point than the port's queue (an ingress policer on a
//! node), shared meters across ports, and Linux `police`'s `overhead`/`linklayer` corrections.

use super::fifo::FifoConfig;
use super::{Backlog, Build, BuildCtx, QueueConfig, QueueCtx, QueueDisc, Verdict};
use crate::ip::dscp::Dscp;
use crate::packet::{FlowId, Packet, PacketData};
use crate::time::SimTime;
use crate::units::{serde_units, Rate};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// Token units per byte: a bucket filling at `r` bit/s gains `r` units per nanosecond.
pub(crate) const UNITS_PER_BYTE: u128 = 8_000_000_000;

/// A token bucket filling at `rate` up to `depth` bytes, in exact integer units
/// ([`UNITS_PER_BYTE`]); starts full (RFC 2697 §3, RFC 2698 §3, Linux `tbf`).
#[derive(Clone, Debug)]
pub(crate) struct TokenBucket {
    rate_bps: u64,
    cap: u128,
    tokens: u128,
    last: SimTime,
}

impl TokenBucket {
    pub(crate) fn new(rate: Rate, depth_bytes: u64) -> Self {
        let cap = depth_bytes as u128 * UNITS_PER_BYTE;
        TokenBucket { rate_bps: rate.0, cap, tokens: cap, last: SimTime::ZERO }
    }
    /// Tokens at `now` (not before the last update) and the tokens that overflowed the cap.
    fn at(&self, now: SimTime) -> (u128, u128) {
        let fill = self.tokens + self.rate_bps as u128 * now.0.saturating_sub(self.last.0) as u128;
        (fill.min(self.cap), fill.saturating_sub(self.cap))
    }
    /// Brings the bucket to `now`; returns the tokens that overflowed (srTCM's feed of Te).
    pub(crate) fn fill(&mut self, now: SimTime) -> u128 {
        let (t, over) = self.at(now);
        self.tokens = t;
        self.last = self.last.max(now);
        over
    }
    /// Adds `units` (an overflow from another bucket), up to the cap.
    fn add(&mut self, units: u128) {
        self.tokens = (self.tokens + units).min(self.cap);
    }
    /// Whether the bucket, as last filled, holds `bytes`.
    pub(crate) fn holds(&self, bytes: u32) -> bool {
        self.tokens >= bytes as u128 * UNITS_PER_BYTE
    }
    /// Takes `bytes` (the caller checked [`Self::holds`]).
    pub(crate) fn take(&mut self, bytes: u32) {
        self.tokens -= bytes as u128 * UNITS_PER_BYTE;
    }
    /// The earliest time at or after `now` at which the bucket holds `bytes` (which must not
    /// exceed its depth).
    pub(crate) fn time_for(&self, bytes: u32, now: SimTime) -> SimTime {
        let need = bytes as u128 * UNITS_PER_BYTE;
        let (have, _) = self.at(now);
        if have >= need {
            return now;
        }
        let wait = (need - have).div_ceil(self.rate_bps as u128);
        SimTime(now.0.max(self.last.0) + wait as u64)
    }
}

/// A packet's colour (RFC 2697 §1, RFC 2698 §1).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Colour {
    Green,
    Yellow,
    Red,
}

impl Colour {
    /// The pre-colour a colour-aware meter reads from the DSCP: the AF drop precedence
    /// (RFC 2597 §2: AFx1 low, AFx2 medium, AFx3 high); every other code point is green.
    pub fn of_dscp(dscp: u8) -> Colour {
        let (class, prec) = (dscp >> 3, dscp & 7);
        match (class, prec) {
            (1..=4, 4) => Colour::Yellow,
            (1..=4, 6) => Colour::Red,
            _ => Colour::Green,
        }
    }
}

/// What the policer does with a packet of one colour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Hand it to the child unchanged.
    Pass,
    /// Refuse it (an arrival drop).
    Drop,
    /// Set its DSCP, then hand it to the child.
    Remark(Dscp),
}

impl Action {
    fn parse(s: &str) -> Result<Action, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "pass" => Ok(Action::Pass),
            "drop" => Ok(Action::Drop),
            _ => Dscp::parse(s)
                .map(Action::Remark)
                .map_err(|e| format!("expected \"pass\", \"drop\" or a DSCP to re-mark to, got {s:?} ({e})")),
        }
    }
}

impl Serialize for Action {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Action::Pass => s.serialize_str("pass"),
            Action::Drop => s.serialize_str("drop"),
            Action::Remark(d) => d.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Action, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(u64),
            Word(String),
        }
        match Repr::deserialize(d).map_err(|_| D::Error::custom("expected \"pass\", \"drop\" or a DSCP"))? {
            Repr::Number(v) => Dscp::parse(&v.to_string()).map(Action::Remark).map_err(D::Error::custom),
            Repr::Word(s) => Action::parse(&s).map_err(D::Error::custom),
        }
    }
}

impl JsonSchema for Action {
    fn schema_name() -> Cow<'static, str> {
        "police_action".into()
    }
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "what to do with a packet of this colour: \"pass\", \"drop\", or a DSCP to re-mark it to",
            "oneOf": [
                { "type": "string", "enum": ["pass", "drop"] },
                g.subschema_for::<Dscp>(),
            ],
        })
    }
}

/// Which marker meters the arrivals.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MeterKind {
    /// Single-rate three-colour marker (RFC 2697): `cir`, `cbs`, `ebs`.
    #[default]
    Srtcm,
    /// Two-rate three-colour marker (RFC 2698): `cir`, `cbs`, `pir`, `pbs`.
    Trtcm,
}

/// `kind = "police"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoliceConfig {
    /// `"srtcm"` (RFC 2697, default) or `"trtcm"` (RFC 2698).
    #[serde(default)]
    pub meter: MeterKind,
    /// Committed Information Rate.
    #[serde(with = "serde_units::rate")]
    pub cir: Rate,
    /// Committed Burst Size (the C bucket's depth).
    #[serde(with = "serde_units::bytes")]
    pub cbs: u64,
    /// Excess Burst Size (srTCM's E bucket). srTCM only; default 0.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub ebs: Option<u64>,
    /// Peak Information Rate, at least `cir`. trTCM only, required there.
    #[serde(default, with = "serde_units::opt_rate", skip_serializing_if = "Option::is_none")]
    pub pir: Option<Rate>,
    /// Peak Burst Size (the P bucket's depth). trTCM only, required there.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub pbs: Option<u64>,
    /// Read each arrival's pre-colour from its DSCP's AF drop precedence (AFx2 yellow, AFx3
    /// red, others green). Default false (colour-blind).
    #[serde(default)]
    pub color_aware: bool,
    /// Action on green packets. Default `"pass"`.
    #[serde(default = "pass")]
    pub green: Action,
    /// Action on yellow packets: `"pass"`, `"drop"` or a DSCP (e.g. `"AF12"`). Default `"pass"`.
    #[serde(default = "pass")]
    pub yellow: Action,
    /// Action on red packets. Default `"drop"`.
    #[serde(default = "drop")]
    pub red: Action,
    /// The discipline that queues what the policer lets through. Default a FIFO of 100 packets.
    #[serde(default = "default_child")]
    pub child: Box<QueueConfig>,
}

fn pass() -> Action {
    Action::Pass
}

fn drop() -> Action {
    Action::Drop
}

fn default_child() -> Box<QueueConfig> {
    Box::new(QueueConfig::Fifo(FifoConfig::default()))
}

/// The meter's buckets.
#[derive(Clone, Debug)]
enum Meter {
    /// RFC 2697: C (CIR, CBS) and E (fed by C's overflow, EBS).
    Sr { c: TokenBucket, e: TokenBucket },
    /// RFC 2698: P (PIR, PBS) and C (CIR, CBS).
    Tr { p: TokenBucket, c: TokenBucket },
}

impl Meter {
    /// Colours an arrival of `b` bytes pre-coloured `pre` (green when colour-blind) at `now`,
    /// updating the buckets as the RFCs say.
    fn colour(&mut self, now: SimTime, b: u32, pre: Colour) -> Colour {
        use Colour::*;
        match self {
            Meter::Sr { c, e } => {
                let over = c.fill(now);
                e.fill(now);
                e.add(over);
                if pre == Green && c.holds(b) {
                    c.take(b);
                    Green
                } else if pre != Red && e.holds(b) {
                    e.take(b);
                    Yellow
                } else {
                    Red
                }
            }
            Meter::Tr { p, c } => {
                p.fill(now);
                c.fill(now);
                if pre == Red || !p.holds(b) {
                    Red
                } else if pre == Yellow || !c.holds(b) {
                    p.take(b);
                    Yellow
                } else {
                    p.take(b);
                    c.take(b);
                    Green
                }
            }
        }
    }
}

/// The policer: a meter, an action per colour, and the child that queues what passes.
pub struct Police {
    meter: Meter,
    color_aware: bool,
    actions: [Action; 3],
    child: Box<dyn QueueDisc>,
    /// Packets of each colour metered so far (green, yellow, red).
    pub colours: [u64; 3],
}

impl Police {
    /// Meters with `cfg`'s buckets (validated) and queues in `child`.
    pub fn new(cfg: &PoliceConfig, child: Box<dyn QueueDisc>) -> Self {
        let meter = match cfg.meter {
            MeterKind::Srtcm => Meter::Sr {
                c: TokenBucket::new(cfg.cir, cfg.cbs),
                // E fills only from C's overflow (rate 0 of its own).
                e: TokenBucket::new(Rate(0), cfg.ebs.unwrap_or(0)),
            },
            MeterKind::Trtcm => Meter::Tr {
                p: TokenBucket::new(cfg.pir.expect("validated"), cfg.pbs.expect("validated")),
                c: TokenBucket::new(cfg.cir, cfg.cbs),
            },
        };
        Police {
            meter,
            color_aware: cfg.color_aware,
            actions: [cfg.green, cfg.yellow, cfg.red],
            child,
            colours: [0; 3],
        }
    }

    /// Colours an arrival without acting on it (for tests and the action below).
    pub fn colour(&mut self, now: SimTime, pkt: &PacketData) -> Colour {
        let pre = if self.color_aware { Colour::of_dscp(pkt.ip.dscp) } else { Colour::Green };
        let c = self.meter.colour(now, pkt.size_bytes, pre);
        self.colours[c as usize] += 1;
        c
    }
}

impl QueueDisc for Police {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let c = self.colour(cx.now, &pkt);
        match self.actions[c as usize] {
            Action::Drop => return Verdict::Dropped(pkt),
            Action::Remark(d) => pkt.set_dscp(d),
            Action::Pass => {}
        }
        self.child.enqueue(pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        self.child.dequeue(cx)
    }

    fn ready_at(&self, now: SimTime) -> Option<SimTime> {
        self.child.ready_at(now)
    }

    fn backlog(&self) -> Backlog {
        self.child.backlog()
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.child.for_each_packet(f)
    }

    fn flow_backlogs(&self, f: &mut dyn FnMut(FlowId, u64)) {
        self.child.flow_backlogs(f)
    }
}

impl Build for PoliceConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.cir.0 == 0 {
            return Err(("cir", "must be positive".into()));
        }
        match self.meter {
            MeterKind::Srtcm => {
                for (k, set) in [("pir", self.pir.is_some()), ("pbs", self.pbs.is_some())] {
                    if set {
                        return Err((k, "belongs to meter = \"trtcm\" (RFC 2698); srtcm has cir, cbs, ebs".into()));
                    }
                }
                if self.cbs == 0 && self.ebs.unwrap_or(0) == 0 {
                    return Err(("cbs", "cbs or ebs must be positive (RFC 2697 §2)".into()));
                }
            }
            MeterKind::Trtcm => {
                if self.ebs.is_some() {
                    return Err(("ebs", "belongs to meter = \"srtcm\" (RFC 2697); trtcm has cir, cbs, pir, pbs".into()));
                }
                let Some(pir) = self.pir else { return Err(("pir", "required by meter = \"trtcm\"".into())) };
                if pir.0 < self.cir.0 {
                    return Err(("pir", format!("must be at least cir ({} bps), got {} bps (RFC 2698 §2)", self.cir.0, pir.0)));
                }
                match self.pbs {
                    None => return Err(("pbs", "required by meter = \"trtcm\"".into())),
                    Some(0) => return Err(("pbs", "must be positive (RFC 2698 §2)".into())),
                    Some(_) => {}
                }
                if self.cbs == 0 {
                    return Err(("cbs", "must be positive (RFC 2698 §2)".into()));
                }
            }
        }
        self.child.validate().map_err(|(k, e)| ("child", format!("{k}: {e}")))
    }
    fn ecn(&self) -> bool {
        self.child.ecn()
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Police::new(self, self.child.build(cx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt};
    use proptest::prelude::*;

    fn cfg(toml_text: &str) -> PoliceConfig {
        let c: QueueConfig = toml::from_str(&format!("kind = \"police\"\n{toml_text}")).unwrap();
        match c {
            QueueConfig::Police(p) => p,
            _ => unreachable!(),
        }
    }

    fn police(toml_text: &str) -> Police {
        let c = cfg(toml_text);
        c.validate().unwrap();
        Police::new(&c, Box::new(super::super::fifo::Fifo::new(crate::units::Limit::Packets(1000))))
    }

    /// Colours of a trace of (arrival time µs, size bytes[, DSCP]).
    fn colours(p: &mut Police, trace: &[(u64, u32, u8)]) -> Vec<Colour> {
        trace
            .iter()
            .map(|&(t, b, d)| {
                let mut k = pkt(0, b, 0);
                k.ip.dscp = d;
                p.colour(SimTime(t * 1000), &k)
            })
            .collect()
    }

    use Colour::{Green as G, Red as R, Yellow as Y};

    /// RFC 2697 §3, colour-blind, hand-computed. CIR 8 Mbit/s = 1 byte/µs, CBS 3000, EBS 2000;
    /// both full at t = 0.
    ///
    /// | t µs | B    | Tc before | Te before | colour | Tc after | Te after |
    /// |------|------|-----------|-----------|--------|----------|----------|
    /// | 0    | 1500 | 3000      | 2000      | G      | 1500     | 2000     |
    /// | 0    | 1500 | 1500      | 2000      | G      | 0        | 2000     |
    /// | 0    | 1500 | 0         | 2000      | Y      | 0        | 500      |
    /// | 0    | 1000 | 0         | 500       | R      | 0        | 500      |
    /// | 1000 | 1500 | 1000      | 500       | R      | 1000     | 500      |
    /// | 1500 | 1500 | 1500      | 500       | G      | 0        | 500      |
    /// | 5000 | 1000 | 3000 (+500 overflow) | 1000 | G | 2000     | 1000     |
    /// | 5000 | 2500 | 2000      | 1000      | R      | 2000     | 1000     |
    /// | 5000 | 1000 | 2000      | 1000      | G      | 1000     | 1000     |
    /// | 5000 | 1500 | 1000      | 1000      | R      | 1000     | 1000     |
    /// | 5000 | 1000 | 1000      | 1000      | G      | 0        | 1000     |
    /// | 5000 | 1000 | 0         | 1000      | Y      | 0        | 0        |
    /// | 9000 | 4000 | 3000 (+1000 overflow) | 1000 | R | 3000  | 1000     |
    ///
    /// At 5000 µs, Tc has gained 3500 bytes over 3500 µs from 0: 3000 fill it to CBS and the
    /// 500 that overflow go to Te (500 → 1000). At 9000 µs Tc gains 4000 from 0: 3000 fill it,
    /// 1000 overflow into Te (0 → 1000); 4000 bytes exceed both buckets: red.
    #[test]
    fn srtcm_colour_blind_on_a_hand_computed_trace() {
        let mut p = police("cir = \"8Mbps\"\ncbs = \"3000B\"\nebs = \"2000B\"");
        let trace = [
            (0, 1500, 0),
            (0, 1500, 0),
            (0, 1500, 0),
            (0, 1000, 0),
            (1000, 1500, 0),
            (1500, 1500, 0),
            (5000, 1000, 0),
            (5000, 2500, 0),
            (5000, 1000, 0),
            (5000, 1500, 0),
            (5000, 1000, 0),
            (5000, 1000, 0),
            (9000, 4000, 0),
        ];
        assert_eq!(colours(&mut p, &trace), vec![G, G, Y, R, R, G, G, R, G, R, G, Y, R]);
        assert_eq!(p.colours, [6, 2, 5]);
    }

    /// RFC 2697 §3, colour-aware: a yellow pre-colour (AF12) may become yellow or red, never
    /// green; red (AF13) stays red whatever the buckets hold; green (AF11) behaves as blind.
    /// Same meter as above (CIR 1 byte/µs, CBS 3000, EBS 2000).
    ///
    /// | t µs | B    | pre | Tc   | Te   | colour |
    /// |------|------|-----|------|------|--------|
    /// | 0    | 1000 | Y   | 3000 | 2000 | Y (Te → 1000) |
    /// | 0    | 1000 | R   | 3000 | 1000 | R      |
    /// | 0    | 1000 | G   | 3000 | 1000 | G (Tc → 2000) |
    /// | 0    | 1000 | Y   | 2000 | 1000 | Y (Te → 0) |
    /// | 0    | 1000 | Y   | 2000 | 0    | R (Tc unused for yellow) |
    /// | 0    | 2000 | G   | 2000 | 0    | G (Tc → 0) |
    /// | 0    | 100  | G   | 0    | 0    | R      |
    #[test]
    fn srtcm_colour_aware_never_promotes() {
        let mut p = police("cir = \"8Mbps\"\ncbs = \"3000B\"\nebs = \"2000B\"\ncolor_aware = true");
        let (g, y, r) = (Dscp::af(1, 1).value(), Dscp::af(1, 2).value(), Dscp::af(1, 3).value());
        let trace = [(0, 1000, y), (0, 1000, r), (0, 1000, g), (0, 1000, y), (0, 1000, y), (0, 2000, g), (0, 100, 0)];
        assert_eq!(colours(&mut p, &trace), vec![Y, R, G, Y, R, G, R]);
    }

    /// RFC 2698 §3, colour-blind, hand-computed. CIR 8 Mbit/s (1 byte/µs), CBS 2000, PIR
    /// 16 Mbit/s (2 bytes/µs), PBS 4000; both full at t = 0.
    ///
    /// | t µs | B    | Tp before | Tc before | colour | Tp after | Tc after |
    /// |------|------|-----------|-----------|--------|----------|----------|
    /// | 0    | 1500 | 4000      | 2000      | G      | 2500     | 500      |
    /// | 0    | 1500 | 2500      | 500       | Y      | 1000     | 500      |
    /// | 0    | 1500 | 1000      | 500       | R      | 1000     | 500      |
    /// | 500  | 1500 | 2000      | 1000      | Y      | 500      | 1000     |
    /// | 1000 | 1500 | 1500      | 1500      | G      | 0        | 0        |
    /// | 1500 | 1500 | 1000      | 500       | R      | 1000     | 500      |
    /// | 3000 | 1500 | 4000      | 2000      | G      | 2500     | 500      |
    /// | 3000 | 3000 | 2500      | 500       | R      | 2500     | 500      |
    #[test]
    fn trtcm_colour_blind_on_a_hand_computed_trace() {
        let mut p = police("meter = \"trtcm\"\ncir = \"8Mbps\"\ncbs = \"2000B\"\npir = \"16Mbps\"\npbs = \"4000B\"");
        let trace = [
            (0, 1500, 0),
            (0, 1500, 0),
            (0, 1500, 0),
            (500, 1500, 0),
            (1000, 1500, 0),
            (1500, 1500, 0),
            (3000, 1500, 0),
            (3000, 3000, 0),
        ];
        assert_eq!(colours(&mut p, &trace), vec![G, Y, R, Y, G, R, G, R]);
    }

    /// RFC 2698 §3, colour-aware: pre-coloured red is red without touching the buckets;
    /// pre-coloured yellow takes only from Tp.
    ///
    /// | t µs | B    | pre | Tp   | Tc   | colour |
    /// |------|------|-----|------|------|--------|
    /// | 0    | 1000 | R   | 4000 | 2000 | R      |
    /// | 0    | 1000 | Y   | 4000 | 2000 | Y (Tp → 3000) |
    /// | 0    | 2000 | G   | 3000 | 2000 | G (Tp → 1000, Tc → 0) |
    /// | 0    | 1000 | Y   | 1000 | 0    | Y (Tp → 0) |
    /// | 0    | 1000 | G   | 0    | 0    | R      |
    #[test]
    fn trtcm_colour_aware_on_a_hand_computed_trace() {
        let mut p = police(
            "meter = \"trtcm\"\ncir = \"8Mbps\"\ncbs = \"2000B\"\npir = \"16Mbps\"\npbs = \"4000B\"\ncolor_aware = true",
        );
        let (g, y, r) = (Dscp::af(2, 1).value(), Dscp::af(2, 2).value(), Dscp::af(2, 3).value());
        let trace = [(0, 1000, r), (0, 1000, y), (0, 2000, g), (0, 1000, y), (0, 1000, g)];
        assert_eq!(colours(&mut p, &trace), vec![R, Y, G, Y, R]);
    }

    /// Actions: AF11 traffic re-marked AF12 when yellow and dropped when red (RFC 2597's drop
    /// precedences), green passed unchanged; the child queues what is left, in order.
    #[test]
    fn actions_pass_remark_and_drop_by_colour() {
        let c = cfg("cir = \"8Mbps\"\ncbs = \"1500B\"\nebs = \"1500B\"\nyellow = \"AF12\"\nred = \"drop\"");
        let mut p = c.build(&BuildCtx { mtu_bytes: 1500, rate: Rate(100_000_000), seed: 1 });
        let mut d = Vec::new();
        let mut verdicts = Vec::new();
        for s in 0..3 {
            let mut k = pkt(0, 1500, s);
            k.ip.dscp = Dscp::af(1, 1).value();
            verdicts.push(matches!(p.enqueue(k, &mut cx(&mut d)), Verdict::Enqueued));
        }
        assert_eq!(verdicts, vec![true, true, false], "green, yellow, red (dropped)");
        let out: Vec<(u64, u8)> =
            std::iter::from_fn(|| p.dequeue(&mut cx(&mut d))).map(|k| (k.seq_in_flow, k.ip.dscp)).collect();
        assert_eq!(out, vec![(0, Dscp::af(1, 1).value()), (1, Dscp::af(1, 2).value())]);
    }

    /// Long run, colour-blind srTCM under a constant 2×CIR load of equal packets: the green
    /// bytes are CIR·T + CBS + EBS at most and at least CIR·T − one packet + CBS (the RFC's
    /// committed rate is what goes green, the excess beyond the bursts is red).
    #[test]
    fn long_run_green_rate_is_cir() {
        let mut p = police("cir = \"1Mbps\"\ncbs = \"10KB\"\nebs = \"10KB\"");
        // 1000-byte packets every 4 ms = 2 Mbit/s for 10 s.
        let n = 2500u64;
        let mut green = 0u64;
        for i in 0..n {
            if p.colour(SimTime(i * 4_000_000), &pkt(0, 1000, i)) == G {
                green += 1000;
            }
        }
        let t_s = (n - 1) as f64 * 0.004;
        let cir_bytes = 1e6 / 8.0 * t_s;
        assert!(green as f64 <= cir_bytes + 10_000.0, "{green}");
        assert!(green as f64 >= cir_bytes + 10_000.0 - 1000.0, "{green}");
        // Te is full from the start and only C's overflow refills it, which never happens
        // while C drains: exactly EBS of yellow.
        assert_eq!(p.colours[1], 10);
    }

    #[test]
    fn remarking_a_real_datagram_keeps_its_checksum() {
        use crate::packet::*;
        let mut k = pkt(0, 28, 0);
        // IPv4 header, TOS = AF11 with ECT(0), checksum computed for that header.
        let mut b = vec![0x45, (10 << 2) | 2, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let sum = |b: &[u8]| {
            let mut s: u32 = b[..20].chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
            while s >> 16 != 0 {
                s = (s & 0xffff) + (s >> 16);
            }
            s as u16
        };
        let c = !sum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        k.l4 = L4::Real(Box::new(RealHdr { proto: 17, src_port: 0, dst_port: 0, bytes: b }));
        k.set_dscp(Dscp::af(1, 2));
        let L4::Real(r) = &k.l4 else { unreachable!() };
        assert_eq!(r.bytes[1], (12 << 2) | 2, "DSCP rewritten, ECN bits kept");
        assert_eq!(sum(&r.bytes), 0xffff, "header checksum still verifies");
        assert_eq!(k.ip.dscp, 12);
    }

    #[test]
    fn bad_parameters_are_refused_with_their_key() {
        let bad = |s: &str| cfg(s).validate().unwrap_err().0;
        assert_eq!(bad("cir = \"1Mbps\"\ncbs = \"0B\""), "cbs");
        assert_eq!(bad("cir = \"1Mbps\"\ncbs = \"1KB\"\npir = \"2Mbps\""), "pir");
        assert_eq!(bad("meter = \"trtcm\"\ncir = \"1Mbps\"\ncbs = \"1KB\"\npbs = \"1KB\""), "pir");
        assert_eq!(bad("meter = \"trtcm\"\ncir = \"2Mbps\"\ncbs = \"1KB\"\npir = \"1Mbps\"\npbs = \"1KB\""), "pir");
        assert_eq!(bad("meter = \"trtcm\"\ncir = \"1Mbps\"\ncbs = \"1KB\"\npir = \"2Mbps\""), "pbs");
        assert_eq!(bad("meter = \"trtcm\"\ncir = \"1Mbps\"\ncbs = \"1KB\"\nebs = \"1KB\"\npir = \"2Mbps\"\npbs = \"1KB\""), "ebs");
        let e = cfg("cir = \"1Mbps\"\ncbs = \"1KB\"\nchild = { kind = \"toy\", limit_pkts = 0 }").validate().unwrap_err();
        assert!(e.0 == "child" && e.1.starts_with("limit_pkts"), "{e:?}");
        let e = toml::from_str::<QueueConfig>("kind = \"police\"\ncir = \"1Mbps\"\ncbs = \"1KB\"\nyellow = \"AF51\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pass") && e.contains("AF51"), "{e}");
    }

    proptest! {
        /// Conservation through the policer and its child (the shared harness's invariants),
        /// with drops of red arrivals and re-marks of yellow ones.
        #[test]
        fn police_conserves(seq in ops(4, 300)) {
            let mut q = police("cir = \"2Mbps\"\ncbs = \"3000B\"\nebs = \"3000B\"\nyellow = \"AF12\"");
            drive(&mut q, &seq, |_, _, _| Ok(()))?;
        }
    }
}
