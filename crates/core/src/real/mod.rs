//! Real traffic: the datagrams of real hosts, carried through the simulated network with their
//! bytes (emulation; the real-time driver is the `qoelab-emu` crate, outside this sans-IO core).
//!
//! A node marked `real = true` in a scenario stands for a real host (a Linux network namespace
//! whose TUN device the driver reads and writes). The core offers a driver four calls on
//! [`Simulation`](crate::sim::Simulation) (in [`world`]):
//! - `next_event_time`: when the next event is due;
//! - `run_until`: run the events up to an instant (simulated time is the driver's clock);
//! - `inject_real`: a datagram a real host sent, entering the network at its node at the
//!   current instant;
//! - `take_real_deliveries`: the datagrams that reached real nodes, to be written to their
//!   hosts.
//!
//! A real datagram is parsed once, on entry ([`parse_ipv4`]): addresses, protocol, ports, DSCP,
//! TTL, IP options (a TFD option is decoded into `IpHdr::tfd`, so TFD routers reserve for a real
//! flow) and its length, which links serialise. Queues, loss models, channels and outages then
//! act on those header fields exactly as on simulated packets, so real and simulated traffic
//! share the same queues. What routers do to it (RFC 1812 §5.3.1): a node that forwards it (a
//! simulated node that does not own its destination) decrements its TTL and updates the header
//! checksum incrementally (RFC 1624 eqn. 3), and discards it if the TTL would reach 0. Every
//! other byte leaves as it came.
//!
//! A real datagram that reaches a real node is handed to the driver whatever its destination
//! (that host's kernel delivers, forwards or drops it). At a simulated node that owns its
//! destination, an ICMP echo request is answered (RFC 1122 §3.2.2.6: hosts and routers answer
//! ping), so `ping` measures the path to any simulated node; anything else is received there
//! and consumed.
//!
//! Accounting: every real datagram belongs to a *real flow*, keyed by its 5-tuple (addresses,
//! protocol, ports; ports are 0 for ICMP and other protocols), numbered in order of first
//! appearance; its `PacketData::flow` is [`REAL_FLOW_BASE`] plus that number. A real flow has
//! the statistics of a simulated flow's forward direction (the `real_flows` table), with
//! `sent = received + dropped (queue, channel, router) + in flight`. Datagrams refused on entry
//! are counted by node and reason (the `real_rejects` table).
//!
//! Not modelled: IPv6 (refused on entry), fragmentation (a datagram larger than its first
//! link's MTU is refused; the driver sets each host's MTU to the scenario's smallest), ICMP
//! errors (time exceeded, unreachable, fragmentation needed are never sent), real RSVP messages
//! (carried as data; the simulated nodes' agents do not read them), and IP options other than
//! TFD (carried, not acted on).

pub mod world;

use crate::agent::NO_FLOW;
use crate::ip::{internet_checksum, proto, FlowKey};
use crate::node::Addr;
use crate::packet::{Ecn, FlowId, IpHdr, NodeId, RealHdr};
use crate::time::SimTime;
use crate::trace::FlowStats;
use std::collections::BTreeMap;

/// `PacketData::flow` of real flow `k` is `REAL_FLOW_BASE + k`; simulated flows are numbered
/// below it, and [`NO_FLOW`] (agents' signalling) is the largest value.
pub const REAL_FLOW_BASE: FlowId = 0x8000_0000;

/// Most real flows a run keeps (a few kB each); datagrams of further 5-tuples are refused
/// ([`Reject::TooManyFlows`]).
pub const MAX_REAL_FLOWS: usize = 100_000;

/// The TTL of datagrams the simulated nodes originate (echo replies), Linux's default.
const DEFAULT_TTL: u8 = 64;

/// Whether `flow` names a real flow.
#[inline]
pub fn is_real_flow(flow: FlowId) -> bool {
    flow >= REAL_FLOW_BASE && flow != NO_FLOW
}

/// Why a datagram from a real host was refused on entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
pub enum Reject {
    #[error("not an IPv4 datagram")]
    NotIpv4,
    #[error("malformed IPv4 header or length")]
    Malformed,
    #[error("bad IPv4 header checksum")]
    Checksum,
    #[error("malformed IP options")]
    Options,
    #[error("no route to its destination")]
    NoRoute,
    #[error("larger than the MTU of its first link")]
    TooBig,
    #[error("more real flows than a run keeps")]
    TooManyFlows,
}

impl Reject {
    /// The reason as the `real_rejects` table names it.
    pub fn name(self) -> &'static str {
        match self {
            Reject::NotIpv4 => "not_ipv4",
            Reject::Malformed => "malformed",
            Reject::Checksum => "checksum",
            Reject::Options => "options",
            Reject::NoRoute => "no_route",
            Reject::TooBig => "too_big",
            Reject::TooManyFlows => "too_many_flows",
        }
    }
}

/// The header fields of a real IPv4 datagram, as [`parse_ipv4`] reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct Datagram {
    pub src: Addr,
    pub dst: Addr,
    pub ip: IpHdr,
    /// Transport fields and the bytes (truncated to the header's Total Length).
    pub hdr: RealHdr,
}

/// Parses an IPv4 datagram as a router reads it (RFC 1812 §5.2.2): version 4, a header length
/// of at least 20 bytes, a Total Length that covers the header and fits the bytes given (bytes
/// beyond it are padding and are cut), a valid header checksum, and a well-formed options list.
/// TCP and UDP ports are read from the first fragment (0 in later fragments and for other
/// protocols).
pub fn parse_ipv4(mut bytes: Vec<u8>) -> Result<Datagram, Reject> {
    let Some(&b0) = bytes.first() else { return Err(Reject::Malformed) };
    if b0 >> 4 != 4 {
        return Err(Reject::NotIpv4);
    }
    let ihl = (b0 & 0x0f) as usize * 4;
    if ihl < 20 || bytes.len() < ihl {
        return Err(Reject::Malformed);
    }
    let total = u16::from_be_bytes([bytes[2], bytes[3]]) as usize;
    if total < ihl || total > bytes.len() {
        return Err(Reject::Malformed);
    }
    bytes.truncate(total);
    if internet_checksum(&[&bytes[..ihl]]) != 0 {
        return Err(Reject::Checksum);
    }
    let tfd = crate::ip::tfd::find_in_ipv4_options(&bytes[20..ihl]).map_err(|_| Reject::Options)?.map(|(_, o)| o);
    let proto = bytes[9];
    let frag_offset = u16::from_be_bytes([bytes[6], bytes[7]]) & 0x1fff;
    let l4 = &bytes[ihl..];
    let (src_port, dst_port) = match proto {
        proto::TCP | proto::UDP if frag_offset == 0 && l4.len() >= 4 => {
            (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]))
        }
        _ => (0, 0),
    };
    let addr = |at: usize| Addr(u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]));
    Ok(Datagram {
        src: addr(12),
        dst: addr(16),
        ip: IpHdr {
            v6: false,
            dscp: bytes[1] >> 2,
            ecn: Ecn::from_tos(bytes[1]),
            ttl: bytes[8],
            opt_bytes: (ihl - 20) as u16,
            tfd,
        },
        hdr: RealHdr { proto, src_port, dst_port, bytes },
    })
}

/// What a router does to a datagram it forwards (RFC 1812 §5.3.1): decrements the TTL and
/// updates the header checksum incrementally (RFC 1624 eqn. 3, `HC' = ~(~HC + ~m + m')` over the
/// 16-bit word holding TTL and Protocol). Returns `false`, changing nothing, if the TTL is 1 or
/// 0: the datagram must be discarded.
pub fn decrement_ttl(b: &mut [u8]) -> bool {
    if b[8] <= 1 {
        return false;
    }
    let old = u16::from_be_bytes([b[8], b[9]]);
    b[8] -= 1;
    crate::packet::update_ipv4_checksum(b, old, u16::from_be_bytes([b[8], b[9]]));
    true
}

/// An IPv4 datagram (RFC 791) from `src` to `dst` carrying `payload` of protocol `proto`: TOS
/// `tos`, the options area `opts` (a multiple of 4 bytes, at most 40), identification 0, DF
/// set, TTL 64, the header checksum computed. What simulated nodes send (echo replies) and what
/// tests and tools feed a real-time driver.
///
/// # Panics
/// If `opts` is not a multiple of 4 bytes of at most 40, or the datagram exceeds 65,535 bytes.
pub fn ipv4_datagram(src: Addr, dst: Addr, proto: u8, tos: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    assert!(opts.len() % 4 == 0 && opts.len() <= 40, "IPv4 options of {} bytes", opts.len());
    let ihl = 20 + opts.len();
    let total = ihl + payload.len();
    assert!(total <= 65_535, "an IPv4 datagram of {total} bytes");
    let mut b = Vec::with_capacity(total);
    b.extend_from_slice(&[0x40 | (ihl / 4) as u8, tos, 0, 0, 0, 0, 0x40, 0, DEFAULT_TTL, proto, 0, 0]);
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b.extend_from_slice(&src.octets());
    b.extend_from_slice(&dst.octets());
    b.extend_from_slice(opts);
    let c = internet_checksum(&[&b]);
    b[10..12].copy_from_slice(&c.to_be_bytes());
    b.extend_from_slice(payload);
    b
}

/// An ICMP echo message (RFC 792): `kind` 8 (request) or 0 (reply), identifier `id`,
/// sequence number `seq`, then `data`; checksum computed.
pub fn icmp_echo(kind: u8, id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![kind, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(data);
    let c = internet_checksum(&[&m]);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// The ICMP echo reply (RFC 792) to the echo request `req` (a whole IPv4 datagram, already
/// parsed), as a host sends it: addresses swapped, no IP options, TTL 64, the request's
/// identifier, sequence number and data, checksums computed. `None` if `req` is not an echo
/// request (type 8, code 0) in an unfragmented datagram.
pub fn echo_reply(req: &Datagram) -> Option<Vec<u8>> {
    let b = &req.hdr.bytes;
    let ihl = (b[0] & 0x0f) as usize * 4;
    let fragmented = u16::from_be_bytes([b[6], b[7]]) & 0x3fff != 0;
    let icmp = &b[ihl..];
    if req.hdr.proto != proto::ICMP || fragmented || icmp.len() < 8 || icmp[0] != 8 || icmp[1] != 0 {
        return None;
    }
    let id = u16::from_be_bytes([icmp[4], icmp[5]]);
    let seq = u16::from_be_bytes([icmp[6], icmp[7]]);
    Some(ipv4_datagram(req.dst, req.src, proto::ICMP, 0, &[], &icmp_echo(0, id, seq, &icmp[8..])))
}

/// One real flow: the datagrams of one 5-tuple.
#[derive(Clone, Debug)]
pub struct RealFlow {
    pub src: Addr,
    pub dst: Addr,
    pub proto: u8,
    pub src_port: u16,
    pub dst_port: u16,
    /// The node its first datagram entered at (a real node, or a simulated node answering an
    /// echo request).
    pub from: NodeId,
    /// When its first datagram entered.
    pub start: SimTime,
    pub stats: FlowStats,
    /// Discarded by a router: TTL expired, or no route on.
    pub drop_router_pkts: u64,
    pub(crate) next_seq: u64,
}

impl RealFlow {
    /// `"tcp 10.0.0.1:40000 > 10.0.0.3:5201"`, `"icmp 10.0.0.1 > 10.0.0.3"`.
    pub fn name(&self) -> String {
        let p = proto_name(self.proto);
        match self.proto {
            proto::TCP | proto::UDP => {
                format!("{p} {}:{} > {}:{}", self.src, self.src_port, self.dst, self.dst_port)
            }
            _ => format!("{p} {} > {}", self.src, self.dst),
        }
    }
}

/// `tcp`, `udp`, `icmp`, `rsvp`, else the protocol number.
pub fn proto_name(p: u8) -> String {
    match p {
        proto::TCP => "tcp".into(),
        proto::UDP => "udp".into(),
        proto::ICMP => "icmp".into(),
        proto::RSVP => "rsvp".into(),
        n => format!("ip{n}"),
    }
}

/// The real side of a world with real nodes.
#[derive(Debug, Default)]
pub struct RealTraffic {
    /// `real[node]`: whether the node is a real host.
    pub(crate) real: Vec<bool>,
    pub flows: Vec<RealFlow>,
    index: BTreeMap<FlowKey, u32>,
    /// Datagrams that reached real nodes, not yet taken by the driver.
    pub(crate) out: Vec<(NodeId, Vec<u8>)>,
    /// Datagrams refused on entry, by node and reason.
    pub rejects: BTreeMap<(NodeId, Reject), u64>,
    /// Echo requests the simulated nodes answered.
    pub echo_replies: u64,
}

impl RealTraffic {
    /// The flow of a datagram with these fields entering at `node` at `now`, created on first
    /// sight; `None` when the run keeps no more flows.
    pub(crate) fn flow_of(&mut self, d: &Datagram, node: NodeId, now: SimTime) -> Option<FlowId> {
        let h = &d.hdr;
        let key = FlowKey::five_tuple(d.src, d.dst, h.proto, h.src_port, h.dst_port);
        if let Some(&k) = self.index.get(&key) {
            return Some(REAL_FLOW_BASE + k);
        }
        if self.flows.len() >= MAX_REAL_FLOWS {
            return None;
        }
        let k = self.flows.len() as u32;
        self.index.insert(key, k);
        self.flows.push(RealFlow {
            src: d.src,
            dst: d.dst,
            proto: h.proto,
            src_port: h.src_port,
            dst_port: h.dst_port,
            from: node,
            start: now,
            stats: FlowStats::new(),
            drop_router_pkts: 0,
            next_seq: 0,
        });
        Some(REAL_FLOW_BASE + k)
    }

    pub(crate) fn flow_mut(&mut self, flow: FlowId) -> &mut RealFlow {
        &mut self.flows[(flow - REAL_FLOW_BASE) as usize]
    }

    /// A queue or channel lost a datagram of real flow `flow`.
    pub(crate) fn on_drop(&mut self, flow: FlowId, cause: crate::link::DropCause) {
        let st = &mut self.flow_mut(flow).stats;
        match cause {
            crate::link::DropCause::Queue => st.drop_queue_pkts += 1,
            crate::link::DropCause::Channel => st.drop_channel_pkts += 1,
        }
    }

    pub(crate) fn reject(&mut self, node: NodeId, why: Reject) -> Reject {
        *self.rejects.entry((node, why)).or_insert(0) += 1;
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::tfd::{NextData, TfdFlags, TfdOption};

    fn datagram(src: [u8; 4], dst: [u8; 4], p: u8, opts: &[u8], l4: &[u8]) -> Vec<u8> {
        ipv4_datagram(Addr(u32::from_be_bytes(src)), Addr(u32::from_be_bytes(dst)), p, 0xb8, opts, l4)
    }

    /// The ECN field is the TOS byte's low 2 bits (RFC 3168 §5): parsed beside the DSCP, and
    /// rewritten to CE by a marking AQM with the header checksum still valid (RFC 1624).
    #[test]
    fn ecn_field_is_parsed_and_marked_with_a_valid_checksum() {
        let src = Addr::parse("10.0.0.1").unwrap();
        let dst = Addr::parse("10.0.0.3").unwrap();
        let b = ipv4_datagram(src, dst, 17, 0xb8 | 2, &[], &[0x13, 0x88, 0, 0x50, 0, 8, 0, 0]);
        let d = parse_ipv4(b).unwrap();
        assert_eq!((d.ip.dscp, d.ip.ecn), (46, Ecn::Ect0));
        let mut p = crate::packet::PacketData {
            flow: 0,
            dir: crate::packet::Dir::Fwd,
            src,
            dst,
            seq_in_flow: 0,
            size_bytes: d.hdr.bytes.len() as u32,
            sent_at: SimTime::ZERO,
            hop: 0,
            route: crate::packet::NO_ROUTE,
            path: 0,
            ip: d.ip,
            l4: crate::packet::L4::Real(Box::new(d.hdr)),
            gro: None,
        };
        assert!(p.set_ce());
        let crate::packet::L4::Real(r) = &p.l4 else { unreachable!() };
        assert_eq!(r.bytes[1], 0xb8 | 3, "DSCP kept, CE set");
        assert_eq!(internet_checksum(&[&r.bytes[..20]]), 0, "header checksum still valid");
        assert_eq!(parse_ipv4(r.bytes.clone()).unwrap().ip.ecn, Ecn::Ce);
        // A Not-ECT datagram is left alone (the AQM drops it instead).
        let b = ipv4_datagram(src, dst, 17, 0xb8, &[], &[0x13, 0x88, 0, 0x50, 0, 8, 0, 0]);
        let mut ip = parse_ipv4(b).unwrap().ip;
        assert_eq!(ip.ecn, Ecn::NotEct);
        ip.ecn = Ecn::from_tos(0xb8);
        assert!(!ip.ecn.capable());
    }

    #[test]
    fn parses_the_fields_models_read() {
        let opt = TfdOption::new(TfdFlags::empty(), NextData::Bytes(150_000), 100).unwrap();
        let opts = crate::ip::tfd::ipv4_options_area(&opt);
        let b = datagram([10, 0, 0, 1], [10, 0, 0, 3], 17, &opts, &[0x13, 0x88, 0x00, 0x50, 0, 12, 0, 0, 1, 2, 3, 4]);
        let d = parse_ipv4(b.clone()).unwrap();
        assert_eq!((d.src, d.dst), (Addr::parse("10.0.0.1").unwrap(), Addr::parse("10.0.0.3").unwrap()));
        assert_eq!((d.hdr.proto, d.hdr.src_port, d.hdr.dst_port), (17, 5000, 80));
        assert_eq!(d.ip.dscp, 46, "EF: TOS 0xb8");
        assert_eq!(d.ip.ttl, 64);
        assert_eq!(d.ip.opt_bytes as usize, opts.len());
        assert_eq!(d.ip.tfd, Some(opt));
        assert_eq!(d.hdr.bytes, b);
    }

    #[test]
    fn refuses_what_a_router_refuses() {
        let ok = datagram([10, 0, 0, 1], [10, 0, 0, 3], 1, &[], &[8, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_ipv4(vec![0x60; 40]).unwrap_err(), Reject::NotIpv4);
        assert_eq!(parse_ipv4(Vec::new()).unwrap_err(), Reject::Malformed);
        assert_eq!(parse_ipv4(ok[..19].to_vec()).unwrap_err(), Reject::Malformed);
        let mut long = ok.clone();
        long[3] += 1; // Total Length beyond the bytes
        assert_eq!(parse_ipv4(long).unwrap_err(), Reject::Malformed);
        let mut bad = ok.clone();
        bad[10] ^= 1;
        assert_eq!(parse_ipv4(bad).unwrap_err(), Reject::Checksum);
        // An option whose length runs past the options area.
        let b = datagram([10, 0, 0, 1], [10, 0, 0, 3], 17, &[0x9e, 40, 0, 0], &[0; 8]);
        assert_eq!(parse_ipv4(b).unwrap_err(), Reject::Options);
        // Padding after Total Length is cut.
        let mut padded = ok.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(parse_ipv4(padded).unwrap().hdr.bytes, ok);
    }

    proptest::proptest! {
        /// The incremental TTL update leaves a header whose checksum verifies, as a full
        /// recomputation would.
        #[test]
        fn ttl_decrement_keeps_the_checksum_valid(words in proptest::collection::vec(proptest::num::u8::ANY, 20), ttl in 2u8..=255) {
            let mut h = words.clone();
            h[0] = 0x45;
            h[8] = ttl;
            h[10] = 0;
            h[11] = 0;
            let c = internet_checksum(&[&h]);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            proptest::prop_assert!(decrement_ttl(&mut h));
            proptest::prop_assert_eq!(h[8], ttl - 1);
            proptest::prop_assert_eq!(internet_checksum(&[&h]), 0);
        }
    }

    #[test]
    fn ttl_one_is_not_forwarded() {
        let mut b = datagram([10, 0, 0, 1], [10, 0, 0, 3], 17, &[], &[0; 8]);
        b[8] = 1;
        let before = b.clone();
        assert!(!decrement_ttl(&mut b));
        assert_eq!(b, before);
    }

    #[test]
    fn echo_reply_swaps_addresses_and_verifies() {
        let icmp = icmp_echo(8, 0x1234, 1, b"hi");
        let req = parse_ipv4(datagram([10, 0, 0, 1], [10, 0, 0, 2], 1, &[], &icmp)).unwrap();
        let r = parse_ipv4(echo_reply(&req).unwrap()).unwrap();
        assert_eq!((r.src, r.dst), (req.dst, req.src));
        let body = &r.hdr.bytes[20..];
        assert_eq!(body[0], 0, "echo reply");
        assert_eq!(&body[4..], &icmp[4..], "identifier, sequence and data echoed");
        assert_eq!(internet_checksum(&[body]), 0);
        let udp = parse_ipv4(datagram([10, 0, 0, 1], [10, 0, 0, 2], 17, &[], &[0; 8])).unwrap();
        assert!(echo_reply(&udp).is_none());
    }
}
