//! A DASH player (`kind = "dash"`) at the client end of a stream connection: it reads a static
//! MPD and the ladder's segment sizes ([`manifest`]), fetches segments one after another with
//! GET-like request messages over the one persistent connection (the server is
//! [`super::http_server`], which answers each request with the size it names plus its header
//! bytes), and plays them from a buffer kept in seconds of media. The transport is whatever
//! the flow uses (TCP, MPTCP): the player only sees messages and delivery notices.
//!
//! Playback starts once `startup` seconds are buffered (default one segment: dash.js starts
//! the video element as soon as the first media segment is appended), stalls when the buffer
//! empties before the content ends and resumes once `rebuffer` seconds are buffered (or the
//! rest of the content has arrived). No request is made while more than `max_buffer` is
//! buffered; the player waits until the buffer drains to `max_buffer`. The rung of each
//! segment comes from an [`abr`] policy.
//!
//! Reported (flow summary): `dash_segments`, `dash_startup_first_byte_s` (first request →
//! first response byte delivered), `dash_startup_s` (first request → playback start),
//! `dash_stalls`, `dash_stall_s` (a stall still going at the flow's stop counts up to it),
//! `dash_switches` and `dash_switch_mean_bps` (mean |Δ declared bitrate| per switch, between
//! consecutive segments), `dash_mean_bitrate_bps` (segment bytes × 8 / duration, weighted by
//! the media time played up to the flow's stop), `dash_played_s`, `dash_mean_rate_bps` (mean
//! per-segment download rate). With the `app` probe, per segment at its last byte:
//! `dash_segment` (index), `dash_rung`, `dash_bitrate_bps` (declared), `dash_bytes`,
//! `dash_download_s`, `dash_buffer_s` (after adding it); once `dash_startup_first_byte_s` and
//! `dash_startup_s`; per stall at its end `dash_stall_s`.
//!
//! Not modelled: HTTP header bytes beyond the fixed request and response sizes, parallel or
//! pipelined requests, MPD refresh, the initialisation segment, abandoning a segment
//! mid-download, decoding time. All times are simulated; the player is deterministic.

pub mod abr;
pub mod manifest;

use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::engine::TimerKind;
use crate::time::{Dur, SimTime};
use crate::transport::{notice_mask, Service, TransportEvent};
use crate::units::serde_units;
use abr::{AbrConfig, AbrPolicy, AbrSetup, PlayerObs};
use manifest::Ladder;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `kind = "dash"`: the player.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DashConfig {
    /// The MPD (static, one adaptation set with a `SegmentTemplate@duration`).
    pub mpd: PathBuf,
    /// The segments table with each segment's size per representation
    /// (`data/traces/dash_hevc.segments.csv`).
    pub segments: PathBuf,
    /// The ABR policy (default `{ kind = "throughput" }`).
    #[serde(default)]
    pub abr: AbrConfig,
    /// Media buffered before playback starts (default: the first segment's duration).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub startup: Option<Dur>,
    /// Media buffered before playback resumes after a stall (default: one segment).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub rebuffer: Option<Dur>,
    /// No request while more than this is buffered (default `"30s"`); at least `startup`,
    /// `rebuffer` and one segment.
    #[serde(default = "default_max_buffer", with = "serde_units::time")]
    pub max_buffer: Dur,
    /// Request size on the wire, bytes (default `"300B"`).
    #[serde(default = "default_request", with = "serde_units::bytes")]
    pub request: u64,
    /// Times the content is played back to back (default 1).
    #[serde(default = "default_loops")]
    pub loops: u32,
    /// The bitrate of each representation the ABR policy compares: `"mpd"` (default, the
    /// MPD's `@bandwidth`, whatever its author meant by it) or `"mean"` (the representation's
    /// mean rate, its segments' bytes × 8 over their duration: what GPAC's MP4Box, which made
    /// the UHD HEVC-DASH dataset, writes as `@bandwidth`).
    #[serde(default)]
    pub bandwidth: BandwidthSource,
}

/// Where the player takes each representation's bitrate from (see [`DashConfig::bandwidth`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BandwidthSource {
    /// `Representation@bandwidth` as the MPD states it.
    #[default]
    Mpd,
    /// The representation's mean segment rate, bits/s.
    Mean,
}

fn default_max_buffer() -> Dur {
    Dur::from_secs(30)
}
fn default_request() -> u64 {
    300
}
fn default_loops() -> u32 {
    1
}

impl BuildApp for DashConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, base_dir: &Path, cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(self.build_player(base_dir, cache)?))
    }
}

impl DashConfig {
    /// The player; its MPD and segments table are read once per `cache` (players of one
    /// ladder share it).
    pub fn build_player(&self, base_dir: &Path, cache: &InputCache) -> Result<Dash, AppBuildError> {
        let (mpd, segments) = (base_dir.join(&self.mpd), base_dir.join(&self.segments));
        // Name the key that gave the file at fault.
        let ladder = cache.get("dash", &[&mpd, &segments], || manifest::read_ladder(&mpd, &segments)).map_err(|e| {
            let key = match e.file {
                manifest::LadderFile::Mpd => "mpd",
                manifest::LadderFile::Segments => "segments",
            };
            AppBuildError::new(key, e.message)
        })?;
        let seg = Dur(ladder.segment_ns);
        let startup = self.startup.unwrap_or(Dur(ladder.durations_ns[0]));
        let rebuffer = self.rebuffer.unwrap_or(seg);
        if self.request == 0 {
            return Err(AppBuildError::new("request", "must be at least 1 byte"));
        }
        if self.loops == 0 {
            return Err(AppBuildError::new("loops", "must be at least 1"));
        }
        if startup == Dur::ZERO || rebuffer == Dur::ZERO {
            let f = if startup == Dur::ZERO { "startup" } else { "rebuffer" };
            return Err(AppBuildError::new(f, "must be above 0 s"));
        }
        for (f, d) in [("startup", startup), ("rebuffer", rebuffer), ("segment duration", seg)] {
            if d > self.max_buffer {
                return Err(AppBuildError::new(
                    "max_buffer",
                    format!("{} s is below the {f} ({} s)", self.max_buffer.as_secs_f64(), d.as_secs_f64()),
                ));
            }
        }
        let bitrates = match self.bandwidth {
            BandwidthSource::Mpd => ladder.bitrates_bps(),
            BandwidthSource::Mean => ladder.mean_bitrates_bps(),
        };
        let setup =
            AbrSetup { bitrates_bps: &bitrates, segment_s: seg.as_secs_f64(), max_buffer_s: self.max_buffer.as_secs_f64() };
        let abr = self.abr.build(&setup).map_err(|(f, r)| AppBuildError::new(format!("abr.{f}"), r))?;
        let total = ladder.segments() as u64 * self.loops as u64;
        Ok(Dash {
            ladder,
            abr,
            startup,
            rebuffer,
            max_buffer: self.max_buffer,
            request: self.request,
            total,
            bitrates,
            next: 0,
            asked_at: SimTime::NEVER,
            rung: 0,
            rx_done: 0,
            first_byte_seen: false,
            started_at: SimTime::NEVER,
            first_byte_at: SimTime::NEVER,
            play_at: SimTime::NEVER,
            buf: Dur::ZERO,
            buf_at: SimTime::ZERO,
            playing: false,
            stall_since: SimTime::NEVER,
            stalls: 0,
            stall: Dur::ZERO,
            stop: SimTime::NEVER,
            rates: Vec::new(),
            played: Vec::new(),
        })
    }
}

/// Timer kind 1: the buffer runs empty.
const EMPTY: TimerKind = TimerKind(1);

/// The player's state.
pub struct Dash {
    ladder: std::sync::Arc<Ladder>,
    abr: Box<dyn AbrPolicy>,
    startup: Dur,
    rebuffer: Dur,
    max_buffer: Dur,
    request: u64,
    /// Segments in the session (content segments × loops).
    total: u64,
    bitrates: Vec<f64>,
    /// Index of the next segment to request.
    next: u64,
    /// When the outstanding request was sent (`NEVER`: none outstanding).
    asked_at: SimTime,
    /// Rung of the outstanding request.
    rung: usize,
    /// Response bytes delivered before the outstanding response.
    rx_done: u64,
    first_byte_seen: bool,
    started_at: SimTime,
    first_byte_at: SimTime,
    play_at: SimTime,
    /// Media buffered at `buf_at`.
    buf: Dur,
    buf_at: SimTime,
    playing: bool,
    stall_since: SimTime,
    stalls: u64,
    stall: Dur,
    /// The flow's stop time (the end of observation for the summary).
    stop: SimTime,
    /// Download rate of each segment, bits/s.
    rates: Vec<f64>,
    /// Per downloaded segment: (rung, duration, bytes).
    played: Vec<(usize, Dur, u64)>,
}

impl Dash {
    /// Media buffered at `now`.
    fn level(&self, now: SimTime) -> Dur {
        if self.playing {
            Dur(self.buf.0.saturating_sub(now.since(self.buf_at).0))
        } else {
            self.buf
        }
    }

    fn segment(&self, k: u64) -> (Dur, usize) {
        let n = self.ladder.segments();
        let i = (k % n as u64) as usize;
        (Dur(self.ladder.durations_ns[i]), i)
    }

    fn request(&mut self, cx: &mut AppCtx) {
        if self.next >= self.total || self.asked_at != SimTime::NEVER || cx.now >= cx.stop {
            return;
        }
        let level = self.level(cx.now);
        if level > self.max_buffer {
            // Wait until it drains to max_buffer (only while playing: startup and rebuffer are
            // at most max_buffer, so a paused player never holds more).
            cx.wake_at(cx.now + (level - self.max_buffer));
            return;
        }
        let obs = PlayerObs::new(level.as_secs_f64(), self.next, self.played.last().map(|p| p.0), &self.rates);
        let rung = self.abr.choose(&obs).min(self.bitrates.len() - 1);
        let (_, i) = self.segment(self.next);
        let size = self.ladder.rungs[rung].sizes[i];
        self.rung = rung;
        self.asked_at = cx.now;
        self.first_byte_seen = false;
        cx.send_message(self.request, size);
    }

    fn on_first_byte(&mut self, cx: &mut AppCtx) {
        self.first_byte_seen = true;
        if self.first_byte_at == SimTime::NEVER {
            self.first_byte_at = cx.now;
            cx.probe("dash_startup_first_byte_s", cx.now.since(self.started_at).as_secs_f64());
        }
    }

    fn on_segment(&mut self, response_bytes: u64, cx: &mut AppCtx) {
        let now = cx.now;
        if !self.first_byte_seen {
            self.on_first_byte(cx);
        }
        self.rx_done += response_bytes;
        let (dur, i) = self.segment(self.next);
        let bytes = self.ladder.rungs[self.rung].sizes[i];
        let download = now.since(self.asked_at);
        self.asked_at = SimTime::NEVER;
        let rate = bytes as f64 * 8.0 / download.as_secs_f64().max(1e-9);
        self.rates.push(rate);
        self.played.push((self.rung, dur, bytes));
        self.buf = self.level(now) + dur;
        self.buf_at = now;
        let index = self.next;
        self.next += 1;
        let all_in = self.next >= self.total;
        cx.probe("dash_segment", index as f64);
        cx.probe("dash_rung", self.rung as f64);
        cx.probe("dash_bitrate_bps", self.bitrates[self.rung]);
        cx.probe("dash_bytes", bytes as f64);
        cx.probe("dash_download_s", download.as_secs_f64());
        cx.probe("dash_buffer_s", self.buf.as_secs_f64());
        if !self.playing {
            if self.play_at == SimTime::NEVER {
                if self.buf >= self.startup || all_in {
                    self.play_at = now;
                    self.playing = true;
                    cx.probe("dash_startup_s", now.since(self.started_at).as_secs_f64());
                }
            } else if self.buf >= self.rebuffer || all_in {
                self.playing = true;
                let s = now.since(self.stall_since);
                self.stall = self.stall + s;
                self.stall_since = SimTime::NEVER;
                cx.probe("dash_stall_s", s.as_secs_f64());
            }
        }
        if self.playing {
            cx.wake_kind_at(EMPTY, now + self.buf);
        }
        self.request(cx);
    }

    fn on_empty(&mut self, cx: &mut AppCtx) {
        // A stale expiry (the buffer grew since it was armed) finds media left.
        if !self.playing || self.level(cx.now) > Dur::ZERO {
            return;
        }
        self.buf = Dur::ZERO;
        self.buf_at = cx.now;
        self.playing = false;
        if self.next < self.total {
            self.stalls += 1;
            self.stall_since = cx.now;
        }
    }
}

impl Application for Dash {
    fn start(&mut self, cx: &mut AppCtx) {
        self.started_at = cx.now;
        self.stop = cx.stop;
        self.request(cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        match ev {
            AppEvent::Message { bytes, .. } if self.asked_at != SimTime::NEVER => self.on_segment(bytes, cx),
            AppEvent::Transport(TransportEvent::Delivered { total_bytes })
                if self.asked_at != SimTime::NEVER && !self.first_byte_seen && total_bytes > self.rx_done =>
            {
                self.on_first_byte(cx)
            }
            AppEvent::Timer(EMPTY) => self.on_empty(cx),
            AppEvent::Timer(_) => self.request(cx),
            _ => {}
        }
    }
    fn timer_kinds(&self) -> u8 {
        2
    }
    fn subscriptions(&self) -> u32 {
        notice_mask::DELIVERED
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        let secs = |t: SimTime| if t == SimTime::NEVER { f64::NAN } else { t.since(self.started_at).as_secs_f64() };
        // Media played by the flow's stop: what was downloaded less what is still buffered.
        let stop = self.stop;
        let downloaded: u64 = self.played.iter().map(|p| p.1 .0).sum();
        let left = if self.play_at == SimTime::NEVER { Dur(downloaded) } else { self.level(stop) };
        let mut to_play = downloaded.saturating_sub(left.0);
        let played_s = to_play as f64 * 1e-9;
        let (mut bits, mut media) = (0.0, 0.0);
        for &(_, d, b) in &self.played {
            let part = d.0.min(to_play);
            if part == 0 {
                break;
            }
            bits += b as f64 * 8.0 * part as f64 / d.0 as f64;
            media += part as f64 * 1e-9;
            to_play -= part;
        }
        let switches: Vec<f64> = self
            .played
            .windows(2)
            .filter(|w| w[0].0 != w[1].0)
            .map(|w| (self.bitrates[w[1].0] - self.bitrates[w[0].0]).abs())
            .collect();
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        let ongoing = if self.stall_since != SimTime::NEVER { stop.since(self.stall_since) } else { Dur::ZERO };
        vec![
            ("dash_segments", self.played.len() as f64),
            ("dash_startup_first_byte_s", secs(self.first_byte_at)),
            ("dash_startup_s", secs(self.play_at)),
            ("dash_stalls", self.stalls as f64),
            ("dash_stall_s", (self.stall + ongoing).as_secs_f64()),
            ("dash_switches", switches.len() as f64),
            ("dash_switch_mean_bps", mean(&switches)),
            ("dash_mean_bitrate_bps", if media > 0.0 { bits / media } else { f64::NAN }),
            ("dash_played_s", played_s),
            ("dash_mean_rate_bps", mean(&self.rates)),
        ]
    }
}
