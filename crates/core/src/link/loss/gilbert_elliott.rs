//! Gilbert–Elliott loss: a two-state Markov channel (good and bad), stepped once per packet
//! (closed forms and references in `docs/models/links.md`).

use super::{check_probability, BuildLoss, LossModel};
use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// `kind = "gilbert_elliott"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottConfig {
    /// P(good → bad) per packet.
    pub p: f64,
    /// P(bad → good) per packet.
    pub r: f64,
    /// Loss probability in the good state (default 0).
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the bad state (default 1).
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

impl BuildLoss for GilbertElliottConfig {
    fn build(&self) -> Option<Box<dyn LossModel>> {
        let GilbertElliottConfig { p, r, loss_good, loss_bad } = *self;
        Some(Box::new(GilbertElliott { p, r, loss_good, loss_bad, bad: false }))
    }
    fn validate(&self) -> Result<(), (&'static str, String)> {
        check_probability("p", self.p)?;
        check_probability("r", self.r)?;
        check_probability("loss_good", self.loss_good)?;
        check_probability("loss_bad", self.loss_bad)?;
        if self.p + self.r == 0.0 {
            return Err(("r", "p and r cannot both be zero".into()));
        }
        Ok(())
    }
}

/// Gilbert–Elliott: a good and a bad state with per-state loss probabilities. Each packet is
/// judged in the current state, then the chain steps (G→B with `p`, B→G with `r`).
///
/// Closed forms (checked in tests): stationary P(bad) = p / (p + r); loss rate
/// = (r·loss_good + p·loss_bad) / (p + r); with loss_good = 0 and loss_bad = 1 (the Gilbert
/// model), loss bursts are geometric with mean length 1 / r.
pub struct GilbertElliott {
    pub p: f64,
    pub r: f64,
    pub loss_good: f64,
    pub loss_bad: f64,
    pub bad: bool,
}

impl LossModel for GilbertElliott {
    fn drops(&mut self, _pkt: &PacketData, _now: SimTime, rng: &mut SimRng) -> bool {
        let lost = rng.bernoulli(if self.bad { self.loss_bad } else { self.loss_good });
        self.bad = if self.bad { !rng.bernoulli(self.r) } else { rng.bernoulli(self.p) };
        lost
    }
}
