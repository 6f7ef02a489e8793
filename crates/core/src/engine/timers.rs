//! Component timers with at most a few heap entries per timer.
//!
//! Every component that needs timers (a transport endpoint, an application, a node agent, a
//! channel) registers a *block* of timer slots when the world is built, one slot per timer kind
//! it declares. A kind is a small number local to its component ([`TimerKind`]): TCP's
//! retransmission timer and a DASH player's tick may both be kind 0, because they live in
//! different blocks. The engine only stores deadlines and hands a due timer back to the owner
//! of its block; it never enumerates kinds, so a new component adds timer kinds in its own file
//! (quinn `connection/timer.rs` keeps a fixed, enum-indexed table per connection in the same
//! spirit).
//!
//! Event economy: a transport re-arms its retransmission timer on almost every ACK. Pushing a
//! heap entry each time would make the heap grow with packets, not with components. A heap
//! entry is pushed only when a deadline moves *earlier* than the entry already pending; when an
//! entry fires and the deadline has moved later, the entry is re-pushed at the new deadline.

use super::{Event, EventQueue};
use crate::time::SimTime;

/// A timer kind, local to the component that owns it (kinds `0..n` for a block of `n`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerKind(pub u8);

/// Who a block of timers belongs to: an opaque id the world assigns and maps back to the
/// component when one of the block's timers fires.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner(pub u32);

/// A component's block of timer slots: `kinds` consecutive slots from `base`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TimerBlock {
    base: u32,
    kinds: u8,
}

impl TimerBlock {
    /// A block with no timers (for components that never arm one).
    pub const EMPTY: TimerBlock = TimerBlock { base: 0, kinds: 0 };

    /// Number of kinds the block holds.
    pub fn kinds(&self) -> u8 {
        self.kinds
    }

    #[inline]
    fn slot(&self, kind: TimerKind) -> usize {
        assert!(
            kind.0 < self.kinds,
            "timer kind {} used by a component that declared {} kind(s) (slots from {})",
            kind.0,
            self.kinds,
            self.base
        );
        self.base as usize + kind.0 as usize
    }
}

/// Deadlines of every component's timers.
#[derive(Clone, Debug, Default)]
pub struct Timers {
    deadline: Vec<SimTime>,
    /// Earliest heap entry pending for each slot (NEVER if none known).
    pending: Vec<SimTime>,
    /// Owner and kind of each slot.
    owner: Vec<(Owner, TimerKind)>,
}

impl Timers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `kinds` timers for `owner` and returns their block.
    ///
    /// # Panics
    /// If more than 2^32 slots are registered in all.
    pub fn register(&mut self, owner: Owner, kinds: u8) -> TimerBlock {
        let base = u32::try_from(self.deadline.len()).expect("fewer than 2^32 timer slots");
        for k in 0..kinds {
            self.deadline.push(SimTime::NEVER);
            self.pending.push(SimTime::NEVER);
            self.owner.push((owner, TimerKind(k)));
        }
        TimerBlock { base, kinds }
    }

    /// Arms `kind` of `block` at `at`, pushing a heap entry only when the deadline moves
    /// earlier than the entry already pending.
    #[inline]
    pub fn set(&mut self, events: &mut EventQueue, block: TimerBlock, kind: TimerKind, at: SimTime) {
        let k = block.slot(kind);
        self.deadline[k] = at;
        if at < self.pending[k] {
            self.pending[k] = at;
            events.push(at, Event::Timer(k as u32));
        }
    }

    /// Disarms `kind`. Pending heap entries become stale and are ignored when they fire.
    #[inline]
    pub fn cancel(&mut self, block: TimerBlock, kind: TimerKind) {
        self.deadline[block.slot(kind)] = SimTime::NEVER;
    }

    /// The deadline of `kind` (`SimTime::NEVER` when disarmed).
    #[inline]
    pub fn deadline(&self, block: TimerBlock, kind: TimerKind) -> SimTime {
        self.deadline[block.slot(kind)]
    }

    pub fn is_armed(&self, block: TimerBlock, kind: TimerKind) -> bool {
        self.deadline(block, kind) != SimTime::NEVER
    }

    /// A heap entry for `slot` fired at `now`. Returns the owner and kind if the timer is due
    /// (it is then disarmed); re-pushes the entry if the deadline has moved later.
    #[inline]
    pub fn on_entry(&mut self, events: &mut EventQueue, slot: u32, now: SimTime) -> Option<(Owner, TimerKind)> {
        let k = slot as usize;
        if self.pending[k] == now {
            self.pending[k] = SimTime::NEVER;
        }
        let d = self.deadline[k];
        if d <= now {
            self.deadline[k] = SimTime::NEVER;
            return Some(self.owner[k]);
        }
        if d != SimTime::NEVER && d < self.pending[k] {
            self.pending[k] = d;
            events.push(d, Event::Timer(slot));
        }
        None
    }

    /// Number of registered slots.
    pub fn len(&self) -> usize {
        self.deadline.len()
    }
    pub fn is_empty(&self) -> bool {
        self.deadline.is_empty()
    }
}

/// A component's handle on its own timers: its block in the world's [`Timers`] and the event
/// set entries go to. Contexts handed to components carry one.
pub struct TimerCtx<'a> {
    pub(crate) timers: &'a mut Timers,
    pub(crate) events: &'a mut EventQueue,
    pub(crate) block: TimerBlock,
}

impl<'a> TimerCtx<'a> {
    pub fn new(timers: &'a mut Timers, events: &'a mut EventQueue, block: TimerBlock) -> Self {
        TimerCtx { timers, events, block }
    }
    #[inline]
    pub fn set(&mut self, kind: TimerKind, at: SimTime) {
        self.timers.set(self.events, self.block, kind, at);
    }
    #[inline]
    pub fn cancel(&mut self, kind: TimerKind) {
        self.timers.cancel(self.block, kind);
    }
    #[inline]
    pub fn deadline(&self, kind: TimerKind) -> SimTime {
        self.timers.deadline(self.block, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: TimerKind = TimerKind(0);
    const B: TimerKind = TimerKind(1);

    fn pop(q: &mut EventQueue) -> Option<(SimTime, u32)> {
        q.pop_until(SimTime::NEVER).map(|(t, e)| match e {
            Event::Timer(s) => (t, s),
            other => panic!("unexpected {other:?}"),
        })
    }

    #[test]
    fn later_rearm_needs_no_new_entry() {
        let (mut t, mut q) = (Timers::new(), EventQueue::new());
        let b = t.register(Owner(7), 2);
        t.set(&mut q, b, A, SimTime(100));
        t.set(&mut q, b, A, SimTime(200));
        assert_eq!(q.len(), 1);
        // The entry at 100 fires: not due, re-pushed at 200.
        let (at, slot) = pop(&mut q).unwrap();
        assert_eq!(at, SimTime(100));
        assert_eq!(t.on_entry(&mut q, slot, at), None);
        let (at, slot) = pop(&mut q).unwrap();
        assert_eq!(at, SimTime(200));
        assert_eq!(t.on_entry(&mut q, slot, at), Some((Owner(7), A)));
        assert!(!t.is_armed(b, A));
        assert!(q.is_empty());
    }

    #[test]
    fn earlier_rearm_pushes_and_stale_entry_is_ignored() {
        let (mut t, mut q) = (Timers::new(), EventQueue::new());
        let b = t.register(Owner(1), 2);
        t.set(&mut q, b, B, SimTime(100));
        t.set(&mut q, b, B, SimTime(50));
        assert_eq!(q.len(), 2);
        let (at, slot) = pop(&mut q).unwrap();
        assert_eq!(t.on_entry(&mut q, slot, at), Some((Owner(1), B)));
        // The stale entry at 100 fires: nothing armed, nothing re-pushed.
        let (at, slot) = pop(&mut q).unwrap();
        assert_eq!(t.on_entry(&mut q, slot, at), None);
        assert!(q.is_empty());
    }

    #[test]
    fn cancelled_timer_does_not_fire_and_blocks_are_separate() {
        let (mut t, mut q) = (Timers::new(), EventQueue::new());
        let b1 = t.register(Owner(1), 1);
        let b2 = t.register(Owner(2), 1);
        t.set(&mut q, b1, A, SimTime(10));
        t.set(&mut q, b2, A, SimTime(10));
        t.cancel(b1, A);
        let mut fired = Vec::new();
        while let Some((at, slot)) = pop(&mut q) {
            fired.extend(t.on_entry(&mut q, slot, at));
        }
        assert_eq!(fired, vec![(Owner(2), A)]);
        // Re-arming after the entry was consumed needs a new entry.
        t.set(&mut q, b1, A, SimTime(20));
        assert_eq!(q.len(), 1);
    }

    #[test]
    #[should_panic(expected = "timer kind 1 used by a component that declared 1 kind")]
    fn a_kind_outside_the_block_is_a_bug() {
        let (mut t, mut q) = (Timers::new(), EventQueue::new());
        let b = t.register(Owner(0), 1);
        t.set(&mut q, b, TimerKind(1), SimTime(5));
    }
}
