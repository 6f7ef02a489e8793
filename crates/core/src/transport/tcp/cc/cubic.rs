//! CUBIC congestion control, RFC 9438.
//!
//! Reading list: RFC 9438 §4.1 (constants C = 0.4, β = 0.7), §4.2 (W_cubic(t) and K, target),
//! §4.3 (Reno-friendly region, W_est and α), §4.4–4.5 (concave and convex regions), §4.6
//! (multiplicative decrease), §4.7 (fast convergence), §4.8 (timeout), §4.10 (slow start).
//!
//! Windows are computed in segments as `f64` (the RFC's unit) and applied to the byte-valued
//! `Tcb::cwnd`, carrying the fractional byte between ACKs so growth is not lost to rounding.
//!
//! HyStart++ (RFC 9406 §4.2) in the first slow start when the TCP end's `hystart` behaviour is on
//! (the `linux` profile): the minimum RTT of each round (from the first 8 samples) is compared
//! with the previous round's; a rise of at least clamp(last/8, 4 ms, 16 ms) ends slow start and
//! begins Conservative Slow Start (growth divided by 4), which returns to slow start if the RTT
//! falls back below its baseline and hands over to congestion avoidance (ssthresh = cwnd) after
//! 5 rounds. Slow starts after a timeout are plain (RFC 9406 §4.3 leaves this to the sender;
//! Linux's HyStart also runs only while `ssthresh` is unset). Linux's own HyStart (ACK-train and
//! delay detection in `tcp_cubic.c`) is not modelled; RFC 9406 is the spec implemented.
//! Otherwise slow start is plain RFC 5681 + ABC (§4.10 allows this).
//!
//! Not modelled: spurious-congestion undo (§4.9), ECN (§4.6's ECN rules), and the Linux-specific epoch shift
//! after application-limited idle periods (we simply do not grow a window that is not used).

use super::{slow_start, AckSample, BuildCc, CongestionControl, LossEvent, RtoEvent};
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{Behaviours, HystartRule};
use crate::transport::tcp::Tcb;
use serde::{Deserialize, Serialize};

/// CUBIC parameters (RFC 9438 §4.1 defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// Scaling constant C, in segments / s³. Default 0.4 (RFC 9438 §4.1).
    pub c: f64,
    /// Multiplicative decrease factor β_cubic, in (0, 1). Default 0.7 (RFC 9438 §4.1).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7). Default true.
    pub fast_convergence: bool,
    /// Reno-friendly region (RFC 9438 §4.3). Default true.
    pub reno_friendly: bool,
    /// RFC 9438 §4.3's switch of α_cubic to 1 once W_est has reached `cwnd_prior` (a SHOULD).
    /// Default true. false: α_cubic stays 3(1 − β)/(1 + β), as Linux's `tcp_cubic.c` and ns-3.44's
    /// `TcpCubic` keep it (see "CUBIC against NewReno" in `docs/models/tcp.md`).
    pub alpha_switch: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig { c: 0.4, beta: 0.7, fast_convergence: true, reno_friendly: true, alpha_switch: true }
    }
}

impl BuildCc for CubicConfig {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Cubic::new(self))
    }
    fn build_with(&self, b: &Behaviours) -> Box<dyn CongestionControl> {
        let mut c = Cubic::new(self);
        match (b.hystart, b.hystart_rule) {
            (true, HystartRule::Rfc9406) => c.hystart = Some(HyStart::default()),
            (true, HystartRule::Ns3) => c.ns3_hystart = Some(Ns3HyStart::default()),
            (false, _) => {}
        }
        Box::new(c)
    }
    fn validate(&self) -> Result<(), String> {
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(format!("cc.c: must be a positive number, got {}", self.c));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("cc.beta: must be in (0, 1), got {}", self.beta));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Cubic {
    c: f64,
    beta: f64,
    fast_convergence: bool,
    reno_friendly: bool,
    alpha_switch: bool,
    /// W_max in segments; 0 means "take cwnd at the start of congestion avoidance" (§4.8).
    w_max: f64,
    /// K in seconds (§4.2 eq. 2).
    k: f64,
    /// Start of the current congestion-avoidance stage; `None` until its first ACK.
    epoch_start: Option<SimTime>,
    /// cwnd at the start of the stage, segments.
    cwnd_epoch: f64,
    /// W_est of the Reno-friendly region, segments (§4.3).
    w_est: f64,
    /// cwnd when ssthresh was last set on a congestion event, segments (§4.3, §4.6).
    cwnd_prior: f64,
    /// Fractional cwnd growth in bytes not yet applied.
    frac: f64,
    /// HyStart++ state while the first slow start lasts (`None`: plain slow start).
    hystart: Option<HyStart>,
    /// ns-3.44's HyStart, when the end runs it (`hystart_rule = "ns3"`).
    ns3_hystart: Option<Ns3HyStart>,
}

/// ns-3.44 `TcpCubic`'s HyStart state (see [`HystartRule::Ns3`]).
#[derive(Clone, Debug, Default)]
pub struct Ns3HyStart {
    /// Start of the current round (`m_roundStart`); `None` before the first ACK.
    round_start: Option<SimTime>,
    /// Last ACK of the current ACK train (`m_lastAck`).
    last_ack: SimTime,
    /// The round ends when `snd_una` passes this (`m_endSeq`).
    end_seq: u64,
    /// Minimum SRTT of the round's first samples (`m_currRtt`) and their count.
    curr_rtt: Option<Dur>,
    sample_cnt: u32,
    /// Minimum SRTT seen (`m_delayMin`).
    delay_min: Option<Dur>,
    /// Slow start has been ended (`m_found`).
    found: bool,
}

/// ns-3.44 `TcpCubic` attribute defaults.
const NS3_HS_LOW_WINDOW: u64 = 16;
const NS3_HS_ACK_DELTA: Dur = Dur::from_millis(2);
const NS3_HS_MIN_SAMPLES: u32 = 8;
const NS3_HS_DELAY_MIN: Dur = Dur::from_millis(4);
const NS3_HS_DELAY_MAX: Dur = Dur::from_secs(1);

impl Ns3HyStart {
    /// `HystartReset`: a new round starts now and ends when everything sent so far is acked.
    fn reset(&mut self, now: SimTime, tcb: &Tcb) {
        self.round_start = Some(now);
        self.last_ack = now;
        self.end_seq = tcb.snd_max;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// `PktsAcked` → `HystartUpdate`, on every ACK outside recovery, with ns-3's argument, the
    /// SRTT. Sets ssthresh = cwnd when slow start should end.
    fn update(&mut self, now: SimTime, tcb: &mut Tcb) {
        let Some(srtt) = tcb.srtt else { return };
        let delay_min = *self.delay_min.insert(self.delay_min.map_or(srtt, |d| d.min(srtt)));
        if self.found || tcb.cwnd > tcb.ssthresh || tcb.cwnd < NS3_HS_LOW_WINDOW * tcb.mss {
            return;
        }
        let Some(round_start) = self.round_start else { return };
        // ACK-train detection.
        if now.since(self.last_ack) <= NS3_HS_ACK_DELTA {
            self.last_ack = now;
            if now.since(round_start) > delay_min {
                self.found = true;
            }
        }
        // Delay detection.
        if self.sample_cnt < NS3_HS_MIN_SAMPLES {
            self.curr_rtt = Some(self.curr_rtt.map_or(srtt, |c| c.min(srtt)));
            self.sample_cnt += 1;
        } else if self.curr_rtt.is_some_and(|c| c > delay_min + delay_min.clamp(NS3_HS_DELAY_MIN, NS3_HS_DELAY_MAX)) {
            self.found = true;
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
pub struct HyStart {
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

impl HyStart {
    /// One ACK in slow start: grows `tcb.cwnd`. Returns false once HyStart++ has handed over
    /// to congestion avoidance (ssthresh set to cwnd).
    fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb) -> bool {
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

impl Cubic {
    pub fn new(c: &CubicConfig) -> Self {
        Cubic {
            c: c.c,
            beta: c.beta,
            fast_convergence: c.fast_convergence,
            reno_friendly: c.reno_friendly,
            alpha_switch: c.alpha_switch,
            w_max: 0.0,
            k: 0.0,
            epoch_start: None,
            cwnd_epoch: 0.0,
            w_est: 0.0,
            cwnd_prior: 0.0,
            frac: 0.0,
            hystart: None,
            ns3_hystart: None,
        }
    }

    /// HyStart++ state, while it runs.
    pub fn hystart(&self) -> Option<&HyStart> {
        self.hystart.as_ref()
    }

    /// RFC 9438 §4.2 eq. (1): W_cubic(t) = C (t - K)³ + W_max, in segments, t in seconds since
    /// the start of the congestion-avoidance stage.
    pub fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        self.c * d * d * d + self.w_max
    }
    pub fn k(&self) -> f64 {
        self.k
    }
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    pub fn w_est(&self) -> f64 {
        self.w_est
    }

    /// α_cubic of §4.3: 3(1 - β)/(1 + β), and 1 once W_est has reached cwnd_prior (unless the
    /// switch is off).
    fn alpha(&self) -> f64 {
        if self.alpha_switch && self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - self.beta) / (1.0 + self.beta)
        }
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, ack: &AckSample, tcb: &mut Tcb) {
        if let Some(hs) = &mut self.ns3_hystart {
            // ns-3 calls PktsAcked (HyStart's detection) before IncreaseWindow, limited or not.
            hs.update(ack.now, tcb);
        }
        if !ack.cwnd_limited {
            return;
        }
        if tcb.cwnd < tcb.ssthresh {
            if let Some(hs) = &mut self.ns3_hystart {
                if hs.round_start.is_none() || tcb.snd_una > hs.end_seq {
                    hs.reset(ack.now, tcb);
                }
            }
            // RFC 9438 §4.10: slow start, with HyStart++ (RFC 9406) if on, else standard.
            match &mut self.hystart {
                Some(hs) => {
                    if !hs.on_ack(ack, tcb) {
                        self.hystart = None;
                    }
                }
                None => slow_start(ack, tcb, true),
            }
            return;
        }
        let mss = tcb.mss as f64;
        let cwnd = tcb.cwnd as f64 / mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            // A new congestion-avoidance stage begins (§4.2).
            self.cwnd_epoch = cwnd;
            self.w_est = cwnd; // §4.3: W_est = cwnd_epoch at the start of the stage
            self.frac = 0.0;
            if self.w_max <= cwnd {
                // §4.8 (after a timeout, and before any loss): K = 0, W_max = cwnd_epoch.
                self.w_max = cwnd;
                self.k = 0.0;
            } else {
                // §4.2 eq. (2): K = cubic_root((W_max - cwnd_epoch) / C).
                self.k = ((self.w_max - cwnd) / self.c).cbrt();
            }
            ack.now
        });
        let t = ack.now.since(start).as_secs_f64();
        let rtt = tcb.srtt.map_or(0.0, |d| d.as_secs_f64());
        let segs = ack.acked_bytes as f64 / mss;

        // §4.3: W_est grows by α_cubic * segments_acked / cwnd.
        self.w_est += self.alpha() * segs / cwnd;

        if self.reno_friendly && self.w_cubic(t) < self.w_est {
            // §4.3: Reno-friendly region, cwnd = W_est.
            let want = (self.w_est * mss).floor() as u64;
            if want > tcb.cwnd {
                tcb.cwnd = want;
            }
            self.frac = 0.0;
            return;
        }
        // §4.2: target = W_cubic(t + RTT), clamped to [cwnd, 1.5 cwnd]; §4.4/§4.5: cwnd grows
        // by (target - cwnd) / cwnd per acked segment.
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        let inc = (target - cwnd) / cwnd * segs * mss + self.frac;
        let whole = inc.floor();
        self.frac = inc - whole;
        tcb.cwnd += whole as u64;
    }

    fn on_loss(&mut self, loss: &LossEvent, tcb: &mut Tcb) {
        let mss = tcb.mss as f64;
        let cwnd = tcb.cwnd as f64 / mss;
        // §4.7 fast convergence: a flow that lost before reaching its previous W_max releases
        // bandwidth by remembering a lower W_max.
        self.w_max = if self.fast_convergence && cwnd < self.w_max { cwnd * (1.0 + self.beta) / 2.0 } else { cwnd };
        self.cwnd_prior = cwnd;
        // §4.6: ssthresh = flight_size * β_cubic (or the `ssthresh_rule`'s base in its place);
        // cwnd = max(ssthresh, 2 segments).
        let ssthresh = ((loss.base as f64 * self.beta) as u64).max(2 * tcb.mss);
        tcb.ssthresh = ssthresh;
        tcb.cwnd = ssthresh;
        self.epoch_start = None;
        self.frac = 0.0;
        self.hystart = None; // HyStart++ serves only the first slow start
    }

    fn on_rto(&mut self, rto: &RtoEvent, tcb: &mut Tcb) {
        // §4.8: reduce cwnd as Reno does (the transport set cwnd = 1 SMSS) but set ssthresh with
        // β_cubic as in §4.6 (only on the first timeout of a series: RFC 5681 holds ssthresh on
        // repeated timeouts). The next stage uses K = 0 and W_max = its initial cwnd.
        if rto.consecutive == 1 {
            tcb.ssthresh = ((rto.flight_size as f64 * self.beta) as u64).max(2 * tcb.mss);
        }
        self.w_max = 0.0;
        self.epoch_start = None;
        self.frac = 0.0;
        self.hystart = None;
        if let Some(hs) = &mut self.ns3_hystart {
            // CubicReset + HystartReset on CA_LOSS: detection runs again in the next slow start.
            *hs = Ns3HyStart { round_start: None, ..Ns3HyStart::default() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::LossKind;
    use super::*;
    use crate::time::Dur;

    const MSS: u64 = 1000;

    fn ack_at(t: SimTime, bytes: u64) -> AckSample {
        AckSample { now: t, acked_bytes: bytes, rtt: None, prior_in_flight: 0, cwnd_limited: true }
    }
    fn loss(flight: u64) -> LossEvent {
        LossEvent { now: SimTime::ZERO, kind: LossKind::FastRetransmit, flight_size: flight, base: flight }
    }

    /// Drives CUBIC with an ACK clock: every RTT, one ACK per segment of the current window,
    /// spread evenly. Returns cwnd (segments) sampled at each whole second up to `secs`.
    fn run(cc: &mut Cubic, tcb: &mut Tcb, rtt: Dur, secs: u64) -> Vec<f64> {
        tcb.srtt = Some(rtt);
        let mut t = 0u64;
        let mut out = vec![];
        let end = Dur::from_secs(secs).as_nanos();
        let mut next_sample = Dur::from_secs(1).as_nanos();
        while t < end {
            let n = tcb.cwnd / MSS;
            let step = rtt.as_nanos() / n;
            for _ in 0..n {
                cc.on_ack(&ack_at(SimTime(t), MSS), tcb);
                t += step;
                if t >= next_sample {
                    out.push(tcb.cwnd as f64 / MSS as f64);
                    next_sample += Dur::from_secs(1).as_nanos();
                }
            }
        }
        out
    }

    #[test]
    fn k_and_w_cubic_match_rfc9438_formula() {
        let mut cc = Cubic::new(&CubicConfig::default());
        let mut tcb = Tcb::for_test(MSS, 100 * MSS);
        cc.on_loss(&loss(100 * MSS), &mut tcb);
        // §4.6: ssthresh = cwnd = 0.7 * 100 segments.
        assert_eq!((tcb.ssthresh, tcb.cwnd), (70 * MSS, 70 * MSS));
        assert_eq!(cc.w_max(), 100.0);
        cc.on_ack(&ack_at(SimTime::ZERO, MSS), &mut tcb);
        // K = cbrt(W_max (1 - β) / C) = cbrt(100 * 0.3 / 0.4) = cbrt(75).
        assert!((cc.k() - 75f64.cbrt()).abs() < 1e-12, "K = {}", cc.k());
        assert!((cc.k() - 4.217_163_326_508_746).abs() < 1e-12);
        assert!((cc.w_cubic(0.0) - 70.0).abs() < 1e-9);
        assert!((cc.w_cubic(cc.k()) - 100.0).abs() < 1e-12);
        // t = 2 s: 0.4 * (2 - 4.2172)^3 + 100 = 95.6406...
        let expect = 0.4 * (2.0f64 - 75f64.cbrt()).powi(3) + 100.0;
        assert!((cc.w_cubic(2.0) - expect).abs() < 1e-12);
        assert!((expect - 95.640_6).abs() < 1e-3);
    }

    #[test]
    fn cwnd_follows_w_cubic_over_time() {
        // Reno-friendly off so the window is the cubic curve alone.
        let cfg = CubicConfig { reno_friendly: false, ..Default::default() };
        let mut cc = Cubic::new(&cfg);
        let mut tcb = Tcb::for_test(MSS, 100 * MSS);
        cc.on_loss(&loss(100 * MSS), &mut tcb);
        let rtt = Dur::from_millis(100);
        let got = run(&mut cc, &mut tcb, rtt, 8);
        for (i, w) in got.iter().enumerate() {
            let t = (i + 1) as f64;
            // cwnd approaches target W(t + RTT) within about one RTT: it lies between W(t) and
            // W(t + RTT), within one segment.
            let lo = cc.w_cubic(t) - 1.0;
            let hi = cc.w_cubic(t + rtt.as_secs_f64()) + 1.0;
            assert!(*w >= lo && *w <= hi, "t = {t} s: cwnd {w:.2} not in [{lo:.2}, {hi:.2}]");
        }
        // Plateau near W_max = 100 around t = K, then convex growth beyond it.
        assert!((got[3] - 100.0).abs() < 1.5, "t = 4 s ~ K: {}", got[3]);
        assert!(got[7] > 110.0, "convex region: {}", got[7]);
    }

    #[test]
    fn reno_friendly_region_uses_w_est() {
        // Small window, short RTT: Reno's linear growth outruns the cubic curve (§4.3).
        let mut cc = Cubic::new(&CubicConfig::default());
        let mut tcb = Tcb::for_test(MSS, 10 * MSS);
        cc.on_loss(&loss(10 * MSS), &mut tcb);
        let got = run(&mut cc, &mut tcb, Dur::from_millis(10), 1);
        // K = cbrt(3 / 0.4) = 1.957 s, so W_cubic(1 s) = 0.4 (1 - 1.957)^3 + 10 = 9.65 segments.
        assert!(cc.w_cubic(1.0) < 10.0);
        // Reno: about 100 RTTs at ~0.53 segment/RTT until W_est reaches cwnd_prior = 10 (≈ 6 RTTs),
        // then 1 segment/RTT: ≈ 7 + 3 + 94 ≈ 100 segments.
        assert!(got[0] > 90.0 && got[0] < 110.0, "cwnd after 1 s = {}", got[0]);
        assert!((tcb.cwnd as f64 / MSS as f64 - cc.w_est()).abs() < 1.0);
        // With the region disabled the window is the (flat) cubic curve.
        let mut cc2 = Cubic::new(&CubicConfig { reno_friendly: false, ..Default::default() });
        let mut tcb2 = Tcb::for_test(MSS, 10 * MSS);
        cc2.on_loss(&loss(10 * MSS), &mut tcb2);
        let got2 = run(&mut cc2, &mut tcb2, Dur::from_millis(10), 1);
        assert!(got2[0] < 11.0, "{}", got2[0]);
    }

    #[test]
    fn alpha_switch_off_keeps_the_reno_friendly_slope() {
        // As above, without §4.3's switch to α = 1: W_est grows by 3(1 − 0.7)/(1 + 0.7) = 0.529
        // segments per RTT for all of the ~100 RTTs: 7 + 52.9 ≈ 60 segments after 1 s (with the
        // switch, ≈ 100).
        let mut cc = Cubic::new(&CubicConfig { alpha_switch: false, ..Default::default() });
        let mut tcb = Tcb::for_test(MSS, 10 * MSS);
        cc.on_loss(&loss(10 * MSS), &mut tcb);
        let got = run(&mut cc, &mut tcb, Dur::from_millis(10), 1);
        assert!(got[0] > 55.0 && got[0] < 65.0, "cwnd after 1 s = {}", got[0]);
    }

    #[test]
    fn fast_convergence_and_timeout() {
        let mut cc = Cubic::new(&CubicConfig::default());
        let mut tcb = Tcb::for_test(MSS, 100 * MSS);
        cc.on_loss(&loss(100 * MSS), &mut tcb);
        assert_eq!(cc.w_max(), 100.0);
        // Loss again at 80 < W_max: W_max = 80 (1 + 0.7) / 2 = 68 (§4.7).
        tcb.cwnd = 80 * MSS;
        cc.on_loss(&loss(80 * MSS), &mut tcb);
        assert!((cc.w_max() - 68.0).abs() < 1e-9);
        assert_eq!(tcb.ssthresh, 56 * MSS);
        // Without fast convergence W_max = cwnd.
        let mut nf = Cubic::new(&CubicConfig { fast_convergence: false, ..Default::default() });
        let mut t2 = Tcb::for_test(MSS, 100 * MSS);
        nf.on_loss(&loss(100 * MSS), &mut t2);
        t2.cwnd = 80 * MSS;
        nf.on_loss(&loss(80 * MSS), &mut t2);
        assert_eq!(nf.w_max(), 80.0);

        // Timeout (§4.8): ssthresh from β_cubic; next CA stage has K = 0 and W_max = cwnd_epoch.
        let mut tcb = Tcb::for_test(MSS, 60 * MSS);
        tcb.cwnd = MSS; // the transport's loss window
        let ev = RtoEvent { now: SimTime::ZERO, flight_size: 60 * MSS, prior_cwnd: 60 * MSS, consecutive: 1 };
        cc.on_rto(&ev, &mut tcb);
        assert_eq!(tcb.ssthresh, 42 * MSS);
        tcb.cwnd = 42 * MSS; // slow start has reached ssthresh
        cc.on_ack(&ack_at(SimTime(5), MSS), &mut tcb);
        assert_eq!(cc.k(), 0.0);
        assert_eq!(cc.w_max(), 42.0);
        // A second timeout in a row keeps ssthresh.
        let ev2 = RtoEvent { consecutive: 2, ..ev };
        tcb.ssthresh = 7 * MSS;
        cc.on_rto(&ev2, &mut tcb);
        assert_eq!(tcb.ssthresh, 7 * MSS);
    }

    #[test]
    fn ns3_hystart_ends_slow_start_on_an_ack_train_longer_than_the_min_rtt() {
        // ns-3.44 TcpCubic::HystartUpdate: ACKs 1 ms apart (< HyStartAckDelta = 2 ms), SRTT
        // 10 ms, cwnd from 20 segments (detection needs 16): slow start ends at the first ACK
        // more than 10 ms after the round began, with ssthresh = cwnd. (A train only counts
        // from the round's start: `m_lastAck` moves only while detection runs.)
        let rtt = Dur::from_millis(10);
        for gap_ms in [1u64, 3] {
            let mut cc = Cubic::new(&CubicConfig::default());
            cc.ns3_hystart = Some(Ns3HyStart::default());
            let mut tcb = Tcb::for_test(MSS, 20 * MSS);
            tcb.srtt = Some(rtt);
            tcb.snd_max = 1 + 10_000 * MSS; // the first round lasts the whole test
            let mut ended = None;
            for k in 0..40u64 {
                let t = SimTime(Dur::from_millis(k * gap_ms).as_nanos());
                tcb.snd_una += MSS;
                cc.on_ack(&ack_at(t, MSS), &mut tcb);
                if tcb.ssthresh != crate::transport::tcp::INITIAL_SSTHRESH && ended.is_none() {
                    ended = Some((k, tcb.cwnd / MSS, tcb.ssthresh / MSS));
                }
            }
            if gap_ms == 1 {
                // Round starts at the first ACK (t = 0); t = 11 ms is the first ACK past 10 ms.
                assert_eq!(ended, Some((11, 31, 31)), "train of 1 ms gaps");
            } else {
                assert_eq!(ended, None, "gaps of 3 ms are no train, and the delay did not rise");
            }
        }
    }
}
