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
//! Not modelled here: MPTCP itself (the data sequence mapping of RFC 8684 §3.3, subflow setup
//! with MP_CAPABLE / MP_JOIN, the scheduler); coupled congestion control is a trait in
//! [`crate::transport::mptcp::coupled`].

use crate::node::Addr;
use crate::packet::{PortId, L4, NO_ROUTE};
use crate::sim::{Flow, Simulation};
use crate::trace::{Column, Table};
use serde::{Deserialize, Serialize};

/// Most paths one flow may have (a packet's `path` is a `u8`; MPTCP implementations allow a
/// handful of subflows, Linux 8 by default).
pub const MAX_PATHS: usize = 8;

/// One subflow of a flow's `subflows` list in a scenario. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Counters by direction.
    pub stats: [PathStats; 2],
}

impl Subflow {
    pub(crate) fn new(addr: [Addr; 2], port: [u16; 2], route: [Option<Vec<PortId>>; 2]) -> Self {
        Subflow { addr, port, route, route_ids: [NO_ROUTE; 2], stats: [PathStats::default(); 2] }
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
        L4::Rsvp(_) => {}
    }
}

impl Flow {
    /// The counters of path `k` in direction `d` (0: forward). A single-path flow's only path
    /// is the connection itself.
    ///
    /// # Panics
    /// If the flow has no path `k`.
    pub fn path_stats(&self, k: usize, d: usize) -> PathStats {
        if let Some(sf) = self.subflows.get(k) {
            return sf.stats[d];
        }
        assert!(k == 0, "flow {} has one path, not {}", self.name, k + 1);
        let st = if d == 0 { &self.fwd } else { &self.rev };
        PathStats {
            sent_pkts: st.sent_pkts,
            sent_bytes: st.sent_bytes,
            recv_pkts: st.recv_pkts,
            recv_bytes: st.recv_bytes,
            drop_queue_pkts: st.drop_queue_pkts,
            drop_channel_pkts: st.drop_channel_pkts,
        }
    }
}

impl Simulation {
    /// The `subflows` result table, one row per flow and path (forward counters, then the
    /// reverse direction's with `rev_`), or `None` when no flow declares subflows (the results
    /// of single-path runs are then what they were before subflows existed).
    ///
    /// # Panics
    /// If a path fails conservation (`sent = received + dropped + in flight`): a simulator bug.
    pub(crate) fn subflow_table(&self) -> Option<Table> {
        if self.flows.iter().all(|f| f.subflows.is_empty()) {
            return None;
        }
        // Packets of each flow, path and direction still inside the network.
        let mut inflight: Vec<[[u64; 2]; MAX_PATHS]> = vec![[[0; 2]; MAX_PATHS]; self.flows.len()];
        for p in &self.ports {
            p.for_each_packet(&mut |pkt| {
                if pkt.flow != crate::agent::NO_FLOW {
                    inflight[pkt.flow as usize][pkt.path as usize][pkt.dir as usize] += 1
                }
            });
        }
        let mut t = Table::new("subflows");
        let (mut flow, mut path, mut src, mut dst, mut sport, mut dport, mut route) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut cols: [Vec<u64>; 16] = Default::default();
        for (i, f) in self.flows.iter().enumerate() {
            for k in 0..f.paths() {
                let (addr, port, r) = match f.subflows.get(k) {
                    Some(sf) => (sf.addr, sf.port, sf.route(0)),
                    None => {
                        ([f.ends[0].addr, f.ends[1].addr], [f.ends[0].port, f.ends[1].port], f.route_fwd.as_deref())
                    }
                };
                flow.push(f.name.clone());
                path.push(k as u64);
                src.push(addr[0].to_string());
                dst.push(addr[1].to_string());
                sport.push(port[0] as u64);
                dport.push(port[1] as u64);
                route.push(r.map_or(String::new(), |ports| {
                    let mut s = self.node_names[self.ports[ports[0] as usize].from as usize].clone();
                    for &p in ports {
                        s.push('-');
                        s.push_str(&self.node_names[self.ports[p as usize].to as usize]);
                    }
                    s
                }));
                for d in 0..2 {
                    let st = f.path_stats(k, d);
                    let fl = inflight[i][k][d];
                    assert_eq!(
                        st.sent_pkts,
                        st.recv_pkts + st.drop_queue_pkts + st.drop_channel_pkts + fl,
                        "{}: flow {} path {k} dir {d}: sent != received + drops + in flight ({st:?}, {fl} in flight)",
                        self.now,
                        f.name
                    );
                    let vals = [
                        st.sent_pkts,
                        st.sent_bytes,
                        st.recv_pkts,
                        st.recv_bytes,
                        st.drop_queue_pkts,
                        st.drop_channel_pkts,
                        fl,
                    ];
                    for (c, v) in vals.into_iter().enumerate() {
                        cols[d * 8 + c].push(v);
                    }
                }
            }
        }
        t.push("flow", Column::Str(flow));
        t.push("path", Column::U64(path));
        t.push("src_addr", Column::Str(src));
        t.push("dst_addr", Column::Str(dst));
        t.push("src_port", Column::U64(sport));
        t.push("dst_port", Column::U64(dport));
        t.push("route", Column::Str(route));
        let names = [
            "sent_pkts",
            "sent_bytes",
            "recv_pkts",
            "recv_bytes",
            "drop_queue_pkts",
            "drop_channel_pkts",
            "in_flight_pkts",
        ];
        for d in 0..2 {
            for (c, name) in names.iter().enumerate() {
                let col = std::mem::take(&mut cols[d * 8 + c]);
                let name = if d == 0 { name.to_string() } else { format!("rev_{name}") };
                t.push(&name, Column::U64(col));
            }
        }
        Some(t)
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
            L4::Rsvp(_) => unreachable!(),
        }
    }
}
