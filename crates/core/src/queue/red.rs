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
//! Not modelled: byte-mode drop probability scaled by packet size (ns-2 `bytes_`), adaptive RED (the max_p
//! auto-tuning of Floyd et al. 2001), and ns-2's automatic threshold configuration.

use super::{Backlog, Build, BuildCtx, QueueCtx, QueueDisc, Verdict};
use crate::engine::SimRng;
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

/// RED state.
pub struct Red {
    limit: Limit,
    min_th: f64,
    max_th: f64,
    /// The queue (and the thresholds) counted in bytes rather than packets.
    in_bytes: bool,
    max_p: f64,
    w_q: f64,
    gentle: bool,
    ecn: bool,
    /// Link serialisation rate, for `s` and for when the link goes idle.
    rate: crate::units::Rate,
    /// `s`: transmission time of a `mean_pkt_size` packet, ns (≥ 1).
    s_ns: f64,
    q: VecDeque<Packet>,
    bytes: u64,
    avg: f64,
    /// Packets since the last drop while `avg` was in the random-drop region; −1 below `min_th`.
    count: i64,
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
        let (min_th, in_bytes) = split(cfg.min_th);
        let s_ns = (rate.tx_time(cfg.mean_pkt_size).as_nanos() as f64).max(1.0);
        Red {
            limit: cfg.limit,
            min_th: min_th as f64,
            max_th: split(cfg.max_th).0 as f64,
            in_bytes,
            max_p: cfg.max_p,
            w_q: cfg.w_q,
            gentle: cfg.gentle,
            ecn: cfg.ecn,
            rate,
            s_ns,
            q: VecDeque::new(),
            bytes: 0,
            avg: 0.0,
            count: -1,
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
    /// correction, for an average queue `avg` (in the thresholds' unit).
    pub fn p_b(&self, avg: f64) -> f64 {
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

    /// Whether RED drops (or marks) the arriving packet (FJ93 Fig. 2), updating `count`.
    fn early_drop(&mut self) -> Decision {
        let avg = self.avg;
        if avg < self.min_th {
            self.count = -1;
            return Decision::Admit;
        }
        let hard = if self.gentle { 2.0 * self.max_th } else { self.max_th };
        if avg >= hard {
            self.count = 0;
            return Decision::Forced;
        }
        // `count` is the number of unmarked packets since the last mark (FJ93 §7), so the
        // n-th arrival after a drop sees count = n − 1 and the gap is uniform on 1..=1/p_b.
        // (Fig. 2 increments before use, which after a drop gives 1..1/p_b − 1; ns-2 follows
        // the figure, Linux `red_action` draws the gap directly and matches the text.)
        self.count = self.count.max(0);
        let p_b = self.p_b(avg);
        let c = self.count as f64;
        let p_a = if c * p_b >= 1.0 { 1.0 } else { p_b / (1.0 - c * p_b) };
        if self.rng.uniform() < p_a {
            self.count = 0;
            return Decision::Random;
        }
        self.count += 1;
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
        match self.early_drop() {
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

impl Build for RedConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(("max_p", format!("must be in (0, 1], got {}", self.max_p)));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(("w_q", format!("must be in (0, 1], got {}", self.w_q)));
        }
        let ((lo, lo_b), (hi, hi_b)) = (split(self.min_th), split(self.max_th));
        if lo_b != hi_b {
            return Err(("max_th", "must be in the same unit as min_th (both packets or both bytes)".into()));
        }
        if hi <= lo {
            let u = if lo_b { "B" } else { "p" };
            return Err(("max_th", format!("must be above min_th ({lo}{u}), got {hi}{u}")));
        }
        // Thresholds beyond any real buffer would make `2·max_th` lose precision as f64.
        if hi > 1 << 50 {
            return Err(("max_th", format!("must be at most 2^50, got {hi}")));
        }
        if self.mean_pkt_size == 0 {
            return Err(("mean_pkt_size", "must be ≥ 1 B, got 0 B".into()));
        }
        Ok(())
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
    use crate::queue::testutil::{drive, ops, pkt};
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
    }
}
