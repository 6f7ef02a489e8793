//! Channels in whole runs: stations sharing a TDD medium, loss decorating a TDD direction, and
//! channel mistakes reported with their key path.

use qoelab_core::{run_toml, BuildOptions, RunResults, Scenario};

fn run(toml: &str) -> RunResults {
    run_toml(toml, &BuildOptions::default()).unwrap_or_else(|e| panic!("scenario failed: {e}"))
}

fn err(toml: &str) -> String {
    match Scenario::from_toml(toml).and_then(|s| s.build(&BuildOptions::default()).map(|_| ())) {
        Ok(()) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

/// Three subscriber stations on one 10 Mbit/s uplink with a 5 ms frame; station `i` owns the
/// slot `ab[i]` of every frame, and the base station's downlink slots fill the rest.
fn uplink(ab: [(f64, f64); 3], ba: [(f64, f64); 3], loss: &str, offered: &str) -> String {
    let mut s = String::from("[sim]\nduration = \"10s\"\nseed = 3\n");
    for i in 0..3 {
        s += &format!(
            "[[links]]\na = \"ss{i}\"\nb = \"bs\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\nqueue = {{ kind = \"fifo\", limit = \"50p\" }}\n\
             channel = {{ kind = \"tdd\", frame = \"5ms\", medium = \"wimax\", slot_ab = {{ start = \"{}ms\", end = \"{}ms\" }}, \
             slot_ba = {{ start = \"{}ms\", end = \"{}ms\" }} }}\n{}\n",
            ab[i].0,
            ab[i].1,
            ba[i].0,
            ba[i].1,
            if i == 0 { loss } else { "" }
        );
    }
    for i in 0..3 {
        s += &format!(
            "[[flows]]\nname = \"up{i}\"\nsrc = \"ss{i}\"\ndst = \"bs\"\ntransport = {{ kind = \"udp\" }}\n\
             app = {{ kind = \"cbr\", rate = \"{offered}\", payload = \"972B\" }}\n"
        );
    }
    s
}

const AB: [(f64, f64); 3] = [(0.0, 1.0), (1.0, 2.5), (2.5, 3.0)];
const BA: [(f64, f64); 3] = [(3.0, 3.5), (3.5, 4.0), (4.0, 5.0)];

/// Saturated stations each get the link rate times their share of the frame (within one
/// frame's worth of bytes over the run), and no more; everything sent is accounted for.
#[test]
fn stations_get_their_slot_share() {
    let r = run(&uplink(AB, BA, "", "5Mbps"));
    let l = r.table("links");
    let (names, tx) = (l.strs("link"), l.f64s("tx_bytes"));
    let frame_bytes = 10e6 * 0.005 / 8.0;
    for (i, (s, e)) in AB.iter().enumerate() {
        let share = (e - s) / 5.0;
        let k = names.iter().position(|n| *n == format!("ss{i}->bs")).expect("station link");
        let want = 10e6 * share * 10.0 / 8.0;
        assert!((tx[k] - want).abs() <= frame_bytes, "ss{i}: {} B sent, want {want} ± {frame_bytes}", tx[k]);
        let f = format!("up{i}");
        assert!(r.flow_value(&f, "drop_queue_pkts") > 0.0, "{f} was not saturated");
        assert_eq!(
            r.flow_value(&f, "sent_pkts"),
            r.flow_value(&f, "recv_pkts")
                + r.flow_value(&f, "drop_queue_pkts")
                + r.flow_value(&f, "drop_channel_pkts")
                + r.flow_value(&f, "in_flight_pkts"),
            "{f}: conservation"
        );
    }
}

/// A station below its share waits for its slot: its packets are delayed by up to a frame
/// but none is lost, and a loss model on the direction drops packets as on any channel.
#[test]
fn light_load_waits_for_the_slot_and_loss_decorates_it() {
    let r = run(&uplink(AB, BA, "loss_ab = { kind = \"bernoulli\", p = 0.1 }", "500kbps"));
    for i in 1..3 {
        let f = format!("up{i}");
        assert_eq!(r.flow_value(&f, "drop_queue_pkts") + r.flow_value(&f, "drop_channel_pkts"), 0.0, "{f}");
        // 1 ms propagation and 0.8 ms of slot time for a 1000 B packet, plus the gaps it waits
        // out: one gap (3.5 ms) where the 1.5 ms slot holds a packet, two (4.5 ms each) where
        // the 0.5 ms slot does not.
        let gaps = [0.0, 3.5, 9.0][i];
        let (min, p99) = (r.flow_value(&f, "delay_min_s") * 1e3, r.flow_value(&f, "delay_p99_s") * 1e3);
        assert!(min >= 1.8 - 1e-9 && p99 <= 1.8 + gaps + 0.01, "{f}: min {min} ms, p99 {p99} ms");
        assert!(p99 > 1.8 + gaps / 2.0, "{f}: p99 {p99} ms: packets do not wait for the slot");
    }
    let lost = r.flow_value("up0", "drop_channel_pkts") / r.flow_value("up0", "sent_pkts");
    assert!((lost - 0.1).abs() < 0.02, "up0 channel loss {lost}");
}

#[test]
fn channel_mistakes_name_their_key_path() {
    let ok = uplink(AB, BA, "", "1Mbps");
    run(&ok);
    let e = err(&ok.replacen("frame = \"5ms\"", "frame = \"0ms\"", 1));
    assert_eq!(e, "links[0].channel.frame: must be positive");
    let e = err(&ok.replacen("end = \"1ms\"", "end = \"6ms\"", 1));
    assert_eq!(e, "links[0].channel.slot_ab.end: 6ms is past the end of the 5ms frame");
    let e = err(&ok.replacen("start = \"2.5ms\", end = \"3ms\"", "start = \"2ms\", end = \"3ms\"", 1));
    assert_eq!(e, "links[2].channel.slot_ab: overlaps links[1].channel.slot_ab on medium \"wimax\"");
    let e = err(&ok.replacen("frame = \"5ms\"", "frame = \"10ms\"", 1));
    assert!(e.starts_with("links[1].channel.frame: medium \"wimax\" has a frame of 10ms"), "{e}");
    let e = err(&ok.replacen("kind = \"tdd\"", "kind = \"csma\"", 1));
    assert_eq!(e, "links[0].channel.kind: unknown variant `csma`, expected one of `point_to_point`, `tdd`, `wimax`");
    let e = err(&ok.replacen("medium = \"wimax\", ", "", 1).replacen("frame = \"5ms\", ", "", 1));
    assert!(e.starts_with("links[0].channel") && e.contains("missing field `frame`"), "{e}");
}
