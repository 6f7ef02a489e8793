//! A row of a video trace: one NAL unit, as the trace-driven source ([`super::video`]) reads it
//! and the TFD sender ([`super::tfd`]) describes it. Its own file so that neither of them
//! depends on the other for it.

/// One NAL unit of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct NalRow {
    /// NAL-unit index in the trace.
    pub nal: i64,
    /// Decode-order frame number.
    pub frame: i64,
    /// Frame type (`b'I'`, `b'P'`, `b'B'`).
    pub kind: u8,
    pub size_bytes: u32,
    /// Time stamp of its frame, ns from the start of the clip.
    pub ts_ns: u64,
}

/// Largest trace a reader accepts, after decompression: 256 MiB of text (about eight million
/// NAL units, hours of HD video). A `.gz` file is decompressed only up to this size, so a small
/// compressed file cannot expand without bound.
pub const MAX_TRACE_BYTES: u64 = 256 << 20;

/// Largest `ts_ms`: 2^62 ns (146 years), the time range of scenarios.
const MAX_TS_MS: f64 = (1u64 << 62) as f64 / 1e6;

/// The columns a trace header may name, in the canonical order `qoelab video encode` writes.
pub const TRACE_COLUMNS: [&str; 6] = ["nal", "frame", "display", "type", "size_bytes", "ts_ms"];

/// A parsed, validated trace as columns, one entry per NAL unit in file order: what both the
/// simulator's video source and the Python front end (`qoelab.video.traces.trace`) read. The grammar
/// is written down in `docs/models/video.md` ("Trace grammar"); this is its only reader.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceTable {
    pub nal: Vec<i64>,
    pub frame: Vec<i64>,
    /// Display-order number of the row's frame (the frame number when the column is absent).
    pub display: Vec<i64>,
    /// `b'I'`, `b'P'`, `b'B'` or `b'X'`.
    pub kind: Vec<u8>,
    pub size_bytes: Vec<u32>,
    /// As written, in ms.
    pub ts_ms: Vec<f64>,
}

impl TraceTable {
    /// The rows the video source streams (timestamps rounded to the nanosecond).
    pub fn rows(&self) -> Vec<NalRow> {
        (0..self.nal.len())
            .map(|i| NalRow {
                nal: self.nal[i],
                frame: self.frame[i],
                kind: self.kind[i],
                size_bytes: self.size_bytes[i],
                ts_ns: (self.ts_ms[i] * 1e6).round() as u64,
            })
            .collect()
    }
}

/// Reads and validates a trace file (`.gz`: gzip, every member). Errors name the line and
/// column and never quote the file's text (a trace path may point at any file).
pub fn read_trace_table(path: &std::path::Path) -> Result<TraceTable, String> {
    parse_trace(&read_capped(path, "trace", MAX_TRACE_BYTES)?)
}

/// The bytes of the `what` file at `path` (`.gz`: gzip, every member, decompressed), at most
/// `max` of them. Errors read `cannot read <what>: <reason>` without the OS's decoration (the
/// caller names the path) and never quote the file.
pub(crate) fn read_capped(path: &std::path::Path, what: &str, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {what}: {}", io_reason(&e)))?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("cannot read {what}: is a directory"));
    }
    let input: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(file))
    } else {
        Box::new(file)
    };
    let mut text = Vec::new();
    input.take(max + 1).read_to_end(&mut text).map_err(|e| format!("cannot read {what}: {}", io_reason(&e)))?;
    if text.len() as u64 > max {
        return Err(format!("{what} is larger than {} MiB (decompressed)", max >> 20));
    }
    Ok(text)
}

/// An I/O error's reason without the OS's decoration (the path is named by the caller).
fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData => "not a valid gzip file".into(),
        std::io::ErrorKind::UnexpectedEof => "truncated gzip data".into(),
        _ => e.kind().to_string(),
    }
}

const HEADER_RULE: &str =
    "line 1: header must name frame, type, size_bytes and ts_ms, optionally nal and display, each once";

/// Parses trace text (see [`TraceTable`] and the grammar in `docs/models/video.md`).
pub fn parse_trace(text: &[u8]) -> Result<TraceTable, String> {
    if text.is_empty() {
        return Err("empty trace".into());
    }
    // ASCII text only: a binary file fails here, before any of it could be quoted.
    if let Some(at) = text.iter().position(|&b| !(b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b)))
    {
        let line = text[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(format!("line {line}: not ASCII text"));
    }
    let text = std::str::from_utf8(text).expect("checked ASCII above");
    let Some(body) = text.strip_suffix('\n') else {
        let n = text.matches('\n').count() + 1;
        return Err(format!("line {n}: truncated trace (last line has no newline)"));
    };
    let mut lines = body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let mut at = [usize::MAX; 6];
    for (k, name) in header.iter().enumerate() {
        let Some(c) = TRACE_COLUMNS.iter().position(|n| n == name) else {
            return Err(format!("{HEADER_RULE}: column {} is none of them", k + 1));
        };
        if at[c] != usize::MAX {
            return Err(format!("{HEADER_RULE}: column `{}` is named twice", TRACE_COLUMNS[c]));
        }
        at[c] = k;
    }
    let [c_nal, c_frame, c_display, c_type, c_size, c_ts] = at;
    for (c, name) in [(c_frame, "frame"), (c_type, "type"), (c_size, "size_bytes"), (c_ts, "ts_ms")] {
        if c == usize::MAX {
            return Err(format!("{HEADER_RULE}: it lacks column `{name}`"));
        }
    }
    let mut t = TraceTable::default();
    // First row of the current frame, and whether the frame has a slice yet (and its type).
    let mut frame_first = 0usize;
    let mut frame_slice: Option<u8> = None;
    for (i, line) in lines.enumerate() {
        let ln = i + 2;
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != header.len() {
            return Err(format!("line {ln}: expected {} fields, got {}", header.len(), fields.len()));
        }
        let int = |c: usize, name: &str| -> Result<i64, String> {
            parse_int(fields[c]).ok_or_else(|| format!("line {ln}: column `{name}`: expected an integer"))
        };
        let nal = if c_nal == usize::MAX { i as i64 } else { int(c_nal, "nal")? };
        if nal != i as i64 {
            return Err(format!("line {ln}: column `nal`: must be the running index {i}, got {nal}"));
        }
        let frame = int(c_frame, "frame")?;
        let size = int(c_size, "size_bytes")?;
        if !(1..=u32::MAX as i64).contains(&size) {
            return Err(format!("line {ln}: column `size_bytes`: must be within 1..=4294967295, got {size}"));
        }
        let ts = parse_decimal(fields[c_ts]).ok_or_else(|| format!("line {ln}: column `ts_ms`: expected a number"))?;
        if !(0.0..=MAX_TS_MS).contains(&ts) {
            return Err(format!("line {ln}: column `ts_ms`: must be within 0..=2^62 ns, got {ts}"));
        }
        let kind = match fields[c_type] {
            "I" => b'I',
            "P" => b'P',
            "B" => b'B',
            "X" => b'X',
            _ => return Err(format!("line {ln}: column `type`: must be one of I, P, B, X")),
        };
        let display = if c_display == usize::MAX { frame } else { int(c_display, "display")? };
        match t.frame.last().copied() {
            None if frame != 0 => {
                return Err(format!("line {ln}: column `frame`: the first frame must be 0, got {frame}"))
            }
            None => {}
            Some(prev) if frame == prev => {
                if display != t.display[i - 1] {
                    return Err(format!("line {ln}: column `display`: differs within frame {frame}"));
                }
                if ts != t.ts_ms[i - 1] {
                    return Err(format!("line {ln}: column `ts_ms`: differs within frame {frame}"));
                }
            }
            Some(prev) if frame == prev + 1 => {
                if frame_slice.is_none() {
                    return Err(format!("line {}: frame {prev} has no slice (I, P or B row)", frame_first + 2));
                }
                if ts < t.ts_ms[i - 1] {
                    return Err(format!("line {ln}: column `ts_ms`: decreases from frame {prev} to frame {frame}"));
                }
                frame_first = i;
                frame_slice = None;
            }
            Some(prev) => {
                return Err(format!("line {ln}: column `frame`: must count up by 0 or 1, got {prev} then {frame}"));
            }
        }
        if kind != b'X' {
            match frame_slice {
                Some(k) if k != kind => {
                    return Err(format!("line {ln}: column `type`: frame {frame} mixes slice types"))
                }
                _ => frame_slice = Some(kind),
            }
        }
        t.nal.push(nal);
        t.frame.push(frame);
        t.display.push(display);
        t.kind.push(kind);
        t.size_bytes.push(size as u32);
        t.ts_ms.push(ts);
    }
    let Some(&last) = t.frame.last() else {
        return Err("trace has no rows".into());
    };
    if frame_slice.is_none() {
        return Err(format!("line {}: frame {last} has no slice (I, P or B row)", frame_first + 2));
    }
    // Display numbers: a permutation of the frame numbers.
    let n_frames = last as usize + 1;
    let mut seen = vec![false; n_frames];
    for (i, (&f, &d)) in t.frame.iter().zip(&t.display).enumerate() {
        if i > 0 && t.frame[i - 1] == f {
            continue;
        }
        if d < 0 || d as usize >= n_frames || std::mem::replace(&mut seen[d as usize], true) {
            return Err(format!(
                "line {}: column `display`: display numbers must be a permutation of 0..={last}, got {d} for frame {f}",
                i + 2
            ));
        }
    }
    Ok(t)
}

/// An integer: an optional `-` and 1 to 18 ASCII digits (nothing else: no `+`, `_` or spaces
/// inside).
fn parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A decimal number: an optional `-`, digits with an optional fraction (`12`, `12.5`, `.5`,
/// `12.`), and an optional exponent (`e3`, `E-2`). Not `nan`, `inf`, `+1` or hex.
fn parse_decimal(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - f;
    }
    if digits == 0 || digits > 40 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        let e = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e || i - e > 4 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}
