//! Validation of the engine, links and queues against theory, with UDP sources.

use qoelab_core::{run_toml, BuildOptions, RunResults};

fn run(toml: &str) -> RunResults {
    run_toml(toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

/// (a) UDP CBR over an idle path: one-way delay = Σ (propagation + serialisation) exactly.
#[test]
fn idle_path_delay_is_exact() {
    // 3 hops: 100 Mbit/s 1 ms, 10 Mbit/s 10 ms, 100 Mbit/s 1 ms; 1250 B payload → 1278 B IP.
    let r = run(r#"
        [sim]
        duration = "2s"
        [[links]]
        a = "S"
        b = "R1"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        a = "R1"
        b = "R2"
        rate = "10Mbps"
        delay = "10ms"
        [[links]]
        a = "R2"
        b = "D"
        rate = "100Mbps"
        delay = "1ms"
        [[flows]]
        name = "cbr"
        src = "S"
        dst = "D"
        transport = { kind = "udp" }
        app = { kind = "cbr", rate = "1Mbps", payload = "1250B" }
    "#);
    let bits = 1278.0 * 8.0;
    let expect_s = 12e-3 + bits / 100e6 + bits / 10e6 + bits / 100e6;
    // Serialisation times are whole nanoseconds here (102240 ns, 1022400 ns), so exact.
    for col in ["delay_min_s", "delay_max_s", "delay_mean_s"] {
        let v = r.flow_value("cbr", col);
        assert!((v - expect_s).abs() < 1e-12, "{col}: {v} vs {expect_s}");
    }
    assert_eq!(r.flow_value("cbr", "jitter_rfc3550_s"), 0.0);
    assert_eq!(r.flow_value("cbr", "loss_ratio"), 0.0);
    // 1 Mbit/s of 1250 B payloads = 100 pkt/s for 2 s, starting at t = 0.
    assert_eq!(r.flow_value("cbr", "sent_pkts"), 200.0);
}

/// M/D/1 mean waiting time (Pollaczek–Khinchine): W = ρ·S / (2(1 − ρ)), S the service time.
fn md1_wait(rho: f64, service_s: f64) -> f64 {
    rho * service_s / (2.0 * (1.0 - rho))
}

/// (b) Poisson arrivals of fixed-size packets into a link: mean queueing delay within 5 % of
/// M/D/1 at loads 0.5 and 0.8.
#[test]
fn poisson_queue_matches_md1() {
    for rho in [0.5, 0.8] {
        // Bottleneck 10 Mbit/s; packets 1000 B IP (972 B payload + 28 B headers); the access
        // link is 10 Gbit/s so arrivals at the bottleneck stay (almost exactly) Poisson.
        let payload_rate = rho * 10e6 * 972.0 / 1000.0;
        let toml = format!(
            r#"
            [sim]
            duration = "400s"
            seed = 3
            [[links]]
            a = "S"
            b = "R"
            rate = "10Gbps"
            delay = "0ms"
            queue = {{ kind = "fifo", limit = "100000p" }}
            [[links]]
            a = "R"
            b = "D"
            rate = "10Mbps"
            delay = "0ms"
            queue = {{ kind = "fifo", limit = "100000p" }}
            [[flows]]
            name = "p"
            src = "S"
            dst = "D"
            transport = {{ kind = "udp" }}
            app = {{ kind = "poisson", rate = "{payload_rate}bps", payload = "972B" }}
            "#
        );
        let r = run(&toml);
        let service = 1000.0 * 8.0 / 10e6;
        let fixed = service + 1000.0 * 8.0 / 10e9; // both serialisations
        let measured_wait = r.flow_value("p", "delay_mean_s") - fixed;
        let want = md1_wait(rho, service);
        let err = (measured_wait / want - 1.0).abs();
        assert!(err < 0.05, "rho {rho}: wait {measured_wait:.6} s vs M/D/1 {want:.6} s ({:.1} %)", err * 100.0);
        let util = r.table("links").f64s("utilisation")[2];
        assert!((util - rho).abs() < 0.02, "utilisation {util} vs {rho}");
    }
}

/// (f) sent = delivered + dropped + in flight, with drops of both causes and packets in flight
/// at the end; (and the core asserts it on every run).
#[test]
fn conservation_with_drops_and_packets_in_flight() {
    let r = run(r#"
        [sim]
        duration = "3.0005s"
        [[links]]
        a = "S"
        b = "R"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        a = "R"
        b = "D"
        rate = "5Mbps"
        delay = "50ms"
        queue = { kind = "fifo", limit = "20p" }
        loss_ab = { kind = "gilbert_elliott", p = 0.05, r = 0.5 }
        [[flows]]
        name = "over"
        src = "S"
        dst = "D"
        transport = { kind = "rtp" }
        app = { kind = "cbr", rate = "8Mbps", payload = "1000B" }
    "#);
    let g = |c| r.flow_value("over", c);
    assert!(g("drop_queue_pkts") > 0.0 && g("drop_channel_pkts") > 0.0 && g("in_flight_pkts") > 0.0);
    assert_eq!(g("sent_pkts"), g("recv_pkts") + g("drop_queue_pkts") + g("drop_channel_pkts") + g("in_flight_pkts"));
    // Link-level: arrived = enqueued + dropped on arrival; the bottleneck is full.
    let l = r.table("links");
    let i = l.strs("link").iter().position(|n| n == "R->D").unwrap();
    assert_eq!(l.f64s("arrived_pkts")[i], l.f64s("enqueued_pkts")[i] + l.f64s("drop_queue_pkts")[i]);
    assert_eq!(l.f64s("max_backlog_pkts")[i], 20.0);
    assert!((l.f64s("utilisation")[i] - 1.0).abs() < 0.02);
}

const SEEDED: &str = r#"
    [sim]
    duration = "5s"
    seed = SEED
    [[links]]
    a = "S"
    b = "D"
    rate = "10Mbps"
    delay = "5ms"
    queue = { kind = "fifo", limit = "10p" }
    loss_ab = { kind = "bernoulli", p = 0.01 }
    [[flows]]
    name = "p"
    src = "S"
    dst = "D"
    transport = { kind = "udp" }
    app = { kind = "poisson", rate = "8Mbps", payload = "1000B" }
    packet_log = true
"#;

fn fingerprint(r: &RunResults) -> String {
    format!("{:?}", r.tables)
}

/// (g) the same seed gives identical results; another seed different ones.
#[test]
fn determinism() {
    let a = run(&SEEDED.replace("SEED", "7"));
    let b = run(&SEEDED.replace("SEED", "7"));
    let c = run(&SEEDED.replace("SEED", "8"));
    assert_eq!(fingerprint(&a), fingerprint(&b));
    assert_ne!(fingerprint(&a), fingerprint(&c));
}

/// Bottleneck utilisation and the throughput series agree with the offered load.
#[test]
fn throughput_series_sums_to_received_bytes() {
    let r = run(&SEEDED.replace("SEED", "1"));
    let t = r.table("throughput");
    let total: f64 = t.f64s("bytes").iter().sum();
    assert_eq!(total, r.flow_value("p", "recv_bytes"));
}
