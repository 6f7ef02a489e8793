//! RSVP signalling messages (PATH, RESV, PathTear) as the simulator carries them, their sizes,
//! the soft-state lifetime rule, and their wire bytes for pcap output.
//!
//! Reading list:
//! - RFC 2205 §1.2 (reservation model: PATH downstream, RESV upstream hop by hop), §3.1 (the
//!   common header and object formats), §3.7 (soft-state refresh period R, randomised in
//!   [0.5 R, 1.5 R], and the state lifetime L ≥ (K + 0.5) · 1.5 · R with K = 3), §3.1.5
//!   (PathTear); Appendix A (SESSION, RSVP_HOP, TIME_VALUES, STYLE, FILTER_SPEC,
//!   SENDER_TEMPLATE objects).
//! - RFC 2210 §3.1–3.3: the Intserv SENDER_TSPEC and FLOWSPEC objects (token-bucket Tspec;
//!   Guaranteed-service Rspec), whose sizes we count.
//! - RFC 2212: Guaranteed service; a reservation is a rate R ≥ the Tspec rate r.
//!
//! Messages travel as `L4::Rsvp` packets (IP protocol 46) and name the data they reserve for
//! by header fields, as RFC 2205 does: the SESSION (destination address, protocol, destination
//! port) and the SENDER_TEMPLATE / FILTER_SPEC (source address, source port), never by the
//! simulator's flow index. The RSVP agent on every node ([`crate::agent::rsvp`]) acts on them
//! and installs reservations in the port's discipline through the
//! [`Reservations`](crate::queue::Reservations) capability. See `docs/models/rsvp.md`.
//!
//! Not modelled: PathErr/ResvErr/ResvConf, ResvTear (receivers never leave in our
//! experiments), merging of reservations, shared/wildcard styles (only fixed-filter, one sender
//! per session), ADSPEC/OPWA, integrity and policy objects.

use crate::ip::Addr;
use crate::ip::{FlowKey, IPV4_HEADER};

/// RFC 2205 §3.7: the number of refreshes a node may miss before its state expires.
pub const K: f64 = 3.0;

/// The message types we model (RFC 2205 §3.1.1 numbering).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RsvpKind {
    /// Sender → receivers; carries the SENDER_TSPEC (type 1).
    Path,
    /// Receiver → sender, hop by hop; carries the FLOWSPEC that each hop installs (type 2).
    Resv,
    /// Sender → receivers; deletes path and reservation state (type 5).
    PathTear,
}

impl RsvpKind {
    pub fn msg_type(self) -> u8 {
        match self {
            RsvpKind::Path => 1,
            RsvpKind::Resv => 2,
            RsvpKind::PathTear => 5,
        }
    }
}

/// RFC 2205 App. A.1 SESSION (IPv4/UDP form, C-Type 1): the data's destination.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Session {
    pub dst: Addr,
    /// IP protocol of the data (17 = UDP, 6 = TCP).
    pub proto: u8,
    pub dport: u16,
}

/// RFC 2205 App. A.9/A.10 SENDER_TEMPLATE and FILTER_SPEC (IPv4, C-Type 1): the data's
/// source.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sender {
    pub src: Addr,
    pub sport: u16,
}

/// One RSVP message.
#[derive(Clone, Debug, PartialEq)]
pub struct RsvpMsg {
    pub kind: RsvpKind,
    /// SESSION object: whose data the message is about.
    pub session: Session,
    /// SENDER_TEMPLATE (PATH, PathTear) or FILTER_SPEC (RESV, fixed filter): which sender.
    pub sender: Sender,
    /// RSVP_HOP object (RFC 2205 App. A.2): the address of the node that sent this message on
    /// its last hop (the previous hop for PATH/PathTear, the next hop for RESV).
    pub hop: Addr,
    /// Tspec token rate r (PATH) or Rspec rate R (RESV), bits per second.
    pub rate_bps: u64,
    /// Tspec peak rate p, bits per second (informational; the scheduler uses `rate_bps`).
    pub peak_bps: u64,
    /// Tspec bucket depth b, bytes.
    pub bucket_bytes: u32,
    /// TIME_VALUES refresh period R of the sending node, milliseconds.
    pub refresh_ms: u32,
}

// Object sizes in bytes (RFC 2205 App. A, RFC 2210 §3): common header 8; SESSION (IPv4/UDP) 12;
// RSVP_HOP (IPv4) 12; TIME_VALUES 8; SENDER_TEMPLATE / FILTER_SPEC (IPv4) 12; STYLE 8;
// SENDER_TSPEC 36 (object header 4 + message header 4 + service header 4 + token-bucket
// parameter header 4 + r, b, p, m, M 20); Guaranteed FLOWSPEC 48 (the Tspec part 36 + Rspec
// parameter header 4 + R, S 8).
const COMMON: u32 = 8;
const SESSION: u32 = 12;
const HOP: u32 = 12;
const TIME_VALUES: u32 = 8;
const TEMPLATE: u32 = 12;
const STYLE: u32 = 8;
const TSPEC: u32 = 36;
const FLOWSPEC: u32 = 48;

impl RsvpMsg {
    /// RSVP message length (common header + objects), bytes.
    pub fn rsvp_bytes(&self) -> u32 {
        COMMON
            + match self.kind {
                RsvpKind::Path => SESSION + HOP + TIME_VALUES + TEMPLATE + TSPEC,
                RsvpKind::Resv => SESSION + HOP + TIME_VALUES + STYLE + FLOWSPEC + TEMPLATE,
                RsvpKind::PathTear => SESSION + HOP + TEMPLATE,
            }
    }

    /// IP datagram size (IPv4 header, no options), bytes: PATH 108, RESV 128, PathTear 64.
    pub fn ip_bytes(&self) -> u32 {
        IPV4_HEADER + self.rsvp_bytes()
    }

    /// RFC 2205 §3.7: the state lifetime L = (K + 0.5) · 1.5 · R for the refresh period this
    /// message announces, in nanoseconds.
    pub fn lifetime_ns(&self) -> u64 {
        lifetime_ns(self.refresh_ms as u64 * 1_000_000)
    }

    /// The 5-tuple key of the data this message is about (session and sender): what a router
    /// classifies that data by, and what reservations are keyed on.
    pub fn key(&self) -> FlowKey {
        FlowKey::five_tuple(
            self.sender.src,
            self.session.dst,
            self.session.proto,
            self.sender.sport,
            self.session.dport,
        )
    }

    /// Wire bytes of the RSVP message (no IP header), for captures. `ipv4` writes an address
    /// as IPv4 bytes.
    pub fn wire_bytes(&self, ipv4: impl Fn(Addr) -> [u8; 4]) -> Vec<u8> {
        let (src, dst) = (ipv4(self.sender.src), ipv4(self.session.dst));
        let (sport, dport) = (self.sender.sport, self.session.dport);
        let mut b = Vec::with_capacity(self.rsvp_bytes() as usize);
        // §3.1.1 common header: Vers 1, Flags 0; Msg Type; Checksum 0 (= none transmitted);
        // Send_TTL; reserved; RSVP Length.
        b.extend_from_slice(&[0x10, self.kind.msg_type(), 0, 0, 64, 0]);
        b.extend_from_slice(&(self.rsvp_bytes() as u16).to_be_bytes());
        let obj = |b: &mut Vec<u8>, len: u16, cnum: u8, ctype: u8| {
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&[cnum, ctype]);
        };
        // SESSION (C-Num 1, C-Type 1): destination, protocol, flags 0, destination port.
        obj(&mut b, 12, 1, 1);
        b.extend_from_slice(&dst);
        b.extend_from_slice(&[self.session.proto, 0]);
        b.extend_from_slice(&dport.to_be_bytes());
        // RSVP_HOP (3/1): the address of the node that sent the message on this hop, LIH 0.
        obj(&mut b, 12, 3, 1);
        b.extend_from_slice(&ipv4(self.hop));
        b.extend_from_slice(&[0, 0, 0, 0]);
        if self.kind != RsvpKind::PathTear {
            // TIME_VALUES (5/1): refresh period R in ms.
            obj(&mut b, 8, 5, 1);
            b.extend_from_slice(&self.refresh_ms.to_be_bytes());
        }
        if self.kind == RsvpKind::Resv {
            // STYLE (8/1): fixed filter (options 0b01010).
            obj(&mut b, 8, 8, 1);
            b.extend_from_slice(&[0, 0, 0, 0x0a]);
            // FLOWSPEC (9/2), Guaranteed service (2).
            obj(&mut b, 48, 9, 2);
            self.intserv_body(&mut b, 2, true);
        }
        // SENDER_TEMPLATE (11/1) or FILTER_SPEC (10/1): sender address and port.
        let cnum = if self.kind == RsvpKind::Resv { 10 } else { 11 };
        obj(&mut b, 12, cnum, 1);
        b.extend_from_slice(&src);
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&sport.to_be_bytes());
        if self.kind == RsvpKind::Path {
            // SENDER_TSPEC (12/2), default/general service (1).
            obj(&mut b, 36, 12, 2);
            self.intserv_body(&mut b, 1, false);
        }
        debug_assert_eq!(b.len(), self.rsvp_bytes() as usize);
        b
    }

    /// RFC 2210 §3.1/§3.3: message header, service header, token-bucket Tspec and, for a
    /// Guaranteed flowspec, the Rspec (R, S = 0).
    fn intserv_body(&self, b: &mut Vec<u8>, service: u8, rspec: bool) {
        let words: u16 = if rspec { 10 } else { 7 };
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&words.to_be_bytes());
        b.extend_from_slice(&[service, 0, 0, if rspec { 9 } else { 6 }]);
        // Parameter 127 (token bucket), flags 0, length 5 words.
        b.extend_from_slice(&[127, 0, 0, 5]);
        let byte_rate = |bps: u64| (bps as f32 / 8.0).to_bits().to_be_bytes();
        b.extend_from_slice(&byte_rate(self.rate_bps));
        b.extend_from_slice(&(self.bucket_bytes as f32).to_bits().to_be_bytes());
        b.extend_from_slice(&byte_rate(self.peak_bps));
        b.extend_from_slice(&64u32.to_be_bytes()); // m: minimum policed unit
        b.extend_from_slice(&1500u32.to_be_bytes()); // M: maximum packet size
        if rspec {
            // Parameter 130 (Guaranteed Rspec), length 2 words: R (bytes/s, float) and S (µs).
            b.extend_from_slice(&[130, 0, 0, 2]);
            b.extend_from_slice(&byte_rate(self.rate_bps));
            b.extend_from_slice(&0u32.to_be_bytes());
        }
    }
}

/// RFC 2205 §3.7: L = (K + 0.5) · 1.5 · R, in nanoseconds, for a refresh period R in ns.
pub fn lifetime_ns(refresh_ns: u64) -> u64 {
    ((K + 0.5) * 1.5 * refresh_ns as f64).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: RsvpKind) -> RsvpMsg {
        RsvpMsg {
            kind,
            session: Session { dst: crate::node::Addr::primary(1), proto: 17, dport: 5_000 },
            sender: Sender { src: crate::node::Addr::primary(0), sport: 10_000 },
            hop: crate::node::Addr::primary(0),
            rate_bps: 60_000_000,
            peak_bps: 120_000_000,
            bucket_bytes: 400_000,
            refresh_ms: 30_000,
        }
    }

    #[test]
    fn sizes_match_the_objects_and_the_encoding() {
        assert_eq!(msg(RsvpKind::Path).ip_bytes(), 108);
        assert_eq!(msg(RsvpKind::Resv).ip_bytes(), 128);
        assert_eq!(msg(RsvpKind::PathTear).ip_bytes(), 64);
        for k in [RsvpKind::Path, RsvpKind::Resv, RsvpKind::PathTear] {
            let m = msg(k);
            let w = m.wire_bytes(|a| a.octets());
            assert_eq!(&w[12..16], &[10, 0, 0, 2], "SESSION destination");
            assert_eq!(w[16], 17, "SESSION protocol");
            assert_eq!(w.len() as u32, m.rsvp_bytes());
            assert_eq!(u16::from_be_bytes([w[6], w[7]]) as u32, m.rsvp_bytes(), "RSVP Length field");
            assert_eq!(w[1], k.msg_type());
            // Objects tile the message exactly: walk their length fields.
            let mut at = 8;
            while at < w.len() {
                let len = u16::from_be_bytes([w[at], w[at + 1]]) as usize;
                assert!(len >= 4 && len.is_multiple_of(4), "{k:?}: object at {at} has length {len}");
                at += len;
            }
            assert_eq!(at, w.len());
        }
    }

    #[test]
    fn lifetime_follows_rfc2205_section_3_7() {
        // R = 30 s, K = 3: L = 3.5 · 1.5 · 30 s = 157.5 s.
        assert_eq!(msg(RsvpKind::Path).lifetime_ns(), 157_500_000_000);
        assert_eq!(lifetime_ns(1_000_000_000), 5_250_000_000);
    }
}
