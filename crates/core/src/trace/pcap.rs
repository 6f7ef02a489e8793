//! pcap capture of a link direction, with real IPv4, UDP, TCP and RTP header bytes.
//!
//! Format: classic pcap with nanosecond timestamps (magic `0xa1b23c4d`), link type 101
//! (`LINKTYPE_RAW`: each record starts with the IP header). Payload bytes are zeros; lengths,
//! checksums, sequence numbers (low 32 bits), TCP options (timestamps, SACK) and RTP fields are
//! those the simulator used. Node `n` has address 10.0.0.0 + n + 1.

use crate::packet::{PacketData, TcpHdr, UdpHdr, L4};
use crate::time::SimTime;
use std::io::{self, Write};

pub const LINKTYPE_RAW: u32 = 101;

/// IPv4 address of node `n`.
pub fn node_addr(n: u32) -> [u8; 4] {
    (0x0a00_0000u32 + n + 1).to_be_bytes()
}

fn checksum(chunks: &[&[u8]]) -> u16 {
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

fn tcp_options(t: &TcpHdr) -> Vec<u8> {
    let mut o = Vec::with_capacity(40);
    // RFC 7323 timestamps, preceded by two NOPs for alignment.
    o.extend_from_slice(&[1, 1, 8, 10]);
    o.extend_from_slice(&t.ts_val.to_be_bytes());
    o.extend_from_slice(&t.ts_ecr.to_be_bytes());
    if t.nsack > 0 {
        // RFC 2018 §3: kind 5, length 2 + 8n.
        o.extend_from_slice(&[1, 1, 5, 2 + 8 * t.nsack]);
        for &(s, e) in &t.sack[..t.nsack as usize] {
            o.extend_from_slice(&(s as u32).to_be_bytes());
            o.extend_from_slice(&(e as u32).to_be_bytes());
        }
    }
    o
}

/// Serialises `p` to wire bytes (IPv4 + L4 + zero payload). The total length equals
/// `p.size_bytes` unless the headers the simulator accounted for are shorter than the real ones.
pub fn packet_bytes(p: &PacketData) -> Vec<u8> {
    let src = node_addr(p.src);
    let dst = node_addr(p.dst);
    let (proto, mut l4): (u8, Vec<u8>) = match &p.l4 {
        L4::Udp(u) => (17, udp_bytes(u)),
        L4::Tcp(t) => (6, tcp_header_bytes(t)),
        // RSVP (IP protocol 46): session, sender and hop are carried in the message.
        L4::Rsvp(m) => (46, m.wire_bytes(|a| node_addr(crate::ip::node(a)))),
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
        L4::Rsvp(_) => {}
    }
    let mut ip = vec![0u8; 20];
    ip.extend_from_slice(&opts);
    ip[0] = 0x40 | (ip_len / 4) as u8;
    ip[1] = p.ip.dscp << 2;
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
    b.push(((hlen / 4) as u8) << 4);
    b.push(t.flags);
    // Window field: the advertised window right-shifted by a scale of 7 (RFC 7323), as the
    // simulator's windows exceed 16 bits.
    b.extend_from_slice(&((t.wnd >> 7).min(0xffff) as u16).to_be_bytes());
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
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;

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
