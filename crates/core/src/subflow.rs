//! Connections with several subflows: the paths of one flow.
//!
//! A flow is one connection between two ends. By default it has one path: the ends' addresses
//! and ports, and the flow's route if it has one. A flow may instead declare `subflows` in its
//! scenario entry, each a path of its own (what an MPTCP connection's subflows are, RFC 8684
//! §2.2):
//!
//! ```toml
//! subflows = [
//!   { src_addr = "10.1.0.1", dst_addr = "10.2.0.1" },
//!   { src_addr = "10.1.1.1", dst_addr = "10.2.1.1", route = ["A", "R2", "B"] },
//! ]
//! ```
//!
//! Each path has its own address pair, its own transport ports (a distinct source port per
//! subflow, the destination port shared, as MPTCP subflows joining one listener have) and its
//! own explicit route. An endpoint chooses the path of each packet it sends (`Outgoing::path`);
//! the world stamps that path's addresses, ports and route on it, and at the far host the
//! path's socket key demultiplexes it to the same end of the same flow, whose endpoint reads
//! the path back from [`PacketData::path`](crate::packet::PacketData::path). A packet is pinned
//! to its path by its source address (it leaves through that interface, [`crate::node`]) and
//! its destination address, or by its explicit route.
//!
//! Statistics: the flow's per-direction [`FlowStats`](crate::trace::FlowStats) are the
//! connection's totals; each path keeps [`PathStats`] per direction. The `subflows` result table
//! (one row per flow and path) appears when some flow declares subflows, so results of
//! single-path scenarios are what they were.
//!
//! MPTCP itself (subflow setup, the data sequence mapping, the scheduler, coupled congestion
//! control) is the transport [`crate::transport::mptcp`], which uses every path of its flow.

use crate::node::{Addr, Egress};
use crate::packet::{PortId, L4, NO_ROUTE};
use serde::{Deserialize, Serialize};

/// Most paths one flow may have (a packet's `path` is a `u8`; MPTCP implementations allow a
/// handful of subflows, Linux 8 by default).
pub const MAX_PATHS: usize = 8;

/// One subflow of a flow's `subflows` list in a scenario. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubflowConfig {
    /// The source end's address on this path: one of `src`'s addresses (default: its primary
    /// address). The subflow leaves and returns through that interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_addr: Option<String>,
    /// The destination end's address on this path (default: `dst`'s primary address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_addr: Option<String>,
    /// Explicit route as a node list from `src` to `dst` (default: forwarded by address). The
    /// reverse direction uses the reversed list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<String>>,
}

/// Counters of one direction of one path, in packets and IP bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub recv_pkts: u64,
    pub recv_bytes: u64,
    pub drop_queue_pkts: u64,
    pub drop_channel_pkts: u64,
}

impl PathStats {
    /// The sum of `self` and `o`, field by field.
    pub fn plus(&self, o: &PathStats) -> PathStats {
        PathStats {
            sent_pkts: self.sent_pkts + o.sent_pkts,
            sent_bytes: self.sent_bytes + o.sent_bytes,
            recv_pkts: self.recv_pkts + o.recv_pkts,
            recv_bytes: self.recv_bytes + o.recv_bytes,
            drop_queue_pkts: self.drop_queue_pkts + o.drop_queue_pkts,
            drop_channel_pkts: self.drop_channel_pkts + o.drop_channel_pkts,
        }
    }
}

/// One path of a flow with several: what the world stamps on the packets an endpoint sends on
/// it, and its counters. Arrays are indexed by end (0: the flow's source) or, for `route` and
/// `stats`, by direction (`Dir::Fwd` is what end 0 sends), which is the same index.
#[derive(Clone, Debug)]
pub struct Subflow {
    /// Each end's address on this path.
    pub addr: [Addr; 2],
    /// Each end's transport port on this path.
    pub port: [u16; 2],
    /// The explicit route of each direction, if any (ports, one per hop).
    pub(crate) route: [Option<Vec<PortId>>; 2],
    /// The world's numbers of those routes (`NO_ROUTE`: forwarded by address).
    pub(crate) route_ids: [u32; 2],
    /// How each direction's packets leave their host, resolved when the world is assembled.
    pub(crate) egress: [Egress; 2],
    /// Counters by direction.
    pub stats: [PathStats; 2],
}

impl Subflow {
    pub(crate) fn new(addr: [Addr; 2], port: [u16; 2], route: [Option<Vec<PortId>>; 2]) -> Self {
        Subflow {
            addr,
            port,
            route,
            route_ids: [NO_ROUTE; 2],
            egress: [Egress::UNSET; 2],
            stats: [PathStats::default(); 2],
        }
    }
    /// The explicit route of direction `d` (0: forward), as ports.
    pub fn route(&self, d: usize) -> Option<&[PortId]> {
        self.route[d].as_deref()
    }
}

/// Writes the path's ports into a transport header: `sport` is the sender's, `dport` its peer's.
#[inline]
pub(crate) fn stamp_ports(l4: &mut L4, sport: u16, dport: u16) {
    match l4 {
        L4::Tcp(t) => (t.src_port, t.dst_port) = (sport, dport),
        L4::Udp(u) => (u.src_port, u.dst_port) = (sport, dport),
        L4::Rsvp(_) | L4::Real(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_stats_add_field_by_field() {
        let a = PathStats {
            sent_pkts: 1,
            sent_bytes: 2,
            recv_pkts: 3,
            recv_bytes: 4,
            drop_queue_pkts: 5,
            drop_channel_pkts: 6,
        };
        let b = a.plus(&a);
        assert_eq!(b.sent_bytes, 4);
        assert_eq!(b.drop_channel_pkts, 12);
    }

    #[test]
    fn ports_are_stamped_on_either_transport() {
        let mut l4 = L4::Udp(Default::default());
        stamp_ports(&mut l4, 7, 9);
        assert_eq!(l4_ports(&l4), (7, 9));
        let mut l4 = L4::Tcp(Default::default());
        stamp_ports(&mut l4, 10, 11);
        assert_eq!(l4_ports(&l4), (10, 11));
    }

    fn l4_ports(l4: &L4) -> (u16, u16) {
        match l4 {
            L4::Tcp(t) => (t.src_port, t.dst_port),
            L4::Udp(u) => (u.src_port, u.dst_port),
            L4::Rsvp(_) | L4::Real(_) => unreachable!(),
        }
    }
}
