//! IEEE 802.16e (mobile WiMAX) OFDMA TDD: a shared medium whose base station grants capacity
//! frame by frame from the stations' reported backlog.
//!
//! Reading list: IEEE Std 802.16e-2005 / 802.16-2009 §8.4 (OFDMA PHY: symbol time, PUSC
//! subcarriers, TDD frame durations in Table 274), §6.3.5 (scheduling services: rtPS, nrtPS),
//! §6.3.6 (bandwidth requests and grants, unicast polling), §6.3.2.1 (generic MAC header, CRC);
//! the paper's Table 1 (`shared/papers/multi-tfrc-wimax.txt`); the model page
//! `docs/models/wimax.md` (derivations, what is not modelled, validation).
//!
//! Every link naming the same `medium` is one subscriber station (SS, the link's `a` end) of one
//! base station (BS, the `b` end). The a→b direction is the station's share of the uplink (UL),
//! b→a its share of the downlink (DL). Each direction of the medium is scheduled on its own:
//!
//! - **Frame.** A frame of `frame` (5, 8, 10, 12.5 or 20 ms) holds ⌊frame / T_s⌋ OFDMA symbols of
//!   duration `symbol` (T_s); one symbol's time is the TTG + RTG gaps; the rest is split DL:UL by
//!   `dl_ul`. The DL subframe comes first, then the TTG, then the UL subframe. Each subframe
//!   loses `dl_overhead_symbols` / `ul_overhead_symbols` to the preamble, FCH and MAPs (DL) and
//!   the ranging / CQI / ACK region (UL); the remaining symbols carry `rate × T_s` bits each.
//! - **Requests.** A station reports its backlog (bytes plus `mac_overhead` per PDU) whenever
//!   it changes. The grants of frame k+1 are computed from the backlogs as they stand when frame
//!   k+1 begins, so a packet that arrives in frame k (an rtPS request, unicast-polled every
//!   frame) is served in frame k+1 at the earliest.
//! - **Grants.** The medium's grant policy (`grants`, [`grants`]) divides the subframe's
//!   capacity among the stations' queues: `"rtps_priority"` (default) serves rtPS queues
//!   first and nrtPS queues from the capacity left, `"round_robin"` (the WiMAX paper's Sec.
//!   3.1) all queues alike; within what a policy shares, max-min fair shares (each queue gets
//!   min(demand, equal share of what is left), repeated until nothing is left or every demand
//!   is met); leftover bytes of the integer division go one each to queues in round-robin
//!   order from a pointer that advances every frame, and bursts are laid out back to back in
//!   that order.
//! - **Bursts.** A station sends inside its burst at `rate` while it has grant left; a PDU that
//!   starts with grant left is sent whole (one SDU per PDU, no fragmentation), and what it
//!   takes beyond the grant is taken from the station's next grant, so the long-run share is
//!   exact and a burst overruns its grant by less than one PDU.
//!
//! The medium has no events of its own: a station with a backlog and no grant asks again at
//! the next frame's start (one port wake-up per backlogged station per frame); an idle medium
//! costs nothing.
//!
//! Not modelled: HARQ, ARQ, AMC (the modulation is fixed), ranging, contention and
//! bandwidth-request collisions (every station is polled every frame), subchannel geometry of
//! bursts (a burst is a share of the subframe's time), UGS/ertPS/BE, fragmentation and packing.

pub mod grants;

use super::{BuildChannel, Channel, ChannelCtx, LinkDir, LinkPhy, Share};
use grants::{GrantPolicy, GrantsConfig, QueueView};
use crate::queue::Backlog;
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The frame durations 802.16e OFDMA allows that the model supports, in µs.
pub const FRAMES_US: [u64; 5] = [5_000, 8_000, 10_000, 12_500, 20_000];

/// A station's scheduling service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceClass {
    /// Real-time polling service: served first.
    #[default]
    Rtps,
    /// Non-real-time polling service: served from the capacity rtPS leaves.
    Nrtps,
}

/// `kind = "wimax"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WimaxConfig {
    /// The base station's medium: every link naming it is one of its stations.
    pub medium: String,
    /// TDD frame duration: `"5ms"`, `"8ms"`, `"10ms"`, `"12.5ms"` or `"20ms"` (default 5 ms).
    #[serde(with = "serde_units::time", default = "default_frame")]
    pub frame: Dur,
    /// The DL:UL split of the frame's symbols, as `"D:U"` with positive integers (default
    /// `"1:3"`, the paper's uplink-favouring split).
    #[serde(default = "default_split")]
    pub dl_ul: String,
    /// OFDMA symbol time including the cyclic prefix (default 136 µs: 7 MHz, sampling factor
    /// 8/7, 1024-point FFT, guard 1/16; see `docs/models/wimax.md`).
    #[serde(with = "serde_units::time", default = "default_symbol")]
    pub symbol: Dur,
    /// Symbols of each DL subframe taken by the preamble, FCH, DL-MAP and UL-MAP (default 3).
    #[serde(default = "three")]
    pub dl_overhead_symbols: u32,
    /// Symbols of each UL subframe taken by ranging, CQICH and ACK regions (default 3).
    #[serde(default = "three")]
    pub ul_overhead_symbols: u32,
    /// Bytes each PDU adds on the air: generic MAC header (6 B) and CRC-32 (4 B) (default 10).
    #[serde(default = "ten")]
    pub mac_overhead: u32,
    /// The service class of this station's connection (default `"rtps"`). A station with both
    /// classes is two links between the same nodes (two connections), each with its own queue.
    #[serde(default)]
    pub class: ServiceClass,
    /// How the base station divides each frame among its stations' queues (every station of a
    /// medium must say the same): `"rtps_priority"` (default: rtPS before nrtPS, IEEE 802.16
    /// §6.3.5's order) or `"round_robin"` (every queue alike, the WiMAX paper's Sec. 3.1).
    #[serde(default, deserialize_with = "grants::deserialize_grants")]
    #[schemars(schema_with = "GrantsConfig::name_or_table_schema")]
    pub grants: GrantsConfig,
}

fn default_frame() -> Dur {
    Dur::from_millis(5)
}
fn default_split() -> String {
    "1:3".into()
}
fn default_symbol() -> Dur {
    Dur::from_micros(136)
}
fn three() -> u32 {
    3
}
fn ten() -> u32 {
    10
}

/// The largest packet (SDU) a WiMAX link carries, in bytes (the paper's Table 1).
pub const MAX_SDU_BYTES: u32 = 1024;

impl WimaxConfig {
    /// A station of `medium` with every other key at its default.
    pub fn new(medium: &str) -> Self {
        WimaxConfig {
            medium: medium.into(),
            frame: default_frame(),
            dl_ul: default_split(),
            symbol: default_symbol(),
            dl_overhead_symbols: 3,
            ul_overhead_symbols: 3,
            mac_overhead: 10,
            class: ServiceClass::Rtps,
            grants: GrantsConfig::default(),
        }
    }

    fn split(&self) -> Option<(u64, u64)> {
        let (d, u) = self.dl_ul.split_once(':')?;
        let (d, u) = (d.trim().parse::<u64>().ok()?, u.trim().parse::<u64>().ok()?);
        (d > 0 && u > 0 && d <= 1000 && u <= 1000).then_some((d, u))
    }

    /// The frame layout this config gives at PHY rate `rate`.
    ///
    /// # Panics
    /// On a config that [`BuildChannel::validate`] rejects.
    pub fn layout(&self, rate: Rate) -> Layout {
        let (d, u) = self.split().expect("dl_ul validated");
        let ts = self.symbol.0;
        let n = self.frame.0 / ts - 1; // one symbol's time for TTG + RTG
        let dl = (n * d + (d + u) / 2) / (d + u);
        let ul = n - dl;
        // Bits per symbol, to the nearest bit (a rate given to a few digits, like 10.588 Mbit/s
        // for 1440 bits per 136 µs, still gives whole symbols).
        let bits = (rate.0 as u128 * ts as u128 + 500_000_000) / 1_000_000_000;
        let cap = |sym: u64, over: u32| (sym - over as u64) as u128 * bits / 8;
        Layout {
            frame: self.frame.0,
            dl: Sub { data_start: self.dl_overhead_symbols as u64 * ts, cap: cap(dl, self.dl_overhead_symbols) as u64 },
            ul: Sub {
                data_start: (dl + 1 + self.ul_overhead_symbols as u64) * ts,
                cap: cap(ul, self.ul_overhead_symbols) as u64,
            },
            dl_symbols: dl,
            ul_symbols: ul,
        }
    }

    /// The profile every station of a medium must share (for the check in
    /// [`super::check_shares`]).
    fn profile(&self) -> String {
        format!(
            "dl_ul {} symbol {}ns overheads {}/{} symbols grants {}",
            self.dl_ul,
            self.symbol.0,
            self.dl_overhead_symbols,
            self.ul_overhead_symbols,
            self.grants.kind()
        )
    }
}

/// One subframe's data region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sub {
    /// Offset of the first data symbol into the frame, in ns.
    pub data_start: u64,
    /// Bytes the data region carries per frame.
    pub cap: u64,
}

/// A frame's layout: symbols and per-frame capacity of each direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub frame: u64,
    pub dl: Sub,
    pub ul: Sub,
    pub dl_symbols: u64,
    pub ul_symbols: u64,
}

impl BuildChannel for WimaxConfig {
    fn build(&self, cx: &ChannelCtx) -> Option<Box<dyn Channel>> {
        let layout = self.layout(cx.phy.rate);
        let sub = match cx.dir {
            LinkDir::Ab => layout.ul,
            LinkDir::Ba => layout.dl,
        };
        let key = format!("{}:{:?}", self.medium, cx.dir);
        let sched = match cx.media {
            Some(m) => m.shared(&key, || Sched::new(layout.frame, sub, self.grants.config().build())),
            None => Arc::new(Mutex::new(Sched::new(layout.frame, sub, self.grants.config().build()))),
        };
        let id = sched.lock().expect("single-threaded").join(self.class);
        Some(Box::new(Wimax { rate: cx.phy.rate, delay: cx.phy.delay, overhead: self.mac_overhead as u64, sched, id }))
    }

    fn validate(&self, phy: LinkPhy) -> Result<(), (&'static str, String)> {
        if self.medium.is_empty() {
            return Err(("medium", "must not be empty".into()));
        }
        if !FRAMES_US.iter().any(|&f| Dur::from_micros(f) == self.frame) {
            return Err(("frame", format!("{} is not an 802.16e OFDMA frame: 5, 8, 10, 12.5 or 20 ms", super::ms(self.frame))));
        }
        if self.split().is_none() {
            return Err(("dl_ul", format!("expected \"D:U\" with integers 1..=1000, like \"1:3\", got {:?}", self.dl_ul)));
        }
        if self.symbol.0 < 1_000 || self.symbol.0.saturating_mul(8) > self.frame.0 {
            return Err(("symbol", format!("{}ns: must be at least 1 µs and at most an eighth of the frame", self.symbol.0)));
        }
        if self.mac_overhead > 1024 {
            return Err(("mac_overhead", format!("{} B: at most 1024", self.mac_overhead)));
        }
        if phy.rate.0 as u128 * (self.symbol.0 as u128) < 8_000_000_000 {
            return Err(("symbol", "the link's rate carries less than a byte per symbol".into()));
        }
        let (d, u) = self.split().expect("checked above");
        let n = self.frame.0 / self.symbol.0 - 1;
        let dl = (n * d + (d + u) / 2) / (d + u);
        if dl <= self.dl_overhead_symbols as u64 {
            return Err(("dl_overhead_symbols", format!("{} leaves no data symbol in a {dl}-symbol DL subframe", self.dl_overhead_symbols)));
        }
        if n - dl <= self.ul_overhead_symbols as u64 {
            return Err(("ul_overhead_symbols", format!("{} leaves no data symbol in a {}-symbol UL subframe", self.ul_overhead_symbols, n - dl)));
        }
        Ok(())
    }

    fn shares(&self) -> Vec<Share<'_>> {
        // No fixed slots (grants follow demand): an empty claim, for the frame check and the
        // profile every station of the medium must share.
        vec![Share { medium: &self.medium, frame: self.frame, field: "frame", start: Dur(0), end: Dur(0), profile: Some(self.profile()) }]
    }

    fn max_packet(&self) -> Option<u32> {
        Some(MAX_SDU_BYTES)
    }
}

/// A station of one direction, as the scheduler sees it.
#[derive(Clone, Debug)]
struct Station {
    class: ServiceClass,
    /// Backlog in bytes on the air (payload + MAC overhead per PDU), as last reported.
    demand: u64,
    /// Grant of the current frame: burst `[start, end)` in absolute ns, bytes left (negative:
    /// overdrawn by a PDU that started with grant left).
    start: u64,
    end: u64,
    left: i64,
    /// Frame index of that grant.
    frame: u64,
}

/// The base station's scheduler for one direction of a medium.
#[derive(Debug)]
pub struct Sched {
    frame: u64,
    sub: Sub,
    policy: Box<dyn GrantPolicy>,
    stations: Vec<Station>,
    /// The frame whose grants were computed last (`u64::MAX`: none yet).
    settled: u64,
    /// Round-robin pointer: the station that comes first in the next frame.
    rr: usize,
}

impl Sched {
    fn new(frame: u64, sub: Sub, policy: Box<dyn GrantPolicy>) -> Self {
        Sched { frame, sub, policy, stations: Vec::new(), settled: u64::MAX, rr: 0 }
    }

    fn join(&mut self, class: ServiceClass) -> usize {
        self.stations.push(Station { class, demand: 0, start: 0, end: 0, left: 0, frame: u64::MAX });
        self.stations.len() - 1
    }

    /// Computes the grants of the frame holding `now` if they are not yet, from the demands as
    /// they stand (all reported before this frame began: every station operation settles
    /// first).
    fn settle(&mut self, now: SimTime) {
        let k = now.0 / self.frame;
        if self.settled != u64::MAX && k <= self.settled {
            return;
        }
        self.settled = k;
        let n = self.stations.len();
        let order: Vec<usize> = (0..n).map(|i| (self.rr + i) % n).collect();
        let queues: Vec<QueueView> =
            self.stations.iter().map(|s| QueueView { class: s.class, demand: s.demand }).collect();
        let grant = self.policy.divide(self.sub.cap, &order, &queues);
        assert!(
            grant.len() == n
                && grant.iter().sum::<u64>() <= self.sub.cap
                && grant.iter().zip(&queues).all(|(g, q)| *g <= q.demand),
            "frame {k}: grant policy {:?} gave {grant:?} for demands {queues:?} and capacity {}",
            self.policy,
            self.sub.cap
        );
        // Bursts back to back from the data region's start, in round-robin order, at the
        // direction's rate: their times follow from the bytes (set in `Wimax::ready_at`, which
        // knows the rate); here only offsets in bytes.
        let base = k * self.frame + self.sub.data_start;
        let mut off = 0u64;
        for &i in &order {
            let s = &mut self.stations[i];
            let debt = if s.frame != u64::MAX && s.left < 0 { s.left } else { 0 };
            s.left = grant[i] as i64 + debt;
            s.start = base + off; // bytes offset; converted to time by the caller
            s.end = base + off + grant[i];
            s.frame = k;
            off += grant[i];
        }
        if n > 0 {
            self.rr = (self.rr + 1) % n;
        }
    }
}

/// One station's direction of a WiMAX medium.
pub struct Wimax {
    rate: Rate,
    delay: Dur,
    overhead: u64,
    sched: Arc<Mutex<Sched>>,
    id: usize,
}

impl Wimax {
    /// The burst `[start, end)` of this station in the current grant, in absolute ns, and its
    /// bytes left.
    fn burst(&self, s: &Sched) -> (u64, u64, i64, u64) {
        let st = &s.stations[self.id];
        let base = st.frame * s.frame + s.sub.data_start;
        let t = |b: u64| base + self.rate.tx_time(b - base).0;
        (t(st.start), t(st.end), st.left, st.frame)
    }
}

impl Channel for Wimax {
    fn rate(&self) -> Rate {
        self.rate
    }
    fn rate_at(&self, now: SimTime) -> Rate {
        let s = self.sched.lock().expect("single-threaded");
        let (a, b, left, k) = self.burst(&s);
        if k == now.0 / s.frame && left > 0 && (a..b).contains(&now.0) {
            self.rate
        } else {
            Rate(0)
        }
    }
    fn ready_at(&mut self, now: SimTime) -> SimTime {
        let mut s = self.sched.lock().expect("single-threaded");
        s.settle(now);
        let (a, b, left, k) = self.burst(&s);
        if k == now.0 / s.frame && left > 0 && now.0 < b {
            return SimTime(now.0.max(a));
        }
        // No grant left in this frame: the next frame's grants are decided at its start.
        SimTime((now.0 / s.frame + 1) * s.frame)
    }
    fn tx_end(&mut self, start: SimTime, bytes: u64) -> SimTime {
        let air = bytes + self.overhead;
        let mut s = self.sched.lock().expect("single-threaded");
        let st = &mut s.stations[self.id];
        st.left -= air as i64;
        start + self.rate.tx_time(air)
    }
    fn delay(&self) -> Dur {
        self.delay
    }
    fn backlog_changed(&mut self, now: SimTime, backlog: Backlog) {
        let mut s = self.sched.lock().expect("single-threaded");
        s.settle(now);
        s.stations[self.id].demand = backlog.bytes + backlog.packets * self.overhead;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATE: Rate = Rate(10_588_235);

    #[test]
    fn layout_of_the_default_profile() {
        // 5 ms / 136 µs = 36 symbols, one for the gaps: 35 = 9 DL + 26 UL at 1:3.
        let l = WimaxConfig::new("m").layout(RATE);
        assert_eq!((l.dl_symbols, l.ul_symbols), (9, 26));
        // 1440 bits (180 B) per symbol, 23 UL data symbols.
        assert_eq!(l.ul.cap, 23 * 180);
        assert_eq!(l.dl.cap, 6 * 180);
        assert_eq!(l.ul.data_start, (9 + 1 + 3) * 136_000);
    }

    #[test]
    fn validation_names_the_key() {
        let phy = LinkPhy { rate: RATE, delay: Dur::from_millis(1) };
        let mut c = WimaxConfig::new("m");
        assert_eq!(c.validate(phy), Ok(()));
        c.frame = Dur::from_millis(6);
        assert_eq!(c.validate(phy).unwrap_err().0, "frame");
        c.frame = Dur::from_micros(12_500);
        assert_eq!(c.validate(phy), Ok(()));
        c.dl_ul = "1-3".into();
        assert_eq!(c.validate(phy).unwrap_err().0, "dl_ul");
        c.dl_ul = "0:3".into();
        assert_eq!(c.validate(phy).unwrap_err().0, "dl_ul");
        c.dl_ul = "1:30".into();
        c.dl_overhead_symbols = 5;
        assert_eq!(c.validate(phy).unwrap_err().0, "dl_overhead_symbols");
        let c = WimaxConfig { medium: String::new(), ..WimaxConfig::new("m") };
        assert_eq!(c.validate(phy).unwrap_err().0, "medium");
    }

    /// Max-min fair grants: rtPS first, nrtPS from what is left, demands capped.
    #[test]
    fn grants_are_max_min_fair_rtps_first() {
        let sub = Sub { data_start: 0, cap: 1000 };
        let mut s = Sched::new(5_000_000, sub, GrantsConfig::default().config().build());
        let ids: Vec<usize> = [ServiceClass::Rtps, ServiceClass::Rtps, ServiceClass::Nrtps, ServiceClass::Nrtps]
            .into_iter()
            .map(|c| s.join(c))
            .collect();
        for (i, d) in ids.iter().zip([100u64, 5000, 5000, 50]) {
            s.stations[*i].demand = d;
        }
        s.settle(SimTime(0));
        let g: Vec<i64> = s.stations.iter().map(|st| st.left).collect();
        // rtPS: 100 and 900 (max-min); nothing left for nrtPS.
        assert_eq!(g, vec![100, 900, 0, 0]);
        s.stations[1].demand = 300;
        s.settle(SimTime(5_000_000));
        let g: Vec<i64> = s.stations.iter().map(|st| st.left).collect();
        // 400 to rtPS, 600 left: 50 to the small nrtPS station, 550 to the other.
        assert_eq!(g, vec![100, 300, 550, 50]);
        assert_eq!(g.iter().sum::<i64>(), 1000);
    }
}
