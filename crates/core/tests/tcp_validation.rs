//! Validation of the TCP model against theory, through the public scenario API:
//! (c) one NewReno flow under Bernoulli loss against the Padhye et al. (1998) formula;
//! (d) equal-RTT flows sharing a drop-tail bottleneck have Jain's index > 0.95.

use qoelab_core::{run_toml, BuildOptions, RunResults};

fn run(toml: &str) -> RunResults {
    run_toml(toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

/// Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
/// Validation", SIGCOMM 1998, eq. (30), the "full model" with the timeout term: packets per
/// second sent, for loss-indication rate `p`, round-trip time `rtt` (s), initial timeout `t0`
/// (s), `b` packets acknowledged per ACK and receiver window `wmax` (packets).
fn padhye(p: f64, rtt: f64, t0: f64, b: f64, wmax: f64) -> f64 {
    let ca = rtt * (2.0 * b * p / 3.0).sqrt();
    let to = t0 * (3.0 * (3.0 * b * p / 8.0).sqrt()).min(1.0) * p * (1.0 + 32.0 * p * p);
    (wmax / rtt).min(1.0 / (ca + to))
}

/// One flow over a 100 Mbit/s, 50 ms link (no queueing at these rates) with Bernoulli loss on
/// the data direction. Returns (measured send rate in packets/s, Padhye's prediction, SRTT).
/// The receive window is fixed (`rcv_autotune = false`): Padhye's model takes the receiver's
/// window W_max as a constant. (Autotuned, the send rates are within 1 % of these, e.g. 74.05
/// against 73.65 pkt/s at p = 1 % with per-ACK counting, but the run's last SRTT, which the
/// prediction uses, differs: 124.5 against 120.0 ms.)
fn padhye_case(p: f64, delayed_ack: bool, abc: bool, b: f64, secs: u64) -> (f64, f64, f64) {
    let r = run(&format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = 5
        [[links]]
        a = "S"
        b = "D"
        rate = "100Mbps"
        delay = "50ms"
        queue = {{ kind = "fifo", limit = "1000p" }}
        loss_ab = {{ kind = "bernoulli", p = {p} }}
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp", cc = {{ kind = "newreno", abc = {abc}, rule = "rfc5681" }}, sack = false, delayed_ack = {delayed_ack}, min_rto = "1s", rcv_autotune = false }}
        app = {{ kind = "bulk" }}
        "#
    ));
    let sent = r.flow_value("tcp", "segments_sent");
    let rate = sent / secs as f64;
    let srtt = r.flow_value("tcp", "srtt_s");
    // T0: with min_rto = 1 s and RTT ~ 100 ms the first timeout of a series is 1 s.
    let wmax = (4u64 << 20) as f64 / 1448.0;
    (rate, padhye(p, srtt, 1.0, b, wmax), srtt)
}

/// (c) NewReno (SACK off, ACK every segment, b = 1) under Bernoulli loss: send rate within 25 %
/// of Padhye's full formula at p = 0.5 %, 1 %, 2 %.
#[test]
fn newreno_throughput_matches_padhye() {
    for p in [0.005, 0.01, 0.02] {
        let (got, want, srtt) = padhye_case(p, false, true, 1.0, 1000);
        let err = got / want - 1.0;
        eprintln!("padhye b=1 p={p}: {got:.2} pkt/s vs {want:.2} pkt/s (srtt {srtt:.4} s): {:+.1} %", err * 100.0);
        assert!(err.abs() < 0.25, "p = {p}: {got:.2} pkt/s vs Padhye {want:.2} pkt/s ({:+.1} %)", err * 100.0);
    }
}

/// (c) With delayed ACKs and RFC 5681 per-ACK window growth (`abc = false`), the window grows
/// by about half a segment per RTT: Padhye's b = 2. (With byte counting, the default, growth
/// does not depend on the ACK ratio and b = 1 applies; checked as well.)
#[test]
fn newreno_delayed_ack_throughput_matches_padhye() {
    for p in [0.005, 0.01, 0.02] {
        let (got, want, srtt) = padhye_case(p, true, true, 1.0, 1000);
        let err = got / want - 1.0;
        eprintln!(
            "padhye delack abc b=1 p={p}: {got:.2} pkt/s vs {want:.2} pkt/s (srtt {srtt:.4} s): {:+.1} %",
            err * 100.0
        );
        assert!(err.abs() < 0.25, "abc, p = {p}: {got:.2} pkt/s vs Padhye {want:.2} pkt/s ({:+.1} %)", err * 100.0);
        let (got, want, srtt) = padhye_case(p, true, false, 2.0, 1000);
        let err = got / want - 1.0;
        eprintln!("padhye b=2 p={p}: {got:.2} pkt/s vs {want:.2} pkt/s (srtt {srtt:.4} s): {:+.1} %", err * 100.0);
        assert!(err.abs() < 0.25, "p = {p}: {got:.2} pkt/s vs Padhye {want:.2} pkt/s ({:+.1} %)", err * 100.0);
    }
}

/// n bulk flows with equal RTTs through a 10 Mbit/s, 10 ms drop-tail bottleneck (50 packets),
/// as in the dumbbell-10m benchmark but without the UDP flow; 60 s simulated.
fn dumbbell(n: u32, cc: &str, sack: bool) -> RunResults {
    run(&format!(
        r#"
        [sim]
        duration = "60s"
        seed = 2
        [[links]]
        a = "R1"
        b = "R2"
        rate = "10Mbps"
        delay = "10ms"
        queue = {{ kind = "fifo", limit = "50p" }}
        [[links]]
        count = {n}
        a = "S{{i}}"
        b = "R1"
        rate = "100Mbps"
        delay = "1ms"
        [[links]]
        count = {n}
        a = "R2"
        b = "D{{i}}"
        rate = "100Mbps"
        delay = "1ms"
        [[flows]]
        name = "tcp{{i}}"
        count = {n}
        src = "S{{i}}"
        dst = "D{{i}}"
        start = "100ms"
        start_step = "10ms"
        transport = {{ kind = "tcp", cc = "{cc}", sack = {sack} }}
        app = {{ kind = "bulk" }}
        "#
    ))
}

/// (d) Jain's index over the flows' goodputs exceeds 0.95, for NewReno and CUBIC, and the
/// bottleneck is kept busy.
#[test]
fn equal_rtt_flows_share_fairly() {
    for (n, cc, sack) in [(5, "newreno", false), (10, "newreno", true), (5, "cubic", true), (10, "cubic", true)] {
        let r = dumbbell(n, cc, sack);
        let jain = r.summary("jain_index");
        assert_eq!(r.summary("jain_flows"), n as f64);
        let goodputs = r.table("flows").f64s("goodput_bps");
        let total: f64 = goodputs.iter().sum();
        eprintln!("jain n={n} {cc} sack={sack}: {jain:.4}, total goodput {:.3} Mbit/s", total / 1e6);
        assert!(jain > 0.95, "{n} {cc} flows: Jain {jain:.4}, goodputs {goodputs:?}");
        // Payload share of a 1500 B packet is 1448/1500; the link is nearly always busy.
        assert!(total > 0.85 * 10e6 * 1448.0 / 1500.0, "{n} {cc}: total goodput {total}");
    }
}
