//! Slow-start exits for CUBIC: the classic HyStart of Linux (`net/ipv4/tcp_cubic.c`) and of
//! ns-3.44's port of it, and HyStart++ (RFC 9406).
//!
//! Reading list:
//! - S. Ha, I. Rhee, "Taming the Elephants: New TCP Slow Start", Computer Networks 55(9), 2011:
//!   the ACK-train and delay-increase detectors.
//! - Linux 6.x `net/ipv4/tcp_cubic.c`: `cubictcp_acked` (the minimum RTT `delay_min`, the
//!   low-window gate `hystart_low_window` = 16), `hystart_update` (the round reset
//!   `bictcp_hystart_reset`, the ACK train of `hystart_ack_delta_us` = 2000 µs spacing that ends
//!   slow start once it lasts longer than (`delay_min` + `hystart_ack_delay`) / 2, or the whole
//!   of it when the socket paces; the delay detector: the minimum of the round's samples, once
//!   there are `HYSTART_MIN_SAMPLES` = 8, above `delay_min` + clamp(`delay_min` / 8,
//!   `HYSTART_DELAY_MIN` = 4 ms, `HYSTART_DELAY_MAX` = 16 ms)), `hystart_ack_delay` (min(1 ms,
//!   4 `sk_gso_max_size` / `sk_pacing_rate`)), `cubictcp_state` (re-armed on `TCP_CA_Loss`).
//! - ns-3.44 `src/internet/model/tcp-cubic.cc`: `PktsAcked`, `HystartUpdate`,
//!   `HystartDelayThresh`, `HystartReset`: Linux 2.6's HyStart with the SRTT as its RTT sample,
//!   the whole minimum RTT as the train's length, the minimum only of the round's first 8 samples,
//!   a delay threshold of clamp(min RTT, 4 ms, 1 s), and the round reset after detection.
//! - RFC 9406 §4.2: HyStart++ (Conservative Slow Start after a rise of the round's minimum RTT).
//!
//! One classic implementation serves both Linux and ns-3 ([`Flavour`]); where they differ, the
//! code branches on the flavour and names the source of each branch.

use super::{slow_start, AckSample};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::Tcb;

/// Whose classic HyStart.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// Linux 6.x `tcp_cubic.c`. `paced`: the socket paces (`sk_pacing_status` is not
    /// `SK_PACING_NONE`), so the ACK train must last the whole minimum RTT.
    Linux { paced: bool },
    /// ns-3.44 `TcpCubic`.
    Ns3,
}

/// `hystart_low_window` (Linux) and `HyStartLowWindow` (ns-3), segments.
pub const LOW_WINDOW: u64 = 16;
/// `hystart_ack_delta_us` (Linux) and `HyStartAckDelta` (ns-3).
pub const ACK_DELTA: Dur = Dur::from_millis(2);
/// `HYSTART_MIN_SAMPLES` (Linux) and `HyStartMinSamples` (ns-3).
pub const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX` (Linux); ns-3's `HyStartDelayMin` and
/// `HyStartDelayMax` are 4 ms and 1 s.
const DELAY_MIN: Dur = Dur::from_millis(4);
const LINUX_DELAY_MAX: Dur = Dur::from_millis(16);
const NS3_DELAY_MAX: Dur = Dur::from_secs(1);
/// `hystart_ack_delay`'s cap (`USEC_PER_MSEC`) and its TSO/GRO cushion of four
/// `sk_gso_max_size` (`GSO_LEGACY_MAX_SIZE` = 64 KiB, what Linux 6.x TCP always builds: it
/// sets `NETIF_F_GSO` on every TCP socket in `sk_setup_caps`).
const ACK_DELAY_MAX: Dur = Dur::from_millis(1);
const ACK_DELAY_BYTES: u128 = 4 * 65_536;

/// Classic HyStart state (Linux `struct bictcp`'s HyStart fields, ns-3 `TcpCubic`'s).
#[derive(Clone, Debug)]
pub struct HyStart {
    flavour: Flavour,
    /// Start of the current round (`round_start`); `None` before the first.
    round_start: Option<SimTime>,
    /// Last ACK of the current ACK train (`last_ack`).
    last_ack: SimTime,
    /// The round ends when `snd_una` passes this (`end_seq`).
    end_seq: u64,
    /// Minimum RTT sample of the round (`curr_rtt`) and the samples counted (`sample_cnt`).
    curr_rtt: Option<Dur>,
    sample_cnt: u32,
    /// ns-3: the minimum SRTT seen (`m_delayMin`). Linux keeps its `delay_min` in CUBIC, which
    /// passes it in.
    ns3_delay_min: Option<Dur>,
    /// Slow start has been ended (`found`).
    found: bool,
}

impl HyStart {
    pub fn new(flavour: Flavour) -> Self {
        HyStart {
            flavour,
            round_start: None,
            last_ack: SimTime::ZERO,
            end_seq: 0,
            curr_rtt: None,
            sample_cnt: 0,
            ns3_delay_min: None,
            found: false,
        }
    }

    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    /// Whether slow start has been ended since the last re-arm.
    pub fn found(&self) -> bool {
        self.found
    }

    /// `bictcp_hystart_reset` / `HystartReset`: a round starts now and ends once `snd_una` passes
    /// everything sent so far.
    fn reset(&mut self, now: SimTime, tcb: &Tcb) {
        self.round_start = Some(now);
        self.last_ack = now;
        self.end_seq = tcb.snd_max;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// A retransmission timeout (Linux `cubictcp_state` on `TCP_CA_Loss`: `bictcp_reset` and
    /// `bictcp_hystart_reset`; ns-3 `CubicReset`): detection runs again in the next slow start.
    pub fn rearm(&mut self, now: SimTime, tcb: &Tcb) {
        match self.flavour {
            Flavour::Linux { .. } => {
                self.found = false;
                self.reset(now, tcb);
            }
            Flavour::Ns3 => *self = HyStart::new(Flavour::Ns3),
        }
    }

    /// Linux `cubictcp_acked` → `hystart_update`, with the ACK's RTT sample `delay` (≥ 1 µs) and
    /// CUBIC's `delay_min` already updated with it. Call on every such ACK while slow start lasts
    /// and [`found`](Self::found) is false, whatever the window: as in Linux, the rounds are
    /// counted from the first ACK (`bictcp_hystart_reset` comes before the [`LOW_WINDOW`] test),
    /// so a round starts at the head of an ACK train and its first samples are the train's least
    /// delayed. Counting them only from the 16th segment put the round's start inside a train,
    /// whose tail alone could pass the delay test (at 160 ms: exit at cwnd 136 against the
    /// kernel's 189–192 or none). Sets ssthresh = cwnd when slow start should end.
    pub fn update_linux(&mut self, now: SimTime, delay: Dur, delay_min: Dur, tcb: &mut Tcb) {
        let Flavour::Linux { paced } = self.flavour else { unreachable!("update_linux on an ns-3 HyStart") };
        if self.round_start.is_none() || tcb.snd_una > self.end_seq {
            self.reset(now, tcb);
        }
        // `hystart_update`: "hystart triggers when cwnd is larger than some threshold", tested
        // after the round's reset.
        if tcb.cwnd < LOW_WINDOW * tcb.mss {
            return;
        }
        // `hystart_ack_delay`: min(1 ms, 4 GSO buffers at the pacing rate Linux keeps, 200 % of
        // cwnd / SRTT in this slow start: `tcp_update_pacing_rate`).
        let ack_delay = match tcb.srtt {
            Some(srtt) if tcb.cwnd > 0 => {
                let ns = ACK_DELAY_BYTES * srtt.as_nanos() as u128 * 100 / (200 * tcb.cwnd as u128);
                Dur::from_nanos(ns.min(ACK_DELAY_MAX.as_nanos() as u128) as u64)
            }
            _ => Dur::ZERO,
        };
        let train = if paced { delay_min + ack_delay } else { Dur((delay_min + ack_delay).as_nanos() / 2) };
        let thresh = Dur(delay_min.as_nanos() / 8).clamp(DELAY_MIN, LINUX_DELAY_MAX);
        self.detect(now, delay, train, delay_min + thresh, tcb);
    }

    /// ns-3.44 `PktsAcked` → `HystartUpdate` on every ACK outside recovery, with ns-3's sample,
    /// the SRTT. Sets ssthresh = cwnd when slow start should end.
    pub fn update_ns3(&mut self, now: SimTime, tcb: &mut Tcb) {
        let Some(srtt) = tcb.srtt else { return };
        let delay_min = *self.ns3_delay_min.insert(self.ns3_delay_min.map_or(srtt, |d| d.min(srtt)));
        if self.found || tcb.cwnd > tcb.ssthresh || tcb.cwnd < LOW_WINDOW * tcb.mss || self.round_start.is_none() {
            return;
        }
        let thresh = delay_min.clamp(DELAY_MIN, NS3_DELAY_MAX);
        self.detect(now, srtt, delay_min, delay_min + thresh, tcb);
    }

    /// ns-3's round reset, in `TcpCubic::IncreaseWindow`'s slow-start branch (after detection,
    /// unlike Linux): a new round once `snd_una` has passed the last one's end.
    pub fn new_round_ns3(&mut self, now: SimTime, tcb: &Tcb) {
        if self.round_start.is_none() || tcb.snd_una > self.end_seq {
            self.reset(now, tcb);
        }
    }

    /// The two detectors on one sample: the ACK train (ACKs at most [`ACK_DELTA`] apart for
    /// longer than `train` since the round began) and the delay increase (the round's minimum
    /// above `delay_limit` once [`MIN_SAMPLES`] are in).
    fn detect(&mut self, now: SimTime, delay: Dur, train: Dur, delay_limit: Dur, tcb: &mut Tcb) {
        let round_start = self.round_start.expect("a round has begun");
        if now.since(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            if now.since(round_start) > train {
                self.found = true;
            }
        }
        match self.flavour {
            // Linux: `curr_rtt` is the minimum of every sample of the round.
            Flavour::Linux { .. } => {
                self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
                if self.sample_cnt < MIN_SAMPLES {
                    self.sample_cnt += 1;
                } else if self.curr_rtt.is_some_and(|c| c > delay_limit) {
                    self.found = true;
                }
            }
            // ns-3: only of the first `HyStartMinSamples`.
            Flavour::Ns3 => {
                if self.sample_cnt < MIN_SAMPLES {
                    self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
                    self.sample_cnt += 1;
                } else if self.curr_rtt.is_some_and(|c| c > delay_limit) {
                    self.found = true;
                }
            }
        }
        if self.found {
            tcb.ssthresh = tcb.cwnd;
        }
    }
}

/// RFC 9406 §4.2 constants.
const HS_MIN_RTT_THRESH: Dur = Dur::from_millis(4);
const HS_MAX_RTT_THRESH: Dur = Dur::from_millis(16);
const HS_MIN_RTT_DIVISOR: u64 = 8;
const HS_N_RTT_SAMPLE: u32 = 8;
const HS_CSS_GROWTH_DIVISOR: u64 = 4;
const HS_CSS_ROUNDS: u32 = 5;

/// HyStart++ (RFC 9406 §4.2) state.
#[derive(Clone, Debug, Default)]
pub struct HyStartPlusPlus {
    /// The round ends when `snd_una` reaches this (`windowEnd`); 0 before the first round.
    window_end: u64,
    last_round_min_rtt: Option<Dur>,
    current_round_min_rtt: Option<Dur>,
    rtt_sample_count: u32,
    /// In Conservative Slow Start since the RTT rose to this (`cssBaselineMinRtt`).
    css_baseline_min_rtt: Option<Dur>,
    css_rounds: u32,
    /// Growth in CSS not yet applied, bytes.
    css_frac: u64,
}

impl HyStartPlusPlus {
    /// One ACK in slow start: grows `tcb.cwnd`. Returns false once HyStart++ has handed over
    /// to congestion avoidance (ssthresh set to cwnd).
    pub fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb) -> bool {
        if tcb.snd_una >= self.window_end {
            // A round ends (and the next begins).
            if self.css_baseline_min_rtt.is_some() {
                self.css_rounds += 1;
                if self.css_rounds >= HS_CSS_ROUNDS {
                    tcb.ssthresh = tcb.cwnd; // RFC 9406 §4.2: enter congestion avoidance
                    return false;
                }
            }
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            self.window_end = tcb.snd_max;
        }
        if let Some(r) = ack.rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(r, |m| m.min(r)));
            self.rtt_sample_count += 1;
        }
        let enough = self.rtt_sample_count >= HS_N_RTT_SAMPLE;
        match self.css_baseline_min_rtt {
            None => {
                slow_start(ack, tcb, true);
                if let (true, Some(cur), Some(last)) = (enough, self.current_round_min_rtt, self.last_round_min_rtt) {
                    let thresh = Dur(last.as_nanos() / HS_MIN_RTT_DIVISOR).clamp(HS_MIN_RTT_THRESH, HS_MAX_RTT_THRESH);
                    if cur >= last + thresh {
                        // The delay rose: leave slow start for CSS.
                        self.css_baseline_min_rtt = Some(cur);
                        self.css_rounds = 0;
                    }
                }
            }
            Some(base) => {
                // CSS: cwnd += min(N, L * SMSS) / CSS_GROWTH_DIVISOR (L = 2 as in our slow start).
                self.css_frac += ack.acked_bytes.min(2 * tcb.mss);
                tcb.cwnd += self.css_frac / HS_CSS_GROWTH_DIVISOR;
                self.css_frac %= HS_CSS_GROWTH_DIVISOR;
                if enough && self.current_round_min_rtt.is_some_and(|cur| cur < base) {
                    // The rise was spurious: back to slow start.
                    self.css_baseline_min_rtt = None;
                }
            }
        }
        true
    }

    /// Whether Conservative Slow Start is on.
    pub fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn tcb(cwnd_segs: u64, srtt: Dur) -> Tcb {
        let mut t = Tcb::for_test(MSS, cwnd_segs * MSS);
        t.srtt = Some(srtt);
        t.snd_max = 1 + 10_000 * MSS; // the first round lasts the whole test
        t
    }

    /// Linux: ACKs 1 ms apart with a 10 ms minimum RTT: the train ends slow start at the first
    /// ACK more than (10 + 1) / 2 = 5.5 ms after the round began, not at 10 ms as in ns-3; paced,
    /// at the first past 11 ms. Gaps of 3 ms are no train.
    #[test]
    fn linux_train_lasts_half_the_min_rtt_plus_the_ack_delay() {
        let rtt = Dur::from_millis(10);
        for (paced, gap_ms, want) in [(false, 1, Some(6)), (true, 1, Some(12)), (false, 3, None)] {
            let mut hs = HyStart::new(Flavour::Linux { paced });
            let mut t = tcb(20, rtt);
            let mut ended = None;
            for k in 0..40u64 {
                let now = SimTime(Dur::from_millis(k * gap_ms).as_nanos());
                t.snd_una += MSS;
                if !hs.found() {
                    hs.update_linux(now, rtt, rtt, &mut t);
                    if hs.found() {
                        ended = Some(k);
                    }
                }
            }
            assert_eq!(ended, want, "paced {paced}, gaps of {gap_ms} ms");
            if want.is_some() {
                assert_eq!(t.ssthresh, t.cwnd);
            }
        }
    }

    /// Linux's delay detector: with a 40 ms minimum the threshold is 40 + clamp(5, 4, 16) = 45 ms;
    /// samples at 44.9 ms never end slow start, at 45.1 ms the ninth sample of the round does.
    /// (ACKs 3 ms apart: no train.)
    #[test]
    fn linux_delay_threshold_is_an_eighth_of_the_min_rtt_clamped() {
        let min = Dur::from_millis(40);
        for (sample_us, want) in [(44_900, None), (45_100, Some(8))] {
            let mut hs = HyStart::new(Flavour::Linux { paced: false });
            let mut t = tcb(20, min);
            let mut ended = None;
            for k in 0..30u64 {
                let now = SimTime(Dur::from_millis(3 * k).as_nanos());
                if !hs.found() {
                    hs.update_linux(now, Dur::from_micros(sample_us), min, &mut t);
                    if hs.found() {
                        ended = Some(k);
                    }
                }
            }
            assert_eq!(ended, want, "samples of {sample_us} µs");
        }
        // The clamp: 4 ms at a 1 ms minimum, 16 ms at a 1 s minimum.
        for (min_ms, over_ms) in [(1u64, 4u64), (1000, 16)] {
            let min = Dur::from_millis(min_ms);
            for (extra_us, found) in [(-100i64, false), (100, true)] {
                let mut hs = HyStart::new(Flavour::Linux { paced: false });
                let mut t = tcb(20, min);
                let s =
                    Dur::from_nanos((Dur::from_millis(min_ms + over_ms).as_nanos() as i64 + extra_us * 1000) as u64);
                for k in 0..9u64 {
                    hs.update_linux(SimTime(Dur::from_millis(3 * k).as_nanos()), s, min, &mut t);
                }
                assert_eq!(hs.found(), found, "min {min_ms} ms, sample {s:?}");
            }
        }
    }

    /// A round ends when `snd_una` passes everything sent when it began: the train's clock
    /// restarts with it.
    #[test]
    fn linux_round_restarts_when_snd_una_passes_its_end() {
        let rtt = Dur::from_millis(10);
        let mut hs = HyStart::new(Flavour::Linux { paced: false });
        let mut t = tcb(20, rtt);
        t.snd_max = 1 + 20 * MSS;
        // 1 ms ACKs for 5 ms: no exit yet (5.5 ms needed).
        for k in 0..=5u64 {
            t.snd_una = 1 + k * MSS;
            hs.update_linux(SimTime(Dur::from_millis(k).as_nanos()), rtt, rtt, &mut t);
        }
        assert!(!hs.found());
        // snd_una passes the round's end at 6 ms: a new round begins, so no exit at 6 ms.
        t.snd_max = 1 + 60 * MSS;
        t.snd_una = 1 + 21 * MSS;
        hs.update_linux(SimTime(Dur::from_millis(6).as_nanos()), rtt, rtt, &mut t);
        assert!(!hs.found(), "the train restarted with the round");
        assert_eq!(hs.round_start, Some(SimTime(Dur::from_millis(6).as_nanos())));
    }
}
