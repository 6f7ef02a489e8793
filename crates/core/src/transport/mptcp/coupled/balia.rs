//! BALIA, the Balanced Linked Adaptation algorithm (Q. Peng, A. Walid, J. Hwang, S. H. Low,
//! "Multipath TCP: Analysis, Design, and Implementation", IEEE/ACM ToN 24(1), 2016, §VI;
//! draft-walid-mptcp-congestion-control-04 §3; the out-of-tree Linux kernel's
//! `net/mptcp/mptcp_balia.c`, read for its choices, not copied).
//!
//! With `x_k = w_k / rtt_k` each subflow's rate and `α_r = max_k x_k / x_r` (≥ 1), per ACK of
//! one segment on path r in congestion avoidance `w_r` grows by
//! `(x_r / rtt_r) / (Σ_k x_k)² · ((1 + α_r)/2) · ((4 + α_r)/5)` segments, and on a loss it
//! shrinks by `(w_r / 2) · min(α_r, 1.5)`: a slow path (large `α_r`) grows faster than LIA
//! would let it and backs off more, which balances responsiveness against friendliness
//! (the paper's design space, §V). In bytes, for `acked` bytes with windows `W` in bytes:
//! `acked · MSS · (W_r / rtt_r²) / (Σ_k W_k / rtt_k)² · (1 + α_r)(4 + α_r)/10`. With one
//! subflow `α = 1` and both rules are Reno's.
//!
//! Choices: a subflow without an RTT sample grows as Reno alone and halves on a loss (as in
//! [`super::lia`]); the decrease is applied by the connection as a scale of the subflow's
//! own post-loss `ssthresh` ([`CoupledIncrease::keep_after_loss`]).

use super::{reno_increase, whole_bytes, BuildCoupled, CoupledIncrease, SubflowId, SubflowsView};
use serde::{Deserialize, Serialize};

/// No parameters (the paper's constants 1/2, 4/5 and the 1.5 cap are the algorithm).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaliaConfig {}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Balia;

impl Balia {
    /// `(α_r, x_r, Σ_k x_k)` of subflow `id` over the subflows with an RTT sample, rates in
    /// bytes per second of RTT (`None` if `id` has no sample).
    fn rates(id: SubflowId, all: &SubflowsView) -> Option<(f64, f64, f64)> {
        let rate = |s: &super::SubflowState| s.srtt.map(|r| s.cwnd as f64 / (r.0 as f64).max(1.0));
        let me = rate(all.get(id))?.max(f64::MIN_POSITIVE);
        let (mut max, mut sum) = (0.0f64, 0.0f64);
        for x in all.iter().filter_map(rate) {
            max = max.max(x);
            sum += x;
        }
        Some((max / me, me, sum))
    }

    /// `α_r` of subflow `id` (1 without an RTT sample).
    pub fn alpha(id: SubflowId, all: &SubflowsView) -> f64 {
        Balia::rates(id, all).map_or(1.0, |r| r.0)
    }
}

impl CoupledIncrease for Balia {
    fn increase(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> u64 {
        let me = all.get(id);
        let (Some(rtt), Some((a, x, sum))) = (me.srtt, Balia::rates(id, all)) else {
            return reno_increase(me, acked_bytes);
        };
        let rtt = (rtt.0 as f64).max(1.0);
        // Peng et al. §VI eq. (12): (x_r/τ_r)/(Σx)² · (1+α)/2 · (4+α)/5, in bytes.
        let per = (x / rtt) / (sum * sum) * (1.0 + a) * (4.0 + a) / 10.0;
        whole_bytes(acked_bytes as f64 * me.mss as f64 * per)
    }

    fn keep_after_loss(&self, id: SubflowId, all: &SubflowsView) -> f64 {
        // §VI eq. (12): w_r −= (w_r/2)·min(α_r, 1.5).
        1.0 - Balia::alpha(id, all).min(1.5) / 2.0
    }
}

impl BuildCoupled for BaliaConfig {
    fn build(&self) -> Box<dyn CoupledIncrease> {
        Box::new(Balia)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{sampled as sub, uncoupled::Uncoupled, SubflowState};
    use super::*;


    /// One subflow: α = 1, (1+1)(4+1)/10 = 1, (W/rtt²)/(W/rtt)² = 1/W: Reno's increase and
    /// Reno's halving.
    #[test]
    fn one_subflow_is_reno() {
        let s = [sub(23_456, 40)];
        let v = SubflowsView::new(&s);
        for acked in [1, 999, 1_000, 23_456] {
            assert_eq!(Balia.increase(0, acked, &v), Uncoupled.increase(0, acked, &v));
        }
        assert_eq!(Balia.keep_after_loss(0, &v), 0.5);
    }

    /// Hand-computed: 10 000 B and 20 000 B, both at 100 ms, MSS 1000 B. x = 1e5 and 2e5 B/s,
    /// Σx = 3e5, max 2e5: α_0 = 2, α_1 = 1. Per 1000 B acked: subflow 0:
    /// 1e6 · (1e4/0.01)/9e10 · (3·6/10) = 1e6 · 1.111e-5 · 1.8 = 20 B; subflow 1:
    /// 1e6 · (2e4/0.01)/9e10 · (2·5/10) = 22.2 → 22 B. On a loss subflow 0 keeps
    /// 1 − min(2, 1.5)/2 = 0.25 of its window, subflow 1 half.
    #[test]
    fn increase_and_decrease_by_hand() {
        let s = [sub(10_000, 100), sub(20_000, 100)];
        let v = SubflowsView::new(&s);
        assert!((Balia::alpha(0, &v) - 2.0).abs() < 1e-12);
        assert_eq!(Balia::alpha(1, &v), 1.0);
        assert_eq!(Balia.increase(0, 1_000, &v), 20);
        assert_eq!(Balia.increase(1, 1_000, &v), 22);
        assert_eq!(Balia.keep_after_loss(0, &v), 0.25);
        assert_eq!(Balia.keep_after_loss(1, &v), 0.5);
        // A subflow without an RTT sample grows as Reno alone.
        let s = [SubflowState::new(10_000, 1_000, None, 1_000, 0), sub(20_000, 100)];
        let v = SubflowsView::new(&s);
        assert_eq!(Balia.increase(0, 1_000, &v), 100);
    }

    /// The connection's total increase per RTT on equal RTTs (a whole window acknowledged on
    /// every subflow), in MSS: `Σ_r x_r²·c_r / (Σx)²` with `c_r = (1+α_r)(4+α_r)/10`. Equal
    /// windows give `1/n` (as LIA: each subflow then halves `1/n` of the total); with `M` the
    /// largest rate and `s` the others' sum, the excess over `1 + (n−1)/10` is
    /// `(5Ms + 4Σx²)/10 − (1 + (n−1)/10)(2Ms + s²) < 0`, so BALIA never exceeds that bound
    /// (it is less TCP-friendly than LIA while windows are unequal: the paper's trade-off).
    #[test]
    fn increase_per_rtt_is_bounded() {
        let mut next = super::super::draws(0x2545_f491_4f6c_dd1d);
        for _ in 0..2_000 {
            let n = next(4) as usize;
            let rtt = next(300);
            let s: Vec<SubflowState> = (0..n).map(|_| sub(1_000 * (1 + next(200)), rtt)).collect();
            let v = SubflowsView::new(&s);
            let per_rtt: u64 = (0..n).map(|i| Balia.increase(i, s[i].cwnd, &v)).sum();
            assert!(per_rtt <= 1_000 + 100 * (n as u64 - 1), "{per_rtt} B per RTT for {s:?}");
            if s.iter().all(|x| x.cwnd == s[0].cwnd) {
                assert!(per_rtt.abs_diff(1_000 / n as u64) <= n as u64, "equal windows: 1/n MSS, got {per_rtt}");
            }
        }
    }
}
