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

use crate::units::MAX_TIME_NS;
use serde::Deserialize;
use std::path::Path;

/// Largest MPD or segments file read (a path may point at any file).
const MAX_FILE_BYTES: u64 = 16 << 20;

/// Most segments in one pass of the content: a million (11.6 days of 1-s segments). The count
/// follows from `@mediaPresentationDuration / @duration` and is checked before anything is
/// allocated for it, so a 300-byte MPD cannot ask for gigabytes.
pub const MAX_SEGMENTS: u64 = 1_000_000;

/// Most sizes a ladder holds (segments × representations): 10^7, 80 MB of sizes.
pub const MAX_LADDER_SIZES: u64 = 10_000_000;

/// Largest segment, bytes: 4 GiB (a 10-s segment at 3.4 Gbit/s). Larger values are refused,
/// so sums of sizes and bit counts (`8 · size`) stay far inside 64 bits.
pub const MAX_SEGMENT_BYTES: u64 = 1 << 32;

/// Largest `Representation@bandwidth`, bit/s (the scenario's largest rate, 1 Pbit/s).
pub const MAX_BANDWIDTH_BPS: u64 = 1_000_000_000_000_000;

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

/// Why an ISO 8601 duration was refused.
#[derive(Debug, PartialEq, Eq)]
enum IsoError {
    Syntax,
    TooLong,
}

/// Parses an ISO 8601 duration of the form MPDs use (`PT1H2M3.5S`, `P1DT…`), in ns; at most
/// [`MAX_TIME_NS`] (146 years), checked before the conversion to an integer.
fn parse_iso_duration(s: &str) -> Result<u64, IsoError> {
    let rest = s.strip_prefix('P').ok_or(IsoError::Syntax)?;
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
    take(date, &[('D', 86_400.0)]).ok_or(IsoError::Syntax)?;
    if let Some(t) = time {
        if t.is_empty() {
            return Err(IsoError::Syntax);
        }
        take(t, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)]).ok_or(IsoError::Syntax)?;
    }
    if !(secs.is_finite() && secs > 0.0) {
        return Err(if secs.is_infinite() { IsoError::TooLong } else { IsoError::Syntax });
    }
    let ns = (secs * 1e9).round();
    if ns > MAX_TIME_NS as f64 {
        return Err(IsoError::TooLong);
    }
    Ok(ns as u64)
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
    fn at(file: LadderFile, path: &Path) -> impl Fn(String) -> LadderError + '_ {
        move |e| LadderError { file, message: format!("{}: {e}", path.display()) }
    }
    let text = crate::input::read_capped(mpd, "MPD", MAX_FILE_BYTES).map_err(at(LadderFile::Mpd, mpd))?;
    let mut ladder = parse_mpd(&text).map_err(at(LadderFile::Mpd, mpd))?;
    let text =
        crate::input::read_capped(segments, "segments table", MAX_FILE_BYTES).map_err(at(LadderFile::Segments, segments))?;
    fill_sizes(&text, &mut ladder).map_err(at(LadderFile::Segments, segments))?;
    ladder.rungs.sort_by_key(|r| r.bandwidth_bps);
    Ok(ladder)
}

/// Parses MPD text: the representations (sizes unknown: `u64::MAX`), the segments' durations
/// and the template's segment length. Errors are `<element>: <reason>` and never quote the
/// text.
pub fn parse_mpd(text: &[u8]) -> Result<Ladder, String> {
    let text = std::str::from_utf8(text).map_err(|_| "MPD: not UTF-8 text".to_string())?;
    let mut de = quick_xml::de::Deserializer::from_str(text);
    let doc: Mpd = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = known_path(&e.path().to_string()).replace(".@", "@");
        let reason = xml_reason(e.inner());
        if path == "." || path.is_empty() {
            format!("MPD: {reason}")
        } else {
            format!("MPD/{}: {reason}", path.replace('.', "/"))
        }
    })?;
    let el = |p: &str, why: &str| format!("{p}: {why}");
    if doc.kind.as_deref().is_some_and(|t| t != "static") {
        return Err(el("MPD@type", "only static MPDs are supported"));
    }
    let Some(dur) = doc.duration.as_deref() else {
        return Err(el("MPD@mediaPresentationDuration", "missing"));
    };
    let total_ns = parse_iso_duration(dur).map_err(|e| match e {
        IsoError::Syntax => el("MPD@mediaPresentationDuration", "expected a positive ISO 8601 duration like PT30S"),
        IsoError::TooLong => el("MPD@mediaPresentationDuration", "must be below 146 years (2^62 ns)"),
    })?;
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
    // In u128, range-checked before it becomes a u64 (2^64 · 10^9 fits in u128).
    let segment_ns = d as u128 * 1_000_000_000 / timescale as u128;
    if segment_ns == 0 {
        return Err(el(&format!("{tpath}@duration"), "shorter than 1 ns"));
    }
    if segment_ns > MAX_TIME_NS as u128 {
        return Err(el(&format!("{tpath}@duration"), "@duration / @timescale must be below 146 years (2^62 ns)"));
    }
    let segment_ns = segment_ns as u64;
    if set.reps.is_empty() {
        return Err(el("MPD/Period/AdaptationSet/Representation", "none"));
    }
    // Bound the counts before allocating anything sized by them.
    let n = total_ns.div_ceil(segment_ns);
    if n > MAX_SEGMENTS {
        return Err(el(
            &format!("{tpath}@duration"),
            &format!(
                "{n} segments of {} s in {} s of media, more than the {MAX_SEGMENTS} allowed",
                segment_ns as f64 / 1e9,
                total_ns as f64 / 1e9
            ),
        ));
    }
    let cells = n.saturating_mul(set.reps.len() as u64);
    if cells > MAX_LADDER_SIZES {
        return Err(el(
            "MPD/Period/AdaptationSet/Representation",
            &format!(
                "{} representations x {n} segments is {cells} segment sizes, more than the {MAX_LADDER_SIZES} allowed",
                set.reps.len()
            ),
        ));
    }
    let n = n as usize;
    let durations_ns: Vec<u64> = (0..n as u64).map(|k| segment_ns.min(total_ns - k * segment_ns)).collect();
    let mut rungs: Vec<Rung> = Vec::with_capacity(set.reps.len());
    let mut ids = std::collections::BTreeSet::new();
    for (i, r) in set.reps.iter().enumerate() {
        let p = format!("MPD/Period/AdaptationSet/Representation[{i}]");
        if r.template.is_some() {
            return Err(el(&format!("{p}/SegmentTemplate"), "not supported (one template per AdaptationSet)"));
        }
        if r.bandwidth == 0 || r.bandwidth > MAX_BANDWIDTH_BPS {
            return Err(el(&format!("{p}@bandwidth"), &format!("must be within 1..={MAX_BANDWIDTH_BPS} bit/s")));
        }
        if !ids.insert(r.id.as_str()) {
            return Err(el(&format!("{p}@id"), "used twice"));
        }
        rungs.push(Rung { id: r.id.clone(), bandwidth_bps: r.bandwidth, sizes: vec![u64::MAX; n] });
    }
    Ok(Ladder { rungs, durations_ns, segment_ns })
}

/// The elements and attributes the reader knows.
const KNOWN: &[&str] = &[
    "Period", "AdaptationSet", "SegmentTemplate", "Representation", "SegmentTimeline",
    "@type", "@mediaPresentationDuration", "@timescale", "@duration", "@id", "@bandwidth",
];

/// The part of a deserializer's path (`Period[0].AdaptationSet[0].x`) made of names the reader
/// knows: the first name that came from the document is cut off with what follows it.
fn known_path(path: &str) -> String {
    let mut out = Vec::new();
    for seg in path.split('.') {
        let name = seg.split('[').next().unwrap_or("");
        if !KNOWN.contains(&name) {
            break;
        }
        out.push(seg);
    }
    out.join(".")
}

/// A deserializer error as a reason that never quotes the document: serde's messages of the
/// form `invalid type: string "…", expected …` keep only what was expected (which comes from
/// our types); XML syntax errors are named by kind.
fn xml_reason(e: &quick_xml::DeError) -> String {
    use quick_xml::DeError as D;
    match e {
        D::Custom(m) => {
            for kind in ["invalid type", "invalid value", "invalid length"] {
                if m.starts_with(kind) {
                    let expected = m.rsplit_once(", expected ").map(|(_, x)| short(x)).unwrap_or_default();
                    return if expected.is_empty() { kind.to_string() } else { format!("{kind}, expected {expected}") };
                }
            }
            if m.starts_with("missing field `") || m.starts_with("duplicate field `") {
                return short(m);
            }
            "not a valid MPD".into()
        }
        D::InvalidXml(_) => "not well-formed XML".into(),
        D::UnexpectedEof => "not a valid MPD (the document ends early)".into(),
        _ => "not a valid MPD".into(),
    }
}

/// Fills each rung's segment sizes for the ladder's segment length from segments-table text.
pub fn fill_sizes(text: &[u8], ladder: &mut Ladder) -> Result<(), String> {
    let n = ladder.durations_ns.len();
    let mut rdr = csv::Reader::from_reader(text);
    let seg_s = ladder.segment_ns as f64 * 1e-9;
    let by_id: std::collections::BTreeMap<String, usize> =
        ladder.rungs.iter().enumerate().map(|(k, r)| (r.id.clone(), k)).collect();
    for (k, row) in rdr.deserialize::<SegmentRow>().enumerate() {
        let line = k + 2;
        let row = row.map_err(|e| {
            let why = match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                    Some(f) => format!("column {}: {}", f + 1, short(&csv_reason(err))),
                    None => short(&csv_reason(err)),
                },
                csv::ErrorKind::UnequalLengths { .. } => "wrong number of columns".into(),
                csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".into(),
                _ => "unreadable row".into(),
            };
            format!("line {line}: {why}")
        })?;
        if (row.segment_s - seg_s).abs() > 1e-6 {
            continue;
        }
        let Some(&r) = by_id.get(&row.representation) else { continue };
        let rung = &mut ladder.rungs[r];
        let Some(slot) = usize::try_from(row.segment).ok().and_then(|i| rung.sizes.get_mut(i)) else {
            return Err(format!("line {line}: segment {} is beyond the MPD's {n} segments of {seg_s} s", row.segment));
        };
        if *slot != u64::MAX {
            return Err(format!("line {line}: segment {} of {} listed twice", row.segment, rung.id));
        }
        if row.size_bytes == 0 || row.size_bytes > MAX_SEGMENT_BYTES {
            return Err(format!("line {line}: size_bytes must be within 1..={MAX_SEGMENT_BYTES}, got {}", row.size_bytes));
        }
        let want = ladder.durations_ns[row.segment as usize] as f64 * 1e-9;
        if !((row.duration_s - want).abs() <= 1e-3) {
            return Err(format!("line {line}: duration_s {} disagrees with the MPD ({want} s)", row.duration_s));
        }
        *slot = row.size_bytes;
    }
    for r in &ladder.rungs {
        if let Some(k) = r.sizes.iter().position(|&s| s == u64::MAX) {
            return Err(format!("no size for segment {k} of representation {} at {seg_s} s", r.id));
        }
    }
    Ok(())
}

/// A CSV field's deserialization error without the field's text: the csv crate quotes the
/// field for some kinds (`invalid digit found in string` does not, a failed bool or a custom
/// message may), so only the kind is kept.
fn csv_reason(err: &csv::DeserializeError) -> String {
    use csv::DeserializeErrorKind as K;
    match err.kind() {
        K::ParseInt(e) => format!("expected a whole number ({e})"),
        K::ParseFloat(_) => "expected a number".into(),
        K::UnexpectedEndOfRow => "missing field".into(),
        K::Message(m) if m.starts_with("missing field `") => m.clone(),
        _ => "unreadable field".into(),
    }
}

/// The first line of a message, at most 120 characters.
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
        assert_eq!(parse_iso_duration("PT30.000S"), Ok(30_000_000_000));
        assert_eq!(parse_iso_duration("PT1H2M3.5S"), Ok(3_723_500_000_000));
        assert_eq!(parse_iso_duration("P1DT1S"), Ok(86_401_000_000_000));
        for bad in ["30S", "PT", "PTS", "PT1S2M", "PT0S", "PT1X", "P1H"] {
            assert_eq!(parse_iso_duration(bad), Err(IsoError::Syntax), "{bad}");
        }
        // Beyond 2^62 ns: refused before the conversion to an integer (it once saturated).
        let huge = format!("PT{}S", "9".repeat(308));
        for bad in ["P100000000D", "PT4611686019S", huge.as_str()] {
            assert_eq!(parse_iso_duration(bad), Err(IsoError::TooLong), "{bad}");
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
        assert!(e.file == LadderFile::Mpd && e.message.ends_with("missing.mpd: cannot read MPD: no such file"), "{e:?}");
        let e = read_ladder(&m, &dir.join("missing.csv")).unwrap_err();
        assert!(e.file == LadderFile::Segments && e.message.ends_with("missing.csv: cannot read segments table: no such file"), "{e:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn counts_and_sizes_are_bounded_before_anything_is_allocated() {
        let doc = |dur: &str, tmpl: &str| {
            format!(
                r#"<MPD type="static" mediaPresentationDuration="{dur}"><Period><AdaptationSet>{tmpl}{R}</AdaptationSet></Period></MPD>"#
            )
        };
        let cases = [
            // 10^9 segments of 1 ms: once an 8 GB allocation and an abort.
            (doc("PT1000000S", r#"<SegmentTemplate timescale="1000" duration="1"/>"#), "more than the 1000000 allowed"),
            // 1-ns segments over 100,000 days: once a capacity-overflow panic.
            (doc("P10000D", r#"<SegmentTemplate timescale="1000000000" duration="1"/>"#), "more than the 1000000 allowed"),
            (doc(&format!("PT{}S", "9".repeat(308)), T), "MPD@mediaPresentationDuration: must be below 146 years"),
            (doc("PT6S", r#"<SegmentTemplate timescale="1" duration="18446744073709551615"/>"#), "@duration / @timescale must be below 146 years"),
            (doc("PT6S", T).replace(r#"bandwidth="6000""#, r#"bandwidth="18446744073709551615""#), "@bandwidth: must be within"),
            (doc("PT6S", T).replace(r#"bandwidth="6000""#, r#"bandwidth="18446744073709551616""#), "@bandwidth: invalid"),
        ];
        for (k, (text, want)) in cases.iter().enumerate() {
            let e = parse_mpd(text.as_bytes()).unwrap_err();
            assert!(e.contains(want), "case {k}: {e}");
        }
        let reps: String = (0..20).map(|i| format!(r#"<Representation id="r{i}" bandwidth="1"/>"#)).collect();
        let many = doc("PT600000S", r#"<SegmentTemplate timescale="1" duration="1"/>"#).replace(R, &reps);
        assert!(parse_mpd(many.as_bytes()).unwrap_err().contains("segment sizes, more than the 10000000 allowed"));
        let mut l = parse_mpd(doc("PT6S", T).as_bytes()).unwrap();
        let big = format!("representation,segment_s,segment,duration_s,size_bytes\nlo,4,0,4,{}\n", u64::MAX - 5);
        assert!(fill_sizes(big.as_bytes(), &mut l).unwrap_err().contains("line 2: size_bytes must be within 1..=4294967296"));
        let far = "representation,segment_s,segment,duration_s,size_bytes\nlo,4,18446744073709551615,4,1\n";
        assert!(fill_sizes(far.as_bytes(), &mut l).unwrap_err().contains("line 2: segment 18446744073709551615 is beyond"));
    }

    #[test]
    fn errors_never_quote_the_document() {
        let secret = "root:x:0:0:secret-token-123:/root:/bin/bash";
        for text in [
            secret.to_string(),
            format!("<MPD>{secret}</MPD>"),
            format!(r#"<MPD type="static" mediaPresentationDuration="{secret}"/>"#),
            format!(r#"<MPD type="{secret}"/>"#),
            format!(
                r#"<MPD type="static" mediaPresentationDuration="PT6S"><Period><AdaptationSet>{T}<Representation id="a" bandwidth="{secret}"/></AdaptationSet></Period></MPD>"#
            ),
            format!("<MPD><{secret}></MPD>"),
            format!("<MPD></{secret}>"),
        ] {
            let e = parse_mpd(text.as_bytes()).unwrap_err();
            assert!(!e.contains("secret-token") && !e.contains("/bin/bash") && !e.contains('\n'), "{e}");
        }
        let mut l = parse_mpd(mpd(T, R).as_bytes()).unwrap();
        for csv in [
            format!("representation,segment_s,segment,duration_s,size_bytes\nlo,4,0,4,{secret}\n"),
            format!("representation,segment_s,segment,duration_s,size_bytes\nlo,{secret},0,4,1\n"),
            format!("{secret}\nlo,4,0,4,1\n"),
        ] {
            let e = fill_sizes(csv.as_bytes(), &mut l).unwrap_err();
            assert!(!e.contains("secret-token") && !e.contains("/bin/bash"), "{e}");
        }
    }
}
