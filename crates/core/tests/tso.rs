//! TSO/GSO-sized sending (`tso = true`, docs/models/tcp.md, `transport::tcp::tso`): a Linux
//! sender releases new data in buffers of about 1 ms at its pacing rate, defers small sends for
//! the next ACK, and under `fq` pacing sends each buffer back to back; off by default in every
//! profile; refused on MPTCP subflows.

mod support;

use qoelab_core::{run_toml, BuildOptions, RunResults};

/// One bulk CUBIC flow S → D over a 1 Gbit/s first hop and a `rate`, `delay` bottleneck whose
/// buffer never overflows, `extra` appended to the transport table.
fn run(extra: &str, rate: &str, delay: &str) -> RunResults {
    let toml = format!(
        r#"
        [sim]
        duration = "10s"
        [[links]]
        a = "S"
        b = "R"
        rate = "1Gbps"
        delay = "100us"
        [[links]]
        a = "R"
        b = "D"
        rate = "{rate}"
        delay = "{delay}"
        queue = {{ kind = "fifo", limit = "5000p" }}
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp", cc = "cubic", profile = "linux"{extra} }}
        app = {{ kind = "bulk" }}
        packet_log = true
        "#
    );
    run_toml(&toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

/// Data segments leaving S after `from_s`, grouped into bursts: consecutive departures less than
/// 20 µs apart (a 1,500-B packet takes 12 µs at the first hop's 1 Gbit/s). Returns the burst
/// lengths in segments.
fn bursts(r: &RunResults, from_s: f64) -> Vec<usize> {
    let t = r.table("packets");
    let mut sent: Vec<i64> = t
        .f64s("size_bytes")
        .iter()
        .zip(t.f64s("sent_ns"))
        .filter(|(size, at)| **size > 1000.0 && *at >= from_s * 1e9)
        .map(|(_, at)| at as i64)
        .collect();
    sent.sort_unstable();
    assert!(sent.len() > 1000, "only {} data segments", sent.len());
    let mut out = vec![1usize];
    for w in sent.windows(2) {
        if w[1] - w[0] < 20_000 {
            *out.last_mut().unwrap() += 1;
        } else {
            out.push(1);
        }
    }
    out
}

fn mean(v: &[usize]) -> f64 {
    v.iter().sum::<usize>() as f64 / v.len() as f64
}

/// Under `fq` pacing a Linux sender paces buffers, not segments: on a 100 Mbit/s, 2-ms path the
/// pacing rate is about 120 % of 100 Mbit/s = 15 MB/s, 14.6 kB per 2^-10 s, so
/// `tcp_tso_autosize` gives 10 segments of 1,448 B (the 6-ms minimum RTT adds 65,536 >> 11 = 32
/// B). Paced segment by segment the sender never bursts; paced by TSO buffers, it sends bursts
/// of about that size. Goodput is the same.
#[test]
fn paced_tso_sends_autosized_bursts() {
    let paced = run(", pacing = true, tso = false", "100Mbps", "2ms");
    let tso = run(", pacing = true, tso = true", "100Mbps", "2ms");
    let (bp, bt) = (bursts(&paced, 3.0), bursts(&tso, 3.0));
    let (gp, gt) = (paced.flow_value("tcp", "goodput_bps"), tso.flow_value("tcp", "goodput_bps"));
    eprintln!(
        "mean burst {:.2} → {:.2} segments; goodput {:.2} → {:.2} Mbit/s",
        mean(&bp),
        mean(&bt),
        gp / 1e6,
        gt / 1e6
    );
    assert!(mean(&bp) < 1.2, "paced per segment, yet bursts of {:.2}", mean(&bp));
    assert!((7.0..=13.0).contains(&mean(&bt)), "paced per TSO buffer: bursts of {:.2}, not about 10", mean(&bt));
    assert!(bt.iter().max().copied().unwrap_or(0) <= 45, "a burst above the 64-kB GSO limit");
    assert!((gt - gp).abs() < 0.02 * gp, "goodput changed by more than 2 % ({gp} → {gt})");
}

/// Unpaced, each ACK of a delayed-ACK receiver releases two or three segments; with TSO
/// deferral (the `linux` default) the sender waits for a third of its window (or a full buffer)
/// unless the last send was over 1 ms ago or no ACK is due within min(1 ms, SRTT/2), so it
/// sends fewer, larger bursts.
#[test]
fn deferral_sends_fewer_larger_bursts() {
    let plain = run(", tso = false", "100Mbps", "10ms");
    let tso = run("", "100Mbps", "10ms");
    let (bp, bt) = (bursts(&plain, 3.0), bursts(&tso, 3.0));
    let (gp, gt) = (plain.flow_value("tcp", "goodput_bps"), tso.flow_value("tcp", "goodput_bps"));
    eprintln!(
        "bursts {} → {}, mean {:.2} → {:.2} segments; goodput {:.2} → {:.2} Mbit/s",
        bp.len(),
        bt.len(),
        mean(&bp),
        mean(&bt),
        gp / 1e6,
        gt / 1e6
    );
    assert!(mean(&bt) > 1.5 * mean(&bp), "deferral did not make bursts larger ({:.2} vs {:.2})", mean(&bt), mean(&bp));
    assert!((gt - gp).abs() < 0.05 * gp, "goodput changed by more than 5 % ({gp} → {gt})");
}

#[test]
fn tso_is_on_in_linux_only_and_runs_are_deterministic() {
    // On by default in `linux` (Linux always builds GSO buffers), off in the other profiles.
    let d = |profile: &str, extra: &str| support::one_link_digest(profile, extra);
    assert_eq!(d("linux", ""), d("linux", ", tso = true"), "linux: tso is off by default");
    assert_ne!(d("linux", ""), d("linux", ", tso = false"), "linux: tso = false changed nothing");
    for profile in ["rfc", "ns3", "freebsd"] {
        assert_eq!(d(profile, ""), d(profile, ", tso = false"), "{profile}: tso is on by default");
        assert_ne!(d(profile, ""), d(profile, ", tso = true"), "{profile}: tso = true changed nothing");
        assert_eq!(d(profile, ", tso = true"), d(profile, ", tso = true"), "{profile}: not deterministic");
    }
    // An explicit `overhead` takes the place of the profile's TSO (the two would both time the
    // sends): accepted, and the same run as with `tso = false` said.
    assert_eq!(d("linux", ", overhead = \"1ms\""), d("linux", ", overhead = \"1ms\", tso = false"));
}

#[test]
fn mptcp_subflows_refuse_tso() {
    let err = support::mptcp_error("tso = true");
    assert!(err.contains("tcp.tso") && err.contains("MPTCP"), "{err}");
}
