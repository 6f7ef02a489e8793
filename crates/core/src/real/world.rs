//! The calls a real-time driver makes on a world with real nodes, and their tables (see
//! [`crate::real`]).

use super::REAL_FLOW_BASE;
use super::{decrement_ttl, echo_reply, is_real_flow, parse_ipv4, proto_name, Datagram, RealFlow, RealTraffic, Reject};
use crate::node::Addr;
use crate::node::NO_PORT;
use crate::packet::{Dir, NodeId, Packet, PacketData, L4, NO_ROUTE};
use crate::sim::Simulation;
use crate::time::SimTime;
use crate::trace::{Column, Table};

/// A real node as a driver sets its host up ([`Simulation::real_hosts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealHost {
    pub node: NodeId,
    pub name: String,
    /// Its addresses, primary first.
    pub addrs: Vec<Addr>,
    /// The MTU its device should have, bytes.
    pub mtu: u32,
}

/// The driver's side of a world with real nodes (see the module docs).
impl Simulation {
    /// Marks `nodes` as real hosts. Called once, when the scenario is built.
    pub(crate) fn set_real_nodes(&mut self, nodes: &[NodeId]) {
        if nodes.is_empty() {
            return;
        }
        let mut real = vec![false; self.node_names.len()];
        for &n in nodes {
            real[n as usize] = true;
        }
        self.real = Some(Box::new(RealTraffic { real, ..RealTraffic::default() }));
    }

    /// The real nodes, in node order (empty in a purely simulated world).
    pub fn real_nodes(&self) -> Vec<NodeId> {
        let Some(r) = &self.real else { return Vec::new() };
        (0..r.real.len() as NodeId).filter(|&n| r.real[n as usize]).collect()
    }

    /// What a driver needs to set up the real hosts, in node order: each real node's name,
    /// addresses ([`node_addresses`](Self::node_addresses)) and [`device_mtu`](Self::device_mtu).
    pub fn real_hosts(&self) -> Vec<RealHost> {
        let mtu = self.device_mtu();
        self.real_nodes()
            .into_iter()
            .map(|n| RealHost {
                node: n,
                name: self.node_names[n as usize].clone(),
                addrs: self.node_addresses(n),
                mtu,
            })
            .collect()
    }

    /// Every address of `node`, its primary address first (see [`crate::node`]).
    pub fn node_addresses(&self, node: NodeId) -> Vec<Addr> {
        self.fib.addresses(node)
    }

    /// The MTU a real host's device should have: the smallest of the scenario's links, so that
    /// no datagram a host sends is too large for any link (fragmentation is not modelled).
    pub fn device_mtu(&self) -> u32 {
        self.ports.iter().map(|p| p.mtu_bytes).min().unwrap_or(1500)
    }

    /// The real side of the world: flows and counters (`None` without real nodes).
    pub fn real_traffic(&self) -> Option<&RealTraffic> {
        self.real.as_deref()
    }

    /// When the next pending event is due (`None` when nothing is pending). An event may turn
    /// out to be a disarmed timer's stale entry, which runs nothing.
    pub fn next_event_time(&mut self) -> Option<SimTime> {
        self.events.next_time()
    }

    /// A datagram the real host at `node` sent (its whole IPv4 datagram) enters the network
    /// now, routed from `node` as the host's own packets are: out of the interface of its
    /// source address if that is one of the node's interface addresses, else by the routing
    /// table. Refused datagrams are counted by reason and node.
    ///
    /// # Panics
    /// If `node` is not a real node (a driver bug).
    pub fn inject_real(&mut self, node: NodeId, bytes: Vec<u8>) -> Result<(), Reject> {
        let now = self.now;
        let real = self.real.as_deref_mut().filter(|r| r.real.get(node as usize) == Some(&true));
        let Some(real) = real else { panic!("{now}: inject_real at node {node}, which is not a real node") };
        let d = parse_ipv4(bytes).map_err(|why| real.reject(node, why))?;
        let port = self.fib.egress_port(node, d.src, d.dst);
        if port == NO_PORT {
            return Err(real.reject(node, Reject::NoRoute));
        }
        if d.hdr.bytes.len() > self.ports[port as usize].mtu_bytes as usize {
            return Err(real.reject(node, Reject::TooBig));
        }
        let pkt = self.real_packet(node, d).ok_or(Reject::TooManyFlows)?;
        self.send_on(node, port, pkt);
        Ok(())
    }

    /// The packet of parsed datagram `d` entering at `node` now, counted as sent by its flow.
    fn real_packet(&mut self, node: NodeId, d: Datagram) -> Option<Packet> {
        let now = self.now;
        let real = self.real.as_deref_mut().expect("real traffic needs real nodes");
        let Some(flow) = real.flow_of(&d, node, now) else {
            real.reject(node, Reject::TooManyFlows);
            return None;
        };
        let f = real.flow_mut(flow);
        let seq = f.next_seq;
        f.next_seq += 1;
        f.stats.sent_pkts += 1;
        f.stats.sent_bytes += d.hdr.bytes.len() as u64;
        Some(self.new_packet(PacketData {
            flow,
            dir: Dir::Fwd,
            src: d.src,
            dst: d.dst,
            seq_in_flow: seq,
            size_bytes: d.hdr.bytes.len() as u32,
            sent_at: now,
            hop: 0,
            route: NO_ROUTE,
            path: 0,
            ip: d.ip,
            l4: L4::Real(Box::new(d.hdr)),
            gro: None,
        }))
    }

    /// Hands the driver every datagram that reached a real node since the last call, with the
    /// node, in arrival order.
    pub fn take_real_deliveries(&mut self) -> Vec<(NodeId, Vec<u8>)> {
        self.real.as_deref_mut().map(|r| std::mem::take(&mut r.out)).unwrap_or_default()
    }

    /// A real datagram reached `node` (see the module docs for what happens to it).
    pub(crate) fn receive_real(&mut self, node: NodeId, mut pkt: Packet) {
        let now = self.now;
        let bin = self.bin_ns;
        let real = self.real.as_deref_mut().expect("a real packet needs real nodes");
        let is_real_node = real.real[node as usize];
        let owner = self.fib.owner(pkt.dst);
        if is_real_node || owner == Some(node) {
            let f = real.flow_mut(pkt.flow);
            f.stats.on_receive(pkt.seq_in_flow, pkt.size_bytes, pkt.sent_at, now, bin);
            let PacketData { l4: L4::Real(h), src, dst, ip, .. } = *pkt else { unreachable!("a real packet") };
            if is_real_node {
                real.out.push((node, h.bytes));
            } else if let Some(reply) = echo_reply(&Datagram { src, dst, ip, hdr: *h }) {
                real.echo_replies += 1;
                let d = parse_ipv4(reply).expect("an echo reply is a well-formed datagram");
                let port = self.fib.egress_port(node, d.src, d.dst);
                if port != NO_PORT {
                    if let Some(p) = self.real_packet(node, d) {
                        self.send_on(node, port, p);
                    }
                }
            }
            return;
        }
        let L4::Real(h) = &mut pkt.l4 else { unreachable!("a real packet") };
        // Real datagrams carry no explicit route: forwarded by destination address.
        let next = self.fib.next_port(node, pkt.dst);
        if next == NO_PORT || !decrement_ttl(&mut h.bytes) {
            real.flow_mut(pkt.flow).drop_router_pkts += 1;
            return;
        }
        pkt.ip.ttl -= 1;
        self.send_on(node, next, pkt);
    }

    /// Real datagrams of each real flow still inside the network.
    fn real_in_flight(&self) -> Vec<u64> {
        let n = self.real.as_ref().map_or(0, |r| r.flows.len());
        let mut v = vec![0u64; n];
        for p in &self.ports {
            p.for_each_packet(&mut |pkt| {
                if is_real_flow(pkt.flow) {
                    v[(pkt.flow - REAL_FLOW_BASE) as usize] += 1
                }
            });
        }
        v
    }

    /// The names of the real flows, in flow order (probe and per-flow tables name them so).
    pub(crate) fn real_flow_names(&self) -> Vec<String> {
        self.real.as_ref().map_or_else(Vec::new, |r| r.flows.iter().map(RealFlow::name).collect())
    }

    /// The `real_flows` and `real_rejects` tables, and the summary entries of real traffic;
    /// nothing for a purely simulated world (whose results are then what they were before
    /// emulation existed).
    ///
    /// # Panics
    /// If packet conservation fails for a real flow: that is a simulator bug.
    pub(crate) fn real_tables(&self) -> (Vec<Table>, Vec<(&'static str, f64)>) {
        let Some(r) = self.real.as_deref() else { return (Vec::new(), Vec::new()) };
        let inflight = self.real_in_flight();
        let fl = &r.flows;
        for (f, n) in fl.iter().zip(&inflight) {
            let st = &f.stats;
            let accounted = st.recv_pkts + st.drop_queue_pkts + st.drop_channel_pkts + f.drop_router_pkts + n;
            assert_eq!(
                st.sent_pkts,
                accounted,
                "{}: real flow {}: sent {} != received {} + queue drops {} + channel drops {} + router drops {} + in \
                 flight {n}",
                self.now,
                f.name(),
                st.sent_pkts,
                st.recv_pkts,
                st.drop_queue_pkts,
                st.drop_channel_pkts,
                f.drop_router_pkts,
            );
        }
        let node = |n: Option<NodeId>| n.map_or(String::new(), |n| self.node_names[n as usize].clone());
        let mut t = Table::new("real_flows");
        t.push("flow", Column::Str(fl.iter().map(RealFlow::name).collect()));
        t.push("proto", Column::Str(fl.iter().map(|f| proto_name(f.proto)).collect()));
        t.push("src", Column::Str(fl.iter().map(|f| f.src.to_string()).collect()));
        t.push("src_port", Column::U64(fl.iter().map(|f| f.src_port as u64).collect()));
        t.push("dst", Column::Str(fl.iter().map(|f| f.dst.to_string()).collect()));
        t.push("dst_port", Column::U64(fl.iter().map(|f| f.dst_port as u64).collect()));
        t.push("from_node", Column::Str(fl.iter().map(|f| node(Some(f.from))).collect()));
        t.push("to_node", Column::Str(fl.iter().map(|f| node(self.fib.owner(f.dst))).collect()));
        t.push("start_s", Column::F64(fl.iter().map(|f| f.start.as_secs_f64()).collect()));
        t.push("sent_pkts", Column::U64(fl.iter().map(|f| f.stats.sent_pkts).collect()));
        t.push("sent_bytes", Column::U64(fl.iter().map(|f| f.stats.sent_bytes).collect()));
        t.push("recv_pkts", Column::U64(fl.iter().map(|f| f.stats.recv_pkts).collect()));
        t.push("recv_bytes", Column::U64(fl.iter().map(|f| f.stats.recv_bytes).collect()));
        t.push("drop_queue_pkts", Column::U64(fl.iter().map(|f| f.stats.drop_queue_pkts).collect()));
        t.push("drop_channel_pkts", Column::U64(fl.iter().map(|f| f.stats.drop_channel_pkts).collect()));
        t.push("drop_router_pkts", Column::U64(fl.iter().map(|f| f.drop_router_pkts).collect()));
        t.push("in_flight_pkts", Column::U64(inflight));
        t.push(
            "loss_ratio",
            Column::F64(
                fl.iter()
                    .map(|f| {
                        let st = &f.stats;
                        let lost = st.drop_queue_pkts + st.drop_channel_pkts + f.drop_router_pkts;
                        if st.sent_pkts == 0 {
                            0.0
                        } else {
                            lost as f64 / st.sent_pkts as f64
                        }
                    })
                    .collect(),
            ),
        );
        // Over the flow's own lifetime: from its first datagram to the end of the run.
        t.push(
            "throughput_bps",
            Column::F64(
                fl.iter()
                    .map(|f| f.stats.recv_bytes as f64 * 8.0 / ((self.now.0 - f.start.0) as f64 * 1e-9).max(1e-12))
                    .collect(),
            ),
        );
        crate::results::push_delay_columns(&mut t, &fl.iter().map(|f| &f.stats).collect::<Vec<_>>());
        let mut rj = Table::new("real_rejects");
        rj.push("node", Column::Str(r.rejects.keys().map(|(n, _)| node(Some(*n))).collect()));
        rj.push("reason", Column::Str(r.rejects.keys().map(|(_, w)| w.name().to_string()).collect()));
        rj.push("pkts", Column::U64(r.rejects.values().copied().collect()));
        let summary = vec![
            ("real_nodes", r.real.iter().filter(|&&x| x).count() as f64),
            ("real_flows", fl.len() as f64),
            ("real_rejected_pkts", r.rejects.values().sum::<u64>() as f64),
            ("real_echo_replies", r.echo_replies as f64),
        ];
        (vec![t, rj], summary)
    }
}
