//! Drop-tail FIFO: packets leave in arrival order; an arrival that would exceed the limit is
//! dropped. The limit counts packets (`"50p"`) or bytes (`"64KB"`).
//!
//! Not modelled: a separate device queue below the discipline (ns-3's point-to-point device keeps
//! its own 100-packet queue; here the discipline is the only buffer).

use super::{Backlog, Build, QueueCtx, QueueDisc, Verdict};
use crate::packet::{Packet, PacketData};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `kind = "fifo"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FifoConfig {
    /// Buffer limit in packets (`"100p"`) or bytes (`"64KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for FifoConfig {
    fn default() -> Self {
        FifoConfig { limit: default_limit() }
    }
}

/// A drop-tail FIFO.
pub struct Fifo {
    limit: Limit,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    pub fn new(limit: Limit) -> Self {
        Fifo { limit, q: VecDeque::new(), bytes: 0 }
    }

    /// The packet that leaves next.
    pub fn front(&self) -> Option<&PacketData> {
        self.q.front().map(|p| &**p)
    }
}

impl QueueDisc for Fifo {
    fn enqueue(&mut self, pkt: Packet, _cx: &mut QueueCtx) -> Verdict {
        let full = super::over_limit(self.limit, self.q.len() as u64, self.bytes, pkt.size_bytes);
        if full {
            return Verdict::Dropped(pkt);
        }
        self.bytes += pkt.size_bytes as u64;
        self.q.push_back(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size_bytes as u64;
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        Backlog { packets: self.q.len() as u64, bytes: self.bytes }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.q.iter().for_each(|p| f(p))
    }
}

impl Build for FifoConfig {
    fn build(&self, _cx: &super::BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Fifo::new(self.limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;
    use crate::time::SimTime;
    use proptest::prelude::*;

    #[test]
    fn packet_limit_drops_tail_and_keeps_order() {
        let mut f = Fifo::new(Limit::Packets(2));
        let mut d = Vec::new();
        let mut cx = QueueCtx::new(SimTime::ZERO, &mut d);
        assert!(matches!(f.enqueue(pkt(0, 100, 0), &mut cx), Verdict::Enqueued));
        assert!(matches!(f.enqueue(pkt(0, 100, 1), &mut cx), Verdict::Enqueued));
        match f.enqueue(pkt(0, 100, 2), &mut cx) {
            Verdict::Dropped(p) => assert_eq!(p.seq_in_flow, 2),
            v => panic!("expected drop, got {v:?}"),
        }
        assert_eq!(f.dequeue(&mut cx).unwrap().seq_in_flow, 0);
        assert_eq!(f.dequeue(&mut cx).unwrap().seq_in_flow, 1);
        assert!(f.dequeue(&mut cx).is_none());
    }

    #[test]
    fn byte_limit_admits_exactly_to_limit() {
        let mut f = Fifo::new(Limit::Bytes(1000));
        let mut d = Vec::new();
        let mut cx = QueueCtx::new(SimTime::ZERO, &mut d);
        assert!(matches!(f.enqueue(pkt(0, 600, 0), &mut cx), Verdict::Enqueued));
        assert!(matches!(f.enqueue(pkt(0, 401, 1), &mut cx), Verdict::Dropped(_)));
        assert!(matches!(f.enqueue(pkt(0, 400, 2), &mut cx), Verdict::Enqueued));
        assert_eq!(f.backlog(), Backlog { packets: 2, bytes: 1000 });
    }

    proptest! {
        /// arrived = enqueued + dropped; enqueued = dequeued + backlog; bytes never exceed the limit.
        #[test]
        fn conservation(ops in proptest::collection::vec((any::<bool>(), 40u32..1500), 1..400), lim in 1u64..20) {
            let mut f = Fifo::new(Limit::Packets(lim));
            let mut d = Vec::new();
            let (mut arrived, mut enq, mut dropped, mut deq) = (0u64, 0u64, 0u64, 0u64);
            for (i, (is_enq, size)) in ops.into_iter().enumerate() {
                let mut cx = QueueCtx::new(SimTime(i as u64), &mut d);
                if is_enq {
                    arrived += 1;
                    match f.enqueue(pkt(0, size, i as u64), &mut cx) {
                        Verdict::Enqueued => enq += 1,
                        Verdict::Dropped(_) => dropped += 1,
                    }
                } else if f.dequeue(&mut cx).is_some() {
                    deq += 1;
                }
                prop_assert!(f.backlog().packets <= lim);
                prop_assert_eq!(arrived, enq + dropped);
                prop_assert_eq!(enq, deq + f.backlog().packets);
                let mut sum = 0u64;
                f.for_each_packet(&mut |p| sum += p.size_bytes as u64);
                prop_assert_eq!(sum, f.backlog().bytes);
            }
        }
    }
}
