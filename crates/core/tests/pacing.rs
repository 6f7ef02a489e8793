//! TCP pacing as Linux's `fq` qdisc does (`pacing = true`, docs/models/tcp.md): a sender behind a
//! fast first hop no longer sends line-rate bursts, with the same goodput; off by default in
//! every profile; refused on MPTCP subflows.

mod support;

use qoelab_core::{run_toml, BuildOptions, RunResults};

/// One bulk flow S → D over a 1 Gbit/s first hop and a 20 Mbit/s, 20-ms bottleneck with a
/// buffer that never overflows, `extra` appended to the transport table.
fn run(extra: &str, cc: &str, limit: u32) -> RunResults {
    let toml = format!(
        r#"
        [sim]
        duration = "10s"
        [[links]]
        a = "S"
        b = "R"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "R"
        b = "D"
        rate = "20Mbps"
        delay = "20ms"
        queue = {{ kind = "fifo", limit = "{limit}p" }}
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp", cc = "{cc}", profile = "linux"{extra} }}
        app = {{ kind = "bulk" }}
        packet_log = true
        "#
    );
    run_toml(&toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

/// Of the gaps between consecutive data segments leaving S after `from_s`, the share shorter than
/// `us` µs.
fn short_gaps(r: &RunResults, from_s: f64, us: i64) -> f64 {
    let t = r.table("packets");
    let mut sent: Vec<i64> = t
        .f64s("size_bytes")
        .iter()
        .zip(t.f64s("sent_ns"))
        .filter(|(size, at)| **size > 1000.0 && *at >= from_s * 1e9)
        .map(|(_, at)| at as i64)
        .collect();
    sent.sort_unstable();
    let gaps: Vec<i64> = sent.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() > 1000, "only {} data segments", gaps.len());
    gaps.iter().filter(|g| **g < us * 1000).count() as f64 / gaps.len() as f64
}

/// Unpaced, each ACK releases segments back to back at the first hop's 1 Gbit/s (12 µs apart);
/// paced, segments leave at most at 120 % of cwnd / SRTT, about 0.5 ms apart at this
/// bottleneck. The goodput is the same (the buffer never overflows).
#[test]
fn pacing_spaces_the_segments_at_the_same_goodput() {
    for cc in ["cubic", "newreno"] {
        // Segment by segment (`tso` off): TSO buffers would leave back to back under pacing too.
        let plain = run(", tso = false", cc, 5000);
        let paced = run(", pacing = true, tso = false", cc, 5000);
        let (sp, sf) = (short_gaps(&plain, 5.0, 100), short_gaps(&paced, 5.0, 100));
        let (gp, gf) = (plain.flow_value("tcp", "goodput_bps"), paced.flow_value("tcp", "goodput_bps"));
        eprintln!("{cc}: gaps < 100 µs {:.3} → {:.3}; goodput {:.3} → {:.3} Mbit/s", sp, sf, gp / 1e6, gf / 1e6);
        assert_eq!(plain.flow_value("tcp", "drop_queue_pkts") + paced.flow_value("tcp", "drop_queue_pkts"), 0.0);
        assert!(sp > 0.3, "{cc}: unpaced, only {:.1} % of gaps are line-rate bursts", sp * 100.0);
        assert!(sf < 0.01, "{cc}: paced, {:.1} % of gaps are still bursts", sf * 100.0);
        assert!((gf - gp).abs() < 0.02 * gp, "{cc}: goodput changed by more than 2 % ({gp} → {gf})");
    }
}

#[test]
fn pacing_off_is_the_default_in_every_profile() {
    support::assert_off_by_default("pacing");
}

#[test]
fn mptcp_subflows_refuse_pacing() {
    let err = support::mptcp_error("pacing = true");
    assert!(err.contains("tcp.pacing") && err.contains("MPTCP"), "{err}");
}
