//! The run's clock: `CLOCK_MONOTONIC` since the run started, as simulated time.
//!
//! Monotonic time never jumps (NTP slews it, a settime does not move it), so simulated time
//! follows elapsed real time. The loop's thread asks the kernel for a timer slack of 1 ns
//! (`PR_SET_TIMERSLACK`; the default, 50 µs, would let every sleep overshoot by up to that).

use qoelab_core::time::SimTime;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(r, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Simulated time as elapsed monotonic time since [`Clock::start`].
#[derive(Copy, Clone, Debug)]
pub struct Clock {
    t0_ns: u64,
}

impl Clock {
    /// Starts the clock: now is simulated time 0.
    pub fn start() -> Clock {
        Clock { t0_ns: monotonic_ns() }
    }
    /// The current instant.
    #[inline]
    pub fn now(&self) -> SimTime {
        SimTime(monotonic_ns().saturating_sub(self.t0_ns))
    }
}

/// Asks for a 1-ns timer slack on the calling thread (see the module docs). Best effort: a
/// kernel that refuses leaves the default, and the lateness measured shows it.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and touches only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advances_with_real_time() {
        let c = Clock::start();
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = c.now();
        assert!(b.0 - a.0 >= 5_000_000, "{a} {b}");
    }
}
