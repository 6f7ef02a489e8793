//! Queue disciplines: the `QueueDisc` trait, its context, and the tagged config registry.
//!
//! A discipline only *decides*: which packet to admit, which to drop, which to send next.
//! The [`Port`](crate::link::Port) that owns it counts arrivals, drops and departures, keeps the
//! occupancy series and traces, so no discipline repeats that bookkeeping (ns-3 `DoEnqueue`).
//!
//! Invariants the port checks (and the property tests exercise):
//! `arrived = enqueued + dropped_on_arrival` and
//! `enqueued = dequeued + dropped_from_queue + backlog`.

pub mod flows;
pub mod reservation;
pub mod ring;

use crate::packet::{FlowId, Packet, PacketData};
use crate::registry::registry;
use crate::time::{Dur, SimTime};
use serde::{Deserialize, Serialize};

pub use flows::{FlowQueues, TieRule};

registry! {
    /// Every discipline, as selected by `kind` in scenario files. A discipline is its own file
    /// here plus one line below (see [`crate::registry`] and `docs/registries.md`).
    pub enum QueueConfig: dyn Build {
        fifo::Fifo(FifoConfig) = "fifo",
        drr::Drr(DrrConfig) = "drr",
        sqf::Sqf(SqfConfig) = "sqf",
        pfq::Pfq(PfqConfig) = "pfq",
        fq_codel::FqCodel(FqCodelConfig) = "fq_codel",
        codel::Codel(CodelConfig) = "codel",
        red::Red(RedConfig) = "red",
        pie::Pie(PieConfig) = "pie",
        prio::Prio(PrioConfig) = "prio",
        police::Police(PoliceConfig) = "police",
        tbf::Tbf(TbfConfig) = "tbf",
        htb::Htb(HtbConfig) = "htb",
        wdrr::Wdrr(WdrrConfig) = "wdrr",
        tfd::Tfd(TfdConfig) = "tfd",
        toy::Toy(ToyConfig) = "toy",
    }
}
pub use reservation::{reservations, reservations_mut, AsAny, Reservation, Reservations};

/// How a flow-aware discipline groups packets into flows (its per-flow queues).
///
/// Keys are exact (no hashing, so no collisions) and derived only from header fields:
/// addresses are the packet's IPv4 addresses. The SQF paper (BMO11 Sec. III-A) identifies flows by the
/// 5-tuple, or by a part of it such as the source port on the upstream of an access line.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowKeyKind {
    /// (source address, destination address, protocol, source port, destination port).
    #[default]
    FiveTuple,
    /// (protocol, source port): all packets of one sending application, whatever the peer.
    SrcPort,
    /// Destination address: one queue per receiving host.
    DstAddr,
}

pub use crate::ip::FlowKey;

impl FlowKeyKind {
    /// The key of `pkt`. Protocol numbers are IANA's (6 = TCP, 17 = UDP).
    pub fn key(self, pkt: &PacketData) -> FlowKey {
        let proto = pkt.l4.protocol();
        let (sport, dport) = pkt.l4.ports().unwrap_or((0, 0));
        FlowKey(match self {
            FlowKeyKind::FiveTuple => return FlowKey::five_tuple(pkt.src, pkt.dst, proto, sport, dport),
            FlowKeyKind::SrcPort => (proto as u128) << 16 | sport as u128,
            FlowKeyKind::DstAddr => pkt.dst.0 as u128,
        })
    }
}

/// Current occupancy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub packets: u64,
    pub bytes: u64,
}

/// What happened to an arriving packet.
#[derive(Debug)]
pub enum Verdict {
    Enqueued,
    /// Refused on arrival; the packet is handed back for accounting.
    Dropped(Packet),
}

/// The drop-tail rule: whether an arrival of `size` bytes exceeds `limit` on a queue holding
/// `packets` packets and `bytes` bytes (FIFO, and the hard limit of CoDel, RED and PIE).
pub(crate) fn over_limit(limit: crate::units::Limit, packets: u64, bytes: u64, size: u32) -> bool {
    match limit {
        crate::units::Limit::Packets(n) => packets >= n,
        crate::units::Limit::Bytes(b) => bytes + size as u64 > b,
    }
}

/// Context handed to a discipline on each call.
pub struct QueueCtx<'a> {
    pub now: SimTime,
    /// Packets the discipline removed from its queue without sending them (push-out, AQM).
    pub(crate) dropped_from_queue: &'a mut Vec<Packet>,
    /// Packets the discipline marked Congestion Experienced during the call ([`Self::mark_ce`]),
    /// which the port adds to its statistics.
    pub(crate) ce_marks: u32,
}

impl<'a> QueueCtx<'a> {
    pub fn new(now: SimTime, dropped_from_queue: &'a mut Vec<Packet>) -> Self {
        QueueCtx { now, dropped_from_queue, ce_marks: 0 }
    }
    /// An ECN-enabled AQM's congestion signal (RFC 3168 §5): marks `pkt` CE if it is
    /// ECN-capable and returns `true` (the discipline keeps the packet); returns `false` for a
    /// Not-ECT packet, which the discipline drops instead. The port counts the marks.
    pub fn mark_ce(&mut self, pkt: &mut PacketData) -> bool {
        let marked = pkt.set_ce();
        self.ce_marks += marked as u32;
        marked
    }
    /// Marks made during this call so far.
    pub fn ce_marks(&self) -> u32 {
        self.ce_marks
    }
    /// Drops a packet that was already enqueued (push-out by LQD, CoDel's head drop).
    pub fn drop_queued(&mut self, pkt: Packet) {
        self.dropped_from_queue.push(pkt);
    }
}

/// A queue discipline attached to a port. Capabilities only some disciplines have (a
/// reservation table) are reached through [`AsAny`], not through methods here.
pub trait QueueDisc: Send + AsAny {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict;
    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet>;
    /// For a non-work-conserving discipline whose `dequeue` returned `None` while it holds
    /// packets: the earliest time at which it may release one (the port wakes then). `None`
    /// when it holds none, and always for work-conserving disciplines (the default), which
    /// release a packet whenever they hold one.
    fn ready_at(&self, _now: SimTime) -> Option<SimTime> {
        None
    }
    fn backlog(&self) -> Backlog;
    /// Packets currently held, for end-of-run in-flight accounting. Order is unspecified.
    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData));
    /// For a discipline with per-flow queues: `f(flow, bytes queued)` for every non-empty
    /// queue, in the discipline's own order (`flow` is the flow of the queue's head packet).
    /// The port asks only when it samples per-flow backlogs ([`Build::flow_sample`]) and a
    /// sample is due, right after an enqueue and after a dequeue that returned a packet. The
    /// default reports nothing.
    fn flow_backlogs(&self, _f: &mut dyn FnMut(FlowId, u64)) {}
}

/// What a discipline may need to know about its link when it is built.
#[derive(Copy, Clone, Debug)]
pub struct BuildCtx {
    pub mtu_bytes: u32,
    /// Serialisation rate of the port.
    pub rate: crate::units::Rate,
    /// The port's own random seed, derived from the scenario seed and the port's name: the
    /// key of any random stream the discipline draws from (e.g. [`TieRule::Neutral`] draws).
    pub seed: u64,
}

/// Builds a discipline from its config; every [`QueueConfig`] kind implements it.
pub trait Build {
    /// Checks the parameters' ranges; `Err((field, reason))` is reported at the config's key
    /// path plus `field` before anything is built, so no discipline ever sees a value outside
    /// its range (a zero quantum or interval). Default: nothing to check.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        Ok(())
    }
    /// Whether the scenario turned ECN marking on (`ecn = true`): the port's results then
    /// carry a `ce_marks_pkts` column. Default false.
    fn ecn(&self) -> bool {
        false
    }
    /// Builds the discipline for a port described by `cx` (MTU, rate, seed).
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc>;
    /// For a discipline with per-flow queues that reports them
    /// ([`QueueDisc::flow_backlogs`]): the interval at which its port samples the per-flow
    /// backlog (results table `flow_queues`). `None`, the default, samples nothing.
    fn flow_sample(&self) -> Option<Dur> {
        None
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig::Fifo(FifoConfig::default())
    }
}

impl QueueConfig {
    /// See [`Build::validate`].
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.config().validate()
    }
    pub fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        self.config().build(cx)
    }
    /// See [`Build::ecn`].
    pub fn ecn(&self) -> bool {
        self.config().ecn()
    }
    /// The per-flow backlog sampling interval the config asks its port for ([`Build::flow_sample`]).
    pub fn flow_sample(&self) -> Option<Dur> {
        self.config().flow_sample()
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for discipline tests: synthetic packets of a given flow and size.
    use crate::packet::*;
    use crate::time::SimTime;

    /// A queue context at time zero, dropped packets collected in `d`.
    pub fn cx(d: &mut Vec<Packet>) -> super::QueueCtx<'_> {
        super::QueueCtx::new(SimTime::ZERO, d)
    }

    /// The 5-tuple key of [`pkt`]`(flow, ..)`'s packets.
    pub fn key(flow: FlowId) -> crate::queue::FlowKey {
        crate::queue::FlowKey::five_tuple(Addr::primary(0), Addr::primary(1), 17, 1000 + flow as u16, 5000)
    }

    pub fn pkt(flow: FlowId, size: u32, seq: u64) -> Packet {
        Box::new(PacketData {
            flow,
            dir: Dir::Fwd,
            src: Addr::primary(0),
            dst: Addr::primary(1),
            seq_in_flow: seq,
            size_bytes: size,
            sent_at: SimTime::ZERO,
            hop: 0,
            route: NO_ROUTE,
            path: 0,
            ip: IpHdr::default(),
            l4: L4::Udp(UdpHdr { src_port: 1000 + flow as u16, dst_port: 5000, ..Default::default() }),
            gro: None,
        })
    }

    /// [`pkt`] sent ECN-capable (ECT(0)).
    pub fn ect(flow: FlowId, size: u32, seq: u64) -> Packet {
        let mut p = pkt(flow, size, seq);
        p.ip.ecn = Ecn::Ect0;
        p
    }

    /// Sets each packet's DSCP from its flow (`marks[flow % marks.len()]`) before handing it
    /// to the discipline, so the shared harness (whose packets are unmarked) exercises every
    /// class of a DSCP classifier (`prio`, `wdrr`).
    pub struct Marking<Q>(pub Q, pub &'static [crate::ip::dscp::Dscp]);

    impl<Q: crate::queue::QueueDisc + 'static> crate::queue::QueueDisc for Marking<Q> {
        fn enqueue(&mut self, mut pkt: Packet, cx: &mut crate::queue::QueueCtx) -> crate::queue::Verdict {
            pkt.ip.dscp = self.1[pkt.flow as usize % self.1.len()].value();
            self.0.enqueue(pkt, cx)
        }
        fn dequeue(&mut self, cx: &mut crate::queue::QueueCtx) -> Option<Packet> {
            self.0.dequeue(cx)
        }
        fn backlog(&self) -> crate::queue::Backlog {
            self.0.backlog()
        }
        fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
            self.0.for_each_packet(f)
        }
    }

    /// One step of a random arrival/departure sequence for the property tests.
    #[derive(Clone, Debug)]
    pub enum Op {
        /// A packet of `flow` with `size` bytes arrives `gap_ns` after the previous step.
        Arrive { flow: u32, size: u32, gap_ns: u64 },
        /// The transmitter asks for the next packet `gap_ns` after the previous step.
        Depart { gap_ns: u64 },
    }

    /// Random sequences over `flows` flows; arrivals twice as likely as departures so that the
    /// buffer fills and the drop policy is exercised.
    pub fn ops(flows: u32, len: usize) -> impl proptest::strategy::Strategy<Value = Vec<Op>> {
        use proptest::prelude::*;
        let op = prop_oneof![
            2 => (0..flows, 40u32..1500, 0u64..2_000_000).prop_map(|(flow, size, gap_ns)| Op::Arrive { flow, size, gap_ns }),
            1 => (0u64..2_000_000).prop_map(|gap_ns| Op::Depart { gap_ns }),
        ];
        proptest::collection::vec(op, 1..len)
    }

    /// Counters kept by the harness, as the port would keep them.
    #[derive(Clone, Debug, Default)]
    pub struct Counts {
        pub arrived: u64,
        pub enqueued: u64,
        pub dropped_arrival: u64,
        pub dropped_queued: u64,
        pub dequeued: u64,
    }

    /// Per-flow bytes currently queued, recomputed from `for_each_packet`.
    pub fn flow_bytes(q: &dyn crate::queue::QueueDisc) -> std::collections::BTreeMap<FlowId, u64> {
        let mut m = std::collections::BTreeMap::new();
        q.for_each_packet(&mut |p| *m.entry(p.flow).or_insert(0) += p.size_bytes as u64);
        m
    }

    /// Drives `q` through `ops` and checks after every step: `arrived = enqueued + dropped`,
    /// `enqueued = dequeued + dropped from queue + backlog`, the reported backlog equals the
    /// packets held, and work conservation (a dequeue returns a packet whenever the backlog is
    /// non-empty, unless the discipline dropped every remaining packet during that call, as an
    /// AQM may). `hook` sees the state before each step, the step, and its outcome.
    pub fn drive(
        q: &mut dyn crate::queue::QueueDisc,
        ops: &[Op],
        mut hook: impl FnMut(
            &dyn crate::queue::QueueDisc,
            &Op,
            &Outcome,
        ) -> Result<(), proptest::test_runner::TestCaseError>,
    ) -> Result<Counts, proptest::test_runner::TestCaseError> {
        use crate::queue::{QueueCtx, Verdict};
        use proptest::prelude::*;
        let mut c = Counts::default();
        let mut now = 0u64;
        let mut scratch = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let before = flow_bytes(q);
            let backlog_before = q.backlog();
            let outcome = match op {
                Op::Arrive { flow, size, gap_ns } => {
                    now += gap_ns;
                    let mut cx = QueueCtx::new(SimTime(now), &mut scratch);
                    c.arrived += 1;
                    let v = q.enqueue(pkt(*flow, *size, i as u64), &mut cx);
                    let o = match v {
                        Verdict::Enqueued => {
                            c.enqueued += 1;
                            Outcome { before, accepted: true, served: None, pushed_out: Vec::new() }
                        }
                        Verdict::Dropped(p) => {
                            c.dropped_arrival += 1;
                            prop_assert_eq!(p.seq_in_flow, i as u64, "an arrival drop hands back the arriving packet");
                            Outcome { before, accepted: false, served: None, pushed_out: Vec::new() }
                        }
                    };
                    o
                }
                Op::Depart { gap_ns } => {
                    now += gap_ns;
                    let mut cx = QueueCtx::new(SimTime(now), &mut scratch);
                    let p = q.dequeue(&mut cx);
                    if p.is_some() {
                        c.dequeued += 1;
                    } else {
                        prop_assert!(
                            q.backlog().packets == 0,
                            "work conservation: dequeue returned None with backlog {:?} (before: {:?})",
                            q.backlog(),
                            backlog_before
                        );
                    }
                    Outcome { before, accepted: false, served: p, pushed_out: Vec::new() }
                }
            };
            let mut outcome = outcome;
            outcome.pushed_out = std::mem::take(&mut scratch);
            c.dropped_queued += outcome.pushed_out.len() as u64;
            hook(q, op, &outcome)?;
            prop_assert_eq!(c.arrived, c.enqueued + c.dropped_arrival);
            prop_assert_eq!(c.enqueued, c.dequeued + c.dropped_queued + q.backlog().packets);
            let (mut n, mut b) = (0u64, 0u64);
            q.for_each_packet(&mut |p| {
                n += 1;
                b += p.size_bytes as u64;
            });
            prop_assert_eq!(n, q.backlog().packets);
            prop_assert_eq!(b, q.backlog().bytes);
        }
        Ok(c)
    }

    /// What [`overload`] measured after its warm-up.
    #[derive(Clone, Debug)]
    pub struct OverloadStats {
        /// Mean and 5th percentile sojourn (enqueue to dequeue) of the packets served.
        pub mean_sojourn_ms: f64,
        pub p5_sojourn_ms: f64,
        pub arrivals: u64,
        /// Arrivals refused (early drops and limit drops alike).
        pub arrival_drops: u64,
        /// Packets the discipline dropped from its queue (CoDel's head drops).
        pub queued_drops: u64,
        /// Most packets held at once.
        pub max_backlog: u64,
    }

    /// Drives `q` as a port on a `link_bps` link would, fed by an unresponsive constant-rate
    /// source of `size`-byte packets at `load` × the link rate, for `run`; statistics cover the
    /// time after `warmup`. Deterministic: arrivals every `tx / load`, departures back to back
    /// whenever the discipline releases a packet (an arrival at the instant the link frees is
    /// enqueued first).
    pub fn overload(
        q: &mut dyn crate::queue::QueueDisc,
        link_bps: u64,
        load: f64,
        size: u32,
        run: crate::time::Dur,
        warmup: crate::time::Dur,
    ) -> OverloadStats {
        use crate::queue::{QueueCtx, Verdict};
        let tx = size as u64 * 8 * 1_000_000_000 / link_bps;
        let gap = (tx as f64 / load).round() as u64;
        let (mut next_arr, mut busy_until, mut idle, mut seq) = (0u64, 0u64, true, 0u64);
        let mut scratch = Vec::new();
        let mut soj = Vec::new();
        let (mut arrivals, mut arrival_drops, mut queued_drops, mut max_backlog) = (0u64, 0u64, 0u64, 0u64);
        let end = run.as_nanos();
        loop {
            let arrival = idle || next_arr <= busy_until;
            let t = if arrival { next_arr } else { busy_until };
            if t > end {
                break;
            }
            let counting = t >= warmup.as_nanos();
            let mut cx = QueueCtx::new(SimTime(t), &mut scratch);
            if arrival {
                let mut p = pkt(0, size, seq);
                p.sent_at = SimTime(t);
                seq += 1;
                next_arr += gap;
                let refused = matches!(q.enqueue(p, &mut cx), Verdict::Dropped(_));
                if counting {
                    arrivals += 1;
                    arrival_drops += refused as u64;
                }
            }
            if !arrival || idle {
                let mut cx = QueueCtx::new(SimTime(t), &mut scratch);
                match q.dequeue(&mut cx) {
                    Some(p) => {
                        if counting {
                            soj.push((t - p.sent_at.0) as f64 / 1e6);
                        }
                        busy_until = t + tx;
                        idle = false;
                    }
                    None => idle = true,
                }
            }
            if counting {
                queued_drops += scratch.len() as u64;
                max_backlog = max_backlog.max(q.backlog().packets);
            }
            scratch.clear();
        }
        assert!(!soj.is_empty(), "overload harness: nothing served after the warm-up");
        let mean = soj.iter().sum::<f64>() / soj.len() as f64;
        soj.sort_by(|a, b| a.total_cmp(b));
        let pct = |f: f64| soj[((soj.len() - 1) as f64 * f) as usize];
        OverloadStats {
            mean_sojourn_ms: mean,
            p5_sojourn_ms: pct(0.05),
            arrivals,
            arrival_drops,
            queued_drops,
            max_backlog,
        }
    }

    /// What one step of [`drive`] did.
    pub struct Outcome {
        /// Per-flow queued bytes before the step.
        pub before: std::collections::BTreeMap<FlowId, u64>,
        /// An arrival that was admitted (and not handed back).
        pub accepted: bool,
        /// The packet a departure returned.
        pub served: Option<Packet>,
        /// Packets the discipline pushed out of its queue during the step.
        pub pushed_out: Vec<Packet>,
    }
}
