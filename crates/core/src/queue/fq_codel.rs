//! FQ-CoDel (RFC 8290): DRR over per-flow queues with new/old flow lists, and a CoDel
//! (RFC 8289) instance on every flow queue. The deployed comparator for SQF.
//!
//! Reading list: RFC 8290 §4 (enqueue, dequeue, the two lists, overflow), §5.1 (defaults);
//! RFC 8289 §5 (CoDel's state machine and control law); `docs/models/fq_codel.md`.
//!
//! What is modelled:
//! - Packets are time-stamped on enqueue (RFC 8290 §4.1.1) and classified into flows by an
//!   exact flow key instead of a hash into 1024 buckets: this simulator can afford exact
//!   per-flow queues, and with few flows RFC 8290's hashing collides rarely anyway (§5.1).
//!   Flow state (deficit, CoDel variables) persists while the flow is idle, as a hash bucket's
//!   does.
//! - A flow that becomes active joins the *new* list with one quantum of credit (§4.1.2).
//! - Dequeue (§4.2): take the head of the new list, else of the old list; a flow with no credit
//!   gets one quantum and moves to the tail of the old list; otherwise CoDel dequeues from it.
//!   A flow that CoDel leaves empty moves to the old list if it came from the new list, or is
//!   removed from the old list.
//! - Overflow (§4.1.1): when the buffer exceeds its limit, packets are dropped from the
//!   **head** of the flow with the largest byte backlog until it fits (RFC 8290 drops from the
//!   fattest flow; Linux drops a batch of up to 64 at once, we drop only what is needed).
//! - CoDel (RFC 8289 §5.3–5.5), the project's one implementation in [`super::codel`]: sojourn
//!   time above `target` for at least `interval` enters the dropping state; drops are spaced by
//!   `interval / sqrt(count)`; the count restarts near the previous drop rate when the dropping
//!   state is re-entered within 16 intervals. The "queue below one MTU" exemption uses the flow
//!   queue's bytes.
//!
//! - ECN (`ecn`, on by default as in Linux `fq_codel` and RFC 8290 §4.2 "mark or drop"): CoDel's
//!   decisions mark ECN-capable packets CE instead of dropping them (see [`super::codel`]);
//!   the overflow drop always drops. Only ECN-capable senders (TCP `ecn = true`) see marks;
//!   every other packet is dropped as before.
//!
//! Not modelled: the `memory_limit`, hash
//! collisions and the `flows` bucket count.

use super::codel::{CodelParams, CodelState};
use super::{Backlog, Build, BuildCtx, FlowKey, FlowKeyKind, QueueCtx, QueueDisc, TieRule, Verdict};
use crate::engine::SimRng;
use crate::packet::{Packet, PacketData};
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `kind = "fq_codel"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Buffer limit in packets or bytes. Default `"10240p"` (RFC 8290 §5.1.3).
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// CoDel target sojourn time. Default `"5ms"` (RFC 8289 §4.4, RFC 8290 §5.1.1).
    #[serde(with = "serde_units::time", default = "default_target")]
    pub target: Dur,
    /// CoDel interval. Default `"100ms"` (RFC 8289 §4.5, RFC 8290 §5.1.1). Range: ≥ 1 ns.
    #[serde(with = "serde_units::time", default = "default_interval")]
    pub interval: Dur,
    /// DRR quantum in bytes. Default `"1514B"` (RFC 8290 §5.1.2: an Ethernet frame). Range: ≥ 1 B.
    #[serde(with = "serde_units::bytes", default = "default_quantum")]
    pub quantum: u64,
    /// How packets map to flows. Default `"five_tuple"` (RFC 8290 §4.1.1 hashes the 5-tuple).
    #[serde(default)]
    pub flow_key: FlowKeyKind,
    /// Which of several equally fat flows the overflow drop hits: `"neutral"` (default, a
    /// seeded draw: Linux scans its buckets in hash order, and the hash is salted with a
    /// random perturbation per qdisc, so no flow is favoured by its key) or `"key"` (the
    /// largest key). The new and old lists are in arrival order already. See [`TieRule`].
    #[serde(default)]
    pub ties: TieRule,
    /// Mark ECN-capable packets CE instead of dropping them on a CoDel decision (RFC 8290
    /// §4.2, RFC 3168). Default (unset) on, as Linux `fq_codel` (`noecn` is `false`); it
    /// changes nothing for Not-ECT traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
}

fn default_limit() -> Limit {
    Limit::Packets(10240)
}
fn default_target() -> Dur {
    Dur::from_millis(5)
}
fn default_interval() -> Dur {
    Dur::from_millis(100)
}
fn default_quantum() -> u64 {
    1514
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        FqCodelConfig {
            limit: default_limit(),
            target: default_target(),
            interval: default_interval(),
            quantum: default_quantum(),
            flow_key: FlowKeyKind::FiveTuple,
            ties: TieRule::Neutral,
            ecn: None,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

struct Flow {
    q: VecDeque<(SimTime, Packet)>,
    bytes: u64,
    deficit: i64,
    list: List,
    codel: CodelState,
}

/// FQ-CoDel state.
pub struct FqCodel {
    limit: Limit,
    /// CoDel's target, interval and MTU, shared by every flow queue.
    codel: CodelParams,
    quantum: i64,
    key: FlowKeyKind,
    flows: BTreeMap<FlowKey, Flow>,
    new_flows: VecDeque<FlowKey>,
    old_flows: VecDeque<FlowKey>,
    /// Flows with packets by `(bytes, key)`, for the overflow drop.
    by_bytes: BTreeSet<(u64, FlowKey)>,
    packets: u64,
    bytes: u64,
    ties: TieRule,
    ecn: bool,
    /// Draws among equally fat flows ([`TieRule::Neutral`]).
    rng: SimRng,
}

impl FqCodel {
    /// # Panics
    /// If the quantum is 0 or the interval is zero. `seed` keys the draws among equally fat flows.
    pub fn new(cfg: &FqCodelConfig, mtu_bytes: u32, seed: u64) -> Self {
        assert!(cfg.quantum > 0, "fq_codel quantum must be at least 1 byte");
        assert!(cfg.interval.as_nanos() > 0, "fq_codel interval must be positive");
        FqCodel {
            limit: cfg.limit,
            codel: CodelParams { target: cfg.target, interval: cfg.interval, mtu_bytes: mtu_bytes as u64 },
            quantum: cfg.quantum as i64,
            key: cfg.flow_key,
            flows: BTreeMap::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            by_bytes: BTreeSet::new(),
            packets: 0,
            bytes: 0,
            ties: cfg.ties,
            ecn: cfg.ecn.unwrap_or(true),
            rng: SimRng::stream(seed, "fq_codel:ties"),
        }
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            Limit::Packets(n) => self.packets > n,
            Limit::Bytes(b) => self.bytes > b,
        }
    }

    /// Removes the head packet of flow `k` (with its enqueue time), keeping indices in step.
    fn pop_head(&mut self, k: FlowKey) -> Option<(SimTime, Packet)> {
        let f = self.flows.get_mut(&k).expect("flow exists");
        let (t, p) = f.q.pop_front()?;
        self.by_bytes.remove(&(f.bytes, k));
        f.bytes -= p.size_bytes as u64;
        if f.bytes > 0 {
            self.by_bytes.insert((f.bytes, k));
        }
        self.packets -= 1;
        self.bytes -= p.size_bytes as u64;
        Some((t, p))
    }

    /// The flow with the largest byte backlog (RFC 8290 §4.1.1); ties per [`TieRule`].
    fn fattest(&mut self) -> FlowKey {
        let &(max, last) = self.by_bytes.last().expect("an over-full buffer has a queued flow");
        if self.ties == TieRule::Key {
            return last;
        }
        let tied = self.by_bytes.range((max, FlowKey(0))..).count();
        if tied == 1 {
            return last;
        }
        let pick = (self.rng.next_u64() % tied as u64) as usize;
        self.by_bytes.range((max, FlowKey(0))..).nth(pick).expect("pick < tied").1
    }

    /// RFC 8289 §5.5 `dequeue` on flow `k` ([`CodelState::dequeue`]); dropped packets go to
    /// `cx`.
    fn codel_dequeue(&mut self, k: FlowKey, cx: &mut QueueCtx) -> Option<Packet> {
        let mut state = std::mem::take(&mut self.flows.get_mut(&k).expect("flow exists").codel);
        let (params, ecn) = (self.codel, self.ecn);
        let pop = || {
            let (t, p) = self.pop_head(k)?;
            Some((t, p, self.flows[&k].bytes))
        };
        let p = state.dequeue(&params, cx.now, pop, |p| super::codel::signal(ecn, cx, p));
        self.flows.get_mut(&k).expect("flow exists").codel = state;
        p
    }
}

impl QueueDisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let k = self.key.key(&pkt);
        let size = pkt.size_bytes as u64;
        let quantum = self.quantum;
        let f = self.flows.entry(k).or_insert_with(|| Flow {
            q: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            list: List::None,
            codel: CodelState::default(),
        });
        if f.bytes > 0 {
            self.by_bytes.remove(&(f.bytes, k));
        }
        f.bytes += size;
        f.q.push_back((cx.now, pkt));
        self.by_bytes.insert((f.bytes, k));
        // §4.1.2: a flow on neither list becomes a new flow with a full quantum.
        if f.list == List::None {
            f.list = List::New;
            f.deficit = quantum;
            self.new_flows.push_back(k);
        }
        self.packets += 1;
        self.bytes += size;
        // §4.1.1: over the limit, drop from the head of the fattest flow.
        let mut verdict = Verdict::Enqueued;
        while self.over_limit() {
            let fattest = self.fattest();
            let (_, p) = self.pop_head(fattest).expect("fattest flow has packets");
            if fattest == k && self.flows[&k].q.is_empty() && matches!(verdict, Verdict::Enqueued) {
                // Head drop reached the arrival: it was its flow's only packet, so it is
                // refused on arrival.
                verdict = Verdict::Dropped(p);
            } else {
                cx.drop_queued(p);
            }
        }
        verdict
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        loop {
            let (k, from_new) =
                if let Some(&k) = self.new_flows.front() { (k, true) } else { (*self.old_flows.front()?, false) };
            let quantum = self.quantum;
            let f = self.flows.get_mut(&k).expect("listed flows exist");
            if f.deficit <= 0 {
                // §4.2: out of credit: refill and go to the back of the old list.
                f.deficit += quantum;
                f.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(k);
                continue;
            }
            match self.codel_dequeue(k, cx) {
                Some(p) => {
                    self.flows.get_mut(&k).expect("flow exists").deficit -= p.size_bytes as i64;
                    return Some(p);
                }
                None => {
                    let f = self.flows.get_mut(&k).expect("flow exists");
                    if from_new {
                        // §4.2: an emptied new flow moves to the old list (prevents starving
                        // old flows by flows that keep re-entering as new).
                        self.new_flows.pop_front();
                        f.list = List::Old;
                        self.old_flows.push_back(k);
                    } else {
                        self.old_flows.pop_front();
                        f.list = List::None;
                    }
                }
            }
        }
    }

    fn backlog(&self) -> Backlog {
        Backlog { packets: self.packets, bytes: self.bytes }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        for fl in self.flows.values() {
            fl.q.iter().for_each(|(_, p)| f(p));
        }
    }
}

impl Build for FqCodelConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.quantum == 0 {
            return Err(("quantum", "must be ≥ 1 B, got 0 B".into()));
        }
        if self.interval == Dur::ZERO {
            return Err(("interval", "must be ≥ 1 ns, got 0 ns".into()));
        }
        Ok(())
    }
    fn ecn(&self) -> bool {
        self.ecn == Some(true)
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(FqCodel::new(self, cx.mtu_bytes, cx.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{drive, ops, pkt, Op};
    use proptest::prelude::*;

    fn at(t_ms: u64, d: &mut Vec<Packet>) -> QueueCtx<'_> {
        QueueCtx::new(SimTime(t_ms * 1_000_000), d)
    }

    #[test]
    fn new_flow_is_served_before_old_flows() {
        let mut q = FqCodel::new(&FqCodelConfig::default(), 1500, 7);
        let mut d = Vec::new();
        for i in 0..4 {
            q.enqueue(pkt(0, 1500, i), &mut at(0, &mut d));
        }
        // Flow 0 uses its quantum (1514 B: one 1500 B packet, deficit 14 > 0 allows a second).
        assert_eq!(q.dequeue(&mut at(0, &mut d)).unwrap().flow, 0);
        assert_eq!(q.dequeue(&mut at(0, &mut d)).unwrap().flow, 0);
        // Now flow 0 is out of credit; a sparse flow arriving goes to the new list.
        q.enqueue(pkt(1, 100, 10), &mut at(0, &mut d));
        assert_eq!(q.dequeue(&mut at(0, &mut d)).unwrap().flow, 1);
        assert_eq!(q.dequeue(&mut at(0, &mut d)).unwrap().flow, 0);
    }

    #[test]
    fn overflow_drops_the_head_of_the_fattest_flow() {
        let cfg = FqCodelConfig { limit: Limit::Packets(3), ..Default::default() };
        let mut q = FqCodel::new(&cfg, 1500, 7);
        let mut d = Vec::new();
        q.enqueue(pkt(0, 1500, 0), &mut at(0, &mut d));
        q.enqueue(pkt(0, 1500, 1), &mut at(0, &mut d));
        q.enqueue(pkt(1, 100, 2), &mut at(0, &mut d));
        assert!(matches!(q.enqueue(pkt(1, 100, 3), &mut at(0, &mut d)), Verdict::Enqueued));
        assert_eq!((d[0].flow, d[0].seq_in_flow), (0, 0), "head of the fattest flow");
    }

    /// RFC 8289: a standing queue above target for an interval triggers a drop, then drops
    /// follow at interval/sqrt(count); sojourn below target leaves the dropping state.
    #[test]
    fn codel_control_law_spacing() {
        let mut q = FqCodel::new(&FqCodelConfig::default(), 1500, 7);
        let mut d = Vec::new();
        // 400 packets queued at t = 0, served one per ms: sojourn = t.
        for i in 0..400 {
            q.enqueue(pkt(0, 1500, i), &mut at(0, &mut d));
        }
        let mut drop_times = Vec::new();
        for t in 1..=300u64 {
            let before = d.len();
            q.dequeue(&mut at(t, &mut d)).unwrap();
            for _ in before..d.len() {
                drop_times.push(t);
            }
        }
        // Sojourn reaches the 5 ms target (not below it) at t = 5 ms: first_above_time =
        // 105 ms, first drop at 105 ms. Entering the dropping state sets count = 1,
        // drop_next = 105 + 100/sqrt(1) = 205; then drop_next = 205 + 100/sqrt(2) = 275.7
        // (served at 276), then + 100/sqrt(3) = 333.4, beyond the run.
        assert_eq!(drop_times, vec![105, 205, 276]);
    }

    #[test]
    fn codel_exits_dropping_below_target() {
        let mut q = FqCodel::new(&FqCodelConfig::default(), 1500, 7);
        let mut d = Vec::new();
        for i in 0..200 {
            q.enqueue(pkt(0, 1500, i), &mut at(0, &mut d));
        }
        for t in 1..=120 {
            q.dequeue(&mut at(t, &mut d));
        }
        assert!(q.flows.values().next().unwrap().codel.dropping());
        // Drain the old packets quickly, then a fresh packet with a small sojourn.
        while q.backlog().packets > 0 {
            q.dequeue(&mut at(121, &mut d));
        }
        q.enqueue(pkt(0, 1500, 999), &mut at(200, &mut d));
        q.enqueue(pkt(0, 1500, 1000), &mut at(200, &mut d));
        let n = d.len();
        assert!(q.dequeue(&mut at(201, &mut d)).is_some());
        assert_eq!(d.len(), n, "no drop below target");
        assert!(!q.flows.values().next().unwrap().codel.dropping());
    }

    proptest! {
        /// Conservation and work conservation (None only when every queue is empty, possibly
        /// after CoDel drops); the overflow drop hits a flow of maximal backlog.
        #[test]
        fn fq_codel_conserves(seq in ops(6, 400), lim in 1u64..30, target_ms in 0u64..10, interval_ms in 1u64..50) {
            let cfg = FqCodelConfig {
                limit: Limit::Packets(lim),
                target: Dur::from_millis(target_ms),
                interval: Dur::from_millis(interval_ms),
                ..Default::default()
            };
            let mut q = FqCodel::new(&cfg, 1500, 7);
            drive(&mut q, &seq, |_, op, o| {
                if let Op::Arrive { flow, size, .. } = op {
                    let mut state = o.before.clone();
                    *state.entry(*flow).or_insert(0) += *size as u64;
                    for p in &o.pushed_out {
                        let max = state.values().copied().max().unwrap();
                        prop_assert_eq!(state[&p.flow], max, "overflow drop from flow {} not the fattest", p.flow);
                        *state.get_mut(&p.flow).unwrap() -= p.size_bytes as u64;
                    }
                }
                Ok(())
            })?;
        }
    }
}
