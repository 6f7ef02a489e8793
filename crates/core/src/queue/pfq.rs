//! Priority Fair Queuing (PFQ) with Longest Queue Drop: implicit service differentiation by
//! Kortebi, Oueslati and Roberts.
//!
//! Reading list: A. Kortebi, S. Oueslati, J. Roberts, "Cross-protect: implicit service
//! differentiation and admission control", IEEE HPSR 2004 (PFQ); P. Goyal, H. M. Vin, H. Cheng,
//! "Start-time Fair Queueing", SIGCOMM 1996 (the virtual clock PFQ builds on); Bonald,
//! Muscariello, Ostallo, ICC 2011, Sec. II (PFQ "gives strict priority to the packets of
//! non-backlogged flows ... backlogged flows are scheduled according to the standard FQ
//! policy"); `docs/models/pfq.md`.
//!
//! Model, following the Cross-protect description of PFQ as an extension of Start-time Fair
//! Queueing (SFQ):
//! - A virtual time `V` is the start tag of the packet last taken from the fair queue.
//!   Each flow has a finish tag `F_f`; the flow is *backlogged* (in the ActiveList) while
//!   `F_f > V`, i.e. while it has used more than its fair share of the recent past.
//! - A packet of a flow that is **not** backlogged goes to a FIFO priority queue, served
//!   before anything else; its flow's finish tag becomes `V + L` (the flow enters the
//!   ActiveList for the length of one packet).
//! - A packet of a backlogged flow gets start tag `S = F_f` and finish tag `F_f = S + L`, and
//!   joins the fair queue ordered by `S` (SFQ).
//! - When the whole discipline empties, `V` jumps to the largest finish tag so that every flow
//!   is non-backlogged again (SFQ's end of a busy period).
//!
//! Thus a flow whose rate stays below the fair rate is never backlogged and all its packets
//! get priority; a flow above the fair rate gets fair-queued.
//!
//! Buffer overflow: LQD, the tail packet of the flow with the most bytes in either queue (ties
//! per `ties`, [`TieRule`]: a seeded draw by default, the largest key as the alternative; the
//! priority FIFO and the fair queue's `(start tag, arrival number)` order are neutral already); a tail drop from the fair queue returns its length to the flow's finish tag.
//!
//! We did not have the Cross-protect pseudo-code at hand: this file implements the
//! description above, which is the behaviour BMO11 Sec. II attributes to PFQ. Not modelled:
//! Cross-protect's admission control, hashing of flows, and the "bytecount" priority-credit
//! variants of later PFQ descriptions.
//!
//! Complexity: O(log P) per packet for the tag-ordered fair queue, O(log F) for LQD and for
//! expiring flows from the ActiveList.
//!
//! The packets themselves sit in per-flow FIFOs ([`FlowQueues`], `queue/flows.rs`, shared with
//! DRR and SQF), which also keep the totals and do LQD; the priority and fair queues here only
//! order flow keys, each entry standing for the head of its flow's FIFO. That holds because a
//! flow's packets leave in arrival order: its only priority packet (if any) is its oldest, and
//! its fair packets carry non-decreasing start tags (a tail drop rewinds `F_f` to the dropped
//! packet's start tag, which no earlier packet of the flow exceeds).

use super::{Backlog, Build, BuildCtx, FlowKey, FlowKeyKind, FlowQueues, QueueCtx, QueueDisc, TieRule, Verdict};
use crate::packet::{Packet, PacketData};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `kind = "pfq"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PfqConfig {
    /// Shared buffer limit in packets (`"50p"`) or bytes (`"75KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// How packets map to flows. Default `"five_tuple"`.
    #[serde(default)]
    pub flow_key: FlowKeyKind,
    /// How equal queues are told apart (LQD's longest; the priority FIFO and the start tags are already in arrival order): `"neutral"` (default:
    /// earliest head-of-line arrival for service, a seeded draw for drops) or `"key"` (smallest
    /// key served, largest dropped). See [`TieRule`].
    #[serde(default)]
    pub ties: TieRule,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for PfqConfig {
    fn default() -> Self {
        PfqConfig { limit: default_limit(), flow_key: FlowKeyKind::FiveTuple, ties: TieRule::Neutral }
    }
}

/// Where a queued packet sits (its tag in [`FlowQueues`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Slot {
    /// Priority FIFO, by arrival number.
    Prio(u64),
    /// Fair queue, by (start tag, arrival number).
    Fair(u64, u64),
}

/// Finish tags of the flows PFQ remembers (queued, or backlogged in the ActiveList), with an
/// index by `(finish tag, key)` to forget those that fall behind virtual time.
#[derive(Default)]
struct FinishTags {
    /// Finish tag of each flow's last packet, in bytes of virtual time.
    tag: BTreeMap<FlowKey, u64>,
    by_tag: BTreeSet<(u64, FlowKey)>,
}

impl FinishTags {
    fn get(&self, k: FlowKey) -> Option<u64> {
        self.tag.get(&k).copied()
    }

    fn set(&mut self, k: FlowKey, finish: u64) {
        if let Some(old) = self.tag.insert(k, finish) {
            self.by_tag.remove(&(old, k));
        }
        self.by_tag.insert((finish, k));
    }

    fn forget(&mut self, k: FlowKey) {
        if let Some(old) = self.tag.remove(&k) {
            self.by_tag.remove(&(old, k));
        }
    }
}

/// PFQ + LQD state.
pub struct Pfq {
    limit: Limit,
    key: FlowKeyKind,
    vtime: u64,
    next_id: u64,
    /// Priority FIFO: arrival number -> flow whose head packet it is.
    prio: BTreeMap<u64, FlowKey>,
    /// Fair queue: (start tag, arrival number) -> flow whose head packet it is.
    fair: BTreeMap<(u64, u64), FlowKey>,
    /// The packets, per flow, each tagged with its slot; totals and LQD.
    queues: FlowQueues<Slot>,
    finish: FinishTags,
    /// Scratch for [`Pfq::expire`], kept to avoid an allocation per departure.
    stale: Vec<FlowKey>,
}

impl Pfq {
    pub fn new(limit: Limit, key: FlowKeyKind, ties: TieRule, seed: u64) -> Self {
        Pfq {
            limit,
            key,
            vtime: 0,
            next_id: 0,
            prio: BTreeMap::new(),
            fair: BTreeMap::new(),
            queues: FlowQueues::new(ties, seed),
            finish: FinishTags::default(),
            stale: Vec::new(),
        }
    }

    /// Whether `k` is in the ActiveList (its finish tag is ahead of virtual time).
    /// A flow with packets still queued counts as backlogged too, so its packets never
    /// overtake each other.
    fn backlogged(&self, k: FlowKey) -> bool {
        self.finish.get(k).is_some_and(|f| f > self.vtime) || self.queues.contains(k)
    }

    /// Forgets flows that have nothing queued and are no longer backlogged. A flow whose
    /// finish tag fell behind V while it still holds packets (possible only after an LQD tail
    /// drop) is kept until it drains.
    fn expire(&mut self) {
        self.stale.clear();
        self.stale.extend(self.finish.by_tag.range(..=(self.vtime, FlowKey(u128::MAX))).map(|&(_, k)| k));
        for &k in &self.stale {
            if !self.queues.contains(k) {
                self.finish.forget(k);
            }
        }
    }
}

impl QueueDisc for Pfq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let k = self.key.key(&pkt);
        let size = pkt.size_bytes as u64;
        let id = self.next_id;
        self.next_id += 1;
        let slot = if self.backlogged(k) {
            // SFQ tags: S = F_f (> V), F_f = S + L.
            let s = self.finish.get(k).expect("a backlogged flow has a finish tag");
            self.finish.set(k, s + size);
            self.fair.insert((s, id), k);
            Slot::Fair(s, id)
        } else {
            // Not backlogged: strict priority; the flow enters the ActiveList.
            self.finish.set(k, self.vtime + size);
            self.prio.insert(id, k);
            Slot::Prio(id)
        };
        // LQD.
        let (prio, fair, finish) = (&mut self.prio, &mut self.fair, &mut self.finish);
        self.queues.enqueue_lqd(k, pkt, slot, self.limit, cx, |e| {
            match e.tag {
                Slot::Prio(id) => prio.remove(&id),
                Slot::Fair(s, id) => fair.remove(&(s, id)),
            }
            .expect("slot points at a queued packet");
            // The tail carried the flow's latest finish tag: give its length back.
            let fin = finish.get(e.flow).expect("queued flows have a finish tag");
            finish.set(e.flow, fin.saturating_sub(e.packet.size_bytes as u64));
        })
    }

    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        let (k, slot) = if let Some((id, k)) = self.prio.pop_first() {
            (k, Slot::Prio(id))
        } else {
            let ((s, id), k) = self.fair.pop_first()?;
            // SFQ: virtual time is the start tag of the packet in service.
            self.vtime = self.vtime.max(s);
            (k, Slot::Fair(s, id))
        };
        let r = self.queues.pop_front(k).expect("a scheduled flow has packets");
        debug_assert_eq!(r.tag, slot, "PFQ entry is not the head of flow {k:?}");
        if self.queues.packets() == 0 {
            // End of a busy period: no flow stays backlogged.
            self.vtime = self.finish.by_tag.last().map_or(self.vtime, |&(f, _)| f.max(self.vtime));
        }
        self.expire();
        Some(r.packet)
    }

    fn backlog(&self) -> Backlog {
        self.queues.backlog()
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.queues.for_each_packet(f)
    }
}

impl Build for PfqConfig {
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Pfq::new(self.limit, self.flow_key, self.ties, cx.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt, Op};
    use proptest::prelude::*;

    #[test]
    fn a_new_flow_overtakes_a_backlogged_one() {
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(0, 1500, i), &mut cx(&mut d));
        }
        // Flow 0's first packet had priority; serve it, then flow 1 arrives.
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 0);
        q.enqueue(pkt(1, 200, 10), &mut cx(&mut d));
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().flow, 1, "non-backlogged flow first");
    }

    #[test]
    fn backlogged_flows_share_fairly() {
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..6 {
            q.enqueue(pkt(0, 1000, i), &mut cx(&mut d));
            q.enqueue(pkt(1, 1000, 100 + i), &mut cx(&mut d));
        }
        let flows: Vec<u32> = std::iter::from_fn(|| q.dequeue(&mut cx(&mut d))).map(|p| p.flow).collect();
        // Both first packets by priority, then SFQ alternation.
        assert_eq!(flows, vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn a_slow_flow_keeps_priority_against_a_saturating_one() {
        // Flow 0 keeps 20 packets queued; flow 1 sends one packet every 10 departures (a tenth
        // of the link, below the fair half): every flow-1 packet goes out next.
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        let mut seq = 0;
        for _ in 0..20 {
            q.enqueue(pkt(0, 1000, seq), &mut cx(&mut d));
            seq += 1;
        }
        // Flow 0's first packet had priority (it was not backlogged then).
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 0);
        for round in 0..50 {
            if round % 10 == 0 {
                q.enqueue(pkt(1, 1000, 10_000 + round), &mut cx(&mut d));
                assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().flow, 1, "round {round}");
            } else {
                assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().flow, 0);
            }
            q.enqueue(pkt(0, 1000, seq), &mut cx(&mut d));
            seq += 1;
        }
    }

    proptest! {
        /// Conservation, work conservation, per-flow FIFO order, LQD drops from a longest flow.
        #[test]
        fn pfq_conserves_and_drops_longest(seq in ops(6, 400), lim in 1u64..30, bytes_limit in any::<bool>()) {
            let limit = if bytes_limit { Limit::Bytes(lim * 700) } else { Limit::Packets(lim) };
            let mut q = Pfq::new(limit, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
            let mut last_served = std::collections::BTreeMap::new();
            drive(&mut q, &seq, |_, op, o| {
                if let Some(p) = &o.served {
                    if let Some(prev) = last_served.insert(p.flow, p.seq_in_flow) {
                        prop_assert!(prev < p.seq_in_flow, "flow {} reordered", p.flow);
                    }
                }
                if let Op::Arrive { flow, size, .. } = op {
                    let mut state = o.before.clone();
                    *state.entry(*flow).or_insert(0) += *size as u64;
                    let mut drops: Vec<(u32, u64)> = o.pushed_out.iter().map(|p| (p.flow, p.size_bytes as u64)).collect();
                    if !o.accepted {
                        drops.push((*flow, *size as u64));
                    }
                    for (f, s) in drops {
                        let max = state.values().copied().max().unwrap();
                        prop_assert_eq!(state[&f], max, "dropped from flow {} which is not a longest queue", f);
                        *state.get_mut(&f).unwrap() -= s;
                    }
                }
                Ok(())
            })?;
        }
    }
}
