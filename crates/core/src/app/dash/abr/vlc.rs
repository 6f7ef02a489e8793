//! VLC 2.2's rate-based adaptation, the player of the MPTCP/DASH paper (Ubuntu 16.04 ships VLC
//! 2.2.2, whose `adaptative` demux uses this logic by default: `DASHManager::createLogic` maps
//! `Default` to `RateBased`; VLC 3.0 moved the default to its BOLA-based `NearOptimal`).
//!
//! Source read (not copied): VLC 2.2 `modules/demux/adaptative/logic/RateBasedAdaptationLogic.cpp`
//! — `updateDownloadRate(size, time)` keeps the running mean of every download-rate sample
//! (`bpsAvg += (current − bpsAvg) / ++bpsSamplecount`, the integer remainder carried), and sets
//! `currentBps = bpsAvg · 3/4`; `getNextRepresentation` asks `RepresentationSelector::select`
//! for `availBps = currentBps + bandwidth(current) − usedBps` (one stream: `usedBps` is the
//! current representation's bandwidth, so `availBps = currentBps`); `select` (in
//! `Representationselectors.cpp`) returns the representation of the highest `@bandwidth`
//! strictly below that rate, else the lowest. Before the first sample `availBps` is 0: the
//! lowest.
//!
//! Differences: VLC samples each HTTP chunk read; the player here gives one sample per segment
//! (its bytes over request → last byte), so the mean is over segments. The mean is computed in
//! `f64` (VLC's integer remainder makes the same mean to a bit per second). Not modelled: the
//! preferred width/height filter (`adaptative-width`/`-height`, unset by default) and VLC's
//! start-up buffering, which is the player's (`docs/models/dash.md`).

use super::{AbrPolicy, AbrSetup, BuildAbr, PlayerObs};
use serde::{Deserialize, Serialize};

/// `kind = "vlc"`: no parameters (VLC exposes none for this logic).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VlcConfig {}

impl BuildAbr for VlcConfig {
    fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)> {
        Ok(Box::new(Vlc { bitrates_bps: setup.bitrates_bps.to_vec() }))
    }
}

/// The policy's state: the ladder (the mean is over the player's samples).
pub struct Vlc {
    bitrates_bps: Vec<f64>,
}

impl Vlc {
    /// `currentBps`: three quarters of the mean of every sample, bits/s (0 before any).
    pub fn estimate_bps(throughputs_bps: &[f64]) -> f64 {
        if throughputs_bps.is_empty() {
            return 0.0;
        }
        let mean = throughputs_bps.iter().sum::<f64>() / throughputs_bps.len() as f64;
        mean * 3.0 / 4.0
    }
}

impl AbrPolicy for Vlc {
    fn choose(&mut self, obs: &PlayerObs) -> usize {
        let avail = Vlc::estimate_bps(obs.throughputs_bps);
        // `select(reps, 0, avail)`: the highest bandwidth strictly below `avail`, else the lowest.
        self.bitrates_bps.iter().rposition(|&b| b < avail).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: [f64; 4] = [1e6, 2e6, 6e6, 8e6];

    fn pick(samples: &[f64]) -> usize {
        let setup = AbrSetup { bitrates_bps: &LADDER, segment_s: 6.0, max_buffer_s: 30.0 };
        let mut p = VlcConfig::default().build(&setup).unwrap();
        p.choose(&PlayerObs::new(10.0, samples.len() as u64, samples.len().checked_sub(1).map(|_| 0), samples))
    }

    /// Decisions worked out by hand from the rule above.
    #[test]
    fn decisions_by_hand() {
        // No sample yet: availBps = 0, nothing is below it: the lowest.
        assert_eq!(pick(&[]), 0);
        // Mean of 10, 5, 10 Mbit/s = 8.33; × 3/4 = 6.25: 6 Mbit/s is the highest below.
        assert_eq!(pick(&[10e6, 5e6, 10e6]), 2);
        // 8 Mbit/s × 3/4 = 6 exactly: "strictly below" leaves 6 Mbit/s out, 2 Mbit/s it is.
        assert_eq!(pick(&[8e6]), 1);
        // The mean of all samples, not a recent window: one early fast segment (100 Mbit/s)
        // keeps the mean of 100, 1, 1, 1 at 25.75 (× 3/4 = 19.3): the top rung, where a
        // harmonic mean of the last five (1.33 Mbit/s) would stay at the bottom.
        assert_eq!(pick(&[100e6, 1e6, 1e6, 1e6]), 3);
        // Below the lowest rung: the lowest.
        assert_eq!(pick(&[1.2e6]), 0);
        // 28.07 vs 28.24 Mbit/s, the knife edge, is no edge here: 3/4 of either is
        // far above the 8 Mbit/s top.
        assert_eq!(pick(&[28.07e6]), 3);
    }
}
