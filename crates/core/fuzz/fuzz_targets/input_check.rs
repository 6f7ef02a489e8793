//! Properties of the two readers of user files, for arbitrary bytes: the scenario loader
//! (TOML → `Scenario` → `Simulation`, run briefly) and the video-trace reader. Neither may
//! panic; every error is one non-empty line; a trace error never quotes the file's text; an
//! accepted trace satisfies the grammar's invariants (`docs/models/video.md`).
//!
//! Included by the fuzz targets `scenario_load` and `trace_read` and by
//! `crates/core/tests/hardcore.rs`, which replays `corpus/{scenario_load,trace_read}/` and a
//! deterministic stream of random inputs under plain `cargo test`.

use qoelab_core::app::nal::{parse_trace, TRACE_COLUMNS};
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

fn one_line(msg: &str) {
    assert!(!msg.trim().is_empty(), "empty error message");
    assert!(!msg.contains('\n'), "multi-line error: {msg:?}");
}
