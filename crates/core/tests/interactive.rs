//! TCP Interactive (`docs/models/tcp-interactive.md`) over the congestion injector
//! (`docs/models/outages.md`): a bulk TCP transfer S → R → C whose R–C link is down for 3 s.
//!
//! Checked: every retransmission timeout reaches the subscribed application once, in order, at
//! the instant TCP's own `rto` probe records it, with the window TCP set and the backoff count;
//! the application's synchronous state probe agrees; timeouts follow RFC 6298's doubling and
//! their number is what the profile's RTO arithmetic predicts; subscribing changes nothing in
//! TCP (the run's results digest is identical); no packet crosses the downed link and traffic
//! resumes after it; the random outage form is deterministic per seed; bad entries are
//! scenario errors with their key path.

use qoelab_core::app::{AppCtx, AppEvent, Application};
use qoelab_core::transport::{notice_mask, SocketInfo, TransportEvent};
use qoelab_core::{BuildOptions, RunResults, Scenario, Simulation};
use std::sync::{Arc, Mutex};

const MSS: u64 = 1448;
const S: u64 = 1_000_000_000;
/// The outage: R–C (both directions) down from 5 s to 8 s.
const DOWN: (u64, u64) = (5 * S, 8 * S);

fn scenario(transport: &str, outages: &str, seed: u64) -> Scenario {
    let text = format!(
        r#"
        [sim]
        duration = "14s"
        seed = {seed}
        [[links]]
        a = "S"
        b = "R"
        rate = "20Mbps"
        delay = "5ms"
        [[links]]
        a = "R"
        b = "C"
        rate = "4Mbps"
        delay = "15ms"
        queue = {{ kind = "fifo", limit = "30p" }}
        [[flows]]
        name = "video"
        src = "S"
        dst = "C"
        transport = {transport}
        app = {{ kind = "bulk" }}
        packet_log = true
        {outages}
        [output]
        probes = ["rto", "cwnd", "drops", "tcp_events"]
        "#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("test scenario: {e}"))
}

const FIXED: &str = r#"
        [[outages]]
        links = ["R->C", "C->R"]
        at = "5s"
        duration = "3s"
"#;

/// What the recorder heard: time, notice, and the socket state read in the handler.
type Heard = Arc<Mutex<Vec<(u64, TransportEvent, Option<SocketInfo>)>>>;

/// A bulk sender (as `kind = "bulk"`) that subscribes to every notice and records each with
/// the state it reads synchronously.
struct Recorder {
    heard: Heard,
    mask: u32,
}

impl Application for Recorder {
    fn start(&mut self, cx: &mut AppCtx) {
        cx.write(u64::MAX / 4);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if let AppEvent::Transport(n) = ev {
            self.heard.lock().unwrap().push((cx.now.0, n, cx.socket()));
        }
    }
    fn subscriptions(&self) -> u32 {
        self.mask
    }
}

fn run(sc: &Scenario, mask: Option<u32>) -> (RunResults, Vec<(u64, TransportEvent, Option<SocketInfo>)>) {
    let mut sim: Simulation = sc.build(&BuildOptions::default()).expect("test scenario builds");
    let heard: Heard = Arc::default();
    if let Some(mask) = mask {
        sim.attach_app("video", 0, "bulk", Box::new(Recorder { heard: heard.clone(), mask })).unwrap();
    }
    sim.run();
    let r = sim.results();
    let h = std::mem::take(&mut *heard.lock().unwrap());
    (r, h)
}

fn rtos(heard: &[(u64, TransportEvent, Option<SocketInfo>)]) -> Vec<(u64, u64, u32, u64, u64, SocketInfo)> {
    heard
        .iter()
        .filter_map(|(t, n, s)| match n {
            TransportEvent::RtoFired { rto_ns, backoff, cwnd_bytes, ssthresh_bytes } => {
                Some((*t, *rto_ns, *backoff, *cwnd_bytes, *ssthresh_bytes, s.clone().expect("TCP has a state")))
            }
            _ => None,
        })
        .collect()
}

const FREEBSD: &str = r#"{ kind = "tcp", cc = "newreno", profile = "freebsd" }"#;
const FREEBSD_OLD: &str = r#"{ kind = "tcp", cc = "newreno", profile = "freebsd", min_rto = "1s" }"#;

#[test]
fn every_rto_reaches_the_subscriber_once_in_order_when_it_fires_with_tcps_window() {
    for transport in [FREEBSD, FREEBSD_OLD] {
        let (r, heard) = run(&scenario(transport, FIXED, 1), Some(notice_mask::RTO | notice_mask::CWND));
        let got = rtos(&heard);
        assert!(!got.is_empty(), "{transport}: the outage causes timeouts");
        // TCP's own record of its timeouts (the `rto` probe, emitted in the timer handler).
        let p = r.table("probe_rto");
        let (pt, prto, pback) = (p.f64s("t_ns"), p.f64s("rto_ns"), p.f64s("backoff"));
        assert_eq!(got.len(), p.rows(), "{transport}: one notice per timeout");
        for (k, g) in got.iter().enumerate() {
            assert_eq!(g.0 as f64, pt[k], "{transport}: notice {k} at the instant the timer fired");
            assert_eq!((g.1 as f64, g.2 as f64), (prto[k], pback[k]), "{transport}: notice {k}");
            // RFC 5681 §3.1: the loss window; ssthresh as TCP set it, which the state probe
            // read in the handler confirms (and it shows the collapsed window in flight).
            assert_eq!(g.3, MSS, "{transport}: cwnd after timeout {k}");
            assert_eq!((g.5.cwnd_bytes, g.5.ssthresh_bytes, g.5.backoff), (g.3, g.4, g.2));
            assert_eq!(g.5.rto.as_nanos(), g.1);
            assert!(g.5.in_flight_bytes <= MSS, "{transport}: after timeout {k} one segment is out");
        }
        // The same window is the cwnd probe's latest at that instant (a repeated timeout, which
        // leaves the window as it was, adds no row).
        let cw = r.table("probe_cwnd");
        let (ct, cc, cs) = (cw.f64s("t_ns"), cw.f64s("cwnd_bytes"), cw.f64s("ssthresh_bytes"));
        for g in &got {
            let i = ct.iter().rposition(|&t| t <= g.0 as f64).expect("a cwnd row by each timeout");
            assert_eq!((cc[i], cs[i]), (g.3 as f64, g.4 as f64));
        }
        // The `tcp_events` probe lists the same timeouts with the same window.
        let te = r.table("probe_tcp_events");
        let ev = te.strs("event");
        let idx: Vec<usize> = (0..te.rows()).filter(|&i| ev[i] == "rto").collect();
        assert_eq!(idx.len(), got.len());
        for (g, &i) in got.iter().zip(&idx) {
            assert_eq!(te.f64s("t_ns")[i], g.0 as f64);
            assert_eq!(te.f64s("cwnd_bytes")[i], g.3 as f64);
            assert_eq!(te.f64s("backoff")[i], g.2 as f64);
        }
        // In order, one series: backoff 1, 2, …, each timer armed for the RTO the notice gave.
        for (k, w) in got.windows(2).enumerate() {
            assert_eq!(w[1].2, w[0].2 + 1, "{transport}: backoff after notice {k}");
            assert_eq!(w[1].0 - w[0].0, w[0].1, "{transport}: the next timeout fires one RTO later");
            assert_eq!(w[1].1, 2 * w[0].1, "{transport}: RFC 6298 §5.5 doubles the RTO");
        }
        // Window notices arrive in time order with the timeouts among them.
        let ts: Vec<u64> = heard.iter().map(|h| h.0).collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    }
}

/// The number of timeouts a 3-s outage causes, from the RTO arithmetic: the first timeout
/// fires at T₁ with RTO R₀ before backoff, the k-th at T₁ + R₀·(2ᵏ − 2); each retransmits one
/// segment, which is lost while it reaches R–C before the link is back (S–R takes 5 ms plus
/// 0.6 ms of serialisation); the first retransmission that gets through ends the series.
#[test]
fn a_three_second_outage_gives_the_timeouts_rto_arithmetic_predicts() {
    let mut counts = Vec::new();
    for (transport, floor) in [(FREEBSD, 30_000_000u64), (FREEBSD_OLD, S)] {
        let (_, heard) = run(&scenario(transport, FIXED, 1), Some(notice_mask::RTO));
        let got = rtos(&heard);
        let (t1, r0) = (got[0].0, got[0].1 / 2);
        // FreeBSD: RTO = max(SRTT + 4·RTTVAR, floor) + 200 ms slop, SRTT about 40–120 ms here.
        assert!(r0 >= floor + 200_000_000 && r0 <= floor.max(150_000_000) + 400_000_000, "{transport}: R0 {r0}");
        assert!(t1 > DOWN.0 && t1 < DOWN.0 + 2 * r0, "{transport}: first timeout at {t1}");
        let to_rc = 5_000_000 + 600_000;
        let predicted = (1..64u32).take_while(|&k| t1 + r0 * ((1 << k) - 2) + to_rc < DOWN.1).count() + 1;
        assert_eq!(got.len(), predicted, "{transport}: {got:?}");
        counts.push(got.len());
    }
    // Today's FreeBSD (30 ms floor) times out four times; with the 1-s floor of the paper's era
    // twice, as its Fig. 4 (12 timeouts in 6 bursts) implies.
    assert_eq!(counts, vec![4, 2]);
}

#[test]
fn subscribing_changes_nothing_in_tcp() {
    for transport in [FREEBSD, r#"{ kind = "tcp" }"#] {
        let sc = scenario(transport, FIXED, 4);
        let (plain, none) = run(&sc, None);
        assert!(none.is_empty());
        let (heard_all, h) = run(&sc, Some(u32::MAX));
        assert!(h.len() > 100, "every kind was heard");
        let (heard_none, h0) = run(&sc, Some(0));
        assert!(h0.is_empty());
        assert_eq!(heard_none.digest(), heard_all.digest(), "{transport}: subscribing moved the run");
        // Against the scenario's own bulk application (an attached one is another component,
        // so the run's bookkeeping differs): the same TCP, packet for packet.
        for (table, cols) in [
            ("packets", &["sent_ns", "recv_ns", "size_bytes"][..]),
            ("probe_tcp_events", &["t_ns", "cwnd_bytes", "ssthresh_bytes", "rto_ns", "backoff", "seq"][..]),
            ("probe_rto", &["t_ns", "rto_ns"][..]),
        ] {
            for c in cols {
                assert_eq!(plain.table(table).f64s(c), heard_all.table(table).f64s(c), "{transport}: {table}.{c}");
            }
        }
    }
}

#[test]
fn no_packet_crosses_a_downed_link_and_traffic_resumes() {
    let (r, _) = run(&scenario(FREEBSD, FIXED, 1), None);
    let p = r.table("packets");
    let (sent, recv) = (p.f64s("sent_ns"), p.f64s("recv_ns"));
    let received: Vec<f64> = recv.iter().copied().filter(|&t| t >= 0.0).collect();
    let (a, b) = (DOWN.0 as f64, DOWN.1 as f64);
    assert!(!received.iter().any(|&t| t > a && t < b), "a packet arrived at C during the outage");
    assert!(received.iter().filter(|&&t| t < a).count() > 1000);
    assert!(received.iter().filter(|&&t| t > b).count() > 1000, "traffic resumes after the outage");
    // Whatever was on R–C, or sent from S into it, during the outage is lost there.
    let lost_in = (0..p.rows()).filter(|&i| recv[i] < 0.0 && sent[i] > a && sent[i] < b - 10e6).count();
    assert!(lost_in > 0);
    let links = r.table("links");
    let names = links.strs("link");
    let down = links.f64s("drop_down_pkts");
    let drops = r.table("probe_drops");
    let (dl, dc, dt) = (drops.strs("link"), drops.strs("cause"), drops.f64s("t_ns"));
    for (i, name) in names.iter().enumerate() {
        let n = (0..drops.rows()).filter(|&j| dl[j] == *name && dc[j] == "down").count();
        assert_eq!(n as f64, down[i], "{name}: the counter and the probe agree");
        assert_eq!(down[i] > 0.0, name.as_str() == "R->C" || name.as_str() == "C->R", "{name}");
    }
    // A drop is recorded as its serialisation starts: during the outage, or just before it
    // for a packet still on the wire when the link went down (15 ms plus 3 ms serialising).
    for j in (0..drops.rows()).filter(|&j| dc[j] == "down") {
        assert!(dt[j] > a - 20e6 && dt[j] < b, "down drop at {}", dt[j]);
    }
    let o = r.table("outages");
    assert_eq!(o.strs("link"), vec!["R->C", "C->R"]);
    assert_eq!(o.f64s("start_ns"), vec![a, a]);
    assert_eq!(o.f64s("end_ns"), vec![b, b]);
}

const RANDOM: &str = r#"
        [[outages]]
        links = ["R->C"]
        count = 3
        duration = "1s"
        min_gap = "500ms"
        max_gap = "3s"
        after = "1s"
"#;

#[test]
fn random_outages_are_deterministic_per_seed_and_within_bounds() {
    let windows = |seed| {
        let (r, _) = run(&scenario(FREEBSD, RANDOM, seed), None);
        let o = r.table("outages");
        o.f64s("start_ns").into_iter().zip(o.f64s("end_ns")).collect::<Vec<_>>()
    };
    let w1 = windows(1);
    assert_eq!(w1, windows(1));
    assert_ne!(w1, windows(2));
    let mut prev = 1e9;
    for (s, e) in &w1 {
        assert_eq!(e - s, 1e9);
        assert!(s - prev >= 0.5e9 && s - prev <= 3e9, "gap {}", s - prev);
        prev = *e;
    }
    assert_eq!(w1.len(), 3);
}

#[test]
fn bad_outages_are_scenario_errors_with_their_key_path() {
    let err = |o: &str| match scenario(FREEBSD, o, 1).build(&BuildOptions::default()) {
        Ok(_) => panic!("accepted: {o}"),
        Err(e) => e.to_string(),
    };
    let e = err(&FIXED.replace("R->C", "R->X"));
    assert!(e.starts_with("outages[0].links[0]: unknown link direction \"R->X\""), "{e}");
    let e = err(&FIXED.replace("\"3s\"", "\"0s\""));
    assert!(e.starts_with("outages[0].duration: must be positive"), "{e}");
    let e = err(&RANDOM.replace("\"3s\"", "\"100ms\""));
    assert!(e.starts_with("outages[0].max_gap:"), "{e}");
    let e = err(&RANDOM.replace("count = 3", "count = 0"));
    assert!(e.starts_with("outages[0].count:"), "{e}");
    let e = err(&format!("{FIXED}count = 2"));
    assert!(e.starts_with("outages[0].count:"), "{e}");
    let e = err(&FIXED.replace("\"C->R\"", "\"R->C\""));
    assert!(e.starts_with("outages[0].links[1]:") && e.contains("twice"), "{e}");
    // Parse errors keep the path too.
    let text = format!("{}\n[[outages]]\nlinks = [\"R->C\"]\nat = \"soon\"\nduration = \"1s\"\n", "");
    let mut sc = scenario(FREEBSD, "", 1).to_toml();
    sc.push_str(&text);
    let e = Scenario::from_toml(&sc).unwrap_err().to_string();
    assert!(e.starts_with("outages[0].at:"), "{e}");
}
