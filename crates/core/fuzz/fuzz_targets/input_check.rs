//! Properties of the readers of user files, for arbitrary bytes: the scenario loader (TOML →
//! `Scenario` → `Simulation`, run briefly), the video-trace reader, and (issue 42) the DASH MPD
//! reader, the segments-table reader and the transcoder-ladder reader. None may panic or
//! allocate beyond its documented limits; every error is one non-empty line; an error never
//! quotes the file's text; an accepted input satisfies the reader's invariants
//! (`docs/models/video.md`, `docs/models/dash.md`, `docs/models/transcoder.md`).
//!
//! Included by the fuzz targets `scenario_load`, `trace_read`, `mpd_read`, `segments_read` and
//! `ladder_read` and by `crates/core/tests/hardcore.rs`, which replays their corpora and a
//! deterministic stream of random inputs under plain `cargo test`.

use qoelab_core::app::dash::manifest::{self, MAX_LADDER_SIZES, MAX_SEGMENTS, MAX_SEGMENT_BYTES};
use qoelab_core::app::nal::{parse_trace, TRACE_COLUMNS};
use qoelab_core::app::transcoder::{self, MAX_FRAME_BYTES, MAX_TARGET_BPS};
use qoelab_core::time::Dur;
use qoelab_core::{BuildOptions, Scenario};

/// Most links or flows a fuzzed scenario may expand to before it is built (a large `count`
/// is valid, only slow).
const MAX_ENTRIES: u64 = 200;

pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut sc = match Scenario::from_toml(text) {
        Ok(sc) => sc,
        Err(e) => return one_line(&e.to_string()),
    };
    let entries: u64 = sc.links.iter().map(|l| u64::from(l.count.unwrap_or(1))).sum::<u64>()
        + sc.flows.iter().map(|f| u64::from(f.count.unwrap_or(1))).sum::<u64>();
    if entries > MAX_ENTRIES {
        return;
    }
    // A short run: the point is reaching every component's code, not simulating long.
    sc.sim.duration = sc.sim.duration.min(Dur::from_millis(20));
    let missing = std::path::Path::new("/nonexistent-qoelab-fuzz-base");
    let mut sim = match sc.build(&BuildOptions { base_dir: Some(missing), pcap_dir: None }) {
        Ok(sim) => sim,
        Err(e) => return one_line(&e.to_string()),
    };
    sim.set_max_instant_events(100_000);
    sim.run();
    if let Some(e) = sim.aborted() {
        one_line(&e.to_string());
    }
    let _ = sim.results();
}

pub fn trace(data: &[u8]) {
    match parse_trace(data) {
        Err(e) => {
            one_line(&e);
            // No field of the file appears in the message, except numbers (the reader names
            // parsed values) and the column names it knows.
            for line in data.split(|&b| b == b'\n') {
                for field in line.split(|&b| b == b',') {
                    let f = String::from_utf8_lossy(field);
                    let f = f.trim();
                    let numeric = f.bytes().all(|b| b.is_ascii_digit() || b"-+.eE".contains(&b));
                    if f.len() >= 5 && !numeric && !TRACE_COLUMNS.contains(&f) && !known(f) {
                        assert!(!e.contains(f), "error quotes the file ({f:?}): {e}");
                    }
                }
            }
        }
        Ok(t) => {
            let n = t.nal.len();
            assert!(n > 0);
            assert_eq!(t.frame[0], 0);
            for i in 1..n {
                assert!(t.frame[i] - t.frame[i - 1] <= 1 && t.frame[i] >= t.frame[i - 1]);
                assert!(t.ts_ms[i] >= t.ts_ms[i - 1]);
                assert_eq!(t.nal[i], i as i64);
            }
            assert!(t.size_bytes.iter().all(|&s| s >= 1));
            assert_eq!(t.rows().len(), n);
        }
    }
}

/// Words the reader's messages use (a field equal to one of them may appear in a message).
const KNOWN: &[&str] = &[
    "line 1: header must name frame, type, size_bytes and ts_ms, optionally nal and display, each once",
    "must be one of I, P, B, X; expected an integer; expected a number; must be within; differs within frame",
    "trace has no rows; empty trace; not ASCII text; truncated trace (last line has no newline); has no slice",
    "mixes slice types; decreases from frame; must count up by 0 or 1; the first frame must be; running index",
    "display numbers must be a permutation of; is named twice; it lacks column; is none of them; expected fields, got",
];

/// Whether `field` could be a piece of one of the reader's own messages, a `line N: ` prefix
/// included (digit runs compared as one digit: libFuzzer once built a field "e 1: not AS",
/// which "line 1: not ASCII text" contains without quoting the file).
fn known(field: &str) -> bool {
    let f = squash_digits(field);
    KNOWN.iter().flat_map(|k| k.split("; ")).any(|p| squash_digits(&format!("line 0: {p}")).contains(&f))
}

fn squash_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_digit = false;
    for c in s.chars() {
        let d = c.is_ascii_digit();
        if !(d && prev_digit) {
            out.push(if d { '0' } else { c });
        }
        prev_digit = d;
    }
    out
}

/// An MPD: never a panic; an error is one line quoting no word of the document; an accepted
/// MPD has 1..=[`MAX_SEGMENTS`] segments whose durations are positive, at most the template's
/// and add up to the presentation, and rungs sized for every segment within
/// [`MAX_LADDER_SIZES`].
pub fn mpd(data: &[u8]) {
    match manifest::parse_mpd(data) {
        Err(e) => {
            one_line(&e);
            no_quote(data, &e, MPD_WORDS);
        }
        Ok(l) => {
            let n = l.durations_ns.len();
            assert!(n >= 1 && n as u64 <= MAX_SEGMENTS, "{n} segments");
            assert!(l.durations_ns.iter().all(|&d| d >= 1 && d <= l.segment_ns));
            assert!(!l.rungs.is_empty() && (l.rungs.len() * n) as u64 <= MAX_LADDER_SIZES);
            assert!(l.rungs.iter().all(|r| r.sizes.len() == n && r.bandwidth_bps >= 1));
        }
    }
}

/// The bundled 6-s MPD, against which segment tables are read.
const MPD_6S: &str = include_str!("../../../../data/traces/dash_hevc_6s.mpd");

/// A segments table for the bundled 6-s MPD: never a panic; an error is one line quoting no
/// word of the table (the MPD's representation ids may appear); an accepted table gives every
/// segment of every rung a size within 1..=[`MAX_SEGMENT_BYTES`].
pub fn segments(data: &[u8]) {
    let mut l = manifest::parse_mpd(MPD_6S.as_bytes()).expect("the bundled MPD reads");
    match manifest::fill_sizes(data, &mut l) {
        Err(e) => {
            one_line(&e);
            no_quote(data, &e, &[SEGMENT_WORDS, MPD_6S]);
        }
        Ok(()) => {
            for r in &l.rungs {
                assert!(r.sizes.iter().all(|&s| (1..=MAX_SEGMENT_BYTES).contains(&s)), "{}", r.id);
            }
        }
    }
}

/// A transcoder ladder: never a panic; an error is one line quoting no word of the file; an
/// accepted ladder has rates strictly decreasing within 1..=[`MAX_TARGET_BPS`], the same
/// number of frames in every rung, sizes within 1..=[`MAX_FRAME_BYTES`], and a GOP start at
/// frame 0.
pub fn ladder(data: &[u8]) {
    match transcoder::parse_ladder(data) {
        Err(e) => {
            one_line(&e);
            no_quote(data, &e, &[LADDER_WORDS]);
        }
        Ok(l) => {
            assert!(!l.rates_bps.is_empty() && l.rates_bps.len() == l.sizes.len());
            assert!(
                l.rates_bps.windows(2).all(|w| w[0] > w[1])
                    && l.rates_bps.iter().all(|&r| (1..=MAX_TARGET_BPS).contains(&r))
            );
            let n = l.frames();
            assert!(n >= 1 && l.gop_start[0]);
            for s in &l.sizes {
                assert!(s.len() == n && s.iter().all(|&b| (1..=MAX_FRAME_BYTES).contains(&b)));
            }
            assert!(l.rung_for(0) == l.rates_bps.len() - 1 && l.rung_for(u64::MAX) == 0);
        }
    }
}

/// The words the MPD reader's messages are made of (element and attribute names included).
const MPD_WORDS: &[&str] = &[
    "MPD Period AdaptationSet SegmentTemplate Representation SegmentTimeline type mediaPresentationDuration",
    "timescale duration bandwidth only static MPDs are supported missing expected a positive ISO 8601 like PT30S",
    "must be below years exactly one found segments are addressed by an AdaptationSet-level template",
    "not supported use positive or zero shorter than segments of in s of media more than the allowed",
    "representations is segment sizes none per within bit used twice not UTF-8 text invalid type value length",
    "expected struct u64 string a valid well-formed XML document ends early field an integer duplicate unknown variant",
];

/// The words of the segments-table reader's messages.
const SEGMENT_WORDS: &str = "line column expected a whole number invalid digit found in string number too large to fit      target type cannot parse integer from empty string missing field unreadable wrong of columns not UTF-8 text      segment is beyond the MPD's segments listed twice size_bytes must be within got duration_s disagrees with      no size for representation at representation segment_s";

/// The words of the ladder reader's messages.
const LADDER_WORDS: &str = "line not ASCII text header must name once each rung target_bps frame type size_bytes fields      the has is a whole number must be I P or B frames within and decrease from to rungs out of order expected      changes its got ladder no rows of an picture GOP start the aligned in but";

/// A message quotes no word (a run of letters, digits, `_`, `-`, `.`, `:`, `/`, `@`) of at least
/// six characters from `data` unless the reader's own vocabulary (`known`) has it, or it is a
/// number (readers name parsed values).
fn no_quote(data: &[u8], msg: &str, known: &[&str]) {
    let text = String::from_utf8_lossy(data);
    let word = |c: char| c.is_alphanumeric() || "_-.:/@$".contains(c);
    let vocab: Vec<&str> = known.iter().flat_map(|k| k.split(|c: char| !word(c))).collect();
    for w in text.split(|c: char| !word(c)) {
        if w.chars().count() < 6 || w.chars().all(|c| c.is_ascii_digit() || "-+.eE".contains(c)) {
            continue;
        }
        if msg.contains(w) && !vocab.iter().any(|v| v.contains(w)) && !msg_made_of_vocab(w, &vocab) {
            panic!("error quotes the file ({w:?}): {msg}");
        }
    }
}

/// Whether `w` is made of pieces of vocabulary words and digits joined by punctuation (e.g.
/// `MPD@type`, or `/Adapta`, a mutated element name the message's own `/AdaptationSet` holds).
fn msg_made_of_vocab(w: &str, vocab: &[&str]) -> bool {
    w.split(|c: char| !c.is_alphanumeric())
        .all(|p| p.is_empty() || p.chars().all(|c| c.is_ascii_digit()) || vocab.iter().any(|v| v.contains(p)))
}

fn one_line(msg: &str) {
    assert!(!msg.trim().is_empty(), "empty error message");
    assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
}
