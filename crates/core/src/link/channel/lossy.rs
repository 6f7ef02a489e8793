//! The loss decorator: a channel direction plus the loss model that judges each packet on it
//! (as smoltcp's `phy::FaultInjector` wraps a device).
//!
//! The loss model draws from the direction's own random stream, once per packet as its
//! serialisation starts; a direction without a model (`kind = "none"`) draws nothing.

use super::Channel;
use crate::engine::SimRng;
use crate::link::loss::LossModel;
use crate::packet::PacketData;
use crate::time::{Dur, SimTime};
use crate::units::Rate;

/// Channel `C` with the loss model of its direction.
pub struct Lossy<C> {
    inner: C,
    loss: Option<Box<dyn LossModel>>,
    rng: SimRng,
}

impl<C: Channel> Lossy<C> {
    /// `inner`, losing packets as `loss` decides with draws from `rng` (nothing if `None`).
    pub fn new(inner: C, loss: Option<Box<dyn LossModel>>, rng: SimRng) -> Self {
        Lossy { inner, loss, rng }
    }

    /// The decorated channel.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The decorated channel, to change (a handover, [`crate::link::handover`]).
    pub fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    /// Judges the packets from now on with `loss` (nothing lost if `None`), drawing from the
    /// same stream.
    pub fn set_loss(&mut self, loss: Option<Box<dyn LossModel>>) {
        self.loss = loss;
    }
}

impl<C: Channel> Channel for Lossy<C> {
    #[inline]
    fn rate(&self) -> Rate {
        self.inner.rate()
    }
    #[inline]
    fn rate_at(&self, now: SimTime) -> Rate {
        self.inner.rate_at(now)
    }
    #[inline]
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        self.inner.ready_at(now)
    }
    #[inline]
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        self.inner.tx_end(start, bytes)
    }
    #[inline]
    fn delay(&self) -> Dur {
        self.inner.delay()
    }
    #[inline]
    fn backlog_changed(&mut self, now: SimTime, backlog: crate::queue::Backlog) {
        self.inner.backlog_changed(now, backlog)
    }
    /// Lost on the medium, or else as the loss model decides.
    #[inline]
    fn lost(&mut self, pkt: &PacketData, now: SimTime) -> bool {
        self.inner.lost(pkt, now)
            || match self.loss.as_mut() {
                Some(l) => l.drops(pkt, now, &mut self.rng),
                None => false,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::channel::{LinkPhy, PointToPoint};
    use crate::link::loss::bernoulli::Bernoulli;
    use crate::queue::testutil::pkt;

    /// The decorator draws exactly what the loss model alone draws, from the same stream.
    #[test]
    fn same_draws_as_the_bare_model() {
        let phy = LinkPhy { rate: Rate(1_000_000), delay: Dur::from_millis(1) };
        let mut ch = Lossy::new(
            PointToPoint::new(phy),
            Some(Box::new(Bernoulli { p: 0.3, start: SimTime::ZERO })),
            SimRng::stream(7, "d"),
        );
        let (mut bare, mut rng) = (Bernoulli { p: 0.3, start: SimTime::ZERO }, SimRng::stream(7, "d"));
        let p = pkt(0, 1000, 0);
        for i in 0..10_000u64 {
            let now = SimTime(i * 1000);
            assert_eq!(ch.lost(&p, now), bare.drops(&p, now, &mut rng), "packet {i}");
        }
        let mut clean = Lossy::new(PointToPoint::new(phy), None, SimRng::stream(7, "d"));
        assert!((0..1000).all(|i| !clean.lost(&p, SimTime(i))));
    }
}
