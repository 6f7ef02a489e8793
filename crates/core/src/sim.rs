//! The simulation world: nodes, ports, flows and the event loop.
//!
//! How a packet moves: app → transport endpoint ([`Endpoint`]) → `Simulation::inject` at its
//! node → port (queue discipline, serialisation) → delay line (+ loss) → next node → … → the
//! peer's node → the peer endpoint → its application. A flow has an end at each of its two
//! nodes (`ends[0]` at `src`, which opens the connection, `ends[1]` at `dst`), each an endpoint
//! with an optional application; notices and timers go to the end where they happen.
//! Forwarding never calls back into an endpoint synchronously (every hop takes at least one
//! serialisation time), so endpoint callbacks are never re-entered.

use crate::agent::{AgentCtx, AgentId, NodeAgent, NO_FLOW};
use crate::app::WAKE;
use crate::app::{AppAction, AppCtx, AppEvent, Application};
use crate::engine::{Event, EventQueue, Owner, SimRng, TimerBlock, TimerCtx, TimerKind, Timers};
use crate::ip::rsvp::{RsvpMsg, Sender as RsvpSender, Session};
use crate::link::{DropCause, Port, PortOutcome};
use crate::node::{Addr, Egress, Fib, NO_PORT};
use crate::packet::{Dir, FlowId, IpHdr, NodeId, Packet, PacketData, PortId, L4, NO_ROUTE};
use crate::queue::FlowKey;
use crate::subflow::{stamp_ports, Subflow};
use crate::time::SimTime;
use crate::trace::probe::Probes;
use crate::trace::{FlowStats, PacketLog};
use crate::transport::{Endpoint, FlowCtx, Outgoing, Service, TransportEvent};
use std::collections::{BTreeMap, VecDeque};

/// Why [`Simulation::attach_app`] refused an application.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachError {
    #[error("the run has started")]
    Started,
    #[error("no flow named {0:?}")]
    NoFlow(String),
    #[error("a flow has ends 0 and 1, not {0}")]
    NoEnd(usize),
    #[error("the flow's transport is a {0:?} service, the endpoint another")]
    Service(Service),
}

/// A socket's identity at its node: protocol, local address and port, remote address and port
/// (what a host's demultiplexer matches, RFC 9293 §3.3.1's connection identification).
#[inline]
pub(crate) fn socket_key(proto: u8, local: Addr, lport: u16, remote: Addr, rport: u16) -> u128 {
    (proto as u128) << 96 | (local.0 as u128) << 64 | (lport as u128) << 48 | (remote.0 as u128) << 16 | rport as u128
}

/// A node's socket table entry: the [`socket_key`], and the flow, end and path it names.
pub(crate) type SocketEntry = (u128, FlowId, u8, u8);

/// The context the endpoint of end `$e` (`$end`, borrowed from `$sim.flows`) of flow `$fid`
/// acts through: its timers, the world's output and notice buffers, its application's
/// subscriptions, the probes. A macro, not a method, so that the borrow of the end and the
/// borrows of the world's other fields stay disjoint.
macro_rules! end_cx {
    ($sim:ident, $now:expr, $fid:expr, $e:expr, $end:expr) => {
        FlowCtx::new(
            $now,
            $fid,
            &mut $sim.out,
            TimerCtx::new(&mut $sim.timers, &mut $sim.events, $end.sock_timers),
            &mut $sim.notices,
        )
        .sending(END_DIR[$e])
        .with_subscriptions($end.subscriptions)
        .with_probes(&mut $sim.probes)
    };
}

/// The direction each end of a flow sends in.
const END_DIR: [Dir; 2] = [Dir::Fwd, Dir::Rev];

/// One end of a flow: a transport endpoint on a node, and the application using it.
pub struct End {
    pub node: NodeId,
    /// The end's address and port (TCP or UDP).
    pub addr: Addr,
    pub port: u16,
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
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        node: NodeId,
        addr: Addr,
        port: u16,
        sock: Box<dyn Endpoint>,
        app: Option<Box<dyn Application>>,
        app_kind: String,
        app_rng: SimRng,
    ) -> Self {
        let subscriptions = app.as_ref().map_or(0, |a| a.subscriptions());
        End {
            node,
            addr,
            port,
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
    /// When the application wrote it.
    written: SimTime,
}

/// One flow: a connection between an end at `src` (`ends[0]`, which opens it and whose
/// application is the scenario's `app`) and an end at `dst` (`ends[1]`, with the optional
/// `peer_app`). `Dir::Fwd` is what `ends[0]` sends, `Dir::Rev` what `ends[1]` sends.
pub struct Flow {
    pub name: String,
    pub transport_kind: String,
    pub src: NodeId,
    pub dst: NodeId,
    pub(crate) route_fwd: Option<Vec<PortId>>,
    pub(crate) route_rev: Option<Vec<PortId>>,
    /// The world's numbers of those routes, which the flow's packets carry (`NO_ROUTE`: none).
    pub(crate) route_ids: [u32; 2],
    /// How each direction's packets leave their host (direction `d` is sent by `ends[d]`),
    /// resolved when the world is assembled; a flow with subflows keeps one per path instead.
    pub(crate) egress: [Egress; 2],
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
    /// DiffServ code point stamped on the packets `ends[0]` sends (`Dir::Fwd`; 0 = best effort).
    pub dscp: u8,
    /// The connection's paths when it has several (`subflows` in the scenario; path 0 is the
    /// ends' own addresses, ports and route), else empty: see [`crate::subflow`].
    pub subflows: Vec<Subflow>,
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
            src: ends[0].node,
            dst: ends[1].node,
            route_fwd: routes.0,
            route_rev: routes.1,
            route_ids: [NO_ROUTE; 2],
            egress: [Egress::UNSET; 2],
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
            dscp: 0,
            subflows: Vec::new(),
        }
    }
    /// Number of paths (1 unless the flow declares subflows).
    pub fn paths(&self) -> usize {
        self.subflows.len().max(1)
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
    /// Every node's routing table.
    pub(crate) fib: Fib,
    /// Explicit routes packets carry (`PacketData::route` indexes it).
    pub(crate) routes: Vec<Vec<PortId>>,
    /// Each node's sockets, sorted by [`socket_key`]: which end of which flow a packet for the
    /// node belongs to.
    sockets: Vec<Vec<SocketEntry>>,
    pub ports: Vec<Port>,
    pub flows: Vec<Flow>,
    pub(crate) bin_ns: u64,
    /// The bin width the scenario asked for (`bin_ns` is wider when the budget required it).
    pub(crate) bin_asked_ns: u64,
    out: Vec<Outgoing>,
    notices: Vec<TransportEvent>,
    actions: Vec<AppAction>,
    drops: Vec<(Packet, DropCause)>,
    /// Scratch for the packets one GRO poll passes on.
    gro_batch: Vec<Packet>,
    /// Boxes of packets that left the network (delivered or dropped), reused for new packets:
    /// a loaded TFD cell allocates and frees a box per packet otherwise. At most `SPARE_MAX`.
    spare: Vec<Packet>,
    /// RSVP messages the application asked to send.
    out_rsvp: Vec<RsvpMsg>,
    /// Node agents (an RSVP agent on every node).
    agents: Agents,
    finished: bool,
    /// Probe events of endpoints and applications (ports keep their own); see `trace::probe`.
    pub(crate) probes: Probes,
    /// Events dispatched at the current instant so far, and the most a run may dispatch at one
    /// instant before it is stopped as stalled (see [`RunError::Stalled`]).
    instant_events: u64,
    max_instant_events: u64,
    /// Packet-log rows recorded so far (all flows), and the most a run may keep.
    log_rows: u64,
    max_log_rows: u64,
    abort: Option<RunError>,
    /// Real hosts' traffic (emulation; `None` in a purely simulated world): see [`crate::real`].
    pub(crate) real: Option<Box<crate::real::RealTraffic>>,
    /// Edge classifiers by node (`nodes[].classify`); empty when no node has one.
    pub(crate) classifiers: Vec<Option<crate::ip::classify::Classifier>>,
}

/// Why a run stopped before its end. Its results are then incomplete, and the front ends
/// report the error instead of them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// More events at one instant of simulated time than any real scenario produces, so time
    /// would never advance (a component re-arming itself at the same instant). Scenario
    /// validation rejects the parameters known to do this (zero timers, quanta and rates);
    /// this guard turns any other case into an error instead of a hang.
    #[error(
        "the run stalled at simulated time {time}: {events} events at that one instant and time never \
         advanced (a timer, rate or quantum that lets no time pass)"
    )]
    Stalled { time: SimTime, events: u64 },
    /// The packet log (`packet_trace`, or flows' `packet_log`) outgrew its bound.
    #[error(
        "the packet log reached {rows} rows at simulated time {time}, the most a run keeps (about 56 B \
         each); log fewer flows (flows' packet_log) or run a shorter simulation"
    )]
    PacketLogFull { time: SimTime, rows: u64 },
}

impl From<RunError> for crate::ScenarioError {
    fn from(e: RunError) -> Self {
        let path = match e {
            RunError::Stalled { .. } => "sim",
            RunError::PacketLogFull { .. } => "output.packet_trace",
        };
        crate::ScenarioError::new(path, e.to_string())
    }
}

/// Most packet-log rows a run keeps, over all flows (560 MB in the core).
pub const MAX_PACKET_LOG_ROWS: u64 = 10_000_000;

/// Floor of the per-instant event bound; it grows with the number of components (a million
/// flows all starting at one instant each dispatch a few events then).
pub const MIN_INSTANT_EVENTS: u64 = 10_000_000;

impl Simulation {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble(
        end: SimTime,
        seed: u64,
        node_names: Vec<String>,
        fib: Fib,
        sockets: Vec<Vec<SocketEntry>>,
        ports: Vec<Port>,
        flows: Vec<Flow>,
        bin_ns: u64,
    ) -> Simulation {
        let mut events = EventQueue::new();
        let mut routes = Vec::new();
        let mut flows = flows;
        for f in flows.iter_mut() {
            for (d, r) in [&f.route_fwd, &f.route_rev].into_iter().enumerate() {
                if let Some(r) = r {
                    f.route_ids[d] = routes.len() as u32;
                    routes.push(r.clone());
                }
            }
            // Path 0 is the flow's own route; every other path numbers its own.
            let own = f.route_ids;
            for (k, sf) in f.subflows.iter_mut().enumerate() {
                for d in 0..2 {
                    match &sf.route[d] {
                        _ if k == 0 => sf.route_ids[d] = own[d],
                        Some(r) => {
                            sf.route_ids[d] = routes.len() as u32;
                            routes.push(r.clone());
                        }
                        None => {}
                    }
                }
            }
            // Where each path's packets leave their host, once for the run.
            let route = |id: u32| (id != NO_ROUTE).then(|| (id, routes[id as usize].as_slice()));
            for d in 0..2 {
                let (me, peer) = (&f.ends[d], &f.ends[1 - d]);
                f.egress[d] = Egress::resolve(&fib, me.node, me.addr, peer.addr, route(f.route_ids[d]));
                for sf in f.subflows.iter_mut() {
                    sf.egress[d] = Egress::resolve(&fib, me.node, sf.addr[d], sf.addr[1 - d], route(sf.route_ids[d]));
                }
            }
        }
        let mut timers = Timers::new();
        let mut components = Vec::new();
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
        let n_components = components.len() + ports.len();
        Simulation {
            now: SimTime::ZERO,
            end,
            seed,
            events,
            timers,
            components,
            node_names,
            fib,
            routes,
            sockets,
            ports,
            flows,
            bin_ns,
            bin_asked_ns: bin_ns,
            out: Vec::new(),
            notices: Vec::new(),
            actions: Vec::new(),
            drops: Vec::new(),
            gro_batch: Vec::new(),
            spare: Vec::new(),
            out_rsvp: Vec::new(),
            agents,
            finished: false,
            probes: Probes::default(),
            instant_events: 0,
            max_instant_events: MIN_INSTANT_EVENTS.max(64 * n_components as u64),
            log_rows: 0,
            max_log_rows: MAX_PACKET_LOG_ROWS,
            abort: None,
            real: None,
            classifiers: Vec::new(),
        }
    }

    /// Sets the most events dispatched at one instant before the run stops as stalled (tests).
    pub fn set_max_instant_events(&mut self, n: u64) {
        self.max_instant_events = n.max(1);
    }

    /// Sets the most packet-log rows a run keeps (tests; the default is [`MAX_PACKET_LOG_ROWS`]).
    pub fn set_max_packet_log_rows(&mut self, n: u64) {
        self.max_log_rows = n;
    }

    /// `Some` if the run stopped before its end; its results are then incomplete and must not
    /// be reported as a finished run.
    pub fn aborted(&self) -> Option<&RunError> {
        self.abort.as_ref()
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
        Ok(())
    }

    /// Puts `sock` at end `end` (0: the flow's source, 1: its destination) of flow `flow` as
    /// its transport endpoint, replacing the one the scenario's transport built, before the
    /// run starts: how a transport that is not in the registry (a prototype, a test's multipath
    /// endpoint) joins a run. It registers its own timer kinds and must offer the flow's service
    /// (the applications at its end use it). On a flow with subflows it chooses the path of
    /// each packet (`Outgoing::path`) and the world stamps that path's addresses and ports.
    pub fn attach_endpoint(&mut self, flow: &str, end: usize, sock: Box<dyn Endpoint>) -> Result<(), AttachError> {
        if self.events.popped() > 0 {
            return Err(AttachError::Started);
        }
        let fid = self.flows.iter().position(|f| f.name == flow).ok_or_else(|| AttachError::NoFlow(flow.into()))?;
        if end > 1 {
            return Err(AttachError::NoEnd(end));
        }
        if sock.service() != self.flows[fid].service {
            return Err(AttachError::Service(self.flows[fid].service));
        }
        // The replaced endpoint armed nothing before the run: its block stays registered, idle.
        let owner = Owner(self.components.len() as u32);
        self.components.push(Component::Socket(fid as FlowId, end as u8));
        let block = self.timers.register(owner, sock.timer_kinds());
        let e = &mut self.flows[fid].ends[end];
        e.sock = sock;
        e.sock_timers = block;
        Ok(())
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
        if self.abort.is_some() {
            return;
        }
        while let Some((time, ev)) = self.events.pop_until(until) {
            debug_assert!(time >= self.now, "event in the past: {time} < {}", self.now);
            if time == self.now {
                self.instant_events += 1;
                if self.instant_events > self.max_instant_events {
                    self.abort = Some(RunError::Stalled { time, events: self.instant_events });
                    return;
                }
            } else {
                // Checked when time advances only (no cost per event at one instant): a log
                // that filled up overshoots by at most one instant's packets.
                if self.abort.is_some() {
                    return;
                }
                self.instant_events = 1;
            }
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
                    use crate::link::gro::Arrival;
                    match port.gro.as_deref_mut() {
                        None => self.receive(to, pkt),
                        Some(g) => match g.arrive(time, pkt) {
                            Arrival::Wait => {}
                            Arrival::PollAt(t) => self.events.push(t, Event::GroPoll(p)),
                            Arrival::PollNow => self.gro_poll(p),
                        },
                    }
                }
                Event::GroPoll(p) => self.gro_poll(p),
                Event::Timer(slot) => {
                    if let Some((owner, kind)) = self.timers.on_entry(&mut self.events, slot, time) {
                        self.fire_timer(owner, kind);
                    }
                }
            }
        }
        self.now = until;
    }

    /// The receiving interface at the far end of port `p` polls its ring now: what GRO passes
    /// on reaches the node, aggregates as one packet each.
    fn gro_poll(&mut self, p: PortId) {
        let mut batch = std::mem::take(&mut self.gro_batch);
        let port = &mut self.ports[p as usize];
        let to = port.to;
        port.gro.as_deref_mut().expect("a GRO poll at an interface with GRO").poll(self.now, &mut batch);
        for pkt in batch.drain(..) {
            self.receive(to, pkt);
        }
        self.gro_batch = batch;
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
        if self.drops.iter().any(|(p, _)| p.gro.is_some()) {
            self.split_dropped_aggregates();
        }
        for (pkt, cause) in self.drops.drain(..) {
            if pkt.flow == NO_FLOW {
                // An agent's packet (signalling) is no flow's data; soft state recovers from
                // the loss.
                *self.agents.dropped.entry(pkt.l4.protocol()).or_insert(0) += 1;
                continue;
            }
            if crate::real::is_real_flow(pkt.flow) {
                self.real.as_deref_mut().expect("a real packet needs real nodes").on_drop(pkt.flow, cause);
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
            if let Some(sf) = f.subflows.get_mut(pkt.path as usize) {
                let ps = &mut sf.stats[pkt.dir as usize];
                match cause {
                    DropCause::Queue => ps.drop_queue_pkts += 1,
                    DropCause::Channel => ps.drop_channel_pkts += 1,
                }
            }
            if pkt.dir == Dir::Fwd {
                if let Some(log) = f.log.as_mut() {
                    log.drop[pkt.seq_in_flow as usize] = if cause == DropCause::Queue { 1 } else { 2 };
                }
            }
            recycle(&mut self.spare, pkt);
        }
    }

    /// An aggregate (GRO) is lost with all its segments: each counts as its flow's loss.
    #[cold]
    #[inline(never)]
    fn split_dropped_aggregates(&mut self) {
        let all = std::mem::take(&mut self.drops);
        for (p, cause) in all {
            self.drops.extend(crate::link::gro::segments(p).map(|s| (s, cause)));
        }
    }

    /// A box for a new packet: a spare one if there is any.
    #[inline]
    pub(crate) fn new_packet(&mut self, data: PacketData) -> Packet {
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
        if let L4::Real(_) = pkt.l4 {
            return self.receive_real(node, pkt);
        }
        let proto = pkt.l4.protocol();
        if self.agents.wants(proto) {
            if let Some(a) = self.agents.at(node, proto) {
                match self.run_agent(a, |agent, cx| agent.on_packet(pkt, cx)) {
                    Some(p) => pkt = p,
                    None => return,
                }
            }
        }
        if self.fib.owner(pkt.dst) == Some(node) {
            if pkt.gro.is_some() {
                // GRO at a host's own interface: its transport takes the segments in order.
                for s in crate::link::gro::segments(pkt) {
                    self.deliver(node, s);
                }
                return;
            }
            self.deliver(node, pkt);
        } else {
            self.forward(node, pkt);
        }
    }

    /// Sends `pkt` on from `node`: along the explicit route it carries, else by its
    /// destination address.
    fn forward(&mut self, node: NodeId, mut pkt: Packet) {
        if let Some(Some(c)) = self.classifiers.get(node as usize) {
            c.mark(&mut pkt, &self.fib);
        }
        let port = if pkt.route != NO_ROUTE {
            self.routes[pkt.route as usize][pkt.hop as usize]
        } else {
            self.fib.next_port(node, pkt.dst)
        };
        self.send_on(node, port, pkt);
    }

    /// Queues `pkt` on `port` of `node`.
    pub(crate) fn send_on(&mut self, node: NodeId, port: PortId, mut pkt: Packet) {
        assert!(
            port != NO_PORT,
            "{}: {} has no route to {} for a packet of flow {} (build-time routing check missed it)",
            self.now,
            self.node_names[node as usize],
            pkt.dst,
            self.flows[pkt.flow as usize].name,
        );
        pkt.hop += 1;
        let o = self.ports[port as usize].enqueue(pkt, self.now, &mut self.drops);
        self.schedule_port(port, o);
        self.account_drops();
    }

    /// A packet reached the node that owns its destination address: the socket its addresses
    /// and ports name takes it.
    fn deliver(&mut self, node: NodeId, pkt: Packet) {
        let (proto, sport, dport) = match &pkt.l4 {
            L4::Tcp(t) => (6, t.src_port, t.dst_port),
            L4::Udp(u) => (17, u.src_port, u.dst_port),
            L4::Rsvp(_) => unreachable!("RSVP is handled at every node before delivery"),
            L4::Real(_) => unreachable!("real datagrams are handled in receive_real"),
        };
        let key = socket_key(proto, pkt.dst, dport, pkt.src, sport);
        let socks = &self.sockets[node as usize];
        let Ok(i) = socks.binary_search_by_key(&key, |s| s.0) else {
            panic!(
                "{}: {} has no socket for {}:{dport} from {}:{sport} (flow {}): every flow's ends are bound when the \
                 scenario is built",
                self.now, self.node_names[node as usize], pkt.dst, pkt.src, self.flows[pkt.flow as usize].name
            );
        };
        let (fid, e, path) = (socks[i].1, socks[i].2 as usize, socks[i].3);
        debug_assert_eq!((fid, e), (pkt.flow, if pkt.dir == Dir::Fwd { 1 } else { 0 }), "demux disagrees");
        let now = self.now;
        let bin = self.bin_ns;
        let f = &mut self.flows[fid as usize];
        if let Some(sf) = f.subflows.get_mut(path as usize) {
            // The socket of the path the packet was sent on takes it: its addresses and ports
            // were stamped from that path, and the network does not rewrite them.
            assert_eq!(
                path, pkt.path,
                "{now}: flow {} path {} arrived at the socket of path {path} ({}:{dport} from {}:{sport})",
                f.name, pkt.path, pkt.dst, pkt.src
            );
            let ps = &mut sf.stats[pkt.dir as usize];
            ps.recv_pkts += 1;
            ps.recv_bytes += pkt.size_bytes as u64;
        }
        // Statistics by direction: what the source end sent (Fwd), what the destination's did.
        match pkt.dir {
            Dir::Fwd => {
                f.fwd.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
                if let Some(log) = f.log.as_mut() {
                    log.recv_ns[pkt.seq_in_flow as usize] = now.0 as i64;
                }
            }
            Dir::Rev => f.rev.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin),
        }
        let end = &mut f.ends[e];
        let mut cx = end_cx!(self, now, fid, e, end);
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
                    AppCtx::new(now, f.stop, end.sock.max_datagram_payload(), &mut end.app_rng, &mut self.actions)
                        .with_socket(&*end.sock);
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
                let mut cx = end_cx!(self, now, fid, e as usize, end);
                end.sock.on_timer(kind, &mut cx);
                (fid, e)
            }
            Component::Agent(a) => return self.run_agent(a, |agent, cx| agent.on_timer(kind, cx)),
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
            if let Some(log) = f.log.as_mut() {
                let m = &mut log.messages;
                m.end.push(e as u64);
                m.tag.push(r.tag);
                m.bytes.push(r.bytes);
                m.written_ns.push(r.written.0 as i64);
                m.delivered_ns.push(now.0 as i64);
            }
            if let Some(app) = end.app.as_mut() {
                let mut acx =
                    AppCtx::new(now, f.stop, end.sock.max_datagram_payload(), &mut end.app_rng, &mut self.actions)
                        .with_socket(&*end.sock);
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
                        )
                        .with_socket(&*end.sock);
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
            let mut cx = end_cx!(self, now, fid, e, end);
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
                        f.records[e].push_back(Record { end: f.written[e], bytes, tag, written: now });
                        end.sock.write(bytes, &mut cx)
                    }
                    AppAction::Probe { name, value } => {
                        cx.probe(crate::trace::probe::ProbeEvent::App { flow: fid, end: e as u8, name, value })
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
        let eg = if f.subflows.is_empty() {
            assert!(o.path == 0, "{now}: flow {} sent on path {}, but it has one path", f.name, o.path);
            f.egress[d]
        } else {
            // A connection with several paths: the one the endpoint chose gives addresses,
            // ports and route (the `d`th end sends direction `d`).
            let Some(sf) = f.subflows.get_mut(o.path as usize) else {
                panic!("{now}: flow {} sent on path {}, but it has {} paths", f.name, o.path, f.subflows.len())
            };
            stamp_ports(&mut o.l4, sf.port[d], sf.port[1 - d]);
            sf.stats[d].sent_pkts += 1;
            sf.stats[d].sent_bytes += o.size_bytes as u64;
            sf.egress[d]
        };
        let dscp = if o.dir == Dir::Fwd { f.dscp } else { 0 };
        let st = if o.dir == Dir::Fwd { &mut f.fwd } else { &mut f.rev };
        st.sent_pkts += 1;
        st.sent_bytes += o.size_bytes as u64;
        if o.dir == Dir::Fwd {
            if let Some(log) = f.log.as_mut() {
                let (frame, nal) = match &o.l4 {
                    crate::packet::L4::Udp(u) => (u.media.frame, u.media.nal),
                    _ => (-1, -1),
                };
                self.log_rows += 1;
                if self.log_rows > self.max_log_rows && self.abort.is_none() {
                    self.abort = Some(RunError::PacketLogFull { time: now, rows: self.log_rows });
                }
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
            src: eg.src,
            dst: eg.dst,
            seq_in_flow: seq,
            size_bytes: o.size_bytes,
            sent_at: now,
            hop: 0,
            route: eg.route,
            path: o.path,
            ip: IpHdr { ttl: 64, dscp, opt_bytes, tfd, ecn: o.ecn, ..Default::default() },
            l4: o.l4,
            gro: None,
        });
        self.send_on(eg.node, eg.port, pkt);
    }

    /// The sender's application asks its host's RSVP agent to send `m` (RFC 2205 §3.11 API):
    /// the session and sender are flow `fid`'s header fields.
    fn send_rsvp(&mut self, fid: FlowId, m: RsvpMsg) {
        let f = &self.flows[fid as usize];
        let (session, sender) = flow_session(f, fid);
        let src = f.src;
        let m = RsvpMsg { session, sender, hop: session_hop(f), ..m };
        self.originate(src, m.ip_bytes(), session.dst, L4::Rsvp(m));
    }

    /// Hands a packet from an application on `node` to the node's agent for its protocol.
    ///
    /// # Panics
    /// If no agent on `node` registered for the protocol.
    pub(crate) fn originate(&mut self, node: NodeId, size_bytes: u32, dst: crate::ip::Addr, l4: L4) {
        let proto = l4.protocol();
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
            fib: &self.fib,
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
                // Agents' and real hosts' packets are no simulated flow's.
                if let Some(x) = v.get_mut(pkt.flow as usize) {
                    x[pkt.dir as usize] += 1
                }
            });
        }
        v
    }
}

/// The RFC 2205 session and sender of flow `fid`'s data: its endpoints' addresses, the
/// transport's protocol and the ports the world gives the flow.
fn flow_session(f: &Flow, fid: FlowId) -> (Session, RsvpSender) {
    use crate::ip::proto;
    let p = match f.sender().service() {
        crate::transport::Service::Stream => proto::TCP,
        crate::transport::Service::Datagram => proto::UDP,
    };
    let (sport, dport) = flow_ports(fid);
    (Session { dst: f.ends[1].addr, proto: p, dport }, RsvpSender { src: f.ends[0].addr, sport })
}

/// The RSVP_HOP a sender's host puts in its messages: its address on the session.
fn session_hop(f: &Flow) -> Addr {
    f.ends[0].addr
}

/// The (source, destination) transport ports of flow `fid`: the header fields routers and
/// RSVP name the flow's data by.
pub fn flow_ports(fid: FlowId) -> (u16, u16) {
    (10_000 + (fid % 50_000) as u16, 5_000 + (fid % 50_000) as u16)
}

/// The (source, destination) transport ports of path `k` of flow `fid`: path 0's are
/// [`flow_ports`]; each other path has a source port of its own and the same destination port,
/// as MPTCP subflows joining one listener do (RFC 8684 §3.2).
pub fn subflow_ports(fid: FlowId, k: usize) -> (u16, u16) {
    let (_, dport) = flow_ports(fid);
    (10_000 + ((fid as usize % 50_000 + k) % 50_000) as u16, dport)
}
