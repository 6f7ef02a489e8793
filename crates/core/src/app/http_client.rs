//! The client of HTTP/1.1-like object fetches over one persistent TCP connection: a client at the flow's
//! source sends a GET for an object, the server at its destination (`peer_app`, [`super::http_server`]) answers with
//! the object, and the client sends the next GET when the last byte has arrived (no
//! pipelining, RFC 9112 §9.3 persistence).
//!
//! The request and response are messages on the byte stream (`AppCtx::send_message`): the
//! request's tag is the object size the client asks for (what a URL names), the response's the
//! object number. Sizes are drawn by the client: constant, exponential or Pareto with the
//! given mean (as the `web` source draws them). This is the request/response shape a DASH
//! player's segment fetches have; it is not an HTTP parser: header bytes are counted, not
//! written.
//!
//! Reported: `http_objects` (completed), `http_mean_fetch_s` (request sent → last response
//! byte delivered), and with the `app` probe one `fetch_s` row per object and one
//! `response_bytes` row per object.

use super::web::SizeDist;
use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::time::{Dur, SimTime};
use crate::transport::Service;
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `kind = "http_client"`: fetches objects one after another.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpClientConfig {
    /// Mean object size, bytes (at least 1).
    #[serde(with = "serde_units::bytes")]
    pub size: u64,
    /// Object-size distribution (default `"constant"`).
    #[serde(default = "default_dist")]
    pub dist: SizeDist,
    /// Pareto shape (default 1.2; must exceed 1).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Objects to fetch (default: until the flow stops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<u64>,
    /// Request size on the wire: request line and headers, bytes (default `"300B"`).
    #[serde(default = "default_request", with = "serde_units::bytes")]
    pub request: u64,
    /// Mean think time between an object's arrival and the next request (exponential;
    /// default `"0s"`: back to back).
    #[serde(default, with = "serde_units::time")]
    pub think: Dur,
}

fn default_dist() -> SizeDist {
    SizeDist::Constant
}
fn default_alpha() -> f64 {
    1.2
}
fn default_request() -> u64 {
    300
}

impl HttpClientConfig {
    pub fn build(&self) -> Result<HttpClient, AppBuildError> {
        if self.size == 0 {
            return Err(AppBuildError::new("size", "must be at least 1 byte"));
        }
        if self.request == 0 {
            return Err(AppBuildError::new("request", "must be at least 1 byte"));
        }
        if self.dist == SizeDist::Pareto && !(self.alpha > 1.0 && self.alpha.is_finite()) {
            return Err(AppBuildError::new("alpha", "Pareto shape must exceed 1 for a finite mean"));
        }
        if self.objects == Some(0) {
            return Err(AppBuildError::new("objects", "must be at least 1 (omit it to fetch until the flow stops)"));
        }
        Ok(HttpClient { cfg: self.clone(), asked_at: SimTime::NEVER, next: 0, done: 0, fetch_ns: 0, bytes: 0 })
    }
}

impl BuildApp for HttpClientConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(HttpClientConfig::build(self)?))
    }
}

/// The client: one outstanding request at a time.
pub struct HttpClient {
    cfg: HttpClientConfig,
    /// When the outstanding request was sent (`NEVER`: none outstanding).
    asked_at: SimTime,
    /// Number of the next object to request.
    next: u64,
    done: u64,
    fetch_ns: u64,
    bytes: u64,
}

impl HttpClient {
    fn request(&mut self, cx: &mut AppCtx) {
        if self.cfg.objects.is_some_and(|n| self.next >= n) || cx.now >= cx.stop {
            return;
        }
        let size = self.cfg.dist.draw(self.cfg.size, self.cfg.alpha, cx.rng);
        self.next += 1;
        self.asked_at = cx.now;
        // The request names the object's size: the server answers with that many bytes.
        cx.send_message(self.cfg.request, size);
    }
}

impl Application for HttpClient {
    fn start(&mut self, cx: &mut AppCtx) {
        self.request(cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        match ev {
            AppEvent::Message { bytes, .. } if self.asked_at != SimTime::NEVER => {
                let fetch = cx.now.since(self.asked_at);
                self.asked_at = SimTime::NEVER;
                self.done += 1;
                self.fetch_ns += fetch.as_nanos();
                self.bytes += bytes;
                cx.probe("fetch_s", fetch.as_secs_f64());
                cx.probe("response_bytes", bytes as f64);
                let think = Dur::from_secs_f64(cx.rng.exponential(self.cfg.think.as_secs_f64()));
                if think == Dur::ZERO {
                    self.request(cx);
                } else {
                    cx.wake_at(cx.now + think);
                }
            }
            AppEvent::Timer(_) => self.request(cx),
            _ => {}
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        let mean = if self.done > 0 { self.fetch_ns as f64 * 1e-9 / self.done as f64 } else { f64::NAN };
        vec![("http_objects", self.done as f64), ("http_mean_fetch_s", mean), ("http_bytes", self.bytes as f64)]
    }
}
