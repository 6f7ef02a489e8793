//! The sender side of the Traffic Flow Description option: what a video source announces.
//!
//! A [`TfdSender`] is owned by a trace-driven video source ([`super::video`]). For each datagram
//! it decides whether the datagram carries the option and with what content: `Next Data` bytes
//! to be sent within the next `Next Time` milliseconds.
//!
//! Sources of the knowledge (paper §III.C; flags B and F):
//! - `encoder` (flags clear): the exact bytes the trace schedules in the horizon, as an encoder
//!   or a stored file's index knows them.
//! - `buffer` (B): only what the send buffer already holds is known: the bytes scheduled within
//!   `buffer_depth` ahead, scaled up to the horizon (`× horizon / buffer_depth`) when the buffer
//!   is shallower than the horizon.
//! - `forecast` (F): an EWMA of the byte rate observed over past horizons,
//!   `ê ← α · observed + (1 − α) · ê`, times the horizon. Before the first horizon has passed,
//!   the first frame's bytes are extrapolated to the horizon.
//!
//! Horizons: `constant` (default `300ms`, the paper's) or `scene`: the horizon ends at the next
//! scene cut, bounded to [`min_horizon`, `max_horizon`] (paper refs \[7\]\[8\]). Scene cuts are
//! detected in the trace as I frames whose size differs from the previous I frame's by more
//! than the factor `scene_ratio` (a heuristic of ours: the trace carries no cut markers).
//!
//! Attachment: `per_horizon` (default; the first datagram at or after the end of the previous
//! horizon carries an option describing `[now, now + horizon)`) or `every_packet` (each
//! datagram describes the horizon starting at its own send time).
//!
//! Bytes are counted as IP datagram bytes: payload plus 40 bytes of IPv4 + UDP + RTP headers
//! per datagram (and 12 more per datagram with `every_packet`), the amount routers must
//! carry. With plain UDP (no RTP) this overestimates by 12 bytes per datagram.
//!
//! Not modelled: the time the sender needs to analyse its buffer or detect scenes; the flags
//! M, L, S, E (always clear: the paper's experiments do not use them); the D flag (Next Data
//! is always an integer, saturating at 2³² − 1 bytes). The announced window follows the
//! trace's schedule, not the actual release times under `pacing` or `source_jitter`.

use super::nal::NalRow;
use crate::ip::tfd::{NextData, TfdFlags, TfdOption};
use crate::time::Dur;
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// IPv4 + UDP + RTP header bytes per datagram counted in Next Data.
const HEADER_BYTES: u64 = 40;

/// Where the announced amount comes from.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TfdSource {
    #[default]
    Encoder,
    Buffer,
    Forecast,
}

/// How the horizon (Next Time) is chosen.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HorizonKind {
    #[default]
    Constant,
    Scene,
}

/// Which datagrams carry the option.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Attach {
    #[default]
    PerHorizon,
    EveryPacket,
}

/// `tfd = { ... }` of a video app.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TfdSenderConfig {
    /// `"encoder"` (default), `"buffer"` or `"forecast"`.
    #[serde(default)]
    pub source: TfdSource,
    /// `"constant"` (default) or `"scene"`.
    #[serde(default)]
    pub horizon_kind: HorizonKind,
    /// Constant horizon (Next Time), default `"300ms"`; 1 ms ..= 60 s.
    #[serde(default = "default_horizon", with = "serde_units::time")]
    pub horizon: Dur,
    /// `"per_horizon"` (default) or `"every_packet"`.
    #[serde(default)]
    pub attach: Attach,
    /// `buffer` source: how far ahead the send buffer holds data (default: the horizon).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub buffer_depth: Option<Dur>,
    /// `forecast` source: EWMA weight of the newest horizon, in (0, 1] (default 0.5).
    #[serde(default = "default_alpha")]
    pub ewma_alpha: f64,
    /// `scene` horizon: size ratio between consecutive I frames taken as a cut, > 1 (default 2).
    #[serde(default = "default_scene_ratio")]
    pub scene_ratio: f64,
    /// `scene` horizon bounds (defaults `"100ms"` and `"10s"`).
    #[serde(default = "default_min_horizon", with = "serde_units::time")]
    pub min_horizon: Dur,
    #[serde(default = "default_max_horizon", with = "serde_units::time")]
    pub max_horizon: Dur,
}

fn default_horizon() -> Dur {
    Dur::from_millis(300)
}
fn default_alpha() -> f64 {
    0.5
}
fn default_scene_ratio() -> f64 {
    2.0
}
fn default_min_horizon() -> Dur {
    Dur::from_millis(100)
}
fn default_max_horizon() -> Dur {
    Dur::from_millis(10_000)
}

impl Default for TfdSenderConfig {
    fn default() -> Self {
        TfdSenderConfig {
            source: TfdSource::default(),
            horizon_kind: HorizonKind::default(),
            horizon: default_horizon(),
            attach: Attach::default(),
            buffer_depth: None,
            ewma_alpha: default_alpha(),
            scene_ratio: default_scene_ratio(),
            min_horizon: default_min_horizon(),
            max_horizon: default_max_horizon(),
        }
    }
}

impl TfdSenderConfig {
    /// Checks the values; the error names the field.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let ms = |d: Dur| d.as_nanos() as f64 / 1e6;
        let bad = |f: &str, r: String| Err((format!("tfd.{f}"), r));
        if !(1.0..=60_000.0).contains(&ms(self.horizon)) {
            return bad("horizon", format!("must be within 1ms..=60s, got {} ms", ms(self.horizon)));
        }
        if let Some(d) = self.buffer_depth {
            if d.as_nanos() == 0 {
                return bad("buffer_depth", "must be positive".into());
            }
        }
        if !(self.ewma_alpha > 0.0 && self.ewma_alpha <= 1.0) {
            return bad("ewma_alpha", format!("must be in (0, 1], got {}", self.ewma_alpha));
        }
        if !(self.scene_ratio > 1.0 && self.scene_ratio.is_finite()) {
            return bad("scene_ratio", format!("must be a number above 1, got {}", self.scene_ratio));
        }
        if !(1.0 <= ms(self.min_horizon) && self.min_horizon <= self.max_horizon && ms(self.max_horizon) <= 60_000.0) {
            return bad("min_horizon", "need 1ms <= min_horizon <= max_horizon <= 60s".into());
        }
        Ok(())
    }
}

/// Per-flow sender state. Times `u` are positions in the (looped) trace, in ns: the trace time
/// a datagram sent at sim time `t` belongs to is `t − t0 + offset`.
pub struct TfdSender {
    cfg: TfdSenderConfig,
    rows: Arc<Vec<NalRow>>,
    period_ns: u64,
    repeat: bool,
    /// Mean frame interval, ns.
    frame_ns: u64,
    /// Cumulative wire bytes of rows `< i`; built on first use (needs the payload size).
    prefix: Vec<u64>,
    /// Scene-cut times within one period, ascending.
    cuts: Vec<u64>,
    /// Trace time at which the current horizon ends (per-horizon attachment).
    horizon_end: Option<u64>,
    /// Forecast state: estimated bytes per ns, and the trace time of the last update.
    est: Option<f64>,
    est_at: u64,
    pub options_sent: u64,
}

impl TfdSender {
    pub fn new(cfg: TfdSenderConfig, rows: Arc<Vec<NalRow>>, period_ns: u64, repeat: bool) -> Self {
        let frames = rows.iter().map(|r| r.frame).max().unwrap_or(0) as u64 + 1;
        let frame_ns = (period_ns / frames).max(1);
        let cuts = scene_cuts(&rows, cfg.scene_ratio);
        TfdSender {
            cfg,
            rows,
            period_ns,
            repeat,
            frame_ns,
            prefix: Vec::new(),
            cuts,
            horizon_end: None,
            est: None,
            est_at: 0,
            options_sent: 0,
        }
    }

    /// Bytes of header room the option needs in every datagram that may carry it.
    pub fn room(&self) -> u32 {
        crate::ip::tfd::ENCODED_LEN as u32
    }

    fn build_prefix(&mut self, max_payload: u32) {
        let per_pkt = HEADER_BYTES + if self.cfg.attach == Attach::EveryPacket { self.room() as u64 } else { 0 };
        let mut acc = 0u64;
        self.prefix = Vec::with_capacity(self.rows.len() + 1);
        self.prefix.push(0);
        for r in self.rows.iter() {
            let pkts = (r.size_bytes as u64).div_ceil(max_payload.max(1) as u64);
            acc += r.size_bytes as u64 + pkts * per_pkt;
            self.prefix.push(acc);
        }
    }

    /// Wire bytes of the rows scheduled before trace time `u`.
    fn cum(&self, u: u64) -> u64 {
        let total = *self.prefix.last().expect("prefix built");
        let (c, r) = (u / self.period_ns, u % self.period_ns);
        if c > 0 && !self.repeat {
            return total;
        }
        c * total + self.prefix[self.rows.partition_point(|x| x.ts_ns < r)]
    }

    fn bytes_between(&self, a: u64, b: u64) -> u64 {
        self.cum(b) - self.cum(a)
    }

    /// The first scene cut strictly after trace time `u` (across loops), if any.
    fn next_cut(&self, u: u64) -> Option<u64> {
        if self.cuts.is_empty() {
            return None;
        }
        let (c, r) = (u / self.period_ns, u % self.period_ns);
        match self.cuts.iter().find(|&&x| x > r) {
            Some(&x) => Some(c * self.period_ns + x),
            None if self.repeat => Some((c + 1) * self.period_ns + self.cuts[0]),
            None => None,
        }
    }

    /// The option for a datagram sent at trace time `u`, if it carries one. `max_payload` is
    /// the payload size the source splits NAL units by.
    pub fn option_at(&mut self, u: u64, max_payload: u32) -> Option<TfdOption> {
        if self.prefix.is_empty() {
            self.build_prefix(max_payload);
        }
        if self.cfg.attach == Attach::PerHorizon && self.horizon_end.is_some_and(|end| u < end) {
            return None;
        }
        let h = self.horizon_ns(u);
        self.horizon_end = Some(u + h);
        let (bytes, flags) = match self.cfg.source {
            TfdSource::Encoder => (self.bytes_between(u, u + h), TfdFlags::empty()),
            TfdSource::Buffer => {
                let d = self.cfg.buffer_depth.map_or(h, |d| d.as_nanos()).min(h);
                let known = self.bytes_between(u, u + d);
                ((known as u128 * h as u128 / d as u128) as u64, TfdFlags::BUFFER)
            }
            TfdSource::Forecast => (self.forecast(u, h), TfdFlags::FORECAST),
        };
        let next_time_ms = (h / 1_000_000) as u32;
        let nd = NextData::Bytes(bytes.min(u32::MAX as u64) as u32);
        self.options_sent += 1;
        Some(TfdOption::new(flags, nd, next_time_ms).expect("flags are clear, B or F alone; Next Data is an integer"))
    }

    /// Horizon length at trace time `u`, ns, a whole number of milliseconds.
    fn horizon_ns(&self, u: u64) -> u64 {
        let h = match self.cfg.horizon_kind {
            HorizonKind::Constant => self.cfg.horizon.as_nanos(),
            HorizonKind::Scene => {
                let (lo, hi) = (self.cfg.min_horizon.as_nanos(), self.cfg.max_horizon.as_nanos());
                self.next_cut(u).map_or(hi, |c| (c - u).clamp(lo, hi))
            }
        };
        (h / 1_000_000).max(1) * 1_000_000
    }

    /// EWMA forecast of the bytes in `[u, u + h)` from the past only.
    fn forecast(&mut self, u: u64, h: u64) -> u64 {
        let a = self.cfg.ewma_alpha;
        match self.est {
            None => {
                // No history yet: extrapolate the first frame to the horizon.
                let first = self.bytes_between(u, u + self.frame_ns) as f64 / self.frame_ns as f64;
                self.est = Some(first);
                self.est_at = u;
            }
            Some(e) if u >= self.est_at + self.cfg.horizon.as_nanos().min(h) => {
                // A horizon (or more) has passed: fold in what was actually sent.
                let observed = self.bytes_between(self.est_at, u) as f64 / (u - self.est_at) as f64;
                self.est = Some(a * observed + (1.0 - a) * e);
                self.est_at = u;
            }
            Some(_) => {}
        }
        (self.est.expect("set above") * h as f64).round() as u64
    }
}

/// Trace times (within one period) of I frames whose size differs from the previous I frame's
/// by more than `ratio` (either way).
fn scene_cuts(rows: &[NalRow], ratio: f64) -> Vec<u64> {
    // Sizes of I frames in decode order: (ts of the frame's first row, bytes).
    let mut frames: Vec<(u64, u64)> = Vec::new();
    let mut cur: Option<(i64, u64, u64, bool)> = None; // (frame, ts, bytes, is I)
    for r in rows {
        match cur.as_mut() {
            Some(c) if c.0 == r.frame => {
                c.2 += r.size_bytes as u64;
                c.3 |= r.kind == b'I';
            }
            _ => {
                if let Some((_, ts, b, true)) = cur {
                    frames.push((ts, b));
                }
                cur = Some((r.frame, r.ts_ns, r.size_bytes as u64, r.kind == b'I'));
            }
        }
    }
    if let Some((_, ts, b, true)) = cur {
        frames.push((ts, b));
    }
    frames
        .windows(2)
        .filter(|w| {
            let q = w[1].1 as f64 / w[0].1.max(1) as f64;
            q > ratio || q < 1.0 / ratio
        })
        .map(|w| w[1].0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 frames per second, 1 row each: frame i has `sizes[i]` bytes at i · 100 ms; frames
    /// 0 and 5 are I frames.
    fn rows(sizes: &[u32]) -> Arc<Vec<NalRow>> {
        Arc::new(
            sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| NalRow {
                    nal: i as i64,
                    frame: i as i64,
                    kind: if i % 5 == 0 { b'I' } else { b'P' },
                    size_bytes: s,
                    ts_ns: i as u64 * 100_000_000,
                })
                .collect(),
        )
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn encoder_source_announces_exact_wire_bytes_once_per_horizon() {
        let r = rows(&[1000, 500, 500, 500, 500, 4000, 500, 500, 500, 500]);
        let mut s = TfdSender::new(TfdSenderConfig::default(), r, 1_000 * MS, true);
        // Payload 1000 B per datagram: frame 0 is one datagram (1040 B), frames 1–2 one each.
        let o = s.option_at(0, 1000).unwrap();
        assert_eq!(o.next_time_ms(), 300);
        assert_eq!(o.next_data(), NextData::Bytes(1040 + 540 + 540));
        assert!(o.flags().is_empty());
        assert!(s.option_at(200 * MS, 1000).is_none(), "inside the horizon: no option");
        let o = s.option_at(400 * MS, 1000).unwrap();
        // [400, 700): frames 4, 5 (4000 B = 4 datagrams), 6.
        assert_eq!(o.next_data(), NextData::Bytes(540 + 4000 + 160 + 540));
        // Across the loop: [900, 1200) = frame 9, then frames 0 and 1 of the next cycle.
        let o = s.option_at(900 * MS, 1000).unwrap();
        assert_eq!(o.next_data(), NextData::Bytes(540 + 1040 + 540));
    }

    #[test]
    fn buffer_source_scales_a_shallow_buffer_and_sets_b() {
        let r = rows(&[1000; 10]);
        let cfg = TfdSenderConfig {
            source: TfdSource::Buffer,
            buffer_depth: Some(Dur::from_millis(100)),
            attach: Attach::EveryPacket,
            ..Default::default()
        };
        let mut s = TfdSender::new(cfg, r, 1_000 * MS, true);
        let o = s.option_at(0, 2000).unwrap();
        assert!(o.flags().contains(TfdFlags::BUFFER));
        // One frame known (1000 + 40 + 12 bytes), scaled by 300 / 100.
        assert_eq!(o.next_data(), NextData::Bytes(3 * 1052));
        assert!(s.option_at(MS, 2000).is_some(), "every packet carries one");
    }

    #[test]
    fn forecast_source_follows_a_rate_step_with_ewma_lag() {
        // 10 frames of 1000 B then 10 of 3000 B (at 10 frames/s).
        let mut sizes = vec![1000; 10];
        sizes.extend([3000; 10]);
        let r = rows(&sizes);
        let cfg = TfdSenderConfig { source: TfdSource::Forecast, ewma_alpha: 0.5, ..Default::default() };
        let mut s = TfdSender::new(cfg, r, 2_000 * MS, false);
        let nd = |o: TfdOption| match o.next_data() {
            NextData::Bytes(b) => b as f64,
            _ => unreachable!(),
        };
        let first = s.option_at(0, 5000).unwrap();
        assert!(first.flags().contains(TfdFlags::FORECAST));
        assert_eq!(nd(first), 3.0 * 1040.0, "first frame extrapolated to the horizon");
        let mut last = 0.0;
        for k in 1..7 {
            last = nd(s.option_at(k * 300 * MS, 5000).unwrap());
        }
        // After the step (at 1 s) the estimate moves towards 3 · 3040 but lags it.
        assert!(last > 2.0 * 3040.0 && last < 3.0 * 3040.0, "{last}");
    }

    #[test]
    fn scene_horizon_ends_at_the_next_detected_cut() {
        // I frames at 0 ms (1000 B) and 500 ms (4000 B, 4× larger: a cut).
        let r = rows(&[1000, 500, 500, 500, 500, 4000, 500, 500, 500, 500]);
        let cfg = TfdSenderConfig { horizon_kind: HorizonKind::Scene, ..Default::default() };
        let mut s = TfdSender::new(cfg, r, 1_000 * MS, false);
        assert_eq!(s.cuts, vec![500 * MS]);
        let o = s.option_at(100 * MS, 1000).unwrap();
        assert_eq!(o.next_time_ms(), 400);
        assert_eq!(o.next_data(), NextData::Bytes(4 * 540));
        // No later cut and no loop: the horizon is the maximum.
        let o = s.option_at(600 * MS, 1000).unwrap();
        assert_eq!(o.next_time_ms(), 10_000);
    }
}
