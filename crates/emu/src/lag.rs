//! Real-time lag: how late each event ran.
//!
//! An event due at simulated time `t` that the loop runs when the clock reads `w ≥ t` is
//! `w − t` late. Lateness comes from the kernel waking the loop late, from the work of events
//! due just before, and from a host that cannot keep up at all. Every event is counted (those
//! run together at one instant share the lateness of the first). The run's distribution and a
//! per-interval series are reported: an interval is *behind* when more than 1 % of its events
//! were over 1 ms late, and the summary says how many were.

use qoelab_core::time::SimTime;
use qoelab_core::trace::{Column, LogHistogram, Table};

/// Lateness beyond which an event counts as late, ns (1 ms).
pub const LATE_NS: u64 = 1_000_000;

/// The share of late events that makes an interval behind.
pub const BEHIND_SHARE: f64 = 0.01;

#[derive(Clone, Debug, Default)]
struct Interval {
    hist: LogHistogram,
    late: u64,
    max_ns: u64,
}

/// The lateness of a run's events.
#[derive(Clone, Debug)]
pub struct Lag {
    interval_ns: u64,
    all: LogHistogram,
    late: u64,
    max_ns: u64,
    series: Vec<Interval>,
}

impl Lag {
    /// A record with a series of `interval_ns`-long intervals (> 0).
    pub fn new(interval_ns: u64) -> Lag {
        assert!(interval_ns > 0, "a lag interval must be positive");
        Lag { interval_ns, all: LogHistogram::default(), late: 0, max_ns: 0, series: Vec::new() }
    }

    /// `n` events due at `t` ran `late_ns` late.
    pub fn record(&mut self, t: SimTime, late_ns: u64, n: u64) {
        let k = (t.0 / self.interval_ns) as usize;
        if k >= self.series.len() {
            self.series.resize(k + 1, Interval::default());
        }
        let iv = &mut self.series[k];
        for _ in 0..n {
            self.all.record(late_ns);
            iv.hist.record(late_ns);
        }
        if late_ns > LATE_NS {
            self.late += n;
            iv.late += n;
        }
        self.max_ns = self.max_ns.max(late_ns);
        iv.max_ns = iv.max_ns.max(late_ns);
    }

    /// Events recorded.
    pub fn events(&self) -> u64 {
        self.all.count()
    }
    /// Events more than [`LATE_NS`] late.
    pub fn late(&self) -> u64 {
        self.late
    }
    /// The `q`-quantile of lateness, ns (NaN without events).
    pub fn quantile_ns(&self, q: f64) -> f64 {
        self.all.quantile(q)
    }
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }
    fn behind(iv: &Interval) -> bool {
        iv.hist.count() > 0 && iv.late as f64 > BEHIND_SHARE * iv.hist.count() as f64
    }
    /// Intervals in which the loop was behind (see the module docs).
    pub fn behind_intervals(&self) -> usize {
        self.series.iter().filter(|iv| Self::behind(iv)).count()
    }

    /// The `lag` table: one row per interval (`t_s` its start, `events`, `lag_p50_s`,
    /// `lag_p99_s`, `lag_max_s`, `late_events`, `behind` 0/1).
    pub fn table(&self) -> Table {
        let s = &self.series;
        let mut t = Table::new("lag");
        let secs = |ns: f64| ns * 1e-9;
        t.push("t_s", Column::F64((0..s.len()).map(|k| secs((k as u64 * self.interval_ns) as f64)).collect()));
        t.push("events", Column::U64(s.iter().map(|iv| iv.hist.count()).collect()));
        t.push("lag_p50_s", Column::F64(s.iter().map(|iv| secs(iv.hist.quantile(0.5))).collect()));
        t.push("lag_p99_s", Column::F64(s.iter().map(|iv| secs(iv.hist.quantile(0.99))).collect()));
        t.push("lag_max_s", Column::F64(s.iter().map(|iv| secs(iv.max_ns as f64)).collect()));
        t.push("late_events", Column::U64(s.iter().map(|iv| iv.late).collect()));
        t.push("behind", Column::U64(s.iter().map(|iv| Self::behind(iv) as u64).collect()));
        t
    }

    /// The run's summary entries: `lag_events`, `lag_p50_s`, `lag_p99_s`, `lag_max_s`,
    /// `lag_late_events` (over 1 ms), `lag_behind_intervals`, `lag_interval_s`.
    pub fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("lag_events", self.events() as f64),
            ("lag_p50_s", self.quantile_ns(0.5) * 1e-9),
            ("lag_p99_s", self.quantile_ns(0.99) * 1e-9),
            ("lag_max_s", self.max_ns as f64 * 1e-9),
            ("lag_late_events", self.late as f64),
            ("lag_behind_intervals", self.behind_intervals() as f64),
            ("lag_interval_s", self.interval_ns as f64 * 1e-9),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_late_events_and_behind_intervals() {
        let mut l = Lag::new(1_000_000_000);
        l.record(SimTime(10), 5_000, 99);
        l.record(SimTime(20), 3_000_000, 1);
        l.record(SimTime(1_500_000_000), 2_000_000, 5);
        l.record(SimTime(1_600_000_000), 1_000, 5);
        assert_eq!((l.events(), l.late(), l.max_ns()), (110, 6, 3_000_000));
        // Interval 0: 1 late of 100 is not more than 1 %; interval 1: 5 of 10 is.
        assert_eq!(l.table().f64s("behind"), vec![0.0, 1.0]);
        assert_eq!(l.behind_intervals(), 1);
        let p50 = l.quantile_ns(0.5);
        assert!((p50 - 5_000.0).abs() < 50.0, "{p50}");
    }
}
