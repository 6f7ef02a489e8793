//! Applications: traffic sources at a flow's source node.
//!
//! An application acts through an [`AppCtx`]: it sends datagrams (datagram transports), writes
//! stream bytes (stream transports) and arms its timers. It is told about timer expiry and the
//! transport notices it subscribed to. Every config is checked against its transport when the
//! scenario is built, so a bulk source on UDP is a scenario error, not a runtime surprise.

pub mod nal;
pub mod rsvp;
pub mod tfd;

use crate::engine::{SimRng, TimerKind};
use crate::ip::rsvp::RsvpMsg;
use crate::ip::tfd::TfdOption;
use crate::packet::MediaTag;
use crate::registry::registry;
use crate::time::{Dur, SimTime};
use crate::transport::{Datagram, Endpoint, Service, SocketInfo, TransportEvent};
use std::path::Path;

registry! {
    /// Application configs, tagged by `kind`. An application is its own file here plus one line
    /// below (see `docs/registries.md`).
    pub enum AppConfig: dyn BuildApp {
        cbr::Cbr(CbrConfig) = "cbr",
        poisson::Poisson(PoissonConfig) = "poisson",
        onoff::OnOff(OnOffConfig) = "on_off",
        video::Video(VideoConfig) = "video",
        bulk::Bulk(BulkConfig) = "bulk",
        web::Web(WebConfig) = "web",
        http_client::HttpClient(HttpClientConfig) = "http_client",
        http_server::HttpServer(HttpServerConfig) = "http_server",
        dash::Dash(DashConfig) = "dash",
        transcoder::Transcoder(TranscoderConfig) = "transcoder",
    }
}

/// What woke the application.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AppEvent {
    /// One of the application's timers fired ([`WAKE`] or a kind of its own).
    Timer(TimerKind),
    /// A transport notice it subscribed to.
    Transport(TransportEvent),
    /// A message the peer's application wrote ([`AppCtx::send_message`]) has been delivered
    /// in order, all `bytes` of it, to this end of the stream.
    Message { bytes: u64, tag: u64 },
}

/// Something the application asks of its transport or the engine.
#[derive(Clone, Debug, PartialEq)]
pub enum AppAction {
    /// A datagram for the transport (with, optionally, a TFD option for its IP header).
    Datagram(Datagram),
    /// An RSVP message from this flow's sender-side RSVP signaller (raw IP, not through the
    /// transport); see [`crate::ip::rsvp`].
    Rsvp(RsvpMsg),
    Write {
        bytes: u64,
    },
    /// `bytes` written as one message: the peer's application is told when its last byte is
    /// delivered, with `tag` (what the bytes would say: a request's object size, a frame's
    /// number).
    Message {
        bytes: u64,
        tag: u64,
    },
    SetTimer {
        kind: TimerKind,
        at: SimTime,
    },
    /// A value for the `app` probe (recorded only when the scenario enables it).
    Probe {
        name: &'static str,
        value: f64,
    },
}

/// The application's view of the world.
pub struct AppCtx<'a> {
    pub now: SimTime,
    /// Application stop time: no new data after it.
    pub stop: SimTime,
    /// Largest datagram payload the transport takes (0 on stream transports).
    pub max_payload: u32,
    pub rng: &'a mut SimRng,
    pub(crate) actions: &'a mut Vec<AppAction>,
    /// The transport endpoint at this end, for [`AppCtx::socket`] (read-only).
    sock: Option<&'a dyn Endpoint>,
}

impl<'a> AppCtx<'a> {
    pub fn new(
        now: SimTime,
        stop: SimTime,
        max_payload: u32,
        rng: &'a mut SimRng,
        actions: &'a mut Vec<AppAction>,
    ) -> Self {
        AppCtx { now, stop, max_payload, rng, actions, sock: None }
    }
    /// Lets the application read `sock`'s state through [`AppCtx::socket`].
    pub fn with_socket(mut self, sock: &'a dyn Endpoint) -> Self {
        self.sock = Some(sock);
        self
    }
    /// The sending state of this end's transport now (TCP Interactive's synchronous state
    /// probe: cwnd, ssthresh, SRTT, RTO, backoff, bytes in flight, send-buffer backlog); `None`
    /// for a transport without a window (UDP, TFRC) or a context built without its socket.
    /// Reading it changes nothing.
    pub fn socket(&self) -> Option<SocketInfo> {
        self.sock.and_then(|s| s.info())
    }
    pub fn send(&mut self, payload: u32, media: MediaTag, rtp_ts: u32, marker: bool) {
        self.actions.push(AppAction::Datagram(Datagram::new(payload, media, rtp_ts, marker)));
    }
    /// Sends a datagram carrying the TFD option `tfd` (its 12 bytes come on top of `payload`,
    /// so the caller leaves that room below `max_payload`).
    pub fn send_with_tfd(&mut self, payload: u32, media: MediaTag, rtp_ts: u32, marker: bool, tfd: TfdOption) {
        self.actions
            .push(AppAction::Datagram(Datagram { tfd: Some(tfd), ..Datagram::new(payload, media, rtp_ts, marker) }));
    }
    /// Sends an RSVP message for this flow.
    pub fn rsvp(&mut self, msg: RsvpMsg) {
        self.actions.push(AppAction::Rsvp(msg));
    }
    pub fn write(&mut self, bytes: u64) {
        self.actions.push(AppAction::Write { bytes });
    }
    /// Writes `bytes` (at least 1) into the stream as one message; the peer's application
    /// receives [`AppEvent::Message`] with `tag` once all of it has arrived in order.
    ///
    /// # Panics
    /// If `bytes` is 0 (an empty message would never be delivered).
    pub fn send_message(&mut self, bytes: u64, tag: u64) {
        assert!(bytes > 0, "{}: an empty message (tag {tag}) would never be delivered", self.now);
        self.actions.push(AppAction::Message { bytes, tag });
    }
    /// Reports `value` under `name` to the `app` probe (`[output] probes = ["app"]`): one row
    /// with the time, flow and end. Costs nothing when the probe is off but the action.
    pub fn probe(&mut self, name: &'static str, value: f64) {
        self.actions.push(AppAction::Probe { name, value });
    }
    /// Arms [`WAKE`] at `at` (ignored if at or after the stop time).
    pub fn wake_at(&mut self, at: SimTime) {
        self.wake_kind_at(WAKE, at);
    }
    /// Arms the application's timer `kind` (below its [`Application::timer_kinds`]) at `at`
    /// (ignored if at or after the stop time).
    pub fn wake_kind_at(&mut self, kind: TimerKind, at: SimTime) {
        if at < self.stop {
            self.actions.push(AppAction::SetTimer { kind, at });
        }
    }
}

/// Every application's first timer kind: it starts the application at its start time, and
/// [`AppCtx::wake_at`] arms it afterwards.
pub const WAKE: TimerKind = TimerKind(0);

/// A traffic source.
pub trait Application: Send {
    fn start(&mut self, cx: &mut AppCtx);
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx);
    /// Number of timer kinds the application uses: [`WAKE`] (kind 0) and any of its own
    /// numbered from 1. Default 1.
    fn timer_kinds(&self) -> u8 {
        1
    }
    /// Transport notices wanted, as a [`notice_mask`](crate::transport::notice_mask).
    fn subscriptions(&self) -> u32 {
        0
    }
    /// End-of-run counters (name, value).
    fn summary(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// Builds an application from its config; every [`AppConfig`] kind implements it. A config
/// may keep its own typed `build` as well; this one boxes the result for the registry.
pub trait BuildApp {
    /// The transport service this application needs.
    fn service(&self) -> Service;
    /// The fixed datagram payload of a packet-rate source (CBR, Poisson, on/off), which must fit
    /// the first hop's MTU; `None` (the default) for applications that size their own datagrams.
    fn fixed_payload(&self) -> Option<u64> {
        None
    }
    /// Whether the application needs a transport with a send buffer that tells it when it has
    /// room ([`TransportEvent::SendSpace`]), as a greedy source does. Default false.
    fn needs_send_buffer(&self) -> bool {
        false
    }
    /// Builds the application. Relative file paths resolve against `base_dir`; trace files are
    /// read once per `cache`.
    fn build(&self, base_dir: &Path, cache: &crate::input::InputCache) -> Result<Box<dyn Application>, AppBuildError>;
    /// Whether the application runs over a transport of `service`. Default: only its
    /// [`BuildApp::service`]; an application that runs over both (video) says so.
    fn accepts(&self, service: Service) -> bool {
        self.service() == service
    }
    /// Builds the application for a transport of `service` (one it [`accepts`](Self::accepts)).
    /// Default: [`BuildApp::build`], for applications that run over one service only.
    fn build_on(
        &self,
        base_dir: &Path,
        cache: &crate::input::InputCache,
        _service: Service,
    ) -> Result<Box<dyn Application>, AppBuildError> {
        self.build(base_dir, cache)
    }
}

/// Errors building an application, with the config field they concern.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct AppBuildError {
    pub field: String,
    pub reason: String,
}

impl AppBuildError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        AppBuildError { field: field.into(), reason: reason.into() }
    }
}

impl AppConfig {
    /// The transport service this application needs.
    pub fn service(&self) -> Service {
        self.config().service()
    }

    /// The fixed datagram payload of a packet-rate source (CBR, Poisson, on/off), which must fit
    /// the first hop's MTU; `None` for applications that size their own datagrams.
    pub fn fixed_payload(&self) -> Option<u64> {
        self.config().fixed_payload()
    }

    /// Whether the application needs a transport with a send buffer (see
    /// [`BuildApp::needs_send_buffer`]).
    pub fn needs_send_buffer(&self) -> bool {
        self.config().needs_send_buffer()
    }

    /// Builds the application. Relative file paths resolve against `base_dir`.
    pub fn build(&self, base_dir: &Path) -> Result<Box<dyn Application>, AppBuildError> {
        self.build_with(base_dir, &crate::input::InputCache::default())
    }

    /// As [`AppConfig::build`], reading each trace file once per `cache` (a scenario whose N
    /// video flows share one trace parses it once, not N times).
    pub fn build_with(
        &self,
        base_dir: &Path,
        cache: &crate::input::InputCache,
    ) -> Result<Box<dyn Application>, AppBuildError> {
        self.config().build(base_dir, cache)
    }

    /// Whether the application runs over a transport of `service` (see [`BuildApp::accepts`]).
    pub fn accepts(&self, service: Service) -> bool {
        self.config().accepts(service)
    }

    /// As [`AppConfig::build_with`], for a transport of `service` (see [`BuildApp::build_on`]).
    pub fn build_on(
        &self,
        base_dir: &Path,
        cache: &crate::input::InputCache,
        service: Service,
    ) -> Result<Box<dyn Application>, AppBuildError> {
        self.config().build_on(base_dir, cache, service)
    }
}

/// Interval between datagrams of `payload` bytes at `rate`, for packet-rate sources, with the
/// checks they share: a payload of 1..=65,507 bytes (what one IPv4 UDP datagram can carry; the
/// first hop's MTU is checked when the flow is built) and datagrams at least 1 ns apart, since
/// a zero interval would stop simulated time.
pub(crate) fn packet_interval(payload_bytes: u64, rate: crate::units::Rate) -> Result<Dur, AppBuildError> {
    if payload_bytes == 0 {
        return Err(AppBuildError::new("payload", "must be at least 1 byte"));
    }
    if payload_bytes > 65_507 {
        return Err(AppBuildError::new(
            "payload",
            format!("{payload_bytes} B does not fit one datagram (at most 65507 B)"),
        ));
    }
    let ns = (payload_bytes as u128 * 8 * 1_000_000_000) / rate.bps() as u128;
    if ns == 0 {
        return Err(AppBuildError::new(
            "rate",
            format!("{rate:?} with {payload_bytes} B datagrams sends them less than 1 ns apart"),
        ));
    }
    Ok(Dur(ns as u64))
}
