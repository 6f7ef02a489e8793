//! Typed probes (`[output] probes`, `trace/probe.rs`) against the counters and end-of-run
//! values they must agree with: a cwnd series that starts at the initial window, drops to one
//! segment at every timeout and ends at the reported cwnd; drop and queue events that add up to
//! the ports' counters and final backlogs; and runs whose other results do not move when
//! probes are on.

use qoelab_core::trace::Table;
use qoelab_core::{BuildOptions, RunResults, Scenario, Simulation};

const MSS: f64 = 1448.0;

/// S -> R -> D: a lossy 50 Mbit/s access link and a 10 Mbit/s bottleneck with a 20-packet
/// buffer, shared by a bulk TCP flow and a 9 Mbit/s CBR flow; `probes` goes into `[output]`.
fn scenario(probes: &str) -> Scenario {
    let text = format!(
        r#"
        [sim]
        duration = "20s"
        seed = 3
        [[links]]
        a = "S"
        b = "R"
        rate = "50Mbps"
        delay = "5ms"
        loss_ab = {{ kind = "bernoulli", p = 0.08 }}
        [[links]]
        a = "R"
        b = "D"
        rate = "10Mbps"
        delay = "20ms"
        queue = {{ kind = "fifo", limit = "20p" }}
        [[flows]]
        name = "tcp1"
        src = "S"
        dst = "D"
        # rfc profile (an ACK per segment): this run must overflow the 20-packet queue as well as
        # lose packets on the channel, and does so under rfc within its 20 s.
        transport = {{ kind = "tcp", cc = "newreno", profile = "rfc" }}
        app = {{ kind = "bulk" }}
        [[flows]]
        name = "cbr"
        src = "S"
        dst = "D"
        start = "1s"
        transport = {{ kind = "udp" }}
        app = {{ kind = "cbr", rate = "9Mbps", payload = "1000B" }}
        [output]
        probes = [{probes}]
        "#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("test scenario: {e}"))
}

fn run(probes: &str) -> (Simulation, RunResults) {
    let mut sim = scenario(probes).build(&BuildOptions::default()).expect("test scenario builds");
    sim.run();
    let r = sim.results();
    (sim, r)
}

/// Rows of `t` whose string column `col` equals `v`.
fn rows(t: &Table, col: &str, v: &str) -> Vec<usize> {
    t.strs(col).iter().enumerate().filter(|(_, x)| *x == v).map(|(i, _)| i).collect()
}

fn non_decreasing(xs: &[f64]) -> bool {
    xs.windows(2).all(|w| w[0] <= w[1])
}

const ALL: &str = r#""queue", "drops", "cwnd", "rto", "retransmit", "tcp_state""#;

#[test]
fn cwnd_series_follows_the_window_through_timeouts() {
    let (_, r) = run(ALL);
    let cw = r.table("probe_cwnd");
    let i = rows(cw, "flow", "tcp1");
    assert_eq!(i.len(), cw.rows(), "only the TCP flow has a window");
    let (t, cwnd, ssth) = (cw.f64s("t_ns"), cw.f64s("cwnd_bytes"), cw.f64s("ssthresh_bytes"));
    assert!(non_decreasing(&t));
    // RFC 6928: the first value is the initial window, with the "arbitrarily high" ssthresh.
    assert_eq!(cwnd[0], 10.0 * MSS);
    assert_eq!(ssth[0], i64::MAX as f64);
    // Every sample reports a change.
    assert!(cwnd.iter().zip(&ssth).collect::<Vec<_>>().windows(2).all(|w| w[0] != w[1]));
    // The series ends where the run's summary does.
    assert_eq!(*cwnd.last().unwrap(), r.flow_value("tcp1", "cwnd_bytes"));

    let rto = r.table("probe_rto");
    let rt = rto.f64s("t_ns");
    assert!(rto.rows() >= 2, "the lossy link should cause timeouts, got {}", rto.rows());
    assert_eq!(rto.rows() as f64, r.flow_value("tcp1", "rto_count"));
    assert!(non_decreasing(&rt));
    let st = r.table("probe_tcp_state");
    let (st_t, st_s) = (st.f64s("t_ns"), st.strs("state"));
    assert_eq!(st_s[0], "syn_sent");
    let backoffs = rto.f64s("backoff");
    eprintln!("{} RTOs (largest backoff {}), states {:?}", rto.rows(), backoffs.iter().cloned().fold(0.0, f64::max), {
        let mut v = st_s.clone();
        v.sort();
        v.dedup();
        v
    });
    let in_effect = |ts: &[f64], at: f64| ts.iter().rposition(|x| *x <= at).expect("a value before");
    for (k, &at) in rt.iter().enumerate() {
        let state = &st_s[in_effect(&st_t, at)];
        if state == "loss" {
            // RFC 5681 §3.1: the loss window is one segment, and the series shows it at once
            // (or already showed it, after an earlier timeout with nothing acknowledged).
            assert_eq!(cwnd[in_effect(&t, at)], MSS, "cwnd after the RTO at {at} ns");
        } else {
            // A SYN timeout: the window stays until the handshake ends, then is one segment.
            assert_eq!(state, "syn_sent", "RTO {k} at {at} ns");
            let next = t.iter().position(|x| *x > at).expect("a sample after the handshake");
            assert_eq!(cwnd[next], MSS);
        }
        if k > 0 && rto.f64s("backoff")[k] > 1.0 {
            // Back-to-back timeouts double the RTO (RFC 6298 §5.5), up to max_rto.
            let ns = rto.f64s("rto_ns");
            assert!(ns[k] == 2.0 * ns[k - 1] || ns[k] == 60e9, "RTO {k}: {} after {}", ns[k], ns[k - 1]);
        }
    }

    let rx = r.table("probe_retransmit");
    assert_eq!(rx.rows() as f64, r.flow_value("tcp1", "retransmitted_segments"));
    assert_eq!(rx.f64s("bytes").iter().sum::<f64>(), r.flow_value("tcp1", "retransmitted_bytes"));
}

#[test]
fn port_probes_add_up_to_the_port_counters_and_backlogs() {
    let (sim, r) = run(ALL);
    let links = r.table("links");
    let drops = r.table("probe_drops");
    let q = r.table("probe_queue");
    let (d_cause, q_event) = (drops.strs("cause"), q.strs("event"));
    let mut channel_total = 0;
    for (i, name) in links.strs("link").iter().enumerate() {
        let count = |t: &Table, col: &[String], v: &str| rows(t, "link", name).iter().filter(|&&k| col[k] == v).count();
        let arrival = count(drops, &d_cause, "arrival");
        let queued = count(drops, &d_cause, "queued");
        let channel = count(drops, &d_cause, "channel");
        channel_total += channel;
        let (enq, deq) = (count(q, &q_event, "enqueue"), count(q, &q_event, "dequeue"));
        let col = |c: &str| links.f64s(c)[i] as usize;
        assert_eq!(arrival + queued, col("drop_queue_pkts"), "{name}");
        assert_eq!(channel, col("drop_channel_pkts"), "{name}");
        assert_eq!(enq, col("enqueued_pkts"), "{name}");
        assert_eq!(deq, col("dequeued_pkts"), "{name}");
        assert_eq!(enq + arrival, col("arrived_pkts"), "{name}: arrived = enqueued + refused");
        // enqueued = dequeued + dropped from the queue + backlog.
        let port = sim.ports.iter().find(|p| &p.name == name).unwrap();
        assert_eq!(enq - deq - queued, port.backlog().packets as usize, "{name}: final backlog");
        let bytes = |col: &[String], v: &str| {
            let b = q.f64s("bytes");
            rows(q, "link", name).iter().filter(|&&k| col[k] == v).map(|&k| b[k]).sum::<f64>()
        };
        let queued_bytes: f64 = rows(drops, "link", name)
            .iter()
            .filter(|&&k| d_cause[k] == "queued")
            .map(|&k| drops.f64s("bytes")[k])
            .sum();
        assert_eq!(
            bytes(&q_event, "enqueue") - bytes(&q_event, "dequeue") - queued_bytes,
            port.backlog().bytes as f64,
            "{name}: final backlog in bytes"
        );
        let ts: Vec<f64> = rows(q, "link", name).iter().map(|&k| q.f64s("t_ns")[k]).collect();
        assert!(non_decreasing(&ts), "{name}: queue events in time order");
    }
    assert!(channel_total > 0 && drops.rows() > channel_total, "both kinds of drop happen");
    // Per flow and direction, the drops are the flow's drops.
    for f in ["tcp1", "cbr"] {
        let ends = drops.f64s("end");
        let fwd = rows(drops, "flow", f).iter().filter(|&&k| ends[k] == 0.0).count() as f64;
        let rev = rows(drops, "flow", f).len() as f64 - fwd;
        let v = |c: &str| r.flow_value(f, c);
        assert_eq!(fwd, v("drop_queue_pkts") + v("drop_channel_pkts"), "{f}");
        assert_eq!(rev, v("rev_drop_pkts"), "{f}");
    }
}

/// The digest of every table but the probes'.
fn digest_without_probes(r: &RunResults) -> u64 {
    let tables = r.tables.iter().filter(|t| !t.name.starts_with("probe_")).cloned().collect();
    RunResults { tables }.digest()
}

#[test]
fn probes_observe_without_changing_the_run() {
    let (plain_sim, plain) = run("");
    let (probed_sim, probed) = run(ALL);
    assert!(plain.tables.iter().all(|t| !t.name.starts_with("probe_")), "no probe tables by default");
    assert_eq!(plain_sim.events_dispatched(), probed_sim.events_dispatched());
    assert_eq!(digest_without_probes(&probed), plain.digest());
    // Only the kinds asked for.
    let (_, some) = run(r#""rto""#);
    let names: Vec<&str> = some.tables.iter().filter(|t| t.name.starts_with("probe_")).map(|t| &*t.name).collect();
    assert_eq!(names, ["probe_rto"]);
    assert_eq!(some.table("probe_rto").f64s("t_ns"), probed.table("probe_rto").f64s("t_ns"));
}

#[test]
fn an_unknown_probe_is_a_scenario_error_listing_the_valid_ones() {
    let mut text = scenario("").to_toml();
    text = text.replace("[output]", "[output]\nprobes = [\"cwnd\", \"cwin\"]");
    let e = Scenario::from_toml(&text).unwrap_err();
    assert_eq!(e.path, "output.probes[1]", "{e}");
    assert!(e.reason.contains("\"cwin\"") && e.reason.contains("queue, drops, cwnd, rto"), "{e}");
    // And a scenario with probes survives a round trip.
    let sc = scenario(r#""cwnd", "tcp_state""#);
    assert_eq!(Scenario::from_toml(&sc.to_toml()).unwrap(), sc);
}
