//! End-of-run results as columnar tables (one row per flow, per link direction, per sample).
//!
//! Also the conservation check every run passes through: for each flow and direction,
//! `sent = received + dropped (queue) + dropped (channel) + in flight`.

use crate::sim::Simulation;
use crate::trace::{jain_index, Column, FlowStats, Table};
use crate::transport::Service;
use std::collections::BTreeSet;

/// Everything a run produced.
#[derive(Clone, Debug, Default)]
pub struct RunResults {
    pub tables: Vec<Table>,
}

impl RunResults {
    pub fn table(&self, name: &str) -> &Table {
        self.tables.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no result table {name}"))
    }
    /// A value of the `summary` table.
    pub fn summary(&self, key: &str) -> f64 {
        let t = self.table("summary");
        let keys = t.strs("key");
        let vals = t.f64s("value");
        keys.iter().position(|k| k == key).map(|i| vals[i]).unwrap_or_else(|| panic!("no summary key {key}"))
    }
    /// A 64-bit FNV-1a digest of every table: names, column names and values (floats by their
    /// bits). Two runs with equal digests wrote the same results, so an optimisation meant to be
    /// result-neutral can be checked with it (`tests/golden.rs`, the `run_scenario` example).
    /// It depends on the platform's libm only through the model's own arithmetic.
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes {
                h = (h ^ *b as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for t in &self.tables {
            eat(t.name.as_bytes());
            for (name, col) in &t.columns {
                eat(name.as_bytes());
                match col {
                    Column::U64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
                    Column::I64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
                    Column::F64(v) => v.iter().for_each(|x| eat(&x.to_bits().to_le_bytes())),
                    // Length-prefixed, so ["ab", "c"] and ["a", "bc"] differ.
                    Column::Str(v) => v.iter().for_each(|x| {
                        eat(&(x.len() as u64).to_le_bytes());
                        eat(x.as_bytes())
                    }),
                }
            }
        }
        h
    }
    /// A column of the `flows` table as f64, by flow name.
    pub fn flow_value(&self, flow: &str, col: &str) -> f64 {
        let t = self.table("flows");
        let i = t.strs("flow").iter().position(|n| n == flow).unwrap_or_else(|| panic!("no flow {flow}"));
        t.f64s(col)[i]
    }
}

/// Nanoseconds to seconds: every duration of the summary tables is in seconds (`_s`).
fn secs(ns: f64) -> f64 {
    ns * 1e-9
}

/// The delay, jitter and IPDV columns of a flows table, one row per statistics in `st`:
/// `delay_mean_s`, `delay_min_s`, `delay_p50_s`, `delay_p95_s`, `delay_p99_s`, `delay_max_s`,
/// `jitter_rfc3550_s`, `ipdv_mean_s`, `ipdv_mean_abs_s`, `ipdv_p95_abs_s`, `ipdv_p99_abs_s`
/// (NaN where nothing was received).
pub(crate) fn push_delay_columns(t: &mut Table, st: &[&FlowStats]) {
    let q = |f: &FlowStats, p: f64| secs(f.delay.quantile(p));
    t.push(
        "delay_mean_s",
        Column::F64(
            st.iter()
                .map(|f| if f.recv_pkts == 0 { f64::NAN } else { secs(f.delay_sum_ns as f64 / f.recv_pkts as f64) })
                .collect(),
        ),
    );
    t.push(
        "delay_min_s",
        Column::F64(st.iter().map(|f| if f.recv_pkts == 0 { f64::NAN } else { secs(f.delay_min_ns as f64) }).collect()),
    );
    t.push("delay_p50_s", Column::F64(st.iter().map(|f| q(f, 0.5)).collect()));
    t.push("delay_p95_s", Column::F64(st.iter().map(|f| q(f, 0.95)).collect()));
    t.push("delay_p99_s", Column::F64(st.iter().map(|f| q(f, 0.99)).collect()));
    t.push(
        "delay_max_s",
        Column::F64(st.iter().map(|f| if f.recv_pkts == 0 { f64::NAN } else { secs(f.delay_max_ns as f64) }).collect()),
    );
    t.push("jitter_rfc3550_s", Column::F64(st.iter().map(|f| secs(f.jitter_ns())).collect()));
    t.push(
        "ipdv_mean_s",
        Column::F64(
            st.iter()
                .map(|f| if f.ipdv_n == 0 { f64::NAN } else { secs(f.ipdv_sum_ns as f64 / f.ipdv_n as f64) })
                .collect(),
        ),
    );
    t.push(
        "ipdv_mean_abs_s",
        Column::F64(
            st.iter()
                .map(|f| if f.ipdv_n == 0 { f64::NAN } else { secs(f.ipdv_abs_sum_ns as f64 / f.ipdv_n as f64) })
                .collect(),
        ),
    );
    t.push("ipdv_p95_abs_s", Column::F64(st.iter().map(|f| secs(f.ipdv_abs.quantile(0.95))).collect()));
    t.push("ipdv_p99_abs_s", Column::F64(st.iter().map(|f| secs(f.ipdv_abs.quantile(0.99))).collect()));
}

impl Simulation {
    /// Finishes the run (closing integrals and captures) and collects the results.
    ///
    /// # Panics
    /// If packet conservation fails for any flow: that is a simulator bug.
    pub fn results(&mut self) -> RunResults {
        self.finish();
        let dur_s = self.now.as_secs_f64();
        let inflight = self.in_flight();
        let mut tables = Vec::new();

        // Flows.
        let mut t = Table::new("flows");
        let fl = &self.flows;
        for (i, f) in fl.iter().enumerate() {
            for (d, st) in [(0usize, &f.fwd), (1, &f.rev)] {
                let accounted = st.recv_pkts + st.drop_queue_pkts + st.drop_channel_pkts + inflight[i][d];
                assert_eq!(
                    st.sent_pkts,
                    accounted,
                    "{}: flow {} dir {d}: sent {} != received {} + queue drops {} + channel drops {} + in flight {}",
                    self.now,
                    f.name,
                    st.sent_pkts,
                    st.recv_pkts,
                    st.drop_queue_pkts,
                    st.drop_channel_pkts,
                    inflight[i][d]
                );
            }
        }
        let active_s: Vec<f64> = fl.iter().map(|f| (self.now.0.saturating_sub(f.start.0)) as f64 * 1e-9).collect();
        let delivered: Vec<f64> =
            fl.iter().map(|f| f.receiver().delivered_bytes().map_or(f64::NAN, |b| b as f64)).collect();
        t.push("flow", Column::Str(fl.iter().map(|f| f.name.clone()).collect()));
        t.push("transport", Column::Str(fl.iter().map(|f| f.transport_kind.clone()).collect()));
        t.push("app", Column::Str(fl.iter().map(|f| f.ends[0].app_kind.clone()).collect()));
        t.push("src", Column::Str(fl.iter().map(|f| self.node_names[f.src as usize].clone()).collect()));
        t.push("dst", Column::Str(fl.iter().map(|f| self.node_names[f.dst as usize].clone()).collect()));
        t.push("start_s", Column::F64(fl.iter().map(|f| f.start.as_secs_f64()).collect()));
        t.push("sent_pkts", Column::U64(fl.iter().map(|f| f.fwd.sent_pkts).collect()));
        t.push("sent_bytes", Column::U64(fl.iter().map(|f| f.fwd.sent_bytes).collect()));
        t.push("recv_pkts", Column::U64(fl.iter().map(|f| f.fwd.recv_pkts).collect()));
        t.push("recv_bytes", Column::U64(fl.iter().map(|f| f.fwd.recv_bytes).collect()));
        t.push("drop_queue_pkts", Column::U64(fl.iter().map(|f| f.fwd.drop_queue_pkts).collect()));
        t.push("drop_channel_pkts", Column::U64(fl.iter().map(|f| f.fwd.drop_channel_pkts).collect()));
        t.push("in_flight_pkts", Column::U64(inflight.iter().map(|x| x[0]).collect()));
        t.push(
            "loss_ratio",
            Column::F64(
                fl.iter()
                    .map(|f| {
                        if f.fwd.sent_pkts == 0 {
                            0.0
                        } else {
                            (f.fwd.drop_queue_pkts + f.fwd.drop_channel_pkts) as f64 / f.fwd.sent_pkts as f64
                        }
                    })
                    .collect(),
            ),
        );
        t.push(
            "throughput_bps",
            Column::F64(fl.iter().zip(&active_s).map(|(f, a)| f.fwd.recv_bytes as f64 * 8.0 / a.max(1e-12)).collect()),
        );
        t.push("delivered_bytes", Column::F64(delivered.clone()));
        t.push(
            "goodput_bps",
            Column::F64(delivered.iter().zip(&active_s).map(|(b, a)| b * 8.0 / a.max(1e-12)).collect()),
        );
        push_delay_columns(&mut t, &fl.iter().map(|f| &f.fwd).collect::<Vec<_>>());
        t.push("rev_sent_pkts", Column::U64(fl.iter().map(|f| f.rev.sent_pkts).collect()));
        t.push("rev_recv_pkts", Column::U64(fl.iter().map(|f| f.rev.recv_pkts).collect()));
        t.push(
            "rev_drop_pkts",
            Column::U64(fl.iter().map(|f| f.rev.drop_queue_pkts + f.rev.drop_channel_pkts).collect()),
        );
        // Transport and application counters: the union of keys, in sorted order.
        let extras: Vec<Vec<(&'static str, f64)>> = fl
            .iter()
            .map(|f| {
                // Source end first: a key both ends report is the source's.
                let mut v = f.sender().summary();
                v.extend(f.receiver().summary());
                for end in &f.ends {
                    v.extend(end.app.as_ref().map(|a| a.summary()).unwrap_or_default());
                }
                v
            })
            .collect();
        let keys: BTreeSet<&'static str> = extras.iter().flatten().map(|(k, _)| *k).collect();
        for k in keys {
            t.push(
                k,
                Column::F64(
                    extras.iter().map(|e| e.iter().find(|(kk, _)| *kk == k).map_or(f64::NAN, |(_, v)| *v)).collect(),
                ),
            );
        }
        // Jain's index counts the flows that ran: a flow starting at or after the end of the run
        // (a shortened run of a longer scenario) has no rate to be fair about.
        let fair: Vec<f64> = fl
            .iter()
            .enumerate()
            .filter(|(_, f)| f.fairness && f.start < self.now)
            .map(|(i, f)| if f.service == Service::Stream { delivered[i] } else { f.fwd.recv_bytes as f64 } / active_s[i].max(1e-12))
            .collect();
        tables.push(t);

        // Links.
        let mut t = Table::new("links");
        let ps = &self.ports;
        t.push("link", Column::Str(ps.iter().map(|p| p.name.clone()).collect()));
        t.push("from", Column::Str(ps.iter().map(|p| self.node_names[p.from as usize].clone()).collect()));
        t.push("to", Column::Str(ps.iter().map(|p| self.node_names[p.to as usize].clone()).collect()));
        t.push("rate_bps", Column::U64(ps.iter().map(|p| p.rate.bps()).collect()));
        t.push("delay_s", Column::F64(ps.iter().map(|p| p.delay.as_secs_f64()).collect()));
        t.push("arrived_pkts", Column::U64(ps.iter().map(|p| p.stats.arrived_pkts).collect()));
        t.push("enqueued_pkts", Column::U64(ps.iter().map(|p| p.stats.enqueued_pkts).collect()));
        t.push("dequeued_pkts", Column::U64(ps.iter().map(|p| p.stats.dequeued_pkts).collect()));
        t.push("tx_pkts", Column::U64(ps.iter().map(|p| p.stats.tx_pkts).collect()));
        t.push("tx_bytes", Column::U64(ps.iter().map(|p| p.stats.tx_bytes).collect()));
        t.push(
            "drop_queue_pkts",
            Column::U64(ps.iter().map(|p| p.stats.dropped_arrival_pkts + p.stats.dropped_queued_pkts).collect()),
        );
        t.push(
            "drop_queue_bytes",
            Column::U64(ps.iter().map(|p| p.stats.dropped_arrival_bytes + p.stats.dropped_queued_bytes).collect()),
        );
        t.push("drop_channel_pkts", Column::U64(ps.iter().map(|p| p.stats.channel_drop_pkts).collect()));
        // Only scenarios where a discipline marks ECN get the column, so that every other
        // scenario's results keep their shape (and their golden digests).
        if ps.iter().any(|p| p.reports_ce_marks()) {
            t.push("ce_marks_pkts", Column::U64(ps.iter().map(|p| p.stats.ce_marked_pkts).collect()));
        }
        t.push("utilisation", Column::F64(ps.iter().map(|p| p.stats.busy_ns as f64 * 1e-9 / dur_s).collect()));
        t.push("throughput_bps", Column::F64(ps.iter().map(|p| p.stats.tx_bytes as f64 * 8.0 / dur_s).collect()));
        t.push(
            "mean_backlog_bytes",
            Column::F64(ps.iter().map(|p| p.stats.backlog_byte_ns as f64 / self.now.0.max(1) as f64).collect()),
        );
        t.push("max_backlog_pkts", Column::U64(ps.iter().map(|p| p.stats.max_backlog_pkts).collect()));
        t.push("max_backlog_bytes", Column::U64(ps.iter().map(|p| p.stats.max_backlog_bytes).collect()));
        // Only scenarios with outages get their columns and table, so that the results of every
        // other scenario keep their shape (and their golden digests).
        let any_down = ps.iter().any(|p| !p.outages().is_empty());
        if any_down {
            t.push("drop_down_pkts", Column::U64(ps.iter().map(|p| p.stats.down_drop_pkts).collect()));
        }
        // GRO's counts at the receiving end of each direction, only when a link has it.
        if ps.iter().any(|p| p.gro.is_some()) {
            let g = |f: fn(&crate::link::gro::GroStats) -> u64| -> Column {
                Column::U64(ps.iter().map(|p| p.gro.as_deref().map_or(0, |g| f(&g.stats))).collect())
            };
            t.push("gro_rx_pkts", g(|s| s.rx_pkts));
            t.push("gro_polls", g(|s| s.polls));
            t.push("gro_aggregates", g(|s| s.aggregates));
            t.push("gro_merged_pkts", g(|s| s.merged_segments));
        }
        tables.push(t);
        if any_down {
            // Outages: one row per interval a link direction was down (merged, in time order).
            let mut t = Table::new("outages");
            let rows: Vec<_> = ps.iter().flat_map(|p| p.outages().iter().map(move |w| (p.name.clone(), *w))).collect();
            t.push("link", Column::Str(rows.iter().map(|r| r.0.clone()).collect()));
            t.push("start_ns", Column::U64(rows.iter().map(|r| r.1 .0 .0).collect()));
            t.push("end_ns", Column::U64(rows.iter().map(|r| r.1 .1 .0).collect()));
            tables.push(t);
        }

        // Throughput series (long format).
        let mut t = Table::new("throughput");
        let (mut fname, mut tt, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
        let nbins = (self.now.0.div_ceil(self.bin_ns)) as usize;
        for f in fl {
            for b in 0..nbins {
                fname.push(f.name.clone());
                tt.push(b as f64 * self.bin_ns as f64 * 1e-9);
                bytes.push(f.fwd.bins.get(b).copied().unwrap_or(0));
            }
        }
        let bin_s = self.bin_ns as f64 * 1e-9;
        t.push("flow", Column::Str(fname));
        t.push("t_s", Column::F64(tt));
        t.push("bps", Column::F64(bytes.iter().map(|b| *b as f64 * 8.0 / bin_s).collect()));
        t.push("bytes", Column::U64(bytes));
        tables.push(t);

        // Queue occupancy samples.
        let mut t = Table::new("queues");
        let (mut ln, mut tt, mut pk, mut by) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for p in ps {
            if let Some(o) = &p.occupancy {
                for k in 0..o.t_ns.len() {
                    ln.push(p.name.clone());
                    tt.push(o.t_ns[k] as f64 * 1e-9);
                    pk.push(o.packets[k]);
                    by.push(o.bytes[k]);
                }
            }
        }
        t.push("link", Column::Str(ln));
        t.push("t_s", Column::F64(tt));
        t.push("packets", Column::U64(pk));
        t.push("bytes", Column::U64(by));
        tables.push(t);

        // Per-flow backlog samples of ports whose discipline reports them (SQF `flow_sample`);
        // an empty flow name marks an instant with nothing queued. The table is there (empty)
        // for runs that sample nothing: the results digest covers every table's name and
        // columns. The Python writer leaves empty ones out.
        let mut t = Table::new("flow_queues");
        let (mut ln, mut tt, mut fname, mut by) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let real = self.real_flow_names();
        for p in ps {
            if let Some(s) = p.flow_samples() {
                for k in 0..s.t_ns.len() {
                    ln.push(p.name.clone());
                    tt.push(s.t_ns[k] as f64 * 1e-9);
                    fname.push(self.flow_name(s.flow[k], &real));
                    by.push(s.bytes[k]);
                }
            }
        }
        t.push("link", Column::Str(ln));
        t.push("t_s", Column::F64(tt));
        t.push("flow", Column::Str(fname));
        t.push("bytes", Column::U64(by));
        tables.push(t);

        // Per-packet log.
        let mut t = Table::new("packets");
        let (mut c_flow, mut c_seq, mut c_nal, mut c_frame, mut c_size, mut c_sent, mut c_recv, mut c_drop) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for f in fl {
            if let Some(l) = &f.log {
                c_flow.extend(std::iter::repeat_n(f.name.clone(), l.seq.len()));
                c_seq.extend_from_slice(&l.seq);
                c_nal.extend_from_slice(&l.nal);
                c_frame.extend_from_slice(&l.frame);
                c_size.extend_from_slice(&l.size_bytes);
                c_sent.extend_from_slice(&l.sent_ns);
                c_recv.extend_from_slice(&l.recv_ns);
                c_drop.extend_from_slice(&l.drop);
            }
        }
        t.push("flow", Column::Str(c_flow));
        t.push("seq", Column::U64(c_seq));
        t.push("nal", Column::I64(c_nal));
        t.push("frame", Column::I64(c_frame));
        t.push("size_bytes", Column::U64(c_size));
        t.push("sent_ns", Column::I64(c_sent));
        t.push("recv_ns", Column::I64(c_recv));
        t.push("drop", Column::U64(c_drop));
        tables.push(t);

        // Messages delivered in order on logged stream flows; absent when there are none, so
        // the digest of a run without them is what it was before the table existed.
        let mut m = crate::trace::MessageLog::default();
        let mut m_flow = Vec::new();
        for f in fl {
            if let Some(l) = &f.log {
                let g = &l.messages;
                m_flow.extend(std::iter::repeat_n(f.name.clone(), g.tag.len()));
                m.end.extend_from_slice(&g.end);
                m.tag.extend_from_slice(&g.tag);
                m.bytes.extend_from_slice(&g.bytes);
                m.written_ns.extend_from_slice(&g.written_ns);
                m.delivered_ns.extend_from_slice(&g.delivered_ns);
            }
        }
        if !m_flow.is_empty() {
            let mut t = Table::new("messages");
            t.push("flow", Column::Str(m_flow));
            t.push("end", Column::U64(m.end));
            t.push("tag", Column::U64(m.tag));
            t.push("bytes", Column::U64(m.bytes));
            t.push("written_ns", Column::I64(m.written_ns));
            t.push("delivered_ns", Column::I64(m.delivered_ns));
            tables.push(t);
        }

        // Probe tables, one per enabled kind (none by default, so the digest of a run without
        // probes is what it was before probes existed).
        tables.extend(self.probe_tables());
        // Per-path counters, when some flow has several paths (absent otherwise, likewise).
        tables.extend(self.subflow_table());
        // Real hosts' traffic, in an emulation only (likewise).
        let (real_tables, real_summary) = self.real_tables();
        tables.extend(real_tables);

        // Summary.
        let mut t = Table::new("summary");
        let kv: Vec<(&str, f64)> = vec![
            ("duration_s", dur_s),
            ("seed", self.seed as f64),
            ("events", self.events_dispatched() as f64),
            ("nodes", self.node_names.len() as f64),
            ("links", (self.ports.len() / 2) as f64),
            ("flows", fl.len() as f64),
            ("jain_index", if fair.is_empty() { f64::NAN } else { jain_index(&fair) }),
            ("jain_flows", fair.len() as f64),
            ("rsvp_sent", self.rsvp_sent() as f64),
            ("rsvp_dropped", self.rsvp_dropped() as f64),
        ];
        // Series kept coarser than asked to fit their memory budgets (only then: a run within
        // them reports what it always did).
        let mut kv = kv;
        if self.bin_ns != self.bin_asked_ns {
            kv.push(("throughput_bin_s", secs(self.bin_ns as f64)));
        }
        let widest = ps.iter().filter_map(|p| p.occupancy.as_ref()).filter(|o| o.interval_ns != o.asked_ns);
        if let Some(i) = widest.map(|o| o.interval_ns).max() {
            kv.push(("queue_sample_max_s", secs(i as f64)));
        }
        kv.extend(real_summary);
        t.push("key", Column::Str(kv.iter().map(|(k, _)| k.to_string()).collect()));
        t.push("value", Column::F64(kv.iter().map(|(_, v)| *v).collect()));
        tables.push(t);

        RunResults { tables }
    }
}

/// Probes: the run's side of `trace::probe` (kept here so that the probe layer does not depend
/// on the world).
impl Simulation {
    /// Records the probe kinds `kinds` from now on (the scenario's `output.probes`): port kinds
    /// in each port's collector, the others in the world's.
    pub fn enable_probes(&mut self, kinds: &[crate::trace::probe::ProbeKind]) {
        self.probes = crate::trace::probe::Probes::new(kinds);
        for (i, p) in self.ports.iter_mut().enumerate() {
            p.enable_probes(i as crate::packet::PortId, kinds);
        }
    }

    /// The result tables of the enabled probes: ports' collectors first, in port order, then
    /// the world's.
    pub(crate) fn probe_tables(&self) -> Vec<crate::trace::Table> {
        let kinds: Vec<crate::trace::probe::ProbeKind> = self.probes.kinds().collect();
        if kinds.is_empty() {
            return Vec::new();
        }
        let mut srcs: Vec<&crate::trace::probe::Probes> =
            self.ports.iter().filter_map(|p| p.probes.as_deref()).collect();
        srcs.push(&self.probes);
        let real = self.real_flow_names();
        let ports: Vec<String> = self.ports.iter().map(|p| p.name.clone()).collect();
        crate::trace::probe::tables(&kinds, &srcs, &|id| self.flow_name(id, &real), &ports)
    }

    /// The name of flow `id` as result tables show it: a simulated flow's name, a real flow's
    /// 5-tuple (from `real`, [`Simulation::real_flow_names`]), or "" for agents' signalling.
    fn flow_name(&self, id: crate::packet::FlowId, real: &[String]) -> String {
        let name = if crate::real::is_real_flow(id) {
            real.get((id - crate::real::REAL_FLOW_BASE) as usize)
        } else {
            self.flows.get(id as usize).map(|f| &f.name)
        };
        name.cloned().unwrap_or_default()
    }
}

/// Per-path statistics of connections with subflows (see `crate::subflow`).
impl crate::sim::Flow {
    /// The counters of path `k` in direction `d` (0: forward). A single-path flow's only path
    /// is the connection itself.
    ///
    /// # Panics
    /// If the flow has no path `k`.
    pub fn path_stats(&self, k: usize, d: usize) -> crate::subflow::PathStats {
        if let Some(sf) = self.subflows.get(k) {
            return sf.stats[d];
        }
        assert!(k == 0, "flow {} has one path, not {}", self.name, k + 1);
        let st = if d == 0 { &self.fwd } else { &self.rev };
        crate::subflow::PathStats {
            sent_pkts: st.sent_pkts,
            sent_bytes: st.sent_bytes,
            recv_pkts: st.recv_pkts,
            recv_bytes: st.recv_bytes,
            drop_queue_pkts: st.drop_queue_pkts,
            drop_channel_pkts: st.drop_channel_pkts,
        }
    }
}

impl Simulation {
    /// The `subflows` result table, one row per flow and path (forward counters, then the
    /// reverse direction's with `rev_`), or `None` when no flow declares subflows (the results
    /// of single-path runs are then what they were before subflows existed).
    ///
    /// # Panics
    /// If a path fails conservation (`sent = received + dropped + in flight`): a simulator bug.
    pub(crate) fn subflow_table(&self) -> Option<Table> {
        if self.flows.iter().all(|f| f.subflows.is_empty()) {
            return None;
        }
        // Packets of each flow, path and direction still inside the network.
        let mut inflight: Vec<[[u64; 2]; crate::subflow::MAX_PATHS]> =
            vec![[[0; 2]; crate::subflow::MAX_PATHS]; self.flows.len()];
        for p in &self.ports {
            p.for_each_packet(&mut |pkt| {
                // Agents' and real hosts' packets are no simulated flow's.
                if let Some(x) = inflight.get_mut(pkt.flow as usize) {
                    x[pkt.path as usize][pkt.dir as usize] += 1
                }
            });
        }
        let mut t = Table::new("subflows");
        let (mut flow, mut path, mut src, mut dst, mut sport, mut dport, mut route) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut cols: [Vec<u64>; 16] = Default::default();
        for (i, f) in self.flows.iter().enumerate() {
            for k in 0..f.paths() {
                let (addr, port, r) = match f.subflows.get(k) {
                    Some(sf) => (sf.addr, sf.port, sf.route(0)),
                    None => {
                        ([f.ends[0].addr, f.ends[1].addr], [f.ends[0].port, f.ends[1].port], f.route_fwd.as_deref())
                    }
                };
                flow.push(f.name.clone());
                path.push(k as u64);
                src.push(addr[0].to_string());
                dst.push(addr[1].to_string());
                sport.push(port[0] as u64);
                dport.push(port[1] as u64);
                route.push(r.map_or(String::new(), |ports| {
                    let mut s = self.node_names[self.ports[ports[0] as usize].from as usize].clone();
                    for &p in ports {
                        s.push('-');
                        s.push_str(&self.node_names[self.ports[p as usize].to as usize]);
                    }
                    s
                }));
                for d in 0..2 {
                    let st = f.path_stats(k, d);
                    let fl = inflight[i][k][d];
                    assert_eq!(
                        st.sent_pkts,
                        st.recv_pkts + st.drop_queue_pkts + st.drop_channel_pkts + fl,
                        "{}: flow {} path {k} dir {d}: sent != received + drops + in flight ({st:?}, {fl} in flight)",
                        self.now,
                        f.name
                    );
                    let vals = [
                        st.sent_pkts,
                        st.sent_bytes,
                        st.recv_pkts,
                        st.recv_bytes,
                        st.drop_queue_pkts,
                        st.drop_channel_pkts,
                        fl,
                    ];
                    for (c, v) in vals.into_iter().enumerate() {
                        cols[d * 8 + c].push(v);
                    }
                }
            }
        }
        t.push("flow", Column::Str(flow));
        t.push("path", Column::U64(path));
        t.push("src_addr", Column::Str(src));
        t.push("dst_addr", Column::Str(dst));
        t.push("src_port", Column::U64(sport));
        t.push("dst_port", Column::U64(dport));
        t.push("route", Column::Str(route));
        let names = [
            "sent_pkts",
            "sent_bytes",
            "recv_pkts",
            "recv_bytes",
            "drop_queue_pkts",
            "drop_channel_pkts",
            "in_flight_pkts",
        ];
        for d in 0..2 {
            for (c, name) in names.iter().enumerate() {
                let col = std::mem::take(&mut cols[d * 8 + c]);
                let name = if d == 0 { name.to_string() } else { format!("rev_{name}") };
                t.push(&name, Column::U64(col));
            }
        }
        // Forward IP throughput of each path, over the flow's active time.
        let mut thr = Vec::new();
        for f in &self.flows {
            let active_s = self.now.0.saturating_sub(f.start.0) as f64 * 1e-9;
            for k in 0..f.paths() {
                thr.push(f.path_stats(k, 0).recv_bytes as f64 * 8.0 / active_s.max(1e-12));
            }
        }
        t.push("throughput_bps", Column::F64(thr));
        // Per-path transport counters (MPTCP subflows), NaN on rows whose transport has none;
        // the columns appear only when some flow reports them. The Python layer turns the
        // counters among them into nullable integers (`qoelab.outputs.SUBFLOW_COUNTERS`).
        let mut extra: Vec<(&'static str, Vec<f64>)> = Vec::new();
        let mut row = 0;
        for f in &self.flows {
            for k in 0..f.paths() {
                for (name, v) in f.sender().path_summary(k).into_iter().chain(f.receiver().path_summary(k)) {
                    let col = match extra.iter().position(|c| c.0 == name) {
                        Some(i) => &mut extra[i].1,
                        None => {
                            extra.push((name, vec![f64::NAN; row]));
                            &mut extra.last_mut().expect("just pushed").1
                        }
                    };
                    col.resize(row, f64::NAN);
                    col.push(v);
                }
                row += 1;
            }
        }
        for (name, mut col) in extra {
            col.resize(row, f64::NAN);
            t.push(name, Column::F64(col));
        }
        Some(t)
    }
}
