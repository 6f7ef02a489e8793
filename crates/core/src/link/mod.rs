//! One direction of a link: a [`Port`] (queue discipline + serialiser) driving a [`Channel`]
//! (point-to-point by default, or a shared medium; see [`channel`]), which a loss model may
//! decorate, and feeding a delay line (propagation).
//!
//! Event economy (htsim `queue.cpp`/`pipe.cpp`): a packet enters the delay line the moment its
//! serialisation starts, stamped with its arrival time (start + serialisation + propagation),
//! so a hop whose queue is empty costs one event (the arrival). A port schedules a wake-up
//! (`PortTxDone`) at the end of the current serialisation only when a packet is waiting behind
//! it; a non-empty delay line has exactly one pending `LinkArrival`, for its earliest packet.
//! Because serialisations do not overlap and the propagation delay is constant, packets leave
//! the line in the order they entered, so the line is a FIFO of `(arrival time, packet)`.
//! A channel that is not ready (outside the direction's grant) makes the port wait: it
//! schedules one wake-up at the time the channel names, as for a discipline holding packets
//! back.

pub mod channel;
pub mod gro;
pub mod handover;
pub mod loss;
pub mod outage;

use crate::packet::{NodeId, Packet, PacketData};
use crate::queue::{Backlog, QueueCtx, QueueDisc, Verdict};
use crate::time::{Dur, SimTime};
use crate::trace::pcap::PcapWriter;
use crate::trace::probe::{self, ProbeEvent, Probes};
use crate::units::Rate;
pub use channel::Channel;
use channel::Device;
use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;

/// Counters of one link direction. All are cumulative over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    pub arrived_pkts: u64,
    pub arrived_bytes: u64,
    pub enqueued_pkts: u64,
    pub dropped_arrival_pkts: u64,
    pub dropped_arrival_bytes: u64,
    pub dropped_queued_pkts: u64,
    pub dropped_queued_bytes: u64,
    /// Packets an ECN-enabled discipline marked Congestion Experienced instead of dropping
    /// (RFC 3168 §5; [`crate::queue::QueueCtx::mark_ce`]).
    pub ce_marked_pkts: u64,
    pub dequeued_pkts: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub channel_drop_pkts: u64,
    pub channel_drop_bytes: u64,
    /// Packets (and bytes) lost because the link was down ([`outage`]); these are counted in
    /// `channel_drop_*` as well.
    pub down_drop_pkts: u64,
    pub down_drop_bytes: u64,
    pub delivered_pkts: u64,
    /// Total time the transmitter was busy, in ns (from the start of each serialisation to its
    /// end, so on a channel that grants slots it includes the gaps a packet spans).
    pub busy_ns: u64,
    pub max_backlog_pkts: u64,
    pub max_backlog_bytes: u64,
    /// Integral of backlog (bytes) over time, in byte·ns, for the time-average occupancy.
    pub backlog_byte_ns: u128,
}

/// A sampled occupancy series: at most one sample per `interval`, taken at the first change in
/// each interval (no extra events are scheduled), in a fixed memory budget: when the series
/// holds `cap` samples, the interval doubles and only the first sample of each doubled interval
/// is kept. That is exactly the series the doubled interval would have recorded from the start
/// (the first change in an interval of 2I is the first sample at or after its start), so a long
/// run keeps a coarser series instead of growing without bound.
#[derive(Clone, Debug, Default)]
pub struct OccupancySeries {
    pub interval_ns: u64,
    pub t_ns: Vec<u64>,
    pub packets: Vec<u64>,
    pub bytes: Vec<u64>,
    next_ns: u64,
    /// Most samples kept.
    cap: usize,
    /// The interval the scenario asked for.
    pub asked_ns: u64,
}

/// Fewest samples a port's series keeps before it coarsens, whatever the number of ports.
pub const MIN_SAMPLES_PER_SERIES: usize = 1024;

/// Queue-occupancy samples a run keeps, shared out equally among its ports (each keeps at
/// least [`MIN_SAMPLES_PER_SERIES`]): 2^20, 24 MiB of samples and a `queues` table of about
/// that many rows at most, whatever the run's length.
pub const QUEUE_SAMPLE_BUDGET: usize = 1 << 20;

impl OccupancySeries {
    pub fn new(interval: Dur) -> Self {
        let i = interval.as_nanos().max(1);
        OccupancySeries { interval_ns: i, asked_ns: i, cap: usize::MAX, ..Default::default() }
    }
    /// Keeps at most `cap` samples (at least [`MIN_SAMPLES_PER_SERIES`]; see the type).
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap.max(MIN_SAMPLES_PER_SERIES);
    }
    #[inline]
    fn observe(&mut self, now: SimTime, b: Backlog) {
        if now.0 >= self.next_ns {
            if self.t_ns.len() >= self.cap {
                self.coarsen();
                if now.0 < self.next_ns {
                    return;
                }
            }
            self.t_ns.push(now.0);
            self.packets.push(b.packets);
            self.bytes.push(b.bytes);
            self.next_ns = (now.0 / self.interval_ns + 1) * self.interval_ns;
        }
    }
    /// Doubles the interval (again while the series is still full) and keeps the first sample
    /// of each new interval.
    #[cold]
    fn coarsen(&mut self) {
        while self.t_ns.len() >= self.cap && self.interval_ns < crate::units::MAX_TIME_NS {
            self.interval_ns = self.interval_ns.saturating_mul(2);
            let mut kept = 0;
            let mut last = u64::MAX;
            for k in 0..self.t_ns.len() {
                let slot = self.t_ns[k] / self.interval_ns;
                if slot != last {
                    self.t_ns[kept] = self.t_ns[k];
                    self.packets[kept] = self.packets[k];
                    self.bytes[kept] = self.bytes[k];
                    kept += 1;
                    last = slot;
                }
            }
            self.t_ns.truncate(kept);
            self.packets.truncate(kept);
            self.bytes.truncate(kept);
        }
        if let Some(&t) = self.t_ns.last() {
            self.next_ns = (t / self.interval_ns + 1) * self.interval_ns;
        }
    }
}

/// What the world must do after a port operation.
#[derive(Debug, Default)]
pub struct PortOutcome {
    /// Schedule `PortTxDone` at this time.
    pub tx_done_at: Option<SimTime>,
    /// Schedule `LinkArrival` at this time.
    pub arrival_at: Option<SimTime>,
}

/// A link direction.
pub struct Port {
    pub name: String,
    pub from: NodeId,
    pub to: NodeId,
    /// The channel's rate while it transmits (for reports; timing comes from the channel).
    pub rate: Rate,
    /// The channel's propagation delay (for reports).
    pub delay: Dur,
    pub mtu_bytes: u32,
    qdisc: Box<dyn QueueDisc>,
    /// End of the current (or last) serialisation; the transmitter is idle from then on.
    busy_until: SimTime,
    /// A `PortTxDone` wake-up is scheduled at `busy_until`.
    wake_pending: bool,
    /// The transmitter is idle although the discipline holds packets (a non-work-conserving
    /// discipline is holding them back, or the channel is not ready): a `PortTxDone` wake-up is
    /// scheduled at this time. Wake-ups for other times are stale and ignored.
    idle_wake: Option<SimTime>,
    /// `idle_wake` was ever used: only then may a wake-up find nothing to do (for a
    /// work-conserving discipline on an always-ready channel that stays a bug, and is asserted).
    held_back: bool,
    /// The segments of an aggregate the discipline gave up, still to be serialised, in order
    /// ([`gro`]: GSO on the way out). Out of the discipline's reach, not in its backlog.
    gso: VecDeque<Packet>,
    /// GRO on the far node's receiving interface of this direction ([`gro`]), if it has it.
    pub gro: Option<Box<gro::Gro>>,
    /// pcap capture of this direction: packets as their serialisation starts.
    pub(crate) capture: Option<PcapWriter<BufWriter<File>>>,
    /// Enqueue/dequeue/drop probes of this direction, when the scenario asks for them, and
    /// this port's id in the world (for the events).
    pub(crate) probes: Option<Box<Probes>>,
    id: crate::packet::PortId,
    line: VecDeque<(SimTime, Packet)>,
    /// What carries the bits, with this direction's loss model.
    channel: Device,
    last_change: SimTime,
    pub stats: PortStats,
    pub occupancy: Option<OccupancySeries>,
    /// Per-flow backlog samples the discipline feeds through its context, when its config
    /// asks for them (SQF's `flow_sample`); see [`probe::FlowBacklogSeries`].
    flow_samples: Option<Box<probe::FlowBacklogSeries>>,
    /// When this direction is down ([`outage`]); empty for most ports.
    outages: outage::Outages,
    /// Handovers still to apply to this direction ([`handover`]); `None` for most ports.
    handovers: Option<Box<handover::Schedule>>,
    /// Scratch for packets a discipline drops from its queue.
    scratch: Vec<Packet>,
    /// The scenario turned ECN marking on for this port's discipline ([`crate::queue::Build::ecn`]).
    ecn: bool,
    /// What the discipline holds, kept here from its verdicts, dequeues and drops (the
    /// conservation law every discipline's tests check: enqueued = dequeued + dropped from
    /// the queue + backlog), so the statistics need no virtual call per operation.
    /// `tests::port_backlog_matches_its_discipline` checks it against `QueueDisc::backlog`.
    backlog: Backlog,
}

/// Records a probe event out of line, so that the port's hot paths carry only the branch.
#[cold]
#[inline(never)]
fn record_cold(pr: &mut Probes, now: SimTime, ev: ProbeEvent) {
    pr.record(now, ev);
}

/// Dropped packets, handed back to the world for per-flow accounting.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum DropCause {
    Queue,
    Channel,
}

impl Port {
    /// A direction `from` → `to` sending through `channel` (see
    /// [`channel::ChannelConfig::device`]), its occupancy sampled every `occupancy` if given.
    pub fn new(
        name: String,
        from: NodeId,
        to: NodeId,
        mtu_bytes: u32,
        qdisc: Box<dyn QueueDisc>,
        channel: Device,
        occupancy: Option<Dur>,
    ) -> Port {
        Port {
            name,
            from,
            to,
            rate: channel.rate(),
            delay: channel.delay(),
            mtu_bytes,
            qdisc,
            busy_until: SimTime::ZERO,
            wake_pending: false,
            idle_wake: None,
            held_back: false,
            gso: VecDeque::new(),
            gro: None,
            capture: None,
            probes: None,
            id: 0,
            line: VecDeque::new(),
            channel,
            last_change: SimTime::ZERO,
            stats: PortStats::default(),
            occupancy: occupancy.map(OccupancySeries::new),
            flow_samples: None,
            outages: outage::Outages::default(),
            handovers: None,
            scratch: Vec::new(),
            ecn: false,
            backlog: Backlog::default(),
        }
    }

    pub fn backlog(&self) -> Backlog {
        self.backlog
    }

    /// Turns GRO on at the receiving interface of this direction's far node.
    pub fn with_gro(mut self, cfg: Option<gro::GroConfig>) -> Self {
        self.gro = cfg.map(|c| Box::new(gro::Gro::new(c)));
        self
    }

    /// The transmitter has something to send: the discipline holds packets, or an aggregate's
    /// segments are still to go.
    #[inline]
    fn has_work(&self) -> bool {
        self.backlog.packets > 0 || !self.gso.is_empty()
    }

    /// Takes this direction down during `windows` (see [`outage`]); set before the run.
    pub fn set_outages(&mut self, windows: Vec<outage::Window>) {
        self.outages = outage::Outages::new(windows);
    }

    /// Changes this direction's rate, delay or loss at the changes' times (see [`handover`]);
    /// set before the run.
    pub fn set_handovers(&mut self, changes: Vec<handover::Change>) {
        self.handovers = (!changes.is_empty()).then(|| Box::new(handover::Schedule::new(changes)));
    }

    /// Applies the handovers due at `now` (out of line: one branch for a port without them).
    #[cold]
    #[inline(never)]
    fn apply_handovers(&mut self, now: SimTime) {
        if let Some(s) = self.handovers.as_deref_mut() {
            for c in s.due(now) {
                self.channel.apply(c);
            }
            if s.is_empty() {
                self.handovers = None;
            }
        }
    }

    /// Records that the scenario turned ECN marking on for this port's discipline.
    pub fn with_ecn(mut self, ecn: bool) -> Self {
        self.ecn = ecn;
        self
    }

    /// Whether this port's results report CE marks: ECN marking was turned on, or the
    /// discipline marked packets anyway (FQ-CoDel marks by default).
    pub fn reports_ce_marks(&self) -> bool {
        self.ecn || self.stats.ce_marked_pkts > 0
    }

    /// Whether this direction's channel is the point-to-point wire (whose rate and delay a
    /// handover may change).
    pub fn is_point_to_point(&self) -> bool {
        matches!(self.channel, Device::PointToPoint(_))
    }

    /// The intervals this direction is down, sorted and merged.
    pub fn outages(&self) -> &[outage::Window] {
        self.outages.windows()
    }

    /// Samples the per-flow backlog the discipline reports every `interval`, if given (see
    /// [`crate::queue::Build::flow_sample`]).
    pub fn with_flow_samples(mut self, interval: Option<Dur>) -> Port {
        self.flow_samples = interval.map(|i| Box::new(probe::FlowBacklogSeries::new(i)));
        self
    }

    /// Records the port kinds among `kinds` ([`probe::ProbeKind::Queue`], `Drops`) for this
    /// port, which is port `id` of the world; nothing if there are none.
    pub fn enable_probes(&mut self, id: crate::packet::PortId, kinds: &[probe::ProbeKind]) {
        use probe::ProbeKind::{Drops, Queue};
        let mine: Vec<_> = kinds.iter().copied().filter(|k| matches!(k, Queue | Drops)).collect();
        self.id = id;
        self.probes = (!mine.is_empty()).then(|| Box::new(Probes::new(&mine)));
    }

    /// Records a port event for `p` if probes are on (one branch when they are off).
    #[inline]
    fn probe(&mut self, now: SimTime, p: &PacketData, ev: fn(u32, u32, u8, u32) -> ProbeEvent) {
        if let Some(pr) = self.probes.as_deref_mut() {
            record_cold(pr, now, ev(self.id, p.flow, p.dir as u8, p.size_bytes));
        }
    }

    fn account_backlog(&mut self, now: SimTime) {
        let b = self.backlog;
        self.stats.backlog_byte_ns += b.bytes as u128 * (now.0 - self.last_change.0) as u128;
        self.last_change = now;
    }

    fn after_change(&mut self, now: SimTime) {
        let b = self.backlog;
        self.stats.max_backlog_pkts = self.stats.max_backlog_pkts.max(b.packets);
        self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(b.bytes);
        if let Some(o) = self.occupancy.as_mut() {
            o.observe(now, b);
        }
    }

    /// The discipline's reservation table, if it keeps one (signalling at the node that owns
    /// this port installs reservations through it; see [`crate::queue::reservation`]).
    pub fn reservations_mut(&mut self) -> Option<&mut dyn crate::queue::Reservations> {
        crate::queue::reservations_mut(self.qdisc.as_mut())
    }

    /// Samples the discipline's per-flow backlog if this port does and a sample is due (one
    /// branch otherwise: the sampling itself is out of line, as probe recording is).
    #[inline]
    fn sample_flows(&mut self, now: SimTime) {
        if self.flow_samples.is_some() {
            self.sample_flows_cold(now);
        }
    }

    #[cold]
    #[inline(never)]
    fn sample_flows_cold(&mut self, now: SimTime) {
        if let Some(s) = self.flow_samples.as_deref_mut() {
            s.observe(now, |sink| self.qdisc.flow_backlogs(sink));
        }
    }

    /// The per-flow backlog samples of this port's discipline, if the port takes them.
    pub fn flow_samples(&self) -> Option<&probe::FlowBacklogSeries> {
        self.flow_samples.as_deref()
    }

    /// The rate this port's discipline holds for the packets with 5-tuple `key`, if it keeps
    /// reservations.
    pub fn reservation(&self, key: crate::queue::FlowKey) -> Option<crate::units::Rate> {
        crate::queue::reservations(self.qdisc.as_ref()).and_then(|r| r.reservation(key))
    }

    /// A packet arrives to be sent on this port. Dropped packets are appended to `drops`.
    pub fn enqueue(&mut self, pkt: Packet, now: SimTime, drops: &mut Vec<(Packet, DropCause)>) -> PortOutcome {
        self.account_backlog(now);
        self.stats.arrived_pkts += 1;
        self.stats.arrived_bytes += pkt.size_bytes as u64;
        let size = pkt.size_bytes as u64;
        // Who the packet is, for an enqueue probe (it moves into the discipline).
        let who = self.probes.is_some().then(|| (pkt.flow, pkt.dir as u8));
        let mut cx = QueueCtx::new(now, &mut self.scratch);
        let verdict = self.qdisc.enqueue(pkt, &mut cx);
        self.stats.ce_marked_pkts += cx.ce_marks as u64;
        self.sample_flows(now);
        match verdict {
            Verdict::Enqueued => {
                self.stats.enqueued_pkts += 1;
                self.backlog.packets += 1;
                self.backlog.bytes += size;
                if let (Some(pr), Some((flow, end))) = (self.probes.as_deref_mut(), who) {
                    record_cold(pr, now, ProbeEvent::Enqueue { port: self.id, flow, end, bytes: size as u32 });
                }
            }
            Verdict::Dropped(p) => {
                self.stats.dropped_arrival_pkts += 1;
                self.stats.dropped_arrival_bytes += p.size_bytes as u64;
                self.probe(now, &p, |port, flow, end, bytes| ProbeEvent::Drop {
                    port,
                    flow,
                    end,
                    bytes,
                    cause: probe::DropCause::Arrival,
                });
                drops.push((p, DropCause::Queue));
            }
        }
        self.collect_queue_drops(now, drops);
        // A medium that grants from demand hears of every change (the point-to-point channel
        // ignores it: one branch).
        self.channel.backlog_changed(now, self.backlog);
        let mut out = PortOutcome::default();
        if self.wake_pending {
            // A wake-up at `busy_until` (possibly this very instant) will start the next packet.
        } else if now >= self.busy_until {
            self.start_next(now, drops, &mut out);
        } else if self.backlog.packets > 0 {
            self.wake_pending = true;
            out.tx_done_at = Some(self.busy_until);
        }
        self.after_change(now);
        out
    }

    #[inline]
    fn collect_queue_drops(&mut self, now: SimTime, drops: &mut Vec<(Packet, DropCause)>) {
        if !self.scratch.is_empty() {
            self.drain_queue_drops(now, drops);
        }
    }

    /// Drops from the queue are rare next to enqueues and dequeues: kept out of line.
    #[inline(never)]
    fn drain_queue_drops(&mut self, now: SimTime, drops: &mut Vec<(Packet, DropCause)>) {
        for p in self.scratch.drain(..) {
            self.stats.dropped_queued_pkts += 1;
            self.stats.dropped_queued_bytes += p.size_bytes as u64;
            self.backlog.packets -= 1;
            self.backlog.bytes -= p.size_bytes as u64;
            if let Some(pr) = self.probes.as_deref_mut() {
                let (flow, end, bytes) = (p.flow, p.dir as u8, p.size_bytes);
                let cause = probe::DropCause::Queued;
                pr.record(now, ProbeEvent::Drop { port: self.id, flow, end, bytes, cause });
            }
            drops.push((p, DropCause::Queue));
        }
    }

    /// Schedules a wake-up at `t` for a transmitter that is idle with packets held, unless an
    /// earlier one is already scheduled.
    fn wake_at(&mut self, now: SimTime, t: SimTime, out: &mut PortOutcome) {
        if self.idle_wake.is_none_or(|w| t < w || w < now) {
            self.held_back = true;
            self.idle_wake = Some(t);
            out.tx_done_at = Some(t);
        }
    }

    /// Takes the next packet from the discipline and starts serialising it: the packet goes
    /// through the loss model and into the delay line now, stamped with its arrival time.
    fn start_next(&mut self, now: SimTime, drops: &mut Vec<(Packet, DropCause)>, out: &mut PortOutcome) {
        if self.handovers.is_some() {
            self.apply_handovers(now);
        }
        // The point-to-point channel is always ready: for it this is one predictable branch on
        // the channel's kind, and no call.
        let ready = self.channel.ready_at(now);
        if ready > now {
            if self.has_work() {
                self.wake_at(now, ready, out);
            }
            return;
        }
        if let Some(seg) = self.gso.pop_front() {
            return self.transmit(now, seg, drops, out);
        }
        let mut cx = QueueCtx::new(now, &mut self.scratch);
        let next = self.qdisc.dequeue(&mut cx);
        self.stats.ce_marked_pkts += cx.ce_marks as u64;
        if next.is_some() {
            self.sample_flows(now);
        }
        self.collect_queue_drops(now, drops);
        let Some(p) = next else {
            // Held back by a non-work-conserving discipline: wake when it says it is ready
            // (unless an earlier wake-up is already scheduled). Work-conserving disciplines
            // answer `None` here without a backlog query.
            if let Some(t) = self.qdisc.ready_at(now) {
                self.wake_at(now, t.max(now), out);
            }
            return;
        };
        self.stats.dequeued_pkts += 1;
        self.probe(now, &p, |port, flow, end, bytes| ProbeEvent::Dequeue { port, flow, end, bytes });
        self.backlog.packets -= 1;
        self.backlog.bytes -= p.size_bytes as u64;
        self.channel.backlog_changed(now, self.backlog);
        let p = if p.gro.is_some() {
            // GSO: the aggregate leaves as its segments, back to back.
            let mut segs = gro::segments(p);
            let first = segs.next().expect("an aggregate has segments");
            self.gso.extend(segs);
            first
        } else {
            p
        };
        self.transmit(now, p, drops, out);
    }

    /// Starts serialising `p`: it goes through the loss model and into the delay line now,
    /// stamped with its arrival time.
    fn transmit(&mut self, now: SimTime, p: Packet, drops: &mut Vec<(Packet, DropCause)>, out: &mut PortOutcome) {
        self.busy_until = self.channel.tx_end(now, p.size_bytes as u64);
        self.stats.busy_ns += self.busy_until.0 - now.0;
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes += p.size_bytes as u64;
        if let Some(w) = self.capture.as_mut() {
            w.write(now, &p).unwrap_or_else(|e| panic!("{now}: pcap write for {} failed: {e}", self.name));
        }
        // The loss model draws for every packet, down or not, so that an outage does not shift
        // the random losses of the packets after it.
        let lost = self.channel.lost(&p, now);
        let mut at = self.busy_until + self.channel.delay();
        // The line is first in, first out: after a handover cut the delay, a packet arrives no
        // earlier than the one before it (with a constant delay this never binds).
        if let Some(&(last, _)) = self.line.back() {
            at = at.max(last);
        }
        if !self.outages.is_empty() && self.outages.hits(now, at) {
            self.drop_down(now, p, drops);
        } else if lost {
            self.stats.channel_drop_pkts += 1;
            self.stats.channel_drop_bytes += p.size_bytes as u64;
            self.probe(now, &p, |port, flow, end, bytes| ProbeEvent::Drop {
                port,
                flow,
                end,
                bytes,
                cause: probe::DropCause::Channel,
            });
            drops.push((p, DropCause::Channel));
        } else {
            if self.line.is_empty() {
                out.arrival_at = Some(at);
            }
            self.line.push_back((at, p));
        }
        if self.has_work() {
            self.wake_pending = true;
            out.tx_done_at = Some(self.busy_until);
        }
    }

    /// A packet lost to an outage: counted as a channel loss and as a down loss.
    #[cold]
    #[inline(never)]
    fn drop_down(&mut self, now: SimTime, p: Packet, drops: &mut Vec<(Packet, DropCause)>) {
        self.stats.channel_drop_pkts += 1;
        self.stats.channel_drop_bytes += p.size_bytes as u64;
        self.stats.down_drop_pkts += 1;
        self.stats.down_drop_bytes += p.size_bytes as u64;
        self.probe(now, &p, |port, flow, end, bytes| ProbeEvent::Drop {
            port,
            flow,
            end,
            bytes,
            cause: probe::DropCause::Down,
        });
        drops.push((p, DropCause::Channel));
    }

    /// The transmitter finished the serialisation that started last (`PortTxDone`, scheduled
    /// because packets were waiting): start the next one.
    pub fn tx_done(&mut self, now: SimTime, drops: &mut Vec<(Packet, DropCause)>) -> PortOutcome {
        if self.idle_wake == Some(now) {
            self.idle_wake = None;
            if !self.wake_pending && now >= self.busy_until {
                // The discipline said it would be ready now: try again.
                self.account_backlog(now);
                let mut out = PortOutcome::default();
                self.start_next(now, drops, &mut out);
                self.after_change(now);
                return out;
            }
        }
        if !(self.wake_pending && now == self.busy_until) {
            // Only a superseded idle wake-up (or one the port's own wake at the same instant
            // already served) gets here.
            assert!(
                self.held_back && (!self.wake_pending || now < self.busy_until),
                "{now}: port {} woken out of step",
                self.name
            );
            return PortOutcome::default();
        }
        self.wake_pending = false;
        self.account_backlog(now);
        let mut out = PortOutcome::default();
        self.start_next(now, drops, &mut out);
        self.after_change(now);
        out
    }

    /// The earliest packet in the delay line arrives at `now`. Returns it and, if the line is
    /// still non-empty, the time of the next arrival.
    pub fn arrival(&mut self, now: SimTime) -> (Packet, Option<SimTime>) {
        let (at, p) = self
            .line
            .pop_front()
            .unwrap_or_else(|| panic!("{now}: port {} got LinkArrival with an empty delay line", self.name));
        assert_eq!(at, now, "port {}: arrival event out of step with delay line", self.name);
        self.stats.delivered_pkts += 1;
        (p, self.line.front().map(|(t, _)| *t))
    }

    /// Closes the occupancy integral and the busy time (a serialisation still running counts
    /// only up to `now`) and flushes the capture. Call once, at the end of the run.
    pub fn finish(&mut self, now: SimTime) {
        self.account_backlog(now);
        if self.busy_until > now {
            self.stats.busy_ns -= self.busy_until.0 - now.0;
            self.busy_until = now;
        }
        if let Some(w) = self.capture.as_mut() {
            w.flush().unwrap_or_else(|e| panic!("pcap of {} could not be flushed: {e}", self.name));
        }
    }

    /// Visits every packet held by this port: queued, or in serialisation or propagation.
    pub fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.qdisc.for_each_packet(&mut |p| gro::for_each_segment(p, f));
        self.gso.iter().for_each(|p| f(p));
        for (_, p) in &self.line {
            f(p);
        }
        if let Some(g) = self.gro.as_deref() {
            g.for_each_packet(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{key, ops, pkt, Op};
    use crate::queue::{BuildCtx, QueueConfig, Reservation};
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Every discipline, with small buffers; CoDel with a short target so
    /// that it drops at dequeue; TFD also holding idle reservations (not work-conserving).
    const QUEUES: &[&str] = &[
        "kind = 'fifo'\nlimit = '8p'",
        "kind = 'drr'\nlimit = '8p'",
        "kind = 'sqf'\nlimit = '8p'",
        "kind = 'pfq'\nlimit = '8p'",
        "kind = 'fq_codel'\nlimit = '8p'\ntarget = '1ms'\ninterval = '4ms'",
        "kind = 'tfd'\nlimit = '8p'",
        "kind = 'tfd'\nlimit = '8p'\nlend_idle = false",
    ];

    fn port(queue: &str) -> Port {
        let cfg: QueueConfig = toml::from_str(queue).expect("test queue config parses");
        // 1 Mbit/s against arrivals every ~1.5 ms of 40-1500 B: overloaded, so that buffers
        // fill and every kind of drop (arrival, push-out, CoDel at dequeue) happens.
        let phy = channel::LinkPhy { rate: Rate(1_000_000), delay: Dur::from_micros(100) };
        let q = cfg.build(&BuildCtx { mtu_bytes: 1500, rate: phy.rate, seed: 1 });
        let ch = channel::ChannelConfig::default().device(
            phy,
            channel::LinkDir::Ab,
            None,
            crate::engine::SimRng::stream(1, "p"),
        );
        Port::new("p".into(), 0, 1, 1500, q, ch, None)
    }

    /// A discipline's per-flow backlog is sampled by its port right after an enqueue and after a
    /// dequeue that returned a packet, at most once per interval, only when the config asks.
    #[test]
    fn port_samples_per_flow_backlog_when_its_discipline_config_asks() {
        assert!(port("kind = 'sqf'\nlimit = '8p'").flow_samples().is_none());
        let cfg = "kind = 'sqf'\nlimit = '8p'\nflow_sample = '1ms'";
        let interval = toml::from_str::<QueueConfig>(cfg).unwrap().flow_sample();
        assert_eq!(interval, Some(Dur::from_millis(1)));
        let mut p = port(cfg).with_flow_samples(interval);
        let mut d = Vec::new();
        // 1 Mbit/s: 1000 B take 8 ms, 500 B 4 ms.
        let first = p.enqueue(pkt(0, 1000, 0), SimTime(0), &mut d); // sampled, then sent at once
        assert_eq!(first.tx_done_at, None, "the transmitter was idle");
        let wake = p.enqueue(pkt(1, 500, 1), SimTime(10), &mut d).tx_done_at; // same interval
        assert_eq!(wake, Some(SimTime(8_000_000)));
        p.enqueue(pkt(1, 300, 2), SimTime(1_500_000), &mut d); // flow 1: 800 B
        let next = p.tx_done(SimTime(8_000_000), &mut d).tx_done_at.unwrap(); // flow 1: 300 B left
        p.tx_done(next, &mut d); // nothing left: the idle row
        let s = p.flow_samples().unwrap();
        assert_eq!(s.t_ns, vec![0, 1_500_000, 8_000_000, 12_000_000]);
        assert_eq!(s.flow, vec![0, 1, 1, u32::MAX]);
        assert_eq!(s.bytes, vec![1000, 800, 300, 0]);
        assert!(d.is_empty());
    }

    /// Delivers the port's wake-ups due by `until`, in time order, as the simulation would,
    /// checking the backlog after each.
    fn wake_until(
        p: &mut Port,
        wakes: &mut BinaryHeap<Reverse<u64>>,
        until: u64,
        q: &str,
    ) -> Result<(), TestCaseError> {
        while let Some(&Reverse(t)) = wakes.peek() {
            if t > until {
                break;
            }
            wakes.pop();
            if let Some(n) = p.tx_done(SimTime(t), &mut Vec::new()).tx_done_at {
                wakes.push(Reverse(n.0));
            }
            prop_assert_eq!(p.backlog(), p.qdisc.backlog(), "{}", q);
        }
        Ok(())
    }

    proptest! {
        /// The backlog the port keeps from verdicts, dequeues and drops equals what the
        /// discipline reports, after every arrival and every wake-up the port asked for, for
        /// every discipline; and everything drains once arrivals stop.
        #[test]
        fn port_backlog_matches_its_discipline(
            q in 0..QUEUES.len(),
            steps in ops(4, 300),
            reserved in any::<bool>(),
        ) {
            let mut p = port(QUEUES[q]);
            if reserved {
                let r = Reservation::Install { key: key(1), rate_bps: 2_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) };
                if let Some(t) = p.reservations_mut() {
                    t.reserve(&r, SimTime::ZERO);
                }
            }
            let mut wakes = BinaryHeap::new();
            let mut now = 0u64;
            for (i, step) in steps.iter().enumerate() {
                match *step {
                    Op::Arrive { flow, size, gap_ns } => {
                        now += gap_ns;
                        wake_until(&mut p, &mut wakes, now, QUEUES[q])?;
                        let mut drops = Vec::new();
                        if let Some(n) = p.enqueue(pkt(flow, size, i as u64), SimTime(now), &mut drops).tx_done_at {
                            wakes.push(Reverse(n.0));
                        }
                        prop_assert_eq!(p.backlog(), p.qdisc.backlog(), "{}", QUEUES[q]);
                    }
                    Op::Depart { gap_ns } => {
                        now += gap_ns;
                        wake_until(&mut p, &mut wakes, now, QUEUES[q])?;
                    }
                }
            }
            wake_until(&mut p, &mut wakes, u64::MAX, QUEUES[q])?;
            prop_assert_eq!(p.backlog(), Backlog::default(), "{} did not drain", QUEUES[q]);
        }
    }

    /// A full series doubles its interval and keeps exactly what the doubled interval would
    /// have recorded from the start.
    #[test]
    fn occupancy_series_coarsens_to_what_a_wider_interval_records() {
        let (fine, mut capped, mut wide) =
            (OccupancySeries::new(Dur(10)), OccupancySeries::new(Dur(10)), OccupancySeries::new(Dur(40)));
        let mut fine = fine;
        capped.set_cap(MIN_SAMPLES_PER_SERIES);
        // Changes at irregular times over 100,000 ns: about 5,000 samples at 10 ns.
        let mut t = 0u64;
        let mut k = 0u64;
        while t < 100_000 {
            let b = Backlog { packets: k % 7, bytes: k * 100 };
            for s in [&mut fine, &mut capped, &mut wide] {
                s.observe(SimTime(t), b);
            }
            k += 1;
            t += 3 + (k * 7919) % 29;
        }
        assert!(fine.t_ns.len() > 4 * MIN_SAMPLES_PER_SERIES);
        assert!(capped.t_ns.len() <= MIN_SAMPLES_PER_SERIES && capped.interval_ns > 10);
        let mut reference = OccupancySeries::new(Dur(capped.interval_ns));
        let mut k = 0u64;
        let mut t = 0u64;
        while t < 100_000 {
            reference.observe(SimTime(t), Backlog { packets: k % 7, bytes: k * 100 });
            k += 1;
            t += 3 + (k * 7919) % 29;
        }
        assert_eq!(
            (&capped.t_ns, &capped.packets, &capped.bytes),
            (&reference.t_ns, &reference.packets, &reference.bytes)
        );
        assert_eq!(wide.interval_ns, 40);
    }
}
