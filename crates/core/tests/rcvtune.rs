//! Receive-buffer autotuning as Linux does it (`rcv_autotune`, docs/models/tcp.md,
//! `transport/tcp/rcvbuf.rs`): the window starts at Linux's ≈64 KB and grows with what the
//! application reads; it never passes the window share of `rcv_buf` (160/256 once a full segment
//! has been measured); a path whose BDP fits in 64 KB does not
//! notice; the `rfc` profile and `rcv_autotune = false` are what they were.
//!
//! The advertised windows are read from a pcap of the ACK direction (`LINKTYPE_RAW`): the window
//! field shifted by the SYN-ACK's window-scale option.

mod support;

use qoelab_core::{run_toml, BuildOptions, RunResults};
use std::path::PathBuf;

/// One bulk flow S → D over one link of `rate` and one-way `delay`, a FIFO of `limit` packets,
/// for `secs`; `extra` appended to the transport table.
fn scenario(rate: &str, delay: &str, limit: u32, secs: f64, extra: &str) -> String {
    format!(
        r#"
        [sim]
        duration = "{secs}s"
        [output]
        pcap = ["D->S"]
        [[links]]
        a = "S"
        b = "D"
        rate = "{rate}"
        delay = "{delay}"
        queue = {{ kind = "fifo", limit = "{limit}p" }}
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp"{extra} }}
        app = {{ kind = "bulk" }}
        "#
    )
}

/// An ACK seen on the wire: capture time (s), window in bytes, and the shift the SYN-ACK set.
#[derive(Debug, Clone, Copy)]
struct Ack {
    t: f64,
    wnd: u64,
    syn: bool,
    wscale: Option<u8>,
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qoelab-rcvtune-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `toml` and returns its results and the ACKs D sent (window in bytes: the field shifted
/// by the scale the SYN-ACK announced, or unshifted on the SYN-ACK itself, RFC 7323 §2.2).
fn run(toml: &str, tag: &str) -> (RunResults, Vec<Ack>) {
    let dir = tmpdir(tag);
    let r = run_toml(toml, &BuildOptions { base_dir: None, pcap_dir: Some(&dir) })
        .unwrap_or_else(|e| panic!("scenario failed: {e}"));
    let b = std::fs::read(dir.join("D_to_S.pcap")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let u32le = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let (mut i, mut shift, mut acks) = (24, 0u8, Vec::new());
    while i + 16 <= b.len() {
        // Nanosecond pcap (magic 0xa1b23c4d).
        let t = u32le(i) as f64 + u32le(i + 4) as f64 * 1e-9;
        let len = u32le(i + 8) as usize;
        let ip = &b[i + 16..i + 16 + len];
        i += 16 + len;
        let tcp = &ip[((ip[0] & 0x0f) as usize) * 4..];
        let syn = tcp[13] & 0x02 != 0;
        let field = u16::from_be_bytes([tcp[14], tcp[15]]) as u64;
        let mut wscale = None;
        let (hl, mut o) = (((tcp[12] >> 4) as usize) * 4, 20);
        while o < hl {
            match tcp[o] {
                0 => break,
                1 => o += 1,
                k => {
                    if k == 3 {
                        wscale = Some(tcp[o + 2]);
                    }
                    o += tcp[o + 1] as usize;
                }
            }
        }
        if let (true, Some(s)) = (syn, wscale) {
            shift = s;
        }
        let wnd = if syn { field } else { field << shift };
        acks.push(Ack { t, wnd, syn, wscale });
    }
    (r, acks)
}

const MB: f64 = 1e6;

/// (a) Linux's first window, then growth round trip by round trip; (c) never above the window
/// share of `rcv_buf`, with the SYN's shift from `rcv_buf` (RFC 7323 §2.2, Linux
/// `tcp_select_initial_window`).
#[test]
fn the_window_starts_at_linuxs_and_grows_each_rtt_up_to_the_maximum() {
    // 100 Mbit/s, 100 ms RTT (BDP 1.25 MB), a buffer that never overflows.
    // The window share of the buffer is 160/256 once the first full segment is measured: 20 MiB
    // of tcp_rmem[2]'s 32 MiB (far above this path's needs), 640 KiB of 1 MiB (below them).
    for (rcv_buf, shift, max_wnd, reached) in
        [("", 10u8, 20u64 << 20, false), (", rcv_buf = \"1MiB\"", 5, 640 << 10, true)]
    {
        // Without the linux profile's host jitter: the round trips are counted in fixed 100-ms
        // bins from the first ACK, which a few µs of send delay can shift across a bin edge.
        let extra = format!(", host_jitter = \"0s\"{rcv_buf}");
        let (r, acks) = run(&scenario("100Mbps", "50ms", 20_000, 4.0, &extra), "grow");
        let synack = acks.iter().find(|a| a.syn).expect("SYN-ACK");
        // tcp_select_initial_window: 45 segments of 1448 B within half of tcp_rmem[1] = 128 KiB.
        assert_eq!(synack.wnd, 65160);
        assert_eq!(synack.wscale, Some(shift), "window scale from rcv_buf {rcv_buf:?}");
        let data: Vec<&Ack> = acks.iter().filter(|a| !a.syn).collect();
        let t0 = data[0].t;
        let rtt = 0.1;
        // Round trip k after the first ACK of data: the largest window offered.
        let per_rtt: Vec<u64> = (0..12)
            .map(|k| {
                let (a, b) = (t0 + k as f64 * rtt, t0 + (k + 1) as f64 * rtt);
                data.iter().filter(|x| x.t >= a && x.t < b).map(|x| x.wnd).max().unwrap_or(0)
            })
            .collect();
        eprintln!("rcv_buf {rcv_buf:?}: largest window per RTT {per_rtt:?}");
        // (a) The first RTT: Linux's window_clamp 65536 − 1460 = 64076 until the first full
        // segment measures the scaling ratio (160/256); the clamp then moves to 160/256 of the
        // 128-KiB buffer, 81920, and rcv_ssthresh grows towards it two segments per segment.
        let unit = 1u64 << shift;
        assert!(per_rtt[0] <= 81920 && per_rtt[0] >= 64076u64.div_ceil(unit) * unit, "first RTT: {}", per_rtt[0]);
        // The first RTT of data brings the initial cwnd of 10 segments (14480 B), no more than
        // DRS's first estimate (min(rcv_ssthresh, rcv_wnd, 10 segments) = 14480 B): no growth.
        assert_eq!(per_rtt[1], per_rtt[0]);
        // From then on slow start doubles what the application reads per RTT, and the window
        // grows every RTT until it reaches the maximum (the sender's slow start lasts to about
        // RTT 8 here; once what it reads per RTT stops growing, so does the buffer).
        for k in 2..8 {
            if per_rtt[k - 1] < max_wnd - max_wnd / 8 {
                assert!(per_rtt[k] > per_rtt[k - 1], "RTT {k}: {} after {}", per_rtt[k], per_rtt[k - 1]);
            }
        }
        // (c) Never above the maximum: the window share of rcv_buf, which a long bulk transfer on
        // this path reaches when it is below the path's needs.
        let top = data.iter().map(|a| a.wnd).max().unwrap();
        assert!(top <= max_wnd, "window {top} above {max_wnd}");
        if reached {
            assert!(top > max_wnd - max_wnd / 8, "window {top} never came near {max_wnd}");
        }
        if max_wnd < 1 << 20 {
            // Window-limited below the BDP: at most max_wnd per 100 ms, 41.9 Mbit/s.
            let g = r.flow_value("tcp", "goodput_bps");
            assert!(g < max_wnd as f64 * 8.0 / rtt * 1.01, "goodput {g} above the window's rate");
        }
    }
}

/// (b) On a long fat path the window is what limits the first round trips, and goodput still
/// reaches the link rate within the bound the DRS rule gives; on a path whose BDP is below
/// 64 KB autotuning changes nothing that matters.
///
/// The bound: the handshake takes 1 RTT (the SYN at 0, data from 100 ms), and the receiver has no
/// RTT estimate before the first data (`tcp_rcv_rtt_measure_ts`), so DRS first acts at the end of
/// the second RTT. From then on, each RTT in which the application read more than in the previous
/// one, `tcp_rcvbuf_grow` sets the clamp to at least rcvwin = 2·copied (plus the slow-start
/// share), and `tcp_grow_window` opens the offered window by 2·advmss per segment received
/// (≥ 2 per segment of 1448 B, so the offer can triple per RTT): the window at least doubles
/// per RTT from 64 KB, so it covers the BDP of 1.25 MB after ⌈log2(1.25 MB / 64 KB)⌉ = 5 RTTs;
/// the sender uses it one RTT later. 1 + 1 + 5 + 1 = 8 RTTs = 0.8 s; with 0.2 s for the bin
/// width and the queue the slow start builds, the first 100-ms bin at ≥ 90 % of 100 Mbit/s is
/// no later than 1.0 s. Slow start alone (cwnd 10 segments doubling per RTT) needs
/// ⌈log2(1.25 MB / 14480 B)⌉ = 7 RTTs after the handshake, so the window costs at most about
/// one more RTT than a fixed 4 MiB window.
#[test]
fn goodput_reaches_the_link_rate_within_the_drs_bound() {
    let bins = |r: &RunResults| -> Vec<(f64, f64)> {
        let t = r.table("throughput");
        t.f64s("t_s").into_iter().zip(t.f64s("bps")).collect()
    };
    let first_at = |b: &[(f64, f64)], bps: f64| b.iter().find(|(_, v)| *v >= bps).map(|(t, _)| *t).unwrap_or(f64::MAX);
    let (tuned, _) = run(&scenario("100Mbps", "50ms", 20_000, 5.0, ""), "lfn");
    let (fixed, _) = run(&scenario("100Mbps", "50ms", 20_000, 5.0, ", rcv_autotune = false"), "lfn-fixed");
    let (bt, bf) = (bins(&tuned), bins(&fixed));
    let (at_t, at_f) = (first_at(&bt, 90e6), first_at(&bf, 90e6));
    eprintln!("first 100-ms bin at ≥ 90 Mbit/s: autotuned {at_t:.1} s, fixed 4 MiB {at_f:.1} s");
    eprintln!("autotuned bins {:?}", bt.iter().take(14).map(|(_, v)| (v / MB).round()).collect::<Vec<_>>());
    eprintln!("fixed bins     {:?}", bf.iter().take(14).map(|(_, v)| (v / MB).round()).collect::<Vec<_>>());
    assert!(at_t <= 1.0, "autotuned: link rate first at {at_t} s, bound 1.0 s");
    assert!(at_t >= at_f, "autotuning cannot ramp faster than a fixed 4 MiB window");
    // The second RTT (the first of data, 0.1–0.2 s) carries at most the 64-KB initial window:
    // 65160 B + its headers per 100 ms is 5.5 Mbit/s on the wire.
    let second = bt.iter().find(|(t, _)| (*t - 0.1).abs() < 1e-9).unwrap().1;
    assert!(second <= 65280.0 * 8.0 / 0.1 * 1.1, "first data RTT carried {second} bit/s");
    // Afterwards both deliver the link rate.
    let tail = |b: &[(f64, f64)]| b.iter().filter(|(t, _)| *t >= 2.0).map(|(_, v)| v).sum::<f64>() / 30.0;
    assert!(tail(&bt) > 0.95 * 100e6 && tail(&bf) > 0.95 * 100e6, "{} {}", tail(&bt), tail(&bf));

    // A BDP of 25 KB (10 Mbit/s, 20 ms RTT) fits the first window: the same goodput.
    let (small_t, _) = run(&scenario("10Mbps", "10ms", 100, 10.0, ""), "small");
    let (small_f, _) = run(&scenario("10Mbps", "10ms", 100, 10.0, ", rcv_autotune = false"), "small-fixed");
    let (gt, gf) = (small_t.flow_value("tcp", "goodput_bps"), small_f.flow_value("tcp", "goodput_bps"));
    eprintln!("BDP 25 KB: goodput autotuned {gt:.0}, fixed {gf:.0}");
    assert!((gt - gf).abs() < 0.005 * gf, "goodput moved: {gt} vs {gf}");
}

/// (d) Same scenario, same results; (e) off, the `rfc` profile is what it was without the key,
/// and the key changes the `linux` profile's runs.
#[test]
fn deterministic_and_off_means_off() {
    let s = |extra: &str| scenario("50Mbps", "20ms", 200, 3.0, extra);
    let (a, _) = run(&s(""), "det-a");
    let (b, _) = run(&s(""), "det-b");
    assert_eq!(a.digest(), b.digest());
    let (rfc, _) = run(&s(", profile = \"rfc\""), "rfc");
    let (rfc_off, _) = run(&s(", profile = \"rfc\", rcv_autotune = false"), "rfc-off");
    assert_eq!(rfc.digest(), rfc_off.digest(), "rfc: autotuning is off by default");
    // On, under rfc: Linux's windows (here slow start never catches up with them, so the
    // results can be the same; the windows on the wire are not). The first ACK of data: the
    // segment moved the clamp to 81920 (scaling ratio 160), rcv_ssthresh rose from the 65536
    // offered to 65536 + 2·1460, rounded up to 1 KiB.
    let (_, acks) = run(&s(", profile = \"rfc\", rcv_autotune = true"), "rfc-on");
    assert_eq!(acks.iter().find(|a| a.syn).unwrap().wnd, 65160);
    assert_eq!(acks.iter().find(|a| !a.syn).unwrap().wnd, 68608);
    for p in ["ns3", "freebsd"] {
        let (x, _) = run(&s(&format!(", profile = \"{p}\"")), p);
        let (y, _) = run(&s(&format!(", profile = \"{p}\", rcv_autotune = false")), p);
        assert_eq!(x.digest(), y.digest(), "{p}: autotuning is off by default");
    }
    let (linux_off, acks) = run(&s(", rcv_autotune = false"), "linux-off");
    assert_ne!(a.digest(), linux_off.digest(), "linux: autotuning is on by default");
    // Off, every ACK offers the whole 4 MiB buffer.
    assert!(acks.iter().filter(|a| !a.syn).all(|a| a.wnd == 4 << 20));
}

/// Bad values: a one-line error naming the key.
#[test]
fn bad_values_name_the_key() {
    let cases = [
        (", rcv_autotune = \"yes\"", "rcv_autotune"),
        (", rcv_buf_init = \"4KB\"", "rcv_buf_init"),
        (", rcv_buf_init = \"2MiB\", rcv_buf = \"1MiB\"", "rcv_buf_init"),
        (", rcv_buf_init = \"256KiB\", rcv_autotune = false", "rcv_buf_init"),
        (", rcv_buf_init = \"lots\"", "rcv_buf_init"),
        (", rcv_buf = \"4KB\"", "rcv_buf"),
    ];
    for (extra, key) in cases {
        let e = run_toml(&scenario("10Mbps", "10ms", 100, 1.0, extra), &BuildOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{extra} accepted"))
            .to_string();
        assert!(e.contains(key) && !e.contains('\n'), "{extra}: {e}");
    }
    // MPTCP autotunes its connection-level buffer; its limits are checked under `tcp.`.
    let e = support::mptcp_error(r#"rcv_autotune = false, rcv_buf_init = "128KiB""#);
    assert!(e.contains("tcp.rcv_buf_init: only with rcv_autotune = true"), "{e}");
}

/// Jumbo segments (the 64-kB GRO aggregates of the SQF model check: MSS 63,948 B on a 64,000-B
/// MTU) under the default autotuning: the initial buffer defaults to four segments (two of
/// window) instead of 128 KiB, which would hold no whole segment of window; the flow runs.
#[test]
fn jumbo_segments_get_a_default_initial_buffer_of_four_segments() {
    let toml = scenario("100Mbps", "5ms", 1000, 2.0, "").replace(
        "queue = { kind = \"fifo\", limit = \"1000p\" }",
        "queue = { kind = \"fifo\", limit = \"1000p\" }\n        mtu = 64000",
    );
    assert!(toml.contains("mtu = 64000"), "{toml}");
    let r = run_toml(&toml.replace("[output]\n        pcap = [\"D->S\"]", ""), &BuildOptions::default())
        .unwrap_or_else(|e| panic!("default autotuning refused jumbo segments: {e}"));
    assert!(r.flow_value("tcp", "goodput_bps") > 50e6, "{}", r.flow_value("tcp", "goodput_bps"));
    // An explicit value below four segments is still refused, naming the key.
    let bad = toml.replace("kind = \"tcp\"", "kind = \"tcp\", rcv_buf_init = \"128KiB\"");
    let err = run_toml(&bad.replace("[output]\n        pcap = [\"D->S\"]", ""), &BuildOptions::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("rcv_buf_init") && err.contains("four segments"), "{err}");
}
