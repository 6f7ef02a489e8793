//! Gilbert–Elliott loss: a two-state Markov channel (good and bad), stepped once per packet
//! (per PDU on a WiMAX link) or, with `step`, once per interval of time such as a TDD frame
//! (closed forms and references in `docs/models/links.md` and `docs/models/wimax.md`).

use super::{check_probability, BuildLoss, LossModel};
use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};

/// `kind = "gilbert_elliott"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// Step the chain once per interval of this length (e.g. the TDD frame, `"5ms"`) instead
    /// of once per packet (the default): every packet of one interval is judged in the same
    /// state. `p` and `r` are then per interval.
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub step: Option<Dur>,
}

fn one() -> f64 {
    1.0
}

impl BuildLoss for GilbertElliottConfig {
    fn build(&self) -> Option<Box<dyn LossModel>> {
        let GilbertElliottConfig { p, r, loss_good, loss_bad, step } = *self;
        match step {
            None => Some(Box::new(GilbertElliott { p, r, loss_good, loss_bad, bad: false })),
            Some(step) => Some(Box::new(TimedGilbertElliott {
                ge: GilbertElliott { p, r, loss_good, loss_bad, bad: false },
                step: step.0,
                at: 0,
            })),
        }
    }
    fn validate(&self) -> Result<(), (&'static str, String)> {
        check_probability("p", self.p)?;
        check_probability("r", self.r)?;
        check_probability("loss_good", self.loss_good)?;
        check_probability("loss_bad", self.loss_bad)?;
        if self.p + self.r == 0.0 {
            return Err(("r", "p and r cannot both be zero".into()));
        }
        if self.step.is_some_and(|s| s.0 == 0) {
            return Err(("step", "must be positive".into()));
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

/// Gilbert–Elliott stepped per interval of time: the state of interval n is drawn from the
/// n-step transition law, P(bad after n steps) = π_B + (bad − π_B)·(1 − p − r)ⁿ with
/// π_B = p / (p + r), so a long idle gap costs one draw, not one per interval.
pub struct TimedGilbertElliott {
    pub ge: GilbertElliott,
    /// Interval length in ns.
    pub step: u64,
    /// Index of the interval the state belongs to.
    pub at: u64,
}

impl LossModel for TimedGilbertElliott {
    fn drops(&mut self, _pkt: &PacketData, now: SimTime, rng: &mut SimRng) -> bool {
        let k = now.0 / self.step;
        if k > self.at {
            let (p, r) = (self.ge.p, self.ge.r);
            let pi_b = p / (p + r);
            let n = (k - self.at).min(i32::MAX as u64) as i32;
            let from = if self.ge.bad { 1.0 } else { 0.0 };
            let p_bad = pi_b + (from - pi_b) * (1.0 - p - r).powi(n);
            self.ge.bad = rng.bernoulli(p_bad.clamp(0.0, 1.0));
            self.at = k;
        }
        rng.bernoulli(if self.ge.bad { self.ge.loss_bad } else { self.ge.loss_good })
    }
}
