//! Reservations: a capability some disciplines have, reached without a method on
//! [`QueueDisc`].
//!
//! Signalling at a node (the RSVP agent, [`crate::agent::rsvp`]) asks a port's discipline for
//! its [`Reservations`] table through [`reservations_mut`]. Every discipline is [`AsAny`] (a
//! blanket impl), so the lookup is a downcast to the disciplines that keep reservations,
//! listed once below; a discipline without reservations answers `None` and the request is
//! ignored, as a router that is not RSVP-capable would ignore it. Reservations are keyed by
//! header fields ([`FlowKey`] of the 5-tuple), never by the simulator's flow index.

use super::ring::Ring;
use super::tfd::Tfd;
use super::{FlowKey, QueueDisc};
use crate::time::SimTime;
use crate::units::Rate;
use std::any::Any;

/// Access to the concrete type behind a `dyn` discipline, for capabilities that only some
/// disciplines have. Implemented for every `'static` type.
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A reservation request for one flow on one port, from signalling (RSVP RESV / PathTear).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Reservation {
    /// Install or refresh a guaranteed rate for the packets whose 5-tuple is `key`, held until
    /// `expires` unless refreshed (soft state, RFC 2205 §3.7). `bucket_bytes` is the Tspec's
    /// token bucket depth b (RFC 2210 §3.1), with `rate_bps` as its token rate r: a port that
    /// polices (`police = true`) forwards the flow's packets beyond the bucket as best effort.
    Install { key: FlowKey, rate_bps: u64, bucket_bytes: u64, expires: SimTime },
    /// Remove `key`'s reservation (teardown).
    Remove { key: FlowKey },
}

/// A discipline's reservation table.
pub trait Reservations {
    /// Installs, refreshes or removes a reservation (subject to the discipline's admission
    /// control).
    fn reserve(&mut self, req: &Reservation, now: SimTime);
    /// The rate held for `key`, if any.
    fn reservation(&self, key: FlowKey) -> Option<Rate>;
}

/// The reservation table of `q`, if its discipline keeps one.
pub fn reservations_mut(q: &mut dyn QueueDisc) -> Option<&mut dyn Reservations> {
    // The disciplines that keep reservations. `q.as_any_mut()` dispatches through the vtable
    // to the concrete discipline (called on a `Box` it would name the box instead). A transmit
    // ring is looked through to the discipline above it.
    if (*q).as_any().is::<Ring>() {
        return q.as_any_mut().downcast_mut::<Ring>().and_then(|r| reservations_mut(r.child_mut()));
    }
    q.as_any_mut().downcast_mut::<Tfd>().map(|t| t as &mut dyn Reservations)
}

/// Read-only [`reservations_mut`].
pub fn reservations(q: &dyn QueueDisc) -> Option<&dyn Reservations> {
    if let Some(r) = q.as_any().downcast_ref::<Ring>() {
        return reservations(r.child());
    }
    q.as_any().downcast_ref::<Tfd>().map(|t| t as &dyn Reservations)
}
