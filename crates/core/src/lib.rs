//! # qoelab-core
//!
//! A deterministic, packet-level network simulator for studying how QoS mechanisms change the
//! quality of streamed video. Pure Rust; the Python package reaches it through `crates/py`.
//!
//! ## Reading order
//! 1. [`time`], [`units`]: integer-nanosecond time, rates and unit-carrying scenario strings.
//! 2. [`engine`]: the `(time, seq)` event heap, open component timers (blocks of slots, kinds
//!    numbered by each component), keyed random streams.
//! 3. [`packet`]: the header fields models act on; [`node`]: addresses and routing tables
//!    (forwarding by destination address); [`ip`]: IP-layer wire formats (TFD option, RSVP).
//! 4. [`link`]: ports (queue discipline + serialiser), channels (point-to-point, TDD), delay
//!    lines and loss models; [`queue`]: the `QueueDisc` trait and the disciplines;
//!    [`registry`]: how each family of components (disciplines, controllers, apps, loss
//!    models, channels) is listed, one line per kind.
//! 5. [`transport`]: endpoints (sockets) behind the `Endpoint` trait: UDP/RTP and full-duplex
//!    TCP with pluggable congestion control, and full-duplex MPTCP (TCP subflows over a flow's
//!    paths, its schedulers and coupled increase); [`app`]: applications at either end of a flow.
//! 6. [`agent`]: protocol logic on nodes (RSVP).
//! 7. [`sim`]: the world (flows as connections with two ends, socket tables, the event loop);
//!    [`subflow`]: the paths of a connection with several; [`scenario`]: scenario files
//!    compiled into it; [`results`], [`trace`]: what a run reports, typed probes included.
//! 8. [`real`]: real hosts' datagrams carried with their bytes, and the calls a real-time
//!    driver (emulation, the `qoelab-emu` crate) makes.
//!
//! `docs/models/nodes.md` draws the path of a packet from application to application.
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
pub mod real;
pub mod registry;
pub mod results;
pub mod scenario;
pub mod schema;
pub mod sim;
pub mod subflow;
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
