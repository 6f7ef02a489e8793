//! Uncoupled increase: every subflow grows as a Reno flow of its own would (RFC 5681 §3.1),
//! whatever the others do. The baseline coupled algorithms are measured against: a connection
//! with n subflows through one bottleneck takes n TCPs' share (RFC 6356 §1).

use super::{reno_increase, BuildCoupled, CoupledIncrease, SubflowId, SubflowsView};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UncoupledConfig {}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Uncoupled;

impl CoupledIncrease for Uncoupled {
    fn increase(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> u64 {
        reno_increase(all.get(id), acked_bytes)
    }
}

impl BuildCoupled for UncoupledConfig {
    fn build(&self) -> Box<dyn CoupledIncrease> {
        Box::new(Uncoupled)
    }
}

#[cfg(test)]
mod tests {
    use super::super::SubflowState;
    use super::*;

    #[test]
    fn each_subflow_grows_like_reno_alone() {
        let s = [SubflowState::new(10_000, 5_000, None, 1_000, 0), SubflowState::new(40_000, 5_000, None, 1_000, 0)];
        let v = SubflowsView::new(&s);
        // MSS · acked / cwnd: 1000 · 1000 / 10000 and 1000 · 1000 / 40000.
        assert_eq!(Uncoupled.increase(0, 1_000, &v), 100);
        assert_eq!(Uncoupled.increase(1, 1_000, &v), 25);
        // A whole window acknowledged: one MSS (per RTT).
        assert_eq!(Uncoupled.increase(1, 40_000, &v), 1_000);
    }
}
