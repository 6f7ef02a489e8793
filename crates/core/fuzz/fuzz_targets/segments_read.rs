//! Fuzz target: arbitrary bytes as a DASH segments table (read against the bundled 6-s MPD). The properties live in `input_check.rs`
//! (shared with `crates/core/tests/hardcore.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;

mod input_check;

fuzz_target!(|data: &[u8]| {
    input_check::segments(data);
});
