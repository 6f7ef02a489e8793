//! TFD senders and routers, and RSVP signalling, end to end through the world: a video flow and
//! a best-effort UDP flood share a 100 Mbit/s link R1→R2.

use qoelab_core::{BuildOptions, RunResults, Scenario, Simulation};
use std::path::PathBuf;

/// A 25 frame/s trace: 50 kB frames, a 100 kB I frame every second (≈ 10.4 Mbit/s), 10 s.
/// Written once per test process: the tests run on parallel threads, and rewriting the file
/// while another test reads it would hand that test a half-written trace.
fn trace_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("qoelab-tfd-rsvp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut csv = String::from("frame,type,size_bytes,ts_ms\n");
        for i in 0..250 {
            let (t, size) = if i % 25 == 0 { ("I", 100_000) } else { ("P", 50_000) };
            csv.push_str(&format!("{i},{t},{size},{}\n", i * 40));
        }
        std::fs::write(dir.join("v.csv"), csv).unwrap();
        dir
    })
    .clone()
}

fn scenario(queue: &str, video_extra: &str, flood: &str, duration: &str) -> String {
    scenario_with(queue, video_extra, "", flood, duration)
}

fn scenario_with(queue: &str, video_extra: &str, flow_extra: &str, flood: &str, duration: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "{duration}"
        [[links]]
        a = "S"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "X"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "R1"
        b = "R2"
        rate = "100Mbps"
        delay = "2ms"
        queue = {queue}
        [[links]]
        a = "R2"
        b = "D"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "R2"
        b = "Y"
        rate = "1Gbps"
        delay = "1ms"
        [[flows]]
        name = "video"
        src = "S"
        dst = "D"
        transport = {{ kind = "rtp" }}
        app = {{ kind = "video", trace = "v.csv", loop = true {video_extra} }}
        {flow_extra}
        [[flows]]
        name = "flood"
        src = "X"
        dst = "Y"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "{flood}", payload = "1400B" }}
    "#
    )
}

fn build(toml: &str) -> Simulation {
    let dir = trace_dir();
    Scenario::from_toml(toml)
        .unwrap_or_else(|e| panic!("{e}"))
        .build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None })
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run(toml: &str) -> RunResults {
    let mut sim = build(toml);
    sim.run();
    sim.results()
}

fn port(sim: &Simulation, name: &str) -> usize {
    sim.ports.iter().position(|p| p.name == name).unwrap()
}

#[test]
fn tfd_router_protects_the_announcing_flow_and_fifo_does_not() {
    let flood = "95Mbps";
    let fifo = run(&scenario(r#"{ kind = "fifo", limit = "100p" }"#, ", tfd = {}", flood, "5s"));
    let tfd = run(&scenario(r#"{ kind = "tfd", limit = "100p" }"#, ", tfd = {}", flood, "5s"));
    assert!(
        fifo.flow_value("video", "loss_ratio") > 0.02,
        "drop-tail loses video: {}",
        fifo.flow_value("video", "loss_ratio")
    );
    assert_eq!(tfd.flow_value("video", "loss_ratio"), 0.0, "the TFD reservation protects it");
    // The flood gets the rest of the link, not less.
    let flood_mbps = tfd.flow_value("flood", "recv_bytes") * 8.0 / 5.0 / 1e6;
    assert!(flood_mbps > 85.0, "best effort keeps the unreserved capacity: {flood_mbps}");
}

#[test]
fn tfd_option_bytes_are_counted_in_the_datagram() {
    // Every packet carries the option: 12 more bytes per datagram than without.
    let with = run(&scenario(
        r#"{ kind = "fifo", limit = "1000p" }"#,
        r#", tfd = { attach = "every_packet" }, max_payload = "1000B""#,
        "1Mbps",
        "2s",
    ));
    let without = run(&scenario(r#"{ kind = "fifo", limit = "1000p" }"#, r#", max_payload = "1000B""#, "1Mbps", "2s"));
    let n = with.flow_value("video", "sent_pkts");
    assert_eq!(n, without.flow_value("video", "sent_pkts"));
    assert_eq!(with.flow_value("video", "sent_bytes") - without.flow_value("video", "sent_bytes"), 12.0 * n);
}

#[test]
fn rsvp_installs_along_the_path_and_path_tear_removes_it() {
    let mut sim = build(&scenario(
        r#"{ kind = "tfd", read_option = false }"#,
        r#", rsvp = { rate = "15Mbps", refresh = "1s" }"#,
        "50Mbps",
        "6s",
    ));
    let bottleneck = port(&sim, "R1->R2");
    sim.run_until(qoelab_core::time::SimTime(500_000_000));
    assert_eq!(sim.ports[bottleneck].reservation(sim.data_key(0)), Some(qoelab_core::units::Rate(15_000_000)));
    assert!(sim.rsvp_sent() >= 2, "PATH and RESV were sent");
    sim.run();
    let r = sim.results();
    assert_eq!(r.flow_value("video", "loss_ratio"), 0.0);
}

#[test]
fn rsvp_state_times_out_without_refreshes() {
    // The source stops at 3 s without PathTear; R = 1 s gives L = 5.25 s. The last refresh is
    // sent in [1.5 s, 3 s] (refresh intervals are drawn from [0.5 R, 1.5 R]), so the state must
    // still be there at 6.7 s and gone by 8.4 s (the flood's packets drive the lazy expiry).
    let toml = scenario_with(
        r#"{ kind = "tfd", read_option = false }"#,
        r#", rsvp = { rate = "15Mbps", refresh = "1s", teardown = false }"#,
        r#"stop = "3s""#,
        "10Mbps",
        "10s",
    );
    let mut sim = build(&toml);
    let p = port(&sim, "R1->R2");
    sim.run_until(qoelab_core::time::SimTime(6_700_000_000));
    assert!(sim.ports[p].reservation(sim.data_key(0)).is_some(), "state held for L after the last refresh");
    sim.run_until(qoelab_core::time::SimTime(8_400_000_000));
    assert_eq!(sim.ports[p].reservation(sim.data_key(0)), None, "state expired without refreshes");

    // With teardown, it is gone as soon as the PathTear has passed.
    let toml = toml.replace("teardown = false", "teardown = true");
    let mut sim = build(&toml);
    sim.run_until(qoelab_core::time::SimTime(3_100_000_000));
    assert_eq!(sim.ports[p].reservation(sim.data_key(0)), None, "PathTear removed the state");
}

#[test]
fn a_router_that_holds_reservations_idles_the_link_rather_than_lend_them() {
    // The video (≈ 10.4 Mbit/s) reserves 40 Mbit/s by RSVP; a 95 Mbit/s best-effort flood.
    // Lending (default): the flood gets everything the video leaves, the link is ~full.
    // Holding (`lend_idle = false`): the flood gets at most C − Σ r = 60 Mbit/s, and the link
    // idles for the reserved capacity the video does not use; the port's wake-ups at the
    // discipline's ready time keep best effort at that rate (not stalled, not above it).
    // No PathTear: the source's stop would otherwise tear the reservation down ahead of its
    // last frame, which then meets the flood as best effort.
    let rsvp = r#", rsvp = { rate = "40Mbps", refresh = "1s", teardown = false }"#;
    // The flood starts at 1 s, once the reservation is in place; it runs for 5 s.
    let late = |t: String| t.replace(r#"payload = "1400B" }"#, "payload = \"1400B\" }\n        start = \"1s\"");
    let lend = run(&late(scenario(r#"{ kind = "tfd", read_option = false }"#, rsvp, "95Mbps", "6s")));
    let hold =
        run(&late(scenario(r#"{ kind = "tfd", read_option = false, lend_idle = false }"#, rsvp, "95Mbps", "6s")));
    let mbps = |r: &RunResults, f: &str| r.flow_value(f, "recv_bytes") * 8.0 / 5.0 / 1e6;
    let (l, h) = (lend.flow_value("video", "loss_ratio"), hold.flow_value("video", "loss_ratio"));
    assert!(l == 0.0 && h == 0.0, "the reservation protects the video either way: lent {l}, held {h}");
    assert!(mbps(&lend, "flood") > 85.0, "lent: {}", mbps(&lend, "flood"));
    // The reservation is installed after a PATH/RESV round trip; before it the flood has the link.
    let held = mbps(&hold, "flood");
    assert!(held > 57.0 && held < 62.0, "held: best effort limited to C − Σr = 60 Mbit/s, got {held}");
}

#[test]
fn rsvp_tspec_is_checked() {
    let err = |rsvp: &str| {
        let toml = scenario(r#"{ kind = "tfd", read_option = false }"#, rsvp, "1Mbps", "1s");
        let dir = trace_dir();
        match Scenario::from_toml(&toml).and_then(|s| s.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None })) {
            Ok(_) => panic!("{rsvp}: expected an error"),
            Err(e) => e.to_string(),
        }
    };
    // p < r is not a token bucket a router can police; it used to be carried silently.
    let e = err(r#", rsvp = { rate = "15Mbps", peak = "10Mbps" }"#);
    assert!(e.contains("app.rsvp.peak") && e.contains("below its token rate"), "{e}");
    // A bucket beyond the 32-bit field used to be clamped silently.
    let e = err(r#", rsvp = { rate = "15Mbps", bucket = "5GiB" }"#);
    assert!(e.contains("app.rsvp.bucket") && e.contains("32-bit"), "{e}");
    // p = r and an explicit bucket are fine.
    build(&scenario(
        r#"{ kind = "tfd", read_option = false }"#,
        r#", rsvp = { rate = "15Mbps", peak = "15Mbps", bucket = "64KB" }"#,
        "1Mbps",
        "1s",
    ));
}
