//! Sequence-range bookkeeping: the receiver's out-of-order queue and SACK blocks (RFC 2018), and
//! the sender's SACK scoreboard (RFC 6675 §3–4).
//!
//! Both are a sorted deque of disjoint, non-touching `[start, end)` byte ranges, so every
//! operation costs O(log n) plus the ranges it merges or removes (each range is created once and
//! removed once: amortised O(1)). Nothing here is per byte or per segment, and nothing allocates
//! once the deque has grown to the largest number of holes seen.
//!
//! The scoreboard additionally keeps, for two *markers* (sequence numbers that only move
//! forward), the number of SACKed bytes between `snd_una` and the marker. With those counts the
//! sender evaluates RFC 6675's `SetPipe()` in O(1) instead of walking every octet (see
//! [`Scoreboard::pipe`]).
//!
//! With RACK-TLP (RFC 8985) the sender also keeps a [`SentQueue`]: one record per segment with
//! its latest (re)transmission time, SACKed/lost/retransmitted flags, a time-ordered list of
//! transmissions, and the byte counts that give `pipe` in O(1) when the lost set is no longer a
//! prefix of the sequence space (Linux's `packets_out - sacked_out - lost_out + retrans_out`).
//! It exists only when RACK is on, so the RFC 6675 path pays nothing for it.

use crate::time::SimTime;
use std::collections::{BTreeSet, VecDeque};

/// A set of byte ranges, kept sorted, disjoint and non-touching.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    r: VecDeque<(u64, u64)>,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.r.is_empty()
    }
    pub fn len(&self) -> usize {
        self.r.len()
    }
    pub fn clear(&mut self) {
        self.r.clear();
    }
    pub fn first(&self) -> Option<(u64, u64)> {
        self.r.front().copied()
    }
    pub fn last(&self) -> Option<(u64, u64)> {
        self.r.back().copied()
    }
    /// Bytes from `x` to the end of the last range (0 when empty or ending at or before `x`):
    /// the span a receiver's out-of-order data reaches beyond `rcv_nxt`.
    pub fn span_from(&self, x: u64) -> u64 {
        self.last().map_or(0, |(_, e)| e.saturating_sub(x))
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.r.iter().copied()
    }
    /// Index of the first range whose end is at or after `x` (a range touching `x` included).
    fn first_ending_at_or_after(&self, x: u64) -> usize {
        self.r.partition_point(|&(_, e)| e < x)
    }

    /// Adds `[s, e)`. Calls `gap(a, b)` for every sub-range that was not yet in the set, in order,
    /// and returns the number of new bytes.
    pub fn insert(&mut self, s: u64, e: u64, mut gap: impl FnMut(u64, u64)) -> u64 {
        if s >= e {
            return 0;
        }
        let i = self.first_ending_at_or_after(s);
        let mut j = i;
        let mut cur = s;
        let mut new = 0;
        let (mut lo, mut hi) = (s, e);
        while j < self.r.len() && self.r[j].0 <= e {
            let (rs, re) = self.r[j];
            if rs > cur {
                gap(cur, rs);
                new += rs - cur;
            }
            cur = cur.max(re);
            lo = lo.min(rs);
            hi = hi.max(re);
            j += 1;
        }
        if cur < e {
            gap(cur, e);
            new += e - cur;
        }
        if j == i {
            self.r.insert(i, (lo, hi));
        } else {
            self.r[i] = (lo, hi);
            self.r.drain(i + 1..j);
        }
        new
    }

    /// Removes every byte below `x`; calls `removed(a, b)` for each removed piece.
    pub fn remove_below(&mut self, x: u64, mut removed: impl FnMut(u64, u64)) {
        while let Some(&(s, e)) = self.r.front() {
            if s >= x {
                break;
            }
            if e <= x {
                removed(s, e);
                self.r.pop_front();
            } else {
                removed(s, x);
                self.r[0].0 = x;
                break;
            }
        }
    }

    /// The range containing byte `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.r.partition_point(|&(_, e)| e <= x);
        self.r.get(i).copied().filter(|&(s, _)| s <= x)
    }

    /// The first byte at or after `x` that is not in the set, and the start of the next range
    /// above it (if any).
    pub fn next_absent(&self, x: u64) -> (u64, Option<u64>) {
        let i = self.r.partition_point(|&(_, e)| e <= x);
        match self.r.get(i) {
            Some(&(s, e)) if s <= x => (e, self.r.get(i + 1).map(|r| r.0)),
            Some(&(s, _)) => (x, Some(s)),
            None => (x, None),
        }
    }

    /// Calls `f(s, e)` for every piece of the set inside `[a, b)`, in order. Costs O(log n +
    /// ranges inside).
    pub fn each_in(&self, a: u64, b: u64, mut f: impl FnMut(u64, u64)) {
        if a >= b {
            return;
        }
        let mut i = self.r.partition_point(|&(_, e)| e <= a);
        while let Some(&(s, e)) = self.r.get(i) {
            if s >= b {
                break;
            }
            f(s.max(a), e.min(b));
            i += 1;
        }
    }

    /// Bytes of the set inside `[a, b)`. Costs O(log n + ranges inside).
    pub fn bytes_in(&self, a: u64, b: u64) -> u64 {
        let mut n = 0;
        self.each_in(a, b, |s, e| n += e - s);
        n
    }
}

/// Which scoreboard marker.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// RFC 6675 `HighRxt`: retransmissions have covered every un-SACKed byte below it.
    HighRxt = 0,
    /// Every un-SACKed byte below it is deemed lost by a timeout or by NewReno's partial-ACK rule
    /// (the SACK-based `IsLost()` frontier is computed separately).
    Lost = 1,
}

/// The sender's record of SACKed data above `snd_una` (RFC 6675 §3).
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    sacked: RangeSet,
    sacked_bytes: u64,
    /// Marker positions and SACKed bytes in `[snd_una, marker)`.
    at: [u64; 2],
    below: [u64; 2],
    snd_una: u64,
}

impl Scoreboard {
    pub fn new(snd_una: u64) -> Self {
        Scoreboard { snd_una, at: [snd_una; 2], ..Default::default() }
    }

    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }
    pub fn ranges(&self) -> &RangeSet {
        &self.sacked
    }
    pub fn marker(&self, m: Marker) -> u64 {
        self.at[m as usize]
    }
    /// SACKed bytes in `[snd_una, marker)`.
    pub fn sacked_below_marker(&self, m: Marker) -> u64 {
        self.below[m as usize]
    }
    /// Highest SACKed byte + 1, or `snd_una` when nothing is SACKed.
    pub fn high_sacked(&self) -> u64 {
        self.sacked.last().map_or(self.snd_una, |r| r.1)
    }

    /// RFC 6675 `Update()`: records SACK block `[s, e)` (clipped to `snd_una`). Returns the number
    /// of newly SACKed bytes.
    pub fn update(&mut self, s: u64, e: u64) -> u64 {
        self.update_with(s, e, |_, _| {})
    }

    /// [`update`](Self::update), also calling `new(a, b)` for every newly SACKed piece, in order.
    pub fn update_with(&mut self, s: u64, e: u64, mut new_piece: impl FnMut(u64, u64)) -> u64 {
        let s = s.max(self.snd_una);
        let (at, below) = (self.at, &mut self.below);
        let new = self.sacked.insert(s, e, |a, b| {
            for k in 0..2 {
                below[k] += b.min(at[k]).saturating_sub(a);
            }
            new_piece(a, b);
        });
        self.sacked_bytes += new;
        new
    }

    /// The cumulative ACK point moved to `una`: forget ranges below it; markers never lag it.
    pub fn advance(&mut self, una: u64) {
        if una <= self.snd_una {
            return;
        }
        let (at, below, total) = (self.at, &mut self.below, &mut self.sacked_bytes);
        self.sacked.remove_below(una, |a, b| {
            *total -= b - a;
            for k in 0..2 {
                below[k] -= b.min(at[k]).saturating_sub(a);
            }
        });
        self.snd_una = una;
        for k in 0..2 {
            if self.at[k] < una {
                // Every SACKed byte below the old marker was below `una` and has just been removed.
                debug_assert_eq!(self.below[k], 0, "scoreboard marker {k} count out of step");
                self.at[k] = una;
                self.below[k] = 0;
            }
        }
    }

    /// Moves marker `m` forward to `x` (no-op if it is already there or beyond).
    pub fn raise(&mut self, m: Marker, x: u64) {
        let k = m as usize;
        if x <= self.at[k] {
            return;
        }
        self.below[k] += self.sacked.bytes_in(self.at[k], x);
        self.at[k] = x;
    }

    /// Puts marker `m` back to `snd_una` (e.g. `HighRxt` after a timeout).
    pub fn reset(&mut self, m: Marker) {
        self.at[m as usize] = self.snd_una;
        self.below[m as usize] = 0;
    }

    /// Forgets all SACK information (the markers stay where they are, with zero counts).
    pub fn clear(&mut self) {
        self.sacked.clear();
        self.sacked_bytes = 0;
        self.below = [0; 2];
    }

    /// The RFC 6675 `IsLost()` frontier: every un-SACKed byte below the returned sequence number
    /// has at least `dupthresh` discontiguous SACKed ranges, or more than
    /// `(dupthresh - 1) * mss` SACKed bytes, above it (RFC 6675 §4, `IsLost`). Also returns the
    /// SACKed bytes at or above the frontier. Walks at most `dupthresh` ranges from the top.
    pub fn lost_frontier(&self, dupthresh: u32, mss: u64) -> (u64, u64) {
        let limit = (dupthresh as u64 - 1) * mss;
        let mut acc = 0;
        for (n, (s, e)) in self.sacked.iter().rev().enumerate() {
            acc += e - s;
            if n as u32 + 1 >= dupthresh || acc > limit {
                return (s, acc);
            }
        }
        (self.snd_una, self.sacked_bytes)
    }

    /// RFC 6675 `SetPipe()` in O(1): bytes the sender believes are in the network, given the
    /// highest byte sent and the loss frontier `lost` (bytes below it and un-SACKed are lost).
    /// `sacked_at_or_above_lost` is the SACKed byte count at or above `lost`.
    ///
    /// Per octet between `snd_una` and `snd_max`, RFC 6675 counts 1 if it is neither SACKed nor
    /// lost, plus 1 if it has been retransmitted. Retransmissions cover exactly the un-SACKed
    /// bytes below `HighRxt`, so, with `L = lost` and `R = HighRxt`:
    /// `pipe = unsacked(una, max) - unsacked(R, L) + unsacked(L, R)` (one term is always 0).
    pub fn pipe(&self, snd_max: u64, lost: u64, sacked_at_or_above_lost: u64) -> u64 {
        let una = self.snd_una;
        let lost = lost.clamp(una, snd_max.max(una));
        let sacked_below_lost = self.sacked_bytes - sacked_at_or_above_lost;
        let r = self.at[Marker::HighRxt as usize];
        let sacked_below_r = self.below[Marker::HighRxt as usize];
        let base = (snd_max - una) - self.sacked_bytes;
        if lost >= r {
            let unsacked_r_l = (lost - r) - (sacked_below_lost - sacked_below_r);
            base - unsacked_r_l
        } else {
            let unsacked_l_r = (r - lost) - (sacked_below_r - sacked_below_lost);
            base + unsacked_l_r
        }
    }

    /// Debug check: recount the marker counts from scratch (O(n)); used by tests.
    #[cfg(test)]
    pub fn check(&self) {
        let total: u64 = self.sacked.iter().map(|(s, e)| e - s).sum();
        assert_eq!(total, self.sacked_bytes, "sacked byte total");
        for k in 0..2 {
            assert!(self.at[k] >= self.snd_una);
            assert_eq!(self.sacked.bytes_in(self.snd_una, self.at[k]), self.below[k], "marker {k}");
        }
        if let Some((s, _)) = self.sacked.first() {
            assert!(s >= self.snd_una);
        }
    }
}

/// One segment as last sent (RFC 8985 §5.2 per-segment variables).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SentSeg {
    pub seq: u64,
    pub end: u64,
    /// `Segment.xmit_ts`: time of the latest (re)transmission.
    pub xmit_ts: SimTime,
    /// Number of that transmission on the connection: orders transmissions made at the same
    /// instant (RFC 8985 breaks such ties by `end_seq`, which is wrong for a retransmission sent
    /// just after new data; real clocks rarely tie, the simulator's often do).
    pub xmit_no: u64,
    /// Transmissions so far (1: never retransmitted, `Segment.retransmitted` is `tx > 1`).
    pub tx: u32,
    pub sacked: bool,
    /// Deemed lost (by RACK or a timeout) and not SACKed since (`Segment.lost`).
    pub lost: bool,
    /// A retransmission of it is in flight and not deemed lost (Linux `TCPCB_SACKED_RETRANS`).
    pub rxt_out: bool,
}

impl SentSeg {
    pub fn len(&self) -> u64 {
        self.end - self.seq
    }
    pub fn retransmitted(&self) -> bool {
        self.tx > 1
    }
}

/// What [`SentQueue::walk_by_time`] does with one transmission.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Walk {
    /// Keep it and look at the next.
    Keep,
    /// Mark the segment lost (it leaves the time order until it is retransmitted) and go on.
    Lost,
    /// Keep it and stop walking.
    Stop,
}

/// The sender's per-segment record for RACK (RFC 8985 §5.2), in sequence order, with the
/// transmissions in time order (Linux `tsorted_sent_queue`).
///
/// Segments are identified by an id counting first transmissions; since new data goes out in
/// sequence order, ids are in sequence order too, and `segs[id - base]` is O(1).
#[derive(Clone, Debug, Default)]
pub struct SentQueue {
    segs: VecDeque<SentSeg>,
    /// Id of `segs[0]`.
    base: u64,
    /// (id, tx) per transmission, oldest first. An entry is stale once its segment is acked,
    /// SACKed, sent again, or deemed lost and not yet resent; stale entries are dropped lazily.
    by_time: VecDeque<(u64, u32)>,
    /// Lost segments awaiting retransmission, by id (= sequence order).
    to_rxt: BTreeSet<u64>,
    sacked_bytes: u64,
    sacked_segs: u64,
    /// Transmissions so far (the next `xmit_no`).
    xmits: u64,
    /// Bytes of un-SACKed segments deemed lost.
    lost_bytes: u64,
    /// Bytes of un-SACKed segments with a retransmission in flight.
    rxt_out_bytes: u64,
    /// Segments deemed lost so far, counting a lost retransmission again (Linux `tp->lost`).
    loss_marks: u64,
}

impl SentQueue {
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.segs.len()
    }
    pub fn sacked_segs(&self) -> u64 {
        self.sacked_segs
    }
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }
    /// Segments deemed lost so far, a lost retransmission counting again.
    pub fn loss_marks(&self) -> u64 {
        self.loss_marks
    }
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &SentSeg> + '_ {
        self.segs.iter()
    }
    pub fn last(&self) -> Option<SentSeg> {
        self.segs.back().copied()
    }
    fn live(&self, id: u64, tx: u32) -> bool {
        match id.checked_sub(self.base).and_then(|i| self.segs.get(i as usize)) {
            Some(s) => s.tx == tx && !s.sacked && !(s.lost && !s.rxt_out),
            None => false,
        }
    }
    /// Id of the segment starting at `seq`.
    pub fn id_at(&self, seq: u64) -> Option<u64> {
        let i = self.segs.partition_point(|s| s.seq < seq);
        self.segs.get(i).filter(|s| s.seq == seq).map(|_| self.base + i as u64)
    }
    pub fn get(&self, id: u64) -> Option<&SentSeg> {
        id.checked_sub(self.base).and_then(|i| self.segs.get(i as usize))
    }
    /// Ids of the segments held, in sequence order.
    pub fn ids(&self) -> std::ops::Range<u64> {
        self.base..self.base + self.segs.len() as u64
    }

    /// New data `[seq, end)` sent at `now`.
    pub fn push(&mut self, seq: u64, end: u64, now: SimTime) {
        debug_assert!(self.segs.back().map_or(true, |b| b.end == seq), "new data {seq} not contiguous");
        let id = self.base + self.segs.len() as u64;
        let xmit_no = self.xmits;
        self.xmits += 1;
        self.segs.push_back(SentSeg {
            seq,
            end,
            xmit_ts: now,
            xmit_no,
            tx: 1,
            sacked: false,
            lost: false,
            rxt_out: false,
        });
        self.by_time.push_back((id, 1));
    }

    /// Segment `id` sent again at `now` (a repair of a lost segment, or a loss probe).
    pub fn resent(&mut self, id: u64, now: SimTime) {
        let i = (id - self.base) as usize;
        let s = &mut self.segs[i];
        debug_assert!(!s.sacked, "resending SACKed segment {}", s.seq);
        s.tx += 1;
        s.xmit_ts = now;
        s.xmit_no = self.xmits;
        self.xmits += 1;
        if !s.rxt_out {
            s.rxt_out = true;
            self.rxt_out_bytes += s.end - s.seq;
        }
        let tx = s.tx;
        self.to_rxt.remove(&id);
        self.by_time.push_back((id, tx));
    }

    /// The lowest lost segment not yet resent: (seq, len).
    pub fn next_lost(&self) -> Option<(u64, u64)> {
        self.to_rxt.first().map(|&id| {
            let s = &self.segs[(id - self.base) as usize];
            (s.seq, s.len())
        })
    }

    /// Deems segment `id` lost: it leaves `pipe` and waits for retransmission. A segment whose
    /// retransmission was in flight counts as a lost retransmission.
    pub fn mark_lost(&mut self, id: u64) {
        let i = (id - self.base) as usize;
        let s = &mut self.segs[i];
        if s.sacked {
            return;
        }
        let len = s.end - s.seq;
        if !s.lost || s.rxt_out {
            self.loss_marks += 1;
        }
        if !s.lost {
            s.lost = true;
            self.lost_bytes += len;
        }
        if s.rxt_out {
            s.rxt_out = false;
            self.rxt_out_bytes -= len;
        }
        self.to_rxt.insert(id);
    }

    /// Removes a delivered segment's lost/retransmitted state from the counts.
    fn settle(s: &SentSeg, id: u64, lost_bytes: &mut u64, rxt_out_bytes: &mut u64, to_rxt: &mut BTreeSet<u64>) {
        if s.lost {
            *lost_bytes -= s.len();
            if !s.rxt_out {
                to_rxt.remove(&id);
            }
        }
        if s.rxt_out {
            *rxt_out_bytes -= s.len();
        }
    }

    /// Newly SACKed bytes `[a, b)`: every segment wholly inside becomes SACKed and is passed to
    /// `delivered`. (The receiver SACKs what arrived, and every transmission of a segment covers
    /// the same bytes, so SACK edges fall on segment edges.)
    pub fn sack(&mut self, a: u64, b: u64, mut delivered: impl FnMut(&SentSeg)) {
        let mut i = self.segs.partition_point(|s| s.end <= a);
        while let Some(s) = self.segs.get_mut(i) {
            if s.seq >= b {
                break;
            }
            if s.seq >= a && s.end <= b && !s.sacked {
                Self::settle(s, self.base + i as u64, &mut self.lost_bytes, &mut self.rxt_out_bytes, &mut self.to_rxt);
                s.sacked = true;
                s.lost = false;
                s.rxt_out = false;
                self.sacked_bytes += s.end - s.seq;
                self.sacked_segs += 1;
                delivered(s);
            }
            i += 1;
        }
    }

    /// The cumulative ACK reached `una`: segments wholly below it leave; those not SACKed before
    /// are passed to `delivered`, in sequence order.
    pub fn ack(&mut self, una: u64, mut delivered: impl FnMut(&SentSeg)) {
        while let Some(s) = self.segs.front().copied() {
            if s.end > una {
                break;
            }
            if s.sacked {
                self.sacked_bytes -= s.len();
                self.sacked_segs -= 1;
            } else {
                Self::settle(&s, self.base, &mut self.lost_bytes, &mut self.rxt_out_bytes, &mut self.to_rxt);
                delivered(&s);
            }
            self.segs.pop_front();
            self.base += 1;
        }
        while matches!(self.by_time.front(), Some(&(id, _)) if id < self.base) {
            self.by_time.pop_front();
        }
    }

    /// RFC 6675 `SetPipe()` from the per-segment state: every un-SACKed byte counts once unless
    /// deemed lost, and once more while a retransmission of it is in flight.
    pub fn pipe(&self, snd_una: u64, snd_max: u64) -> u64 {
        let held = self.segs.back().map_or(snd_una, |s| s.end).max(snd_una);
        debug_assert!(held == snd_max || self.segs.is_empty(), "sent queue ends at {held}, snd_max {snd_max}");
        (snd_max - snd_una) - self.sacked_bytes - self.lost_bytes + self.rxt_out_bytes
    }

    /// Walks the live transmissions oldest first, letting `f` keep, mark lost, or stop; stale
    /// entries met on the way are dropped. Costs the entries visited.
    pub fn walk_by_time(&mut self, mut f: impl FnMut(&SentSeg) -> Walk) {
        let (mut r, mut w) = (0, 0);
        let n = self.by_time.len();
        while r < n {
            let (id, tx) = self.by_time[r];
            if !self.live(id, tx) {
                r += 1;
                continue;
            }
            let s = self.segs[(id - self.base) as usize];
            match f(&s) {
                Walk::Stop => break,
                Walk::Keep => {
                    self.by_time[w] = (id, tx);
                    w += 1;
                }
                Walk::Lost => self.mark_lost(id),
            }
            r += 1;
        }
        if r > w {
            self.by_time.drain(w..r);
        }
    }

    /// Debug check: recount every byte count from the segments (O(n)); used by tests.
    #[cfg(test)]
    pub fn check(&self) {
        let sum = |f: &dyn Fn(&SentSeg) -> bool| self.segs.iter().filter(|s| f(s)).map(|s| s.len()).sum::<u64>();
        assert_eq!(sum(&|s| s.sacked), self.sacked_bytes, "sacked bytes");
        assert_eq!(sum(&|s| s.lost), self.lost_bytes, "lost bytes");
        assert_eq!(sum(&|s| s.rxt_out), self.rxt_out_bytes, "retransmitted bytes in flight");
        assert_eq!(self.segs.iter().filter(|s| s.sacked).count() as u64, self.sacked_segs);
        let waiting: Vec<u64> =
            self.ids().filter(|&id| matches!(self.get(id), Some(s) if s.lost && !s.rxt_out)).collect();
        assert_eq!(self.to_rxt.iter().copied().collect::<Vec<_>>(), waiting, "segments awaiting retransmission");
        for s in &self.segs {
            assert!(!(s.sacked && (s.lost || s.rxt_out)), "segment {} SACKed and lost", s.seq);
        }
        for w in self.segs.iter().collect::<Vec<_>>().windows(2) {
            assert_eq!(w[0].end, w[1].seq, "segments not contiguous");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn insert_merges_and_reports_gaps() {
        let mut r = RangeSet::default();
        let mut gaps = vec![];
        assert_eq!(r.insert(10, 20, |a, b| gaps.push((a, b))), 10);
        assert_eq!(r.insert(30, 40, |a, b| gaps.push((a, b))), 10);
        gaps.clear();
        // Covers both and the space around them; touching ranges merge.
        assert_eq!(r.insert(5, 45, |a, b| gaps.push((a, b))), 20);
        assert_eq!(gaps, vec![(5, 10), (20, 30), (40, 45)]);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 45)]);
        assert_eq!(r.insert(45, 50, |_, _| {}), 5);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(5, 50)]);
        assert_eq!(r.next_absent(7), (50, None));
        assert_eq!(r.next_absent(2), (2, Some(5)));
        assert_eq!(r.containing(49), Some((5, 50)));
        assert_eq!(r.containing(50), None);
    }

    #[test]
    fn frontier_and_pipe_by_hand() {
        // mss 100; una 0, sent up to 1000; segments 1, 3, 4, 5 SACKed; 0 and 2 are holes.
        let mut b = Scoreboard::new(0);
        b.update(100, 200);
        b.update(300, 600);
        // Two ranges; bytes above 200 = 300 > 2*mss -> everything un-SACKed below 300 is lost.
        assert_eq!(b.lost_frontier(3, 100), (300, 300));
        // pipe: un-SACKed 600 bytes, minus lost 0..100 and 200..300 = 400.
        assert_eq!(b.pipe(1000, 300, 300), 400);
        // Retransmit hole 0: HighRxt 100 -> pipe 500.
        b.raise(Marker::HighRxt, 100);
        assert_eq!(b.pipe(1000, 300, 300), 500);
        // Skip over SACKed 100..200, retransmit 200..300: HighRxt 300 -> pipe 600.
        b.raise(Marker::HighRxt, 300);
        assert_eq!(b.sacked_below_marker(Marker::HighRxt), 100);
        assert_eq!(b.pipe(1000, 300, 300), 600);
        b.check();
        // Cumulative ACK to 200.
        b.advance(200);
        b.check();
        assert_eq!(b.sacked_bytes(), 300);
        assert_eq!(b.pipe(1000, 300, 300), 500);
    }

    proptest! {
        #[test]
        fn scoreboard_counts_match_recount(ops in proptest::collection::vec((0u8..4, 0u64..2000, 1u64..300), 1..80)) {
            let mut b = Scoreboard::new(0);
            let mut una = 0;
            for (op, x, len) in ops {
                match op {
                    0 | 1 => { b.update(x, x + len); }
                    2 => { una = una.max(x / 2); b.advance(una); }
                    _ => { let m = if x % 2 == 0 { Marker::HighRxt } else { Marker::Lost }; b.raise(m, x); }
                }
                b.check();
                // SetPipe by brute force over octets, against the O(1) formula.
                let snd_max = 2400;
                let (l, _) = b.lost_frontier(3, 100);
                let l = l.max(b.marker(Marker::Lost));
                let above = b.sacked_bytes() - b.ranges().bytes_in(una, l);
                let r = b.marker(Marker::HighRxt);
                let mut brute = 0;
                for o in una..snd_max {
                    if b.ranges().containing(o).is_some() { continue; }
                    if o >= l { brute += 1; }
                    if o < r { brute += 1; }
                }
                prop_assert_eq!(b.pipe(snd_max, l, above), brute);
            }
        }
    }
}
