//! Constant bit rate: one datagram of `payload` bytes every `payload·8 / rate` seconds.
//! The rate counts application payload (as ns-3's OnOff application does).

use crate::input::InputCache;
use super::{packet_interval, AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::packet::MediaTag;
use crate::time::Dur;
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};
use crate::transport::Service;
use std::path::Path;

/// `kind = "cbr"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CbrConfig {
    /// Payload rate, e.g. `"5Mbps"`.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    /// Payload per datagram, e.g. `"1250B"`.
    #[serde(with = "serde_units::bytes")]
    pub payload: u64,
}

impl CbrConfig {
    pub fn build(&self) -> Result<Cbr, AppBuildError> {
        let interval = packet_interval(self.payload, self.rate)?;
        Ok(Cbr { payload: self.payload as u32, interval, sent: 0 })
    }
}

impl BuildApp for CbrConfig {
    fn service(&self) -> Service {
        Service::Datagram
    }
    fn fixed_payload(&self) -> Option<u64> {
        Some(self.payload)
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(CbrConfig::build(self)?))
    }
}

pub struct Cbr {
    payload: u32,
    interval: Dur,
    sent: u64,
}

impl Application for Cbr {
    fn start(&mut self, cx: &mut AppCtx) {
        self.on_event(AppEvent::Timer(super::WAKE), cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if let AppEvent::Timer(_) = ev {
            cx.send(self.payload, MediaTag::default(), 0, false);
            self.sent += 1;
            cx.wake_at(cx.now + self.interval);
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![("app_datagrams", self.sent as f64)]
    }
}
