//! Replays the TFD fuzz corpus (`crates/core/fuzz/corpus/tfd_decode/`) under plain
//! `cargo test`, so CI checks every seed and every saved fuzzer finding without nightly.
//!
//! Each file goes through the same properties as the fuzz target (`tfd_check::check`: no
//! panic, round-trip on success, append/find agreement). Seeds named by hand also state their
//! expected outcome in the file name prefix:
//!
//! | prefix | expectation |
//! |---|---|
//! | `ok-v4-` / `ok-v6-` | decodes as an IPv4 / IPv6 option |
//! | `err-` | fails both decoders |
//! | `area-found-` / `area-none-` / `area-bad-` | IPv4 options area with a TFD option / without / malformed |
//! | `hbh-found-` / `hbh-none-` / `hbh-bad-` | same for an IPv6 Hop-by-Hop header |
//!
//! Other names (fuzzer findings) carry no expectation beyond the shared properties.

#[path = "../fuzz/fuzz_targets/tfd_check.rs"]
mod tfd_check;

use qoelab_core::ip::tfd;
use std::path::PathBuf;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/tfd_decode");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().expect("file name").to_string_lossy().into_owned();
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            (name, data)
        })
        .collect();
    // Sorted, so a failure report names the same file on every machine.
    files.sort();
    files
}

#[test]
fn corpus_is_present() {
    let files = corpus();
    assert!(files.len() >= 50, "only {} corpus files", files.len());
    for prefix in
        ["ok-v4-", "ok-v6-", "err-", "area-found-", "area-none-", "area-bad-", "hbh-found-", "hbh-none-", "hbh-bad-"]
    {
        assert!(files.iter().any(|(n, _)| n.starts_with(prefix)), "no corpus file named {prefix}*");
    }
}

#[test]
fn every_corpus_file_satisfies_the_fuzz_properties() {
    for (name, data) in corpus() {
        let outcome = std::panic::catch_unwind(|| tfd_check::check(&data));
        assert!(outcome.is_ok(), "corpus file {name} ({:02x?}) broke a property", data);
    }
}

#[test]
fn named_seeds_have_their_expected_outcome() {
    for (name, data) in corpus() {
        let v4 = tfd::decode_ipv4(&data);
        let v6 = tfd::decode_ipv6(&data);
        let area = tfd::find_in_ipv4_options(&data);
        let hbh = tfd::find_in_ipv6_hop_by_hop(&data);
        let ok = if name.starts_with("ok-v4-") {
            v4.is_ok()
        } else if name.starts_with("ok-v6-") {
            v6.is_ok()
        } else if name.starts_with("err-") {
            v4.is_err() && v6.is_err()
        } else if name.starts_with("area-found-") {
            matches!(area, Ok(Some(_)))
        } else if name.starts_with("area-none-") {
            area == Ok(None)
        } else if name.starts_with("area-bad-") {
            area.is_err()
        } else if name.starts_with("hbh-found-") {
            matches!(hbh, Ok(Some(_)))
        } else if name.starts_with("hbh-none-") {
            hbh == Ok(None)
        } else if name.starts_with("hbh-bad-") {
            hbh.is_err()
        } else {
            true
        };
        assert!(ok, "corpus file {name}: v4 {v4:?}, v6 {v6:?}, area {area:?}, hbh {hbh:?}");
    }
}
