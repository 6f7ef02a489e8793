//! Redundant: every chunk on every subflow that can send now (the out-of-tree Linux kernel's
//! `redundant` scheduler): the receiver keeps the first copy to arrive, trading capacity for
//! delay. A subflow whose window is full when a chunk is scheduled does not get that chunk.

use super::{SchedView, Scheduler};

/// See the module docs.
#[derive(Debug, Default)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn pick(&mut self, subs: &[SchedView]) -> u8 {
        subs.iter().enumerate().filter(|(_, s)| s.ready()).fold(0, |m, (i, _)| m | 1 << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ready_subflow() {
        let r = SchedView::new(true, true, None);
        let full = SchedView::new(true, false, None);
        assert_eq!(Redundant.pick(&[r, full, r]), 0b101);
        assert_eq!(Redundant.pick(&[full]), 0);
    }
}
