//! Fuzz target: arbitrary bytes through the TFD decoders and option-list helpers.
//!
//! The properties live in `tfd_check.rs`, which `crates/core/tests/tfd_corpus.rs` also
//! includes to replay `corpus/tfd_decode/` under plain `cargo test`.

#![no_main]

use libfuzzer_sys::fuzz_target;

mod tfd_check;

fuzz_target!(|data: &[u8]| {
    tfd_check::check(data);
});
