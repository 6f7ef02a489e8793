//! One video over several connections: the video source's `split` (GOPs assigned round robin)
//! and `pacing = "greedy"` (the TFRC send buffer kept full, never overflowing). See
//! `docs/models/multiconn.md`.

use qoelab_core::app::video::read_trace;
use qoelab_core::{BuildOptions, RunResults, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const TRACE: &str = "data/traces/cif_bbb_qp26.trace.csv";

fn build(toml: &str) -> Result<RunResults, String> {
    let sc = Scenario::from_toml(toml).map_err(|e| e.to_string())?;
    let mut sim = sc.build(&BuildOptions { base_dir: Some(&repo()), pcap_dir: None }).map_err(|e| e.to_string())?;
    sim.run();
    Ok(sim.results())
}

fn run(toml: &str) -> RunResults {
    build(toml).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

/// `n` flows of one video from S to D over a 10 Mbit/s, 10-ms link with Bernoulli loss `p`,
/// the k-th starting at 0.5·k s, each with `app_extra` in its app table and the TFRC
/// `send_buffer`.
fn split_scenario(n: u32, p: f64, transport: &str, app_extra: &str, secs: u32) -> String {
    let mut s = format!(
        r#"
        [sim]
        duration = "{secs}s"
        seed = 3
        [[links]]
        a = "S"
        b = "D"
        rate = "10Mbps"
        delay = "10ms"
        queue = {{ kind = "fifo", limit = "50p" }}
        loss_ab = {{ kind = "bernoulli", p = {p:?} }}
        "#
    );
    for i in 0..n {
        s += &format!(
            r#"
            [[flows]]
            name = "c{i}"
            src = "S"
            dst = "D"
            start = "{start}ms"
            transport = {transport}
            app = {{ kind = "video", trace = "{TRACE}", split = {{ connections = {n}, index = {i} }}{app_extra} }}
            packet_log = true
            "#,
            start = 500 * i,
        );
    }
    s
}

/// Datagrams (frame, nal, payload) of the trace at 1460-B payloads (TFRC over a 1500-B MTU).
fn trace_datagrams() -> Vec<(i64, i64, u64)> {
    let rows = read_trace(&repo().join(TRACE)).unwrap();
    let mut out = Vec::new();
    for r in rows {
        let mut left = r.size_bytes as u64;
        while left > 0 {
            let p = left.min(1460);
            left -= p;
            out.push((r.frame, r.nal, p));
        }
    }
    out
}

/// (flow, frame, nal, sent_ns, recv_ns) of every logged packet.
fn packets(r: &RunResults) -> Vec<(String, i64, i64, i64, i64)> {
    let t = r.table("packets");
    let (fl, fr, na, se, re) = (t.strs("flow"), t.f64s("frame"), t.f64s("nal"), t.f64s("sent_ns"), t.f64s("recv_ns"));
    (0..t.rows()).map(|k| (fl[k].clone(), fr[k] as i64, na[k] as i64, se[k] as i64, re[k] as i64)).collect()
}

/// Under greedy pacing no datagram is ever dropped at the TFRC send buffer, whatever its size
/// (packets or bytes) and whatever loss makes X do; every datagram of the connection's GOPs is
/// handed over and sent, and each connection sends only its own GOPs.
#[test]
fn greedy_never_overflows_the_send_buffer() {
    let all = trace_datagrams();
    for (buffer, p) in [("100p", 0.0), ("100p", 0.02), ("3p", 0.02), ("1p", 0.0), ("2000B", 0.02)] {
        let tr = format!("{{ kind = \"tfrc\", send_buffer = \"{buffer}\" }}");
        let r = run(&split_scenario(4, p, &tr, ", pacing = \"greedy\"", 120));
        let pk = packets(&r);
        for i in 0..4u32 {
            let name = format!("c{i}");
            let mine = all.iter().filter(|(f, _, _)| (f / 15) % 4 == i as i64).count() as f64;
            let ctx = format!("buffer {buffer} loss {p} flow {name}");
            assert_eq!(r.flow_value(&name, "tfrc_buffer_drops"), 0.0, "{ctx}");
            assert_eq!(r.flow_value(&name, "app_datagrams"), mine, "{ctx}: every owned datagram handed over");
            assert_eq!(r.flow_value(&name, "tfrc_sent_pkts"), mine, "{ctx}: and sent within the run");
            assert!(pk.iter().filter(|x| x.0 == name).all(|x| (x.1 / 15) % 4 == i as i64), "{ctx}: a foreign GOP");
        }
    }
}

/// Without loss (no channel loss, a queue that never overflows) the four connections together carry the whole video, each datagram once,
/// faster than its timestamps would (greedy), and the first packet of connection k leaves
/// 0.5·k s after the first of connection 0.
#[test]
fn four_greedy_connections_carry_the_video_once() {
    // A queue no slow start fills: no loss at all.
    let sc = split_scenario(4, 0.0, "{ kind = \"tfrc\" }", ", pacing = \"greedy\"", 120);
    let r = run(&sc.replace("limit = \"50p\"", "limit = \"5000p\""));
    assert_eq!(r.flow_value("c0", "drop_queue_pkts"), 0.0);
    let pk = packets(&r);
    let mut got: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for (_, f, n, _, recv) in &pk {
        assert!(*recv >= 0, "frame {f} nal {n} not received on a loss-free link");
        *got.entry((*f, *n)).or_default() += 1;
    }
    let mut want: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for (f, n, _) in trace_datagrams() {
        *want.entry((f, n)).or_default() += 1;
    }
    assert_eq!(got, want);
    let first = |i: u32| pk.iter().filter(|x| x.0 == format!("c{i}")).map(|x| x.3).min().unwrap();
    for i in 1..4 {
        assert_eq!(first(i) - first(0), 500_000_000 * i as i64);
    }
    // The video lasts 1063 / 30 = 35.4 s at its timestamps; greedy it leaves sooner.
    let last = pk.iter().map(|x| x.3).max().unwrap() as f64 * 1e-9;
    assert!(last < 35.0, "sending period {last} s");
}

/// With timestamps (burst pacing over RTP), the split flows send exactly the single flow's
/// packets, at the same times: splitting only chooses rows.
#[test]
fn timed_split_keeps_the_single_flows_send_times() {
    let one = packets(&run(&split_scenario(1, 0.0, "{ kind = \"rtp\" }", "", 40)));
    let mut three = Vec::new();
    for i in 0..3u32 {
        // Each connection on its own, started at 0, so send times compare directly.
        let sc = split_scenario(1, 0.0, "{ kind = \"rtp\" }", "", 40)
            .replace("connections = 1, index = 0", &format!("connections = 3, index = {i}"));
        let pk = packets(&run(&sc));
        assert!(!pk.is_empty());
        assert!(pk.iter().all(|x| (x.1 / 15) % 3 == i as i64));
        three.extend(pk.into_iter().map(|x| (x.1, x.2, x.3)));
    }
    three.sort();
    let mut one: Vec<_> = one.into_iter().map(|x| (x.1, x.2, x.3)).collect();
    one.sort();
    assert_eq!(three, one);
}

#[test]
fn runs_are_deterministic() {
    let sc = split_scenario(3, 0.02, "{ kind = \"tfrc\" }", ", pacing = \"greedy\"", 30);
    assert_eq!(format!("{:?}", run(&sc).tables), format!("{:?}", run(&sc).tables));
}

/// Bad values name their key path.
#[test]
fn bad_values_are_scenario_errors() {
    let base = split_scenario(1, 0.0, "{ kind = \"tfrc\" }", "", 1);
    let e = |from: &str, to: &str| build(&base.replace(from, to)).unwrap_err();
    let split = "split = { connections = 1, index = 0 }";
    for (bad, key, reason) in [
        ("split = { connections = 0, index = 0 }", "flows[0].app.split.connections", "must be 1 to 16, got 0"),
        ("split = { connections = 17, index = 0 }", "flows[0].app.split.connections", "must be 1 to 16, got 17"),
        ("split = { connections = 4, index = 4 }", "flows[0].app.split.index", "must be below split.connections (4)"),
        ("split = { connections = 4, index = 1, gop = 0 }", "flows[0].app.split.gop", "at least 1 frame"),
        ("split = { connections = 4, index = 2, gop = 1000 }", "flows[0].app.split", "owns no GOP"),
        ("split = { connections = 2, index = 1, colour = 3 }", "flows[0].app", "unknown field `colour`"),
        ("split = { index = 1 }", "flows[0].app", "missing field `connections`"),
        ("pacing = \"greedy\", peak_rate = \"1Mbps\"", "flows[0].app.peak_rate", "cannot be used with pacing"),
        ("pacing = \"greedy\", source_jitter = \"1ms\"", "flows[0].app.source_jitter", "cannot be used with pacing"),
    ] {
        let msg = e(split, bad);
        assert!(msg.starts_with(key) && msg.contains(reason), "{bad}: {msg}");
    }
    assert!(build(&base.replace("{ kind = \"tfrc\" }", "{ kind = \"udp\" }")).is_ok(), "timed pacing over UDP is fine");
    let greedy_udp = base.replace("{ kind = \"tfrc\" }", "{ kind = \"udp\" }").replace(split, "pacing = \"greedy\"");
    let msg = build(&greedy_udp).unwrap_err();
    assert!(msg.starts_with("flows[0].app.pacing") && msg.contains("needs a transport with a send buffer"), "{msg}");
}
