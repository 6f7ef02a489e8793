//! The TFRC sender (RFC 5348 §4): a bounded send buffer drained at the allowed rate X.

use super::{equation, SegmentSize, TfrcConfig, TfrcHdr, DATA_HEADER, SMALL_PACKET_MIN_GAP};
use crate::engine::TimerKind;
use crate::packet::{Dir, PacketData, UdpHdr, IPV4_HEADER, L4, UDP_HEADER};
use crate::time::{Dur, SimTime};
use crate::trace::probe::{ProbeEvent, ProbeKind};
use crate::transport::{notice_mask, Datagram, Endpoint, EndpointSetup, FlowCtx, Outgoing, Service, TransportEvent};
use crate::units::Limit;
use std::collections::VecDeque;

/// The pacing timer: the head of the send buffer is due.
const SEND: TimerKind = TimerKind(0);
/// The no-feedback timer (§4.4).
const NO_FEEDBACK: TimerKind = TimerKind(1);

/// The sending end of a TFRC flow.
pub struct TfrcSender {
    src_port: u16,
    dst_port: u16,
    max_payload: u32,
    send_buffer: Limit,
    oscillation_prevention: bool,
    t_mbi: f64,
    queue: VecDeque<Datagram>,
    queued_bytes: u64,
    /// Datagrams (and their payload bytes) taken from the application: sent at once or queued,
    /// not dropped. [`TransportEvent::SendSpace`] reports them.
    taken_pkts: u64,
    taken_bytes: u64,
    next_seq: u64,
    /// Allowed rate X and the instantaneous rate actually paced at (§4.5), payload bytes/s.
    x: f64,
    x_inst: f64,
    /// The X_recv set (§4.3): (time received, X_recv), bytes/s.
    x_recv_set: Vec<(SimTime, f64)>,
    /// Loss event rate from the last feedback.
    p: f64,
    /// RTT estimate R and the §4.5 R_sqmean, seconds; `None` before the first feedback.
    r: Option<f64>,
    r_sqmean: f64,
    /// Time of the last doubling in slow start (§4.3 step 4).
    tld: SimTime,
    /// Time and payload of the last packet sent: the next may leave `payload / X_inst` later.
    last_send: Option<(SimTime, u32)>,
    /// How `s` is set (§4.1), and the nominal `s` in bytes (`None`: the running mean).
    segment: SegmentSize,
    nominal_s: Option<f64>,
    /// Sum of the payloads sent (their mean is `s` under `segment_size = "mean"`).
    payload_sum: u64,
    sent: u64,
    buffer_drops: u64,
    feedbacks: u64,
    no_feedback_expiries: u64,
    /// ∫X dt since the first packet, for the time-weighted mean X.
    x_area: f64,
    x_since: SimTime,
    first_send: SimTime,
}

impl TfrcSender {
    pub fn new(c: &TfrcConfig, s: &EndpointSetup) -> Self {
        let max_payload = s.mtu_bytes - IPV4_HEADER - UDP_HEADER - DATA_HEADER;
        TfrcSender {
            src_port: s.src_port,
            dst_port: s.dst_port,
            max_payload,
            segment: c.segment(),
            nominal_s: c.segment().nominal(max_payload),
            send_buffer: c.send_buffer,
            oscillation_prevention: c.oscillation_prevention,
            t_mbi: c.t_mbi.as_secs_f64(),
            queue: VecDeque::new(),
            queued_bytes: 0,
            taken_pkts: 0,
            taken_bytes: 0,
            next_seq: 0,
            x: 0.0,
            x_inst: 0.0,
            x_recv_set: Vec::new(),
            p: 0.0,
            r: None,
            r_sqmean: 0.0,
            tld: SimTime::ZERO,
            last_send: None,
            payload_sum: 0,
            sent: 0,
            buffer_drops: 0,
            feedbacks: 0,
            no_feedback_expiries: 0,
            x_area: 0.0,
            x_since: SimTime::ZERO,
            first_send: SimTime::ZERO,
        }
    }

    /// The segment size s (§4.1), bytes: the nominal size, or under `"mean"` the mean payload
    /// of the packets sent so far.
    pub fn s(&self) -> f64 {
        self.nominal_s.unwrap_or_else(|| self.mean_payload())
    }

    /// The mean payload of the packets sent so far, bytes (0 before the first).
    pub fn mean_payload(&self) -> f64 {
        self.payload_sum as f64 / self.sent.max(1) as f64
    }

    /// A receive rate X_recv (payload bytes/s) in the units of X: under RFC 4828 X counts
    /// nominal segments, so X_recv is scaled by s over the mean payload (RFC 4828 §4.1: the
    /// rates are packet rates).
    fn recv_in_x_units(&self, x_recv: f64) -> f64 {
        match self.segment {
            SegmentSize::SmallPacket if self.payload_sum > 0 => x_recv * self.s() / self.mean_payload(),
            _ => x_recv,
        }
    }

    /// The allowed rate X, payload bytes per second.
    pub fn x(&self) -> f64 {
        self.x
    }

    fn full(&self, payload: u32) -> bool {
        match self.send_buffer {
            Limit::Packets(n) => self.queue.len() as u64 >= n,
            Limit::Bytes(b) => self.queued_bytes + payload as u64 > b,
        }
    }

    /// Tells a subscribed application how much the buffer can take now (a datagram left it).
    fn notify_space(&self, cx: &mut FlowCtx) {
        if !cx.wants(notice_mask::SEND_SPACE) {
            return;
        }
        let (room_pkts, room_bytes) = match self.send_buffer {
            Limit::Packets(n) => (n.saturating_sub(self.queue.len() as u64), u64::MAX),
            Limit::Bytes(b) => (u64::MAX, b.saturating_sub(self.queued_bytes)),
        };
        cx.notify(TransportEvent::SendSpace {
            taken_pkts: self.taken_pkts,
            taken_bytes: self.taken_bytes,
            room_pkts,
            room_bytes,
        });
    }

    /// Sets X (and X_inst), keeping the time-weighted integral.
    fn set_x(&mut self, now: SimTime, x: f64, x_inst: f64) {
        if self.sent > 0 {
            self.x_area += self.x * now.since(self.x_since).as_secs_f64();
            self.x_since = now;
        }
        self.x = x;
        self.x_inst = x_inst.max(self.s() / self.t_mbi);
    }

    /// When the next packet may leave (`SimTime::ZERO` before the first).
    fn next_send(&self) -> SimTime {
        match self.last_send {
            None => SimTime::ZERO,
            // RFC 4828 §4.1: every packet counts as one nominal segment, ≥ 10 ms apart.
            Some((t, _)) if self.segment == SegmentSize::SmallPacket => {
                t + Dur::from_secs_f64(self.s() / self.x_inst).max(SMALL_PACKET_MIN_GAP)
            }
            // §4.6 paces at X bytes/s: a packet of b bytes takes b / X_inst of the budget.
            Some((t, b)) => t + Dur::from_secs_f64(b as f64 / self.x_inst),
        }
    }

    fn transmit(&mut self, d: Datagram, cx: &mut FlowCtx) {
        let now = cx.now;
        if self.sent == 0 {
            // §4.2: before any feedback, one packet (of s bytes) per second; the no-feedback
            // timer at 2 s.
            self.first_send = now;
            self.x_since = now;
            self.x = self.nominal_s.unwrap_or(d.payload.max(1) as f64);
            self.x_inst = self.x;
            cx.set_timer(NO_FEEDBACK, now + Dur::from_secs(2));
        }
        let hdr = TfrcHdr::Data {
            seq: self.next_seq,
            ts: now,
            rtt_ns: self.r.map_or(0, |r| (r * 1e9) as u64),
            payload: d.payload,
        };
        self.next_seq += 1;
        self.sent += 1;
        self.payload_sum += d.payload as u64;
        self.last_send = Some((now, d.payload.max(1)));
        cx.send(Outgoing {
            dir: Dir::Fwd,
            size_bytes: IPV4_HEADER + UDP_HEADER + DATA_HEADER + d.payload,
            l4: L4::Udp(UdpHdr {
                src_port: self.src_port,
                dst_port: self.dst_port,
                rtp: None,
                media: d.media,
                tfrc: Some(hdr),
            }),
            path: 0,
            tfd: d.tfd,
            ecn: crate::packet::Ecn::NotEct,
        });
    }

    /// Sends what is due from the buffer and arms the pacing timer for the rest.
    fn pump(&mut self, cx: &mut FlowCtx) {
        let mut freed = false;
        while !self.queue.is_empty() && self.next_send() <= cx.now {
            let d = self.queue.pop_front().expect("checked non-empty");
            self.queued_bytes -= d.payload as u64;
            self.transmit(d, cx);
            freed = true;
        }
        if freed {
            self.notify_space(cx);
        }
        if self.queue.is_empty() {
            cx.cancel_timer(SEND);
        } else {
            cx.set_timer(SEND, self.next_send().max(cx.now));
        }
    }

    fn probe(&self, x_recv: f64, cx: &mut FlowCtx) {
        if cx.probing(ProbeKind::Tfrc) {
            let ev = ProbeEvent::Tfrc {
                flow: cx.flow,
                end: cx.end(),
                x_bps: self.x * 8.0,
                x_recv_bps: x_recv * 8.0,
                p: self.p,
                rtt_ns: self.r.map_or(0, |r| (r * 1e9) as u64),
            };
            cx.probe(ev);
        }
    }

    fn restart_no_feedback(&self, cx: &mut FlowCtx) {
        let r = self.r.unwrap_or(0.0);
        let t = (4.0 * r).max(2.0 * self.s() / self.x);
        cx.set_timer(NO_FEEDBACK, cx.now + Dur::from_secs_f64(t));
    }

    /// §4.3: a feedback packet arrived.
    fn on_feedback(&mut self, ts_echo: SimTime, t_delay_ns: u64, x_recv: f64, p: f64, cx: &mut FlowCtx) {
        let now = cx.now;
        self.feedbacks += 1;
        // Step 1: the RTT sample and R (q = 0.9).
        let sample = (now.0.saturating_sub(ts_echo.0).saturating_sub(t_delay_ns)).max(1) as f64 * 1e-9;
        let first = self.r.is_none();
        let r = match self.r {
            None => sample,
            Some(r) => 0.9 * r + 0.1 * sample,
        };
        self.r = Some(r);
        self.p = p;
        let s = self.s();
        // Step 4: the X_recv set keeps the receive rates of the last two RTTs (§4.3,
        // Maximize_X_recv_set); the limit is twice their maximum.
        self.x_recv_set.retain(|(t, _)| now.since(*t).as_secs_f64() <= 2.0 * r);
        let x_recv_x = self.recv_in_x_units(x_recv);
        self.x_recv_set.push((now, x_recv_x));
        let recv_limit = 2.0 * self.x_recv_set.iter().fold(0.0_f64, |m, (_, x)| m.max(*x));
        // §4.2: W_init = min(4s, max(2s, 4380 B)), the initial rate W_init / R.
        let initial_rate = (4.0 * s).min((2.0 * s).max(4380.0)) / r;
        let mut x = self.x;
        if first && p == 0.0 {
            x = initial_rate;
            self.tld = now;
        } else if p > 0.0 {
            x = equation(s, r, p).min(recv_limit).max(s / self.t_mbi);
        } else if now.since(self.tld).as_secs_f64() >= r {
            // Slow start: doubling once per RTT, capped at twice the receive rate.
            x = (2.0 * x).min(recv_limit).max(initial_rate);
            self.tld = now;
        }
        // §4.5: oscillation prevention scales the paced rate by R_sqmean / sqrt(R_sample).
        let x_inst = if self.oscillation_prevention {
            self.r_sqmean = if first { sample.sqrt() } else { 0.9 * self.r_sqmean + 0.1 * sample.sqrt() };
            x * self.r_sqmean / sample.sqrt()
        } else {
            x
        };
        self.set_x(now, x, x_inst);
        self.restart_no_feedback(cx);
        self.probe(x_recv, cx);
        self.pump(cx);
    }

    /// §4.4: no feedback for max(4R, 2s/X): halve the rate.
    fn on_no_feedback(&mut self, cx: &mut FlowCtx) {
        let now = cx.now;
        self.no_feedback_expiries += 1;
        let s = self.s();
        let x = match self.r {
            None => (self.x / 2.0).max(s / self.t_mbi),
            Some(r) => {
                let x_recv = self.x_recv_set.iter().fold(0.0_f64, |m, (_, x)| m.max(*x));
                let new_recv = if self.p > 0.0 {
                    let x_calc = equation(s, r, self.p);
                    if x_calc > 2.0 * x_recv {
                        (x_recv / 2.0).max(s / (2.0 * self.t_mbi))
                    } else {
                        x_calc / 4.0
                    }
                } else {
                    (x_recv.max(self.x / 2.0) / 2.0).max(s / (2.0 * self.t_mbi))
                };
                self.x_recv_set = vec![(now, new_recv)];
                let base = if self.p > 0.0 { equation(s, r, self.p) } else { self.x };
                base.min(2.0 * new_recv).max(s / self.t_mbi)
            }
        };
        self.set_x(now, x, x);
        self.restart_no_feedback(cx);
        self.probe(0.0, cx);
        self.pump(cx);
    }
}

impl Endpoint for TfrcSender {
    fn service(&self) -> Service {
        Service::Datagram
    }

    fn max_datagram_payload(&self) -> u32 {
        self.max_payload
    }

    fn send_datagram(&mut self, d: Datagram, cx: &mut FlowCtx) {
        if self.queue.is_empty() && self.next_send() <= cx.now {
            self.taken_pkts += 1;
            self.taken_bytes += d.payload as u64;
            self.transmit(d, cx);
            self.notify_space(cx);
            return;
        }
        if self.full(d.payload) {
            // Drop-tail at the sender: the application outran X.
            self.buffer_drops += 1;
            return;
        }
        self.taken_pkts += 1;
        self.taken_bytes += d.payload as u64;
        self.queued_bytes += d.payload as u64;
        self.queue.push_back(d);
        if cx.timer_deadline(SEND) == SimTime::NEVER {
            cx.set_timer(SEND, self.next_send().max(cx.now));
        }
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        if let Some(TfrcHdr::Feedback { ts_echo, t_delay_ns, x_recv, p }) = pkt.udp().and_then(|u| u.tfrc) {
            self.on_feedback(ts_echo, t_delay_ns, x_recv, p, cx);
        }
    }

    fn timer_kinds(&self) -> u8 {
        2
    }

    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        match kind {
            SEND => self.pump(cx),
            NO_FEEDBACK => self.on_no_feedback(cx),
            _ => unreachable!("{}: flow {} TFRC sender has no timer {kind:?}", cx.now, cx.flow),
        }
    }

    fn summary(&self) -> Vec<(&'static str, f64)> {
        let span = self.x_since.since(self.first_send).as_secs_f64();
        vec![
            ("tfrc_sent_pkts", self.sent as f64),
            ("tfrc_buffer_drops", self.buffer_drops as f64),
            ("tfrc_mean_x_bps", if span > 0.0 { 8.0 * self.x_area / span } else { 8.0 * self.x }),
            ("tfrc_x_bps", 8.0 * self.x),
            ("tfrc_rtt_s", self.r.unwrap_or(0.0)),
            ("tfrc_s_bytes", self.s()),
            ("tfrc_mean_payload_bytes", self.mean_payload()),
            ("tfrc_no_feedback_expiries", self.no_feedback_expiries as f64),
        ]
    }
}
