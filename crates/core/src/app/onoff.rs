//! On/off source: CBR at `rate` during ON periods, silent during OFF periods. Period lengths are
//! exponential (mean given) or Pareto (shape `alpha`, mean given), as in ns-3's OnOff
//! application and the classic self-similar-traffic sources.

use crate::input::InputCache;
use super::{packet_interval, AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::engine::SimRng;
use crate::packet::MediaTag;
use crate::time::{Dur, SimTime};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};
use crate::transport::Service;
use std::path::Path;

/// Distribution of ON/OFF period lengths.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeriodDist {
    Exponential,
    Pareto,
    Constant,
}

/// `kind = "on_off"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OnOffConfig {
    /// Payload rate while ON.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    #[serde(with = "serde_units::bytes")]
    pub payload: u64,
    /// Mean ON period.
    #[serde(with = "serde_units::time")]
    pub on: Dur,
    /// Mean OFF period.
    #[serde(with = "serde_units::time")]
    pub off: Dur,
    /// Period distribution (default exponential).
    #[serde(default = "default_dist")]
    pub dist: PeriodDist,
    /// Pareto shape (> 1), used when `dist = "pareto"` (default 1.5).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
}

fn default_dist() -> PeriodDist {
    PeriodDist::Exponential
}
fn default_alpha() -> f64 {
    1.5
}

impl OnOffConfig {
    pub fn build(&self) -> Result<OnOff, AppBuildError> {
        let interval = packet_interval(self.payload, self.rate)?;
        // `!(alpha > 1)` also refuses NaN.
        if self.dist == PeriodDist::Pareto && !(self.alpha > 1.0 && self.alpha.is_finite()) {
            return Err(AppBuildError::new("alpha", "Pareto shape must be a finite number above 1 (finite mean)"));
        }
        if self.on.as_nanos() == 0 {
            return Err(AppBuildError::new("on", "mean ON period must be positive"));
        }
        Ok(OnOff { cfg: self.clone(), interval, on_until: SimTime::ZERO })
    }
}

impl BuildApp for OnOffConfig {
    fn service(&self) -> Service {
        Service::Datagram
    }
    fn fixed_payload(&self) -> Option<u64> {
        Some(self.payload)
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(OnOffConfig::build(self)?))
    }
}

pub struct OnOff {
    cfg: OnOffConfig,
    interval: Dur,
    on_until: SimTime,
}

impl OnOff {
    fn draw(&self, mean: Dur, rng: &mut SimRng) -> Dur {
        let m = mean.as_secs_f64();
        Dur::from_secs_f64(match self.cfg.dist {
            PeriodDist::Constant => m,
            PeriodDist::Exponential => rng.exponential(m),
            PeriodDist::Pareto => {
                let a = self.cfg.alpha;
                rng.pareto(a, m * (a - 1.0) / a)
            }
        })
    }
}

impl Application for OnOff {
    fn start(&mut self, cx: &mut AppCtx) {
        self.on_until = cx.now + self.draw(self.cfg.on, cx.rng);
        self.on_event(AppEvent::Timer(super::WAKE), cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if !matches!(ev, AppEvent::Timer(_)) {
            return;
        }
        if cx.now >= self.on_until {
            // Switch off, then on again after the OFF period.
            let off = self.draw(self.cfg.off, cx.rng);
            let next_on = cx.now + off;
            self.on_until = next_on + self.draw(self.cfg.on, cx.rng);
            cx.wake_at(next_on);
            return;
        }
        cx.send(self.cfg.payload as u32, MediaTag::default(), 0, false);
        cx.wake_at(cx.now + self.interval);
    }
}
