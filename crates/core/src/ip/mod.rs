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
