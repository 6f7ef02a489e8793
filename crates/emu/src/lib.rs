//! # qoelab-emu
//!
//! Real hosts and real applications through qoelab's simulated network, in real time: the
//! driver that the sans-IO core ([`qoelab_core::real`]) leaves to the outside. Linux only.
//!
//! A scenario node marked `real = true` is a Linux network namespace with a TUN device (layer 3:
//! each read or write is one IPv4 datagram) carrying the node's addresses, its default route
//! through the device. The front end (`qoelab emulate`) makes the namespaces, configures the
//! devices and runs the users' commands in them; this crate opens the devices ([`tun`]) and runs
//! the loop ([`driver`]):
//! - simulated time is `CLOCK_MONOTONIC` since the start of the run ([`clock`]);
//! - the loop sleeps in `ppoll` on the devices until the next event is due, runs every event
//!   whose time has come, and writes what reached real nodes to their devices;
//! - a datagram read from a device enters the network at its node at the instant it is read;
//! - every event's lateness (how long after its simulated time it ran) is measured ([`lag`]),
//!   and a run that could not keep up says so, never silently.
//!
//! ## Reading order
//! [`clock`], [`tun`], [`lag`], [`driver`]. `docs/models/emulation.md` says what is and is not
//! faithful (the clock, batching, the kernel's own queues on the TUN path).

#[cfg(target_os = "linux")]
pub mod clock;
#[cfg(target_os = "linux")]
pub mod driver;
#[cfg(target_os = "linux")]
pub mod lag;
#[cfg(target_os = "linux")]
pub mod tun;

#[cfg(target_os = "linux")]
pub use driver::{run, Outcome, Tap};
