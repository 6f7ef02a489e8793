//! Bulk transfer (iperf-like): writes `bytes` (default: unlimited) to a stream transport at
//! start. The transport's congestion control alone sets the rate.

use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use crate::transport::Service;
use std::path::Path;

/// `kind = "bulk"`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkConfig {
    /// Bytes to send; absent means unlimited (until the stop time).
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl BulkConfig {
    pub fn build(&self) -> Bulk {
        Bulk { bytes: self.bytes.unwrap_or(u64::MAX / 4) }
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
}

impl Application for Bulk {
    fn start(&mut self, cx: &mut AppCtx) {
        cx.write(self.bytes);
    }
    fn on_event(&mut self, _ev: AppEvent, _cx: &mut AppCtx) {}
}
