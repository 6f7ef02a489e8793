//! Bulk transfer (iperf-like): writes `bytes` (default: unlimited) to a stream transport at
//! start. The transport's congestion control alone sets the rate.
//!
//! `cookie` and `delay` give iperf3's start (`iperf_create_streams` in `iperf_client_api.c`):
//! each stream writes a 37-byte cookie as soon as it is connected, and the test data follows
//! only once every stream is up and the server has said so (`TEST_RUNNING`). The cookie's ACK
//! is each connection's first RTT sample on a still idle path, which Linux CUBIC's HyStart keeps
//! as its `delay_min` (`docs/models/tcp.md`, *HyStart*).

use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use crate::transport::Service;
use crate::time::Dur;
use std::path::Path;

/// `kind = "bulk"`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkConfig {
    /// Bytes to send; absent means unlimited (until the stop time).
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// A first write of this many bytes at start, before the transfer (iperf3's cookie: 37 B);
    /// absent means none.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub cookie: Option<u64>,
    /// How long after the start the transfer's bytes are written (default: at once).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dur>,
}

impl BulkConfig {
    pub fn build(&self) -> Bulk {
        Bulk { bytes: self.bytes.unwrap_or(u64::MAX / 4), cookie: self.cookie.unwrap_or(0), delay: self.delay.unwrap_or(Dur::ZERO) }
    }
}

impl BuildApp for BulkConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(BulkConfig::build(self)))
    }
}

pub struct Bulk {
    bytes: u64,
    cookie: u64,
    delay: Dur,
}

impl Application for Bulk {
    fn start(&mut self, cx: &mut AppCtx) {
        if self.cookie > 0 {
            cx.write(self.cookie);
        }
        if self.delay == Dur::ZERO {
            cx.write(self.bytes);
        } else {
            cx.wake_at(cx.now + self.delay);
        }
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if matches!(ev, AppEvent::Timer(super::WAKE)) {
            cx.write(self.bytes);
        }
    }
}
