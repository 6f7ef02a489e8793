//! Random sender overhead (`overhead`): ns-2's `Agent/TCP` `overhead_`, the randomisation Floyd
//! and Jacobson add at the sources to break the phase effects of drop-tail gateways.
//!
//! Reading list:
//! - S. Floyd, V. Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways",
//!   Internetworking: Research and Experience 3(3), 1992, §4: with exact timing, which flow finds
//!   a full drop-tail queue depends on its RTT modulo the bottleneck's service time; a random
//!   processing time at each source of up to one bottleneck service time removes the bias.
//! - ns-2 `tcp/tcp.cc`, `TcpAgent::send_much`: when the window lets a packet out and `overhead_`
//!   is set, the agent arms `delsnd_timer_` at `Random::uniform(overhead_)` and returns; send
//!   attempts while it is pending do nothing; when it fires (`timeout_nonrtx`, `send_much(1, …)`)
//!   the agent sends everything the window allows at that moment. A retransmission timeout goes
//!   through `send_much(0, …)` and waits too; a fast retransmission (`dupack_action`) and a
//!   NewReno partial-ACK retransmission call `output()` directly and do not.
//!
//! The wait delays a *send opportunity*, not packets already chosen: the segments sent at the
//! release are picked then, lowest sequence first, so a flow's segments never leave out of order.
//!
//! Not modelled: ns-2's `FullTcpAgent` variant, which draws a new wait before *every* packet
//! (one segment per draw); the Quick-Start interaction (`qs_approved_`).

use crate::engine::SimRng;
use crate::time::{Dur, SimTime};

/// The largest `overhead` a scenario may give: far above any bottleneck service time it is
/// meant to be (Floyd & Jacobson use one service time).
pub const MAX_OVERHEAD: Dur = Dur::from_secs(1);

/// The sender's overhead state.
#[derive(Debug)]
pub struct Overhead {
    /// The largest wait, ns (waits are uniform on 0..=max_ns).
    max_ns: u64,
    /// The flow's own stream, so that its draws do not depend on other flows'.
    rng: SimRng,
    /// When the pending wait ends (ns-2 `delsnd_timer_` pending).
    until: Option<SimTime>,
    /// The pending release carries a timeout's retransmission (forced past cwnd).
    force: bool,
    /// Set while the release sends: the window is served without a new wait.
    releasing: bool,
}

/// What a send opportunity does under the overhead.
#[derive(Debug, PartialEq, Eq)]
pub enum Gate {
    /// Send now (no wait configured, or this is the release).
    Send,
    /// A wait is pending: send nothing.
    Wait,
    /// A new wait was drawn: arm the timer at this time and send nothing.
    Arm(SimTime),
}

impl Overhead {
    /// # Panics
    /// If `max` is zero (a zero overhead is no overhead: build none).
    pub fn new(max: Dur, rng: SimRng) -> Self {
        assert!(max.as_nanos() > 0, "an overhead of zero is built as none");
        Overhead { max_ns: max.as_nanos(), rng, until: None, force: false, releasing: false }
    }

    /// Replaces the stream (the passive half of a full-duplex socket has its own).
    pub fn with_rng(self, rng: SimRng) -> Self {
        Overhead { rng, ..self }
    }

    /// A wait uniform on 0..=max ns (ns-2 `Random::uniform(overhead_)`). The modulo's bias is
    /// below 2⁻³³ for any `max` ≤ [`MAX_OVERHEAD`].
    fn draw(&mut self) -> Dur {
        Dur::from_nanos(self.rng.next_u64() % (self.max_ns + 1))
    }

    /// A send opportunity at `now` found a segment the window lets out.
    pub fn gate(&mut self, now: SimTime) -> Gate {
        if self.releasing {
            return Gate::Send;
        }
        if self.until.is_some() {
            return Gate::Wait;
        }
        let at = now + self.draw();
        self.until = Some(at);
        Gate::Arm(at)
    }

    /// A timeout's retransmission must wait: it goes at the pending release, forced, or at a new
    /// one (returned when drawn here).
    pub fn defer_forced(&mut self, now: SimTime) -> Option<SimTime> {
        self.force = true;
        match self.gate(now) {
            Gate::Arm(at) => Some(at),
            _ => None,
        }
    }

    /// The wait ended: the release begins; returns whether it carries a forced retransmission.
    /// Call [`released`](Self::released) once the window has been served.
    pub fn release(&mut self) -> bool {
        self.until = None;
        self.releasing = true;
        std::mem::take(&mut self.force)
    }

    pub fn released(&mut self) {
        self.releasing = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oh(max_us: u64) -> Overhead {
        Overhead::new(Dur::from_micros(max_us), SimRng::stream(3, "t"))
    }

    /// A send opportunity draws one wait; the others before its end add nothing; the release
    /// sends; the next opportunity draws again.
    #[test]
    fn one_wait_per_release() {
        let mut o = oh(1200);
        let t0 = SimTime::ZERO;
        let Gate::Arm(at) = o.gate(t0) else { panic!("no wait drawn") };
        assert!(at <= t0 + Dur::from_micros(1200));
        assert_eq!(o.gate(t0), Gate::Wait);
        assert!(!o.release());
        assert_eq!(o.gate(at), Gate::Send);
        assert_eq!(o.gate(at), Gate::Send, "the release serves the whole window");
        o.released();
        assert!(matches!(o.gate(at), Gate::Arm(_)));
    }

    /// A timeout's retransmission joins a pending wait (forced) or draws its own.
    #[test]
    fn timeout_waits_and_is_forced() {
        let mut o = oh(500);
        assert!(matches!(o.gate(SimTime::ZERO), Gate::Arm(_)));
        assert_eq!(o.defer_forced(SimTime::ZERO), None, "joins the pending wait");
        assert!(o.release());
        o.released();
        assert!(o.defer_forced(SimTime::ZERO).is_some());
        assert!(o.release());
        o.released();
        assert!(!o.force);
    }

    /// Waits are uniform on [0, max]: mean max/2, variance max²/12, both ends reached.
    #[test]
    fn waits_are_uniform() {
        let mut o = oh(1000);
        let n = 200_000;
        let w: Vec<f64> = (0..n).map(|_| o.draw().as_nanos() as f64).collect();
        let mean = w.iter().sum::<f64>() / n as f64;
        let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let max = 1e6;
        assert!((mean - max / 2.0).abs() < 0.01 * max, "mean {mean}");
        assert!((var / (max * max / 12.0) - 1.0).abs() < 0.02, "variance {var}");
        assert!(w.iter().all(|&x| x <= max));
        assert!(w.iter().any(|&x| x < 0.001 * max) && w.iter().any(|&x| x > 0.999 * max));
    }
}
