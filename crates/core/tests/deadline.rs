//! Video over TCP (`docs/models/video.md`, "Video over TCP") and the `messages` table: each
//! frame of the trace is written into the stream as one message, and the table records when
//! its last byte reached the receiving application in order.
//!
//! Checked: on a clean path (over tcp and mptcp) every frame arrives once, in order, with the
//! trace's bytes, no sooner than the path's one-way delay plus its serialisation at the
//! bottleneck; across a 3-s outage (tcp) nothing is lost, order holds, frames written during
//! the outage arrive after it, and the first arrival after it is not before the first
//! retransmission timeout that fires once the link is back; looped traces number frames by
//! repetition; keys that act on datagrams are scenario errors at their key path over tcp and
//! mptcp; a datagram video writes no `messages`.

use qoelab_core::app::video::{frame_tag, FRAMES_PER_CYCLE};
use qoelab_core::trace::Column;
use qoelab_core::{BuildOptions, RunResults, Scenario};
use std::path::PathBuf;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// Frame interval of the test trace.
const FRAME_NS: u64 = 40 * MS;
const FRAMES: u64 = 50;
/// Bottleneck R–C and the path's one-way propagation delay (S–R 5 ms + R–C 15 ms).
const BOTTLENECK_BPS: u64 = 4_000_000;
const ONE_WAY_NS: u64 = 20 * MS;

/// Bytes of frame `f` of the test trace: an I frame (two NAL units) every 10 frames.
fn frame_nals(f: u64) -> Vec<u64> {
    if f % 10 == 0 {
        vec![6000 + 13 * f, 5000]
    } else {
        vec![1500 + 37 * (f % 7)]
    }
}

/// Writes the test trace into a directory of its own; returns the directory.
fn trace_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qoelab-deadline-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("nal,frame,type,size_bytes,ts_ms\n");
    let mut nal = 0;
    for f in 0..FRAMES {
        for b in frame_nals(f) {
            let kind = if f % 10 == 0 { "I" } else { "P" };
            csv += &format!("{nal},{f},{kind},{b},{}\n", f * FRAME_NS / MS);
            nal += 1;
        }
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
    dir
}

fn scenario(transport: &str, app_extra: &str, outages: &str, duration: &str) -> Scenario {
    let text = format!(
        r#"
        [sim]
        duration = "{duration}"
        seed = 7
        [[links]]
        a = "S"
        b = "R"
        rate = "100Mbps"
        delay = "5ms"
        [[links]]
        a = "R"
        b = "C"
        rate = "4Mbps"
        delay = "15ms"
        queue = {{ kind = "fifo", limit = "100p" }}
        [[flows]]
        name = "v"
        src = "S"
        dst = "C"
        transport = {transport}
        app = {{ kind = "video", trace = "t.csv"{app_extra} }}
        packet_log = true
        {outages}
        [output]
        probes = ["rto"]
        "#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("test scenario: {e}"))
}

fn run(sc: &Scenario, dir: &std::path::Path) -> RunResults {
    let mut sim = sc.build(&BuildOptions { base_dir: Some(dir), pcap_dir: None }).expect("test scenario builds");
    sim.run();
    sim.results()
}

/// The `messages` rows: (tag, bytes, written_ns, delivered_ns), in delivery order.
fn messages(r: &RunResults) -> Vec<(u64, u64, i64, i64)> {
    let t = r.table("messages");
    assert!(t.strs("flow").iter().all(|f| f == "v"));
    assert!(t.f64s("end").iter().all(|&e| e == 1.0), "frames are delivered at the destination");
    let col = |c: &str| -> Vec<u64> {
        match t.get(c) {
            Some(Column::U64(v)) => v.clone(),
            Some(Column::I64(v)) => v.iter().map(|&x| u64::try_from(x).expect("a time is not negative")).collect(),
            _ => panic!("messages: no integer column {c}"),
        }
    };
    let (tag, bytes, w, d) = (col("tag"), col("bytes"), col("written_ns"), col("delivered_ns"));
    (0..tag.len()).map(|i| (tag[i], bytes[i], w[i] as i64, d[i] as i64)).collect()
}

/// Least time from writing `bytes` to their delivery: the one-way delay plus their
/// serialisation at the bottleneck, each segment of at most 1460 B with at least 40 B of
/// IPv4 and TCP header.
fn floor_ns(bytes: u64) -> u64 {
    let wire = bytes + bytes.div_ceil(1460) * 40;
    ONE_WAY_NS + wire * 8 * S / BOTTLENECK_BPS
}

#[test]
fn on_a_clean_path_every_frame_arrives_once_in_order_with_its_bytes_no_sooner_than_the_path_allows() {
    let dir = trace_dir("clean");
    for transport in [r#"{ kind = "tcp" }"#, r#"{ kind = "mptcp" }"#] {
        clean_path(transport, &dir);
    }
}

fn clean_path(transport: &str, dir: &std::path::Path) {
    let r = run(&scenario(transport, "", "", "4s"), dir);
    let m = messages(&r);
    assert_eq!(m.len() as u64, FRAMES, "one message per frame");
    for (k, &(tag, bytes, w, d)) in m.iter().enumerate() {
        assert_eq!(tag, k as u64, "frame {k}: delivered in decode order");
        assert_eq!(bytes, frame_nals(k as u64).iter().sum::<u64>(), "frame {k}: the trace's bytes");
        assert_eq!(w as u64, k as u64 * FRAME_NS, "frame {k}: written at its timestamp");
        let delay = (d - w) as u64;
        assert!(delay >= floor_ns(bytes), "frame {k}: {delay} ns < floor {} ns", floor_ns(bytes));
    }
    // The path is lightly loaded (about 0.7 Mbit/s on 4 Mbit/s): once the window has opened,
    // a frame takes little more than its floor (the first hop's serialisation of a segment and
    // queueing behind the previous frame's tail).
    for &(tag, bytes, w, d) in &m[10..] {
        let extra = (d - w) as u64 - floor_ns(bytes);
        assert!(extra < 5 * MS, "{transport}: frame {tag}: {extra} ns above its floor on an idle path");
    }
    // The stream carried exactly the frames' bytes.
    let total: u64 = (0..FRAMES).map(|f| frame_nals(f).iter().sum::<u64>()).sum();
    assert_eq!(r.flow_value("v", "delivered_bytes") as u64, total);
}

/// The outage: R–C (both directions) down from 2 s to 5 s.
const OUTAGE: &str = r#"
        [[outages]]
        links = ["R->C", "C->R"]
        at = "2s"
        duration = "3s"
"#;
const DOWN: (u64, u64) = (2 * S, 5 * S);

#[test]
fn across_an_outage_nothing_is_lost_order_holds_and_arrivals_wait_for_the_rto_that_can_succeed() {
    let dir = trace_dir("outage");
    let r = run(&scenario(r#"{ kind = "tcp" }"#, ", loop = true", OUTAGE, "16s"), &dir);
    let m = messages(&r);
    // The k-th delivered message is the k-th frame of the looped trace, written at k·40 ms:
    // nothing lost, duplicated or reordered.
    for (k, &(tag, bytes, w, _)) in m.iter().enumerate() {
        let (cycle, f) = (k as u64 / FRAMES, k as u64 % FRAMES);
        assert_eq!(tag, frame_tag(f as i64, cycle), "message {k}");
        assert_eq!((tag % FRAMES_PER_CYCLE, tag / FRAMES_PER_CYCLE), (f, cycle), "tag decodes to frame and loop");
        assert_eq!(bytes, frame_nals(f).iter().sum::<u64>(), "message {k}");
        assert_eq!(w as u64, (cycle * FRAMES + f) * FRAME_NS, "message {k}: written at its timestamp");
    }
    assert!(m.windows(2).all(|p| p[0].3 <= p[1].3), "delivery times never decrease");
    // TCP catches up after the outage: every frame written until 4 s before the end arrived.
    let written_by = 12 * S;
    assert!(
        m.len() as u64 > written_by / FRAME_NS,
        "{} frames delivered, {} written by 12 s",
        m.len(),
        written_by / FRAME_NS
    );
    // Frames written during the outage arrive after it.
    let during: Vec<_> = m.iter().filter(|x| (DOWN.0..DOWN.1).contains(&(x.2 as u64))).collect();
    assert!(during.len() as u64 >= 3 * S / FRAME_NS - 1);
    assert!(during.iter().all(|x| x.3 as u64 >= DOWN.1), "a frame written during the outage arrived during it");
    // No delivery while the link is down, and the first after it waits for the first
    // retransmission timeout that fires with the link back (earlier ones are lost on it).
    assert!(m.iter().all(|x| !(DOWN.0 + ONE_WAY_NS..DOWN.1).contains(&(x.3 as u64))));
    let rto = r.table("probe_rto");
    let fired: Vec<u64> = rto.f64s("t_ns").iter().map(|&t| t as u64).collect();
    let in_outage = fired.iter().filter(|&&t| (DOWN.0..DOWN.1).contains(&t)).count();
    assert!(in_outage >= 2, "timeouts during a 3-s outage back off: {fired:?}");
    let first_ok = *fired.iter().find(|&&t| t >= DOWN.1).expect("a timeout after the outage retransmits");
    let first_after = m.iter().map(|x| x.3 as u64).find(|&d| d >= DOWN.1).expect("deliveries resume");
    assert!(first_after >= first_ok, "delivered at {first_after} ns, before the retransmission at {first_ok} ns");
    // …and comes from it, not from a later timeout: it is sooner after this timeout than this
    // timeout was after the previous one (the backoff's last interval; here 6.44 s − 4.20 s),
    // slow start from one segment taking a few round trips to complete a frame (0.19 s here).
    let prev = *fired.iter().rev().find(|&&t| t < first_ok).expect("timeouts during the outage");
    assert!(
        first_after - first_ok < first_ok - prev,
        "first delivery {first_after} ns: after the next backed-off timeout of the one at {first_ok} ns?"
    );
}

#[test]
fn over_tcp_keys_that_act_on_datagrams_are_errors_at_their_key_path() {
    let dir = trace_dir("keys");
    for (extra, key) in [
        (r#", max_payload = "1000B""#, "max_payload"),
        (r#", pacing = "frame""#, "pacing"),
        (r#", pacing = "ts""#, "pacing"),
        (r#", pacing = "greedy""#, "pacing"),
        (r#", ts_shaping = "100ms""#, "ts_shaping"),
        (r#", source_jitter = "5ms""#, "source_jitter"),
        (r#", peak_rate = "2Mbps""#, "peak_rate"),
        (r#", split = { connections = 2, index = 0 }"#, "split"),
    ] {
        for transport in [r#"{ kind = "tcp" }"#, r#"{ kind = "mptcp" }"#] {
            let sc = scenario(transport, extra, "", "2s");
            let e = sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).err().map(|e| e.to_string());
            let e = e.unwrap_or_else(|| panic!("{transport} with {extra} built"));
            assert!(
                e.starts_with(&format!("flows[0].app.{key}: cannot be used over a stream transport")),
                "{transport} {extra}: {e}"
            );
        }
    }
    // The same keys on UDP build (they are the datagram path's).
    let sc = scenario(r#"{ kind = "udp" }"#, r#", max_payload = "1000B", pacing = "frame""#, "", "2s");
    assert!(sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).is_ok());
}

#[test]
fn a_datagram_video_writes_no_messages_table() {
    let dir = trace_dir("udp");
    let r = run(&scenario(r#"{ kind = "udp" }"#, "", "", "3s"), &dir);
    assert!(r.tables.iter().all(|t| t.name != "messages"));
    // Its packets still carry their frame numbers.
    assert!(r.table("packets").f64s("frame").iter().all(|&f| f >= 0.0 && f < FRAMES as f64));
}
