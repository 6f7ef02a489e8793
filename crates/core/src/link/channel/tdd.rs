//! Time-division duplexing (TDD) with fixed slots: the simplest shared medium.
//!
//! Time is cut into frames of fixed duration. In every frame each direction of the link (each
//! *station*) owns one slot, `[start, end)` as offsets into the frame, during which it sends at
//! the link's `rate`; outside its slot it sends nothing. Links that name the same `medium`
//! share one frame, and the scenario builder checks that their slots never overlap, so the
//! stations of a medium (say the subscriber stations of a WiMAX uplink) take turns.
//!
//! The grant is a fluid share: a packet that does not fit in the rest of the slot goes on in
//! the next one (as a MAC that fragments across frames would send it), so a backlogged station
//! gets exactly `rate × (end − start) / frame` in the long run.
//!
//! Not modelled: grants that follow demand (a base station scheduling every frame from the
//! stations' bandwidth requests), MAC headers, fragmentation and preamble overheads, guard
//! times, and contention; see `docs/models/links.md`.

use super::{ms, BuildChannel, Channel, ChannelCtx, LinkDir, LinkPhy, Share};
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};

/// A slot of every frame: offsets `[start, end)` from the frame's start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Offset of the slot's start into the frame (e.g. `"0ms"`).
    #[serde(with = "serde_units::time")]
    pub start: Dur,
    /// Offset of the slot's end into the frame, after `start` and at most `frame`.
    #[serde(with = "serde_units::time")]
    pub end: Dur,
}

/// `kind = "tdd"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TddConfig {
    /// Frame duration (positive), e.g. `"5ms"`.
    #[serde(with = "serde_units::time")]
    pub frame: Dur,
    /// The slot of the a→b direction in each frame.
    pub slot_ab: Slot,
    /// The slot of the b→a direction in each frame (must not overlap `slot_ab`).
    pub slot_ba: Slot,
    /// The shared medium this link is a station of (default: none, the link alone). Every link
    /// naming it must use the same `frame`, and no two slots on it may overlap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<String>,
}

impl Default for TddConfig {
    /// A 5 ms frame split in halves: a→b first.
    fn default() -> Self {
        let half = Dur::from_micros(2500);
        TddConfig {
            frame: Dur::from_millis(5),
            slot_ab: Slot { start: Dur(0), end: half },
            slot_ba: Slot { start: half, end: Dur::from_millis(5) },
            medium: None,
        }
    }
}

impl BuildChannel for TddConfig {
    fn build(&self, cx: &ChannelCtx) -> Option<Box<dyn Channel>> {
        let s = match cx.dir {
            LinkDir::Ab => &self.slot_ab,
            LinkDir::Ba => &self.slot_ba,
        };
        Some(Box::new(Tdd::new(cx.phy, self.frame, s.start, s.end)))
    }

    fn validate(&self, _phy: LinkPhy) -> Result<(), (&'static str, String)> {
        if self.frame.as_nanos() == 0 {
            return Err(("frame", "must be positive".into()));
        }
        for (field, end_field, s) in [("slot_ab", "slot_ab.end", &self.slot_ab), ("slot_ba", "slot_ba.end", &self.slot_ba)]
        {
            if s.end <= s.start {
                return Err((end_field, format!("must be after {field}.start ({})", ms(s.start))));
            }
            if s.end > self.frame {
                return Err((end_field, format!("{} is past the end of the {} frame", ms(s.end), ms(self.frame))));
            }
        }
        if self.slot_ab.start < self.slot_ba.end && self.slot_ba.start < self.slot_ab.end {
            return Err(("slot_ba", "overlaps slot_ab (the two directions take turns)".into()));
        }
        if self.medium.as_deref() == Some("") {
            return Err(("medium", "must not be empty".into()));
        }
        Ok(())
    }

    fn shares(&self) -> Vec<Share<'_>> {
        let Some(medium) = self.medium.as_deref() else { return Vec::new() };
        let share = |field, s: &Slot| Share { medium, frame: self.frame, field, start: s.start, end: s.end, profile: None };
        vec![share("slot_ab", &self.slot_ab), share("slot_ba", &self.slot_ba)]
    }
}

/// One station's view of a TDD frame: its slot `[start, end)` in every frame, in ns.
#[derive(Clone, Debug)]
pub struct Tdd {
    rate: Rate,
    delay: Dur,
    frame: u64,
    start: u64,
    end: u64,
}

impl Tdd {
    /// # Panics
    /// Unless `0 ≤ start < end ≤ frame` (the config's validation guarantees it).
    pub fn new(phy: LinkPhy, frame: Dur, start: Dur, end: Dur) -> Self {
        assert!(start < end && end <= frame, "TDD slot [{start:?}, {end:?}) does not fit a {frame:?} frame");
        Tdd { rate: phy.rate, delay: phy.delay, frame: frame.0, start: start.0, end: end.0 }
    }

    /// `now` if it is inside a slot, else the start of the next slot.
    #[inline]
    fn next_in_slot(&self, now: SimTime) -> SimTime {
        let off = now.0 % self.frame;
        if off < self.start {
            SimTime(now.0 - off + self.start)
        } else if off < self.end {
            now
        } else {
            SimTime(now.0 - off + self.frame + self.start)
        }
    }
}

impl Channel for Tdd {
    fn rate(&self) -> Rate {
        self.rate
    }
    fn rate_at(&self, now: SimTime) -> Rate {
        if self.next_in_slot(now) == now {
            self.rate
        } else {
            Rate(0)
        }
    }
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        self.next_in_slot(now)
    }
    /// Counts only time inside slots: the serialisation needs ⌈8·L·10⁹ / C⌉ ns of slot time
    /// from the first slot instant at or after `start`.
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        let need = self.rate.tx_time(bytes).0;
        let t = self.next_in_slot(start);
        let off = t.0 % self.frame;
        let left = self.end - off;
        if need <= left {
            return SimTime(t.0 + need);
        }
        // Whole slots of later frames, then the remainder (1..=slot length) in the last one.
        let rest = need - left;
        let len = self.end - self.start;
        let full = (rest - 1) / len;
        SimTime(t.0 - off + self.frame * (1 + full) + self.start + (rest - full * len))
    }
    fn delay(&self) -> Dur {
        self.delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimRng;
    use crate::link::channel::ChannelConfig;
    use crate::link::Port;
    use crate::queue::testutil::pkt;
    use crate::queue::{BuildCtx, QueueConfig};
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    const PHY: LinkPhy = LinkPhy { rate: Rate(10_000_000), delay: Dur::from_millis(2) };

    fn tdd(frame_us: u64, start_us: u64, end_us: u64) -> Tdd {
        Tdd::new(PHY, Dur::from_micros(frame_us), Dur::from_micros(start_us), Dur::from_micros(end_us))
    }

    /// Slot time in `[a, b)`, by walking the frames one by one.
    fn slot_time(c: &Tdd, a: u64, b: u64) -> u64 {
        let mut total = 0;
        let mut f = a - a % c.frame;
        while f < b {
            let (s, e) = ((f + c.start).max(a), (f + c.end).min(b));
            total += e.saturating_sub(s);
            f += c.frame;
        }
        total
    }

    #[test]
    fn ready_and_rate_follow_the_slot() {
        let mut c = tdd(5000, 1000, 2000);
        let us = |u: u64| SimTime(u * 1000);
        assert_eq!(c.ready_at(us(0)), us(1000));
        assert_eq!(c.ready_at(us(1000)), us(1000));
        assert_eq!(c.ready_at(us(1999)), us(1999));
        assert_eq!(c.ready_at(us(2000)), us(6000));
        assert_eq!(c.ready_at(us(12_500)), us(16_000));
        assert_eq!(c.rate_at(us(1500)), PHY.rate);
        assert_eq!(c.rate_at(us(2000)), Rate(0));
        assert_eq!(c.rate_at(us(999)), Rate(0));
        // 1250 B at 10 Mbit/s is 1 ms: a whole slot when started at its start.
        assert_eq!(c.tx_end(us(0), 1250), us(2000));
        // Started half-way, it ends half-way through the next frame's slot.
        assert_eq!(c.tx_end(us(1500), 1250), us(6500));
    }

    proptest! {
        /// A serialisation uses exactly its wire time of slot time, starting at the first slot
        /// instant at or after its start, and ends inside a slot.
        #[test]
        fn tx_uses_exactly_its_slot_time(
            frame in 1u64..=20_000,
            a in 0u64..=20_000,
            b in 1u64..=20_000,
            start in 0u64..=100_000,
            bytes in 1u64..=3000,
        ) {
            let (s, e) = (a % frame, (a % frame + b).min(frame));
            prop_assume!(s < e);
            let mut c = tdd(frame, s, e);
            let t0 = c.ready_at(SimTime(start * 1000)).0;
            let end = c.tx_end(SimTime(start * 1000), bytes).0;
            prop_assert_eq!(slot_time(&c, t0, end), PHY.rate.tx_time(bytes).0);
            // The last bit goes inside a slot: the instant before the end is in one.
            prop_assert_eq!(c.ready_at(SimTime(end - 1)), SimTime(end - 1));
            prop_assert!(c.ready_at(SimTime(t0)) == SimTime(t0));
        }
    }

    #[test]
    fn validation_names_the_field() {
        let mut c = TddConfig::default();
        assert_eq!(c.validate(PHY), Ok(()));
        c.slot_ab.end = Dur::from_millis(6);
        assert_eq!(c.validate(PHY), Err(("slot_ab.end", "6ms is past the end of the 5ms frame".into())));
        c.slot_ab.end = Dur::from_millis(3);
        assert_eq!(c.validate(PHY), Err(("slot_ba", "overlaps slot_ab (the two directions take turns)".into())));
        c.slot_ab.end = Dur(0);
        assert_eq!(c.validate(PHY), Err(("slot_ab.end", "must be after slot_ab.start (0ms)".into())));
        c.frame = Dur(0);
        assert_eq!(c.validate(PHY), Err(("frame", "must be positive".into())));
    }

    /// A saturated TDD station: every serialisation starts inside its slot, its long-run
    /// throughput is rate × slot share within one frame's worth, and every packet that arrived is
    /// delivered, dropped or still held.
    #[test]
    fn station_sends_in_its_slot_at_its_share() {
        // A 5 ms frame; this station owns [1 ms, 2.25 ms): a quarter of the frame at 10 Mbit/s.
        let cfg = TddConfig {
            frame: Dur::from_millis(5),
            slot_ab: Slot { start: Dur::from_millis(1), end: Dur::from_micros(2250) },
            slot_ba: Slot { start: Dur::from_micros(2250), end: Dur::from_millis(5) },
            medium: None,
        };
        let ch = ChannelConfig::Tdd(cfg).device(PHY, LinkDir::Ab, None, SimRng::stream(1, "t"));
        let q: QueueConfig = toml::from_str("kind = 'fifo'\nlimit = '20p'").expect("parses");
        let q = q.build(&BuildCtx { mtu_bytes: 1500, rate: PHY.rate, seed: 1 });
        let mut p = Port::new("ss->bs".into(), 0, 1, 1500, q, ch, None);
        // Offered 5 Mbit/s of 1000 B packets (one every 1.6 ms) against 2.5 Mbit/s of slot.
        let (gap, end) = (1_600_000u64, 10_000_000_000u64);
        let mut ev: BinaryHeap<Reverse<(u64, u8)>> = BinaryHeap::new();
        ev.push(Reverse((0, 0)));
        let (mut delivered_bytes, mut seq, mut drops) = (0u64, 0u64, Vec::new());
        let mut tx_before = 0;
        while let Some(Reverse((t, kind))) = ev.pop() {
            if t > end {
                break;
            }
            let now = SimTime(t);
            let out = match kind {
                0 => {
                    ev.push(Reverse((t + gap, 0)));
                    seq += 1;
                    p.enqueue(pkt(0, 1000, seq), now, &mut drops)
                }
                1 => p.tx_done(now, &mut drops),
                _ => {
                    let (pk, next) = p.arrival(now);
                    delivered_bytes += pk.size_bytes as u64;
                    if let Some(n) = next {
                        ev.push(Reverse((n.0, 2)));
                    }
                    Default::default()
                }
            };
            if p.stats.tx_pkts > tx_before {
                tx_before = p.stats.tx_pkts;
                let off = t % 5_000_000;
                assert!((1_000_000..2_250_000).contains(&off), "{now}: serialisation started outside the slot");
            }
            if let Some(n) = out.tx_done_at {
                ev.push(Reverse((n.0, 1)));
            }
            if let Some(n) = out.arrival_at {
                ev.push(Reverse((n.0, 2)));
            }
        }
        let want = 2_500_000.0 * 10.0 / 8.0;
        let frame_bytes = 10_000_000.0 * 0.005 / 8.0;
        assert!(
            (delivered_bytes as f64 - want).abs() <= frame_bytes,
            "delivered {delivered_bytes} B, want {want} ± {frame_bytes}"
        );
        let s = &p.stats;
        let mut held = 0u64;
        p.for_each_packet(&mut |_| held += 1);
        assert_eq!(s.arrived_pkts, s.delivered_pkts + s.dropped_arrival_pkts + s.dropped_queued_pkts + held);
        assert_eq!(drops.len() as u64, s.dropped_arrival_pkts + s.dropped_queued_pkts);
        assert!(s.dropped_arrival_pkts > 0, "the station was not saturated");
    }
}
