//! Delivery-rate estimation: one rate sample per ACK, for congestion controllers that take them
//! (BBR, [`super::cc::bbr`]).
//!
//! Reading list: draft-cheng-iccrg-delivery-rate-estimation-02 (§3.1 per-packet state at
//! transmission, §3.2 the sample on delivery, §3.3 application-limited periods) and Linux
//! `net/ipv4/tcp_rate.c` (`tcp_rate_skb_sent`, `tcp_rate_skb_delivered`, `tcp_rate_gen`,
//! `tcp_rate_check_app_limited`), whose choices we follow where the draft leaves them open:
//! - delivery is counted in packets (`tp->delivered`), one per segment, SACKed or cumulatively
//!   acknowledged, whichever comes first;
//! - of the segments one ACK delivers, the sample is taken from the most recently *sent* one
//!   (ties broken by the higher end sequence: Linux 5.18+'s `tcp_skb_sent_after`);
//! - interval = max(send phase, ACK phase); a sample shorter than the minimum RTT is invalid;
//! - the connection starts application-limited until its first ACK (`tcp_init_sock` sets
//!   `app_limited = ~0U`), and becomes so again when the application has less than a segment
//!   queued while the window has room (checked on every write, `tcp_sendmsg_locked`);
//! - the RTT of the sample (`rs->rtt_us`, `tcp_clean_rtx_queue`'s `ca_rtt_us`) is measured from
//!   the send time of the most recently sent never-retransmitted segment delivered (a SACKed
//!   one if any), falling back to the timestamp echo when only retransmitted data was acked
//!   (`tcp_ack_update_rtt`); the minimum RTT that bounds a sample's interval is the least of
//!   those samples and of the transport's own RTT samples, the handshake's included, as Linux's
//!   `tcp_min_rtt` takes the SYN-ACK's (its 5-minute window is not modelled: it never expires);
//! - losses are counted in packets when a segment is first deemed lost and again when a
//!   retransmission of it is (`tcp_mark_skb_lost`), so that `losses` of a sample is what this
//!   ACK newly marked;
//! - without SACK, each duplicate ACK counts one packet delivered and a cumulative ACK the rest
//!   (`tcp_add_reno_sack`, `tcp_remove_reno_sacks`).
//!
//! Not modelled: SACK reneging (our receiver never reneges), `delivered_ce` (no ECN), and the
//! qdisc/NIC occupancy test of `tcp_rate_check_app_limited` (nothing waits below the socket).

use super::cc::{CaState, RateSample};
use super::{State, TcpSender};
use crate::time::{Dur, SimTime};
use std::collections::VecDeque;

/// One transmitted segment's snapshot of the connection's delivery state (§3.1; Linux
/// `TCP_SKB_CB(skb)->tx`).
#[derive(Clone, Debug)]
struct TxRec {
    seq: u64,
    end: u64,
    /// Time of the latest (re)transmission.
    xmit: SimTime,
    /// `tx.delivered`, `tx.delivered_mstamp` (`None` once SACKed: it must not serve again when
    /// cumulatively acknowledged), `tx.first_tx_mstamp`, `tx.is_app_limited`.
    delivered: u64,
    delivered_mstamp: Option<SimTime>,
    first_tx: SimTime,
    app_limited: bool,
    /// Ever retransmitted (`TCPCB_RETRANS`): gives no RTT sample (Karn).
    retransmitted: bool,
    /// Bytes SACKed so far; the segment is delivered when all of it is.
    sacked: u64,
    /// Deemed lost, and whether a retransmission of it is out since (Linux `TCPCB_LOST`,
    /// `TCPCB_SACKED_RETRANS`).
    lost: bool,
    rxt_out: bool,
}

impl TxRec {
    fn len(&self) -> u64 {
        self.end - self.seq
    }
    fn fully_sacked(&self) -> bool {
        self.sacked >= self.len()
    }
}

/// What one ACK has delivered so far (Linux's per-ACK `struct rate_sample` under construction).
#[derive(Clone, Debug, Default)]
struct AckAcc {
    delivered_before: u64,
    lost_before: u64,
    /// `rs->prior_delivered` (0: none yet, as Linux tests it), `prior_mstamp`, `is_app_limited`,
    /// `last_end_seq`, and the send phase `interval_us`.
    prior_delivered: u64,
    prior_mstamp: Option<SimTime>,
    is_app_limited: bool,
    last_end_seq: u64,
    send_phase: Dur,
    /// Send times of the latest never-retransmitted segments SACKed and cumulatively acked.
    last_sackt: Option<SimTime>,
    last_ackt: Option<SimTime>,
    /// A retransmitted segment was cumulatively acked (`FLAG_RETRANS_DATA_ACKED`).
    rxt_acked: bool,
    /// Segments and bytes cumulatively acknowledged, and whether any segment was SACKed.
    acked_segs: u64,
    acked_bytes: u64,
    any_sacked: bool,
}

/// The sender's delivery-rate state (Linux `tp->delivered`, `delivered_mstamp`,
/// `first_tx_mstamp`, `app_limited`, `lost`) and its per-segment records.
#[derive(Clone, Debug)]
pub struct RateSampler {
    recs: VecDeque<TxRec>,
    /// SACK is off: duplicate ACKs count deliveries (`tcp_is_reno`).
    reno: bool,
    reno_sacked: u64,
    delivered: u64,
    delivered_mstamp: Option<SimTime>,
    first_tx_mstamp: SimTime,
    /// Samples are application-limited until `delivered` passes this (`tp->app_limited`).
    app_limited: Option<u64>,
    lost: u64,
    rtt_min: Option<Dur>,
    /// Without RACK: records ending at or below it have been judged against the loss frontier.
    lost_scan: u64,
    /// With RACK: the loss marks of its queue already counted.
    rack_marks: u64,
    ack: AckAcc,
}

/// Whether a transmission at `t1` ending at `seq1` came after one at `t2` ending at `seq2` (Linux
/// `tcp_skb_sent_after`).
fn sent_after(t1: SimTime, t2: SimTime, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl RateSampler {
    /// A sampler for a connection with SACK on (`sack`) or off.
    pub fn new(sack: bool) -> Self {
        RateSampler {
            recs: VecDeque::new(),
            reno: !sack,
            reno_sacked: 0,
            delivered: 0,
            delivered_mstamp: None,
            first_tx_mstamp: SimTime::ZERO,
            // `tcp_init_sock`: application-limited until the first ACK.
            app_limited: Some(0),
            lost: 0,
            rtt_min: None,
            lost_scan: 0,
            rack_marks: 0,
            ack: AckAcc::default(),
        }
    }

    /// Packets delivered so far (`tp->delivered`).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// Time of the latest ACK that delivered data (`tp->delivered_mstamp`).
    pub fn delivered_mstamp(&self) -> SimTime {
        self.delivered_mstamp.unwrap_or(SimTime::ZERO)
    }
    /// Packets deemed lost so far, lost retransmissions included (`tp->lost`).
    pub fn lost(&self) -> u64 {
        self.lost
    }
    /// Whether data sent now is marked application-limited.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited.is_some()
    }

    /// `tcp_rate_skb_sent`: segment `[seq, end)` leaves at `now`, a retransmission if `rxt`;
    /// `outstanding` is whether anything was unacknowledged before it (`tp->packets_out`).
    pub fn on_send(&mut self, seq: u64, end: u64, now: SimTime, rxt: bool, outstanding: bool) {
        if !outstanding {
            // Nothing in flight: a sample's interval starts now, not at some old ACK.
            self.first_tx_mstamp = now;
            self.delivered_mstamp = Some(now);
        }
        let (delivered, delivered_mstamp, first_tx, app_limited) =
            (self.delivered, self.delivered_mstamp, self.first_tx_mstamp, self.app_limited.is_some());
        let stamp = |r: &mut TxRec| {
            r.xmit = now;
            r.delivered = delivered;
            r.delivered_mstamp = delivered_mstamp;
            r.first_tx = first_tx;
            r.app_limited = app_limited;
        };
        if !rxt {
            debug_assert!(self.recs.back().map_or(true, |r| r.end == seq), "new data at {seq} not contiguous");
            let mut r = TxRec {
                seq,
                end,
                xmit: now,
                delivered: 0,
                delivered_mstamp: None,
                first_tx: now,
                app_limited: false,
                retransmitted: false,
                sacked: 0,
                lost: false,
                rxt_out: false,
            };
            stamp(&mut r);
            self.recs.push_back(r);
            return;
        }
        // A retransmission covers the segments it overlaps (normally exactly one).
        let mut i = self.recs.partition_point(|r| r.end <= seq);
        while let Some(r) = self.recs.get_mut(i) {
            if r.seq >= end {
                break;
            }
            stamp(r);
            r.retransmitted = true;
            if r.lost {
                r.rxt_out = true;
            }
            i += 1;
        }
    }

    /// Starts the sample of one ACK.
    pub fn begin_ack(&mut self) {
        self.ack = AckAcc { delivered_before: self.delivered, lost_before: self.lost, ..AckAcc::default() };
    }

    /// `tcp_rate_skb_delivered` for one segment (SACKed if `sacked`).
    fn deliver(&mut self, i: usize, sacked: bool) {
        let a = &mut self.ack;
        let r = &mut self.recs[i];
        if let Some(dm) = r.delivered_mstamp {
            if a.prior_delivered == 0 || sent_after(r.xmit, self.first_tx_mstamp, r.end, a.last_end_seq) {
                a.prior_delivered = r.delivered;
                a.prior_mstamp = Some(dm);
                a.is_app_limited = r.app_limited;
                a.last_end_seq = r.end;
                self.first_tx_mstamp = r.xmit;
                // The send phase of this window: from the first to the last transmission.
                a.send_phase = r.xmit.since(r.first_tx);
            }
            if sacked {
                r.delivered_mstamp = None;
            }
        }
        if r.retransmitted {
            a.rxt_acked |= !sacked;
        } else if sacked {
            a.last_sackt = Some(a.last_sackt.map_or(r.xmit, |t| t.max(r.xmit)));
        } else {
            a.last_ackt = Some(a.last_ackt.map_or(r.xmit, |t| t.max(r.xmit)));
        }
        r.lost = false;
        r.rxt_out = false;
    }

    /// Newly SACKed bytes `[a, b)` (one piece of RFC 6675 `Update()`): every segment whose bytes
    /// are now all SACKed is delivered.
    pub fn sacked(&mut self, a: u64, b: u64) {
        self.ack.any_sacked = true;
        let mut i = self.recs.partition_point(|r| r.end <= a);
        while i < self.recs.len() {
            let r = &mut self.recs[i];
            if r.seq >= b {
                break;
            }
            if !r.fully_sacked() {
                r.sacked = (r.sacked + r.end.min(b) - r.seq.max(a)).min(r.len());
                if r.fully_sacked() {
                    self.deliver(i, true);
                    self.delivered += 1; // `tcp_sacktag_one` → `tcp_count_delivered`
                }
            }
            i += 1;
        }
    }

    /// The cumulative ACK advanced to `una`: segments wholly below it leave, and those not
    /// SACKed before are delivered.
    pub fn acked(&mut self, una: u64) {
        let mut n = 0;
        while self.recs.front().is_some_and(|r| r.end <= una) {
            let r = &self.recs[0];
            self.ack.acked_bytes += r.len();
            self.ack.acked_segs += 1;
            if !r.fully_sacked() {
                self.deliver(0, false);
                n += 1;
            }
            self.recs.pop_front();
        }
        if !self.reno {
            self.delivered += n;
        } else if n > 0 {
            // `tcp_remove_reno_sacks`: one ACK acked the hole; the rest were counted by the
            // duplicate ACKs already.
            self.delivered += n.saturating_sub(self.reno_sacked).max(1);
            self.reno_sacked = self.reno_sacked.saturating_sub(n - 1);
        }
    }

    /// A duplicate ACK without SACK: one more segment has left the network (`tcp_add_reno_sack`,
    /// at most as many as are outstanding).
    pub fn reno_dupack(&mut self) {
        if self.reno_sacked < self.recs.len() as u64 {
            self.reno_sacked += 1;
            self.delivered += 1;
        }
    }

    /// Without RACK, after an ACK: every un-SACKed segment below the loss frontier `lost` (RFC
    /// 6675 `IsLost()`, or the timeout and NewReno marks) not yet counted is newly lost.
    pub fn mark_lost_below(&mut self, lost: u64) {
        if lost <= self.lost_scan {
            return;
        }
        let mut i = self.recs.partition_point(|r| r.end <= self.lost_scan);
        while let Some(r) = self.recs.get_mut(i) {
            if r.end > lost {
                break;
            }
            if !r.fully_sacked() && !r.lost {
                r.lost = true;
                self.lost += 1;
            }
            i += 1;
        }
        self.lost_scan = lost;
    }

    /// With RACK: its queue has marked `total` segments lost so far (first losses and lost
    /// retransmissions, [`super::sack::SentQueue::loss_marks`]).
    pub fn rack_loss_marks(&mut self, total: u64) {
        self.lost += total - self.rack_marks;
        self.rack_marks = total;
    }

    /// A retransmission timeout without RACK (`tcp_timeout_mark_lost`): every un-SACKed segment
    /// is lost, again if a retransmission of it was out.
    pub fn on_rto(&mut self) {
        for r in self.recs.iter_mut().filter(|r| !r.fully_sacked()) {
            if !r.lost || r.rxt_out {
                self.lost += 1;
            }
            r.lost = true;
            r.rxt_out = false;
        }
        self.lost_scan = self.recs.back().map_or(self.lost_scan, |r| r.end.max(self.lost_scan));
    }

    /// `tcp_rate_check_app_limited` on a write: the application had less than one segment
    /// waiting (`unsent < mss`), the window had room (`in_flight_bytes < cwnd`) and no loss
    /// awaits repair, so the coming samples are application-limited; `in_flight` in packets.
    pub fn check_app_limited(
        &mut self,
        unsent: u64,
        mss: u64,
        in_flight_bytes: u64,
        cwnd: u64,
        unrepaired: bool,
        in_flight: u64,
    ) {
        if unsent < mss && in_flight_bytes < cwnd && !unrepaired {
            self.mark_app_limited(in_flight);
        }
    }

    /// Marks what is sent from now on application-limited, until what is in flight (`in_flight`
    /// packets) has been delivered.
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = Some((self.delivered + in_flight).max(1));
    }

    /// `tcp_rate_gen`: the sample of this ACK at `now`. `ts_rtt` is the timestamp echo's RTT, if
    /// any, and `tcp_min_rtt` the transport's minimum RTT (the handshake's included); the
    /// transport fills in the in-flight counts, the congestion state and the next departure time.
    pub fn generate(&mut self, now: SimTime, ts_rtt: Option<Dur>, tcp_min_rtt: Option<Dur>, mss: u64) -> RateSample {
        if self.app_limited.is_some_and(|a| self.delivered > a) {
            self.app_limited = None; // the bubble has been delivered
        }
        let a = &self.ack;
        let acked_sacked = self.delivered - a.delivered_before;
        if acked_sacked > 0 {
            self.delivered_mstamp = Some(now);
        }
        // `tcp_clean_rtx_queue` / `tcp_ack_update_rtt`: RTT of the most recently sent segment
        // delivered, SACKed ones first; a cumulative ACK covering retransmitted data gives none,
        // except from the timestamp echo.
        let rtt = match (a.last_sackt, a.last_ackt) {
            (Some(t), _) => Some(now.since(t)),
            (None, Some(t)) if !a.rxt_acked => Some(now.since(t)),
            _ if a.acked_segs > 0 => ts_rtt,
            _ => None,
        };
        for r in [rtt, tcp_min_rtt].into_iter().flatten() {
            self.rtt_min = Some(self.rtt_min.map_or(r, |m| m.min(r)));
        }
        // FLAG_ACK_MAYBE_DELAYED: the ACK of one lone runt segment, nothing SACKed.
        let is_ack_delayed = a.acked_segs == 1
            && a.acked_bytes < mss
            && !a.any_sacked
            && a.prior_delivered + 1 == self.delivered
            && a.prior_mstamp.is_some();
        let mut rs = RateSample {
            now,
            delivered: None,
            interval: None,
            prior_delivered: a.prior_delivered,
            acked_sacked,
            losses: self.lost - a.lost_before,
            prior_in_flight: 0,
            in_flight: 0,
            is_app_limited: a.is_app_limited,
            is_ack_delayed,
            rtt,
            ca_state: CaState::Open,
            next_departure: now,
        };
        let Some(prior_mstamp) = a.prior_mstamp else {
            return rs; // no timing information: an invalid sample
        };
        rs.delivered = Some(self.delivered - a.prior_delivered);
        // Sending and ACKing are two pipeline phases of a window; the longer one is the safe
        // bound (ACK compression can make the ACK phase the shorter).
        let interval = a.send_phase.max(now.since(prior_mstamp));
        if self.rtt_min.is_some_and(|m| interval < m) {
            return rs; // shorter than any RTT: an artefact (e.g. a spurious retransmission)
        }
        rs.interval = Some(interval);
        rs
    }
}

/// The sender's side: where the TCP sender feeds its sampler and its rate-based controller
/// (every method is a no-op without one).
impl TcpSender {
    /// Packets for `bytes` of segments (`tcp_packets_in_flight` counts segments).
    fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.tcb.mss.max(1))
    }

    /// The congestion state, as Linux's `icsk_ca_state`.
    fn ca_state(&self) -> CaState {
        if self.tcb.in_recovery {
            CaState::Recovery
        } else if self.tcb.snd_una < self.recover {
            CaState::Loss
        } else {
            CaState::Open
        }
    }

    /// Before segment `[seq, seq + len)` leaves (after `CA_EVENT_TX_START`, which
    /// `transmit` sends every controller): `tcp_rate_skb_sent`.
    pub(super) fn rate_on_send(&mut self, seq: u64, len: u64, rxt: bool, now: SimTime) {
        if self.rate.is_none() {
            return;
        }
        let outstanding = self.tcb.snd_max > self.tcb.snd_una;
        self.rate.as_deref_mut().expect("sampler").on_send(seq, seq + len, now, rxt, outstanding);
    }

    /// At the end of an ACK's processing: the losses it marked, its rate sample, and the
    /// controller's turn (`tcp_rate_gen`, `tcp_cong_control`).
    pub(super) fn rate_on_ack(&mut self, prior_in_flight: u64, ts_rtt: Option<Dur>, now: SimTime) {
        if self.rate.is_none() {
            return;
        }
        let frontier = if self.rack.is_none() { Some(self.loss_frontier().0) } else { None };
        let rack_marks = self.rack.as_deref().map(|r| r.q.loss_marks());
        let in_flight = self.pkts(self.in_flight());
        let (ca_state, mss, next_departure) = (self.ca_state(), self.tcb.mss, self.pace_next.max(now));
        let prior_in_flight = self.pkts(prior_in_flight);
        let r = self.rate.as_deref_mut().expect("sampler");
        match (frontier, rack_marks) {
            (Some(l), _) => r.mark_lost_below(l),
            (None, Some(m)) => r.rack_loss_marks(m),
            (None, None) => {}
        }
        let mut rs = r.generate(now, ts_rtt, self.tcb.min_rtt, mss);
        rs.prior_in_flight = prior_in_flight;
        rs.in_flight = in_flight;
        rs.ca_state = ca_state;
        rs.next_departure = next_departure;
        (self.tcb.delivered, self.tcb.lost, self.tcb.delivered_mstamp) =
            (r.delivered(), r.lost(), r.delivered_mstamp());
        self.cc.on_rate_sample(&rs, &mut self.tcb);
        if self.cc.app_limited() {
            let in_flight = self.pkts(self.in_flight());
            self.rate.as_deref_mut().expect("sampler").mark_app_limited(in_flight);
        }
    }

    /// After a timeout has marked its losses.
    pub(super) fn rate_on_rto(&mut self) {
        let rack_marks = self.rack.as_deref().map(|r| r.q.loss_marks());
        let Some(r) = self.rate.as_deref_mut() else { return };
        match rack_marks {
            Some(m) => r.rack_loss_marks(m),
            None => r.on_rto(),
        }
        self.tcb.lost = r.lost();
    }

    /// On an application write, before its data is queued (`tcp_rate_check_app_limited`).
    pub(super) fn rate_check_app_limited(&mut self) {
        if self.rate.is_none() || self.state != State::Established {
            return;
        }
        let in_flight = self.in_flight();
        // Lost data not yet retransmitted (`lost_out > retrans_out`).
        let unrepaired = match self.rack.as_deref() {
            Some(r) => r.q.next_lost().is_some(),
            None => {
                let (lost, _) = self.loss_frontier();
                self.next_seg(lost).is_some_and(|(_, _, rxt)| rxt)
            }
        };
        let (unsent, mss, cwnd, pkts) = (self.unsent_bytes(), self.tcb.mss, self.tcb.cwnd, self.pkts(in_flight));
        self.rate.as_deref_mut().expect("sampler").check_app_limited(unsent, mss, in_flight, cwnd, unrepaired, pkts);
    }

    /// The controller's pacing rate, payload bytes per second, if it paces.
    pub(super) fn cc_pacing_bytes(&self) -> Option<u64> {
        self.cc.pacing_rate(&self.tcb).map(|r| r.bps() / 8)
    }

    /// Linux's internal pacing (`tcp_update_skb_after_send`, no `fq`): after a buffer of
    /// `payload` bytes left at `now`, the next waits payload / rate, less up to half of it for
    /// lateness (the "OS jitter" credit); the first 10 segments are not paced (as `fq`).
    pub(super) fn pace_internal(&mut self, payload: u64, now: SimTime) {
        let prior = self.pace_next;
        let wstamp = prior.max(now);
        self.pace_next = wstamp;
        let Some(rate) = self.cc_pacing_bytes().filter(|&r| r > 0) else { return };
        if self.segs_sent < 10 {
            return;
        }
        let len_ns = (payload as u128 * 1_000_000_000 / rate as u128).min(u64::MAX as u128) as u64;
        let credit = wstamp.since(prior).as_nanos();
        self.pace_next = wstamp + Dur::from_nanos(len_ns - (len_ns / 2).min(credit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn t(ms: u64) -> SimTime {
        SimTime(Dur::from_millis(ms).as_nanos())
    }

    fn seg(i: u64) -> (u64, u64) {
        (1 + i * MSS, 1 + (i + 1) * MSS)
    }

    /// A window-limited bulk sender: 10 segments in flight, a bottleneck of 1 ms per segment
    /// next to the sender and 20 ms of propagation RTT. Once the first window is acked, every
    /// ACK's sample is one window (10 packets) over one RTT (21 ms), not app-limited, with an
    /// RTT of 21 ms; the first window's samples are app-limited (Linux starts so).
    #[test]
    fn a_steady_window_gives_window_per_rtt() {
        const W: usize = 10;
        let mut s = RateSampler::new(true);
        let mut send_t = vec![t(0); W];
        for (i, &st) in send_t.iter().enumerate() {
            let (a, b) = seg(i as u64);
            s.on_send(a, b, st, false, i > 0);
        }
        let mut d_prev = t(0);
        for k in 0..60usize {
            // Bottleneck departure, then the ACK 20 ms later.
            let d = send_t[k].max(d_prev) + Dur::from_millis(1);
            d_prev = d;
            let now = d + Dur::from_millis(20);
            s.begin_ack();
            s.acked(seg(k as u64).1);
            let rs = s.generate(now, None, None, MSS);
            assert_eq!(rs.acked_sacked, 1);
            assert_eq!(rs.rtt, Some(now.since(send_t[k])));
            if k < W {
                assert!(rs.is_app_limited, "ACK {k}");
                assert_eq!(rs.delivered, Some(k as u64 + 1));
            } else if k >= 2 * W {
                assert!(!rs.is_app_limited, "ACK {k}");
                assert_eq!(rs.rtt, Some(Dur::from_millis(21)));
                assert_eq!((rs.delivered, rs.interval), (Some(W as u64), Some(Dur::from_millis(21))), "ACK {k}");
            }
            // The ACK clock: segment k + W leaves now.
            let (a, b) = seg((k + W) as u64);
            s.on_send(a, b, now, false, true);
            send_t.push(now);
        }
        assert_eq!(s.delivered(), 60);
    }

    /// Draft §3.2 example shape: two segments in flight, ACK phase longer than send phase; the
    /// sample is delivered / max(send phase, ACK phase).
    #[test]
    fn interval_is_the_longer_phase() {
        let mut s = RateSampler::new(true);
        s.on_send(seg(0).0, seg(0).1, t(0), false, false);
        s.on_send(seg(1).0, seg(1).1, t(1), false, true);
        s.begin_ack();
        s.acked(seg(0).1);
        let rs = s.generate(t(50), None, None, MSS);
        // First ACK: the connection was app-limited until now (Linux starts so).
        assert!(rs.is_app_limited);
        assert_eq!((rs.delivered, rs.interval), (Some(1), Some(Dur::from_millis(50))));
        // Segment 2 goes out at 50 ms after the ACK (delivered = 1, delivered_mstamp = 50).
        s.on_send(seg(2).0, seg(2).1, t(50), false, true);
        s.begin_ack();
        s.acked(seg(1).1);
        let rs = s.generate(t(60), None, None, MSS);
        // Segment 1: sent at 1 ms with delivered 0 at mstamp 0: 2 delivered over max(1, 60) ms;
        // it left before the first ACK, so it is application-limited too.
        assert_eq!((rs.delivered, rs.interval), (Some(2), Some(Dur::from_millis(60))));
        assert!(rs.is_app_limited);
        s.begin_ack();
        s.acked(seg(2).1);
        let rs = s.generate(t(100), None, None, MSS);
        // Segment 2: delivered 1 at 50 ms; 2 delivered since, over max(50 − 1, 100 − 50) ms.
        assert_eq!((rs.delivered, rs.interval), (Some(2), Some(Dur::from_millis(50))));
        assert!(!rs.is_app_limited, "sent after the first ACK");
    }

    /// SACKed segments are delivered once: their cumulative ACK later neither counts them again
    /// nor uses their snapshot; the sample comes from the most recently sent segment.
    #[test]
    fn sacked_segments_count_once_and_the_latest_sent_wins() {
        let mut s = RateSampler::new(true);
        for i in 0..4 {
            s.on_send(seg(i).0, seg(i).1, t(i), false, i > 0);
        }
        s.begin_ack();
        s.sacked(seg(1).0, seg(3).1); // segments 1..3 SACKed, 0 missing
        let rs = s.generate(t(30), None, None, MSS);
        assert_eq!(rs.acked_sacked, 3);
        assert_eq!(rs.rtt, Some(Dur::from_millis(27)), "the latest sent SACKed segment (3, at 3 ms)");
        assert_eq!(s.delivered(), 3);
        // Segment 0 is lost and retransmitted at 40 ms, then cumulatively acked at 60 ms.
        s.mark_lost_below(seg(0).1);
        assert_eq!(s.lost(), 1);
        s.on_send(seg(0).0, seg(0).1, t(40), true, true);
        s.begin_ack();
        s.acked(seg(3).1);
        let rs = s.generate(t(60), Some(Dur::from_millis(20)), None, MSS);
        assert_eq!(rs.acked_sacked, 1, "only segment 0 is new");
        assert_eq!(rs.losses, 0);
        assert_eq!(rs.rtt, Some(Dur::from_millis(20)), "retransmitted data: the timestamp RTT");
        // Its snapshot at 40 ms: delivered 3 at 30 ms, send phase from segment 3's send (3 ms,
        // the last sample's) → 1 packet over max(40 − 3, 60 − 30) ms.
        assert_eq!((rs.delivered, rs.interval), (Some(1), Some(Dur::from_millis(37))));
        assert_eq!(s.delivered(), 4);
    }

    /// Losses: counted once per segment, again for a lost retransmission (timeout).
    #[test]
    fn losses_count_first_losses_and_lost_retransmissions() {
        let mut s = RateSampler::new(true);
        for i in 0..5 {
            s.on_send(seg(i).0, seg(i).1, t(i), false, i > 0);
        }
        s.begin_ack();
        s.sacked(seg(4).0, seg(4).1);
        s.mark_lost_below(seg(1).1); // segments 0 and 1 deemed lost
        let rs = s.generate(t(25), None, None, MSS);
        assert_eq!(rs.losses, 2);
        s.on_send(seg(0).0, seg(0).1, t(25), true, true);
        // A timeout: 0 (retransmitted, lost again), 1 (lost, not resent: not again), 2 and 3 (new).
        s.on_rto();
        assert_eq!(s.lost(), 2 + 1 + 2);
        s.mark_lost_below(seg(4).1);
        assert_eq!(s.lost(), 5, "the scan does not count them twice");
    }

    /// Without SACK, duplicate ACKs count deliveries and the cumulative ACK the remainder.
    #[test]
    fn reno_counts_dupacks_as_deliveries() {
        let mut s = RateSampler::new(false);
        for i in 0..5 {
            s.on_send(seg(i).0, seg(i).1, t(i), false, i > 0);
        }
        for _ in 0..3 {
            s.begin_ack();
            s.reno_dupack();
            let rs = s.generate(t(25), None, None, MSS);
            assert_eq!((rs.acked_sacked, rs.delivered), (1, None));
        }
        s.begin_ack();
        s.acked(seg(4).1); // 5 segments acked; 3 were counted by the duplicate ACKs
        let rs = s.generate(t(50), None, None, MSS);
        assert_eq!(rs.acked_sacked, 2);
        assert_eq!(s.delivered(), 5);
    }

    /// Application-limited marking: set on a write with nothing queued and room in the window,
    /// cleared once the bubble is delivered.
    #[test]
    fn app_limited_until_the_bubble_is_delivered() {
        let mut s = RateSampler::new(true);
        s.on_send(seg(0).0, seg(0).1, t(0), false, false);
        s.begin_ack();
        s.acked(seg(0).1);
        assert!(s.generate(t(20), None, None, MSS).is_app_limited);
        assert!(!s.is_app_limited());
        // Nothing queued, window open, one packet in flight: limited until delivered > 1 + 1.
        s.on_send(seg(1).0, seg(1).1, t(20), false, false);
        s.check_app_limited(0, MSS, MSS, 10 * MSS, false, 1);
        assert!(s.is_app_limited());
        s.on_send(seg(2).0, seg(2).1, t(21), false, true);
        s.begin_ack();
        s.acked(seg(1).1);
        let rs = s.generate(t(40), None, None, MSS);
        assert!(!rs.is_app_limited, "segment 1 was sent before the mark");
        assert!(s.is_app_limited(), "delivered 2 is not past 2");
        s.begin_ack();
        s.acked(seg(2).1);
        let rs = s.generate(t(41), None, None, MSS);
        assert!(rs.is_app_limited, "segment 2 was sent inside the bubble");
        assert!(!s.is_app_limited());
        // A full window (in flight = cwnd) or data queued: not application-limited.
        s.check_app_limited(0, MSS, 10 * MSS, 10 * MSS, false, 10);
        s.check_app_limited(5 * MSS, MSS, 0, 10 * MSS, false, 0);
        s.check_app_limited(0, MSS, 0, 10 * MSS, true, 0);
        assert!(!s.is_app_limited());
    }
}
