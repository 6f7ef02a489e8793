//! Full-duplex MPTCP (RFC 8684 §2: each end sends and receives at the data level): bulk data
//! both ways over two lossy paths, HTTP and the DASH player over an MPTCP connection (issue 20's
//! DASH over MPTCP), a path failing while the server sends, and determinism.

use qoelab_core::transport::Endpoint;
use qoelab_core::{BuildOptions, RunResults, Scenario, Simulation};
use std::path::PathBuf;

fn build(toml: &str) -> Simulation {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    sc.build(&BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Client C and server S joined through R1 and through R2 (`rate` each, one-way delay `d1` and
/// `d2` per link), `extra1`/`extra2` in the C–R1 / C–R2 links' tables, and one flow from C to S
/// whose transport, apps and extra keys are `flow` (MPTCP over both paths, or `tcp` on path 0
/// alone with `single`).
fn net(secs: u32, rate: &str, d1: &str, d2: &str, extra1: &str, extra2: &str, flow: &str, single: bool) -> String {
    let paths = if single {
        r#"src_addr = "10.1.0.1"
        dst_addr = "10.2.0.1""#
    } else {
        r#"subflows = [{ src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }, { src_addr = "10.1.1.1", dst_addr = "10.2.1.1" }]"#
    };
    format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = 11
        [[links]]
        a = "C"
        b = "R1"
        rate = "{rate}"
        delay = "{d1}"
        a_addr = "10.1.0.1"
        queue = {{ kind = "fifo", limit = "100p" }}
        {extra1}
        [[links]]
        a = "R1"
        b = "S"
        rate = "1Gbps"
        delay = "{d1}"
        b_addr = "10.2.0.1"
        [[links]]
        a = "C"
        b = "R2"
        rate = "{rate}"
        delay = "{d2}"
        a_addr = "10.1.1.1"
        queue = {{ kind = "fifo", limit = "100p" }}
        {extra2}
        [[links]]
        a = "R2"
        b = "S"
        rate = "1Gbps"
        delay = "{d2}"
        b_addr = "10.2.1.1"
        [[flows]]
        name = "f"
        src = "C"
        dst = "S"
        {paths}
        {flow}
        "#
    )
}

/// Checks both directions of flow 0 at the end: each end's application wrote `bytes`, the other
/// end got every one in order (its in-order count is exactly `bytes`), its connection-level
/// receive buffer holds nothing, each end saw its data DATA_ACKed, and what the subflows handed
/// up in order is the delivered bytes plus the copies dropped (so nothing was delivered twice).
fn both_ways_exactly_once(sim: &mut Simulation, bytes: f64, what: &str) -> RunResults {
    let f = &sim.flows[0];
    let (src, dst): (&dyn Endpoint, &dyn Endpoint) = (f.sender(), f.receiver());
    assert_eq!(dst.delivered_bytes(), Some(bytes as u64), "{what}: forward data delivered in order");
    assert_eq!(src.delivered_bytes(), Some(bytes as u64), "{what}: reverse data delivered in order");
    assert_eq!(dst.reorder_held_bytes(), 0, "{what}: destination's connection-level buffer empty");
    assert_eq!(src.reorder_held_bytes(), 0, "{what}: source's connection-level buffer empty");
    let r = sim.results();
    let v = |c: &str| r.flow_value("f", c);
    assert_eq!(v("delivered_bytes"), bytes, "{what}");
    assert_eq!((v("acked_bytes"), v("rev_acked_bytes")), (bytes, bytes), "{what}: DATA_ACKs both ways");
    let t = r.table("subflows");
    let sum = |c: &str| t.f64s(c).iter().sum::<f64>();
    assert_eq!(sum("subflow_in_order_bytes"), bytes + v("duplicate_data_bytes"), "{what}: forward copies");
    assert_eq!(sum("rev_subflow_in_order_bytes"), bytes + v("rev_duplicate_data_bytes"), "{what}: reverse copies");
    assert!(sum("scheduled_bytes") >= bytes && sum("rev_scheduled_bytes") >= bytes, "{what}: every DSN scheduled");
    r
}

/// Bulk data both ways at once (8 MB each) over two paths with 1 % random loss on every
/// direction of both access links: every byte arrives exactly once, in order, in each
/// direction; both directions lose and retransmit; both ends' subflows carry data.
#[test]
fn bidirectional_bulk_over_lossy_paths_delivers_every_byte_once_each_way() {
    let loss = r#"loss_ab = { kind = "bernoulli", p = 0.01 }
        loss_ba = { kind = "bernoulli", p = 0.01 }"#;
    for sched in ["min_rtt", "round_robin", "redundant"] {
        for coupled in ["lia", "olia", "uncoupled"] {
            let flow = format!(
                r#"transport = {{ kind = "mptcp", scheduler = "{sched}", coupled = "{coupled}" }}
        app = {{ kind = "bulk", bytes = "8MB" }}
        peer_app = {{ kind = "bulk", bytes = "8MB" }}"#
            );
            let mut sim = build(&net(60, "10Mbps", "5ms", "15ms", loss, loss, &flow, false));
            sim.run();
            let what = format!("{sched}/{coupled}");
            let r = both_ways_exactly_once(&mut sim, 8e6, &what);
            let v = |c: &str| r.flow_value("f", c);
            eprintln!(
                "{what}: retransmitted fwd {} rev {}; duplicate data fwd {} rev {}",
                v("retransmitted_segments"),
                v("rev_retransmitted_segments"),
                v("duplicate_data_bytes"),
                v("rev_duplicate_data_bytes")
            );
            assert!(
                v("retransmitted_segments") > 0.0 && v("rev_retransmitted_segments") > 0.0,
                "{what}: loss both ways"
            );
            let t = r.table("subflows");
            for c in ["scheduled_bytes", "rev_scheduled_bytes"] {
                assert!(t.f64s(c).iter().all(|&b| b > 0.0), "{what}: {c} on both subflows: {:?}", t.f64s(c));
            }
            // Data went both ways on each path: the packet counters of both directions (at least
            // 0.5 MB of the 8 MB: under the linux profile's autotuned connection window, which
            // starts at 64 KB, min_rtt with OLIA keeps 12 % of one direction on the slow path).
            assert!(
                t.f64s("recv_bytes").iter().zip(t.f64s("rev_recv_bytes")).all(|(a, b)| *a > 0.5e6 && b > 0.5e6),
                "{what}: {:?} {:?}",
                t.f64s("recv_bytes"),
                t.f64s("rev_recv_bytes")
            );
        }
    }
}

/// A one-rung ladder of `n` constant 2-s segments of `size` bytes, written to a temp dir.
fn ladder(tag: &str, n: u32, size: u64, bandwidth: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qoelab-mptcp-dash-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("representation,segment_s,segment,duration_s,size_bytes\n");
    for k in 0..n {
        csv += &format!("r,2,{k},2,{size}\n");
    }
    std::fs::write(dir.join("s.csv"), csv).unwrap();
    std::fs::write(
        dir.join("m.mpd"),
        format!(
            r#"<MPD type="static" mediaPresentationDuration="PT{}S"><Period><AdaptationSet><SegmentTemplate timescale="1" duration="2"/><Representation id="r" bandwidth="{bandwidth}"/></AdaptationSet></Period></MPD>"#,
            2 * n
        ),
    )
    .unwrap();
    dir
}

/// The DASH player (client, flow source) fetching 30 segments of 2 s at 16 Mbit/s (4 MB each)
/// from an HTTP server over `transport`.
fn dash(dir: &std::path::Path, transport: &str) -> String {
    let d = dir.display();
    format!(
        r#"transport = {transport}
        app = {{ kind = "dash", mpd = "{d}/m.mpd", segments = "{d}/s.csv", max_buffer = "1000s" }}
        peer_app = {{ kind = "http_server" }}"#
    )
}

/// HTTP objects over MPTCP: the client's GETs go client → server, the objects come back;
/// every object completes and every response byte arrives once.
#[test]
fn http_client_and_server_over_mptcp() {
    let flow = r#"transport = { kind = "mptcp" }
        app = { kind = "http_client", size = "200KB", dist = "exponential", objects = 50 }
        peer_app = { kind = "http_server", header = "250B" }"#;
    let mut sim = build(&net(60, "10Mbps", "5ms", "10ms", "", "", flow, false));
    sim.run();
    let r = sim.results();
    let v = |c: &str| r.flow_value("f", c);
    assert_eq!((v("http_objects"), v("http_served")), (50.0, 50.0));
    // Forward: 50 requests of 300 B; reverse: the objects and their headers, in order, once.
    assert_eq!(v("delivered_bytes"), 50.0 * 300.0);
    // `http_bytes` counts the responses with their headers.
    assert!(v("http_bytes") > 50.0 * 250.0);
    assert_eq!(v("rev_acked_bytes"), v("http_bytes"), "the server's bytes, DATA_ACKed");
    assert_eq!(sim.flows[0].sender().delivered_bytes(), Some(v("http_bytes") as u64), "delivered in order");
    assert_eq!(v("rev_duplicate_data_bytes"), 0.0, "no loss, no copies");
}

/// DASH over MPTCP on two disjoint loss-free 10 Mbit/s paths completes its session, and its mean
/// per-segment download rate exceeds what the same player gets over single-path TCP on one of
/// those paths (same seed): the segments come back over both subflows.
#[test]
fn dash_over_mptcp_completes_and_downloads_faster_than_one_path() {
    let dir = ladder("rate", 30, 4_000_000, 16_000_000);
    let run = |flow: String, single: bool| {
        let mut sim = build(&net(120, "10Mbps", "5ms", "5ms", "", "", &flow, single));
        sim.run();
        let r = sim.results();
        let v = |c: &str| r.flow_value("f", c);
        (v("dash_segments"), v("dash_mean_rate_bps"), v("dash_played_s"), v("dash_startup_s"), r)
    };
    let tcp = run(dash(&dir, r#"{ kind = "tcp" }"#), true);
    let mp = run(dash(&dir, r#"{ kind = "mptcp" }"#), false);
    eprintln!(
        "segments tcp {} mptcp {}; mean segment rate tcp {:.2} Mbit/s, mptcp {:.2} Mbit/s; start-up tcp {:.3} s, mptcp {:.3} s",
        tcp.0,
        mp.0,
        tcp.1 / 1e6,
        mp.1 / 1e6,
        tcp.3,
        mp.3
    );
    assert_eq!(mp.0, 30.0, "every segment downloaded over MPTCP");
    assert_eq!(tcp.0, 30.0, "and over TCP");
    assert!((mp.2 - 60.0).abs() < 1e-9, "the whole clip played: {}", mp.2);
    assert!(tcp.1 < 10e6, "single path: below its link rate ({})", tcp.1);
    assert!(mp.1 > 1.3 * tcp.1, "two paths download faster: {} vs {}", mp.1, tcp.1);
    // Both subflows carried the segments (reverse direction), and the player's GETs went forward.
    let t = mp.4.table("subflows");
    let rev = t.f64s("rev_scheduled_bytes");
    assert!(rev.iter().all(|&b| b > 10e6), "each subflow carried a share of the 120 MB: {rev:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Path 2 fails for good at 10 s (an outage of both directions of its access link) while the
/// server streams segments: the server's subflow on it times out, its data is reinjected on the
/// other subflow, and the session completes; every byte of the server's once, in order.
#[test]
fn a_failed_path_mid_session_is_reinjected_and_the_session_completes() {
    let dir = ladder("fail", 30, 2_000_000, 8_000_000);
    // A fixed connection window: under autotuning the first 64 KB window fills and opportunistic
    // retransmission moves chunks between the paths before the failure, which is not this test's.
    let flow = dash(&dir, r#"{ kind = "mptcp", tcp = { rcv_autotune = false } }"#)
        + r#"
        [[outages]]
        links = ["C->R2", "R2->C"]
        at = "10s"
        duration = "1000s""#;
    let mut sim = build(&net(200, "10Mbps", "5ms", "5ms", "", "", &flow, false));
    sim.run();
    let server_bytes = sim.flows[0].sender().delivered_bytes().unwrap();
    assert_eq!(sim.flows[0].sender().reorder_held_bytes(), 0, "the client's buffer is empty");
    let r = sim.results();
    let v = |c: &str| r.flow_value("f", c);
    eprintln!(
        "segments {}, rev reinjected {} B, rev rto {}, rev duplicate data {} B, stalls {}",
        v("dash_segments"),
        v("rev_reinjected_bytes"),
        v("rev_rto_count"),
        v("rev_duplicate_data_bytes"),
        v("dash_stalls")
    );
    assert_eq!(v("dash_segments"), 30.0, "the session completes");
    assert!((v("dash_played_s") - 60.0).abs() < 1e-9, "the whole clip played");
    assert_eq!(v("rev_acked_bytes") as u64, server_bytes, "what the server wrote was delivered in order");
    assert!(server_bytes >= 30 * 2_000_000, "every segment's bytes: {server_bytes}");
    let t = r.table("subflows");
    let col = |c: &str| t.f64s(c).to_vec();
    assert!(col("rev_rto_count")[1] > 0.0, "the server's subflow on the failed path timed out");
    assert!(col("rev_reinjected_bytes")[0] > 0.0, "its data went again on the surviving subflow");
    assert_eq!(col("rev_reinjected_bytes")[1], 0.0, "nothing goes back to the failed path");
    assert!(col("rev_scheduled_bytes")[0] > col("rev_scheduled_bytes")[1], "the surviving path carried the rest");
    assert_eq!(
        col("rev_subflow_in_order_bytes").iter().sum::<f64>(),
        server_bytes as f64 + v("rev_duplicate_data_bytes"),
        "copies dropped, each byte delivered once"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Same scenario and seed, same results (digest of every table, twice) for a full-duplex
/// connection with loss on both directions and probes on.
#[test]
fn full_duplex_runs_are_deterministic() {
    let loss = r#"loss_ab = { kind = "bernoulli", p = 0.02 }
        loss_ba = { kind = "bernoulli", p = 0.02 }"#;
    let flow = r#"transport = { kind = "mptcp", coupled = "olia" }
        app = { kind = "bulk", bytes = "4MB" }
        peer_app = { kind = "bulk", bytes = "6MB" }
        [output]
        probes = ["subflow", "cwnd", "retransmit"]"#;
    let toml = net(30, "10Mbps", "5ms", "20ms", loss, "", flow, false);
    let once = || {
        let mut sim = build(&toml);
        sim.run();
        (sim.events_dispatched(), sim.results().digest())
    };
    let (a, b) = (once(), once());
    assert_eq!(a, b);
    // The subflow probe has both ends' sending directions.
    let mut sim = build(&toml);
    sim.run();
    let r = sim.results();
    let ends = r.table("probe_subflow").f64s("end").to_vec();
    assert!(ends.contains(&0.0) && ends.contains(&1.0), "rows from both ends");
}
