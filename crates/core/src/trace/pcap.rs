//! pcap capture of a link direction, with real IPv4, UDP, TCP and RTP header bytes.
//!
//! Format: classic pcap with nanosecond timestamps (magic `0xa1b23c4d`), link type 101
//! (`LINKTYPE_RAW`: each record starts with the IP header), whole packets (no snaplen
//! truncation). Payload bytes are zeros; lengths, sequence numbers (low 32 bits) and RTP fields
//! are those the simulator used.
//!
//! - Addresses: node `n` is IPv4 10.0.0.0 + n + 1 ([`node_addr`]), nodes being numbered from 0
//!   as the scenario names them (`[[nodes]]` first, then link ends in order of appearance), so
//!   every capture of a run agrees. Ports are the flow's. IPv6 packets are written as IPv4.
//! - Checksums: the IPv4 header checksum and the TCP checksum are computed (RFC 1071); UDP
//!   carries 0, "no checksum" (RFC 768).
//! - TCP: the data offset covers exactly the option bytes the transport counted in the segment's
//!   size, so a SYN carries no payload. A SYN (or SYN-ACK) holds MSS, SACK-permitted (if SACK is
//!   on), timestamps (if on) and window scale in Linux's order and padding (20 bytes with
//!   timestamps); other segments NOP NOP + timestamps (12 bytes, if on) and SACK blocks. The
//!   window field is the sender's receive window, unscaled on a SYN and shifted right by the
//!   announced scale otherwise (RFC 7323 §2), so tshark's computed window is the buffer (within
//!   the 2^shift granularity) and no segment reads as a zero window.

use crate::ip::internet_checksum as checksum;
use crate::packet::tcp_flags::SYN;
use crate::packet::{MptcpOption, PacketData, TcpHdr, UdpHdr, L4};
use crate::time::SimTime;
use std::io::{self, Write};

pub const LINKTYPE_RAW: u32 = 101;

/// IPv4 address of node `n`.
pub fn node_addr(n: u32) -> [u8; 4] {
    (0x0a00_0000u32 + n + 1).to_be_bytes()
}

/// TCP option kinds (RFC 9293 §3.2, RFC 2018 §2–3, RFC 7323 §2.2 and §3.2).
mod kind {
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WSCALE: u8 = 3;
    pub const SACK_PERM: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
    pub const MPTCP: u8 = 30;
}

/// The MPTCP option (RFC 8684 §3, kind 30), NOP-padded in front to a multiple of 4 bytes.
fn mptcp_option(m: &MptcpOption) -> Vec<u8> {
    let len = m.wire_len() as u8;
    let mut o = vec![kind::NOP; (m.padded_len() - m.wire_len()) as usize];
    o.extend_from_slice(&[kind::MPTCP, len]);
    match m {
        MptcpOption::Capable { keys } => {
            // §3.1: subtype 0, version 1; flags: A (checksum) off, H (HMAC-SHA256) on.
            o.extend_from_slice(&[0x01, 0x01]);
            for k in keys.iter().flatten() {
                o.extend_from_slice(&k.to_be_bytes());
            }
        }
        MptcpOption::Join { stage, addr_id, token, nonce, hmac } => {
            // §3.2: subtype 1 and the backup flag (off); SYN: token, nonce; SYN-ACK: truncated
            // HMAC, nonce; ACK: reserved, 160-bit HMAC.
            match stage {
                0 => {
                    o.extend_from_slice(&[0x10, *addr_id]);
                    o.extend_from_slice(&token.to_be_bytes());
                    o.extend_from_slice(&nonce.to_be_bytes());
                }
                1 => {
                    o.extend_from_slice(&[0x10, *addr_id]);
                    o.extend_from_slice(&hmac.to_be_bytes());
                    o.extend_from_slice(&nonce.to_be_bytes());
                }
                _ => {
                    o.extend_from_slice(&[0x10, 0]);
                    o.extend_from_slice(&hmac.to_be_bytes());
                    o.extend_from_slice(&[0; 12]);
                }
            }
        }
        MptcpOption::Dss { data_ack, maps } => {
            // §3.3: subtype 2; flags A (0x01) DATA_ACK present, a (0x02) 8 octets, M (0x04)
            // mapping present, m (0x08) DSN 8 octets.
            let mut flags = 0u8;
            if data_ack.is_some() {
                flags |= 0x03;
            }
            if !maps.is_empty() {
                flags |= 0x0c;
            }
            o.extend_from_slice(&[0x20, flags]);
            if let Some(a) = data_ack {
                o.extend_from_slice(&a.to_be_bytes());
            }
            if let Some(m) = maps.first() {
                o.extend_from_slice(&m.dsn.to_be_bytes());
                o.extend_from_slice(&(m.ssn as u32).to_be_bytes());
                o.extend_from_slice(&(m.len.min(0xffff) as u16).to_be_bytes());
            }
        }
    }
    o
}

/// The options area of `t`, a multiple of 4 bytes, as many as the transport counted in the
/// segment's size: on a SYN 20 bytes with timestamps, 12 with SACK alone, 8 with neither; on
/// other segments 12 for timestamps plus 4 + 8n for n SACK blocks.
fn tcp_options(t: &TcpHdr) -> Vec<u8> {
    let mut o = Vec::with_capacity(40);
    let ts = |o: &mut Vec<u8>| {
        // RFC 7323 §3.2: kind 8, length 10, TSval, TSecr.
        o.extend_from_slice(&[kind::TIMESTAMPS, 10]);
        o.extend_from_slice(&t.ts_val.to_be_bytes());
        o.extend_from_slice(&t.ts_ecr.to_be_bytes());
    };
    if t.flags & SYN != 0 {
        // The order and padding Linux sends: MSS; SACK-permitted and timestamps together (or
        // two NOPs in place of SACK-permitted); NOP, window scale; SACK-permitted without
        // timestamps last, after two NOPs.
        o.extend_from_slice(&[kind::MSS, 4]); // RFC 9293 §3.2
        o.extend_from_slice(&t.mss.to_be_bytes());
        if t.timestamps {
            if t.sack_perm {
                o.extend_from_slice(&[kind::SACK_PERM, 2]); // RFC 2018 §2
            } else {
                o.extend_from_slice(&[kind::NOP, kind::NOP]);
            }
            ts(&mut o);
        }
        o.extend_from_slice(&[kind::NOP, kind::WSCALE, 3, t.wscale]); // RFC 7323 §2.2
        if t.sack_perm && !t.timestamps {
            o.extend_from_slice(&[kind::NOP, kind::NOP, kind::SACK_PERM, 2]);
        }
        if let Some(m) = &t.mptcp {
            o.extend(mptcp_option(m));
        }
        return o;
    }
    if t.timestamps {
        // Preceded by two NOPs so that the values are 4-byte aligned (RFC 7323 Appendix A).
        o.extend_from_slice(&[kind::NOP, kind::NOP]);
        ts(&mut o);
    }
    if t.nsack > 0 {
        // RFC 2018 §3: kind 5, length 2 + 8n.
        o.extend_from_slice(&[kind::NOP, kind::NOP, kind::SACK, 2 + 8 * t.nsack]);
        for &(s, e) in &t.sack[..t.nsack as usize] {
            o.extend_from_slice(&(s as u32).to_be_bytes());
            o.extend_from_slice(&(e as u32).to_be_bytes());
        }
    }
    if let Some(m) = &t.mptcp {
        o.extend(mptcp_option(m));
    }
    o
}

/// Serialises `p` to wire bytes (IPv4 + L4 + zero payload). The total length equals
/// `p.size_bytes` unless the headers the simulator accounted for are shorter than the real ones.
pub fn packet_bytes(p: &PacketData) -> Vec<u8> {
    // A real host's datagram is written as it is on this link (TTL and checksum as the routers
    // before it left them).
    if let L4::Real(r) = &p.l4 {
        return r.bytes.clone();
    }
    let src = p.src.octets();
    let dst = p.dst.octets();
    let (proto, mut l4): (u8, Vec<u8>) = match &p.l4 {
        L4::Udp(u) => (17, udp_bytes(u)),
        L4::Tcp(t) => (6, tcp_header_bytes(t)),
        // RSVP (IP protocol 46): session, sender and hop are carried in the message.
        L4::Rsvp(m) => (46, m.wire_bytes(|a| a.octets())),
        L4::Real(_) => unreachable!("written above"),
    };
    let opts: Vec<u8> = p.ip.tfd.as_ref().map(crate::ip::tfd::ipv4_options_area).unwrap_or_default();
    let ip_len = 20 + opts.len();
    let total = (p.size_bytes as usize).max(ip_len + l4.len());
    l4.resize(total - ip_len, 0);
    match &p.l4 {
        L4::Udp(_) => {
            let len = (l4.len() as u16).to_be_bytes();
            l4[4] = len[0];
            l4[5] = len[1];
            // UDP checksum 0: "no checksum" (RFC 768), valid over IPv4.
        }
        L4::Tcp(_) => {
            let pseudo = [&src[..], &dst[..], &[0, 6], &(l4.len() as u16).to_be_bytes()[..]].concat();
            let c = checksum(&[&pseudo, &l4]).to_be_bytes();
            l4[16] = c[0];
            l4[17] = c[1];
        }
        L4::Rsvp(_) | L4::Real(_) => {}
    }
    let mut ip = vec![0u8; 20];
    ip.extend_from_slice(&opts);
    ip[0] = 0x40 | (ip_len / 4) as u8;
    ip[1] = p.ip.dscp << 2 | p.ip.ecn.bits();
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&(p.seq_in_flow as u16).to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = if p.ip.ttl == 0 { 64 } else { p.ip.ttl };
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let c = checksum(&[&ip[..ip_len]]).to_be_bytes();
    ip[10] = c[0];
    ip[11] = c[1];
    ip.extend_from_slice(&l4);
    ip
}

fn udp_bytes(u: &UdpHdr) -> Vec<u8> {
    let mut b = Vec::with_capacity(20);
    b.extend_from_slice(&u.src_port.to_be_bytes());
    b.extend_from_slice(&u.dst_port.to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]);
    if let Some(r) = &u.rtp {
        b.push(0x80); // V=2, P=0, X=0, CC=0
        b.push(((r.marker as u8) << 7) | (r.payload_type & 0x7f));
        b.extend_from_slice(&r.seq.to_be_bytes());
        b.extend_from_slice(&r.timestamp.to_be_bytes());
        b.extend_from_slice(&r.ssrc.to_be_bytes());
    }
    b
}

fn tcp_header_bytes(t: &TcpHdr) -> Vec<u8> {
    let opts = tcp_options(t);
    let hlen = 20 + opts.len();
    let mut b = Vec::with_capacity(hlen);
    b.extend_from_slice(&t.src_port.to_be_bytes());
    b.extend_from_slice(&t.dst_port.to_be_bytes());
    b.extend_from_slice(&(t.seq as u32).to_be_bytes());
    b.extend_from_slice(&(t.ack as u32).to_be_bytes());
    b.push(((hlen / 4) as u8) << 4); // data offset, 32-bit words
    b.push(t.flags);
    // RFC 7323 §2.2: a SYN's window is never scaled; §2.3: the others carry wnd >> shift (the
    // shift the SYN announced). Above 65535 << 14 bytes the field saturates.
    let field = if t.flags & SYN != 0 { t.wnd } else { t.wnd >> t.wscale };
    b.extend_from_slice(&(field.min(0xffff) as u16).to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
    b.extend_from_slice(&opts);
    b
}

/// A pcap file being written.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&65535u32.to_le_bytes())?;
        out.write_all(&LINKTYPE_RAW.to_le_bytes())?;
        Ok(PcapWriter { out })
    }

    pub fn write(&mut self, now: SimTime, p: &PacketData) -> io::Result<()> {
        let bytes = packet_bytes(p);
        let secs = (now.0 / 1_000_000_000) as u32;
        let nanos = (now.0 % 1_000_000_000) as u32;
        self.out.write_all(&secs.to_le_bytes())?;
        self.out.write_all(&nanos.to_le_bytes())?;
        self.out.write_all(&(bytes.len() as u32).to_le_bytes())?;
        self.out.write_all(&(bytes.len() as u32).to_le_bytes())?;
        self.out.write_all(&bytes)
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::packet::{tcp_flags, Dir, IpHdr};
    use crate::queue::testutil::pkt;

    /// A TCP segment read back from the bytes [`packet_bytes`] wrote (IPv4 without options).
    #[derive(Debug)]
    pub(crate) struct Parsed {
        /// IP total length field.
        pub ip_len: usize,
        /// TCP header length (data offset × 4), bytes.
        pub hdr_len: usize,
        pub payload: usize,
        pub window: u16,
        /// Options in order as (kind, value bytes); NOP is (1, []).
        pub options: Vec<(u8, Vec<u8>)>,
    }

    impl Parsed {
        pub fn option(&self, kind: u8) -> Option<&[u8]> {
            self.options.iter().find(|o| o.0 == kind).map(|o| &o.1[..])
        }
        pub fn kinds(&self) -> Vec<u8> {
            self.options.iter().map(|o| o.0).collect()
        }
    }

    /// Parses and checks the IPv4 and TCP framing of `b`: lengths, IP and TCP checksums, and
    /// an options area that is well formed and ends exactly at the data offset.
    pub(crate) fn parse_tcp(b: &[u8]) -> Parsed {
        assert_eq!(b[0], 0x45, "IPv4, 20-byte header");
        assert_eq!(b[9], 6, "protocol TCP");
        let ip_len = u16::from_be_bytes([b[2], b[3]]) as usize;
        assert_eq!(ip_len, b.len(), "IP total length = bytes written");
        assert_eq!(checksum(&[&b[..20]]), 0, "IP header checksum");
        let t = &b[20..];
        let pseudo = [&b[12..20], &[0, 6], &(t.len() as u16).to_be_bytes()[..]].concat();
        assert_eq!(checksum(&[&pseudo, t]), 0, "TCP checksum");
        let hdr_len = (t[12] >> 4) as usize * 4;
        assert!((20..=60).contains(&hdr_len) && hdr_len <= t.len(), "data offset {hdr_len}");
        let mut options = vec![];
        let mut i = 20;
        while i < hdr_len {
            match t[i] {
                0 => panic!("end-of-list padding: the options area should be exactly filled"),
                1 => {
                    options.push((1, vec![]));
                    i += 1;
                }
                k => {
                    let len = t[i + 1] as usize;
                    assert!(len >= 2 && i + len <= hdr_len, "option {k} of length {len} at {i} overruns the header");
                    options.push((k, t[i + 2..i + len].to_vec()));
                    i += len;
                }
            }
        }
        Parsed { ip_len, hdr_len, payload: t.len() - hdr_len, window: u16::from_be_bytes([t[14], t[15]]), options }
    }

    pub(crate) fn tcp_packet(h: TcpHdr, size_bytes: u32) -> PacketData {
        PacketData {
            flow: 0,
            dir: Dir::Fwd,
            src: crate::node::Addr::primary(0),
            dst: crate::node::Addr::primary(1),
            seq_in_flow: 0,
            size_bytes,
            sent_at: SimTime::ZERO,
            hop: 0,
            route: crate::packet::NO_ROUTE,
            path: 0,
            ip: IpHdr::default(),
            l4: L4::Tcp(h),
            gro: None,
        }
    }

    #[test]
    fn syn_carries_linux_options_and_no_payload() {
        let syn = TcpHdr {
            src_port: 10001,
            dst_port: 5001,
            flags: tcp_flags::SYN,
            wnd: 4 << 20,
            wscale: 7,
            timestamps: true,
            sack_perm: true,
            mss: 1460,
            ts_val: 100_000,
            ..TcpHdr::default()
        };
        // 60 B: what the transport counts for a SYN with SACK and timestamps (see
        // `transport::tcp::tests::handshake_sizes_rtt_sample_and_initial_window`).
        let p = parse_tcp(&packet_bytes(&tcp_packet(syn.clone(), 60)));
        assert_eq!((p.ip_len, p.hdr_len, p.payload), (60, 40, 0));
        // MSS, SACK_PERM, TS, NOP, WSCALE: 4 + 2 + 10 + 1 + 3 = 20 bytes.
        assert_eq!(p.kinds(), [kind::MSS, kind::SACK_PERM, kind::TIMESTAMPS, kind::NOP, kind::WSCALE]);
        assert_eq!(p.option(kind::MSS), Some(&1460u16.to_be_bytes()[..]));
        assert_eq!(p.option(kind::WSCALE), Some(&[7u8][..]));
        assert_eq!(p.option(kind::TIMESTAMPS), Some(&[0, 1, 0x86, 0xa0, 0, 0, 0, 0][..]));
        assert_eq!(p.window, 65535, "RFC 7323 §2.2: a SYN's window is unscaled, at most 65535");

        // Without timestamps: MSS, NOP, WSCALE, NOP, NOP, SACK_PERM (12 bytes); without SACK
        // either: MSS, NOP, WSCALE (8 bytes).
        let p = parse_tcp(&packet_bytes(&tcp_packet(TcpHdr { timestamps: false, ts_val: 0, ..syn.clone() }, 52)));
        assert_eq!((p.hdr_len, p.payload), (32, 0));
        assert_eq!(p.kinds(), [kind::MSS, kind::NOP, kind::WSCALE, kind::NOP, kind::NOP, kind::SACK_PERM]);
        let bare = TcpHdr { timestamps: false, sack_perm: false, wnd: 60_000, wscale: 0, ..syn.clone() };
        let p = parse_tcp(&packet_bytes(&tcp_packet(bare, 48)));
        assert_eq!((p.hdr_len, p.payload, p.window), (28, 0, 60_000));
        assert_eq!(p.kinds(), [kind::MSS, kind::NOP, kind::WSCALE]);
        // Timestamps without SACK: two NOPs take SACK_PERM's place (20 bytes).
        let p = parse_tcp(&packet_bytes(&tcp_packet(TcpHdr { sack_perm: false, ..syn }, 60)));
        assert_eq!(p.kinds(), [kind::MSS, kind::NOP, kind::NOP, kind::TIMESTAMPS, kind::NOP, kind::WSCALE]);
    }

    #[test]
    fn ack_window_is_scaled_and_sack_blocks_follow_timestamps() {
        let mut ack = TcpHdr {
            flags: tcp_flags::ACK,
            seq: 1,
            ack: 1 + 10 * 1448,
            wnd: 4 << 20,
            wscale: 7,
            timestamps: true,
            nsack: 2,
            ..TcpHdr::default()
        };
        ack.sack[0] = (1 + 12 * 1448, 1 + 13 * 1448);
        ack.sack[1] = (1 + 14 * 1448, 1 + 16 * 1448);
        // 20 IP + 20 TCP + 12 timestamps + 2 NOPs + 2 + 2 × 8 SACK.
        let p = parse_tcp(&packet_bytes(&tcp_packet(ack, 72)));
        assert_eq!((p.hdr_len, p.payload), (52, 0));
        assert_eq!(p.kinds(), [kind::NOP, kind::NOP, kind::TIMESTAMPS, kind::NOP, kind::NOP, kind::SACK]);
        assert_eq!(p.option(kind::SACK).unwrap().len(), 16);
        assert_eq!(p.window, 32768, "RFC 7323 §2.3: 4 MiB >> 7");

        let data = TcpHdr {
            flags: tcp_flags::ACK,
            seq: 1,
            ack: 1,
            payload: 1448,
            wnd: 4 << 20,
            wscale: 7,
            ..TcpHdr::default()
        };
        let p = parse_tcp(&packet_bytes(&tcp_packet(data, 1488)));
        assert_eq!((p.hdr_len, p.payload, p.window), (20, 1448, 32768), "no options without timestamps");
    }

    #[test]
    fn ipv4_checksum_verifies_to_zero() {
        let p = pkt(3, 1278, 7);
        let b = packet_bytes(&p);
        assert_eq!(b.len(), 1278);
        assert_eq!(checksum(&[&b[..20]]), 0, "a header including its checksum sums to 0xffff");
        assert_eq!(u16::from_be_bytes([b[2], b[3]]), 1278);
        assert_eq!(b[9], 17);
        assert_eq!(u16::from_be_bytes([b[24], b[25]]), 1258, "UDP length = total - 20");
    }

    #[test]
    fn tfd_option_in_ipv4_header() {
        use crate::ip::tfd::{NextData, TfdFlags, TfdOption};
        let mut p = pkt(0, 1290, 0);
        p.ip.tfd = Some(TfdOption::new(TfdFlags::empty(), NextData::Bytes(1_500_000), 300).unwrap());
        p.ip.opt_bytes = 12;
        let b = packet_bytes(&p);
        assert_eq!(b.len(), 1290);
        assert_eq!(b[0], 0x48, "IHL = 8 words with 12 option bytes");
        assert_eq!(&b[20..22], &[0x9e, 12]);
        assert_eq!(checksum(&[&b[..32]]), 0);
        assert_eq!(u16::from_be_bytes([b[32], b[33]]), 1000, "UDP source port right after the options");
        assert_eq!(u16::from_be_bytes([b[36], b[37]]), 1290 - 32, "UDP length");
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example bytes: 00 01 f2 03 f4 f5 f6 f7 -> sum ddf2, checksum !ddf2.
        assert_eq!(checksum(&[&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]]), !0xddf2);
    }
}
