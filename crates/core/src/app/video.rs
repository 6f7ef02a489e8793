//! Video from a frame/NAL trace over RTP (or plain UDP).
//!
//! The trace is a CSV file (optionally gzipped, `.csv.gz`), one row per NAL unit (slice) in decode order, with header columns
//! `frame,type,size_bytes,ts_ms` and optionally `nal` and `display` (the format written by
//! `qoelab video encode`). Each row is sent at `ts_ms` after the flow's start as
//! ⌈size / max_payload⌉ datagrams, back to back; RTP timestamps are `ts_ms · 90` (90 kHz).
//! With `loop = true` the trace repeats, shifted by its duration, until the flow stops.

use super::{AppBuildError, AppCtx, AppEvent, Application};
use crate::packet::MediaTag;
use crate::time::{Dur, SimTime};
use crate::units::serde_units;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `kind = "video"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoConfig {
    /// Path of the trace CSV (relative to the scenario file).
    pub trace: PathBuf,
    /// Largest payload per datagram; default: what the MTU allows.
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub max_payload: Option<u64>,
    /// Repeat the trace until the flow stops (default false).
    #[serde(default, rename = "loop")]
    pub repeat: bool,
    /// Start this far into the trace (default 0 s).
    #[serde(default, with = "serde_units::time")]
    pub offset: Dur,
}

/// One NAL unit of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct NalRow {
    pub nal: i64,
    pub frame: i64,
    pub kind: u8,
    pub size_bytes: u32,
    pub ts_ns: u64,
}

/// Reads a trace; errors name the file, line and column.
pub fn read_trace(path: &Path) -> Result<Vec<NalRow>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read trace: {e}"))?;
    // `.gz` traces are decompressed on the fly (bundled HD traces are stored gzipped).
    let input: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut rd = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(input);
    let headers = rd.headers().map_err(|e| format!("malformed trace header: {e}"))?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let need = |name: &str| col(name).ok_or_else(|| format!("trace lacks column `{name}` (has: {})", headers.iter().collect::<Vec<_>>().join(",")));
    let (c_frame, c_type, c_size, c_ts) = (need("frame")?, need("type")?, need("size_bytes")?, need("ts_ms")?);
    let c_nal = col("nal");
    let mut rows = Vec::new();
    for (i, rec) in rd.records().enumerate() {
        let line = i + 2;
        let rec = rec.map_err(|e| format!("line {line}: malformed row: {e}"))?;
        let field = |c: usize, name: &str| rec.get(c).ok_or_else(|| format!("line {line}: missing column `{name}`"));
        let int = |c: usize, name: &str| -> Result<i64, String> {
            let v = field(c, name)?;
            v.parse::<i64>().map_err(|_| format!("line {line}: column `{name}`: expected an integer, got {v:?}"))
        };
        let frame = int(c_frame, "frame")?;
        let size = int(c_size, "size_bytes")?;
        if size <= 0 || size > u32::MAX as i64 {
            return Err(format!("line {line}: column `size_bytes`: must be positive, got {size}"));
        }
        let ts_s = field(c_ts, "ts_ms")?;
        let ts: f64 = ts_s.parse().map_err(|_| format!("line {line}: column `ts_ms`: expected a number, got {ts_s:?}"))?;
        if !ts.is_finite() || ts < 0.0 {
            return Err(format!("line {line}: column `ts_ms`: must be a non-negative number, got {ts_s:?}"));
        }
        let t = field(c_type, "type")?;
        let kind = match t {
            "I" | "P" | "B" | "X" => t.as_bytes()[0],
            _ => return Err(format!("line {line}: column `type`: expected I, P, B or X, got {t:?}")),
        };
        let nal = match c_nal {
            Some(c) => int(c, "nal")?,
            None => rows.len() as i64,
        };
        let ts_ns = (ts * 1e6).round() as u64;
        if let Some(prev) = rows.last() {
            let prev: &NalRow = prev;
            if ts_ns < prev.ts_ns {
                return Err(format!("line {line}: column `ts_ms`: timestamps must not decrease ({ts} after {} ms)", prev.ts_ns as f64 / 1e6));
            }
        }
        rows.push(NalRow { nal, frame, kind, size_bytes: size as u32, ts_ns });
    }
    if rows.is_empty() {
        return Err("trace has no rows".into());
    }
    Ok(rows)
}

impl VideoConfig {
    pub fn build(&self, base_dir: &Path) -> Result<VideoSource, AppBuildError> {
        let path = base_dir.join(&self.trace);
        let rows = read_trace(&path).map_err(|e| AppBuildError::new("trace", format!("{}: {e}", path.display())))?;
        if self.max_payload == Some(0) {
            return Err(AppBuildError::new("max_payload", "must be at least 1 byte"));
        }
        let last = rows.last().expect("read_trace rejects empty traces").ts_ns;
        let n = rows.len() as u64;
        // Period of a looped trace: last timestamp plus one mean frame interval.
        let frames = rows.iter().map(|r| r.frame).max().unwrap_or(0) + 1;
        let period = last + if frames > 1 { last / (frames as u64 - 1).max(1) } else { 1_000_000 };
        let start_idx = rows.partition_point(|r| r.ts_ns < self.offset.as_nanos());
        if start_idx as u64 >= n {
            return Err(AppBuildError::new("offset", format!("beyond the end of the trace ({} ms)", last as f64 / 1e6)));
        }
        Ok(VideoSource {
            rows: Arc::new(rows),
            max_payload: self.max_payload.map(|m| m as u32),
            repeat: self.repeat,
            period_ns: period,
            offset_ns: self.offset.as_nanos(),
            idx: start_idx,
            cycle: 0,
            t0: SimTime::ZERO,
            sent_pkts: 0,
            sent_nals: 0,
        })
    }
}

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
}

impl VideoSource {
    /// Send time of row `idx` in the current cycle.
    fn due(&self, idx: usize) -> SimTime {
        let r = &self.rows[idx];
        SimTime(self.t0.0 + (self.cycle * self.period_ns + r.ts_ns).saturating_sub(self.offset_ns))
    }

    fn pump(&mut self, cx: &mut AppCtx) {
        let mtu_payload = cx.max_payload;
        let maxp = self.max_payload.map_or(mtu_payload, |m| m.min(mtu_payload)).max(1);
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
            let r = &self.rows[self.idx];
            let media = MediaTag { frame: r.frame + (self.cycle as i64) * 1_000_000_000, nal: r.nal };
            let ts90 = ((self.cycle * self.period_ns + r.ts_ns) / 1_000_000 * 90) as u32;
            let mut left = r.size_bytes;
            while left > 0 {
                let p = left.min(maxp);
                left -= p;
                // Marker bit on the last packet of the access unit's last NAL is approximated by
                // the last packet of each NAL (sufficient for loss accounting).
                cx.send(p, media, ts90, left == 0);
                self.sent_pkts += 1;
            }
            self.sent_nals += 1;
            self.idx += 1;
        }
    }
}

impl Application for VideoSource {
    fn start(&mut self, cx: &mut AppCtx) {
        self.t0 = cx.now;
        self.pump(cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if let AppEvent::Timer(_) = ev {
            self.pump(cx);
        }
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        vec![("app_nals", self.sent_nals as f64), ("app_datagrams", self.sent_pkts as f64)]
    }
}

#[cfg(test)]
mod tests {
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
        assert!(e.contains("must not decrease"), "{e}");
        let e = read_trace(&write("nocol.csv", b"frame,size_bytes,ts_ms\n0,100,0\n")).unwrap_err();
        assert!(e.contains("lacks column `type`"), "{e}");
        let e = read_trace(&write("empty.csv", b"frame,type,size_bytes,ts_ms\n")).unwrap_err();
        assert!(e.contains("no rows"), "{e}");
        let e = read_trace(&write("trunc.csv.gz", b"\x1f\x8b\x08\x00garbage")).unwrap_err();
        assert!(e.starts_with("malformed trace header"), "{e}");
    }
}
