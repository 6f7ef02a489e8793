//! Video from a frame/NAL trace over RTP (or plain UDP), or over TCP one message per frame.
//!
//! The trace is a CSV file (optionally gzipped, `.csv.gz`), one row per NAL unit (slice) in decode order, with header columns
//! `frame,type,size_bytes,ts_ms` and optionally `nal` and `display` (the format written by
//! `qoelab video encode`; the grammar is in `docs/models/video.md`, read by
//! [`super::nal::read_trace_table`]). Each row is sent at `ts_ms` after the flow's start as
//! ⌈size / max_payload⌉ datagrams, back to back; RTP timestamps are `ts_ms · 90` (90 kHz).
//! With `loop = true` the trace repeats, shifted by its period (last timestamp plus one mean
//! frame interval), until the flow stops; `offset` may then be anywhere in [0, period).
//!
//! Two optional sender-side timing knobs (both off by default, which keeps the behaviour and
//! the random streams of existing scenarios unchanged):
//! - `pacing = "frame"` spreads the datagrams of one frame evenly over the frame's duration (the
//!   time to the next frame), as a streaming server that sends each packet at its own
//!   timestamp does, instead of sending them back to back (`"burst"`).
//! - `pacing = "ts"` models VLC's MPEG-TS mode (modules/mux/mpeg/ts.c): the muxer gathers at
//!   least `ts_shaping` (default 200 ms, VLC's `sout-ts-shaping`) of the stream — whole
//!   frames, from the first one not yet sent, until their timestamps span `ts_shaping` — and
//!   dates its packets evenly over that span, so each chunk leaves at its own constant rate.
//!   Here a chunk's datagrams are spread evenly from the chunk's first timestamp to the next
//!   chunk's (to the end of the period for the last one). The TS packetisation itself (188-byte
//!   packets, 7 to a datagram: use `max_payload = "1316B"`), its 2 % of TS/PES headers and the
//!   muxing of audio into the same flow are not modelled.
//! - `peak_rate = R` additionally never lets the datagrams leave faster than R (a sender-side
//!   leaky bucket, the "strictly enforced peak rate" of BMO11 Sec. IV-A): a datagram leaves
//!   no earlier than the previous one's release plus its own size at R.
//! - `source_jitter = δ` delays each datagram at the source by `max(0, X)`, `X ~ N(0, δ)` (the
//!   artificial Gaussian delays of Bonald, Muscariello, Ostallo, ICC 2011, Sec. V-E / Fig. 8;
//!   a zero-mean Gaussian clipped at 0, as a netem delay of 0 with jitter δ behaves). Datagrams
//!   keep their order: one cannot leave before its predecessor, so a long delay holds the
//!   following datagrams back and they leave in a burst — the effect the paper studies.
//!
//! Two more, for one video streamed over several connections (Mehmood/Fleury-style
//! multi-connection TFRC, `docs/models/multiconn.md`):
//! - `split = { connections = N, index = i, gop = G }` sends only the rows of the GOPs this
//!   connection owns: GOP number `g = frame / G` (by the trace's decode-order `frame` column, not
//!   by where I-frames fall; the bundled CIF trace has an I-frame every 15 frames, so with
//!   `G = 15` both agree), owned when `g mod N = i`. With `loop`, every repetition is split
//!   the same way. The other rows are skipped, their timestamps kept.
//! - `pacing = "greedy"` ignores the timestamps and keeps the transport's send buffer full, as
//!   the paper's source does (the sending period is then how long the video takes to leave).
//!   It needs a transport with a send buffer that says when it has room (TFRC: the
//!   [`SendSpace`](crate::transport::TransportEvent::SendSpace) notice); over UDP or RTP it is
//!   a scenario error. The source hands over one datagram at its start (an idle transport
//!   takes it at once) and afterwards only as many as the last notice said fit, minus those
//!   handed over since: no datagram is ever dropped at the send buffer. A trace played once
//!   ends the flow's sending when its last owned row has been handed over. `peak_rate`,
//!   `source_jitter`, `tfd` and `rsvp` are timing features and are errors with it.
//!
//! Over a stream transport (`tcp`, `mptcp`) each frame is written at its time as one message
//! ([`AppCtx::send_message`]) of its NAL units' bytes, tagged with [`frame_tag`]; the keys that
//! act on datagrams (`max_payload`, `pacing` other than burst, `ts_shaping`, `source_jitter`,
//! `peak_rate`, `tfd`, `rsvp`, `split`) are errors there ("Video over TCP" in
//! `docs/models/video.md`).

use super::{AppBuildError, AppCtx, AppEvent, Application, BuildApp};
use crate::engine::TimerKind;
use crate::packet::MediaTag;
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use crate::transport::{notice_mask, Service, TransportEvent};
use crate::input::InputCache;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `kind = "video"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoConfig {
    /// Path of the trace CSV (relative to the scenario file).
    pub trace: PathBuf,
    /// Largest payload per datagram, 1..=65,507 bytes (one IPv4 UDP datagram); default: what
    /// the MTU allows.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub max_payload: Option<u64>,
    /// Repeat the trace until the flow stops (default false).
    #[serde(default, rename = "loop")]
    pub repeat: bool,
    /// Start this far into the trace (default 0 s).
    #[serde(default, with = "serde_units::time")]
    pub offset: Dur,
    /// `"burst"` (default): a NAL's datagrams leave back to back at its timestamp; `"frame"`:
    /// a frame's datagrams are spread evenly over the frame duration; `"ts"`: each chunk of
    /// `ts_shaping` is spread evenly over its span (VLC's TS mode, see the module header).
    #[serde(default)]
    pub pacing: Pacing,
    /// Chunk length of `pacing = "ts"` (VLC's `sout-ts-shaping`); default 200 ms; ignored by
    /// the other pacings. Must be above 0.
    #[serde(default = "default_ts_shaping", with = "serde_units::time", skip_serializing_if = "is_default_ts_shaping")]
    pub ts_shaping: Dur,
    /// Standard deviation δ of the Gaussian source delay (see the module header); default 0 s
    /// (no jitter).
    #[serde(default, with = "serde_units::time")]
    pub source_jitter: Dur,
    /// Largest sending rate of the source (IP bytes), e.g. `"8Mbps"`; default unlimited.
    #[serde(default, with = "serde_units::opt_rate", skip_serializing_if = "Option::is_none")]
    pub peak_rate: Option<crate::units::Rate>,
    /// Attach the Traffic Flow Description option (see [`super::tfd`]); default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tfd: Option<super::tfd::TfdSenderConfig>,
    /// Signal an RSVP reservation for this flow (see [`super::rsvp`]); default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rsvp: Option<super::rsvp::RsvpSenderConfig>,
    /// Send only this connection's GOPs of a video split over several connections (see the
    /// module header); default: the whole trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Split>,
}

/// `split = { connections = N, index = i, gop = G }`: this flow carries the GOPs `g` (frames
/// `g·G .. (g+1)·G − 1` of the decode-order `frame` column) with `g mod N = i`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Split {
    /// Number of connections N the video is split over, 1 to 16.
    pub connections: u32,
    /// This connection's index i, 0 ≤ i < N.
    pub index: u32,
    /// GOP length in frames, at least 1; default 15 (the paper's and the bundled CIF trace's).
    #[serde(default = "default_gop")]
    pub gop: u32,
}

fn default_gop() -> u32 {
    15
}

impl Split {
    /// Largest number of connections a video may be split over.
    pub const MAX_CONNECTIONS: u32 = 16;

    /// Errors name the key below `split` and the reason.
    fn validate(&self) -> Result<(), AppBuildError> {
        if !(1..=Self::MAX_CONNECTIONS).contains(&self.connections) {
            return Err(AppBuildError::new(
                "split.connections",
                format!("must be 1 to {}, got {}", Self::MAX_CONNECTIONS, self.connections),
            ));
        }
        if self.index >= self.connections {
            return Err(AppBuildError::new(
                "split.index",
                format!("must be below split.connections ({}), got {}", self.connections, self.index),
            ));
        }
        if self.gop == 0 {
            return Err(AppBuildError::new("split.gop", "must be at least 1 frame"));
        }
        Ok(())
    }

    /// Whether the row of decode-order frame `frame` belongs to this connection.
    pub fn owns(&self, frame: i64) -> bool {
        frame.div_euclid(self.gop as i64).rem_euclid(self.connections as i64) == self.index as i64
    }
}

/// Whether `split` (none: the whole trace) sends row `r`.
fn owned(split: &Option<Split>, r: &NalRow) -> bool {
    split.as_ref().is_none_or(|s| s.owns(r.frame))
}

/// VLC's default TS shaping delay (`sout-ts-shaping`, 200 ms).
fn default_ts_shaping() -> Dur {
    Dur::from_millis(200)
}

fn is_default_ts_shaping(d: &Dur) -> bool {
    *d == default_ts_shaping()
}

/// When a frame's datagrams leave the sender.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    #[default]
    Burst,
    Frame,
    /// Constant rate per `ts_shaping` chunk (VLC's TS mode).
    Ts,
    /// No timestamps: the transport's send buffer is kept full (see the module header).
    Greedy,
}

/// A datagram waiting for its release time at the source.
struct Pending {
    at: SimTime,
    payload: u32,
    media: MediaTag,
    ts90: u32,
    marker: bool,
}

pub use super::nal::NalRow;

/// Reads a trace; errors name the line and column (see [`super::nal::read_trace_table`]).
pub fn read_trace(path: &Path) -> Result<Vec<NalRow>, String> {
    super::nal::read_trace_table(path).map(|t| t.rows())
}

impl VideoConfig {
    pub fn build(&self, base_dir: &Path) -> Result<VideoSource, AppBuildError> {
        self.build_cached(base_dir, &InputCache::default())
    }

    /// As [`VideoConfig::build`], taking the parsed trace from `cache` when another flow of the
    /// same scenario already read it.
    pub fn build_cached(&self, base_dir: &Path, cache: &InputCache) -> Result<VideoSource, AppBuildError> {
        let path = base_dir.join(&self.trace);
        let rows = cache
            .get("trace", &[&path], || read_trace(&path))
            .map_err(|e| AppBuildError::new("trace", format!("{}: {e}", path.display())))?;
        // Checked in bytes before it becomes a 32-bit count (4 GiB once wrapped to 0 and sent
        // one-byte datagrams).
        if let Some(m) = self.max_payload.filter(|&m| m == 0 || m > 65_507) {
            return Err(AppBuildError::new(
                "max_payload",
                format!("must be within 1..=65507 bytes (one UDP datagram), got {m} B"),
            ));
        }
        let last = rows.last().expect("read_trace rejects empty traces").ts_ns;
        let n = rows.len() as u64;
        // Period of a looped trace: last timestamp plus one mean frame interval.
        let frames = rows.iter().map(|r| r.frame).max().unwrap_or(0) + 1;
        let period = last + if frames > 1 { last / (frames as u64 - 1).max(1) } else { 1_000_000 };
        let start_idx = rows.partition_point(|r| r.ts_ns < self.offset.as_nanos());
        // Past the last row, a trace played once has nothing left to send. A looped trace
        // goes on for one more frame interval (its period), so an offset in that gap starts
        // with the next repetition's first row, at `period − offset`.
        if !self.repeat && start_idx as u64 >= n {
            return Err(AppBuildError::new(
                "offset",
                format!("beyond the end of the trace ({} ms)", last as f64 / 1e6),
            ));
        }
        if self.repeat && self.offset.as_nanos() >= period {
            return Err(AppBuildError::new(
                "offset",
                format!("beyond the end of the looped trace (its period is {} ms)", period as f64 / 1e6),
            ));
        }
        if self.ts_shaping == Dur::ZERO {
            return Err(AppBuildError::new("ts_shaping", "must be above 0 s"));
        }
        if let Some(t) = &self.tfd {
            t.validate().map_err(|(f, r)| AppBuildError::new(f, r))?;
        }
        if let Some(r) = &self.rsvp {
            r.validate().map_err(|(f, r)| AppBuildError::new(f, r))?;
        }
        if let Some(sp) = &self.split {
            sp.validate()?;
            // A connection that owns nothing would be a flow that never sends.
            let from = if self.repeat { 0 } else { start_idx };
            if !rows[from..].iter().any(|r| sp.owns(r.frame)) {
                let gops = (frames + sp.gop as i64 - 1) / sp.gop as i64;
                return Err(AppBuildError::new(
                    "split",
                    format!(
                        "connection {} of {} owns no GOP of the trace from its offset on ({gops} GOPs of {} frames)",
                        sp.index, sp.connections, sp.gop
                    ),
                ));
            }
        }
        if self.pacing == Pacing::Greedy {
            // Greedy sending has no timestamps for these to act on.
            let conflict = [
                ("peak_rate", self.peak_rate.is_some()),
                ("source_jitter", self.source_jitter > Dur::ZERO),
                ("tfd", self.tfd.is_some()),
                ("rsvp", self.rsvp.is_some()),
            ];
            if let Some((key, _)) = conflict.iter().find(|(_, on)| *on) {
                return Err(AppBuildError::new(*key, "cannot be used with pacing = \"greedy\" (it ignores timestamps)"));
            }
        }
        let tfd = self.tfd.clone().map(|c| super::tfd::TfdSender::new(c, rows.clone(), period, self.repeat));
        Ok(VideoSource {
            tfd,
            tfd_maxp: 0,
            rsvp: self.rsvp.clone().map(super::rsvp::RsvpSignaller::new),
            rows,
            max_payload: self.max_payload.map(|m| m as u32),
            repeat: self.repeat,
            period_ns: period,
            offset_ns: self.offset.as_nanos(),
            idx: start_idx,
            cycle: 0,
            t0: SimTime::ZERO,
            sent_pkts: 0,
            sent_nals: 0,
            pacing: self.pacing,
            ts_shaping_ns: self.ts_shaping.as_nanos(),
            jitter_s: self.source_jitter.as_secs_f64(),
            peak_rate: self.peak_rate,
            pending: std::collections::VecDeque::new(),
            last_release: SimTime::ZERO,
            split: self.split.clone(),
            space: Space::INITIAL,
            handed_pkts: 0,
            handed_bytes: 0,
            stream: false,
        })
    }
}

impl VideoConfig {
    /// Refuses the keys that act on datagrams when the video runs over a stream transport:
    /// each names its key (see "Video over TCP" in `docs/models/video.md`).
    fn check_stream(&self) -> Result<(), AppBuildError> {
        let refused = [
            ("max_payload", self.max_payload.is_some(), "the transport cuts the stream into segments itself"),
            ("pacing", self.pacing != Pacing::Burst, "a frame is written whole at its timestamp; the transport paces it"),
            ("ts_shaping", !is_default_ts_shaping(&self.ts_shaping), "it shapes datagrams (pacing = \"ts\")"),
            ("source_jitter", self.source_jitter > Dur::ZERO, "it delays datagrams, and a stream keeps no datagrams"),
            ("peak_rate", self.peak_rate.is_some(), "it spaces datagrams; the transport's window sets the rate"),
            ("tfd", self.tfd.is_some(), "the TFD option rides on video datagrams"),
            ("rsvp", self.rsvp.is_some(), "the RSVP session is the flow's UDP datagrams"),
            ("split", self.split.is_some(), "it splits a video over datagram connections (multi-connection TFRC)"),
        ];
        match refused.iter().find(|(_, on, _)| *on) {
            Some((key, _, why)) => {
                Err(AppBuildError::new(*key, format!("cannot be used over a stream transport (tcp, mptcp): {why}")))
            }
            None => Ok(()),
        }
    }
}

impl BuildApp for VideoConfig {
    fn service(&self) -> Service {
        Service::Datagram
    }
    fn accepts(&self, _service: Service) -> bool {
        true
    }
    fn needs_send_buffer(&self) -> bool {
        self.pacing == Pacing::Greedy
    }
    fn build(&self, base_dir: &Path, cache: &InputCache) -> Result<Box<dyn Application>, AppBuildError> {
        Ok(Box::new(self.build_cached(base_dir, cache)?))
    }
    fn build_on(
        &self,
        base_dir: &Path,
        cache: &InputCache,
        service: Service,
    ) -> Result<Box<dyn Application>, AppBuildError> {
        if service == Service::Stream {
            self.check_stream()?;
        }
        let mut src = self.build_cached(base_dir, cache)?;
        src.stream = service == Service::Stream;
        Ok(Box::new(src))
    }
}

/// The tag of a frame's message over a stream transport: the decode-order frame number plus
/// 10⁹ per repetition of a looped trace (as the datagrams' media tags number frames), so
/// `tag mod 10⁹` is the trace's frame and `tag div 10⁹` the repetition.
pub fn frame_tag(frame: i64, cycle: u64) -> u64 {
    frame as u64 + cycle * FRAMES_PER_CYCLE
}

/// Frame-number stride between repetitions of a looped trace (see [`frame_tag`]).
pub const FRAMES_PER_CYCLE: u64 = 1_000_000_000;

pub struct VideoSource {
    rows: Arc<Vec<NalRow>>,
    max_payload: Option<u32>,
    repeat: bool,
    period_ns: u64,
    offset_ns: u64,
    idx: usize,
    cycle: u64,
    t0: SimTime,
    sent_pkts: u64,
    sent_nals: u64,
    pacing: Pacing,
    /// Chunk length of `Pacing::Ts`, ns.
    ts_shaping_ns: u64,
    /// δ of the source jitter, seconds (0: none).
    jitter_s: f64,
    peak_rate: Option<crate::units::Rate>,
    /// Datagrams not yet released, in release order (release times never decrease).
    pending: std::collections::VecDeque<Pending>,
    last_release: SimTime,
    /// TFD option sender, if configured, and the payload size it counts datagrams with.
    tfd: Option<super::tfd::TfdSender>,
    tfd_maxp: u32,
    /// RSVP sender agent, if configured.
    rsvp: Option<super::rsvp::RsvpSignaller>,
    /// The GOPs this connection sends (none: all).
    split: Option<Split>,
    /// Greedy pacing: the transport's last [`TransportEvent::SendSpace`], and the datagrams
    /// (payload bytes) handed to it so far.
    space: Space,
    handed_pkts: u64,
    handed_bytes: u64,
    /// Over a stream transport: each frame is written as one message (see the module header).
    stream: bool,
}

/// What a [`TransportEvent::SendSpace`] notice said.
#[derive(Copy, Clone, Debug)]
struct Space {
    taken_pkts: u64,
    taken_bytes: u64,
    room_pkts: u64,
    room_bytes: u64,
}

impl Space {
    /// Before any notice: an idle transport takes one datagram (TFRC sends it at once).
    const INITIAL: Space = Space { taken_pkts: 0, taken_bytes: 0, room_pkts: 1, room_bytes: u64::MAX };
}

impl VideoSource {
    /// The media tag and the RTP timestamp (90 kHz, from the clip's start, ms resolution) of
    /// row `r` in the current repetition: frames of the k-th repetition of a looped trace are
    /// numbered frame + k·10⁹ ([`frame_tag`] numbers a stream's messages the same way), so a
    /// receive log keeps repetitions apart while the trace's own numbers stay legible.
    fn stamp(&self, r: &NalRow) -> (MediaTag, u32) {
        let media = MediaTag { frame: frame_tag(r.frame, self.cycle) as i64, nal: r.nal };
        let ts90 = ((self.cycle * self.period_ns + r.ts_ns) / 1_000_000 * 90) as u32;
        (media, ts90)
    }

    /// Send time of row `idx` in the current cycle.
    fn due(&self, idx: usize) -> SimTime {
        let r = &self.rows[idx];
        SimTime(self.t0.0 + (self.cycle * self.period_ns + r.ts_ns).saturating_sub(self.offset_ns))
    }

    /// Over a stream transport: writes each frame due by now as one message of its NAL units'
    /// bytes, tagged with [`frame_tag`], and wakes at the next frame's time.
    fn pump_stream(&mut self, cx: &mut AppCtx) {
        loop {
            if self.idx >= self.rows.len() {
                if !self.repeat {
                    return;
                }
                self.idx = 0;
                self.cycle += 1;
            }
            let due = self.due(self.idx);
            if due > cx.now {
                cx.wake_at(due);
                return;
            }
            // The frame is due at its first row's time and written whole.
            let (first, frame) = (self.idx, self.rows[self.idx].frame);
            let mut bytes = 0u64;
            while self.idx < self.rows.len() && self.rows[self.idx].frame == frame {
                bytes += self.rows[self.idx].size_bytes as u64;
                self.idx += 1;
            }
            self.sent_nals += (self.idx - first) as u64;
            // A frame of empty NAL units has nothing to write (and a message needs a byte).
            if bytes > 0 {
                cx.send_message(bytes, frame_tag(frame, self.cycle));
            }
        }
    }

    fn pump(&mut self, cx: &mut AppCtx) {
        if self.stream {
            return self.pump_stream(cx);
        }
        // RSVP refreshes ride on the source's own wake-ups (at least one per frame while it
        // sends), so a refresh is at most one frame interval late.
        if let Some(a) = self.rsvp.as_mut() {
            a.poll(cx);
        }
        // Leave room for the TFD option in every datagram that may carry it.
        let mtu_payload = cx.max_payload - self.tfd.as_ref().map_or(0, |t| t.room());
        let maxp = self.max_payload.map_or(mtu_payload, |m| m.min(mtu_payload)).max(1);
        self.tfd_maxp = maxp;
        loop {
            if self.idx >= self.rows.len() {
                if !self.repeat {
                    if let Some(a) = self.rsvp.as_mut() {
                        a.stop(cx);
                    }
                    return;
                }
                self.idx = 0;
                self.cycle += 1;
            }
            if !owned(&self.split, &self.rows[self.idx]) {
                self.idx += 1;
                continue;
            }
            let due = self.due(self.idx);
            if due > cx.now {
                if due >= cx.stop {
                    if let Some(a) = self.rsvp.as_mut() {
                        a.stop(cx);
                    }
                }
                cx.wake_at(due);
                return;
            }
            // The rows released together: one NAL, with frame pacing every NAL of the frame
            // that shares this timestamp, with TS pacing every row of the chunk.
            let first = self.idx;
            let mut end = first + 1;
            match self.pacing {
                Pacing::Frame => {
                    let (f, ts) = (self.rows[first].frame, self.rows[first].ts_ns);
                    while end < self.rows.len() && self.rows[end].frame == f && self.rows[end].ts_ns == ts {
                        end += 1;
                    }
                }
                Pacing::Ts => {
                    // Whole frames until their timestamps span the shaping delay (ts.c
                    // MuxStreams: accumulate more than i_shaping_delay of the PCR stream).
                    let until = self.rows[first].ts_ns + self.ts_shaping_ns;
                    while end < self.rows.len() && self.rows[end].ts_ns < until {
                        end += 1;
                    }
                }
                // Greedy pacing never reaches here (`greedy` reads its own rows).
                Pacing::Burst | Pacing::Greedy => {}
            }
            let mut dgrams = Vec::new();
            for r in self.rows[first..end].iter().filter(|r| owned(&self.split, r)) {
                let (media, ts90) = self.stamp(r);
                let mut left = r.size_bytes;
                while left > 0 {
                    let p = left.min(maxp);
                    left -= p;
                    // Marker bit on the last packet of the access unit's last NAL is approximated
                    // by the last packet of each NAL (sufficient for loss accounting).
                    dgrams.push((p, media, ts90, left == 0));
                }
                self.sent_nals += 1;
            }
            // Frame duration: to the next row with a later timestamp, or to the end of the
            // period for the last frame.
            // With TS pacing the next row is the next chunk's first (its timestamp is past the
            // chunk's), so the same rule gives the chunk's span.
            let spread_ns = if matches!(self.pacing, Pacing::Frame | Pacing::Ts) {
                let ts = self.rows[first].ts_ns;
                let next = self.rows[end..].iter().find(|r| r.ts_ns > ts).map_or(self.period_ns, |r| r.ts_ns);
                next.saturating_sub(ts)
            } else {
                0
            };
            let k = dgrams.len() as u64;
            for (m, (p, media, ts90, marker)) in dgrams.into_iter().enumerate() {
                let mut at = due + Dur(spread_ns * m as u64 / k);
                if self.jitter_s > 0.0 {
                    let x = self.jitter_s * cx.rng.normal();
                    if x > 0.0 {
                        at += Dur::from_secs_f64(x);
                    }
                }
                // Order is kept: no datagram leaves before its predecessor (with a peak rate,
                // not before the predecessor's release plus this datagram's time at R; the
                // 40 B are the IP/UDP/RTP headers).
                let gap = match self.peak_rate {
                    Some(r) if self.sent_pkts + self.pending.len() as u64 > 0 => r.tx_time(p as u64 + 40),
                    _ => Dur::ZERO,
                };
                at = at.max(self.last_release + gap);
                self.last_release = at;
                self.pending.push_back(Pending { at, payload: p, media, ts90, marker });
            }
            self.idx = end;
            self.release(cx);
        }
    }

    /// The payload limit of one datagram: `max_payload`, within what the transport takes
    /// (less the room a TFD option needs).
    fn datagram_limit(&mut self, cx: &AppCtx) -> u32 {
        let mtu_payload = cx.max_payload - self.tfd.as_ref().map_or(0, |t| t.room());
        self.max_payload.map_or(mtu_payload, |m| m.min(mtu_payload)).max(1)
    }

    /// Greedy pacing: hands the transport as many datagrams as its send buffer has room for,
    /// in trace order, reading rows as needed.
    fn greedy(&mut self, cx: &mut AppCtx) {
        let maxp = self.datagram_limit(cx);
        while cx.now < cx.stop {
            if self.pending.is_empty() && !self.greedy_next_row(maxp, cx.now) {
                return;
            }
            let payload = self.pending.front().expect("a row was just read").payload;
            // Room now: the last notice's, less what was handed over since it was sent.
            let room_pkts = self.space.room_pkts.saturating_sub(self.handed_pkts - self.space.taken_pkts);
            let room_bytes = self.space.room_bytes.saturating_sub(self.handed_bytes - self.space.taken_bytes);
            if room_pkts == 0 || room_bytes < payload as u64 {
                return;
            }
            let d = self.pending.pop_front().expect("front exists");
            cx.send(d.payload, d.media, d.ts90, d.marker);
            self.handed_pkts += 1;
            self.handed_bytes += d.payload as u64;
            self.sent_pkts += 1;
        }
    }

    /// Greedy pacing: queues the datagrams of the next owned row; false when a trace played
    /// once is exhausted.
    fn greedy_next_row(&mut self, maxp: u32, now: SimTime) -> bool {
        loop {
            if self.idx >= self.rows.len() {
                if !self.repeat {
                    return false;
                }
                self.idx = 0;
                self.cycle += 1;
            }
            let r = self.rows[self.idx].clone();
            self.idx += 1;
            if !owned(&self.split, &r) {
                continue;
            }
            let (media, ts90) = self.stamp(&r);
            let mut left = r.size_bytes;
            while left > 0 {
                let p = left.min(maxp);
                left -= p;
                self.pending.push_back(Pending { at: now, payload: p, media, ts90, marker: left == 0 });
            }
            self.sent_nals += 1;
            return true;
        }
    }

    /// Sends every pending datagram whose release time has come and arms the release timer for
    /// the next one.
    fn release(&mut self, cx: &mut AppCtx) {
        while let Some(d) = self.pending.front() {
            if d.at > cx.now {
                cx.wake_kind_at(RELEASE, d.at);
                return;
            }
            let d = self.pending.pop_front().expect("front exists");
            // The TFD sender describes the trace from this datagram's position on.
            let u = cx.now.0 - self.t0.0 + self.offset_ns;
            match self.tfd.as_mut().and_then(|t| t.option_at(u, self.tfd_maxp)) {
                Some(o) => cx.send_with_tfd(d.payload, d.media, d.ts90, d.marker, o),
                None => cx.send(d.payload, d.media, d.ts90, d.marker),
            }
            self.sent_pkts += 1;
        }
    }
}

/// The source's second timer: the release of the next paced or jittered datagram (its
/// [`WAKE`](super::WAKE) timer reads the next frame of the trace).
const RELEASE: TimerKind = TimerKind(1);

impl Application for VideoSource {
    fn timer_kinds(&self) -> u8 {
        2
    }
    fn subscriptions(&self) -> u32 {
        if self.pacing == Pacing::Greedy {
            notice_mask::SEND_SPACE
        } else {
            0
        }
    }
    fn start(&mut self, cx: &mut AppCtx) {
        self.t0 = cx.now;
        if self.pacing == Pacing::Greedy {
            self.greedy(cx);
        } else {
            self.pump(cx);
        }
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        match ev {
            AppEvent::Transport(TransportEvent::SendSpace { taken_pkts, taken_bytes, room_pkts, room_bytes }) => {
                self.space = Space { taken_pkts, taken_bytes, room_pkts, room_bytes };
                self.greedy(cx);
            }
            AppEvent::Timer(_) if self.pacing == Pacing::Greedy => {}
            AppEvent::Timer(RELEASE) => self.release(cx),
            AppEvent::Timer(_) => self.pump(cx),
            _ => {}
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![("app_nals", self.sent_nals as f64), ("app_datagrams", self.sent_pkts as f64)]
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trace_cache_parses_a_file_once_and_shares_it() {
        let dir = std::env::temp_dir().join(format!("qoelab-trace-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        std::fs::write(&p, "frame,type,size_bytes,ts_ms\n0,I,3000,0\n1,P,1000,40\n").unwrap();
        let cache = InputCache::default();
        let get = |c: &InputCache, p: &Path| c.get("trace", &[p], || read_trace(p));
        let a = get(&cache, &p).unwrap();
        std::fs::write(&p, "frame,type,size_bytes,ts_ms\n0,I,9,0\n").unwrap();
        let b = get(&cache, &p).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "second flow must reuse the first parse");
        assert_eq!(b.len(), 2);
        // A new cache (another scenario build) reads the file as it is now.
        assert_eq!(get(&InputCache::default(), &p).unwrap().len(), 1);
        assert!(get(&InputCache::default(), &dir.join("missing.csv")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    use super::*;
    use std::io::Write;

    fn write(name: &str, body: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("qoelab-video-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    const TRACE: &str = "nal,frame,display,type,size_bytes,ts_ms\n0,0,0,I,3000,0\n1,1,2,P,900,33.3\n2,2,1,B,400,66.7\n";

    #[test]
    fn reads_plain_and_gzipped_traces_identically() {
        let plain = read_trace(&write("t.csv", TRACE.as_bytes())).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(TRACE.as_bytes()).unwrap();
        let zipped = read_trace(&write("t.csv.gz", &gz.finish().unwrap())).unwrap();
        assert_eq!(plain, zipped);
        assert_eq!(plain.len(), 3);
        assert_eq!(plain[1], NalRow { nal: 1, frame: 1, kind: b'P', size_bytes: 900, ts_ns: 33_300_000 });
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = read_trace(&write("bad.csv", b"frame,type,size_bytes,ts_ms\n0,I,100,0\n1,P,-5,33\n")).unwrap_err();
        assert!(e.starts_with("line 3: column `size_bytes`"), "{e}");
        let e = read_trace(&write("dec.csv", b"frame,type,size_bytes,ts_ms\n0,I,100,40\n1,P,50,33\n")).unwrap_err();
        assert!(e.starts_with("line 3: column `ts_ms`: decreases"), "{e}");
        let e = read_trace(&write("nocol.csv", b"frame,size_bytes,ts_ms\n0,100,0\n")).unwrap_err();
        assert!(e.contains("lacks column `type`"), "{e}");
        let e = read_trace(&write("empty.csv", b"frame,type,size_bytes,ts_ms\n")).unwrap_err();
        assert!(e.contains("no rows"), "{e}");
        let e = read_trace(&write("trunc.csv.gz", b"\x1f\x8b\x08\x00garbage")).unwrap_err();
        assert!(e.starts_with("cannot read trace"), "{e}");
    }
}

#[cfg(test)]
mod timing_tests {
    //! `pacing` and `source_jitter`: release times of the datagrams at the source.
    use super::*;
    use crate::app::AppAction;
    use crate::engine::SimRng;

    /// Runs the source to `until_ns`, firing its timers in time order; returns send times (ns).
    fn send_times(cfg_pacing: Pacing, jitter: Dur, peak: Option<&str>, until_ns: u64) -> Vec<u64> {
        let extra = peak.map_or(String::new(), |r| format!("peak_rate = \"{r}\"\n"));
        send_times_cfg(cfg_pacing, jitter, &extra, until_ns).expect("test source builds")
    }

    /// As `send_times`, with `extra` TOML lines in the source's config; the build error if any.
    fn send_times_cfg(cfg_pacing: Pacing, jitter: Dur, extra: &str, until_ns: u64) -> Result<Vec<u64>, String> {
        // Built through the config, so the test does not depend on the source's private fields.
        // One directory per call: tests run in parallel threads of one process.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("qoelab-video-timing-{}-{call}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("t.csv"),
            "nal,frame,type,size_bytes,ts_ms\n0,0,I,4000,0\n1,0,I,2000,0\n2,1,P,1000,40\n",
        )
        .unwrap();
        let pacing = match cfg_pacing {
            Pacing::Burst => "burst",
            Pacing::Frame => "frame",
            Pacing::Ts => "ts",
            Pacing::Greedy => "greedy",
        };
        let cfg: VideoConfig = toml::from_str(&format!(
            "trace = \"t.csv\"\nmax_payload = \"1000B\"\npacing = \"{pacing}\"\nsource_jitter = \"{}ns\"\n{extra}",
            jitter.as_nanos(),
        ))
        .unwrap();
        let mut src = cfg.build(&dir).map_err(|e| format!("{}: {}", e.field, e.reason))?;
        let mut rng = SimRng::stream(1, "test");
        let mut timers: Vec<(SimTime, TimerKind)> = Vec::new();
        let mut sent = Vec::new();
        let mut now = SimTime::ZERO;
        let mut first = true;
        loop {
            let mut actions = Vec::new();
            {
                let mut cx = AppCtx::new(now, SimTime(until_ns), 1400, &mut rng, &mut actions);
                if first {
                    src.start(&mut cx);
                    first = false;
                } else {
                    timers.sort();
                    let (_, k) = timers.remove(0);
                    src.on_event(AppEvent::Timer(k), &mut cx);
                }
            }
            for a in actions {
                match a {
                    AppAction::Datagram(_) => sent.push(now.0),
                    AppAction::SetTimer { kind, at } => {
                        timers.retain(|(_, k)| *k != kind);
                        timers.push((at, kind));
                    }
                    _ => {}
                }
            }
            timers.sort();
            match timers.first() {
                Some((t, _)) => now = *t,
                None => break,
            }
        }
        Ok(sent)
    }

    #[test]
    fn a_looped_trace_accepts_offsets_up_to_its_period() {
        // Rows: frame 0 (6 datagrams) at 0 ms, frame 1 (1 datagram) at 40 ms; period 80 ms.
        const MS: u64 = 1_000_000;
        let run = |extra: &str| send_times_cfg(Pacing::Burst, Dur::ZERO, extra, 110 * MS);
        let six = |t: u64| vec![t * MS; 6];
        let from_zero = [six(0), vec![40 * MS], six(80)].concat();
        assert_eq!(run("loop = true").unwrap(), from_zero);
        // At the last row: it is sent first, then the next repetition.
        assert_eq!(run("loop = true\noffset = \"40ms\"").unwrap(), [vec![0], six(40), vec![80 * MS]].concat());
        // Between the last row and the period: the next repetition starts at 80 − 60 ms.
        assert_eq!(run("loop = true\noffset = \"60ms\"").unwrap(), [six(20), vec![60 * MS], six(100)].concat());
        let e = run("loop = true\noffset = \"80ms\"").unwrap_err();
        assert!(e.contains("offset") && e.contains("period is 80 ms"), "{e}");
        // Played once, nothing is left after the last row.
        let e = run("offset = \"60ms\"").unwrap_err();
        assert!(e.contains("offset") && e.contains("beyond the end of the trace (40 ms)"), "{e}");
        assert_eq!(run("offset = \"40ms\"").unwrap(), vec![0]);
    }

    #[test]
    fn burst_sends_a_frame_back_to_back() {
        assert_eq!(send_times(Pacing::Burst, Dur::ZERO, None, 1_000_000_000), vec![0, 0, 0, 0, 0, 0, 40_000_000]);
    }

    #[test]
    fn frame_pacing_spreads_datagrams_over_the_frame() {
        // Frame 0: 6 datagrams over 40 ms; frame 1: 1 datagram over the rest of the period.
        let t = send_times(Pacing::Frame, Dur::ZERO, None, 1_000_000_000);
        assert_eq!(t, vec![0, 6_666_666, 13_333_333, 20_000_000, 26_666_666, 33_333_333, 40_000_000]);
    }

    #[test]
    fn ts_pacing_sends_each_shaping_chunk_at_its_own_constant_rate() {
        // Trace: frame 0 (6 datagrams) at 0 ms, frame 1 (1 datagram) at 40 ms; period 80 ms.
        const MS: u64 = 1_000_000;
        let run = |extra: &str| send_times_cfg(Pacing::Ts, Dur::ZERO, extra, 170 * MS).unwrap();
        // Default 200 ms: the whole trace is one chunk (its span is the period, 80 ms), so its
        // 7 datagrams leave 80/7 ms apart — unlike frame pacing, which sends frame 0's six in
        // its own 40 ms and frame 1's one datagram alone.
        let one_chunk: Vec<u64> = (0..7).map(|m| 80 * MS * m / 7).collect();
        assert_eq!(run("loop = true")[..7], one_chunk[..]);
        // The next repetition is the next chunk, starting at the period.
        assert_eq!(run("loop = true")[7..14], one_chunk.iter().map(|t| t + 80 * MS).collect::<Vec<_>>()[..]);
        // A 40-ms chunk holds one frame: the same as frame pacing.
        let frame = send_times(Pacing::Frame, Dur::ZERO, None, 1_000_000_000);
        assert_eq!(run("ts_shaping = \"40ms\""), frame);
        let e = send_times_cfg(Pacing::Ts, Dur::ZERO, "ts_shaping = \"0ms\"", MS).unwrap_err();
        assert!(e.starts_with("ts_shaping: must be above 0"), "{e}");
    }

    #[test]
    fn source_jitter_delays_but_keeps_order() {
        let base = send_times(Pacing::Frame, Dur::ZERO, None, 1_000_000_000);
        let j = send_times(Pacing::Frame, Dur::from_millis(5), None, 1_000_000_000);
        assert_eq!(j.len(), base.len());
        assert!(j.windows(2).all(|w| w[0] <= w[1]), "order kept: {j:?}");
        assert!(j.iter().zip(&base).all(|(a, b)| a >= b), "never earlier than nominal");
        assert_ne!(j, base, "some datagram was delayed");
    }

    #[test]
    fn peak_rate_spaces_datagrams() {
        // 1040 B (1000 B payload + 40 B headers) at 8.32 Mbit/s = 1 ms apart.
        let t = send_times(Pacing::Burst, Dur::ZERO, Some("8.32Mbps"), 1_000_000_000);
        assert_eq!(t, vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000, 40_000_000]);
    }
}
