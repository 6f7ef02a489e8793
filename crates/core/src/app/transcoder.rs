//! The symbiotic transcoder (`kind = "transcoder"`): the source of the transcoder → client leg
//! of the TCP Interactive paper's video (Khan, Zaghal, Gu, Sec. 2–3; `docs/models/transcoder.md`).
//!
//! The paper's transcoder sits on a mid-path node, receives an MPEG-2 stream (MP@ML, 704×480,
//! 2 Mbit/s) from the server and re-encodes it for the client at a target rate that its
//! "symbiosis unit" sets from TCP's timeout notices. Here:
//!
//! - **The server → transcoder leg is not simulated.** The original frame `f` is at the
//!   transcoder at `start + f / frame_rate` (it arrives on its frame schedule over an
//!   uncongested link), and transcoding takes no time.
//! - **The re-encode is a ladder** (`data/traces/mpeg2_ladder.frames.csv.gz`, built by
//!   `python/qoelab/video/sources/mpeg2_ladder.py`): full encodes of the same source at several rates
//!   with closed GOPs at the same frames. At each GOP's first frame the transcoder picks the
//!   highest rung whose rate is at most its target rate (the lowest rung if none is), and writes
//!   every frame of that GOP from that rung, each as one message ([`AppCtx::send_message`])
//!   tagged with [`frame_tag`]`(frame, 0)`, the decode-order frame number, at the frame's time.
//!   TCP buffers whatever it cannot send yet; no frame is dropped at the sender.
//! - `interactive = false` (classic): the target stays at the top rung's rate.
//! - `interactive = true`: the app subscribes to TCP's retransmission-timeout notices and
//!   runs the **lazy binary back-off**: a timeout sets `target ← max(bottom, round(target · A))`
//!   (A = `backoff`) unless a cut made earlier has not yet taken effect (no GOP has started
//!   since it), in which case the timeout is counted and changes nothing
//!   (`backoff_rule = "lazy"`, the default); `backoff_rule = "per_timeout"` cuts at every
//!   timeout, so a burst with k timeouts in one GOP multiplies the target by A^k. **Additive recovery**:
//!   at each GOP start after the first, if no cut is waiting to take effect there and the
//!   socket's timeout series is over (`SocketInfo::backoff == 0`: new data has been
//!   acknowledged since the last timeout), `target ← min(top, target + recovery)`.
//!
//! Reported, with the `app` probe, per frame at its write: `tc_frame` (decode-order index),
//! `tc_rung`, `tc_target_bps` (the target when its GOP started), `tc_bytes`; per timeout
//! `tc_timeout` (the backoff count TCP reported) and `tc_cut_bps` (the target after it; equal
//! to the one before when the lazy rule skipped the cut). Flow summary: `tc_frames`,
//! `tc_timeouts`, `tc_cuts`, `tc_switches` (GOPs whose rung differs from the previous GOP's),
//! `tc_bytes`, `tc_mean_rate_bps` (bytes written × 8 over the frames' duration),
//! `tc_min_target_bps`.
//!
//! Not modelled: the transcoder's processing time and buffering of the original stream, rate
//! changes inside a GOP (the paper's transcoder adjusts its quantiser per frame; ours switches
//! at closed-GOP boundaries only), dropping frames already written (TCP holds them).

use super::video::frame_tag;
use crate::input::InputCache;
use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::time::SimTime;
use crate::transport::{notice_mask, Service, TransportEvent};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `kind = "transcoder"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TranscoderConfig {
    /// The ladder: per rung and decode-order frame, the coded size (see [`read_ladder`]).
    pub ladder: PathBuf,
    /// Whether the transcoder hears TCP's timeouts and adapts (default false: classic mode,
    /// fixed at the top rung).
    #[serde(default)]
    pub interactive: bool,
    /// A, the back-off factor of the target rate per timeout, in (0, 1) (default 0.55, the
    /// paper's Fig. 4; its Table 1 uses 0.35, 0.55 and 0.75).
    #[serde(default = "default_backoff")]
    pub backoff: f64,
    /// The additive recovery step, added to the target at each GOP start once the path has
    /// recovered (default `"100kbps"` per GOP: 200 kbit/s per second at 0.5-s GOPs).
    #[serde(default = "default_recovery", with = "serde_units::rate")]
    pub recovery: Rate,
    /// Frames per second of the ladder (default 30, the bundled ladder's), in (0, 240].
    #[serde(default = "default_frame_rate")]
    pub frame_rate: f64,
    /// Send only the first `frames` frames (default: all of the ladder), at least 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    /// `"lazy"` (default: one cut per GOP, later timeouts of that GOP only counted) or
    /// `"per_timeout"` (a cut at every timeout).
    #[serde(default)]
    pub backoff_rule: BackoffRule,
}

/// When a timeout cuts the target (see the module header).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackoffRule {
    /// One cut per GOP: a timeout while an earlier cut has not yet taken effect changes nothing.
    #[default]
    Lazy,
    /// Every timeout cuts.
    PerTimeout,
}

fn default_backoff() -> f64 {
    0.55
}
fn default_recovery() -> Rate {
    Rate(100_000)
}
fn default_frame_rate() -> f64 {
    30.0
}

/// The ladder as the transcoder uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct Ladder {
    /// Target rate of each rung, bit/s, strictly decreasing (rung 0 is the top).
    pub rates_bps: Vec<u64>,
    /// `sizes[r][f]`: coded bytes of decode-order frame `f` in rung `r`.
    pub sizes: Vec<Vec<u64>>,
    /// Whether frame `f` starts a (closed) GOP: an I picture in every rung.
    pub gop_start: Vec<bool>,
}

impl Ladder {
    pub fn frames(&self) -> usize {
        self.gop_start.len()
    }
    /// The highest rung whose rate is at most `target_bps`, or the lowest rung.
    pub fn rung_for(&self, target_bps: u64) -> usize {
        self.rates_bps.iter().position(|&r| r <= target_bps).unwrap_or(self.rates_bps.len() - 1)
    }
}

/// Largest ladder file read (decompressed).
const MAX_LADDER_BYTES: u64 = 64 << 20;
/// Largest frame of a ladder, bytes (as a trace's NAL unit: 32 bits), so the bytes a run
/// writes add up without overflow.
pub const MAX_FRAME_BYTES: u64 = u32::MAX as u64;
/// Largest `target_bps` of a rung: 1 Pbit/s, the scenario's largest rate (the target moves
/// between the bottom and top rungs by additions that must not overflow).
pub const MAX_TARGET_BPS: u64 = 1_000_000_000_000_000;
const COLUMNS: [&str; 5] = ["rung", "target_bps", "frame", "type", "size_bytes"];

/// Reads a ladder CSV (`.gz`: gzip): a header naming at least `rung, target_bps, frame, type,
/// size_bytes` (other columns, such as the bundled file's `display` and `psnr_*`, are
/// ignored), then one row per rung and decode-order frame, rungs 0, 1, … in order, each with
/// frames 0, 1, … in order, the same number of frames per rung, one `target_bps` per rung,
/// strictly decreasing from rung to rung, sizes of at least 1 byte, and I pictures (`type`
/// `I`) at the same frames in every rung, frame 0 among them. Errors name the line and never
/// quote the file.
pub fn read_ladder(path: &Path) -> Result<Ladder, String> {
    parse_ladder(&crate::input::read_capped(path, "ladder", MAX_LADDER_BYTES)?)
}

/// Parses ladder text (see [`read_ladder`]).
pub fn parse_ladder(text: &[u8]) -> Result<Ladder, String> {
    if let Some(at) = text.iter().position(|&b| !(b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b))) {
        let line = text[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(format!("line {line}: not ASCII text"));
    }
    let text = std::str::from_utf8(text).expect("checked ASCII above");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let mut at = [usize::MAX; 5];
    for (c, name) in COLUMNS.iter().enumerate() {
        let found: Vec<usize> = (0..header.len()).filter(|&k| header[k] == *name).collect();
        if found.len() != 1 {
            return Err(format!("line 1: header must name {} once each (`{name}`)", COLUMNS.join(", ")));
        }
        at[c] = found[0];
    }
    let mut lad = Ladder { rates_bps: Vec::new(), sizes: Vec::new(), gop_start: Vec::new() };
    let mut keys: Vec<Vec<bool>> = Vec::new();
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != header.len() {
            return Err(format!("line {n}: {} fields, the header has {}", f.len(), header.len()));
        }
        let num = |c: usize| -> Result<u64, String> {
            f[at[c]].parse::<u64>().map_err(|_| format!("line {n}: `{}` is not a whole number", COLUMNS[c]))
        };
        let (rung, rate, frame, size) = (num(0)? as usize, num(1)?, num(2)? as usize, num(4)?);
        let is_i = match f[at[3]] {
            "I" => true,
            "P" | "B" => false,
            _ => return Err(format!("line {n}: `type` must be I, P or B")),
        };
        if rung == lad.sizes.len() {
            if rung > 0 && lad.sizes[rung - 1].len() != lad.sizes[0].len() {
                return Err(format!("line {n}: rung {} has {} frames, rung 0 has {}", rung - 1, lad.sizes[rung - 1].len(), lad.sizes[0].len()));
            }
            if rate == 0 || rate > MAX_TARGET_BPS || lad.rates_bps.last().is_some_and(|&r| rate >= r) {
                return Err(format!(
                    "line {n}: `target_bps` must be within 1..={MAX_TARGET_BPS} and decrease from rung to rung"
                ));
            }
            lad.rates_bps.push(rate);
            lad.sizes.push(Vec::new());
            keys.push(Vec::new());
        } else if rung + 1 != lad.sizes.len() {
            return Err(format!("line {n}: rung {rung} out of order (rungs must be 0, 1, … in order)"));
        } else if rate != lad.rates_bps[rung] {
            return Err(format!("line {n}: rung {rung} changes its `target_bps`"));
        }
        if frame != lad.sizes[rung].len() {
            return Err(format!("line {n}: frame {frame} out of order (expected {})", lad.sizes[rung].len()));
        }
        if size == 0 || size > MAX_FRAME_BYTES {
            return Err(format!("line {n}: `size_bytes` must be within 1..={MAX_FRAME_BYTES}, got {size}"));
        }
        lad.sizes[rung].push(size);
        keys[rung].push(is_i);
    }
    let Some(first) = keys.first() else {
        return Err("ladder has no rows".into());
    };
    if !first[0] {
        return Err("frame 0 of rung 0 is not an I picture (a GOP must start the ladder)".into());
    }
    for (r, k) in keys.iter().enumerate() {
        if k.len() != first.len() {
            return Err(format!("rung {r} has {} frames, rung 0 has {}", k.len(), first.len()));
        }
        if let Some(f) = (0..k.len()).find(|&f| k[f] != first[f]) {
            let (yes, no) = if first[f] { (0, r) } else { (r, 0) };
            return Err(format!("frame {f} is an I picture in rung {yes} but not in rung {no} (GOPs must be aligned)"));
        }
    }
    lad.gop_start = keys.swap_remove(0);
    Ok(lad)
}

impl BuildApp for TranscoderConfig {
    fn service(&self) -> Service {
        Service::Stream
    }
    fn build(&self, base_dir: &Path, cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(self.build_transcoder(base_dir, cache)?))
    }
}

impl TranscoderConfig {
    /// The transcoder; its ladder is read once per `cache` (flows on one ladder share it).
    pub fn build_transcoder(&self, base_dir: &Path, cache: &InputCache) -> Result<Transcoder, AppBuildError> {
        if !(self.backoff > 0.0 && self.backoff < 1.0) {
            return Err(AppBuildError::new("backoff", format!("must be in (0, 1), got {}", self.backoff)));
        }
        if !(self.frame_rate > 0.0 && self.frame_rate <= 240.0) {
            return Err(AppBuildError::new("frame_rate", format!("must be in (0, 240], got {}", self.frame_rate)));
        }
        let path = base_dir.join(&self.ladder);
        let ladder = cache
            .get("ladder", &[&path], || read_ladder(&path))
            .map_err(|e| AppBuildError::new("ladder", format!("{}: {e}", path.display())))?;
        let frames = match self.frames {
            None => ladder.frames(),
            Some(0) => return Err(AppBuildError::new("frames", "must be at least 1")),
            Some(n) if n > ladder.frames() as u64 => {
                return Err(AppBuildError::new("frames", format!("{n} is more than the ladder's {} frames", ladder.frames())))
            }
            Some(n) => n as usize,
        };
        let top = ladder.rates_bps[0];
        if self.recovery.bps() > top {
            return Err(AppBuildError::new(
                "recovery",
                format!("{} bit/s per GOP is more than the top rung's {top} bit/s", self.recovery.bps()),
            ));
        }
        Ok(Transcoder {
            ladder,
            interactive: self.interactive,
            backoff: self.backoff,
            rule: self.backoff_rule,
            recovery_bps: self.recovery.bps(),
            frame_rate: self.frame_rate,
            frames,
            t0: SimTime::ZERO,
            next: 0,
            rung: 0,
            gop_target_bps: top,
            target_bps: top,
            cut_pending: false,
            timeouts: 0,
            cuts: 0,
            switches: 0,
            bytes: 0,
            min_target_bps: top,
        })
    }
}

/// The transcoder's state.
pub struct Transcoder {
    ladder: Arc<Ladder>,
    interactive: bool,
    backoff: f64,
    rule: BackoffRule,
    recovery_bps: u64,
    frame_rate: f64,
    frames: usize,
    t0: SimTime,
    /// Next frame to write.
    next: usize,
    /// Rung of the current GOP.
    rung: usize,
    /// The target when the current GOP started.
    gop_target_bps: u64,
    target_bps: u64,
    /// A cut made since the current GOP started (it takes effect at the next GOP).
    cut_pending: bool,
    timeouts: u64,
    cuts: u64,
    switches: u64,
    bytes: u64,
    min_target_bps: u64,
}

impl Transcoder {
    /// When frame `f` is at the transcoder: `start + f / frame_rate`, to the nearest ns.
    fn due(&self, f: usize) -> SimTime {
        SimTime(self.t0.0 + (f as f64 * 1e9 / self.frame_rate).round() as u64)
    }

    fn top(&self) -> u64 {
        self.ladder.rates_bps[0]
    }
    fn bottom(&self) -> u64 {
        *self.ladder.rates_bps.last().expect("a ladder has a rung")
    }

    /// The rate rules at a GOP start (see the module header).
    fn gop_start(&mut self, cx: &mut AppCtx) {
        if self.interactive && self.next > 0 {
            if self.cut_pending {
                self.cut_pending = false;
            } else if self.target_bps < self.top() && cx.socket().is_some_and(|s| s.backoff == 0) {
                self.target_bps = (self.target_bps + self.recovery_bps).min(self.top());
            }
        }
        let rung = self.ladder.rung_for(self.target_bps);
        if self.next > 0 && rung != self.rung {
            self.switches += 1;
        }
        self.rung = rung;
        self.gop_target_bps = self.target_bps;
    }

    /// Writes every frame due by now, then wakes at the next one's time.
    fn pump(&mut self, cx: &mut AppCtx) {
        while self.next < self.frames {
            let due = self.due(self.next);
            if due > cx.now {
                cx.wake_at(due);
                return;
            }
            if self.ladder.gop_start[self.next] {
                self.gop_start(cx);
            }
            let bytes = self.ladder.sizes[self.rung][self.next];
            cx.send_message(bytes, frame_tag(self.next as i64, 0));
            self.bytes += bytes;
            cx.probe("tc_frame", self.next as f64);
            cx.probe("tc_rung", self.rung as f64);
            cx.probe("tc_target_bps", self.gop_target_bps as f64);
            cx.probe("tc_bytes", bytes as f64);
            self.next += 1;
        }
    }

    fn on_timeout(&mut self, backoff: u32, cx: &mut AppCtx) {
        self.timeouts += 1;
        if !self.cut_pending || self.rule == BackoffRule::PerTimeout {
            let cut = (self.target_bps as f64 * self.backoff).round() as u64;
            self.target_bps = cut.max(self.bottom());
            self.min_target_bps = self.min_target_bps.min(self.target_bps);
            self.cut_pending = true;
            self.cuts += 1;
        }
        cx.probe("tc_timeout", backoff as f64);
        cx.probe("tc_cut_bps", self.target_bps as f64);
    }
}

impl Application for Transcoder {
    fn start(&mut self, cx: &mut AppCtx) {
        self.t0 = cx.now;
        self.pump(cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        match ev {
            AppEvent::Transport(TransportEvent::RtoFired { backoff, .. }) if self.interactive => {
                self.on_timeout(backoff, cx)
            }
            AppEvent::Timer(_) => self.pump(cx),
            _ => {}
        }
    }
    fn subscriptions(&self) -> u32 {
        if self.interactive {
            notice_mask::RTO
        } else {
            0
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        let dur = self.next as f64 / self.frame_rate;
        vec![
            ("tc_frames", self.next as f64),
            ("tc_timeouts", self.timeouts as f64),
            ("tc_cuts", self.cuts as f64),
            ("tc_switches", self.switches as f64),
            ("tc_bytes", self.bytes as f64),
            ("tc_mean_rate_bps", if dur > 0.0 { self.bytes as f64 * 8.0 / dur } else { f64::NAN }),
            ("tc_min_target_bps", self.min_target_bps as f64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: &str = "rung,target_bps,frame,type,size_bytes\n\
        0,2000000,0,I,9000\n0,2000000,1,P,5000\n0,2000000,2,I,9100\n0,2000000,3,P,5100\n\
        1,1000000,0,I,4000\n1,1000000,1,P,2000\n1,1000000,2,I,4100\n1,1000000,3,P,2100\n";

    #[test]
    fn parses_rungs_and_gop_starts() {
        let l = parse_ladder(L.as_bytes()).unwrap();
        assert_eq!(l.rates_bps, vec![2_000_000, 1_000_000]);
        assert_eq!(l.gop_start, vec![true, false, true, false]);
        assert_eq!(l.sizes[1], vec![4000, 2000, 4100, 2100]);
        assert_eq!((l.rung_for(2_000_000), l.rung_for(1_999_999), l.rung_for(1_000_000), l.rung_for(5)), (0, 1, 1, 1));
    }

    #[test]
    fn malformed_ladders_are_refused_with_the_line() {
        let cases = [
            (L.replace("0,2000000,2,I,9100", "0,2000000,2,P,9100"), "GOPs must be aligned"),
            (L.replace("1,1000000,", "1,3000000,"), "line 6: `target_bps` must be within 1..=1000000000000000 and decrease"),
            (L.replace("0,2000000,", "0,18446744073709551615,"), "line 2: `target_bps` must be within"),
            (L.replace("0,2000000,3,P,5100", "0,2000000,4,P,5100"), "line 5: frame 4 out of order"),
            (L.replace("1,1000000,1,P,2000", "1,1000000,1,P,0"), "line 7: `size_bytes` must be within 1..=4294967295, got 0"),
            // 2^64 − 1 once overflowed the byte count (an internal error).
            (L.replace("1,1000000,1,P,2000", "1,1000000,1,P,18446744073709551615"), "line 7: `size_bytes` must be within"),
            (L.replace("1,1000000,1,P,2000", "1,1000000,1,P,18446744073709551616"), "line 7: `size_bytes` is not a whole number"),
            (L.replace("1,1000000,1,P,2000", "1,1000000,1,X,2000"), "line 7: `type`"),
            (L.replace("rung,", "rang,"), "line 1: header"),
            (L.replace("0,2000000,0,I", "0,2000000,0,P"), "frame 0 of rung 0"),
            ("rung,target_bps,frame,type,size_bytes\n".into(), "no rows"),
            (L.replace("1,1000000,3,P,2100\n", ""), "rung 1 has 3 frames"),
        ];
        for (text, want) in cases {
            let e = parse_ladder(text.as_bytes()).unwrap_err();
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
    }
}
