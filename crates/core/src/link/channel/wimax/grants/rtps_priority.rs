//! Strict priority by service class: every rtPS queue is served (max-min fair among them)
//! before any nrtPS queue gets a byte; nrtPS queues share what is left, max-min fair.
//!
//! This is the order IEEE 802.16 §6.3.5 lists the services in (rtPS for real-time flows with
//! delay requirements, nrtPS for delay-tolerant ones), and the common reading of it in ns-2/ns-3
//! WiMAX modules. Under load the nrtPS queues starve; the rtPS queues are capacity-bound only by
//! each other. Not the WiMAX paper's scheduler (its Sec. 3.1 says round robin): kept as the
//! declared alternative of `reproduce wimax`.

use super::{max_min, BuildGrants, GrantPolicy, QueueView};
use super::super::ServiceClass;
use serde::{Deserialize, Serialize};

/// `grants = "rtps_priority"` (the default). No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RtpsPriorityConfig {}

impl BuildGrants for RtpsPriorityConfig {
    fn build(&self) -> Box<dyn GrantPolicy> {
        Box::new(RtpsPriority)
    }
}

/// The policy.
#[derive(Debug)]
pub struct RtpsPriority;

impl GrantPolicy for RtpsPriority {
    fn divide(&self, cap: u64, order: &[usize], queues: &[QueueView]) -> Vec<u64> {
        let mut grant = vec![0; queues.len()];
        let mut left = cap;
        for class in [ServiceClass::Rtps, ServiceClass::Nrtps] {
            let want = order.iter().copied().filter(|&i| queues[i].class == class).collect();
            left = max_min(left, want, queues, &mut grant);
        }
        grant
    }
}
