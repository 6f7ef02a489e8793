//! Queue disciplines: the `QueueDisc` trait, its context, and the tagged config registry.
//!
//! A discipline only *decides*: which packet to admit, which to drop, which to send next.
//! The [`Port`](crate::link::Port) that owns it counts arrivals, drops and departures, keeps the
//! occupancy series and traces, so no discipline repeats that bookkeeping (ns-3 `DoEnqueue`).
//!
//! Invariants the port checks (and the property tests exercise):
//! `arrived = enqueued + dropped_on_arrival` and
//! `enqueued = dequeued + dropped_from_queue + backlog`.

pub mod fifo;

use crate::packet::Packet;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

pub use fifo::{Fifo, FifoConfig};

/// Current occupancy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    pub packets: u64,
    pub bytes: u64,
}

/// What happened to an arriving packet.
#[derive(Debug)]
pub enum Verdict {
    Enqueued,
    /// Refused on arrival; the packet is handed back for accounting.
    Dropped(Packet),
}

/// Context handed to a discipline on each call.
pub struct QueueCtx<'a> {
    pub now: SimTime,
    /// Packets the discipline removed from its queue without sending them (push-out, AQM).
    pub(crate) dropped_from_queue: &'a mut Vec<Packet>,
}

impl<'a> QueueCtx<'a> {
    pub fn new(now: SimTime, dropped_from_queue: &'a mut Vec<Packet>) -> Self {
        QueueCtx { now, dropped_from_queue }
    }
    /// Drops a packet that was already enqueued (push-out by LQD, CoDel's head drop).
    pub fn drop_queued(&mut self, pkt: Packet) {
        self.dropped_from_queue.push(pkt);
    }
}

/// A queue discipline attached to a port.
pub trait QueueDisc: Send {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict;
    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet>;
    fn backlog(&self) -> Backlog;
    /// Packets currently held, for end-of-run in-flight accounting. Order is unspecified.
    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet));
}

/// Builds a discipline from its config. `KIND` is the `kind = "..."` tag.
pub trait Build {
    const KIND: &'static str;
    fn build(&self, mtu_bytes: u32) -> Box<dyn QueueDisc>;
}

/// Every discipline, as selected by `kind` in scenario files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    Fifo(FifoConfig),
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig::Fifo(FifoConfig::default())
    }
}

impl QueueConfig {
    pub fn build(&self, mtu_bytes: u32) -> Box<dyn QueueDisc> {
        match self {
            QueueConfig::Fifo(c) => c.build(mtu_bytes),
        }
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Helpers for discipline tests: synthetic packets of a given flow and size.
    use crate::packet::*;
    use crate::time::SimTime;

    pub fn pkt(flow: FlowId, size: u32, seq: u64) -> Packet {
        Packet {
            flow,
            dir: Dir::Fwd,
            src: 0,
            dst: 1,
            seq_in_flow: seq,
            size_bytes: size,
            sent_at: SimTime::ZERO,
            hop: 0,
            path: 0,
            ip: IpHdr::default(),
            l4: L4::Udp(UdpHdr { src_port: 1000 + flow as u16, dst_port: 5000, ..Default::default() }),
        }
    }
}
