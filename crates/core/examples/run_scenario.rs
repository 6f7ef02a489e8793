//! Runs one scenario file in the core alone (no Python), for profiling and Rust-side timing:
//!
//! ```text
//! cargo run --release -p qoelab-core --example run_scenario -- scenarios/tfd/s4-n5-k5.toml [END_S]
//! ```
//!
//! Prints the events dispatched, the wall time of the run (build excluded), the largest
//! pending-event set seen at 1000 sample points, and `RunResults::digest` of every result table:
//! an optimisation meant to be result-neutral must leave it unchanged.
//! `END_S` shortens the run (seconds).

use qoelab_core::time::SimTime;
use qoelab_core::{BuildOptions, Scenario};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: run_scenario SCENARIO.toml [END_S]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let mut sc = Scenario::from_toml(&text).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    if let Some(end) = args.get(2) {
        let end: f64 = end.parse().unwrap_or_else(|_| {
            eprintln!("END_S: not a number: {end}");
            std::process::exit(2)
        });
        sc.sim.duration = qoelab_core::time::Dur::from_secs_f64(end);
    }
    let base = std::path::Path::new(path).parent();
    let mut sim = sc.build(&BuildOptions { base_dir: base, pcap_dir: None }).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    });
    let end = sim.end();
    let t0 = Instant::now();
    let mut max_pending = 0usize;
    for i in 1..=1000u64 {
        sim.run_until(SimTime(end.0 / 1000 * i));
        max_pending = max_pending.max(sim.events_pending());
    }
    sim.run();
    let wall = t0.elapsed().as_secs_f64();
    let ev = sim.events_dispatched();
    let digest = sim.results().digest();
    println!(
        "events {ev}  wall {wall:.3} s  {:.1} ns/event  max pending {max_pending}  results {digest:016x}",
        wall * 1e9 / ev as f64
    );
}
