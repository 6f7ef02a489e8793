//! A reservation-aware guaranteed-rate scheduler: the TFD-capable router port, also used for
//! RSVP (static) reservations.
//!
//! Reserved flows each get a FIFO queue served at no less than their reserved rate; everything
//! else shares one drop-tail best-effort queue. Reservations come from two places:
//! - the TFD IP option of arriving packets (`read_option = true`): rate =
//!   `8 · Next Data / Next Time · (1 + headroom)`, replaced by every newer option of the flow
//!   (so it follows each horizon), released when no option arrived within `hold · Next Time`;
//! - signalling at the node (the RSVP agent, [`crate::agent::rsvp`], through the
//!   [`Reservations`] capability): a fixed rate with a soft-state expiry time, released on
//!   PathTear or when not refreshed.
//!
//! Flows are told apart by header fields only: per-flow state is keyed by the 5-tuple
//! ([`FlowKeyKind::FiveTuple`]), the key an RSVP filter spec names, never by the simulator's
//! flow index. Two flows between the same hosts with different ports are two flows; an RSVP
//! message (protocol 46) is not part of the flow it signals for and waits as best effort.
//!
//! Scheduling is Self-Clocked Fair Queueing (SCFQ), with each reserved flow weighted by its
//! rate and best effort by the unreserved rest of the link, `C − Σ r`:
//! a packet of class i arriving to the scheduler gets the finish tag
//! `F = max(F_prev(i), v) + L / r_i`, where `v` is the tag of the packet last chosen for
//! service; the smallest tag is served next, equal tags in arrival order (a reserved flow
//! before best effort; never by 5-tuple, so no flow gains by its addresses or ports); `v` and
//! the tags restart at 0 when the port goes idle. SCFQ is work-conserving, so bandwidth a
//! reserved flow does not use goes to best effort (and to other backlogged flows) in proportion
//! to the weights; and since Σ weights = C, a backlogged reserved flow receives at least its
//! rate, within SCFQ's latency term (one maximum packet per backlogged class).
//!
//! `scheduler = "reserved_rate"` replaces SCFQ by a plain reserved-rate scheduler: rate-controlled
//! static priority (RCSP, Zhang & Ferrari 1993) with a rate-jitter regulator per reserved flow
//! and one priority level for all reservations above best effort. The regulator is a
//! VirtualClock (Zhang 1990) used for eligibility: packet k of a flow with rate r becomes
//! eligible at `S_k = max(a_k, F_{k−1})`, `F_k = S_k + L_k / r` (real time, arrival-based, so a
//! flow idle for a while earns no credit, and a packet served late does not delay the next
//! one's slot). Eligible packets go in order of `S` (ties by arrival), before best effort; best
//! effort (one FIFO) gets the link whenever no reserved packet is eligible. So each reservation
//! is served at exactly its rate, never faster, whatever is idle, and unused reservation is
//! never given to another reservation. With `lend_idle = true` best effort takes everything the
//! reservations do not (their idle share too); with `lend_idle = false` best effort is spaced to
//! `C − Σ r` as under SCFQ, so every class is held to its own rate (a strict partition; the
//! link idles). Not preemptive: an eligible reserved packet waits for at most the packet on the
//! wire.
//!
//! Reading list:
//! - L. Zhang, "VirtualClock: a new traffic control algorithm for packet switching networks",
//!   ACM SIGCOMM 1990; H. Zhang, D. Ferrari, "Rate-controlled static-priority queueing", IEEE
//!   INFOCOM 1993 (the `reserved_rate` scheduler's regulator and priority class).
//! - S. J. Golestani, "A self-clocked fair queueing scheme for broadband applications",
//!   IEEE INFOCOM 1994 (the tag rule and `v`).
//! - P. Goyal, S. S. Lam, H. M. Vin, "Determining end-to-end delay bounds in heterogeneous
//!   networks", NOSSDAV 1995: SCFQ belongs to the Guaranteed Rate class.
//! - RFC 2212 (Guaranteed service) for what a reservation of rate R promises.
//! - Chodorek & Chodorek, TFD paper §III (`shared/papers/tfd-dynamic-qos-hd-video.txt`) and
//!   draft-chodorek-traffic-flow-option: Next Data / Next Time as the rate of forthcoming
//!   traffic; constant or variable horizons.
//!
//! Cost per packet: O(1) to look the flow up (a hash map from key to a dense slot index, with
//! a fixed non-random hasher, used for lookups only and never iterated), O(log n) heap
//! operations over the *backlogged* classes and over reservations whose expiry is due; no scan
//! of all flows.
//!
//! Policing (`police = true`, RFC 2211 §"Policing", RFC 2212 §"Policing"): a signalled (RSVP)
//! reservation carries its Tspec token bucket (r, b); the port checks each of the flow's
//! packets against it (tokens fill at r up to b bytes; a packet that finds fewer tokens than
//! its size does not conform) and forwards a non-conforming packet as best effort, in the
//! best-effort queue, instead of queueing it in the reserved class. Every port that holds the
//! reservation polices (per hop, as RFC 2211 asks of each network element; RFC 2212 polices
//! at the edge and reshapes inside, not modelled). TFD reservations are not policed: the
//! announcement is the reservation. With `police = false` (the default) a flow's excess
//! queues in its own buffer and is served only from spare capacity.
//!
//! Not modelled: the flags M, L, S, E and the B/F accuracy hint are not used to scale the
//! reservation (every source is trusted alike); the Tspec's peak rate p and the policed unit
//! m / maximum packet size M;
//! no delay bound per flow (SCFQ's latency grows with the number of classes); admission
//! control refuses a request outright and sends no error back (the flow keeps its previous
//! reservation, or stays best effort); IPv6 options are read the same way as IPv4 ones.

use super::{Backlog, Build, BuildCtx, FlowKey, FlowKeyKind, QueueCtx, QueueDisc, Reservation, Reservations, Verdict};
use crate::ip::tfd::TfdOption;
use crate::packet::{Packet, PacketData};
use crate::time::SimTime;
use crate::units::{serde_units, Limit, Rate};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

// The checked form of the scenario keys; they are documented on `TfdConfigFields`, from which
// the scenario schema and docs/scenarios.md are generated.
/// `kind = "tfd"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(try_from = "TfdConfigFields")]
pub struct TfdConfig {
    /// Reserve from the TFD option of arriving packets.
    pub read_option: bool,
    /// Fraction added to the announced rate, ≥ 0.
    pub headroom: f64,
    /// A TFD reservation is released after `hold · Next Time` without a newer option.
    pub hold: f64,
    /// Admission control's share of the link rate, in (0, 1).
    pub max_reserved_share: f64,
    /// Best-effort buffer.
    #[serde(with = "serde_units::limit")]
    pub limit: Limit,
    /// Buffer of each reserved flow.
    #[serde(with = "serde_units::limit")]
    pub flow_limit: Limit,
    /// Lend reserved capacity left idle to best effort.
    pub lend_idle: bool,
    /// Police signalled (RSVP) reservations against their Tspec token bucket.
    pub police: bool,
    /// How the reservations are served.
    pub scheduler: TfdScheduler,
}

/// How a [`Tfd`] port serves its reservations (`scheduler = "scfq"` or `"reserved_rate"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TfdScheduler {
    /// Self-clocked fair queueing (Golestani 1994), work-conserving: a reserved flow gets at
    /// least its rate, and spare capacity is shared among the backlogged classes by weight.
    #[default]
    Scfq,
    /// Rate-controlled static priority (Zhang & Ferrari 1993) with one priority level for all
    /// reservations: each reserved flow passes a rate-jitter regulator (its packet becomes
    /// eligible at its VirtualClock start time) and is never served faster than its rate;
    /// eligible reserved packets go before best effort, which gets what is left.
    ReservedRate,
}

/// The raw fields of [`TfdConfig`], checked by `TryFrom` so that a bad value is a scenario error
/// at `links[k].queue`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TfdConfigFields {
    /// Read the TFD option of arriving packets and reserve from it (default `true`). With
    /// `false` the port only honours signalled (RSVP) reservations.
    #[serde(default = "yes")]
    read_option: bool,
    /// Fraction added to the announced rate, ≥ 0 (default 0.1, i.e. 10 %).
    #[serde(default = "default_headroom")]
    headroom: f64,
    /// A TFD reservation is released when no newer option arrived within `hold · Next Time`;
    /// > 0 (default 2.5: one lost or late refresh is tolerated).
    #[serde(default = "default_hold")]
    hold: f64,
    /// Admission control: the sum of reservations may not exceed this share of the link rate,
    /// in (0, 1) (default 0.9). A request that would exceed it is refused.
    #[serde(default = "default_share")]
    max_reserved_share: f64,
    /// Best-effort buffer, packets (`"1000p"`, the default) or bytes.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    limit: Limit,
    /// Buffer of each reserved flow (default `"2MB"`). A flow reserved from a TFD option may
    /// always queue up to its announced Next Data (× (1 + headroom)) even above this: a flow
    /// that keeps its announcement never has more than that waiting.
    #[serde(with = "serde_units::limit", default = "default_flow_limit")]
    flow_limit: Limit,
    /// Lend reserved capacity that its flow leaves idle to best effort (default `true`: SCFQ,
    /// work-conserving). With `false` best effort never gets more than the unreserved
    /// `C − Σ r`: its packets are spaced `L / (C − Σ r)` apart (a virtual-clock shaper with
    /// one packet of credit), and the link idles rather than lend an idle reservation
    /// (reserved flows may still use what best effort leaves). A hard partition, as a router
    /// that sets reserved capacity aside.
    #[serde(default = "yes")]
    lend_idle: bool,
    /// Police signalled (RSVP) reservations against their Tspec token bucket (r = the reserved
    /// rate, b = the RESV's bucket depth) and forward non-conforming packets as best effort
    /// (RFC 2211/2212); default `false` (the excess queues in the flow's reserved buffer).
    /// Every port holding the reservation polices; TFD reservations are not policed.
    #[serde(default)]
    police: bool,
    /// How reservations are served (default `"scfq"`). `"scfq"`: self-clocked fair queueing,
    /// a reserved flow gets at least its rate and shares spare capacity by weight.
    /// `"reserved_rate"`: each reserved flow is served at exactly its rate, never faster (a
    /// VirtualClock rate regulator per flow in front of one priority class above best effort,
    /// RCSP); unused reservation is never given to another reservation; best effort gets what
    /// is left (with `lend_idle = false` at most `C − Σ r`).
    #[serde(default)]
    scheduler: TfdScheduler,
}

fn yes() -> bool {
    true
}
fn default_headroom() -> f64 {
    0.1
}
fn default_hold() -> f64 {
    2.5
}
fn default_share() -> f64 {
    0.9
}
fn default_limit() -> Limit {
    Limit::Packets(1000)
}
fn default_flow_limit() -> Limit {
    Limit::Bytes(2_000_000)
}

impl TryFrom<TfdConfigFields> for TfdConfig {
    type Error = String;
    fn try_from(f: TfdConfigFields) -> Result<Self, String> {
        if !(f.headroom.is_finite() && f.headroom >= 0.0) {
            return Err(format!("headroom: must be a non-negative number, got {}", f.headroom));
        }
        if !(f.hold.is_finite() && f.hold > 0.0) {
            return Err(format!("hold: must be positive, got {}", f.hold));
        }
        if !(f.max_reserved_share > 0.0 && f.max_reserved_share < 1.0) {
            return Err(format!(
                "max_reserved_share: must be in (0, 1) so best effort keeps a share, got {}",
                f.max_reserved_share
            ));
        }
        Ok(TfdConfig {
            read_option: f.read_option,
            headroom: f.headroom,
            hold: f.hold,
            max_reserved_share: f.max_reserved_share,
            limit: f.limit,
            flow_limit: f.flow_limit,
            lend_idle: f.lend_idle,
            police: f.police,
            scheduler: f.scheduler,
        })
    }
}

impl Default for TfdConfig {
    fn default() -> Self {
        TfdConfig {
            read_option: true,
            headroom: default_headroom(),
            hold: default_hold(),
            max_reserved_share: default_share(),
            limit: default_limit(),
            flow_limit: default_flow_limit(),
            lend_idle: true,
            police: false,
            scheduler: TfdScheduler::Scfq,
        }
    }
}

/// Cumulative counters of the reservation table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TfdStats {
    /// Reservations installed or changed (TFD options and RSVP requests that changed the rate).
    pub granted: u64,
    /// Requests refused by admission control.
    pub refused: u64,
    /// Reservations released because they were not refreshed in time.
    pub expired: u64,
    /// Reservations released explicitly (Next Data = 0, RSVP teardown).
    pub removed: u64,
    /// Packets of a policed reservation that did not conform to its token bucket and went to
    /// best effort.
    pub nonconforming: u64,
}

/// Class id of best effort in the scheduling heap.
const BE: u32 = u32::MAX;
/// Best effort's tie-break rank: on equal tags it sorts after every reserved flow (a class
/// rule: reserved traffic first; never a flow's key).
const BE_RANK: u64 = u64::MAX;

struct FlowSlot {
    /// The 5-tuple this slot holds state for.
    key: FlowKey,
    /// Reserved rate, bits/s; 0 = no reservation (new packets go to best effort).
    rate_bps: u64,
    expires: SimTime,
    in_expiry_heap: bool,
    /// Queued packets: (tag, arrival number, packet).
    q: VecDeque<(u64, u64, Packet)>,
    bytes: u64,
    /// Bytes the last TFD option announced for the horizon (with headroom); 0 for RSVP.
    announced_bytes: u64,
    /// Finish tag of the flow's last packet, valid in busy period `epoch`.
    last_finish: u64,
    epoch: u64,
    /// The Tspec token bucket of a policed (signalled) reservation; `None`: not policed.
    bucket: Option<TokenBucket>,
}

/// A Tspec token bucket (RFC 2210 §3.1, RFC 2212 §"Policing"): tokens, in bytes, fill at the
/// reserved rate up to `depth`; a packet conforms if it finds at least its size in tokens.
#[derive(Clone, Copy, Debug)]
struct TokenBucket {
    depth: f64,
    tokens: f64,
    at: SimTime,
}

impl TokenBucket {
    /// Whether a packet of `size` bytes arriving at `now` conforms to (r = `rate_bps`, b);
    /// if so its tokens are taken.
    fn conforms(&mut self, size: u32, rate_bps: u64, now: SimTime) -> bool {
        let dt = now.0.saturating_sub(self.at.0) as f64 * 1e-9;
        self.tokens = (self.tokens + dt * rate_bps as f64 / 8.0).min(self.depth);
        self.at = now;
        if self.tokens >= size as f64 {
            self.tokens -= size as f64;
            true
        } else {
            false
        }
    }
}

/// The discipline. See the module docs.
pub struct Tfd {
    cfg: TfdConfig,
    link_bps: u64,
    /// Per-flow state, in the order flows were first reserved; a slot is never freed, so its
    /// index is stable and names the flow's class in the heaps.
    flows: Vec<FlowSlot>,
    /// Slot of each key that ever held a reservation. Lookups only: never iterated, so the
    /// hasher's order cannot reach the results.
    index: FxHashMap<FlowKey, u32>,
    be: VecDeque<(u64, Packet)>,
    be_bytes: u64,
    be_last_finish: u64,
    be_epoch: u64,
    /// With `lend_idle = false`: the earliest time best effort may start its next packet.
    be_ready: SimTime,
    /// Sum of the reserved rates, bits/s.
    reserved_bps: u64,
    /// One entry per backlogged class: (tag of its head packet, rank, class). Equal tags break
    /// by the rank: the head packet's arrival number for a reserved flow (the packet that came
    /// first goes first: no flow gains by its 5-tuple or its slot), [`BE_RANK`] for best effort.
    sched: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Packets offered to a reserved flow's queue so far: the next one's arrival number.
    arrivals: u64,
    /// At most one entry per reserved flow: (expiry it had when pushed, slot).
    expiry: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// SCFQ system virtual time: the tag of the packet last chosen for service.
    v: u64,
    epoch: u64,
    backlog: Backlog,
    pub stats: TfdStats,
}

impl Tfd {
    /// # Panics
    /// If `link` is zero (scenario validation rejects zero rates).
    pub fn new(cfg: TfdConfig, link: Rate) -> Self {
        assert!(link.bps() > 0, "tfd: link rate must be positive");
        Tfd {
            cfg,
            link_bps: link.bps(),
            flows: Vec::new(),
            index: FxHashMap::default(),
            be: VecDeque::new(),
            be_bytes: 0,
            be_last_finish: 0,
            be_epoch: 0,
            be_ready: SimTime::ZERO,
            reserved_bps: 0,
            sched: BinaryHeap::new(),
            arrivals: 0,
            expiry: BinaryHeap::new(),
            v: 0,
            epoch: 0,
            backlog: Backlog::default(),
            stats: TfdStats::default(),
        }
    }

    /// The reservation the flow with 5-tuple `key` holds now, if any (expired ones are
    /// released lazily, on the next packet or request after their expiry).
    pub fn reserved_rate(&self, key: FlowKey) -> Option<Rate> {
        self.find(key).map(|i| &self.flows[i as usize]).filter(|s| s.rate_bps > 0).map(|s| Rate(s.rate_bps))
    }

    /// Packets waiting in `key`'s own queue (not counting its best-effort packets).
    pub fn queued_pkts(&self, key: FlowKey) -> usize {
        self.find(key).map_or(0, |i| self.flows[i as usize].q.len())
    }

    /// Sum of all reservations.
    pub fn reserved_total(&self) -> Rate {
        Rate(self.reserved_bps)
    }

    #[inline]
    fn find(&self, key: FlowKey) -> Option<u32> {
        self.index.get(&key).copied()
    }

    /// The slot of `key`, created on first use.
    fn slot(&mut self, key: FlowKey) -> u32 {
        let next = self.flows.len() as u32;
        let i = *self.index.entry(key).or_insert(next);
        if i == next {
            assert!(next < BE, "tfd: more than 2^32 - 1 reserved flows");
            self.flows.push(FlowSlot {
                key,
                rate_bps: 0,
                expires: SimTime::ZERO,
                in_expiry_heap: false,
                q: VecDeque::new(),
                bytes: 0,
                announced_bytes: 0,
                last_finish: 0,
                epoch: 0,
                bucket: None,
            });
        }
        i
    }

    /// Installs, changes or refreshes `key`'s reservation, subject to admission control.
    /// Returns the flow's slot if it has one.
    fn request(&mut self, key: FlowKey, rate_bps: u64, expires: SimTime) -> Option<u32> {
        if rate_bps == 0 {
            let i = self.find(key)?;
            self.release(i, false);
            return Some(i);
        }
        let cap = (self.cfg.max_reserved_share * self.link_bps as f64) as u64;
        let i = self.find(key);
        let held = i.map_or(0, |i| self.flows[i as usize].rate_bps);
        let total = self.reserved_bps - held + rate_bps;
        if total > cap {
            // Refused: a flow that already holds a reservation keeps it (and is kept alive by
            // this request, which shows the flow is still there).
            self.stats.refused += 1;
            if held == 0 {
                return i;
            }
        }
        // Refused requests that reach here come from a flow holding a reservation: it has a slot.
        let i = match i {
            Some(i) => i,
            None => self.slot(key),
        };
        if total <= cap {
            if held != rate_bps {
                self.stats.granted += 1;
            }
            self.reserved_bps = total;
            self.flows[i as usize].rate_bps = rate_bps;
        }
        let s = &mut self.flows[i as usize];
        s.expires = expires;
        if !s.in_expiry_heap {
            s.in_expiry_heap = true;
            self.expiry.push(Reverse((expires, i)));
        }
        Some(i)
    }

    fn release(&mut self, slot: u32, expired: bool) {
        let s = &mut self.flows[slot as usize];
        if s.rate_bps == 0 {
            return;
        }
        self.reserved_bps -= s.rate_bps;
        s.rate_bps = 0;
        s.bucket = None;
        // Packets already in the flow's queue keep their tags and drain; new ones go to best
        // effort.
        if expired {
            self.stats.expired += 1;
        } else {
            self.stats.removed += 1;
        }
    }

    /// Releases reservations whose expiry has passed. Entries whose reservation was refreshed
    /// are re-filed at the new expiry, so each reservation has at most one heap entry.
    fn expire(&mut self, now: SimTime) {
        while let Some(&Reverse((t, slot))) = self.expiry.peek() {
            if t > now {
                break;
            }
            self.expiry.pop();
            let s = &mut self.flows[slot as usize];
            if s.rate_bps == 0 {
                s.in_expiry_heap = false;
            } else if s.expires > now {
                self.expiry.push(Reverse((s.expires, slot)));
            } else {
                s.in_expiry_heap = false;
                self.release(slot, true);
            }
        }
    }

    fn on_option(&mut self, key: FlowKey, o: &TfdOption, now: SimTime) {
        // Next Time = 0 carries no rate; such an option is ignored.
        let Some(bps) = o.rate_bps() else { return };
        let want = (bps * (1.0 + self.cfg.headroom)).ceil() as u64;
        let hold_ns = (self.cfg.hold * o.next_time_ms() as f64 * 1e6).round() as u64;
        let slot = self.request(key, want, SimTime(now.0 + hold_ns));
        let announced = (o.next_data().bytes_f64() * (1.0 + self.cfg.headroom)).ceil() as u64;
        let i = slot.unwrap_or_else(|| self.slot(key));
        self.flows[i as usize].announced_bytes = announced;
    }

    /// SCFQ finish tag for a packet of `size` bytes of a class served at `rate_bps`.
    fn tag(v: u64, last_finish: u64, last_epoch: u64, epoch: u64, size: u32, rate_bps: u64) -> u64 {
        let start = if last_epoch == epoch { last_finish.max(v) } else { v };
        // A packet's transmission time at the class's rate (64-bit arithmetic when it fits).
        let inc = Rate(rate_bps).tx_time(size as u64).0;
        start + inc.max(1)
    }

    /// `reserved_rate`: the eligible reserved packet of earliest eligibility time (ties by
    /// arrival), else best effort if it may go (always with `lend_idle`; otherwise once its
    /// `C − Σ r` spacing allows), else nothing (the port wakes at `ready_at`).
    fn dequeue_reserved_rate(&mut self, now: SimTime) -> Option<Packet> {
        let pkt = match self.sched.peek() {
            Some(&Reverse((start, _, class))) if start <= now.0 => {
                self.sched.pop();
                self.take_flow(class).1
            }
            _ if !self.be.is_empty() && (self.cfg.lend_idle || now >= self.be_ready) => self.take_be(now).1,
            _ => return None,
        };
        Some(self.departed(pkt))
    }

    /// Takes best effort's head packet; with `lend_idle = false` spaces best effort to the
    /// unreserved rate.
    fn take_be(&mut self, now: SimTime) -> (u64, Packet) {
        let (t, p) = self.be.pop_front().expect("a scheduled best-effort class has a packet");
        self.be_bytes -= p.size_bytes as u64;
        if !self.cfg.lend_idle {
            let be_rate = self.link_bps - self.reserved_bps;
            let gap = Rate(be_rate).tx_time(p.size_bytes as u64).0;
            // One packet of credit: a best-effort packet delayed behind a reserved one
            // does not lose its slot, so a backlogged best effort gets C − Σ r.
            self.be_ready = SimTime(self.be_ready.0.max(now.0.saturating_sub(gap)) + gap);
        }
        (t, p)
    }

    /// Takes the head packet of reserved flow `class` and files its next packet's tag.
    fn take_flow(&mut self, class: u32) -> (u64, Packet) {
        let s = &mut self.flows[class as usize];
        let (t, _, p) = s.q.pop_front().expect("a scheduled flow class has a packet");
        s.bytes -= p.size_bytes as u64;
        if let Some(&(next, arrival, _)) = s.q.front() {
            self.sched.push(Reverse((next, arrival, class)));
        }
        (t, p)
    }

    /// Backlog accounting of a departing packet; at the end of a busy period SCFQ restarts
    /// virtual time, and all tags with it.
    fn departed(&mut self, pkt: Packet) -> Packet {
        self.backlog.packets -= 1;
        self.backlog.bytes -= pkt.size_bytes as u64;
        if self.backlog.packets == 0 {
            self.v = 0;
            self.epoch += 1;
        }
        pkt
    }

    fn full(limit: Limit, pkts: usize, bytes: u64, size: u32) -> bool {
        match limit {
            Limit::Packets(n) => pkts as u64 >= n,
            Limit::Bytes(b) => bytes + size as u64 > b,
        }
    }
}

impl QueueDisc for Tfd {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let now = cx.now;
        self.expire(now);
        let key = FlowKeyKind::FiveTuple.key(&pkt);
        if self.cfg.read_option {
            if let Some(o) = pkt.ip.tfd {
                self.on_option(key, &o, now);
            }
        }
        let size = pkt.size_bytes;
        let (v, epoch) = (self.v, self.epoch);
        let rr = self.cfg.scheduler == TfdScheduler::ReservedRate;
        let mut reserved = self.find(key).filter(|&i| self.flows[i as usize].rate_bps > 0);
        if let Some(i) = reserved {
            let s = &mut self.flows[i as usize];
            let rate = s.rate_bps;
            if let Some(b) = &mut s.bucket {
                if !b.conforms(size, rate, now) {
                    // RFC 2211/2212: a non-conforming packet is forwarded as best effort.
                    self.stats.nonconforming += 1;
                    reserved = None;
                }
            }
        }
        if let Some(flow) = reserved {
            let flow_limit = self.cfg.flow_limit;
            let s = &mut self.flows[flow as usize];
            debug_assert_eq!(s.key, key, "tfd: slot {flow} holds another flow's state");
            if Self::full(flow_limit, s.q.len(), s.bytes, size) && s.bytes + size as u64 > s.announced_bytes {
                return Verdict::Dropped(pkt);
            }
            let f = if rr {
                // VirtualClock (Zhang 1990) as a rate-jitter regulator: the packet becomes
                // eligible at its start time S = max(arrival, F_prev) and its flow's clock
                // advances to F = S + L / r. S is the packet's tag: eligible when S ≤ now.
                let start = s.last_finish.max(now.0);
                s.last_finish = start + Rate(s.rate_bps).tx_time(size as u64).0.max(1);
                start
            } else {
                let f = Self::tag(v, s.last_finish, s.epoch, epoch, size, s.rate_bps);
                s.last_finish = f;
                f
            };
            s.epoch = epoch;
            s.bytes += size as u64;
            let was_empty = s.q.is_empty();
            let arrival = self.arrivals;
            self.arrivals += 1;
            s.q.push_back((f, arrival, pkt));
            if was_empty {
                self.sched.push(Reverse((f, arrival, flow)));
            }
        } else {
            if Self::full(self.cfg.limit, self.be.len(), self.be_bytes, size) {
                return Verdict::Dropped(pkt);
            }
            // Under `reserved_rate` best effort is a plain FIFO below the reservations: no tag.
            let f = if rr {
                0
            } else {
                // Admission control keeps Σ r ≤ share · C < C, so best effort's weight is positive.
                let be_rate = self.link_bps - self.reserved_bps;
                let f = Self::tag(v, self.be_last_finish, self.be_epoch, epoch, size, be_rate);
                self.be_last_finish = f;
                self.be_epoch = epoch;
                if self.be.is_empty() {
                    self.sched.push(Reverse((f, BE_RANK, BE)));
                }
                f
            };
            self.be_bytes += size as u64;
            self.be.push_back((f, pkt));
        }
        self.backlog.packets += 1;
        self.backlog.bytes += size as u64;
        Verdict::Enqueued
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        self.expire(cx.now);
        if self.cfg.scheduler == TfdScheduler::ReservedRate {
            return self.dequeue_reserved_rate(cx.now);
        }
        let Reverse((mut tag, tie, mut class)) = self.sched.pop()?;
        if class == BE && !self.cfg.lend_idle && cx.now < self.be_ready {
            // Best effort has used its unreserved share for now: serve the reserved class of
            // smallest tag instead, or nobody (the port wakes at `ready_at`).
            let be_entry = Reverse((tag, tie, class));
            let other = self.sched.pop();
            self.sched.push(be_entry);
            Reverse((tag, _, class)) = other?;
        }
        self.v = if self.cfg.lend_idle { tag } else { self.v.max(tag) };
        let pkt = if class == BE {
            let (t, p) = self.take_be(cx.now);
            debug_assert_eq!(t, tag);
            if let Some(&(next, _)) = self.be.front() {
                self.sched.push(Reverse((next, BE_RANK, BE)));
            }
            p
        } else {
            let (t, p) = self.take_flow(class);
            debug_assert_eq!(t, tag);
            p
        };
        Some(self.departed(pkt))
    }

    fn ready_at(&self, now: SimTime) -> Option<SimTime> {
        let be_held = !self.cfg.lend_idle && !self.be.is_empty() && now < self.be_ready;
        if self.cfg.scheduler == TfdScheduler::ReservedRate {
            // The earlier of the next reserved packet's eligibility and best effort's turn
            // (`None` if something could go now: the port only asks after a `None`).
            let flow = self.sched.peek().map(|Reverse((s, _, _))| SimTime(*s)).filter(|&s| s > now);
            let be = if self.be.is_empty() {
                None
            } else if be_held {
                Some(self.be_ready)
            } else {
                return None;
            };
            return match (flow, be) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        be_held.then_some(self.be_ready)
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.be.iter().for_each(|(_, p)| f(p));
        for s in &self.flows {
            s.q.iter().for_each(|(_, _, p)| f(p));
        }
    }
}

impl Reservations for Tfd {
    fn reserve(&mut self, req: &Reservation, now: SimTime) {
        self.expire(now);
        match *req {
            Reservation::Install { key, rate_bps, bucket_bytes, expires } => {
                let slot = self.request(key, rate_bps, expires);
                if let (true, Some(i)) = (self.cfg.police, slot) {
                    // A new (or re-sized) bucket starts full; a refresh keeps its tokens.
                    let s = &mut self.flows[i as usize];
                    let depth = bucket_bytes as f64;
                    match &mut s.bucket {
                        Some(b) if b.depth == depth => {}
                        b => *b = Some(TokenBucket { depth, tokens: depth, at: now }),
                    }
                }
            }
            Reservation::Remove { key } => {
                if let Some(i) = self.find(key) {
                    self.release(i, false);
                }
            }
        }
    }

    fn reservation(&self, key: FlowKey) -> Option<Rate> {
        self.reserved_rate(key)
    }
}

impl Build for TfdConfig {
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Tfd::new(self.clone(), cx.rate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::tfd::{NextData, TfdFlags};
    use crate::queue::testutil::{key, pkt};
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn with_tfd(mut p: Packet, next_data: u32, next_time_ms: u32) -> Packet {
        p.ip.tfd = Some(TfdOption::new(TfdFlags::empty(), NextData::Bytes(next_data), next_time_ms).unwrap());
        p.ip.opt_bytes = 12;
        p
    }

    fn gig() -> Tfd {
        Tfd::new(TfdConfig::default(), Rate(1_000_000_000))
    }

    fn enq(q: &mut Tfd, p: Packet, t_ns: u64) -> bool {
        let mut d = Vec::new();
        let mut cx = QueueCtx::new(SimTime(t_ns), &mut d);
        matches!(q.enqueue(p, &mut cx), Verdict::Enqueued)
    }

    fn deq(q: &mut Tfd, t_ns: u64) -> Option<Packet> {
        let mut d = Vec::new();
        let mut cx = QueueCtx::new(SimTime(t_ns), &mut d);
        q.dequeue(&mut cx)
    }

    /// Rate the option announces, with the default 10 % headroom.
    fn expect_rate(next_data: u32, next_time_ms: u32) -> u64 {
        (next_data as f64 * 8.0 * 1000.0 / next_time_ms as f64 * 1.1).ceil() as u64
    }

    #[test]
    fn reservation_follows_a_step_in_next_data_within_one_horizon_and_expires() {
        // One option per 300 ms horizon; Next Data steps from 1.5 MB (40 Mbit/s) to 3 MB
        // (80 Mbit/s) at the horizon starting at 600 ms, then the flow falls silent after the
        // horizon starting at 900 ms.
        let mut q = gig();
        let mut seq = 0;
        let mut send = |q: &mut Tfd, t_ms: u64, nd: Option<u32>| {
            let p = pkt(1, 1500, seq);
            seq += 1;
            let p = match nd {
                Some(nd) => with_tfd(p, nd, 300),
                None => p,
            };
            assert!(enq(q, p, t_ms * MS));
            deq(q, t_ms * MS);
        };
        for t in (0..600).step_by(10) {
            send(&mut q, t, (t % 300 == 0).then_some(1_500_000));
            assert_eq!(q.reserved_rate(key(1)), Some(Rate(expect_rate(1_500_000, 300))), "t = {t} ms");
        }
        for t in (600..1200).step_by(10) {
            send(&mut q, t, (t % 300 == 0).then_some(3_000_000));
            // The step is followed at the first packet of the new horizon, well within one.
            assert_eq!(q.reserved_rate(key(1)), Some(Rate(expect_rate(3_000_000, 300))), "t = {t} ms");
        }
        // Last option at 900 ms, hold 2.5 × 300 ms: held until 1650 ms, released after.
        send(&mut q, 1649, None);
        assert!(q.reserved_rate(key(1)).is_some(), "still held before hold · Next Time");
        send(&mut q, 1651, None);
        assert_eq!(q.reserved_rate(key(1)), None, "released after hold · Next Time without refresh");
        assert_eq!(q.reserved_total(), Rate(0));
        assert_eq!(q.stats.expired, 1);
        assert_eq!(q.stats.granted, 2);
    }

    #[test]
    fn next_data_zero_releases_and_next_time_zero_is_ignored() {
        let mut q = gig();
        assert!(enq(&mut q, with_tfd(pkt(3, 1000, 0), 100_000, 100), 0));
        assert!(q.reserved_rate(key(3)).is_some());
        assert!(enq(&mut q, with_tfd(pkt(3, 1000, 1), 100_000, 0), MS));
        assert!(q.reserved_rate(key(3)).is_some(), "Next Time 0 has no rate and changes nothing");
        assert!(enq(&mut q, with_tfd(pkt(3, 1000, 2), 0, 100), 2 * MS));
        assert_eq!(q.reserved_rate(key(3)), None);
        assert_eq!(q.stats.removed, 1);
    }

    #[test]
    fn policing_sends_packets_beyond_the_token_bucket_to_best_effort() {
        // r = 8 Mbit/s (1 byte/µs), b = 3000 B: the bucket holds two 1500 B packets.
        let far = SimTime(u64::MAX);
        let install = Reservation::Install { key: key(1), rate_bps: 8_000_000, bucket_bytes: 3000, expires: far };
        let mut q = Tfd::new(TfdConfig { police: true, ..TfdConfig::default() }, Rate(1_000_000_000));
        q.reserve(&install, SimTime::ZERO);
        for i in 0..4 {
            assert!(enq(&mut q, pkt(1, 1500, i), 0), "non-conforming packets are forwarded, not dropped");
        }
        assert_eq!(q.queued_pkts(key(1)), 2, "two packets conform, in the reserved class");
        assert_eq!((q.stats.nonconforming, q.backlog().packets), (2, 4));
        // 1.5 ms later 1500 B of tokens have come back: one more conforms, the next does not.
        assert!(enq(&mut q, pkt(1, 1500, 4), 1_500_000) && enq(&mut q, pkt(1, 1500, 5), 1_500_000));
        assert_eq!((q.queued_pkts(key(1)), q.stats.nonconforming), (3, 3));
        // A refresh keeps the bucket's level; tokens never exceed b (a long idle gives back 3000 B).
        q.reserve(&install, SimTime(1_600_000));
        for i in 6..9 {
            enq(&mut q, pkt(1, 1500, i), 1_000_000_000);
        }
        assert_eq!((q.queued_pkts(key(1)), q.stats.nonconforming), (5, 4));
        // Without policing the same excess queues in the reserved class.
        let mut q = gig();
        q.reserve(&install, SimTime::ZERO);
        for i in 0..4 {
            enq(&mut q, pkt(1, 1500, i), 0);
        }
        assert_eq!((q.queued_pkts(key(1)), q.stats.nonconforming), (4, 0));
    }

    #[test]
    fn rsvp_state_times_out_without_refreshes_and_teardown_removes_it() {
        use crate::ip::rsvp::lifetime_ns;
        let mut q = gig();
        // R = 1 s: L = 3.5 · 1.5 · 1 s = 5.25 s.
        let l = lifetime_ns(1_000_000_000);
        q.reserve(&Reservation::Install { key: key(2), rate_bps: 60_000_000, bucket_bytes: 0, expires: SimTime(l) }, SimTime::ZERO);
        assert_eq!(q.reserved_rate(key(2)), Some(Rate(60_000_000)));
        // A refresh at 2 s pushes the expiry to 2 s + L.
        q.reserve(
            &Reservation::Install { key: key(2), rate_bps: 60_000_000, bucket_bytes: 0, expires: SimTime(2_000 * MS + l) },
            SimTime(2_000 * MS),
        );
        assert!(enq(&mut q, pkt(9, 100, 0), l + MS));
        assert!(q.reserved_rate(key(2)).is_some(), "refreshed state outlives the first lifetime");
        assert!(enq(&mut q, pkt(9, 100, 1), 2_000 * MS + l + 1));
        assert_eq!(q.reserved_rate(key(2)), None, "no refresh within L: state expired");
        assert_eq!(q.stats.expired, 1);
        // Teardown.
        q.reserve(
            &Reservation::Install { key: key(4), rate_bps: 1_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) },
            SimTime(10_000 * MS),
        );
        q.reserve(&Reservation::Remove { key: key(4) }, SimTime(10_001 * MS));
        assert_eq!(q.reserved_rate(key(4)), None);
    }

    #[test]
    fn equal_tags_go_in_arrival_order_whatever_the_keys() {
        // Two flows with equal reservations, one packet each at t = 0 of equal size: equal SCFQ
        // finish tags and equal eligibility times. The packet that arrived first goes first,
        // whichever flow's 5-tuple is smaller (it once went by 5-tuple: flow 1 always won).
        for scheduler in [TfdScheduler::Scfq, TfdScheduler::ReservedRate] {
            for (first, second) in [(1, 2), (2, 1)] {
                let cfg = TfdConfig { scheduler, read_option: false, ..TfdConfig::default() };
                let mut q = Tfd::new(cfg, Rate(1_000_000_000));
                for k in [1, 2] {
                    install(&mut q, k, 100_000_000);
                }
                assert!(enq(&mut q, pkt(first, 1500, 0), 0));
                assert!(enq(&mut q, pkt(second, 1500, 0), 0));
                let order: Vec<_> = (0..2).map(|_| deq(&mut q, 0).expect("eligible at 0").flow).collect();
                assert_eq!(order, vec![first, second], "{scheduler:?}: arrival order, not key order");
            }
        }
    }

    #[test]
    fn admission_control_refuses_beyond_the_share() {
        let mut q = Tfd::new(TfdConfig { max_reserved_share: 0.5, ..TfdConfig::default() }, Rate(1_000_000_000));
        let far = SimTime(u64::MAX);
        q.reserve(&Reservation::Install { key: key(0), rate_bps: 300_000_000, bucket_bytes: 0, expires: far }, SimTime::ZERO);
        q.reserve(&Reservation::Install { key: key(1), rate_bps: 300_000_000, bucket_bytes: 0, expires: far }, SimTime::ZERO);
        assert_eq!(q.reserved_rate(key(1)), None, "300 + 300 > 500 Mbit/s: refused");
        q.reserve(&Reservation::Install { key: key(1), rate_bps: 200_000_000, bucket_bytes: 0, expires: far }, SimTime::ZERO);
        assert_eq!(q.reserved_rate(key(1)), Some(Rate(200_000_000)));
        // An increase that does not fit is refused; the flow keeps what it had.
        q.reserve(&Reservation::Install { key: key(0), rate_bps: 400_000_000, bucket_bytes: 0, expires: far }, SimTime::ZERO);
        assert_eq!(q.reserved_rate(key(0)), Some(Rate(300_000_000)));
        assert_eq!(q.stats.refused, 2);
        assert_eq!(q.reserved_total(), Rate(500_000_000));
    }

    /// Drives the port as a 1 Gbit/s transmitter for `dur_ns`: `feed(q, t)` adds arrivals before
    /// each dequeue. Returns bytes served per flow (best effort as flow 0 here).
    fn serve(
        q: &mut Tfd,
        dur_ns: u64,
        mut feed: impl FnMut(&mut Tfd, u64),
    ) -> std::collections::BTreeMap<crate::packet::FlowId, u64> {
        let mut t = 0;
        let mut out = std::collections::BTreeMap::new();
        while t < dur_ns {
            feed(q, t);
            match deq(q, t) {
                Some(p) => {
                    *out.entry(p.flow).or_insert(0) += p.size_bytes as u64;
                    t += Rate(1_000_000_000).tx_time(p.size_bytes as u64).as_nanos();
                }
                None => t += 1_000,
            }
        }
        out
    }

    #[test]
    fn backlogged_reserved_flow_gets_its_rate_against_a_best_effort_flood() {
        let mut q = gig();
        q.reserve(
            &Reservation::Install { key: key(1), rate_bps: 100_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) },
            SimTime::ZERO,
        );
        let mut seq = 0;
        let got = serve(&mut q, 100 * MS, |q, t| both_backlogged(q, t, &mut seq));
        let r1 = got[&1] as f64 * 8.0 / 0.1;
        let r0 = got[&0] as f64 * 8.0 / 0.1;
        assert!((r1 - 100e6).abs() < 2e6, "reserved flow got {r1} bit/s");
        assert!((r0 - 900e6).abs() < 2e6, "best effort got {r0} bit/s");
    }

    /// Keeps best effort (flow 0) and reserved flow 1 backlogged, 100 packets each, at time `t`.
    fn both_backlogged(q: &mut Tfd, t: u64, seq: &mut u64) {
        while q.be.len() < 100 {
            *seq += 1;
            enq(q, pkt(0, 1500, *seq), t);
        }
        while q.queued_pkts(key(1)) < 100 {
            *seq += 1;
            enq(q, pkt(1, 1500, *seq), t);
        }
    }

    /// Keeps best effort (flow 0) backlogged and feeds flow 1 with 1500 B every 120 µs
    /// (100 Mbit/s), up to time `t`.
    fn flood_and_flow1_at_100mbps(q: &mut Tfd, t: u64, seq: &mut u64, next1: &mut u64) {
        while q.be.len() < 100 {
            *seq += 1;
            enq(q, pkt(0, 1500, *seq), t);
        }
        while *next1 <= t {
            *seq += 1;
            enq(q, pkt(1, 1500, *seq), *next1);
            *next1 += 120_000;
        }
    }

    #[test]
    fn idle_reservation_is_lent_to_best_effort() {
        // Flow 1 reserves 500 Mbit/s but sends 100 Mbit/s; best effort gets the rest of the link.
        let mut q = gig();
        q.reserve(
            &Reservation::Install { key: key(1), rate_bps: 500_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) },
            SimTime::ZERO,
        );
        let (mut seq, mut next1) = (0, 0u64);
        let got = serve(&mut q, 100 * MS, |q, t| flood_and_flow1_at_100mbps(q, t, &mut seq, &mut next1));
        let r1 = got[&1] as f64 * 8.0 / 0.1;
        let r0 = got[&0] as f64 * 8.0 / 0.1;
        assert!((r1 - 100e6).abs() < 2e6, "flow 1 sent at its own pace: {r1}");
        assert!(r0 > 895e6, "best effort gets the unused reservation: {r0}");
    }

    #[test]
    fn held_reservation_is_not_lent_with_lend_idle_false() {
        // As above, but the router sets reserved capacity aside: best effort gets C − Σ r =
        // 500 Mbit/s even though flow 1 uses only 100; the link idles 40 % of the time; while
        // held back, the discipline names the time it will be ready.
        let mut q = Tfd::new(TfdConfig { lend_idle: false, ..TfdConfig::default() }, Rate(1_000_000_000));
        q.reserve(
            &Reservation::Install { key: key(1), rate_bps: 500_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) },
            SimTime::ZERO,
        );
        let (mut seq, mut next1, mut held) = (0, 0u64, 0);
        let got = serve(&mut q, 100 * MS, |q, t| {
            flood_and_flow1_at_100mbps(q, t, &mut seq, &mut next1);
            if let Some(r) = q.ready_at(SimTime(t)) {
                assert!(r.0 > t, "ready_at must lie ahead");
                held += 1;
            }
        });
        let r1 = got[&1] as f64 * 8.0 / 0.1;
        let r0 = got[&0] as f64 * 8.0 / 0.1;
        assert!((r1 - 100e6).abs() < 2e6, "flow 1 keeps its pace: {r1}");
        assert!((r0 - 500e6).abs() < 5e6, "best effort limited to C − Σr: {r0}");
        assert!(held > 0);
        // A backlogged reserved flow is never held back by best effort's shaper.
        let mut q = Tfd::new(TfdConfig { lend_idle: false, ..TfdConfig::default() }, Rate(1_000_000_000));
        q.reserve(
            &Reservation::Install { key: key(1), rate_bps: 100_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) },
            SimTime::ZERO,
        );
        let got = serve(&mut q, 100 * MS, |q, t| both_backlogged(q, t, &mut seq));
        let total = (got[&0] + got[&1]) as f64 * 8.0 / 0.1;
        assert!(total > 995e6, "both classes backlogged: the link stays busy ({total})");
        let r0 = got[&0] as f64 * 8.0 / 0.1;
        assert!((r0 - 900e6).abs() < 5e6, "best effort keeps C − Σr when both are backlogged: {r0}");
    }

    fn reserved_rate(lend_idle: bool) -> Tfd {
        Tfd::new(TfdConfig { scheduler: TfdScheduler::ReservedRate, lend_idle, ..TfdConfig::default() }, Rate(1_000_000_000))
    }

    fn install(q: &mut Tfd, flow: crate::packet::FlowId, rate_bps: u64) {
        q.reserve(&Reservation::Install { key: key(flow), rate_bps, bucket_bytes: 0, expires: SimTime(u64::MAX) }, SimTime::ZERO);
    }

    /// Runs the port as a 1 Gbit/s transmitter (1500 B = 12 µs) over `arrivals` (time in µs,
    /// flow, sequence number; in time order) until it has sent everything: each packet is
    /// enqueued at its own arrival time; an idle port wakes at its next arrival or at the
    /// discipline's `ready_at`. Returns (start of service in µs, flow, sequence number).
    fn schedule(q: &mut Tfd, arrivals: &[(u64, crate::packet::FlowId, u64)]) -> Vec<(u64, crate::packet::FlowId, u64)> {
        let (mut t, mut next, mut out) = (0u64, 0, Vec::new());
        while next < arrivals.len() || q.backlog().packets > 0 {
            while next < arrivals.len() && arrivals[next].0 * 1000 <= t {
                let (at, f, seq) = arrivals[next];
                assert!(enq(q, pkt(f, 1500, seq), at * 1000));
                next += 1;
            }
            match deq(q, t) {
                Some(p) => {
                    assert_eq!(t % 1000, 0, "service starts on whole µs here");
                    out.push((t / 1000, p.flow, p.seq_in_flow));
                    t += 12_000;
                }
                None => {
                    let arrival = arrivals.get(next).map(|a| a.0 * 1000);
                    let ready = q.ready_at(SimTime(t)).map(|r| r.0);
                    t = match (arrival, ready) {
                        (Some(a), Some(r)) => a.min(r),
                        (a, r) => a.or(r).expect("idle with a backlog and nothing to wake it"),
                    };
                }
            }
        }
        out
    }

    /// Flow 1 reserves 100 Mbit/s (one 1500 B packet per 120 µs), flow 2 300 Mbit/s (one per
    /// 40 µs); flow 1's three packets arrive at 0, flow 2's three at 5 µs, ten best-effort
    /// packets (flow 0) at 0.
    fn rr_arrivals() -> Vec<(u64, crate::packet::FlowId, u64)> {
        let mut a: Vec<_> = (0..10).map(|i| (0, 0, i)).collect();
        a.extend((0..3).map(|i| (0, 1, i)));
        a.extend((0..3).map(|i| (5, 2, i)));
        a.sort_by_key(|x| x.0);
        a
    }

    #[test]
    fn reserved_rate_serves_each_flow_at_its_rate_and_best_effort_in_the_gaps() {
        // Eligibility (VirtualClock start times): flow 1 at 0, 120, 240 µs; flow 2 at 5, 45,
        // 85 µs. An eligible reserved packet goes first; otherwise best effort, whose packets
        // fill every gap (lend_idle); a reserved packet that becomes eligible while a
        // best-effort one is on the wire waits for it (non-preemptive, ≤ 12 µs).
        let mut q = reserved_rate(true);
        install(&mut q, 1, 100_000_000);
        install(&mut q, 2, 300_000_000);
        let got = schedule(&mut q, &rr_arrivals());
        #[rustfmt::skip]
        let want = vec![
            (0, 1, 0), (12, 2, 0), (24, 0, 0), (36, 0, 1), (48, 2, 1), (60, 0, 2), (72, 0, 3),
            (84, 0, 4), (96, 2, 2), (108, 0, 5), (120, 1, 1), (132, 0, 6), (144, 0, 7),
            (156, 0, 8), (168, 0, 9),
            // The link idles until flow 1's last packet is due: no reservation runs ahead.
            (240, 1, 2),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn reserved_rate_without_lending_spaces_best_effort_to_the_unreserved_rate() {
        // As above with lend_idle = false: best effort gets C − Σ r = 600 Mbit/s, one packet
        // per 20 µs, with one packet of credit (ready = max(ready, now − 20 µs) + 20 µs):
        // ready after each best-effort packet 24, 44, 64, 84, 104, 124, 144, 164, 184, 204 µs.
        let mut q = reserved_rate(false);
        install(&mut q, 1, 100_000_000);
        install(&mut q, 2, 300_000_000);
        let got = schedule(&mut q, &rr_arrivals());
        #[rustfmt::skip]
        let want = vec![
            (0, 1, 0), (12, 2, 0), (24, 0, 0), (36, 0, 1), (48, 2, 1), (60, 0, 2), (72, 0, 3),
            (84, 0, 4), (96, 2, 2), (108, 0, 5), (120, 1, 1), (132, 0, 6), (144, 0, 7),
            // Held back: best effort's next turn is 164 µs, then 184 µs.
            (164, 0, 8), (184, 0, 9), (240, 1, 2),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn reserved_rate_never_exceeds_a_reservation_nor_lends_one_to_another() {
        // Flow 1 reserves 100 Mbit/s and is backlogged; flow 2 reserves 300 Mbit/s and sends
        // nothing; no best effort. SCFQ would give flow 1 the whole link; reserved_rate gives
        // it exactly 100 Mbit/s and idles the rest.
        let mut q = reserved_rate(true);
        install(&mut q, 1, 100_000_000);
        install(&mut q, 2, 300_000_000);
        let arrivals: Vec<_> = (0..1000).map(|i| (0, 1, i)).collect();
        let got = schedule(&mut q, &arrivals);
        // One packet per 120 µs: the k-th starts at 120 k µs.
        assert!(got.iter().enumerate().all(|(k, &(t, f, _))| f == 1 && t == 120 * k as u64), "{:?}", &got[..5]);
        // Over 100 ms: 100 Mbit/s against the best effort flood (which gets the other 900).
        let mut q = reserved_rate(true);
        install(&mut q, 1, 100_000_000);
        install(&mut q, 2, 300_000_000);
        let mut seq = 0;
        let got = serve(&mut q, 100 * MS, |q, t| both_backlogged(q, t, &mut seq));
        let (r0, r1) = (got[&0] as f64 * 8.0 / 0.1, got[&1] as f64 * 8.0 / 0.1);
        assert!((r1 - 100e6).abs() < 0.2e6, "flow 1 at its rate: {r1}");
        assert!((r0 - 900e6).abs() < 0.2e6, "best effort gets the rest, flow 2's idle 300 Mbit/s too: {r0}");
        // The same under SCFQ, for contrast: flow 1 shares the idle reservation by weight.
        let mut q = gig();
        install(&mut q, 1, 100_000_000);
        install(&mut q, 2, 300_000_000);
        let got = serve(&mut q, 100 * MS, |q, t| both_backlogged(q, t, &mut seq));
        let r1 = got[&1] as f64 * 8.0 / 0.1;
        assert!(r1 > 140e6, "SCFQ lends flow 2's idle reservation (by weight 100 : 600): {r1}");
    }

    #[test]
    fn reserved_rate_config_key() {
        let c: TfdConfig = toml::from_str("scheduler = \"reserved_rate\"").unwrap();
        assert_eq!(c.scheduler, TfdScheduler::ReservedRate);
        let e = toml::from_str::<TfdConfig>("scheduler = \"wfq\"").unwrap_err().to_string();
        assert!(e.contains("scheduler") || e.contains("wfq"), "{e}");
    }

    #[test]
    fn config_rejects_bad_values_with_the_field_name() {
        let e = toml::from_str::<TfdConfig>("max_reserved_share = 1.0").unwrap_err().to_string();
        assert!(e.contains("max_reserved_share"), "{e}");
        let e = toml::from_str::<TfdConfig>("headroom = -0.5").unwrap_err().to_string();
        assert!(e.contains("headroom"), "{e}");
        let c: TfdConfig = toml::from_str("limit = \"50p\"\nread_option = false").unwrap();
        assert_eq!(c, TfdConfig { limit: Limit::Packets(50), read_option: false, ..TfdConfig::default() });
    }

    proptest! {
        /// arrived = enqueued + dropped; enqueued = dequeued + backlog; the reported backlog is
        /// what the queues hold; the port never idles while it holds packets; Σ reservations
        /// never exceeds the admission share.
        #[test]
        fn conservation_and_work_conservation(
            ops in proptest::collection::vec((0u8..4, 0u32..4, 40u32..1500, 0u64..3_000_000, 0u32..400_000), 1..400)
        ) {
            let mut q = Tfd::new(TfdConfig { limit: Limit::Packets(20), flow_limit: Limit::Bytes(20_000), ..TfdConfig::default() }, Rate(100_000_000));
            let (mut now, mut arrived, mut enqd, mut dropped, mut deqd) = (0u64, 0u64, 0u64, 0u64, 0u64);
            for (i, (op, flow, size, gap, nd)) in ops.into_iter().enumerate() {
                now += gap;
                match op {
                    0 | 1 => {
                        let mut p = pkt(flow, size, i as u64);
                        if op == 1 {
                            p = with_tfd(p, nd, 100);
                        }
                        arrived += 1;
                        if enq(&mut q, p, now) { enqd += 1 } else { dropped += 1 }
                    }
                    2 => {
                        let before = q.backlog().packets;
                        match deq(&mut q, now) {
                            Some(_) => deqd += 1,
                            None => prop_assert_eq!(before, 0, "idle with a backlog"),
                        }
                    }
                    _ => q.reserve(&Reservation::Install { key: key(flow), rate_bps: nd as u64 * 100, bucket_bytes: 0, expires: SimTime(now + 50 * MS) }, SimTime(now)),
                }
                prop_assert_eq!(arrived, enqd + dropped);
                prop_assert_eq!(enqd, deqd + q.backlog().packets);
                let (mut n, mut b) = (0u64, 0u64);
                q.for_each_packet(&mut |p| { n += 1; b += p.size_bytes as u64; });
                prop_assert_eq!((n, b), (q.backlog().packets, q.backlog().bytes));
                prop_assert!(q.reserved_total().bps() <= 90_000_000);
                let sum: u64 = q.flows.iter().map(|s| s.rate_bps).sum();
                prop_assert_eq!(sum, q.reserved_total().bps());
            }
        }

        /// `reserved_rate`: conservation as above; when it holds packets but releases none it
        /// names a later time to wake; a reserved flow never runs ahead of its rate (flow 1,
        /// reserved at 10 Mbit/s from time 0, starts a packet at t only if the bytes it sent
        /// before fit in 10 Mbit/s · t: its eligibility time is at least their sum at r).
        #[test]
        fn reserved_rate_conserves_and_paces(
            ops in proptest::collection::vec((0u8..3, 0u32..3, 40u32..1500, 0u64..3_000_000), 1..400),
            lend_idle in any::<bool>(),
        ) {
            let cfg = TfdConfig { scheduler: TfdScheduler::ReservedRate, lend_idle, read_option: false,
                                  limit: Limit::Packets(20), flow_limit: Limit::Bytes(20_000), ..TfdConfig::default() };
            let mut q = Tfd::new(cfg, Rate(100_000_000));
            q.reserve(&Reservation::Install { key: key(1), rate_bps: 10_000_000, bucket_bytes: 0, expires: SimTime(u64::MAX) }, SimTime::ZERO);
            let (mut now, mut arrived, mut enqd, mut deqd) = (0u64, 0u64, 0u64, 0u64);
            let mut sent1 = 0u64;
            for (i, (op, flow, size, gap)) in ops.into_iter().enumerate() {
                now += gap;
                if op < 2 {
                    arrived += 1;
                    if enq(&mut q, pkt(flow, size, i as u64), now) { enqd += 1 }
                } else {
                    let before = q.backlog().packets;
                    match deq(&mut q, now) {
                        Some(p) => {
                            deqd += 1;
                            if p.flow == 1 {
                                prop_assert!(now >= Rate(10_000_000).tx_time(sent1).0, "flow 1 ahead of its rate");
                                sent1 += p.size_bytes as u64;
                            }
                        }
                        None if before > 0 => {
                            let r = q.ready_at(SimTime(now));
                            prop_assert!(r.is_some_and(|r| r.0 > now), "held with no wake-up: {:?}", r);
                        }
                        None => {}
                    }
                }
                prop_assert!(arrived >= enqd);
                prop_assert_eq!(enqd, deqd + q.backlog().packets);
            }
        }
    }
}
