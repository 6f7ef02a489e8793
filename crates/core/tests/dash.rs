//! The DASH player on a constant-rate link with no competing traffic (issue 20, must-show):
//! the buffer follows the closed form (it fills at goodput ÷ segment bitrate seconds per second
//! while downloading and drains at 1 s/s while playing) within one segment, and on a link
//! slower than the only rung every stall begins exactly when the buffer runs out.

use qoelab_core::{run_toml, BuildOptions, RunResults};
use std::path::PathBuf;

/// A one-rung ladder of `n` constant 2-s segments of `size` bytes, written to a temp dir.
fn ladder(tag: &str, n: u32, size: u64, bandwidth: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qoelab-dash-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut csv = String::from("representation,segment_s,segment,duration_s,size_bytes\n");
    for k in 0..n {
        csv += &format!("r,2,{k},2,{size}\n");
    }
    std::fs::write(dir.join("s.csv"), csv).unwrap();
    std::fs::write(
        dir.join("m.mpd"),
        format!(
            r#"<MPD type="static" mediaPresentationDuration="PT{}S"><Period><AdaptationSet><SegmentTemplate timescale="1" duration="2"/><Representation id="r" bandwidth="{bandwidth}"/></AdaptationSet></Period></MPD>"#,
            2 * n
        ),
    )
    .unwrap();
    dir
}

fn run(dir: &PathBuf, rate: &str, extra: &str) -> RunResults {
    let d = dir.display();
    run_toml(
        &format!(
            r#"
            [sim]
            duration = "200s"
            seed = 1
            [[links]]
            a = "C"
            b = "S"
            rate = "{rate}"
            delay = "10ms"
            queue = {{ kind = "fifo", limit = "10000p" }}
            [[flows]]
            name = "dash"
            src = "C"
            dst = "S"
            transport = {{ kind = "tcp", cc = "cubic" }}
            app = {{ kind = "dash", mpd = "{d}/m.mpd", segments = "{d}/s.csv", max_buffer = "1000s" {extra} }}
            peer_app = {{ kind = "http_server" }}
            [output]
            probes = ["app"]
            "#
        ),
        &BuildOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn rows(r: &RunResults, name: &str) -> Vec<(f64, f64)> {
    let app = r.table("probe_app");
    let (t, n, v) = (app.f64s("t_ns"), app.strs("name"), app.f64s("value"));
    (0..n.len()).filter(|&i| n[i] == name).map(|i| (t[i] as f64 * 1e-9, v[i])).collect()
}

/// Payload goodput of a saturated TCP flow on `rate_bps`: 1448 payload bytes per 1500-byte
/// packet (IP + TCP + timestamps: 52 bytes).
fn goodput(rate_bps: f64) -> f64 {
    rate_bps * 1448.0 / 1500.0
}

#[test]
fn buffer_follows_the_closed_form() {
    // 2 Mbit/s segments (500 kB per 2 s) on a 10 Mbit/s link: fill at 2 s per
    // (0.414 s transfer + 0.02 s request round trip) ≈ 4.6 s/s.
    let dir = ladder("fill", 60, 500_000, 2_000_000);
    let r = run(&dir, "10Mbps", "");
    let buf = rows(&r, "dash_buffer_s");
    assert_eq!(buf.len(), 60, "every segment arrives");
    // Downloads start after the handshake (one 20-ms round trip); each segment then takes its
    // transfer time at the goodput plus the request's round trip (no pipelining), and adds 2 s.
    let t0 = 0.02;
    let play = rows(&r, "dash_startup_s")[0].1;
    let fill = 2.0 / (500_000.0 * 8.0 / goodput(10e6) + 0.02);
    let mut worst = 0.0f64;
    for &(t, b) in &buf {
        // Closed form: media downloaded by t less media played by t.
        let closed = fill * (t - t0) - (t - play).max(0.0);
        worst = worst.max((b - closed).abs());
        assert!((b - closed).abs() <= 2.0, "at {t:.3} s buffer {b:.3} s, closed form {closed:.3} s");
    }
    eprintln!("worst buffer error {worst:.3} s (one segment = 2 s)");
    assert_eq!(r.flow_value("dash", "dash_stalls"), 0.0);
    assert_eq!(r.flow_value("dash", "dash_switches"), 0.0);
    assert_eq!(r.flow_value("dash", "dash_mean_bitrate_bps"), 2e6);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stalls_when_the_closed_form_says() {
    // 4 Mbit/s segments (1 MB per 2 s) on a 3 Mbit/s link: each segment takes about
    // 8e6 / 2.896e6 = 2.76 s to arrive and plays for 2 s, so after start-up the buffer runs
    // out 2 s after every arrival and the next segment ends each stall.
    let n = 10;
    let dir = ladder("stall", n, 1_000_000, 4_000_000);
    let r = run(&dir, "3Mbps", "");
    let arrivals: Vec<f64> = rows(&r, "dash_buffer_s").iter().map(|x| x.0).collect();
    let stalls = rows(&r, "dash_stall_s");
    assert_eq!(arrivals.len(), n as usize);
    assert_eq!(stalls.len(), n as usize - 1, "one stall per gap between segments");
    assert_eq!(r.flow_value("dash", "dash_stalls"), (n - 1) as f64);
    for (k, &(end, dur)) in stalls.iter().enumerate() {
        // The stall k ends at arrival k+1 and began when the 2 s of segment k ran out.
        let began = arrivals[k] + 2.0;
        assert!((end - arrivals[k + 1]).abs() < 1e-9, "stall {k} ends with segment {}", k + 1);
        assert!((end - dur - began).abs() < 1e-6, "stall {k} began at {:.6}, closed form {began:.6}", end - dur);
        // And the gap between arrivals is the segment's transfer time at the goodput
        // (+ the request's trip), within 5 %.
        let gap = arrivals[k + 1] - arrivals[k];
        let want = 8e6 / goodput(3e6) + 0.02;
        assert!((gap - want).abs() < 0.05 * want, "gap {gap:.3} s, closed form {want:.3} s");
    }
    std::fs::remove_dir_all(&dir).ok();
}
