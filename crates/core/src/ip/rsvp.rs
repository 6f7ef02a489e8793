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
//! The world ([`crate::sim`]) moves these as `L4::Rsvp` packets (IP protocol 46) of the data
//! flow they reserve for; routers act on them in [`crate::sim::Simulation`]'s node processing
//! and install the reservation in the port's queue discipline through
//! [`QueueDisc::reserve`](crate::queue::QueueDisc::reserve). See `docs/models/rsvp.md`.
//!
//! Not modelled: PathErr/ResvErr/ResvConf, ResvTear (receivers never leave in our
//! experiments), merging of reservations, shared/wildcard styles (only fixed-filter, one sender
//! per session), ADSPEC/OPWA, integrity and policy objects, and separate path state (RESV
//! follows the data flow's reverse route instead of recorded previous hops, which is the same
//! path with symmetric routing).

use crate::packet::IPV4_HEADER;

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

/// One RSVP message. The session and sender are the flow the packet belongs to.
#[derive(Clone, Debug, PartialEq)]
pub struct RsvpMsg {
    pub kind: RsvpKind,
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

    /// Wire bytes of the RSVP message (no IP header), for captures. `src`/`dst` are the IPv4
    /// addresses of the data flow's sender and receiver; `sport`/`dport` its UDP ports.
    pub fn wire_bytes(&self, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.rsvp_bytes() as usize);
        // §3.1.1 common header: Vers 1, Flags 0; Msg Type; Checksum 0 (= none transmitted);
        // Send_TTL; reserved; RSVP Length.
        b.extend_from_slice(&[0x10, self.kind.msg_type(), 0, 0, 64, 0]);
        b.extend_from_slice(&(self.rsvp_bytes() as u16).to_be_bytes());
        let obj = |b: &mut Vec<u8>, len: u16, cnum: u8, ctype: u8| {
            b.extend_from_slice(&len.to_be_bytes());
            b.extend_from_slice(&[cnum, ctype]);
        };
        // SESSION (C-Num 1, C-Type 1): destination, protocol 17, flags 0, destination port.
        obj(&mut b, 12, 1, 1);
        b.extend_from_slice(&dst);
        b.extend_from_slice(&[17, 0]);
        b.extend_from_slice(&dport.to_be_bytes());
        // RSVP_HOP (3/1): the previous hop's address (we write the sender's) and LIH 0.
        obj(&mut b, 12, 3, 1);
        b.extend_from_slice(if self.kind == RsvpKind::Resv { &dst } else { &src });
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
        RsvpMsg { kind, rate_bps: 60_000_000, peak_bps: 120_000_000, bucket_bytes: 400_000, refresh_ms: 30_000 }
    }

    #[test]
    fn sizes_match_the_objects_and_the_encoding() {
        assert_eq!(msg(RsvpKind::Path).ip_bytes(), 108);
        assert_eq!(msg(RsvpKind::Resv).ip_bytes(), 128);
        assert_eq!(msg(RsvpKind::PathTear).ip_bytes(), 64);
        for k in [RsvpKind::Path, RsvpKind::Resv, RsvpKind::PathTear] {
            let m = msg(k);
            let w = m.wire_bytes([10, 0, 0, 1], [10, 0, 0, 2], 10_000, 5_000);
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
