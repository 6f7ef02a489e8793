//! A NIC transmit ring below the queue discipline (a link's `tx_ring = N`): the device's own
//! FIFO of descriptors that the discipline fills whenever one is free, as Linux's `qdisc_run`
//! does (`__qdisc_run` → `sch_direct_xmit` → the driver's `ndo_start_xmit`, until the driver
//! stops the queue because its ring is full). Packets in the ring have left the discipline: it
//! can no longer reorder or drop them (SQF's choice, LQD's push-out and an AQM's head drop
//! see only what is still above the ring), so a deep ring turns any discipline into FIFO for
//! that many packets. Drivers of 2011 had rings of 64–256 descriptors (`e1000`: 256 by default;
//! `r8169`: 64) and no byte limit; Byte Queue Limits (Linux 3.3, 2012) cap the bytes in the ring
//! instead. Not a `kind`: it wraps whatever discipline the link has.
//!
//! Model: a ring of N descriptors holds the packet on the wire and up to N − 1 waiting; a
//! descriptor is freed when the packet's serialisation starts (not when the NIC's completion
//! interrupt arrives, which comes later: the ring is at most one packet shallower than a real
//! one). Not modelled: BQL's byte limit, interrupt coalescing, the driver's wake threshold
//! (the queue restarts as soon as one descriptor is free).

use super::{Backlog, QueueCtx, QueueDisc, Verdict};
use crate::packet::{FlowId, Packet, PacketData};
use crate::time::SimTime;
use std::collections::VecDeque;

/// The largest ring a link may declare, descriptors.
pub const MAX_DESCRIPTORS: u32 = 1 << 16;

/// The discipline `child` above a transmit ring of `descriptors` descriptors.
pub struct Ring {
    child: Box<dyn QueueDisc>,
    ring: VecDeque<Packet>,
    /// Packets the ring holds besides the one on the wire: descriptors − 1.
    waiting: usize,
    bytes: u64,
}

impl Ring {
    /// `descriptors` ≥ 1 (1: only the packet on the wire, the same as no ring).
    pub fn new(child: Box<dyn QueueDisc>, descriptors: u32) -> Ring {
        assert!((1..=MAX_DESCRIPTORS).contains(&descriptors), "tx_ring {descriptors} out of range");
        let waiting = descriptors as usize - 1;
        Ring { child, ring: VecDeque::with_capacity(waiting), waiting, bytes: 0 }
    }

    /// The discipline above the ring (for its reservation table).
    pub fn child_mut(&mut self) -> &mut dyn QueueDisc {
        self.child.as_mut()
    }

    /// The discipline above the ring.
    pub fn child(&self) -> &dyn QueueDisc {
        self.child.as_ref()
    }

    /// Moves packets from the discipline into free descriptors.
    fn refill(&mut self, cx: &mut QueueCtx) {
        while self.ring.len() < self.waiting {
            let Some(p) = self.child.dequeue(cx) else { break };
            self.bytes += p.size_bytes as u64;
            self.ring.push_back(p);
        }
    }
}

impl QueueDisc for Ring {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let v = self.child.enqueue(pkt, cx);
        self.refill(cx);
        v
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        let p = match self.ring.pop_front() {
            Some(p) => {
                self.bytes -= p.size_bytes as u64;
                Some(p)
            }
            None => self.child.dequeue(cx),
        };
        self.refill(cx);
        p
    }

    fn ready_at(&self, now: SimTime) -> Option<SimTime> {
        if self.ring.is_empty() {
            self.child.ready_at(now)
        } else {
            None
        }
    }

    fn backlog(&self) -> Backlog {
        let b = self.child.backlog();
        Backlog { packets: b.packets + self.ring.len() as u64, bytes: b.bytes + self.bytes }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.ring.iter().for_each(|p| f(p));
        self.child.for_each_packet(f)
    }

    /// The discipline's own per-flow queues (the ring is one FIFO below them).
    fn flow_backlogs(&self, f: &mut dyn FnMut(FlowId, u64)) {
        self.child.flow_backlogs(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, pkt};
    use crate::queue::{BuildCtx, QueueConfig};
    use crate::units::Rate;

    fn sqf(limit: &str) -> Box<dyn QueueDisc> {
        let cfg: QueueConfig = toml::from_str(&format!("kind = \"sqf\"\nlimit = \"{limit}\"")).unwrap();
        cfg.build(&BuildCtx { mtu_bytes: 1500, rate: Rate(10_000_000), seed: 1 })
    }

    #[test]
    fn a_ring_takes_the_scheduling_decision_away_from_the_discipline() {
        // SQF serves the shortest queue first. Flow 0 queues 6 packets, then flow 1 one packet.
        // Without a ring, flow 1's packet leaves right after the packet already on the wire
        // (it is the shortest queue); with a ring of 4 descriptors, the 3 waiting descriptors
        // already hold flow 0's packets 1..=3 in arrival order, so flow 1 waits behind them
        // (and then still goes before flow 0's longer queue above the ring).
        for (descriptors, want) in [(1u32, vec![0, 1, 0, 0, 0, 0, 0, 0]), (4, vec![0, 0, 0, 0, 1, 0, 0, 0])] {
            let mut q = Ring::new(sqf("50p"), descriptors);
            let mut d = Vec::new();
            let mut c = cx(&mut d);
            let first = {
                assert!(matches!(q.enqueue(pkt(0, 1500, 0), &mut c), Verdict::Enqueued));
                q.dequeue(&mut c).unwrap() // on the wire
            };
            for s in 1..7 {
                assert!(matches!(q.enqueue(pkt(0, 1500, s), &mut c), Verdict::Enqueued));
            }
            assert!(matches!(q.enqueue(pkt(1, 1500, 0), &mut c), Verdict::Enqueued));
            assert_eq!(q.backlog(), Backlog { packets: 7, bytes: 10500 });
            let mut order = vec![first.flow];
            while let Some(p) = q.dequeue(&mut c) {
                order.push(p.flow);
            }
            assert_eq!(order, want, "{descriptors} descriptors");
            assert_eq!(q.backlog(), Backlog::default());
        }
    }

    #[test]
    fn packets_in_the_ring_are_out_of_the_disciplines_reach() {
        // A 3-packet SQF buffer under a 5-descriptor ring: the ring holds 4 waiting packets, so
        // 7 packets fit before the discipline drops, and LQD's push-out never takes a packet
        // from the ring.
        let mut q = Ring::new(sqf("3p"), 5);
        let mut d = Vec::new();
        let mut c = cx(&mut d);
        let mut dropped = 0;
        for s in 0..10 {
            if let Verdict::Dropped(_) = q.enqueue(pkt(0, 1000, s), &mut c) {
                dropped += 1;
            }
        }
        assert_eq!(dropped + c.dropped_from_queue.len(), 3);
        assert_eq!(q.backlog().packets, 7);
        let seqs: Vec<u64> = std::iter::from_fn(|| q.dequeue(&mut c)).map(|p| p.seq_in_flow).collect();
        assert_eq!(&seqs[..4], &[0, 1, 2, 3], "the ring's packets leave in arrival order");
    }
}
