//! BBA-0, the buffer-based algorithm of Huang, Johari, McKeown, Trunnell and Watson, "A
//! Buffer-Based Approach to Rate Adaptation: Evidence from a Large Video Streaming Service"
//! (SIGCOMM 2014), §4 and Algorithm 1.
//!
//! The rate map f(B) is R_min while the buffer B is at most the reservoir r, R_max from
//! r + cushion on, and linear between: f(B) = R_min + (R_max − R_min)·(B − r)/cu. The next
//! rate keeps the previous one, Rate_prev, unless f(B) crosses a neighbouring rung: with
//! Rate+ the next rung above Rate_prev (R_max at the top) and Rate− the next below (R_min at
//! the bottom),
//!
//! - B ≤ r → R_min; B ≥ r + cu → R_max;
//! - f(B) ≥ Rate+ → the highest rung below f(B), max{R_i : R_i < f(B)};
//! - f(B) ≤ Rate− → the lowest rung above f(B), min{R_i : R_i > f(B)};
//! - otherwise Rate_prev.
//!
//! The first segment is fetched at R_min (Rate_prev starts there). The paper's buffer is 240 s
//! with r = 90 s and cu = 126 s; by default both scale with the player's `max_buffer`
//! (r = 0.375 and cu = 0.525 of it), the remaining 0.1 being the paper's upper reservoir.
//! Not modelled: BBA-1's chunk-size map and BBA-2's start-up phase.

use super::{AbrPolicy, AbrSetup, BuildAbr, PlayerObs};
use crate::time::Dur;
use crate::units::serde_units;
use serde::{Deserialize, Serialize};

/// `kind = "bba"`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BbaConfig {
    /// Reservoir r: at or below it the lowest rung (default 90/240 of `max_buffer`).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub reservoir: Option<Dur>,
    /// Cushion cu: the span of buffer over which the map rises linearly to the top rung;
    /// positive (default 126/240 of `max_buffer`). r + cu must not exceed `max_buffer`.
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub cushion: Option<Dur>,
}

impl BuildAbr for BbaConfig {
    fn build(&self, setup: &AbrSetup) -> Result<Box<dyn AbrPolicy>, (String, String)> {
        let reservoir_s = self.reservoir.map_or(setup.max_buffer_s * 90.0 / 240.0, |d| d.as_secs_f64());
        let cushion_s = self.cushion.map_or(setup.max_buffer_s * 126.0 / 240.0, |d| d.as_secs_f64());
        if cushion_s <= 0.0 {
            return Err(("cushion".into(), "must be positive".into()));
        }
        if reservoir_s + cushion_s > setup.max_buffer_s + 1e-9 {
            return Err((
                "cushion".into(),
                format!(
                    "reservoir + cushion ({} s) exceeds the player's max_buffer ({} s): the top rung would never be reached",
                    reservoir_s + cushion_s,
                    setup.max_buffer_s
                ),
            ));
        }
        Ok(Box::new(Bba { reservoir_s, cushion_s, bitrates_bps: setup.bitrates_bps.to_vec(), prev: 0 }))
    }
}

/// The policy's state: its map and the previous rung.
pub struct Bba {
    reservoir_s: f64,
    cushion_s: f64,
    bitrates_bps: Vec<f64>,
    prev: usize,
}

impl Bba {
    /// The rate map f(B), bits/s.
    pub fn map_bps(&self, buffer_s: f64) -> f64 {
        let (lo, hi) = (self.bitrates_bps[0], *self.bitrates_bps.last().expect("a ladder has a rung"));
        let x = ((buffer_s - self.reservoir_s) / self.cushion_s).clamp(0.0, 1.0);
        lo + (hi - lo) * x
    }
}

impl AbrPolicy for Bba {
    fn choose(&mut self, obs: &PlayerObs) -> usize {
        let r = &self.bitrates_bps;
        let top = r.len() - 1;
        let b = obs.buffer_s;
        let f = self.map_bps(b);
        let prev = self.prev;
        let plus = r[(prev + 1).min(top)];
        let minus = r[prev.saturating_sub(1)];
        let next = if b <= self.reservoir_s {
            0
        } else if b >= self.reservoir_s + self.cushion_s {
            top
        } else if f >= plus {
            // max{R_i : R_i < f(B)} (R_min when f(B) is on the lowest rung itself).
            r.iter().rposition(|&x| x < f).unwrap_or(0)
        } else if f <= minus {
            // min{R_i : R_i > f(B)}.
            r.iter().position(|&x| x > f).unwrap_or(top)
        } else {
            prev
        };
        self.prev = next;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: [f64; 4] = [1e6, 2e6, 4e6, 8e6];

    /// BBA-0 on the 1/2/4/8 Mbit/s ladder with a 24-s buffer: by the paper's proportions
    /// r = 24 × 90/240 = 9 s and cu = 24 × 126/240 = 12.6 s, so
    /// f(B) = 1 + 7·(B − 9)/12.6 Mbit/s between 9 and 21.6 s.
    fn policy() -> Box<dyn AbrPolicy> {
        BbaConfig::default().build(&AbrSetup { bitrates_bps: &LADDER, segment_s: 4.0, max_buffer_s: 24.0 }).unwrap()
    }

    /// The rung chosen at `buffer_s` after a segment at rung `prev`.
    fn after(prev: usize, buffer_s: f64) -> usize {
        let mut p = policy();
        // Walk the policy to `prev` with buffers that map exactly there (B ≤ r → 0,
        // B ≥ r + cu → 3), or from there by the rule itself.
        let warm = [5.0, 25.0];
        match prev {
            0 => assert_eq!(p.choose(&PlayerObs::new(warm[0], 0, None, &[])), 0),
            3 => assert_eq!(p.choose(&PlayerObs::new(warm[1], 0, None, &[])), 3),
            // f(12.6) = 1 + 7·3.6/12.6 = 3 Mbit/s ≥ Rate+ = 2 from rung 0 → max{R_i < 3} = 2 Mbit/s.
            1 => assert_eq!(p.choose(&PlayerObs::new(12.6, 0, None, &[])), 1),
            // f(16.2) = 1 + 7·7.2/12.6 = 5 Mbit/s ≥ 2 → max{R_i < 5} = 4 Mbit/s.
            2 => assert_eq!(p.choose(&PlayerObs::new(16.2, 0, None, &[])), 2),
            _ => unreachable!(),
        }
        p.choose(&PlayerObs::new(buffer_s, 1, Some(prev), &[]))
    }

    #[test]
    fn reservoir_and_top_of_cushion() {
        // B ≤ r = 9 s: R_min whatever came before; B ≥ r + cu = 21.6 s: R_max.
        for prev in 0..4 {
            assert_eq!(after(prev, 9.0), 0, "prev {prev}");
            assert_eq!(after(prev, 3.0), 0, "prev {prev}");
            assert_eq!(after(prev, 21.61), 3, "prev {prev}");
            assert_eq!(after(prev, 23.0), 3, "prev {prev}");
        }
    }

    #[test]
    fn the_published_map_between() {
        // B = 15: f = 1 + 7·6/12.6 = 4.333 Mbit/s.
        //   from 1 Mbit/s: Rate+ = 2 ≤ 4.333 → max{R_i < 4.333} = 4 Mbit/s (rung 2);
        //   from 8 Mbit/s: Rate− = 4 < 4.333 < Rate+ = 8 → stay at 8 (rung 3);
        //   from 4 Mbit/s: Rate− = 2, Rate+ = 8 → stay.
        assert_eq!(after(0, 15.0), 2);
        assert_eq!(after(3, 15.0), 3);
        assert_eq!(after(2, 15.0), 2);
        // B = 10: f = 1 + 7/12.6 = 1.556 Mbit/s. From 4 Mbit/s: f ≤ Rate− = 2 →
        // min{R_i > 1.556} = 2 Mbit/s (rung 1). From 2: Rate− = 1 < f < Rate+ = 4 → stay.
        assert_eq!(after(2, 10.0), 1);
        assert_eq!(after(1, 10.0), 1);
        // B = 12: f = 1 + 7·3/12.6 = 2.667 Mbit/s: from 1 Mbit/s, f ≥ Rate+ = 2 →
        // max{R_i < 2.667} = 2 Mbit/s (rung 1); from 8, f ≤ Rate− = 4 → min{R_i > 2.667} = 4.
        assert_eq!(after(0, 12.0), 1);
        assert_eq!(after(3, 12.0), 2);
        // B = 20: f = 1 + 7·11/12.6 = 7.111 Mbit/s: from 2 Mbit/s → max{R_i < 7.111} = 4.
        assert_eq!(after(1, 20.0), 2);
    }

    #[test]
    fn parameters() {
        let setup = AbrSetup { bitrates_bps: &LADDER, segment_s: 4.0, max_buffer_s: 24.0 };
        let c = |r: u64, cu: u64| BbaConfig { reservoir: Some(Dur::from_secs(r)), cushion: Some(Dur::from_secs(cu)) };
        assert!(c(10, 14).build(&setup).is_ok());
        assert_eq!(c(10, 15).build(&setup).err().unwrap().0, "cushion");
        assert_eq!(c(10, 0).build(&setup).err().unwrap().0, "cushion");
        // Explicit values replace the proportional defaults: r = 2, cu = 4 → f(4) = 1 + 7·2/4 = 4.5
        // Mbit/s → from rung 0, max{R_i < 4.5} = rung 2.
        let mut p = c(2, 4).build(&setup).unwrap();
        assert_eq!(p.choose(&PlayerObs::new(4.0, 0, None, &[])), 2);
    }
}
