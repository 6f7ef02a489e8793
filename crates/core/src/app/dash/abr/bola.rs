//! BOLA-BASIC, Spiteri, Urgaonkar and Sitaraman, "BOLA: Near-Optimal Bitrate Adaptation for
//! Online Videos" (INFOCOM 2016), Algorithm 1.
//!
//! With utilities v_m = ln(S_m / S_1) (S_m the segment size of rung m, here its declared
//! bitrate times the segment duration p) and Q the buffer in segments, the next rung maximises
//! (V·v_m + V·γp − Q) / S_m. V follows from the buffer the player allows: the paper's bound
//! Q ≤ V(v_M + γp) + 1 gives V = (Q_max − 1)/(v_M + γp); we take Q_max − 1 = max_buffer / p,
//! so BOLA's own "do not download" region (every score negative) is exactly the player's pause
//! above `max_buffer`. γp = 5 by default (the default of Sabre, the authors' simulator).
//! Not modelled: BOLA-FINITE/-O/-U and dash.js's later changes (placeholder buffer, insufficient
//! buffer rule).

use super::{AbrPolicy, AbrSetup, BuildAbr, PlayerObs};
use serde::{Deserialize, Serialize};

/// `kind = "bola"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BolaConfig {
    /// γp, dimensionless (the utility weight of avoiding rebuffering); positive, default 5.
    #[serde(default = "default_gamma_p")]
    pub gamma_p: f64,
}

fn default_gamma_p() -> f64 {
    5.0
}

impl Default for BolaConfig {
    fn default() -> Self {
        BolaConfig { gamma_p: default_gamma_p() }
    }
}

impl BuildAbr for BolaConfig {
    fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)> {
        if !(self.gamma_p > 0.0 && self.gamma_p.is_finite()) {
            return Err(("gamma_p".into(), format!("must be positive, got {}", self.gamma_p)));
        }
        let b = setup.bitrates_bps;
        let utilities: Vec<f64> = b.iter().map(|&s| (s / b[0]).ln()).collect();
        let q_max_minus_1 = setup.max_buffer_s / setup.segment_s;
        let v = q_max_minus_1 / (utilities.last().expect("a ladder has a rung") + self.gamma_p);
        Ok(Box::new(Bola { v, gamma_p: self.gamma_p, utilities, bitrates_bps: b.to_vec(), segment_s: setup.segment_s }))
    }
}

/// The policy: V, γp and the utilities of the ladder.
pub struct Bola {
    v: f64,
    gamma_p: f64,
    utilities: Vec<f64>,
    bitrates_bps: Vec<f64>,
    segment_s: f64,
}

impl AbrPolicy for Bola {
    fn choose(&mut self, obs: &PlayerObs) -> usize {
        let q = obs.buffer_s / self.segment_s;
        let score = |m: usize| (self.v * (self.utilities[m] + self.gamma_p) - q) / self.bitrates_bps[m];
        // First maximum wins ties (the lower rung).
        (1..self.utilities.len()).fold(0, |best, m| if score(m) > score(best) { m } else { best })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rungs_follow_the_published_rule() {
        // Ladder 1/2/4/8 Mbit/s, p = 4 s, max_buffer 24 s: Q_max − 1 = 6 segments,
        // v = (0, ln 2, ln 4, ln 8), γp = 5, V = 6 / (ln 8 + 5) = 6 / 7.07944 = 0.847524.
        // With S_{m+1} = 2·S_m, rungs m and m+1 score equal at
        // Q = V(2·v_m − v_{m+1} + γp):
        //   0|1: V(5 − ln 2) = 0.847524 × 4.30685 = 3.6502 segments = 14.60 s
        //   1|2: V(5)                               = 4.2376 segments = 16.95 s
        //   2|3: V(5 + ln 2) = 0.847524 × 5.69315 = 4.8251 segments = 19.30 s
        // and the scores are single-peaked in m (checked: at each level below, the chosen
        // rung's neighbours both score lower).
        let ladder = [1e6, 2e6, 4e6, 8e6];
        let setup = AbrSetup { bitrates_bps: &ladder, segment_s: 4.0, max_buffer_s: 24.0 };
        let mut p = BolaConfig::default().build(&setup).unwrap();
        let want = [(0.0, 0), (8.0, 0), (14.5, 0), (14.7, 1), (16.9, 1), (17.0, 2), (19.2, 2), (19.4, 3), (24.0, 3)];
        for (buffer_s, rung) in want {
            assert_eq!(p.choose(&PlayerObs::new(buffer_s, 0, None, &[])), rung, "buffer {buffer_s} s");
        }
        // A larger γp favours safety less... and shifts every threshold up by V·Δγp:
        // γp = 10: V = 6 / (ln 8 + 10) = 0.497328; 0|1 at V(10 − ln 2) = 4.6285 seg = 18.51 s.
        let mut p = BolaConfig { gamma_p: 10.0 }.build(&setup).unwrap();
        assert_eq!(p.choose(&PlayerObs::new(18.4, 0, None, &[])), 0);
        assert_eq!(p.choose(&PlayerObs::new(18.6, 0, None, &[])), 1);
    }

    #[test]
    fn gamma_p_must_be_positive() {
        let ladder = [1e6];
        let setup = AbrSetup { bitrates_bps: &ladder, segment_s: 4.0, max_buffer_s: 24.0 };
        assert_eq!(BolaConfig { gamma_p: 0.0 }.build(&setup).err().unwrap().0, "gamma_p");
    }
}
