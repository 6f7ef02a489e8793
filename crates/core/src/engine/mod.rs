//! The event engine: a binary heap ordered by `(time, seq)`, component timers, RNG streams.
//!
//! Simultaneous events run in insertion order because `seq` is a global counter (as in ns-3's
//! `EventKey` and smoltcp's `tests/netsim.rs`). The heap never holds more than one pending
//! departure per busy port, one arrival per non-empty delay line, and about one entry per armed
//! timer (see [`Timers`]), so its size follows busy elements, not packets in flight.

pub mod rng;
pub mod timers;

use crate::time::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub use rng::SimRng;
pub use timers::{Owner, TimerBlock, TimerCtx, TimerKind, Timers};

/// What happens when an event fires. Components are addressed by dense indices.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The port finished serialising its head-of-line packet.
    PortTxDone(u32),
    /// The earliest packet in the port's delay line reaches the far node.
    LinkArrival(u32),
    /// The receiving interface at the far end of the port polls its ring (GRO,
    /// [`crate::link::gro`]).
    GroPoll(u32),
    /// A timer slot may be due (checked against [`Timers`], which names its owner and kind).
    Timer(u32),
}

#[derive(Copy, Clone, Debug)]
struct Entry {
    time: SimTime,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    #[inline(always)]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Entry {
    /// `(time, seq)` as one number, so that an order test is one wide comparison without
    /// branches (a heap operation makes two per level).
    #[inline(always)]
    fn key(&self) -> u128 {
        (self.time.0 as u128) << 64 | self.seq as u128
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    #[inline(always)]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// The pending-event set.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    /// The entry at the top of `heap` was already handed out by `pop_until` and is logically
    /// gone. Its removal is deferred: the next `push` overwrites it in place (one sift-down)
    /// instead of a pop (a sift to the bottom and back up) followed by a push (a sift-up).
    /// Handlers usually schedule something, so most pops end this way. The pop order is
    /// unchanged: `(time, seq)` keys are unique, so every valid heap yields the same sequence.
    top_taken: bool,
    next_seq: u64,
    /// Events popped so far (the run's event count).
    popped: u64,
}

impl EventQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `time`.
    pub fn push(&mut self, time: SimTime, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = Entry { time, seq, event };
        if self.top_taken {
            self.top_taken = false;
            *self.heap.peek_mut().expect("a taken top is still stored") = e;
        } else {
            self.heap.push(e);
        }
    }

    /// Removes and returns the earliest event if it is due no later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, Event)> {
        if self.top_taken {
            self.top_taken = false;
            self.heap.pop();
        }
        let e = *self.heap.peek()?;
        if e.time > until {
            return None;
        }
        self.top_taken = true;
        self.popped += 1;
        Some((e.time, e.event))
    }

    /// When the earliest pending event is due, if any (for a real-time driver, which sleeps
    /// until then). Popping order is unchanged by asking.
    pub fn next_time(&mut self) -> Option<SimTime> {
        if self.top_taken {
            self.top_taken = false;
            self.heap.pop();
        }
        self.heap.peek().map(|e| e.time)
    }

    pub fn len(&self) -> usize {
        self.heap.len() - self.top_taken as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of events dispatched so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(SimTime(5), Event::PortTxDone(1));
        q.push(SimTime(3), Event::PortTxDone(2));
        q.push(SimTime(5), Event::PortTxDone(3));
        q.push(SimTime(3), Event::PortTxDone(4));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(SimTime(10))).collect();
        assert_eq!(
            order,
            vec![
                (SimTime(3), Event::PortTxDone(2)),
                (SimTime(3), Event::PortTxDone(4)),
                (SimTime(5), Event::PortTxDone(1)),
                (SimTime(5), Event::PortTxDone(3)),
            ]
        );
        assert_eq!(q.popped(), 4);
    }

    proptest::proptest! {
        /// Pops come out sorted by (time, insertion order), whatever the push/pop interleaving.
        #[test]
        fn matches_a_sorted_reference(ops in proptest::collection::vec((0u64..50, proptest::bool::ANY), 1..400)) {
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, u64)> = Vec::new();
            let mut seq = 0u64;
            for (t, pop) in ops {
                if pop {
                    reference.sort();
                    let want = if reference.is_empty() { None } else { Some(reference.remove(0)) };
                    let got = q.pop_until(SimTime(u64::MAX)).map(|(t, e)| match e {
                        Event::PortTxDone(s) => (t.0, s as u64),
                        _ => unreachable!(),
                    });
                    proptest::prop_assert_eq!(got, want);
                } else {
                    q.push(SimTime(t), Event::PortTxDone(seq as u32));
                    reference.push((t, seq));
                    seq += 1;
                }
                proptest::prop_assert_eq!(q.len(), reference.len());
            }
        }
    }

    #[test]
    fn next_time_peeks_without_popping() {
        let mut q = EventQueue::new();
        assert_eq!(q.next_time(), None);
        q.push(SimTime(7), Event::PortTxDone(1));
        q.push(SimTime(4), Event::PortTxDone(2));
        assert_eq!(q.next_time(), Some(SimTime(4)));
        assert_eq!(q.pop_until(SimTime(10)), Some((SimTime(4), Event::PortTxDone(2))));
        assert_eq!(q.next_time(), Some(SimTime(7)));
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn pop_until_respects_horizon() {
        let mut q = EventQueue::new();
        q.push(SimTime(11), Event::PortTxDone(1));
        assert!(q.pop_until(SimTime(10)).is_none());
        assert_eq!(q.len(), 1);
    }
}
