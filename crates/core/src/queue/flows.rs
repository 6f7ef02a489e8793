//! Per-flow FIFO queues with Longest Queue Drop: the buffer that DRR, SQF and PFQ share.
//!
//! Reading list: B. Suter, T. V. Lakshman, D. Stiliadis, A. K. Choudhury, "Design
//! considerations for supporting TCP with per-flow queueing", INFOCOM 1998 (LQD); Bonald,
//! Muscariello, Ostallo, ICC 2011, Algorithm 1 (`get_shortest`, `get_longest`).
//!
//! [`FlowQueues`] holds one FIFO per *active* flow (a flow with at least one packet queued),
//! keyed by [`FlowKey`], with the byte and packet totals and an ordered index of the active
//! flows by `(bytes queued, key)`. It answers "which flow is shortest / longest in bytes" in
//! O(log F) and applies the LQD overflow policy in [`FlowQueues::enqueue_lqd`] (or
//! [`FlowQueues::push_back`] then [`FlowQueues::lqd`], for a discipline that must note a newly
//! present flow before any drop). It makes no scheduling decision: the discipline that owns it
//! chooses which flow to serve (DRR's round, SQF's shortest flow, PFQ's priority and start
//! tags) and keeps its own per-flow state.
//!
//! Each packet may carry a tag `T` chosen by the discipline (PFQ records where the packet sits
//! in its service order); DRR and SQF use `()`.
//!
//! Invariants, kept by every operation and checked by the tests below:
//! - a flow is present exactly while its FIFO is non-empty (an emptied flow is forgotten);
//! - a flow's `bytes` is the sum of its packets' sizes;
//! - the index holds exactly one `(bytes, key)` entry per present flow;
//! - the totals are the sums over all flows.
//!
//! Ties between equal queues follow the discipline's [`TieRule`]. Under the default,
//! [`TieRule::Neutral`], no flow gains by its key: [`FlowQueues::shortest`] picks, among the
//! flows with the fewest bytes, the one whose head packet arrived first (arrivals are numbered
//! as they are pushed), and [`FlowQueues::longest`] draws uniformly among the flows with the
//! most bytes from the discipline's own seeded stream. Under [`TieRule::Key`] the smallest key
//! is served and the largest dropped: deterministic, but the key (the sender's address and
//! port) decides. Either way a run is reproducible from its seed. Emptied FIFOs are kept for reuse, so a flow that
//! comes and goes does not allocate a new FIFO each time (the ordered map and index still
//! allocate and free tree nodes as flows come and go).

use super::{Backlog, FlowKey, QueueCtx, Verdict};
use crate::engine::SimRng;
use crate::packet::{Packet, PacketData};
use crate::units::Limit;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// How a per-flow discipline chooses among queues of equal length (in bytes): which one to
/// serve (SQF's shortest) and which one to drop from (LQD's longest).
///
/// BMO11 Algorithm 1 and Suter et al. leave ties open. They are frequent: a TCP segment and
/// an ES video packet are both 1,500 B, so two flows holding one packet each are equal.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TieRule {
    /// No flow gains by its key or name: among equally short queues, serve the one whose head
    /// packet arrived first (FIFO between equals); among equally long queues, drop from one
    /// drawn uniformly from the discipline's seeded stream.
    #[default]
    Neutral,
    /// By flow key: the smallest key is served and the largest dropped. Deterministic without
    /// a random stream, but biased: a flow's address and port decide who loses every tie.
    Key,
}

struct Flow<T> {
    /// Packets in arrival order, each with its tag and arrival number.
    q: VecDeque<(Packet, T, u64)>,
    bytes: u64,
}

/// A packet taken out of its flow's FIFO: by a pop, or by LQD (then shown to the owning
/// discipline before it is dropped, so the discipline can update its own per-flow state).
#[derive(Debug)]
pub struct Removed<T> {
    /// The flow it left.
    pub flow: FlowKey,
    pub packet: Packet,
    /// The tag it was queued with.
    pub tag: T,
    /// Whether its removal emptied the flow, which is then no longer present.
    pub flow_emptied: bool,
}

/// Per-flow FIFOs, totals and the `(bytes, rank, key)` index. See the module docs.
pub struct FlowQueues<T = ()> {
    flows: BTreeMap<FlowKey, Flow<T>>,
    /// Present flows ordered by `(bytes queued, rank, key)`; the rank is the head packet's
    /// arrival number under [`TieRule::Neutral`] and 0 under [`TieRule::Key`].
    by_bytes: BTreeSet<(u64, u64, FlowKey)>,
    packets: u64,
    bytes: u64,
    /// Emptied FIFOs, kept for reuse (their capacity stays at its peak).
    spare: Vec<VecDeque<(Packet, T, u64)>>,
    ties: TieRule,
    /// Draws among equally long queues ([`TieRule::Neutral`] only).
    rng: SimRng,
    /// Arrivals pushed so far: the next packet's arrival number.
    arrivals: u64,
}

impl<T> FlowQueues<T> {
    /// Empty queues breaking ties by `ties`; `seed` keys the stream that draws among equally
    /// long queues (the port's queue seed, [`BuildCtx::seed`](super::BuildCtx)).
    pub fn new(ties: TieRule, seed: u64) -> Self {
        FlowQueues {
            flows: BTreeMap::new(),
            by_bytes: BTreeSet::new(),
            packets: 0,
            bytes: 0,
            spare: Vec::new(),
            ties,
            rng: SimRng::stream(seed, "flow-queues:ties"),
            arrivals: 0,
        }
    }

    /// Packets and bytes queued over all flows.
    pub fn backlog(&self) -> Backlog {
        Backlog { packets: self.packets, bytes: self.bytes }
    }

    /// Packets queued over all flows.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Whether the totals exceed `limit` (packets or bytes).
    pub fn over(&self, limit: Limit) -> bool {
        match limit {
            Limit::Packets(n) => self.packets > n,
            Limit::Bytes(b) => self.bytes > b,
        }
    }

    /// Whether flow `k` has packets queued.
    pub fn contains(&self, k: FlowKey) -> bool {
        self.flows.contains_key(&k)
    }

    /// Bytes queued by flow `k` (0 if it has none).
    pub fn flow_bytes(&self, k: FlowKey) -> u64 {
        self.flows.get(&k).map_or(0, |f| f.bytes)
    }

    /// The head packet of flow `k`.
    pub fn front(&self, k: FlowKey) -> Option<&PacketData> {
        self.flows.get(&k).and_then(|f| f.q.front()).map(|(p, _, _)| &**p)
    }

    /// The flow with the fewest bytes queued. Ties ([`TieRule`]): the earliest head-of-line
    /// arrival (neutral) or the smallest key.
    pub fn shortest(&self) -> Option<FlowKey> {
        self.by_bytes.first().map(|&(_, _, k)| k)
    }

    /// The flow with the most bytes queued. Ties ([`TieRule`]): a uniform draw from the
    /// seeded stream (neutral; O(number of tied flows)) or the largest key. Under the neutral
    /// rule the stream is consumed only when there is a tie.
    pub fn longest(&mut self) -> Option<FlowKey> {
        let &(max, _, last) = self.by_bytes.last()?;
        if self.ties == TieRule::Key {
            return Some(last);
        }
        let tied = self.by_bytes.range((max, 0, FlowKey(0))..).count();
        if tied == 1 {
            return Some(last);
        }
        let pick = (self.rng.next_u64() % tied as u64) as usize;
        self.by_bytes.range((max, 0, FlowKey(0))..).nth(pick).map(|&(_, _, k)| k)
    }

    /// Every present flow's key, head packet and bytes queued, in key order.
    pub fn heads(&self) -> impl Iterator<Item = (FlowKey, &PacketData, u64)> + '_ {
        self.flows.iter().map(|(&k, f)| (k, &*f.q.front().expect("present flows are non-empty").0, f.bytes))
    }

    /// Every queued packet, flow by flow in key order, FIFO order within a flow.
    pub fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        for fl in self.flows.values() {
            fl.q.iter().for_each(|(p, _, _)| f(p));
        }
    }

    /// Appends `pkt` with `tag` to flow `k`'s FIFO, whatever the limit. Returns whether the
    /// flow was not present before (it is now).
    #[inline]
    pub fn push_back(&mut self, k: FlowKey, pkt: Packet, tag: T) -> bool {
        let size = pkt.size_bytes as u64;
        let arrival = self.arrivals;
        self.arrivals += 1;
        let ties = self.ties;
        let spare = &mut self.spare;
        let f = self.flows.entry(k).or_insert_with(|| Flow { q: spare.pop().unwrap_or_default(), bytes: 0 });
        let new = f.q.is_empty();
        let head = f.q.front().map_or(arrival, |e| e.2);
        let rank = if ties == TieRule::Neutral { head } else { 0 };
        if !new {
            let removed = self.by_bytes.remove(&(f.bytes, rank, k));
            debug_assert!(removed, "flow index out of step for {k:?}");
        }
        f.bytes += size;
        f.q.push_back((pkt, tag, arrival));
        self.by_bytes.insert((f.bytes, rank, k));
        self.packets += 1;
        self.bytes += size;
        new
    }

    /// Removes the head packet of flow `k`; `None` if the flow has no packets.
    #[inline(always)]
    pub fn pop_front(&mut self, k: FlowKey) -> Option<Removed<T>> {
        self.take(k, false)
    }

    /// Removes the tail (most recent) packet of flow `k`; `None` if the flow has no packets.
    #[inline(always)]
    pub fn pop_back(&mut self, k: FlowKey) -> Option<Removed<T>> {
        self.take(k, true)
    }

    #[inline(always)]
    fn take(&mut self, k: FlowKey, back: bool) -> Option<Removed<T>> {
        let ties = self.ties;
        let rank = |f: &Flow<T>| match ties {
            TieRule::Neutral => f.q.front().expect("present flows are non-empty").2,
            TieRule::Key => 0,
        };
        let f = self.flows.get_mut(&k)?;
        let removed = self.by_bytes.remove(&(f.bytes, rank(f), k));
        debug_assert!(removed, "flow index out of step for {k:?}");
        let (p, tag, _) = if back { f.q.pop_back() } else { f.q.pop_front() }.expect("present flows are non-empty");
        let size = p.size_bytes as u64;
        f.bytes -= size;
        let flow_emptied = f.q.is_empty();
        if flow_emptied {
            let f = self.flows.remove(&k).expect("the flow was just found");
            self.spare.push(f.q);
        } else {
            self.by_bytes.insert((f.bytes, rank(f), k));
        }
        self.packets -= 1;
        self.bytes -= size;
        Some(Removed { flow: k, packet: p, tag, flow_emptied })
    }

    /// Queues `pkt` (of flow `k`, with `tag`), then applies Longest Queue Drop: see
    /// [`FlowQueues::lqd`].
    #[inline]
    pub fn enqueue_lqd(
        &mut self,
        k: FlowKey,
        pkt: Packet,
        tag: T,
        limit: Limit,
        cx: &mut QueueCtx,
        on_evict: impl FnMut(&Removed<T>),
    ) -> Verdict {
        self.push_back(k, pkt, tag);
        self.lqd(k, limit, cx, on_evict)
    }

    /// Longest Queue Drop, to be called right after the arrival was pushed onto flow
    /// `arrival`: while the totals exceed `limit`, the tail packet of the longest flow is
    /// dropped. Each drop is shown to `on_evict` first. A dropped packet that is the arrival
    /// itself (nothing of its flow was queued behind it) is refused on arrival and returned as
    /// [`Verdict::Dropped`]; any other goes to [`QueueCtx::drop_queued`]. With a byte limit one
    /// drop may free too little room, hence the loop.
    #[inline]
    pub fn lqd(
        &mut self,
        arrival: FlowKey,
        limit: Limit,
        cx: &mut QueueCtx,
        mut on_evict: impl FnMut(&Removed<T>),
    ) -> Verdict {
        let mut verdict = Verdict::Enqueued;
        let mut arrival_queued = true;
        while self.over(limit) {
            let longest = self.longest().expect("an over-full buffer has a present flow");
            let r = self.take(longest, true).expect("the longest flow is non-empty");
            on_evict(&r);
            if arrival_queued && longest == arrival {
                // The tail of the arriving flow is the arrival itself: refused on arrival.
                arrival_queued = false;
                verdict = Verdict::Dropped(r.packet);
            } else {
                cx.drop_queued(r.packet);
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use crate::queue::testutil::{cx, drive, ops, pkt, Op};
    use crate::queue::QueueDisc;
    use proptest::prelude::*;

    fn key(flow: FlowId) -> FlowKey {
        FlowKey(flow as u128)
    }

    /// Checks every invariant of the module docs against the packets actually held.
    fn check<T>(q: &FlowQueues<T>) -> Result<(), TestCaseError> {
        let (mut n, mut b) = (0u64, 0u64);
        for (k, f) in &q.flows {
            prop_assert!(!f.q.is_empty(), "flow {:?} present but empty", k);
            let sum: u64 = f.q.iter().map(|(p, _, _)| p.size_bytes as u64).sum();
            prop_assert_eq!(sum, f.bytes);
            let rank = if q.ties == TieRule::Neutral { f.q[0].2 } else { 0 };
            prop_assert!(q.by_bytes.contains(&(f.bytes, rank, *k)));
            n += f.q.len() as u64;
            b += sum;
        }
        prop_assert_eq!(q.by_bytes.len(), q.flows.len());
        prop_assert_eq!(q.backlog(), Backlog { packets: n, bytes: b });
        Ok(())
    }

    #[test]
    fn shortest_and_longest_break_ties_by_key() {
        let mut q = FlowQueues::new(TieRule::Key, 0);
        q.push_back(key(3), pkt(3, 500, 0), ());
        q.push_back(key(1), pkt(1, 500, 1), ());
        q.push_back(key(2), pkt(2, 500, 2), ());
        assert_eq!((q.shortest(), q.longest()), (Some(key(1)), Some(key(3))));
        q.push_back(key(1), pkt(1, 100, 3), ());
        assert_eq!((q.shortest(), q.longest()), (Some(key(2)), Some(key(1))));
        assert_eq!(q.flow_bytes(key(1)), 600);
    }

    #[test]
    fn neutral_serves_the_earliest_head_among_equals_whatever_the_key() {
        let mut q = FlowQueues::new(TieRule::Neutral, 1);
        // Flow 3's packet arrives first, then flows 1 and 2, all 500 B: FIFO between equals.
        q.push_back(key(3), pkt(3, 500, 0), ());
        q.push_back(key(1), pkt(1, 500, 1), ());
        q.push_back(key(2), pkt(2, 500, 2), ());
        assert_eq!(q.shortest(), Some(key(3)));
        q.pop_front(key(3));
        assert_eq!(q.shortest(), Some(key(1)));
        // Flow 1 refills: its head is now newer than flow 2's.
        q.pop_front(key(1));
        q.push_back(key(1), pkt(1, 500, 3), ());
        assert_eq!(q.shortest(), Some(key(2)));
        // Fewer bytes still win over an earlier head.
        q.push_back(key(4), pkt(4, 100, 4), ());
        assert_eq!(q.shortest(), Some(key(4)));
    }

    #[test]
    fn neutral_draws_among_equally_long_queues_by_seed() {
        // Two flows tied at 1000 B: over seeds, each is chosen about half the time; for one
        // seed the draw is reproducible; a strictly longer flow is always chosen.
        let mut hits = [0u32; 2];
        for seed in 0..400 {
            let build = || {
                let mut q = FlowQueues::new(TieRule::Neutral, seed);
                q.push_back(key(0), pkt(0, 1000, 0), ());
                q.push_back(key(1), pkt(1, 1000, 1), ());
                q
            };
            let (mut a, mut b) = (build(), build());
            let pick = a.longest().unwrap();
            assert_eq!(b.longest(), Some(pick), "seed {seed}: the draw is reproducible");
            hits[pick.0 as usize] += 1;
            a.push_back(key(0), pkt(0, 1, 2), ());
            assert_eq!(a.longest(), Some(key(0)));
        }
        assert!(hits.iter().all(|&h| (160..=240).contains(&h)), "{hits:?}");
    }

    #[test]
    fn pops_keep_fifo_order_and_forget_empty_flows() {
        let mut q = FlowQueues::new(TieRule::Key, 0);
        for i in 0..3 {
            assert_eq!(q.push_back(key(0), pkt(0, 100 * (i as u32 + 1), i), i), i == 0, "new only at first");
        }
        assert_eq!(q.front(key(0)).unwrap().seq_in_flow, 0);
        assert_eq!(q.pop_back(key(0)).map(|r| (r.packet.seq_in_flow, r.tag, r.flow_emptied)), Some((2, 2, false)));
        assert_eq!(q.pop_front(key(0)).map(|r| (r.packet.seq_in_flow, r.tag, r.flow_emptied)), Some((0, 0, false)));
        assert_eq!(q.backlog(), Backlog { packets: 1, bytes: 200 });
        assert!(q.pop_front(key(0)).is_some_and(|r| r.flow_emptied && r.flow == key(0)));
        assert!(!q.contains(key(0)));
        assert!(q.pop_front(key(0)).is_none());
        assert_eq!((q.shortest(), q.longest()), (None, None));
        assert_eq!(q.backlog(), Backlog::default());
    }

    #[test]
    fn lqd_pushes_out_the_longest_tail_or_refuses_the_arrival() {
        let mut q = FlowQueues::new(TieRule::Key, 0);
        let mut d = Vec::new();
        let mut evicted = Vec::new();
        for i in 0..3 {
            let v = q.enqueue_lqd(key(0), pkt(0, 1500, i), (), Limit::Packets(3), &mut cx(&mut d), |_| {});
            assert!(matches!(v, Verdict::Enqueued));
        }
        // A short flow gets in; the longest flow loses its tail.
        let v = q.enqueue_lqd(key(1), pkt(1, 100, 9), (), Limit::Packets(3), &mut cx(&mut d), |e| {
            evicted.push((e.flow, e.packet.seq_in_flow, e.flow_emptied))
        });
        assert!(matches!(v, Verdict::Enqueued));
        assert_eq!(evicted, vec![(key(0), 2, false)]);
        assert_eq!(d.iter().map(|p| p.seq_in_flow).collect::<Vec<_>>(), vec![2]);
        // An arrival of the longest flow is refused, not pushed out.
        d.clear();
        let v = q.enqueue_lqd(key(0), pkt(0, 1500, 10), (), Limit::Packets(3), &mut cx(&mut d), |_| {});
        assert!(matches!(v, Verdict::Dropped(p) if p.seq_in_flow == 10));
        assert!(d.is_empty());
        assert_eq!(q.backlog(), Backlog { packets: 3, bytes: 3100 });
    }

    #[test]
    fn byte_limit_drops_until_it_fits_and_reports_emptied_flows() {
        let mut q = FlowQueues::new(TieRule::Key, 0);
        let mut d = Vec::new();
        q.push_back(key(0), pkt(0, 600, 0), ());
        q.push_back(key(1), pkt(1, 500, 1), ());
        q.push_back(key(1), pkt(1, 100, 2), ());
        // 1200 B + 700 B > 1000 B: the arrival's flow 2 (700 B) is longest and is refused;
        // 1200 B: flows 0 and 1 tie at 600 B, the larger key (flow 1) loses its 100 B tail;
        // 1100 B: flow 0 (600 B) is now longest and loses its only packet.
        let mut evicted = Vec::new();
        let v = q.enqueue_lqd(key(2), pkt(2, 700, 3), (), Limit::Bytes(1000), &mut cx(&mut d), |e| {
            evicted.push((e.flow, e.packet.seq_in_flow, e.flow_emptied))
        });
        assert!(matches!(v, Verdict::Dropped(p) if p.seq_in_flow == 3));
        assert_eq!(evicted, vec![(key(2), 3, true), (key(1), 2, false), (key(0), 0, true)]);
        assert_eq!(d.iter().map(|p| p.seq_in_flow).collect::<Vec<_>>(), vec![2, 0]);
        assert_eq!(q.backlog(), Backlog { packets: 1, bytes: 500 });
        assert!(!q.over(Limit::Bytes(500)) && q.over(Limit::Bytes(499)));
    }

    /// One step against the reference model.
    #[derive(Clone, Debug)]
    enum Step {
        Lqd { flow: u32, size: u32, limit: Limit },
        PopFront { flow: u32 },
        PopBack { flow: u32 },
        PopShortest,
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        let limit = prop_oneof![(1u64..20).prop_map(Limit::Packets), (1u64..20).prop_map(|n| Limit::Bytes(n * 700))];
        let step = prop_oneof![
            4 => (0u32..6, 1u32..1500, limit).prop_map(|(flow, size, limit)| Step::Lqd { flow, size, limit }),
            1 => (0u32..6).prop_map(|flow| Step::PopFront { flow }),
            1 => (0u32..6).prop_map(|flow| Step::PopBack { flow }),
            1 => Just(Step::PopShortest),
        ];
        proptest::collection::vec(step, 1..300)
    }

    proptest! {
        /// Against a naive model (a map of FIFOs, linear scans for shortest and longest):
        /// every pop and every LQD drop removes the same packet, and the invariants hold.
        #[test]
        fn matches_a_naive_model(steps in steps()) {
            let mut q: FlowQueues<u64> = FlowQueues::new(TieRule::Key, 0);
            let mut model: BTreeMap<FlowKey, VecDeque<Packet>> = BTreeMap::new();
            let mut d = Vec::new();
            let bytes = |m: &BTreeMap<FlowKey, VecDeque<Packet>>, k: &FlowKey| -> u64 {
                m[k].iter().map(|p| p.size_bytes as u64).sum()
            };
            for (i, step) in steps.into_iter().enumerate() {
                let i = i as u64;
                match step {
                    Step::Lqd { flow, size, limit } => {
                        let k = key(flow);
                        model.entry(k).or_default().push_back(pkt(flow, size, i));
                        let mut expect = Vec::new();
                        loop {
                            let (n, b) = model.values().flatten().fold((0, 0), |(n, b), p| (n + 1, b + p.size_bytes as u64));
                            let over = match limit { Limit::Packets(l) => n > l, Limit::Bytes(l) => b > l };
                            if !over { break; }
                            // Longest by bytes, ties to the largest key.
                            let &lk = model.keys().max_by_key(|k| (bytes(&model, k), **k)).unwrap();
                            let p = model.get_mut(&lk).unwrap().pop_back().unwrap();
                            if model[&lk].is_empty() { model.remove(&lk); }
                            expect.push((lk, p.seq_in_flow, !model.contains_key(&lk)));
                        }
                        let mut seen = Vec::new();
                        d.clear();
                        let v = q.enqueue_lqd(k, pkt(flow, size, i), i, limit, &mut cx(&mut d), |e| {
                            seen.push((e.flow, e.packet.seq_in_flow, e.flow_emptied));
                            assert_eq!(e.tag, e.packet.seq_in_flow, "the tag travels with its packet");
                        });
                        prop_assert_eq!(&seen, &expect);
                        let refused = expect.iter().any(|&(f, s, _)| f == k && s == i);
                        match v {
                            Verdict::Dropped(p) => {
                                prop_assert!(refused);
                                prop_assert_eq!(p.seq_in_flow, i);
                                prop_assert_eq!(d.len() + 1, expect.len());
                            }
                            Verdict::Enqueued => {
                                prop_assert!(!refused);
                                prop_assert_eq!(d.len(), expect.len());
                            }
                        }
                        prop_assert!(!q.over(limit));
                    }
                    Step::PopFront { flow } | Step::PopBack { flow } => {
                        let k = key(flow);
                        let back = matches!(step, Step::PopBack { .. });
                        let got = if back { q.pop_back(k) } else { q.pop_front(k) };
                        let want = model.get_mut(&k).and_then(|m| if back { m.pop_back() } else { m.pop_front() });
                        if model.get(&k).is_some_and(|m| m.is_empty()) { model.remove(&k); }
                        prop_assert_eq!(got.as_ref().map(|r| r.packet.seq_in_flow), want.as_ref().map(|p| p.seq_in_flow));
                        prop_assert_eq!(got.map(|r| r.flow_emptied), want.map(|_| !model.contains_key(&k)));
                    }
                    Step::PopShortest => {
                        // Shortest by bytes, ties to the smallest key.
                        let want = model.keys().min_by_key(|k| (bytes(&model, k), **k)).copied();
                        prop_assert_eq!(q.shortest(), want);
                        if let Some(k) = want {
                            prop_assert_eq!(q.front(k).map(|p| p.seq_in_flow), model[&k].front().map(|p| p.seq_in_flow));
                            q.pop_front(k);
                            model.get_mut(&k).unwrap().pop_front();
                            if model[&k].is_empty() { model.remove(&k); }
                        }
                    }
                }
                check(&q)?;
                let want_longest = model.keys().max_by_key(|k| (bytes(&model, k), **k)).copied();
                prop_assert_eq!(q.longest(), want_longest);
                for (k, m) in &model {
                    prop_assert_eq!(q.flow_bytes(*k), bytes(&model, k));
                    prop_assert_eq!(q.front(*k).map(|p| p.seq_in_flow), m.front().map(|p| p.seq_in_flow));
                }
                let heads: Vec<(FlowKey, u64, u64)> = q.heads().map(|(k, p, b)| (k, p.seq_in_flow, b)).collect();
                let want_heads: Vec<(FlowKey, u64, u64)> = model.iter().map(|(k, m)| (*k, m[0].seq_in_flow, bytes(&model, k))).collect();
                prop_assert_eq!(heads, want_heads);
            }
        }

        /// Through the discipline harness: a minimal discipline (serve the smallest key, LQD on
        /// overflow) conserves packets and is work-conserving.
        #[test]
        fn lqd_conserves_under_the_harness(seq in ops(6, 400), lim in 1u64..30, bytes_limit in any::<bool>()) {
            struct Lowest { q: FlowQueues, limit: Limit }
            impl QueueDisc for Lowest {
                fn enqueue(&mut self, p: Packet, cx: &mut QueueCtx) -> Verdict {
                    let limit = self.limit;
                    self.q.enqueue_lqd(key(p.flow), p, (), limit, cx, |_| {})
                }
                fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
                    let &k = self.q.flows.keys().next()?;
                    self.q.pop_front(k).map(|r| r.packet)
                }
                fn backlog(&self) -> Backlog {
                    self.q.backlog()
                }
                fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
                    self.q.for_each_packet(f)
                }
            }
            let limit = if bytes_limit { Limit::Bytes(lim * 700) } else { Limit::Packets(lim) };
            let mut q = Lowest { q: FlowQueues::new(TieRule::Key, 0), limit };
            drive(&mut q, &seq, |q, op, _| {
                if matches!(op, Op::Arrive { .. }) {
                    match limit {
                        Limit::Packets(n) => prop_assert!(q.backlog().packets <= n),
                        Limit::Bytes(b) => prop_assert!(q.backlog().bytes <= b),
                    }
                }
                Ok(())
            })?;
        }
    }
}
