//! NewReno congestion control: RFC 5681 slow start and congestion avoidance with Appropriate
//! Byte Counting (RFC 3465), and RFC 5681 §3.2's halving on loss; or, under the `linux` rule
//! (the `linux` profile's default), Linux's `tcp_cong.c` Reno, which counts whole segments.
//!
//! The two differ where a window is not a whole number of segments. RFC 5681 halves bytes:
//! after a loss at 13 segments cwnd is 6.5 segments, of which the sender can use 6, and it needs
//! 7 segments' worth acknowledged to grow. Linux halves packets (`tcp_reno_ssthresh`:
//! max(cwnd >> 1, 2)), so cwnd is 6, and grows after 6 (`tcp_cong_avoid_ai`). Linux's slow start
//! (`tcp_slow_start`) also has no per-ACK limit L (RFC 3465 §2.2): a stretch ACK for 4 segments
//! grows cwnd by 4, and what is left over at ssthresh counts towards congestion avoidance.
//!
//! Fast recovery itself (window inflation, partial ACKs, `recover`; RFC 6582) is loss recovery,
//! so it lives in the transport, which also serves CUBIC.

use super::{linux_cong_avoid_ai, linux_enter_loss_ssthresh, linux_slow_start, slow_start, AckSample, BuildCc, CongestionControl, LossEvent};
use crate::transport::tcp::{RenoRule, Tcb};
use serde::{Deserialize, Serialize};

/// NewReno parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NewRenoConfig {
    /// Appropriate Byte Counting (RFC 3465): grow by bytes acknowledged, so delayed ACKs do not
    /// slow growth. Profile default true (Linux); false in `ns3`: RFC 5681 §3.1 per-ACK
    /// counting, cwnd += SMSS²/cwnd per ACK in congestion avoidance, as ns-3's `TcpNewReno` does;
    /// with delayed ACKs the window then grows by about half a segment per RTT (Padhye's b = 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abc: Option<bool>,
    /// The arithmetic: `rfc5681` (bytes, as above) or `linux` (whole segments:
    /// `tcp_reno_ssthresh`, `tcp_slow_start`, `tcp_cong_avoid_ai`). Profile default `linux` in
    /// the `linux` profile, `rfc5681` in `rfc` and `ns3`. `linux` always counts segments
    /// acknowledged, so it takes no `abc = false` (`TcpConfig::validate`, which knows the profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RenoRule>,
}

impl BuildCc for NewRenoConfig {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(NewReno::new(self))
    }
    fn build_with(&self, b: &super::Behaviours) -> Box<dyn CongestionControl> {
        // `b.abc` is `self.abc` when given, else the profile's default.
        Box::new(NewReno { abc: b.abc, rule: b.reno_rule, bytes_acked: 0, cwnd_cnt: 0 })
    }
}

#[derive(Clone, Debug)]
pub struct NewReno {
    abc: bool,
    rule: RenoRule,
    /// RFC 3465 §2.1 `bytes_acked` accumulator for congestion avoidance.
    bytes_acked: u64,
    /// Linux `snd_cwnd_cnt`, the segments credited towards the next growth.
    cwnd_cnt: u32,
}

impl Default for NewReno {
    fn default() -> Self {
        NewReno::new(&NewRenoConfig::default())
    }
}

impl NewReno {
    pub fn new(c: &NewRenoConfig) -> Self {
        NewReno { abc: c.abc.unwrap_or(true), rule: c.rule.unwrap_or(RenoRule::Rfc5681), bytes_acked: 0, cwnd_cnt: 0 }
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb) {
        if !ack.cwnd_limited {
            return;
        }
        if self.rule == RenoRule::Linux {
            // `tcp_reno_cong_avoid`.
            let mut acked = ack.acked_segs;
            if tcb.cwnd < tcb.ssthresh {
                acked = linux_slow_start(acked, tcb);
                if acked == 0 {
                    return;
                }
            }
            let mss = tcb.mss.max(1);
            let w = (tcb.cwnd / mss).min(u32::MAX as u64) as u32;
            let grown = linux_cong_avoid_ai(&mut self.cwnd_cnt, w, w, acked.min(u32::MAX as u64) as u32);
            tcb.cwnd += (grown - w) as u64 * mss;
            return;
        }
        if tcb.cwnd < tcb.ssthresh {
            slow_start(ack, tcb, self.abc);
            return;
        }
        if !self.abc {
            // RFC 5681 §3.1 eq. (3): cwnd += SMSS*SMSS/cwnd per ACK (at least 1 byte).
            tcb.cwnd += (tcb.mss * tcb.mss / tcb.cwnd).max(1);
            return;
        }
        // RFC 5681 §3.1 congestion avoidance with byte counting (RFC 3465 §2.1): once a full
        // window has been acknowledged, cwnd grows by one SMSS.
        self.bytes_acked += ack.acked_bytes;
        if self.bytes_acked >= tcb.cwnd {
            self.bytes_acked -= tcb.cwnd;
            tcb.cwnd += tcb.mss;
        }
    }

    fn on_loss(&mut self, loss: &LossEvent, tcb: &mut Tcb) {
        // RFC 5681 §3.2 step 2, eq. (4): ssthresh = max(FlightSize / 2, 2*SMSS), FlightSize or
        // what the TCP end's `ssthresh_rule` puts in its place; Linux `tcp_reno_ssthresh` halves
        // it in whole segments (`tcp_init_cwnd_reduction` also zeroes `snd_cwnd_cnt`).
        tcb.ssthresh = match self.rule {
            RenoRule::Rfc5681 => (loss.base / 2).max(2 * tcb.mss),
            RenoRule::Linux => reno_ssthresh_segs(loss.base, tcb.mss),
        };
        tcb.cwnd = tcb.ssthresh;
        self.bytes_acked = 0;
        self.cwnd_cnt = 0;
    }

    fn on_rto(&mut self, rto: &super::RtoEvent, tcb: &mut Tcb) {
        self.bytes_acked = 0;
        self.cwnd_cnt = 0; // `tcp_enter_loss`
        if self.rule == RenoRule::Linux && rto.consecutive == 1 {
            // `tcp_enter_loss` with `tcp_reno_ssthresh`.
            tcb.ssthresh = linux_enter_loss_ssthresh(rto, tcb, |cwnd| reno_ssthresh_segs(cwnd, tcb.mss));
        }
    }
}

/// Linux `tcp_reno_ssthresh`: half of `base` in whole segments, at least 2; bytes.
fn reno_ssthresh_segs(base: u64, mss: u64) -> u64 {
    let mss = mss.max(1);
    ((base / mss) >> 1).max(2) * mss
}

#[cfg(test)]
mod tests {
    use super::super::{LossKind, RtoEvent};
    use super::*;
    use crate::time::SimTime;

    fn ack(bytes: u64) -> AckSample {
        AckSample { now: SimTime::ZERO, acked_bytes: bytes, acked_segs: bytes.div_ceil(1000), rtt: None, ca_rtt: None, prior_in_flight: 0, cwnd_limited: true }
    }

    #[test]
    fn slow_start_abc_limit_and_cap_at_ssthresh() {
        let mut cc = NewReno::default();
        let mut tcb = Tcb::for_test(1000, 10_000);
        tcb.ssthresh = 13_500;
        cc.on_ack(&ack(1000), &mut tcb);
        assert_eq!(tcb.cwnd, 11_000);
        // A stretch ACK of 5 segments grows cwnd by at most L = 2*SMSS (RFC 3465 §2.2).
        cc.on_ack(&ack(5000), &mut tcb);
        assert_eq!(tcb.cwnd, 13_000);
        // Slow start stops at ssthresh.
        cc.on_ack(&ack(2000), &mut tcb);
        assert_eq!(tcb.cwnd, 13_500);
    }

    #[test]
    fn congestion_avoidance_one_mss_per_window() {
        let mut cc = NewReno::default();
        let mut tcb = Tcb::for_test(1000, 10_000);
        tcb.ssthresh = 10_000;
        for _ in 0..9 {
            cc.on_ack(&ack(1000), &mut tcb);
        }
        assert_eq!(tcb.cwnd, 10_000, "9 of 10 segments acked");
        cc.on_ack(&ack(1000), &mut tcb);
        assert_eq!(tcb.cwnd, 11_000, "a full window acked");
        // An application-limited ACK does not grow the window.
        let mut a = ack(100_000);
        a.cwnd_limited = false;
        cc.on_ack(&a, &mut tcb);
        assert_eq!(tcb.cwnd, 11_000);
    }

    #[test]
    fn packet_counting_without_abc() {
        let mut cc = NewReno::new(&NewRenoConfig { abc: Some(false), rule: None });
        let mut tcb = Tcb::for_test(1000, 2_000);
        tcb.ssthresh = 4_000;
        // Slow start: at most one SMSS per ACK even for a stretch ACK (RFC 5681 eq. (2), L = SMSS).
        cc.on_ack(&ack(2000), &mut tcb);
        assert_eq!(tcb.cwnd, 3_000);
        cc.on_ack(&ack(2000), &mut tcb);
        assert_eq!(tcb.cwnd, 4_000);
        // Congestion avoidance: SMSS²/cwnd per ACK, whatever the ACK covers (eq. (3)).
        cc.on_ack(&ack(2000), &mut tcb);
        assert_eq!(tcb.cwnd, 4_250);
        cc.on_ack(&ack(1000), &mut tcb);
        assert_eq!(tcb.cwnd, 4_250 + 1_000_000 / 4_250);
    }

    #[test]
    fn loss_halves_flight_with_floor() {
        let mut cc = NewReno::default();
        let mut tcb = Tcb::for_test(1000, 20_000);
        cc.on_loss(&LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size: 18_000, base: 18_000 }, &mut tcb);
        assert_eq!((tcb.ssthresh, tcb.cwnd), (9_000, 9_000));
        cc.on_loss(&LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size: 3_000, base: 3_000 }, &mut tcb);
        assert_eq!(tcb.ssthresh, 2_000, "2*SMSS floor");
        cc.on_rto(&RtoEvent { now: SimTime::ZERO, flight_size: 0, prior_cwnd: 0, prior_ssthresh: u64::MAX, consecutive: 1 }, &mut tcb);
    }

    fn linux() -> NewReno {
        NewReno::new(&NewRenoConfig { abc: None, rule: Some(RenoRule::Linux) })
    }

    #[test]
    fn linux_halves_whole_segments() {
        // `tcp_reno_ssthresh`: max(cwnd >> 1, 2) segments; RFC 5681 halves the bytes.
        let loss = |base| LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size: base, base };
        let (mut lx, mut rfc) = (linux(), NewReno::default());
        let (mut a, mut b) = (Tcb::for_test(1000, 13_000), Tcb::for_test(1000, 13_000));
        lx.on_loss(&loss(13_000), &mut a);
        rfc.on_loss(&loss(13_000), &mut b);
        assert_eq!((a.ssthresh, a.cwnd), (6_000, 6_000));
        assert_eq!((b.ssthresh, b.cwnd), (6_500, 6_500));
        lx.on_loss(&loss(3_000), &mut a);
        assert_eq!(a.ssthresh, 2_000, "at least 2 segments");
    }

    #[test]
    fn linux_grows_one_segment_per_window_of_segments() {
        // `tcp_cong_avoid_ai` at w = 6: the sixth segment delivered grows cwnd to 7; the credit
        // restarts from 0 (none carried over), and a stretch ACK's spare credit is kept.
        let mut cc = linux();
        let mut tcb = Tcb::for_test(1000, 6_000);
        tcb.ssthresh = 6_000;
        for _ in 0..5 {
            cc.on_ack(&ack(1000), &mut tcb);
        }
        assert_eq!(tcb.cwnd, 6_000);
        cc.on_ack(&ack(1000), &mut tcb);
        assert_eq!(tcb.cwnd, 7_000);
        cc.on_ack(&ack(9000), &mut tcb);
        assert_eq!((tcb.cwnd, cc.cwnd_cnt), (8_000, 2));
    }

    #[test]
    fn linux_slow_start_has_no_per_ack_limit_and_carries_the_rest() {
        // `tcp_slow_start`: a stretch ACK of 5 segments grows cwnd by 5 (RFC 3465's L = 2 caps
        // it at 2); at ssthresh the segments left count towards congestion avoidance.
        let mut cc = linux();
        let mut tcb = Tcb::for_test(1000, 10_000);
        tcb.ssthresh = 18_000;
        cc.on_ack(&ack(5000), &mut tcb);
        assert_eq!(tcb.cwnd, 15_000);
        cc.on_ack(&ack(5000), &mut tcb);
        assert_eq!((tcb.cwnd, cc.cwnd_cnt), (18_000, 2));
    }

    #[test]
    fn linux_timeout_keeps_a_recoverys_ssthresh() {
        // `tcp_enter_loss`: ssthresh from cwnd in whole segments, unless the timeout interrupts
        // a fast recovery (its reduced ssthresh stands); later timeouts of a series keep it.
        let rto = |prior_cwnd, prior_ssthresh, consecutive| RtoEvent {
            now: SimTime::ZERO,
            flight_size: 0,
            prior_cwnd,
            prior_ssthresh,
            consecutive,
        };
        let mut cc = linux();
        let mut tcb = Tcb::for_test(1000, 1000);
        tcb.ssthresh = 99_000; // what the transport set (RFC 5681 from FlightSize)
        cc.on_rto(&rto(13_500, u64::MAX, 1), &mut tcb);
        assert_eq!(tcb.ssthresh, 6_000);
        tcb.in_recovery = true;
        cc.on_rto(&rto(9_000, 7_000, 1), &mut tcb);
        assert_eq!(tcb.ssthresh, 7_000);
        tcb.in_recovery = false;
        tcb.ssthresh = 5_000;
        cc.on_rto(&rto(1_000, 5_000, 2), &mut tcb);
        assert_eq!(tcb.ssthresh, 5_000);
    }
}
