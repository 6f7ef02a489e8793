//! Packets and the header fields the simulator acts on.
//!
//! A `Packet` carries the fields of real IPv4/IPv6, UDP, TCP and RTP headers that any model
//! reads or that the pcap writer needs to produce real bytes. `size_bytes` is the IP datagram
//! length (IP header + options + transport header + payload): the number a link serialises.
//! Payload bytes of simulated packets are not carried; a packet of a real host (emulation,
//! [`crate::real`]) carries all its bytes in [`L4::Real`].

pub use crate::ip::{FlowKey, IPV4_HEADER, IPV6_HEADER};
pub use crate::node::{Addr, NodeId, PortId};
use crate::time::SimTime;

pub type FlowId = u32;

/// [`PacketData::route`] of a packet forwarded by destination address.
pub const NO_ROUTE: u32 = u32::MAX;

pub const UDP_HEADER: u32 = 8;
pub const TCP_HEADER: u32 = 20;
pub const RTP_HEADER: u32 = 12;

/// Which way a packet travels within its flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the flow's source to its destination (data).
    Fwd,
    /// From the destination back to the source (ACKs, feedback).
    Rev,
}

/// IP-layer fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IpHdr {
    pub v6: bool,
    /// DiffServ code point (6 bits).
    pub dscp: u8,
    /// ECN field (RFC 3168 §5): the TOS byte's low 2 bits, below the DSCP.
    pub ecn: Ecn,
    pub ttl: u8,
    /// Length of IP options (IPv4) or extension headers (IPv6) in bytes, included in
    /// `Packet::size_bytes`.
    pub opt_bytes: u16,
    /// The Traffic Flow Description option, if the sender attached one (IPv4 option / IPv6
    /// hop-by-hop option; see [`crate::ip::tfd`]). Its bytes are counted in `opt_bytes`.
    pub tfd: Option<crate::ip::tfd::TfdOption>,
}

/// The ECN field of the IP header (RFC 3168 §5). Senders that are not ECN-capable send
/// `NotEct`, the default; an ECN-capable transport sends `Ect0`; an AQM marks congestion by
/// rewriting ECT(0) or ECT(1) to `Ce` instead of dropping ([`crate::queue::QueueCtx::mark_ce`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// 00: the transport does not understand ECN.
    #[default]
    NotEct = 0,
    /// 01: ECN-capable transport, codepoint ECT(1) (L4S, RFC 9331).
    Ect1 = 1,
    /// 10: ECN-capable transport, codepoint ECT(0) (RFC 3168).
    Ect0 = 2,
    /// 11: Congestion Experienced.
    Ce = 3,
}

impl Ecn {
    /// The 2 bits as carried in the TOS / Traffic Class byte.
    pub fn bits(self) -> u8 {
        self as u8
    }
    /// The codepoint of the TOS byte's low 2 bits.
    pub fn from_tos(tos: u8) -> Ecn {
        match tos & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// ECT(0), ECT(1) or CE: the packet's transport understands ECN (RFC 3168 §5).
    pub fn capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// RTP fixed-header fields (RFC 3550 §5.1).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RtpHdr {
    pub seq: u16,
    /// Media timestamp in clock units (90 kHz for video).
    pub timestamp: u32,
    pub ssrc: u32,
    pub marker: bool,
    pub payload_type: u8,
}

/// What an application datagram belongs to, for per-packet video logs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MediaTag {
    /// Decode-order frame number (-1 if not media).
    pub frame: i64,
    /// NAL-unit index in the sender trace (-1 if not media).
    pub nal: i64,
}

impl Default for MediaTag {
    fn default() -> Self {
        MediaTag { frame: -1, nal: -1 }
    }
}

/// UDP datagram fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UdpHdr {
    pub src_port: u16,
    pub dst_port: u16,
    pub rtp: Option<RtpHdr>,
    pub media: MediaTag,
    /// The TFRC header inside the datagram, if the flow runs TFRC (RFC 5348; its bytes are
    /// counted in the packet's size by the transport).
    pub tfrc: Option<TfrcHdr>,
}

/// The TFRC header fields a packet carries inside its UDP datagram (RFC 5348 §3.2; sizes and
/// the transport in `transport::tfrc`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum TfrcHdr {
    /// Sender → receiver (RFC 5348 §3.2.1).
    Data {
        /// Sequence number, from 0, one per data packet.
        seq: u64,
        /// When the sender sent it.
        ts: SimTime,
        /// The sender's RTT estimate R, ns (0 before the first sample).
        rtt_ns: u64,
        /// Application payload, bytes (what `s` and `X_recv` count).
        payload: u32,
    },
    /// Receiver → sender (RFC 5348 §3.2.2).
    Feedback {
        /// Timestamp of the last data packet received.
        ts_echo: SimTime,
        /// Time between that packet's arrival and this feedback, ns.
        t_delay_ns: u64,
        /// Receive rate since the previous feedback, payload bytes per second.
        x_recv: f64,
        /// Loss event rate (0 before the first loss).
        p: f64,
    },
}

pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// Up to this many SACK blocks fit beside the timestamp option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// TCP segment fields. Sequence numbers are 64-bit and never wrap inside the simulator; the
/// pcap writer emits their low 32 bits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpHdr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u64,
    pub ack: u64,
    pub flags: u8,
    /// Advertised receive window in bytes, unscaled: the window the peer's sender uses. On the
    /// wire a SYN carries `min(wnd, 65535)` and every other segment `wnd >> wscale` (RFC 7323
    /// §2.2–2.3).
    pub wnd: u32,
    /// Window-scale shift of the segment's sender (RFC 7323 §2.3, 0..=14): announced in the
    /// window scale option of a SYN, applied to the window field of every other segment.
    pub wscale: u8,
    /// The segment carries the timestamp option (RFC 7323 §3) with `ts_val` and `ts_ecr`.
    pub timestamps: bool,
    /// A SYN carries the SACK-permitted option (RFC 2018 §2).
    pub sack_perm: bool,
    /// MSS option of a SYN (RFC 9293 §3.7.1), bytes; 0 on other segments.
    pub mss: u16,
    /// Payload length in bytes.
    pub payload: u32,
    /// SACK blocks `[start, end)`, the first `nsack` valid.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// Timestamp option (RFC 7323), in microseconds of simulated time; 0 without `timestamps`.
    pub ts_val: u32,
    pub ts_ecr: u32,
    /// The segment's MPTCP option (RFC 8684 §3), on the subflows of an MPTCP connection;
    /// `None` on plain TCP (boxed, so plain TCP pays one pointer).
    pub mptcp: Option<Box<MptcpOption>>,
}

/// One DSS mapping (RFC 8684 §3.3.1): `len` bytes from subflow sequence number `ssn` carry the
/// connection's bytes from data sequence number `dsn`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DssMap {
    pub dsn: u64,
    pub ssn: u64,
    pub len: u64,
}

/// The MPTCP option (TCP option kind 30) a segment carries, by subtype (RFC 8684 §3).
/// Keys, tokens, nonces and HMACs are opaque numbers here: their cryptography is not modelled,
/// only their bytes on the wire.
#[derive(Clone, Debug, PartialEq)]
pub enum MptcpOption {
    /// MP_CAPABLE (§3.1) on the first subflow's SYN (4 bytes), SYN-ACK (12, the receiver's key)
    /// and third ACK (20, both keys).
    Capable { keys: [Option<u64>; 2] },
    /// MP_JOIN (§3.2) on another subflow's SYN (12: token and nonce), SYN-ACK (16: truncated
    /// HMAC and nonce) and third ACK (24: HMAC).
    Join { stage: u8, addr_id: u8, token: u32, nonce: u32, hmac: u64 },
    /// DSS (§3.3): a DATA_ACK (64-bit) and/or the mappings of the segment's payload. A segment
    /// carries one mapping on the wire; a retransmission that spans two mappings carries both
    /// here (Linux never builds one: its MPTCP skbs are not collapsed).
    Dss { data_ack: Option<u64>, maps: Vec<DssMap> },
}

impl MptcpOption {
    /// Bytes of the option as sent (before padding): RFC 8684 §3.1, §3.2, §3.3 (64-bit
    /// DATA_ACK and DSN, no checksum).
    pub fn wire_len(&self) -> u32 {
        match self {
            MptcpOption::Capable { keys: [None, _] } => 4,
            MptcpOption::Capable { keys: [Some(_), None] } => 12,
            MptcpOption::Capable { .. } => 20,
            MptcpOption::Join { stage: 0, .. } => 12,
            MptcpOption::Join { stage: 1, .. } => 16,
            MptcpOption::Join { .. } => 24,
            MptcpOption::Dss { data_ack, maps } => {
                4 + if data_ack.is_some() { 8 } else { 0 } + if maps.is_empty() { 0 } else { 14 }
            }
        }
    }
    /// [`wire_len`](Self::wire_len) padded to a multiple of 4 bytes (NOPs), what the segment's
    /// size counts.
    pub fn padded_len(&self) -> u32 {
        self.wire_len().div_ceil(4) * 4
    }
}

/// Transport-layer part of a packet.
#[derive(Clone, Debug, PartialEq)]
pub enum L4 {
    Udp(UdpHdr),
    Tcp(TcpHdr),
    /// An RSVP message (IP protocol 46) of the flow it reserves for. The world handles it at
    /// each node and never counts it in the flow's data statistics.
    Rsvp(crate::ip::rsvp::RsvpMsg),
    /// A datagram of a real host, with its bytes (see [`crate::real`]).
    Real(Box<RealHdr>),
}

/// A real host's IPv4 datagram: the transport fields models read, parsed from its headers, and
/// the datagram's bytes, which the simulator carries unchanged but for what routers change
/// (TTL and header checksum, [`crate::real`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealHdr {
    /// IANA protocol number (the IPv4 header's Protocol field).
    pub proto: u8,
    /// TCP or UDP ports; 0 for other protocols and for fragments after the first.
    pub src_port: u16,
    pub dst_port: u16,
    /// The whole IPv4 datagram, header first (`PacketData::size_bytes` long).
    pub bytes: Vec<u8>,
}

/// A packet in the network, boxed: queues, delay lines and the forwarding path move an
/// 8-byte pointer instead of the ~160 bytes of [`PacketData`] (the copies were 13 % of a TFD
/// cell's instructions and most of its cache write misses; see docs/performance.md). Fields are
/// read through `Deref` as if the packet were the struct itself.
pub type Packet = Box<PacketData>;

/// The fields of a packet.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketData {
    /// The flow the packet belongs to: the world's bookkeeping for per-flow statistics (never
    /// used to forward or deliver it; routers and hosts read addresses and ports).
    pub flow: FlowId,
    pub dir: Dir,
    /// Source and destination IPv4 addresses ([`crate::node`]).
    pub src: Addr,
    pub dst: Addr,
    /// Index of this packet among the flow's packets in this direction (0-based).
    pub seq_in_flow: u64,
    /// IP datagram length in bytes.
    pub size_bytes: u32,
    /// When the transport handed the packet to the network.
    pub sent_at: SimTime,
    /// Hops taken so far (index into an explicit route).
    pub hop: u16,
    /// An explicit route the packet carries (a source route: the world's route number
    /// `route`, a list of ports, one per hop), or [`NO_ROUTE`] to be forwarded by destination
    /// address.
    pub route: u32,
    /// Sub-path of the flow (MPTCP subflow or route index); 0 for single-path flows.
    pub path: u8,
    pub ip: IpHdr,
    pub l4: L4,
    /// The segments GRO merged into this packet, in sequence order, if it is an aggregate
    /// ([`crate::link::gro`]); `None` for every packet a host sends.
    pub gro: Option<Box<Vec<Packet>>>,
}

impl L4 {
    /// The IANA protocol number of this payload.
    #[inline]
    pub fn protocol(&self) -> u8 {
        match self {
            L4::Tcp(_) => crate::ip::proto::TCP,
            L4::Udp(_) => crate::ip::proto::UDP,
            L4::Rsvp(_) => crate::ip::proto::RSVP,
            L4::Real(r) => r.proto,
        }
    }
    /// The transport's (source, destination) ports; `None` for RSVP, which has none.
    #[inline]
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self {
            L4::Tcp(t) => Some((t.src_port, t.dst_port)),
            L4::Udp(u) => Some((u.src_port, u.dst_port)),
            L4::Real(r) => Some((r.src_port, r.dst_port)),
            L4::Rsvp(_) => None,
        }
    }
}

impl PacketData {
    pub fn tcp(&self) -> Option<&TcpHdr> {
        match &self.l4 {
            L4::Tcp(t) => Some(t),
            _ => None,
        }
    }
    pub fn rsvp(&self) -> Option<&crate::ip::rsvp::RsvpMsg> {
        match &self.l4 {
            L4::Rsvp(m) => Some(m),
            _ => None,
        }
    }
    pub fn udp(&self) -> Option<&UdpHdr> {
        match &self.l4 {
            L4::Udp(u) => Some(u),
            _ => None,
        }
    }
    /// Marks Congestion Experienced (RFC 3168 §5) if the packet is ECN-capable and returns
    /// whether it is (then the caller must not drop it). A real host's datagram gets the new
    /// codepoint in its TOS byte and its header checksum updated ([`set_ecn`]).
    pub fn set_ce(&mut self) -> bool {
        if !self.ip.ecn.capable() {
            return false;
        }
        self.ip.ecn = Ecn::Ce;
        if let L4::Real(r) = &mut self.l4 {
            set_ecn(&mut r.bytes, Ecn::Ce);
        }
        true
    }
    /// Re-marks the DiffServ code point (RFC 2474 §3; a policer's re-mark, RFC 2697 §4). A
    /// real host's datagram gets the new code point in its TOS byte and its header checksum
    /// updated, as [`set_ecn`] does for the ECN bits.
    pub fn set_dscp(&mut self, dscp: crate::ip::dscp::Dscp) {
        self.ip.dscp = dscp.value();
        if let L4::Real(r) = &mut self.l4 {
            let b = &mut r.bytes;
            let old = u16::from_be_bytes([b[0], b[1]]);
            b[1] = (dscp.value() << 2) | (b[1] & 3);
            let new = u16::from_be_bytes([b[0], b[1]]);
            update_ipv4_checksum(b, old, new);
        }
    }
    /// Size of the IP header including options/extension headers.
    pub fn ip_header_bytes(&self) -> u32 {
        (if self.ip.v6 { IPV6_HEADER } else { IPV4_HEADER }) + self.ip.opt_bytes as u32
    }
}

/// Rewrites the ECN field (the TOS byte's low 2 bits, RFC 3168 §5) of IPv4 datagram `b` to
/// `ecn` and updates its header checksum incrementally: what an AQM does when it marks CE.
pub fn set_ecn(b: &mut [u8], ecn: Ecn) {
    let old = u16::from_be_bytes([b[0], b[1]]);
    b[1] = (b[1] & !3) | ecn.bits();
    update_ipv4_checksum(b, old, u16::from_be_bytes([b[0], b[1]]));
}

/// RFC 1624 eqn. 3: the IPv4 header checksum of datagram `b` after one 16-bit word of its
/// header changed from `old` to `new`.
pub(crate) fn update_ipv4_checksum(b: &mut [u8], old: u16, new: u16) {
    let hc = u16::from_be_bytes([b[10], b[11]]);
    let mut sum = (!hc) as u32 + (!old) as u32 + new as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    b[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}
