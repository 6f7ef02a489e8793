//! DiffServ end to end: DSCP set per flow and by an edge classifier, seen in the pcap's TOS
//! byte (RFC 2474 §3), and strict priority (`kind = "prio"`) on a shared bottleneck.

use qoelab_core::scenario::Scenario;
use qoelab_core::BuildOptions;
use std::path::Path;

/// A scratch directory for captures, unique per test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("qoelab-diffserv-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The TOS byte and IP protocol of every record of a `LINKTYPE_RAW` pcap (classic format,
/// 24-byte file header, 16-byte record headers, little-endian).
fn tos_bytes(file: &Path) -> Vec<(u8, u8, u16)> {
    let b = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
        let ip = &b[i + 16..i + 16 + incl];
        let ihl = (ip[0] & 0x0f) as usize * 4;
        let dport = u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]);
        out.push((ip[1], ip[9], dport));
        i += 16 + incl;
    }
    out
}

/// Two UDP CBR flows and one TCP bulk flow from S through R to D, `extra` appended.
fn three_flows(flow_dscp: [&str; 3], nodes: &str) -> String {
    let d = |s: &str| if s.is_empty() { String::new() } else { format!("dscp = {s}\n") };
    format!(
        r#"
        [sim]
        duration = "200ms"
        {nodes}
        [[links]]
        a = "S"
        b = "R"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        a = "R"
        b = "D"
        rate = "100Mbps"
        delay = "1ms"
        [[flows]]
        name = "video"
        src = "S"
        dst = "D"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "1Mbps", payload = "1000B" }}
        {}
        [[flows]]
        name = "audio"
        src = "S"
        dst = "D"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "100kbps", payload = "200B" }}
        {}
        [[flows]]
        name = "bulk"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp" }}
        app = {{ kind = "bulk" }}
        {}
        [output]
        pcap = ["S->R", "R->D"]
        "#,
        d(flow_dscp[0]),
        d(flow_dscp[1]),
        d(flow_dscp[2]),
    )
}

fn capture(toml: &str, name: &str) -> (Vec<(u8, u8, u16)>, Vec<(u8, u8, u16)>) {
    let dir = scratch(name);
    let sc = Scenario::from_toml(toml).unwrap();
    let mut sim = sc.build(&BuildOptions { base_dir: None, pcap_dir: Some(&dir) }).unwrap();
    sim.run();
    drop(sim);
    let r = (tos_bytes(&dir.join("S_to_R.pcap")), tos_bytes(&dir.join("R_to_D.pcap")));
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

/// Flow `dscp` sets the TOS byte (DSCP << 2) of every packet the source sends; the others stay 0.
#[test]
fn flow_dscp_appears_in_the_pcap_tos_byte() {
    let (sr, rd) = capture(&three_flows(["\"EF\"", "\"af41\"", ""], ""), "flow");
    for cap in [&sr, &rd] {
        let mut seen = std::collections::BTreeMap::new();
        for &(tos, proto, dport) in cap.iter() {
            *seen.entry((proto, dport, tos)).or_insert(0u32) += 1;
        }
        let toses: std::collections::BTreeSet<u8> = cap.iter().map(|c| c.0).collect();
        // EF = 46 → TOS 0xb8 (RFC 3246); AF41 = 34 → 0x88 (RFC 2597); best effort 0.
        assert_eq!(toses, [0x00, 0x88, 0xb8].into_iter().collect(), "{seen:?}");
        // Every UDP packet of one flow carries one code point: two UDP flows, two TOS values.
        let udp: std::collections::BTreeSet<u8> = cap.iter().filter(|c| c.1 == 17).map(|c| c.0).collect();
        assert_eq!(udp, [0x88, 0xb8].into_iter().collect());
        assert!(cap.iter().filter(|c| c.1 == 6).all(|c| c.0 == 0), "TCP is best effort");
    }
    // A number gives the same as its name.
    let (by_number, _) = capture(&three_flows(["46", "34", ""], ""), "number");
    assert_eq!(by_number, sr);
}

/// Bad code points are refused at their key path.
#[test]
fn bad_dscp_is_refused_at_its_key_path() {
    for (bad, want) in [("\"AF51\"", "unknown DSCP \"AF51\""), ("64", "DSCP 64 out of range"), ("true", "a DSCP")] {
        let e = Scenario::from_toml(&three_flows(["\"EF\"", bad, ""], "")).unwrap_err();
        assert_eq!(e.path, "flows[1].dscp", "{e}");
        assert!(e.reason.contains(want), "{e}");
    }
}

/// A 10 Mbit/s bottleneck R→D under `queue`, shared by EF video (2 Mbit/s CBR), a BE UDP flood
/// (12 Mbit/s, more than the link) and a BE TCP bulk download; returns each flow's stats.
fn bottleneck(queue: &str) -> Vec<qoelab_core::trace::FlowStats> {
    let toml = format!(
        r#"
        [sim]
        duration = "2s"
        [[links]]
        a = "S"
        b = "R"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        a = "R"
        b = "D"
        rate = "10Mbps"
        delay = "10ms"
        queue = {queue}
        [[flows]]
        name = "video"
        src = "S"
        dst = "D"
        dscp = "EF"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "2Mbps", payload = "1000B" }}
        [[flows]]
        name = "flood"
        src = "S"
        dst = "D"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "12Mbps", payload = "1472B" }}
        [[flows]]
        name = "bulk"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp" }}
        app = {{ kind = "bulk" }}
        "#
    );
    let mut sim = Scenario::from_toml(&toml).unwrap().build(&BuildOptions::default()).unwrap();
    sim.run();
    sim.flows.iter().map(|f| f.fwd.clone()).collect()
}

/// Strict priority protects EF: no loss, and its delay is the path's plus at most one BE packet
/// already on the wire at each hop (non-preemptive) and its own serialisation. Hand-computed
/// bound: 1 ms + 10 ms propagation; 1,028 B at 100 Mbit/s (0.0822 ms) and at 10 Mbit/s
/// (0.8224 ms); one 1,500 B BE packet at 100 Mbit/s (0.12 ms, S's FIFO) and at 10 Mbit/s
/// (1.2 ms): 13.2246 ms. Under FIFO the same video waits behind the flood.
#[test]
fn prio_protects_ef_video_and_fifo_does_not() {
    let p = bottleneck(r#"{ kind = "prio", limit = "100p" }"#);
    let (video, flood) = (&p[0], &p[1]);
    assert!(video.sent_pkts > 400, "{}", video.sent_pkts);
    assert_eq!(video.drop_queue_pkts, 0, "EF lost packets under prio");
    let max_ms = video.delay_max_ns as f64 / 1e6;
    assert!(max_ms <= 13.2246, "EF max delay {max_ms:.4} ms above the hand-computed 13.2246 ms");
    assert!(max_ms >= 11.9, "EF max delay {max_ms:.4} ms below the path's own 11.9 ms");
    assert!(flood.drop_queue_pkts > 0, "the BE flood overloads its band");
    let f = bottleneck(r#"{ kind = "fifo", limit = "100p" }"#);
    assert!(f[0].drop_queue_pkts > 0, "FIFO: video shares the flood's losses");
    assert!(f[0].delay_max_ns as f64 / 1e6 > 50.0, "FIFO: video waits behind a full buffer");
    eprintln!(
        "EF video under prio: max delay {max_ms:.3} ms, lost {}; under fifo: max {:.1} ms, lost {}/{}",
        video.drop_queue_pkts,
        f[0].delay_max_ns as f64 / 1e6,
        f[0].drop_queue_pkts,
        f[0].sent_pkts
    );
}

/// R's edge classifier re-marks what it forwards, first match wins: audio (by its UDP
/// destination port) EF, other UDP from S AF41 (so the video's own EF becomes AF41), TCP (by
/// number) CS1. The capture before R shows the senders' marks, the one after R the new ones.
#[test]
fn edge_classifier_remarks_by_five_tuple_first_match_wins() {
    let (_, audio_port) = qoelab_core::sim::flow_ports(1);
    // Nodes are numbered declared first (R), then by first mention in the links (S, D).
    let d_addr = qoelab_core::ip::addr(2);
    let nodes = format!(
        r#"
        [[nodes]]
        name = "R"
        classify = [
            {{ protocol = "udp", dst_port = {audio_port}, dscp = "EF" }},
            {{ src = "S", dst = "{d_addr}", protocol = "udp", dscp = "AF41" }},
            {{ protocol = 6, dscp = "CS1" }},
            {{ dscp = "CS7" }},
        ]
        "#
    );
    let toml = three_flows(["\"EF\"", "", ""], &nodes);
    let (sr, rd) = capture(&toml, "classify");
    let marks = |cap: &[(u8, u8, u16)], proto: u8, port: Option<u16>| -> std::collections::BTreeSet<u8> {
        cap.iter().filter(|c| c.1 == proto && port.is_none_or(|p| c.2 == p)).map(|c| c.0 >> 2).collect()
    };
    let (_, video_port) = qoelab_core::sim::flow_ports(0);
    assert_eq!(marks(&sr, 17, Some(video_port)), [46].into(), "video leaves S marked EF");
    assert_eq!(marks(&sr, 17, Some(audio_port)), [0].into());
    assert_eq!(marks(&sr, 6, None), [0].into());
    assert_eq!(marks(&rd, 17, Some(audio_port)), [46].into(), "rule 0: audio EF");
    assert_eq!(marks(&rd, 17, Some(video_port)), [34].into(), "rule 1: video re-marked AF41");
    assert_eq!(marks(&rd, 6, None), [8].into(), "rule 2: TCP CS1");
}

#[test]
fn bad_classifier_rules_are_refused_at_their_key_path() {
    let rule =
        |r: &str| three_flows(["", "", ""], &format!("[[nodes]]\nname = \"R\"\nclassify = [{{ dscp = 0 }}, {r}]\n"));
    let cases = [
        (r#"{ src = "nowhere", dscp = "EF" }"#, "nodes[0].classify[1].src", "neither a node name nor an IPv4 address"),
        (r#"{ dst = "10.0.0.300", dscp = "EF" }"#, "nodes[0].classify[1].dst", "neither"),
        (r#"{ protocol = "icmpx", dscp = "EF" }"#, "nodes[0].classify[1].protocol", ""),
        (r#"{ dst_port = 70000, dscp = "EF" }"#, "nodes[0].classify[1].dst_port", ""),
        (r#"{ dscp = "AF50" }"#, "nodes[0].classify[1].dscp", "unknown DSCP"),
        (r#"{ src = "S" }"#, "nodes[0].classify[1]", "dscp"),
    ];
    for (r, path, want) in cases {
        let e = Scenario::from_toml(&rule(r)).and_then(|s| s.build(&BuildOptions::default()).map(|_| ())).expect_err(r);
        assert!(e.path == path && e.reason.contains(want), "{r}: {e}");
    }
}
