//! RACK-TLP loss detection (RFC 8985): time-based loss marking and the tail loss probe.
//!
//! Reading list, in the order the code applies it:
//! - RFC 8985 §5.2: per-segment `xmit_ts` (kept by [`SentQueue`]); §6.2 step 1
//!   (`RACK_detect_reordering`), step 2 (`RACK_update`: the most recently *sent* delivered
//!   segment, its RTT, and the retransmission ambiguity checks), step 4 (`RACK_update_reo_wnd`),
//!   step 5 (`RACK_detect_loss`: a segment sent before `RACK.xmit_ts` is lost once
//!   `xmit_ts + RACK.rtt + reo_wnd <= now`, else the reorder timer waits for it); §6.3 (marking
//!   on an RTO).
//! - RFC 8985 §7: the tail loss probe: PTO = 2·SRTT (+ the worst-case delayed-ACK time when one
//!   segment is in flight), capped by the RTO; the probe is new data if any, else the last
//!   segment; §7.4 the TLP episode and its congestion response.
//! - Linux `net/ipv4/tcp_recovery.c` (`tcp_rack_detect_loss`, `tcp_rack_reo_wnd`,
//!   `tcp_rack_advance`, `tcp_rack_reo_timeout`) and `tcp_output.c`
//!   (`tcp_schedule_loss_probe`, `tcp_send_loss_probe`), `tcp_input.c`
//!   (`tcp_process_tlp_ack`), for the choices the RFC leaves open.
//!
//! Where we follow Linux rather than the RFC text: reordering is "seen" when a never-
//! retransmitted segment is delivered below the highest SACKed sequence *before this ACK*
//! (Linux's `prior_fack`; the RFC walks the ACK's segments in sequence order, which gives the
//! same answer except inside one ACK); transmissions made at the same instant are ordered by
//! when they were made, not by `end_seq` (see [`SentSeg::xmit_no`]); RACK.rtt comes from the most recently sent segment this
//! ACK delivered (the RFC takes the last one processed); a TLP episode ends as in
//! `tcp_process_tlp_ack`; a retransmitted segment's delivery is set aside as ambiguous only when
//! it came sooner than min_RTT after the retransmission (`tcp_rack_advance`), not also when the
//! ACK echoes an older timestamp (§6.2 step 2): a receiver echoes the TSval of the last
//! in-order segment (RFC 7323 §4.3), so under the RFC's test a retransmission SACKed above a
//! hole, a tail loss probe among them, could never advance RACK. Where we follow the RFC rather than Linux: the reorder and probe
//! timers fire at the exact time (Linux rounds up to jiffies and adds `TCP_TIMEOUT_MIN`, 2 ms,
//! to the PTO when more than one segment is in flight).
//!
//! Not modelled: DSACK (our receiver sends none), so the reordering window stays at
//! min_RTT/4 and never grows by the §6.2 `reo_wnd_mult` steps, and a TLP episode cannot be
//! closed by a DSACK of the probe; the RACK window of a connection that never saw reordering is
//! 0 once `DupThresh` segments are SACKed (§6.2 step 4), so the first reordering by three or more
//! segments is retransmitted spuriously, as in Linux without DSACK.

use super::sack::{SentQueue, SentSeg, Walk};
use crate::time::{Dur, SimTime};

/// RFC 8985 §7.2 `WCDelAckT`, the worst-case delayed-ACK time added to the PTO when one segment
/// is in flight (Linux adds `TCP_RTO_MIN`, the same 200 ms).
pub const WC_DEL_ACK_T: Dur = Dur::from_millis(200);
/// PTO before the first RTT sample (RFC 8985 §7.2; Linux `TCP_TIMEOUT_INIT`).
pub const PTO_NO_SRTT: Dur = Dur::from_secs(1);

/// Whether transmission `a` came after transmission `b` (RFC 8985 §6.2 `RACK_sent_after`).
/// Transmission numbers follow time, and also order transmissions made at the same instant,
/// which the RFC orders by `end_seq` instead (see [`SentSeg::xmit_no`]).
fn sent_after(a: u64, b: u64) -> bool {
    a > b
}

/// RACK's connection state (RFC 8985 §5.3) and the TLP episode (§5.4).
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// The per-segment record (SACKed, lost, retransmitted, `xmit_ts`).
    pub q: SentQueue,
    /// `RACK.xmit_ts`, and the transmission number that stands for `RACK.end_seq`: the most
    /// recently sent segment delivered so far (`None` before any).
    xmit_ts: SimTime,
    xmit_no: Option<u64>,
    /// `RACK.rtt`: the RTT of that segment.
    rtt: Dur,
    /// `RACK.fack`: the highest sequence number delivered + 1.
    fack: u64,
    /// `RACK.reordering_seen`.
    reordering_seen: bool,
    /// Whether RACK.xmit_ts moved since the last loss detection (Linux `rack.advanced`).
    advanced: bool,
    /// `TLP.end_seq`: `snd_max` when the probe went out, while an episode is open.
    pub tlp_end: Option<u64>,
    /// Whether the open episode's probe was a retransmission (Linux `tlp_retrans`).
    pub tlp_rxt: bool,
    /// Probes sent, and episodes that ended by inferring a loss (a congestion response).
    pub tlp_probes: u64,
    pub tlp_recoveries: u64,
}

/// The most recently sent segment one ACK delivered: (xmit_ts, xmit_no, rtt); and what the ACK
/// says about reordering.
#[derive(Default)]
pub struct Delivered {
    best: Option<(SimTime, u64, Dur)>,
    max_end: u64,
    reordered: bool,
    /// The highest never-retransmitted segment delivered: (end, RTT).
    newest_orig: Option<(u64, Dur)>,
}

impl Delivered {
    /// RFC 8985 §6.2 steps 1–2 for one newly delivered segment.
    pub fn add(&mut self, s: &SentSeg, now: SimTime, prior_fack: u64, min_rtt: Dur) {
        self.max_end = self.max_end.max(s.end);
        if !s.retransmitted() && s.end <= prior_fack {
            // Step 1: delivered below data delivered earlier, and not a repair: reordering.
            self.reordered = true;
        }
        let rtt = now.since(s.xmit_ts);
        if !s.retransmitted() && self.newest_orig.map_or(true, |(e, _)| s.end > e) {
            self.newest_orig = Some((s.end, rtt));
        }
        if s.retransmitted() && rtt < min_rtt {
            // Step 2: delivered sooner than any RTT allows, so the ACK is for an earlier
            // transmission. (Linux `tcp_rack_advance` checks only this; see the module docs.)
            return;
        }
        if self.best.map_or(true, |(_, n, _)| sent_after(s.xmit_no, n)) {
            self.best = Some((s.xmit_ts, s.xmit_no, rtt));
        }
    }
}

impl Delivered {
    /// The RTT of the highest never-retransmitted segment delivered (Linux's `ca_rtt_us`: the
    /// last segment `tcp_clean_rtx_queue` acknowledged, or the last one the ACK SACKed).
    pub fn ca_rtt(&self) -> Option<Dur> {
        self.newest_orig.map(|(_, r)| r)
    }
}

impl Rack {
    /// `RACK.fack`, to pass to [`Delivered::add`] before an ACK's segments are processed.
    pub fn fack(&self) -> u64 {
        self.fack
    }

    /// Applies one ACK's delivered segments (RFC 8985 §6.2 steps 1–2).
    pub fn update(&mut self, d: &Delivered) {
        self.fack = self.fack.max(d.max_end);
        self.reordering_seen |= d.reordered;
        if let Some((t, n, rtt)) = d.best {
            self.rtt = rtt;
            if self.xmit_no.map_or(true, |m| sent_after(n, m)) {
                self.xmit_ts = t;
                self.xmit_no = Some(n);
            }
            self.advanced = true;
        }
    }

    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// RFC 8985 §6.2 step 4 without DSACK (`reo_wnd_mult` = 1): 0 while no reordering has been
    /// seen and either a recovery is under way or `DupThresh` segments are SACKed; else
    /// min(min_RTT / 4, SRTT).
    pub fn reo_wnd(&self, in_recovery: bool, dupthresh: u32, min_rtt: Dur, srtt: Dur) -> Dur {
        if !self.reordering_seen && (in_recovery || self.q.sacked_segs() >= dupthresh as u64) {
            return Dur::ZERO;
        }
        Dur(min_rtt.as_nanos() / 4).min(srtt)
    }

    /// RFC 8985 §6.2 step 5 (`RACK_detect_loss`): marks lost every un-SACKed segment sent before
    /// `RACK.xmit_ts` whose time is up, walking transmissions oldest first (Linux
    /// `tcp_rack_detect_loss`). Returns how long the reorder timer must wait for the others, if
    /// any, and whether anything was marked.
    pub fn detect_loss(&mut self, now: SimTime, reo_wnd: Dur) -> (Option<Dur>, bool) {
        self.advanced = false;
        let Some(xmit_no) = self.xmit_no else { return (None, false) };
        let rtt = self.rtt;
        let mut wait: Option<Dur> = None;
        let mut marked = false;
        self.q.walk_by_time(|s| {
            if !sent_after(xmit_no, s.xmit_no) {
                return Walk::Stop;
            }
            let deadline = s.xmit_ts + rtt + reo_wnd;
            if deadline <= now {
                marked = true;
                Walk::Lost
            } else {
                // §6.2: the timer waits for the latest of them (RACK `timeout = max(...)`).
                let left = deadline.since(now);
                wait = Some(wait.map_or(left, |w| w.max(left)));
                Walk::Keep
            }
        });
        (wait, marked)
    }

    /// Whether an ACK delivered a segment sent after the last detection.
    pub fn advanced(&self) -> bool {
        self.advanced
    }

    /// RFC 8985 §6.3: on an RTO, the first outstanding segment is lost, and every other
    /// un-SACKed one whose RACK time is up (sent at least `RACK.rtt + reo_wnd` ago).
    pub fn mark_on_rto(&mut self, now: SimTime, reo_wnd: Dur) {
        let rtt = self.rtt;
        let mut first = true;
        for id in self.q.ids() {
            let s = *self.q.get(id).expect("id in range");
            if s.sacked {
                continue;
            }
            if first || s.xmit_ts + rtt + reo_wnd <= now {
                self.q.mark_lost(id);
            }
            first = false;
        }
        self.tlp_end = None;
    }

    /// RFC 8985 §7.2 `TLP_calc_PTO`: 2·SRTT, plus `WCDelAckT` when one segment is in flight,
    /// 1 s before any RTT sample; the caller caps it by the time left on the RTO.
    pub fn pto(srtt: Option<Dur>, one_segment_in_flight: bool) -> Dur {
        match srtt {
            Some(s) => Dur(2 * s.as_nanos()) + if one_segment_in_flight { WC_DEL_ACK_T } else { Dur::ZERO },
            None => PTO_NO_SRTT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> SimTime {
        SimTime(Dur::from_millis(ms).as_nanos())
    }

    /// Ten segments sent 1 ms apart; segment 3 is SACKed around; RACK marks it lost only once
    /// its RACK time (xmit + rtt + reo_wnd) is up, and reports how long to wait before that.
    #[test]
    fn detect_loss_waits_out_the_reordering_window() {
        let mut r = Rack::default();
        for i in 0..10 {
            r.q.push(1 + i * 100, 1 + (i + 1) * 100, t(i));
        }
        // Segments 4 and 5 (sent at 4 and 5 ms) SACKed at 25 ms: RTT 20 ms.
        let mut d = Delivered::default();
        let fack = r.fack();
        r.q.sack(401, 601, |s| d.add(s, t(25), fack, Dur::from_millis(20)));
        r.update(&d);
        assert!(r.advanced());
        let reo = r.reo_wnd(false, 3, Dur::from_millis(20), Dur::from_millis(20));
        assert_eq!(reo, Dur::from_millis(5), "min_RTT / 4");
        // Segments 0..3 were sent before segment 5; their deadline is xmit + 20 + 5 ms.
        let (wait, marked) = r.detect_loss(t(24), reo);
        assert!(!marked);
        assert_eq!(wait, Some(Dur::from_millis(4)), "segment 3 (sent at 3 ms) is due at 28 ms");
        let (wait, marked) = r.detect_loss(t(26), reo);
        assert!(marked, "segments 0 and 1 are due at 25 and 26 ms");
        assert_eq!(r.q.next_lost(), Some((1, 100)));
        assert_eq!(wait, Some(Dur::from_millis(2)));
        r.q.check();
        // Pipe: 10 segments out, 2 SACKed, 2 lost.
        assert_eq!(r.q.pipe(1, 1001), 600);
        // Resending segment 0 puts it back in the pipe; delivering it after the others says
        // nothing about reordering (it was a repair).
        let id = r.q.id_at(1).unwrap();
        r.q.resent(id, t(26));
        assert_eq!(r.q.pipe(1, 1001), 700);
        let mut d = Delivered::default();
        let fack = r.fack();
        r.q.ack(101, |s| d.add(s, t(46), fack, Dur::from_millis(20)));
        r.update(&d);
        assert!(!r.reordering_seen());
        r.q.check();
        // Segment 6 arrives, then segment 2 without ever being resent: reordering.
        let mut d = Delivered::default();
        let fack = r.fack();
        r.q.sack(601, 701, |s| d.add(s, t(47), fack, Dur::from_millis(20)));
        r.update(&d);
        let mut d = Delivered::default();
        let fack = r.fack();
        r.q.sack(201, 301, |s| d.add(s, t(47), fack, Dur::from_millis(20)));
        r.update(&d);
        assert!(r.reordering_seen());
        r.q.check();
    }

    /// A retransmission SACKed around (a segment sent after it is delivered) is lost again once
    /// its own send time + RACK.rtt + reo_wnd has passed: lost-retransmission detection.
    #[test]
    fn lost_retransmission_is_marked_again() {
        let mut r = Rack::default();
        for i in 0..4 {
            r.q.push(1 + i * 100, 1 + (i + 1) * 100, t(i));
        }
        r.q.mark_lost(r.q.id_at(1).unwrap());
        r.q.resent(r.q.id_at(1).unwrap(), t(30));
        r.q.push(401, 501, t(31));
        assert_eq!(r.q.next_lost(), None);
        let mut d = Delivered::default();
        let fack = r.fack();
        r.q.sack(401, 501, |s| d.add(s, t(51), fack, Dur::from_millis(20)));
        r.update(&d);
        let (_, marked) = r.detect_loss(t(51), Dur::ZERO);
        assert!(marked);
        assert_eq!(r.q.next_lost(), Some((1, 100)), "the retransmission of segment 0 is lost");
        r.q.check();
        // A retransmission delivered sooner than min_RTT after it was sent is ambiguous (the ACK
        // is for the original): no sample. One min_RTT later it counts.
        let id = r.q.id_at(1).unwrap();
        r.q.resent(id, t(60));
        let s = *r.q.get(id).unwrap();
        let mut d = Delivered::default();
        d.add(&s, t(70), 501, Dur::from_millis(20));
        assert!(d.best.is_none());
        d.add(&s, t(80), 501, Dur::from_millis(20));
        assert_eq!(d.best, Some((t(60), s.xmit_no, Dur::from_millis(20))));
    }
}
