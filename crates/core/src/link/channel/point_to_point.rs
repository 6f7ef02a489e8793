//! The point-to-point channel: a dedicated wire of constant rate and propagation delay, always
//! ready (the default of every link direction; ns-3 `PointToPointNetDevice`, htsim `pipe.cpp`).
//!
//! A packet of *L* bytes takes ⌈8·L·10⁹ / C⌉ ns to serialise (rounded up, so a transmitter
//! never finishes early), then `delay` to propagate.

use super::{BuildChannel, Channel, ChannelCtx, LinkPhy};
use crate::time::{Dur, SimTime};
use crate::units::Rate;
use serde::{Deserialize, Serialize};

/// `kind = "point_to_point"`: no parameters (the link's `rate` and `delay` are the channel's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PointToPointConfig {}

impl BuildChannel for PointToPointConfig {
    /// `None`: the port runs the point-to-point channel inline.
    fn build(&self, _cx: &ChannelCtx) -> Option<Box<dyn Channel>> {
        None
    }
}

/// A dedicated wire.
#[derive(Clone, Debug)]
pub struct PointToPoint {
    rate: Rate,
    delay: Dur,
}

impl PointToPoint {
    pub fn new(phy: LinkPhy) -> Self {
        PointToPoint { rate: phy.rate, delay: phy.delay }
    }

    /// Serialisations that start from now on go at `rate` and propagate for `delay` (a
    /// handover, [`crate::link::handover`]).
    pub fn set_phy(&mut self, phy: LinkPhy) {
        *self = PointToPoint::new(phy);
    }
}

impl Channel for PointToPoint {
    #[inline]
    fn rate(&self) -> Rate {
        self.rate
    }
    #[inline]
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        start + self.rate.tx_time(bytes)
    }
    #[inline]
    fn delay(&self) -> Dur {
        self.delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The channel's timing is the port's formula before channels existed: serialisation
        /// ends ⌈8·L·10⁹ / C⌉ ns after it starts, the last bit arrives `delay` later, and the
        /// channel is always ready at its full rate.
        #[test]
        fn timing_is_the_wire_formula(
            rate in 1u64..=400_000_000_000,
            delay in 0u64..=10_000_000_000,
            start in 0u64..=1u64 << 60,
            bytes in 0u64..=65_535,
        ) {
            let mut c = PointToPoint::new(LinkPhy { rate: Rate(rate), delay: Dur(delay) });
            let now = SimTime(start);
            let old = bytes as u128 * 8 * 1_000_000_000;
            let old = old.div_ceil(rate as u128) as u64;
            prop_assert_eq!(c.ready_at(now), now);
            prop_assert_eq!(c.tx_end(now, bytes), SimTime(start + old));
            prop_assert_eq!(c.tx_end(now, bytes) + c.delay(), SimTime(start + old + delay));
            prop_assert_eq!(c.rate_at(now), Rate(rate));
        }
    }
}
