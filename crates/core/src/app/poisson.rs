//! Poisson source: datagrams of fixed `payload` bytes with exponential inter-arrival times of
//! mean `payload·8 / rate` (the M in M/D/1 when the packet size is fixed).

use crate::input::InputCache;
use super::{packet_interval, AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::packet::MediaTag;
use crate::time::Dur;
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};
use crate::transport::Service;
use std::path::Path;

/// `kind = "poisson"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoissonConfig {
    /// Mean payload rate.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    /// Payload per datagram.
    #[serde(with = "serde_units::bytes")]
    pub payload: u64,
}

impl PoissonConfig {
    pub fn build(&self) -> Result<Poisson, AppBuildError> {
        let mean = packet_interval(self.payload, self.rate)?;
        Ok(Poisson { payload: self.payload as u32, mean_s: mean.as_secs_f64() })
    }
}

impl BuildApp for PoissonConfig {
    fn service(&self) -> Service {
        Service::Datagram
    }
    fn fixed_payload(&self) -> Option<u64> {
        Some(self.payload)
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(PoissonConfig::build(self)?))
    }
}

pub struct Poisson {
    payload: u32,
    mean_s: f64,
}

impl Application for Poisson {
    fn start(&mut self, cx: &mut AppCtx) {
        let gap = Dur::from_secs_f64(cx.rng.exponential(self.mean_s));
        cx.wake_at(cx.now + gap);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if let AppEvent::Timer(_) = ev {
            cx.send(self.payload, MediaTag::default(), 0, false);
            let gap = Dur::from_secs_f64(cx.rng.exponential(self.mean_s));
            cx.wake_at(cx.now + gap);
        }
    }
}
