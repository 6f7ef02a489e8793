//! Node agents: protocol logic that sits on a node, beside forwarding (signalling such as
//! RSVP), rather than in the world object.
//!
//! An agent registers for IP protocols ([`NodeAgent::protocols`]). When a packet of one of them
//! reaches the agent's node, the world offers it to the agent before forwarding or delivering
//! it ([`NodeAgent::on_packet`]); the agent consumes it or hands it back to be forwarded as
//! usual. An application on the node can hand the agent a packet to originate
//! ([`NodeAgent::on_local`]), as through a raw socket. The agent arms timers of its own kinds
//! (a block registered with the engine's open timers; the world maps the block back to the
//! agent, `Component::Agent`) and reaches its node's ports only through a narrow
//! [`AgentCtx`]: the port the node uses for given header fields, sending on one of its ports,
//! and the reservation table of a port's discipline.
//!
//! Packets an agent originates belong to no flow ([`NO_FLOW`]): they are never counted in a
//! flow's statistics, and the world counts their drops by protocol. They travel hop by hop
//! from agent to agent (every node of the protocol has one), each agent sending them on with
//! [`AgentCtx::send`].
//!
//! Agents: [`rsvp`] (RFC 2205 soft-state reservations).

pub mod rsvp;

use crate::engine::{TimerCtx, TimerKind};
use crate::ip::{self, Addr};
use crate::link::Port;
use crate::node::{Fib, NO_PORT};
use crate::packet::{FlowId, IpHdr, NodeId, Packet, PacketData, PortId, L4, NO_ROUTE};
use crate::queue::{FlowKey, Reservations};
use crate::time::SimTime;
use std::collections::BTreeMap;

/// The `flow` of a packet that belongs to no flow (an agent's signalling).
pub const NO_FLOW: FlowId = FlowId::MAX;

/// Index of an agent in the world.
pub type AgentId = u32;

/// Protocol logic on one node. See the module docs.
pub trait NodeAgent: Send {
    /// IP protocol numbers (IANA) whose packets this agent is offered.
    fn protocols(&self) -> &'static [u8];
    /// Number of timer kinds the agent uses (kinds `0..n` of its own).
    fn timer_kinds(&self) -> u8 {
        0
    }
    /// A packet of one of [`protocols`](Self::protocols) reached this node from a link, before
    /// forwarding or delivery. Return it to have the world forward (or deliver) it as it would
    /// any packet; return `None` to consume it.
    fn on_packet(&mut self, pkt: Packet, cx: &mut AgentCtx) -> Option<Packet>;
    /// An application on this node hands the agent a packet to originate.
    fn on_local(&mut self, pkt: Packet, cx: &mut AgentCtx);
    /// One of the agent's timers fired.
    fn on_timer(&mut self, _kind: TimerKind, _cx: &mut AgentCtx) {}
    /// Messages this agent originated (its own, and those an application handed it).
    fn sent(&self) -> u64 {
        0
    }
}

/// What an agent may reach: its node's ports, routing, and its timers.
pub struct AgentCtx<'a> {
    pub now: SimTime,
    /// The node the agent sits on.
    pub node: NodeId,
    pub(crate) ports: &'a mut [Port],
    /// Every node's routing table, as the world forwards.
    pub(crate) fib: &'a Fib,
    /// Explicit routes pinned to a 5-tuple (flows with a `route`).
    pub(crate) pinned: &'a BTreeMap<FlowKey, Vec<PortId>>,
    pub(crate) timers: TimerCtx<'a>,
    /// Packets to enqueue, in order, on ports of this node once the agent returns.
    pub(crate) out: &'a mut Vec<(PortId, Packet)>,
}

impl<'a> AgentCtx<'a> {
    /// This node's address.
    pub fn addr(&self) -> Addr {
        ip::addr(self.node)
    }

    /// The port this node forwards packets with 5-tuple `key` to destination `dst` on, as it
    /// forwards data: the flow's explicit route if one is pinned to `key`, else the
    /// destination's next hop. `None` at the destination itself or without a route.
    pub fn port_for(&self, key: FlowKey, dst: Addr) -> Option<PortId> {
        if self.fib.owner(dst) == Some(self.node) {
            return None;
        }
        if let Some(r) = self.pinned.get(&key) {
            if let Some(&p) = r.iter().find(|&&p| self.ports[p as usize].from == self.node) {
                return Some(p);
            }
        }
        self.port_towards(dst)
    }

    /// The port towards `dst` by destination routing (`None` at `dst` or without a route).
    pub fn port_towards(&self, dst: Addr) -> Option<PortId> {
        let p = self.fib.next_port(self.node, dst);
        (p != NO_PORT).then_some(p)
    }

    /// Sends `pkt` on `port`, one of this node's ports.
    ///
    /// # Panics
    /// If `port` does not leave this node.
    pub fn send(&mut self, port: PortId, pkt: Packet) {
        self.check(port);
        self.out.push((port, pkt));
    }

    /// The reservation table of `port`'s discipline, if it keeps one.
    ///
    /// # Panics
    /// If `port` does not leave this node.
    pub fn reservations(&mut self, port: PortId) -> Option<&mut dyn Reservations> {
        self.check(port);
        self.ports[port as usize].reservations_mut()
    }

    /// Arms the agent's timer `kind` at `at`.
    pub fn set_timer(&mut self, kind: TimerKind, at: SimTime) {
        debug_assert!(at >= self.now, "{}: node {} agent timer {kind:?} set in the past", self.now, self.node);
        self.timers.set(kind, at);
    }

    /// A new packet from this node to `dst` that belongs to no flow.
    pub fn packet(&self, dst: Addr, size_bytes: u32, l4: L4) -> Packet {
        Box::new(PacketData {
            flow: NO_FLOW,
            dir: crate::packet::Dir::Fwd,
            src: self.addr(),
            dst,
            seq_in_flow: 0,
            size_bytes,
            sent_at: self.now,
            hop: 0,
            route: NO_ROUTE,
            path: 0,
            ip: IpHdr { ttl: 64, ..Default::default() },
            l4,
            gro: None,
        })
    }

    fn check(&self, port: PortId) {
        let from = self.ports[port as usize].from;
        assert!(
            from == self.node,
            "{}: agent on node {} used port {port}, which leaves node {from}",
            self.now,
            self.node
        );
    }
}
