//! Loss models applied to one link direction, after serialisation and before propagation.
//!
//! A packet a loss model drops is counted as a *channel* drop (never a queue drop). Each model
//! draws from its own random stream, keyed by the link direction's name.

use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::registry::registry;
use crate::time::SimTime;

/// Decides whether a packet is lost on the wire.
pub trait LossModel: Send {
    fn drops(&mut self, pkt: &PacketData, now: SimTime, rng: &mut SimRng) -> bool;
}

registry! {
    /// Loss-model configs, tagged by `kind`. A loss model is its own file here plus one line
    /// below (see `docs/registries.md`).
    pub enum LossConfig: dyn BuildLoss {
        none::None(NoneConfig) = "none",
        bernoulli::Bernoulli(BernoulliConfig) = "bernoulli",
        gilbert_elliott::GilbertElliott(GilbertElliottConfig) = "gilbert_elliott",
    }
}

/// Builds a loss model from its config; every [`LossConfig`] kind implements it.
pub trait BuildLoss {
    /// The model, or `None` for a direction that loses nothing (then no model runs and no random
    /// number is drawn per packet).
    fn build(&self) -> Option<Box<dyn LossModel>>;
    /// Checks parameters; returns `(field, reason)` on error.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        Ok(())
    }
}

impl Default for LossConfig {
    /// No loss.
    fn default() -> Self {
        LossConfig::None(NoneConfig::default())
    }
}

impl LossConfig {
    /// Checks parameters; returns `(field, reason)` on error.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.config().validate()
    }

    pub fn build(&self) -> Option<Box<dyn LossModel>> {
        self.config().build()
    }
}

/// Checks that `v`, the value of field `name`, is a probability.
pub(crate) fn check_probability(name: &'static str, v: f64) -> Result<(), (&'static str, String)> {
    if (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err((name, format!("probability must be in [0, 1], got {v}")))
    }
}

#[cfg(test)]
mod tests {
    use super::bernoulli::Bernoulli;
    use super::gilbert_elliott::GilbertElliott;
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

    /// Stepped per interval: every packet of one interval is judged in the same state, the
    /// states of successive intervals follow the chain (stationary loss rate within 5 %, mean
    /// bad run 1/r intervals within 5 %), and skipping idle intervals keeps the stationary law.
    #[test]
    fn gilbert_elliott_stepped_per_interval() {
        use super::gilbert_elliott::TimedGilbertElliott;
        let (p, r) = (0.05, 0.06);
        let ge = GilbertElliott { p, r, loss_good: 0.0, loss_bad: 1.0, bad: false };
        let mut m = TimedGilbertElliott { ge, step: 5_000_000, at: 0 };
        let mut rng = SimRng::stream(9, "ge-step");
        let pk = pkt(0, 100, 0);
        let (mut lost_frames, mut runs, mut prev, n) = (0u64, 0u64, false, 400_000u64);
        for f in 0..n {
            // Four packets per frame: all judged alike (loss 0 or 1 by state).
            let l: Vec<bool> = (0..4).map(|i| m.drops(&pk, SimTime(f * 5_000_000 + i * 1000), &mut rng)).collect();
            assert!(l.iter().all(|&x| x == l[0]), "frame {f}: {l:?}");
            lost_frames += l[0] as u64;
            runs += (l[0] && !prev) as u64;
            prev = l[0];
        }
        let rate = lost_frames as f64 / n as f64;
        assert!((rate / (p / (p + r)) - 1.0).abs() < 0.05, "{rate}");
        assert!((lost_frames as f64 / runs as f64 * r - 1.0).abs() < 0.05);
        // Sparse packets, 50 frames apart: the state is (nearly) stationary at each.
        let mut lost = 0u64;
        for f in 0..200_000u64 {
            lost += m.drops(&pk, SimTime((n + 50 * f) * 5_000_000), &mut rng) as u64;
        }
        assert!((lost as f64 / 200_000.0 / (p / (p + r)) - 1.0).abs() < 0.05);
    }

    #[test]
    fn bernoulli_rate() {
        let mut b = Bernoulli { p: 0.01, start: SimTime::ZERO };
        let (rate, _) = run(&mut b, 1_000_000, 3);
        assert!((rate / 0.01 - 1.0).abs() < 0.05, "{rate}");
    }

    #[test]
    fn validation_rejects_bad_probabilities() {
        let ge = |p, r, loss_good, loss_bad| {
            LossConfig::GilbertElliott(GilbertElliottConfig { p, r, loss_good, loss_bad, step: None })
        };
        assert!(LossConfig::Bernoulli(BernoulliConfig { p: 1.5, start: None }).validate().is_err());
        assert!(ge(0.0, 0.0, 0.0, 1.0).validate().is_err());
        assert!(ge(0.1, 0.2, -0.1, 1.0).validate().is_err());
    }
}
