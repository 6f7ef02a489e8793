//! The DASH player's content: the representations and segment durations of a static MPD
//! (ISO/IEC 23009-1), and each segment's size in each representation from the ladder's
//! segments table (`data/traces/dash_hevc.segments.csv`, written by `qoelab video dash`).
//!
//! An MPD names its media by template and states each representation's `@bandwidth`, but not
//! the sizes of the segments: those come from the CSV, rows
//! `representation, segment_s, segment, duration_s, size_bytes` (other columns ignored) for the
//! MPD's segment length. The MPD is read with `quick-xml`'s serde deserializer; the CSV with
//! `csv`. Supported: one `Period` with one `AdaptationSet` carrying a `SegmentTemplate` with
//! `@duration` (number-based addressing, as `qoelab video dash` writes it). Not supported:
//! `SegmentTimeline`, several periods or adaptation sets (audio), representation-level
//! templates, dynamic (live) MPDs. Errors name the element or row and never quote the file.

use serde::Deserialize;
use std::path::Path;

/// Largest MPD or segments file read (a path may point at any file).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// One representation (rung) of the ladder.
#[derive(Clone, Debug, PartialEq)]
pub struct Rung {
    /// `Representation@id`.
    pub id: String,
    /// `Representation@bandwidth`, bits/s: what the ABR policies compare.
    pub bandwidth_bps: u64,
    /// Size of each segment in this representation, bytes (segment `k` is `sizes[k]`).
    pub sizes: Vec<u64>,
}

/// The content a player fetches: rungs in ascending `@bandwidth` and the segment durations
/// they share.
#[derive(Clone, Debug, PartialEq)]
pub struct Ladder {
    pub rungs: Vec<Rung>,
    /// Media duration of each segment, ns (the last may be shorter).
    pub durations_ns: Vec<u64>,
    /// The template's nominal segment duration, ns (`@duration / @timescale`).
    pub segment_ns: u64,
}

impl Ladder {
    /// Number of segments in one pass of the content.
    pub fn segments(&self) -> usize {
        self.durations_ns.len()
    }
    /// The declared bitrates, ascending, bits/s.
    pub fn bitrates_bps(&self) -> Vec<f64> {
        self.rungs.iter().map(|r| r.bandwidth_bps as f64).collect()
    }
    /// Each rung's mean rate over one pass, bits/s: its segments' bytes × 8 over the content's
    /// duration (GPAC MP4Box's `@bandwidth`, `file_size · 8 / file_duration`).
    pub fn mean_bitrates_bps(&self) -> Vec<f64> {
        let secs = self.durations_ns.iter().sum::<u64>() as f64 * 1e-9;
        self.rungs.iter().map(|r| r.sizes.iter().sum::<u64>() as f64 * 8.0 / secs.max(1e-9)).collect()
    }
}

#[derive(Deserialize)]
struct Mpd {
    #[serde(rename = "@type", default)]
    kind: Option<String>,
    #[serde(rename = "@mediaPresentationDuration", default)]
    duration: Option<String>,
    #[serde(rename = "Period", default)]
    periods: Vec<Period>,
}

#[derive(Deserialize)]
struct Period {
    #[serde(rename = "AdaptationSet", default)]
    sets: Vec<AdaptationSet>,
}

#[derive(Deserialize)]
struct AdaptationSet {
    #[serde(rename = "SegmentTemplate", default)]
    template: Option<SegmentTemplate>,
    #[serde(rename = "Representation", default)]
    reps: Vec<Representation>,
}

#[derive(Deserialize)]
struct SegmentTemplate {
    #[serde(rename = "@timescale", default)]
    timescale: Option<u64>,
    #[serde(rename = "@duration", default)]
    duration: Option<u64>,
    #[serde(rename = "SegmentTimeline", default)]
    timeline: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Representation {
    #[serde(rename = "@id")]
    id: String,
    #[serde(rename = "@bandwidth")]
    bandwidth: u64,
    #[serde(rename = "SegmentTemplate", default)]
    template: Option<serde::de::IgnoredAny>,
}

/// One row of the segments table.
#[derive(Deserialize)]
struct SegmentRow {
    representation: String,
    segment_s: f64,
    segment: u64,
    duration_s: f64,
    size_bytes: u64,
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "cannot read: no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "cannot read: permission denied".to_string(),
        k => format!("cannot read: {k}"),
    })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err("cannot read: is a directory".into());
    }
    let mut text = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut text).map_err(|e| format!("cannot read: {}", e.kind()))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    Ok(text)
}

/// Parses an ISO 8601 duration of the form MPDs use (`PT1H2M3.5S`, `P1DT…`), in ns.
fn parse_iso_duration(s: &str) -> Option<u64> {
    let rest = s.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut secs = 0.0f64;
    let mut take = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut num = String::new();
        let mut at = 0;
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                num.push(c);
                continue;
            }
            // Units must come in order, each at most once.
            let k = units.iter().skip(at).position(|(u, _)| *u == c)? + at;
            let v: f64 = num.parse().ok()?;
            secs += v * units[k].1;
            num.clear();
            at = k + 1;
        }
        num.is_empty().then_some(())
    };
    take(date, &[('D', 86_400.0)])?;
    if let Some(t) = time {
        if t.is_empty() {
            return None;
        }
        take(t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    (secs.is_finite() && secs > 0.0).then(|| (secs * 1e9).round() as u64)
}

/// Which input of [`read_ladder`] an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LadderFile {
    /// The MPD.
    Mpd,
    /// The segments table.
    Segments,
}

/// An error of [`read_ladder`]: the file at fault, and a message
/// `"<file>: <element or row>: <reason>"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LadderError {
    pub file: LadderFile,
    pub message: String,
}

impl std::fmt::Display for LadderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Reads the MPD at `mpd` and the segments table at `segments` into a [`Ladder`]. A size
/// missing for one of the MPD's representations is the segments table's fault.
pub fn read_ladder(mpd: &Path, segments: &Path) -> Result<Ladder, LadderError> {
    let err = |file| move |message| LadderError { file, message };
    let (mut rungs, durations_ns, segment_ns) = read_mpd(mpd).map_err(err(LadderFile::Mpd))?;
    fill_sizes(segments, &mut rungs, &durations_ns, segment_ns).map_err(err(LadderFile::Segments))?;
    rungs.sort_by_key(|r| r.bandwidth_bps);
    Ok(Ladder { rungs, durations_ns, segment_ns })
}

/// The MPD's representations (sizes unknown: `u64::MAX`), its segments' durations and the
/// template's segment length.
fn read_mpd(mpd: &Path) -> Result<(Vec<Rung>, Vec<u64>, u64), String> {
    let mpd_name = mpd.display();
    let text = read_capped(mpd).map_err(|e| format!("{mpd_name}: {e}"))?;
    let text = std::str::from_utf8(&text).map_err(|_| format!("{mpd_name}: not UTF-8 text"))?;
    let mut de = quick_xml::de::Deserializer::from_str(text);
    let doc: Mpd = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string().replace(".@", "@");
        let reason = match e.inner() {
            quick_xml::DeError::Custom(m) => m.clone(),
            other => format!("not a valid MPD ({})", short(&other.to_string())),
        };
        if path == "." || path.is_empty() {
            format!("{mpd_name}: MPD: {reason}")
        } else {
            format!("{mpd_name}: MPD/{}: {reason}", path.replace('.', "/"))
        }
    })?;
    let el = |p: &str, why: &str| format!("{mpd_name}: {p}: {why}");
    if doc.kind.as_deref().is_some_and(|t| t != "static") {
        return Err(el("MPD@type", "only static MPDs are supported"));
    }
    let Some(dur) = doc.duration.as_deref() else {
        return Err(el("MPD@mediaPresentationDuration", "missing"));
    };
    let total_ns = parse_iso_duration(dur)
        .ok_or_else(|| el("MPD@mediaPresentationDuration", "expected a positive ISO 8601 duration like PT30S"))?;
    let [period] = &doc.periods[..] else {
        return Err(el("MPD/Period", &format!("expected exactly one, found {}", doc.periods.len())));
    };
    let [set] = &period.sets[..] else {
        return Err(el("MPD/Period/AdaptationSet", &format!("expected exactly one, found {}", period.sets.len())));
    };
    let tpath = "MPD/Period/AdaptationSet/SegmentTemplate";
    let Some(t) = &set.template else {
        return Err(el(tpath, "missing (segments are addressed by an AdaptationSet-level template)"));
    };
    if t.timeline.is_some() {
        return Err(el(&format!("{tpath}/SegmentTimeline"), "not supported (use @duration)"));
    }
    let timescale = t.timescale.unwrap_or(1);
    if timescale == 0 {
        return Err(el(&format!("{tpath}@timescale"), "must be positive"));
    }
    let Some(d) = t.duration.filter(|&d| d > 0) else {
        return Err(el(&format!("{tpath}@duration"), "missing or zero"));
    };
    let segment_ns = (d as u128 * 1_000_000_000 / timescale as u128) as u64;
    if segment_ns == 0 {
        return Err(el(&format!("{tpath}@duration"), "shorter than 1 ns"));
    }
    if set.reps.is_empty() {
        return Err(el("MPD/Period/AdaptationSet/Representation", "none"));
    }
    let n = total_ns.div_ceil(segment_ns) as usize;
    let durations_ns: Vec<u64> = (0..n as u64).map(|k| segment_ns.min(total_ns - k * segment_ns)).collect();
    let mut rungs = Vec::with_capacity(set.reps.len());
    for (i, r) in set.reps.iter().enumerate() {
        let p = format!("MPD/Period/AdaptationSet/Representation[{i}]");
        if r.template.is_some() {
            return Err(el(&format!("{p}/SegmentTemplate"), "not supported (one template per AdaptationSet)"));
        }
        if r.bandwidth == 0 {
            return Err(el(&format!("{p}@bandwidth"), "must be positive"));
        }
        if rungs.iter().any(|q: &Rung| q.id == r.id) {
            return Err(el(&format!("{p}@id"), "used twice"));
        }
        rungs.push(Rung { id: r.id.clone(), bandwidth_bps: r.bandwidth, sizes: vec![u64::MAX; n] });
    }
    Ok((rungs, durations_ns, segment_ns))
}

/// Reads each rung's segment sizes for this MPD's segment length from the segments table.
fn fill_sizes(segments: &Path, rungs: &mut [Rung], durations_ns: &[u64], segment_ns: u64) -> Result<(), String> {
    let n = durations_ns.len();
    let seg_name = segments.display();
    let text = read_capped(segments).map_err(|e| format!("{seg_name}: {e}"))?;
    let mut rdr = csv::Reader::from_reader(&text[..]);
    let seg_s = segment_ns as f64 * 1e-9;
    for (k, row) in rdr.deserialize::<SegmentRow>().enumerate() {
        let line = k + 2;
        let row = row.map_err(|e| {
            let why = match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                    Some(f) => format!("column {}: {}", f + 1, short(&err.kind().to_string())),
                    None => short(&err.kind().to_string()),
                },
                csv::ErrorKind::UnequalLengths { .. } => "wrong number of columns".into(),
                csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".into(),
                _ => "unreadable row".into(),
            };
            format!("{seg_name}: line {line}: {why}")
        })?;
        if (row.segment_s - seg_s).abs() > 1e-6 {
            continue;
        }
        let Some(rung) = rungs.iter_mut().find(|r| r.id == row.representation) else { continue };
        let Some(slot) = rung.sizes.get_mut(row.segment as usize) else {
            return Err(format!(
                "{seg_name}: line {line}: segment {} is beyond the MPD's {n} segments of {seg_s} s",
                row.segment
            ));
        };
        if *slot != u64::MAX {
            return Err(format!("{seg_name}: line {line}: segment {} of {} listed twice", row.segment, rung.id));
        }
        if row.size_bytes == 0 {
            return Err(format!("{seg_name}: line {line}: size_bytes must be positive"));
        }
        let want = durations_ns[row.segment as usize] as f64 * 1e-9;
        if (row.duration_s - want).abs() > 1e-3 {
            return Err(format!(
                "{seg_name}: line {line}: duration_s {} disagrees with the MPD ({want} s)",
                row.duration_s
            ));
        }
        *slot = row.size_bytes;
    }
    for r in rungs.iter() {
        if let Some(k) = r.sizes.iter().position(|&s| s == u64::MAX) {
            return Err(format!("{seg_name}: no size for segment {k} of representation {} at {seg_s} s", r.id));
        }
    }
    Ok(())
}

/// The first line of a library's message, at most 120 characters (never the file's text:
/// neither library quotes input in these messages).
fn short(s: &str) -> String {
    s.lines().next().unwrap_or("").chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces").join(name)
    }

    #[test]
    fn reads_the_bundled_ladder() {
        let l = read_ladder(&bundled("dash_hevc_6s.mpd"), &bundled("dash_hevc.segments.csv")).unwrap();
        assert_eq!(l.segments(), 30);
        assert_eq!(l.segment_ns, 6_000_000_000);
        let ids: Vec<&str> = l.rungs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["720p_2M", "1080p_6M", "2160p_20M"]);
        // The recipe's totals (data/traces/dash_hevc.recipe.toml, expected.representations).
        let totals: Vec<u64> = l.rungs.iter().map(|r| r.sizes.iter().sum()).collect();
        assert_eq!(totals, [45_502_704, 136_065_650, 453_335_894]);
        // Mean rates over the 180 s (MP4Box's @bandwidth): 45 502 704 · 8 / 180 = 2 022 342.4 …,
        // below the MPD's peak-segment @bandwidth of each rung.
        let mean: Vec<u64> = l.mean_bitrates_bps().iter().map(|b| b.round() as u64).collect();
        assert_eq!(mean, [2_022_342, 6_047_362, 20_148_262]);
        assert!(l.mean_bitrates_bps().iter().zip(l.bitrates_bps()).all(|(m, p)| *m < p));
        // 4-s segments: the 180-s clip is 45 whole ones.
        let l4 = read_ladder(&bundled("dash_hevc_4s.mpd"), &bundled("dash_hevc.segments.csv")).unwrap();
        assert_eq!(l4.durations_ns.len(), 45);
        assert_eq!(*l4.durations_ns.last().unwrap(), 4_000_000_000);
    }

    #[test]
    fn iso_durations() {
        assert_eq!(parse_iso_duration("PT30.000S"), Some(30_000_000_000));
        assert_eq!(parse_iso_duration("PT1H2M3.5S"), Some(3_723_500_000_000));
        assert_eq!(parse_iso_duration("P1DT1S"), Some(86_401_000_000_000));
        for bad in ["30S", "PT", "PTS", "PT1S2M", "PT0S", "PT1X", "P1H"] {
            assert_eq!(parse_iso_duration(bad), None, "{bad}");
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const CSV: &str = "representation,segment_s,segment,duration_s,size_bytes\n\
        lo,4,0,4,1000\nlo,4,1,2,600\nhi,4,0,4,3000\nhi,4,1,2,1500\nlo,2,0,2,9\n";

    fn mpd(template: &str, reps: &str) -> String {
        format!(
            r#"<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT6S"><Period><AdaptationSet>{template}{reps}</AdaptationSet></Period></MPD>"#
        )
    }
    const T: &str = r#"<SegmentTemplate timescale="1000" duration="4000" media="$Number$.m4s"/>"#;
    const R: &str = r#"<Representation id="hi" bandwidth="6000"/><Representation id="lo" bandwidth="2000"/>"#;

    #[test]
    fn reads_a_small_ladder_in_bandwidth_order() {
        let dir = std::env::temp_dir().join(format!("qoelab-dash-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = write(&dir, "s.csv", CSV);
        let l = read_ladder(&write(&dir, "a.mpd", &mpd(T, R)), &c).unwrap();
        assert_eq!(l.durations_ns, [4_000_000_000, 2_000_000_000]);
        assert_eq!(l.rungs[0], Rung { id: "lo".into(), bandwidth_bps: 2000, sizes: vec![1000, 600] });
        assert_eq!(l.rungs[1].sizes, [3000, 1500]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn errors_name_the_file_and_the_element() {
        let dir = std::env::temp_dir().join(format!("qoelab-dash-manifest-err-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = write(&dir, "s.csv", CSV);
        let cases = [
            (mpd("", R), "MPD/Period/AdaptationSet/SegmentTemplate: missing"),
            (mpd(r#"<SegmentTemplate timescale="1000"/>"#, R), "SegmentTemplate@duration: missing or zero"),
            (mpd(T, r#"<Representation id="lo" bandwidth="x"/>"#), "MPD/Period[0]/AdaptationSet[0]/Representation[0]@bandwidth"),
            (mpd(T, r#"<Representation id="lo"/>"#), "missing field `@bandwidth`"),
            (mpd(T, r#"<Representation id="lo" bandwidth="1"/><Representation id="lo" bandwidth="2"/>"#), "@id: used twice"),
            (mpd(T, r#"<Representation id="mid" bandwidth="1"/>"#), "no size for segment 0 of representation mid"),
            (mpd(T, R).replace("PT6S", "PT12S"), "line 3: duration_s 2 disagrees with the MPD (4 s)"),
            (mpd(T, R).replace("PT6S", "6 s"), "MPD@mediaPresentationDuration: expected"),
            ("<MPD type=\"dynamic\"/>".into(), "MPD@type: only static"),
            ("not xml at all <".into(), "MPD"),
        ];
        for (k, (text, want)) in cases.iter().enumerate() {
            let m = write(&dir, &format!("m{k}.mpd"), text);
            let e = read_ladder(&m, &c).unwrap_err();
            // A size missing for an MPD representation is the segments table's fault: named there.
            let (file, kind) = if want.starts_with("no size") || want.starts_with("line") {
                (c.display().to_string(), LadderFile::Segments)
            } else {
                (m.display().to_string(), LadderFile::Mpd)
            };
            assert!(e.file == kind && e.message.starts_with(&file) && e.message.contains(want), "case {k}: {e:?}");
        }
        let m = write(&dir, "ok.mpd", &mpd(T, R));
        let bad_csv = [
            ("representation,segment_s,segment,duration_s,size_bytes\nlo,4,0,4,-3\n", "line 2: column 5"),
            ("representation,segment_s,segment,duration_s,size_bytes\nlo,4,0,4,1\nlo,4,0,4,1\n", "line 3: segment 0 of lo listed twice"),
            ("representation,segment_s,segment,duration_s,size_bytes\nlo,4,7,4,1\n", "line 2: segment 7 is beyond"),
            ("representation,segment_s,segment,duration_s,size_bytes\nlo,4,0,3,1\n", "line 2: duration_s 3 disagrees"),
            ("representation,segment_s\nlo,4\n", "line 2: "),
        ];
        for (k, (text, want)) in bad_csv.iter().enumerate() {
            let s = write(&dir, &format!("s{k}.csv"), text);
            let e = read_ladder(&m, &s).unwrap_err();
            assert!(
                e.file == LadderFile::Segments && e.message.starts_with(&s.display().to_string()) && e.message.contains(want),
                "csv case {k}: {e:?}"
            );
        }
        let e = read_ladder(&dir.join("missing.mpd"), &c).unwrap_err();
        assert!(e.file == LadderFile::Mpd && e.message.ends_with("missing.mpd: cannot read: no such file"), "{e:?}");
        let e = read_ladder(&m, &dir.join("missing.csv")).unwrap_err();
        assert!(e.file == LadderFile::Segments && e.message.ends_with("missing.csv: cannot read: no such file"), "{e:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
