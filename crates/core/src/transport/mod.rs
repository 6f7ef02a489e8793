//! Transports: how a flow's endpoints turn application data into packets and back.
//!
//! Endpoints are sans-IO: they receive `now` and a [`FlowCtx`], through which they send
//! packets, arm timers and notify their application. They never read a clock or a global RNG.

pub mod mptcp;
pub mod tcp;
pub mod tfrc;
pub mod udp;

use crate::engine::{TimerCtx, TimerKind};
use crate::ip::tfd::TfdOption;
use crate::packet::{Dir, FlowId, MediaTag, PacketData, L4};
use crate::time::{Dur, SimTime};
use crate::trace::probe::{ProbeEvent, ProbeKind, Probes, TcpEventKind};
use serde::{Deserialize, Serialize};

/// Transport configs, tagged by `kind` in scenario files.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(transform = unit_kinds_take_no_keys)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TransportConfig {
    /// Plain UDP datagrams.
    Udp,
    /// UDP carrying RTP (RFC 3550) headers.
    Rtp,
    /// TCP (RFC 9293) with NewReno, CUBIC or BBR congestion control; see [`tcp::TcpConfig`].
    Tcp(tcp::TcpConfig),
    /// TFRC (RFC 5348): rate-paced datagrams; see [`tfrc::TfrcConfig`].
    Tfrc(tfrc::TfrcConfig),
    /// Multipath TCP (RFC 8684): one TCP subflow per path of the flow; see
    /// [`mptcp::MptcpConfig`].
    Mptcp(mptcp::MptcpConfig),
}

/// `udp` and `rtp` take no key besides `kind` (the deserialiser refuses any): say so in the
/// schema, as `deny_unknown_fields` does for the other kinds.
fn unit_kinds_take_no_keys(schema: &mut schemars::Schema) {
    if let Some(serde_json::Value::Array(kinds)) = schema.get_mut("oneOf") {
        for k in kinds.iter_mut().filter_map(|k| k.as_object_mut()) {
            k.entry("additionalProperties").or_insert(false.into());
        }
    }
}

impl<'de> Deserialize<'de> for TransportConfig {
    /// As a registry does (see [`crate::registry::PATH_MARK`]): errors inside the TCP config
    /// keep their key path (`flows[0].transport.min_rto`, `flows[0].transport.cc.beta`).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        const NAMES: &[&str] = &["udp", "rtp", "tcp", "tfrc", "mptcp"];
        let (kind, rest) = crate::registry::split_kind(d)?;
        match kind.as_str() {
            "udp" | "rtp" => {
                if let Some(k) = rest.as_table().and_then(|t| t.keys().next()) {
                    return Err(D::Error::unknown_field(k, &[]));
                }
                Ok(if kind == "udp" { TransportConfig::Udp } else { TransportConfig::Rtp })
            }
            "tcp" => crate::registry::config_from(rest).map(TransportConfig::Tcp),
            "tfrc" => crate::registry::config_from(rest).map(TransportConfig::Tfrc),
            "mptcp" => crate::registry::config_from(rest).map(TransportConfig::Mptcp),
            other => Err(crate::registry::unknown_kind(other, NAMES)),
        }
    }
}

/// Whether a transport carries application datagrams or a byte stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Service {
    Datagram,
    Stream,
}

/// What an endpoint needs to know when it is built.
#[derive(Clone, Debug)]
pub struct EndpointSetup {
    pub flow_name: String,
    /// MTU of the first hop, in bytes (IP datagram size limit).
    pub mtu_bytes: u32,
    pub src_port: u16,
    pub dst_port: u16,
    /// Scenario seed (for transports that randomise, e.g. initial sequence numbers).
    pub seed: u64,
    /// Number of paths of the connection ([`crate::subflow`]): 1 unless the flow declares
    /// `subflows`.
    pub paths: u8,
}

impl TransportConfig {
    pub fn service(&self) -> Service {
        match self {
            TransportConfig::Udp | TransportConfig::Rtp | TransportConfig::Tfrc(_) => Service::Datagram,
            TransportConfig::Tcp(_) | TransportConfig::Mptcp(_) => Service::Stream,
        }
    }

    /// Whether the sender holds a bounded send buffer and tells its application when it has
    /// room ([`TransportEvent::SendSpace`]): what a greedy datagram source needs.
    pub fn has_send_buffer(&self) -> bool {
        matches!(self, TransportConfig::Tfrc(_))
    }

    /// Checks the config against the first hop's MTU. Errors read `field: reason`.
    pub fn validate(&self, mtu_bytes: u32) -> Result<(), String> {
        match self {
            TransportConfig::Tcp(c) => c.validate(mtu_bytes),
            TransportConfig::Tfrc(c) => c.validate(mtu_bytes),
            TransportConfig::Mptcp(c) => c.validate(mtu_bytes),
            _ => Ok(()),
        }
    }

    /// Builds the two endpoints of one flow: the one at its source (which opens the
    /// connection) and the one at its destination.
    pub fn build(&self, s: &EndpointSetup) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
        match self {
            TransportConfig::Udp => (Box::new(udp::UdpSender::new(s, false)), Box::new(udp::UdpReceiver)),
            TransportConfig::Rtp => (Box::new(udp::UdpSender::new(s, true)), Box::new(udp::UdpReceiver)),
            TransportConfig::Tcp(c) => c.build(s),
            TransportConfig::Tfrc(c) => c.build(s),
            TransportConfig::Mptcp(c) => c.build(s),
        }
    }
}

/// One end of a transport connection (a socket), bound to a node: it sends what its
/// application gives it, and handles the packets of its connection that reach its node.
/// The world stamps the direction of everything it sends (`Dir::Fwd` from the flow's source end,
/// `Dir::Rev` from its destination end).
pub trait Endpoint: Send {
    fn service(&self) -> Service;
    /// Largest application payload of one datagram that fits the MTU (datagram transports).
    fn max_datagram_payload(&self) -> u32 {
        0
    }
    /// Sends one application datagram (datagram transports only).
    fn send_datagram(&mut self, _d: Datagram, _cx: &mut FlowCtx) {
        unreachable!("send_datagram on a stream transport")
    }
    /// Appends `bytes` to the send stream (stream transports only).
    fn write(&mut self, _bytes: u64, _cx: &mut FlowCtx) {
        unreachable!("write on a datagram transport")
    }
    /// A packet of this connection reached the endpoint's node.
    fn on_packet(&mut self, _pkt: &PacketData, _cx: &mut FlowCtx) {}
    /// Number of timer kinds the endpoint uses (kinds `0..n`, its own numbering).
    fn timer_kinds(&self) -> u8 {
        0
    }
    /// One of the endpoint's timers fired.
    fn on_timer(&mut self, _kind: TimerKind, _cx: &mut FlowCtx) {}
    /// Application bytes delivered in order to this end so far (stream transports); datagram
    /// transports leave delivery accounting to the world.
    fn delivered_bytes(&self) -> Option<u64> {
        None
    }
    /// Bytes held above the in-order point in a receive buffer that reorders across paths
    /// (MPTCP's connection level), for invariant checks; 0 for transports without one.
    fn reorder_held_bytes(&self) -> u64 {
        0
    }
    /// Transport-specific end-of-run counters (name, value), e.g. retransmissions.
    fn summary(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// End-of-run counters of path `k` (name, value) for the `subflows` table, from a
    /// transport that keeps state per path (MPTCP's subflows); empty otherwise.
    fn path_summary(&self, _k: usize) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// The sending state of a window-based transport now, for an application's synchronous
    /// probe ([`AppCtx::socket`](crate::app::AppCtx::socket)); `None` (the default) for
    /// transports without one.
    fn info(&self) -> Option<SocketInfo> {
        None
    }
}

/// A window-based transport's sending state at one instant (TCP Interactive's "probe into
/// selected TCP states"): what [`AppCtx::socket`](crate::app::AppCtx::socket) returns. Reading it
/// changes nothing in the transport.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SocketInfo {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh_bytes: u64,
    /// Smoothed RTT (RFC 6298 SRTT); `None` before the first sample.
    pub srtt: Option<Dur>,
    /// Retransmission timeout, backoff included.
    pub rto: Dur,
    /// Consecutive retransmission timeouts without an acknowledgment of new data (0: none).
    pub backoff: u32,
    /// Bytes the sender believes are in the network (RFC 6675 `pipe`, or FlightSize).
    pub in_flight_bytes: u64,
    /// Bytes sent and not yet cumulatively acknowledged (`snd_max − snd_una`).
    pub unacked_bytes: u64,
    /// Send-buffer backlog: bytes written by the application and never sent.
    pub unsent_bytes: u64,
    /// Application bytes acknowledged so far.
    pub acked_bytes: u64,
    /// Whether the connection is established.
    pub established: bool,
}

/// Notices a transport gives its application (the TCP Interactive paper's "TCP tells the
/// application about timeouts"). An application receives only the kinds it subscribes to via
/// [`Application::subscriptions`](crate::app::Application::subscriptions), at the simulated
/// instant the transport acts, once the transport's own handling of the event is complete (so
/// the window a notice carries is the one TCP set, and the handler cannot change how TCP
/// handled it). See `docs/models/tcp-interactive.md`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TransportEvent {
    /// The retransmission timer expired (RFC 6298 §5.4–5.7). `rto_ns` is the timeout after
    /// backoff (the next expiry is `rto_ns` from now), `backoff` counts consecutive RTOs (1 on
    /// the first), `cwnd_bytes` and `ssthresh_bytes` are the window TCP set in response
    /// (RFC 5681 §3.1: cwnd = 1 SMSS; ssthresh halved on the first timeout of a series).
    RtoFired { rto_ns: u64, backoff: u32, cwnd_bytes: u64, ssthresh_bytes: u64 },
    /// Fast retransmit entered (RFC 5681 §3.2 / RFC 6582): `seq` is the segment retransmitted
    /// (`snd_una`), `cwnd_bytes` and `ssthresh_bytes` the window after the reduction.
    FastRetransmit { seq: u64, cwnd_bytes: u64, ssthresh_bytes: u64 },
    /// Congestion window changed.
    CwndChanged { cwnd_bytes: u64, ssthresh_bytes: u64 },
    /// Cumulative bytes acknowledged so far (sender side), after an ACK advanced `snd_una`.
    Acked { total_bytes: u64 },
    /// In-order bytes delivered to the receiving application so far.
    Delivered { total_bytes: u64 },
    /// The send buffer of a datagram transport (TFRC) has room: after the transport had taken
    /// `taken_pkts` datagrams (`taken_bytes` of payload) from its application, it could take
    /// `room_pkts` more datagrams and `room_bytes` more payload (`u64::MAX`: that dimension is
    /// not limited) without dropping any. Emitted whenever a datagram leaves the buffer for the
    /// wire. The counts let the application subtract what it handed over since (datagrams it
    /// sent in the same callback, before the notice reached it): room now is
    /// `room − (handed − taken)`, for packets and bytes alike.
    SendSpace { taken_pkts: u64, taken_bytes: u64, room_pkts: u64, room_bytes: u64 },
}

/// Bit mask over [`TransportEvent`] kinds.
pub mod notice_mask {
    pub const RTO: u32 = 1 << 0;
    pub const FAST_RETRANSMIT: u32 = 1 << 1;
    pub const CWND: u32 = 1 << 2;
    pub const ACKED: u32 = 1 << 3;
    pub const DELIVERED: u32 = 1 << 4;
    pub const SEND_SPACE: u32 = 1 << 5;
}

impl TransportEvent {
    pub fn mask(&self) -> u32 {
        use notice_mask::*;
        match self {
            TransportEvent::RtoFired { .. } => RTO,
            TransportEvent::FastRetransmit { .. } => FAST_RETRANSMIT,
            TransportEvent::CwndChanged { .. } => CWND,
            TransportEvent::Acked { .. } => ACKED,
            TransportEvent::Delivered { .. } => DELIVERED,
            TransportEvent::SendSpace { .. } => SEND_SPACE,
        }
    }
}

/// One application datagram handed to a datagram transport.
#[derive(Clone, Debug, PartialEq)]
pub struct Datagram {
    /// Application payload in bytes (headers are added by the transport).
    pub payload: u32,
    /// Frame/NAL the datagram carries, for per-packet video logs.
    pub media: MediaTag,
    /// RTP timestamp (90 kHz clock) if the transport is RTP.
    pub rtp_ts: u32,
    /// RTP marker bit.
    pub marker: bool,
    /// A Traffic Flow Description option for the IP header (12 more bytes on the wire), as a
    /// socket-level IP option would be.
    pub tfd: Option<TfdOption>,
}

impl Datagram {
    pub fn new(payload: u32, media: MediaTag, rtp_ts: u32, marker: bool) -> Self {
        Datagram { payload, media, rtp_ts, marker, tfd: None }
    }
}

/// A packet a transport asks the world to send: direction, IP datagram size, L4 header.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub dir: Dir,
    pub size_bytes: u32,
    pub l4: L4,
    /// Sub-path (MPTCP subflow); 0 for single-path flows.
    pub path: u8,
    /// IP-layer TFD option to carry (its 12 bytes are added when the packet is stamped).
    pub tfd: Option<TfdOption>,
    /// ECN codepoint of the IP header (RFC 3168 §5); `NotEct` unless the transport
    /// negotiated ECN.
    pub ecn: crate::packet::Ecn,
}

/// The context a transport endpoint acts through.
pub struct FlowCtx<'a> {
    pub now: SimTime,
    pub flow: FlowId,
    /// The direction this endpoint sends in (stamped on everything it sends).
    pub dir: Dir,
    pub(crate) out: &'a mut Vec<Outgoing>,
    pub(crate) timers: TimerCtx<'a>,
    pub(crate) notices: &'a mut Vec<TransportEvent>,
    /// Notice kinds the application subscribed to ([`notice_mask`]); others are not queued.
    subscriptions: u32,
    /// The world's probe collector, when the scenario enabled any probe.
    probes: Option<&'a mut Probes>,
    /// Added to every timer kind the endpoint names, so that a transport made of several
    /// (MPTCP's subflows) gives each its own block of kinds.
    pub(crate) timer_base: u8,
}

impl<'a> FlowCtx<'a> {
    pub fn new(
        now: SimTime,
        flow: FlowId,
        out: &'a mut Vec<Outgoing>,
        timers: TimerCtx<'a>,
        notices: &'a mut Vec<TransportEvent>,
    ) -> Self {
        FlowCtx { now, flow, dir: Dir::Fwd, out, timers, notices, subscriptions: u32::MAX, probes: None, timer_base: 0 }
    }

    /// Records the probe events the endpoint emits into `probes` (kinds it enabled only).
    pub fn with_probes(mut self, probes: &'a mut Probes) -> Self {
        self.probes = probes.any().then_some(probes);
        self
    }

    /// The end of the flow this endpoint is (0 at the source, 1 at the destination).
    pub fn end(&self) -> u8 {
        self.dir as u8
    }

    /// Whether probe `kind` is recording: one test, so that an endpoint can skip building an
    /// event (or tracking what it would report) when nobody asked.
    #[inline]
    pub fn probing(&self, kind: ProbeKind) -> bool {
        self.probes.as_ref().is_some_and(|p| p.on(kind))
    }

    /// Records a probe event now, if its kind is enabled.
    #[inline]
    pub fn probe(&mut self, ev: ProbeEvent) {
        if let Some(p) = self.probes.as_deref_mut() {
            p.record(self.now, ev);
        }
    }

    /// Sets the direction this endpoint sends in (`Dir::Fwd`, the default, from the flow's
    /// source end; `Dir::Rev` from its destination end).
    pub fn sending(mut self, dir: Dir) -> Self {
        self.dir = dir;
        self
    }

    /// Restricts notices to the kinds in `mask` (the application's subscriptions), so that
    /// per-ACK notices nobody listens to cost nothing.
    pub fn with_subscriptions(mut self, mask: u32) -> Self {
        self.subscriptions = mask;
        self
    }

    /// Whether the application listens to notices of kind `mask`; lets a transport skip
    /// building a notice at all.
    pub fn wants(&self, mask: u32) -> bool {
        self.subscriptions & mask != 0
    }

    /// Sends a packet now. The world stamps addresses, sequence-in-flow and send time; the
    /// direction is this endpoint's.
    pub fn send(&mut self, mut o: Outgoing) {
        o.dir = self.dir;
        self.out.push(o);
    }

    /// Arms (or re-arms) the endpoint's timer `kind` to fire at `at`.
    pub fn set_timer(&mut self, kind: TimerKind, at: SimTime) {
        debug_assert!(at >= self.now, "{}: flow {} timer {kind:?} set in the past", self.now, self.flow);
        self.timers.set(TimerKind(kind.0 + self.timer_base), at);
    }

    pub fn cancel_timer(&mut self, kind: TimerKind) {
        self.timers.cancel(TimerKind(kind.0 + self.timer_base));
    }

    pub fn timer_deadline(&self, kind: TimerKind) -> SimTime {
        self.timers.deadline(TimerKind(kind.0 + self.timer_base))
    }

    /// Tells the application something (filtered by its subscriptions), and records it in the
    /// `tcp_events` probe if that is on (the TCP Interactive kinds: RTO, fast retransmit,
    /// window change).
    pub fn notify(&mut self, ev: TransportEvent) {
        if self.probing(ProbeKind::TcpEvents) {
            let (flow, end) = (self.flow, self.end());
            let row = match ev {
                TransportEvent::RtoFired { rto_ns, backoff, cwnd_bytes, ssthresh_bytes } => {
                    Some((TcpEventKind::Rto, cwnd_bytes, ssthresh_bytes, rto_ns, backoff, 0))
                }
                TransportEvent::FastRetransmit { seq, cwnd_bytes, ssthresh_bytes } => {
                    Some((TcpEventKind::FastRetransmit, cwnd_bytes, ssthresh_bytes, 0, 0, seq))
                }
                TransportEvent::CwndChanged { cwnd_bytes, ssthresh_bytes } => {
                    Some((TcpEventKind::Window, cwnd_bytes, ssthresh_bytes, 0, 0, 0))
                }
                TransportEvent::Acked { .. } | TransportEvent::Delivered { .. } | TransportEvent::SendSpace { .. } => {
                    None
                }
            };
            if let Some((event, cwnd_bytes, ssthresh_bytes, rto_ns, backoff, seq)) = row {
                self.probe(ProbeEvent::TcpEvent { flow, end, event, cwnd_bytes, ssthresh_bytes, rto_ns, backoff, seq });
            }
        }
        if self.subscriptions & ev.mask() != 0 {
            self.notices.push(ev);
        }
    }
}
