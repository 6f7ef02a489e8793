//! Unit, conformance and property tests for TCP, driven through a tiny deterministic loopback:
//! one sender, one receiver, a forward link (fixed delay, optional rate and drop-tail limit) and
//! a reverse link (fixed delay), with scripted or seeded-random drops.

use super::*;
use crate::engine::{Event, EventQueue, Owner, TimerBlock, TimerCtx, Timers};
use crate::packet::{Addr, IpHdr, Packet, PacketData};
use crate::units::Rate;
use proptest::prelude::*;
use std::collections::VecDeque;

const MTU: u32 = 1500;
const MSS: u64 = 1448;

fn setup() -> EndpointSetup {
    EndpointSetup { flow_name: "t".into(), mtu_bytes: MTU, src_port: 40000, dst_port: 5001, seed: 1, paths: 1 }
}

fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}

/// A deterministic xorshift generator for loss patterns (tests only).
struct XorShift(u64);
impl XorShift {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Link {
    delay: Dur,
    rate: Option<Rate>,
    limit_bytes: Option<u64>,
    free_at: SimTime,
    q: VecDeque<(SimTime, Packet)>,
}

impl Link {
    fn new(delay: Dur) -> Self {
        Link { delay, rate: None, limit_bytes: None, free_at: SimTime::ZERO, q: VecDeque::new() }
    }
    fn rate(mut self, r: Rate, limit_bytes: u64) -> Self {
        self.rate = Some(r);
        self.limit_bytes = Some(limit_bytes);
        self
    }
    /// Returns false if the drop-tail queue is full. `extra` is added to this packet's
    /// propagation delay (after serialization), so a packet can be overtaken: reordering.
    fn send(&mut self, now: SimTime, p: Packet, extra: Dur) -> bool {
        let arrival = match self.rate {
            Some(r) => {
                let backlog = (self.free_at.since(now).as_nanos() as u128 * r.bps() as u128 / 8_000_000_000) as u64;
                if backlog + p.size_bytes as u64 > self.limit_bytes.unwrap_or(u64::MAX) {
                    return false;
                }
                let start = self.free_at.max(now);
                self.free_at = start + r.tx_time(p.size_bytes as u64);
                self.free_at + self.delay
            }
            None => now + self.delay,
        } + extra;
        // Arrival order; equal times keep sending order.
        let i = self.q.partition_point(|e| e.0 <= arrival);
        self.q.insert(i, (arrival, p));
        true
    }
    fn head(&self) -> SimTime {
        self.q.front().map_or(SimTime::NEVER, |e| e.0)
    }
}

type DropFn = Box<dyn FnMut(SimTime, u64, &TcpHdr) -> bool>;
type DelayFn = Box<dyn FnMut(u64, &TcpHdr) -> Dur>;

#[derive(Clone, Debug)]
struct Sent {
    t: SimTime,
    dir: Dir,
    size: u32,
    h: TcpHdr,
    dropped: bool,
    /// The IP header's ECN codepoint as sent (before any marking).
    ecn: crate::packet::Ecn,
}

/// Sender state after one event.
#[derive(Clone, Debug)]
struct Snap {
    t: SimTime,
    cwnd: u64,
    ssthresh: u64,
    in_recovery: bool,
    snd_una: u64,
    snd_max: u64,
    in_flight: u64,
}

struct Harness {
    now: SimTime,
    snd: TcpSender,
    rcv: TcpReceiver,
    timers: Timers,
    /// Timer blocks of the sender (owner 0) and the receiver (owner 1).
    blocks: [TimerBlock; 2],
    events: EventQueue,
    fwd: Link,
    rev: Link,
    out: Vec<Outgoing>,
    notices: Vec<TransportEvent>,
    drop_data: DropFn,
    drop_ack: DropFn,
    /// Marks an ECN-capable data packet CE on the way (by index among data packets, as
    /// `drop_data`): an AQM's ECN decision.
    mark_data: DropFn,
    /// Extra propagation delay per data packet (by index among data packets, as `drop_data`).
    delay_data: DelayFn,
    n_data: u64,
    n_ack: u64,
    seq_in_flow: [u64; 2],
    keep_log: bool,
    log: Vec<Sent>,
    /// ACK headers received by the sender, with arrival time.
    snd_rx: Vec<(SimTime, TcpHdr)>,
    notice_log: Vec<(SimTime, TransportEvent)>,
    trace: Vec<Snap>,
    last: Option<Snap>,
    /// Invariant checking (property tests).
    check: bool,
    rto_seen: bool,
    /// TLP probes sent before the current event.
    tlp_probes: u64,
    arrived: RangeSet,
    written: u64,
}

impl Harness {
    fn new(cfg: &TcpConfig, fwd: Link, rev: Link) -> Self {
        let s = setup();
        let mut timers = Timers::new();
        let snd = TcpSender::new(cfg, &s);
        let blocks = [timers.register(Owner(0), snd.timer_kinds()), timers.register(Owner(1), 2)];
        Harness {
            now: SimTime::ZERO,
            snd,
            rcv: TcpReceiver::new(cfg, &s),
            timers,
            blocks,
            events: EventQueue::new(),
            fwd,
            rev,
            out: vec![],
            notices: vec![],
            drop_data: Box::new(|_, _, _| false),
            drop_ack: Box::new(|_, _, _| false),
            mark_data: Box::new(|_, _, _| false),
            delay_data: Box::new(|_, _| Dur::ZERO),
            n_data: 0,
            n_ack: 0,
            seq_in_flow: [0; 2],
            keep_log: true,
            log: vec![],
            snd_rx: vec![],
            notice_log: vec![],
            trace: vec![],
            last: None,
            check: false,
            rto_seen: false,
            tlp_probes: 0,
            arrived: RangeSet::default(),
            written: 0,
        }
    }

    /// Runs `f` with the context of the sender (`side` 0) or the receiver (1).
    fn ctx<R>(&mut self, side: usize, f: impl FnOnce(&mut TcpSender, &mut TcpReceiver, &mut FlowCtx) -> R) -> R {
        let timers = TimerCtx::new(&mut self.timers, &mut self.events, self.blocks[side]);
        let dir = if side == 0 { Dir::Fwd } else { Dir::Rev };
        let mut cx = FlowCtx::new(self.now, 0, &mut self.out, timers, &mut self.notices).sending(dir);
        let r = f(&mut self.snd, &mut self.rcv, &mut cx);
        self.flush();
        r
    }

    fn write(&mut self, bytes: u64) {
        self.written += bytes;
        self.ctx(0, |s, _, cx| s.write(bytes, cx));
    }

    fn flush(&mut self) {
        let now = self.now;
        let mut sent_new_data = false;
        for o in std::mem::take(&mut self.out) {
            let L4::Tcp(h) = &o.l4 else { unreachable!() };
            let h = h.clone();
            let k = o.dir as usize;
            let ecn = o.ecn;
            let mut pkt = Box::new(PacketData {
                flow: 0,
                dir: o.dir,
                src: Addr::primary(0),
                dst: Addr::primary(1),
                seq_in_flow: self.seq_in_flow[k],
                size_bytes: o.size_bytes,
                sent_at: now,
                hop: 0,
                route: crate::packet::NO_ROUTE,
                path: 0,
                ip: IpHdr { ecn, ..Default::default() },
                l4: o.l4,
                gro: None,
            });
            self.seq_in_flow[k] += 1;
            if o.dir == Dir::Fwd && (self.mark_data)(now, self.n_data, &h) {
                pkt.set_ce();
            }
            let (mut dropped, extra) = match o.dir {
                Dir::Fwd => {
                    let i = self.n_data;
                    self.n_data += 1;
                    ((self.drop_data)(now, i, &h), (self.delay_data)(i, &h))
                }
                Dir::Rev => {
                    let i = self.n_ack;
                    self.n_ack += 1;
                    ((self.drop_ack)(now, i, &h), Dur::ZERO)
                }
            };
            if !dropped {
                let link = if o.dir == Dir::Fwd { &mut self.fwd } else { &mut self.rev };
                dropped = !link.send(now, pkt, extra);
            }
            if o.dir == Dir::Fwd && h.payload > 0 {
                assert!(h.seq + h.payload as u64 <= self.written + 1, "sent bytes never written");
                assert!(h.seq + h.payload as u64 > self.snd.tcb.snd_una, "{now}: segment {} sent after its ACK", h.seq);
                sent_new_data |= h.seq + h.payload as u64 > self.last.as_ref().map_or(1, |l| l.snd_max);
            }
            if self.keep_log {
                self.log.push(Sent { t: now, dir: o.dir, size: o.size_bytes, h, dropped, ecn });
            }
        }
        for n in std::mem::take(&mut self.notices) {
            if matches!(n, TransportEvent::RtoFired { .. }) {
                self.rto_seen = true;
            }
            if self.keep_log {
                self.notice_log.push((now, n));
            }
        }
        let t = &self.snd.tcb;
        let snap = Snap {
            t: now,
            cwnd: t.cwnd,
            ssthresh: t.ssthresh,
            in_recovery: t.in_recovery,
            snd_una: t.snd_una,
            snd_max: t.snd_max,
            in_flight: self.snd.in_flight(),
        };
        if self.check {
            // A tail loss probe may be new data sent whatever cwnd says (RFC 8985 §7.3).
            let probed = self.snd.tlp_counts().0 > self.tlp_probes;
            self.check_invariants(&snap, sent_new_data && !probed);
        }
        self.tlp_probes = self.snd.tlp_counts().0;
        if self.keep_log {
            self.trace.push(snap.clone());
        }
        self.last = Some(snap);
    }

    fn check_invariants(&self, s: &Snap, sent_new_data: bool) {
        let prev_una = self.last.as_ref().map_or(0, |p| p.snd_una);
        assert!(s.snd_una >= prev_una, "{}: snd_una went back {prev_una} -> {}", s.t, s.snd_una);
        assert!(s.snd_una <= s.snd_max && s.snd_max <= self.written + 1);
        assert!(s.snd_max - s.snd_una <= self.snd.rwnd.min(self.snd.snd_buf), "{}: beyond the send window", s.t);
        self.snd.board.check();
        if let Some(r) = &self.snd.rack {
            r.q.check();
        }
        let pipe = self.snd.in_flight();
        // Conservation: new data goes out only while pipe <= cwnd (forced retransmissions may
        // exceed it, but then no new data follows them).
        if sent_new_data {
            assert!(pipe <= s.cwnd, "{}: new data sent with pipe {pipe} > cwnd {}", s.t, s.cwnd);
        }
        // Reality: until a timeout has declared in-flight data lost, the pipe estimate covers
        // every unacknowledged data byte actually in the network (the loopback is FIFO, so
        // SACK/dupack loss inferences are exact). Copies of bytes already acknowledged are not
        // in the pipe: a tail loss probe sent while the receiver held a delayed ACK (more than
        // one segment out, so the PTO had no WCDelAckT) is still travelling when that ACK
        // covers it.
        if !self.rto_seen {
            let una = s.snd_una;
            let real: u64 = self
                .fwd
                .q
                .iter()
                .filter_map(|(_, p)| p.tcp())
                .map(|h| (h.seq + h.payload as u64).saturating_sub(h.seq.max(una)))
                .sum();
            assert!(real <= pipe, "{}: {real} bytes in the network but pipe = {pipe}", s.t);
        }
        // The receiver's in-order point equals the prefix of what actually arrived.
        let prefix = match self.arrived.first() {
            Some((1, e)) => e - 1,
            _ => 0,
        };
        assert_eq!(self.rcv.delivered_bytes(), Some(prefix), "{}: receiver delivery differs from arrivals", s.t);
    }

    fn on_timer(&mut self, owner: Owner, kind: TimerKind) {
        let side = owner.0 as usize;
        self.ctx(side, |s, r, cx| if side == 0 { s.on_timer(kind, cx) } else { r.on_timer(kind, cx) });
    }

    /// Runs until `end` or until nothing is pending.
    fn run_until(&mut self, end: SimTime) {
        loop {
            let t_pkt = self.fwd.head().min(self.rev.head());
            if let Some((t, ev)) = self.events.pop_until(t_pkt.min(end)) {
                let Event::Timer(slot) = ev else { unreachable!() };
                self.now = t;
                if let Some((owner, kind)) = self.timers.on_entry(&mut self.events, slot, t) {
                    self.on_timer(owner, kind);
                }
                continue;
            }
            if t_pkt > end || t_pkt == SimTime::NEVER {
                self.now = end;
                return;
            }
            self.now = t_pkt;
            if self.fwd.head() <= self.rev.head() {
                let (_, p) = self.fwd.q.pop_front().expect("head exists");
                if let Some(h) = p.tcp() {
                    if h.payload > 0 {
                        self.arrived.insert(h.seq, h.seq + h.payload as u64, |_, _| {});
                    }
                }
                self.ctx(1, |_, r, cx| r.on_packet(&p, cx));
            } else {
                let (_, p) = self.rev.q.pop_front().expect("head exists");
                if self.keep_log {
                    self.snd_rx.push((self.now, p.tcp().expect("tcp").clone()));
                }
                self.ctx(0, |s, _, cx| s.on_packet(&p, cx));
            }
        }
    }

    /// Data segments put on the wire, as (time, seq, payload, dropped).
    fn data_sent(&self) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(|s| s.dir == Dir::Fwd && s.h.payload > 0)
    }

    /// Retransmitted data segments: sent with a seq below the highest seq sent before them.
    fn retransmissions(&self) -> Vec<&Sent> {
        let mut high = 0;
        let mut v = vec![];
        for s in self.data_sent() {
            if s.h.seq < high {
                v.push(s);
            }
            high = high.max(s.h.seq + s.h.payload as u64);
        }
        v
    }

    /// Injects a packet into the receiver as if it had arrived now.
    fn inject(&mut self, h: TcpHdr) {
        if h.payload > 0 {
            self.arrived.insert(h.seq, h.seq + h.payload as u64, |_, _| {});
        }
        let p = PacketData {
            flow: 0,
            dir: Dir::Fwd,
            src: Addr::primary(0),
            dst: Addr::primary(1),
            seq_in_flow: 0,
            size_bytes: 0,
            sent_at: self.now,
            hop: 0,
            route: crate::packet::NO_ROUTE,
            path: 0,
            ip: IpHdr::default(),
            l4: L4::Tcp(h),
            gro: None,
        };
        self.ctx(1, |_, r, cx| r.on_packet(&p, cx));
    }

    /// ACKs the receiver sent, in order.
    fn acks(&self) -> Vec<&Sent> {
        self.log.iter().filter(|s| s.dir == Dir::Rev && s.h.flags & tcp_flags::SYN == 0).collect()
    }
}

/// NewReno under the `rfc` profile: the algorithms of RFC 5681/6582/6675 as written, which is
/// what most tests in this file check.
/// NewReno under the `rfc` profile with Linux's 200-ms RTO floor (the timings these tests were
/// written for; RFC 6298's 1 s is the profile's own default).
fn newreno(sack: bool) -> TcpConfig {
    TcpConfig {
        cc: CcConfig::NewReno(Default::default()),
        sack,
        profile: Profile::Rfc,
        min_rto: Some(ms(200)),
        ..Default::default()
    }
}

fn data_hdr(seq: u64, len: u64) -> TcpHdr {
    TcpHdr { seq, ack: 1, flags: tcp_flags::ACK, payload: len as u32, ..Default::default() }
}

// ---------------------------------------------------------------------------------------------
// Configuration.

#[test]
fn config_from_toml_with_defaults_and_errors() {
    use crate::transport::TransportConfig;
    let t: TransportConfig =
        toml::from_str("kind = \"tcp\"\ncc = \"newreno\"\nsack = false\nmin_rto = \"1s\"\nmss = \"1000B\"").unwrap();
    let TransportConfig::Tcp(c) = &t else { panic!("{t:?}") };
    assert_eq!(c.cc, CcConfig::NewReno(Default::default()));
    // The default profile is linux, which delays ACKs.
    assert!(!c.sack && c.timestamps && c.resolved().delayed_ack);
    assert_eq!(c.profile, Profile::Linux);
    assert_eq!(c.min_rto, Some(Dur::from_secs(1)));
    assert_eq!(c.rcv_buf_bytes(), 32 << 20, "linux profile: tcp_rmem[2]");
    assert_eq!(c.mss_for(MTU), 1000);
    assert_eq!(t.service(), Service::Stream);

    let t: TransportConfig = toml::from_str("kind = \"tcp\"\ncc = { kind = \"cubic\", beta = 0.8 }").unwrap();
    let TransportConfig::Tcp(c) = t else { panic!() };
    assert_eq!(c.cc, CcConfig::Cubic(cc::cubic::CubicConfig { beta: 0.8, ..Default::default() }));
    // MSS from the MTU: 1500 - 20 - 20 - 12 (timestamps) = 1448, the ns-3 anchor's value.
    assert_eq!(c.mss_for(MTU), 1448);
    assert_eq!(TcpConfig { timestamps: false, ..Default::default() }.mss_for(MTU), 1460);

    let e = toml::from_str::<TransportConfig>("kind = \"tcp\"\nfoo = 1").unwrap_err().to_string();
    assert!(e.contains("foo"), "{e}");
    let e = toml::from_str::<TransportConfig>("kind = \"tcp\"\ncc = \"vegas\"").unwrap_err().to_string();
    assert!(e.contains("vegas"), "{e}");
    let e = toml::from_str::<TransportConfig>("kind = \"tcp\"\ncc = { kind = \"cubic\", gamma = 1 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("gamma"), "{e}");
    let e = toml::from_str::<TransportConfig>("kind = \"tcp\"\nmin_rto = \"200\"").unwrap_err().to_string();
    assert!(e.contains("expected a time"), "{e}");

    assert!(TcpConfig { mss: Some(1461), ..Default::default() }.validate(MTU).unwrap_err().starts_with("mss"));
    assert!(TcpConfig { rcv_buf: Some(100), ..Default::default() }.validate(MTU).unwrap_err().starts_with("rcv_buf"));
    let bad_cc = TcpConfig {
        cc: CcConfig::Cubic(cc::cubic::CubicConfig { beta: 1.5, ..Default::default() }),
        ..Default::default()
    };
    assert!(bad_cc.validate(MTU).unwrap_err().contains("beta"));
    // Round trip through TOML.
    let c = TcpConfig { delayed_ack: Some(true), mss: Some(1200), ..Default::default() };
    let back: TcpConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

// ---------------------------------------------------------------------------------------------
// Handshake and slow start.

#[test]
fn handshake_sizes_rtt_sample_and_initial_window() {
    let mut h = Harness::new(&TcpConfig::default(), Link::new(ms(50)), Link::new(ms(50)));
    h.write(1 << 30);
    h.run_until(SimTime(ms(100).as_nanos()));
    let syn = &h.log[0];
    assert_eq!(syn.h.flags, tcp_flags::SYN);
    assert_eq!(syn.size, 60, "20 IP + 20 TCP + 20 options (MSS, WS, SACK-perm, TS)");
    let synack = &h.log[1];
    assert_eq!(synack.h.flags, tcp_flags::SYN | tcp_flags::ACK);
    assert_eq!(synack.t, SimTime(ms(50).as_nanos()));
    let data: Vec<_> = h.data_sent().collect();
    assert_eq!(data.len(), 10, "RFC 6928 initial window");
    assert!(data.iter().all(|s| s.size == 1500 && s.h.payload == 1448 && s.t == SimTime(ms(100).as_nanos())));
    assert_eq!(data[0].h.seq, 1);
    assert_eq!(h.snd.srtt(), Some(ms(100)));
    // RFC 6298: RTO = 100 + 4 * 50 = 300 ms.
    assert_eq!(h.snd.rto(), ms(300));
}

#[test]
fn lost_syn_retransmitted_after_initial_rto_then_one_segment_window() {
    let mut h = Harness::new(&newreno(true), Link::new(ms(10)), Link::new(ms(10)));
    h.drop_data = Box::new(|_, i, _| i == 0);
    h.write(100_000);
    h.run_until(SimTime(ms(1_030).as_nanos()));
    let syns: Vec<_> = h.log.iter().filter(|s| s.h.flags == tcp_flags::SYN).collect();
    assert_eq!(syns.len(), 2);
    assert_eq!(syns[1].t, SimTime(Dur::from_secs(1).as_nanos()), "RFC 6298 §2.1 initial RTO 1 s");
    assert!(h.notice_log.iter().any(|(_, n)| matches!(n, TransportEvent::RtoFired { backoff: 1, .. })));
    // RFC 5681 §3.1: IW = 1 segment after a lost SYN; RFC 6298 §5.7: RTO 3 s.
    let first: Vec<_> = h.data_sent().filter(|s| s.t == SimTime(ms(1_020).as_nanos())).collect();
    assert_eq!(first.len(), 1);
    assert_eq!(h.snd.rto(), Dur::from_secs(3));
}

fn segments_per_round(h: &Harness, start: SimTime, rtt: Dur, rounds: usize) -> Vec<usize> {
    let mut v = vec![0; rounds];
    for s in h.data_sent() {
        let k = ((s.t.as_nanos() - start.as_nanos()) / rtt.as_nanos()) as usize;
        if k < rounds {
            v[k] += 1;
        }
    }
    v
}

#[test]
fn slow_start_doubles_per_rtt_with_and_without_delayed_acks() {
    for delayed_ack in [false, true] {
        let cfg = TcpConfig { delayed_ack: Some(delayed_ack), ..newreno(true) };
        let mut h = Harness::new(&cfg, Link::new(ms(50)), Link::new(ms(50)));
        h.write(1 << 30);
        h.run_until(SimTime(ms(650).as_nanos()));
        let rounds = segments_per_round(&h, SimTime(ms(100).as_nanos()), ms(100), 5);
        // RFC 5681 §3.1 with RFC 3465 L = 2 SMSS: a delayed ACK covering two segments grows cwnd
        // by two segments, so both ACK policies double per RTT.
        assert_eq!(rounds, vec![10, 20, 40, 80, 160], "delayed_ack = {delayed_ack}");
        assert_eq!(h.snd.cwnd(), 320 * MSS, "delayed_ack = {delayed_ack}");
        assert_eq!(h.snd.retransmitted_segments(), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// Loss recovery.

/// A 10 Mbit/s, 10 ms path with a large buffer.
fn bottleneck() -> (Link, Link) {
    (Link::new(ms(10)).rate(Rate(10_000_000), 10 << 20), Link::new(ms(10)))
}

/// Index among *data* packets put on the wire by the sender (the SYN is packet 0).
fn drop_data_indices(idx: &'static [u64]) -> DropFn {
    Box::new(move |_, i, h| h.payload > 0 && idx.contains(&i))
}

#[test]
fn fast_retransmit_after_exactly_three_dupacks() {
    for sack in [false, true] {
        let (f, r) = bottleneck();
        let mut h = Harness::new(&newreno(sack), f, r);
        h.drop_data = drop_data_indices(&[30]);
        h.write(1 << 30);
        h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
        let lost = h.log.iter().filter(|s| s.dir == Dir::Fwd).nth(30).unwrap().clone();
        assert!(lost.dropped);
        let rxt = h.retransmissions();
        assert_eq!(rxt.len(), 1, "sack = {sack}: only the lost segment is resent");
        assert_eq!(rxt[0].h.seq, lost.h.seq);
        let dups: Vec<_> = h.snd_rx.iter().filter(|(t, a)| a.ack == lost.h.seq && *t <= rxt[0].t).collect();
        // The ACK that first reports the hole is not a duplicate; three duplicates follow it.
        assert_eq!(dups.len(), 4, "sack = {sack}");
        assert_eq!(dups[3].0, rxt[0].t, "sack = {sack}: retransmitted on the third duplicate");
        let fr: Vec<_> =
            h.notice_log.iter().filter(|(_, n)| matches!(n, TransportEvent::FastRetransmit { .. })).collect();
        assert_eq!(fr.len(), 1);
        assert!(matches!(fr[0].1, TransportEvent::FastRetransmit { seq, .. } if seq == lost.h.seq), "{:?}", fr[0].1);
        assert_eq!(h.snd.rto_count(), 0);
        // RFC 5681 §3.2: ssthresh = FlightSize / 2; NewReno inflates cwnd by 3 segments.
        let i = h.trace.iter().position(|s| s.in_recovery).unwrap();
        let before = &h.trace[i - 1];
        let flight = before.snd_max - before.snd_una;
        assert_eq!(h.trace[i].ssthresh, flight / 2);
        assert_eq!(h.trace[i].cwnd, flight / 2 + if sack { 0 } else { 3 * MSS });
        // The notice carries the window TCP set on entering recovery.
        let TransportEvent::FastRetransmit { cwnd_bytes, ssthresh_bytes, .. } = fr[0].1 else { unreachable!() };
        assert_eq!((cwnd_bytes, ssthresh_bytes), (h.trace[i].cwnd, h.trace[i].ssthresh), "sack = {sack}");
    }
}

#[test]
fn newreno_partial_ack_retransmits_next_hole_and_deflates() {
    let (f, r) = bottleneck();
    let mut h = Harness::new(&newreno(false), f, r);
    h.drop_data = drop_data_indices(&[30, 36]);
    h.write(1 << 30);
    h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    let fwd: Vec<_> = h.log.iter().filter(|s| s.dir == Dir::Fwd).collect();
    let (a, b) = (fwd[30].h.seq, fwd[36].h.seq);
    let rxt = h.retransmissions();
    assert_eq!(rxt.iter().map(|s| s.h.seq).collect::<Vec<_>>(), vec![a, b]);
    // The partial ACK (acking up to b) arrives while in recovery; b goes out at that instant.
    let (t_partial, _) = *h.snd_rx.iter().find(|(_, x)| x.ack == b).unwrap();
    assert_eq!(rxt[1].t, t_partial);
    let i = h.trace.iter().position(|s| s.t == t_partial && s.snd_una == b).unwrap();
    let (pre, post) = (&h.trace[i - 1], &h.trace[i]);
    assert!(pre.in_recovery && post.in_recovery, "still in recovery after a partial ACK");
    // RFC 6582 §3.2 step 5: deflate by the amount acked, add back one SMSS.
    assert_eq!(post.cwnd, pre.cwnd - (b - a) + MSS);
    // Full ACK: recovery ends with cwnd = min(ssthresh, FlightSize + SMSS) (step 6).
    let j = h.trace.iter().position(|s| s.t > t_partial && !s.in_recovery).unwrap();
    let end = &h.trace[j];
    // FlightSize right after the full ACK, before new data went out in the same event.
    let flight = h.trace[j - 1].snd_max - end.snd_una;
    assert_eq!(end.cwnd, end.ssthresh.min(flight.max(MSS) + MSS));
    assert_eq!(h.snd.fast_retransmit_count(), 1, "one recovery episode for both holes");
    assert_eq!(h.snd.rto_count(), 0);
}

#[test]
fn sack_recovery_retransmits_exactly_the_holes_within_one_rtt() {
    let (f, r) = bottleneck();
    let mut h = Harness::new(&newreno(true), f, r);
    static HOLES: [u64; 4] = [40, 43, 44, 52];
    h.drop_data = drop_data_indices(&HOLES);
    h.write(1 << 30);
    h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    let fwd: Vec<_> = h.log.iter().filter(|s| s.dir == Dir::Fwd).collect();
    let want: Vec<u64> = HOLES.iter().map(|&i| fwd[i as usize].h.seq).collect();
    let rxt = h.retransmissions();
    assert_eq!(rxt.iter().map(|s| s.h.seq).collect::<Vec<_>>(), want, "exactly the holes, once each");
    assert_eq!(h.snd.fast_retransmit_count(), 1);
    assert_eq!(h.snd.rto_count(), 0);
    // All holes are repaired before the first retransmission is even acknowledged: SACK
    // recovery takes one RTT however many holes there are.
    let (t_first_ack, _) = *h.snd_rx.iter().find(|(_, a)| a.ack > want[0]).unwrap();
    assert!(rxt[3].t < t_first_ack, "{:?} vs {t_first_ack}", rxt.iter().map(|s| s.t).collect::<Vec<_>>());
    // NewReno without SACK needs one RTT per hole.
    let (f, r) = bottleneck();
    let mut n = Harness::new(&newreno(false), f, r);
    n.drop_data = drop_data_indices(&HOLES);
    n.write(1 << 30);
    n.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    let nr = n.retransmissions();
    assert_eq!(nr.iter().map(|s| s.h.seq).collect::<Vec<_>>(), want);
    // NewReno resends hole k+1 only when the partial ACK for hole k arrives.
    for k in 1..4 {
        let (t_partial, _) = *n.snd_rx.iter().find(|(_, a)| a.ack > want[k - 1]).unwrap();
        assert_eq!(nr[k].t, t_partial, "hole {k}");
    }
}

#[test]
fn rto_fires_backs_off_and_collapses_window() {
    let (f, r) = bottleneck();
    let mut h = Harness::new(&newreno(true), f, r);
    // A black hole for data between 300 ms and 1.2 s.
    h.drop_data =
        Box::new(|t, _, hd| hd.payload > 0 && t >= SimTime(ms(300).as_nanos()) && t < SimTime(ms(1200).as_nanos()));
    h.write(1 << 30);
    h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
    let rtos: Vec<_> = h
        .notice_log
        .iter()
        .filter_map(|(t, n)| match n {
            TransportEvent::RtoFired { rto_ns, backoff, .. } => Some((*t, *rto_ns, *backoff)),
            _ => None,
        })
        .collect();
    assert!(rtos.len() >= 2, "{rtos:?}");
    // The second timeout follows the first by the doubled RTO (RFC 6298 §5.5–5.6).
    assert_eq!(rtos[1].0.since(rtos[0].0), Dur(rtos[0].1));
    assert_eq!(rtos[1].1, 2 * rtos[0].1);
    assert_eq!((rtos[0].2, rtos[1].2), (1, 2));
    // Each notice carries the window TCP set: 1 SMSS, and ssthresh as the trace has it.
    for (t, n) in h.notice_log.iter().filter(|(_, n)| matches!(n, TransportEvent::RtoFired { .. })) {
        let TransportEvent::RtoFired { cwnd_bytes, ssthresh_bytes, .. } = n else { unreachable!() };
        let s = h.trace.iter().find(|s| s.t == *t && s.cwnd == MSS).expect("a trace row at the timeout");
        assert_eq!((*cwnd_bytes, *ssthresh_bytes), (MSS, s.ssthresh), "at {t}");
    }
    // At the first timeout: cwnd = 1 SMSS, ssthresh = FlightSize / 2; held at the second.
    let i = h.trace.iter().position(|s| s.t == rtos[0].0 && s.cwnd == MSS).unwrap();
    let pre = &h.trace[i - 1];
    assert_eq!(h.trace[i].ssthresh, ((pre.snd_max - pre.snd_una) / 2).max(2 * MSS));
    let j = h.trace.iter().position(|s| s.t == rtos[1].0).unwrap();
    assert_eq!(h.trace[j].ssthresh, h.trace[i].ssthresh);
    // Each timeout retransmits snd_una.
    let rx = h.retransmissions();
    assert_eq!(rx.iter().find(|s| s.t == rtos[0].0).unwrap().h.seq, pre.snd_una);
    // After the black hole the transfer recovers and every byte arrives.
    assert!(h.snd.acked_bytes() > 1_000_000);
}

// ---------------------------------------------------------------------------------------------
// Receiver: delayed ACKs, SACK blocks, receive window.

#[test]
fn delayed_ack_every_second_segment_and_timer() {
    // RFC 5681 §4.2 delayed ACKs (rfc profile: no quick-ACK mode, fixed timer).
    let cfg = TcpConfig { delayed_ack: Some(true), profile: Profile::Rfc, ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    h.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 0..10 {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(h.acks().len(), 5, "one ACK per two full segments");
    assert_eq!(h.acks().last().unwrap().h.ack, 1 + 10 * MSS);
    h.inject(data_hdr(1 + 10 * MSS, MSS));
    assert_eq!(h.acks().len(), 5, "a lone segment waits for the timer");
    h.run_until(SimTime(ms(100).as_nanos()));
    let acks = h.acks();
    assert_eq!(acks.len(), 6);
    assert_eq!(acks[5].t, SimTime(ms(40).as_nanos()), "delack_timeout 40 ms");
    assert_eq!(acks[5].h.ack, 1 + 11 * MSS);
    // Out of order: immediate ACK with a SACK block.
    h.inject(data_hdr(1 + 12 * MSS, MSS));
    assert_eq!(h.acks().len(), 7);
    let a = h.acks()[6].h.clone();
    assert_eq!((a.ack, a.nsack, a.sack[0]), (1 + 11 * MSS, 1, (1 + 12 * MSS, 1 + 13 * MSS)));
    assert_eq!(h.acks()[6].size, 20 + 20 + 12 + 12, "SACK option 2 + 8 bytes padded to 12");
    // Filling the gap: immediate ACK.
    h.inject(data_hdr(1 + 11 * MSS, MSS));
    assert_eq!(h.acks().len(), 8);
    assert_eq!(h.acks()[7].h.ack, 1 + 13 * MSS);
    assert_eq!(h.acks()[7].h.nsack, 0);
    // Without delayed ACKs: one ACK per segment.
    let mut n = Harness::new(&TcpConfig::default(), Link::new(ms(10)), Link::new(ms(10)));
    n.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 0..10 {
        n.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(n.acks().len(), 10);
}

#[test]
fn sack_blocks_follow_rfc2018_ordering() {
    let mut h = Harness::new(&TcpConfig::default(), Link::new(ms(10)), Link::new(ms(10)));
    h.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    let seg = |k: u64| (1 + k * 100, 1 + (k + 1) * 100);
    let send = |h: &mut Harness, k: u64| h.inject(data_hdr(seg(k).0, 100));
    send(&mut h, 0);
    for k in [2, 4, 6] {
        send(&mut h, k);
    }
    let last = h.acks().last().unwrap().h.clone();
    assert_eq!(last.ack, seg(1).0);
    assert_eq!(&last.sack[..last.nsack as usize], &[seg(6), seg(4), seg(2)]);
    // Segment 3 joins blocks 2 and 4: that merged block comes first, then the most recent other.
    send(&mut h, 3);
    let a = h.acks().last().unwrap().h.clone();
    assert_eq!(&a.sack[..a.nsack as usize], &[(seg(2).0, seg(4).1), seg(6)]);
    // Four blocks exist; only three fit, the newest first.
    send(&mut h, 8);
    send(&mut h, 10);
    let a = h.acks().last().unwrap().h.clone();
    assert_eq!(&a.sack[..a.nsack as usize], &[seg(10), seg(8), (seg(2).0, seg(4).1)]);
    assert_eq!(h.rcv.ooo_ranges().count(), 4);
    assert_eq!(h.acks().last().unwrap().size, 40 + 12 + 28, "3 SACK blocks: 26 bytes padded to 28");
    // The hole at 1 is filled: everything up to segment 5 is delivered.
    send(&mut h, 1);
    assert_eq!(h.rcv.delivered_bytes(), Some(500));
}

#[test]
fn segments_on_the_wire_carry_the_options_and_window_they_were_sized_for() {
    use crate::trace::pcap::packet_bytes;
    use crate::trace::pcap::tests::{parse_tcp, tcp_packet};
    for (sack, timestamps) in [(true, true), (true, false), (false, true), (false, false)] {
        // A fixed 4 MiB window (autotuning's windows are checked in tests/rcvtune.rs).
        let cfg = TcpConfig { sack, timestamps, rcv_autotune: Some(false), ..TcpConfig::default() };
        let (f, r) = bottleneck();
        let mut h = Harness::new(&cfg, f, r);
        h.drop_data = drop_data_indices(&[30, 32, 34]);
        h.write(300 * MSS);
        h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
        assert_eq!(h.rcv.delivered_bytes(), Some(300 * MSS));
        let (mut syns, mut sacks) = (0, 0);
        for s in &h.log {
            let ctx = format!("sack {sack} ts {timestamps}: {:?} segment {:?}", s.dir, s.h);
            let p = parse_tcp(&packet_bytes(&tcp_packet(s.h.clone(), s.size)));
            // The option bytes written are those counted in the segment's size.
            assert_eq!(p.ip_len, s.size as usize, "{ctx}");
            assert_eq!(p.payload, s.h.payload as usize, "{ctx}");
            assert_eq!(p.option(8).is_some(), timestamps, "{ctx}");
            // Every segment advertises the 4 MiB buffer: shift 7 (RFC 7323 §2.3).
            if s.h.flags & tcp_flags::SYN != 0 {
                syns += 1;
                assert_eq!(p.payload, 0, "{ctx}");
                // MTU - 40 whatever the SMSS (1448 with timestamps, 1460 without).
                assert_eq!(p.option(2), Some(&1460u16.to_be_bytes()[..]), "{ctx}");
                assert_eq!(p.option(3), Some(&[7u8][..]), "{ctx}");
                assert_eq!(p.option(4).is_some(), sack, "{ctx}");
                assert_eq!(p.window, 65535, "{ctx}");
            } else {
                assert_eq!(p.window, 32768, "{ctx}");
                let blocks = p.option(5).map_or(0, |v| v.len() / 8);
                assert_eq!(blocks, s.h.nsack as usize, "{ctx}");
                sacks += blocks;
            }
        }
        assert_eq!(syns, 2, "SYN and SYN-ACK");
        assert_eq!(sacks > 0, sack, "sack {sack}: SACK blocks seen");
    }
}

#[test]
fn receive_window_limits_throughput_to_rwnd_per_rtt() {
    let rwnd = 20 * MSS;
    // A fixed window (no autotuning): exactly rwnd per RTT.
    let cfg = TcpConfig { rcv_buf: Some(rwnd), rcv_autotune: Some(false), ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(50)), Link::new(ms(50)));
    h.keep_log = false;
    h.write(1 << 40);
    h.run_until(SimTime(Dur::from_secs(10).as_nanos()));
    // Data flows from 100 ms; each 100 ms RTT carries exactly one window.
    let got = h.rcv.delivered_bytes().unwrap() as f64;
    let want = rwnd as f64 * 99.0;
    assert!((got / want - 1.0).abs() < 0.01, "delivered {got}, rwnd/RTT predicts {want}");
    // cwnd grew past rwnd and then stopped: a window that is not used is not grown (in slow
    // start, Linux's rule lets it reach twice the packets out first: see
    // `linux_slow_start_grows_cwnd_while_half_the_window_is_out`).
    assert!(h.snd.cwnd() >= rwnd && h.snd.cwnd() <= 2 * rwnd + 2 * MSS, "cwnd {}", h.snd.cwnd());
}

/// Linux's `tcp_is_cwnd_limited` (`include/net/tcp.h`) in slow start: an ACK grows cwnd while
/// cwnd < 2 × the most packets out in the window (`max_packets_out`, kept by `tcp_cwnd_validate`
/// in `net/ipv4/tcp_output.c`), whatever stops the sender, here the receive window and then the
/// application; under `rfc` and `ns3` only while the last send was stopped by cwnd. Without the
/// rule the `linux` rows fail: cwnd stays at the receive window and at the initial window.
#[test]
fn linux_slow_start_grows_cwnd_while_half_the_window_is_out() {
    let rwnd = 20 * MSS;
    for profile in [Profile::Linux, Profile::Rfc, Profile::Ns3] {
        let base = TcpConfig { profile, hystart: Some(false), min_rto: Some(ms(200)), ..Default::default() };
        // Receive-window-limited bulk sender: 20 segments out every RTT.
        let cfg = TcpConfig { rcv_buf: Some(rwnd), rcv_autotune: Some(false), ..base.clone() };
        let mut h = Harness::new(&cfg, Link::new(ms(50)), Link::new(ms(50)));
        h.write(1 << 30);
        h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
        let peak = h.trace.iter().map(|s| s.snd_max - s.snd_una).max().unwrap();
        assert_eq!(peak, rwnd, "{profile:?}: the flight is the receive window");
        let c = h.snd.cwnd() / MSS;
        match profile {
            // Grows until cwnd reaches 2 × 20 (the last ACK may add its two segments), then stops.
            Profile::Linux => assert!((40..=41).contains(&c), "{profile:?}: cwnd {c}"),
            _ => assert!((20..=22).contains(&c), "{profile:?}: cwnd {c}"),
        }
        // Application-limited: after the handshake, n segments written every two RTTs (200 ms,
        // within the RTO: no restart after idle), IW = 10. Six out make 2 × 6 > 10, so Linux
        // grows cwnd to 12 (13 if the last ACK covers two) and no further; four (2 × 4 < 10) never grow it.
        for (n, linux_peak) in [(6, 12), (4, 10)] {
            let mut h = Harness::new(&base, Link::new(ms(50)), Link::new(ms(50)));
            let mut t = SimTime(ms(300).as_nanos());
            h.run_until(t);
            for _ in 0..10 {
                h.write(n * MSS);
                t = t + ms(200);
                h.run_until(t);
            }
            assert_eq!(h.snd.acked_bytes(), 10 * n * MSS, "{profile:?}: every burst acknowledged");
            let peak = h.trace.iter().map(|s| s.cwnd).max().unwrap() / MSS;
            // The ACK that reaches 2 × n may acknowledge two segments (delayed ACK): +1 at most.
            let want = if profile == Profile::Linux { linux_peak } else { 10 };
            assert!(
                peak == want || (want > 10 && peak == want + 1),
                "{profile:?}, {n} segments out: largest cwnd {peak}"
            );
        }
    }
}

#[test]
fn send_buffer_limits_unacknowledged_bytes() {
    let cfg = TcpConfig { snd_buf: 16 * MSS, ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(50)), Link::new(ms(50)));
    h.write(1 << 30);
    h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    assert!(h.trace.iter().all(|s| s.snd_max - s.snd_una <= 16 * MSS));
    assert!(h.trace.iter().any(|s| s.snd_max - s.snd_una == 16 * MSS));
    assert_eq!(h.snd.unsent_bytes(), (1 << 30) - (h.snd.snd_max() - 1));
}

// ---------------------------------------------------------------------------------------------
// Notices.

#[test]
fn acked_delivered_and_cwnd_notices() {
    // The `rfc` profile: under `linux` ten segments out fill the initial window
    // (`tcp_write_xmit`'s in flight ≥ cwnd), so their ACKs grow it.
    let cfg = TcpConfig { profile: Profile::Rfc, ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(5)), Link::new(ms(5)));
    h.write(10 * MSS);
    h.run_until(SimTime(Dur::from_secs(1).as_nanos()));
    let acked: Vec<u64> = h
        .notice_log
        .iter()
        .filter_map(|(_, n)| if let TransportEvent::Acked { total_bytes } = n { Some(*total_bytes) } else { None })
        .collect();
    assert_eq!(acked.last(), Some(&(10 * MSS)));
    assert!(acked.windows(2).all(|w| w[0] < w[1]));
    let delivered: Vec<u64> = h
        .notice_log
        .iter()
        .filter_map(|(_, n)| if let TransportEvent::Delivered { total_bytes } = n { Some(*total_bytes) } else { None })
        .collect();
    assert_eq!(delivered.len(), 10);
    assert_eq!(delivered.last(), Some(&(10 * MSS)));
    // The initial window is announced; it never grows, because the application never filled it.
    let cw: Vec<_> = h.notice_log.iter().filter(|(_, n)| matches!(n, TransportEvent::CwndChanged { .. })).collect();
    assert_eq!(cw.len(), 1);
    assert_eq!(cw[0].1, TransportEvent::CwndChanged { cwnd_bytes: 10 * MSS, ssthresh_bytes: INITIAL_SSTHRESH });
    assert_eq!(h.snd.unsent_bytes(), 0);
    assert_eq!(h.snd.unacked_bytes(), 0);
}

// ---------------------------------------------------------------------------------------------
// Conformance: the Padhye et al. (1998) throughput formula, in the loopback.

/// Padhye, Firoiu, Towsley, Kurose (SIGCOMM 1998), eq. (30): packets per second.
pub(crate) fn padhye(p: f64, rtt: f64, t0: f64, b: f64, wmax: f64) -> f64 {
    let a = rtt * (2.0 * b * p / 3.0).sqrt();
    let c = t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (wmax / rtt).min(1.0 / (a + c))
}

#[test]
fn newreno_bernoulli_loss_matches_padhye_in_loopback() {
    // No queue: RTT is the propagation delay, so T0 is the (floored) RTO.
    for &(p, seed) in &[(0.01, 7u64), (0.02, 11)] {
        let cfg = TcpConfig { min_rto: Some(Dur::from_secs(1)), ..newreno(false) };
        let mut h = Harness::new(&cfg, Link::new(ms(50)), Link::new(ms(50)));
        h.keep_log = false;
        let mut rng = XorShift(seed);
        h.drop_data = Box::new(move |_, _, hd| hd.payload > 0 && rng.next_f64() < p);
        h.write(1 << 40);
        let secs = 400;
        h.run_until(SimTime(Dur::from_secs(secs).as_nanos()));
        let pkts = h.snd.acked_bytes() as f64 / MSS as f64 / secs as f64;
        let rto = h.snd.rto().as_secs_f64();
        let model = padhye(p, 0.1, rto, 1.0, 1e9);
        let ratio = pkts / model;
        assert!((ratio - 1.0).abs() < 0.25, "p = {p}: {pkts:.1} pkt/s vs Padhye {model:.1} (T0 {rto} s)");
    }
}

// ---------------------------------------------------------------------------------------------
// Properties over random loss patterns.

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn every_byte_arrives_once_in_order_under_random_loss(
        seed in 1u64..u64::MAX,
        p_data in 0.0f64..0.15,
        p_ack in 0.0f64..0.05,
        sack in any::<bool>(),
        delayed_ack in any::<bool>(),
        cubic in any::<bool>(),
        timestamps in any::<bool>(),
        rate_limited in any::<bool>(),
        bytes in 1u64..400_000,
        rack in any::<bool>(),
    ) {
        let cc = if cubic { CcConfig::default() } else { CcConfig::NewReno(Default::default()) };
        let cfg = TcpConfig {
            cc, sack, delayed_ack: Some(delayed_ack), timestamps, rcv_buf: Some(64 * MSS), rack: Some(rack && sack),
            ..Default::default()
        };
        let fwd = if rate_limited { Link::new(ms(5)).rate(Rate(20_000_000), 20 * 1500) } else { Link::new(ms(5)) };
        let mut h = Harness::new(&cfg, fwd, Link::new(ms(5)));
        h.keep_log = false;
        h.check = true;
        let mut r1 = XorShift(seed);
        let mut r2 = XorShift(seed ^ 0x9e37_79b9_7f4a_7c15);
        h.drop_data = Box::new(move |_, _, _| r1.next_f64() < p_data);
        h.drop_ack = Box::new(move |_, _, _| r2.next_f64() < p_ack);
        h.write(bytes);
        h.run_until(SimTime(Dur::from_secs(600).as_nanos()));
        prop_assert_eq!(h.rcv.delivered_bytes(), Some(bytes));
        prop_assert_eq!(h.snd.acked_bytes(), bytes);
        prop_assert_eq!(h.snd.in_flight(), 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
    /// With `overhead` (ns-2's `overhead_`), under random loss and a drop-tail bottleneck: every
    /// byte arrives, the sender's invariants hold, and its segments never leave out of order —
    /// each data segment is either the next new one (seq = highest sent) or a retransmission
    /// wholly below it. Also that waits happened: segments leave at times an ACK did not arrive.
    #[test]
    fn overhead_never_reorders_a_flows_segments(
        seed in 1u64..u64::MAX,
        p_data in 0.0f64..0.1,
        sack in any::<bool>(),
        rack in any::<bool>(),
        delayed_ack in any::<bool>(),
        overhead_us in 1u64..5_000,
        bytes in 1u64..300_000,
    ) {
        let cfg = TcpConfig {
            sack, rack: Some(rack && sack), delayed_ack: Some(delayed_ack),
            overhead: Some(Dur::from_micros(overhead_us)), rcv_buf: Some(64 * MSS), ..newreno(sack)
        };
        let fwd = Link::new(ms(5)).rate(Rate(20_000_000), 20 * 1500);
        let mut h = Harness::new(&cfg, fwd, Link::new(ms(5)));
        h.check = true;
        let mut r = XorShift(seed);
        h.drop_data = Box::new(move |_, _, _| r.next_f64() < p_data);
        h.write(bytes);
        h.run_until(SimTime(Dur::from_secs(600).as_nanos()));
        prop_assert_eq!(h.rcv.delivered_bytes(), Some(bytes));
        let mut high = 1;
        for s in h.data_sent() {
            let (seq, end) = (s.h.seq, s.h.seq + s.h.payload as u64);
            prop_assert!(seq == high || end <= high, "{}: segment {seq}..{end} with {high} the highest sent", s.t);
            high = high.max(end);
        }
        prop_assert_eq!(high, bytes + 1);
        // Sends at a time no ACK arrived: the overhead's releases (or timers).
        let acked_at: std::collections::BTreeSet<_> = h.snd_rx.iter().map(|a| a.0).collect();
        prop_assert!(h.data_sent().skip(1).any(|s| !acked_at.contains(&s.t)) || bytes <= MSS);
    }
}

/// A timeout's retransmission waits for the overhead too (ns-2 `TcpAgent::timeout` sends through
/// `send_much(0, …)`), at most `overhead` after the timer, and leaves although cwnd is full.
#[test]
fn a_timeout_retransmission_waits_for_the_overhead() {
    let o = Dur::from_millis(3);
    let cfg = TcpConfig { overhead: Some(o), ..newreno(true) };
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    // Every ACK after the handshake is lost: the only way out is the RTO.
    h.drop_ack = Box::new(|_, i, _| i > 0);
    h.write(4 * MSS);
    h.run_until(SimTime(Dur::from_millis(1500).as_nanos()));
    let rto_at = h
        .notice_log
        .iter()
        .find(|(_, n)| matches!(n, TransportEvent::RtoFired { .. }))
        .map(|(t, _)| *t)
        .expect("an RTO fired");
    let rxt = h.retransmissions();
    let first = rxt.first().expect("a retransmission");
    assert_eq!(first.h.seq, 1);
    assert!(first.t >= rto_at && first.t <= rto_at + o, "retransmitted at {} for an RTO at {rto_at}", first.t);
}

// ---------------------------------------------------------------------------------------------
// Profiles and the Linux behaviours.

#[test]
fn profiles_set_defaults_and_explicit_keys_win() {
    use crate::transport::TransportConfig;
    let parse = |s: &str| -> TcpConfig {
        let t: TransportConfig = toml::from_str(&format!("kind = \"tcp\"\n{s}")).unwrap();
        let TransportConfig::Tcp(c) = t else { panic!() };
        c
    };
    // linux is the default; rfc is the behaviour from before profiles existed.
    assert_eq!(parse("").resolved(), Profile::Linux.defaults());
    let rfc = parse("profile = \"rfc\"").resolved();
    assert_eq!(rfc, Profile::Rfc.defaults());
    assert_eq!((rfc.rto_rule, rfc.rto_rearm, rfc.prr, rfc.delayed_ack), (RtoRule::Rfc6298, false, false, false));
    // RFC 6298 §2.4 and §2.5; RFC 5681 §4.1; RFC 9438 with §4.3's switch.
    assert_eq!(
        (rfc.min_rto, rfc.max_rto, rfc.init_cwnd, rfc.hystart, rfc.quickack),
        (ms(1000), ms(60_000), 10, false, false)
    );
    assert_eq!((rfc.slow_start_after_idle, rfc.idle_rule, rfc.host_jitter), (true, IdleRule::Rfc5681, Dur::ZERO));
    assert_eq!((rfc.cubic_rule, rfc.alpha_switch), (CubicRule::Rfc9438, true));
    let linux = parse("profile = \"linux\"").resolved();
    assert_eq!((linux.rto_rule, linux.rto_rearm, linux.prr, linux.delayed_ack), (RtoRule::Linux, true, true, true));
    assert!(linux.quickack && linux.hystart);
    // tcp_cubic.c (α fixed, its HyStart), tcp_cwnd_restart, TCP_RTO_MIN/MAX, the host's jitter.
    assert_eq!(
        (linux.hystart_rule, linux.cubic_rule, linux.alpha_switch),
        (HystartRule::Linux, CubicRule::Linux, false)
    );
    assert_eq!((linux.slow_start_after_idle, linux.idle_rule), (true, IdleRule::Linux));
    assert_eq!((linux.min_rto, linux.max_rto, linux.host_jitter), (ms(200), ms(120_000), Dur::from_micros(50)));
    // The switch follows the rule unless named; the rule follows the profile unless named.
    let sw = |s: &str| parse(s).resolved();
    assert!(!sw("cc = { kind = \"cubic\", rule = \"linux\" }\nprofile = \"rfc\"").alpha_switch);
    assert!(sw("cc = { kind = \"cubic\", rule = \"rfc9438\" }").alpha_switch);
    assert!(sw("cc = { kind = \"cubic\", alpha_switch = true }").alpha_switch);
    assert_eq!(sw("cc = { kind = \"cubic\", alpha_switch = true }").cubic_rule, CubicRule::Linux);
    assert_eq!(sw("host_jitter = \"0s\"\nslow_start_after_idle = false").host_jitter, Dur::ZERO);
    // Reno's arithmetic follows the profile (tcp_cong.c in linux, RFC 5681 in rfc and ns3)
    // unless named; Linux's Reno has no per-ACK counting to turn on.
    assert_eq!((linux.reno_rule, rfc.reno_rule), (RenoRule::Linux, RenoRule::Rfc5681));
    assert_eq!(sw("cc = { kind = \"newreno\", rule = \"rfc5681\" }").reno_rule, RenoRule::Rfc5681);
    assert_eq!(sw("cc = { kind = \"newreno\", rule = \"linux\" }\nprofile = \"ns3\"").reno_rule, RenoRule::Linux);
    let no_abc = parse("cc = { kind = \"newreno\", abc = false }");
    assert!(no_abc.validate(MTU).unwrap_err().starts_with("cc.abc: false needs cc.rule = \"rfc5681\""));
    assert!(parse("cc = { kind = \"newreno\", abc = false }\nprofile = \"rfc\"").validate(MTU).is_ok());
    let named = parse("cc = { kind = \"newreno\", abc = false, rule = \"linux\" }\nprofile = \"rfc\"");
    assert!(named.validate(MTU).unwrap_err().starts_with("cc.abc: false needs cc.rule"));
    assert!(parse("host_jitter = \"2s\"").validate(MTU).unwrap_err().starts_with("host_jitter: must be at most 1s"));
    // An explicit key overrides the profile and leaves the rest alone.
    let l2 = parse("profile = \"linux\"\ndelayed_ack = false\nmin_rto = \"50ms\"").resolved();
    assert_eq!((l2.delayed_ack, l2.min_rto), (false, ms(50)));
    assert_eq!(Behaviours { delayed_ack: true, min_rto: ms(200), ..l2 }, linux);
    let ns3 = parse("profile = \"ns3\"").resolved();
    assert_eq!((ns3.min_rto, ns3.delayed_ack, ns3.delack_timeout), (Dur::from_secs(1), true, ms(200)));
    // ns-3's ssthresh rule depends on the controller; its PRR, HyStart and ACK counting.
    assert_eq!((ns3.ssthresh_rule, ns3.prr, ns3.prr_rule), (SsthreshRule::Cwnd, true, PrrRule::Ns3));
    assert_eq!((ns3.hystart, ns3.hystart_rule), (true, HystartRule::Ns3));
    assert_eq!(
        (ns3.slow_start_after_idle, ns3.cubic_rule, ns3.alpha_switch, ns3.max_rto),
        (false, CubicRule::Rfc9438, true, ms(60_000))
    );
    // ns-3's count of bytes in flight, without RACK only (RACK keeps its own).
    assert_eq!((ns3.pipe_rule, rfc.pipe_rule, linux.pipe_rule), (PipeRule::Ns3, PipeRule::Rfc6675, PipeRule::Rfc6675));
    assert_eq!(parse("profile = \"ns3\"\nrack = true").resolved().pipe_rule, PipeRule::Rfc6675);
    let e = parse("profile = \"linux\"\npipe_rule = \"ns3\"").validate(MTU).unwrap_err();
    assert!(e.starts_with("pipe_rule: \"ns3\" needs rack = false"), "{e}");
    assert_eq!(parse("profile = \"linux\"\nrack = false\npipe_rule = \"ns3\"").resolved().pipe_rule, PipeRule::Ns3);
    let ns3_reno = parse("profile = \"ns3\"\ncc = \"newreno\"").resolved();
    assert_eq!((ns3_reno.ssthresh_rule, ns3_reno.abc), (SsthreshRule::Pipe, false));
    let abc =
        parse("profile = \"ns3\"\ncc = { kind = \"newreno\", abc = true }\nssthresh_rule = \"flight_size\"").resolved();
    assert_eq!((abc.ssthresh_rule, abc.abc), (SsthreshRule::FlightSize, true));
    assert_eq!(
        (rfc.ssthresh_rule, rfc.prr_rule, rfc.hystart_rule, rfc.abc),
        (SsthreshRule::FlightSize, PrrRule::Rfc6937, HystartRule::Rfc9406, true)
    );
    // Linux caps FlightSize at cwnd; so does any profile with RACK on that says FlightSize,
    // unless a rule is named.
    assert_eq!(linux.ssthresh_rule, SsthreshRule::FlightCapped);
    assert_eq!(parse("profile = \"linux\"\nrack = false").resolved().ssthresh_rule, SsthreshRule::FlightCapped);
    assert_eq!(
        parse("profile = \"linux\"\nssthresh_rule = \"flight_size\"").resolved().ssthresh_rule,
        SsthreshRule::FlightSize
    );
    assert_eq!(parse("profile = \"rfc\"\nrack = true").resolved().ssthresh_rule, SsthreshRule::FlightCapped);
    assert_eq!(parse("profile = \"ns3\"\nrack = true").resolved().ssthresh_rule, SsthreshRule::Cwnd);
    let bsd = parse("profile = \"freebsd\"").resolved();
    assert_eq!((bsd.rto_rule, bsd.min_rto, bsd.delack_timeout), (RtoRule::Freebsd, ms(30), ms(100)));
    assert_eq!((bsd.max_rto, bsd.slow_start_after_idle, bsd.idle_rule), (ms(64_000), true, IdleRule::Freebsd));
    // PRR counts SACKed data: a profile's PRR is off without SACK, an explicit one is an error.
    assert!(!parse("profile = \"linux\"\nsack = false").resolved().prr);
    assert!(parse("sack = false\nprr = true").validate(MTU).unwrap_err().starts_with("prr"));
    assert!(parse("cc = \"newreno\"\nhystart = true").validate(MTU).unwrap_err().starts_with("hystart"));
    let e = toml::from_str::<TransportConfig>("kind = \"tcp\"\nprofile = \"bsd\"").unwrap_err().to_string();
    assert!(e.contains("bsd") && e.contains("freebsd"), "{e}");
    // Round trip keeps the profile and the explicit keys only.
    let c = parse("profile = \"linux\"\nprr = false");
    let back: TcpConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
    assert_eq!(back.delayed_ack, None);
}

#[test]
fn linux_rto_rearmed_when_the_head_is_retransmitted() {
    // One loss, 20 ms RTT: the fast retransmit restarts the timer under the linux profile (the
    // deadline moves to retransmission time + RTO), not under rfc.
    for (profile, rearm) in [(Profile::Rfc, false), (Profile::Linux, true)] {
        let (f, r) = bottleneck();
        let cfg = TcpConfig { profile, delayed_ack: Some(false), ..newreno(true) };
        let mut h = Harness::new(&cfg, f, r);
        h.drop_data = drop_data_indices(&[30]);
        h.write(200 * MSS);
        let mut t = SimTime::ZERO;
        while h.retransmissions().is_empty() {
            t = t + ms(1);
            assert!(t < SimTime(Dur::from_secs(2).as_nanos()), "{profile:?}: no retransmission");
            h.run_until(t);
        }
        let t_rxt = h.retransmissions()[0].t;
        let d = h.timers.deadline(h.blocks[0], RTO);
        assert_ne!(d, SimTime::NEVER, "RTO armed while data is outstanding");
        let rto = h.snd.rto();
        assert_eq!(d == t_rxt + rto, rearm, "{profile:?}: deadline {d} vs retransmission {t_rxt} + RTO {rto:?}");
    }
}

/// A linux-profile receiver after a SYN and `n` back-to-back full segments, all at time 0.
fn linux_receiver_after(n: u64) -> Harness {
    linux_receiver_with(TcpConfig { profile: Profile::Linux, ..Default::default() }, n)
}

fn linux_receiver_with(cfg: TcpConfig, n: u64) -> Harness {
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    h.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 0..n {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    h
}

#[test]
fn linux_quickack_at_start_then_every_second_segment() {
    let mut h = linux_receiver_after(20);
    // tcp_incr_quickack: 16 quick ACKs. The first 6 segments grow the window (rcv_ssthresh to
    // the clamp, 81920 - 1448: `rcvbuf::tests`), and `tcp_grow_window`'s `quick |= 1` gives
    // back the quick ACK each of them uses (16 -> 15, then 15 -> 14 and back to 15 five times),
    // so all 20 are ACKed one by one: 6 + the 14 left.
    assert_eq!(h.acks().len(), 20);
    h.inject(data_hdr(1 + 20 * MSS, MSS));
    assert_eq!(h.acks().len(), 20, "a lone segment waits");
    h.run_until(SimTime(ms(100).as_nanos()));
    assert_eq!(h.acks().len(), 21);
    assert_eq!(h.acks()[20].t, SimTime(ms(40).as_nanos()), "ato = TCP_ATO_MIN");
    // A duplicate segment (a retransmission that was not needed) re-enters quick-ACK mode: the
    // next segments are ACKed one by one again.
    h.inject(data_hdr(1, MSS));
    assert_eq!(h.acks().len(), 22);
    for k in 21..24 {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(h.acks().len(), 25);
    // The rfc profile with delayed ACKs has no quick-ACK mode: 5 ACKs for 10 segments.
    let mut n = Harness::new(
        &TcpConfig { delayed_ack: Some(true), profile: Profile::Rfc, ..Default::default() },
        Link::new(ms(10)),
        Link::new(ms(10)),
    );
    n.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 0..10 {
        n.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(n.acks().len(), 5);
}

#[test]
fn linux_receiver_quickacks_again_after_a_gap_longer_than_its_rto() {
    // `tcp_event_data_recv`: data after a gap longer than the receiver's RTO ("apparently sender
    // failed to restart window") starts quick-ACK mode again; a shorter gap does not. The RTO is
    // the handshake's: SYN-ACK at 0, the first segment at 0 (m = 0), so 0 + max(0, 200 ms).
    let mut h = linux_receiver_after(21);
    // As above: 20 quick ACKs, and the 21st segment waits for the delayed-ACK timer (40 ms).
    assert_eq!(h.acks().len(), 20);
    h.run_until(SimTime(ms(150).as_nanos()));
    assert_eq!(h.acks().len(), 21);
    // 150 ms after the last data: longer than ato, shorter than the RTO: delayed.
    h.inject(data_hdr(1 + 21 * MSS, MSS));
    assert_eq!(h.acks().len(), 21, "a gap shorter than the RTO: the segment waits");
    h.run_until(SimTime(ms(500).as_nanos()));
    assert_eq!(h.acks().len(), 22);
    // 350 ms after the last data, over the 200-ms RTO: quick ACKs again, each at once.
    for k in 22..26 {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(h.acks().len(), 26);
    assert!(h.acks()[22..].iter().all(|a| a.t == SimTime(ms(500).as_nanos())));
}

#[test]
fn linux_receiver_acks_a_full_sized_psh_segment_once_read() {
    // Linux 6.6+ `tcp_measure_rcv_mss`: a full-sized segment with PSH sets ICSK_ACK_PUSHED, and
    // `tcp_cleanup_rbuf` ACKs at once when the read empties the buffer. After the 20 quick ACKs
    // (see above) a lone segment without PSH waits for the timer; one with PSH does not.
    let mut h = linux_receiver_after(20);
    assert_eq!(h.acks().len(), 20);
    h.inject(TcpHdr { flags: tcp_flags::ACK | tcp_flags::PSH, ..data_hdr(1 + 20 * MSS, MSS) });
    assert_eq!(h.acks().len(), 21, "the PSH segment is ACKed at once");
    h.inject(data_hdr(1 + 21 * MSS, MSS));
    assert_eq!(h.acks().len(), 21, "the ACK cleared PUSHED: the next lone segment waits");
    h.run_until(SimTime(ms(100).as_nanos()));
    assert_eq!(h.acks().len(), 22);
    // The rfc profile's receiver (RFC 5681 delayed ACKs) ignores PSH.
    let mut n = Harness::new(
        &TcpConfig { delayed_ack: Some(true), profile: Profile::Rfc, ..Default::default() },
        Link::new(ms(10)),
        Link::new(ms(10)),
    );
    n.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    n.inject(TcpHdr { flags: tcp_flags::ACK | tcp_flags::PSH, ..data_hdr(1, MSS) });
    assert_eq!(n.acks().len(), 0);
}

#[test]
fn psh_ack_off_is_the_receiver_rule_before_linux_6_6() {
    // Before 6.6 `tcp_measure_rcv_mss` set PUSHED only for a segment shorter than rcv_mss: a
    // full-sized PSH segment after the quick ACKs waits with the others, and the second
    // segment's ACK covers both (as without PSH).
    let cfg = TcpConfig { profile: Profile::Linux, psh_ack: Some(false), ..Default::default() };
    let mut h = linux_receiver_with(cfg, 20);
    assert_eq!(h.acks().len(), 20);
    h.inject(TcpHdr { flags: tcp_flags::ACK | tcp_flags::PSH, ..data_hdr(1 + 20 * MSS, MSS) });
    assert_eq!(h.acks().len(), 20, "the full-sized PSH segment waits");
    h.inject(data_hdr(1 + 21 * MSS, MSS));
    assert_eq!(h.acks().len(), 21, "the second full segment is ACKed");
    // A short segment still sets PUSHED (both rules).
    h.inject(data_hdr(1 + 22 * MSS, 500));
    assert_eq!(h.acks().len(), 22, "a short segment is ACKed at once");
}

#[test]
fn linux_receiver_acks_short_segments_unless_they_repeat_one_size() {
    // `tcp_measure_rcv_mss`'s other branch: a segment shorter than rcv_mss sets PUSHED (the ACK
    // goes at once), unless it has the size of the short segment just before it (a sender of
    // small segments): then rcv_mss becomes that size and the ACK waits for the next one.
    let mut h = linux_receiver_after(20);
    let mut seq = 1 + 20 * MSS;
    let mut short = |h: &mut Harness, len: u64| {
        h.inject(data_hdr(seq, len));
        seq += len;
    };
    short(&mut h, 500);
    assert_eq!(h.acks().len(), 21, "a short segment is ACKed at once");
    short(&mut h, 500);
    assert_eq!(h.acks().len(), 21, "the second of one size sets rcv_mss = 500 and waits");
    short(&mut h, 500);
    assert_eq!(h.acks().len(), 22, "two unacknowledged, more than rcv_mss: ACKed");
    short(&mut h, 700);
    assert_eq!(h.acks().len(), 22, "700 B is at least rcv_mss (500): a full segment, no PSH");
    short(&mut h, 300);
    assert_eq!(h.acks().len(), 23, "shorter than rcv_mss (700) again");
}

#[test]
fn linux_sender_puts_psh_on_the_last_segment_of_each_gso_buffer() {
    // Linux `__tcp_transmit_skb` sets PSH on every GSO buffer of two or more segments and
    // `tcp_gso_segment` keeps it on the last segment. At 10 Mbit/s a buffer is two segments
    // (`tcp_tso_autosize`'s minimum), so a PSH segment always follows one sent at the same
    // instant, and about half the segments carry PSH. Profiles without TSO set none.
    for profile in [Profile::Linux, Profile::Rfc] {
        let cfg = TcpConfig { profile, ..Default::default() };
        let fwd = Link::new(ms(10)).rate(Rate(10_000_000), 100 * 1500);
        let mut h = Harness::new(&cfg, fwd, Link::new(ms(10)));
        h.write(2_000_000);
        h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
        let data: Vec<&Sent> = h.data_sent().collect();
        assert!(data.len() > 500, "{profile:?}: the transfer ran");
        let psh = data.iter().filter(|s| s.h.flags & tcp_flags::PSH != 0).count();
        if profile == Profile::Rfc {
            assert_eq!(psh, 0, "no GSO buffers, no PSH");
            continue;
        }
        let share = psh as f64 / data.len() as f64;
        assert!((0.3..=0.5).contains(&share), "PSH on {psh} of {} segments", data.len());
        for w in data.windows(2) {
            if w[1].h.flags & tcp_flags::PSH != 0 {
                assert!(
                    w[0].t == w[1].t && w[0].h.flags & tcp_flags::PSH == 0,
                    "{}: a PSH segment closes a buffer of two or more",
                    w[1].t
                );
            }
        }
    }
}

#[test]
fn a_batch_of_single_segment_writes_leaves_in_gso_buffers() {
    // MPTCP's scheduler hands a subflow one segment at a time: in a batch the sender builds
    // the buffers Linux would (two segments here), each with PSH on its last segment; one
    // segment left over at the end of the batch is a buffer of one, without PSH.
    let cfg = TcpConfig { profile: Profile::Linux, tso: Some(false), ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    h.write(0);
    h.run_until(SimTime(ms(30).as_nanos()));
    h.written += 7 * MSS; // the writes below
    h.ctx(0, |s, _, cx| {
        s.begin_batch();
        for _ in 0..5 {
            s.write(MSS, cx);
        }
        s.end_batch(cx);
    });
    let flags: Vec<bool> = h.data_sent().map(|s| s.h.flags & tcp_flags::PSH != 0).collect();
    assert_eq!(flags, [false, true, false, true, false]);
    // Outside a batch each write is a buffer of its own: no PSH.
    h.ctx(0, |s, _, cx| {
        for _ in 0..2 {
            s.write(MSS, cx);
        }
    });
    assert_eq!(h.data_sent().filter(|s| s.h.flags & tcp_flags::PSH != 0).count(), 2);
}

#[test]
fn sack_blocks_keep_older_blocks_when_the_newest_grows() {
    // RFC 2018 §4: the first block holds the newest segment, the others repeat the most
    // recently reported blocks. Three islands (segments 2, 4 and 6 lost): the ACK for 7 lists
    // [7], [5], [3]; segment 8 extends [7], and the ACK must still list all three.
    let cfg = TcpConfig { profile: Profile::Rfc, ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    h.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in [0, 1, 3, 5, 7, 8] {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    let seg = |a: u64, b: u64| (1 + a * MSS, 1 + b * MSS);
    let acks = h.acks();
    let after7 = acks[acks.len() - 2];
    assert_eq!(after7.h.sack[..after7.h.nsack as usize], [seg(7, 8), seg(5, 6), seg(3, 4)]);
    let after8 = acks[acks.len() - 1];
    assert_eq!(after8.h.sack[..after8.h.nsack as usize], [seg(7, 9), seg(5, 6), seg(3, 4)]);
}

#[test]
fn linux_receiver_compresses_sacks_after_three_duplicates() {
    // `__tcp_ack_snd_check` with data held out of order: three duplicate ACKs for one rcv_nxt
    // go at once, the next SACKs are held until the compressed-ACK timer, min(1 ms, 5 % of the
    // RTT estimate) + 100 µs of slack; here the estimate is 0 (the handshake's sample and the
    // data arrive together), so the timer fires 100 µs after the first held SACK.
    let cfg = TcpConfig { profile: Profile::Linux, sack_compress: Some(true), ..Default::default() };
    let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    h.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 0..21 {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    h.run_until(SimTime(ms(100).as_nanos()));
    assert_eq!(h.acks().len(), 21, "20 quick ACKs and the delayed one");
    let t0 = SimTime(ms(100).as_nanos());
    // Segment 21 is lost: 22..=29 arrive out of order.
    for k in 22..30 {
        h.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(h.acks().len(), 24, "three duplicates at once, five held");
    assert!(h.acks()[21..].iter().all(|a| a.t == t0 && a.h.ack == 1 + 21 * MSS));
    h.run_until(SimTime(t0.as_nanos() + Dur::from_micros(99).as_nanos()));
    assert_eq!(h.acks().len(), 24, "held until the timer");
    h.run_until(SimTime(ms(150).as_nanos()));
    assert_eq!(h.acks().len(), 25, "one ACK for the five held");
    let kick = h.acks()[24];
    assert_eq!(kick.t, SimTime(t0.as_nanos() + Dur::from_micros(100).as_nanos()));
    assert_eq!(kick.h.nsack, 1);
    assert_eq!(kick.h.sack[0], (1 + 22 * MSS, 1 + 30 * MSS), "the held segments' block");
    // More out-of-order data for the same rcv_nxt: the three duplicates are spent, so it is held.
    h.inject(data_hdr(1 + 30 * MSS, MSS));
    assert_eq!(h.acks().len(), 25);
    // The retransmission fills the gap: ACKed at once, carrying the held SACK, and the timer
    // has nothing left to send.
    h.inject(data_hdr(1 + 21 * MSS, MSS));
    assert_eq!(h.acks().len(), 26);
    assert_eq!(h.acks()[25].h.ack, 1 + 31 * MSS);
    h.run_until(SimTime(ms(200).as_nanos()));
    assert_eq!(h.acks().len(), 26);
    // Without `sack_compress` each out-of-order segment is ACKed at once.
    let cfg = TcpConfig { profile: Profile::Linux, sack_compress: Some(false), ..Default::default() };
    let mut n = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
    n.inject(TcpHdr { flags: tcp_flags::SYN, ..Default::default() });
    for k in 1..10 {
        n.inject(data_hdr(1 + k * MSS, MSS));
    }
    assert_eq!(n.acks().len(), 9);
}

/// Fraction of ACKs in the first half of the first recovery answered by a data segment, and
/// cwnd vs ssthresh at the end of that recovery.
fn recovery_send_ratio(prr: bool) -> (f64, u64, u64) {
    recovery_send_ratio_with(&TcpConfig { prr: Some(prr), ..newreno(true) })
}

fn recovery_send_ratio_with(cfg: &TcpConfig) -> (f64, u64, u64) {
    let (f, r) = bottleneck();
    let mut h = Harness::new(cfg, f, r);
    h.drop_data = drop_data_indices(&[100]);
    h.write(400 * MSS);
    h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    let start = h.trace.iter().position(|s| s.in_recovery).expect("recovery entered");
    let end = start + h.trace[start..].iter().position(|s| !s.in_recovery).expect("recovery ended");
    let (t0, t1) = (h.trace[start].t, h.trace[end].t);
    let acks: Vec<SimTime> = h.snd_rx.iter().map(|(t, _)| *t).filter(|&t| t >= t0 && t < t1).collect();
    let half = acks[acks.len() / 2];
    let sent = h.data_sent().filter(|s| s.t > t0 && s.t < half).count();
    (sent as f64 / (acks.len() / 2) as f64, h.trace[end].cwnd, h.trace[end].ssthresh)
}

#[test]
fn prr_spreads_the_reduction_over_the_recovery() {
    // NewReno halves: RFC 6675 waits until pipe falls below cwnd (about half the ACKs) before
    // sending anything new; PRR sends about one segment per two ACKs from the start.
    let (with, cwnd, ssthresh) = recovery_send_ratio(true);
    let (without, _, _) = recovery_send_ratio(false);
    eprintln!("first-half send ratio: prr {with:.3}, rfc6675 {without:.3}");
    assert!((0.35..=0.65).contains(&with), "prr: {with:.3} segments per ACK");
    assert!(without < 0.2, "rfc 6675: {without:.3} segments per ACK");
    assert_eq!(cwnd, ssthresh, "RFC 6937: cwnd = ssthresh on leaving recovery");
}

// ---------------------------------------------------------------------------------------------
// RACK-TLP (RFC 8985).

fn rack_cfg(rack: bool) -> TcpConfig {
    // The rfc profile with RACK switched on or off: every other behaviour is the same.
    TcpConfig { rack: Some(rack), profile: Profile::Rfc, ..Default::default() }
}

/// Bulk transfer over the 10 Mbit/s, 20 ms RTT bottleneck (min_RTT/4 ≈ 5.3 ms; a segment takes
/// 1.2 ms to serialize), with every 40th data packet from the 40th on delayed by 3.8 ms
/// (overtaken by three segments) and packet 20 by 1.5 ms (overtaken by one). Returns duplicate
/// segments at the receiver, retransmissions, recoveries, and whether RACK saw reordering.
fn reordering_run(rack: bool, shallow_first: bool) -> (u64, usize, u64, bool) {
    let (f, r) = bottleneck();
    let mut h = Harness::new(&rack_cfg(rack), f, r);
    h.delay_data = Box::new(move |i, hd| match i {
        _ if hd.payload == 0 => Dur::ZERO,
        20 if shallow_first => Dur::from_micros(1500),
        i if i >= 40 && i % 40 == 0 => Dur::from_micros(3800),
        _ => Dur::ZERO,
    });
    h.write(3000 * MSS);
    h.run_until(SimTime(Dur::from_secs(5).as_nanos()));
    assert_eq!(h.snd.acked_bytes(), 3000 * MSS, "rack = {rack}: transfer incomplete");
    (h.rcv.dup_segments, h.retransmissions().len(), h.snd.fast_retransmit_count(), h.snd.reordering_seen())
}

#[test]
fn rack_tolerates_reordering_within_a_quarter_of_min_rtt() {
    let (dup, rxt, rec, seen) = reordering_run(true, true);
    let (dup3, rxt3, rec3, _) = reordering_run(false, true);
    eprintln!(
        "reordering: rack {dup} dup, {rxt} rxt, {rec} recoveries; dupthresh {dup3} dup, {rxt3} rxt, {rec3} recoveries"
    );
    assert!(seen, "the shallow reordering of packet 20 was not seen");
    assert_eq!((dup, rxt, rec), (0, 0, 0), "RACK retransmitted reordered segments");
    // RFC 6675's DupThresh of 3 takes every reordering by three segments for a loss.
    assert!(rxt3 >= 25 && dup3 as usize == rxt3, "dupthresh: {rxt3} retransmissions, {dup3} duplicates");
    assert!(rec3 >= 25, "dupthresh: {rec3} needless recoveries");
    // Not modelled (no DSACK): a connection that has never seen reordering uses a zero window
    // once three segments are SACKed (RFC 8985 §6.2 step 4), and a repaired segment says nothing
    // about reordering, so deep reorderings are resent until a shallow one is seen.
    let (dup0, rxt0, _, seen0) = reordering_run(true, false);
    eprintln!("rack, deep reordering only: {dup0} dup, {rxt0} rxt, seen {seen0}");
    assert!(rxt0 >= 1 && rxt0 < rxt3, "rack without a shallow reordering first: {rxt0} rxt vs {rxt3}");
}

/// Drops data packet 30 and the first retransmission of the same sequence number.
fn drop_segment_and_its_repair() -> DropFn {
    let mut target = None;
    let mut repairs_dropped = 0;
    Box::new(move |_, i, h| {
        if h.payload == 0 {
            return false;
        }
        if i == 30 {
            target = Some(h.seq);
            return true;
        }
        if Some(h.seq) == target && repairs_dropped == 0 {
            repairs_dropped += 1;
            return true;
        }
        false
    })
}

#[test]
fn rack_recovers_a_lost_retransmission_without_a_timeout() {
    let mut out = vec![];
    for rack in [true, false] {
        let (f, r) = bottleneck();
        let mut h = Harness::new(&rack_cfg(rack), f, r);
        h.drop_data = drop_segment_and_its_repair();
        h.write(2000 * MSS);
        h.run_until(SimTime(Dur::from_secs(5).as_nanos()));
        assert_eq!(h.snd.acked_bytes(), 2000 * MSS, "rack = {rack}");
        let lost = h.log.iter().filter(|s| s.dir == Dir::Fwd).nth(30).expect("30 data packets").h.seq;
        let rxt: Vec<_> = h.retransmissions().iter().map(|s| (s.t, s.h.seq)).collect();
        out.push((h.snd.rto_count(), rxt.clone(), lost));
        if rack {
            assert_eq!(h.snd.rto_count(), 0, "RACK needed a timeout: {rxt:?}");
            assert_eq!(rxt.iter().map(|x| x.1).collect::<Vec<_>>(), vec![lost, lost], "the segment, twice");
            // The second repair follows the first by about one RTT (RACK sees the first repair
            // SACKed around), not by an RTO (at least 200 ms).
            let gap = rxt[1].0.since(rxt[0].0);
            assert!(gap < ms(80), "second repair {gap:?} after the first");
        } else {
            assert!(h.snd.rto_count() >= 1, "RFC 6675 recovered a lost retransmission without an RTO");
        }
    }
    eprintln!("lost retransmission: {out:?}");
}

#[test]
fn tlp_recovers_a_tail_loss_in_about_two_srtt() {
    let mut done = vec![];
    for rack in [true, false] {
        let (f, r) = bottleneck();
        let mut h = Harness::new(&rack_cfg(rack), f, r);
        let total = 40 * MSS;
        // The last two segments of the transfer are lost (first transmissions only).
        let mut seen = std::collections::BTreeSet::new();
        h.drop_data = Box::new(move |_, _, hd| hd.payload > 0 && hd.seq + 2 * MSS > total && seen.insert(hd.seq));
        h.write(total);
        h.run_until(SimTime(Dur::from_secs(5).as_nanos()));
        assert_eq!(h.snd.acked_bytes(), total, "rack = {rack}");
        let (t_end, _) = *h.snd_rx.iter().find(|(_, a)| a.ack == total + 1).expect("all acked");
        done.push(t_end);
        let rxt = h.retransmissions();
        if rack {
            assert_eq!(h.snd.rto_count(), 0);
            assert_eq!(h.snd.tlp_counts().0, 1, "one probe");
            // The probe is the last segment, sent 2·SRTT after the last ACK before it.
            let probe = rxt[0];
            assert_eq!(probe.h.seq + probe.h.payload as u64, total + 1, "probe = last segment");
            let (t_ack, _) = *h.snd_rx.iter().filter(|(t, _)| *t <= probe.t).last().unwrap();
            let srtt = h.snd.srtt().unwrap().as_nanos();
            let wait = probe.t.since(t_ack).as_nanos();
            assert!(wait > srtt * 3 / 2 && wait < srtt * 3, "probe {wait} ns after the last ACK (SRTT {srtt} ns)");
            // The probe's SACK lets RACK mark the other segment lost at once.
            assert_eq!(rxt.len(), 2);
            assert!(rxt[1].t.since(probe.t).as_nanos() < srtt * 2);
        } else {
            assert!(h.snd.rto_count() >= 1, "the tail loss needs an RTO without TLP");
        }
    }
    eprintln!("tail loss: all acked at {} (rack) vs {} (rfc)", done[0], done[1]);
    assert!(done[0] + ms(100) < done[1], "TLP should beat the 200 ms RTO floor");
}

/// Over the first recovery after a burst of losses (data packets 100–159, most of a window):
/// the ACKs that only SACKed (the ACK that starts the recovery excluded) and the data segments
/// sent on them, the same for ACKs that advanced `snd_una`, and ssthresh − in-flight (segments)
/// just before the first ACK that advanced `snd_una`.
fn burst_recovery_sends(rule: PrrRule) -> ((usize, usize), (usize, usize), i64) {
    let (f, r) = bottleneck();
    let cfg = TcpConfig { prr: Some(true), prr_rule: Some(rule), ..newreno(true) };
    let mut h = Harness::new(&cfg, f, r);
    h.drop_data = Box::new(|_, i, d| d.payload > 0 && (100..160).contains(&i));
    h.write(400 * MSS);
    h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
    assert_eq!(h.snd.rto_count(), 0, "{rule:?}: repaired by the recovery");
    let start = h.trace.iter().position(|s| s.in_recovery).expect("recovery entered");
    let end = start + h.trace[start..].iter().position(|s| !s.in_recovery).expect("recovery ended");
    let (t0, t1) = (h.trace[start].t, h.trace[end].t);
    let una0 = h.trace[start].snd_una;
    let first_adv = h.trace[start..end].iter().position(|s| s.snd_una > una0).expect("a partial ACK");
    let before = &h.trace[start + first_adv - 1];
    let deficit = (before.ssthresh as i64 - before.in_flight as i64) / MSS as i64;
    let mut prev = h.snd_rx.iter().take_while(|(t, _)| *t <= t0).last().map_or(0, |(_, a)| a.ack);
    let (mut dup, mut adv) = ((0, 0), (0, 0));
    for (t, a) in h.snd_rx.iter().filter(|(t, _)| *t > t0 && *t < t1) {
        let sent = h.data_sent().filter(|s| s.t == *t).count();
        let c = if a.ack > prev { &mut adv } else { &mut dup };
        *c = (c.0 + 1, c.1 + sent);
        prev = prev.max(a.ack);
    }
    (dup, adv, deficit)
}

#[test]
fn linux_prr_adds_the_slow_start_segment_only_on_acks_that_advance_snd_una() {
    // With most of a window lost, pipe falls below ssthresh as the recovery starts. RFC 6937's
    // PRR-SSRB then sends one segment more than each ACK delivers, on every ACK, until pipe is
    // back at ssthresh; Linux's `tcp_cwnd_reduction` keeps packet conservation (PRR-CRB) on an
    // ACK that only SACKs and adds the segment only on one that advances snd_una without
    // marking new losses, so the deficit stays until the partial ACKs.
    let (lin_dup, lin_adv, lin_deficit) = burst_recovery_sends(PrrRule::Linux);
    let (rfc_dup, _, rfc_deficit) = burst_recovery_sends(PrrRule::Rfc6937);
    eprintln!(
        "SACK-only ACKs, segments: linux {lin_dup:?}, rfc6937 {rfc_dup:?}; advancing: linux {lin_adv:?}; \
         ssthresh - pipe before the first partial ACK: linux {lin_deficit}, rfc6937 {rfc_deficit}"
    );
    // Each SACK-only ACK delivers one segment (the receiver ACKs every out-of-order segment).
    assert_eq!(lin_dup.0, rfc_dup.0, "the same losses, the same SACK-only ACKs");
    assert!(lin_dup.1 <= lin_dup.0, "linux sends at most what SACK-only ACKs deliver: {lin_dup:?}");
    assert!(rfc_dup.1 >= rfc_dup.0 + 3, "rfc6937 slow-starts on SACK-only ACKs: {rfc_dup:?}");
    assert!(lin_deficit >= 3 && rfc_deficit <= 0, "deficits: linux {lin_deficit}, rfc6937 {rfc_deficit}");
    assert!(lin_adv.1 > lin_adv.0, "linux: advancing ACKs slow-start back to ssthresh: {lin_adv:?}");
}

#[test]
fn ns3_prr_reduces_later_than_linux_prr() {
    // ns-3.44's TcpPrrRecovery counts one extra segment per duplicate ACK while prr_delivered <
    // RecoverFS, so in the first half of a one-loss recovery it answers about every ACK (the
    // window shrinks only later); Linux's PRR about every second one (β = 0.5).
    let ns3 = TcpConfig { prr: Some(true), prr_rule: Some(PrrRule::Ns3), ..newreno(true) };
    let (r_ns3, cwnd, ssthresh) = recovery_send_ratio_with(&ns3);
    let (r_linux, _, _) = recovery_send_ratio(true);
    eprintln!("first-half send ratio: ns-3 prr {r_ns3:.3}, linux prr {r_linux:.3}");
    assert!((0.85..=1.1).contains(&r_ns3), "ns-3 prr: {r_ns3:.3} segments per ACK");
    assert!(r_ns3 > r_linux + 0.3, "ns-3 {r_ns3:.3} vs linux {r_linux:.3}");
    assert_eq!(cwnd, ssthresh, "cwnd = ssthresh on leaving recovery (TcpSocketBase::ProcessAck)");
}

#[test]
fn ns3_pipe_counts_a_sacked_retransmission_until_it_is_acknowledged() {
    // Segments 30 and 31 lost, and the first retransmission of 30 lost too: the retransmission
    // of 31 arrives and is SACKed while 30 stays a hole (until the RTO repairs it). RFC 6675's
    // pipe no longer counts the SACKed retransmission; ns-3.44's `BytesInFlight()` does (a SACK
    // clears a segment's lost flag, not its retransmitted one), so from that ACK on the ns-3
    // sender keeps one segment less in the network, with the same cwnd and the same count.
    let run = |rule| {
        let (f, r) = bottleneck();
        let cfg = TcpConfig { pipe_rule: Some(rule), ..newreno(true) };
        let mut h = Harness::new(&cfg, f, r);
        let (mut x, mut x_rxt_dropped) = (None, false);
        h.drop_data = Box::new(move |_, i, d| {
            if d.payload == 0 {
                return false;
            }
            if i == 30 {
                x = Some(d.seq);
            }
            let rxt_of_x = x == Some(d.seq) && i > 30 && !x_rxt_dropped;
            x_rxt_dropped |= rxt_of_x;
            i == 30 || i == 31 || rxt_of_x
        });
        h.write(1 << 30);
        h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
        h
    };
    let (rfc, ns3) = (run(PipeRule::Rfc6675), run(PipeRule::Ns3));
    let lost: Vec<_> = rfc.data_sent().filter(|s| s.dropped).map(|s| s.h.seq).collect();
    let (x, y) = (lost[0], lost[1]);
    assert_eq!(y, x + MSS);
    let rxt = rfc.retransmissions();
    assert_eq!(rxt.iter().take(2).map(|s| (s.h.seq, s.dropped)).collect::<Vec<_>>(), [(x, true), (y, false)]);
    // The first ACK that SACKs the retransmission of y (x still missing).
    let (t_s, ack) = rfc
        .snd_rx
        .iter()
        .find(|(t, a)| *t > rxt[1].t && a.sack[..a.nsack as usize].iter().any(|b| b.0 <= y && y < b.1))
        .unwrap();
    assert_eq!(ack.ack, x, "x is still the hole");
    let sent_before = |h: &Harness| h.data_sent().filter(|s| s.t < *t_s).map(|s| (s.t, s.h.seq)).collect::<Vec<_>>();
    assert_eq!(sent_before(&rfc), sent_before(&ns3), "the rules agree until a retransmission is SACKed");
    let at = |h: &Harness| h.trace.iter().rev().find(|s| s.t <= *t_s).unwrap().clone();
    let (a, b) = (at(&rfc), at(&ns3));
    assert!(a.in_recovery && b.in_recovery);
    assert_eq!((a.cwnd, a.in_flight), (b.cwnd, b.in_flight), "both fill the same window");
    assert_eq!(a.snd_max - b.snd_max, MSS, "ns-3 counts the SACKed retransmission: one segment less sent");
    // Until the RTO repairs x, the ns-3 sender stays one segment behind.
    let t_rto = ns3.notice_log.iter().find(|(_, n)| matches!(n, TransportEvent::RtoFired { .. })).unwrap().0;
    let before_rto = |h: &Harness| h.trace.iter().rev().find(|s| s.t < t_rto).unwrap().clone();
    let (a, b) = (before_rto(&rfc), before_rto(&ns3));
    assert_eq!((a.snd_una, b.snd_una), (x, x), "x repaired only by the timeout");
    assert_eq!(a.snd_max - b.snd_max, MSS);
    // The timeout clears the retransmitted flags (ns-3 `ResetSentList`): once everything is
    // acknowledged the two counts agree again.
    assert!(ns3.snd.acked_bytes() > 1 << 20 && ns3.snd.in_flight() <= ns3.snd.cwnd());
}

#[test]
fn ssthresh_rules_take_flight_size_pipe_or_cwnd() {
    // Six consecutive segments of one window lost, SACK on, ACK every segment: recovery starts
    // on the ACK that SACKs the third segment above the hole, when all six are deemed lost
    // (RFC 6675 IsLost). FlightSize counts them and the SACKed ones; pipe counts neither.
    let mut got = vec![];
    for rule in [SsthreshRule::FlightSize, SsthreshRule::Pipe, SsthreshRule::Cwnd, SsthreshRule::FlightCapped] {
        let (f, r) = bottleneck();
        let cfg = TcpConfig { ssthresh_rule: Some(rule), ..newreno(true) };
        let mut h = Harness::new(&cfg, f, r);
        h.drop_data = drop_data_indices(&[30, 31, 32, 33, 34, 35]);
        h.write(1 << 30);
        h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
        let i = h.trace.iter().position(|s| s.in_recovery).unwrap();
        let before = &h.trace[i - 1];
        let flight = before.snd_max - before.snd_una;
        let want = match rule {
            SsthreshRule::FlightSize => flight / 2,
            SsthreshRule::Pipe => (flight - 9 * MSS) / 2,
            SsthreshRule::Cwnd => before.cwnd / 2,
            SsthreshRule::FlightCapped => flight.min(before.cwnd) / 2,
        };
        assert_eq!(h.trace[i].ssthresh, want, "{rule:?}: flight {flight}, cwnd {}", before.cwnd);
        got.push(want);
    }
    assert!(got[1] < got[2] && got[2] < got[0], "pipe < cwnd < FlightSize here: {got:?}");
    assert_eq!(got[3], got[2], "FlightSize above cwnd here, so the capped rule takes cwnd: {got:?}");
}

/// A paced sender that pacing (not cwnd) stops has data waiting and room in its window: it is
/// not application-limited, so the window it uses may grow (Linux's `tcp_is_cwnd_limited` for a
/// paced bulk sender). Before, the flag kept whatever the previous attempt left, here "nothing to
/// send" from the idle period, so an ACK arriving before the flight reached cwnd would not have
/// grown it.
#[test]
fn a_send_stopped_by_pacing_counts_as_window_limited() {
    for rack in [false, true] {
        let cfg = TcpConfig { pacing: Some(true), rack: Some(rack), ..newreno(true) };
        let mut h = Harness::new(&cfg, Link::new(ms(10)), Link::new(ms(10)));
        h.write(MSS);
        h.run_until(SimTime(Dur::from_millis(200).as_nanos()));
        assert_eq!(h.snd.acked_bytes(), MSS);
        assert!(!h.snd.cwnd_limited(), "idle: nothing to send");
        let cwnd = h.snd.cwnd();
        h.write(100 * MSS);
        // The first segment leaves at once; pacing holds the second (cwnd has room for ten).
        assert_eq!(h.snd.snd_max(), 1 + 2 * MSS, "rack {rack}");
        assert!(h.snd.cwnd_limited(), "rack {rack}: held back by pacing only, yet application-limited");
        assert_eq!(h.snd.cwnd(), cwnd);
    }
}

/// Linux `tcp_cwnd_restart` written out independently: (cwnd, ssthresh) in segments after an
/// idle period of `idle` with RTO `rto`.
fn linux_restart(cwnd: u64, ssthresh: u64, iw: u64, idle: Dur, rto: Dur) -> (u64, u64) {
    let restart = iw.min(cwnd);
    let ssthresh = ssthresh.max((cwnd >> 1) + (cwnd >> 2));
    let (mut c, mut delta) = (cwnd, idle.as_nanos() as i128);
    loop {
        delta -= rto.as_nanos() as i128;
        if delta <= 0 || c <= restart {
            break;
        }
        c >>= 1;
    }
    (c.max(restart), ssthresh)
}

/// Slow start after idle, per profile: a 400-segment transfer grows cwnd (no loss, a 10-MB
/// buffer), the sender idles, the application writes again. Linux halves cwnd once per RTO of
/// idle beyond the first down to min(IW, cwnd) and raises ssthresh to ¾ cwnd; RFC 5681 §4.1 sets
/// cwnd to the restart window; FreeBSD does that and raises ssthresh; ns-3 leaves cwnd alone, as
/// does any profile after an idle period within one RTO or with the key off.
#[test]
fn slow_start_after_idle_follows_each_profiles_rule() {
    let mss = MSS;
    for (profile, idle_rtos) in [
        (Profile::Linux, 0.5),
        (Profile::Linux, 1.5),
        (Profile::Linux, 2.5),
        (Profile::Linux, 30.0),
        (Profile::Rfc, 2.5),
        (Profile::Freebsd, 2.5),
        (Profile::Ns3, 2.5),
    ] {
        for key in [None, Some(false)] {
            let (f, r) = bottleneck();
            let cfg = TcpConfig { profile, hystart: Some(false), slow_start_after_idle: key, ..Default::default() };
            let mut h = Harness::new(&cfg, f, r);
            h.write(400 * mss);
            h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
            assert_eq!(h.snd.snd_una(), h.snd.snd_max(), "{profile:?}: the first transfer is done");
            let (c0, s0, rto) = (h.snd.cwnd() / mss, h.snd.ssthresh(), h.snd.rto());
            assert!(c0 > 40, "{profile:?}: cwnd grew ({c0})");
            let last_tx = h.log.iter().filter(|s| s.dir == Dir::Fwd && s.h.payload > 0).map(|s| s.t).max().unwrap();
            let idle = Dur((rto.as_nanos() as f64 * idle_rtos) as u64);
            h.run_until(last_tx + idle);
            let before = h.snd.cwnd();
            h.write(mss);
            let (c1, s1) = (h.snd.cwnd(), h.snd.ssthresh());
            let on = key.unwrap_or(profile != Profile::Ns3) && idle_rtos > 1.0;
            let want = match (on, profile) {
                (false, _) => (before, s0),
                (true, Profile::Linux) => {
                    let (c, s) = linux_restart(c0, s0 / mss, 10, idle, rto);
                    (c * mss, if s0 == INITIAL_SSTHRESH { s0 } else { s * mss })
                }
                (true, Profile::Rfc) => (10 * mss, s0),
                (true, _) => (10 * mss, s0.max(before - (before >> 2))),
            };
            assert_eq!((c1, s1), want, "{profile:?}, idle {idle_rtos} RTO, key {key:?}: cwnd before {c0} segments");
        }
    }
    // The halving itself: cwnd 100, IW 10, RTO 300 ms.
    let r = ms(300);
    assert_eq!(linux_restart(100, 1000, 10, ms(500), r).0, 50);
    assert_eq!(linux_restart(100, 1000, 10, ms(700), r).0, 25);
    assert_eq!(linux_restart(100, 1000, 10, ms(2000), r).0, 10);
}

/// Linux's cwnd validation (`tcp_cwnd_application_limited`, under `tcp_slow_start_after_idle`):
/// an application that keeps only one segment out for seconds lets a large window decay, by half
/// towards what it used (at least IW) per RTO; with the key off the window stays.
#[test]
fn an_application_limited_window_decays_towards_what_was_used() {
    let mss = MSS;
    let mut ends = vec![];
    for key in [None, Some(false)] {
        let (f, r) = bottleneck();
        let cfg = TcpConfig { hystart: Some(false), slow_start_after_idle: key, ..Default::default() };
        let mut h = Harness::new(&cfg, f, r);
        h.write(400 * mss);
        let mut t = SimTime(Dur::from_secs(3).as_nanos());
        h.run_until(t);
        let c0 = h.snd.cwnd() / mss;
        // One segment every 50 ms (well within the RTO: no restart after idle) for 3 s.
        for _ in 0..60 {
            h.write(mss);
            t = t + ms(50);
            h.run_until(t);
        }
        ends.push((c0, h.snd.cwnd() / mss));
    }
    let ((c0, decayed), (k0, kept)) = (ends[0], ends[1]);
    assert!(c0 > 40 && decayed < c0 / 4 && decayed >= 10, "linux: {c0} → {decayed}");
    assert_eq!(kept, k0, "with the key off the window stays");
}

/// A tail loss probe that the receiver's delayed ACK makes spurious (found by
/// `overhead_never_reorders_a_flows_segments`): the last two segments (one full, one short) wait
/// at the receiver for its delayed-ACK timer, the PTO (2·SRTT, no WCDelAckT with more than one
/// segment out) fires first and resends the short one; the delayed ACK then covers everything
/// while the probe is still on the wire. The flow completes and the pipe never counts bytes
/// already acknowledged.
#[test]
fn a_probe_overtaken_by_a_delayed_ack_is_not_in_the_pipe() {
    let cfg = TcpConfig {
        sack: true,
        rack: Some(true),
        delayed_ack: Some(true),
        overhead: Some(Dur::from_micros(1603)),
        rcv_buf: Some(64 * MSS),
        ..newreno(true)
    };
    let fwd = Link::new(ms(5)).rate(Rate(20_000_000), 20 * 1500);
    let mut h = Harness::new(&cfg, fwd, Link::new(ms(5)));
    h.check = true;
    h.keep_log = true;
    let bytes = 201_380;
    h.write(bytes);
    h.run_until(SimTime(Dur::from_secs(60).as_nanos()));
    assert_eq!(h.rcv.delivered_bytes(), Some(bytes));
    assert_eq!(h.snd.tlp_counts(), (1, 0), "one probe, no congestion response");
    // The bottleneck's 20-packet buffer overflowed in slow start (those losses were repaired
    // by SACK recovery); the probe is the last retransmission, of the short tail segment.
    let last = *h.retransmissions().last().expect("retransmissions");
    assert_eq!((last.h.seq + last.h.payload as u64, last.h.payload), (bytes + 1, 108));
}

// ---------------------------------------------------------------------------------------------
// ECN (RFC 3168 §6.1).

fn with_ecn(mut c: TcpConfig) -> TcpConfig {
    c.ecn = true;
    c
}

/// §6.1.1: ECE+CWR on the SYN, ECE alone on the SYN-ACK; then ECT(0) on new data and Not-ECT
/// on pure ACKs (§6.1.4). Without `ecn` at either end nothing is negotiated and every packet is
/// Not-ECT; the SYN of a default config carries neither flag.
#[test]
fn ecn_is_negotiated_on_the_handshake() {
    use crate::packet::Ecn;
    let both = tcp_flags::ECE | tcp_flags::CWR;
    for (snd_ecn, rcv_ecn) in [(true, true), (true, false), (false, true), (false, false)] {
        let (f, r) = bottleneck();
        let mut h = Harness::new(&TcpConfig { ecn: snd_ecn, ..newreno(true) }, f, r);
        h.rcv = TcpReceiver::new(&TcpConfig { ecn: rcv_ecn, ..newreno(true) }, &setup());
        h.write(100_000);
        h.run_until(SimTime(Dur::from_secs(1).as_nanos()));
        let syn = h.log.iter().find(|s| s.h.flags & tcp_flags::SYN != 0 && s.dir == Dir::Fwd).unwrap();
        assert_eq!(syn.h.flags & both, if snd_ecn { both } else { 0 });
        let syn_ack = h.log.iter().find(|s| s.h.flags & tcp_flags::SYN != 0 && s.dir == Dir::Rev).unwrap();
        let agreed = snd_ecn && rcv_ecn;
        assert_eq!(syn_ack.h.flags & both, if agreed { tcp_flags::ECE } else { 0 }, "({snd_ecn}, {rcv_ecn})");
        assert_eq!(h.snd.ecn_ok(), agreed);
        let want = if agreed { Ecn::Ect0 } else { Ecn::NotEct };
        assert!(h.data_sent().all(|s| s.ecn == want), "({snd_ecn}, {rcv_ecn}): data codepoints");
        assert!(h.log.iter().filter(|s| s.h.payload == 0).all(|s| s.ecn == Ecn::NotEct), "control segments");
        assert_eq!(h.snd.acked_bytes(), 100_000);
    }
}

/// §6.1.2–6.1.3: several CE marks within one window give one reduction (NewReno: cwnd and
/// ssthresh to half the flight size; CUBIC: β = 0.7 of it), no retransmission and no
/// recovery; the next new data segment carries CWR, after which the receiver stops echoing ECE.
/// A mark a window later reduces again.
#[test]
fn ce_marks_reduce_once_per_window_without_retransmitting() {
    let cubic = TcpConfig { cc: CcConfig::Cubic(Default::default()), ..newreno(true) };
    for (name, cfg, beta) in [("newreno", newreno(true), 0.5), ("cubic", cubic, 0.7)] {
        let (f, r) = bottleneck();
        let mut h = Harness::new(&with_ecn(cfg), f, r);
        // Data packets 40..44 marked (one window), then 400 (many windows later).
        h.mark_data = Box::new(|_, i, hd| hd.payload > 0 && ((40..44).contains(&i) || i == 400));
        h.write(4 << 20);
        h.run_until(SimTime(Dur::from_secs(3).as_nanos()));
        assert!(h.retransmissions().is_empty(), "{name}: ECN retransmits nothing");
        assert!(h.trace.iter().all(|s| !s.in_recovery), "{name}: no loss recovery");
        assert_eq!(h.rcv.ce_segments(), 5, "{name}");
        assert_eq!(h.snd.ecn_reductions(), 2, "{name}: one reduction per marked window");
        // The first reduction: cwnd = ssthresh = β·FlightSize.
        let i = h.trace.iter().position(|s| s.ssthresh < INITIAL_SSTHRESH).unwrap();
        let before = &h.trace[i - 1];
        let flight = (before.snd_max - before.snd_una) as f64;
        let after = &h.trace[i];
        assert_eq!(after.cwnd, after.ssthresh, "{name}");
        assert!(
            (after.ssthresh as f64 - beta * flight).abs() <= MSS as f64,
            "{name}: {} vs {beta}·{flight}",
            after.ssthresh
        );
        // ECE on every ACK from the first marked arrival until the CWR segment arrived.
        let cwr: Vec<_> = h.data_sent().filter(|s| s.h.flags & tcp_flags::CWR != 0).collect();
        assert_eq!(cwr.len(), 2, "{name}: CWR once per reduction");
        assert!(cwr[0].h.seq >= before.snd_max, "{name}: CWR rides on new data");
        // The receiver echoes ECE from the first marked arrival until the CWR segment arrives:
        // ACKs covering the CWR segment and not yet the next marked one carry none.
        let fwd: Vec<_> = h.log.iter().filter(|s| s.dir == Dir::Fwd).collect();
        let (first_mark, second_mark) = (fwd[40].h.seq, fwd[400].h.seq);
        let echoes = |lo: u64, hi: u64| {
            h.snd_rx.iter().filter(|(_, a)| a.ack > lo && a.ack <= hi && a.flags & tcp_flags::ECE != 0).count()
        };
        assert!(echoes(first_mark, cwr[0].h.seq) >= 1, "{name}: the mark is echoed");
        assert_eq!(echoes(cwr[0].h.seq, second_mark), 0, "{name}: the echo stops once CWR has arrived");
        assert!(echoes(second_mark, u64::MAX) >= 1, "{name}: the second mark is echoed");
    }
}

/// §6.1.5: retransmissions go out Not-ECT, even on an ECN connection.
#[test]
fn retransmissions_are_not_ect() {
    use crate::packet::Ecn;
    let (f, r) = bottleneck();
    let mut h = Harness::new(&with_ecn(newreno(true)), f, r);
    h.drop_data = drop_data_indices(&[30]);
    h.write(1 << 20);
    h.run_until(SimTime(Dur::from_secs(2).as_nanos()));
    let rxt = h.retransmissions();
    assert_eq!(rxt.len(), 1);
    assert_eq!(rxt[0].ecn, Ecn::NotEct);
    assert!(h.data_sent().filter(|s| s.h.seq != rxt[0].h.seq).all(|s| s.ecn == Ecn::Ect0));
    // Loss recovery is a reduction too: the next new segment carries CWR.
    assert_eq!(h.data_sent().filter(|s| s.h.flags & tcp_flags::CWR != 0).count(), 1);
}
