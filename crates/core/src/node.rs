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

/// The forwarding tables of every node: for each node, the port towards each destination
/// (primary addresses first, in node order, then interface addresses in declaration order).
pub struct Fib {
    nodes: usize,
    /// Interface addresses sorted by address, with their destination index.
    ifaces: Vec<(Addr, u32)>,
    iface_info: Vec<IfaceAddr>,
    /// `table[node * dests + dest]`.
    table: Vec<PortId>,
    dests: usize,
}

impl Fib {
    /// Builds shortest-path tables. `adj[n]` lists `(port, far node)` in port order.
    pub fn build(adj: &[Vec<(PortId, NodeId)>], ifaces: Vec<IfaceAddr>) -> Fib {
        let n = adj.len();
        let dests = n + ifaces.len();
        let mut table = vec![NO_PORT; n * dests];
        // First hops towards every node, by breadth-first search from each source.
        let mut first = vec![NO_PORT; n];
        let mut seen = vec![false; n];
        let mut q = std::collections::VecDeque::new();
        for s in 0..n {
            first.iter_mut().for_each(|p| *p = NO_PORT);
            seen.iter_mut().for_each(|x| *x = false);
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
            let row = &mut table[s * dests..(s + 1) * dests];
            row[..n].copy_from_slice(&first);
            for (k, ia) in ifaces.iter().enumerate() {
                // Towards the far end of the interface's link, then the link itself; the owner
                // delivers to itself (no port).
                let far = adj[ia.node as usize]
                    .iter()
                    .find(|(p, _)| *p == ia.out_port)
                    .map(|(_, to)| *to)
                    .expect("an interface address sits on one of its node's ports");
                row[n + k] = if s == ia.node as usize {
                    NO_PORT
                } else if s == far as usize {
                    ia.in_port
                } else {
                    first[far as usize]
                };
            }
        }
        let mut sorted: Vec<(Addr, u32)> = ifaces.iter().enumerate().map(|(k, ia)| (ia.addr, (n + k) as u32)).collect();
        sorted.sort();
        Fib { nodes: n, ifaces: sorted, iface_info: ifaces, table, dests }
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
            Some(d) => self.table[node as usize * self.dests + d],
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
}
