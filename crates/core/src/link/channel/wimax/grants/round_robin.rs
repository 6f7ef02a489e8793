//! Round robin among all the stations' service-class queues, whatever their class: the WiMAX
//! paper's scheduler (Al-Majeed & Fleury, Sec. 3.1: "access to the SS service class queues was
//! round-robin").
//!
//! Each frame's capacity is divided as a byte-wise round robin over the backlogged queues
//! would divide it: max-min fair (each queue gets min(demand, equal share of what is left),
//! repeated), the integer remainder given one byte each from the frame's rotating pointer. A
//! queue (one connection: a station with an rtPS and an nrtPS connection has two) with a
//! greedy source therefore takes an equal share beside rtPS queues. Not modelled: a round robin
//! over whole PDUs (the byte-wise division differs from it by less than one PDU per queue and
//! frame, and the bursts' overdraft carry-over evens that out), and a two-level reading (round
//! robin among stations, then among a station's queues), which the paper's words do not give.

use super::{max_min, BuildGrants, GrantPolicy, QueueView};
use serde::{Deserialize, Serialize};

/// `grants = "round_robin"`. No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundRobinConfig {}

impl BuildGrants for RoundRobinConfig {
    fn build(&self) -> Box<dyn GrantPolicy> {
        Box::new(RoundRobin)
    }
}

/// The policy.
#[derive(Debug)]
pub struct RoundRobin;

impl GrantPolicy for RoundRobin {
    fn divide(&self, cap: u64, order: &[usize], queues: &[QueueView]) -> Vec<u64> {
        let mut grant = vec![0; queues.len()];
        max_min(cap, order.to_vec(), queues, &mut grant);
        grant
    }
}
