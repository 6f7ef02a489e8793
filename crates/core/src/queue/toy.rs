//! A toy discipline: a FIFO that holds at most `limit_pkts` packets and drops arrivals beyond
//! that (tail drop).
//!
//! It is the worked example of `docs/tutorials/add-a-queue-discipline.md` and shows that a
//! discipline is one file plus one registry line in `queue/mod.rs` (`docs/registries.md` records
//! the measurement). It adds nothing `fifo` with a packet limit lacks: use `fifo` for real work.

use super::{Backlog, Build, QueueCtx, QueueDisc, Verdict};
use crate::packet::{Packet, PacketData};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `kind = "toy"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ToyConfig {
    /// Packets held at most. Default 10.
    pub limit_pkts: u64,
}

impl Default for ToyConfig {
    fn default() -> Self {
        ToyConfig { limit_pkts: 10 }
    }
}

impl Build for ToyConfig {
    // Ranges are checked, never clamped: an error names the key.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.limit_pkts == 0 {
            return Err(("limit_pkts", "must be at least 1 packet, got 0".into()));
        }
        Ok(())
    }
    fn build(&self, _cx: &super::BuildCtx) -> Box<dyn QueueDisc> {
        Box::new(Toy { limit_pkts: self.limit_pkts, q: VecDeque::new(), bytes: 0 })
    }
}

/// The toy FIFO.
pub struct Toy {
    limit_pkts: u64,
    q: VecDeque<Packet>,
    bytes: u64,
}

impl QueueDisc for Toy {
    fn enqueue(&mut self, pkt: Packet, _cx: &mut QueueCtx) -> Verdict {
        if self.q.len() as u64 >= self.limit_pkts {
            return Verdict::Dropped(pkt);
        }
        self.bytes += pkt.size_bytes as u64;
        self.q.push_back(pkt);
        Verdict::Enqueued
    }
    fn dequeue(&mut self, _cx: &mut QueueCtx) -> Option<Packet> {
        let pkt = self.q.pop_front()?;
        self.bytes -= pkt.size_bytes as u64;
        Some(pkt)
    }
    fn backlog(&self) -> Backlog {
        Backlog { packets: self.q.len() as u64, bytes: self.bytes }
    }
    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.q.iter().for_each(|p| f(p))
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_toml, BuildOptions, RunResults};

    /// A 2 Mbit/s CBR flow into a 1 Mbit/s link whose A→B queue is `queue`.
    fn overload(queue: &str) -> RunResults {
        let text = format!(
            r#"
            [sim]
            duration = "2s"
            [[links]]
            a = "A"
            b = "B"
            rate = "1Mbps"
            delay = "5ms"
            queue = {queue}
            [[flows]]
            name = "f"
            src = "A"
            dst = "B"
            transport = {{ kind = "udp" }}
            app = {{ kind = "cbr", rate = "2Mbps", payload = "1000B" }}
            "#
        );
        run_toml(&text, &BuildOptions::default()).unwrap_or_else(|e| panic!("{queue}: {e}"))
    }

    /// (column, value) of the A→B port, as integers.
    fn a_to_b(r: &RunResults, col: &str) -> u64 {
        let links = r.table("links");
        let row = links.strs("from").iter().position(|n| n == "A").expect("a port from A");
        links.f64s(col)[row] as u64
    }

    /// `kind = "toy"` parses from TOML, runs, never holds more than `limit_pkts`, and drops
    /// exactly the packets a drop-tail FIFO of the same packet limit drops.
    #[test]
    fn toy_queue_tail_drops_beyond_its_limit() {
        let toy = overload(r#"{ kind = "toy", limit_pkts = 5 }"#);
        let fifo = overload(r#"{ kind = "fifo", limit = "5p" }"#);
        assert_eq!(a_to_b(&toy, "max_backlog_pkts"), 5);
        let dropped = a_to_b(&toy, "drop_queue_pkts");
        let arrived = a_to_b(&toy, "arrived_pkts");
        eprintln!("toy queue: {dropped} of {arrived} arrivals dropped, max backlog 5 packets");
        // Twice the link rate offered: about half the arrivals are dropped.
        assert!((dropped as f64 / arrived as f64 - 0.5).abs() < 0.02, "{dropped} of {arrived} dropped");
        assert_eq!(arrived, a_to_b(&toy, "enqueued_pkts") + dropped);
        for col in ["arrived_pkts", "drop_queue_pkts", "tx_pkts", "max_backlog_pkts"] {
            assert_eq!(a_to_b(&toy, col), a_to_b(&fifo, col), "{col}");
        }
    }
}
