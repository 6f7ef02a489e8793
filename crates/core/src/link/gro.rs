//! Generic Receive Offload on a node's receiving interface (a link's `a_gro` / `b_gro`), with
//! the segmentation (GSO) that undoes it where the merged packet leaves.
//!
//! Reading list: Linux `net/core/dev.c` (2.6.29–3.6: `dev_gro_receive`, `napi_gro_flush`,
//! `napi_complete`; later `net/core/gro.c`), `net/ipv4/af_inet.c` `inet_gro_receive`,
//! `net/ipv4/tcp.c` / `tcp_offload.c` `tcp_gro_receive`, `net/core/skbuff.c`
//! `skb_gro_receive` (the 64 KB limit), `net/core/dev.c` `qdisc_pkt_len_init` (how a
//! discipline counts a merged packet's bytes), `drivers/net/e1000e/netdev.c`
//! `e1000_update_itr` (interrupt throttling).
//!
//! A NIC driver with NAPI does not hand each received frame to the stack: an interrupt
//! schedules a poll, and the poll takes every frame waiting in the receive ring. GRO merges the
//! TCP segments of one connection that follow each other in that batch into one large packet,
//! which is then routed, queued and scheduled as **one** packet: a discipline with a limit in
//! packets, SQF's queue lengths, LQD's push-out and DRR's rounds all see the aggregate, and
//! its bytes are all its segments' bytes (headers included, as `qdisc_pkt_len_init` counts a
//! GSO packet). Where it leaves the router the transmitter segments it again (GSO), and the
//! link carries the original MTU-sized segments back to back.
//!
//! ## The model
//! - **Polls.** The interface is polled at most once every `poll` (the NIC's interrupt
//!   throttle): a packet that arrives when the last poll is at least `poll` old is polled at
//!   once; otherwise it waits in the receive ring for the poll at `last poll + poll`, which
//!   takes everything that arrived meanwhile. A poll takes no simulated time and always empties
//!   the ring (NAPI's budget of 64 only splits a batch into polls that follow each other at
//!   once, and a 2011 kernel did not flush GRO between them), and ends by flushing every
//!   aggregate it holds (`napi_complete` → `napi_gro_flush`), oldest first: nothing is held
//!   from one poll to the next. The wait in the ring delays every packet the interface
//!   receives, TCP or not, as interrupt throttling does.
//! - **Merge** (`tcp_gro_receive`): a TCP segment joins the aggregate held for its connection
//!   (same addresses, protocol and ports) if its sequence number follows the aggregate's last
//!   byte; its payload is not empty and at most the first segment's (the aggregate's `mss`);
//!   its flags equal the first's but for CWR, FIN and PSH, and it carries no CWR; its
//!   acknowledgement number, window and options (timestamps, SACK blocks) equal the first's
//!   (timestamps compared per millisecond, [`TS_TICK_US`]: a Linux sender's clock ticks once
//!   per jiffy, the simulator's TCP stamps microseconds);
//!   its IP header equals the first's (TTL, DSCP, ECN; `inet_gro_receive`); and the merged
//!   datagram stays within `max_bytes` (`skb_gro_receive`: below 64 KiB). A segment that
//!   merges and is shorter than `mss`, or carries PSH, URG, RST, SYN or FIN, ends the
//!   aggregate: it is flushed at once. A TCP packet of the connection that does not merge
//!   flushes the held aggregate and is then treated as a first segment: held as a new
//!   aggregate if it has a payload and none of those flags, else passed on at once. At most
//!   eight aggregates are held (`MAX_GRO_SKBS`); a ninth connection's segments pass unmerged,
//!   as in 2011 kernels (later ones flush the oldest instead).
//! - **Not merged**: UDP (UDP GRO came in Linux 5.0), packets with IP options (including the
//!   TFD option) or an MPTCP option, real hosts' datagrams.
//! - **Egress**: the discipline dequeues the aggregate as one packet; the transmitter then
//!   serialises its segments back to back, each with its own headers, and each gets the
//!   aggregate's IP header (a discipline's CE mark, a classifier's DSCP) and hop count, as GSO
//!   copies the header into every segment. A drop of the aggregate loses all its segments.
//!
//! Not modelled: the poll's CPU time, the driver's adaptive change of its throttle rate,
//! GRO's hold across polls in kernels since 3.7 (`gro_flush_timeout`, flushing packets older
//! than a jiffy), the segments' descriptors in a transmit ring (an aggregate takes one), TBF's
//! segmentation of a GSO packet larger than its bucket (Linux 3.11). See `docs/models/gro.md`.

use crate::packet::{tcp_flags, Packet, PacketData, TcpHdr, L4};
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Most aggregates one interface holds at a time (`MAX_GRO_SKBS`).
pub const MAX_HELD: usize = 8;
/// The largest merged IP datagram: the IPv4 total-length field's range (`skb_gro_receive`
/// refuses to reach 65,536).
pub const MAX_DATAGRAM: u64 = 65_535;
/// The longest poll interval a scenario may declare.
pub const MAX_POLL: Dur = Dur::from_millis(100);
/// The tick of a Linux sender's timestamp clock, µs: one jiffy at HZ = 1000 (the simulator's
/// TCP stamps microseconds, so two segments a Linux sender would stamp alike are compared at
/// this granularity; GRO requires equal timestamp options).
pub const TS_TICK_US: u32 = 1000;
/// URG, which the simulator never sets, ends an aggregate as PSH does.
const URG: u8 = 0x20;

/// `a_gro` / `b_gro` of a link: GRO on that end's receiving interface. See the module
/// [`crate::link::gro`] and `docs/models/gro.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroConfig {
    /// Shortest time between two polls of the interface: the NIC's interrupt throttle, during
    /// which received packets wait in its ring (0 s: every packet is polled on arrival, and
    /// nothing merges). Default `"50us"`: e1000/e1000e's dynamic throttle in its
    /// low-latency class, 20,000 interrupts/s; its bulk class is 4,000/s (`"250us"`).
    #[serde(default = "default_poll", with = "serde_units::time")]
    pub poll: Dur,
    /// Largest merged IP datagram (one IP and TCP header and the merged payloads), 68 B to
    /// 65,535 B; default `"65535B"`, the 64 KB limit of `skb_gro_receive`.
    #[serde(default = "default_max_bytes", with = "serde_units::bytes")]
    pub max_bytes: u64,
}

fn default_poll() -> Dur {
    Dur::from_micros(50)
}
fn default_max_bytes() -> u64 {
    MAX_DATAGRAM
}

impl Default for GroConfig {
    fn default() -> Self {
        GroConfig { poll: default_poll(), max_bytes: default_max_bytes() }
    }
}

impl GroConfig {
    /// The key (relative to the `*_gro` table) and reason of an invalid value.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.poll > MAX_POLL {
            return Err(("poll", format!("must be at most 100ms, got {} ns", self.poll.as_nanos())));
        }
        if !(68..=MAX_DATAGRAM).contains(&self.max_bytes) {
            return Err(("max_bytes", format!("must be 68..={MAX_DATAGRAM} bytes, got {}", self.max_bytes)));
        }
        Ok(())
    }
}

/// An aggregate being built: its segments in sequence order, the first one's fields that
/// later ones must match.
struct Held {
    segs: Vec<Packet>,
    /// Sequence number of the byte after the last merged one.
    next_seq: u64,
    /// The first segment's payload: no later one may be longer (`gso_size`).
    mss: u32,
    /// FIN and PSH of merged segments (the kernel ORs them into the aggregate's header).
    flags: u8,
    /// Length of the merged datagram: the first segment's plus the later payloads.
    datagram: u64,
}

/// The TCP header of a packet GRO may merge: a simulated TCP segment without IP options or an
/// MPTCP option.
fn mergeable(p: &PacketData) -> Option<&TcpHdr> {
    match &p.l4 {
        L4::Tcp(t) if t.mptcp.is_none() && p.ip.opt_bytes == 0 && p.ip.tfd.is_none() => Some(t),
        _ => None,
    }
}

/// The same connection: addresses and ports (the protocol is TCP for both).
fn same_connection(a: &PacketData, b: &PacketData) -> bool {
    let (Some(x), Some(y)) = (a.tcp(), b.tcp()) else { return false };
    a.src == b.src && a.dst == b.dst && x.src_port == y.src_port && x.dst_port == y.dst_port
}

/// Flags that end an aggregate (`tcp_gro_receive`'s `out_check_final`).
const FINAL: u8 = URG | tcp_flags::PSH | tcp_flags::RST | tcp_flags::SYN | tcp_flags::FIN;

impl Held {
    fn new(p: Packet) -> Held {
        let t = p.tcp().expect("GRO holds TCP segments");
        let (next_seq, mss, flags, datagram) = (t.seq + t.payload as u64, t.payload, t.flags, p.size_bytes as u64);
        Held { segs: vec![p], next_seq, mss, flags, datagram }
    }

    /// Whether segment `p` (header `t`) may join this aggregate (`tcp_gro_receive`'s flush
    /// conditions, `inet_gro_receive`'s IP header match, `skb_gro_receive`'s size limit).
    fn takes(&self, p: &PacketData, t: &TcpHdr, max_bytes: u64) -> bool {
        let first = &self.segs[0];
        let f = first.tcp().expect("a held aggregate is TCP");
        let ignored = tcp_flags::CWR | tcp_flags::FIN | tcp_flags::PSH;
        t.flags & tcp_flags::CWR == 0
            && (t.flags ^ f.flags) & !ignored == 0
            && t.ack == f.ack
            && t.wnd == f.wnd
            && t.wscale == f.wscale
            && (t.timestamps, t.ts_val / TS_TICK_US, t.ts_ecr / TS_TICK_US)
                == (f.timestamps, f.ts_val / TS_TICK_US, f.ts_ecr / TS_TICK_US)
            && t.nsack == f.nsack
            && t.sack[..t.nsack as usize] == f.sack[..f.nsack as usize]
            && p.ip == first.ip
            && t.payload >= 1
            && t.payload <= self.mss
            && t.seq == self.next_seq
            && self.datagram + t.payload as u64 <= max_bytes
    }

    fn push(&mut self, p: Packet, t_seq: u64, payload: u32, flags: u8) {
        self.next_seq = t_seq + payload as u64;
        self.datagram += payload as u64;
        self.flags |= flags & (tcp_flags::FIN | tcp_flags::PSH);
        self.segs.push(p);
    }

    /// The packet the stack sees: the one segment itself, or an aggregate of all of them.
    fn finish(self) -> Packet {
        let Held { mut segs, flags, .. } = self;
        if segs.len() == 1 {
            return segs.pop().expect("one segment");
        }
        aggregate(segs, flags)
    }
}

/// The packet a discipline sees for `segs` (≥ 2 contiguous segments of one connection): the
/// first segment's fields, its payload and size the sum of all (the size counts every
/// segment's headers, as `qdisc_pkt_len_init` does for a GSO packet), its flags `flags`, and
/// the segments themselves in [`PacketData::gro`].
fn aggregate(segs: Vec<Packet>, flags: u8) -> Packet {
    let mut head = segs[0].clone();
    head.size_bytes = segs.iter().map(|s| s.size_bytes).sum();
    if let L4::Tcp(t) = &mut head.l4 {
        t.payload = segs.iter().map(|s| s.tcp().map_or(0, |t| t.payload)).sum();
        t.flags = flags;
    }
    head.gro = Some(Box::new(segs));
    head
}

/// The segments of `p` as they leave a transmitter (GSO): the segments of an aggregate, each
/// with the aggregate's IP header and hop count; any other packet itself.
pub fn segments(mut p: Packet) -> SegmentsIter {
    match p.gro.take() {
        None => SegmentsIter::One(Some(p)),
        Some(segs) => {
            let (ip, hop) = (p.ip.clone(), p.hop);
            let mut segs = *segs;
            for s in &mut segs {
                s.ip = ip.clone();
                s.hop = hop;
            }
            SegmentsIter::Many(segs.into_iter())
        }
    }
}

/// The packets [`segments`] gives.
pub enum SegmentsIter {
    One(Option<Packet>),
    Many(std::vec::IntoIter<Packet>),
}

impl Iterator for SegmentsIter {
    type Item = Packet;
    fn next(&mut self) -> Option<Packet> {
        match self {
            SegmentsIter::One(p) => p.take(),
            SegmentsIter::Many(it) => it.next(),
        }
    }
}

/// Visits `p`'s segments if it is an aggregate, else `p`.
pub fn for_each_segment(p: &PacketData, f: &mut dyn FnMut(&PacketData)) {
    match &p.gro {
        Some(segs) => segs.iter().for_each(|s| f(s)),
        None => f(p),
    }
}

/// The receive side of one interface: its ring, its poll times and GRO's merge.
pub struct Gro {
    cfg: GroConfig,
    /// Packets received since the last poll, in arrival order.
    ring: VecDeque<Packet>,
    /// When the interface was last polled (`None`: never).
    last_poll: Option<SimTime>,
    /// A poll is scheduled at this time.
    pending: Option<SimTime>,
    /// Packets this interface received and aggregates it passed on (for results).
    pub stats: GroStats,
}

/// What one interface's GRO did, cumulative over the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroStats {
    /// Packets the interface received.
    pub rx_pkts: u64,
    /// Polls.
    pub polls: u64,
    /// Aggregates of two or more segments passed on, and the segments in them.
    pub aggregates: u64,
    pub merged_segments: u64,
}

/// What the world must do after a packet reached a GRO interface.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Poll now ([`Gro::poll`]).
    PollNow,
    /// Schedule a poll at this time.
    PollAt(SimTime),
    /// A poll is already scheduled: nothing.
    Wait,
}

impl Gro {
    pub fn new(cfg: GroConfig) -> Gro {
        Gro { cfg, ring: VecDeque::new(), last_poll: None, pending: None, stats: GroStats::default() }
    }

    /// Packet `p` reaches the interface at `now`: into the ring, and when to poll.
    pub fn arrive(&mut self, now: SimTime, p: Packet) -> Arrival {
        self.stats.rx_pkts += 1;
        self.ring.push_back(p);
        if self.pending.is_some() {
            return Arrival::Wait;
        }
        let due = self.last_poll.map_or(now, |t| (t + self.cfg.poll).max(now));
        self.pending = Some(due);
        if due == now {
            Arrival::PollNow
        } else {
            Arrival::PollAt(due)
        }
    }

    /// The poll scheduled at `now`: merges the ring's packets and appends what the stack
    /// receives to `out`, in the order the kernel passes it on. A stale call (no poll due at
    /// `now`) does nothing.
    pub fn poll(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        if self.pending != Some(now) {
            return;
        }
        self.pending = None;
        self.last_poll = Some(now);
        self.stats.polls += 1;
        let mut held: Vec<Held> = Vec::new();
        while let Some(p) = self.ring.pop_front() {
            self.receive(p, &mut held, out);
        }
        for h in held {
            self.pass(h, out);
        }
    }

    fn pass(&mut self, h: Held, out: &mut Vec<Packet>) {
        if h.segs.len() > 1 {
            self.stats.aggregates += 1;
            self.stats.merged_segments += h.segs.len() as u64;
        }
        out.push(h.finish());
    }

    /// One packet of the poll's batch (`dev_gro_receive`).
    fn receive(&mut self, p: Packet, held: &mut Vec<Held>, out: &mut Vec<Packet>) {
        let mine = held.iter().position(|h| same_connection(&h.segs[0], &p));
        let Some(t) = mergeable(&p) else {
            // Not GRO's: passed on, after the connection's aggregate if one is held (a pure
            // ACK, for one, ends it).
            if let Some(i) = mine {
                let h = held.remove(i);
                self.pass(h, out);
            }
            out.push(p);
            return;
        };
        let (seq, payload, flags) = (t.seq, t.payload, t.flags);
        if let Some(i) = mine {
            if held[i].takes(&p, t, self.cfg.max_bytes) {
                let ends = payload < held[i].mss || flags & FINAL != 0;
                held[i].push(p, seq, payload, flags);
                if ends {
                    let h = held.remove(i);
                    self.pass(h, out);
                }
                return;
            }
            let h = held.remove(i);
            self.pass(h, out);
        }
        if payload == 0 || flags & FINAL != 0 || held.len() >= MAX_HELD {
            out.push(p);
        } else {
            held.push(Held::new(p));
        }
    }

    /// Visits every packet waiting in the ring.
    pub fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.ring.iter().for_each(|p| f(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Addr;
    use crate::packet::{Dir, IpHdr, NO_ROUTE};

    const MSS: u32 = 1448;
    /// IP (20) + TCP (20) + timestamps (12).
    const HDR: u32 = 52;

    /// A segment of connection `conn` (its source port) carrying bytes `[seq, seq + payload)`.
    fn seg(conn: u16, seq: u64, payload: u32, flags: u8) -> Packet {
        let t = TcpHdr {
            src_port: conn,
            dst_port: 80,
            seq,
            ack: 1,
            flags: tcp_flags::ACK | flags,
            wnd: 65535,
            timestamps: true,
            ts_val: 7,
            ts_ecr: 3,
            payload,
            ..Default::default()
        };
        Box::new(PacketData {
            flow: conn as u32,
            dir: Dir::Fwd,
            src: Addr(1),
            dst: Addr(2),
            seq_in_flow: seq / MSS as u64,
            size_bytes: HDR + payload,
            sent_at: SimTime(0),
            hop: 1,
            route: NO_ROUTE,
            path: 0,
            ip: IpHdr { ttl: 64, ..Default::default() },
            l4: L4::Tcp(t),
            gro: None,
        })
    }

    fn full(conn: u16, k: u64) -> Packet {
        seg(conn, k * MSS as u64, MSS, 0)
    }

    /// One poll over `pkts` (all arrived before it): what the stack receives.
    fn one_poll(cfg: GroConfig, pkts: Vec<Packet>) -> Vec<Packet> {
        let mut g = Gro::new(cfg);
        let mut first = true;
        for p in pkts {
            // The first arrival at an idle interface is polled at once: hold the poll back by
            // arriving after a poll at t = 0, so that all of them wait for the one at `poll`.
            if first {
                g.last_poll = Some(SimTime(0));
                first = false;
            }
            g.arrive(SimTime(1), p);
        }
        let mut out = Vec::new();
        g.poll(g.pending.expect("a poll is scheduled"), &mut out);
        out
    }

    /// Each packet the stack receives as (connection, first sequence number, segments).
    fn shape(out: &[Packet]) -> Vec<(u16, u64, usize)> {
        out.iter()
            .map(|p| {
                let t = p.tcp().unwrap();
                (t.src_port, t.seq, p.gro.as_ref().map_or(1, |s| s.len()))
            })
            .collect()
    }

    #[test]
    fn contiguous_segments_of_one_connection_become_one_packet_that_counts_every_header() {
        let out = one_poll(GroConfig::default(), (0..5).map(|k| full(9, k)).collect());
        assert_eq!(shape(&out), vec![(9, 0, 5)]);
        let a = &out[0];
        // The discipline sees one packet of 5 × 1,500 B (qdisc_pkt_len_init), payload 5 × 1,448.
        assert_eq!(a.size_bytes, 5 * (HDR + MSS));
        assert_eq!(a.tcp().unwrap().payload, 5 * MSS);
        // GSO gives the five original segments back, in order, every byte once.
        let segs: Vec<Packet> = segments(out.into_iter().next().unwrap()).collect();
        let seqs: Vec<(u64, u32)> = segs.iter().map(|s| (s.tcp().unwrap().seq, s.size_bytes)).collect();
        assert_eq!(seqs, (0..5).map(|k| (k * MSS as u64, HDR + MSS)).collect::<Vec<_>>());
        assert!(segs.iter().all(|s| s.gro.is_none()));
    }

    #[test]
    fn connections_merge_separately_and_leave_oldest_first() {
        // A0 B0 A1 B1 A2: two aggregates, A's first (it was held first).
        let pkts = vec![full(1, 0), full(2, 0), full(1, 1), full(2, 1), full(1, 2)];
        assert_eq!(shape(&one_poll(GroConfig::default(), pkts)), vec![(1, 0, 3), (2, 0, 2)]);
    }

    #[test]
    fn a_gap_ends_the_aggregate_and_starts_a_new_one() {
        // Segments 0, 1, then 3 (2 lost upstream), 4.
        let pkts = vec![full(1, 0), full(1, 1), full(1, 3), full(1, 4)];
        assert_eq!(shape(&one_poll(GroConfig::default(), pkts)), vec![(1, 0, 2), (1, 3 * MSS as u64, 2)]);
    }

    #[test]
    fn psh_and_a_short_segment_end_the_aggregate_at_once() {
        let m = MSS as u64;
        // 0, 1, 2 with PSH, then 3, 4: the PSH segment is merged and closes its aggregate.
        let pkts = vec![full(1, 0), full(1, 1), seg(1, 2 * m, MSS, tcp_flags::PSH), full(1, 3), full(1, 4)];
        let out = one_poll(GroConfig::default(), pkts);
        assert_eq!(shape(&out), vec![(1, 0, 3), (1, 3 * m, 2)]);
        assert_eq!(out[0].tcp().unwrap().flags & tcp_flags::PSH, tcp_flags::PSH, "PSH carried into the head");
        // A short segment merges and ends it too; one longer than the first's payload does not merge.
        let pkts = vec![full(1, 0), seg(1, m, 500, 0), seg(1, m + 500, MSS, 0)];
        assert_eq!(shape(&one_poll(GroConfig::default(), pkts)), vec![(1, 0, 2), (1, m + 500, 1)]);
        let pkts = vec![seg(1, 0, 500, 0), seg(1, 500, MSS, 0)];
        assert_eq!(shape(&one_poll(GroConfig::default(), pkts)), vec![(1, 0, 1), (1, 500, 1)]);
    }

    #[test]
    fn a_first_segment_with_psh_and_a_pure_ack_pass_unmerged() {
        let m = MSS as u64;
        let ack = seg(1, 5 * m, 0, 0);
        // PSH on a first segment: passed on alone; the next starts an aggregate, which the pure
        // ACK of the same connection ends before it passes.
        let pkts = vec![seg(1, 0, MSS, tcp_flags::PSH), full(1, 1), full(1, 2), ack, full(1, 5)];
        assert_eq!(
            shape(&one_poll(GroConfig::default(), pkts)),
            vec![(1, 0, 1), (1, m, 2), (1, 5 * m, 1), (1, 5 * m, 1)]
        );
    }

    #[test]
    fn different_headers_do_not_merge() {
        let m = MSS as u64;
        let mut other_ts = full(1, 1);
        if let L4::Tcp(t) = &mut other_ts.l4 {
            t.ts_val += TS_TICK_US; // the next tick of the sender's clock
        }
        let mut ce = full(1, 1);
        ce.ip.ecn = crate::packet::Ecn::Ce;
        let mut cwr = full(1, 1);
        if let L4::Tcp(t) = &mut cwr.l4 {
            t.flags |= tcp_flags::CWR;
        }
        for second in [other_ts, ce, cwr] {
            assert_eq!(shape(&one_poll(GroConfig::default(), vec![full(1, 0), second])), vec![(1, 0, 1), (1, m, 1)]);
        }
    }

    #[test]
    fn the_merged_datagram_stays_within_max_bytes() {
        // 1,500 + 1,448 = 2,948 ≤ 4,000 < 4,396: two segments per aggregate.
        let cfg = GroConfig { max_bytes: 4000, ..Default::default() };
        let out = one_poll(cfg, (0..5).map(|k| full(1, k)).collect());
        assert_eq!(shape(&out), vec![(1, 0, 2), (1, 2 * MSS as u64, 2), (1, 4 * MSS as u64, 1)]);
        // The default: 65,535 B, so 1 + 44 segments (1,500 + 44 × 1,448 = 65,212; one more is 66,660).
        let out = one_poll(GroConfig::default(), (0..50).map(|k| full(1, k)).collect());
        assert_eq!(shape(&out), vec![(1, 0, 45), (1, 45 * MSS as u64, 5)]);
    }

    #[test]
    fn udp_passes_unmerged_and_at_most_eight_connections_are_held() {
        let mut udp = full(1, 0);
        udp.l4 = L4::Udp(Default::default());
        let out = one_poll(GroConfig::default(), vec![udp.clone(), udp]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| p.gro.is_none()));
        // Nine connections, two segments each: the ninth's pass unmerged.
        let pkts: Vec<Packet> = (0..2).flat_map(|k| (1..=9).map(move |c| full(c, k))).collect();
        let out = one_poll(GroConfig::default(), pkts);
        let mut want: Vec<(u16, u64, usize)> = vec![(9, 0, 1), (9, MSS as u64, 1)];
        want.extend((1..=8).map(|c| (c, 0, 2)));
        assert_eq!(shape(&out), want);
    }

    #[test]
    fn polls_come_at_most_once_per_interval_and_take_the_whole_ring() {
        let us = |n: u64| SimTime(n * 1000);
        let mut g = Gro::new(GroConfig { poll: Dur::from_micros(250), ..Default::default() });
        let mut out = Vec::new();
        // An idle interface polls the first packet at once.
        assert_eq!(g.arrive(us(0), full(1, 0)), Arrival::PollNow);
        g.poll(us(0), &mut out);
        assert_eq!(shape(&out), vec![(1, 0, 1)]);
        out.clear();
        // Then 120 µs apart (1,500 B at 100 Mbit/s): wait for the poll at 250 µs, which takes both.
        assert_eq!(g.arrive(us(120), full(1, 1)), Arrival::PollAt(us(250)));
        assert_eq!(g.arrive(us(240), full(1, 2)), Arrival::Wait);
        g.poll(us(249), &mut out);
        assert!(out.is_empty(), "a stale poll does nothing");
        g.poll(us(250), &mut out);
        assert_eq!(shape(&out), vec![(1, MSS as u64, 2)]);
        // Nothing is held across polls; a packet long after is polled at once.
        assert_eq!(g.arrive(us(1000), full(1, 3)), Arrival::PollNow);
        assert_eq!(g.stats, GroStats { rx_pkts: 4, polls: 2, aggregates: 1, merged_segments: 2 });
        // poll = 0: every packet alone.
        let mut g = Gro::new(GroConfig { poll: Dur(0), ..Default::default() });
        for k in 0..3 {
            assert_eq!(g.arrive(us(k), full(1, k)), Arrival::PollNow);
            g.poll(us(k), &mut out);
        }
        assert_eq!(g.stats.aggregates, 0);
    }

    #[test]
    fn segments_take_the_aggregates_ip_header_and_hop() {
        let out = one_poll(GroConfig::default(), (0..3).map(|k| full(1, k)).collect());
        let mut a = out.into_iter().next().unwrap();
        a.ip.ecn = crate::packet::Ecn::Ce; // marked by a discipline
        a.ip.dscp = 46; // re-marked by a classifier
        a.hop = 2;
        for s in segments(a) {
            assert_eq!((s.ip.ecn, s.ip.dscp, s.hop), (crate::packet::Ecn::Ce, 46, 2));
        }
    }
}
