//! Bulk transfer (iperf-like): writes `bytes` (default: unlimited) to a stream transport at
//! start. The transport's congestion control alone sets the rate.

use super::{AppCtx, AppEvent, Application};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};

/// `kind = "bulk"`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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

pub struct Bulk {
    bytes: u64,
}

impl Application for Bulk {
    fn start(&mut self, cx: &mut AppCtx) {
        cx.write(self.bytes);
    }
    fn on_event(&mut self, _ev: AppEvent, _cx: &mut AppCtx) {}
}
