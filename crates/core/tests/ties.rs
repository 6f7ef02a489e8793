//! Ties, orders and names never decide an outcome (issue 36, item 1).
//!
//! Two Poisson sources of 1,500-byte datagrams (so their queues are often equal in bytes)
//! share a 10 Mbit/s bottleneck with an 11-packet buffer (odd limit + 1 = even, so two flows
//! can tie at the longest). The same two flows are declared again with their names, nodes
//! (hence addresses and flow keys) and positions in the file swapped. Under each discipline's
//! default tie rule (`ties = "neutral"`) the distribution over seeds of each flow's loss must
//! not move; under the declared alternative (`ties = "key"`) it does for SQF and DRR, which
//! shows the test can fail.

use qoelab_core::{run_toml, BuildOptions};

const SEEDS: u64 = 24;

/// One flow: name, sending node, Poisson payload rate.
type Flow<'a> = (&'a str, &'a str, &'a str);

fn scenario(queue: &str, flows: [Flow; 2], seed: u64) -> String {
    let mut t = format!(
        r#"
        [sim]
        duration = "4s"
        seed = {seed}
        [[links]]
        a = "first"
        b = "router"
        rate = "100Mbps"
        delay = "100us"
        [[links]]
        a = "second"
        b = "router"
        rate = "100Mbps"
        delay = "100us"
        [[links]]
        a = "router"
        b = "client"
        rate = "10Mbps"
        delay = "100us"
        queue_ab = {queue}
        "#
    );
    for (name, src, rate) in flows {
        t += &format!(
            r#"
            [[flows]]
            name = "{name}"
            src = "{src}"
            dst = "client"
            transport = {{ kind = "udp" }}
            app = {{ kind = "poisson", rate = "{rate}", payload = "1472B" }}
            "#
        );
    }
    t
}

/// Per seed, the loss ratio of the flow sent at `rates[0]` and of the one at `rates[1]`,
/// declared as `[("a", "first", rates[0]), ("b", "second", rates[1])]`, or with every name,
/// node and position swapped: `[("a", "first", rates[1]), ("b", "second", rates[0])]`.
fn losses(queue: &str, rates: [&str; 2], swapped: bool) -> Vec<[f64; 2]> {
    let (x, y) = if swapped { ("b", "a") } else { ("a", "b") };
    let flows = if swapped {
        [("a", "first", rates[1]), ("b", "second", rates[0])]
    } else {
        [("a", "first", rates[0]), ("b", "second", rates[1])]
    };
    (1..=SEEDS)
        .map(|seed| {
            let r = run_toml(&scenario(queue, flows, seed), &BuildOptions::default()).unwrap();
            [r.flow_value(x, "loss_ratio"), r.flow_value(y, "loss_ratio")]
        })
        .collect()
}

fn mean_se(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

/// Welch's t statistic of the difference of the two samples' means.
fn welch_t(a: &[f64], b: &[f64]) -> f64 {
    let ((ma, sa), (mb, sb)) = (mean_se(a), mean_se(b));
    let se = (sa * sa + sb * sb).sqrt();
    if se == 0.0 {
        return if ma == mb { 0.0 } else { f64::INFINITY };
    }
    (ma - mb) / se
}

/// The swap's effect on each flow's loss: (t statistic, mean before, mean after).
fn swap_effect(queue: &str, rates: [&str; 2]) -> [(f64, f64, f64); 2] {
    let (a, b) = (losses(queue, rates, false), losses(queue, rates, true));
    let mut out = [(0.0, 0.0, 0.0); 2];
    for (i, o) in out.iter_mut().enumerate() {
        let xa: Vec<f64> = a.iter().map(|r| r[i]).collect();
        let xb: Vec<f64> = b.iter().map(|r| r[i]).collect();
        // Seeds must give independent samples, or the comparison means nothing.
        assert!(xa.windows(2).any(|w| w[0] != w[1]), "{queue}: identical losses over seeds");
        *o = (welch_t(&xa, &xb), mean_se(&xa).0, mean_se(&xb).0);
    }
    out
}

/// Below its fair share (4 Mbit/s) against above it (8 Mbit/s), and two equal flows.
const CASES: [[&str; 2]; 2] = [["4Mbps", "8Mbps"], ["8Mbps", "8Mbps"]];

#[test]
fn swapping_names_and_keys_leaves_the_loss_distribution_unchanged_under_neutral_ties() {
    for queue in [
        r#"{ kind = "sqf", limit = "11p" }"#,
        r#"{ kind = "drr", limit = "11p" }"#,
        r#"{ kind = "pfq", limit = "11p" }"#,
        r#"{ kind = "fq_codel", limit = "11p" }"#,
    ] {
        for rates in CASES {
            for (i, (t, before, after)) in swap_effect(queue, rates).into_iter().enumerate() {
                // |t| < 3: the swap moves the mean by less than three standard errors.
                assert!(
                    t.abs() < 3.0,
                    "{queue}, {rates:?}: the {} flow's loss {before:.4} -> {after:.4} after the swap (t = {t:.1})",
                    rates[i]
                );
            }
        }
    }
}

#[test]
fn under_key_ties_the_swap_moves_sqf_and_drr_outcomes() {
    // The declared alternative gives every tie to the smaller key: the test above would
    // catch it. SQF: two equal flows; DRR (LQD ties only): the light flow.
    let moved = |queue: &str, rates: [&str; 2]| swap_effect(queue, rates).iter().any(|e| e.0.abs() > 3.0);
    assert!(moved(r#"{ kind = "sqf", limit = "11p", ties = "key" }"#, CASES[1]));
    assert!(moved(r#"{ kind = "drr", limit = "11p", ties = "key" }"#, CASES[0]));
}
