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
//! Buffer overflow: LQD, the tail packet of the flow with the most bytes in either queue (ties:
//! largest key); a tail drop from the fair queue returns its length to the flow's finish tag.
//!
//! We did not have the Cross-protect pseudo-code at hand: this file implements the
//! description above, which is the behaviour BMO11 Sec. II attributes to PFQ. Not modelled:
//! Cross-protect's admission control, hashing of flows, and the "bytecount" priority-credit
//! variants of later PFQ descriptions.
//!
//! Complexity: O(log P) per packet for the tag-ordered fair queue, O(log F) for LQD and for
//! expiring flows from the ActiveList.

use super::{Backlog, Build, FlowKey, FlowKeyKind, QueueCtx, QueueDisc, Verdict};
use crate::packet::Packet;
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `kind = "pfq"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfqConfig {
    /// Shared buffer limit in packets (`"50p"`) or bytes (`"75KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// How packets map to flows. Default `"five_tuple"`.
    #[serde(default)]
    pub flow_key: FlowKeyKind,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for PfqConfig {
    fn default() -> Self {
        PfqConfig { limit: default_limit(), flow_key: FlowKeyKind::FiveTuple }
    }
}

/// Where a queued packet sits.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Slot {
    /// Priority FIFO, by arrival number.
    Prio(u64),
    /// Fair queue, by (start tag, arrival number).
    Fair(u64, u64),
}

#[derive(Default)]
struct FlowState {
    /// Finish tag of the flow's last packet, in bytes of virtual time.
    finish: u64,
    /// The flow's queued packets, oldest first.
    slots: VecDeque<Slot>,
    bytes: u64,
}

/// PFQ + LQD state.
pub struct Pfq {
    limit: Limit,
    key: FlowKeyKind,
    vtime: u64,
    next_id: u64,
    prio: BTreeMap<u64, (FlowKey, Packet)>,
    fair: BTreeMap<(u64, u64), (FlowKey, Packet)>,
    flows: BTreeMap<FlowKey, FlowState>,
    /// Flows with queued packets by `(bytes, key)`, for LQD.
    by_bytes: BTreeSet<(u64, FlowKey)>,
    /// Flows by `(finish tag, key)`, to forget those that are neither queued nor backlogged.
    by_finish: BTreeSet<(u64, FlowKey)>,
    packets: u64,
    bytes: u64,
}

impl Pfq {
    pub fn new(limit: Limit, key: FlowKeyKind) -> Self {
        Pfq {
            limit,
            key,
            vtime: 0,
            next_id: 0,
            prio: BTreeMap::new(),
            fair: BTreeMap::new(),
            flows: BTreeMap::new(),
            by_bytes: BTreeSet::new(),
            by_finish: BTreeSet::new(),
            packets: 0,
            bytes: 0,
        }
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            Limit::Packets(n) => self.packets > n,
            Limit::Bytes(b) => self.bytes > b,
        }
    }

    /// Whether `k` is in the ActiveList (its finish tag is ahead of virtual time).
    /// A flow with packets still queued counts as backlogged too, so its packets never
    /// overtake each other.
    fn backlogged(&self, k: FlowKey) -> bool {
        self.flows.get(&k).is_some_and(|f| f.finish > self.vtime || !f.slots.is_empty())
    }

    fn set_finish(&mut self, k: FlowKey, finish: u64) {
        let f = self.flows.get_mut(&k).expect("flow state exists");
        self.by_finish.remove(&(f.finish, k));
        f.finish = finish;
        self.by_finish.insert((finish, k));
    }

    /// Forgets flows that have nothing queued and are no longer backlogged. A flow whose
    /// finish tag fell behind V while it still holds packets (possible only after an LQD tail
    /// drop) is kept until it drains.
    fn expire(&mut self) {
        let stale: Vec<FlowKey> = self.by_finish.range(..=(self.vtime, FlowKey(u128::MAX))).map(|&(_, k)| k).collect();
        for k in stale {
            let f = &self.flows[&k];
            if f.slots.is_empty() {
                self.by_finish.remove(&(f.finish, k));
                self.flows.remove(&k);
            }
        }
    }

    /// Removes a packet from its flow's bookkeeping after it left `prio` or `fair`.
    fn unlink(&mut self, k: FlowKey, size: u64, back: bool) {
        let f = self.flows.get_mut(&k).expect("queued packets have flow state");
        self.by_bytes.remove(&(f.bytes, k));
        if back {
            f.slots.pop_back();
        } else {
            f.slots.pop_front();
        }
        f.bytes -= size;
        if f.bytes > 0 || !f.slots.is_empty() {
            self.by_bytes.insert((f.bytes, k));
        }
        self.packets -= 1;
        self.bytes -= size;
    }

    /// Drops the tail packet of flow `k`.
    fn drop_tail(&mut self, k: FlowKey) -> Packet {
        let slot = *self.flows[&k].slots.back().expect("longest flow has packets");
        let (_, p) = match slot {
            Slot::Prio(id) => self.prio.remove(&id),
            Slot::Fair(s, id) => self.fair.remove(&(s, id)),
        }
        .expect("slot points at a queued packet");
        let size = p.size_bytes as u64;
        self.unlink(k, size, true);
        // The tail carried the flow's latest finish tag: give its length back.
        let fin = self.flows[&k].finish.saturating_sub(size);
        self.set_finish(k, fin);
        p
    }
}

impl QueueDisc for Pfq {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let k = self.key.key(&pkt);
        let size = pkt.size_bytes as u64;
        let id = self.next_id;
        self.next_id += 1;
        let backlogged = self.backlogged(k);
        self.flows.entry(k).or_default();
        let slot = if backlogged {
            // SFQ tags: S = F_f (> V), F_f = S + L.
            let s = self.flows[&k].finish;
            self.set_finish(k, s + size);
            self.fair.insert((s, id), (k, pkt));
            Slot::Fair(s, id)
        } else {
            // Not backlogged: strict priority; the flow enters the ActiveList.
            let v = self.vtime;
            self.set_finish(k, v + size);
            self.prio.insert(id, (k, pkt));
            Slot::Prio(id)
        };
        let f = self.flows.get_mut(&k).expect("just inserted");
        if f.bytes > 0 {
            self.by_bytes.remove(&(f.bytes, k));
        }
        f.bytes += size;
        f.slots.push_back(slot);
        self.by_bytes.insert((f.bytes, k));
        self.packets += 1;
        self.bytes += size;
        // LQD.
        let mut verdict = Verdict::Enqueued;
        let mut arrival_queued = true;
        while self.over_limit() {
            let &(_, longest) = self.by_bytes.last().expect("an over-full buffer has a queued flow");
            let p = self.drop_tail(longest);
            if arrival_queued && longest == k {
                arrival_queued = false;
                verdict = Verdict::Dropped(p);
            } else {
                cx.drop_queued(p);
            }
        }
        verdict
    }

    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        let (k, p) = if let Some((_, (k, p))) = self.prio.pop_first() {
            (k, p)
        } else {
            let ((s, _), (k, p)) = self.fair.pop_first()?;
            // SFQ: virtual time is the start tag of the packet in service.
            self.vtime = self.vtime.max(s);
            (k, p)
        };
        self.unlink(k, p.size_bytes as u64, false);
        if self.packets == 0 {
            // End of a busy period: no flow stays backlogged.
            self.vtime = self.by_finish.last().map_or(self.vtime, |&(f, _)| f.max(self.vtime));
        }
        self.expire();
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        Backlog { packets: self.packets, bytes: self.bytes }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.prio.values().for_each(|(_, p)| f(p));
        self.fair.values().for_each(|(_, p)| f(p));
    }
}

impl Build for PfqConfig {
    const KIND: &'static str = "pfq";
    fn build(&self, _mtu_bytes: u32) -> Box<dyn QueueDisc> {
        Box::new(Pfq::new(self.limit, self.flow_key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{drive, ops, pkt, Op};
    use crate::time::SimTime;
    use proptest::prelude::*;

    fn cx(d: &mut Vec<Packet>) -> QueueCtx<'_> {
        QueueCtx::new(SimTime::ZERO, d)
    }

    #[test]
    fn a_new_flow_overtakes_a_backlogged_one() {
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple);
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
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple);
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
        let mut q = Pfq::new(Limit::Packets(100), FlowKeyKind::FiveTuple);
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
            let mut q = Pfq::new(limit, FlowKeyKind::FiveTuple);
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
