//! OLIA, the Opportunistic Linked-Increases Algorithm (Khalili, Gast, Popovic, Le Boudec,
//! "MPTCP is not Pareto-optimal: performance issues and a possible solution", CoNEXT 2012 /
//! IEEE/ACM ToN 2013; draft-khalili-mptcp-congestion-control §3).
//!
//! Per ACK of one segment on path r in congestion avoidance, with windows `w` in segments,
//! `w_r` grows by `(w_r / rtt_r²) / (Σ_p w_p / rtt_p)² + α_r / w_r`. The first term is the
//! increase of a single TCP spread over the connection's rate (it makes the connection as
//! aggressive as one TCP on its best path); `α_r` moves window from the paths with the largest
//! windows (`M`) to the "presumably best" paths that do not have one yet (`B \ M`, `B` the
//! paths with the largest `l_r / rtt_r²`, `l_r` the bytes acknowledged between the last two
//! losses on r or since the last one, whichever is larger): `α_r = 1/(n·|B\M|)` on `B \ M`,
//! `−1/(n·|M|)` on `M` when `B \ M` is not empty, 0 otherwise. In bytes, for `acked` bytes:
//! `acked·MSS·[(W_r/rtt_r²)/(Σ W_p/rtt_p)² + α_r/W_r]`.
//!
//! Choices: a subflow without an RTT sample grows as Reno alone (as in [`super::lia`]); the
//! increase may be negative (the `α_r` term), through [`CoupledIncrease::adjust`].

use super::{reno_increase, BuildCoupled, CoupledIncrease, SubflowId, SubflowsView};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OliaConfig {}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Olia;

impl Olia {
    /// `α_r` of subflow `id` (see the module docs), over the subflows with an RTT sample.
    pub fn alpha(id: SubflowId, all: &SubflowsView) -> f64 {
        let n = all.len() as f64;
        let rated: Vec<(usize, f64, u64)> = all
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let rtt = (s.srtt?.0 as f64).max(1.0);
                Some((i, s.loss_interval as f64 / (rtt * rtt), s.cwnd))
            })
            .collect();
        let Some(max_w) = rated.iter().map(|r| r.2).max() else { return 0.0 };
        let best = rated.iter().map(|r| r.1).fold(f64::MIN, f64::max);
        let in_m = |i: usize| rated.iter().any(|r| r.0 == i && r.2 == max_w);
        let collected: Vec<usize> = rated.iter().filter(|r| r.1 == best && r.2 != max_w).map(|r| r.0).collect();
        if collected.is_empty() {
            return 0.0;
        }
        let m = rated.iter().filter(|r| r.2 == max_w).count() as f64;
        if collected.contains(&id) {
            1.0 / (n * collected.len() as f64)
        } else if in_m(id) {
            -1.0 / (n * m)
        } else {
            0.0
        }
    }
}

impl CoupledIncrease for Olia {
    fn increase(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> u64 {
        self.adjust(id, acked_bytes, all).max(0) as u64
    }

    fn adjust(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> i64 {
        let me = all.get(id);
        let Some(rtt) = me.srtt else { return reno_increase(me, acked_bytes) as i64 };
        let rtt = (rtt.0 as f64).max(1.0);
        let sum: f64 = all.iter().filter_map(|s| s.srtt.map(|r| s.cwnd as f64 / (r.0 as f64).max(1.0))).sum();
        let w = (me.cwnd as f64).max(1.0);
        let first = (w / (rtt * rtt)) / (sum * sum);
        let x = acked_bytes as f64 * me.mss as f64 * (first + Olia::alpha(id, all) / w);
        whole_bytes(x)
    }
}

/// Whole bytes of a change computed in `f64`, fractions dropped towards zero, but a value
/// within 1e-9 (relative) of a whole number is that number (as in [`super::lia`]).
fn whole_bytes(x: f64) -> i64 {
    let r = x.round();
    if (x - r).abs() <= 1e-9 * r.abs().max(1.0) {
        r as i64
    } else {
        x.trunc() as i64
    }
}

impl BuildCoupled for OliaConfig {
    fn build(&self) -> Box<dyn CoupledIncrease> {
        Box::new(Olia)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{uncoupled::Uncoupled, SubflowState};
    use super::*;
    use crate::time::Dur;

    fn sub(cwnd: u64, rtt_ms: u64, l: u64) -> SubflowState {
        SubflowState::new(cwnd, 1_000, Some(Dur::from_millis(rtt_ms)), 1_000, cwnd).with_loss_interval(l)
    }

    /// One subflow: the first term is `(W/rtt²)/(W/rtt)² = 1/W`, α = 0: OLIA is Reno.
    #[test]
    fn one_subflow_is_reno() {
        let s = [sub(20_000, 40, 5)];
        let v = SubflowsView::new(&s);
        assert_eq!(Olia.adjust(0, 1_000, &v), Uncoupled.increase(0, 1_000, &v) as i64);
    }

    /// Hand-computed: two subflows of 10 000 B at 100 ms; subflow 1 has the larger loss
    /// interval (best) but the windows are equal, so both are in M and B \ M is empty: α = 0.
    /// First term: (1e4/0.01)/(2e5)² = 2.5e-5 per byte²; per 1000 B acked with MSS 1000:
    /// 1e6 · 2.5e-5 = 25 B each. Then subflow 0 grows to 20 000 B: M = {0}, B \ M = {1},
    /// α_1 = 1/2 and α_0 = −1/2; subflow 1: 1e6 · ((1e4/0.01)/(3e5)² + 0.5/1e4) = 11.1 + 50
    /// = 61 B; subflow 0: 1e6 · ((2e4/0.01)/(3e5)² − 0.5/2e4) = 22.2 − 25 = −2 B.
    #[test]
    fn alpha_moves_window_to_the_best_path_by_hand() {
        let s = [sub(10_000, 100, 10), sub(10_000, 100, 50)];
        let v = SubflowsView::new(&s);
        assert_eq!(Olia.adjust(0, 1_000, &v), 25);
        assert_eq!(Olia.adjust(1, 1_000, &v), 25);
        let s = [sub(20_000, 100, 10), sub(10_000, 100, 50)];
        let v = SubflowsView::new(&s);
        assert_eq!(Olia::alpha(1, &v), 0.5);
        assert_eq!(Olia::alpha(0, &v), -0.5);
        assert_eq!(Olia.adjust(1, 1_000, &v), 61);
        assert_eq!(Olia.adjust(0, 1_000, &v), -2);
        assert_eq!(Olia.increase(0, 1_000, &v), 0);
    }
}
