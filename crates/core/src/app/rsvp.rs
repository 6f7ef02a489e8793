//! The sender-side RSVP signaller of a video source ([`RsvpSignaller`], the application's half;
//! the host's node agent is [`crate::agent::rsvp::RsvpAgent`]): PATH messages with the flow's
//! Tspec, refreshed every R (randomised in [0.5 R, 1.5 R], RFC 2205 §3.7), and a PathTear when the source stops.
//!
//! This is the application's side of the RSVP API (RFC 2205 §3.11 "SENDER" call): it asks for
//! a message; the host's RSVP node agent ([`crate::agent::rsvp`]) fills in the session and
//! sender from the flow's headers and sends it, and the agents on the routers and the
//! receiver do the rest. The message formats and the lifetime rule are in
//! [`crate::ip::rsvp`]. See `docs/models/rsvp.md`.

use super::AppCtx;
use crate::ip::rsvp::{RsvpKind, RsvpMsg};
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};

/// `rsvp = { ... }` of a video app: reserve `rate` on every router port of the path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RsvpSenderConfig {
    /// Tspec token rate r = the Guaranteed-service rate R each hop reserves.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    /// Tspec peak rate p (default: equal to `rate`; never below it); carried, not used by the
    /// scheduler.
    #[serde(default, with = "serde_units::rate")]
    pub peak: Rate,
    /// Tspec bucket depth b (default `"0B"`, at most 2^32 - 1 bytes, the message's field);
    /// carried, not used by the scheduler.
    #[serde(default, with = "serde_units::bytes")]
    pub bucket: u64,
    /// Refresh period R (default `"30s"`, RFC 2205 §3.7).
    #[serde(default = "default_refresh", with = "serde_units::time")]
    pub refresh: Dur,
    /// Send a PathTear when the source stops (default true). Without it, state times out
    /// after L = (K + 0.5) · 1.5 · R.
    #[serde(default = "yes")]
    pub teardown: bool,
}

fn default_refresh() -> Dur {
    Dur::from_millis(30_000)
}
fn yes() -> bool {
    true
}

impl RsvpSenderConfig {
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.rate.bps() == 0 {
            return Err(("rsvp.rate".into(), "must be positive".into()));
        }
        if self.refresh.as_nanos() < 1_000_000 || self.refresh.as_nanos() > u32::MAX as u64 * 1_000_000 {
            return Err(("rsvp.refresh".into(), "must be between 1 ms and 2^32 ms".into()));
        }
        if self.peak.bps() != 0 && self.peak.bps() < self.rate.bps() {
            return Err((
                "rsvp.peak".into(),
                format!("a Tspec's peak rate cannot be below its token rate ({:?} < {:?})", self.peak, self.rate),
            ));
        }
        if self.bucket > u64::from(u32::MAX) {
            return Err(("rsvp.bucket".into(), "must be below 4 GiB (the message's 32-bit field)".into()));
        }
        Ok(())
    }
}

/// The signaller's state: when the next PATH is due, and whether the PathTear went out.
pub struct RsvpSignaller {
    cfg: RsvpSenderConfig,
    next: SimTime,
    torn: bool,
}

impl RsvpSignaller {
    pub fn new(cfg: RsvpSenderConfig) -> Self {
        RsvpSignaller { cfg, next: SimTime::ZERO, torn: false }
    }

    fn msg(&self, kind: RsvpKind) -> RsvpMsg {
        RsvpMsg {
            kind,
            // Filled in by the world from the flow's header fields (`Simulation::send_rsvp`).
            session: Default::default(),
            sender: Default::default(),
            hop: Default::default(),
            rate_bps: self.cfg.rate.bps(),
            peak_bps: if self.cfg.peak.bps() == 0 { self.cfg.rate.bps() } else { self.cfg.peak.bps() },
            bucket_bytes: self.cfg.bucket as u32, // validated to fit
            refresh_ms: (self.cfg.refresh.as_nanos() / 1_000_000) as u32,
        }
    }

    /// Sends a PATH if one is due and returns when the next one is.
    pub fn poll(&mut self, cx: &mut AppCtx) -> Option<SimTime> {
        if self.torn {
            return None;
        }
        if cx.now >= self.next {
            cx.rsvp(self.msg(RsvpKind::Path));
            // RFC 2205 §3.7: refresh after a random interval in [0.5 R, 1.5 R].
            let r = self.cfg.refresh.as_nanos() as f64;
            self.next = cx.now + Dur((r * (0.5 + cx.rng.uniform())).round() as u64);
        }
        Some(self.next)
    }

    /// The source has no more data: tear the path down (once), if configured.
    pub fn stop(&mut self, cx: &mut AppCtx) {
        if !self.torn {
            self.torn = true;
            if self.cfg.teardown {
                cx.rsvp(self.msg(RsvpKind::PathTear));
            }
        }
    }
}
