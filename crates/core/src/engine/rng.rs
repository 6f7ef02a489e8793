//! Random-number streams keyed by the scenario seed and a component's name.
//!
//! Every stochastic component owns its own stream, derived from `(seed, name)` with a fixed
//! hash (FNV-1a then SplitMix64), never from a global generator or hash-map iteration order.
//! Adding a component therefore never perturbs the streams of the others (ns-3 `AssignStreams`).

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random stream (xoshiro256++).
#[derive(Clone, Debug)]
pub struct SimRng(Xoshiro256PlusPlus);

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SimRng {
    /// The stream of component `name` under scenario seed `seed`.
    pub fn stream(seed: u64, name: &str) -> SimRng {
        let mut s = [0u8; 32];
        let mut x = splitmix64(seed ^ fnv1a(name.as_bytes()));
        for chunk in s.chunks_mut(8) {
            x = splitmix64(x);
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        SimRng(Xoshiro256PlusPlus::from_seed(s))
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn uniform(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() < p
    }

    /// Exponential with the given mean (inverse-CDF method).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        // 1 - U is in (0, 1], so the log is finite.
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Standard normal (Box–Muller; one of the pair is discarded to keep the stream simple).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Pareto with shape `alpha` and scale (minimum) `xm`.
    pub fn pareto(&mut self, alpha: f64, xm: f64) -> f64 {
        xm / (1.0 - self.uniform()).powf(1.0 / alpha)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_keyed_and_reproducible() {
        let a1: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(1, "a");
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(1, "a");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(1, "b");
                move |_| r.next_u64()
            })
            .collect();
        let a_seed2: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(2, "a");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a1, a2);
        assert_ne!(a1, b);
        assert_ne!(a1, a_seed2);
    }

    #[test]
    fn moments() {
        let mut r = SimRng::stream(7, "moments");
        let n = 200_000;
        let mean_u: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((mean_u - 0.5).abs() < 0.005, "{mean_u}");
        let mean_e: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        assert!((mean_e - 2.0).abs() < 0.03, "{mean_e}");
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.01 && (v - 1.0).abs() < 0.02, "{m} {v}");
    }
}
