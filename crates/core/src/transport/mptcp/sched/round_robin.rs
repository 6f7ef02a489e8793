//! Round robin: each chunk to the next subflow, in turn, that can send now (the out-of-tree
//! Linux kernel's `roundrobin` scheduler with `num_segments = 1`).

use super::{SchedView, Scheduler};

/// See the module docs.
#[derive(Debug, Default)]
pub struct RoundRobin {
    /// The subflow that took the last chunk.
    last: Option<usize>,
}

impl Scheduler for RoundRobin {
    fn pick(&mut self, subs: &[SchedView]) -> u8 {
        let n = subs.len();
        let start = self.last.map_or(0, |l| l + 1);
        for k in 0..n {
            let i = (start + k) % n;
            if subs[i].ready() {
                self.last = Some(i);
                return 1 << i;
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_turns_and_skips_full_subflows() {
        let r = SchedView::new(true, true, None);
        let full = SchedView::new(true, false, None);
        let mut s = RoundRobin::default();
        let picks: Vec<u8> = (0..4).map(|_| s.pick(&[r, r, r])).collect();
        assert_eq!(picks, [1, 2, 4, 1]);
        assert_eq!(s.pick(&[r, full, r]), 4);
        assert_eq!(s.pick(&[full, full, full]), 0);
    }
}
