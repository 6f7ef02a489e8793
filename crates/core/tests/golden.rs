//! Golden results: short runs of the bundled scenarios must keep the results digest
//! (`RunResults::digest`) and event count recorded in `tests/golden/digests.txt`.
//!
//! This guards two things the other tests cannot: optimisations meant to be result-neutral
//! (boxing packets, another event set) and long experiments resumed across commits (the TFD
//! grid's 8,800 runs span several sessions and must mean the same model). A model change that
//! is *meant* to move results fails here too: check that the change explains the difference,
//! then re-record with
//!
//! ```text
//! QOELAB_BLESS=1 cargo test --release -p qoelab-core --test golden
//! ```
//!
//! and say in the commit message that results moved and why. Digests hold for this machine kind
//! (x86-64 Linux, glibc libm); another libm may round `exp`/`ln` differently.
//!
//! `tests/golden/digests_rfc.txt` holds the digests of the same runs with every TCP set to
//! `profile = "rfc"`, recorded before the default profile became `linux` (2026-11-23): the `rfc`
//! profile is the model as it was before profiles existed, bit for bit, so these never move
//! unless the RFC-pure TCP itself changes (re-record with `QOELAB_BLESS=1` too). It did once, in
//! issue 34: the `rfc` profile's RTO floor became RFC 6298 §2.4's 1 s and it restarts from RFC
//! 5681 §4.1's restart window after an idle period.

use qoelab_core::time::Dur;
use qoelab_core::{BuildOptions, Scenario};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Scenario (under `scenarios/`) and simulated seconds: every discipline, transport and
/// application family the bundled scenarios use, each long enough to reach steady state.
const CASES: &[(&str, f64)] = &[
    ("bench/dumbbell-10m.toml", 10.0),
    ("bench/tfd-1g.toml", 2.0),
    ("demo/scenario.toml", 30.0),
    ("sqf/testbed.toml", 30.0),
    ("sqf/model-check.toml", 30.0),
    ("tfd/s1-n5-k5.toml", 2.0),
    ("tfd/s2-n5-k5.toml", 2.0),
    ("tfd/s3-n5-k5.toml", 2.0),
    ("tfd/s4-n5-k5.toml", 2.0),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every table of the scenario with `kind = "tcp"` (a TCP transport) without a `profile` key
/// gets `profile = "rfc"`.
fn pin_rfc(v: &mut toml::Value) {
    match v {
        toml::Value::Table(t) => {
            if t.get("kind").and_then(|k| k.as_str()) == Some("tcp") && !t.contains_key("profile") {
                t.insert("profile".into(), toml::Value::String("rfc".into()));
            }
            t.iter_mut().for_each(|(_, v)| pin_rfc(v));
        }
        toml::Value::Array(a) => a.iter_mut().for_each(pin_rfc),
        _ => {}
    }
}

fn run(file: &str, secs: f64, rfc: bool) -> String {
    let path = root().join("scenarios").join(file);
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if rfc {
        let mut v: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        pin_rfc(&mut v);
        text = toml::to_string(&v).unwrap();
    }
    let mut sc = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sc.sim.duration = Dur::from_secs_f64(secs);
    let mut sim = sc
        .build(&BuildOptions { base_dir: path.parent(), pcap_dir: None })
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sim.run();
    let events = sim.events_dispatched();
    format!("{file} {secs} events={events} digest={:016x}", sim.results().digest())
}

#[test]
fn bundled_scenarios_keep_their_recorded_results() {
    check("tests/golden/digests.txt", false);
}

#[test]
fn rfc_profile_keeps_the_results_from_before_profiles() {
    check("tests/golden/digests_rfc.txt", true);
}

fn check(name: &str, rfc: bool) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let got: Vec<String> = CASES.iter().map(|&(f, s)| run(f, s, rfc)).collect();
    if std::env::var_os("QOELAB_BLESS").is_some() {
        let mut out =
            String::from("# scenario seconds events digest; written by QOELAB_BLESS=1 (see tests/golden.rs)\n");
        for l in &got {
            writeln!(out, "{l}").unwrap();
        }
        std::fs::write(&file, out).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let want: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    let mut diffs = Vec::new();
    for (i, g) in got.iter().enumerate() {
        match want.get(i) {
            Some(w) if *w == g => {}
            Some(w) => diffs.push(format!("  recorded {w}\n  now      {g}")),
            None => diffs.push(format!("  not recorded: {g}")),
        }
    }
    if want.len() > got.len() {
        diffs.push(format!("  {} recorded case(s) no longer run", want.len() - got.len()));
    }
    assert!(
        diffs.is_empty(),
        "results of bundled scenarios changed ({}):\n{}\nIf the change is meant to move results, re-record with \
         QOELAB_BLESS=1 cargo test --release -p qoelab-core --test golden",
        file.display(),
        diffs.join("\n")
    );
}

/// The digest must see a change anywhere in the tables, including string columns.
#[test]
fn digest_changes_with_any_value() {
    use qoelab_core::trace::{Column, Table};
    use qoelab_core::RunResults;
    let mk = |names: Vec<&str>, x: f64| {
        let mut t = Table::new("t");
        t.push("name", Column::Str(names.into_iter().map(String::from).collect()));
        t.push("x", Column::F64(vec![x, 1.0]));
        RunResults { tables: vec![t] }
    };
    let base = mk(vec!["ab", "c"], 0.5).digest();
    assert_eq!(base, mk(vec!["ab", "c"], 0.5).digest());
    assert_ne!(base, mk(vec!["a", "bc"], 0.5).digest(), "string boundaries count");
    assert_ne!(base, mk(vec!["ab", "c"], 0.5000000000000001).digest(), "one ulp counts");
    assert_ne!(mk(vec!["ab", "c"], 0.0).digest(), mk(vec!["ab", "c"], -0.0).digest(), "the sign of zero counts");
}
