//! No scenario value makes the core panic: every leaf of every bundled scenario is replaced in
//! turn by edge values (zero, one unit, huge, negative, NaN, empty, wrong type), and the result
//! must either be refused with a `ScenarioError` naming a key path or build and run a short
//! simulation to the end.
//!
//! This is how `rate = "0.4bps"` (rounded to 0 bit/s, then a division by zero) and
//! `throughput_bin = "1ns"` (dense counters until memory ran out) were found; the first is now
//! an error, the second runs with bins widened to a fixed memory budget. Leaves repeated across `count`-like copies (flow 0..9 of the same kind) are tried
//! once, on their first occurrence.

use qoelab_core::time::Dur;
use qoelab_core::{BuildOptions, Scenario};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use toml::Value;

const SCENARIOS: &[&str] = &[
    "demo/scenario.toml",
    "bench/dumbbell-10m.toml",
    "sqf/testbed.toml",
    "sqf/model-check.toml",
    "tfd/s2-n5-k5.toml",
    "tfd/s4-n5-k5.toml",
];

/// Simulated time of each mutated run: long enough to start every flow's first packets.
const RUN: f64 = 0.05;

fn edge_values(v: &Value) -> Vec<Value> {
    let s = |x: &str| Value::String(x.into());
    match v {
        Value::String(_) => [
            "", "x", "0", "nan", "inf", "-1ms", "0p", "1p", "1e18p", "0B", "1B", "3e18B", "0ns", "1ns", "1e-9s",
            "100000h", "0bps", "0.4bps", "1bps", "1e15bps", "1e30bps",
        ]
        .iter()
        .map(|x| s(x))
        .chain([Value::Integer(7)])
        .collect(),
        Value::Integer(_) => vec![
            Value::Integer(0),
            Value::Integer(-1),
            Value::Integer(1),
            Value::Integer(i64::MAX),
            Value::Float(0.5),
            s("x"),
        ],
        Value::Float(_) => vec![
            Value::Float(0.0),
            Value::Float(-1.0),
            Value::Float(1.0),
            Value::Float(1e300),
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Integer(2),
        ],
        Value::Boolean(b) => vec![Value::Boolean(!b), Value::Integer(1)],
        _ => vec![],
    }
}

/// Paths to every scalar leaf.
fn leaves(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                path.push(Step::Key(k.clone()));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Step::Index(i));
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v.as_table_mut().unwrap()[k],
        Step::Index(i) => &mut v.as_array_mut().unwrap()[*i],
    })
}

/// `flows[3].app.rate`, or `flows[].app.rate` without the indices.
fn show(path: &[Step], indices: bool) -> String {
    let mut s = String::new();
    for p in path {
        match p {
            Step::Key(k) if s.is_empty() => s.push_str(k),
            Step::Key(k) => s.push_str(&format!(".{k}")),
            Step::Index(i) if indices => s.push_str(&format!("[{i}]")),
            Step::Index(_) => s.push_str("[]"),
        }
    }
    s
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds and briefly runs one mutated scenario; `Err` is fine, a panic is not.
fn try_one(text: &str, base: &Path, mutated_duration: bool) -> Result<(), String> {
    let mut sc = Scenario::from_toml(text).map_err(|e| e.to_string())?;
    if !mutated_duration {
        sc.sim.duration = Dur::from_secs_f64(RUN);
    }
    let mut sim = sc.build(&BuildOptions { base_dir: Some(base), pcap_dir: None }).map_err(|e| e.to_string())?;
    if mutated_duration {
        // A mutated duration is checked at build; run only a short prefix of it.
        sim.run_until(qoelab_core::time::SimTime(Dur::from_secs_f64(RUN).as_nanos()));
    } else {
        sim.run();
    }
    let _ = sim.results();
    Ok(())
}

#[test]
fn no_scenario_value_makes_the_core_panic() {
    // Keep the default hook quiet for caught panics; they are reported below with their input.
    std::panic::set_hook(Box::new(|_| {}));
    let mut panics = Vec::new();
    let verbose = std::env::var_os("QOELAB_MUTATIONS_VERBOSE").is_some();
    let (mut tried, mut refused) = (0, 0);
    for file in SCENARIOS {
        let path = root().join("scenarios").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut doc: Value = toml::from_str(&text).unwrap();
        let mut paths = Vec::new();
        leaves(&doc, &mut Vec::new(), &mut paths);
        let mut seen = BTreeSet::new();
        for p in paths {
            let shown = show(&p, true);
            if shown == "name" || shown.ends_with(".name") {
                continue;
            }
            // flows[3].app.rate with the same original value as flows[2].app.rate: tried once.
            let original = at(&mut doc, &p).clone();
            if !seen.insert((show(&p, false), original.to_string())) {
                continue;
            }
            for e in edge_values(&original) {
                // Mutate in place and restore below: one document, no copy per variant.
                *at(&mut doc, &p) = e.clone();
                let mutated = toml::to_string(&doc).unwrap();
                tried += 1;
                if verbose {
                    eprintln!("{file}: {shown} = {e}");
                }
                match catch_unwind(AssertUnwindSafe(|| {
                    try_one(&mutated, path.parent().unwrap(), shown == "sim.duration")
                })) {
                    Ok(Ok(())) => {}
                    Ok(Err(msg)) => {
                        refused += 1;
                        assert!(!msg.trim().is_empty(), "{file}: {shown} = {e}: empty error message");
                    }
                    Err(p) => {
                        let what = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        panics.push(format!("{file}: {shown} = {e}: panicked: {what}"));
                    }
                }
            }
            *at(&mut doc, &p) = original;
        }
    }
    let _ = std::panic::take_hook();
    eprintln!("{tried} mutations, {refused} refused with an error, {} panics", panics.len());
    assert!(tried > 500, "the mutation set shrank to {tried}");
    assert!(panics.is_empty(), "{}", panics.join("\n"));
}
