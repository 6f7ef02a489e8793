//! Typed probes: time series of what components do, recorded into columns only when asked for.
//!
//! A component emits a [`ProbeEvent`] (an ns-3 trace source, typed) at the moment something
//! happens: a port enqueues, dequeues or drops a packet; TCP changes its window, times out,
//! retransmits or changes state; an application reports a named value. A [`Probes`] collector
//! keeps the kinds the scenario enabled (`[output] probes = ["cwnd", "rto"]`) as
//! struct-of-arrays columns; every other kind is refused by one mask test, and a run without
//! probes only pays a branch at each emission point (`tests/golden.rs` checks that the results
//! and event counts of such runs do not move).
//!
//! Who records where:
//! - ports ([`crate::link::Port`]) keep a collector of their own for [`ProbeKind::Queue`] and
//!   [`ProbeKind::Drops`] (no change to the port's call signature, and nothing at all when off);
//! - transports and applications record into the world's collector through
//!   [`FlowCtx::probe`](crate::transport::FlowCtx::probe).
//!
//! Each enabled kind becomes a result table `probe_<kind>` ([`tables`]), one row per event;
//! flow and link ids become names there. `t_ns` is the exact simulated time in nanoseconds.
//! Rows of transport and application kinds are in emission (time) order; rows of port kinds are
//! grouped by link direction (in link order) and in time order within one.
//!
//! A second, sampled kind of observation: [`FlowBacklogSeries`], the bytes every flow has queued
//! in a discipline with per-flow queues, at most once per interval. The port owns the series
//! and, when a sample is due after a change of the discipline's queues, asks the discipline for
//! them ([`QueueDisc::flow_backlogs`](crate::queue::QueueDisc::flow_backlogs), which any
//! discipline with per-flow queues can answer); results read it from the port (table
//! `flow_queues`).

use crate::packet::{FlowId, PortId};
use crate::time::{Dur, SimTime};
use crate::trace::{Column, Table};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Per-flow backlog samples of one port's discipline (long format): at `t_ns[i]` flow `flow[i]`
/// had `bytes[i]` queued. Each sample instant lists every flow with packets queued, in the
/// order the discipline reports them; an instant with none appears once with
/// `flow = u32::MAX` and 0 bytes, so idle time is represented. A sample is taken at the first
/// change of the queues in each interval (no events are scheduled for it), so idle periods
/// cost nothing. Enabled per discipline by its config ([`crate::queue::Build::flow_sample`]:
/// SQF's `flow_sample` key); results table `flow_queues`.
#[derive(Clone, Debug, Default)]
pub struct FlowBacklogSeries {
    pub interval_ns: u64,
    pub t_ns: Vec<u64>,
    /// The simulator flow of each queue's packets (the flow of its head packet).
    pub flow: Vec<FlowId>,
    pub bytes: Vec<u64>,
    next_ns: u64,
}

impl FlowBacklogSeries {
    /// A series sampled at most once per `interval` (at least 1 ns).
    pub fn new(interval: Dur) -> Self {
        FlowBacklogSeries { interval_ns: interval.as_nanos().max(1), ..Default::default() }
    }
    /// Whether a sample is due at `now` (the first change in a new interval).
    #[inline]
    pub fn due(&self, now: SimTime) -> bool {
        now.0 >= self.next_ns
    }
    /// Records the current state if a sample is due: `report` is then called with a sink for
    /// `(flow, bytes)` of every flow with packets queued (and not called otherwise).
    pub fn observe(&mut self, now: SimTime, report: impl FnOnce(&mut dyn FnMut(FlowId, u64))) {
        if !self.due(now) {
            return;
        }
        let before = self.t_ns.len();
        report(&mut |f, b| {
            self.t_ns.push(now.0);
            self.flow.push(f);
            self.bytes.push(b);
        });
        if self.t_ns.len() == before {
            self.t_ns.push(now.0);
            self.flow.push(u32::MAX);
            self.bytes.push(0);
        }
        self.next_ns = (now.0 / self.interval_ns + 1) * self.interval_ns;
    }
}

/// A kind of probe, as named in `[output] probes`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    /// Enqueue and dequeue at every port (table `probe_queue`).
    Queue,
    /// Drops at every port: refused on arrival, dropped from the queue, lost on the channel
    /// (table `probe_drops`).
    Drops,
    /// TCP congestion window and ssthresh after every change (table `probe_cwnd`).
    Cwnd,
    /// Every retransmission timeout, SYN timeouts included (table `probe_rto`).
    Rto,
    /// Every retransmitted data segment (table `probe_retransmit`).
    Retransmit,
    /// TCP connection and congestion state changes (table `probe_tcp_state`).
    TcpState,
    /// Named values applications report (table `probe_app`).
    App,
    /// A TFRC sender's X, X_recv, p and R after every feedback and no-feedback expiry (table
    /// `probe_tfrc`).
    Tfrc,
    /// An MPTCP subflow's cwnd, ssthresh, SRTT and bytes in flight after every change of its
    /// window (table `probe_subflow`).
    Subflow,
    /// The TCP Interactive notices, whether or not an application subscribed: every RTO, fast
    /// retransmit and window change, each with the window TCP set (table `probe_tcp_events`).
    TcpEvents,
    /// A BBR sender's mode, bandwidth and min-RTT estimates, gains and pacing rate, at every
    /// mode change and every new round (table `probe_bbr`; Linux's `ss -ti` `bbr:` fields).
    Bbr,
}

/// Every kind with its scenario name: the one place the names are written (parsing, errors,
/// table names and docs derive from it).
const KINDS: [(ProbeKind, &str); 11] = [
    (ProbeKind::Queue, "queue"),
    (ProbeKind::Drops, "drops"),
    (ProbeKind::Cwnd, "cwnd"),
    (ProbeKind::Rto, "rto"),
    (ProbeKind::Retransmit, "retransmit"),
    (ProbeKind::TcpState, "tcp_state"),
    (ProbeKind::App, "app"),
    (ProbeKind::Tfrc, "tfrc"),
    (ProbeKind::Subflow, "subflow"),
    (ProbeKind::TcpEvents, "tcp_events"),
    (ProbeKind::Bbr, "bbr"),
];

impl ProbeKind {
    /// All kinds, in table order.
    pub fn all() -> impl Iterator<Item = ProbeKind> {
        KINDS.iter().map(|(k, _)| *k)
    }
    /// The scenario name (`"cwnd"`).
    pub fn name(self) -> &'static str {
        KINDS[self as usize].1
    }
    /// The valid names, comma-separated, for error messages.
    pub fn names() -> String {
        KINDS.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
    }
    /// The result table of this kind (`"probe_cwnd"`).
    pub fn table(self) -> String {
        format!("probe_{}", self.name())
    }
    #[inline]
    fn bit(self) -> u32 {
        1 << self as u32
    }
}

impl std::str::FromStr for ProbeKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        KINDS
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .ok_or_else(|| format!("unknown probe {s:?}; valid probes: {}", ProbeKind::names()))
    }
}

impl Serialize for ProbeKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for ProbeKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProbeKind".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = KINDS.iter().map(|(_, n)| *n).collect();
        schemars::json_schema!({ "type": "string", "enum": names, "description": "a probe kind (docs/models/probes.md)" })
    }
}

impl<'de> Deserialize<'de> for ProbeKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a port dropped a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Refused by the queue discipline on arrival (tail drop, LQD refusing the arrival).
    Arrival,
    /// Dropped from the queue after being accepted (LQD push-out, an AQM's head drop).
    Queued,
    /// Lost by the link's loss model as its serialisation started.
    Channel,
    /// Lost because the link direction was down while the packet was on it
    /// ([`crate::link::outage`]).
    Down,
}

impl DropCause {
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Arrival => "arrival",
            DropCause::Queued => "queued",
            DropCause::Channel => "channel",
            DropCause::Down => "down",
        }
    }
}

/// What a `tcp_events` row reports (its `event` column).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TcpEventKind {
    /// A retransmission timeout fired ([`TransportEvent::RtoFired`](crate::transport::TransportEvent::RtoFired)).
    Rto,
    /// Fast retransmit entered ([`TransportEvent::FastRetransmit`](crate::transport::TransportEvent::FastRetransmit)).
    FastRetransmit,
    /// cwnd or ssthresh changed ([`TransportEvent::CwndChanged`](crate::transport::TransportEvent::CwndChanged)).
    Window,
}

impl TcpEventKind {
    pub fn name(self) -> &'static str {
        match self {
            TcpEventKind::Rto => "rto",
            TcpEventKind::FastRetransmit => "fast_retransmit",
            TcpEventKind::Window => "window",
        }
    }
}

/// One observation. `end` is the flow's end (0 at its source, 1 at its destination) that
/// emitted it or, for port events, that sent the packet. Sizes are IP datagram bytes.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ProbeEvent {
    /// A port's discipline accepted a packet.
    Enqueue { port: PortId, flow: FlowId, end: u8, bytes: u32 },
    /// A port took a packet from its discipline and started serialising it.
    Dequeue { port: PortId, flow: FlowId, end: u8, bytes: u32 },
    /// A port dropped a packet.
    Drop { port: PortId, flow: FlowId, end: u8, bytes: u32, cause: DropCause },
    /// TCP's congestion window or ssthresh changed; bytes.
    Cwnd { flow: FlowId, end: u8, cwnd_bytes: u64, ssthresh_bytes: u64 },
    /// A retransmission timeout fired: the RTO after backoff (ns) and the consecutive count.
    Rto { flow: FlowId, end: u8, rto_ns: u64, backoff: u32 },
    /// A data segment `[seq, seq + bytes)` was retransmitted (payload bytes).
    Retransmit { flow: FlowId, end: u8, seq: u64, bytes: u64 },
    /// The transport entered `state` (e.g. TCP `"syn_sent"`, `"open"`, `"recovery"`, `"loss"`).
    TcpState { flow: FlowId, end: u8, state: &'static str },
    /// An application reported `value` under `name`.
    App { flow: FlowId, end: u8, name: &'static str, value: f64 },
    /// A TFRC sender's allowed rate X and the receive rate X_recv it was told (bits/s), the
    /// loss event rate p and its RTT estimate R (ns).
    Tfrc { flow: FlowId, end: u8, x_bps: f64, x_recv_bps: f64, p: f64, rtt_ns: u64 },
    /// MPTCP subflow `path`'s window changed: cwnd and ssthresh (bytes), SRTT (ns, 0 before a
    /// sample) and bytes in flight.
    Subflow {
        flow: FlowId,
        end: u8,
        path: u8,
        cwnd_bytes: u64,
        ssthresh_bytes: u64,
        srtt_ns: u64,
        in_flight_bytes: u64,
    },
    /// A TCP Interactive notice: the window after the event; `rto_ns` and `backoff` for an RTO
    /// (0 otherwise), `seq` for a fast retransmit (0 otherwise).
    TcpEvent {
        flow: FlowId,
        end: u8,
        event: TcpEventKind,
        cwnd_bytes: u64,
        ssthresh_bytes: u64,
        rto_ns: u64,
        backoff: u32,
        seq: u64,
    },
    /// A BBR sender's state (at a mode change or a new round): mode, round count, bandwidth
    /// estimate and pacing rate (bit/s of payload), min-RTT estimate (ns, 0 before a sample),
    /// gains, and cwnd (bytes).
    Bbr {
        flow: FlowId,
        end: u8,
        mode: &'static str,
        round: u64,
        bw_bps: f64,
        min_rtt_ns: u64,
        pacing_gain: f64,
        cwnd_gain: f64,
        pacing_rate_bps: f64,
        cwnd_bytes: u64,
    },
}

impl ProbeEvent {
    pub fn kind(&self) -> ProbeKind {
        match self {
            ProbeEvent::Enqueue { .. } | ProbeEvent::Dequeue { .. } => ProbeKind::Queue,
            ProbeEvent::Drop { .. } => ProbeKind::Drops,
            ProbeEvent::Cwnd { .. } => ProbeKind::Cwnd,
            ProbeEvent::Rto { .. } => ProbeKind::Rto,
            ProbeEvent::Retransmit { .. } => ProbeKind::Retransmit,
            ProbeEvent::TcpState { .. } => ProbeKind::TcpState,
            ProbeEvent::App { .. } => ProbeKind::App,
            ProbeEvent::Tfrc { .. } => ProbeKind::Tfrc,
            ProbeEvent::Subflow { .. } => ProbeKind::Subflow,
            ProbeEvent::TcpEvent { .. } => ProbeKind::TcpEvents,
            ProbeEvent::Bbr { .. } => ProbeKind::Bbr,
        }
    }
}

/// Columns common to every kind: time, flow, end; and the port for port kinds.
#[derive(Clone, Debug, Default)]
struct Key {
    t_ns: Vec<u64>,
    flow: Vec<FlowId>,
    end: Vec<u8>,
}

impl Key {
    #[inline]
    fn push(&mut self, t: SimTime, flow: FlowId, end: u8) {
        self.t_ns.push(t.0);
        self.flow.push(flow);
        self.end.push(end);
    }
}

/// A collector: typed columns for each enabled kind (amortised `Vec` growth, nothing else
/// allocated per event).
#[derive(Clone, Debug, Default)]
pub struct Probes {
    mask: u32,
    queue: Key,
    queue_port: Vec<PortId>,
    /// 0 = enqueue, 1 = dequeue.
    queue_event: Vec<u8>,
    queue_bytes: Vec<u32>,
    drops: Key,
    drops_port: Vec<PortId>,
    drops_bytes: Vec<u32>,
    drops_cause: Vec<DropCause>,
    cwnd: Key,
    cwnd_bytes: Vec<u64>,
    ssthresh_bytes: Vec<u64>,
    rto: Key,
    rto_ns: Vec<u64>,
    rto_backoff: Vec<u32>,
    rxt: Key,
    rxt_seq: Vec<u64>,
    rxt_bytes: Vec<u64>,
    state: Key,
    state_name: Vec<&'static str>,
    app: Key,
    app_name: Vec<&'static str>,
    app_value: Vec<f64>,
    tfrc: Key,
    tfrc_x_bps: Vec<f64>,
    tfrc_x_recv_bps: Vec<f64>,
    tfrc_p: Vec<f64>,
    tfrc_rtt_ns: Vec<u64>,
    sub: Key,
    sub_path: Vec<u8>,
    sub_cwnd: Vec<u64>,
    sub_ssthresh: Vec<u64>,
    sub_srtt_ns: Vec<u64>,
    sub_in_flight: Vec<u64>,
    tev: Key,
    tev_event: Vec<TcpEventKind>,
    tev_cwnd_bytes: Vec<u64>,
    tev_ssthresh_bytes: Vec<u64>,
    tev_rto_ns: Vec<u64>,
    tev_backoff: Vec<u32>,
    tev_seq: Vec<u64>,
    bbr: Key,
    bbr_mode: Vec<&'static str>,
    bbr_round: Vec<u64>,
    bbr_bw_bps: Vec<f64>,
    bbr_min_rtt_ns: Vec<u64>,
    bbr_pacing_gain: Vec<f64>,
    bbr_cwnd_gain: Vec<f64>,
    bbr_pacing_rate_bps: Vec<f64>,
    bbr_cwnd_bytes: Vec<u64>,
}

impl Probes {
    /// A collector recording `kinds`.
    pub fn new(kinds: &[ProbeKind]) -> Self {
        Probes { mask: kinds.iter().fold(0, |m, k| m | k.bit()), ..Default::default() }
    }
    /// Whether any kind is recorded.
    #[inline]
    pub fn any(&self) -> bool {
        self.mask != 0
    }
    /// Whether `kind` is recorded (lets an emitter skip computing an event).
    #[inline]
    pub fn on(&self, kind: ProbeKind) -> bool {
        self.mask & kind.bit() != 0
    }
    /// The kinds recorded, in table order.
    pub fn kinds(&self) -> impl Iterator<Item = ProbeKind> + '_ {
        ProbeKind::all().filter(|k| self.on(*k))
    }

    /// Records `ev` at `t` if its kind is enabled.
    #[inline]
    pub fn record(&mut self, t: SimTime, ev: ProbeEvent) {
        if self.on(ev.kind()) {
            self.push(t, ev);
        }
    }

    fn push(&mut self, t: SimTime, ev: ProbeEvent) {
        match ev {
            ProbeEvent::Enqueue { port, flow, end, bytes } | ProbeEvent::Dequeue { port, flow, end, bytes } => {
                self.queue.push(t, flow, end);
                self.queue_port.push(port);
                self.queue_event.push(matches!(ev, ProbeEvent::Dequeue { .. }) as u8);
                self.queue_bytes.push(bytes);
            }
            ProbeEvent::Drop { port, flow, end, bytes, cause } => {
                self.drops.push(t, flow, end);
                self.drops_port.push(port);
                self.drops_bytes.push(bytes);
                self.drops_cause.push(cause);
            }
            ProbeEvent::Cwnd { flow, end, cwnd_bytes, ssthresh_bytes } => {
                self.cwnd.push(t, flow, end);
                self.cwnd_bytes.push(cwnd_bytes);
                self.ssthresh_bytes.push(ssthresh_bytes);
            }
            ProbeEvent::Rto { flow, end, rto_ns, backoff } => {
                self.rto.push(t, flow, end);
                self.rto_ns.push(rto_ns);
                self.rto_backoff.push(backoff);
            }
            ProbeEvent::Retransmit { flow, end, seq, bytes } => {
                self.rxt.push(t, flow, end);
                self.rxt_seq.push(seq);
                self.rxt_bytes.push(bytes);
            }
            ProbeEvent::TcpState { flow, end, state } => {
                self.state.push(t, flow, end);
                self.state_name.push(state);
            }
            ProbeEvent::App { flow, end, name, value } => {
                self.app.push(t, flow, end);
                self.app_name.push(name);
                self.app_value.push(value);
            }
            ProbeEvent::Tfrc { flow, end, x_bps, x_recv_bps, p, rtt_ns } => {
                self.tfrc.push(t, flow, end);
                self.tfrc_x_bps.push(x_bps);
                self.tfrc_x_recv_bps.push(x_recv_bps);
                self.tfrc_p.push(p);
                self.tfrc_rtt_ns.push(rtt_ns);
            }
            ProbeEvent::Subflow { flow, end, path, cwnd_bytes, ssthresh_bytes, srtt_ns, in_flight_bytes } => {
                self.sub.push(t, flow, end);
                self.sub_path.push(path);
                self.sub_cwnd.push(cwnd_bytes);
                self.sub_ssthresh.push(ssthresh_bytes);
                self.sub_srtt_ns.push(srtt_ns);
                self.sub_in_flight.push(in_flight_bytes);
            }
            ProbeEvent::TcpEvent { flow, end, event, cwnd_bytes, ssthresh_bytes, rto_ns, backoff, seq } => {
                self.tev.push(t, flow, end);
                self.tev_event.push(event);
                self.tev_cwnd_bytes.push(cwnd_bytes);
                self.tev_ssthresh_bytes.push(ssthresh_bytes);
                self.tev_rto_ns.push(rto_ns);
                self.tev_backoff.push(backoff);
                self.tev_seq.push(seq);
            }
            ProbeEvent::Bbr {
                flow,
                end,
                mode,
                round,
                bw_bps,
                min_rtt_ns,
                pacing_gain,
                cwnd_gain,
                pacing_rate_bps,
                cwnd_bytes,
            } => {
                self.bbr.push(t, flow, end);
                self.bbr_mode.push(mode);
                self.bbr_round.push(round);
                self.bbr_bw_bps.push(bw_bps);
                self.bbr_min_rtt_ns.push(min_rtt_ns);
                self.bbr_pacing_gain.push(pacing_gain);
                self.bbr_cwnd_gain.push(cwnd_gain);
                self.bbr_pacing_rate_bps.push(pacing_rate_bps);
                self.bbr_cwnd_bytes.push(cwnd_bytes);
            }
        }
    }

    /// Events recorded of `kind`.
    pub fn len(&self, kind: ProbeKind) -> usize {
        self.key(kind).t_ns.len()
    }

    fn key(&self, kind: ProbeKind) -> &Key {
        match kind {
            ProbeKind::Queue => &self.queue,
            ProbeKind::Drops => &self.drops,
            ProbeKind::Cwnd => &self.cwnd,
            ProbeKind::Rto => &self.rto,
            ProbeKind::Retransmit => &self.rxt,
            ProbeKind::TcpState => &self.state,
            ProbeKind::App => &self.app,
            ProbeKind::Tfrc => &self.tfrc,
            ProbeKind::Subflow => &self.sub,
            ProbeKind::TcpEvents => &self.tev,
            ProbeKind::Bbr => &self.bbr,
        }
    }
}

/// Concatenates column `f` of every source, mapped by `g`.
fn cat<T, U>(srcs: &[&Probes], f: impl Fn(&Probes) -> &[T], g: impl Fn(&T) -> U) -> Vec<U> {
    srcs.iter().flat_map(|p| f(p).iter().map(&g)).collect()
}

/// The result tables of the kinds `kinds`, from the collectors `srcs` (concatenated in order),
/// naming flows by `flow_name(id)` and ports by `port_names[id]`.
pub fn tables(
    kinds: &[ProbeKind],
    srcs: &[&Probes],
    flow_name: &dyn Fn(u32) -> String,
    port_names: &[String],
) -> Vec<Table> {
    let name = |names: &[String], i: u32| names.get(i as usize).cloned().unwrap_or_default();
    kinds
        .iter()
        .map(|&kind| {
            let mut t = Table::new(&kind.table());
            t.push("t_ns", Column::U64(cat(srcs, |p| &p.key(kind).t_ns, |x| *x)));
            t.push("flow", Column::Str(cat(srcs, |p| &p.key(kind).flow, |x| flow_name(*x))));
            t.push("end", Column::U64(cat(srcs, |p| &p.key(kind).end, |x| *x as u64)));
            match kind {
                ProbeKind::Queue => {
                    t.push("link", Column::Str(cat(srcs, |p| &p.queue_port, |x| name(port_names, *x))));
                    let ev = |x: &u8| if *x == 0 { "enqueue" } else { "dequeue" }.to_string();
                    t.push("event", Column::Str(cat(srcs, |p| &p.queue_event, ev)));
                    t.push("bytes", Column::U64(cat(srcs, |p| &p.queue_bytes, |x| *x as u64)));
                }
                ProbeKind::Drops => {
                    t.push("link", Column::Str(cat(srcs, |p| &p.drops_port, |x| name(port_names, *x))));
                    t.push("bytes", Column::U64(cat(srcs, |p| &p.drops_bytes, |x| *x as u64)));
                    t.push("cause", Column::Str(cat(srcs, |p| &p.drops_cause, |c| c.name().to_string())));
                }
                ProbeKind::Cwnd => {
                    t.push("cwnd_bytes", Column::U64(cat(srcs, |p| &p.cwnd_bytes, |x| *x)));
                    t.push("ssthresh_bytes", Column::U64(cat(srcs, |p| &p.ssthresh_bytes, |x| *x)));
                }
                ProbeKind::Rto => {
                    t.push("rto_ns", Column::U64(cat(srcs, |p| &p.rto_ns, |x| *x)));
                    t.push("backoff", Column::U64(cat(srcs, |p| &p.rto_backoff, |x| *x as u64)));
                }
                ProbeKind::Retransmit => {
                    t.push("seq", Column::U64(cat(srcs, |p| &p.rxt_seq, |x| *x)));
                    t.push("bytes", Column::U64(cat(srcs, |p| &p.rxt_bytes, |x| *x)));
                }
                ProbeKind::TcpState => {
                    t.push("state", Column::Str(cat(srcs, |p| &p.state_name, |s| s.to_string())));
                }
                ProbeKind::App => {
                    t.push("name", Column::Str(cat(srcs, |p| &p.app_name, |s| s.to_string())));
                    t.push("value", Column::F64(cat(srcs, |p| &p.app_value, |x| *x)));
                }
                ProbeKind::Tfrc => {
                    t.push("x_bps", Column::F64(cat(srcs, |p| &p.tfrc_x_bps, |x| *x)));
                    t.push("x_recv_bps", Column::F64(cat(srcs, |p| &p.tfrc_x_recv_bps, |x| *x)));
                    t.push("p", Column::F64(cat(srcs, |p| &p.tfrc_p, |x| *x)));
                    t.push("rtt_ns", Column::U64(cat(srcs, |p| &p.tfrc_rtt_ns, |x| *x)));
                }
                ProbeKind::Subflow => {
                    t.push("path", Column::U64(cat(srcs, |p| &p.sub_path, |x| *x as u64)));
                    t.push("cwnd_bytes", Column::U64(cat(srcs, |p| &p.sub_cwnd, |x| *x)));
                    t.push("ssthresh_bytes", Column::U64(cat(srcs, |p| &p.sub_ssthresh, |x| *x)));
                    t.push("srtt_ns", Column::U64(cat(srcs, |p| &p.sub_srtt_ns, |x| *x)));
                    t.push("in_flight_bytes", Column::U64(cat(srcs, |p| &p.sub_in_flight, |x| *x)));
                }
                ProbeKind::TcpEvents => {
                    t.push("event", Column::Str(cat(srcs, |p| &p.tev_event, |e| e.name().to_string())));
                    t.push("cwnd_bytes", Column::U64(cat(srcs, |p| &p.tev_cwnd_bytes, |x| *x)));
                    t.push("ssthresh_bytes", Column::U64(cat(srcs, |p| &p.tev_ssthresh_bytes, |x| *x)));
                    t.push("rto_ns", Column::U64(cat(srcs, |p| &p.tev_rto_ns, |x| *x)));
                    t.push("backoff", Column::U64(cat(srcs, |p| &p.tev_backoff, |x| *x as u64)));
                    t.push("seq", Column::U64(cat(srcs, |p| &p.tev_seq, |x| *x)));
                }
                ProbeKind::Bbr => {
                    t.push("mode", Column::Str(cat(srcs, |p| &p.bbr_mode, |s| s.to_string())));
                    t.push("round", Column::U64(cat(srcs, |p| &p.bbr_round, |x| *x)));
                    t.push("bw_bps", Column::F64(cat(srcs, |p| &p.bbr_bw_bps, |x| *x)));
                    t.push("min_rtt_ns", Column::U64(cat(srcs, |p| &p.bbr_min_rtt_ns, |x| *x)));
                    t.push("pacing_gain", Column::F64(cat(srcs, |p| &p.bbr_pacing_gain, |x| *x)));
                    t.push("cwnd_gain", Column::F64(cat(srcs, |p| &p.bbr_cwnd_gain, |x| *x)));
                    t.push("pacing_rate_bps", Column::F64(cat(srcs, |p| &p.bbr_pacing_rate_bps, |x| *x)));
                    t.push("cwnd_bytes", Column::U64(cat(srcs, |p| &p.bbr_cwnd_bytes, |x| *x)));
                }
            }
            t
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_index_the_table() {
        for k in ProbeKind::all() {
            assert_eq!(k.name().parse::<ProbeKind>(), Ok(k));
            assert_eq!(KINDS[k as usize].0, k, "KINDS is in declaration order");
        }
        let e = "cwnds".parse::<ProbeKind>().unwrap_err();
        assert!(e.contains("cwnd, rto"), "{e}");
    }

    #[test]
    fn only_enabled_kinds_are_recorded() {
        let mut p = Probes::new(&[ProbeKind::Rto]);
        p.record(SimTime(5), ProbeEvent::Cwnd { flow: 0, end: 0, cwnd_bytes: 1, ssthresh_bytes: 2 });
        p.record(SimTime(6), ProbeEvent::Rto { flow: 1, end: 0, rto_ns: 7, backoff: 1 });
        assert_eq!((p.len(ProbeKind::Cwnd), p.len(ProbeKind::Rto)), (0, 1));
        let t = tables(&[ProbeKind::Rto], &[&p], &|i| ["a", "b"][i as usize].to_string(), &[]);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].name, "probe_rto");
        assert_eq!(t[0].strs("flow"), vec!["b"]);
        assert_eq!(t[0].f64s("rto_ns"), vec![7.0]);
    }

    #[test]
    fn port_kinds_concatenate_sources() {
        let mut a = Probes::new(&[ProbeKind::Queue, ProbeKind::Drops]);
        let mut b = a.clone();
        a.record(SimTime(1), ProbeEvent::Enqueue { port: 0, flow: 0, end: 0, bytes: 100 });
        b.record(SimTime(0), ProbeEvent::Dequeue { port: 1, flow: 0, end: 1, bytes: 40 });
        b.record(SimTime(2), ProbeEvent::Drop { port: 1, flow: 0, end: 1, bytes: 40, cause: DropCause::Queued });
        let names = ["x".to_string(), "y".to_string()];
        let t = tables(&[ProbeKind::Queue, ProbeKind::Drops], &[&a, &b], &|i| names[i as usize].clone(), &names);
        assert_eq!(t[0].strs("event"), vec!["enqueue", "dequeue"]);
        assert_eq!(t[0].strs("link"), vec!["x", "y"]);
        assert_eq!(t[1].strs("cause"), vec!["queued"]);
    }
}
