//! How a WiMAX base station divides one subframe's capacity among its stations' queues: the
//! grant policies, selected per medium by the key `grants` of `kind = "wimax"`.
//!
//! IEEE 802.16 leaves the base station's scheduler to the vendor (§6.3.5 defines the services,
//! not the algorithm). Each policy is its own file here plus one line in the [`GrantsConfig`]
//! registry below; the bare-name form `grants = "round_robin"` and the names in error
//! messages follow from it.

use super::ServiceClass;
use crate::registry::{quoted_list, registry};
use serde::{Deserialize, Deserializer};
use std::fmt;

registry! {
    /// Grant policy selection: a bare name, `grants = "round_robin"`, or a table with `kind`.
    pub enum GrantsConfig: dyn BuildGrants {
        // Strict priority: rtPS queues first, nrtPS from what is left (802.16 §6.3.5's order).
        rtps_priority::RtpsPriority(RtpsPriorityConfig) = "rtps_priority",
        // Round robin among all queues, whatever their class (the WiMAX paper's Sec. 3.1).
        round_robin::RoundRobin(RoundRobinConfig) = "round_robin",
    }
}

impl Default for GrantsConfig {
    fn default() -> Self {
        GrantsConfig::RtpsPriority(RtpsPriorityConfig::default())
    }
}

/// Builds a policy from its config; every [`GrantsConfig`] kind implements it.
pub trait BuildGrants {
    fn build(&self) -> Box<dyn GrantPolicy>;
}

/// A queue as the scheduler sees it when a frame's grants are decided.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct QueueView {
    pub class: ServiceClass,
    /// Backlog in bytes on the air (payload + MAC overhead per PDU), as last reported.
    pub demand: u64,
}

/// Divides a frame's capacity.
pub trait GrantPolicy: Send + fmt::Debug {
    /// The grant of each queue (bytes, indexed as `queues`) out of `cap` bytes. `order` lists
    /// every queue once, starting from the frame's round-robin pointer: a policy that has
    /// bytes left to break ties with gives them in that order, so no queue gains by its index.
    /// The grants must sum to at most `cap` and never exceed a queue's demand.
    fn divide(&self, cap: u64, order: &[usize], queues: &[QueueView]) -> Vec<u64>;
}

/// Max-min fair division of `cap` among the queues `want` (in `order`'s rotation): each gets
/// min(demand, equal share of what is left), repeated until nothing is left or every demand is
/// met; the bytes of the integer division's remainder go one each in order. Adds to `grant`
/// and returns the capacity left. Round robin over bytes is exactly this division.
pub fn max_min(mut cap: u64, mut want: Vec<usize>, queues: &[QueueView], grant: &mut [u64]) -> u64 {
    want.retain(|&i| queues[i].demand > grant[i]);
    while cap > 0 && !want.is_empty() {
        let share = cap / want.len() as u64;
        if share == 0 {
            // Fewer bytes than queues: one each in round-robin order.
            for &i in want.iter().take(cap as usize) {
                grant[i] += 1;
            }
            return 0;
        }
        let mut next = Vec::with_capacity(want.len());
        for &i in &want {
            let g = (queues[i].demand - grant[i]).min(share);
            grant[i] += g;
            cap -= g;
            if grant[i] < queues[i].demand {
                next.push(i);
            }
        }
        want = next;
    }
    cap
}

/// `grants = "name"` or `grants = { kind = "name" }`.
pub(crate) fn deserialize_grants<'de, D: Deserializer<'de>>(d: D) -> Result<GrantsConfig, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = GrantsConfig;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            for name in GrantsConfig::NAMES {
                write!(f, "{name:?}, ")?;
            }
            f.write_str("or a table with `kind`")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<GrantsConfig, E> {
            if !GrantsConfig::NAMES.contains(&v) {
                let names = quoted_list(GrantsConfig::NAMES, "or");
                return Err(E::custom(format!("unknown grant policy {v:?}, expected {names}")));
            }
            GrantsConfig::deserialize(serde::de::value::MapDeserializer::new(std::iter::once(("kind", v))))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<GrantsConfig, A::Error> {
            GrantsConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(class: ServiceClass, demand: u64) -> QueueView {
        QueueView { class, demand }
    }

    /// Both policies on the same demands: priority starves nrtPS, round robin does not; both
    /// give out the whole capacity and never more than a demand.
    #[test]
    fn priority_and_round_robin_differ_only_in_the_classes() {
        use ServiceClass::{Nrtps, Rtps};
        let queues = [q(Rtps, 100), q(Rtps, 5000), q(Nrtps, 5000), q(Nrtps, 50)];
        let order = [0, 1, 2, 3];
        let prio = RtpsPriorityConfig::default().build().divide(1000, &order, &queues);
        assert_eq!(prio, vec![100, 900, 0, 0]);
        let rr = RoundRobinConfig::default().build().divide(1000, &order, &queues);
        // 250 each, then the 150 the small queues leave split between the two large ones.
        assert_eq!(rr, vec![100, 425, 425, 50]);
        for g in [&prio, &rr] {
            assert_eq!(g.iter().sum::<u64>(), 1000);
            assert!(g.iter().zip(&queues).all(|(g, q)| *g <= q.demand));
        }
    }

    /// The remainder goes in the rotation's order, so rotating the order rotates who gets it.
    #[test]
    fn the_remainder_follows_the_rotation() {
        let queues = [q(ServiceClass::Rtps, 10); 3];
        let rr = RoundRobinConfig::default().build();
        assert_eq!(rr.divide(7, &[0, 1, 2], &queues), vec![3, 2, 2]);
        assert_eq!(rr.divide(7, &[1, 2, 0], &queues), vec![2, 3, 2]);
    }
}
