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

use std::collections::VecDeque;

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

    /// Bytes of the set inside `[a, b)`. Costs O(log n + ranges inside).
    pub fn bytes_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut i = self.r.partition_point(|&(_, e)| e <= a);
        let mut n = 0;
        while let Some(&(s, e)) = self.r.get(i) {
            if s >= b {
                break;
            }
            n += e.min(b) - s.max(a);
            i += 1;
        }
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
        let s = s.max(self.snd_una);
        let (at, below) = (self.at, &mut self.below);
        let new = self.sacked.insert(s, e, |a, b| {
            for k in 0..2 {
                below[k] += b.min(at[k]).saturating_sub(a);
            }
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
