//! Strict priority by DSCP (Linux `prio`, `net/sched/sch_prio.c`): N bands, each a drop-tail
//! FIFO; a dequeue serves the lowest-numbered non-empty band, so band 0 never waits behind a
//! packet of a lower band still in the queue, and a saturated higher band starves the lower ones.
//!
//! Reading list: Linux `tc-prio(8)` and `sch_prio.c` (`prio_classify`, `prio_dequeue`: bands
//! scanned from 0 on every dequeue); RFC 2474 §3 (the DSCP field), RFC 3246 (EF), RFC 2597
//! (AF), RFC 4594 §2 and Fig. 3 (which service classes use which code point);
//! `docs/models/prio.md`.
//!
//! Classification reads the packet's DSCP (`IpHdr::dscp`, set per flow or by an edge
//! classifier). The default map follows RFC 4594's grouping of service classes into three
//! treatments (when `bands` = 3):
//! - band 0 (real-time and control): EF, VOICE-ADMIT (44), CS5, CS6, CS7;
//! - band 1 (assured): AF11–AF43, CS2, CS3, CS4;
//! - band 2 (best effort and below): everything else (BE, CS1, LE, unassigned code points).
//!
//! With other band counts the middle group goes to band `min(1, bands − 1)` and the low group to
//! the last band. `map` overrides single code points.
//!
//! Not modelled: Linux's `priomap` by `skb->priority` (the socket priority; we classify by DSCP,
//! which Linux reaches with `tc filter … u32 match ip dsfield`), and child disciplines other
//! than a drop-tail FIFO per band (Linux allows any qdisc per class). Linux `pfifo` children
//! count packets; here a band's `limit` may also be in bytes.

use super::fifo::Fifo;
use super::{Backlog, Build, BuildCtx, QueueCtx, QueueDisc, Verdict};
use crate::ip::dscp::Dscp;
use crate::packet::{Packet, PacketData};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most bands (Linux `TCQ_PRIO_BANDS`).
pub const MAX_BANDS: u8 = 16;

/// `kind = "prio"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrioConfig {
    /// Number of bands, 2–16. Default 3 (Linux `prio`'s default).
    #[serde(default = "default_bands")]
    pub bands: u8,
    /// Buffer limit of each band, in packets (`"100p"`) or bytes (`"64KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// Code points mapped to a band other than the default's: keys are DSCP names or numbers
    /// (`EF = 0`, `AF41 = 1`, `"34" = 1`), values bands 0..bands−1. Default: none (the RFC 4594
    /// grouping described in the module docs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub map: BTreeMap<String, u8>,
}

fn default_bands() -> u8 {
    3
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for PrioConfig {
    fn default() -> Self {
        PrioConfig { bands: default_bands(), limit: default_limit(), map: BTreeMap::new() }
    }
}

/// The default band of code point `d` with `bands` bands (≥ 2): see the module docs.
pub fn default_band(d: Dscp, bands: u8) -> u8 {
    let v = d.value();
    let high = v == Dscp::EF.value() || v == 44 || v >= Dscp::cs(5).value() && v % 8 == 0;
    let assured = (1..=4).any(|x| (1..=3).any(|y| Dscp::af(x, y) == d)) || [2, 3, 4].map(Dscp::cs).contains(&d);
    if high {
        0
    } else if assured {
        1.min(bands - 1)
    } else {
        bands - 1
    }
}

/// Strict-priority state: one drop-tail FIFO per band (Linux: each band's child `pfifo`) and
/// the DSCP → band table.
pub struct Prio {
    /// Band of each of the 64 code points.
    band_of: [u8; 64],
    bands: Vec<Fifo>,
}

impl Prio {
    /// # Panics
    /// If `bands` is outside 2..=16 or a band in `band_of` is not below `bands`.
    pub fn new(bands: u8, limit: Limit, band_of: [u8; 64]) -> Self {
        assert!((2..=MAX_BANDS).contains(&bands), "prio needs 2..=16 bands, got {bands}");
        assert!(band_of.iter().all(|&b| b < bands), "prio map names a band beyond {bands}");
        Prio { band_of, bands: (0..bands).map(|_| Fifo::new(limit)).collect() }
    }

    /// The band a packet joins (by its DSCP).
    pub fn band(&self, pkt: &PacketData) -> usize {
        self.band_of[(pkt.ip.dscp & 63) as usize] as usize
    }
}

impl QueueDisc for Prio {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let b = self.band(&pkt);
        self.bands[b].enqueue(pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        // sch_prio.c `prio_dequeue`: the first band, from 0, that has a packet.
        self.bands.iter_mut().find_map(|q| q.dequeue(cx))
    }

    fn backlog(&self) -> Backlog {
        self.bands.iter().map(|q| q.backlog()).fold(Backlog::default(), |a, b| Backlog {
            packets: a.packets + b.packets,
            bytes: a.bytes + b.bytes,
        })
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.bands.iter().for_each(|q| q.for_each_packet(f))
    }
}

impl PrioConfig {
    /// The band of every code point: the default grouping, then `map`'s overrides.
    fn table(&self) -> Result<[u8; 64], (&'static str, String)> {
        let mut t = [0u8; 64];
        for (v, slot) in t.iter_mut().enumerate() {
            *slot = default_band(Dscp::new(v as u8).expect("v < 64"), self.bands);
        }
        for (key, &band) in &self.map {
            let d = Dscp::parse(key).map_err(|e| ("map", format!("key {key:?}: {e}")))?;
            if band >= self.bands {
                return Err(("map", format!("{key} = {band}: bands are numbered 0..{} here", self.bands - 1)));
            }
            t[d.value() as usize] = band;
        }
        Ok(t)
    }
}

impl Build for PrioConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(2..=MAX_BANDS).contains(&self.bands) {
            return Err(("bands", format!("must be within 2..=16, got {}", self.bands)));
        }
        self.table().map(|_| ())
    }
    fn build(&self, _cx: &BuildCtx) -> Box<dyn QueueDisc> {
        let t = self.table().expect("validated before build");
        Box::new(Prio::new(self.bands, self.limit, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt, Marking, Op};
    use proptest::prelude::*;

    /// A packet of `flow` marked `dscp`.
    fn marked(flow: u32, dscp: Dscp, size: u32, seq: u64) -> Packet {
        let mut p = pkt(flow, size, seq);
        p.ip.dscp = dscp.value();
        p
    }

    fn prio3() -> Prio {
        Prio::new(3, Limit::Packets(100), PrioConfig::default().table().unwrap())
    }

    #[test]
    fn default_map_groups_rfc4594_classes() {
        let b = |s: &str| default_band(Dscp::parse(s).unwrap(), 3);
        for s in ["EF", "VOICE-ADMIT", "CS5", "CS6", "CS7"] {
            assert_eq!(b(s), 0, "{s}");
        }
        for s in ["AF11", "AF23", "AF41", "AF43", "CS2", "CS3", "CS4"] {
            assert_eq!(b(s), 1, "{s}");
        }
        for s in ["BE", "CS1", "LE", "1", "63", "45"] {
            assert_eq!(b(s), 2, "{s}");
        }
        // Two bands: assured joins best effort.
        assert_eq!(default_band(Dscp::af(4, 1), 2), 1);
        assert_eq!(default_band(Dscp::EF, 2), 0);
        let c = PrioConfig { bands: 4, map: [("AF41".into(), 0), ("0".into(), 2)].into(), ..Default::default() };
        let t = c.table().unwrap();
        assert_eq!((t[34], t[0], t[10], t[46]), (0, 2, 1, 0));
    }

    /// A hand-computed trace: arrivals interleaved with dequeues; each dequeue takes the head of
    /// the first non-empty band.
    #[test]
    fn strict_priority_on_a_hand_computed_trace() {
        let mut q = prio3();
        let mut d = Vec::new();
        let be = |s| marked(2, Dscp::BE, 1500, s);
        let af = |s| marked(1, Dscp::af(4, 1), 1000, s);
        let ef = |s| marked(0, Dscp::EF, 200, s);
        // t0: BE0 BE1 AF2 arrive; dequeue → AF2 (band 1 before band 2).
        for p in [be(0), be(1), af(2)] {
            q.enqueue(p, &mut cx(&mut d));
        }
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 2);
        // EF3 arrives behind two BE packets: served next, then BE0.
        q.enqueue(ef(3), &mut cx(&mut d));
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 3);
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 0);
        // AF4, EF5, AF6 arrive: EF5, AF4, AF6 (FIFO within a band), then BE1.
        for p in [af(4), ef(5), af(6)] {
            q.enqueue(p, &mut cx(&mut d));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(&mut cx(&mut d))).map(|p| p.seq_in_flow).collect();
        assert_eq!(order, vec![5, 4, 6, 1]);
        assert_eq!(q.backlog(), Backlog::default());
    }

    /// Saturation: EF arrives at exactly the link rate (one packet per transmission time), so
    /// band 0 is never empty at a dequeue and the BE packets queued at t = 0 are never sent;
    /// they leave only after the EF burst ends. Hand-computed: 10 EF dequeues, then the 3 BE.
    #[test]
    fn low_band_starves_under_saturation() {
        let mut q = prio3();
        let mut d = Vec::new();
        for s in 0..3 {
            q.enqueue(marked(2, Dscp::BE, 1500, 100 + s), &mut cx(&mut d));
        }
        let mut served = Vec::new();
        // Each step: one EF arrival, then the link asks for the next packet.
        for s in 0..10 {
            q.enqueue(marked(0, Dscp::EF, 1500, s), &mut cx(&mut d));
            served.push(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow);
        }
        assert_eq!(served, (0..10).collect::<Vec<_>>(), "BE never sent while EF is backlogged");
        assert_eq!(q.backlog().packets, 3);
        let rest: Vec<u64> = std::iter::from_fn(|| q.dequeue(&mut cx(&mut d))).map(|p| p.seq_in_flow).collect();
        assert_eq!(rest, vec![100, 101, 102]);
    }

    #[test]
    fn each_band_has_its_own_limit() {
        let mut q = Prio::new(3, Limit::Packets(2), PrioConfig::default().table().unwrap());
        let mut d = Vec::new();
        for s in 0..2 {
            assert!(matches!(q.enqueue(marked(2, Dscp::BE, 100, s), &mut cx(&mut d)), Verdict::Enqueued));
        }
        assert!(matches!(q.enqueue(marked(2, Dscp::BE, 100, 2), &mut cx(&mut d)), Verdict::Dropped(_)));
        // A full best-effort band does not refuse EF.
        assert!(matches!(q.enqueue(marked(0, Dscp::EF, 100, 3), &mut cx(&mut d)), Verdict::Enqueued));
        let mut q = Prio::new(2, Limit::Bytes(1000), PrioConfig { bands: 2, ..Default::default() }.table().unwrap());
        assert!(matches!(q.enqueue(marked(2, Dscp::BE, 600, 0), &mut cx(&mut d)), Verdict::Enqueued));
        assert!(matches!(q.enqueue(marked(2, Dscp::BE, 401, 1), &mut cx(&mut d)), Verdict::Dropped(_)));
        assert!(matches!(q.enqueue(marked(2, Dscp::BE, 400, 2), &mut cx(&mut d)), Verdict::Enqueued));
    }

    #[test]
    fn bad_parameters_are_refused_with_their_key() {
        let bad = |c: PrioConfig| c.validate().unwrap_err();
        assert_eq!(bad(PrioConfig { bands: 1, ..Default::default() }).0, "bands");
        assert_eq!(bad(PrioConfig { bands: 17, ..Default::default() }).0, "bands");
        let e = bad(PrioConfig { map: [("AF51".into(), 0)].into(), ..Default::default() });
        assert!(e.0 == "map" && e.1.contains("AF51") && e.1.contains("0-63"), "{e:?}");
        let e = bad(PrioConfig { map: [("EF".into(), 3)].into(), ..Default::default() });
        assert!(e.0 == "map" && e.1.contains("0..2"), "{e:?}");
    }

    const MARKS: [Dscp; 4] = [Dscp::EF, Dscp::af(2, 1), Dscp::BE, Dscp::cs(1)];

    proptest! {
        /// Conservation, work conservation, and strict priority: a served packet's band is at
        /// most the band of every packet left behind (a higher band never waits behind a lower
        /// one), and within a band packets leave in arrival order.
        #[test]
        fn prio_conserves_and_never_serves_a_lower_band_first(seq in ops(6, 400), lim in 1u64..30) {
            let mut q = Marking(Prio::new(3, Limit::Packets(lim), PrioConfig::default().table().unwrap()), &MARKS);
            let mut last_seq = [None::<u64>; 8];
            drive(&mut q, &seq, |q, op, o| {
                if let (Op::Depart { .. }, Some(p)) = (op, &o.served) {
                    let band = default_band(MARKS[p.flow as usize % 4], 3);
                    q.for_each_packet(&mut |r| {
                        let rb = default_band(MARKS[r.flow as usize % 4], 3);
                        assert!(band <= rb, "served band {band} while band {rb} waited");
                    });
                    if let Some(prev) = last_seq[p.flow as usize] {
                        prop_assert!(p.seq_in_flow > prev, "flow {} out of order", p.flow);
                    }
                    last_seq[p.flow as usize] = Some(p.seq_in_flow);
                }
                Ok(())
            })?;
        }
    }
}
