//! Connections with several subflows (issue 14, item 3, must-show (b)): two hosts with two
//! interfaces each over two disjoint paths, one connection with two subflows, each pinned to
//! its path (by its address pair, or by an explicit route), both carrying data; per-subflow and
//! per-connection statistics add up.
//!
//! No multipath transport exists yet, so a test-only endpoint joins the run through
//! `Simulation::attach_endpoint`: it stripes the application's datagrams round-robin over the
//! connection's paths, and its peer echoes each one on the path it came by.

use qoelab_core::packet::{Addr, PacketData, UdpHdr, L4};
use qoelab_core::results::RunResults;
use qoelab_core::sim::AttachError;
use qoelab_core::transport::{Datagram, Endpoint, FlowCtx, Outgoing, Service};
use qoelab_core::{BuildOptions, Scenario, Simulation};
use std::sync::{Arc, Mutex};

/// What an end saw: (path, source address and port, destination address and port, bytes).
type Seen = Arc<Mutex<Vec<(u8, Addr, u16, Addr, u16, u32)>>>;

/// A datagram endpoint over `paths` paths. At the source it sends datagram k on path k mod
/// `paths`; at the destination it answers every datagram with a 40-byte one on the same path.
struct Striper {
    paths: u8,
    next: u8,
    seen: Seen,
}

impl Endpoint for Striper {
    fn service(&self) -> Service {
        Service::Datagram
    }
    fn max_datagram_payload(&self) -> u32 {
        1_472
    }
    fn send_datagram(&mut self, d: Datagram, cx: &mut FlowCtx) {
        let path = self.next;
        self.next = (self.next + 1) % self.paths;
        // Ports are the world's to stamp, per path.
        let l4 = L4::Udp(UdpHdr { media: d.media, ..Default::default() });
        cx.send(Outgoing { dir: cx.dir, size_bytes: d.payload + 28, l4, path, tfd: None, ecn: Default::default() });
    }
    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let u = pkt.udp().expect("a datagram flow");
        self.seen.lock().unwrap().push((pkt.path, pkt.src, u.src_port, pkt.dst, u.dst_port, pkt.size_bytes));
        if cx.end() == 1 {
            let l4 = L4::Udp(UdpHdr::default());
            cx.send(Outgoing { dir: cx.dir, size_bytes: 40, l4, path: pkt.path, tfd: None, ecn: Default::default() });
        }
    }
}

/// A and B joined through R1 and through R2, 10 Mbit/s and 5 ms a link; A's and B's interfaces
/// on the R1 path are 10.1.0.1 and 10.2.0.1, on the R2 path 10.1.1.1 and 10.2.1.1. One UDP flow
/// with a CBR source of 2 Mbit/s that stops at 1.9 s (so nothing is in flight at 2 s) and the
/// given `subflows`.
fn two_paths(subflows: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "2s"
        [[links]]
        a = "A"
        b = "R1"
        rate = "10Mbps"
        delay = "5ms"
        a_addr = "10.1.0.1"
        [[links]]
        a = "R1"
        b = "B"
        rate = "10Mbps"
        delay = "5ms"
        b_addr = "10.2.0.1"
        [[links]]
        a = "A"
        b = "R2"
        rate = "10Mbps"
        delay = "5ms"
        a_addr = "10.1.1.1"
        [[links]]
        a = "R2"
        b = "B"
        rate = "10Mbps"
        delay = "5ms"
        b_addr = "10.2.1.1"
        [[flows]]
        name = "mp"
        src = "A"
        dst = "B"
        stop = "1.9s"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "2Mbps", payload = "1000B" }}
        subflows = {subflows}
        "#
    )
}

fn build(toml: &str) -> Simulation {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    // The tests attach multipath endpoints of their own to UDP flows with subflows.
    sc.build_for_custom_endpoints(&BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn build_err(toml: &str) -> String {
    match Scenario::from_toml(toml).and_then(|sc| sc.build_for_custom_endpoints(&BuildOptions::default())) {
        Ok(_) => panic!("built"),
        Err(e) => e.to_string(),
    }
}

/// Runs the two-path scenario with striping endpoints at both ends; returns the results and
/// what each end saw.
fn run_striped(
    subflows: &str,
) -> (RunResults, Vec<(u8, Addr, u16, Addr, u16, u32)>, Vec<(u8, Addr, u16, Addr, u16, u32)>) {
    let mut sim = build(&two_paths(subflows));
    assert_eq!(sim.flows[0].paths(), 2);
    let (at_src, at_dst): (Seen, Seen) = Default::default();
    sim.attach_endpoint("mp", 0, Box::new(Striper { paths: 2, next: 0, seen: at_src.clone() })).unwrap();
    sim.attach_endpoint("mp", 1, Box::new(Striper { paths: 2, next: 0, seen: at_dst.clone() })).unwrap();
    sim.run();
    let r = sim.results();
    // The world's per-path counters and the results table say the same.
    let t = r.table("subflows");
    for k in 0..2 {
        let st = sim.flows[0].path_stats(k, 0);
        assert_eq!(t.f64s("sent_pkts")[k], st.sent_pkts as f64);
        assert_eq!(t.f64s("recv_bytes")[k], st.recv_bytes as f64);
    }
    let (a, b) = (at_src.lock().unwrap().clone(), at_dst.lock().unwrap().clone());
    (r, a, b)
}

fn link(r: &RunResults, name: &str) -> f64 {
    let t = r.table("links");
    let i = t.strs("link").iter().position(|l| l == name).unwrap_or_else(|| panic!("no link {name}"));
    t.f64s("tx_pkts")[i]
}

/// Checks must-show (b) on a run: both subflows carry data, each only over its own path's
/// links, every packet reaches the socket of the path it was sent on, and per-subflow counters
/// add up to the connection's.
fn check_two_paths(
    r: &RunResults,
    at_src: &[(u8, Addr, u16, Addr, u16, u32)],
    at_dst: &[(u8, Addr, u16, Addr, u16, u32)],
) {
    let t = r.table("subflows");
    assert_eq!(t.rows(), 2);
    assert_eq!(t.strs("flow"), ["mp", "mp"]);
    assert_eq!(t.f64s("path"), [0.0, 1.0]);
    let sent = t.f64s("sent_pkts");
    let recv = t.f64s("recv_pkts");
    let rev_sent = t.f64s("rev_sent_pkts");
    // 2 Mbit/s of 1028-byte datagrams for 1.9 s: 462 or so, striped evenly.
    assert!(sent[0] > 200.0 && (sent[0] - sent[1]).abs() <= 1.0, "{sent:?}");
    assert_eq!(recv, sent, "no loss, nothing in flight");
    assert_eq!(rev_sent, recv, "each datagram echoed on its path");
    assert_eq!(t.f64s("in_flight_pkts"), [0.0, 0.0]);
    // Each subflow crossed only its own path's links, both ways.
    for (r_, k) in [("R1", 0usize), ("R2", 1)] {
        assert_eq!(link(r, &format!("A->{r_}")), sent[k], "A->{r_}");
        assert_eq!(link(r, &format!("{r_}->B")), sent[k], "{r_}->B");
        assert_eq!(link(r, &format!("B->{r_}")), rev_sent[k], "B->{r_}");
        assert_eq!(link(r, &format!("{r_}->A")), rev_sent[k], "{r_}->A");
    }
    // Per-subflow counters add up to the connection's.
    let sum = |c: &str| t.f64s(c).iter().sum::<f64>();
    for (sub, conn) in [
        ("sent_pkts", "sent_pkts"),
        ("sent_bytes", "sent_bytes"),
        ("recv_pkts", "recv_pkts"),
        ("recv_bytes", "recv_bytes"),
        ("drop_queue_pkts", "drop_queue_pkts"),
        ("drop_channel_pkts", "drop_channel_pkts"),
        ("rev_sent_pkts", "rev_sent_pkts"),
        ("rev_recv_pkts", "rev_recv_pkts"),
    ] {
        assert_eq!(sum(sub), r.flow_value("mp", conn), "{sub}");
    }
    // Nothing arrived on the wrong socket: every packet an end saw bears the addresses and
    // ports of the path it was handed up on, and each path's count is its own.
    let (src, dst) = (t.strs("src_addr"), t.strs("dst_addr"));
    let (sport, dport) = (t.f64s("src_port"), t.f64s("dst_port"));
    for (k, want) in [0usize, 1].iter().map(|&k| (k, recv[k])) {
        let got: Vec<_> = at_dst.iter().filter(|s| s.0 as usize == k).collect();
        assert_eq!(got.len() as f64, want);
        for s in got {
            assert_eq!((s.1.to_string(), s.2 as f64), (src[k].clone(), sport[k]));
            assert_eq!((s.3.to_string(), s.4 as f64), (dst[k].clone(), dport[k]));
        }
        let back: Vec<_> = at_src.iter().filter(|s| s.0 as usize == k).collect();
        assert_eq!(back.len() as f64, rev_sent[k]);
        for s in back {
            assert_eq!(
                (s.1.to_string(), s.2 as f64, s.3.to_string(), s.4 as f64),
                (dst[k].clone(), dport[k], src[k].clone(), sport[k])
            );
        }
    }
    // Distinct source ports, one destination port (as MPTCP subflows joining one listener).
    assert_ne!(sport[0], sport[1]);
    assert_eq!(dport[0], dport[1]);
}

/// (b) Each subflow pinned to its path by its address pair: the interfaces' addresses route it.
#[test]
fn two_subflows_pinned_by_addresses() {
    let (r, a, b) = run_striped(
        r#"[ { src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }, { src_addr = "10.1.1.1", dst_addr = "10.2.1.1" } ]"#,
    );
    let t = r.table("subflows");
    assert_eq!(t.strs("src_addr"), ["10.1.0.1", "10.1.1.1"]);
    assert_eq!(t.strs("dst_addr"), ["10.2.0.1", "10.2.1.1"]);
    assert_eq!(t.strs("route"), ["", ""]);
    check_two_paths(&r, &a, &b);
}

/// (b) Each subflow pinned to its path by an explicit route, both between the primary
/// addresses: only the source ports tell the subflows apart at the hosts.
#[test]
fn two_subflows_pinned_by_routes() {
    let (r, a, b) = run_striped(r#"[ { route = ["A", "R1", "B"] }, { route = ["A", "R2", "B"] } ]"#);
    let t = r.table("subflows");
    assert_eq!(t.strs("src_addr"), ["10.0.0.1", "10.0.0.1"]);
    assert_eq!(t.strs("route"), ["A-R1-B", "A-R2-B"]);
    check_two_paths(&r, &a, &b);
}

/// A flow whose transport sends on path 0 only (plain UDP) uses its first subflow; the other
/// stays idle, and the single-path flows table reads as before.
#[test]
fn a_single_path_transport_uses_subflow_zero() {
    let mut sim = build(&two_paths(r#"[ { route = ["A", "R2", "B"] }, { route = ["A", "R1", "B"] } ]"#));
    sim.run();
    let r = sim.results();
    let t = r.table("subflows");
    assert!(t.f64s("sent_pkts")[0] > 200.0);
    assert_eq!(t.f64s("sent_pkts")[1], 0.0);
    assert_eq!(link(&r, "A->R2"), t.f64s("sent_pkts")[0]);
    assert_eq!(link(&r, "A->R1"), 0.0);
}

/// A scenario without subflows has no `subflows` table (its results are what they were), and
/// every flow one path.
#[test]
fn single_path_runs_have_no_subflow_table() {
    let toml = two_paths("[]").replace("subflows = []", "");
    let mut sim = build(&toml);
    assert_eq!(sim.flows[0].paths(), 1);
    sim.run();
    let r = sim.results();
    assert!(r.tables.iter().all(|t| t.name != "subflows"));
    assert_eq!(sim.flows[0].path_stats(0, 0).sent_pkts as f64, r.flow_value("mp", "sent_pkts"));
}

#[test]
fn subflow_mistakes_are_reported_with_their_path() {
    let e = build_err(&two_paths(r#"[ { src_addr = "10.1.0.1" }, { src_addr = "10.2.0.1" } ]"#));
    assert!(e.contains("flows[0].subflows[1].src_addr") && e.contains("not an address of \"A\""), "{e}");
    let e = build_err(&two_paths(r#"[ { }, { route = ["A", "R2"] } ]"#));
    assert!(e.contains("flows[0].subflows[1].route") && e.contains("must start at \"A\" and end at \"B\""), "{e}");
    let e = build_err(&two_paths(r#"[ { }, { route = ["A", "B"] } ]"#));
    assert!(e.contains("flows[0].subflows[1].route[1]") && e.contains("no link from \"A\" to \"B\""), "{e}");
    let e = build_err(&two_paths("[]"));
    assert!(e.contains("flows[0].subflows") && e.contains("0 subflows; a flow has 1 to 8"), "{e}");
    let e = build_err(&two_paths(&format!("[{}]", vec!["{}"; 9].join(", "))));
    assert!(e.contains("9 subflows"), "{e}");
    let e = build_err(&two_paths("[ {} ]").replace("stop = ", "src_addr = \"10.1.0.1\"\nstop = "));
    assert!(e.contains("flows[0].src_addr") && e.contains("per subflow"), "{e}");
    let e = build_err(&two_paths(r#"[ { via = "R1" } ]"#));
    assert!(e.contains("via"), "{e}");
}

#[test]
fn attach_endpoint_refuses_bad_requests() {
    let mut sim = build(&two_paths("[ {}, {} ]"));
    let ep = || Box::new(Striper { paths: 2, next: 0, seen: Default::default() });
    assert_eq!(sim.attach_endpoint("nope", 0, ep()).unwrap_err(), AttachError::NoFlow("nope".into()));
    assert_eq!(sim.attach_endpoint("mp", 2, ep()).unwrap_err(), AttachError::NoEnd(2));
    struct Stream;
    impl Endpoint for Stream {
        fn service(&self) -> Service {
            Service::Stream
        }
    }
    assert_eq!(sim.attach_endpoint("mp", 0, Box::new(Stream)).unwrap_err(), AttachError::Service(Service::Datagram));
    sim.run_until(qoelab_core::time::SimTime(1_000_000));
    assert_eq!(sim.attach_endpoint("mp", 0, ep()).unwrap_err(), AttachError::Started);
}

/// Losses are counted on the path they happen on: with a lossy R2→B channel, and A→R1 cut to
/// 500 kbit/s with a 20-packet queue (subflow 0 offers 1 Mbit/s), both kinds of drops appear,
/// each on its own subflow, and the per-path counters still add up to the connection's.
#[test]
fn drops_are_counted_per_path() {
    let toml = two_paths(
        r#"[ { src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }, { src_addr = "10.1.1.1", dst_addr = "10.2.1.1" } ]"#,
    )
    .replacen("b_addr = \"10.2.1.1\"", "b_addr = \"10.2.1.1\"\nloss_ab = { kind = \"bernoulli\", p = 0.2 }", 1)
    .replacen(
        "a_addr = \"10.1.0.1\"",
        "a_addr = \"10.1.0.1\"\nqueue = { kind = \"fifo\", limit = \"20p\" }\nrate = \"500kbps\"",
        1,
    )
    .replacen(
        "rate = \"10Mbps\"\n        delay = \"5ms\"\n        a_addr = \"10.1.0.1\"",
        "delay = \"5ms\"\n        a_addr = \"10.1.0.1\"",
        1,
    );
    let mut sim = build(&toml);
    let seen: Seen = Default::default();
    sim.attach_endpoint("mp", 0, Box::new(Striper { paths: 2, next: 0, seen: seen.clone() })).unwrap();
    sim.run();
    let r = sim.results();
    let t = r.table("subflows");
    let (q, ch) = (t.f64s("drop_queue_pkts"), t.f64s("drop_channel_pkts"));
    assert!(q[0] > 0.0 && q[1] == 0.0, "queue drops {q:?}");
    assert!(ch[0] == 0.0 && ch[1] > 0.0, "channel drops {ch:?}");
    for c in
        ["sent_pkts", "sent_bytes", "recv_pkts", "recv_bytes", "drop_queue_pkts", "drop_channel_pkts", "in_flight_pkts"]
    {
        assert_eq!(t.f64s(c).iter().sum::<f64>(), r.flow_value("mp", c), "{c}");
    }
}

/// A scenario file alone gives subflows to MPTCP flows only: any other transport would send on
/// the first path and leave the others idle (issue 42), so `build` refuses it.
#[test]
fn a_scenario_gives_subflows_to_mptcp_flows_only() {
    let toml = two_paths("[ {}, {} ]");
    let e = Scenario::from_toml(&toml).unwrap().build(&BuildOptions::default()).map(|_| ()).unwrap_err().to_string();
    assert!(e.starts_with("flows[0].subflows: only an MPTCP flow has subflows (transport is \"udp\")"), "{e}");
    let mptcp = toml
        .replace(r#"transport = { kind = "udp" }"#, r#"transport = { kind = "mptcp" }"#)
        .replace(r#"app = { kind = "cbr", rate = "2Mbps", payload = "1000B" }"#, r#"app = { kind = "bulk" }"#);
    assert!(mptcp.contains("mptcp") && mptcp.contains("bulk"), "the template changed: {mptcp}");
    Scenario::from_toml(&mptcp).unwrap().build(&BuildOptions::default()).unwrap();
}
