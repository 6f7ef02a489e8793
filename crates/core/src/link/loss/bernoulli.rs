//! Independent (Bernoulli) loss: each packet is lost with probability `p`, whatever happened to
//! the packets before it.

use super::{check_probability, BuildLoss, LossModel};
use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// `kind = "bernoulli"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BernoulliConfig {
    /// Loss probability per packet, in [0, 1].
    pub p: f64,
    /// Time from which packets are lost (default: from the start). Before it the link loses
    /// nothing and draws no random number: `p = 1.0` with a `start` is a path that fails then.
    #[serde(default, with = "crate::units::serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub start: Option<crate::time::Dur>,
}

impl BuildLoss for BernoulliConfig {
    fn build(&self) -> Option<Box<dyn LossModel>> {
        Some(Box::new(Bernoulli { p: self.p, start: self.start.map_or(SimTime::ZERO, |d| SimTime(d.as_nanos())) }))
    }
    fn validate(&self) -> Result<(), (&'static str, String)> {
        check_probability("p", self.p)
    }
}

/// Independent (Bernoulli) loss.
pub struct Bernoulli {
    pub p: f64,
    /// No loss before this time.
    pub start: SimTime,
}

impl LossModel for Bernoulli {
    fn drops(&mut self, _pkt: &PacketData, now: SimTime, rng: &mut SimRng) -> bool {
        now >= self.start && rng.bernoulli(self.p)
    }
}
