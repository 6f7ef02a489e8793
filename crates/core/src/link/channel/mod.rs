//! Channels: what carries a port's bits to the far side of a link direction.
//!
//! A [`Port`](super::Port) decides *which* packet goes next (its queue discipline) and *when it
//! may start*; its channel says when the transmitter may start ([`Channel::ready_at`]), when a
//! serialisation that starts now ends ([`Channel::tx_end`]), how long the last bit then takes
//! to reach the far node ([`Channel::delay`]), and whether the packet is lost on the way
//! ([`Channel::lost`], added by the [`Lossy`] decorator around every channel).
//!
//! Kinds, selected per link by `channel = { kind = "..." }`:
//!
//! - `point_to_point` (the default): a dedicated wire of the link's `rate` and `delay`. The
//!   port runs it inline, with no virtual call ([`Device::PointToPoint`]).
//! - `tdd`: a time-division duplexed shared medium. Each frame grants every station (port) a
//!   fixed slot; see [`tdd`].
//! - `wimax`: an 802.16e OFDMA TDD medium whose base station grants each frame's capacity to
//!   its stations from their reported backlog; see [`wimax`].
//!
//! A channel that grants capacity in slots tells its port "not before T" through `ready_at`;
//! the port, holding packets, schedules a wake-up at T and asks again then (the mechanism a
//! non-work-conserving discipline already uses), so channels need no event kind of their own.
//! A channel whose grants are decided per frame from the stations' demand may answer a lower
//! bound (the next frame's start) and answer again when asked.

pub mod lossy;

use super::loss::LossModel;
use crate::engine::SimRng;
use crate::packet::PacketData;
use crate::queue::Backlog;
use crate::registry::registry;
use crate::time::{Dur, SimTime};
use crate::units::Rate;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub use lossy::Lossy;
pub use point_to_point::PointToPoint;
pub use tdd::{Slot, Tdd};

/// One direction of a channel, as its port drives it.
///
/// Times are absolute simulation times in ns. The port calls `ready_at`, then (if ready) takes
/// a packet from its discipline and calls `tx_end` and `lost` with the same `now`, in that
/// order; serialisations of one port never overlap, so `start` never decreases between calls.
pub trait Channel: Send {
    /// The rate this direction's bits go at while it transmits (the link's `rate`), in bit/s.
    fn rate(&self) -> Rate;
    /// The rate granted to this direction at `now`: [`Channel::rate`] inside a grant, zero
    /// outside one.
    fn rate_at(&self, now: SimTime) -> Rate {
        let _ = now;
        self.rate()
    }
    /// The earliest time, at or after `now`, at which a serialisation may start. The port asks
    /// again at the time answered, so a channel may answer a lower bound.
    #[inline]
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        now
    }
    /// When the serialisation of `bytes` that starts at `start` ends: its last bit is sent.
    /// At least `start + rate().tx_time(bytes)`.
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime;
    /// Propagation delay: from the last bit sent to the last bit received at the far node.
    fn delay(&self) -> Dur;
    /// Whether `pkt`, whose serialisation starts at `now`, is lost on the way. A medium itself
    /// loses nothing; loss models decorate it ([`Lossy`]).
    #[inline]
    fn lost(&mut self, pkt: &PacketData, now: SimTime) -> bool {
        let _ = (pkt, now);
        false
    }
    /// The port's backlog changed to `backlog` at `now` (after an arrival or a dequeue), for a
    /// medium whose grants follow the stations' demand. The port calls it only for channels
    /// that are not point-to-point.
    #[inline]
    fn backlog_changed(&mut self, now: SimTime, backlog: Backlog) {
        let _ = (now, backlog);
    }
}

impl<C: Channel + ?Sized> Channel for Box<C> {
    fn rate(&self) -> Rate {
        (**self).rate()
    }
    fn rate_at(&self, now: SimTime) -> Rate {
        (**self).rate_at(now)
    }
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        (**self).ready_at(now)
    }
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        (**self).tx_end(start, bytes)
    }
    fn delay(&self) -> Dur {
        (**self).delay()
    }
    fn lost(&mut self, pkt: &PacketData, now: SimTime) -> bool {
        (**self).lost(pkt, now)
    }
    fn backlog_changed(&mut self, now: SimTime, backlog: Backlog) {
        (**self).backlog_changed(now, backlog)
    }
}

registry! {
    /// Channel configs, tagged by `kind`. A channel is its own file here plus one line below
    /// (see `docs/registries.md`).
    pub enum ChannelConfig: dyn BuildChannel {
        point_to_point::PointToPoint(PointToPointConfig) = "point_to_point",
        tdd::Tdd(TddConfig) = "tdd",
        wimax::Wimax(WimaxConfig) = "wimax",
    }
}

/// The physical parameters of a link, which every direction's channel starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkPhy {
    /// The link's `rate`: each direction's rate while it transmits.
    pub rate: Rate,
    /// The link's `delay`: one-way propagation delay.
    pub delay: Dur,
}

/// A direction of a link: from end `a` to end `b`, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkDir {
    Ab,
    Ba,
}

/// What a channel direction is built from. More fields may come, so it is `#[non_exhaustive]`.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct ChannelCtx<'a> {
    /// The link's rate and delay.
    pub phy: LinkPhy,
    /// Which direction of the link.
    pub dir: LinkDir,
    /// The state of the scenario's named shared media, for channels whose stations share a
    /// scheduler (`None`: the channel stands alone).
    pub media: Option<&'a Media>,
}

/// Shared state of named media, one per scenario build: the stations of a medium that grants
/// capacity from demand reach one scheduler through it. Keys are the channel's own (medium name
/// and direction); the map is ordered, so nothing depends on hash order.
#[derive(Default)]
pub struct Media {
    wimax: RefCell<BTreeMap<String, Arc<Mutex<wimax::Sched>>>>,
}

impl Media {
    /// The WiMAX scheduler named `key`, made by `new` on first use.
    pub(crate) fn shared(&self, key: &str, new: impl FnOnce() -> wimax::Sched) -> Arc<Mutex<wimax::Sched>> {
        self.wimax.borrow_mut().entry(key.to_string()).or_insert_with(|| Arc::new(Mutex::new(new()))).clone()
    }
}

/// A slot a direction claims on a named shared medium, for the check that the stations sharing
/// it never transmit at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share<'a> {
    /// The medium's name.
    pub medium: &'a str,
    /// Its frame duration.
    pub frame: Dur,
    /// The config field that grants the slot (such as `slot_ab`), for error messages.
    pub field: &'static str,
    /// The slot, as offsets `[start, end)` into every frame.
    pub start: Dur,
    pub end: Dur,
    /// Parameters every station of the medium must share besides the frame, as text for the
    /// error message (`None`: nothing more).
    pub profile: Option<String>,
}

/// Builds a channel direction from its config; every [`ChannelConfig`] kind implements it.
pub trait BuildChannel {
    /// Direction `cx.dir` of a link with physical parameters `cx.phy`, or `None` for the
    /// point-to-point channel (which the port runs inline).
    fn build(&self, cx: &ChannelCtx) -> Option<Box<dyn Channel>>;
    /// Checks parameters; returns `(field, reason)` on error.
    fn validate(&self, phy: LinkPhy) -> Result<(), (&'static str, String)> {
        let _ = phy;
        Ok(())
    }
    /// The slots this link's directions claim on named shared media (none by default).
    fn shares(&self) -> Vec<Share<'_>> {
        Vec::new()
    }
    /// The largest packet the channel carries, in bytes, if it limits it (the link's `mtu` is
    /// checked against it).
    fn max_packet(&self) -> Option<u32> {
        None
    }
}

impl Default for ChannelConfig {
    /// Point-to-point.
    fn default() -> Self {
        ChannelConfig::PointToPoint(PointToPointConfig::default())
    }
}

impl ChannelConfig {
    /// Checks parameters; returns `(field, reason)` on error.
    pub fn validate(&self, phy: LinkPhy) -> Result<(), (&'static str, String)> {
        self.config().validate(phy)
    }

    /// Whether this is the default (point-to-point) channel.
    pub fn is_default(&self) -> bool {
        *self == ChannelConfig::default()
    }

    /// Direction `dir` of the channel, decorated with its loss model, which draws from `rng`;
    /// standing alone (a shared medium's stations are built with [`ChannelConfig::device_in`]).
    pub fn device(&self, phy: LinkPhy, dir: LinkDir, loss: Option<Box<dyn LossModel>>, rng: SimRng) -> Device {
        self.build_device(phy, dir, loss, rng, None)
    }

    /// As [`ChannelConfig::device`], a station of the named media in `media`.
    pub fn device_in(
        &self,
        phy: LinkPhy,
        dir: LinkDir,
        loss: Option<Box<dyn LossModel>>,
        rng: SimRng,
        media: &Media,
    ) -> Device {
        self.build_device(phy, dir, loss, rng, Some(media))
    }

    fn build_device(
        &self,
        phy: LinkPhy,
        dir: LinkDir,
        loss: Option<Box<dyn LossModel>>,
        rng: SimRng,
        media: Option<&Media>,
    ) -> Device {
        match self.config().build(&ChannelCtx { phy, dir, media }) {
            None => Device::PointToPoint(Lossy::new(PointToPoint::new(phy), loss, rng)),
            Some(c) => Device::Other(Lossy::new(c, loss, rng)),
        }
    }
}

/// Checks that the directions sharing a named medium agree on its frame and claim disjoint
/// slots. `links` are the links' key paths (`links[2]`) and channel configs; an error is
/// `(key path, reason)`.
pub fn check_shares<'a>(links: impl IntoIterator<Item = (&'a str, &'a ChannelConfig)>) -> Result<(), (String, String)> {
    let mut media: BTreeMap<&str, Vec<(String, Share)>> = BTreeMap::new();
    for (path, cfg) in links {
        for s in cfg.config().shares() {
            let here = format!("{path}.channel.{}", s.field);
            let claims = media.entry(s.medium).or_default();
            if let Some((first, f)) = claims.first() {
                if f.frame != s.frame {
                    return Err((
                        format!("{path}.channel.frame"),
                        format!("medium {:?} has a frame of {} at {first}, not {}", s.medium, ms(f.frame), ms(s.frame)),
                    ));
                }
            }
            if let Some((first, f)) = claims.first() {
                if f.profile != s.profile {
                    let p = |p: &Option<String>| p.clone().unwrap_or_else(|| "fixed slots".into());
                    return Err((
                        format!("{path}.channel"),
                        format!("medium {:?} has {} at {first}, not {}", s.medium, p(&f.profile), p(&s.profile)),
                    ));
                }
            }
            if let Some((other, _)) = claims.iter().find(|(_, o)| o.start < s.end && s.start < o.end) {
                return Err((here, format!("overlaps {other} on medium {:?}", s.medium)));
            }
            claims.push((here, s));
        }
    }
    Ok(())
}

/// `d` in milliseconds, for messages.
pub(crate) fn ms(d: Dur) -> String {
    format!("{}ms", d.as_nanos() as f64 / 1e6)
}

/// One direction of a channel as its port drives it, with its loss model: the point-to-point
/// channel inline (the common case costs no virtual call), any other kind boxed.
pub enum Device {
    PointToPoint(Lossy<PointToPoint>),
    Other(Lossy<Box<dyn Channel>>),
}

impl Device {
    /// Applies a handover's `change` to this direction from now on (see
    /// [`crate::link::handover`]). A rate or delay change of a channel that is not
    /// point-to-point is refused by the scenario compiler; here it is a bug.
    pub fn apply(&mut self, change: &mut crate::link::handover::Change) {
        if change.rate.is_some() || change.delay.is_some() {
            let Device::PointToPoint(c) = self else {
                panic!("a handover changes the rate or delay of a point-to-point channel only")
            };
            let rate = change.rate.unwrap_or(c.rate());
            let delay = change.delay.unwrap_or(c.delay());
            c.inner_mut().set_phy(LinkPhy { rate, delay });
        }
        if let Some(loss) = change.loss.take() {
            match self {
                Device::PointToPoint(c) => c.set_loss(loss),
                Device::Other(c) => c.set_loss(loss),
            }
        }
    }
}

impl Channel for Device {
    #[inline]
    fn rate(&self) -> Rate {
        match self {
            Device::PointToPoint(c) => c.rate(),
            Device::Other(c) => c.rate(),
        }
    }
    fn rate_at(&self, now: SimTime) -> Rate {
        match self {
            Device::PointToPoint(c) => c.rate_at(now),
            Device::Other(c) => c.rate_at(now),
        }
    }
    #[inline]
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        match self {
            Device::PointToPoint(c) => c.ready_at(now),
            Device::Other(c) => c.ready_at(now),
        }
    }
    #[inline]
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        match self {
            Device::PointToPoint(c) => c.tx_end(start, bytes),
            Device::Other(c) => c.tx_end(start, bytes),
        }
    }
    #[inline]
    fn delay(&self) -> Dur {
        match self {
            Device::PointToPoint(c) => c.delay(),
            Device::Other(c) => c.delay(),
        }
    }
    #[inline]
    fn lost(&mut self, pkt: &PacketData, now: SimTime) -> bool {
        match self {
            Device::PointToPoint(c) => c.lost(pkt, now),
            Device::Other(c) => c.lost(pkt, now),
        }
    }
    #[inline]
    fn backlog_changed(&mut self, now: SimTime, backlog: Backlog) {
        if let Device::Other(c) = self {
            c.backlog_changed(now, backlog);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tdd(medium: &str, ab: (u64, u64), ba: (u64, u64), frame_ms: u64) -> ChannelConfig {
        let slot = |(s, e): (u64, u64)| tdd::Slot { start: Dur::from_millis(s), end: Dur::from_millis(e) };
        ChannelConfig::Tdd(TddConfig {
            frame: Dur::from_millis(frame_ms),
            slot_ab: slot(ab),
            slot_ba: slot(ba),
            medium: Some(medium.into()),
        })
    }

    #[test]
    fn shared_media_must_not_overlap() {
        let (a, b) = (tdd("ul", (0, 1), (4, 5), 5), tdd("ul", (1, 2), (3, 4), 5));
        assert_eq!(check_shares([("links[0]", &a), ("links[1]", &b)]), Ok(()));
        let c = tdd("ul", (2, 3), (3, 4), 5);
        assert_eq!(
            check_shares([("links[0]", &a), ("links[1]", &b), ("links[2]", &c)]),
            Err(("links[2].channel.slot_ba".into(), "overlaps links[1].channel.slot_ba on medium \"ul\"".into()))
        );
        // Another medium is another frame: no conflict.
        let d = tdd("dl", (0, 1), (4, 5), 5);
        assert_eq!(check_shares([("links[0]", &a), ("links[1]", &d)]), Ok(()));
        let e = tdd("ul", (1, 2), (2, 3), 10);
        assert_eq!(
            check_shares([("links[0]", &a), ("links[1]", &e)]),
            Err((
                "links[1].channel.frame".into(),
                "medium \"ul\" has a frame of 5ms at links[0].channel.slot_ab, not 10ms".into()
            ))
        );
        let p2p = ChannelConfig::default();
        assert_eq!(check_shares([("links[0]", &p2p), ("links[1]", &p2p)]), Ok(()));
    }

    #[test]
    fn default_is_point_to_point_and_runs_inline() {
        let c: ChannelConfig = toml::from_str("kind = 'point_to_point'").expect("parses");
        assert!(c.is_default());
        let phy = LinkPhy { rate: Rate(1_000_000), delay: Dur::from_millis(1) };
        assert!(matches!(c.device(phy, LinkDir::Ab, None, SimRng::stream(1, "x")), Device::PointToPoint(_)));
        let t = tdd("m", (0, 1), (1, 2), 5);
        assert!(matches!(t.device(phy, LinkDir::Ab, None, SimRng::stream(1, "x")), Device::Other(_)));
    }
}
