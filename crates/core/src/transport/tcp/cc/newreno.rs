//! NewReno congestion control: RFC 5681 slow start and congestion avoidance with Appropriate
//! Byte Counting (RFC 3465), and RFC 5681 §3.2's halving on loss.
//!
//! Fast recovery itself (window inflation, partial ACKs, `recover`; RFC 6582) is loss recovery,
//! so it lives in the transport, which also serves CUBIC.

use super::{slow_start, AckSample, BuildCc, CongestionControl, LossEvent};
use crate::transport::tcp::Tcb;
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
}

impl BuildCc for NewRenoConfig {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(NewReno::new(self))
    }
    fn build_with(&self, b: &super::Behaviours) -> Box<dyn CongestionControl> {
        // `b.abc` is `self.abc` when given, else the profile's default.
        Box::new(NewReno { abc: b.abc, bytes_acked: 0 })
    }
}

#[derive(Clone, Debug)]
pub struct NewReno {
    abc: bool,
    /// RFC 3465 §2.1 `bytes_acked` accumulator for congestion avoidance.
    bytes_acked: u64,
}

impl Default for NewReno {
    fn default() -> Self {
        NewReno::new(&NewRenoConfig::default())
    }
}

impl NewReno {
    pub fn new(c: &NewRenoConfig) -> Self {
        NewReno { abc: c.abc.unwrap_or(true), bytes_acked: 0 }
    }
}

impl CongestionControl for NewReno {
    fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb) {
        if !ack.cwnd_limited {
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
        // what the TCP end's `ssthresh_rule` puts in its place.
        tcb.ssthresh = (loss.base / 2).max(2 * tcb.mss);
        tcb.cwnd = tcb.ssthresh;
        self.bytes_acked = 0;
    }

    fn on_rto(&mut self, _rto: &super::RtoEvent, _tcb: &mut Tcb) {
        self.bytes_acked = 0;
    }
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
        let mut cc = NewReno::new(&NewRenoConfig { abc: Some(false) });
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
        cc.on_rto(&RtoEvent { now: SimTime::ZERO, flight_size: 0, prior_cwnd: 0, consecutive: 1 }, &mut tcb);
    }
}
