//! The simulation world: nodes, ports, flows and the event loop.
//!
//! How a packet moves: app → transport (`Sender`) → `Simulation::inject` at the source
//! node → port (queue discipline, serialisation) → delay line (+ loss) → next node → … →
//! destination node → transport (`Receiver`) → statistics. Forwarding never calls back into an
//! endpoint synchronously (every hop takes at least one serialisation time), so endpoint
//! callbacks are never re-entered.

use crate::agent::{AgentCtx, AgentId, NodeAgent, NO_FLOW};
use crate::app::WAKE;
use crate::app::{AppAction, AppCtx, AppEvent, Application};
use crate::engine::{Event, EventQueue, Owner, SimRng, TimerBlock, TimerCtx, TimerKind, Timers};
use crate::ip::rsvp::{RsvpMsg, Sender as RsvpSender, Session};
use crate::link::{DropCause, Port, PortOutcome};
use crate::packet::{Dir, FlowId, IpHdr, NodeId, Packet, PacketData, PortId, L4};
use crate::queue::FlowKey;
use crate::time::SimTime;
use crate::trace::{FlowStats, PacketLog};
use crate::transport::{FlowCtx, Outgoing, Receiver, Sender, Service, TransportEvent};
use std::collections::BTreeMap;

pub const NO_ROUTE: u32 = u32::MAX;

/// One flow: a sending endpoint and application at `src`, a receiving endpoint at `dst`.
pub struct Flow {
    pub name: String,
    pub transport_kind: String,
    pub app_kind: String,
    pub src: NodeId,
    pub dst: NodeId,
    pub(crate) route_fwd: Option<Vec<PortId>>,
    pub(crate) route_rev: Option<Vec<PortId>>,
    pub(crate) sender: Box<dyn Sender>,
    pub(crate) receiver: Box<dyn Receiver>,
    pub(crate) app: Box<dyn Application>,
    pub(crate) app_rng: SimRng,
    pub(crate) started: bool,
    pub start: SimTime,
    pub stop: SimTime,
    /// Timer blocks of the sending endpoint, the receiving endpoint and the application.
    pub(crate) snd_timers: TimerBlock,
    pub(crate) rcv_timers: TimerBlock,
    pub(crate) app_timers: TimerBlock,
    pub fwd: FlowStats,
    pub rev: FlowStats,
    pub(crate) next_seq: [u64; 2],
    pub log: Option<PacketLog>,
    pub service: Service,
    pub fairness: bool,
    pub(crate) subscriptions: u32,
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
    /// The sending endpoint of a flow.
    Sender(FlowId),
    /// The receiving endpoint of a flow.
    Receiver(FlowId),
    /// The application of a flow.
    App(FlowId),
    /// A node agent.
    Agent(AgentId),
}

/// A node agent as the world keeps it.
struct AgentSlot {
    node: NodeId,
    agent: Box<dyn NodeAgent>,
    timers: TimerBlock,
}

/// The node agents and how packets find them.
#[derive(Default)]
struct Agents {
    slots: Vec<AgentSlot>,
    /// Bit `p` set when some agent registered for IP protocol `p`: the per-packet test.
    protos: [u64; 4],
    /// `(protocol, agent)` pairs of each node.
    at_node: Vec<Vec<(u8, AgentId)>>,
    /// Explicit routes pinned to the 5-tuple of the data they carry.
    pinned: BTreeMap<FlowKey, Vec<PortId>>,
    /// Packets agents asked to send, drained after each agent call.
    out: Vec<(PortId, Packet)>,
    /// Agent packets lost in queues or channels, by IP protocol.
    dropped: BTreeMap<u8, u64>,
}

impl Agents {
    #[inline]
    fn wants(&self, proto: u8) -> bool {
        self.protos[(proto >> 6) as usize] >> (proto & 63) & 1 != 0
    }
    fn at(&self, node: NodeId, proto: u8) -> Option<AgentId> {
        self.at_node.get(node as usize)?.iter().find(|(p, _)| *p == proto).map(|(_, a)| *a)
    }
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
    /// Node agents (an RSVP agent on every node).
    agents: Agents,
    finished: bool,
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
            f.snd_timers = register(Component::Sender(fid), f.sender.timer_kinds());
            f.rcv_timers = register(Component::Receiver(fid), f.receiver.timer_kinds());
            f.app_timers = register(Component::App(fid), f.app.timer_kinds().max(1));
            // The application's first WAKE starts it.
            timers.set(&mut events, f.app_timers, WAKE, f.start);
        }
        // Every node runs an RSVP agent; ports whose discipline keeps no reservations ignore it.
        let mut agents = Agents { at_node: vec![Vec::new(); node_names.len()], ..Agents::default() };
        for node in 0..node_names.len() as NodeId {
            let agent: Box<dyn NodeAgent> = Box::new(crate::agent::rsvp::RsvpAgent::new(node));
            let id = agents.slots.len() as AgentId;
            let owner = Owner(components.len() as u32);
            components.push(Component::Agent(id));
            let block = timers.register(owner, agent.timer_kinds());
            for &p in agent.protocols() {
                agents.protos[(p >> 6) as usize] |= 1 << (p & 63);
                agents.at_node[node as usize].push((p, id));
            }
            agents.slots.push(AgentSlot { node, agent, timers: block });
        }
        for (i, f) in flows.iter().enumerate() {
            let (session, sender) = flow_session(f, i as FlowId);
            let key = FlowKey::five_tuple(sender.src, session.dst, session.proto, sender.sport, session.dport);
            let back = FlowKey::five_tuple(session.dst, sender.src, session.proto, session.dport, sender.sport);
            if let (Some(fwd), Some(rev)) = (&f.route_fwd, &f.route_rev) {
                agents.pinned.insert(key, fwd.clone());
                agents.pinned.insert(back, rev.clone());
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
            agents,
            finished: false,
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

    /// RSVP messages sent by hosts' agents (PATH and PathTear from senders, RESV from
    /// receivers).
    pub fn rsvp_sent(&self) -> u64 {
        let rsvp = crate::ip::proto::RSVP;
        self.agents.slots.iter().filter(|a| a.agent.protocols().contains(&rsvp)).map(|a| a.agent.sent()).sum()
    }

    /// RSVP messages lost in queues or channels.
    pub fn rsvp_dropped(&self) -> u64 {
        self.agents.dropped.get(&crate::ip::proto::RSVP).copied().unwrap_or(0)
    }

    /// The 5-tuple key of flow `fid`'s data (its forward direction), as routers classify it.
    pub fn data_key(&self, fid: FlowId) -> FlowKey {
        let (session, sender) = flow_session(&self.flows[fid as usize], fid);
        FlowKey::five_tuple(sender.src, session.dst, session.proto, sender.sport, session.dport)
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
            if pkt.flow == NO_FLOW {
                // An agent's packet (signalling) is no flow's data; soft state recovers from
                // the loss.
                *self.agents.dropped.entry(crate::ip::protocol(&pkt.l4)).or_insert(0) += 1;
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

    /// A packet reached `node`. An agent registered there for its protocol sees it first.
    fn receive(&mut self, node: NodeId, mut pkt: Packet) {
        let proto = crate::ip::protocol(&pkt.l4);
        if self.agents.wants(proto) {
            if let Some(a) = self.agents.at(node, proto) {
                match self.run_agent(a, |agent, cx| agent.on_packet(pkt, cx)) {
                    Some(p) => pkt = p,
                    None => return,
                }
            }
        }
        if pkt.dst == node {
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

    fn deliver(&mut self, pkt: Packet) {
        let fid = pkt.flow;
        let now = self.now;
        let bin = self.bin_ns;
        let f = &mut self.flows[fid as usize];
        let block = if pkt.dir == Dir::Fwd { f.rcv_timers } else { f.snd_timers };
        let timers = TimerCtx::new(&mut self.timers, &mut self.events, block);
        let mut cx =
            FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices).with_subscriptions(f.subscriptions);
        match pkt.dir {
            Dir::Fwd => {
                f.fwd.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
                if let Some(log) = f.log.as_mut() {
                    log.recv_ns[pkt.seq_in_flow as usize] = now.0 as i64;
                }
                f.receiver.on_packet(&pkt, &mut cx);
            }
            Dir::Rev => {
                f.rev.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
                f.sender.on_packet(&pkt, &mut cx);
            }
        }
        recycle(&mut self.spare, pkt);
        self.flush(fid);
    }

    /// Hands a due timer to the component that owns it.
    fn fire_timer(&mut self, owner: Owner, kind: TimerKind) {
        let now = self.now;
        let fid = match self.components[owner.0 as usize] {
            Component::App(fid) => {
                let f = &mut self.flows[fid as usize];
                let mut acx =
                    AppCtx::new(now, f.stop, f.sender.max_datagram_payload(), &mut f.app_rng, &mut self.actions);
                if !f.started {
                    f.started = true;
                    f.app.start(&mut acx);
                } else {
                    f.app.on_event(AppEvent::Timer(kind), &mut acx);
                }
                fid
            }
            Component::Receiver(fid) => {
                let f = &mut self.flows[fid as usize];
                let timers = TimerCtx::new(&mut self.timers, &mut self.events, f.rcv_timers);
                let mut cx = FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices)
                    .with_subscriptions(f.subscriptions);
                f.receiver.on_timer(kind, &mut cx);
                fid
            }
            Component::Sender(fid) => {
                let f = &mut self.flows[fid as usize];
                let timers = TimerCtx::new(&mut self.timers, &mut self.events, f.snd_timers);
                let mut cx = FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices)
                    .with_subscriptions(f.subscriptions);
                f.sender.on_timer(kind, &mut cx);
                fid
            }
            Component::Agent(a) => return self.run_agent(a, |agent, cx| agent.on_timer(kind, cx)),
        };
        self.flush(fid);
    }

    /// Drains what flow `fid`'s callbacks produced: packets to send, notices for the
    /// application, and the application's actions, until nothing is left.
    fn flush(&mut self, fid: FlowId) {
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
            let f = &mut self.flows[fid as usize];
            if !self.notices.is_empty() {
                let mut acx =
                    AppCtx::new(now, f.stop, f.sender.max_datagram_payload(), &mut f.app_rng, &mut self.actions);
                // `FlowCtx::notify` queued only the kinds the application subscribed to.
                for n in self.notices.drain(..) {
                    f.app.on_event(AppEvent::Transport(n), &mut acx);
                }
            }
            if self.actions.is_empty() {
                if self.out.is_empty() && self.notices.is_empty() {
                    return;
                }
                continue;
            }
            let timers = TimerCtx::new(&mut self.timers, &mut self.events, f.snd_timers);
            let mut cx =
                FlowCtx::new(now, fid, &mut self.out, timers, &mut self.notices).with_subscriptions(f.subscriptions);
            for a in self.actions.drain(..) {
                match a {
                    AppAction::Datagram(d) => f.sender.send_datagram(d, &mut cx),
                    AppAction::Rsvp(m) => self.out_rsvp.push(m),
                    AppAction::Write { bytes } => f.sender.write(bytes, &mut cx),
                    AppAction::SetTimer { kind, at } => {
                        debug_assert!(at >= now, "{now}: flow {} app timer {kind:?} set in the past", f.name);
                        cx.timers.timers.set(cx.timers.events, f.app_timers, kind, at)
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

    /// The sender's application asks its host's RSVP agent to send `m` (RFC 2205 §3.11 API):
    /// the session and sender are flow `fid`'s header fields.
    fn send_rsvp(&mut self, fid: FlowId, m: RsvpMsg) {
        let f = &self.flows[fid as usize];
        let (session, sender) = flow_session(f, fid);
        let src = f.src;
        let m = RsvpMsg { session, sender, hop: crate::ip::addr(src), ..m };
        self.originate(src, m.ip_bytes(), session.dst, L4::Rsvp(m));
    }

    /// Hands a packet from an application on `node` to the node's agent for its protocol.
    ///
    /// # Panics
    /// If no agent on `node` registered for the protocol.
    pub(crate) fn originate(&mut self, node: NodeId, size_bytes: u32, dst: crate::ip::Addr, l4: L4) {
        let proto = crate::ip::protocol(&l4);
        let a = self.agents.at(node, proto).unwrap_or_else(|| {
            panic!("{}: no agent for protocol {proto} on {}", self.now, self.node_names[node as usize])
        });
        self.run_agent(a, |agent, cx| {
            let pkt = cx.packet(dst, size_bytes, l4);
            agent.on_local(pkt, cx)
        });
    }

    /// Runs agent `a` with its context, then sends what it asked to send, in order.
    fn run_agent<R>(&mut self, a: AgentId, f: impl FnOnce(&mut dyn NodeAgent, &mut AgentCtx) -> R) -> R {
        let slot = &mut self.agents.slots[a as usize];
        let mut cx = AgentCtx {
            now: self.now,
            node: slot.node,
            ports: &mut self.ports,
            next_hop: &self.next_hop,
            pinned: &self.agents.pinned,
            timers: TimerCtx::new(&mut self.timers, &mut self.events, slot.timers),
            out: &mut self.agents.out,
        };
        let r = f(slot.agent.as_mut(), &mut cx);
        if !self.agents.out.is_empty() {
            for (p, pkt) in std::mem::take(&mut self.agents.out) {
                let o = self.ports[p as usize].enqueue(pkt, self.now, &mut self.drops);
                self.schedule_port(p, o);
                self.account_drops();
            }
        }
        r
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
                if pkt.flow != NO_FLOW {
                    v[pkt.flow as usize][pkt.dir as usize] += 1
                }
            });
        }
        v
    }
}

/// The RFC 2205 session and sender of flow `fid`'s data: its endpoints' addresses, the
/// transport's protocol and the ports the world gives the flow.
fn flow_session(f: &Flow, fid: FlowId) -> (Session, RsvpSender) {
    use crate::ip::{addr, proto};
    let p = match f.sender.service() {
        crate::transport::Service::Stream => proto::TCP,
        crate::transport::Service::Datagram => proto::UDP,
    };
    let (sport, dport) = crate::scenario::build::flow_ports(fid);
    (Session { dst: addr(f.dst), proto: p, dport }, RsvpSender { src: addr(f.src), sport })
}
