//! Nodes, their addresses and their routing tables.
//!
//! Every node (host or router) has a *primary* IPv4 address, `10.0.0.0/8` host number
//! `id + 1` (node 0 is 10.0.0.1), which is also the address captures show. A link end may carry
//! an extra *interface* address (`a_addr` / `b_addr` in a scenario's `[[links]]`): a host with
//! two interfaces then has two addresses, and what is sent to each arrives through its own
//! interface, as a multi-homed host's would (what MPTCP subflows are pinned by).
//!
//! Forwarding is by destination address only ([`Fib::next_port`]): the world never asks which
//! flow a packet belongs to. Routes are static shortest paths in hop count, ties broken by port
//! order, computed once when the scenario is built:
//! - to a primary address: the shortest path to its node;
//! - to an interface address of node X on link L (the direction L: Y → X): the shortest path to
//!   Y, then L (from Y itself, L). A path that would pass through X on the way is not used:
//!   X forwards packets for its own interface address to itself, like any other of its
//!   addresses, so the packet is delivered there.
//!
//! A packet sent *from* an interface address leaves its host through that interface (source
//! address routing, as Linux policy rules do for a multi-homed host); a packet from the primary
//! address follows the table. A packet may also carry an explicit route (a source route: a list
//! of ports, see [`crate::packet::PacketData::route`]), which overrides the tables hop by hop.
//!
//! Not modelled: prefixes and longest-prefix match (every route is a host route), dynamic
//! routing, ECMP, ARP, TTL expiry (the TTL is carried, never decremented).

/// A node's index in the world (hosts and routers alike).
pub type NodeId = u32;
/// A port's (link direction's) index in the world.
pub type PortId = u32;
use std::fmt;

/// An IPv4 address, as a number (`10.0.0.1` is `0x0a00_0001`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Addr(pub u32);

/// The first primary address's predecessor: node `n` is `PRIMARY_BASE + n + 1`.
pub const PRIMARY_BASE: u32 = 0x0a00_0000;
/// Most nodes a scenario may have (primary addresses fill 10.0.0.1 – 10.255.255.254).
pub const MAX_NODES: usize = (1 << 24) - 2;

impl Addr {
    /// The primary address of node `n`.
    ///
    /// # Panics
    /// If `n` is `MAX_NODES` or more (the scenario compiler refuses such topologies).
    #[inline]
    pub fn primary(n: NodeId) -> Addr {
        assert!((n as usize) < MAX_NODES, "node {n} has no primary address (at most {MAX_NODES} nodes)");
        Addr(PRIMARY_BASE + n + 1)
    }
    /// The node whose primary address this is, if it is one of the first `nodes`.
    #[inline]
    pub fn primary_node(self, nodes: usize) -> Option<NodeId> {
        let h = self.0.wrapping_sub(PRIMARY_BASE + 1);
        ((h as usize) < nodes).then_some(h)
    }
    pub fn octets(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }
    /// Parses dotted-quad notation (`"10.1.0.2"`).
    pub fn parse(s: &str) -> Option<Addr> {
        s.parse::<std::net::Ipv4Addr>().ok().map(|a| Addr(u32::from(a)))
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let [a, b, c, d] = self.octets();
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// An interface address: node `node` owns `addr` on the port pair of one link; `in_port` is
/// the direction towards the node (its far end sends on it), `out_port` the node's own.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IfaceAddr {
    pub addr: Addr,
    pub node: NodeId,
    pub out_port: PortId,
    pub in_port: PortId,
}

/// Marks "no route" in a table.
pub const NO_PORT: PortId = PortId::MAX;

/// How the packets one end of a flow sends on one path leave their host: the node, the
/// addresses stamped on them, the explicit route they carry (`u32::MAX`: none, forwarded by
/// destination address) and the first port. Addresses, routes and routing tables are fixed
/// for a run, so the world resolves this once per path and direction when it is assembled,
/// not per packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Egress {
    pub node: NodeId,
    pub src: Addr,
    pub dst: Addr,
    pub route: u32,
    pub port: PortId,
}

impl Egress {
    /// Not resolved yet.
    pub const UNSET: Egress = Egress { node: 0, src: Addr(0), dst: Addr(0), route: u32::MAX, port: NO_PORT };

    /// From `node`, `src` to `dst`: along `route` if given (its number, and its first port),
    /// else out of the interface of `src` if it is one of `node`'s, else by the routing table
    /// ([`Fib::egress_port`]). The port is [`NO_PORT`] when there is no way out; the world
    /// asserts against it when a packet is sent, as it would per packet.
    pub fn resolve(fib: &Fib, node: NodeId, src: Addr, dst: Addr, route: Option<(u32, &[PortId])>) -> Egress {
        match route {
            Some((id, ports)) => Egress { node, src, dst, route: id, port: ports[0] },
            None => Egress { node, src, dst, route: u32::MAX, port: fib.egress_port(node, src, dst) },
        }
    }
}

/// The forwarding tables of every node, in memory linear in the links.
///
/// A full table (every node × every destination) is quadratic: 10^5 nodes would need 40 GB.
/// Instead:
/// - a *stub* node (all its ports lead to one neighbour, as a host on an access link) forwards
///   everything that is not its own on its lowest port to that neighbour;
/// - a stub destination is reached through its neighbour (its *anchor*), which then sends on
///   its lowest port to the stub;
/// - every other (*core*) node looks up a per-destination column over the core nodes, computed
///   on first use by one breadth-first search from the destination and kept for the run.
///
/// Memory is O(nodes + links) plus 4 B × core nodes × core destinations actually used, which
/// for access topologies (many hosts on few routers) is a few columns.
///
/// The result is the table the per-source breadth-first search used to fill: its first hop
/// towards `d` is the lowest port on any shortest path (levels of a breadth-first search are
/// discovered in order of their first hop), which is what `Fib::column` picks.
pub struct Fib {
    nodes: usize,
    /// Interface addresses sorted by address, with their destination index.
    ifaces: Vec<(Addr, u32)>,
    iface_info: Vec<IfaceAddr>,
    /// Far end of each interface address's link (the node that forwards onto it).
    iface_far: Vec<NodeId>,
    /// `adj[adj_start[n]..adj_start[n + 1]]`: node n's `(port, far node)`, in port order.
    adj_start: Vec<u32>,
    adj: Vec<(PortId, NodeId)>,
    /// A stub's port towards its only neighbour; [`NO_PORT`] for core nodes.
    up: Vec<PortId>,
    /// A stub's neighbour (the node that forwards to it) and that node's port to it; a core
    /// node is its own anchor.
    anchor: Vec<(NodeId, PortId)>,
    /// Index of a core node among the core nodes (`u32::MAX` for stubs).
    core_ix: Vec<u32>,
    /// Connected component of each node.
    component: Vec<u32>,
    /// Per core destination (by core index): each core node's port towards it, filled on use.
    columns: Vec<std::cell::OnceCell<Box<[PortId]>>>,
    core_nodes: Vec<NodeId>,
}

impl Fib {
    /// Builds the routing state. `adj[n]` lists `(port, far node)` in port order.
    pub fn build(adj: &[Vec<(PortId, NodeId)>], ifaces: Vec<IfaceAddr>) -> Fib {
        let n = adj.len();
        let mut adj_start = Vec::with_capacity(n + 1);
        let mut flat = Vec::with_capacity(adj.iter().map(Vec::len).sum());
        for a in adj {
            adj_start.push(flat.len() as u32);
            flat.extend_from_slice(a);
        }
        adj_start.push(flat.len() as u32);
        let mut up = vec![NO_PORT; n];
        let mut anchor: Vec<(NodeId, PortId)> = (0..n as NodeId).map(|v| (v, NO_PORT)).collect();
        for (v, a) in adj.iter().enumerate() {
            let Some(&(_, w)) = a.first() else { continue };
            if a.iter().all(|&(_, x)| x == w) {
                up[v] = a.iter().map(|&(p, _)| p).min().expect("non-empty");
            }
        }
        for (v, a) in adj.iter().enumerate() {
            if up[v] != NO_PORT {
                let w = a[0].1;
                let down = adj[w as usize].iter().filter(|&&(_, x)| x as usize == v).map(|&(p, _)| p).min();
                anchor[v] = (w, down.expect("links are bidirectional"));
            }
        }
        let mut core_ix = vec![u32::MAX; n];
        let mut core_nodes = Vec::new();
        for v in 0..n {
            if up[v] == NO_PORT {
                core_ix[v] = core_nodes.len() as u32;
                core_nodes.push(v as NodeId);
            }
        }
        // Components, by breadth-first search.
        let mut component = vec![u32::MAX; n];
        let mut q = std::collections::VecDeque::new();
        for s in 0..n {
            if component[s] != u32::MAX {
                continue;
            }
            component[s] = s as u32;
            q.push_back(s as NodeId);
            while let Some(u) = q.pop_front() {
                for &(_, to) in &adj[u as usize] {
                    if component[to as usize] == u32::MAX {
                        component[to as usize] = s as u32;
                        q.push_back(to);
                    }
                }
            }
        }
        let iface_far = ifaces
            .iter()
            .map(|ia| {
                adj[ia.node as usize]
                    .iter()
                    .find(|(p, _)| *p == ia.out_port)
                    .map(|(_, to)| *to)
                    .expect("an interface address sits on one of its node's ports")
            })
            .collect();
        let mut sorted: Vec<(Addr, u32)> = ifaces.iter().enumerate().map(|(k, ia)| (ia.addr, (n + k) as u32)).collect();
        sorted.sort();
        Fib {
            nodes: n,
            ifaces: sorted,
            iface_info: ifaces,
            iface_far,
            adj_start,
            adj: flat,
            up,
            anchor,
            core_ix,
            component,
            columns: (0..core_nodes.len()).map(|_| std::cell::OnceCell::new()).collect(),
            core_nodes,
        }
    }

    /// Every address of `node`: its primary address, then its interface addresses in the
    /// order the links give them.
    pub fn addresses(&self, node: NodeId) -> Vec<Addr> {
        let ifaces = self.iface_info.iter().filter(|ia| ia.node == node).map(|ia| ia.addr);
        std::iter::once(Addr::primary(node)).chain(ifaces).collect()
    }

    /// The nodes that cannot reach node `from` (an empty list: the topology is connected).
    pub fn unreachable_from(&self, from: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let c = self.component[from as usize];
        (0..self.nodes as NodeId).filter(move |&v| self.component[v as usize] != c)
    }

    /// Each core node's port towards core node `dest`: the lowest port on a shortest path.
    fn column(&self, dest: NodeId) -> &[PortId] {
        self.columns[self.core_ix[dest as usize] as usize].get_or_init(|| {
            let n = self.nodes;
            let mut dist = vec![u32::MAX; n];
            let mut q = std::collections::VecDeque::new();
            dist[dest as usize] = 0;
            q.push_back(dest);
            while let Some(u) = q.pop_front() {
                let d = dist[u as usize] + 1;
                for &(_, to) in self.ports_of(u) {
                    if dist[to as usize] == u32::MAX {
                        dist[to as usize] = d;
                        q.push_back(to);
                    }
                }
            }
            self.core_nodes
                .iter()
                .map(|&s| match dist[s as usize] {
                    0 | u32::MAX => NO_PORT,
                    k => self
                        .ports_of(s)
                        .iter()
                        .filter(|&&(_, to)| dist[to as usize] == k - 1)
                        .map(|&(p, _)| p)
                        .min()
                        .expect("a node at distance k has a neighbour at k - 1"),
                })
                .collect()
        })
    }

    #[inline]
    fn ports_of(&self, v: NodeId) -> &[(PortId, NodeId)] {
        &self.adj[self.adj_start[v as usize] as usize..self.adj_start[v as usize + 1] as usize]
    }

    /// The port `node` forwards on towards node `dest` ([`NO_PORT`]: it is `node` itself, or
    /// unreachable).
    #[inline]
    fn toward(&self, node: NodeId, dest: NodeId) -> PortId {
        if node == dest || self.component[node as usize] != self.component[dest as usize] {
            return NO_PORT;
        }
        let up = self.up[node as usize];
        if up != NO_PORT {
            return up;
        }
        let (anchor, down) = self.anchor[dest as usize];
        if anchor == node {
            return down;
        }
        self.column(anchor)[self.core_ix[node as usize] as usize]
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The destination index of `a`, if it is anyone's address.
    #[inline]
    fn dest(&self, a: Addr) -> Option<usize> {
        if let Some(n) = a.primary_node(self.nodes) {
            return Some(n as usize);
        }
        self.ifaces.binary_search_by_key(&a, |(x, _)| *x).ok().map(|i| self.ifaces[i].1 as usize)
    }

    /// The node that owns address `a`.
    #[inline]
    pub fn owner(&self, a: Addr) -> Option<NodeId> {
        match self.dest(a)? {
            d if d < self.nodes => Some(d as NodeId),
            d => Some(self.iface_info[d - self.nodes].node),
        }
    }

    /// The interface address record of `a`, if `a` is an interface (not a primary) address.
    pub fn iface(&self, a: Addr) -> Option<&IfaceAddr> {
        match self.dest(a)? {
            d if d >= self.nodes => Some(&self.iface_info[d - self.nodes]),
            _ => None,
        }
    }

    /// The port `node` forwards a packet for `dst` on ([`NO_PORT`] if none: `dst` unknown,
    /// unreachable, or `node`'s own).
    #[inline]
    pub fn next_port(&self, node: NodeId, dst: Addr) -> PortId {
        match self.dest(dst) {
            Some(d) if d < self.nodes => self.toward(node, d as NodeId),
            Some(d) => {
                // Towards the far end of the interface's link, then the link itself; the owner
                // delivers to itself (no port).
                let k = d - self.nodes;
                let (ia, far) = (&self.iface_info[k], self.iface_far[k]);
                if node == ia.node {
                    NO_PORT
                } else if node == far {
                    ia.in_port
                } else {
                    self.toward(node, far)
                }
            }
            None => NO_PORT,
        }
    }

    /// The port a packet from `src` to `dst` leaves its origin `node` on: the interface of
    /// `src` if it is an interface address of `node`, else the table's.
    #[inline]
    pub fn egress_port(&self, node: NodeId, src: Addr, dst: Addr) -> PortId {
        match self.iface(src) {
            Some(ia) if ia.node == node => ia.out_port,
            _ => self.next_port(node, dst),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ─0/1─ R1 ─2/3─ B and A ─4/5─ R2 ─6/7─ B: two disjoint paths (ports 2k: a→b).
    fn two_paths() -> (Vec<Vec<(PortId, NodeId)>>, Vec<IfaceAddr>) {
        let (a, r1, r2, b) = (0, 1, 2, 3);
        let links = [(a, r1), (r1, b), (a, r2), (r2, b)];
        let mut adj = vec![Vec::new(); 4];
        for (k, &(x, y)) in links.iter().enumerate() {
            adj[x as usize].push((2 * k as PortId, y));
            adj[y as usize].push((2 * k as PortId + 1, x));
        }
        let ifaces = vec![
            // B's interface on R2—B (link 3: port 6 is R2→B, 7 is B→R2).
            IfaceAddr { addr: Addr::parse("10.200.0.2").unwrap(), node: b, out_port: 7, in_port: 6 },
            // A's interface on A—R2 (link 2: port 4 is A→R2, 5 is R2→A).
            IfaceAddr { addr: Addr::parse("10.200.0.1").unwrap(), node: a, out_port: 4, in_port: 5 },
        ];
        (adj, ifaces)
    }

    #[test]
    fn addresses_print_and_parse() {
        assert_eq!(Addr::primary(0).to_string(), "10.0.0.1");
        assert_eq!(Addr::parse("10.0.1.0"), Some(Addr::primary(255)));
        assert_eq!(Addr::primary(41).primary_node(42), Some(41));
        assert_eq!(Addr::primary(42).primary_node(42), None);
        assert_eq!(Addr::parse("10.0.0"), None);
    }

    #[test]
    fn primary_addresses_follow_shortest_paths_and_ifaces_their_link() {
        let (adj, ifaces) = two_paths();
        let fib = Fib::build(&adj, ifaces);
        let (a, r1, r2, b) = (0, 1, 2, 3);
        // To B's primary address: the first path (port order breaks the tie).
        assert_eq!(fib.next_port(a, Addr::primary(b)), 0);
        assert_eq!(fib.next_port(r1, Addr::primary(b)), 2);
        // To B's interface address: through R2, whatever the hop count says.
        let b2 = Addr::parse("10.200.0.2").unwrap();
        assert_eq!(fib.next_port(a, b2), 4);
        assert_eq!(fib.next_port(r2, b2), 6);
        // R1 reaches it through A (its shortest way to R2), then R2.
        assert_eq!(fib.next_port(r1, b2), 1);
        assert_eq!(fib.next_port(b, b2), NO_PORT);
        assert_eq!(fib.owner(b2), Some(b));
        assert_eq!(fib.owner(Addr::primary(r2)), Some(r2));
        assert_eq!(fib.owner(Addr::parse("192.0.2.1").unwrap()), None);
        // From A's interface address, A leaves on that interface even towards B's primary.
        let a2 = Addr::parse("10.200.0.1").unwrap();
        assert_eq!(fib.egress_port(a, a2, Addr::primary(b)), 4);
        assert_eq!(fib.egress_port(a, Addr::primary(a), Addr::primary(b)), 0);
        // Another node's interface address gives no special treatment.
        assert_eq!(fib.egress_port(r1, a2, Addr::primary(b)), 2);
    }

    /// The full table, as the scenario compiler built it before routing became lazy: one
    /// breadth-first search per source, in port order. `table[s][d]` for primary destinations.
    fn per_source_table(adj: &[Vec<(PortId, NodeId)>]) -> Vec<Vec<PortId>> {
        let n = adj.len();
        let mut table = Vec::new();
        for s in 0..n {
            let mut first = vec![NO_PORT; n];
            let mut seen = vec![false; n];
            let mut q = std::collections::VecDeque::new();
            seen[s] = true;
            for &(p, to) in &adj[s] {
                if !seen[to as usize] {
                    seen[to as usize] = true;
                    first[to as usize] = p;
                    q.push_back(to);
                }
            }
            while let Some(u) = q.pop_front() {
                let f = first[u as usize];
                for &(_, to) in &adj[u as usize] {
                    if !seen[to as usize] {
                        seen[to as usize] = true;
                        first[to as usize] = f;
                        q.push_back(to);
                    }
                }
            }
            table.push(first);
        }
        table
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        /// Random multigraphs (parallel links, stubs, chains, disconnected parts): every node's
        /// next hop to every node, and to interface addresses, is the per-source table's.
        #[test]
        fn lazy_routing_equals_the_per_source_table(
            n in 2usize..14,
            links in proptest::collection::vec((0usize..14, 0usize..14), 1..30),
            iface_links in proptest::collection::vec((0usize..30, any::<bool>()), 0..4),
        ) {
            let links: Vec<(usize, usize)> =
                links.into_iter().map(|(a, b)| (a % n, b % n)).filter(|(a, b)| a != b).collect();
            prop_assume!(!links.is_empty());
            let mut adj = vec![Vec::new(); n];
            for (k, &(x, y)) in links.iter().enumerate() {
                adj[x].push((2 * k as PortId, y as NodeId));
                adj[y].push((2 * k as PortId + 1, x as NodeId));
            }
            let mut ifaces = Vec::new();
            let mut used = std::collections::BTreeSet::new();
            for (i, &(l, a_end)) in iface_links.iter().enumerate() {
                let k = l % links.len();
                if !used.insert((k, a_end)) {
                    continue;
                }
                let (x, y) = links[k];
                let (node, out_port, in_port) =
                    if a_end { (x, 2 * k, 2 * k + 1) } else { (y, 2 * k + 1, 2 * k) };
                ifaces.push(IfaceAddr {
                    addr: Addr(0xc000_0200 + i as u32),
                    node: node as NodeId,
                    out_port: out_port as PortId,
                    in_port: in_port as PortId,
                });
            }
            let want = per_source_table(&adj);
            let fib = Fib::build(&adj, ifaces.clone());
            for s in 0..n {
                for d in 0..n {
                    prop_assert_eq!(fib.next_port(s as NodeId, Addr::primary(d as NodeId)), want[s][d], "{} -> {}", s, d);
                }
                for ia in &ifaces {
                    let far = adj[ia.node as usize].iter().find(|(p, _)| *p == ia.out_port).unwrap().1;
                    let expect = if s == ia.node as usize {
                        NO_PORT
                    } else if s == far as usize {
                        ia.in_port
                    } else {
                        want[s][far as usize]
                    };
                    prop_assert_eq!(fib.next_port(s as NodeId, ia.addr), expect);
                }
                let unreachable: Vec<NodeId> = fib.unreachable_from(s as NodeId).collect();
                let want_unreachable: Vec<NodeId> =
                    (0..n).filter(|&d| d != s && want[s][d] == NO_PORT).map(|d| d as NodeId).collect();
                prop_assert_eq!(unreachable, want_unreachable);
            }
        }
    }
}
