//! The real-time loop.
//!
//! ```text
//! loop:
//!     run every event due by now (recording each one's lateness); write what reached
//!         real nodes to their devices
//!     sleep in ppoll on the devices (and the stop descriptor) until the next event is due
//!     for each device with datagrams: read them one by one; for each, run the events due by
//!         the instant it was read, then inject it at its node at that instant
//! until the scenario's end, the stop descriptor is readable, or the run aborts
//! ```
//!
//! Simulated time is the [`Clock`]: the engine never runs ahead of it, so a datagram read at
//! `w` enters a network whose events before `w` have all run. The loop runs on the calling
//! thread and makes no allocation per event beyond the core's own (datagram buffers aside).

use crate::clock::{tight_timer_slack, Clock};
use crate::lag::Lag;
use qoelab_core::packet::NodeId;
use qoelab_core::time::SimTime;
use qoelab_core::trace::{Column, Table};
use qoelab_core::Simulation;
use std::io;
use std::os::fd::{BorrowedFd, RawFd};

/// A real node's device: the node and the descriptor its host's datagrams are read from and
/// written to, one datagram per call, non-blocking (a TUN device, or in tests one end of a
/// `SOCK_SEQPACKET` socket pair).
#[derive(Copy, Clone, Debug)]
pub struct Tap<'fd> {
    pub node: NodeId,
    pub fd: BorrowedFd<'fd>,
}

/// Largest datagram read (the IPv4 maximum).
const MAX_DATAGRAM: usize = 65_535;

/// Datagrams read from one device per wake-up before the others get their turn.
const READ_BATCH: usize = 64;

/// Options of the loop.
#[derive(Clone, Debug)]
pub struct Options {
    /// Busy-wait this long before each due event instead of sleeping through it, ns (default 0:
    /// always sleep). Trades a CPU for less lateness (see `docs/performance.md`).
    pub spin_ns: u64,
    /// Interval of the `lag` table, ns (default 1 s).
    pub lag_interval_ns: u64,
    /// Run the loop's thread under `SCHED_FIFO` at this priority (1–99) while it runs, so that
    /// other processes on a busy host do not delay its wake-ups (0: the normal scheduler, the
    /// default). Needs root or `CAP_SYS_NICE`; where refused the loop runs normally and
    /// [`Outcome::rt_priority`] says 0. The kernel's real-time throttling (95 % of each second
    /// by default) keeps a loop that cannot keep up from starving the host.
    pub rt_priority: i32,
}

impl Default for Options {
    fn default() -> Self {
        Options { spin_ns: 0, lag_interval_ns: 1_000_000_000, rt_priority: 0 }
    }
}

/// Puts the calling thread under `SCHED_FIFO` at `priority` (children it forks do not inherit
/// it: `SCHED_RESET_ON_FORK`) and returns what to restore, or `None` if refused or `priority`
/// is 0.
fn realtime(priority: i32) -> Option<(libc::c_int, libc::sched_param)> {
    if priority <= 0 {
        return None;
    }
    // SAFETY: pid 0 is the calling thread; the parameter structs are valid for each call.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        let mut old = libc::sched_param { sched_priority: 0 };
        if policy < 0 || libc::sched_getparam(0, &mut old) != 0 {
            return None;
        }
        let p = libc::sched_param { sched_priority: priority.min(99) };
        (libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &p) == 0).then_some((policy, old))
    }
}

fn restore_scheduler(saved: Option<(libc::c_int, libc::sched_param)>) {
    if let Some((policy, param)) = saved {
        // SAFETY: as in `realtime`; restores the values read there.
        unsafe {
            libc::sched_setscheduler(0, policy, &param);
        }
    }
}

/// Why the loop stopped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The scenario's duration elapsed.
    Duration,
    /// The stop descriptor became readable (the commands ended, or the user interrupted).
    Stopped,
    /// The engine stopped the run ([`Simulation::aborted`]).
    Aborted,
}

/// What a run did besides simulating.
#[derive(Debug)]
pub struct Outcome {
    pub ended: Ended,
    pub lag: Lag,
    pub read_pkts: u64,
    pub read_bytes: u64,
    pub written_pkts: u64,
    pub written_bytes: u64,
    /// Datagrams a device refused (`write` failed; the host never saw them).
    pub write_errors: u64,
    /// Datagrams for real nodes that have no device in this run.
    pub unattached: u64,
    /// The `SCHED_FIFO` priority the loop ran at (0: the normal scheduler).
    pub rt_priority: i32,
    /// CPU time the loop's thread used (user + system), s: with `read_pkts`, what a datagram
    /// costs the loop whatever else the host runs.
    pub cpu_s: f64,
}

/// CPU time of the calling thread so far, s.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

impl Outcome {
    /// Summary entries (`emu_*`, then the lag's; see [`Lag::summary`]).
    pub fn summary(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("emu_read_pkts", self.read_pkts as f64),
            ("emu_read_bytes", self.read_bytes as f64),
            ("emu_written_pkts", self.written_pkts as f64),
            ("emu_written_bytes", self.written_bytes as f64),
            ("emu_write_errors", self.write_errors as f64),
            ("emu_stopped_early", (self.ended != Ended::Duration) as u64 as f64),
            ("emu_rt_priority", self.rt_priority as f64),
            ("emu_loop_cpu_s", self.cpu_s),
        ];
        v.extend(self.lag.summary());
        v
    }
    /// The `lag` table.
    pub fn tables(&self) -> Vec<Table> {
        vec![self.lag.table()]
    }
}

/// Appends `extra` to the `summary` table of `tables`.
pub fn extend_summary(tables: &mut [Table], extra: &[(&str, f64)]) {
    let t = tables.iter_mut().find(|t| t.name == "summary").expect("results have a summary table");
    for (name, col) in t.columns.iter_mut() {
        match (name.as_str(), col) {
            ("key", Column::Str(k)) => k.extend(extra.iter().map(|(k, _)| k.to_string())),
            ("value", Column::F64(v)) => v.extend(extra.iter().map(|(_, v)| *v)),
            _ => unreachable!("the summary table is key, value"),
        }
    }
}

struct Loop<'a, 'fd> {
    sim: &'a mut Simulation,
    clock: Clock,
    /// The device of each node (`None` for simulated nodes).
    fd_of: Vec<Option<BorrowedFd<'fd>>>,
    out: Outcome,
}

impl Loop<'_, '_> {
    /// Runs every event due by `upto`, recording lateness, then moves simulated time to `upto`.
    fn run_due(&mut self, upto: SimTime) {
        while let Some(t) = self.sim.next_event_time().filter(|&t| t <= upto) {
            let late = self.clock.now().0.saturating_sub(t.0);
            let before = self.sim.events_dispatched();
            self.sim.run_until(t);
            self.out.lag.record(t, late, self.sim.events_dispatched() - before);
            self.deliver();
            if self.sim.aborted().is_some() {
                return;
            }
        }
        self.sim.run_until(upto);
    }

    /// Writes what reached real nodes to their devices.
    fn deliver(&mut self) {
        for (node, bytes) in self.sim.take_real_deliveries() {
            let Some(fd) = self.fd_of.get(node as usize).copied().flatten() else {
                self.out.unattached += 1;
                continue;
            };
            // SAFETY: `bytes` is a valid buffer of its length; the descriptor is borrowed live.
            let n = unsafe { libc::write(raw(fd), bytes.as_ptr().cast(), bytes.len()) };
            if n == bytes.len() as isize {
                self.out.written_pkts += 1;
                self.out.written_bytes += bytes.len() as u64;
            } else {
                self.out.write_errors += 1;
            }
        }
    }

    /// Reads the datagrams waiting on `fd` (at most a batch) into the network at `node`.
    fn read_from(&mut self, node: NodeId, fd: BorrowedFd, buf: &mut [u8]) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            // SAFETY: `buf` is writable for its length; the descriptor is borrowed live.
            let n = unsafe { libc::read(raw(fd), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(()),
                    _ => Err(e),
                };
            }
            if n == 0 {
                return Ok(());
            }
            let now = self.clock.now().min(self.sim.end());
            self.run_due(now);
            self.out.read_pkts += 1;
            self.out.read_bytes += n as u64;
            // A refused datagram is counted by the core (`real_rejects`).
            let _ = self.sim.inject_real(node, buf[..n as usize].to_vec());
        }
        Ok(())
    }
}

fn raw(fd: BorrowedFd) -> RawFd {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

/// Runs `sim` in real time from now with the real nodes' devices `taps`, until the scenario's
/// end, until `stop` becomes readable, or until the engine aborts. Simulated time 0 is the
/// moment of the call. On return the simulation stands at the instant the loop stopped; its
/// results cover the run so far.
///
/// # Errors
/// A device that fails to read (other than "no datagram waiting") or a failing `ppoll`.
///
/// # Panics
/// If a tap names a node that is not real.
pub fn run(sim: &mut Simulation, taps: &[Tap], stop: Option<BorrowedFd>, opts: &Options) -> io::Result<Outcome> {
    let real = sim.real_nodes();
    let mut fd_of = vec![None; sim.node_names.len()];
    for t in taps {
        assert!(real.contains(&t.node), "node {} has a device but is not real", t.node);
        fd_of[t.node as usize] = Some(t.fd);
    }
    tight_timer_slack();
    let out = Outcome {
        ended: Ended::Duration,
        lag: Lag::new(opts.lag_interval_ns),
        read_pkts: 0,
        read_bytes: 0,
        written_pkts: 0,
        written_bytes: 0,
        write_errors: 0,
        unattached: 0,
        rt_priority: 0,
        cpu_s: 0.0,
    };
    let saved = realtime(opts.rt_priority);
    let cpu0 = thread_cpu_s();
    let r = run_loop(Loop { sim, clock: Clock::start(), fd_of, out }, taps, stop, opts);
    let cpu = thread_cpu_s() - cpu0;
    restore_scheduler(saved);
    r.map(|mut o| {
        o.rt_priority = if saved.is_some() { opts.rt_priority.min(99) } else { 0 };
        o.cpu_s = cpu;
        o
    })
}

fn run_loop(mut lp: Loop, taps: &[Tap], stop: Option<BorrowedFd>, opts: &Options) -> io::Result<Outcome> {
    let end = lp.sim.end();
    let mut pfds: Vec<libc::pollfd> = taps
        .iter()
        .map(|t| t.fd)
        .chain(stop)
        .map(|fd| libc::pollfd { fd: raw(fd), events: libc::POLLIN, revents: 0 })
        .collect();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let now = lp.clock.now();
        if now >= end {
            lp.run_due(end);
            break;
        }
        lp.run_due(now);
        if lp.sim.aborted().is_some() {
            lp.out.ended = Ended::Aborted;
            break;
        }
        let next = lp.sim.next_event_time().unwrap_or(end).min(end);
        let wait = next.0.saturating_sub(lp.clock.now().0);
        // Sleep until `spin_ns` before the event, then poll without sleeping until it is due.
        let sleep = wait.saturating_sub(opts.spin_ns);
        let ts =
            libc::timespec { tv_sec: (sleep / 1_000_000_000) as libc::time_t, tv_nsec: (sleep % 1_000_000_000) as _ };
        // SAFETY: `pfds` holds valid pollfd entries for its length; `ts` outlives the call.
        let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            continue;
        }
        if stop.is_some() && pfds.last().is_some_and(|p| p.revents != 0) {
            lp.run_due(lp.clock.now().min(end));
            lp.out.ended = Ended::Stopped;
            break;
        }
        for (k, t) in taps.iter().enumerate() {
            let ev = pfds[k].revents;
            if ev & libc::POLLIN != 0 {
                lp.read_from(t.node, t.fd, &mut buf)?;
            } else if ev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Err(io::Error::other(format!("the device of node {} failed (poll events {ev:#x})", t.node)));
            }
        }
    }
    Ok(lp.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qoelab_core::node::Addr;
    use qoelab_core::real::{icmp_echo, ipv4_datagram};
    use qoelab_core::{BuildOptions, Scenario};
    use std::os::fd::{AsFd, FromRawFd, OwnedFd};

    fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0);
        // SAFETY: both were just created and are owned here.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn echo_request(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let icmp = icmp_echo(8, 1, 1, &[]);
        ipv4_datagram(Addr(u32::from_be_bytes(src)), Addr(u32::from_be_bytes(dst)), 1, 0, &[], &icmp)
    }

    /// A → R → B, 5 ms per link: a datagram written on A's "device" comes out of B's about
    /// 10 ms later, with TTL 63, and the loop ends at the scenario's 60 ms.
    #[test]
    fn a_datagram_crosses_in_real_time() {
        let t = r#"
            [sim]
            duration = "60ms"
            [[nodes]]
            name = "A"
            real = true
            [[nodes]]
            name = "B"
            real = true
            [[links]]
            a = "A"
            b = "R"
            rate = "1Gbps"
            delay = "5ms"
            [[links]]
            a = "R"
            b = "B"
            rate = "1Gbps"
            delay = "5ms"
            "#;
        let mut sim = Scenario::from_toml(t).unwrap().build(&BuildOptions::default()).unwrap();
        let (a_host, a_dev) = seqpacket_pair();
        let (b_host, b_dev) = seqpacket_pair();
        let d = echo_request([10, 0, 0, 1], [10, 0, 0, 2]);
        // SAFETY: a valid buffer written to a valid socket.
        assert_eq!(unsafe { libc::write(raw(a_host.as_fd()), d.as_ptr().cast(), d.len()) }, d.len() as isize);
        let t0 = std::time::Instant::now();
        let taps = [Tap { node: 0, fd: a_dev.as_fd() }, Tap { node: 1, fd: b_dev.as_fd() }];
        let out = run(&mut sim, &taps, None, &Options::default()).unwrap();
        let wall = t0.elapsed();
        assert_eq!(out.ended, Ended::Duration);
        assert!(wall.as_millis() >= 60, "{wall:?}");
        assert_eq!((out.read_pkts, out.written_pkts), (1, 1));
        let mut got = vec![0u8; 100];
        // SAFETY: a valid buffer read from a valid socket.
        let n = unsafe { libc::read(raw(b_host.as_fd()), got.as_mut_ptr().cast(), got.len()) };
        assert_eq!(n, d.len() as isize);
        assert_eq!(got[8], 63);
        let r = sim.results();
        let delay = r.table("real_flows").f64s("delay_mean_s")[0];
        assert!((delay - 0.010).abs() < 1e-4, "{delay}");
        assert!(out.lag.events() > 0);
    }

    #[test]
    fn a_readable_stop_descriptor_ends_the_run() {
        let t = r#"
            [sim]
            duration = "60s"
            [[nodes]]
            name = "A"
            real = true
            [[links]]
            a = "A"
            b = "R"
            rate = "1Gbps"
            delay = "5ms"
            "#;
        let mut sim = Scenario::from_toml(t).unwrap().build(&BuildOptions::default()).unwrap();
        let (_a_host, a_dev) = seqpacket_pair();
        let (stop_w, stop_r) = seqpacket_pair();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            // SAFETY: a valid one-byte buffer written to a valid socket.
            unsafe { libc::write(raw(stop_w.as_fd()), [1u8].as_ptr().cast(), 1) };
            stop_w
        });
        let taps = [Tap { node: 0, fd: a_dev.as_fd() }];
        let out = run(&mut sim, &taps, Some(stop_r.as_fd()), &Options::default()).unwrap();
        drop(writer.join());
        assert_eq!(out.ended, Ended::Stopped);
        assert!(sim.now().0 >= 30_000_000 && sim.now().0 < 5_000_000_000, "{}", sim.now());
        let mut tables = sim.results().tables;
        extend_summary(&mut tables, &out.summary());
        let s = tables.iter().find(|t| t.name == "summary").unwrap();
        assert!(s.strs("key").contains(&"lag_p99_s".to_string()));
    }
}
