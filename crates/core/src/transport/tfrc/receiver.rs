//! The TFRC receiver (RFC 5348 §5–6): loss detection, loss events, the average loss interval
//! and feedback once per RTT.

use super::{inverse_equation, SegmentSize, TfrcConfig, TfrcHdr, FEEDBACK_HEADER};
use crate::engine::TimerKind;
use crate::packet::{Dir, MediaTag, PacketData, UdpHdr, IPV4_HEADER, L4, UDP_HEADER};
use crate::time::SimTime;
use crate::transport::{Endpoint, EndpointSetup, FlowCtx, Outgoing, Service};

/// Interval weights w_0..w_7 (RFC 5348 §5.4, n = 8).
pub const WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// The feedback timer.
const FEEDBACK: TimerKind = TimerKind(0);

/// The loss history: the start of the most recent loss event and up to eight closed loss
/// intervals, newest first (RFC 5348 §5.2–5.5). Lengths count packets by sequence number.
#[derive(Clone, Debug, Default)]
pub struct LossHistory {
    /// Closed intervals I_1..I_8, newest first.
    closed: Vec<f64>,
    /// Sequence number and time of the first lost packet of the most recent loss event.
    last_event: Option<(u64, SimTime)>,
    /// History discounting (§5.5) on.
    discounting: bool,
    /// Loss events seen.
    pub events: u64,
}

impl LossHistory {
    pub fn new(discounting: bool) -> Self {
        LossHistory { discounting, ..Default::default() }
    }

    /// A packet `seq` lost at (interpolated) time `t`, with the sender's RTT `rtt_ns`: it opens
    /// a new loss event if it lies more than one RTT after the first loss of the current event
    /// (§5.2), and then returns true. `first_interval` gives the length of the synthetic first
    /// interval (§6.3.1) when this is the first loss ever.
    pub fn on_loss(&mut self, seq: u64, t: SimTime, rtt_ns: u64, first_interval: impl FnOnce() -> f64) -> bool {
        match self.last_event {
            Some((_, t0)) if t.0 <= t0.0.saturating_add(rtt_ns) => false,
            Some((s0, _)) => {
                self.push((seq - s0) as f64);
                self.last_event = Some((seq, t));
                self.events += 1;
                true
            }
            None => {
                self.push(first_interval().max(1.0));
                self.last_event = Some((seq, t));
                self.events += 1;
                true
            }
        }
    }

    fn push(&mut self, len: f64) {
        self.closed.insert(0, len);
        self.closed.truncate(WEIGHTS.len());
    }

    /// The loss event rate p given the highest sequence number received, `max_seq` (the open
    /// interval I_0 = max_seq − S_last + 1, §5.3): 1/I_mean with I_mean from the weighted
    /// intervals (§5.4), the larger of the averages with and without I_0. 0 before any loss.
    pub fn p(&self, max_seq: u64) -> f64 {
        let Some((s0, _)) = self.last_event else { return 0.0 };
        let i0 = (max_seq.max(s0) - s0 + 1) as f64;
        // §5.5: discount the closed intervals when I_0 is more than twice their mean.
        let mut df = 1.0;
        if self.discounting {
            let (mut s, mut w) = (0.0, 0.0);
            for (i, len) in self.closed.iter().enumerate() {
                s += WEIGHTS[i] * len;
                w += WEIGHTS[i];
            }
            let mean = s / w;
            if i0 > 2.0 * mean {
                df = (2.0 * mean / i0).max(0.5);
            }
        }
        // I_tot1: the closed intervals I_1..I_k with weights w_0..w_{k-1}.
        let (mut tot1, mut w1) = (0.0, 0.0);
        for (i, len) in self.closed.iter().enumerate() {
            tot1 += WEIGHTS[i] * df * len;
            w1 += WEIGHTS[i] * df;
        }
        // I_tot0: I_0 with w_0, then I_1..I_{n-1} with w_1..w_{n-1}.
        let (mut tot0, mut w0) = (i0 * WEIGHTS[0], WEIGHTS[0]);
        for (i, len) in self.closed.iter().enumerate().take(WEIGHTS.len() - 1) {
            tot0 += WEIGHTS[i + 1] * df * len;
            w0 += WEIGHTS[i + 1] * df;
        }
        let mean = (tot0 / w0).max(tot1 / w1);
        1.0 / mean
    }
}

/// The receiving end of a TFRC flow.
pub struct TfrcReceiver {
    src_port: u16,
    dst_port: u16,
    history: LossHistory,
    /// Highest sequence number received, its timestamp and arrival time.
    max_seq: Option<u64>,
    last_ts: SimTime,
    last_arrival: SimTime,
    /// The sender's RTT estimate from the newest packet, ns.
    rtt_ns: u64,
    /// Payload bytes received since the last feedback, and when that feedback was sent.
    bytes_since: u64,
    last_feedback: Option<SimTime>,
    /// The sender's nominal `s` (§6.3.1 seeds the first interval with it), or `None`: the mean
    /// payload of the packets received (`segment_size = "mean"`; under RFC 4828's
    /// `"small-packet"` the same, which makes the seed a packet-rate equation, §4.1 there).
    nominal_s: Option<f64>,
    payload_sum: u64,
    received: u64,
    lost: u64,
    feedbacks: u64,
}

impl TfrcReceiver {
    pub fn new(c: &TfrcConfig, s: &EndpointSetup) -> Self {
        let max_payload = s.mtu_bytes - IPV4_HEADER - UDP_HEADER - super::DATA_HEADER;
        let nominal_s = match c.segment() {
            SegmentSize::SmallPacket => None,
            seg => seg.nominal(max_payload),
        };
        TfrcReceiver {
            // The receiver sends from the flow's destination port to its source port.
            src_port: s.dst_port,
            dst_port: s.src_port,
            history: LossHistory::new(c.history_discounting),
            max_seq: None,
            last_ts: SimTime::ZERO,
            last_arrival: SimTime::ZERO,
            rtt_ns: 0,
            bytes_since: 0,
            last_feedback: None,
            nominal_s,
            payload_sum: 0,
            received: 0,
            lost: 0,
            feedbacks: 0,
        }
    }

    fn s(&self) -> f64 {
        self.nominal_s.unwrap_or_else(|| self.payload_sum as f64 / self.received.max(1) as f64)
    }

    /// X_recv since the last feedback, payload bytes/s.
    fn x_recv(&self, now: SimTime) -> f64 {
        match self.last_feedback {
            Some(t) if now > t => self.bytes_since as f64 / now.since(t).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// Sends feedback now (RFC 5348 §6.2) and arms the next one an RTT away.
    fn feedback(&mut self, cx: &mut FlowCtx) {
        let now = cx.now;
        let p = self.history.p(self.max_seq.unwrap_or(0));
        let hdr = TfrcHdr::Feedback {
            ts_echo: self.last_ts,
            t_delay_ns: now.since(self.last_arrival).as_nanos(),
            x_recv: self.x_recv(now),
            p,
        };
        cx.send(Outgoing {
            dir: Dir::Rev,
            size_bytes: IPV4_HEADER + UDP_HEADER + FEEDBACK_HEADER,
            l4: L4::Udp(UdpHdr {
                src_port: self.src_port,
                dst_port: self.dst_port,
                rtp: None,
                media: MediaTag::default(),
                tfrc: Some(hdr),
            }),
            path: 0,
            tfd: None,
            ecn: crate::packet::Ecn::NotEct,
        });
        self.feedbacks += 1;
        self.bytes_since = 0;
        self.last_feedback = Some(now);
        // §6.2: the next feedback one RTT later, if data arrives meanwhile (checked when the
        // timer fires, so an idle flow's timer stops).
        cx.set_timer(FEEDBACK, now + crate::time::Dur(self.rtt_ns.max(1)));
    }
}

impl Endpoint for TfrcReceiver {
    fn service(&self) -> Service {
        Service::Datagram
    }

    fn timer_kinds(&self) -> u8 {
        1
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let Some(TfrcHdr::Data { seq, ts, rtt_ns, payload }) = pkt.udp().and_then(|u| u.tfrc) else { return };
        let now = cx.now;
        if rtt_ns > 0 {
            self.rtt_ns = rtt_ns;
        }
        let expected = self.max_seq.map_or(0, |m| m + 1);
        if seq < expected {
            // Late (already counted lost) or duplicated: ignored (see the module docs).
            return;
        }
        self.received += 1;
        self.payload_sum += payload as u64;
        self.bytes_since += payload as u64;
        let mut new_event = false;
        if seq > expected && self.max_seq.is_some() {
            // §5.2: each lost packet's time interpolated between its neighbours.
            let (s_before, t_before) = (expected - 1, self.last_arrival);
            for lost in expected..seq {
                self.lost += 1;
                let frac = (lost - s_before) as f64 / (seq - s_before) as f64;
                let t_loss = SimTime(t_before.0 + ((now.0 - t_before.0) as f64 * frac) as u64);
                let rtt = self.rtt_ns;
                let (s, xr) = (self.s().max(1.0), self.x_recv(now));
                new_event |= self.history.on_loss(lost, t_loss, rtt, || {
                    // §6.3.1: the first interval is the one at which the equation gives the
                    // receive rate; with no rate measured yet, the packets received so far.
                    if xr > 0.0 && rtt > 0 {
                        1.0 / inverse_equation(s, rtt as f64 * 1e-9, xr)
                    } else {
                        lost as f64
                    }
                });
            }
        }
        self.max_seq = Some(seq);
        self.last_ts = ts;
        self.last_arrival = now;
        // §6.3: feedback at once on the first packet and on a new loss event.
        if self.last_feedback.is_none() || new_event {
            self.feedback(cx);
        } else if cx.timer_deadline(FEEDBACK) == SimTime::NEVER {
            let due = self.last_feedback.expect("checked above") + crate::time::Dur(self.rtt_ns.max(1));
            cx.set_timer(FEEDBACK, due.max(now));
        }
    }

    fn on_timer(&mut self, _kind: TimerKind, cx: &mut FlowCtx) {
        if self.bytes_since > 0 {
            self.feedback(cx);
        } else {
            // No data since the last feedback: stay silent until data arrives (§6.2).
            cx.cancel_timer(FEEDBACK);
        }
    }

    fn summary(&self) -> Vec<(&'static str, f64)> {
        let total = (self.received + self.lost) as f64;
        vec![
            ("tfrc_lost_pkts", self.lost as f64),
            ("tfrc_loss_events", self.history.events as f64),
            ("tfrc_loss_event_rate", if total > 0.0 { self.history.events as f64 / total } else { 0.0 }),
            ("tfrc_p", self.history.p(self.max_seq.unwrap_or(0))),
            ("tfrc_feedbacks", self.feedbacks as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step in loss: after one synthetic interval, closed intervals of exactly 100 packets,
    /// then a switch to intervals of 10; p after each new interval is hand-computed from the
    /// weights.
    #[test]
    fn p_follows_the_interval_weights() {
        let mut h = LossHistory::new(false);
        let ms = |m: u64| SimTime(m * 1_000_000);
        // Losses 1 s apart (RTT 10 ms): each is a new event. First at seq 0, interval seeded 100.
        assert!(h.on_loss(0, ms(0), 10_000_000, || 100.0));
        let mut seq = 0;
        for k in 1..=8 {
            seq += 100;
            assert!(h.on_loss(seq, ms(1000 * k), 10_000_000, || unreachable!()));
        }
        // Eight closed intervals of 100, I_0 = 1 (just the lost packet): p = 1/100.
        assert!((h.p(seq) - 0.01).abs() < 1e-12, "{}", h.p(seq));
        // Step: intervals of 10 from now. After j short intervals the mean over I_1..I_8 is
        // (Σ_{i<j} w_i·10 + Σ_{i≥j} w_i·100) / 6 (Σw = 6), and I_tot0 is smaller while I_0 is short.
        let w = WEIGHTS;
        for j in 1..=8usize {
            seq += 10;
            assert!(h.on_loss(seq, ms(10_000 + 1000 * j as u64), 10_000_000, || unreachable!()));
            let num: f64 = (0..8).map(|i| w[i] * if i < j { 10.0 } else { 100.0 }).sum();
            let expected = 6.0 / num;
            assert!((h.p(seq) - expected).abs() < 1e-12, "after {j}: {} vs {expected}", h.p(seq));
        }
        // A long open interval: I_tot0 = I_0 + Σ_{i=1..7} w_i·10 takes over once larger.
        let i0 = 1000u64;
        let tot0 = i0 as f64 + (1..8).map(|i| w[i] * 10.0).sum::<f64>();
        assert!((h.p(seq + i0 - 1) - 6.0 / tot0).abs() < 1e-12);
    }

    #[test]
    fn losses_within_one_rtt_are_one_event() {
        let mut h = LossHistory::new(false);
        let ms = |m: u64| SimTime(m * 1_000_000);
        assert!(h.on_loss(5, ms(100), 50_000_000, || 20.0));
        assert!(!h.on_loss(6, ms(120), 50_000_000, || unreachable!()));
        assert!(!h.on_loss(9, ms(150), 50_000_000, || unreachable!()));
        assert!(h.on_loss(30, ms(151), 50_000_000, || unreachable!()));
        assert_eq!(h.events, 2);
        // Intervals: [25 (30 − 5), 20 (seed)]; I_0 = 1.
        let tot1 = 25.0 + 20.0;
        assert!((h.p(30) - 2.0 / tot1).abs() < 1e-12);
    }

    #[test]
    fn history_discounting_shortens_the_memory_of_old_losses() {
        let mut plain = LossHistory::new(false);
        let mut disc = LossHistory::new(true);
        for h in [&mut plain, &mut disc] {
            h.on_loss(0, SimTime(0), 1, || 10.0);
            for k in 1..8u64 {
                h.on_loss(10 * k, SimTime(k * 1000), 1, || unreachable!());
            }
        }
        // I_0 = 200 ≫ 2·10: discounting lowers p further than the plain average.
        let (a, b) = (plain.p(70 + 199), disc.p(70 + 199));
        assert!(b < a, "{b} vs {a}");
        // With I_0 short both agree.
        assert_eq!(plain.p(75), disc.p(75));
    }
}
