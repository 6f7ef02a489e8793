//! Shortest Queue First with Longest Queue Drop (SQF + LQD), exactly as Algorithm 1 of
//! Bonald, Muscariello, Ostallo, "Self-Prioritization of Audio and Video Traffic", ICC 2011
//! (BMO11), Sec. III-B.
//!
//! Reading list: BMO11 Sec. III (the algorithm), Sec. IV (why regulated flows stay prioritised);
//! `docs/models/sqf.md` (scope, parameters, validation).
//!
//! One virtual queue per *active* flow (a flow with at least one packet buffered), FIFO inside.
//! - At a departure the head packet of the flow with the fewest **bytes** queued is served
//!   (BMO11 Sec. III-B: "always serves a packet from the shortest queue in bytes").
//!   Non-preemptive: the port asks for a packet only when its transmitter is idle, and a packet
//!   in serialisation is no longer in any virtual queue. Work-conserving: any backlog is served.
//! - At an arrival the packet joins its flow's queue; if the buffer then exceeds its limit, a
//!   packet of the flow with the most bytes queued is dropped (Algorithm 1, `get_longest`).
//!   That may be the arriving packet itself, which the port then counts as an arrival drop.
//!
//! Choices the paper leaves open, made here:
//! - LQD drops the **tail** (most recent) packet of the longest queue: Algorithm 1's
//!   `queue[..]->drop()` does not say which end, and the tail keeps the in-queue order.
//! - Ties (equal backlogs; frequent, as a TCP segment and an ES video packet are both 1,500 B)
//!   follow `ties` ([`TieRule`]): by default no flow gains by its key (the earliest head-of-line
//!   arrival among equally short queues is served; LQD draws among equally long queues from the
//!   port's seeded stream). The key order (smallest served, largest dropped) is the alternative;
//!   under it the flow with the larger address or port loses every tie.
//! - With a byte limit, LQD repeats until the buffer fits (one drop may free too little room).
//!
//! Selection is O(log F) for F active flows: the per-flow queues, the ordered `(bytes queued,
//! flow key)` index and LQD are [`FlowQueues`]'s (`queue/flows.rs`), shared with DRR and PFQ.
//!
//! Not modelled: hardware queues below the discipline, the residual "virtual queue" state of
//! a flow after it empties (SQF forgets empty flows by design).
//!
//! Optional per-flow backlog sampling (`flow_sample`) records, at most once per interval, the
//! bytes queued by every active flow. It exists for the model-vs-simulator check of BMO11
//! Sec. IV (de-prioritisation measured from queue states) and changes no decision. The port
//! keeps the samples (a [`FlowBacklogSeries`](crate::trace::probe::FlowBacklogSeries)) and asks
//! this discipline for its queues ([`QueueDisc::flow_backlogs`]) when a sample is due.

use super::{Backlog, Build, BuildCtx, FlowKeyKind, FlowQueues, QueueCtx, QueueDisc, TieRule, Verdict};
use crate::packet::{FlowId, Packet, PacketData};
use crate::time::Dur;
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};

/// `kind = "sqf"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SqfConfig {
    /// Shared buffer limit in packets (`"50p"`) or bytes (`"75KB"`). Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// How packets map to flows (`"five_tuple"`, `"src_port"`, `"dst_addr"`). Default
    /// `"five_tuple"`, as in BMO11 Sec. V-A.
    #[serde(default)]
    pub flow_key: FlowKeyKind,
    /// How equal queues are told apart (SQF's shortest, LQD's longest): `"neutral"` (default:
    /// earliest head-of-line arrival for service, a seeded draw for drops) or `"key"` (smallest
    /// key served, largest dropped). See [`TieRule`].
    #[serde(default)]
    pub ties: TieRule,
    /// Record every active flow's backlog at most once per this interval (e.g. `"1ms"`);
    /// default off. Results table `flow_queues`.
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub flow_sample: Option<Dur>,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl Default for SqfConfig {
    fn default() -> Self {
        SqfConfig { limit: default_limit(), flow_key: FlowKeyKind::FiveTuple, ties: TieRule::Neutral, flow_sample: None }
    }
}

/// SQF + LQD state.
pub struct Sqf {
    limit: Limit,
    key: FlowKeyKind,
    /// The active flows' queues, with the `(bytes, tie rank, key)` order SQF and LQD select from.
    queues: FlowQueues,
}

impl Sqf {
    /// `seed` keys the draws among equally long queues under [`TieRule::Neutral`].
    pub fn new(limit: Limit, key: FlowKeyKind, ties: TieRule, seed: u64) -> Self {
        Sqf { limit, key, queues: FlowQueues::new(ties, seed) }
    }
}

impl QueueDisc for Sqf {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let k = self.key.key(&pkt);
        // Algorithm 1: queue[pkt.flowid]->enqueue(pkt); if (queue->size > queue->maxsize):
        // drop from get_longest(queue). With a byte limit one drop may not free enough room,
        // so LQD repeats until the buffer fits.
        self.queues.enqueue_lqd(k, pkt, (), self.limit, cx, |_| {})
    }

    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        // get_shortest(queue).
        let shortest = self.queues.shortest()?;
        Some(self.queues.pop_front(shortest).expect("the shortest flow is non-empty").packet)
    }

    fn backlog(&self) -> Backlog {
        self.queues.backlog()
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.queues.for_each_packet(f)
    }

    fn flow_backlogs(&self, f: &mut dyn FnMut(FlowId, u64)) {
        for (_, head, bytes) in self.queues.heads() {
            f(head.flow, bytes);
        }
    }
}

impl Build for SqfConfig {
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Sqf::new(self.limit, self.flow_key, self.ties, cx.seed))
    }
    fn flow_sample(&self) -> Option<Dur> {
        self.flow_sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt, Op};
    use crate::time::SimTime;
    use proptest::prelude::*;

    #[test]
    fn serves_the_flow_with_fewest_bytes_and_fifo_within_a_flow() {
        let mut q = Sqf::new(Limit::Packets(100), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        // Flow 0: 3000 B queued; flow 1: 1000 B; flow 2: 200 B in two packets.
        for (f, s, n) in [(0, 1500, 0), (0, 1500, 1), (1, 1000, 2), (2, 100, 3), (2, 100, 4)] {
            assert!(matches!(q.enqueue(pkt(f, s, n), &mut cx(&mut d)), Verdict::Enqueued));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(&mut cx(&mut d))).map(|p| p.seq_in_flow).collect();
        // Flow 2 (200 B, then 100 B), flow 1 (1000 B), then flow 0 in arrival order.
        assert_eq!(order, vec![3, 4, 2, 0, 1]);
        assert!(d.is_empty());
    }

    #[test]
    fn shortest_is_in_bytes_not_packets() {
        let mut q = Sqf::new(Limit::Packets(100), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        // Flow 0: one 1500 B packet. Flow 1: ten 100 B packets (1000 B, more packets).
        q.enqueue(pkt(0, 1500, 0), &mut cx(&mut d));
        for i in 0..10 {
            q.enqueue(pkt(1, 100, 1 + i), &mut cx(&mut d));
        }
        assert_eq!(q.dequeue(&mut cx(&mut d)).unwrap().flow, 1);
    }

    #[test]
    fn overflow_pushes_out_the_tail_of_the_longest_flow() {
        let mut q = Sqf::new(Limit::Packets(3), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        q.enqueue(pkt(0, 1500, 0), &mut cx(&mut d));
        q.enqueue(pkt(0, 1500, 1), &mut cx(&mut d));
        q.enqueue(pkt(1, 200, 2), &mut cx(&mut d));
        // The buffer is full; a packet of the short flow 1 still gets in, flow 0 loses its tail.
        assert!(matches!(q.enqueue(pkt(1, 200, 3), &mut cx(&mut d)), Verdict::Enqueued));
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].flow, d[0].seq_in_flow), (0, 1));
        // A packet of the longest flow itself is refused on arrival.
        d.clear();
        q.enqueue(pkt(0, 1500, 4), &mut cx(&mut d)); // flow 0 now has 3000 B, 4 pkts > 3: drop
        assert!(d.is_empty(), "the arrival of the longest flow is refused, not pushed out");
        assert_eq!(q.backlog(), Backlog { packets: 3, bytes: 1900 });
    }

    #[test]
    fn byte_limit_drops_until_the_buffer_fits() {
        let mut q = Sqf::new(Limit::Bytes(1000), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut d = Vec::new();
        for i in 0..5 {
            q.enqueue(pkt(0, 150, i), &mut cx(&mut d)); // flow 0: 750 B
        }
        // 900 B of flow 1 needs 650 B of room: flow 1 (900 B) is itself the longest -> refused.
        assert!(matches!(q.enqueue(pkt(1, 900, 5), &mut cx(&mut d)), Verdict::Dropped(_)));
        // 400 B of flow 1: 1150 B total; flow 0 (750 B) is longest and loses one 150 B packet.
        assert!(matches!(q.enqueue(pkt(1, 400, 6), &mut cx(&mut d)), Verdict::Enqueued));
        assert_eq!(d.len(), 1);
        assert_eq!(q.backlog().bytes, 1000);
    }

    #[test]
    fn flow_key_src_port_aggregates_destinations() {
        let mut a = pkt(0, 100, 0);
        let mut b = pkt(1, 100, 1);
        if let crate::packet::L4::Udp(u) = &mut b.l4 {
            u.src_port = 1000;
        }
        a.dst = crate::node::Addr::primary(7);
        b.dst = crate::node::Addr::primary(9);
        assert_ne!(FlowKeyKind::FiveTuple.key(&a), FlowKeyKind::FiveTuple.key(&b));
        assert_eq!(FlowKeyKind::SrcPort.key(&a), FlowKeyKind::SrcPort.key(&b));
        assert_ne!(FlowKeyKind::DstAddr.key(&a), FlowKeyKind::DstAddr.key(&b));
    }

    #[test]
    fn flow_sampling_records_active_flows_once_per_interval() {
        // As the port samples: after each enqueue, and after each dequeue that returned a packet.
        use crate::trace::probe::FlowBacklogSeries;
        let mut q = Sqf::new(Limit::Packets(10), FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
        let mut s = FlowBacklogSeries::new(Dur::from_millis(1));
        let mut d = Vec::new();
        q.enqueue(pkt(0, 100, 0), &mut QueueCtx::new(SimTime(0), &mut d));
        s.observe(SimTime(0), |sink| q.flow_backlogs(sink));
        q.enqueue(pkt(1, 300, 1), &mut QueueCtx::new(SimTime(10), &mut d));
        s.observe(SimTime(10), |sink| q.flow_backlogs(sink)); // same interval: no sample
        let mut t = SimTime(1_000_000);
        assert_eq!(q.dequeue(&mut QueueCtx::new(t, &mut d)).unwrap().flow, 0);
        s.observe(t, |sink| q.flow_backlogs(sink)); // next interval: flow 1 only
        t = SimTime(2_500_000);
        assert_eq!(q.dequeue(&mut QueueCtx::new(t, &mut d)).unwrap().flow, 1);
        s.observe(t, |sink| q.flow_backlogs(sink)); // idle sample
        assert_eq!(s.t_ns, vec![0, 1_000_000, 2_500_000]);
        assert_eq!(s.flow, vec![0, 1, u32::MAX]);
        assert_eq!(s.bytes, vec![100, 300, 0]);
    }

    proptest! {
        /// Conservation and work conservation; every departure serves a flow of minimal
        /// backlog; every drop (arrival or push-out) hits a flow of maximal backlog.
        #[test]
        fn sqf_serves_min_and_drops_max(seq in ops(6, 400), lim in 1u64..30, bytes_limit in any::<bool>()) {
            let limit = if bytes_limit { Limit::Bytes(lim * 700) } else { Limit::Packets(lim) };
            let mut q = Sqf::new(limit, FlowKeyKind::FiveTuple, TieRule::Neutral, 7);
            drive(&mut q, &seq, |q, op, o| {
                if let Some(p) = &o.served {
                    let min = o.before.values().copied().min().expect("something was queued");
                    prop_assert_eq!(o.before[&p.flow], min, "served flow {} is not a shortest queue", p.flow);
                }
                if let Op::Arrive { flow, size, .. } = op {
                    // State right after the arrival joined its queue, before any drop.
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
