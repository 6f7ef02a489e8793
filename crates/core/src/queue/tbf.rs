//! Token-bucket shaper (Linux `tbf`, `net/sched/sch_tbf.c`; `kind = "tbf"`): a non-work-
//! conserving discipline that releases its head packet only when a bucket filling at `rate` up
//! to `burst` bytes holds the packet's size (and, with `peakrate`, a second bucket filling at
//! `peakrate` up to `mtu` bytes does too). After an idle period it lets `burst` bytes through
//! back to back; under overload its departures average `rate`.
//!
//! Reading list: `tc-tbf(8)` (rate, burst, limit or latency, peakrate, mtu); `sch_tbf.c`
//! (`tbf_enqueue`: a packet larger than the bucket is dropped; `tbf_dequeue`: peek the child's
//! head, add the time since the last release to both buckets, capped at their depths, release
//! when neither goes negative, else arm the watchdog for the deficit); iproute2 `tc/q_tbf.c`
//! (`latency` → `limit = rate·latency + burst`, with peakrate the smaller of that and
//! `peakrate·latency + mtu`); `docs/models/tbf.md`.
//!
//! The port wakes the discipline through [`QueueDisc::ready_at`] at the time the buckets will
//! hold the head packet (Linux's `qdisc_watchdog_schedule_ns`). The head is taken out of the
//! child when first examined and held until released, as Linux's `qdisc_peek_dequeued` does.
//!
//! Not modelled: GSO segmentation of a packet larger than the bucket (Linux segments a GSO
//! super-packet; here every packet is one segment and one that exceeds `burst` is dropped),
//! `overhead`/`linklayer` corrections, and the kernel's `psched` rate rounding (buckets here
//! are exact integers, `police::TokenBucket`).

use super::fifo::Fifo;
use super::police::TokenBucket;
use super::{Backlog, Build, BuildCtx, QueueConfig, QueueCtx, QueueDisc, Verdict};
use crate::packet::{FlowId, Packet, PacketData};
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Limit, Rate};
use serde::{Deserialize, Serialize};

/// `kind = "tbf"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    /// Long-run rate of departures.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    /// Bucket depth: bytes that may leave back to back after an idle period. A packet larger
    /// than this is dropped on arrival (Linux: larger than the bucket).
    #[serde(with = "serde_units::bytes")]
    pub burst: u64,
    /// Bytes the default child FIFO holds (waiting for tokens). Give `limit`, `latency` or a
    /// `child`, exactly one.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// The longest a packet may wait for tokens, from which `tc` derives the FIFO's byte
    /// limit: `rate·latency + burst` (with `peakrate`, at most `peakrate·latency + mtu`).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Dur>,
    /// Peak rate of the second bucket, above `rate`: spaces even a burst's packets.
    #[serde(default, with = "serde_units::opt_rate", skip_serializing_if = "Option::is_none")]
    pub peakrate: Option<Rate>,
    /// Depth of the peak bucket (only with `peakrate`). Default the link's MTU.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u64>,
    /// The discipline that holds packets waiting for tokens, instead of the byte FIFO of
    /// `limit` (Linux: `tc qdisc add … parent <tbf>:1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<Box<QueueConfig>>,
}

impl TbfConfig {
    /// The default child's byte limit: `limit`, or `tc`'s derivation from `latency`.
    fn fifo_limit(&self, mtu: u64) -> Option<u64> {
        let at = |r: Rate, d: Dur| (r.0 as u128 * d.0 as u128 / 8_000_000_000) as u64;
        self.limit.or_else(|| {
            let l = self.latency?;
            let lim = at(self.rate, l) + self.burst;
            Some(self.peakrate.map_or(lim, |p| lim.min(at(p, l) + mtu)))
        })
    }
}

/// The shaper: its buckets, the head packet waiting for tokens, and the child behind it.
pub struct Tbf {
    bucket: TokenBucket,
    peak: Option<TokenBucket>,
    /// Largest packet the buckets can ever pass (Linux `max_size`).
    max_size: u32,
    head: Option<Packet>,
    child: Box<dyn QueueDisc>,
}

impl Tbf {
    /// `burst` and `mtu` in bytes; `peak` is `(peakrate, mtu)`.
    pub fn new(rate: Rate, burst: u64, peak: Option<(Rate, u64)>, child: Box<dyn QueueDisc>) -> Self {
        let max_size = peak.map_or(burst, |(_, m)| burst.min(m)).min(u32::MAX as u64) as u32;
        Tbf {
            bucket: TokenBucket::new(rate, burst),
            peak: peak.map(|(r, m)| TokenBucket::new(r, m)),
            max_size,
            head: None,
            child,
        }
    }
}

impl QueueDisc for Tbf {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        if pkt.size_bytes > self.max_size {
            return Verdict::Dropped(pkt);
        }
        self.child.enqueue(pkt, cx)
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        if self.head.is_none() {
            self.head = Some(self.child.dequeue(cx)?);
        }
        let len = self.head.as_ref().expect("just filled").size_bytes;
        self.bucket.fill(cx.now);
        if let Some(p) = self.peak.as_mut() {
            p.fill(cx.now);
        }
        if !self.bucket.holds(len) || self.peak.as_ref().is_some_and(|p| !p.holds(len)) {
            return None;
        }
        self.bucket.take(len);
        if let Some(p) = self.peak.as_mut() {
            p.take(len);
        }
        self.head.take()
    }

    fn ready_at(&self, now: SimTime) -> Option<SimTime> {
        let Some(h) = &self.head else { return self.child.ready_at(now) };
        let t = self.bucket.time_for(h.size_bytes, now);
        Some(self.peak.as_ref().map_or(t, |p| t.max(p.time_for(h.size_bytes, now))))
    }

    fn backlog(&self) -> Backlog {
        let b = self.child.backlog();
        let h = self.head.as_ref().map_or(0, |p| p.size_bytes as u64);
        Backlog { packets: b.packets + self.head.is_some() as u64, bytes: b.bytes + h }
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        if let Some(p) = &self.head {
            f(p);
        }
        self.child.for_each_packet(f)
    }

    fn flow_backlogs(&self, f: &mut dyn FnMut(FlowId, u64)) {
        self.child.flow_backlogs(f)
    }
}

impl Build for TbfConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.rate.0 == 0 {
            return Err(("rate", "must be positive".into()));
        }
        if self.burst == 0 {
            return Err(("burst", "must be positive (at least the largest packet, or nothing passes)".into()));
        }
        let given = [self.limit.is_some(), self.latency.is_some(), self.child.is_some()];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(("limit", "give exactly one of limit, latency or child (tc-tbf(8))".into()));
        }
        if self.limit == Some(0) {
            return Err(("limit", "must be positive".into()));
        }
        match (self.peakrate, self.mtu) {
            (Some(p), _) if p.0 <= self.rate.0 => {
                return Err(("peakrate", format!("must exceed rate ({} bps), got {} bps (sch_tbf.c)", self.rate.0, p.0)));
            }
            (None, Some(_)) => return Err(("mtu", "only with peakrate".into())),
            (_, Some(0)) => return Err(("mtu", "must be positive".into())),
            _ => {}
        }
        match &self.child {
            Some(c) => c.validate().map_err(|(k, e)| ("child", format!("{k}: {e}"))),
            None => Ok(()),
        }
    }
    fn ecn(&self) -> bool {
        self.child.as_ref().is_some_and(|c| c.ecn())
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        let mtu = self.mtu.unwrap_or(cx.mtu_bytes as u64);
        let child: Box<dyn QueueDisc> = match &self.child {
            Some(c) => c.build(cx),
            None => Box::new(Fifo::new(Limit::Bytes(self.fifo_limit(mtu).expect("validated").max(1)))),
        };
        Box::new(Tbf::new(self.rate, self.burst, self.peakrate.map(|p| (p, mtu)), child))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;

    fn tbf(toml_text: &str) -> Box<dyn QueueDisc> {
        let c: QueueConfig = toml::from_str(&format!("kind = \"tbf\"\n{toml_text}")).unwrap();
        c.validate().unwrap();
        c.build(&BuildCtx { mtu_bytes: 1500, rate: Rate(100_000_000), seed: 1 })
    }

    fn at(t: u64, d: &mut Vec<Packet>) -> QueueCtx<'_> {
        QueueCtx::new(SimTime(t), d)
    }

    /// What [`link`] saw: departures (time ns, bytes) and arrivals refused.
    struct Run {
        departures: Vec<(u64, u32)>,
        refused: u64,
    }

    /// Drives `q` as a port on a `link_bps` link does: `size`-byte arrivals every `gap` ns
    /// until `end`; the transmitter takes a packet whenever it is free and the discipline
    /// releases one, and otherwise sleeps until the next arrival or the discipline's
    /// `ready_at`, whichever is first.
    fn link(q: &mut dyn QueueDisc, link_bps: u64, size: u32, gap: u64, end: u64) -> Run {
        let tx = Rate(link_bps).tx_time(size as u64).0;
        let (mut next_arr, mut free_at, mut wake, mut seq) = (0u64, 0u64, None::<u64>, 0u64);
        let mut run = Run { departures: Vec::new(), refused: 0 };
        let mut d = Vec::new();
        loop {
            let t = match wake {
                Some(w) if w < next_arr => w,
                _ => next_arr,
            };
            if t > end {
                break;
            }
            if t == next_arr {
                run.refused += matches!(q.enqueue(pkt(0, size, seq), &mut at(t, &mut d)), Verdict::Dropped(_)) as u64;
                seq += 1;
                next_arr += gap;
            }
            if t < free_at {
                continue;
            }
            wake = match q.dequeue(&mut at(t, &mut d)) {
                Some(p) => {
                    run.departures.push((t, p.size_bytes));
                    free_at = t + tx;
                    Some(free_at)
                }
                None => q.ready_at(SimTime(t)).map(|r| r.0),
            };
        }
        run
    }

    /// Under overload (20 Mbit/s offered to a 10 Mbit/s shaper on a 100 Mbit/s link) the bytes
    /// released by any time t never exceed `burst + rate·t` and stay within one packet of it:
    /// the long-run departure rate is `rate`.
    #[test]
    fn long_run_departure_rate_equals_rate_under_overload() {
        let mut q = tbf("rate = \"10Mbps\"\nburst = \"10KB\"\nlimit = \"100KB\"");
        let end = 2_000_000_000;
        let run = link(q.as_mut(), 100_000_000, 1000, 400_000, end);
        let mut sent = 0u64;
        for &(t, b) in &run.departures {
            sent += b as u64;
            let allowed = 10_000 + 10_000_000 * t as u128 / 8_000_000_000;
            assert!(sent as u128 <= allowed, "t = {t}: {sent} B sent, {allowed} allowed");
            // Backlogged from about 8 ms on (the bucket drains by 500 B per 400 µs arrival gap
            // until then): from there a packet leaves as soon as the tokens allow it.
            if t >= 10_000_000 {
                assert!(sent as u128 + 1000 > allowed, "t = {t}: {sent} B sent, {allowed} allowed (idle with a backlog)");
            }
        }
        // The rate over the last second (after the burst and the FIFO filled).
        let late: u64 = run.departures.iter().filter(|&&(t, _)| t >= 1_000_000_000).map(|&(_, b)| b as u64).sum();
        assert!((late as i64 - 1_250_000).abs() <= 1000, "{late} B in the last second, 1,250,000 at 10 Mbit/s");
        assert!(run.refused > 0, "the 100 KB FIFO overflows at twice the rate");
    }

    /// After idle the bucket is full: exactly `burst` bytes leave at once (here 10 packets of
    /// 1000 B, with a transmitter infinitely fast), the 11th waits for 1000 B of tokens,
    /// 800 µs at 10 Mbit/s, and the port is told so.
    #[test]
    fn burst_allowance_is_exactly_burst_after_idle() {
        let mut q = tbf("rate = \"10Mbps\"\nburst = \"10000B\"\nlimit = \"100KB\"");
        let mut d = Vec::new();
        let t0 = 5_000_000_000;
        for s in 0..20 {
            assert!(matches!(q.enqueue(pkt(0, 1000, s), &mut at(t0, &mut d)), Verdict::Enqueued));
        }
        let burst = std::iter::from_fn(|| q.dequeue(&mut at(t0, &mut d))).count();
        assert_eq!(burst, 10);
        assert_eq!(q.ready_at(SimTime(t0)), Some(SimTime(t0 + 800_000)));
        assert!(q.dequeue(&mut at(t0 + 799_999, &mut d)).is_none());
        assert_eq!(q.dequeue(&mut at(t0 + 800_000, &mut d)).unwrap().seq_in_flow, 10);
        assert_eq!(q.backlog(), Backlog { packets: 9, bytes: 9000 });
        // From here one packet per 800 µs: the bucket is empty after each release.
        assert!(q.dequeue(&mut at(t0 + 800_000, &mut d)).is_none());
        assert_eq!(q.ready_at(SimTime(t0 + 800_000)), Some(SimTime(t0 + 1_600_000)));
    }

    /// With a peak rate the burst itself is spaced at `peakrate`: 1000 B at 20 Mbit/s is
    /// 400 µs, so a burst of 10 leaves at 0, 400, …, 3600 µs, before the long-run bucket
    /// empties.
    #[test]
    fn peakrate_spaces_the_burst() {
        let mut q = tbf("rate = \"10Mbps\"\nburst = \"10000B\"\nlimit = \"100KB\"\npeakrate = \"20Mbps\"\nmtu = \"1000B\"");
        let mut d = Vec::new();
        for s in 0..5 {
            q.enqueue(pkt(0, 1000, s), &mut at(0, &mut d));
        }
        let mut t = 0;
        let mut times = Vec::new();
        while q.backlog().packets > 0 {
            match q.dequeue(&mut at(t, &mut d)) {
                Some(_) => times.push(t),
                None => t = q.ready_at(SimTime(t)).unwrap().0,
            }
        }
        // The peak bucket (1000 B deep) starts full: the first goes at 0, then one per 400 µs.
        assert_eq!(times, vec![0, 400_000, 800_000, 1_200_000, 1_600_000]);
        // A 1001-byte packet exceeds the peak bucket (Linux max_size = min(burst, mtu)).
        assert!(matches!(q.enqueue(pkt(0, 1001, 9), &mut at(t, &mut d)), Verdict::Dropped(_)));
    }

    /// The queue limit: a byte FIFO of `limit` behind the head, and `latency` gives tc's
    /// `rate·latency + burst`.
    #[test]
    fn limit_bounds_the_bytes_waiting() {
        let mut d = Vec::new();
        for (cfg, fits) in [("limit = \"5000B\"", 5), ("latency = \"4ms\"", 8)] {
            // latency 4 ms at 8 Mbit/s: 4000 B + burst 4000 B = 8000 B.
            let mut q = tbf(&format!("rate = \"8Mbps\"\nburst = \"4000B\"\n{cfg}"));
            let admitted =
                (0..20).filter(|&s| matches!(q.enqueue(pkt(0, 1000, s), &mut at(0, &mut d)), Verdict::Enqueued)).count();
            assert_eq!(admitted, fits, "{cfg}");
        }
        let c: TbfConfig = match toml::from_str("kind = \"tbf\"\nrate = \"8Mbps\"\nburst = \"4000B\"\nlatency = \"4ms\"\npeakrate = \"16Mbps\"\nmtu = \"1500B\"").unwrap() {
            QueueConfig::Tbf(c) => c,
            _ => unreachable!(),
        };
        // min(4000 + 4000, 16 Mbit/s · 4 ms + 1500 = 9500).
        assert_eq!(c.fifo_limit(1500), Some(8000));
        // A packet larger than the bucket can never pass: refused on arrival.
        let mut q = tbf("rate = \"8Mbps\"\nburst = \"1000B\"\nlimit = \"10KB\"");
        assert!(matches!(q.enqueue(pkt(0, 1001, 0), &mut at(0, &mut d)), Verdict::Dropped(_)));
    }

    #[test]
    fn a_child_discipline_queues_behind_the_shaper() {
        let mut q = tbf("rate = \"8Mbps\"\nburst = \"1000B\"\nchild = { kind = \"fifo\", limit = \"2p\" }");
        let mut d = Vec::new();
        let v: Vec<bool> =
            (0..4).map(|s| matches!(q.enqueue(pkt(0, 1000, s), &mut at(0, &mut d)), Verdict::Enqueued)).collect();
        assert_eq!(v, vec![true, true, false, false]);
        assert!(q.dequeue(&mut at(0, &mut d)).is_some());
        // The head is taken from the child while it waits for tokens: the child has room again.
        assert!(q.dequeue(&mut at(0, &mut d)).is_none());
        assert_eq!(q.backlog().packets, 1);
        assert!(matches!(q.enqueue(pkt(0, 1000, 9), &mut at(0, &mut d)), Verdict::Enqueued));
        assert_eq!(q.ready_at(SimTime(0)), Some(SimTime(1_000_000)));
    }

    #[test]
    fn bad_parameters_are_refused_with_their_key() {
        let bad = |s: &str| {
            let c: QueueConfig = toml::from_str(&format!("kind = \"tbf\"\n{s}")).unwrap();
            c.validate().unwrap_err().0
        };
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"0B\"\nlimit = \"1KB\""), "burst");
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"1KB\""), "limit");
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"1KB\"\nlimit = \"1KB\"\nlatency = \"1ms\""), "limit");
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"1KB\"\nlimit = \"1KB\"\npeakrate = \"1Mbps\""), "peakrate");
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"1KB\"\nlimit = \"1KB\"\nmtu = \"1KB\""), "mtu");
        assert_eq!(bad("rate = \"1Mbps\"\nburst = \"1KB\"\nchild = { kind = \"toy\", limit_pkts = 0 }"), "child");
    }
}
