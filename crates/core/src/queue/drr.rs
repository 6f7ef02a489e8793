//! Fair queuing by Deficit Round Robin with Longest Queue Drop (DRR + LQD): the "FQ" of the
//! SQF paper's testbed (Bonald, Muscariello, Ostallo, ICC 2011, Sec. V-A: "FQ (DRR algorithm
//! with LQD)").
//!
//! Reading list: M. Shreedhar, G. Varghese, "Efficient Fair Queuing using Deficit Round Robin",
//! SIGCOMM 1995 (the round and the deficit counter); B. Suter, T. V. Lakshman, D. Stiliadis,
//! A. K. Choudhury, "Design considerations for supporting TCP with per-flow queueing",
//! INFOCOM 1998 (why FQ needs LQD); `docs/models/drr.md`.
//!
//! One FIFO per active flow and a round-robin list of active flows (Shreedhar–Varghese's
//! ActiveList). Served packet by packet, which is equivalent to the paper's per-visit loop:
//! - the flow at the head of the list sends its head packet if the packet fits its deficit
//!   counter, which is then reduced by the packet size;
//! - otherwise the flow's deficit grows by one quantum and the flow moves to the tail
//!   (it has finished its turn in this round);
//! - a flow that becomes empty leaves the list and its deficit resets to 0 (DRR §3: "the
//!   deficit counter is reset to 0 when a queue becomes empty"), so idle flows bank no credit;
//! - a flow that becomes active joins the tail of the list with one quantum of deficit.
//!
//! Buffer overflow: the tail packet of the flow with the most bytes queued is dropped (LQD;
//! possibly the arrival itself). Ties among equally long flows follow `ties` ([`TieRule`]: a
//! seeded draw by default, the largest key as the alternative); the round itself is neutral
//! (flows join its tail in arrival order). Flow selection is O(1)
//! amortised for the round robin (O(max packet / quantum) visits per packet) and O(log F) for
//! LQD. The per-flow queues and LQD are [`FlowQueues`]'s (`queue/flows.rs`), shared with SQF
//! and PFQ; this file keeps only the round and the deficits.
//!
//! Not modelled: weights (every flow gets the same quantum), hashing of flows into a fixed
//! number of buckets (flows are keyed exactly).

use super::{Backlog, Build, BuildCtx, FlowKey, FlowKeyKind, FlowQueues, QueueCtx, QueueDisc, TieRule, Verdict};
use crate::packet::{Packet, PacketData};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `kind = "drr"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrrConfig {
    /// Shared buffer limit in packets (`"50p"`) or bytes (`"75KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// Bytes of credit a flow gains per round. Default: the link MTU (Shreedhar–Varghese §3
    /// recommend a quantum of at least the largest packet, which makes the work per packet O(1)).
    /// Range: ≥ 1 B (a zero quantum would never let a packet out).
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u64>,
    /// How packets map to flows. Default `"five_tuple"`.
    #[serde(default)]
    pub flow_key: FlowKeyKind,
    /// How equal queues are told apart (LQD's longest; DRR's round is already in arrival order): `"neutral"` (default:
    /// earliest head-of-line arrival for service, a seeded draw for drops) or `"key"` (smallest
    /// key served, largest dropped). See [`TieRule`].
    #[serde(default)]
    pub ties: TieRule,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for DrrConfig {
    fn default() -> Self {
        DrrConfig { limit: default_limit(), quantum: None, flow_key: FlowKeyKind::FiveTuple, ties: TieRule::Neutral }
    }
}

/// DRR + LQD state.
pub struct Drr {
    limit: Limit,
    quantum: u64,
    key: FlowKeyKind,
    /// The active flows' queues (a flow is present exactly while it has packets).
    queues: FlowQueues,
    /// The flows with packets, in round order, with their deficits.
    active: DeficitRound<FlowKey>,
}

/// Shreedhar–Varghese's ActiveList: exactly the queues with packets, in round order, each with
/// its deficit counter in bytes. A queue's deficit lives only while it is in the list, so an
/// emptied queue's credit is gone (reset to 0) without further bookkeeping. Shared by `drr`
/// (flows, one quantum) and `wdrr` (DSCP classes, a quantum each).
pub(crate) struct DeficitRound<K> {
    active: VecDeque<(K, u64)>,
}

impl<K: Copy + PartialEq> DeficitRound<K> {
    pub(crate) fn new() -> Self {
        DeficitRound { active: VecDeque::new() }
    }
    /// A newly active queue joins the tail of the round with one quantum.
    pub(crate) fn join(&mut self, k: K, quantum: u64) {
        self.active.push_back((k, quantum));
    }
    /// Removes a queue that emptied anywhere in the round (O(n)).
    pub(crate) fn remove(&mut self, k: K) {
        let i = self.active.iter().position(|&(x, _)| x == k).expect("present queues are in the round");
        self.active.remove(i);
    }
    /// The queue that sends next: the head of the round if its head packet (`head(k)` bytes)
    /// fits its deficit, which is then reduced; otherwise the head gains `quantum(k)` and moves
    /// to the tail (its turn in this round is over). `None` when the round is empty. The caller
    /// pops the packet and calls [`Self::emptied`] if that emptied the queue.
    pub(crate) fn next(&mut self, head: impl Fn(K) -> u64, quantum: impl Fn(K) -> u64) -> Option<K> {
        loop {
            let (k, deficit) = self.active.front_mut()?;
            let size = head(*k);
            if size <= *deficit {
                *deficit -= size;
                return Some(*k);
            }
            *deficit += quantum(*k);
            self.active.rotate_left(1);
        }
    }
    /// The queue just served (the head of the round) has emptied: it leaves, with its deficit.
    pub(crate) fn emptied(&mut self) {
        self.active.pop_front();
    }
}

impl Drr {
    /// # Panics
    /// If `quantum_bytes` is 0 (a flow would never earn credit).
    pub fn new(limit: Limit, quantum_bytes: u64, key: FlowKeyKind, ties: TieRule, seed: u64) -> Self {
        assert!(quantum_bytes > 0, "DRR quantum must be at least 1 byte");
        Drr { limit, quantum: quantum_bytes, key, queues: FlowQueues::new(ties, seed), active: DeficitRound::new() }
    }
}

impl QueueDisc for Drr {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let k = self.key.key(&pkt);
        if self.queues.push_back(k, pkt, ()) {
            // A newly active flow joins the tail of the round with one quantum.
            self.active.join(k, self.quantum);
        }
        // LQD (Suter et al.): drop from the flow with the most bytes until the buffer fits.
        let active = &mut self.active;
        self.queues.lqd(k, self.limit, cx, |e| {
            if e.flow_emptied {
                // A push-out may empty a flow anywhere in the list (O(F), only when LQD
                // empties a whole flow).
                active.remove(e.flow);
            }
        })
    }

    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        let (queues, quantum) = (&self.queues, self.quantum);
        let k = self.active.next(|k| queues.front(k).expect("active flows are non-empty").size_bytes as u64, |_| quantum)?;
        let r = self.queues.pop_front(k).expect("active flows are non-empty");
        if r.flow_emptied {
            // The flow leaves the round, and its deficit with it.
            self.active.emptied();
        }
        Some(r.packet)
    }

    fn backlog(&self) -> Backlog {
        self.queues.backlog()
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.queues.for_each_packet(f)
    }
}

impl Build for DrrConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        match self.quantum {
            Some(0) => Err(("quantum", "must be ≥ 1 B, got 0 B".into())),
            _ => Ok(()),
        }
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Drr::new(self.limit, self.quantum.unwrap_or(cx.mtu_bytes as u64), self.flow_key, self.ties, cx.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt, Op};
    use proptest::prelude::*;

    #[test]
    fn equal_sizes_alternate_round_robin() {
        let mut q = Drr::new(Limit::Packets(100), 1500, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..3 {
            q.enqueue(pkt(0, 1500, i), &mut cx(&mut d));
        }
        for i in 3..6 {
            q.enqueue(pkt(1, 1500, i), &mut cx(&mut d));
        }
        let flows: Vec<u32> = std::iter::from_fn(|| q.dequeue(&mut cx(&mut d))).map(|p| p.flow).collect();
        assert_eq!(flows, vec![0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn deficit_lets_small_packets_share_bytes_not_packets() {
        // Quantum 1500: flow 0 sends one 1500 B packet per round, flow 1 three 500 B packets.
        let mut q = Drr::new(Limit::Packets(100), 1500, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..4 {
            q.enqueue(pkt(0, 1500, i), &mut cx(&mut d));
        }
        for i in 0..12 {
            q.enqueue(pkt(1, 500, 100 + i), &mut cx(&mut d));
        }
        let first: Vec<u32> = (0..8).map(|_| q.dequeue(&mut cx(&mut d)).unwrap().flow).collect();
        assert_eq!(first, vec![0, 1, 1, 1, 0, 1, 1, 1]);
    }

    #[test]
    fn lqd_protects_the_short_flow() {
        let mut q = Drr::new(Limit::Packets(4), 1500, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..4 {
            q.enqueue(pkt(0, 1500, i), &mut cx(&mut d));
        }
        assert!(matches!(q.enqueue(pkt(1, 200, 9), &mut cx(&mut d)), Verdict::Enqueued));
        assert_eq!((d[0].flow, d[0].seq_in_flow), (0, 3));
    }

    #[test]
    fn small_quantum_still_serves() {
        let mut q = Drr::new(Limit::Packets(10), 100, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        q.enqueue(pkt(0, 1500, 0), &mut cx(&mut d));
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().seq_in_flow, 0);
    }

    proptest! {
        /// Conservation, work conservation, and LQD drops from a flow of maximal backlog.
        #[test]
        fn drr_conserves_and_drops_longest(seq in ops(6, 400), lim in 1u64..30, quantum in 1u64..3000) {
            let mut q = Drr::new(Limit::Packets(lim), quantum, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
            drive(&mut q, &seq, |_, op, o| {
                if let Op::Arrive { flow, size, .. } = op {
                    let mut state = o.before.clone();
                    *state.entry(*flow).or_insert(0) += *size as u64;
                    let max = state.values().copied().max().unwrap();
                    for p in &o.pushed_out {
                        prop_assert_eq!(state[&p.flow], max, "pushed out of flow {} which is not a longest queue", p.flow);
                    }
                    if !o.accepted {
                        prop_assert_eq!(state[flow], max, "arrival of flow {} refused though not longest", flow);
                    }
                }
                Ok(())
            })?;
        }

        /// Long-run shares: flows kept permanently backlogged with random packet sizes get
        /// byte shares within 1 % of equal.
        #[test]
        fn drr_backlogged_shares_are_equal(nflows in 2u32..6, quantum in 200u64..3000, sizes in proptest::collection::vec(40u32..1500, 64)) {
            let mut q = Drr::new(Limit::Packets(10_000), quantum, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
            let mut d = Vec::new();
            let mut served = vec![0u64; nflows as usize];
            let mut next = 0usize;
            let mut seq = 0u64;
            // Keep every flow at >= 4 packets so all stay backlogged.
            let mut queued = vec![0u32; nflows as usize];
            for f in 0..nflows {
                for _ in 0..4 {
                    q.enqueue(pkt(f, sizes[next % sizes.len()], seq), &mut cx(&mut d));
                    next += 1;
                    seq += 1;
                    queued[f as usize] += 1;
                }
            }
            for _ in 0..20_000 {
                let p = q.dequeue(&mut cx(&mut d)).unwrap();
                served[p.flow as usize] += p.size_bytes as u64;
                queued[p.flow as usize] -= 1;
                if queued[p.flow as usize] < 4 {
                    // Flow-specific size sequences: flow f cycles through sizes offset by f.
                    let s = sizes[(next + 7 * p.flow as usize) % sizes.len()];
                    q.enqueue(pkt(p.flow, s, seq), &mut cx(&mut d));
                    next += 1;
                    seq += 1;
                    queued[p.flow as usize] += 1;
                }
            }
            let total: u64 = served.iter().sum();
            let fair = total as f64 / nflows as f64;
            for (f, s) in served.iter().enumerate() {
                prop_assert!((*s as f64 - fair).abs() <= 0.01 * fair, "flow {f}: {s} bytes vs fair {fair:.0}");
            }
            prop_assert!(d.is_empty());
        }
    }
}
