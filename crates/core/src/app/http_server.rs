//! The server of HTTP/1.1-like object fetches (see [`super::http_client`]): it answers each
//! request message with a response message of the object size the request names, plus its
//! header bytes, in the order the requests arrive.

use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::transport::Service;
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::path::Path;

fn default_header() -> u64 {
    250
}

/// `kind = "http_server"`: answers every request with the object it names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpServerConfig {
    /// Response header bytes sent before each object (default `"250B"`).
    #[serde(default = "default_header", with = "serde_units::bytes")]
    pub header: u64,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig { header: default_header() }
    }
}

impl BuildApp for HttpServerConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(HttpServer { header: self.header, served: 0 }))
    }
}

/// The server: answers each request, in order.
pub struct HttpServer {
    header: u64,
    served: u64,
}

impl Application for HttpServer {
    fn start(&mut self, _cx: &mut AppCtx) {}
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if let AppEvent::Message { tag: size, .. } = ev {
            // The response: headers, then the object; its last byte completes the fetch. The
            // client reads the object size from the response's length.
            cx.send_message(self.header + size, self.served);
            self.served += 1;
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![("http_served", self.served as f64)]
    }
}
