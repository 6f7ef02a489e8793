//! The real-time loop's own limits, without kernels or TUN devices: a generator thread writes
//! IPv4/UDP datagrams at a fixed rate into one end of a `SOCK_SEQPACKET` socket pair standing in
//! for host A's device, the loop carries them through a simulated router to host B's "device",
//! and a sink thread reads them there. Prints, per datagram size and rate, the loop's lateness
//! (p50, p99, max, events over 1 ms) and the rate that arrived (docs/performance.md,
//! "Emulation").
//!
//! `cargo run -p qoelab-emu --release --example limits [SECONDS] [RT_PRIORITY]` (root for a
//! real-time priority; without, the loop runs under the normal scheduler).

use qoelab_core::node::Addr;
use qoelab_core::real::ipv4_datagram;
use qoelab_core::{BuildOptions, Scenario};
use qoelab_emu::driver::{run, Options, Tap};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    assert_eq!(r, 0, "socketpair");
    // SAFETY: both were just created and are owned here.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&a, &b] {
        let size: libc::c_int = 8 << 20;
        // SAFETY: a valid int option on a valid socket; the loop's end must not block.
        unsafe {
            libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, (&size as *const i32).cast(), 4);
            libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, (&size as *const i32).cast(), 4);
        }
    }
    // SAFETY: F_SETFL on a valid descriptor.
    unsafe { libc::fcntl(b.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    (a, b)
}

fn udp(size: usize) -> Vec<u8> {
    let mut u = vec![0u8; size - 20];
    u[..4].copy_from_slice(&[0x13, 0x88, 0x13, 0x89]);
    u[4..6].copy_from_slice(&((size - 20) as u16).to_be_bytes());
    ipv4_datagram(Addr(0x0a00_0001), Addr(0x0a00_0002), 17, 0, &[], &u)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let rt: i32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    println!("| datagram | offered pkt/s | offered Mbit/s | read pkt/s | arrived pkt/s | lag p50 µs | lag p99 µs | lag max µs | events > 1 ms | loop CPU µs/pkt |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (size, rates) in [
        (1500usize, &[10_000u64, 50_000, 100_000, 200_000, 300_000, 400_000][..]),
        (100, &[10_000, 50_000, 100_000, 200_000, 300_000, 400_000][..]),
    ] {
        for &pps in rates {
            let toml = format!(
                r#"
                [sim]
                duration = "{seconds}s"
                [[nodes]]
                name = "A"
                real = true
                [[nodes]]
                name = "B"
                real = true
                [[links]]
                a = "A"
                b = "R"
                rate = "100Gbps"
                delay = "100us"
                queue = {{ kind = "fifo", limit = "100000p" }}
                [[links]]
                a = "R"
                b = "B"
                rate = "100Gbps"
                delay = "100us"
                queue = {{ kind = "fifo", limit = "100000p" }}
                "#
            );
            let mut sim = Scenario::from_toml(&toml).unwrap().build(&BuildOptions::default()).unwrap();
            let (a_host, a_dev) = pair();
            let (b_host, b_dev) = pair();
            let stop = Arc::new(AtomicBool::new(false));
            let got = Arc::new(AtomicU64::new(0));
            let gen = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // Non-blocking: a loop that does not keep up fills the pair's buffer, and the
                    // generator must still see `stop`.
                    // SAFETY: F_SETFL on a valid descriptor.
                    unsafe { libc::fcntl(a_host.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
                    let d = udp(size);
                    let t0 = Instant::now();
                    let mut sent = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let due = (t0.elapsed().as_secs_f64() * pps as f64) as u64;
                        while sent < due {
                            // SAFETY: a valid buffer written to a valid socket.
                            unsafe { libc::write(a_host.as_raw_fd(), d.as_ptr().cast(), d.len()) };
                            sent += 1;
                        }
                        std::thread::sleep(Duration::from_micros(100));
                    }
                    a_host
                })
            };
            let sink = {
                let (stop, got) = (stop.clone(), got.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 2048];
                    // SAFETY: F_SETFL on a valid descriptor.
                    unsafe { libc::fcntl(b_host.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
                    while !stop.load(Ordering::Relaxed) {
                        // SAFETY: a valid buffer read from a valid socket.
                        let n = unsafe { libc::read(b_host.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                        if n > 0 {
                            got.fetch_add(1, Ordering::Relaxed);
                        } else {
                            std::thread::sleep(Duration::from_micros(50));
                        }
                    }
                    b_host
                })
            };
            let taps = [Tap { node: 0, fd: a_dev.as_fd() }, Tap { node: 1, fd: b_dev.as_fd() }];
            let opts = Options { rt_priority: rt, ..Options::default() };
            let out = run(&mut sim, &taps, None, &opts).expect("the loop runs");
            stop.store(true, Ordering::Relaxed);
            drop(gen.join());
            drop(sink.join());
            let l = &out.lag;
            println!(
                "| {size} B | {pps} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} of {} | {:.2} |",
                pps as f64 * size as f64 * 8e-6,
                out.read_pkts as f64 / seconds,
                got.load(Ordering::Relaxed) as f64 / seconds,
                l.quantile_ns(0.5) / 1e3,
                l.quantile_ns(0.99) / 1e3,
                l.max_ns() as f64 / 1e3,
                l.late(),
                l.events(),
                out.cpu_s * 1e6 / out.read_pkts.max(1) as f64
            );
        }
    }
}
