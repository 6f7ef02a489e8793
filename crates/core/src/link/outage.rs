//! Path outages (the TCP Interactive paper's "Congestion Injector", §3.1.1): link directions
//! that are down for given intervals and drop everything they are given meanwhile.
//!
//! A scenario lists them at the top level, `[[outages]]`, in one of two forms:
//! - fixed: `at` and `duration`, one outage;
//! - random: `count` outages of `duration`, separated by gaps drawn uniformly from
//!   `[min_gap, max_gap]` (the paper's `InterBurstTime[]`, random "to avoid any effect of
//!   periodicity"): the first starts `after + gap₀`, each later one a fresh gap after the
//!   previous one ended. The gaps come from the scenario's seeded stream `outages[k]`, so the
//!   same scenario and seed give the same schedule, and each entry its own.
//!
//! Semantics (see `docs/models/outages.md`): a packet is lost if any part of its time on the
//! wire, from the start of its serialisation to its arrival at the far end, overlaps an outage
//! of its direction: packets being serialised or propagating when the link goes down are lost
//! with it, and so is every packet the port starts sending while it is down. The transmitter
//! keeps draining its queue at the link rate into the dead link (as a router whose route was
//! withdrawn drops what it is given), so nothing queued survives an outage longer than the
//! queue's drain time. Outages of one direction that overlap or touch are merged. Nothing is
//! scheduled for an outage: a port compares each packet's wire interval with its sorted outage
//! list, so a scenario without outages pays one branch per packet.
//!
//! Not modelled: routing around the failure (routes are static), a link-layer carrier signal
//! that would stop the transmitter, ICMP unreachables.

use crate::engine::SimRng;
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};

/// Most outages one random entry may draw.
pub const MAX_COUNT: u32 = 100_000;

/// `[[outages]]`: when some link directions are down. Either `at` (one outage) or `count`
/// with `min_gap` and `max_gap` (random outages).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// Link directions taken down, by name (`"R->C"`, as in `output.pcap`); at least one. All
    /// go down and come back together.
    pub links: Vec<String>,
    /// Length of each outage (positive).
    #[serde(with = "serde_units::time")]
    pub duration: Dur,
    /// Start of a single outage (fixed form).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub at: Option<Dur>,
    /// Number of outages (random form, 1..=100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Shortest gap before each random outage (random form).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub min_gap: Option<Dur>,
    /// Longest gap before each random outage (random form; at least `min_gap`).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub max_gap: Option<Dur>,
    /// Where the first gap is counted from (random form, default 0 s).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub after: Option<Dur>,
}

/// One outage interval `[start, end)`.
pub type Window = (SimTime, SimTime);

impl OutageConfig {
    /// The outage intervals of this entry, in time order. `rng` is the entry's own stream; it
    /// is used only by the random form. Errors read `field: reason`.
    pub fn windows(&self, rng: &mut SimRng) -> Result<Vec<Window>, (&'static str, String)> {
        if self.links.is_empty() {
            return Err(("links", "must name at least one link direction, e.g. [\"R->C\"]".into()));
        }
        if self.duration == Dur::ZERO {
            return Err(("duration", "must be positive".into()));
        }
        let random = [self.count.is_some(), self.min_gap.is_some(), self.max_gap.is_some(), self.after.is_some()];
        match self.at {
            Some(at) => {
                if let Some(k) = random.iter().position(|&r| r) {
                    let key = ["count", "min_gap", "max_gap", "after"][k];
                    return Err((key, "belongs to the random form; give either `at` or `count`, not both".into()));
                }
                Ok(vec![(SimTime(at.0), SimTime(at.0.saturating_add(self.duration.0)))])
            }
            None => {
                let Some(count) = self.count else {
                    return Err(("at", "missing: give `at` (one outage) or `count`, `min_gap`, `max_gap`".into()));
                };
                if !(1..=MAX_COUNT).contains(&count) {
                    return Err(("count", format!("must be within 1..={MAX_COUNT}, got {count}")));
                }
                let (Some(lo), Some(hi)) = (self.min_gap, self.max_gap) else {
                    let key = if self.min_gap.is_none() { "min_gap" } else { "max_gap" };
                    return Err((key, "missing: the random form needs `min_gap` and `max_gap`".into()));
                };
                if hi < lo {
                    return Err(("max_gap", format!("{hi:?} is below min_gap {lo:?}")));
                }
                let mut t = self.after.unwrap_or(Dur::ZERO).0;
                let mut out = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    let gap = lo.0 + ((hi.0 - lo.0) as f64 * rng.uniform()) as u64;
                    let start = t.saturating_add(gap);
                    let end = start.saturating_add(self.duration.0);
                    out.push((SimTime(start), SimTime(end)));
                    t = end;
                }
                Ok(out)
            }
        }
    }
}

/// Sorts `w` and merges intervals that overlap or touch.
pub fn merge(mut w: Vec<Window>) -> Vec<Window> {
    w.sort_unstable();
    let mut out: Vec<Window> = Vec::with_capacity(w.len());
    for (s, e) in w {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// A direction's outage list and a cursor into it (time only moves forward).
#[derive(Clone, Debug, Default)]
pub struct Outages {
    windows: Vec<Window>,
    next: usize,
}

impl Outages {
    /// The outages `w` (sorted and merged).
    pub fn new(w: Vec<Window>) -> Self {
        Outages { windows: merge(w), next: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }
    /// Whether a packet on the wire from `start` (its serialisation starts) to `arrival` (its
    /// last bit reaches the far end) meets an outage: `start < end` and `arrival > start` of
    /// some window. `start` must not decrease from call to call.
    pub fn hits(&mut self, start: SimTime, arrival: SimTime) -> bool {
        while self.next < self.windows.len() && self.windows[self.next].1 <= start {
            self.next += 1;
        }
        self.windows.get(self.next).is_some_and(|w| arrival > w.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> OutageConfig {
        OutageConfig {
            links: vec!["a->b".into()],
            duration: Dur::from_secs(3),
            at: None,
            count: Some(9),
            min_gap: Some(Dur::from_secs(2)),
            max_gap: Some(Dur::from_secs(10)),
            after: Some(Dur::from_secs(1)),
        }
    }

    #[test]
    fn random_form_respects_its_bounds_and_seed() {
        let w = cfg().windows(&mut SimRng::stream(7, "outages[0]")).unwrap();
        assert_eq!(w.len(), 9);
        let mut prev_end = SimTime(Dur::from_secs(1).0);
        for (s, e) in &w {
            assert_eq!(e.0 - s.0, Dur::from_secs(3).0);
            let gap = s.0 - prev_end.0;
            assert!((Dur::from_secs(2).0..=Dur::from_secs(10).0).contains(&gap), "gap {gap}");
            prev_end = *e;
        }
        assert_eq!(w, cfg().windows(&mut SimRng::stream(7, "outages[0]")).unwrap());
        assert_ne!(w, cfg().windows(&mut SimRng::stream(8, "outages[0]")).unwrap());
        // Gaps are spread over the range, not stuck at one end.
        let gaps: Vec<u64> = std::iter::once(w[0].0 .0 - Dur::from_secs(1).0)
            .chain(w.windows(2).map(|p| p[1].0 .0 - p[0].1 .0))
            .collect();
        assert!(gaps.iter().min() != gaps.iter().max(), "{gaps:?}");
    }

    #[test]
    fn bad_entries_name_their_key() {
        let mut r = SimRng::stream(1, "x");
        let bad = |c: OutageConfig, r: &mut SimRng| c.windows(r).unwrap_err().0;
        assert_eq!(bad(OutageConfig { duration: Dur::ZERO, ..cfg() }, &mut r), "duration");
        assert_eq!(bad(OutageConfig { links: vec![], ..cfg() }, &mut r), "links");
        assert_eq!(bad(OutageConfig { count: Some(0), ..cfg() }, &mut r), "count");
        assert_eq!(bad(OutageConfig { max_gap: Some(Dur::from_secs(1)), ..cfg() }, &mut r), "max_gap");
        assert_eq!(bad(OutageConfig { min_gap: None, ..cfg() }, &mut r), "min_gap");
        assert_eq!(bad(OutageConfig { count: None, ..cfg() }, &mut r), "at");
        assert_eq!(bad(OutageConfig { at: Some(Dur::ZERO), ..cfg() }, &mut r), "count");
    }

    #[test]
    fn wire_intervals_that_meet_an_outage_are_hit() {
        let s = |ms: u64| SimTime(ms * 1_000_000);
        let mut o = Outages::new(vec![(s(200), s(300)), (s(100), s(150)), (s(150), s(160))]);
        assert_eq!(o.windows(), &[(s(100), s(160)), (s(200), s(300))]);
        assert!(!o.hits(s(0), s(100)), "arrives exactly as the link goes down");
        assert!(o.hits(s(90), s(101)), "on the wire when it goes down");
        assert!(o.hits(s(120), s(125)), "sent while down");
        assert!(!o.hits(s(160), s(170)), "sent as it comes back");
        assert!(o.hits(s(299), s(310)));
        assert!(!o.hits(s(300), s(310)));
        assert!(!o.hits(s(1000), s(1010)), "past the last outage");
    }
}
