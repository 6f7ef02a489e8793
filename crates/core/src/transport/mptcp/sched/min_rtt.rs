//! Lowest-RTT-first: the subflow with the smallest smoothed RTT among those that can send now
//! (Linux's default, `mptcp_subflow_get_send`; the out-of-tree kernel's `default` scheduler).
//! A subflow without an RTT sample yet ranks after those with one; ties go to the lower index.
//! When the fastest subflow's window is full, the chunk goes to the next fastest with room:
//! the faster path is used "while its window allows".

use super::{SchedView, Scheduler};

/// See the module docs.
#[derive(Debug, Default)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn pick(&mut self, subs: &[SchedView]) -> u8 {
        let best = subs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.ready())
            .min_by_key(|(i, s)| (s.srtt.is_none(), s.srtt.map_or(0, |d| d.0), *i));
        best.map_or(0, |(i, _)| 1 << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    #[test]
    fn fastest_with_room_wins() {
        let v = |room, ms| SchedView::new(true, room, Some(Dur::from_millis(ms)));
        let mut s = MinRtt;
        assert_eq!(s.pick(&[v(true, 80), v(true, 20)]), 0b10);
        assert_eq!(s.pick(&[v(true, 80), v(false, 20)]), 0b01, "the fast one is full");
        assert_eq!(s.pick(&[v(false, 80), v(false, 20)]), 0);
        let unsampled = SchedView::new(true, true, None);
        assert_eq!(s.pick(&[unsampled, v(true, 500)]), 0b10);
        let unusable = SchedView::new(false, true, Some(Dur::from_millis(1)));
        assert_eq!(s.pick(&[unusable, v(true, 500)]), 0b10);
    }
}
