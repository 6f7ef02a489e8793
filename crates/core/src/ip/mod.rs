//! IP-layer wire formats that the simulator carries in packet headers.
//!
//! The simulator itself moves typed packets, not bytes; the formats here exist so that
//! components which read an IP option (a TFD-capable router) and tools which write real
//! headers (the pcap writer) agree on one byte-exact encoding.
//!
//! - [`tfd`]: the Traffic Flow Description option (IPv4 option and IPv6 hop-by-hop option),
//!   with helpers that place it in an IPv4 options area or an IPv6 Hop-by-Hop Options header.
//! - [`classify`]: an edge node's 5-tuple rules that re-mark the DSCP of packets it forwards.
//! - [`dscp`]: DiffServ code points, by number or RFC name (EF, AFxy, CSn).
//! - [`rsvp`]: RSVP PATH/RESV/PathTear messages (RFC 2205), their sizes and soft-state lifetime.

pub mod classify;
pub mod dscp;
pub mod rsvp;
pub mod tfd;

use crate::node::NodeId;

pub use crate::node::Addr;

/// The primary address of node `n` (see [`crate::node`]).
#[inline]
pub fn addr(n: NodeId) -> Addr {
    Addr::primary(n)
}

/// IANA protocol numbers of the transports and signalling the simulator carries.
pub mod proto {
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    /// RFC 2205 §3.1: RSVP messages are raw IP datagrams with protocol 46.
    pub const RSVP: u8 = 46;
}

/// The Internet checksum (RFC 1071) of the concatenated `chunks`: the ones' complement of the
/// ones' complement sum of their 16-bit big-endian words (an odd last byte padded with zero).
/// Over a header that holds its own valid checksum it is 0.
pub fn internet_checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for c in chunks {
        for &b in c.iter() {
            match odd.take() {
                Some(hi) => sum += u16::from_be_bytes([hi, b]) as u32,
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u16::from_be_bytes([hi, 0]) as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv4 header without options, bytes (RFC 791 §3.1).
pub const IPV4_HEADER: u32 = 20;
/// IPv6 fixed header, bytes (RFC 8200 §3).
pub const IPV6_HEADER: u32 = 40;

/// A flow identifier computed from header fields (see `queue::FlowKeyKind::key`): exact (no
/// hashing, so no collisions) and ordered, so per-flow state can live in ordered maps and ties
/// break deterministically. Here, with the IP layer, so that signalling (RSVP filter specs) and
/// the queue disciplines share it without depending on each other.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey(pub u128);

impl FlowKey {
    /// The 5-tuple key of the packets with these header fields: what a filter spec (RFC 2205
    /// App. A.9) matches, and `FlowKeyKind::FiveTuple` computes.
    #[inline]
    pub fn five_tuple(src: Addr, dst: Addr, proto: u8, sport: u16, dport: u16) -> FlowKey {
        FlowKey(
            (src.0 as u128) << 72
                | (dst.0 as u128) << 40
                | (proto as u128) << 32
                | (sport as u128) << 16
                | dport as u128,
        )
    }
}
