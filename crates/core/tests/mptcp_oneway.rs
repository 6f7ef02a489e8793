//! One-way MPTCP connections keep their recorded results: the full results digest
//! (`RunResults::digest`, every table) and the event count of a few representative runs, recorded
//! in `tests/golden/mptcp_oneway.txt` on the one-way MPTCP model (a sender at the source, a
//! receiver at the destination) before the connection became full duplex.
//!
//! A full-duplex connection whose data flows one way must send exactly the packets the one-way
//! model sent (as `TcpSocket` did for TCP): this file checks it, beside the bundled scenarios'
//! golden digests (`tests/golden.rs`, which use no MPTCP). A change meant to move MPTCP results
//! is re-recorded with
//!
//! ```text
//! QOELAB_BLESS=1 cargo test --release -p qoelab-core --test mptcp_oneway
//! ```
//!
//! and the commit message says why. Digests hold for this machine kind (x86-64 Linux, glibc libm).

use qoelab_core::{BuildOptions, Scenario};
use std::fmt::Write as _;
use std::path::Path;

/// A and B joined through R1 (10 Mbit/s) and through R2 (`rate2`), one-way delays `d1` and `d2`
/// per link, an MPTCP bulk flow over both paths; `extra_ab` goes into the A–R2 link's table.
fn disjoint(transport: &str, rate2: &str, d1: &str, d2: &str, secs: u32, app: &str, extra_ab: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = 7
        [[links]]
        a = "A"
        b = "R1"
        rate = "10Mbps"
        delay = "{d1}"
        a_addr = "10.1.0.1"
        queue = {{ kind = "fifo", limit = "100p" }}
        [[links]]
        a = "R1"
        b = "B"
        rate = "1Gbps"
        delay = "{d1}"
        b_addr = "10.2.0.1"
        [[links]]
        a = "A"
        b = "R2"
        rate = "{rate2}"
        delay = "{d2}"
        a_addr = "10.1.1.1"
        queue = {{ kind = "fifo", limit = "100p" }}
        {extra_ab}
        [[links]]
        a = "R2"
        b = "B"
        rate = "1Gbps"
        delay = "{d2}"
        b_addr = "10.2.1.1"
        [[flows]]
        name = "f"
        src = "A"
        dst = "B"
        app = {app}
        transport = {transport}
        subflows = [{{ src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }}, {{ src_addr = "10.1.1.1", dst_addr = "10.2.1.1" }}]
        [output]
        probes = ["subflow", "cwnd", "retransmit", "tcp_events"]
        "#
    )
}

/// Two subflows through one 10 Mbit/s bottleneck beside a single TCP flow.
fn shared(coupled: &str, secs: u32) -> String {
    format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = 3
        [[links]]
        a = "A"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        a_addr = "10.1.0.1"
        [[links]]
        a = "A"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        a_addr = "10.1.1.1"
        [[links]]
        a = "R1"
        b = "R2"
        rate = "10Mbps"
        delay = "8ms"
        queue = {{ kind = "fifo", limit = "100p" }}
        [[links]]
        a = "R2"
        b = "B"
        rate = "1Gbps"
        delay = "1ms"
        [[links]]
        a = "C"
        b = "R1"
        rate = "1Gbps"
        delay = "1ms"
        [[flows]]
        name = "mp"
        src = "A"
        dst = "B"
        transport = {{ kind = "mptcp", coupled = "{coupled}" }}
        app = {{ kind = "bulk" }}
        subflows = [{{ src_addr = "10.1.0.1" }}, {{ src_addr = "10.1.1.1" }}]
        [[flows]]
        name = "tcp"
        src = "C"
        dst = "B"
        transport = {{ kind = "tcp", cc = "newreno" }}
        app = {{ kind = "bulk" }}
        [output]
        probes = ["subflow"]
        "#
    )
}

/// The cases: name and scenario text.
fn cases() -> Vec<(&'static str, String)> {
    let bulk = r#"{ kind = "bulk" }"#;
    vec![
        // Two disjoint paths (10 and 5 Mbit/s) with LIA, min-RTT.
        ("disjoint-lia", disjoint(r#"{ kind = "mptcp", coupled = "lia" }"#, "5Mbps", "5ms", "5ms", 20, bulk, "")),
        // A shared bottleneck with OLIA against one NewReno flow.
        ("shared-olia", shared("olia", 20)),
        // Random loss on both directions of path 2 (2 % each way), uncoupled CUBIC, round robin.
        (
            "lossy-uncoupled-rr",
            disjoint(
                r#"{ kind = "mptcp", coupled = "uncoupled", scheduler = "round_robin" }"#,
                "10Mbps",
                "5ms",
                "10ms",
                15,
                bulk,
                r#"loss_ab = { kind = "bernoulli", p = 0.02 }
        loss_ba = { kind = "bernoulli", p = 0.02 }"#,
            ),
        ),
        // Path 2 fails at 1 s during a 10 MB transfer: timeouts and reinjection.
        (
            "failure-reinjection",
            disjoint(
                r#"{ kind = "mptcp" }"#,
                "10Mbps",
                "5ms",
                "5ms",
                20,
                r#"{ kind = "bulk", bytes = "10MB" }"#,
                r#"loss_ab = { kind = "bernoulli", p = 1.0, start = "1s" }
        loss_ba = { kind = "bernoulli", p = 1.0, start = "1s" }"#,
            ),
        ),
        // A small connection window beside a 200-ms path: opportunistic retransmission and
        // penalisation.
        (
            "penalisation",
            disjoint(
                r#"{ kind = "mptcp", coupled = "uncoupled", tcp = { rcv_buf = "256KB" } }"#,
                "10Mbps",
                "5ms",
                "100ms",
                15,
                bulk,
                "",
            ),
        ),
    ]
}

fn run(name: &str, toml: &str) -> String {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut sim = sc.build(&BuildOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    sim.run();
    let events = sim.events_dispatched();
    let r = sim.results();
    format!(
        "{name} events={events} delivered={} digest={:016x}",
        r.flow_value(if name.starts_with("shared") { "mp" } else { "f" }, "delivered_bytes"),
        r.digest()
    )
}

#[test]
fn one_way_mptcp_keeps_its_recorded_results() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/mptcp_oneway.txt");
    let got: Vec<String> = cases().iter().map(|(n, t)| run(n, t)).collect();
    if std::env::var_os("QOELAB_BLESS").is_some() {
        let mut out =
            String::from("# case events delivered digest; written by QOELAB_BLESS=1 (see tests/mptcp_oneway.rs)\n");
        for l in &got {
            writeln!(out, "{l}").unwrap();
        }
        std::fs::write(&file, out).unwrap();
        return;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let want: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    assert_eq!(want.len(), got.len(), "{}: one recorded line per case", file.display());
    let diffs: Vec<String> =
        got.iter().zip(&want).filter(|(g, w)| g != w).map(|(g, w)| format!("  recorded {w}\n  now      {g}")).collect();
    assert!(diffs.is_empty(), "one-way MPTCP results changed:\n{}", diffs.join("\n"));
}
