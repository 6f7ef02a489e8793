//! Random sender overhead (`overhead`, ns-2's `overhead_`; docs/models/tcp.md): off by default
//! and then byte-identical to a run without the key; deterministic and drawn from the flow's
//! own stream; a mean wait of overhead/2 per send; and the property it exists for, Floyd &
//! Jacobson's (1992, §4): with one bottleneck service time of overhead, the goodput split of two
//! flows through a drop-tail queue no longer swings with sub-service-time RTT offsets.

mod support;

use qoelab_core::{run_toml, BuildOptions, RunResults};

fn run(toml: &str) -> RunResults {
    run_toml(toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

fn build_error(toml: &str) -> String {
    run_toml(toml, &BuildOptions::default()).err().expect("refused").to_string()
}

/// Bulk flows through a 10 Mbit/s drop-tail bottleneck R1 → R2 (1 ms, `buffer` packets), flow i
/// with base RTT `rtts_ms[i]` (its access links carry the rest, half on each side, as the
/// `rtt_unfairness` validation builds it), `extra[i]` appended to its transport table.
fn dumbbell(rtts_ms: &[f64], extra: &[&str], buffer: u32, secs: u32, seed: u64) -> String {
    let mut t = format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = {seed}
        [[links]]
        a = "R1"
        b = "R2"
        rate = "10Mbps"
        delay = "1ms"
        queue = {{ kind = "fifo", limit = "{buffer}p" }}
        "#
    );
    for (i, (rtt, x)) in rtts_ms.iter().zip(extra).enumerate() {
        let side = (rtt / 2.0 - 1.0) / 2.0;
        t += &format!(
            r#"
            [[links]]
            a = "S{i}"
            b = "R1"
            rate = "10Gbps"
            delay = "{side}ms"
            [[links]]
            a = "R2"
            b = "D{i}"
            rate = "10Gbps"
            delay = "{side}ms"
            [[flows]]
            name = "tcp{i}"
            src = "S{i}"
            dst = "D{i}"
            start = "{}ms"
            transport = {{ kind = "tcp", cc = "newreno"{x} }}
            app = {{ kind = "bulk" }}
            "#,
            100 + 10 * i
        );
    }
    t
}

/// One bottleneck service time of a 1,500-byte packet at 10 Mbit/s.
const SERVICE: &str = "1.2ms";

#[test]
fn off_is_the_default_and_byte_identical() {
    for profile in ["linux", "rfc", "ns3", "freebsd"] {
        let base = support::one_link_digest(profile, "");
        assert_eq!(
            base,
            support::one_link_digest(profile, ", overhead = \"0s\""),
            "{profile}: overhead 0 moved the run"
        );
        let on = support::one_link_digest(profile, ", overhead = \"1ms\"");
        assert_ne!(base, on, "{profile}: overhead = 1ms changed nothing");
        assert_eq!(on, support::one_link_digest(profile, ", overhead = \"1ms\""), "{profile}: not deterministic");
    }
}

/// Same seed, same run; another seed, other draws; and a flow's draws are its own: flow tcp0's
/// results do not change when a flow on a disjoint path turns its overhead on or off.
#[test]
fn draws_are_seeded_and_per_flow() {
    let two = |x1: &str, seed: u64| {
        let mut t = dumbbell(&[20.0], &[", overhead = \"1ms\""], 100, 5, seed);
        t += &format!(
            r#"
            [[links]]
            a = "X"
            b = "R1"
            rate = "10Mbps"
            delay = "5ms"
            [[links]]
            a = "R1"
            b = "Y"
            rate = "10Mbps"
            delay = "5ms"
            [[flows]]
            name = "other"
            src = "X"
            dst = "Y"
            transport = {{ kind = "tcp", cc = "newreno"{x1} }}
            app = {{ kind = "bulk" }}
            "#
        );
        run(&t)
    };
    let a = two("", 1);
    assert_eq!(a.digest(), two("", 1).digest());
    assert_ne!(a.digest(), two("", 2).digest(), "the seed does not reach the overhead's draws");
    let b = two(", overhead = \"3ms\"", 1);
    for col in ["goodput_bps", "segments_sent", "fast_retransmits", "srtt_s"] {
        assert_eq!(
            a.flow_value("tcp0", col),
            b.flow_value("tcp0", col),
            "tcp0 {col} moved with the other flow's overhead"
        );
    }
    assert_ne!(a.flow_value("other", "segments_sent"), b.flow_value("other", "segments_sent"));
}

/// One segment in flight (a one-segment window, every segment ACKed at once): each ACK lets one
/// segment out after a wait uniform in [0, overhead], so the send-to-send interval grows by
/// overhead/2 on average (the closed form of the uniform's mean), never by more than overhead,
/// and spreads as a uniform's (standard deviation overhead/√12).
#[test]
fn the_mean_wait_is_half_the_overhead() {
    let one = |extra: &str| {
        let t = format!(
            r#"
            [sim]
            duration = "60s"
            [[links]]
            a = "S"
            b = "D"
            rate = "100Mbps"
            delay = "10ms"
            [[flows]]
            name = "tcp"
            src = "S"
            dst = "D"
            transport = {{ kind = "tcp", profile = "rfc", rcv_buf = "1448B", delayed_ack = false{extra} }}
            app = {{ kind = "bulk" }}
            packet_log = true
            "#
        );
        let r = run(&t);
        let p = r.table("packets");
        let sent: Vec<f64> =
            p.f64s("size_bytes").iter().zip(p.f64s("sent_ns")).filter(|(s, _)| **s > 1000.0).map(|(_, t)| t).collect();
        let gaps: Vec<f64> = sent.windows(2).map(|w| (w[1] - w[0]) / 1e6).collect();
        assert!(gaps.len() > 2000, "only {} gaps", gaps.len());
        gaps
    };
    let base = one("");
    let (lo, hi) = base.iter().fold((f64::MAX, f64::MIN), |(a, b), &g| (a.min(g), b.max(g)));
    assert!(hi - lo < 1e-6, "without overhead the interval is constant ({lo}..{hi} ms)");
    let o = 2.0; // ms
    let gaps = one(", overhead = \"2ms\"");
    let added: Vec<f64> = gaps.iter().map(|g| g - lo).collect();
    let n = added.len() as f64;
    let mean = added.iter().sum::<f64>() / n;
    let sd = (added.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    eprintln!(
        "{} sends: mean added wait {mean:.4} ms (closed form {}), sd {sd:.4} (closed form {:.4})",
        n,
        o / 2.0,
        o / 12f64.sqrt()
    );
    // The sampling error of the mean is o/√(12 n) ≈ 0.011 ms for n ≈ 2700: ±0.05 ms is > 4 σ.
    assert!((mean - o / 2.0).abs() < 0.05, "mean added wait {mean} ms, expected {}", o / 2.0);
    assert!((sd / (o / 12f64.sqrt()) - 1.0).abs() < 0.1, "spread {sd} ms is not a uniform's");
    assert!(added.iter().all(|&x| x > -1e-6 && x <= o + 1e-6), "a wait outside [0, overhead]");
}

/// ln(goodput of the short-RTT flow / goodput of the long-RTT flow) for RTTs 20/40 ms raised by
/// sub-service-time offsets, per phase: 60-s runs, averaged over `seeds` seeds.
fn log_ratios(extra: &str, seeds: u64) -> Vec<f64> {
    // Offsets (ms) in [0, 1.2): phases of each flow's RTT against the service time.
    let phases = [(0.0, 0.0), (0.0, 0.3), (0.0, 0.6), (0.0, 0.9), (0.3, 0.0), (0.6, 0.0), (0.9, 0.0), (0.45, 1.05)];
    phases
        .iter()
        .map(|(a, b)| {
            let ln = |seed| {
                let r = run(&dumbbell(&[20.0 + a, 40.0 + b], &[extra, extra], 100, 60, seed));
                (r.flow_value("tcp0", "goodput_bps") / r.flow_value("tcp1", "goodput_bps")).ln()
            };
            (1..=seeds).map(ln).sum::<f64>() / seeds as f64
        })
        .collect()
}

fn range(v: &[f64]) -> f64 {
    v.iter().cloned().fold(f64::MIN, f64::max) - v.iter().cloned().fold(f64::MAX, f64::min)
}

/// Floyd & Jacobson §4: without randomisation, which of two flows through a drop-tail queue
/// finds it full depends on its RTT modulo the service time, and the goodput split swings with
/// sub-service-time offsets; with a random overhead of one service time at the senders it does
/// not. Measured as the range of ln(x_short / x_long) over eight phases. Without overhead a run
/// does not depend on the seed (nothing else draws here); with it, each phase is the mean of six
/// seeds, so that what remains is the sampling noise of 60-s runs (about 0.18 per run, measured),
/// not a phase.
#[test]
fn one_service_time_of_overhead_removes_the_phase_effect() {
    let off = log_ratios("", 1);
    let on = log_ratios(&format!(", overhead = \"{SERVICE}\""), 6);
    let (r_off, r_on) = (range(&off), range(&on));
    let fmt = |v: &[f64]| v.iter().map(|x| format!("{x:+.2}")).collect::<Vec<_>>().join(" ");
    eprintln!(
        "ln(x_short/x_long) per phase\n  without: {} (range {r_off:.2})\n  with:    {} (range {r_on:.2})",
        fmt(&off),
        fmt(&on)
    );
    assert!(r_off > 1.0, "no phase effect to remove (range {r_off:.2}): the test lost its point");
    assert!(r_on * 3.0 < r_off, "overhead shrank the range only from {r_off:.2} to {r_on:.2}");
    // With the bias gone, no phase hands the long-RTT flow a clear majority.
    assert!(on.iter().all(|&x| x > -0.15), "with overhead a phase still favours the long-RTT flow: {}", fmt(&on));
}

#[test]
fn bad_values_are_refused_with_the_key() {
    let with = |x: &str| dumbbell(&[20.0], &[x], 100, 1, 1);
    for (x, want) in [
        (", overhead = \"-1ms\"", "negative"),
        (", overhead = \"fast\"", "expected a time"),
        (", overhead = 5", "overhead"),
        (", overhead = \"2s\"", "at most 1s"),
        (", overhead = \"1ms\", pacing = true", "not with pacing"),
        (", overhead = \"1ms\", tso = true", "not with tso"),
    ] {
        let err = build_error(&with(x));
        assert!(err.contains("overhead") && err.contains(want), "{x}: {err}");
        assert!(err.contains("flows[0]"), "{x}: the error does not name the flow: {err}");
    }
    // A zero overhead is no overhead: it combines with anything.
    run(&with(", overhead = \"0s\", pacing = true"));
}

#[test]
fn mptcp_subflows_refuse_overhead() {
    let err = support::mptcp_error("overhead = \"1ms\"");
    assert!(err.contains("tcp.overhead") && err.contains("MPTCP"), "{err}");
}
