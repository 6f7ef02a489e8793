//! The simulation world: nodes, ports, flows and the event loop.
//!
//! How a packet moves: app → transport endpoint ([`Endpoint`]) → `Simulation::inject` at its
//! node → port (queue discipline, serialisation) → delay line (+ loss) → next node → … → the
//! peer's node → the peer endpoint → its application. A flow has an end at each of its two
//! nodes (`ends[0]` at `src`, which opens the connection, `ends[1]` at `dst`), each an endpoint
//! with an optional application; notices and timers go to the end where they happen.
//! Forwarding never calls back into an endpoint synchronously (every hop takes at least one
//! serialisation time), so endpoint callbacks are never re-entered.

use crate::app::WAKE;
use crate::app::{AppAction, AppCtx, AppEvent, Application};
use crate::engine::{Event, EventQueue, Owner, SimRng, TimerBlock, TimerCtx, TimerKind, Timers};
use crate::ip::rsvp::{RsvpKind, RsvpMsg};
use crate::link::{DropCause, Port, PortOutcome};
use crate::packet::{Dir, FlowId, IpHdr, NodeId, Packet, PacketData, PortId, L4};
use crate::queue::Reservation;
use crate::time::SimTime;
use crate::trace::probe::Probes;
use crate::trace::{FlowStats, PacketLog};
use crate::transport::{Endpoint, FlowCtx, Outgoing, Service, TransportEvent};
use std::collections::VecDeque;

pub const NO_ROUTE: u32 = u32::MAX;

/// Why [`Simulation::attach_app`] refused an application.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachError {
    #[error("the run has started")]
    Started,
    #[error("no flow named {0:?}")]
    NoFlow(String),
    #[error("a flow has ends 0 and 1, not {0}")]
    NoEnd(usize),
}

/// The direction each end of a flow sends in.
const END_DIR: [Dir; 2] = [Dir::Fwd, Dir::Rev];

/// One end of a flow: a transport endpoint on a node, and the application using it.
pub struct End {
    pub node: NodeId,
    pub(crate) sock: Box<dyn Endpoint>,
    pub(crate) app: Option<Box<dyn Application>>,
    /// The application's `kind` tag ("" without one).
    pub app_kind: String,
    pub(crate) app_rng: SimRng,
    pub(crate) started: bool,
    /// Timer blocks of the endpoint and of the application.
    pub(crate) sock_timers: TimerBlock,
    pub(crate) app_timers: TimerBlock,
    /// Transport notices the application subscribed to.
    pub(crate) subscriptions: u32,
}

impl End {
    pub(crate) fn new(
        node: NodeId,
        sock: Box<dyn Endpoint>,
        app: Option<Box<dyn Application>>,
        app_kind: String,
        app_rng: SimRng,
    ) -> Self {
        let subscriptions = app.as_ref().map_or(0, |a| a.subscriptions());
        End {
            node,
            sock,
            app,
            app_kind,
            app_rng,
            started: false,
            sock_timers: TimerBlock::EMPTY,
            app_timers: TimerBlock::EMPTY,
            subscriptions,
        }
    }
}

/// A message an application wrote into a byte stream, to be handed to the peer's application
/// once its last byte is delivered in order: the stream's content, which the simulator does
/// not carry byte by byte (like an ns-3 packet tag riding on the bytes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Record {
    /// Stream offset just past the message's last byte.
    end: u64,
    bytes: u64,
    tag: u64,
}

/// One flow: a connection between an end at `src` (`ends[0]`, which opens it and whose
/// application is the scenario's `app`) and an end at `dst` (`ends[1]`, with the optional
/// `peer_app`). `Dir::Fwd` is what `ends[0]` sends, `Dir::Rev` what `ends[1]` sends.
pub struct Flow {
    pub name: String,
    pub transport_kind: String,
    pub app_kind: String,
    pub src: NodeId,
    pub dst: NodeId,
    pub(crate) route_fwd: Option<Vec<PortId>>,
    pub(crate) route_rev: Option<Vec<PortId>>,
    pub ends: [End; 2],
    pub start: SimTime,
    pub stop: SimTime,
    pub fwd: FlowStats,
    pub rev: FlowStats,
    pub(crate) next_seq: [u64; 2],
    /// Bytes each end's application wrote into the stream, and its messages not yet delivered.
    written: [u64; 2],
    records: [VecDeque<Record>; 2],
    pub log: Option<PacketLog>,
    pub service: Service,
    pub fairness: bool,
}

impl Flow {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        name: String,
        transport_kind: String,
        ends: [End; 2],
        routes: (Option<Vec<PortId>>, Option<Vec<PortId>>),
        start: SimTime,
        stop: SimTime,
        log: Option<PacketLog>,
        service: Service,
        fairness: bool,
    ) -> Self {
        Flow {
            name,
            transport_kind,
            app_kind: ends[0].app_kind.clone(),
            src: ends[0].node,
            dst: ends[1].node,
            route_fwd: routes.0,
            route_rev: routes.1,
            ends,
            start,
            stop,
            fwd: FlowStats::new(),
            rev: FlowStats::new(),
            next_seq: [0, 0],
            written: [0, 0],
            records: [VecDeque::new(), VecDeque::new()],
            log,
            service,
            fairness,
        }
    }
    /// The endpoint at the flow's source (which sends `Dir::Fwd`).
    pub fn sender(&self) -> &dyn Endpoint {
        &*self.ends[0].sock
    }
    /// The endpoint at the flow's destination.
    pub fn receiver(&self) -> &dyn Endpoint {
        &*self.ends[1].sock
    }
}

/// Spare packet boxes kept for reuse at most (655 KB); beyond it a finished packet is freed.
const SPARE_MAX: usize = 4096;

/// Keeps the box of a packet that left the network for the next new packet.
#[inline]
fn recycle(spare: &mut Vec<Packet>, pkt: Packet) {
    if spare.len() < SPARE_MAX {
        spare.push(pkt);
    }
}

/// A component that owns timers, as the world finds it when one of them fires.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// The transport endpoint at end 0 or 1 of a flow.
    Socket(FlowId, u8),
    /// The application at end 0 or 1 of a flow.
    App(FlowId, u8),
}

/// The world.
pub struct Simulation {
    pub(crate) now: SimTime,
    pub(crate) end: SimTime,
    pub seed: u64,
    pub(crate) events: EventQueue,
    /// Every component's timers; `components[owner]` says whose a block is.
    pub(crate) timers: Timers,
    components: Vec<Component>,
    pub node_names: Vec<String>,
    /// `next_hop[node][dst]`: port to take from `node` towards `dst`.
    pub(crate) next_hop: Vec<Vec<u32>>,
    pub ports: Vec<Port>,
    pub flows: Vec<Flow>,
    pub(crate) bin_ns: u64,
    out: Vec<Outgoing>,
    notices: Vec<TransportEvent>,
    actions: Vec<AppAction>,
    drops: Vec<(Packet, DropCause)>,
    /// Boxes of packets that left the network (delivered or dropped), reused for new packets:
    /// a loaded TFD cell allocates and frees a box per packet otherwise. At most `SPARE_MAX`.
    spare: Vec<Packet>,
    /// RSVP messages the application asked to send.
    out_rsvp: Vec<RsvpMsg>,
    /// RSVP messages sent by hosts (PATH, RESV, PathTear) and lost in queues.
    pub rsvp_sent: u64,
    pub rsvp_dropped: u64,
    finished: bool,
    /// Probe events of endpoints and applications (ports keep their own); see `trace::probe`.
    pub(crate) probes: Probes,
}

impl Simulation {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble(
        end: SimTime,
        seed: u64,
        node_names: Vec<String>,
        next_hop: Vec<Vec<u32>>,
        ports: Vec<Port>,
        flows: Vec<Flow>,
        bin_ns: u64,
    ) -> Simulation {
        let mut events = EventQueue::new();
        let mut timers = Timers::new();
        let mut components = Vec::new();
        let mut flows = flows;
        for (i, f) in flows.iter_mut().enumerate() {
            let fid = i as FlowId;
            let mut register = |c: Component, kinds: u8| {
                let owner = Owner(components.len() as u32);
                components.push(c);
                timers.register(owner, kinds)
            };
            for (e, end) in f.ends.iter_mut().enumerate() {
                end.sock_timers = register(Component::Socket(fid, e as u8), end.sock.timer_kinds());
                if let Some(app) = &end.app {
                    end.app_timers = register(Component::App(fid, e as u8), app.timer_kinds().max(1));
                }
            }
            // Each application's first WAKE starts it: the source's first, as before ends had
            // applications of their own, so that runs without a peer application keep their order.
            for end in &f.ends {
                if end.app.is_some() {
                    timers.set(&mut events, end.app_timers, WAKE, f.start);
                }
            }
        }
        Simulation {
            now: SimTime::ZERO,
            end,
            seed,
            events,
            timers,
            components,
            node_names,
            next_hop,
            ports,
            flows,
            bin_ns,
            out: Vec::new(),
            notices: Vec::new(),
            actions: Vec::new(),
            drops: Vec::new(),
            spare: Vec::new(),
            out_rsvp: Vec::new(),
            rsvp_sent: 0,
            rsvp_dropped: 0,
            finished: false,
            probes: Probes::default(),
        }
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn end(&self) -> SimTime {
        self.end
    }
    /// Events dispatched so far.
    pub fn events_dispatched(&self) -> u64 {
        self.events.popped()
    }
    /// Pending events (a measure of the heap's size).
    pub fn events_pending(&self) -> usize {
        self.events.len()
    }

    /// Puts `app` at end `end` (0: the flow's source, 1: its destination) of flow `flow`,
    /// replacing the application the scenario put there, before the run starts. This is how a
    /// component that is not in the registry (a prototype, a test's probe) joins a run: it
    /// registers its own timer kinds like any other. It starts at the flow's start time and is
    /// reported as `kind`. It must use the transport's service (a datagram source on a stream
    /// transport is a bug the endpoint asserts).
    pub fn attach_app(
        &mut self,
        flow: &str,
        end: usize,
        kind: &str,
        app: Box<dyn Application>,
    ) -> Result<(), AttachError> {
        if self.events.popped() > 0 {
            return Err(AttachError::Started);
        }
        let fid = self.flows.iter().position(|f| f.name == flow).ok_or_else(|| AttachError::NoFlow(flow.into()))?;
        if end > 1 {
            return Err(AttachError::NoEnd(end));
        }
        let owner = Owner(self.components.len() as u32);
        self.components.push(Component::App(fid as FlowId, end as u8));
        let block = self.timers.register(owner, app.timer_kinds().max(1));
        let f = &mut self.flows[fid];
        let e = &mut f.ends[end];
        if e.app.is_some() {
            // The replaced application's block stays registered, disarmed: its pending start
            // entry then finds nothing due.
            self.timers.cancel(e.app_timers, WAKE);
        }
        e.subscriptions = app.subscriptions();
        e.app_kind = kind.to_string();
        e.app = Some(app);
        e.app_timers = block;
        e.started = false;
        self.timers.set(&mut self.events, block, WAKE, f.start);
        if end == 0 {
            f.app_kind = e.app_kind.clone();
        }
        Ok(())
    }

    /// Runs to the end time.
    pub fn run(&mut self) {
        self.run_until(self.end);
    }

    /// Runs until `t` (at most the end time); can be called repeatedly to step.
    pub fn run_until(&mut self, t: SimTime) {
        let until = t.min(self.end);
        while let Some((time, ev)) = self.events.pop_until(until) {
            debug_assert!(time >= self.now, "event in the past: {time} < {}", self.now);
            self.now = time;
            match ev {
                Event::PortTxDone(p) => {
                    let o = self.ports[p as usize].tx_done(time, &mut self.drops);
                    self.schedule_port(p, o);
                    self.account_drops();
                }
                Event::LinkArrival(p) => {
                    let port = &mut self.ports[p as usize];
                    let (pkt, next) = port.arrival(time);
                    let to = port.to;
                    if let Some(n) = next {
                        self.events.push(n, Event::LinkArrival(p));
                    }
                    self.receive(to, pkt);
                }
                Event::Timer(slot) => {
                    if let Some((owner, kind)) = self.timers.on_entry(&mut self.events, slot, time) {
                        self.fire_timer(owner, kind);
                    }
                }
            }
        }
        self.now = until;
    }

    fn schedule_port(&mut self, p: PortId, o: PortOutcome) {
        if let Some(t) = o.tx_done_at {
            self.events.push(t, Event::PortTxDone(p));
        }
        if let Some(t) = o.arrival_at {
            self.events.push(t, Event::LinkArrival(p));
        }
    }

    #[inline]
    fn account_drops(&mut self) {
        if self.drops.is_empty() {
            return;
        }
        for (pkt, cause) in self.drops.drain(..) {
            if matches!(pkt.l4, L4::Rsvp(_)) {
                // Signalling is not part of the flow's data; soft state recovers from the loss.
                self.rsvp_dropped += 1;
                continue;
            }
            let f = &mut self.flows[pkt.flow as usize];
            let st = match pkt.dir {
                Dir::Fwd => &mut f.fwd,
                Dir::Rev => &mut f.rev,
            };
            match cause {
                DropCause::Queue => st.drop_queue_pkts += 1,
                DropCause::Channel => st.drop_channel_pkts += 1,
            }
            if pkt.dir == Dir::Fwd {
                if let Some(log) = f.log.as_mut() {
                    log.drop[pkt.seq_in_flow as usize] = if cause == DropCause::Queue { 1 } else { 2 };
                }
            }
            recycle(&mut self.spare, pkt);
        }
    }

    /// A box for a new packet: a spare one if there is any.
    #[inline]
    fn new_packet(&mut self, data: PacketData) -> Packet {
        match self.spare.pop() {
            Some(mut b) => {
                *b = data;
                b
            }
            None => Box::new(data),
        }
    }

    /// A packet reached `node`.
    fn receive(&mut self, node: NodeId, pkt: Packet) {
        if matches!(pkt.l4, L4::Rsvp(_)) {
            self.rsvp_at_node(node, pkt);
        } else if pkt.dst == node {
            self.deliver(pkt);
        } else {
            self.forward(node, pkt);
        }
    }

    fn forward(&mut self, node: NodeId, mut pkt: Packet) {
        let f = &self.flows[pkt.flow as usize];
        let route = match pkt.dir {
            Dir::Fwd => f.route_fwd.as_ref(),
            Dir::Rev => f.route_rev.as_ref(),
        };
        let port = match route {
            Some(r) => r[pkt.hop as usize],
            None => self.next_hop[node as usize][pkt.dst as usize],
        };
        assert!(
            port != NO_ROUTE,
            "{}: flow {} has no route from {} to {} (build-time routing check missed it)",
            self.now,
            f.name,
            self.node_names[node as usize],
            self.node_names[pkt.dst as usize]
        );
        pkt.hop += 1;
        let o = self.ports[port as usize].enqueue(pkt, self.now, &mut self.drops);
        self.schedule_port(port, o);
        self.account_drops();
    }

    /// A packet reached the node of the end it is addressed to.
    fn deliver(&mut self, pkt: Packet) {
        let fid = pkt.flow;
        let now = self.now;
        let bin = self.bin_ns;
        let f = &mut self.flows[fid as usize];
        // Fwd packets are for the destination end, Rev ones for the source end.
        let e = match pkt.dir {
            Dir::Fwd => {
                f.fwd.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
                if let Some(log) = f.log.as_mut() {
                    log.recv_ns[pkt.seq_in_flow as usize] = now.0 as i64;
                }
                1
            }
            Dir::Rev => {
                f.rev.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
                0
            }
        };
        let end = &mut f.ends[e];
        let timers = TimerCtx::new(&mut self.timers, &mut self.events, end.sock_timers);
        let mut cx = FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices)
            .sending(END_DIR[e])
            .with_subscriptions(end.subscriptions)
            .with_probes(&mut self.probes);
        end.sock.on_packet(&pkt, &mut cx);
        recycle(&mut self.spare, pkt);
        self.flush(fid, e);
    }

    /// Hands a due timer to the component that owns it.
    fn fire_timer(&mut self, owner: Owner, kind: TimerKind) {
        let now = self.now;
        let (fid, e) = match self.components[owner.0 as usize] {
            Component::App(fid, e) => {
                let f = &mut self.flows[fid as usize];
                let end = &mut f.ends[e as usize];
                let app = end.app.as_mut().expect("an application timer has an application");
                let mut acx =
                    AppCtx::new(now, f.stop, end.sock.max_datagram_payload(), &mut end.app_rng, &mut self.actions);
                if !end.started {
                    end.started = true;
                    app.start(&mut acx);
                } else {
                    app.on_event(AppEvent::Timer(kind), &mut acx);
                }
                (fid, e)
            }
            Component::Socket(fid, e) => {
                let end = &mut self.flows[fid as usize].ends[e as usize];
                let timers = TimerCtx::new(&mut self.timers, &mut self.events, end.sock_timers);
                let mut cx = FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices)
                    .sending(END_DIR[e as usize])
                    .with_subscriptions(end.subscriptions)
                    .with_probes(&mut self.probes);
                end.sock.on_timer(kind, &mut cx);
                (fid, e)
            }
        };
        self.flush(fid, e as usize);
    }

    /// Hands end `e`'s application the messages its peer wrote whose last byte the end's
    /// endpoint has now delivered in order.
    fn deliver_messages(&mut self, fid: FlowId, e: usize) {
        let now = self.now;
        let f = &mut self.flows[fid as usize];
        let peer = 1 - e;
        if f.records[peer].is_empty() {
            return;
        }
        let delivered = f.ends[e].sock.delivered_bytes().unwrap_or(0);
        let end = &mut f.ends[e];
        while let Some(r) = f.records[peer].front().copied() {
            if r.end > delivered {
                break;
            }
            f.records[peer].pop_front();
            if let Some(app) = end.app.as_mut() {
                let mut acx =
                    AppCtx::new(now, f.stop, end.sock.max_datagram_payload(), &mut end.app_rng, &mut self.actions);
                app.on_event(AppEvent::Message { bytes: r.bytes, tag: r.tag }, &mut acx);
            }
        }
    }

    /// Drains what the callbacks at end `e` of flow `fid` produced: packets to send, notices
    /// and messages for the end's application, and the application's actions, until nothing is
    /// left.
    fn flush(&mut self, fid: FlowId, e: usize) {
        loop {
            if !self.out_rsvp.is_empty() {
                for m in std::mem::take(&mut self.out_rsvp) {
                    self.send_rsvp(fid, m);
                }
            }
            if !self.out.is_empty() {
                let mut out = std::mem::take(&mut self.out);
                for o in out.drain(..) {
                    self.inject(fid, o);
                }
                // Give the (now empty) buffer back so its capacity is reused.
                if self.out.is_empty() {
                    self.out = out;
                }
            }
            let now = self.now;
            if !self.notices.is_empty() {
                let f = &mut self.flows[fid as usize];
                let end = &mut f.ends[e];
                // `FlowCtx::notify` queued only the kinds the application subscribed to.
                match end.app.as_mut() {
                    Some(app) => {
                        let mut acx = AppCtx::new(
                            now,
                            f.stop,
                            end.sock.max_datagram_payload(),
                            &mut end.app_rng,
                            &mut self.actions,
                        );
                        for n in self.notices.drain(..) {
                            app.on_event(AppEvent::Transport(n), &mut acx);
                        }
                    }
                    None => self.notices.clear(),
                }
            }
            self.deliver_messages(fid, e);
            if self.actions.is_empty() {
                if self.out.is_empty() && self.notices.is_empty() {
                    return;
                }
                continue;
            }
            let f = &mut self.flows[fid as usize];
            let end = &mut f.ends[e];
            let timers = TimerCtx::new(&mut self.timers, &mut self.events, end.sock_timers);
            let mut cx = FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices)
                .sending(END_DIR[e])
                .with_subscriptions(end.subscriptions)
                .with_probes(&mut self.probes);
            for a in self.actions.drain(..) {
                match a {
                    AppAction::Datagram(d) => end.sock.send_datagram(d, &mut cx),
                    AppAction::Rsvp(m) => self.out_rsvp.push(m),
                    AppAction::Write { bytes } => {
                        f.written[e] += bytes;
                        end.sock.write(bytes, &mut cx)
                    }
                    AppAction::Message { bytes, tag } => {
                        f.written[e] += bytes;
                        f.records[e].push_back(Record { end: f.written[e], bytes, tag });
                        end.sock.write(bytes, &mut cx)
                    }
                    AppAction::SetTimer { kind, at } => {
                        debug_assert!(at >= now, "{now}: flow {} app timer {kind:?} set in the past", f.name);
                        cx.timers.timers.set(cx.timers.events, end.app_timers, kind, at)
                    }
                }
            }
        }
    }

    /// Stamps and sends a packet produced by flow `fid`'s endpoint. A TFD option the
    /// application attached (`o.tfd`) goes into the IP header, adding its bytes to the datagram.
    fn inject(&mut self, fid: FlowId, mut o: Outgoing) {
        let now = self.now;
        let tfd = o.tfd;
        let opt_bytes = if tfd.is_some() { crate::ip::tfd::ENCODED_LEN as u16 } else { 0 };
        o.size_bytes += opt_bytes as u32;
        let f = &mut self.flows[fid as usize];
        let d = o.dir as usize;
        let seq = f.next_seq[d];
        f.next_seq[d] += 1;
        let (src, dst) = match o.dir {
            Dir::Fwd => (f.src, f.dst),
            Dir::Rev => (f.dst, f.src),
        };
        let st = if o.dir == Dir::Fwd { &mut f.fwd } else { &mut f.rev };
        st.sent_pkts += 1;
        st.sent_bytes += o.size_bytes as u64;
        if o.dir == Dir::Fwd {
            if let Some(log) = f.log.as_mut() {
                let (frame, nal) = match &o.l4 {
                    crate::packet::L4::Udp(u) => (u.media.frame, u.media.nal),
                    _ => (-1, -1),
                };
                log.seq.push(seq);
                log.nal.push(nal);
                log.frame.push(frame);
                log.size_bytes.push(o.size_bytes as u64);
                log.sent_ns.push(now.0 as i64);
                log.recv_ns.push(-1);
                log.drop.push(0);
            }
        }
        let pkt = self.new_packet(PacketData {
            flow: fid,
            dir: o.dir,
            src,
            dst,
            seq_in_flow: seq,
            size_bytes: o.size_bytes,
            sent_at: now,
            hop: 0,
            path: o.path,
            ip: IpHdr { ttl: 64, opt_bytes, tfd, ..Default::default() },
            l4: o.l4,
        });
        self.forward(src, pkt);
    }

    /// The port node `node` uses for flow `fid`'s data (`None` at the destination).
    fn data_port(&self, fid: FlowId, node: NodeId) -> Option<PortId> {
        let f = &self.flows[fid as usize];
        if node == f.dst {
            return None;
        }
        match &f.route_fwd {
            Some(r) => r.iter().copied().find(|&p| self.ports[p as usize].from == node),
            None => Some(self.next_hop[node as usize][f.dst as usize]),
        }
    }

    /// The sender's RSVP agent emits `m` at the flow's source node.
    fn send_rsvp(&mut self, fid: FlowId, m: RsvpMsg) {
        let f = &self.flows[fid as usize];
        let (src, dst) = (f.src, f.dst);
        self.rsvp_sent += 1;
        let pkt = self.rsvp_packet(fid, Dir::Fwd, src, dst, m);
        self.rsvp_at_node(src, pkt);
    }

    fn rsvp_packet(&self, fid: FlowId, dir: Dir, src: NodeId, dst: NodeId, m: RsvpMsg) -> Packet {
        Box::new(PacketData {
            flow: fid,
            dir,
            src,
            dst,
            seq_in_flow: 0,
            size_bytes: m.ip_bytes(),
            sent_at: self.now,
            hop: 0,
            path: 0,
            ip: IpHdr { ttl: 64, ..Default::default() },
            l4: L4::Rsvp(m),
        })
    }

    /// RSVP processing at a node (RFC 2205 §1.2, §3): PATH travels to the receiver, which
    /// answers with a RESV; the RESV travels back hop by hop and each node installs the
    /// reservation on the port it forwards the flow's data on (the sender's own access port
    /// included); PathTear removes it at every node downstream. The lifetime of installed state
    /// is L = (K + 0.5) · 1.5 · R from the message's refresh period (§3.7).
    fn rsvp_at_node(&mut self, node: NodeId, pkt: Packet) {
        let L4::Rsvp(m) = &pkt.l4 else { unreachable!("rsvp_at_node with a non-RSVP packet") };
        let fid = pkt.flow;
        let (src, dst) = (self.flows[fid as usize].src, self.flows[fid as usize].dst);
        let now = self.now;
        match m.kind {
            RsvpKind::Path if node == dst => {
                // The receiver's RSVP agent reserves what the sender's Tspec asks for (Rspec
                // R = Tspec r) and refreshes whenever the PATH is refreshed.
                let resv = RsvpMsg { kind: RsvpKind::Resv, ..m.clone() };
                self.rsvp_sent += 1;
                let r = self.rsvp_packet(fid, Dir::Rev, dst, src, resv);
                self.forward(node, r);
            }
            RsvpKind::Path => self.forward(node, pkt),
            RsvpKind::Resv => {
                if let Some(p) = self.data_port(fid, node) {
                    let req = Reservation::Install {
                        flow: fid,
                        rate_bps: m.rate_bps,
                        expires: SimTime(now.0 + m.lifetime_ns()),
                    };
                    self.ports[p as usize].reserve(&req, now);
                }
                if node != src {
                    self.forward(node, pkt);
                }
            }
            RsvpKind::PathTear => {
                if let Some(p) = self.data_port(fid, node) {
                    self.ports[p as usize].reserve(&Reservation::Remove { flow: fid }, now);
                }
                if node != dst {
                    self.forward(node, pkt);
                }
            }
        }
    }

    /// Closes per-port integrals and flushes captures. Idempotent.
    pub(crate) fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        for p in &mut self.ports {
            p.finish(self.now);
        }
    }

    /// Packets of each flow and direction still inside the network: `[flow][dir]`.
    pub fn in_flight(&self) -> Vec<[u64; 2]> {
        let mut v = vec![[0u64; 2]; self.flows.len()];
        for p in &self.ports {
            p.for_each_packet(&mut |pkt| {
                if !matches!(pkt.l4, L4::Rsvp(_)) {
                    v[pkt.flow as usize][pkt.dir as usize] += 1
                }
            });
        }
        v
    }
}
