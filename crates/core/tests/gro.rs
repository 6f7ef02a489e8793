//! GRO on a router's receiving interface (`b_gro`, `crates/core/src/link/gro.rs`) through whole
//! runs: a server on a 1 Gbit/s line sends TCP through a router to a 10 Mbit/s access line.
//! With GRO, the router's discipline sees aggregates (fewer packets dequeued than sent on the
//! wire), a dropped aggregate is counted as all its segments in the flow's losses, and the
//! client still receives every byte of every download. The sender's segments are ACK-clocked
//! at the 10 Mbit/s line's pace (1.2 ms apart), so the router polls every 2 ms to batch them,
//! and TCP timestamps are off (GRO merges only segments with equal timestamp options).

use qoelab_core::{run_toml, BuildOptions, RunResults};

fn run(gro: &str, limit: &str) -> RunResults {
    let t = format!(
        r#"
        [sim]
        duration = "6s"
        [[links]]
        a = "server"
        b = "router"
        rate = "1Gbps"
        delay = "100us"
        {gro}
        [[links]]
        a = "router"
        b = "client"
        rate = "10Mbps"
        delay = "5ms"
        queue_ab = {{ kind = "fifo", limit = "{limit}" }}
        [[flows]]
        name = "dl"
        src = "server"
        dst = "client"
        transport = {{ kind = "tcp", cc = "cubic", timestamps = false }}
        app = {{ kind = "web", size = "1MB" }}
        "#
    );
    run_toml(&t, &BuildOptions::default()).unwrap()
}

fn link(r: &RunResults, name: &str, col: &str) -> u64 {
    let t = r.table("links");
    let i = t.strs("link").iter().position(|n| n == name).unwrap();
    t.f64s(col)[i] as u64
}

#[test]
fn the_bottleneck_queues_aggregates_and_sends_mtu_segments() {
    let off = run("", "20p");
    let on = run(r#"b_gro = { poll = "2ms" }"#, "20p");
    assert!(off.table("links").columns.iter().all(|(c, _)| !c.starts_with("gro_")), "no GRO columns without GRO");
    // Off: one packet in, one out. On: fewer dequeued than serialised, all segments ≤ MTU.
    assert_eq!(link(&off, "router->client", "dequeued_pkts"), link(&off, "router->client", "tx_pkts"));
    let (deq, tx) = (link(&on, "router->client", "dequeued_pkts"), link(&on, "router->client", "tx_pkts"));
    let aggregates = link(&on, "server->router", "gro_aggregates");
    assert!(aggregates > 100 && deq < tx, "aggregates {aggregates}, dequeued {deq}, sent {tx}");
    assert!(link(&on, "router->client", "tx_bytes") <= 1500 * tx);
    // Every byte the sender's application wrote is received: same downloads completed as
    // counted in bytes, and per-flow conservation (sent = received + dropped + in flight)
    // is checked by the results themselves.
    for r in [&off, &on] {
        let (sent, recv) = (r.flow_value("dl", "sent_pkts"), r.flow_value("dl", "recv_pkts"));
        let (dq, inf) = (r.flow_value("dl", "drop_queue_pkts"), r.flow_value("dl", "in_flight_pkts"));
        assert_eq!(sent, recv + dq + inf);
        assert!(r.flow_value("dl", "recv_bytes") > 5e6, "the downloads ran");
    }
}

#[test]
fn a_dropped_aggregate_loses_all_its_segments() {
    // A 4-packet FIFO overflows: the port counts dropped aggregates as one packet each, the
    // flow counts every segment they held.
    let on = run(r#"b_gro = { poll = "2ms" }"#, "4p");
    let port_drops = link(&on, "router->client", "drop_queue_pkts");
    let flow_drops = on.flow_value("dl", "drop_queue_pkts") as u64;
    assert!(port_drops > 0 && flow_drops > port_drops, "port {port_drops} aggregates, flow {flow_drops} segments");
    // And the transport recovered them all: the downloads completed.
    assert!(on.flow_value("dl", "recv_bytes") > 3e6);
}

#[test]
fn gro_with_a_zero_poll_interval_changes_nothing() {
    // Every packet is polled as it arrives: nothing merges and nothing waits.
    assert_eq!(run("", "20p").table("flows").columns, run(r#"b_gro = { poll = "0s" }"#, "20p").table("flows").columns);
}

#[test]
fn bad_gro_values_name_their_key() {
    for (gro, key) in [
        (r#"b_gro = { poll = "1s" }"#, "links[0].b_gro.poll"),
        (r#"a_gro = { max_bytes = "70KB" }"#, "links[0].a_gro.max_bytes"),
    ] {
        let t = format!(
            "[sim]\nduration = \"1s\"\n[[links]]\na = \"A\"\nb = \"B\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n{gro}\n[[flows]]\nname = \"f\"\nsrc = \"A\"\ndst = \"B\"\ntransport = {{ kind = \"udp\" }}\napp = {{ kind = \"cbr\", rate = \"100kbps\", payload = \"100B\" }}\n"
        );
        let e = run_toml(&t, &BuildOptions::default()).err().expect("refused").to_string();
        assert!(e.contains(key), "{e}");
    }
}
