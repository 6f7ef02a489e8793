//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! Reading list: RFC 6298 §2 (SRTT, RTTVAR, RTO), §3 (Karn's algorithm), §5 (timer management);
//! RFC 7323 §4 (timestamps make every ACK of new data a valid sample).
//!
//! All arithmetic is on integer nanoseconds so runs are bit-exact. The gains 1/8 and 1/4 are
//! applied with truncating integer division.
//!
//! Deviation from RFC 6298 §2.4 (RTO rounded up to 1 s): the lower bound is the configurable
//! `min_rto`, 200 ms by default as in Linux (`TCP_RTO_MIN`); set it to `"1s"` for the RFC value
//! (ns-3's default).
//!
//! [`RtoRule::Linux`] replaces §2.2–2.4 with Linux's `tcp_rtt_estimator` and `tcp_set_rto`
//! (`net/ipv4/tcp_input.c`): the same 1/8 gain on SRTT; the mean deviation `mdev` (kept ×4, as
//! Linux's `mdev_us`) with gain 1/4, but 1/32 when the sample is *below* SRTT (so a falling RTT
//! does not inflate the RTO); `rttvar` follows the largest `mdev` of the current round trip
//! (`mdev_max`, reset to `min_rto` once per RTT, when `snd_una` passes the `rtt_seq` recorded
//! at the previous reset) and decays towards it by 1/4 per RTT; RTO = SRTT + rttvar. Since
//! `mdev_max` never starts below `min_rto`, RTO ≥ SRTT + `min_rto`: the floor applies to the
//! variance term, not to the whole RTO. The first sample gives RTO = SRTT + max(2·R, min_rto)
//! (Linux: "make sure rto = 3*rtt").

pub use super::profile::RtoRule;
use crate::time::Dur;

/// Clock granularity G of RFC 6298 §2. The simulator's clock has nanosecond resolution; we use
/// 1 ms, ns-3's `ClockGranularity` default, so that RTO never collapses onto SRTT when the path's
/// RTT is perfectly constant.
pub const CLOCK_GRANULARITY: Dur = Dur::from_millis(1);

/// FreeBSD's `TCPTV_CPU_VAR` (`net.inet.tcp.rexmit_slop`), added to every computed RTO.
pub const FREEBSD_REXMIT_SLOP: Dur = Dur::from_millis(200);

/// RFC 6298 estimator state plus the exponential backoff of §5.5.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Dur>,
    rttvar: Dur,
    /// RTO computed from the last sample (or the initial RTO), before backoff.
    base_rto: Dur,
    /// Number of doublings applied since the last valid sample (RFC 6298 §5.5).
    backoff: u32,
    min_rto: Dur,
    max_rto: Dur,
    latest: Option<Dur>,
    min_rtt: Option<Dur>,
    rule: RtoRule,
    /// Linux: mean deviation ×4 (`mdev_us`), the largest this round trip (`mdev_max_us`), and
    /// the sequence number whose acknowledgment ends the round trip (`rtt_seq`), in ns / bytes.
    mdev4: u64,
    mdev_max: u64,
    rtt_seq: u64,
    /// The sum (ns) and count of every valid sample, for the run's mean RTT.
    sum_ns: u128,
    samples: u64,
}

impl RttEstimator {
    /// # Panics
    /// If `min_rto > max_rto` or `initial_rto` is zero (config validation rejects both).
    pub fn new(initial_rto: Dur, min_rto: Dur, max_rto: Dur) -> Self {
        assert!(min_rto <= max_rto, "tcp: min_rto {min_rto:?} > max_rto {max_rto:?}");
        assert!(initial_rto > Dur::ZERO, "tcp: initial_rto must be positive");
        RttEstimator {
            srtt: None,
            rttvar: Dur::ZERO,
            // RFC 6298 §2.1: until a sample is taken, RTO = initial RTO (1 s). The max bound (§2.5)
            // applies; the min bound does not (the RFC's initial value is above any sane minimum).
            base_rto: initial_rto.min(max_rto),
            backoff: 0,
            min_rto,
            max_rto,
            latest: None,
            min_rtt: None,
            rule: RtoRule::Rfc6298,
            mdev4: 0,
            mdev_max: 0,
            rtt_seq: 0,
            sum_ns: 0,
            samples: 0,
        }
    }

    /// The same estimator with RTO rule `rule`.
    pub fn with_rule(self, rule: RtoRule) -> Self {
        RttEstimator { rule, ..self }
    }

    /// Feeds one valid RTT measurement `r` taken when the cumulative ACK point is `snd_una` and
    /// the next new byte to send is `snd_nxt` (the Linux rule uses both to find round trips).
    pub fn on_sample_at(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        match self.rule {
            RtoRule::Rfc6298 => self.on_sample(r),
            RtoRule::Freebsd => {
                self.on_sample(r);
                // TCPT_RANGESET adds tcp_rexmit_slop (TCPTV_CPU_VAR, 200 ms) after the floor.
                self.base_rto = (self.base_rto + FREEBSD_REXMIT_SLOP).min(self.max_rto);
            }
            RtoRule::Linux => self.on_sample_linux(r, snd_una, snd_nxt),
        }
    }

    /// Linux `tcp_rtt_estimator` + `tcp_set_rto` (see the module docs), in nanoseconds.
    fn on_sample_linux(&mut self, r: Dur, snd_una: u64, snd_nxt: u64) {
        let r_ns = r.as_nanos().max(1);
        let min_rto = self.min_rto.as_nanos();
        match self.srtt {
            Some(srtt) => {
                let s = srtt.as_nanos();
                let mut m = r_ns as i64 - s as i64; // error in the RTT estimate
                let srtt = (s as i64 + m / 8).max(1) as u64; // srtt = 7/8 srtt + 1/8 r
                self.srtt = Some(Dur(srtt));
                let q = (self.mdev4 / 4) as i64;
                if m < 0 {
                    // A sample below SRTT: finer gain (1/32) on mdev, Linux's Eifel-like rule.
                    m = -m - q;
                    if m > 0 {
                        m /= 8;
                    }
                } else {
                    m -= q;
                }
                self.mdev4 = (self.mdev4 as i64 + m).max(0) as u64; // mdev = 3/4 mdev + 1/4 |err|
                if self.mdev4 > self.mdev_max {
                    self.mdev_max = self.mdev4;
                    if self.mdev_max > self.rttvar.as_nanos() {
                        self.rttvar = Dur(self.mdev_max);
                    }
                }
                if snd_una > self.rtt_seq {
                    // One round trip has ended: rttvar decays towards this RTT's largest mdev.
                    let v = self.rttvar.as_nanos();
                    if self.mdev_max < v {
                        self.rttvar = Dur(v - (v - self.mdev_max) / 4);
                    }
                    self.rtt_seq = snd_nxt;
                    self.mdev_max = min_rto;
                }
            }
            None => {
                self.srtt = Some(Dur(r_ns));
                self.mdev4 = 2 * r_ns;
                self.rttvar = Dur(self.mdev4.max(min_rto));
                self.mdev_max = self.rttvar.as_nanos();
                self.rtt_seq = snd_nxt;
            }
        }
        let rto = Dur(self.srtt.expect("set above").as_nanos() + self.rttvar.as_nanos());
        self.base_rto = rto.min(self.max_rto); // tcp_bound_rto: only the upper bound
        self.backoff = 0;
        self.record(r);
    }

    /// Feeds one valid RTT measurement `r` (Karn-clean or timestamp-echo) under RFC 6298.
    pub fn on_sample(&mut self, r: Dur) {
        let r_ns = r.as_nanos();
        match self.srtt {
            None => {
                // RFC 6298 §2.2: first measurement.
                self.srtt = Some(r);
                self.rttvar = Dur(r_ns / 2);
            }
            Some(srtt) => {
                // RFC 6298 §2.3: RTTVAR first, using the SRTT from before this update.
                let s = srtt.as_nanos();
                let err = s.abs_diff(r_ns);
                self.rttvar = Dur((3 * self.rttvar.as_nanos() + err) / 4);
                self.srtt = Some(Dur((7 * s + r_ns) / 8));
            }
        }
        let srtt = self.srtt.expect("set above").as_nanos();
        // RFC 6298 §2.2/2.3: RTO = SRTT + max(G, K*RTTVAR), K = 4.
        let rto = Dur(srtt + CLOCK_GRANULARITY.as_nanos().max(4 * self.rttvar.as_nanos()));
        // RFC 6298 §2.4 (with the configurable floor) and §2.5 (upper bound).
        self.base_rto = rto.max(self.min_rto).min(self.max_rto);
        // RFC 6298 §5.7 / Karn: a new valid sample ends the backoff.
        self.backoff = 0;
        self.record(r);
    }

    /// Keeps `r` as the latest sample, in the minimum and in the mean.
    fn record(&mut self, r: Dur) {
        self.latest = Some(r);
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.sum_ns += u128::from(r.as_nanos());
        self.samples += 1;
    }

    /// The current retransmission timeout, backoff included, at most `max_rto`.
    pub fn rto(&self) -> Dur {
        let shift = self.backoff.min(32);
        let ns = (self.base_rto.as_nanos() as u128) << shift;
        Dur(ns.min(self.max_rto.as_nanos() as u128) as u64)
    }

    /// RFC 6298 §5.5: the timer expired, RTO <- RTO * 2 (bounded by `max_rto`, §2.5).
    pub fn back_off(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff += 1;
        }
    }

    /// Consecutive doublings since the last valid sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// RFC 6298 §5.7: after a SYN timeout, RTO is re-initialised (to 3 s) once data flows.
    pub fn reinit(&mut self, rto: Dur) {
        self.base_rto = rto.min(self.max_rto);
        self.backoff = 0;
    }

    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }
    /// RFC 6298 RTTVAR, or Linux's `rttvar_us` (4·mdev, at least `min_rto`) under the Linux rule.
    pub fn rttvar(&self) -> Dur {
        self.rttvar
    }
    pub fn latest(&self) -> Option<Dur> {
        self.latest
    }
    pub fn min_rtt(&self) -> Option<Dur> {
        self.min_rtt
    }
    /// The mean of every valid sample so far, each sample weighing the same (a run's mean RTT as
    /// the samples saw it, not a smoothed value).
    pub fn mean_rtt(&self) -> Option<Dur> {
        (self.samples > 0).then(|| Dur((self.sum_ns / u128::from(self.samples)) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    #[test]
    fn rfc6298_sequence_by_hand() {
        // min_rto 1 s as RFC 6298 §2.4 says; samples chosen so the RTO stays above it.
        let mut e = RttEstimator::new(Dur::from_secs(1), Dur::from_secs(1), Dur::from_secs(60));
        assert_eq!(e.rto(), Dur::from_secs(1), "§2.1 initial RTO");
        // §2.2: R = 400 ms -> SRTT 400, RTTVAR 200, RTO = 400 + 4*200 = 1200 ms.
        e.on_sample(ms(400));
        assert_eq!(e.srtt(), Some(ms(400)));
        assert_eq!(e.rttvar(), ms(200));
        assert_eq!(e.rto(), ms(1200));
        // §2.3: R = 800 ms -> RTTVAR = 3/4*200 + 1/4*|400-800| = 250; SRTT = 7/8*400 + 1/8*800 = 450;
        // RTO = 450 + 1000 = 1450 ms.
        e.on_sample(ms(800));
        assert_eq!(e.rttvar(), ms(250));
        assert_eq!(e.srtt(), Some(ms(450)));
        assert_eq!(e.rto(), ms(1450));
        // R = 400 ms -> RTTVAR = 187.5 + 12.5 = 200; SRTT = 393.75 + 50 = 443.75; RTO = 1243.75 ms.
        e.on_sample(ms(400));
        assert_eq!(e.rttvar(), ms(200));
        assert_eq!(e.srtt(), Some(Dur::from_micros(443_750)));
        assert_eq!(e.rto(), Dur::from_micros(1_243_750));
        // §2.4: a small RTO is raised to the 1 s floor.
        let mut f = RttEstimator::new(Dur::from_secs(1), Dur::from_secs(1), Dur::from_secs(60));
        f.on_sample(ms(10));
        assert_eq!(f.rto(), Dur::from_secs(1));
    }

    #[test]
    fn mean_rtt_weighs_every_sample_the_same_under_each_rule() {
        for rule in [RtoRule::Rfc6298, RtoRule::Freebsd, RtoRule::Linux] {
            let mut e = RttEstimator::new(Dur::from_secs(1), ms(200), Dur::from_secs(60)).with_rule(rule);
            assert_eq!(e.mean_rtt(), None, "{rule:?}: no sample, no mean");
            for (i, r) in [10, 20, 60].into_iter().enumerate() {
                e.on_sample_at(ms(r), i as u64, 10);
            }
            // (10 + 20 + 60) / 3 = 30 ms, while SRTT (7/8 gain) is still near the first sample.
            assert_eq!(e.mean_rtt(), Some(ms(30)), "{rule:?}");
            assert!(e.srtt().unwrap() < ms(20), "{rule:?}");
        }
    }

    #[test]
    fn granularity_term_and_linux_floor() {
        let mut e = RttEstimator::new(Dur::from_secs(1), ms(200), Dur::from_secs(60));
        e.on_sample(ms(100)); // RTO = 100 + 200 = 300 ms
        assert_eq!(e.rto(), ms(300));
        for _ in 0..200 {
            e.on_sample(ms(100)); // RTTVAR decays to 0: the G term (1 ms) and then the floor rule
        }
        assert_eq!(e.rttvar(), Dur::ZERO);
        assert_eq!(e.rto(), ms(200), "min_rto floor, not SRTT + G = 101 ms");
        let mut g = RttEstimator::new(Dur::from_secs(1), Dur::ZERO, Dur::from_secs(60));
        for _ in 0..200 {
            g.on_sample(ms(100));
        }
        assert_eq!(g.rto(), ms(101), "with no floor, RTO = SRTT + G");
    }

    #[test]
    fn backoff_doubles_and_caps_then_sample_resets() {
        let mut e = RttEstimator::new(Dur::from_secs(1), ms(200), Dur::from_secs(60));
        e.on_sample(ms(100)); // 300 ms
        let mut expect = 300u64;
        for k in 1..=7 {
            e.back_off();
            expect = (expect * 2).min(60_000);
            assert_eq!(e.rto(), ms(expect), "after {k} doublings");
        }
        // 300 * 2^7 = 38.4 s; one more doubling hits the 60 s cap (§2.5), and stays there.
        e.back_off();
        assert_eq!(e.rto(), Dur::from_secs(60));
        e.back_off();
        assert_eq!(e.rto(), Dur::from_secs(60));
        // A valid sample ends the backoff (RFC 6298 §5.7, Karn).
        e.on_sample(ms(100));
        assert_eq!(e.backoff(), 0);
        assert!(e.rto() < ms(300));
    }

    #[test]
    fn linux_rule_floors_the_variance_term_by_hand() {
        let mut e = RttEstimator::new(Dur::from_secs(1), ms(200), Dur::from_secs(60)).with_rule(RtoRule::Linux);
        // First sample: mdev = R/2 (kept ×4: 2R), rttvar = max(2R, min_rto); RTO = 100 + 200.
        e.on_sample_at(ms(100), 1, 10_000);
        assert_eq!(e.rto(), ms(300));
        // A steady RTT over many round trips: RFC 6298 would fall to the 200 ms floor; Linux
        // keeps SRTT + min_rto, because mdev_max restarts at min_rto every round trip.
        for i in 0..200u64 {
            e.on_sample_at(ms(100), 10_001 + i * 10_000, 20_000 + i * 10_000);
        }
        assert_eq!((e.srtt(), e.rttvar(), e.rto()), (Some(ms(100)), ms(200), ms(300)));
        // Within the same round trip: R = 300 ms, SRTT = 125 ms; mdev×4 = 200 ms + 3 ns (the
        // steady samples decayed it to 3 ns, not 0: integer division, as Linux's µs arithmetic
        // stops at 3 µs), just above mdev_max (= min_rto), so it becomes rttvar.
        let una = 10_001 + 199 * 10_000;
        e.on_sample_at(ms(300), una, una);
        assert_eq!((e.srtt(), e.rto()), (Some(ms(125)), ms(325) + Dur(3)));
        // R = 500 ms: err 375 ms, SRTT = 171.875 ms; mdev×4 = 200 + (375 - 50) = 525 ms (+ 3 ns),
        // the new mdev_max and rttvar; RTO = 696.875 ms.
        e.on_sample_at(ms(500), una, una);
        assert_eq!(e.srtt(), Some(Dur::from_micros(171_875)));
        assert_eq!(e.rttvar(), ms(525) + Dur(3));
        assert_eq!(e.rto(), Dur::from_micros(696_875) + Dur(3));
        // A sample below SRTT moves mdev with gain 1/32 only when it would grow it (Eifel-like):
        // R = 100 ms: |err| - mdev = 71.875 - 131.25 < 0, so mdev×4 falls by 59.375 ms, and
        // rttvar (the round trip's maximum) stays.
        e.on_sample_at(ms(100), una, una);
        assert_eq!(e.rttvar(), ms(525) + Dur(3));
        // The FreeBSD rule adds the 200 ms slop after the floor: 100 + 4·50 + 200 = 500 ms.
        let mut f = RttEstimator::new(Dur::from_secs(1), ms(30), Dur::from_secs(60)).with_rule(RtoRule::Freebsd);
        f.on_sample_at(ms(100), 1, 1);
        assert_eq!(f.rto(), ms(500));
    }
}
