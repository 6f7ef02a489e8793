//! Loss models applied to one link direction, after serialisation and before propagation.
//!
//! A packet a loss model drops is counted as a *channel* drop (never a queue drop). Each model
//! draws from its own random stream, keyed by the link direction's name.

use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// Decides whether a packet is lost on the wire.
pub trait LossModel: Send {
    fn drops(&mut self, pkt: &PacketData, now: SimTime, rng: &mut SimRng) -> bool;
}

/// Loss-model configs, tagged by `kind`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// No loss.
    None,
    /// Independent loss with probability `p` per packet.
    Bernoulli {
        /// Loss probability per packet, in [0, 1].
        p: f64,
    },
    /// Two-state Markov (Gilbert–Elliott) channel, stepped once per packet.
    GilbertElliott {
        /// P(good → bad) per packet.
        p: f64,
        /// P(bad → good) per packet.
        r: f64,
        /// Loss probability in the good state (default 0).
        #[serde(default)]
        loss_good: f64,
        /// Loss probability in the bad state (default 1).
        #[serde(default = "one")]
        loss_bad: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl LossConfig {
    /// Checks probabilities; returns `(field, reason)` on error.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let check = |name: &'static str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err((name, format!("probability must be in [0, 1], got {v}")))
            }
        };
        match *self {
            LossConfig::None => Ok(()),
            LossConfig::Bernoulli { p } => check("p", p),
            LossConfig::GilbertElliott { p, r, loss_good, loss_bad } => {
                check("p", p)?;
                check("r", r)?;
                check("loss_good", loss_good)?;
                check("loss_bad", loss_bad)?;
                if p + r == 0.0 {
                    return Err(("r", "p and r cannot both be zero".into()));
                }
                Ok(())
            }
        }
    }

    pub fn build(&self) -> Option<Box<dyn LossModel>> {
        match *self {
            LossConfig::None => None,
            LossConfig::Bernoulli { p } => Some(Box::new(Bernoulli { p })),
            LossConfig::GilbertElliott { p, r, loss_good, loss_bad } => {
                Some(Box::new(GilbertElliott { p, r, loss_good, loss_bad, bad: false }))
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;

    fn run(model: &mut dyn LossModel, n: usize, seed: u64) -> (f64, f64) {
        let mut rng = SimRng::stream(seed, "ge-test");
        let p = pkt(0, 100, 0);
        let (mut lost, mut bursts, mut in_burst) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = model.drops(&p, SimTime::ZERO, &mut rng);
            if l {
                lost += 1;
                if !in_burst {
                    bursts += 1;
                }
            }
            in_burst = l;
        }
        (lost as f64 / n as f64, lost as f64 / bursts.max(1) as f64)
    }

    /// Validation (e): loss rate and mean burst length within 5 % of the closed forms.
    #[test]
    fn gilbert_closed_forms() {
        for (p, r) in [(0.01, 0.3), (0.05, 0.5), (0.002, 0.1)] {
            let mut ge = GilbertElliott { p, r, loss_good: 0.0, loss_bad: 1.0, bad: false };
            let (rate, burst) = run(&mut ge, 1_000_000, 11);
            let want_rate = p / (p + r);
            let want_burst = 1.0 / r;
            assert!((rate / want_rate - 1.0).abs() < 0.05, "p={p} r={r}: rate {rate} vs {want_rate}");
            assert!((burst / want_burst - 1.0).abs() < 0.05, "p={p} r={r}: burst {burst} vs {want_burst}");
        }
    }

    #[test]
    fn gilbert_elliott_general_loss_rate() {
        let (p, r, lg, lb) = (0.02, 0.2, 0.01, 0.6);
        let mut ge = GilbertElliott { p, r, loss_good: lg, loss_bad: lb, bad: false };
        let (rate, _) = run(&mut ge, 1_000_000, 5);
        let want = (r * lg + p * lb) / (p + r);
        assert!((rate / want - 1.0).abs() < 0.05, "{rate} vs {want}");
    }

    #[test]
    fn bernoulli_rate() {
        let mut b = Bernoulli { p: 0.01 };
        let (rate, _) = run(&mut b, 1_000_000, 3);
        assert!((rate / 0.01 - 1.0).abs() < 0.05, "{rate}");
    }

    #[test]
    fn validation_rejects_bad_probabilities() {
        assert!(LossConfig::Bernoulli { p: 1.5 }.validate().is_err());
        assert!(LossConfig::GilbertElliott { p: 0.0, r: 0.0, loss_good: 0.0, loss_bad: 1.0 }.validate().is_err());
        assert!(LossConfig::GilbertElliott { p: 0.1, r: 0.2, loss_good: -0.1, loss_bad: 1.0 }.validate().is_err());
    }
}
