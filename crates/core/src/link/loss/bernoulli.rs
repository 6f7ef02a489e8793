//! Independent (Bernoulli) loss: each packet is lost with probability `p`, whatever happened to
//! the packets before it.

use super::{check_probability, BuildLoss, LossModel};
use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// `kind = "bernoulli"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BernoulliConfig {
    /// Loss probability per packet, in [0, 1].
    pub p: f64,
}

impl BuildLoss for BernoulliConfig {
    fn build(&self) -> Option<Box<dyn LossModel>> {
        Some(Box::new(Bernoulli { p: self.p }))
    }
    fn validate(&self) -> Result<(), (&'static str, String)> {
        check_probability("p", self.p)
    }
}

/// Independent (Bernoulli) loss.
pub struct Bernoulli {
    pub p: f64,
}

impl LossModel for Bernoulli {
    fn drops(&mut self, _pkt: &PacketData, _now: SimTime, rng: &mut SimRng) -> bool {
        rng.bernoulli(self.p)
    }
}
