//! Per-flow timer tables with at most a few heap entries per timer.
//!
//! A transport re-arms its retransmission timer on almost every ACK. Pushing a heap entry each
//! time would make the heap grow with packets, not with flows. Instead each flow keeps a fixed,
//! enum-indexed table of deadlines (quinn `connection/timer.rs`). A heap entry is pushed only
//! when a deadline moves *earlier* than the entry already pending; when an entry fires and the
//! deadline has moved later, the entry is re-pushed at the new deadline.

use crate::time::SimTime;

/// The timers a flow can hold. Sender- and receiver-side timers share one table per flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum TimerKind {
    /// Transport retransmission timeout (sender side).
    Rto = 0,
    /// Delayed-ACK timer (receiver side).
    DelAck = 1,
    /// Transport pacing / send-gate timer (sender side).
    Pace = 2,
    /// Application timer at the sender.
    App = 3,
    /// Second application timer (e.g. a source-jitter release, a player tick).
    App2 = 4,
    /// Receiver-side application timer.
    RecvApp = 5,
    /// Transport feedback timer at the receiver (e.g. TFRC feedback).
    Feedback = 6,
    /// Spare transport timer at the sender (e.g. TFRC no-feedback timer).
    NoFeedback = 7,
}

pub const TIMER_KINDS: usize = 8;

/// Deadlines of one flow's timers.
#[derive(Clone, Debug)]
pub struct TimerTable {
    deadline: [SimTime; TIMER_KINDS],
    /// Earliest heap entry pending for each timer (NEVER if none known).
    pending: [SimTime; TIMER_KINDS],
}

impl Default for TimerTable {
    fn default() -> Self {
        TimerTable { deadline: [SimTime::NEVER; TIMER_KINDS], pending: [SimTime::NEVER; TIMER_KINDS] }
    }
}

impl TimerTable {
    /// Arms `kind` at `at`. Returns `Some(at)` when the caller must push a heap entry.
    #[must_use]
    pub fn set(&mut self, kind: TimerKind, at: SimTime) -> Option<SimTime> {
        let k = kind as usize;
        self.deadline[k] = at;
        if at < self.pending[k] {
            self.pending[k] = at;
            Some(at)
        } else {
            None
        }
    }

    /// Disarms `kind`. Pending heap entries become stale and are ignored when they fire.
    pub fn cancel(&mut self, kind: TimerKind) {
        self.deadline[kind as usize] = SimTime::NEVER;
    }

    pub fn deadline(&self, kind: TimerKind) -> SimTime {
        self.deadline[kind as usize]
    }

    pub fn is_armed(&self, kind: TimerKind) -> bool {
        self.deadline[kind as usize] != SimTime::NEVER
    }

    /// A heap entry for `kind` fired at `now`. Returns `(fire, repush)`: whether the timer is
    /// due (it is then disarmed), and a time at which the caller must push a new heap entry.
    pub fn on_entry(&mut self, kind: TimerKind, now: SimTime) -> (bool, Option<SimTime>) {
        let k = kind as usize;
        if self.pending[k] == now {
            self.pending[k] = SimTime::NEVER;
        }
        let d = self.deadline[k];
        if d <= now {
            self.deadline[k] = SimTime::NEVER;
            return (true, None);
        }
        if d != SimTime::NEVER && d < self.pending[k] {
            self.pending[k] = d;
            return (false, Some(d));
        }
        (false, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_rearm_needs_no_new_entry() {
        let mut t = TimerTable::default();
        assert_eq!(t.set(TimerKind::Rto, SimTime(100)), Some(SimTime(100)));
        assert_eq!(t.set(TimerKind::Rto, SimTime(200)), None);
        // The entry at 100 fires: not due, re-push at 200.
        assert_eq!(t.on_entry(TimerKind::Rto, SimTime(100)), (false, Some(SimTime(200))));
        assert_eq!(t.on_entry(TimerKind::Rto, SimTime(200)), (true, None));
        assert!(!t.is_armed(TimerKind::Rto));
    }

    #[test]
    fn earlier_rearm_pushes_and_stale_entry_is_ignored() {
        let mut t = TimerTable::default();
        assert_eq!(t.set(TimerKind::DelAck, SimTime(100)), Some(SimTime(100)));
        assert_eq!(t.set(TimerKind::DelAck, SimTime(50)), Some(SimTime(50)));
        assert_eq!(t.on_entry(TimerKind::DelAck, SimTime(50)), (true, None));
        // The stale entry at 100 fires: nothing armed.
        assert_eq!(t.on_entry(TimerKind::DelAck, SimTime(100)), (false, None));
    }

    #[test]
    fn cancelled_timer_does_not_fire() {
        let mut t = TimerTable::default();
        let _ = t.set(TimerKind::App, SimTime(10));
        t.cancel(TimerKind::App);
        assert_eq!(t.on_entry(TimerKind::App, SimTime(10)), (false, None));
        // Re-arming after the entry was consumed needs a new entry.
        assert_eq!(t.set(TimerKind::App, SimTime(20)), Some(SimTime(20)));
    }
}
