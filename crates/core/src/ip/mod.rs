//! IP-layer wire formats that the simulator carries in packet headers.
//!
//! The simulator itself moves typed packets, not bytes; the formats here exist so that
//! components which read an IP option (a TFD-capable router) and tools which write real
//! headers (the pcap writer) agree on one byte-exact encoding.
//!
//! - [`tfd`]: the Traffic Flow Description option (IPv4 option and IPv6 hop-by-hop option),
//!   with helpers that place it in an IPv4 options area or an IPv6 Hop-by-Hop Options header.
//! - [`rsvp`]: RSVP PATH/RESV/PathTear messages (RFC 2205), their sizes and soft-state lifetime.

pub mod rsvp;
pub mod tfd;

use crate::packet::{NodeId, L4};

pub use crate::node::Addr;

/// The primary address of node `n` (see [`crate::node`]).
#[inline]
pub fn addr(n: NodeId) -> Addr {
    Addr::primary(n)
}

/// IANA protocol numbers of the transports and signalling the simulator carries.
pub mod proto {
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    /// RFC 2205 §3.1: RSVP messages are raw IP datagrams with protocol 46.
    pub const RSVP: u8 = 46;
}

/// The IP protocol number of a packet's payload.
#[inline]
pub fn protocol(l4: &L4) -> u8 {
    match l4 {
        L4::Tcp(_) => proto::TCP,
        L4::Udp(_) => proto::UDP,
        L4::Rsvp(_) => proto::RSVP,
    }
}
