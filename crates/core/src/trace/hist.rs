//! A log-bucketed histogram of non-negative integers (nanoseconds) with bounded relative error,
//! in the style of HdrHistogram: 2^7 linear sub-buckets per power of two, so any quantile is
//! reported within 1/128 (< 0.8 %) of a recorded value, in O(1) memory per flow.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

#[derive(Clone, Debug, Default)]
pub struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
}

fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) - SUB; // in [0, SUB)
    ((shift as u64 + 1) * SUB + sub) as usize
}

/// Lower edge of bucket `i`.
fn value(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let shift = i / SUB - 1;
    let sub = i % SUB;
    (SUB + sub) << shift
}

impl LogHistogram {
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q`-quantile (0 ≤ q ≤ 1), as the midpoint of its bucket; NaN if empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                let lo = value(i) as f64;
                let hi = value(i + 1) as f64;
                return if hi - lo <= 1.0 { lo } else { (lo + hi - 1.0) / 2.0 };
            }
        }
        unreachable!("rank {rank} exceeds total {}", self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_exact() {
        let mut h = LogHistogram::default();
        for v in 0..100 {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 49.0);
        assert_eq!(h.quantile(1.0), 99.0);
    }

    proptest! {
        #[test]
        fn index_value_roundtrip(v in 0u64..(1u64 << 62)) {
            let i = index(v);
            prop_assert!(value(i) <= v && v < value(i + 1));
        }

        #[test]
        fn quantile_relative_error(mut xs in proptest::collection::vec(1u64..10_000_000_000, 1..500), q in 0.0f64..1.0) {
            let mut h = LogHistogram::default();
            for x in &xs { h.record(*x); }
            xs.sort();
            let rank = ((q * xs.len() as f64).ceil() as usize).max(1);
            let exact = xs[rank - 1] as f64;
            let est = h.quantile(q);
            prop_assert!((est - exact).abs() <= exact / 128.0 + 1.0, "{} vs {}", est, exact);
        }
    }
}
