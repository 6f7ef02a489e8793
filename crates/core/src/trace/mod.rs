//! Observation: per-flow statistics, histograms, the per-packet log, typed probes ([`probe`]), and
//! columnar result tables.

pub mod hist;
pub mod pcap;
pub mod probe;

use crate::time::SimTime;
pub use hist::LogHistogram;

/// A column of a result table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named set of equal-length columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn new(name: &str) -> Self {
        Table { name: name.into(), columns: Vec::new() }
    }
    pub fn push(&mut self, name: &str, col: Column) {
        if let Some((_, first)) = self.columns.first() {
            assert_eq!(first.len(), col.len(), "table {}: column {name} has a different length", self.name);
        }
        self.columns.push((name.into(), col));
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
    pub fn f64s(&self, name: &str) -> Vec<f64> {
        match self.get(name) {
            Some(Column::F64(v)) => v.clone(),
            Some(Column::U64(v)) => v.iter().map(|x| *x as f64).collect(),
            Some(Column::I64(v)) => v.iter().map(|x| *x as f64).collect(),
            _ => panic!("table {}: no numeric column {name}", self.name),
        }
    }
    pub fn strs(&self, name: &str) -> Vec<String> {
        match self.get(name) {
            Some(Column::Str(v)) => v.clone(),
            _ => panic!("table {}: no string column {name}", self.name),
        }
    }
}

/// Network-level statistics of one direction of one flow, at its receiver.
#[derive(Clone, Debug, Default)]
pub struct FlowStats {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub recv_pkts: u64,
    pub recv_bytes: u64,
    pub drop_queue_pkts: u64,
    pub drop_channel_pkts: u64,
    pub delay: LogHistogram,
    pub delay_sum_ns: u128,
    pub delay_min_ns: u64,
    pub delay_max_ns: u64,
    /// RFC 3550 §6.4.1 interarrival jitter estimate, in ns (scaled by 16 internally).
    jitter16: u64,
    last_transit: Option<i128>,
    /// RFC 3393 IPDV between consecutive sequence numbers: |ipdv| histogram and sums.
    pub ipdv_abs: LogHistogram,
    pub ipdv_sum_ns: i128,
    pub ipdv_abs_sum_ns: u128,
    pub ipdv_n: u64,
    last_seq_delay: Option<(u64, u64)>,
    pub first_recv: Option<SimTime>,
    pub last_recv: SimTime,
    /// Bytes received per throughput bin.
    pub bins: Vec<u64>,
}

impl FlowStats {
    pub fn new() -> Self {
        FlowStats { delay_min_ns: u64::MAX, ..Default::default() }
    }

    /// Records a packet of `size` bytes, `seq` in its flow, sent at `sent`, received at `now`.
    pub fn on_receive(&mut self, seq: u64, size: u32, sent: SimTime, now: SimTime, bin_ns: u64) {
        let d = now.0 - sent.0;
        self.recv_pkts += 1;
        self.recv_bytes += size as u64;
        self.delay.record(d);
        self.delay_sum_ns += d as u128;
        self.delay_min_ns = self.delay_min_ns.min(d);
        self.delay_max_ns = self.delay_max_ns.max(d);
        // RFC 3550 §6.4.1: J += (|D(i-1,i)| - J) / 16, in arrival order. Kept scaled by 16 in
        // integers (as the RFC's appendix A.8 does).
        let transit = now.0 as i128 - sent.0 as i128;
        if let Some(prev) = self.last_transit {
            let dd = (transit - prev).unsigned_abs() as u64;
            self.jitter16 = self.jitter16 + dd - ((self.jitter16 + 8) >> 4);
        }
        self.last_transit = Some(transit);
        // RFC 3393: IPDV of consecutive packets (selection function: seq and seq-1 both received).
        if let Some((ps, pd)) = self.last_seq_delay {
            if seq == ps + 1 {
                let v = d as i128 - pd as i128;
                self.ipdv_sum_ns += v;
                self.ipdv_abs_sum_ns += v.unsigned_abs();
                self.ipdv_abs.record(v.unsigned_abs() as u64);
                self.ipdv_n += 1;
            }
        }
        self.last_seq_delay = Some((seq, d));
        self.first_recv.get_or_insert(now);
        self.last_recv = now;
        let b = (now.0 / bin_ns) as usize;
        if b >= self.bins.len() {
            self.bins.resize(b + 1, 0);
        }
        self.bins[b] += size as u64;
    }

    /// RFC 3550 jitter in ns.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter16 as f64 / 16.0
    }
}

/// Per-packet log of a flow's forward packets (the video evaluator's receive log).
#[derive(Clone, Debug, Default)]
pub struct PacketLog {
    pub seq: Vec<u64>,
    pub nal: Vec<i64>,
    pub frame: Vec<i64>,
    pub size_bytes: Vec<u64>,
    pub sent_ns: Vec<i64>,
    /// -1 while not received.
    pub recv_ns: Vec<i64>,
    /// 0 = delivered or in flight, 1 = queue drop, 2 = channel drop.
    pub drop: Vec<u64>,
    /// The messages ([`AppCtx::send_message`](crate::app::AppCtx::send_message)) delivered in
    /// order to either end's application, in delivery order (empty on datagram flows).
    pub messages: MessageLog,
}

/// Messages delivered in order to a flow's applications: the `messages` table.
#[derive(Clone, Debug, Default)]
pub struct MessageLog {
    /// End whose application received the message (0 at the flow's source, 1 at its destination).
    pub end: Vec<u64>,
    pub tag: Vec<u64>,
    pub bytes: Vec<u64>,
    /// When the peer's application wrote it.
    pub written_ns: Vec<i64>,
    /// When its last byte reached the receiving application in order.
    pub delivered_ns: Vec<i64>,
}

/// Jain's fairness index (Σx)² / (n·Σx²) of non-negative values; 1 for an empty or all-zero set.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if s2 == 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_bounds() {
        assert!((jain_index(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain_index(&[3.0, 1.0]) - 16.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn rfc3550_jitter_converges_to_mean_abs_difference() {
        // Transit alternates 10 ms / 12 ms: |D| = 2 ms always, so J -> 2 ms.
        let mut s = FlowStats::new();
        for i in 0..2000u64 {
            let sent = SimTime(i * 20_000_000);
            let transit = if i % 2 == 0 { 10_000_000 } else { 12_000_000 };
            s.on_receive(i, 100, sent, SimTime(sent.0 + transit), 100_000_000);
        }
        assert!((s.jitter_ns() - 2_000_000.0).abs() < 1_000.0, "{}", s.jitter_ns());
        assert_eq!(s.ipdv_n, 1999);
        assert_eq!(s.ipdv_abs_sum_ns, 1999 * 2_000_000);
        // Alternating signs: the signed IPDV sum telescopes to last - first delay.
        assert_eq!(s.ipdv_sum_ns, 2_000_000);
    }

    #[test]
    fn ipdv_skips_gaps() {
        let mut s = FlowStats::new();
        s.on_receive(0, 100, SimTime(0), SimTime(5), 1000);
        s.on_receive(2, 100, SimTime(10), SimTime(20), 1000);
        assert_eq!(s.ipdv_n, 0);
        s.on_receive(3, 100, SimTime(20), SimTime(27), 1000);
        assert_eq!(s.ipdv_n, 1);
        assert_eq!(s.ipdv_sum_ns, -3);
    }
}
