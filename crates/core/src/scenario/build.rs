//! Compiles a [`Scenario`] into a [`Simulation`]: names → indices, routing tables, components.

use super::{expand, Scenario, ScenarioError};
use crate::engine::SimRng;
use crate::link::channel::{check_shares, LinkDir, LinkPhy};
use crate::link::Port;
use crate::node::{Addr, Fib, IfaceAddr, MAX_NODES, NO_PORT, PRIMARY_BASE};
use crate::packet::{FlowId, NodeId, PortId};
use crate::sim::{flow_ports, socket_key, subflow_ports, End, Flow, Simulation, SocketEntry};
use crate::subflow::{Subflow, MAX_PATHS};
use crate::time::SimTime;
use crate::trace::pcap::PcapWriter;
use crate::trace::PacketLog;
use crate::transport::{EndpointSetup, Service};
use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;

fn tag_of<T: serde::Serialize>(v: &T) -> String {
    // The `kind` tag of a tagged config, read back through its serialised form.
    toml::Value::try_from(v)
        .ok()
        .and_then(|t| t.get("kind").and_then(|k| k.as_str().map(str::to_string)))
        .unwrap_or_default()
}

/// Where outputs go. `pcap_dir` must exist if the scenario asks for captures.
#[derive(Clone, Debug, Default)]
pub struct BuildOptions<'a> {
    /// Directory relative paths in the scenario (traces) resolve against.
    pub base_dir: Option<&'a Path>,
    /// Directory pcap files are written to (required when `output.pcap` is non-empty).
    pub pcap_dir: Option<&'a Path>,
}

/// Most throughput-series bins a run keeps, summed over flows: 2^20 (8 MiB of counters per
/// direction, and a `throughput` table of at most that many rows, whatever the run's length).
pub const THROUGHPUT_BIN_BUDGET: u64 = 1 << 20;

/// The throughput bin width of a run: `asked` (ns), doubled until `flows` × bins over `end_ns`
/// fit [`THROUGHPUT_BIN_BUDGET`] (or one bin spans the run). A power-of-two multiple, so each
/// wide bin is an exact sum of asked ones.
pub fn throughput_bin(asked: u64, end_ns: u64, flows: u64) -> u64 {
    let mut bin = asked.max(1);
    while bin < end_ns && end_ns.div_ceil(bin).saturating_mul(flows) > THROUGHPUT_BIN_BUDGET {
        bin = bin.saturating_mul(2);
    }
    bin
}

impl Scenario {
    /// Compiles the scenario into a simulation ready to run.
    pub fn build(&self, opts: &BuildOptions) -> Result<Simulation, ScenarioError> {
        self.build_inner(opts, false)
    }

    /// As [`Scenario::build`], for a caller that will give flows with `subflows` its own
    /// multipath endpoints ([`Simulation::attach_endpoint`]): such a flow may then have any
    /// transport. A scenario file alone (`build`) gives subflows to MPTCP flows only, since no
    /// other transport uses more than the first path.
    pub fn build_for_custom_endpoints(&self, opts: &BuildOptions) -> Result<Simulation, ScenarioError> {
        self.build_inner(opts, true)
    }

    fn build_inner(&self, opts: &BuildOptions, custom_endpoints: bool) -> Result<Simulation, ScenarioError> {
        let base = opts.base_dir.unwrap_or(Path::new("."));
        if self.sim.duration.as_nanos() == 0 {
            return Err(ScenarioError::new("sim.duration", "must be positive"));
        }
        let end = SimTime(self.sim.duration.as_nanos());
        let seed = self.sim.seed;
        let bin_ns = self.output.throughput_bin.as_nanos();
        if bin_ns == 0 {
            return Err(ScenarioError::new("output.throughput_bin", "must be positive"));
        }

        // Nodes: explicit first, then in order of first mention by a link.
        let mut names: Vec<String> = Vec::new();
        let mut index: BTreeMap<String, NodeId> = BTreeMap::new();
        for (k, n) in self.nodes.iter().enumerate() {
            check_node_name(&n.name).map_err(|r| ScenarioError::new(format!("nodes[{k}].name"), r))?;
            if index.insert(n.name.clone(), names.len() as NodeId).is_some() {
                return Err(ScenarioError::new(format!("nodes[{k}].name"), format!("duplicate node {:?}", n.name)));
            }
            names.push(n.name.clone());
        }
        let links = expand::links(&self.links)?;
        if links.is_empty() {
            return Err(ScenarioError::new("links", "a scenario needs at least one link"));
        }
        for l in &links {
            for (end, key) in [(&l.item.a, "a"), (&l.item.b, "b")] {
                check_node_name(end).map_err(|r| ScenarioError::new(format!("{}.{key}", l.path), r))?;
                if !index.contains_key(end) {
                    index.insert(end.clone(), names.len() as NodeId);
                    names.push(end.clone());
                }
            }
        }
        let n = names.len();
        if n > MAX_NODES {
            return Err(ScenarioError::new("links", format!("{n} nodes, more than the {MAX_NODES} addressable")));
        }

        // Ports: link k gives port 2k (a→b) and 2k+1 (b→a).
        let mut ifaces: Vec<IfaceAddr> = Vec::new();
        let mut iface_keys: BTreeMap<Addr, String> = BTreeMap::new();
        let mut ports = Vec::with_capacity(links.len() * 2);
        // The schedulers of shared media whose grants follow demand (WiMAX).
        let media = crate::link::channel::Media::default();
        let mut adj: Vec<Vec<(PortId, NodeId)>> = vec![Vec::new(); n];
        for l in &links {
            let c = &l.item;
            if c.a == c.b {
                return Err(ScenarioError::new(format!("{}.b", l.path), format!("link connects {:?} to itself", c.a)));
            }
            if !(68..=65535).contains(&c.mtu) {
                return Err(ScenarioError::new(
                    format!("{}.mtu", l.path),
                    format!("must be within 68..=65535 bytes, got {}", c.mtu),
                ));
            }
            let (a, b) = (index[&c.a], index[&c.b]);
            if let Some(n) = c.tx_ring.filter(|n| !(1..=crate::queue::ring::MAX_DESCRIPTORS).contains(n)) {
                return Err(ScenarioError::new(
                    format!("{}.tx_ring", l.path),
                    format!("must be 1..={} descriptors, got {n}", crate::queue::ring::MAX_DESCRIPTORS),
                ));
            }
            let ring = |q: Box<dyn crate::queue::QueueDisc>| -> Box<dyn crate::queue::QueueDisc> {
                match c.tx_ring {
                    Some(n) if n > 1 => Box::new(crate::queue::ring::Ring::new(q, n)),
                    _ => q,
                }
            };
            let phy = LinkPhy { rate: c.rate, delay: c.delay };
            c.channel.validate(phy).map_err(|(f, r)| ScenarioError::new(format!("{}.channel.{f}", l.path), r))?;
            if let Some(max) = c.channel.config().max_packet().filter(|&m| c.mtu > m) {
                return Err(ScenarioError::new(
                    format!("{}.mtu", l.path),
                    format!("{} B exceeds the {max} B largest packet of a {} channel", c.mtu, c.channel.kind()),
                ));
            }
            for (g, key) in [(&c.a_gro, "a_gro"), (&c.b_gro, "b_gro")] {
                if let Some(g) = g {
                    g.validate().map_err(|(f, r)| ScenarioError::new(format!("{}.{key}.{f}", l.path), r))?;
                }
            }
            for (dir, (from, to), q, loss, suffix, gro) in [
                (LinkDir::Ab, (a, b), c.queue_ab.as_ref().unwrap_or(&c.queue), &c.loss_ab, "loss_ab", &c.b_gro),
                (LinkDir::Ba, (b, a), c.queue_ba.as_ref().unwrap_or(&c.queue), &c.loss_ba, "loss_ba", &c.a_gro),
            ] {
                loss.validate().map_err(|(f, r)| ScenarioError::new(format!("{}.{suffix}.{f}", l.path), r))?;
                let qkey = match (dir, &c.queue_ab, &c.queue_ba) {
                    (LinkDir::Ab, Some(_), _) => "queue_ab",
                    (LinkDir::Ba, _, Some(_)) => "queue_ba",
                    _ => "queue",
                };
                q.validate().map_err(|(f, r)| ScenarioError::new(format!("{}.{qkey}.{f}", l.path), r))?;
                let name = format!("{}->{}", names[from as usize], names[to as usize]);
                let rng = SimRng::stream(seed, &format!("port:{name}:{}", ports.len()));
                let queue_seed = SimRng::stream(seed, &format!("queue:{name}:{}", ports.len())).next_u64();
                let id = ports.len() as PortId;
                ports.push(
                    Port::new(
                        name,
                        from,
                        to,
                        c.mtu,
                        ring(q.build(&crate::queue::BuildCtx { mtu_bytes: c.mtu, rate: c.rate, seed: queue_seed })),
                        c.channel.device_in(phy, dir, loss.build(), rng, &media),
                        Some(self.output.queue_sample),
                    )
                    .with_flow_samples(q.flow_sample())
                    .with_ecn(q.ecn())
                    .with_gro(gro.clone()),
                );
                adj[from as usize].push((id, to));
            }
            let first = ports.len() as PortId - 2;
            for (key, owner, out_port, in_port) in [("a_addr", a, first, first + 1), ("b_addr", b, first + 1, first)] {
                let given = if key == "a_addr" { &c.a_addr } else { &c.b_addr };
                let Some(text) = given else { continue };
                let kp = format!("{}.{key}", l.path);
                let addr = Addr::parse(text).ok_or_else(|| {
                    ScenarioError::new(kp.clone(), format!("expected an IPv4 address like \"10.1.0.1\", got {text:?}"))
                })?;
                if addr.0 > PRIMARY_BASE && addr.0 <= PRIMARY_BASE + n as u32 {
                    return Err(ScenarioError::new(
                        kp,
                        format!(
                            "{addr} is the primary address of node {:?}",
                            names[(addr.0 - PRIMARY_BASE - 1) as usize]
                        ),
                    ));
                }
                if let Some(prev) = iface_keys.insert(addr, kp.clone()) {
                    return Err(ScenarioError::new(kp, format!("{addr} is already assigned at {prev}")));
                }
                ifaces.push(IfaceAddr { addr, node: owner, out_port, in_port });
            }
        }

        // Stations sharing a medium take turns.
        check_shares(links.iter().map(|l| (l.path.as_str(), &l.item.channel)))
            .map_err(|(path, reason)| ScenarioError::new(path, reason))?;

        // Shortest-path (hop count) routing tables, ties broken by port order; connectivity.
        let fib = Fib::build(&adj, ifaces);
        if let Some(u) = fib.unreachable_from(0).next().map(|u| u as usize) {
            return Err(ScenarioError::new(
                "links",
                format!("topology is disconnected: node {:?} cannot be reached from {:?}", names[u], names[0]),
            ));
        }

        // Real hosts (emulation): nodes declared `real`, which simulated flows may not end at.
        let real: Vec<NodeId> =
            self.nodes.iter().enumerate().filter(|(_, c)| c.real).map(|(k, _)| k as NodeId).collect();

        // Flows.
        let flows_x = expand::flows(&self.flows)?;
        if flows_x.is_empty() && real.is_empty() {
            return Err(ScenarioError::new("flows", "a scenario needs at least one flow (or a real node)"));
        }
        let mut flow_names = BTreeMap::new();
        let mut sockets: Vec<Vec<SocketEntry>> = vec![Vec::new(); n];
        let mut socket_owner: BTreeMap<(NodeId, u128), String> = BTreeMap::new();
        let mut flows = Vec::with_capacity(flows_x.len());
        let traces = crate::input::InputCache::default();
        for (fid, fx) in flows_x.iter().enumerate() {
            let (c, path) = (&fx.item, &fx.path);
            if c.name.is_empty() {
                return Err(ScenarioError::new(format!("{path}.name"), "must not be empty"));
            }
            if flow_names.insert(c.name.clone(), fid).is_some() {
                return Err(ScenarioError::new(format!("{path}.name"), format!("duplicate flow name {:?}", c.name)));
            }
            let node = |field: &str, name: &str| {
                index.get(name).copied().ok_or_else(|| {
                    ScenarioError::new(
                        format!("{path}.{field}"),
                        format!("unknown node {name:?} (known: {})", names.join(", ")),
                    )
                })
            };
            let (src, dst) = (node("src", &c.src)?, node("dst", &c.dst)?);
            for (key, n) in [("src", src), ("dst", dst)] {
                if real.contains(&n) {
                    return Err(ScenarioError::new(
                        format!("{path}.{key}"),
                        format!(
                            "node {:?} is real (a host with its own kernel and applications); a simulated flow \
                             needs simulated ends",
                            names[n as usize]
                        ),
                    ));
                }
            }
            if src == dst {
                return Err(ScenarioError::new(format!("{path}.dst"), "source and destination are the same node"));
            }
            // A flow may start after the end of the run (a shortened run of a longer
            // scenario): it then simply never starts.
            let start = SimTime(c.start.as_nanos());
            let stop = match c.stop {
                Some(s) if SimTime(s.as_nanos()) <= start => {
                    return Err(ScenarioError::new(format!("{path}.stop"), "must be after start"));
                }
                Some(s) => SimTime(s.as_nanos()),
                None => end,
            };
            let service = c.transport.service();
            if !c.app.accepts(service) {
                let need = if c.app.service() == Service::Stream {
                    "a stream transport (tcp)"
                } else {
                    "a datagram transport (udp or rtp)"
                };
                return Err(ScenarioError::new(
                    format!("{path}.app.kind"),
                    format!("{:?} needs {need}, but transport is {:?}", tag_of(&c.app), tag_of(&c.transport)),
                ));
            }
            // The connection's paths: one from the flow's own `src_addr`, `dst_addr` and
            // `route`, or one per entry of `subflows` (see `crate::subflow`).
            let path_specs: Vec<(String, Option<&Vec<String>>, &Option<String>, &Option<String>)> = match &c.subflows {
                None => vec![(path.clone(), c.route.as_ref(), &c.src_addr, &c.dst_addr)],
                Some(sfs) => {
                    let sp = format!("{path}.subflows");
                    // Only MPTCP spreads a connection over paths; any other transport would send
                    // on the first and leave the others idle.
                    if !custom_endpoints && !matches!(c.transport, crate::transport::TransportConfig::Mptcp(_)) {
                        return Err(ScenarioError::new(
                            sp,
                            format!(
                                "only an MPTCP flow has subflows (transport is {:?}); give the path with \
                                 src_addr, dst_addr or route",
                                tag_of(&c.transport)
                            ),
                        ));
                    }
                    if sfs.is_empty() || sfs.len() > MAX_PATHS {
                        return Err(ScenarioError::new(
                            sp,
                            format!("{} subflows; a flow has 1 to {MAX_PATHS}", sfs.len()),
                        ));
                    }
                    for (key, given) in [
                        ("src_addr", c.src_addr.is_some()),
                        ("dst_addr", c.dst_addr.is_some()),
                        ("route", c.route.is_some()),
                    ] {
                        if given {
                            return Err(ScenarioError::new(
                                format!("{path}.{key}"),
                                "a flow with subflows gives it per subflow (subflows[0] is the first path)",
                            ));
                        }
                    }
                    sfs.iter()
                        .enumerate()
                        .map(|(k, s)| (format!("{sp}[{k}]"), s.route.as_ref(), &s.src_addr, &s.dst_addr))
                        .collect()
                }
            };
            // Each path: its routes, addresses, ports, and the MTU of its first hop.
            let mut paths = Vec::with_capacity(path_specs.len());
            for (k, (pp, route, src_given, dst_given)) in path_specs.iter().enumerate() {
                let (route_fwd, route_rev) = match route {
                    None => (None, None),
                    Some(r) => {
                        let rp = format!("{pp}.route");
                        if r.first() != Some(&c.src) || r.last() != Some(&c.dst) {
                            return Err(ScenarioError::new(
                                rp,
                                format!("must start at {:?} and end at {:?}", c.src, c.dst),
                            ));
                        }
                        let ids: Vec<NodeId> = r
                            .iter()
                            .enumerate()
                            .map(|(k, nm)| {
                                index.get(nm).copied().ok_or_else(|| {
                                    ScenarioError::new(format!("{rp}[{k}]"), format!("unknown node {nm:?}"))
                                })
                            })
                            .collect::<Result<_, _>>()?;
                        let hop = |u: NodeId, v: NodeId, k: usize| {
                            adj[u as usize].iter().find(|(_, to)| *to == v).map(|(p, _)| *p).ok_or_else(|| {
                                ScenarioError::new(
                                    format!("{rp}[{k}]"),
                                    format!("no link from {:?} to {:?}", names[u as usize], names[v as usize]),
                                )
                            })
                        };
                        let fwd: Vec<PortId> = ids
                            .windows(2)
                            .enumerate()
                            .map(|(k, w)| hop(w[0], w[1], k + 1))
                            .collect::<Result<_, _>>()?;
                        let rev: Vec<PortId> = ids
                            .windows(2)
                            .rev()
                            .enumerate()
                            .map(|(k, w)| hop(w[1], w[0], k))
                            .collect::<Result<_, _>>()?;
                        (Some(fwd), Some(rev))
                    }
                };
                // The ends' addresses: the nodes' primary ones unless an interface address is named.
                let end_addr = |key: &str, given: &Option<String>, node: NodeId| -> Result<Addr, ScenarioError> {
                    let Some(text) = given else { return Ok(Addr::primary(node)) };
                    let kp = format!("{pp}.{key}");
                    let a = Addr::parse(text).ok_or_else(|| {
                        ScenarioError::new(kp.clone(), format!("expected an IPv4 address, got {text:?}"))
                    })?;
                    if fib.owner(a) != Some(node) {
                        return Err(ScenarioError::new(
                            kp,
                            format!(
                                "{a} is not an address of {:?} (give it to a link end with a_addr / b_addr)",
                                names[node as usize]
                            ),
                        ));
                    }
                    Ok(a)
                };
                let (src_addr, dst_addr) =
                    (end_addr("src_addr", src_given, src)?, end_addr("dst_addr", dst_given, dst)?);
                let first_port = route_fwd.as_ref().map_or(fib.egress_port(src, src_addr, dst_addr), |r| r[0]);
                if route_fwd.is_none() && fib.egress_port(dst, dst_addr, src_addr) == NO_PORT {
                    return Err(ScenarioError::new(
                        format!("{pp}.src_addr"),
                        format!("{src_addr} cannot be reached from {dst_addr}"),
                    ));
                }
                let (sport, dport) = subflow_ports(fid as FlowId, k);
                let mtu = ports[first_port as usize].mtu_bytes;
                paths.push((Subflow::new([src_addr, dst_addr], [sport, dport], [route_fwd, route_rev]), mtu));
            }
            let (src_addr, dst_addr) = (paths[0].0.addr[0], paths[0].0.addr[1]);
            let (route_fwd, route_rev) = (paths[0].0.route[0].clone(), paths[0].0.route[1].clone());
            let setup = EndpointSetup {
                flow_name: c.name.clone(),
                // The smallest first hop of any path: an endpoint's segments fit each of them.
                mtu_bytes: paths.iter().map(|p| p.1).min().expect("a flow has at least one path"),
                src_port: flow_ports(fid as crate::packet::FlowId).0,
                dst_port: flow_ports(fid as crate::packet::FlowId).1,
                seed,
                paths: paths.len() as u8,
            };
            c.transport.validate(setup.mtu_bytes).map_err(|e| {
                let (field, reason) = e.split_once(": ").unwrap_or(("", e.as_str()));
                ScenarioError::new(format!("{path}.transport.{field}"), reason)
            })?;
            let (sender, receiver) = c.transport.build(&setup);
            let app = c
                .app
                .build_on(base, &traces, service)
                .map_err(|e| ScenarioError::new(format!("{path}.app.{}", e.field), e.reason))?;
            if c.app.needs_send_buffer() && !c.transport.has_send_buffer() {
                return Err(ScenarioError::new(
                    format!("{path}.app.pacing"),
                    format!(
                        "\"greedy\" needs a transport with a send buffer that says when it has room \
                         (tfrc); {:?} has none",
                        tag_of(&c.transport)
                    ),
                ));
            }
            // Fragmentation is not modelled: a fixed payload must fit the first hop's MTU.
            if let (Some(p), max) = (c.app.fixed_payload(), sender.max_datagram_payload()) {
                if max > 0 && p > u64::from(max) {
                    return Err(ScenarioError::new(
                        format!("{path}.app.payload"),
                        format!(
                            "{p} B does not fit the first hop's MTU ({} B leaves {max} B for the payload; \
                             fragmentation is not modelled)",
                            setup.mtu_bytes
                        ),
                    ));
                }
            }
            let peer_app = match &c.peer_app {
                None => None,
                Some(pa) => {
                    if !pa.accepts(service) {
                        return Err(ScenarioError::new(
                            format!("{path}.peer_app.kind"),
                            format!("{:?} needs another transport than {:?}", tag_of(pa), tag_of(&c.transport)),
                        ));
                    }
                    Some(
                        pa.build_on(base, &traces, service)
                            .map_err(|e| ScenarioError::new(format!("{path}.peer_app.{}", e.field), e.reason))?,
                    )
                }
            };
            let log = (c.packet_log || self.output.packet_trace).then(PacketLog::default);
            // Sockets: each end is found by (protocol, local address and port, remote address and
            // port) at its node.
            let proto = if service == Service::Stream { 6 } else { 17 };
            // A flow with subflows has a socket per path at each end, all naming the same end.
            for (k, (sf, _)) in paths.iter().enumerate() {
                let ([sa, da], [sp, dp]) = (sf.addr, sf.port);
                let owner = if c.subflows.is_some() { format!("{} path {k}", c.name) } else { c.name.clone() };
                for (node, key, e) in
                    [(src, socket_key(proto, sa, sp, da, dp), 0u8), (dst, socket_key(proto, da, dp, sa, sp), 1u8)]
                {
                    if let Some(other) = socket_owner.insert((node, key), owner.clone()) {
                        return Err(ScenarioError::new(
                            path_specs[k].0.clone(),
                            format!(
                                "same addresses and ports as flow {other:?} (flows {} apart share a port number)",
                                50_000
                            ),
                        ));
                    }
                    sockets[node as usize].push((key, fid as FlowId, e, k as u8));
                }
            }
            let ends = [
                End::new(
                    src,
                    src_addr,
                    setup.src_port,
                    sender,
                    Some(app),
                    tag_of(&c.app),
                    SimRng::stream(seed, &format!("flow:{}:app", c.name)),
                ),
                End::new(
                    dst,
                    dst_addr,
                    setup.dst_port,
                    receiver,
                    peer_app,
                    c.peer_app.as_ref().map(tag_of).unwrap_or_default(),
                    SimRng::stream(seed, &format!("flow:{}:peer_app", c.name)),
                ),
            ];
            let mut flow = Flow::new(
                c.name.clone(),
                tag_of(&c.transport),
                ends,
                (route_fwd, route_rev),
                start,
                stop,
                log,
                service,
                c.fairness.unwrap_or(service == Service::Stream),
            );
            flow.dscp = c.dscp.map_or(0, |d| d.value());
            if c.subflows.is_some() {
                flow.subflows = paths.into_iter().map(|p| p.0).collect();
            }
            flows.push(flow);
        }

        // Throughput series are dense (one counter per bin per flow and direction): their memory
        // is fixed before the run. Bins wider than asked (doubled until the counters fit the
        // budget) when the run is long or the flows many; the summary says so.
        let bin_ns = throughput_bin(bin_ns, end.0, flows.len() as u64);
        for v in &mut sockets {
            v.sort_unstable();
        }
        // Outages: every entry's intervals, per link direction (checked before any file is made).
        let mut down: Vec<Vec<crate::link::outage::Window>> = vec![Vec::new(); ports.len()];
        for (k, o) in self.outages.iter().enumerate() {
            let path = format!("outages[{k}]");
            let mut rng = SimRng::stream(seed, &path);
            let w = o.windows(&mut rng).map_err(|(f, r)| ScenarioError::new(format!("{path}.{f}"), r))?;
            for j in 0..o.links.len() {
                let i = listed_port(&ports, &path, &o.links, j)?;
                down[i].extend_from_slice(&w);
            }
        }
        // Handovers: each entry's changes per direction, and its association gap as an outage.
        let mut changes: Vec<Vec<crate::link::handover::Change>> = (0..ports.len()).map(|_| Vec::new()).collect();
        let mut when: BTreeMap<(usize, u64), usize> = BTreeMap::new();
        for (k, h) in self.handovers.iter().enumerate() {
            let path = format!("handovers[{k}]");
            h.validate().map_err(|(f, r)| ScenarioError::new(format!("{path}.{f}"), r))?;
            for (j, name) in h.links.iter().enumerate() {
                let i = listed_port(&ports, &path, &h.links, j)?;
                if (h.rate.is_some() || h.delay.is_some()) && !ports[i].is_point_to_point() {
                    let key = if h.rate.is_some() { "rate" } else { "delay" };
                    return Err(ScenarioError::new(
                        format!("{path}.{key}"),
                        format!("{name:?} is not a point_to_point link: a handover changes only its loss"),
                    ));
                }
                // Two changes of one direction at one instant would apply in list order.
                if let Some(other) = when.insert((i, h.at.as_nanos()), k) {
                    return Err(ScenarioError::new(
                        format!("{path}.at"),
                        format!("handovers[{other}] already changes {name:?} at the same time"),
                    ));
                }
                changes[i].push(h.change());
                down[i].extend(h.gap_window());
            }
        }
        for ((p, w), c) in ports.iter_mut().zip(down).zip(changes) {
            if !w.is_empty() {
                p.set_outages(w);
            }
            p.set_handovers(c);
        }
        // Edge classifiers (declared nodes only; a node implied by a link has none).
        let mut classifiers = Vec::new();
        for (k, c) in self.nodes.iter().enumerate() {
            if c.classify.is_empty() {
                continue;
            }
            let cl = crate::ip::classify::Classifier::new(&c.classify, |s| index.get(s).copied())
                .map_err(|(j, f, r)| ScenarioError::new(format!("nodes[{k}].classify[{j}].{f}"), r))?;
            let i = index[&c.name] as usize;
            if classifiers.len() <= i {
                classifiers.resize(i + 1, None);
            }
            classifiers[i] = Some(cl);
        }
        // Captures: names checked first, files created last, after every other check, so
        // that a scenario with a mistake never creates (or truncates) a file.
        let mut captures = Vec::with_capacity(self.output.pcap.len());
        for (k, name) in self.output.pcap.iter().enumerate() {
            let kp = format!("output.pcap[{k}]");
            let Some(i) = ports.iter().position(|p| &p.name == name) else {
                let known: Vec<_> = ports.iter().map(|p| p.name.as_str()).collect();
                return Err(ScenarioError::new(
                    kp,
                    format!("unknown link direction {name:?} (known: {})", known.join(", ")),
                ));
            };
            let file_name = capture_file_name(name);
            if let Some(j) = self.output.pcap[..k].iter().position(|o| capture_file_name(o) == file_name) {
                return Err(ScenarioError::new(
                    kp,
                    format!(
                        "{name:?} and output.pcap[{j}] {:?} would both be written to {file_name}",
                        self.output.pcap[j]
                    ),
                ));
            }
            captures.push((kp, i, file_name));
        }
        for (kp, i, file_name) in captures {
            let dir = opts
                .pcap_dir
                .ok_or_else(|| ScenarioError::new(kp.clone(), "no output directory given for captures"))?;
            let file = dir.join(&file_name);
            let f = std::fs::File::create(&file)
                .map_err(|e| ScenarioError::new(kp.clone(), format!("cannot create {}: {e}", file.display())))?;
            ports[i].capture =
                Some(PcapWriter::new(BufWriter::new(f)).map_err(|e| ScenarioError::new(kp, e.to_string()))?);
        }
        // Queue series: a fixed budget of samples, shared out among the ports.
        let share = crate::link::QUEUE_SAMPLE_BUDGET / ports.len().max(1);
        for p in &mut ports {
            if let Some(o) = p.occupancy.as_mut() {
                o.set_cap(share);
            }
        }
        let mut sim = Simulation::assemble(end, seed, names, fib, sockets, ports, flows, bin_ns);
        sim.classifiers = classifiers;
        sim.bin_asked_ns = self.output.throughput_bin.as_nanos();
        sim.enable_probes(&self.output.probes);
        sim.set_real_nodes(&real);
        Ok(sim)
    }
}

/// The port named by `links[j]` of the entry at key path `path` (an outage's or a handover's
/// list of link directions): an error if no port has that name or the list names it earlier.
fn listed_port(ports: &[Port], path: &str, links: &[String], j: usize) -> Result<usize, ScenarioError> {
    let name = &links[j];
    let Some(i) = ports.iter().position(|p| &p.name == name) else {
        let known: Vec<_> = ports.iter().map(|p| p.name.as_str()).collect();
        return Err(ScenarioError::new(
            format!("{path}.links[{j}]"),
            format!("unknown link direction {name:?} (known: {})", known.join(", ")),
        ));
    };
    if links[..j].contains(name) {
        return Err(ScenarioError::new(format!("{path}.links[{j}]"), format!("{name:?} is listed twice")));
    }
    Ok(i)
}

/// Why a node name is refused, if it is: empty, or holding a slash, a backslash or a control
/// character. Names reach file names (pcap captures) and one-line error messages.
fn check_node_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("node name must not be empty".into());
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\') || c.is_control()) {
        return Err(format!("node name {name:?} holds {c:?}; names may not hold slashes or control characters"));
    }
    Ok(())
}

/// The file a capture of link direction `name` goes to: `R1->R2` gives `R1_to_R2.pcap`, and
/// any character but ASCII letters, digits, `.`, `_` and `-` (and a leading `.`) becomes `_`,
/// so the file stays in the output folder whatever the node names hold.
pub fn capture_file_name(name: &str) -> String {
    let mut s: String = name
        .replace("->", "_to_")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    if s.starts_with('.') {
        s.replace_range(..1, "_");
    }
    s.push_str(".pcap");
    s
}
