//! MPTCP (issue 20 item 1, must-show): RFC 6356's goals on a shared bottleneck and over
//! disjoint paths for LIA, OLIA and uncoupled subflows, and the lowest-RTT-first scheduler on
//! unequal RTTs; reinjection when a path fails.

use qoelab_core::{BuildOptions, Scenario, Simulation};

fn build(toml: &str) -> Simulation {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    sc.build(&BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn goodput(sim: &mut Simulation, flow: &str) -> f64 {
    sim.results().flow_value(flow, "goodput_bps")
}

/// A and B with two interfaces each, both paths through one 10 Mbit/s bottleneck R1 → R2
/// (20 ms RTT, 100-packet FIFO); an MPTCP connection with two subflows and one TCP flow.
fn shared(coupled: &str, counting: &str, secs: u32, mp_start_ms: u32, tcp_start_ms: u32) -> String {
    // RFC 6356's reference is a Reno flow; uncoupled subflows run CUBIC, against CUBIC.
    let tcp_cc = if coupled == "uncoupled" { "cubic" } else { "newreno" };
    format!(
        r#"
        [sim]
        duration = "{secs}s"
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
        start = "{mp_start_ms}ms"
        transport = {{ kind = "mptcp", coupled = "{coupled}", coupled_counting = "{counting}" }}
        app = {{ kind = "bulk" }}
        subflows = [{{ src_addr = "10.1.0.1" }}, {{ src_addr = "10.1.1.1" }}]
        [[flows]]
        name = "tcp"
        src = "C"
        dst = "B"
        start = "{tcp_start_ms}ms"
        transport = {{ kind = "tcp", cc = "{tcp_cc}" }}
        app = {{ kind = "bulk" }}
        "#
    )
}

/// A and B joined through R1 (10 Mbit/s) and through R2 (`rate2`), one-way delays `d1` and
/// `d2` per link; an MPTCP connection over both, or (`tcp_on` = Some(k)) a single TCP flow on
/// path k alone.
fn disjoint(transport: &str, rate2: &str, d1: &str, d2: &str, secs: u32, single: Option<usize>) -> String {
    let flow = match single {
        None => format!(
            r#"transport = {transport}
        subflows = [{{ src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }}, {{ src_addr = "10.1.1.1", dst_addr = "10.2.1.1" }}]"#
        ),
        Some(k) => format!(
            r#"transport = {{ kind = "tcp" }}
        src_addr = "10.1.{k}.1"
        dst_addr = "10.2.{k}.1""#
        ),
    };
    format!(
        r#"
        [sim]
        duration = "{secs}s"
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
        app = {{ kind = "bulk" }}
        {flow}
        "#
    )
}

/// RFC 6356 §2 goal 2 (do no harm) on a shared bottleneck over 300 s: a two-subflow LIA or
/// OLIA connection counting per ACK (Linux) takes no more than the competing single TCP flow
/// (within 10 %), counting bytes (RFC 6356 §3) about one share (LIA's documented miss);
/// uncoupled subflows (CUBIC each) take about two shares (more than 1.5). Medians over eight phases.
#[test]
fn shared_bottleneck_takes_one_share_when_coupled() {
    // A loss-free drop-tail run is deterministic given the flows' phase, and one phase can sit
    // well away from the typical share (OLIA took 1.21 with both flows starting at 0 once the
    // linux profile gained tcp_is_cwnd_limited). So the bound is on the median over eight
    // phases, neither flow favoured: one starts 62, 187, 312 or 437 ms after the other, each
    // order once (`qoelab verify --only mptcp_goal2` draws its seeds' start times alike).
    for (coupled, counting) in
        [("lia", "bytes"), ("olia", "bytes"), ("lia", "acks"), ("olia", "acks"), ("uncoupled", "bytes")]
    {
        let mut ratios = Vec::new();
        for lag in [62, 187, 312, 437] {
            for (mp_start, tcp_start) in [(0, lag), (lag, 0)] {
                let mut sim = build(&shared(coupled, counting, 300, mp_start, tcp_start));
                sim.run();
                let (mp, tcp) = (goodput(&mut sim, "mp"), goodput(&mut sim, "tcp"));
                assert!(mp + tcp > 9.0e6, "{coupled}: the bottleneck is used ({mp} + {tcp})");
                ratios.push(mp / tcp);
            }
        }
        ratios.sort_by(f64::total_cmp);
        let median = (ratios[3] + ratios[4]) / 2.0;
        eprintln!("{coupled} {counting}: mptcp/tcp ratios {ratios:.3?}, median {median:.3}");
        if coupled == "uncoupled" {
            // Each subflow takes less than the competing TCP flow: a lone subflow 0.84 of its share
            // here (0.82 over 40 phases), two 1.57. Not by the subflows' sending (the out-of-tree
            // kernel's subflows neither defer nor build bigger buffers: `mptcp_next_segment`,
            // `mptcp_write_xmit`) but by the linux profile's receiver, which ACKs a full-sized PSH
            // segment at once (Linux >= 6.6): with the rule of earlier kernels one subflow takes
            // 1.03, two 1.99 (docs/models/mptcp.md).
            assert!(median > 1.5, "{coupled}: two uncoupled subflows take about two shares, got {median:.3}");
        } else if counting == "acks" {
            // Linux's per-ACK counting (mptcp_coupled.c): RFC 6356 goal 2 with the issue's 10 %.
            assert!(median <= 1.1, "{coupled} {counting}: a coupled connection takes one share, got {median:.3}");
            assert!(ratios[0] > 0.5, "{coupled} {counting}: but never much less, got {:.3}", ratios[0]);
        } else {
            // RFC 6356 §3's byte counting is a documented miss for LIA (median about 1.19, as
            // `qoelab verify --only mptcp_goal2` over 10 seeds; docs/models/mptcp.md): each
            // subflow halves only its own window on an overflow, so the connection backs off by
            // less than one Reno flow. Still far from the two shares of uncoupled subflows.
            assert!(median <= 1.3, "{coupled} {counting}: about one share, got {median:.3}");
            assert!(ratios[0] > 0.5, "{coupled} {counting}: but never much less, got {:.3}", ratios[0]);
        }
    }
}

/// RFC 6356 §2 goal 1 (improve throughput) over two disjoint paths: the connection gets at
/// least what a single TCP gets on the better path (10 Mbit/s vs 5 Mbit/s).
#[test]
fn disjoint_paths_beat_the_best_single_path() {
    let best = {
        let mut sim = build(&disjoint("", "5Mbps", "5ms", "5ms", 60, Some(0)));
        sim.run();
        goodput(&mut sim, "f")
    };
    for coupled in ["lia", "olia", "uncoupled"] {
        let t = format!(r#"{{ kind = "mptcp", coupled = "{coupled}" }}"#);
        let mut sim = build(&disjoint(&t, "5Mbps", "5ms", "5ms", 60, None));
        sim.run();
        let mp = goodput(&mut sim, "f");
        eprintln!("{coupled}: mptcp {:.2} Mbit/s, best single path {:.2} Mbit/s", mp / 1e6, best / 1e6);
        assert!(mp >= best, "{coupled}: {mp} < best single path {best}");
    }
}

/// Lowest RTT first on unequal RTTs (10 ms and 80 ms a link each way) with an application
/// that never fills the fast path's window: everything goes on the fast path; a bulk transfer
/// fills its window and then spills onto the slow one, which carries less.
#[test]
fn min_rtt_prefers_the_fast_path_while_its_window_allows() {
    let t = r#"{ kind = "mptcp", scheduler = "min_rtt", coupled = "uncoupled" }"#;
    let mut sim = build(&disjoint(t, "10Mbps", "5ms", "40ms", 20, None));
    sim.run();
    let r = sim.results();
    let tab = r.table("subflows");
    let bytes = tab.f64s("recv_bytes");
    assert!(bytes[0] > bytes[1], "the fast path carries more: {bytes:?}");
    assert!(bytes[1] > 0.0, "a bulk transfer spills onto the slow path: {bytes:?}");
    // A 2 MB transfer completes with every scheduler, each byte delivered once, in order.
    // (Driven by ACKs, usually one subflow has room at a time, so min_rtt and round robin
    // choose alike here; the schedulers' unit tests tell them apart.)
    let share = |sched: &str| {
        let t = format!(r#"{{ kind = "mptcp", scheduler = "{sched}", coupled = "uncoupled" }}"#);
        let toml = disjoint(&t, "10Mbps", "5ms", "40ms", 20, None)
            .replace(r#"app = { kind = "bulk" }"#, r#"app = { kind = "bulk", bytes = "2MB" }"#);
        let mut sim = build(&toml);
        sim.run();
        let r = sim.results();
        assert_eq!(r.flow_value("f", "delivered_bytes"), 2e6, "{sched}: the transfer completes");
        let b = r.table("subflows").f64s("recv_bytes");
        b[1] / (b[0] + b[1])
    };
    let (min_rtt, rr) = (share("min_rtt"), share("round_robin"));
    eprintln!("slow path's share of a 2 MB transfer: min_rtt {min_rtt:.3}, round_robin {rr:.3}");
    assert!(min_rtt < 0.5, "the fast path carries most: slow share {min_rtt:.3}");
    let red = share("redundant");
    assert!(red > 0.0, "redundant copies go on both paths: {red:.3}");
}

/// A path that fails (loss 100 % both ways from 1 s) during a 10 MB transfer: the data its
/// subflow holds is reinjected on the other, the transfer completes, and every byte is
/// delivered exactly once, in order (the connection's in-order count is the transfer's size,
/// copies are dropped and counted).
#[test]
fn failed_path_data_is_reinjected_and_the_transfer_completes() {
    for sched in ["min_rtt", "round_robin"] {
        // A fixed connection window: with autotuning (the linux profile's) the first window of
        // 64 KB fills in the first RTTs and opportunistic retransmission moves chunks between
        // the paths before the failure, which this test does not look at.
        let t = format!(r#"{{ kind = "mptcp", scheduler = "{sched}", tcp = {{ rcv_autotune = false }} }}"#);
        let fail = r#"loss_ab = { kind = "bernoulli", p = 1.0, start = "1s" }
        loss_ba = { kind = "bernoulli", p = 1.0, start = "1s" }
        [[links]]
        a = "R2""#;
        let toml = disjoint(&t, "10Mbps", "5ms", "5ms", 60, None)
            .replace(r#"app = { kind = "bulk" }"#, r#"app = { kind = "bulk", bytes = "10MB" }"#)
            .replacen(
                "[[links]]
        a = \"R2\"",
                fail,
                1,
            );
        assert!(toml.contains("start = \"1s\""), "the failure is in the scenario");
        let mut sim = build(&toml);
        sim.run();
        let r = sim.results();
        let v = |c: &str| r.flow_value("f", c);
        eprintln!(
            "{sched}: delivered {} B, reinjected {} B, rto {}, duplicate data {} B",
            v("delivered_bytes"),
            v("reinjected_bytes"),
            v("rto_count"),
            v("duplicate_data_bytes")
        );
        assert_eq!(v("delivered_bytes"), 1e7, "{sched}: the transfer completes, in order");
        assert_eq!(v("acked_bytes"), 1e7, "{sched}: and the sender saw it DATA_ACKed");
        assert!(v("reinjected_bytes") > 0.0, "{sched}: the failed subflow's data was reinjected");
        assert!(v("rto_count") > 0.0, "{sched}: the failed subflow timed out");
        let t = r.table("subflows");
        let b = t.f64s("recv_bytes");
        assert!(b[0] > b[1], "{sched}: the surviving path carried the rest: {b:?}");
        // Per-subflow statistics: the failed subflow timed out, the surviving one took the
        // reinjected data, and the connection's counters are the subflows' sums.
        let col = |c: &str| t.f64s(c).to_vec();
        assert!(col("rto_count")[1] > 0.0 && col("reinjected_bytes")[0] > 0.0, "{sched}");
        assert_eq!(col("reinjected_bytes")[1], 0.0, "{sched}: nothing goes back to the failed path");
        for c in ["retransmitted_segments", "rto_count", "fast_retransmits", "reinjected_bytes"] {
            assert_eq!(col(c).iter().sum::<f64>(), v(c), "{sched}: {c}");
        }
        // Every DSN byte was scheduled at least once, and what the subflows handed up in order
        // is the delivered bytes plus the copies dropped.
        assert!(col("scheduled_bytes").iter().sum::<f64>() >= 1e7);
        assert_eq!(
            col("subflow_in_order_bytes").iter().sum::<f64>(),
            v("delivered_bytes") + v("duplicate_data_bytes"),
            "{sched}"
        );
        assert!(col("throughput_bps")[0] > col("throughput_bps")[1], "{sched}");
    }
}

/// The `subflow` probe: a series per path, a row only when that subflow's window changed, the
/// last row of each path equal to the end-of-run `subflows.cwnd_bytes`; and the coupled
/// increase is visible in it (LIA keeps the sum of the windows growing by about one MSS per RTT
/// between losses, so the windows change in congestion avoidance too).
#[test]
fn subflow_probe_follows_each_window() {
    let t = r#"{ kind = "mptcp", coupled = "lia" }"#;
    let toml = disjoint(t, "5Mbps", "5ms", "5ms", 20, None) + "\n[output]\nprobes = [\"subflow\"]\n";
    let mut sim = build(&toml);
    sim.run();
    let r = sim.results();
    let p = r.table("probe_subflow");
    let (path, cwnd, ssth, tt) = (p.f64s("path"), p.f64s("cwnd_bytes"), p.f64s("ssthresh_bytes"), p.f64s("t_ns"));
    assert!(tt.windows(2).all(|w| w[0] <= w[1]), "time order");
    let end = r.table("subflows").f64s("cwnd_bytes");
    for k in 0..2 {
        let rows: Vec<usize> = (0..p.rows()).filter(|&i| path[i] == k as f64).collect();
        assert!(rows.len() > 10, "path {k}: {} samples", rows.len());
        // 10 segments of 1420 B (MSS less the DSS option) at the start.
        assert_eq!(cwnd[rows[0]], 14_200.0, "path {k}: the initial window");
        for w in rows.windows(2) {
            assert!((cwnd[w[0]], ssth[w[0]]) != (cwnd[w[1]], ssth[w[1]]), "path {k}: a row per change");
        }
        assert_eq!(cwnd[*rows.last().unwrap()], end[k], "path {k}: last sample = end of run");
        // Congestion avoidance samples exist (cwnd ≥ ssthresh after the first loss).
        assert!(rows.iter().any(|&i| ssth[i] < 1e15 && cwnd[i] > ssth[i]), "path {k}: coupled growth sampled");
    }
}

/// Opportunistic retransmission and penalisation (Raiciu et al., NSDI 2012, §4.2) with a fixed
/// connection window (192 KB, no autotuning) below the slow path's BDP (10 Mbit/s, 200 ms RTT:
/// 250 KB) beside a fast path (10 Mbit/s, 10 ms): the window blocks while the slow subflow holds
/// the data it waits for, so the chunk is sent again on the fast subflow and the slow one is
/// penalised; without the option neither happens. Measured (docs/models/mptcp.md): 9.57 Mbit/s
/// with, 5.47 without, the fast path alone 9.64. Without penalisation the slow path's data stalls
/// the window and the connection falls far below the fast path alone; with it the connection
/// gets back to within a few percent of that path. (With a window of 256 KB or more the window
/// no longer blocks and penalising costs a little instead: 9.77 against 10.71 at 256 KB.)
#[test]
fn penalisation_acts_when_the_slow_subflow_blocks_the_window() {
    let run = |penalise: bool| {
        let t = format!(
            r#"{{ kind = "mptcp", coupled = "uncoupled", penalise = {penalise}, tcp = {{ rcv_buf = "192KB", rcv_autotune = false }} }}"#
        );
        let mut sim = build(&disjoint(&t, "10Mbps", "5ms", "100ms", 30, None));
        sim.run();
        let r = sim.results();
        let cwnd = r.table("subflows").f64s("cwnd_bytes");
        let v = |c: &str| r.flow_value("f", c);
        (v("goodput_bps"), v("penalisations"), v("reinjected_bytes"), cwnd[1], v("delivered_bytes"))
    };
    let (on, off) = (run(true), run(false));
    eprintln!("penalise on: {on:?}; off: {off:?}");
    assert!(on.1 > 0.0 && on.2 > 0.0, "penalised and retransmitted opportunistically: {on:?}");
    assert_eq!((off.1, off.2), (0.0, 0.0), "neither without the option");
    assert!(on.3 < off.3, "the slow subflow's window is smaller when penalised: {on:?} {off:?}");
    let fast_alone = {
        let mut sim = build(&disjoint("", "10Mbps", "5ms", "100ms", 30, Some(0)));
        sim.run();
        goodput(&mut sim, "f")
    };
    // The window stalls without penalisation (well below the fast path alone); penalising
    // brings the connection back to within 5 % of that path.
    assert!(off.0 < 0.8 * fast_alone && on.0 > 0.95 * fast_alone, "{on:?} {off:?} vs fast path alone {fast_alone}");
}

/// A destination application that answers (an HTTP server for a client) builds on MPTCP, as on
/// TCP, and its responses come back over the connection (the full-duplex tests are in
/// `tests/mptcp_duplex.rs`).
#[test]
fn an_answering_peer_app_runs_on_mptcp() {
    let app = r#"app = { kind = "http_client", size = "10KB", objects = 5 }
        peer_app = { kind = "http_server" }"#;
    for (what, toml) in [
        ("mptcp", disjoint(r#"{ kind = "mptcp" }"#, "10Mbps", "5ms", "5ms", 1, None)),
        ("tcp", disjoint("", "10Mbps", "5ms", "5ms", 1, Some(0))),
    ] {
        let mut sim = build(&toml.replace(r#"app = { kind = "bulk" }"#, app));
        sim.run();
        assert!(sim.aborted().is_none(), "{what}");
        let r = sim.results();
        assert_eq!(r.flow_value("f", "http_objects"), 5.0, "{what}: every object fetched");
        assert_eq!(r.flow_value("f", "http_served"), 5.0, "{what}");
    }
}

/// A join whose SYN is lost: path 2 is down for the first 0.5 s, so its MP_JOIN SYN times out
/// and is sent again. Once the handshake completes the subflow carries data like any other
/// (the SYN's timeout is not a timeout recovery of data: it once left the subflow unused for
/// the whole run, and the connection single-path).
#[test]
fn a_join_whose_syn_was_lost_carries_data() {
    let t = r#"{ kind = "mptcp", coupled = "lia" }"#;
    let toml = disjoint(t, "10Mbps", "5ms", "5ms", 20, None)
        + r#"
        [[outages]]
        links = ["A->R2", "R2->A"]
        at = "0s"
        duration = "500ms""#;
    let mut sim = build(&toml);
    sim.run();
    let r = sim.results();
    let b = r.table("subflows").f64s("recv_bytes");
    eprintln!("bytes per subflow after a lost join SYN: {b:?}");
    assert!(b[1] > 0.3 * (b[0] + b[1]), "the late subflow carries its share: {b:?}");
}

/// The linux profile's autotuned connection-level buffer over unequal paths (10 Mbit/s each,
/// 20 ms and 400 ms RTT). It starts at tcp_rmem[1] (128 KiB, a 64 KB window) and grows per the
/// slowest subflow's receiver RTT: with tcp_rmem[2] at its default 32 MiB it outgrows both paths'
/// needs (about 1 MB of window) and never binds, so the run is the fixed 4 MiB window's; with
/// tcp_rmem[2] = 512 KB (a 256 KB window at most) the slow subflow's data holds the window and
/// the fast subflow is blocked (opportunistic retransmission and penalisation act). A sender that
/// keeps to the offered window never overflows the buffer: `rcvbuf_drop_pkts` is 0 throughout.
#[test]
fn autotuned_buffer_grows_and_a_slow_path_holds_it() {
    let run = |tcp: &str| {
        let t = format!(r#"{{ kind = "mptcp", coupled = "uncoupled", tcp = {{ {tcp} }} }}"#);
        let mut sim = build(&disjoint(&t, "10Mbps", "5ms", "100ms", 30, None));
        sim.run();
        let r = sim.results();
        let v = |c: &str| r.flow_value("f", c);
        (v("goodput_bps"), v("penalisations"), v("reinjected_bytes"), v("rcv_buf_bytes"), v("rcvbuf_drop_pkts"))
    };
    let (auto, fixed, small) = (run(""), run("rcv_autotune = false"), run(r#"rcv_buf = "512KB""#));
    eprintln!(
        "(goodput, penalisations, reinjected, rcv_buf, drops): autotuned {auto:?}; fixed 4 MiB {fixed:?}; \
         autotuned to 512 KB {small:?}"
    );
    assert!(auto.3 > (4 << 20) as f64 && auto.3 <= (32 << 20) as f64, "the buffer outgrew the paths: {auto:?}");
    assert_eq!((fixed.3, small.3), ((4 << 20) as f64, 512_000.0));
    assert_eq!((auto.4, fixed.4, small.4), (0.0, 0.0, 0.0), "no receive-buffer drops");
    assert_eq!((auto.0, auto.1), (fixed.0, fixed.1), "a window that never binds changes nothing");
    assert!(small.1 > 0.0 && small.2 > 0.0, "the slow path held the window: {small:?}");
    assert!(small.0 < auto.0, "and the connection is slower for it: {small:?} {auto:?}");
}
