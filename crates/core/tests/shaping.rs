//! Policing and shaping end to end: `kind = "police"` (RFC 2697/2698 three-colour markers) and
//! `kind = "tbf"` (Linux token-bucket shaper) on a port, driven by the engine (the port wakes a
//! waiting shaper at its `ready_at`).

use qoelab_core::scenario::Scenario;
use qoelab_core::BuildOptions;

/// A UDP CBR flood of `rate` in 1500-byte IP packets (1472 B payload) from S through R to D,
/// over 100 Mbit/s links, with `queue` on R→D; returns the flow's stats after `secs` seconds.
fn flood(queue: &str, rate: &str, secs: u32) -> qoelab_core::trace::FlowStats {
    let toml = format!(
        r#"
        [sim]
        duration = "{secs}s"
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
        queue = {queue}
        [[flows]]
        name = "flood"
        src = "S"
        dst = "D"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "{rate}", payload = "1472B" }}
        "#
    );
    let mut sim = Scenario::from_toml(&toml).unwrap().build(&BuildOptions::default()).unwrap();
    sim.run();
    sim.flows[0].fwd.clone()
}

/// A 20 Mbit/s flood through a 10 Mbit/s tbf on a 100 Mbit/s link: what arrives in 4 s is the
/// burst plus 10 Mbit/s for the time the flow ran (within two packets), the rest is dropped at
/// the shaper's byte limit, and no packet waits longer than limit/rate plus the path.
#[test]
fn tbf_shapes_a_flood_to_its_rate() {
    let f = flood(r#"{ kind = "tbf", rate = "10Mbps", burst = "15000B", limit = "60000B" }"#, "20Mbps", 4);
    let bytes = f.recv_pkts * 1500;
    let span_ns = f.last_recv.0 - f.first_recv.unwrap().0;
    // Bytes released in [first, last]: the full bucket at the start plus rate·span, to within
    // a packet of rounding at each end.
    let want = 15_000 + 10_000_000 * span_ns / 8_000_000_000;
    eprintln!(
        "tbf: {bytes} B over {span_ns} ns (want {want}), {} dropped, max delay {} ns",
        f.drop_queue_pkts, f.delay_max_ns
    );
    assert!(bytes.abs_diff(want) <= 3000, "received {bytes} B over {span_ns} ns, want {want}");
    assert!(
        f.drop_queue_pkts > f.recv_pkts * 9 / 10,
        "half the flood is dropped: {} of {}",
        f.drop_queue_pkts,
        f.sent_pkts
    );
    // The longest wait: the 60 KB FIFO plus the head at 10 Mbit/s (49.2 ms) and the path (2 ms
    // propagation, two serialisations of 0.12 ms).
    assert!(f.delay_max_ns < 51_500_000, "max delay {} ns", f.delay_max_ns);
    assert!(f.delay_max_ns > 45_000_000, "the FIFO fills: max delay {} ns", f.delay_max_ns);
}

/// Below its rate, tbf delays nothing beyond the path (the bucket never empties).
#[test]
fn tbf_below_its_rate_is_transparent() {
    let f = flood(r#"{ kind = "tbf", rate = "10Mbps", burst = "15000B", limit = "60000B" }"#, "5Mbps", 1);
    assert_eq!(f.drop_queue_pkts, 0);
    assert_eq!(f.delay_max_ns, 2_000_000 + 2 * 120_000);
}

/// A 4 Mbit/s flood policed at CIR 2 Mbit/s (srTCM, red dropped): what arrives is what the
/// meter coloured green or yellow, CBS + EBS + CIR·T, to within a packet.
#[test]
fn police_passes_cir_plus_the_bursts() {
    let f = flood(
        r#"{ kind = "police", cir = "2Mbps", cbs = "15000B", ebs = "15000B", yellow = "AF12", red = "drop" }"#,
        "4Mbps",
        4,
    );
    let bytes = f.recv_pkts * 1500;
    // Metered from the first arrival at R (t ≈ 1.12 ms, after S's serialisation and the first
    // link) to the last; the flow's sending span bounds it.
    let span_ns = f.last_recv.0 - f.first_recv.unwrap().0;
    let want = 30_000 + 2_000_000 * span_ns / 8_000_000_000;
    eprintln!("police: {bytes} B over {span_ns} ns (want {want}), {} dropped", f.drop_queue_pkts);
    assert!(bytes.abs_diff(want) <= 1500, "received {bytes} B over {span_ns} ns, want {want}");
    // Policing drops, it does not queue: no packet waits.
    assert_eq!(f.delay_max_ns, 2_000_000 + 2 * 120_000);
}
