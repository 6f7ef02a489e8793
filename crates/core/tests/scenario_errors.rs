//! Scenario mistakes are build-time errors naming the key path.

use qoelab_core::{BuildOptions, Scenario};

fn err(toml: &str) -> String {
    match Scenario::from_toml(toml).and_then(|s| s.build(&BuildOptions::default()).map(|_| ())) {
        Ok(()) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

const BASE: &str = r#"
[sim]
duration = "1s"
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "1ms"
queue = { kind = "fifo", limit = "50p" }
[[flows]]
name = "f"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
"#;

#[test]
fn base_is_valid() {
    Scenario::from_toml(BASE).unwrap().build(&BuildOptions::default()).unwrap();
}

#[test]
fn unknown_key() {
    let e = err(&BASE.replace("delay = \"1ms\"", "delay = \"1ms\"\ncolour = 3"));
    assert!(e.starts_with("links[0]") && e.contains("unknown field `colour`"), "{e}");
}

#[test]
fn missing_or_wrong_units() {
    let e = err(&BASE.replace("limit = \"50p\"", "limit = \"50\""));
    assert!(e.starts_with("links[0].queue") && e.contains("expected a limit"), "{e}");
    let e = err(&BASE.replace("rate = \"10Mbps\"", "rate = \"10\""));
    assert!(e.starts_with("links[0].rate") && e.contains("expected a rate"), "{e}");
    let e = err(&BASE.replace("rate = \"10Mbps\"", "rate = \"-10Mbps\""));
    assert!(e.starts_with("links[0].rate") && e.contains("positive"), "{e}");
}

#[test]
fn malformed_toml_names_line() {
    let e = err("[sim\nduration = 1");
    assert!(e.starts_with("line 1"), "{e}");
}

#[test]
fn unknown_node_and_disconnected() {
    let e = err(&BASE.replace("dst = \"B\"", "dst = \"Z\""));
    assert!(e.starts_with("flows[0].dst") && e.contains("unknown node \"Z\""), "{e}");
    let e = err(
        &BASE.replace("[[flows]]", "[[links]]\na = \"C\"\nb = \"D\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n[[flows]]")
    );
    assert!(e.starts_with("links") && e.contains("disconnected"), "{e}");
}

#[test]
fn app_transport_mismatch() {
    let e = err(&BASE.replace("{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }", "{ kind = \"bulk\" }"));
    assert!(e.starts_with("flows[0].app.kind") && e.contains("stream transport"), "{e}");
}

#[test]
fn unreadable_trace() {
    let e = err(&BASE.replace(
        "{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }",
        "{ kind = \"video\", trace = \"/nonexistent/x.csv\" }",
    ));
    assert!(e.starts_with("flows[0].app.trace") && e.contains("cannot read trace"), "{e}");
}

#[test]
fn dash_ladder_errors_name_the_key_of_the_file_at_fault() {
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/traces");
    let dash = |mpd: &str, segments: &str| {
        BASE.replace("transport = { kind = \"udp\" }", "transport = { kind = \"tcp\" }").replace(
            "{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }",
            &format!("{{ kind = \"dash\", mpd = \"{mpd}\", segments = \"{segments}\" }}\npeer_app = {{ kind = \"http_server\" }}"),
        )
    };
    let good_mpd = format!("{traces}/dash_hevc_6s.mpd");
    let good_seg = format!("{traces}/dash_hevc.segments.csv");
    Scenario::from_toml(&dash(&good_mpd, &good_seg)).unwrap().build(&BuildOptions::default()).unwrap();
    // The segments table is a file, but not the segments table (an MPD): named at `segments`.
    let e = err(&dash(&good_mpd, &good_mpd));
    assert!(e.starts_with("flows[0].app.segments") && e.contains("dash_hevc_6s.mpd"), "{e}");
    let e = err(&dash(&good_mpd, "/nonexistent/s.csv"));
    assert!(e.starts_with("flows[0].app.segments") && e.contains("cannot read"), "{e}");
    // A segments table given as the MPD: named at `mpd`.
    let e = err(&dash(&good_seg, &good_seg));
    assert!(e.starts_with("flows[0].app.mpd"), "{e}");
}

#[test]
fn bad_probability() {
    let e =
        err(&BASE
            .replace("queue = { kind = \"fifo\", limit = \"50p\" }", "loss_ab = { kind = \"bernoulli\", p = 1.5 }"));
    assert!(e.starts_with("links[0].loss_ab.p"), "{e}");
}

#[test]
fn tcp_config_checked_against_mtu() {
    let tcp = BASE
        .replace("{ kind = \"udp\" }", "{ kind = \"tcp\", mss = \"9000B\" }")
        .replace("{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }", "{ kind = \"bulk\" }");
    let e = err(&tcp);
    assert!(e.starts_with("flows[0].transport.mss: ") && e.contains("does not fit MTU 1500"), "{e}");
}

#[test]
fn counts_are_bounded_before_expansion() {
    // A mistyped count used to expand 10^8 flows and exhaust memory; now it is refused at once,
    // naming the entry that crosses the limit.
    let many = BASE.replace("name = \"f\"", "name = \"f{i}\"\ncount = 100000000");
    let e = err(&many);
    assert!(e.starts_with("flows[0].count") && e.contains("at most 1000000"), "{e}");
    // The limit is on the total: two entries that together cross it.
    let two = format!(
        "{}{}",
        BASE.replace("name = \"f\"", "name = \"f{i}\"\ncount = 600000"),
        "[[flows]]\nname = \"g{i}\"\ncount = 600000\nsrc = \"A\"\ndst = \"B\"\n\
         transport = { kind = \"udp\" }\napp = { kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }\n"
    );
    let e = err(&two);
    assert!(e.starts_with("flows[1].count"), "{e}");
    let e = err(&BASE.replace("a = \"A\"", "a = \"A{i}\"\ncount = 2000000"));
    assert!(e.starts_with("links[0].count") && e.contains("links"), "{e}");
}

#[test]
fn expansion_arithmetic_does_not_wrap() {
    // index_base + count - 1 beyond u32 would wrap and repeat names.
    let e = err(&BASE.replace("name = \"f\"", "name = \"f{i}\"\ncount = 2\nindex_base = 4294967295"));
    assert!(e.starts_with("flows[0].index_base") && e.contains("4294967296"), "{e}");
    // start + start_step * (count - 1) beyond the time range would wrap to an early start.
    let e = err(&BASE.replace("name = \"f\"", "name = \"f{i}\"\ncount = 3\nstart_step = \"100years\""));
    assert!(e.contains("expected a time"), "{e}");
    let e = err(&BASE.replace("name = \"f\"", "name = \"f{i}\"\ncount = 20\nstart_step = \"100000h\""));
    assert!(e.starts_with("flows[0].start_step") && e.contains("146 years"), "{e}");
    // A rate that rounds to zero bit/s would divide by zero when serialising.
    let e = err(&BASE.replace("rate = \"10Mbps\"", "rate = \"0.4bps\""));
    assert!(e.starts_with("links[0].rate") && e.contains("at least 1bps"), "{e}");
    let e = err(&BASE.replace("duration = \"1s\"", "duration = \"1e11s\""));
    assert!(e.starts_with("sim.duration") && e.contains("146 years"), "{e}");
}

#[test]
fn throughput_series_are_bounded() {
    // A 1-ns bin used to grow one dense counter vector per flow until memory ran out; the bins
    // are now widened (by powers of two) to fit a fixed budget, and the summary says so.
    let sc = Scenario::from_toml(&format!("{BASE}[output]\nthroughput_bin = \"1ns\"\n")).unwrap();
    let mut sim = sc.build(&BuildOptions::default()).unwrap();
    sim.run();
    let r = sim.results();
    let bin = r.summary("throughput_bin_s");
    assert_eq!(bin, 1024e-9, "1 s over 2^20 bins: 954 ns, the next power of two is 1024 ns");
    assert!(r.table("throughput").f64s("t_s").len() as u64 <= qoelab_core::scenario::build::THROUGHPUT_BIN_BUDGET);
    let e = err(&format!("{BASE}[output]\nthroughput_bin = \"0ms\"\n"));
    assert!(e.starts_with("output.throughput_bin") && e.contains("positive"), "{e}");
    // Within the budget the bin is what was asked, and the summary has no such key.
    let ok = format!("{BASE}[output]\nthroughput_bin = \"10us\"\n");
    let mut sim = Scenario::from_toml(&ok).unwrap().build(&BuildOptions::default()).unwrap();
    sim.run();
    assert!(!sim.results().table("summary").strs("key").iter().any(|k| k == "throughput_bin_s"));
}

#[test]
fn packet_sources_are_checked() {
    let app = |a: &str| BASE.replace(r#"{ kind = "cbr", rate = "1Mbps", payload = "1000B" }"#, a);
    // Datagrams less than 1 ns apart used to stop simulated time (an endless loop at t = 0).
    let e = err(&app(r#"{ kind = "cbr", rate = "1e15bps", payload = "1000B" }"#));
    assert!(e.starts_with("flows[0].app.rate") && e.contains("less than 1 ns apart"), "{e}");
    let e = err(&app(r#"{ kind = "poisson", rate = "1e15bps", payload = "100B" }"#));
    assert!(e.starts_with("flows[0].app.rate"), "{e}");
    // A payload beyond the MTU used to travel as one oversized packet; beyond 2^32 it wrapped.
    let e = err(&app(r#"{ kind = "cbr", rate = "1Mbps", payload = "1473B" }"#));
    assert!(e.starts_with("flows[0].app.payload") && e.contains("1472 B"), "{e}");
    let e = err(&app(r#"{ kind = "cbr", rate = "1Mbps", payload = "5000000000B" }"#));
    assert!(e.starts_with("flows[0].app.payload") && e.contains("one datagram"), "{e}");
    Scenario::from_toml(&app(r#"{ kind = "cbr", rate = "1Mbps", payload = "1472B" }"#))
        .unwrap()
        .build(&BuildOptions::default())
        .unwrap();
    // On/off: a NaN Pareto shape and a zero ON period.
    let e = err(&app(
        r#"{ kind = "on_off", rate = "1Mbps", payload = "1000B", on = "1s", off = "1s", dist = "pareto", alpha = nan }"#,
    ));
    assert!(e.starts_with("flows[0].app.alpha"), "{e}");
    let e = err(&app(r#"{ kind = "on_off", rate = "1Mbps", payload = "1000B", on = "0s", off = "1s" }"#));
    assert!(e.starts_with("flows[0].app.on"), "{e}");
}

/// An unknown `kind` names its key path and lists every registered name, in registry order
/// (the lists come from the registries in `queue`, `app`, `link::loss` and `tcp::cc`).
#[test]
fn unknown_kinds_list_the_registered_names() {
    let cases = [
        (
            ("kind = \"fifo\", limit = \"50p\"", "kind = \"blue\""),
            "links[0].queue.kind: unknown variant `blue`, expected one of `fifo`, `drr`, `sqf`, `pfq`, `fq_codel`, `codel`, `red`, `pie`, `prio`, `police`, `tbf`, `htb`, `wdrr`, `tfd`, `toy`",
        ),
        (
            ("kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\"", "kind = \"ftp\""),
            "flows[0].app.kind: unknown variant `ftp`, expected one of `cbr`, `poisson`, `on_off`, `video`, `bulk`, `web`, `http_client`, `http_server`, `dash`, `transcoder`",
        ),
        (
            ("delay = \"1ms\"", "delay = \"1ms\"\nloss_ab = { kind = \"uniform\" }"),
            "links[0].loss_ab.kind: unknown variant `uniform`, expected one of `none`, `bernoulli`, `gilbert_elliott`",
        ),
        (
            ("transport = { kind = \"udp\" }", "transport = { kind = \"tcp\", cc = \"vegas\" }"),
            "flows[0].transport.cc: unknown congestion control \"vegas\", expected \"newreno\", \"cubic\" or \"bbr\"",
        ),
        (
            ("transport = { kind = \"udp\" }", "transport = { kind = \"tcp\", cc = { kind = \"vegas\" } }"),
            "flows[0].transport.cc.kind: unknown variant `vegas`, expected one of `newreno`, `cubic`, `bbr`",
        ),
        (
            ("transport = { kind = \"udp\" }", "transport = { kind = \"tcp\", cc = 3 }"),
            "flows[0].transport.cc: invalid type: integer `3`, expected \"newreno\", \"cubic\", \"bbr\", or a table with `kind`",
        ),
    ];
    for ((from, to), want) in cases {
        assert_eq!(err(&BASE.replace(from, to)), want);
    }
}

/// Parameters of a loss model are checked with the model's own field names, and `none` takes
/// no parameters (a stray `p` is a mistake, not a silent no-op).
#[test]
fn loss_model_fields() {
    let with_loss = |loss: &str| BASE.replace("delay = \"1ms\"", &format!("delay = \"1ms\"\nloss_ab = {loss}"));
    assert_eq!(err(&with_loss("{ kind = \"bernoulli\" }")), "links[0].loss_ab: missing field `p`");
    assert_eq!(
        err(&with_loss("{ kind = \"bernoulli\", p = 2.0 }")),
        "links[0].loss_ab.p: probability must be in [0, 1], got 2"
    );
    assert_eq!(
        err(&with_loss("{ kind = \"gilbert_elliott\", p = 0.1, r = 0.2, q = 1 }")),
        "links[0].loss_ab.q: unknown field `q`, expected one of `p`, `r`, `loss_good`, `loss_bad`, `step`"
    );
    assert_eq!(
        err(&with_loss("{ kind = \"none\", p = 0.1 }")),
        "links[0].loss_ab.p: unknown field `p`, there are no fields"
    );
    for ok in ["{ kind = \"none\" }", "{ kind = \"gilbert_elliott\", p = 0.1, r = 0.2 }"] {
        Scenario::from_toml(&with_loss(ok)).unwrap().build(&BuildOptions::default()).unwrap();
    }
}
