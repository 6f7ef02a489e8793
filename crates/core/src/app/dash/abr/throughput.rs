//! Rate-based adaptation: the harmonic mean of the last `window` segment download rates,
//! times `safety`, and the highest rung whose declared bitrate is at most that estimate
//! (the lowest before the first sample, or when none fits).
//!
//! This is the family of VLC's rate-based logic, with a different estimator. VLC 2.x's DASH
//! module (`modules/stream_filter/dash/adaptationlogic/RateBasedAdaptationLogic.cpp`) takes
//! the average download rate of all chunks so far (`getBpsAvg()`) — and 0, i.e. the lowest
//! representation, while its buffer is under 30 % full (`MINBUFFER 30`) — and lets
//! `RepresentationSelector::select` return the highest representation whose `@bandwidth` is
//! at most that rate, else the lowest; its successor in `modules/demux/dash/` keeps a running
//! mean (`bpsAvg += (current − bpsAvg)/(n + 1)`) and adopts it every fifth segment. The
//! harmonic mean of recent samples (FESTIVE, Jiang et al., CoNEXT 2012; MPC, Yin et al.,
//! SIGCOMM 2015, over the last 5) is less swayed by one fast download; `window = 1000000`
//! and `safety = 1` come close to VLC's all-time mean without its buffer gate. Not modelled:
//! VLC's preferred width/height filter.

use super::{highest_at_most, AbrPolicy, AbrSetup, BuildAbr, PlayerObs};
use serde::{Deserialize, Serialize};

/// `kind = "throughput"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThroughputConfig {
    /// Number of most recent segment download rates averaged (harmonic mean); at least 1,
    /// default 5 (as MPC's estimator).
    #[serde(default = "default_window")]
    pub window: u32,
    /// Factor applied to the estimate before choosing, in (0, 1]; default 0.9 (dash.js's
    /// `bandwidthSafetyFactor`).
    #[serde(default = "default_safety")]
    pub safety: f64,
}

fn default_window() -> u32 {
    5
}
fn default_safety() -> f64 {
    0.9
}

impl Default for ThroughputConfig {
    fn default() -> Self {
        ThroughputConfig { window: default_window(), safety: default_safety() }
    }
}

impl BuildAbr for ThroughputConfig {
    fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)> {
        if self.window == 0 {
            return Err(("window".into(), "must be at least 1 segment".into()));
        }
        if !(self.safety > 0.0 && self.safety <= 1.0) {
            return Err(("safety".into(), format!("must be in (0, 1], got {}", self.safety)));
        }
        Ok(Box::new(Throughput { cfg: self.clone(), bitrates_bps: setup.bitrates_bps.to_vec() }))
    }
}

/// The policy's state: its parameters and the ladder.
pub struct Throughput {
    cfg: ThroughputConfig,
    bitrates_bps: Vec<f64>,
}

impl Throughput {
    /// The estimate for the next segment, bits/s (`None` before any sample).
    pub fn estimate_bps(&self, throughputs_bps: &[f64]) -> Option<f64> {
        let k = (self.cfg.window as usize).min(throughputs_bps.len());
        if k == 0 {
            return None;
        }
        let recent = &throughputs_bps[throughputs_bps.len() - k..];
        let inv: f64 = recent.iter().map(|r| 1.0 / r).sum();
        Some(self.cfg.safety * k as f64 / inv)
    }
}

impl AbrPolicy for Throughput {
    fn choose(&mut self, obs: &PlayerObs) -> usize {
        match self.estimate_bps(obs.throughputs_bps) {
            Some(e) => highest_at_most(&self.bitrates_bps, e),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: [f64; 4] = [1e6, 2e6, 4e6, 8e6];

    fn policy(window: u32, safety: f64) -> Box<dyn AbrPolicy> {
        let setup = AbrSetup { bitrates_bps: &LADDER, segment_s: 4.0, max_buffer_s: 24.0 };
        ThroughputConfig { window, safety }.build(&setup).unwrap()
    }

    fn pick(p: &mut Box<dyn AbrPolicy>, samples: &[f64]) -> usize {
        p.choose(&PlayerObs::new(10.0, samples.len() as u64, Some(0), samples))
    }

    #[test]
    fn highest_rung_below_the_estimate() {
        // Harmonic mean of 10, 5, 10 Mbit/s: 3 / (1/10 + 1/5 + 1/10) = 7.5; × 0.9 = 6.75
        // Mbit/s: 4 Mbit/s is the highest rung at most that (the arithmetic mean, 8.33 × 0.9
        // = 7.5, would pick the same; the next case tells them apart).
        assert_eq!(pick(&mut policy(3, 0.9), &[10e6, 5e6, 10e6]), 2);
        // Harmonic mean of 20 and 2.5: 2 / (0.05 + 0.4) = 4.44 → 4 Mbit/s (rung 2); the
        // arithmetic mean, 11.25, would give 8 Mbit/s.
        assert_eq!(pick(&mut policy(2, 1.0), &[20e6, 2.5e6]), 2);
        // Only the last `window` samples count: the fast old one is forgotten.
        assert_eq!(pick(&mut policy(2, 1.0), &[100e6, 3e6, 3e6]), 1);
        // An estimate exactly on a rung takes it ("at most").
        assert_eq!(pick(&mut policy(1, 0.5), &[8e6]), 2);
        // Below the lowest rung, and before any sample: the lowest.
        assert_eq!(pick(&mut policy(5, 0.9), &[0.5e6]), 0);
        assert_eq!(pick(&mut policy(5, 0.9), &[]), 0);
        // Above the top: the top.
        assert_eq!(pick(&mut policy(5, 0.9), &[50e6]), 3);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let setup = AbrSetup { bitrates_bps: &LADDER, segment_s: 4.0, max_buffer_s: 24.0 };
        let e = ThroughputConfig { window: 0, safety: 0.9 }.build(&setup).err().unwrap();
        assert_eq!(e.0, "window");
        for s in [0.0, 1.5, f64::NAN] {
            let e = ThroughputConfig { window: 3, safety: s }.build(&setup).err().unwrap();
            assert_eq!(e.0, "safety");
        }
    }
}
