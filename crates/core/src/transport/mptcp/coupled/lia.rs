//! LIA, the Linked Increases Algorithm of MPTCP (RFC 6356).
//!
//! Reading list: RFC 6356 §2 (goals: improve throughput — at least the best single path's;
//! do no harm — never more than one TCP on any path; balance congestion), §3 (the algorithm),
//! §4 (implementation with integers, which this model does not need: it computes in `f64`,
//! deterministically).
//!
//! Per ACK of `bytes_acked` on subflow i in congestion avoidance, cwnd_i grows by
//! `min(alpha · bytes_acked · MSS_i / cwnd_total, bytes_acked · MSS_i / cwnd_i)` (§3), with
//! `alpha = cwnd_total · max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²` (§3). The first term
//! couples the subflows (their total grows by about alpha · MSS per RTT); the second caps each
//! at what a Reno flow on its path would take.
//!
//! Choices the RFC leaves open: a subflow without an RTT sample yet takes no part in alpha's
//! max and sum (it has no rate to compare), and while it has none itself it grows by the Reno
//! cap alone. `cwnd_total` is over every subflow, as §3 defines it.

use super::{reno_increase, whole_bytes, BuildCoupled, CoupledIncrease, SubflowId, SubflowsView};
use serde::{Deserialize, Serialize};

/// No parameters (RFC 6356 has none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LiaConfig {}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Lia;

impl Lia {
    /// RFC 6356 §3's alpha over the subflows with an RTT sample (`None` if none has one).
    pub fn alpha(all: &SubflowsView) -> Option<f64> {
        let total = all.cwnd_total() as f64;
        let (mut best, mut sum) = (0.0f64, 0.0f64);
        for s in all.iter() {
            let Some(rtt) = s.srtt else { continue };
            let rtt = (rtt.0 as f64).max(1.0);
            let cwnd = s.cwnd as f64;
            best = best.max(cwnd / (rtt * rtt)); // max_i cwnd_i / rtt_i²
            sum += cwnd / rtt; // Σ_i cwnd_i / rtt_i
        }
        (sum > 0.0).then(|| total * best / (sum * sum)) // RFC 6356 §3 alpha
    }
}

impl CoupledIncrease for Lia {
    fn increase(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> u64 {
        let me = all.get(id);
        let cap = reno_increase(me, acked_bytes); // bytes_acked · MSS_i / cwnd_i
        let alpha = match (me.srtt, Lia::alpha(all)) {
            (Some(_), Some(a)) => a,
            _ => return cap,
        };
        let total = all.cwnd_total().max(1) as f64;
        let coupled = whole_bytes(alpha * acked_bytes as f64 * me.mss as f64 / total);
        coupled.min(cap) // RFC 6356 §3: min(alpha·acked·MSS_i/cwnd_total, acked·MSS_i/cwnd_i)
    }
}

impl BuildCoupled for LiaConfig {
    fn build(&self) -> Box<dyn CoupledIncrease> {
        Box::new(Lia)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{sampled as sub, uncoupled::Uncoupled, SubflowState};
    use super::*;
    use crate::time::Dur;


    /// Hand-computed: cwnd 10 000 B at 100 ms and 20 000 B at 200 ms, MSS 1000 B.
    /// cwnd_i/rtt_i² = 1e6 and 5e5 B/s² (max 1e6); Σ cwnd_i/rtt_i = 1e5 + 1e5 = 2e5 B/s;
    /// alpha = 30 000 · 1e6 / 4e10 = 0.75. Per 1000 B acked: 0.75 · 1000 · 1000 / 30 000 = 25 B
    /// on either subflow, under the Reno caps of 100 B and 50 B.
    #[test]
    fn rfc6356_increase_by_hand() {
        let s = [sub(10_000, 100), sub(20_000, 200)];
        let v = SubflowsView::new(&s);
        assert!((Lia::alpha(&v).unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(Lia.increase(0, 1_000, &v), 25);
        assert_eq!(Lia.increase(1, 1_000, &v), 25);
        // One subflow: alpha = cwnd · (cwnd/rtt²) / (cwnd/rtt)² = 1, and LIA is Reno.
        let one = [sub(12_345, 37)];
        let v = SubflowsView::new(&one);
        assert!((Lia::alpha(&v).unwrap() - 1.0).abs() < 1e-12);
        for acked in [1, 500, 1_000, 12_345] {
            assert_eq!(Lia.increase(0, acked, &v), Uncoupled.increase(0, acked, &v));
        }
    }

    /// Hand-computed, the cap binding: cwnd 2000 B at 10 ms and 100 000 B at 100 ms.
    /// cwnd_i/rtt_i² = 2e7 and 1e7 (max 2e7); Σ cwnd_i/rtt_i = 2e5 + 1e6 = 1.2e6;
    /// alpha = 102 000 · 2e7 / 1.44e12 = 1.41666…; coupled term per 1000 B acked =
    /// 1.41666 · 1e6 / 102 000 = 13.9 → 13 B on both; the caps are 500 B and 10 B, so the large
    /// subflow gets its Reno 10 B.
    #[test]
    fn rfc6356_cap_binds_by_hand() {
        let s = [sub(2_000, 10), sub(100_000, 100)];
        let v = SubflowsView::new(&s);
        assert!((Lia::alpha(&v).unwrap() - 102_000.0 * 2e7 / 1.44e12).abs() < 1e-12);
        assert_eq!(Lia.increase(0, 1_000, &v), 13);
        assert_eq!(Lia.increase(1, 1_000, &v), 10);
    }

    /// RFC 6356 §2 goal 2 (do no harm): on every subflow, never more than a Reno flow's
    /// increase on that path; and with equal RTTs the connection's total increase per RTT
    /// (alpha · MSS) is at most one Reno flow's (one MSS).
    #[test]
    fn never_more_aggressive_than_one_tcp() {
        let mut next = super::super::draws(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2_000 {
            let n = next(4) as usize;
            let equal = next(2) == 1;
            let rtt = next(300);
            let s: Vec<SubflowState> =
                (0..n).map(|_| sub(1_000 * next(200), if equal { rtt } else { next(300) })).collect();
            let v = SubflowsView::new(&s);
            let mut per_rtt = 0u64;
            for i in 0..n {
                let acked = next(4_000);
                assert!(Lia.increase(i, acked, &v) <= Uncoupled.increase(i, acked, &v));
                // A whole window acknowledged: subflow i's increase over one RTT.
                per_rtt += Lia.increase(i, s[i].cwnd, &v);
            }
            if equal {
                assert!(per_rtt <= 1_000, "{per_rtt} > one MSS per RTT for {s:?}");
            }
        }
    }

    /// Runs the fluid model of RFC 6356 §3's derivation: each subflow i gains LIA's increase for
    /// every byte acknowledged (cwnd_i / rtt_i bytes per second) and halves its window on each
    /// loss (p_i per packet), until the windows settle. Returns the connection's rate and each
    /// subflow's window.
    fn fluid(paths: &[(f64, u64)]) -> (f64, Vec<f64>) {
        let mss = 1_000.0;
        let mut w: Vec<f64> = paths.iter().map(|_| 10.0 * mss).collect();
        let dt = 0.001; // s
        for _ in 0..2_000_000 {
            let s: Vec<SubflowState> = paths
                .iter()
                .zip(&w)
                .map(|(&(_, rtt_ms), &c)| SubflowState::new(c as u64, 0, Some(Dur::from_millis(rtt_ms)), 1_000, 0))
                .collect();
            let v = SubflowsView::new(&s);
            for (i, &(p, rtt_ms)) in paths.iter().enumerate() {
                let rate = w[i] / (rtt_ms as f64 * 1e-3); // bytes acknowledged per second
                // The increase is linear in the bytes acknowledged: ask for a large amount, scale.
                let per_byte = Lia.increase(i, 1 << 30, &v) as f64 / (1u64 << 30) as f64;
                let gain = rate * dt * per_byte;
                let loss = rate * dt / mss * p * w[i] / 2.0;
                w[i] = (w[i] + gain - loss).max(mss);
            }
        }
        let total = paths.iter().zip(&w).map(|(&(_, rtt), &c)| c / (rtt as f64 * 1e-3)).sum();
        (total, w)
    }

    /// RFC 6356 §2 goal 1 (improve throughput) at equilibrium: with equal RTTs the connection
    /// takes what one TCP would on its best path, MSS·√(2/p)/rtt (the same fluid model's Reno),
    /// and leans on the less congested path (goal 3).
    #[test]
    fn equilibrium_equals_the_best_single_path() {
        let (rate, w) = fluid(&[(0.01, 50), (0.0025, 50)]);
        let best = 1_000.0 * (2.0f64 / 0.0025).sqrt() / 0.05;
        assert!((rate / best - 1.0).abs() < 0.03, "rate {rate:.0} B/s vs best path TCP {best:.0} B/s");
        assert!(w[1] > 3.0 * w[0], "windows {w:?}: the less lossy path carries more");
    }
}
