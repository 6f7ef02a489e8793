//! # qoelab-core
//!
//! A deterministic, packet-level network simulator for studying how QoS mechanisms change the
//! quality of streamed video. Pure Rust; the Python package reaches it through `crates/py`.
//!
//! ## Reading order
//! 1. [`time`], [`units`]: integer-nanosecond time, rates and unit-carrying scenario strings.
//! 2. [`engine`]: the `(time, seq)` event heap, timer tables, keyed random streams.
//! 3. [`packet`]: the header fields models act on; [`node`]: addresses and routing tables.
//! 4. [`link`]: ports (queue discipline + serialiser), channels (point-to-point, TDD), delay
//!    lines and loss models; [`queue`]: the `QueueDisc` trait and the disciplines;
//!    [`registry`]: how each family of components (disciplines, controllers, apps, loss
//!    models, channels) is listed, one line per kind.
//! 5. [`transport`]: UDP/RTP and TCP endpoints behind the `Sender`/`Receiver` traits;
//!    [`app`]: traffic sources.
//! 6. [`sim`]: the world and its event loop; [`scenario`]: scenario files compiled into it;
//!    [`results`], [`trace`]: what a run reports.
//!
//! ## Determinism
//! The same scenario and seed give byte-identical results: time is integral, simultaneous
//! events run in insertion order, every random stream is keyed by `(seed, component name)`,
//! and nothing iterates a hash map.

pub mod agent;
pub mod app;
pub mod engine;
pub mod ip;
pub mod link;
pub mod node;
pub mod packet;
pub mod queue;
pub mod registry;
pub mod results;
pub mod scenario;
pub mod sim;
pub mod time;
pub mod trace;
pub mod transport;
pub mod units;

pub use results::RunResults;
pub use scenario::{BuildOptions, Scenario, ScenarioError};
pub use sim::Simulation;

/// Parses, builds and runs a scenario given as TOML text.
pub fn run_toml(text: &str, opts: &BuildOptions) -> Result<RunResults, ScenarioError> {
    let sc = Scenario::from_toml(text)?;
    let mut sim = sc.build(opts)?;
    sim.run();
    Ok(sim.results())
}
