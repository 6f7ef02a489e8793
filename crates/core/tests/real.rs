//! Real hosts' datagrams through the simulated network (the surface `qoelab-emu` drives):
//! injection at a real node, delivery to another with what routers change, echo replies from
//! simulated nodes, TFD reservations for a real flow, loss, queue sharing with simulated
//! traffic, conservation and the result tables.

use qoelab_core::ip::internet_checksum;
use qoelab_core::ip::tfd::{ipv4_options_area, NextData, TfdFlags, TfdOption};
use qoelab_core::node::Addr;
use qoelab_core::queue::FlowKey;
use qoelab_core::real::{icmp_echo, ipv4_datagram, Reject};
use qoelab_core::time::SimTime;
use qoelab_core::trace::Column;
use qoelab_core::{BuildOptions, Scenario, Simulation};

/// A (real) — R (simulated router) — B (real), 20 ms each way on each link, 100 Mbit/s; node 0
/// is A (10.0.0.1), 1 is B (10.0.0.2), 2 is R (10.0.0.3). `extra` is appended.
fn world(extra: &str) -> Simulation {
    let t = format!(
        r#"
        [sim]
        duration = "100s"
        [[nodes]]
        name = "A"
        real = true
        [[nodes]]
        name = "B"
        real = true
        [[links]]
        a = "A"
        b = "R"
        rate = "100Mbps"
        delay = "20ms"
        [[links]]
        a = "R"
        b = "B"
        rate = "100Mbps"
        delay = "20ms"
        {extra}
        "#
    );
    Scenario::from_toml(&t).unwrap().build(&BuildOptions::default()).unwrap()
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const R: [u8; 4] = [10, 0, 0, 3];

fn datagram(src: [u8; 4], dst: [u8; 4], proto: u8, opts: &[u8], l4: &[u8]) -> Vec<u8> {
    ipv4_datagram(Addr(u32::from_be_bytes(src)), Addr(u32::from_be_bytes(dst)), proto, 0, opts, l4)
}

fn echo_request(src: [u8; 4], dst: [u8; 4], seq: u16, payload: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..payload).map(|i| i as u8).collect();
    datagram(src, dst, 1, &[], &icmp_echo(8, 0x4242, seq, &data))
}

fn udp(src: [u8; 4], dst: [u8; 4], opts: &[u8], payload: usize) -> Vec<u8> {
    let mut u = vec![0x13, 0x88, 0x13, 0x89, 0, 0, 0, 0];
    u[4..6].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
    u.extend(std::iter::repeat_n(0x5a, payload));
    datagram(src, dst, 17, opts, &u)
}

/// Runs until `t` and returns what reached real nodes meanwhile, with the arrival time.
fn run_collect(sim: &mut Simulation, until: SimTime) -> Vec<(SimTime, u32, Vec<u8>)> {
    let mut got = Vec::new();
    while let Some(t) = sim.next_event_time().filter(|t| *t <= until) {
        sim.run_until(t);
        got.extend(sim.take_real_deliveries().into_iter().map(|(n, b)| (t, n, b)));
    }
    sim.run_until(until);
    got
}

fn table_col(r: &qoelab_core::RunResults, table: &str, col: &str) -> Vec<f64> {
    r.table(table).f64s(col)
}

#[test]
fn a_datagram_crosses_a_router_with_ttl_and_checksum_updated() {
    let mut sim = world("");
    assert_eq!(sim.real_nodes(), vec![0, 1]);
    let req = echo_request(A, B, 1, 56);
    sim.inject_real(0, req.clone()).unwrap();
    let got = run_collect(&mut sim, SimTime(100 * 1_000_000));
    assert_eq!(got.len(), 1);
    let (t, node, bytes) = &got[0];
    assert_eq!(*node, 1, "delivered to B");
    // Two serialisations of 84 B at 100 Mbit/s (6.72 µs each) and 40 ms of propagation.
    assert_eq!(t.0, 40_000_000 + 2 * 6_720);
    assert_eq!(bytes[8], 63, "one router hop");
    assert_eq!(internet_checksum(&[&bytes[..20]]), 0, "header checksum valid");
    let mut want = req.clone();
    want[8] = 63;
    want[10..12].copy_from_slice(&bytes[10..12]);
    assert_eq!(bytes, &want, "every other byte as sent");
}

#[test]
fn simulated_nodes_answer_ping() {
    let mut sim = world("");
    sim.inject_real(0, echo_request(A, R, 7, 56)).unwrap();
    let got = run_collect(&mut sim, SimTime(100 * 1_000_000));
    assert_eq!(got.len(), 1);
    let (t, node, reply) = &got[0];
    assert_eq!(*node, 0, "the reply comes back to A");
    assert_eq!(t.0, 40_000_000 + 2 * 6_720, "one link each way");
    assert_eq!(&reply[12..16], &R);
    assert_eq!(&reply[16..20], &A);
    assert_eq!(reply[20], 0, "echo reply");
    assert_eq!(u16::from_be_bytes([reply[26], reply[27]]), 7, "sequence echoed");
    assert_eq!(sim.real_traffic().unwrap().echo_replies, 1);
}

#[test]
fn refused_datagrams_are_counted_by_reason() {
    let mut sim = world("");
    assert_eq!(sim.inject_real(0, vec![0x60; 48]), Err(Reject::NotIpv4));
    let mut bad = echo_request(A, B, 1, 8);
    bad[11] ^= 0xff;
    assert_eq!(sim.inject_real(0, bad), Err(Reject::Checksum));
    assert_eq!(sim.inject_real(0, echo_request(A, [192, 168, 1, 1], 1, 8)), Err(Reject::NoRoute));
    assert_eq!(sim.inject_real(0, udp(A, B, &[], 1600)), Err(Reject::TooBig));
    let r = sim.results();
    let t = r.table("real_rejects");
    assert_eq!(t.strs("reason"), vec!["not_ipv4", "checksum", "no_route", "too_big"]);
    assert_eq!(t.f64s("pkts"), vec![1.0; 4]);
    assert_eq!(r.summary("real_rejected_pkts"), 4.0);
    assert_eq!(r.summary("real_flows"), 0.0);
}

#[test]
fn ttl_expires_at_a_router() {
    let mut sim = world("");
    let mut d = echo_request(A, B, 1, 8);
    d[8] = 1;
    d[10..12].copy_from_slice(&[0, 0]);
    let c = internet_checksum(&[&d[..20]]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    sim.inject_real(0, d).unwrap();
    assert!(run_collect(&mut sim, SimTime(100 * 1_000_000)).is_empty());
    let r = sim.results();
    assert_eq!(table_col(&r, "real_flows", "drop_router_pkts"), vec![1.0]);
}

#[test]
fn a_real_packet_with_the_tfd_option_gets_a_reservation() {
    let extra = r#"
        [links.queue]
        kind = "tfd"
        "#;
    let mut sim = world(extra);
    let opt = TfdOption::new(TfdFlags::empty(), NextData::Bytes(125_000), 100).unwrap();
    let d = udp(A, B, &ipv4_options_area(&opt), 1000);
    sim.inject_real(0, d.clone()).unwrap();
    let got = run_collect(&mut sim, SimTime(30 * 1_000_000));
    assert!(got.is_empty());
    // Port 2 is R→B, whose discipline (the second link's) is the TFD router.
    let key = FlowKey::five_tuple(Addr(u32::from_be_bytes(A)), Addr(u32::from_be_bytes(B)), 17, 5000, 5001);
    let rate = sim.ports[2].reservation(key);
    // 8 · 125 kB / 100 ms = 10 Mbit/s, plus the default 10 % headroom.
    assert_eq!(rate.map(|r| r.bps()), Some(11_000_000), "{rate:?}");
    let got = run_collect(&mut sim, SimTime(100 * 1_000_000));
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].2[20..32], &d[20..32], "the option arrives as sent");
}

#[test]
fn random_loss_acts_on_real_datagrams() {
    let extra = r#"
        [links.loss_ab]
        kind = "bernoulli"
        p = 0.1
        "#;
    let mut sim = world(extra);
    let n = 20_000u16;
    for i in 0..n {
        sim.run_until(SimTime(i as u64 * 1_000_000));
        sim.inject_real(0, echo_request(A, B, i, 56)).unwrap();
    }
    let got = run_collect(&mut sim, SimTime(30 * 1_000_000_000));
    let lost = n as f64 - got.len() as f64;
    // Binomial(20000, 0.1): sd 42 packets.
    assert!((lost - 2000.0).abs() < 200.0, "{lost}");
    let r = sim.results();
    assert_eq!(table_col(&r, "real_flows", "drop_channel_pkts"), vec![lost]);
    assert_eq!(table_col(&r, "real_flows", "recv_pkts"), vec![got.len() as f64]);
}

#[test]
fn real_and_simulated_traffic_share_a_queue() {
    // A (real) and S send through R1 → R2 (100 Mbit/s, 20 packets) to B (real) and D: a
    // simulated 99 Mbit/s CBR flow S → D and a real 112 Mbit/s burst A → B overload it together.
    let t = r#"
        [sim]
        duration = "3s"
        [[nodes]]
        name = "A"
        real = true
        [[nodes]]
        name = "B"
        real = true
        [[links]]
        a = "A"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "R1"
        b = "R2"
        rate = "100Mbps"
        delay = "1ms"
        queue = { kind = "fifo", limit = "20p" }
        [[links]]
        a = "R2"
        b = "B"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "S"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "R2"
        b = "D"
        rate = "1Gbps"
        delay = "1ms"
        [[flows]]
        name = "load"
        src = "S"
        dst = "D"
        transport = { kind = "udp" }
        app = { kind = "cbr", rate = "99Mbps", payload = "1400B" }
        "#;
    let mut sim = Scenario::from_toml(t).unwrap().build(&BuildOptions::default()).unwrap();
    for i in 0..2000u64 {
        sim.run_until(SimTime(1_000_000_000 + i * 100_000));
        sim.inject_real(0, udp(A, B, &[], 1400)).unwrap();
    }
    let got = run_collect(&mut sim, SimTime(3_000_000_000));
    let r = sim.results();
    let real_drops = table_col(&r, "real_flows", "drop_queue_pkts")[0];
    let load_drops = r.flow_value("load", "drop_queue_pkts");
    assert!(real_drops > 100.0 && load_drops > 100.0, "real {real_drops}, simulated {load_drops}");
    assert_eq!(got.len() as f64 + real_drops, 2000.0);
    // Conservation holds for both kinds (`results` asserts it); the real flow is named.
    assert_eq!(r.table("real_flows").strs("flow"), vec!["udp 10.0.0.1:5000 > 10.0.0.2:5001"]);
    assert_eq!(r.table("real_flows").strs("to_node"), vec!["B"]);
}

#[test]
fn probes_and_captures_name_real_flows_and_keep_their_bytes() {
    let dir = std::env::temp_dir().join(format!("qoelab-real-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = r#"
        [sim]
        duration = "1s"
        [[nodes]]
        name = "A"
        real = true
        [[nodes]]
        name = "B"
        real = true
        [[links]]
        a = "A"
        b = "R"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        a = "R"
        b = "B"
        rate = "100Mbps"
        delay = "1ms"
        [output]
        pcap = ["R->B"]
        probes = ["queue"]
        "#;
    let mut sim =
        Scenario::from_toml(t).unwrap().build(&BuildOptions { base_dir: None, pcap_dir: Some(&dir) }).unwrap();
    let d = udp(A, B, &[], 100);
    sim.inject_real(0, d.clone()).unwrap();
    run_collect(&mut sim, SimTime(10 * 1_000_000));
    let r = sim.results();
    let probe = r.table("probe_queue");
    assert!(probe.strs("flow").iter().all(|f| f == "udp 10.0.0.1:5000 > 10.0.0.2:5001"));
    let pcap = std::fs::read(dir.join("R_to_B.pcap")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let rec = &pcap[24 + 16..];
    let mut want = d.clone();
    want[8] = 63;
    want[10..12].copy_from_slice(&rec[10..12]);
    assert_eq!(rec, &want[..], "the capture holds the datagram as R sent it");
}

/// A — B, 1 Mbit/s, with A real or not, and a UDP flow `src` → `dst`.
fn one_link(a_real: bool, src: &str, dst: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "1s"
        [[nodes]]
        name = "A"
        real = {a_real}
        [[links]]
        a = "A"
        b = "B"
        rate = "1Mbps"
        delay = "1ms"
        [[flows]]
        name = "f"
        src = "{src}"
        dst = "{dst}"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "100kbps", payload = "100B" }}
        "#
    )
}

#[test]
fn simulated_flows_cannot_end_at_real_nodes() {
    let e = Scenario::from_toml(&one_link(true, "B", "A")).unwrap().build(&BuildOptions::default()).err().unwrap();
    assert_eq!(e.path, "flows[0].dst");
    assert!(e.reason.contains("\"A\" is real"), "{e}");
    // Without flows, a scenario needs a real node.
    let t = r#"
        [sim]
        duration = "1s"
        [[links]]
        a = "A"
        b = "B"
        rate = "1Mbps"
        delay = "1ms"
        "#;
    let e = Scenario::from_toml(t).unwrap().build(&BuildOptions::default()).err().unwrap();
    assert_eq!(e.path, "flows");
}

#[test]
fn a_simulated_world_reports_nothing_real() {
    let mut sim = Scenario::from_toml(&one_link(false, "A", "B")).unwrap().build(&BuildOptions::default()).unwrap();
    assert!(sim.real_nodes().is_empty());
    sim.run();
    let r = sim.results();
    assert!(r.tables.iter().all(|t| !t.name.starts_with("real_")));
    let keys = match r.table("summary").get("key") {
        Some(Column::Str(k)) => k.clone(),
        _ => unreachable!(),
    };
    assert!(keys.iter().all(|k| !k.starts_with("real_")));
}
