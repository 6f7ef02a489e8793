//! RED, Random Early Detection (Floyd & Jacobson 1993), with Floyd's "gentle" mode.
//!
//! Reading list: S. Floyd, V. Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993, §4 (the algorithm, Fig. 2) and §7 (parameters);
//! S. Floyd, "Recommendation on using the gentle_ variant of RED", 2000; ns-2 `queue/red.cc`
//! (the estimator); `docs/models/red.md`.
//!
//! What is modelled:
//! - The average queue `avg` is an EWMA of the instantaneous queue, updated at every arrival
//!   with the queue length before the arrival: `avg ← (1 − w_q)·avg + w_q·q` (§4).
//! - Idle-time correction (§4): an arrival after the queue has been idle since `q_time` first
//!   ages the average by `m = ⌊(now − q_time)/s⌋` small-packet transmission times, `avg ←
//!   (1 − w_q)^m·avg`, where `s` is the transmission time of a `mean_pkt_size` packet on the
//!   port's link. As in ns-2's estimator the ordinary update (with `q = 0`) follows, so the
//!   average is `(1 − w_q)^(m+1)·avg`. The queue is idle from the moment its last packet has
//!   finished transmission (the dequeue time plus that packet's serialisation).
//! - Drop probability (§4): `p_b = max_p·(avg − min_th)/(max_th − min_th)` for `min_th ≤ avg <
//!   max_th`; in gentle mode `p_b = max_p + (1 − max_p)·(avg − max_th)/max_th` for `max_th ≤
//!   avg < 2·max_th` (Floyd 2000); every arrival is dropped above that.
//! - Uniform spacing (§4, §7): `count`, the unmarked packets since the last drop, turns `p_b`
//!   into `p_a = p_b/(1 − count·p_b)` (1 once `count·p_b ≥ 1`), so the gap between drops is
//!   uniform on `1..=⌊1/p_b⌋` rather than geometric. `count` is −1 while `avg < min_th`.
//! - Thresholds in packets (`"5p"`: the queue is counted in packets) or bytes (`"7500B"`:
//!   counted in bytes, as Linux `sch_red` does); `limit` is a hard tail drop.
//!
//! - ECN (`ecn = true`, RFC 3168 §7; ns-2 `setbit_`): an early decision in the random region
//!   (including the gentle region) marks an ECN-capable packet CE and admits it; a forced
//!   decision (`avg` at or above `max_th`, or `2·max_th` in gentle mode) and the hard limit
//!   drop. This is Linux `sch_red` with `ecn harddrop`; plain `ecn` in Linux also marks in the
//!   forced region. Not-ECT packets are dropped as without ECN.
//!
//! - WRED by DSCP (`profiles`): each profile gives its own `min_th`, `max_th`, `max_p` (and
//!   optionally `gentle`) to the code points it lists, e.g. the RFC 2597 §2 drop precedences
//!   AFx1 < AFx2 < AFx3 as three profiles of rising drop probability. All packets share ONE
//!   average queue, computed as above over the whole queue: the variant of Cisco IOS WRED ("the
//!   average queue size is calculated", then compared with the thresholds of the packet's
//!   precedence) and of ns-2 DiffServ's `WRED` MRED mode (all precedences' probabilities from a
//!   single queue length); not RIO's per-precedence averages nor Linux GRED's per-virtual-queue
//!   ones. `count` is kept per profile (as ns-2's per-precedence RED state and Linux GRED's
//!   per-VQ `qcount`), so each class's drops are spaced uniformly among its own arrivals.
//!   Code points no profile lists use the top-level thresholds.
//!
//! Not modelled: byte-mode drop probability scaled by packet size (ns-2 `bytes_`), adaptive RED (the max_p
//! auto-tuning of Floyd et al. 2001), ns-2's automatic threshold configuration, and per-class
//! averages (RIO, Linux GRED).

use super::{Backlog, Build, BuildCtx, QueueCtx, QueueDisc, Verdict};
use crate::engine::SimRng;
use crate::ip::dscp::Dscp;
use crate::packet::{Packet, PacketData};
use crate::time::SimTime;
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `kind = "red"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Hard buffer limit in packets or bytes (tail drop). Default `"50p"` (ns-2 `Queue limit_`).
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
    /// Minimum threshold of the average queue, in packets (`"5p"`) or bytes. Default `"5p"`
    /// (ns-2, ns-3; FJ93 §7).
    #[serde(with = "serde_units::limit", default = "default_min_th")]
    pub min_th: Limit,
    /// Maximum threshold, in the same unit as `min_th` and above it. Default `"15p"` (ns-2,
    /// ns-3; FJ93 §7 suggests at least twice `min_th`).
    #[serde(with = "serde_units::limit", default = "default_max_th")]
    pub max_th: Limit,
    /// Drop probability at `max_th`, in (0, 1]. Default 0.1 (ns-2 `linterm_ 10`; FJ93 §7).
    #[serde(default = "default_max_p")]
    pub max_p: f64,
    /// EWMA weight of the average queue, in (0, 1]. Default 0.002 (ns-2, ns-3; FJ93 §7).
    #[serde(default = "default_w_q")]
    pub w_q: f64,
    /// Gentle mode: the drop probability rises from `max_p` to 1 between `max_th` and
    /// `2·max_th` instead of jumping to 1 at `max_th`. Default true (ns-2, ns-3; Floyd 2000).
    #[serde(default = "default_gentle")]
    pub gentle: bool,
    /// Packet size whose transmission time is the idle-time correction's unit `s`, ≥ 1 B.
    /// Default `"500B"` (ns-2 `mean_pktsize_`, ns-3 `MeanPktSize`).
    #[serde(with = "serde_units::bytes", default = "default_mean_pkt_size")]
    pub mean_pkt_size: u64,
    /// Mark ECN-capable packets CE instead of dropping them on an early (random) decision
    /// (RFC 3168 §7). Default false (Linux `tc red` without `ecn`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
    /// WRED drop profiles by DSCP, at most 64, all against the one shared average queue
    /// (Cisco IOS WRED; `docs/models/red.md`): code points no profile lists use the top-level
    /// `min_th`, `max_th`, `max_p` and `gentle`. Default: none (plain RED).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<RedProfileConfig>,
}

/// One WRED drop profile of a [`RedConfig`]: the RED drop function applied to the packets whose
/// code point it lists, against the shared average queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedProfileConfig {
    /// Code points this profile takes (`["AF13", "AF23", 30]`), at least one; each belongs to one
    /// profile.
    pub dscp: Vec<Dscp>,
    /// Minimum threshold of the average queue, in the top-level `min_th`'s unit (`"5p"` or
    /// bytes).
    #[serde(with = "serde_units::limit")]
    pub min_th: Limit,
    /// Maximum threshold, in the same unit and above `min_th`.
    #[serde(with = "serde_units::limit")]
    pub max_th: Limit,
    /// Drop probability at `max_th`, in (0, 1].
    pub max_p: f64,
    /// Gentle mode for this profile. Default: the top-level `gentle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gentle: Option<bool>,
}

fn default_limit() -> Limit {
    Limit::Packets(50)
}
fn default_min_th() -> Limit {
    Limit::Packets(5)
}
fn default_max_th() -> Limit {
    Limit::Packets(15)
}
fn default_max_p() -> f64 {
    0.1
}
fn default_w_q() -> f64 {
    0.002
}
fn default_gentle() -> bool {
    true
}
fn default_mean_pkt_size() -> u64 {
    500
}

impl Default for RedConfig {
    fn default() -> Self {
        RedConfig {
            limit: default_limit(),
            min_th: default_min_th(),
            max_th: default_max_th(),
            max_p: default_max_p(),
            w_q: default_w_q(),
            gentle: default_gentle(),
            mean_pkt_size: default_mean_pkt_size(),
            ecn: false,
            profiles: Vec::new(),
        }
    }
}

/// The value and unit of a threshold.
fn split(l: Limit) -> (u64, bool) {
    match l {
        Limit::Packets(n) => (n, false),
        Limit::Bytes(b) => (b, true),
    }
}

/// `max_p` in (0, 1].
fn check_max_p(max_p: f64) -> Result<(), String> {
    if max_p > 0.0 && max_p <= 1.0 {
        Ok(())
    } else {
        Err(format!("must be in (0, 1], got {max_p}"))
    }
}

/// `max_th` in `min_th`'s unit, above it and at most 2^50 (beyond any real buffer; larger
/// values would make `2·max_th` lose precision as f64). The error is about `max_th`.
fn check_thresholds(min_th: Limit, max_th: Limit) -> Result<(), String> {
    let ((lo, lo_b), (hi, hi_b)) = (split(min_th), split(max_th));
    if lo_b != hi_b {
        return Err("must be in the same unit as min_th (both packets or both bytes)".into());
    }
    if hi <= lo {
        let u = if lo_b { "B" } else { "p" };
        return Err(format!("must be above min_th ({lo}{u}), got {hi}{u}"));
    }
    if hi > 1 << 50 {
        return Err(format!("must be at most 2^50, got {hi}"));
    }
    Ok(())
}

/// One RED drop function: thresholds (in the queue's unit), `max_p` and gentle mode.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Profile {
    min_th: f64,
    max_th: f64,
    max_p: f64,
    gentle: bool,
}

impl Profile {
    fn new(min_th: Limit, max_th: Limit, max_p: f64, gentle: bool) -> Self {
        Profile { min_th: split(min_th).0 as f64, max_th: split(max_th).0 as f64, max_p, gentle }
    }

    /// FJ93 §4 `p_b`, with Floyd's gentle region.
    fn p_b(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        }
    }

    /// The average at and above which every arrival is dropped.
    fn hard(&self) -> f64 {
        if self.gentle {
            2.0 * self.max_th
        } else {
            self.max_th
        }
    }
}

/// RED state.
pub struct Red {
    limit: Limit,
    /// The drop functions: 0 the top-level one, 1.. the WRED profiles in config order.
    profiles: Vec<Profile>,
    /// Profile of each of the 64 code points.
    profile_of: [u8; 64],
    /// The queue (and the thresholds) counted in bytes rather than packets.
    in_bytes: bool,
    w_q: f64,
    ecn: bool,
    /// Link serialisation rate, for `s` and for when the link goes idle.
    rate: crate::units::Rate,
    /// `s`: transmission time of a `mean_pkt_size` packet, ns (≥ 1).
    s_ns: f64,
    q: VecDeque<Packet>,
    bytes: u64,
    avg: f64,
    /// Per profile: its packets since its last drop while `avg` was in its random-drop region;
    /// −1 below its `min_th`.
    count: Vec<i64>,
    /// `q_time`: when the queue went idle (None while it holds or sends packets).
    idle_since: Option<SimTime>,
    rng: SimRng,
}

impl Red {
    /// # Panics
    /// If the config is out of range ([`Build::validate`] refuses it first) or `rate` is zero.
    pub fn new(cfg: &RedConfig, rate: crate::units::Rate, seed: u64) -> Self {
        if let Err((k, why)) = cfg.validate() {
            panic!("red {k}: {why}");
        }
        let in_bytes = split(cfg.min_th).1;
        let s_ns = (rate.tx_time(cfg.mean_pkt_size).as_nanos() as f64).max(1.0);
        let profiles: Vec<Profile> = std::iter::once(Profile::new(cfg.min_th, cfg.max_th, cfg.max_p, cfg.gentle))
            .chain(cfg.profiles.iter().map(|p| Profile::new(p.min_th, p.max_th, p.max_p, p.gentle.unwrap_or(cfg.gentle))))
            .collect();
        Red {
            limit: cfg.limit,
            count: vec![-1; profiles.len()],
            profile_of: cfg.table().expect("validated above"),
            profiles,
            in_bytes,
            w_q: cfg.w_q,
            ecn: cfg.ecn,
            rate,
            s_ns,
            q: VecDeque::new(),
            bytes: 0,
            avg: 0.0,
            // The queue starts idle.
            idle_since: Some(SimTime::ZERO),
            rng: SimRng::stream(seed, "red"),
        }
    }

    /// The instantaneous queue in the thresholds' unit.
    fn qlen(&self) -> f64 {
        if self.in_bytes {
            self.bytes as f64
        } else {
            self.q.len() as f64
        }
    }

    /// FJ93 §4: the average queue at an arrival at `now` (before the packet joins).
    fn update_avg(&mut self, now: SimTime) {
        // Idle-time correction: m small packets "could have been transmitted" while idle.
        let m = match self.idle_since.take() {
            Some(t) if now > t => ((now.0 - t.0) as f64 / self.s_ns).floor(),
            _ => 0.0,
        };
        self.avg = self.avg * (1.0 - self.w_q).powf(m + 1.0) + self.w_q * self.qlen();
    }

    /// FJ93 §4 `p_b`, with Floyd's gentle region: the drop probability before the count
    /// correction, for an average queue `avg` (in the thresholds' unit), with the top-level
    /// thresholds.
    pub fn p_b(&self, avg: f64) -> f64 {
        self.profiles[0].p_b(avg)
    }

    /// `p_b` for a packet of code point `dscp`: its WRED profile's, or the top-level one.
    pub fn p_b_for(&self, dscp: Dscp, avg: f64) -> f64 {
        self.profiles[self.profile_of[dscp.value() as usize] as usize].p_b(avg)
    }

    /// Whether RED drops (or marks) an arriving packet of profile `k` (FJ93 Fig. 2), updating
    /// that profile's `count`.
    fn early_drop(&mut self, k: usize) -> Decision {
        let (avg, prof, count) = (self.avg, self.profiles[k], &mut self.count[k]);
        if avg < prof.min_th {
            *count = -1;
            return Decision::Admit;
        }
        if avg >= prof.hard() {
            *count = 0;
            return Decision::Forced;
        }
        // `count` is the number of unmarked packets since the last mark (FJ93 §7), so the
        // n-th arrival after a drop sees count = n − 1 and the gap is uniform on 1..=1/p_b.
        // (Fig. 2 increments before use, which after a drop gives 1..1/p_b − 1; ns-2 follows
        // the figure, Linux `red_action` draws the gap directly and matches the text.)
        *count = (*count).max(0);
        let p_b = prof.p_b(avg);
        let c = *count as f64;
        let p_a = if c * p_b >= 1.0 { 1.0 } else { p_b / (1.0 - c * p_b) };
        if self.rng.uniform() < p_a {
            *count = 0;
            return Decision::Random;
        }
        *count += 1;
        Decision::Admit
    }
}

/// RED's decision on an arrival.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Decision {
    Admit,
    /// Chosen at random (`p_a`): marked instead when ECN is on and the packet is ECN-capable.
    Random,
    /// `avg` above the random region: always a drop.
    Forced,
}

impl QueueDisc for Red {
    fn enqueue(&mut self, mut pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        self.update_avg(cx.now);
        let full = super::over_limit(self.limit, self.q.len() as u64, self.bytes, pkt.size_bytes);
        let k = self.profile_of[(pkt.ip.dscp & 63) as usize] as usize;
        match self.early_drop(k) {
            Decision::Admit => {}
            // RFC 3168 §7: mark rather than drop an ECN-capable packet (one the hard limit
            // admits: a full buffer drops whatever the codepoint).
            Decision::Random if self.ecn && !full && cx.mark_ce(&mut pkt) => {}
            Decision::Random | Decision::Forced => return Verdict::Dropped(pkt),
        }
        if full {
            return Verdict::Dropped(pkt);
        }
        self.bytes += pkt.size_bytes as u64;
        self.q.push_back(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size_bytes as u64;
        if self.q.is_empty() {
            // The link goes idle once this last packet has been serialised.
            self.idle_since = Some(cx.now + self.rate.tx_time(p.size_bytes as u64));
        }
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        Backlog { packets: self.q.len() as u64, bytes: self.bytes }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.q.iter().for_each(|p| f(p))
    }
}

/// Most WRED profiles (one per code point at most).
pub const MAX_PROFILES: usize = 64;

impl RedConfig {
    /// The profile of every code point (0: the top-level thresholds), checking each profile.
    fn table(&self) -> Result<[u8; 64], (&'static str, String)> {
        let n = self.profiles.len();
        if n > MAX_PROFILES {
            return Err(("profiles", format!("at most {MAX_PROFILES} profiles, got {n}")));
        }
        let in_bytes = split(self.min_th).1;
        let mut t = [0u8; 64];
        for (i, p) in self.profiles.iter().enumerate() {
            let err = |k: &str, why: String| ("profiles", format!("profiles[{i}].{k}: {why}"));
            if p.dscp.is_empty() {
                return Err(err("dscp", "must list at least one code point".into()));
            }
            check_max_p(p.max_p).map_err(|e| err("max_p", e))?;
            if split(p.min_th).1 != in_bytes {
                let u = if in_bytes { "bytes" } else { "packets" };
                return Err(err("min_th", format!("must be in the top-level min_th's unit ({u}): the queue has one unit")));
            }
            check_thresholds(p.min_th, p.max_th).map_err(|e| err("max_th", e))?;
            for d in &p.dscp {
                let slot = &mut t[d.value() as usize];
                if *slot != 0 {
                    return Err(err("dscp", format!("{d} already belongs to profiles[{}]", *slot - 1)));
                }
                *slot = (i + 1) as u8;
            }
        }
        Ok(t)
    }
}

impl Build for RedConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        check_max_p(self.max_p).map_err(|e| ("max_p", e))?;
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(("w_q", format!("must be in (0, 1], got {}", self.w_q)));
        }
        check_thresholds(self.min_th, self.max_th).map_err(|e| ("max_th", e))?;
        if self.mean_pkt_size == 0 {
            return Err(("mean_pkt_size", "must be ≥ 1 B, got 0 B".into()));
        }
        self.table().map(|_| ())
    }
    fn ecn(&self) -> bool {
        self.ecn
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Red::new(self, cx.rate, cx.seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{drive, ops, pkt, Marking};
    use crate::units::Rate;
    use proptest::prelude::*;

    fn at(t_us: u64, d: &mut Vec<Packet>) -> QueueCtx<'_> {
        QueueCtx::new(SimTime(t_us * 1_000), d)
    }

    /// RFC 3168 §7 with `ecn`: in the random region an ECT arrival chosen for a drop is marked
    /// CE and admitted (a Not-ECT one is dropped); in the forced region (avg ≥ 2·max_th, gentle)
    /// and at the hard limit every arrival is dropped, ECT or not.
    #[test]
    fn ecn_marks_in_the_random_region_and_drops_in_the_forced_one() {
        use crate::packet::Ecn;
        use crate::queue::testutil::ect;
        let cfg = RedConfig { ecn: true, limit: Limit::Packets(1000), ..Default::default() };
        let mut d = Vec::new();
        // Random region: avg held at 10 packets (p_b = 0.05).
        let mut r = Red::new(&cfg, Rate(10_000_000), 1);
        let (mut marked, mut dropped, mut n) = (0, 0, 0);
        for i in 0..4000u64 {
            r.avg = 10.0;
            r.idle_since = None;
            r.w_q = 1e-12;
            let mut cx = at(i, &mut d);
            let ect_pkt = i % 2 == 0;
            let p = if ect_pkt { ect(0, 100, i) } else { pkt(0, 100, i) };
            let before = cx.ce_marks();
            match r.enqueue(p, &mut cx) {
                Verdict::Enqueued => {
                    if cx.ce_marks() > before {
                        assert!(ect_pkt);
                        assert_eq!(r.q.back().unwrap().ip.ecn, Ecn::Ce);
                        marked += 1;
                    }
                }
                Verdict::Dropped(p) => {
                    assert!(!ect_pkt, "an ECT packet dropped in the random region");
                    assert_eq!(p.ip.ecn, Ecn::NotEct);
                    dropped += 1;
                }
            }
            n += 1;
            r.dequeue(&mut at(i, &mut d));
        }
        // About p_b-spaced decisions (one in ~1/p_b·... arrivals), split between the two kinds.
        assert!(marked > 20 && dropped > 20, "{marked} marked, {dropped} dropped of {n}");
        // Forced region: every arrival dropped.
        let mut r = Red::new(&cfg, Rate(10_000_000), 1);
        for i in 0..100u64 {
            r.avg = 40.0;
            r.idle_since = None;
            let mut cx = at(i, &mut d);
            assert!(matches!(r.enqueue(ect(0, 100, i), &mut cx), Verdict::Dropped(_)));
            assert_eq!(cx.ce_marks(), 0);
        }
    }

    /// FJ93 §4 and Floyd's gentle note, at the defaults (min_th 5, max_th 15, max_p 0.1):
    /// `p_b` = 0 below 5, 0.1·(avg − 5)/10 up to 15, then 0.1 + 0.9·(avg − 15)/15 up to 30
    /// (gentle) or 1 at once (not gentle).
    #[test]
    fn drop_probability_against_its_closed_form() {
        let r = Red::new(&RedConfig::default(), Rate(10_000_000), 1);
        for (avg, p) in [(0.0, 0.0), (4.99, 0.0), (5.0, 0.0), (10.0, 0.05), (14.0, 0.09), (15.0, 0.1), (22.5, 0.55), (27.0, 0.82), (30.0, 1.0), (100.0, 1.0)] {
            assert!((r.p_b(avg) - p).abs() < 1e-12, "gentle p_b({avg}) = {} ≠ {p}", r.p_b(avg));
        }
        let r = Red::new(&RedConfig { gentle: false, ..Default::default() }, Rate(10_000_000), 1);
        for (avg, p) in [(10.0, 0.05), (14.99, 0.0999), (15.0, 1.0), (22.5, 1.0)] {
            assert!((r.p_b(avg) - p).abs() < 1e-12, "p_b({avg}) = {} ≠ {p}", r.p_b(avg));
        }
    }

    /// The EWMA and the idle-time correction on a hand-computed sequence, w_q = 0.5, a
    /// 12 Mbit/s link and mean_pkt_size 1500 B (s = 1 ms), thresholds out of reach.
    /// Four arrivals at t = 0 see q = 0, 1, 2, 3: avg = 0, 0.5, 1.25, 2.125. The four leave at
    /// t = 0; the last finishes at 1 ms, so q_time = 1 ms. An arrival at 4.5 ms: m = ⌊3.5⌋ = 3,
    /// avg = 2.125·0.5^(3+1) + 0.5·0 = 0.1328125.
    #[test]
    fn average_queue_ewma_on_a_hand_computed_sequence() {
        let cfg = RedConfig {
            w_q: 0.5,
            min_th: Limit::Packets(100),
            max_th: Limit::Packets(200),
            mean_pkt_size: 1500,
            ..Default::default()
        };
        let mut r = Red::new(&cfg, Rate(12_000_000), 1);
        let mut d = Vec::new();
        let mut seen = Vec::new();
        for i in 0..4 {
            r.enqueue(pkt(0, 1500, i), &mut at(0, &mut d));
            seen.push(r.avg);
        }
        assert_eq!(seen, vec![0.0, 0.5, 1.25, 2.125]);
        while r.dequeue(&mut at(0, &mut d)).is_some() {}
        assert_eq!(r.idle_since, Some(SimTime(1_000_000)));
        r.enqueue(pkt(0, 1500, 9), &mut at(4_500, &mut d));
        assert_eq!(r.avg, 0.1328125);
    }

    /// FJ93 §4: with `avg` held at 10 (p_b = 0.05) the gap between drops is uniform on
    /// 1..=20 (mean 10.5), never geometric (whose gaps would exceed 20 with probability
    /// 0.95^20 ≈ 36 %). 20 000 arrivals, each served at once, w_q tiny so avg stays put.
    #[test]
    fn count_spaces_drops_uniformly() {
        let cfg = RedConfig { w_q: 1e-12, limit: Limit::Packets(1000), ..Default::default() };
        let mut r = Red::new(&cfg, Rate(10_000_000), 42);
        r.avg = 10.0;
        let mut d = Vec::new();
        let (mut gaps, mut since) = (Vec::new(), 0u64);
        for i in 0..20_000 {
            since += 1;
            if matches!(r.enqueue(pkt(0, 1000, i), &mut at(0, &mut d)), Verdict::Dropped(_)) {
                gaps.push(since);
                since = 0;
            }
            r.dequeue(&mut at(0, &mut d));
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!(gaps.iter().all(|&g| (1..=20).contains(&g)), "gaps beyond 1/p_b: {gaps:?}");
        // Standard error of the mean of a uniform 1..20 over ~1900 gaps: 5.77/√1900 ≈ 0.13.
        assert!((mean - 10.5).abs() < 0.5, "mean gap {mean}");
    }

    /// Above the hard threshold (2·max_th in gentle mode) every arrival is dropped.
    #[test]
    fn every_arrival_dropped_above_twice_max_th_in_gentle_mode() {
        let cfg = RedConfig { limit: Limit::Packets(1000), w_q: 1e-12, ..Default::default() };
        let mut r = Red::new(&cfg, Rate(10_000_000), 1);
        r.avg = 30.0;
        r.idle_since = None;
        let mut d = Vec::new();
        for i in 0..100 {
            assert!(matches!(r.enqueue(pkt(0, 1000, i), &mut at(0, &mut d)), Verdict::Dropped(_)));
        }
    }

    #[test]
    fn bad_parameters_are_refused_with_their_key() {
        let bad = |c: RedConfig| c.validate().unwrap_err().0;
        let d = RedConfig::default;
        assert_eq!(bad(RedConfig { max_p: 0.0, ..d() }), "max_p");
        assert_eq!(bad(RedConfig { max_p: -0.1, ..d() }), "max_p");
        assert_eq!(bad(RedConfig { max_p: 1.5, ..d() }), "max_p");
        assert_eq!(bad(RedConfig { max_p: f64::NAN, ..d() }), "max_p");
        assert_eq!(bad(RedConfig { w_q: 0.0, ..d() }), "w_q");
        assert_eq!(bad(RedConfig { w_q: f64::INFINITY, ..d() }), "w_q");
        assert_eq!(bad(RedConfig { w_q: f64::NAN, ..d() }), "w_q");
        assert_eq!(bad(RedConfig { min_th: Limit::Packets(20), ..d() }), "max_th");
        assert_eq!(bad(RedConfig { max_th: Limit::Packets(5), ..d() }), "max_th");
        assert_eq!(bad(RedConfig { max_th: Limit::Bytes(30_000), ..d() }), "max_th");
        assert_eq!(bad(RedConfig { max_th: Limit::Packets(u64::MAX), ..d() }), "max_th");
        assert_eq!(bad(RedConfig { mean_pkt_size: 0, ..d() }), "mean_pkt_size");
        assert!(d().validate().is_ok());
    }

    /// An RFC 2597 AF class as three WRED profiles of rising drop precedence on a shared
    /// `max_th` (the shape of the common vendor defaults: the higher the precedence, the lower
    /// `min_th` and the higher `max_p`), AF21 left to the top-level thresholds (5p, 15p, 0.1).
    fn af_profiles() -> RedConfig {
        let prof = |d: &str, lo, max_p| RedProfileConfig {
            dscp: vec![Dscp::parse(d).unwrap()],
            min_th: Limit::Packets(lo),
            max_th: Limit::Packets(20),
            max_p,
            gentle: None,
        };
        RedConfig {
            limit: Limit::Packets(1000),
            profiles: vec![prof("AF11", 12, 0.05), prof("AF12", 9, 0.1), prof("AF13", 6, 0.2)],
            ..Default::default()
        }
    }

    /// WRED: at the same average queue each code point sees its own profile's `p_b`, computed by
    /// hand from FJ93 §4 and Floyd's gentle region (max_th 20, so 2·max_th = 40):
    /// - avg 15: AF11 0.05·3/8 = 0.01875, AF12 0.1·6/11, AF13 0.2·9/14, AF21 (top level) 0.1;
    /// - avg 30: AF11 0.05 + 0.95·10/20 = 0.525, AF12 0.1 + 0.9/2 = 0.55, AF13 0.2 + 0.8/2 = 0.6;
    /// - avg 10: AF11 0 (below its min_th), AF12 0.1/11, AF13 0.2·4/14;
    /// - avg ≥ 40: 1 for all. Without gentle (AF13's override), 1 from avg 20.
    #[test]
    fn wred_profiles_drop_probability_against_their_closed_form() {
        let r = Red::new(&af_profiles(), Rate(10_000_000), 1);
        let d = |s: &str| Dscp::parse(s).unwrap();
        for (avg, want) in [
            (10.0, [0.0, 0.1 / 11.0, 0.2 * 4.0 / 14.0, 0.05]),
            (15.0, [0.01875, 0.1 * 6.0 / 11.0, 0.2 * 9.0 / 14.0, 0.1]),
            (30.0, [0.525, 0.55, 0.6, 1.0]),
            (40.0, [1.0, 1.0, 1.0, 1.0]),
        ] {
            for (name, p) in ["AF11", "AF12", "AF13", "AF21"].into_iter().zip(want) {
                let got = r.p_b_for(d(name), avg);
                assert!((got - p).abs() < 1e-12, "{name}: p_b({avg}) = {got} ≠ {p}");
            }
        }
        // RFC 2597 §2: within the class, the higher drop precedence is dropped at least as
        // often, strictly so wherever any of them drops early (from AF13's min_th to 2·max_th).
        for i in 0..=80 {
            let avg = i as f64 * 0.5;
            let [a, b, c] = ["AF11", "AF12", "AF13"].map(|n| r.p_b_for(d(n), avg));
            assert!(a <= b && b <= c, "avg {avg}: {a} {b} {c}");
            if avg > 6.0 && avg < 40.0 {
                assert!(b < c, "avg {avg}: AF12 {b} not below AF13 {c}");
            }
            if avg > 9.0 && avg < 40.0 {
                assert!(a < b, "avg {avg}: AF11 {a} not below AF12 {b}");
            }
        }
        let mut cfg = af_profiles();
        cfg.profiles[2].gentle = Some(false);
        let r = Red::new(&cfg, Rate(10_000_000), 1);
        assert_eq!(r.p_b_for(d("AF13"), 19.99), 0.2 * 13.99 / 14.0);
        assert_eq!(r.p_b_for(d("AF13"), 20.0), 1.0);
        assert_eq!(r.p_b_for(d("AF12"), 30.0), 0.55, "the others keep the top-level gentle mode");
    }

    /// The renewal drop rate of FJ93's uniform spacing at a fixed `p_b`: the gap G has
    /// P(G > n) = 1 − n·p_b (the product of 1 − p_b/(1 − k·p_b) telescopes), so E[G] =
    /// Σ_{n ≥ 0, n·p_b < 1} (1 − n·p_b) and a fraction 1/E[G] of arrivals is dropped.
    fn renewal_drop_rate(p_b: f64) -> f64 {
        if p_b <= 0.0 {
            return 0.0;
        }
        let e_gap: f64 = (0..).map(|n| 1.0 - n as f64 * p_b).take_while(|&s| s > 0.0).sum();
        1.0 / e_gap
    }

    /// WRED in the long run: AF11, AF12 and AF13 offered the same load (arrivals in turn), 10
    /// arrivals per 9 departures, so RED must drop a tenth and the shared average settles inside
    /// every profile's linear region. Each class's measured drop ratio matches the closed form
    /// (the renewal rate of its profile's `p_b` at the average each of its packets saw, summed)
    /// within 5 %, and the ratios are ordered AF11 < AF12 < AF13 by wide margins.
    #[test]
    fn wred_drop_ratios_follow_profiles_at_equal_load() {
        let mut r = Red::new(&af_profiles(), Rate(10_000_000), 11);
        let classes = [Dscp::af(1, 1), Dscp::af(1, 2), Dscp::af(1, 3)];
        let mut d = Vec::new();
        let (warmup, n) = (30_000u64, 600_000u64);
        let (mut offered, mut dropped, mut expected) = ([0u64; 3], [0u64; 3], [0f64; 3]);
        let mut avg_max = 0f64;
        for i in 0..n {
            let k = (i % 3) as usize;
            let mut p = pkt(k as u32, 1000, i);
            p.ip.dscp = classes[k].value();
            let v = r.enqueue(p, &mut at(i, &mut d));
            if i >= warmup {
                offered[k] += 1;
                dropped[k] += matches!(v, Verdict::Dropped(_)) as u64;
                expected[k] += renewal_drop_rate(r.p_b_for(classes[k], r.avg));
                avg_max = avg_max.max(r.avg);
            }
            if i % 10 != 9 {
                r.dequeue(&mut at(i, &mut d));
            }
        }
        assert!(r.backlog().packets < 100, "the hard limit never reached");
        assert!(avg_max < 20.0, "the average stayed in the linear regions: max {avg_max}");
        let ratio: Vec<f64> = (0..3).map(|k| dropped[k] as f64 / offered[k] as f64).collect();
        let closed: Vec<f64> = (0..3).map(|k| expected[k] / offered[k] as f64).collect();
        eprintln!("drop ratios AF11/12/13 {ratio:.4?}, closed form {closed:.4?}, max avg {avg_max:.2}");
        for k in 0..3 {
            let rel = dropped[k] as f64 / expected[k] - 1.0;
            assert!(rel.abs() < 0.05, "{}: {} drops, closed form {:.0} ({ratio:?})", classes[k], dropped[k], expected[k]);
        }
        let total: f64 = ratio.iter().sum::<f64>() / 3.0;
        assert!((total - 0.1).abs() < 0.005, "overall drop ratio {total}, a tenth needed");
        assert!(ratio[0] * 2.0 < ratio[1] && ratio[1] * 1.5 < ratio[2], "drop ratios not ordered: {ratio:?}");
    }

    #[test]
    fn bad_profiles_are_refused_with_their_key() {
        let bad = |c: RedConfig| c.validate().unwrap_err();
        let with = |f: &dyn Fn(&mut RedProfileConfig)| {
            let mut c = af_profiles();
            f(&mut c.profiles[1]);
            c
        };
        for (c, want) in [
            (with(&|p| p.max_p = 0.0), "profiles[1].max_p: must be in (0, 1]"),
            (with(&|p| p.max_p = f64::NAN), "profiles[1].max_p: must be in (0, 1]"),
            (with(&|p| p.max_th = Limit::Packets(9)), "profiles[1].max_th: must be above min_th (9p)"),
            (with(&|p| p.max_th = Limit::Bytes(9000)), "profiles[1].max_th: must be in the same unit"),
            (with(&|p| p.min_th = Limit::Bytes(9000)), "profiles[1].min_th: must be in the top-level min_th's unit (packets)"),
            (with(&|p| p.dscp.clear()), "profiles[1].dscp: must list at least one code point"),
            (with(&|p| p.dscp.push(Dscp::af(1, 1))), "profiles[1].dscp: AF11 already belongs to profiles[0]"),
        ] {
            let (k, why) = bad(c);
            assert!(k == "profiles" && why.starts_with(want), "{k}: {why}");
        }
        let mut c = af_profiles();
        c.profiles = vec![c.profiles[0].clone(); 65];
        assert_eq!(bad(c).0, "profiles");
    }

    proptest! {
        /// Conservation and work conservation over random thresholds and weights.
        #[test]
        fn red_conserves(seq in ops(3, 400), lim in 1u64..30, lo in 0u64..10, span in 1u64..10, w_q in 0.001f64..1.0, gentle: bool) {
            let cfg = RedConfig {
                limit: Limit::Packets(lim),
                min_th: Limit::Packets(lo),
                max_th: Limit::Packets(lo + span),
                w_q,
                gentle,
                ..Default::default()
            };
            let mut r = Red::new(&cfg, Rate(10_000_000), 7);
            drive(&mut r, &seq, |_, _, _| Ok(()))?;
        }

        /// The same with WRED profiles, packets marked AF11, AF12, AF13 or BE by flow.
        #[test]
        fn wred_conserves(seq in ops(4, 400), lim in 1u64..30, w_q in 0.001f64..1.0) {
            let cfg = RedConfig { limit: Limit::Packets(lim), w_q, ..af_profiles() };
            const MARKS: [Dscp; 4] = [Dscp::af(1, 1), Dscp::af(1, 2), Dscp::af(1, 3), Dscp::BE];
            let mut r = Marking(Red::new(&cfg, Rate(10_000_000), 7), &MARKS);
            drive(&mut r, &seq, |_, _, _| Ok(()))?;
        }
    }
}
