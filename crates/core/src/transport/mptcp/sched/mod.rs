//! MPTCP packet schedulers: which subflow(s) carry the next chunk of the connection's data.
//!
//! Reading list: Linux `net/mptcp/protocol.c` (`mptcp_subflow_get_send`: among the subflows
//! that are active and have congestion-window space, the one with the lowest estimated
//! delivery time — lowest RTT first), `net/mptcp/sched.c` (schedulers behind
//! `struct mptcp_sched_ops`); the out-of-tree multipath-tcp.org kernel's `mptcp_sched.c`
//! (default = lowest RTT), `mptcp_rr.c` (round robin) and `mptcp_redundant.c`; Paasch et al.,
//! "Experimental evaluation of multipath TCP schedulers", CSWS 2014.
//!
//! A scheduler sees one [`SchedView`] per subflow and returns the set of subflows that take
//! the chunk (a bit mask; more than one bit only for the redundant scheduler). The connection
//! asks it for every chunk of at most one MSS, so a subflow is offered data only while its
//! window has room for it, as Linux's `mptcp_subflow_get_send` does per send attempt.
//!
//! Adding one: a file here with a unit struct implementing [`Scheduler`], one line in
//! [`SchedulerConfig`] and in its `build`.

pub mod min_rtt;
pub mod redundant;
pub mod round_robin;

use crate::time::Dur;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a scheduler may read of one subflow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchedView {
    /// Established, not in timeout recovery, and not excluded for this chunk (a reinjection
    /// never goes back to the subflow that already carries it).
    pub usable: bool,
    /// Congestion-window space for the chunk: `cwnd − in_flight − queued ≥ chunk`.
    pub room: bool,
    /// Smoothed RTT, once sampled.
    pub srtt: Option<Dur>,
}

impl SchedView {
    pub fn new(usable: bool, room: bool, srtt: Option<Dur>) -> Self {
        SchedView { usable, room, srtt }
    }
    /// Whether the subflow can take the chunk now.
    pub fn ready(&self) -> bool {
        self.usable && self.room
    }
}

/// A packet scheduler (see the module docs).
pub trait Scheduler: Send + fmt::Debug {
    /// The subflows (bit i: subflow i) that send the next chunk, 0 if none should now.
    fn pick(&mut self, subs: &[SchedView]) -> u8;
}

/// Scheduler selection, by name in a scenario's `transport.scheduler`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerConfig {
    /// Lowest RTT first among the subflows with window space (Linux's default).
    #[default]
    MinRtt,
    /// Each chunk to the next subflow with window space, in turn.
    RoundRobin,
    /// Every chunk on every subflow with window space.
    Redundant,
}

impl SchedulerConfig {
    pub fn build(&self) -> Box<dyn Scheduler> {
        match self {
            SchedulerConfig::MinRtt => Box::new(min_rtt::MinRtt),
            SchedulerConfig::RoundRobin => Box::<round_robin::RoundRobin>::default(),
            SchedulerConfig::Redundant => Box::new(redundant::Redundant),
        }
    }
}
