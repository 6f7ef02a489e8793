//! Scheduled handovers: a mobile host moving between access points, as changes to its access
//! link directions at given times, each with an association gap during which the directions are
//! down.
//!
//! A scenario lists them at the top level, `[[handovers]]`, beside `[[outages]]`:
//!
//! ```toml
//! [[handovers]]
//! links = ["C->R1", "R1->C"]   # the directions that change together
//! at = "60s"                    # the host leaves its access point
//! gap = "500ms"                 # association: down during [at, at + gap)
//! rate = "4Mbps"                # the new access point's rate, delay and loss (each optional)
//! delay = "20ms"
//! loss = { kind = "bernoulli", p = 0.01 }
//! ```
//!
//! Semantics (see `docs/models/handovers.md`):
//! - every packet whose serialisation starts at or after `at` goes at the new `rate`, takes the
//!   new `delay` to propagate and is judged by the new `loss` model (drawing from the
//!   direction's own random stream, which continues); a packet being serialised at `at` keeps
//!   the parameters it started with. A field left out keeps its value;
//! - the gap is an outage of the listed directions, `[at, at + gap)`, with the outages'
//!   semantics ([`super::outage`]): packets on the wire at `at` are lost with the old
//!   association, and so is everything the port sends before the new one is up. The gap appears
//!   in the results' `outages` table and in `links.drop_down_pkts`;
//! - the delay line stays first in, first out: after a delay decrease a packet arrives no
//!   earlier than the one sent before it (the new path does not overtake packets still on the
//!   old one, which a gap of at least the old delay makes moot).
//!
//! Nothing is scheduled for a handover: a port holds its changes in time order and applies
//! those that are due when it starts a serialisation, so a port without handovers pays one
//! branch per packet. Rate and delay changes need a `point_to_point` channel (a shared medium's
//! timing is its own); a loss change works on any channel.
//!
//! Not modelled: the scan and authentication before association as separate phases (the gap is
//! their total), the host choosing when to roam (handovers are scheduled), address changes (the
//! interface keeps its address: the new access point is on the same subnet, as on a campus
//! WLAN with roaming).

use crate::link::loss::{LossConfig, LossModel};
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};

/// `[[handovers]]`: at `at`, the listed link directions change their rate, delay or loss (each
/// optional), after an association gap of `gap` during which they are down.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoverConfig {
    /// Link directions that change together, by name (`"R->C"`, as in `output.pcap`); at least
    /// one, each once.
    pub links: Vec<String>,
    /// When the host leaves its access point: packets whose serialisation starts at or after it
    /// see the new parameters.
    #[serde(with = "serde_units::time")]
    pub at: Dur,
    /// The association gap: the directions are down during `[at, at + gap)` (default 0 s: an
    /// instant change).
    #[serde(default, with = "serde_units::time")]
    pub gap: Dur,
    /// The new rate (positive; default: unchanged). Needs a `point_to_point` channel.
    #[serde(default, with = "serde_units::opt_rate", skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// The new one-way propagation delay (default: unchanged). Needs a `point_to_point` channel.
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dur>,
    /// The new loss model of every listed direction (default: unchanged; `{ kind = "none" }`
    /// ends the loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossConfig>,
}

impl HandoverConfig {
    /// Checks the entry on its own; errors are `(key path within the entry, reason)`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        self.check().map_err(|(f, r)| (f.to_string(), r)).and_then(|()| match &self.loss {
            Some(l) => l.validate().map_err(|(f, r)| (format!("loss.{f}"), r)),
            None => Ok(()),
        })
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.links.is_empty() {
            return Err(("links", "must name at least one link direction, e.g. [\"C->AP\"]".into()));
        }
        if self.rate.is_some_and(|r| r.0 == 0) {
            return Err(("rate", "must be positive".into()));
        }
        if self.gap == Dur::ZERO && self.rate.is_none() && self.delay.is_none() && self.loss.is_none() {
            return Err(("at", "changes nothing: give a `gap`, `rate`, `delay` or `loss`".into()));
        }
        Ok(())
    }

    /// The association gap as an outage window, if there is one.
    pub fn gap_window(&self) -> Option<super::outage::Window> {
        (self.gap > Dur::ZERO).then(|| (SimTime(self.at.0), SimTime(self.at.0.saturating_add(self.gap.0))))
    }

    /// This entry's change of one direction (each direction gets its own loss model).
    pub fn change(&self) -> Change {
        Change {
            at: SimTime(self.at.0),
            rate: self.rate,
            delay: self.delay,
            loss: self.loss.as_ref().map(|l| l.build()),
        }
    }
}

/// One direction's change: what the port applies when a serialisation starts at or after `at`.
pub struct Change {
    pub at: SimTime,
    pub rate: Option<Rate>,
    pub delay: Option<Dur>,
    /// The new loss model (`Some(None)`: no loss from now on).
    pub loss: Option<Option<Box<dyn LossModel>>>,
}

/// A direction's pending changes, in time order, and a cursor (time only moves forward).
#[derive(Default)]
pub struct Schedule {
    changes: Vec<Change>,
    next: usize,
}

impl Schedule {
    /// The changes `c`, sorted by time (two at one time are refused by the scenario compiler).
    pub fn new(mut c: Vec<Change>) -> Self {
        c.sort_by_key(|c| c.at);
        Schedule { changes: c, next: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.changes.len() == self.next
    }
    /// The changes due at `now` (at or before it) not yet applied, in time order.
    pub fn due(&mut self, now: SimTime) -> impl Iterator<Item = &mut Change> {
        let start = self.next;
        while self.next < self.changes.len() && self.changes[self.next].at <= now {
            self.next += 1;
        }
        self.changes[start..self.next].iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> HandoverConfig {
        HandoverConfig {
            links: vec!["a->b".into()],
            at: Dur::from_secs(10),
            gap: Dur::from_millis(200),
            rate: Some(Rate(2_000_000)),
            delay: None,
            loss: None,
        }
    }

    #[test]
    fn bad_entries_name_their_field() {
        assert_eq!(cfg().validate(), Ok(()));
        assert_eq!(cfg().gap_window(), Some((SimTime(10_000_000_000), SimTime(10_200_000_000))));
        let bad = |c: HandoverConfig| c.validate().unwrap_err().0;
        assert_eq!(bad(HandoverConfig { links: vec![], ..cfg() }), "links");
        assert_eq!(bad(HandoverConfig { rate: Some(Rate(0)), ..cfg() }), "rate");
        assert_eq!(bad(HandoverConfig { rate: None, gap: Dur::ZERO, ..cfg() }), "at");
        let p = toml::from_str::<LossConfig>("kind = 'bernoulli'\np = 2.0").unwrap();
        let e = HandoverConfig { loss: Some(p), ..cfg() }.validate().unwrap_err();
        assert_eq!(e.0, "loss.p");
        assert!(e.1.starts_with("probability"), "{}", e.1);
        // A gap alone is a handover between identical access points.
        assert_eq!(HandoverConfig { rate: None, ..cfg() }.validate(), Ok(()));
        assert_eq!(HandoverConfig { gap: Dur::ZERO, ..cfg() }.gap_window(), None);
    }

    #[test]
    fn changes_come_due_in_time_order_once() {
        let at = |s: u64| Change { at: SimTime(s), rate: Some(Rate(s)), delay: None, loss: None };
        let mut s = Schedule::new(vec![at(30), at(10), at(20)]);
        assert_eq!(s.due(SimTime(5)).count(), 0);
        let r: Vec<_> = s.due(SimTime(20)).map(|c| c.rate.unwrap().0).collect();
        assert_eq!(r, vec![10, 20]);
        assert_eq!(s.due(SimTime(25)).count(), 0, "applied changes are not applied again");
        assert!(!s.is_empty());
        assert_eq!(s.due(SimTime(30)).count(), 1);
        assert!(s.is_empty());
    }
}
