//! Scheduled handovers (`[[handovers]]`, `crates/core/src/link/handover.rs`): packets whose
//! serialisation starts after the handover see the new rate, delay and loss, to the nanosecond
//! of hand-computed wire times; nothing crosses during the association gap; MPTCP keeps the
//! connection over its other path and uses the handed-over subflow again afterwards; TCP
//! recovers after the gap; bad entries are errors at their key path.

use qoelab_core::{BuildOptions, RunResults, Scenario, Simulation};
use std::path::PathBuf;

fn build(toml: &str) -> Simulation {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    sc.build(&BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn run(toml: &str) -> RunResults {
    let mut sim = build(toml);
    sim.run();
    sim.results()
}

/// A → B over one link of 8 Mbit/s and 10 ms, a UDP CBR flow of 1000-B datagrams every 4 ms
/// (1.944 Mbit/s of payload: the queue stays empty, so each serialisation starts as the packet is sent), and
/// the handovers `extra`.
fn cbr(extra: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "3s"
        [[links]]
        a = "A"
        b = "B"
        rate = "8Mbps"
        delay = "10ms"
        [[flows]]
        name = "u"
        src = "A"
        dst = "B"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "1944kbps", payload = "{payload}B" }}
        packet_log = true
        {extra}
        "#,
        payload = 1000 - 28
    )
}

const HANDOVER: &str = r#"
        [[handovers]]
        links = ["A->B"]
        at = "1s"
        gap = "100ms"
        rate = "4Mbps"
        delay = "25ms"
"#;

/// Wire time of `bytes` at `bps`, rounded up to the nanosecond as the port rounds it.
fn tx_ns(bytes: f64, bps: f64) -> f64 {
    (bytes * 8e9 / bps).ceil()
}

#[test]
fn packets_after_the_handover_see_the_new_rate_and_delay_and_none_cross_the_gap() {
    let r = run(&cbr(HANDOVER));
    let p = r.table("packets");
    let (sent, recv, size) = (p.f64s("sent_ns"), p.f64s("recv_ns"), p.f64s("size_bytes"));
    assert!(size.iter().all(|&s| s == 1000.0), "1000-B datagrams");
    let (at, end) = (1e9, 1.1e9);
    let (mut before, mut after, mut lost) = (0, 0, 0);
    for i in 0..p.rows() {
        let (s, r) = (sent[i], recv[i]);
        // Old association: 1 ms serialising + 10 ms; new one: 2 ms + 25 ms.
        let old = s + tx_ns(1000.0, 8e6) + 10e6;
        let new = s + tx_ns(1000.0, 4e6) + 25e6;
        if old <= at {
            assert_eq!(r, old, "packet sent at {s} ns: old rate and delay");
            before += 1;
        } else if s >= end {
            if r >= 0.0 {
                assert_eq!(r, new, "packet sent at {s} ns: new rate and delay");
                after += 1;
            }
        } else {
            assert!(r < 0.0, "packet sent at {s} ns, on the wire during the gap, arrived at {r}");
            lost += 1;
        }
        assert!(!(r > at && r < end), "a packet arrived during the gap, at {r} ns");
    }
    // 250 packets a second: 250 before (the last sent at 0.996 s arrives at 1.007 s: lost with
    // the old association, as is the one at 0.992 s arriving at 1.003 s), the gap's 25 lost.
    assert_eq!(before, 248, "sent before 0.989 s");
    assert_eq!(lost, 2 + 25, "on the wire at 1 s, or sent during the gap");
    // From 1.1 s every packet arrives, 27 ms later, until the run ends at 3 s: those sent at
    // 1.100, 1.104, …, 2.972 s.
    assert_eq!(after, 469, "traffic resumes on the new access point");
    // The gap is in the outages table and counted as down drops of that direction only.
    let o = r.table("outages");
    assert_eq!((o.strs("link"), o.f64s("start_ns"), o.f64s("end_ns")), (vec!["A->B".into()], vec![at], vec![end]));
    let links = r.table("links");
    let down: Vec<(String, f64)> = links.strs("link").into_iter().zip(links.f64s("drop_down_pkts")).collect();
    assert_eq!(down, vec![("A->B".into(), 27.0), ("B->A".into(), 0.0)]);
}

#[test]
fn an_instant_handover_changes_loss_and_a_delay_cut_keeps_the_line_in_order() {
    // At 1 s, no gap: the delay falls from 10 ms to 2 ms and every packet is lost from then on
    // (p = 1) until 2 s, when the loss ends.
    let r = run(&cbr(r#"
        [[handovers]]
        links = ["A->B"]
        at = "1s"
        delay = "2ms"
        loss = { kind = "bernoulli", p = 1.0 }
        [[handovers]]
        links = ["A->B"]
        at = "2s"
        loss = { kind = "none" }
"#));
    let p = r.table("packets");
    let (sent, recv) = (p.f64s("sent_ns"), p.f64s("recv_ns"));
    let mut last = 0.0;
    for i in 0..p.rows() {
        let s = sent[i];
        if s < 1e9 {
            assert_eq!(recv[i], s + 1e6 + 10e6, "before: 1 ms + 10 ms");
        } else if s < 2e9 {
            assert!(recv[i] < 0.0, "lost at {s}");
        } else if recv[i] >= 0.0 {
            assert_eq!(recv[i], s + 1e6 + 2e6, "after: 1 ms + 2 ms");
        }
        if recv[i] >= 0.0 {
            assert!(recv[i] >= last, "arrivals in order");
            last = recv[i];
        }
    }
    assert!(r.tables.iter().all(|t| t.name != "outages"), "no gap, no outage");

    // A delay cut with packets on the wire: the new ones queue behind them on the line.
    let r = run(&cbr(r#"
        [[handovers]]
        links = ["A->B"]
        at = "1s"
        delay = "1ms"
"#));
    let p = r.table("packets");
    let (sent, recv) = (p.f64s("sent_ns"), p.f64s("recv_ns"));
    // The packet sent at 0.996 s arrives at 1.007 s; the one sent at 1.000 s would arrive at
    // 1.002 s, so it waits for it (1.007 s), and the next (1.004 s → 1.006 s) too.
    let at = |t: f64| recv[sent.iter().position(|&s| s == t).unwrap()];
    assert_eq!(at(0.996e9), 1.007e9);
    assert_eq!(at(1.000e9), 1.007e9);
    assert_eq!(at(1.004e9), 1.007e9);
    assert_eq!(at(1.008e9), 1.010e9);
    assert!(recv.windows(2).all(|w| w[1] >= w[0]), "in order");
}

/// A DASH session over MPTCP (two paths of 10 Mbit/s) or TCP (path 1) while the client's
/// path-1 access point hands over at 20 s (both directions down for 2 s, then 5 Mbit/s and
/// 20 ms): MPTCP's other subflow carries the session through the gap and the handed-over
/// subflow carries video again afterwards; TCP's connection survives the gap (RTOs) and the
/// session completes on the new access point.
#[test]
fn mptcp_keeps_the_session_over_the_other_path_and_recovers_the_subflow() {
    let dir = ladder("handover", 30, 2_000_000);
    let handover = r#"
        [[handovers]]
        links = ["C->R1", "R1->C"]
        at = "20s"
        gap = "2s"
        rate = "5Mbps"
        delay = "20ms"
"#;
    let session = |mptcp: bool| {
        let transport = if mptcp {
            r#"transport = { kind = "mptcp" }
        subflows = [{ src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }, { src_addr = "10.1.1.1", dst_addr = "10.2.1.1" }]"#
        } else {
            r#"transport = { kind = "tcp", profile = "linux" }
        src_addr = "10.1.0.1"
        dst_addr = "10.2.0.1""#
        };
        let toml = format!(
            r#"
        [sim]
        duration = "200s"
        seed = 3
        [output]
        probes = ["subflow"]
        [[links]]
        a = "C"
        b = "R1"
        rate = "10Mbps"
        delay = "5ms"
        a_addr = "10.1.0.1"
        [[links]]
        a = "R1"
        b = "S"
        rate = "1Gbps"
        delay = "1ms"
        b_addr = "10.2.0.1"
        [[links]]
        a = "C"
        b = "R2"
        rate = "10Mbps"
        delay = "5ms"
        a_addr = "10.1.1.1"
        [[links]]
        a = "R2"
        b = "S"
        rate = "1Gbps"
        delay = "1ms"
        b_addr = "10.2.1.1"
        [[flows]]
        name = "f"
        src = "C"
        dst = "S"
        {transport}
        peer_app = {{ kind = "http_server" }}
        app = {{ kind = "dash", mpd = "{mpd}", segments = "{seg}", abr = {{ kind = "throughput" }}, max_buffer = "30s" }}
        {handover}
"#,
            mpd = dir.join("m.mpd").display(),
            seg = dir.join("s.csv").display(),
        );
        run(&toml)
    };
    let (mp, tcp) = (session(true), session(false));
    let v = |r: &RunResults, c: &str| r.flow_value("f", c);
    for (what, r) in [("MPTCP", &mp), ("TCP", &tcp)] {
        eprintln!(
            "{what}: segments {}, stalls {} ({} s), rate {:.2} Mbit/s, rev rto {}",
            v(r, "dash_segments"),
            v(r, "dash_stalls"),
            v(r, "dash_stall_s"),
            v(r, "dash_mean_rate_bps") / 1e6,
            v(r, "rev_rto_count")
        );
        assert_eq!(v(r, "dash_segments"), 30.0, "{what}: the session completes");
        assert!((v(r, "dash_played_s") - 60.0).abs() < 1e-9, "{what}: the whole clip played");
    }
    assert!(v(&tcp, "rev_rto_count") > 0.0, "TCP's server times out during the gap");
    // MPTCP: the server's subflow on path 1 has video in flight before the gap, and again on
    // the new access point; the one on path 2 carries the session through the gap.
    let probe = mp.table("probe_subflow");
    let (t, path, end, fl) = (probe.f64s("t_ns"), probe.f64s("path"), probe.f64s("end"), probe.f64s("in_flight_bytes"));
    let busy = |lo: f64, hi: f64, p: f64| {
        (0..probe.rows()).filter(|&i| end[i] == 1.0 && path[i] == p && t[i] >= lo && t[i] < hi && fl[i] > 0.0).count()
    };
    eprintln!(
        "MPTCP server subflow samples with data in flight: path 1 before {}, after {}; path 2 in the gap {}",
        busy(0.0, 20e9, 0.0),
        busy(25e9, 200e9, 0.0),
        busy(20e9, 22e9, 1.0)
    );
    assert!(busy(0.0, 20e9, 0.0) > 100, "path 1 carried video before the handover");
    assert!(busy(20e9, 22e9, 1.0) > 10, "path 2 carried the session through the gap");
    assert!(busy(25e9, 200e9, 0.0) > 100, "path 1's subflow carries video again on the new access point");
    let sub = mp.table("subflows");
    let rto = sub.f64s("rev_rto_count");
    assert!(rto[0] > 0.0 && rto[1] == 0.0, "only the handed-over subflow timed out: {rto:?}");
    // Through the gap the client keeps playing on MPTCP: no more stalls than TCP.
    assert!(v(&mp, "dash_stalls") <= v(&tcp, "dash_stalls"));
    std::fs::remove_dir_all(&dir).ok();
}

/// A one-rung ladder of `n` 2-s segments of `bytes` each in a fresh folder (`m.mpd`, `s.csv`).
fn ladder(tag: &str, n: u32, bytes: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qoelab-handover-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("representation,segment_s,segment,duration_s,size_bytes\n");
    for k in 0..n {
        csv += &format!("r,2,{k},2,{bytes}\n");
    }
    std::fs::write(dir.join("s.csv"), csv).unwrap();
    std::fs::write(
        dir.join("m.mpd"),
        format!(
            r#"<MPD type="static" mediaPresentationDuration="PT{}S"><Period><AdaptationSet><SegmentTemplate timescale="1" duration="2"/><Representation id="r" bandwidth="{}"/></AdaptationSet></Period></MPD>"#,
            2 * n,
            bytes * 4
        ),
    )
    .unwrap();
    dir
}

#[test]
fn bad_handovers_are_scenario_errors_with_their_key_path() {
    let err = |h: &str| match Scenario::from_toml(&cbr(h)).and_then(|s| s.build(&BuildOptions::default()).map(|_| ())) {
        Ok(()) => panic!("accepted: {h}"),
        Err(e) => e.to_string(),
    };
    let e = err(&HANDOVER.replace("A->B", "A->X"));
    assert!(e.starts_with("handovers[0].links[0]: unknown link direction \"A->X\""), "{e}");
    let e = err(&HANDOVER.replace("\"4Mbps\"", "\"0Mbps\""));
    assert!(e.starts_with("handovers[0].rate: rate must be positive"), "{e}");
    let e = err(&HANDOVER.replace("[\"A->B\"]", "[\"A->B\", \"A->B\"]"));
    assert!(e.starts_with("handovers[0].links[1]: \"A->B\" is listed twice"), "{e}");
    let e = err(&format!("{HANDOVER}{}", HANDOVER.replace("\"4Mbps\"", "\"2Mbps\"")));
    assert!(e.starts_with("handovers[1].at: handovers[0] already changes \"A->B\" at the same time"), "{e}");
    let e = err("[[handovers]]\nlinks = [\"A->B\"]\nat = \"1s\"\n");
    assert!(e.starts_with("handovers[0].at: changes nothing"), "{e}");
    let e = err("[[handovers]]\nlinks = [\"A->B\"]\nat = \"1s\"\nloss = { kind = \"bernoulli\", p = 1.5 }\n");
    assert!(e.starts_with("handovers[0].loss.p: probability"), "{e}");
    let e = err("[[handovers]]\nlinks = [\"A->B\"]\nat = \"1s\"\nrtt = \"1s\"\n");
    assert!(e.contains("handovers[0]") && e.contains("unknown field `rtt`"), "{e}");
    let e = err("[[handovers]]\nlinks = []\nat = \"1s\"\ngap = \"1s\"\n");
    assert!(e.starts_with("handovers[0].links: must name"), "{e}");
}
