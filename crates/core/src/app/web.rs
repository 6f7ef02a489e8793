//! Web-like repeated downloads over a stream transport: write a file whose size is drawn from a
//! distribution, wait until the transport reports it fully acknowledged, think for an
//! exponential time, repeat. With `think = "0s"` this is a back-to-back file-download loop, as
//! in the SQF paper's concurrent TCP downloads.

use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::time::{Dur, SimTime};
use crate::transport::{Service, notice_mask, TransportEvent};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File-size distribution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    Constant,
    Exponential,
    /// Pareto with shape `alpha` (> 1) and the given mean.
    Pareto,
}

impl SizeDist {
    /// A size in bytes (at least 1) with mean `mean_bytes`; `alpha` is the Pareto shape (> 1).
    pub fn draw(&self, mean_bytes: u64, alpha: f64, rng: &mut crate::engine::SimRng) -> u64 {
        let m = mean_bytes as f64;
        match self {
            SizeDist::Constant => m,
            SizeDist::Exponential => rng.exponential(m),
            SizeDist::Pareto => rng.pareto(alpha, m * (alpha - 1.0) / alpha),
        }
        .round()
        .max(1.0) as u64
    }
}

/// `kind = "web"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Mean file size.
    #[serde(with = "serde_units::bytes")]
    pub size: u64,
    /// File-size distribution (default constant).
    #[serde(default = "default_dist")]
    pub dist: SizeDist,
    /// Pareto shape (default 1.2).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Mean think time between downloads (exponential; default 0 s).
    #[serde(default, with = "serde_units::time")]
    pub think: Dur,
}

fn default_dist() -> SizeDist {
    SizeDist::Constant
}
fn default_alpha() -> f64 {
    1.2
}

impl WebConfig {
    pub fn build(&self) -> Result<Web, AppBuildError> {
        if self.size == 0 {
            return Err(AppBuildError::new("size", "must be at least 1 byte"));
        }
        if self.dist == SizeDist::Pareto && self.alpha <= 1.0 {
            return Err(AppBuildError::new("alpha", "Pareto shape must exceed 1 for a finite mean"));
        }
        Ok(Web { cfg: self.clone(), target: 0, started: SimTime::ZERO, done: 0, total_dl_ns: 0 })
    }
}

impl BuildApp for WebConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, _base_dir: &Path, _cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(WebConfig::build(self)?))
    }
}

pub struct Web {
    cfg: WebConfig,
    /// Cumulative acknowledged byte count at which the current file is complete.
    target: u64,
    started: SimTime,
    done: u64,
    total_dl_ns: u64,
}

impl Web {
    fn next_file(&mut self, cx: &mut AppCtx) {
        let size = self.cfg.dist.draw(self.cfg.size, self.cfg.alpha, cx.rng);
        self.target += size;
        self.started = cx.now;
        cx.write(size);
    }
}

impl Application for Web {
    fn start(&mut self, cx: &mut AppCtx) {
        self.next_file(cx);
    }
    fn subscriptions(&self) -> u32 {
        notice_mask::ACKED
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        match ev {
            AppEvent::Transport(TransportEvent::Acked { total_bytes })
                if total_bytes >= self.target && self.target > 0 && self.started != SimTime::NEVER =>
            {
                self.done += 1;
                self.total_dl_ns += cx.now.0 - self.started.0;
                self.started = SimTime::NEVER;
                let think = Dur::from_secs_f64(cx.rng.exponential(self.cfg.think.as_secs_f64()));
                if think == Dur::ZERO {
                    self.next_file(cx);
                } else {
                    cx.wake_at(cx.now + think);
                }
            }
            AppEvent::Timer(_) if cx.now < cx.stop => self.next_file(cx),
            _ => {}
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        let mean = if self.done > 0 { self.total_dl_ns as f64 * 1e-9 / self.done as f64 } else { f64::NAN };
        vec![("downloads_completed", self.done as f64), ("mean_download_s", mean)]
    }
}
