//! Hardening of the core against bad input (issue 15): every numeric parameter of every
//! registered kind is mutated to edge values and must give a clean error naming its key path,
//! or a run that ends; the engine's guards (stalls, packet-log cap) end runs with an error;
//! large generated topologies build with routing memory linear in links; and a deterministic
//! random-input test stands in for fuzzing the scenario loader and the trace reader.
//!
//! `mutations.rs` does the same for the values of the bundled scenarios; this file reaches
//! every kind of every registry, including those no bundled scenario uses.

use qoelab_core::app::dash::abr::AbrConfig;
use qoelab_core::app::AppConfig;
use qoelab_core::link::channel::ChannelConfig;
use qoelab_core::link::loss::LossConfig;
use qoelab_core::queue::QueueConfig;
use qoelab_core::sim::RunError;
use qoelab_core::transport::tcp::cc::CcConfig;
use qoelab_core::{BuildOptions, Scenario};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use toml::Value;

/// One registered kind, written out with every key it has (so each key is mutated).
struct Template {
    /// Registry and kind, e.g. `queue/drr`.
    name: &'static str,
    /// Key path of the config in the scenario, e.g. `links[0].queue`.
    at: &'static str,
    /// The config as a TOML inline table.
    config: &'static str,
}

const TEMPLATES: &[Template] = &[
    // Queue disciplines.
    Template { name: "queue/fifo", at: "links[0].queue", config: r#"{ kind = "fifo", limit = "50p" }"# },
    Template {
        name: "queue/drr",
        at: "links[0].queue",
        config: r#"{ kind = "drr", limit = "50p", quantum = "1500B", flow_key = "five_tuple", ties = "neutral" }"#,
    },
    Template {
        name: "queue/sqf",
        at: "links[0].queue",
        config: r#"{ kind = "sqf", limit = "50p", flow_key = "five_tuple", ties = "key", flow_sample = "1ms" }"#,
    },
    Template {
        name: "queue/pfq",
        at: "links[0].queue",
        config: r#"{ kind = "pfq", limit = "50p", flow_key = "src_port", ties = "neutral" }"#,
    },
    Template {
        name: "queue/fq_codel",
        at: "links[0].queue",
        config: r#"{ kind = "fq_codel", limit = "100p", target = "5ms", interval = "100ms", quantum = "1514B", flow_key = "five_tuple", ties = "neutral" }"#,
    },
    Template {
        name: "queue/codel",
        at: "links[0].queue",
        config: r#"{ kind = "codel", limit = "100p", target = "5ms", interval = "100ms" }"#,
    },
    Template {
        name: "queue/red",
        at: "links[0].queue",
        config: r#"{ kind = "red", limit = "50p", min_th = "5p", max_th = "15p", max_p = 0.1, w_q = 0.002, gentle = true, mean_pkt_size = "500B", profiles = [{ dscp = ["AF11", 18], min_th = "10p", max_th = "20p", max_p = 0.05, gentle = false }, { dscp = ["AF13"], min_th = "3p", max_th = "20p", max_p = 0.2 }] }"#,
    },
    Template {
        name: "queue/pie",
        at: "links[0].queue",
        config: r#"{ kind = "pie", limit = "1000p", target = "15ms", t_update = "15ms", alpha = 0.125, beta = 1.25, max_burst = "150ms" }"#,
    },
    Template {
        name: "queue/prio",
        at: "links[0].queue",
        config: r#"{ kind = "prio", bands = 3, limit = "50p", map = { EF = 0, AF41 = 1, "10" = 2 } }"#,
    },
    Template {
        name: "queue/police",
        at: "links[0].queue",
        config: r#"{ kind = "police", meter = "srtcm", cir = "2Mbps", cbs = "3000B", ebs = "3000B", color_aware = true, green = "pass", yellow = "AF12", red = "drop", child = { kind = "fifo", limit = "50p" } }"#,
    },
    Template {
        name: "queue/police_trtcm",
        at: "links[0].queue",
        config: r#"{ kind = "police", meter = "trtcm", cir = "2Mbps", cbs = "3000B", pir = "4Mbps", pbs = "6000B", color_aware = false, green = "AF11", yellow = 12, red = "AF13", child = { kind = "fifo", limit = "20p" } }"#,
    },
    Template {
        name: "queue/tbf",
        at: "links[0].queue",
        config: r#"{ kind = "tbf", rate = "5Mbps", burst = "10KB", limit = "30KB", peakrate = "20Mbps", mtu = "1500B" }"#,
    },
    Template {
        name: "queue/tbf_latency",
        at: "links[0].queue",
        config: r#"{ kind = "tbf", rate = "5Mbps", burst = "10KB", latency = "50ms" }"#,
    },
    Template {
        name: "queue/tbf_child",
        at: "links[0].queue",
        config: r#"{ kind = "tbf", rate = "5Mbps", burst = "10KB", child = { kind = "fifo", limit = "100p" } }"#,
    },
    Template {
        name: "queue/htb",
        at: "links[0].queue",
        config: r#"{ kind = "htb", default = "bulk", limit = "50p", r2q = 10, classes = [{ name = "root", rate = "10Mbps", ceil = "10Mbps", burst = "1600B", cburst = "1600B" }, { name = "video", parent = "root", rate = "3Mbps", ceil = "10Mbps", burst = "3000B", cburst = "1600B", quantum = "3000B", prio = 1, dscp = ["EF", 34] }, { name = "bulk", parent = "root", rate = "5Mbps", ceil = "8Mbps" }] }"#,
    },
    Template {
        name: "queue/wdrr",
        at: "links[0].queue",
        config: r#"{ kind = "wdrr", default = 1, limit = "50p", classes = [{ quantum = "3000B", dscp = ["EF", 34] }, { quantum = "1500B", dscp = ["BE"] }] }"#,
    },
    Template { name: "queue/toy", at: "links[0].queue", config: r#"{ kind = "toy", limit_pkts = 50 }"# },
    Template {
        name: "queue/tfd",
        at: "links[0].queue",
        config: r#"{ kind = "tfd", read_option = true, headroom = 0.1, hold = 2.5, max_reserved_share = 0.9, limit = "1000p", flow_limit = "2MB", lend_idle = true, police = true, scheduler = "scfq" }"#,
    },
    // Congestion controllers (inside a TCP transport).
    Template { name: "cc/newreno", at: "flows[0].transport.cc", config: r#"{ kind = "newreno", abc = true }"# },
    Template {
        name: "cc/bbr",
        at: "flows[0].transport.cc",
        config: r#"{ kind = "bbr", high_gain = 2.885, cwnd_gain = 2.0, bw_window_rounds = 10, min_rtt_window = "10s", probe_rtt_time = "200ms", pacing_margin_pct = 1, lt_bw = true, ack_aggregation = true }"#,
    },
    Template {
        name: "cc/cubic",
        at: "flows[0].transport.cc",
        config: r#"{ kind = "cubic", c = 0.4, beta = 0.7, fast_convergence = true, reno_friendly = true, alpha_switch = true }"#,
    },
    // Transports.
    Template {
        name: "transport/tcp",
        at: "flows[0].transport",
        config: r#"{ kind = "tcp", cc = "cubic", sack = true, timestamps = true, profile = "linux", delayed_ack = true, delack_timeout = "40ms", quickack = true, rto_rule = "linux", rto_rearm = true, prr = true, hystart = true, min_rto = "200ms", max_rto = "60s", initial_rto = "1s", snd_buf = "256KB", rcv_buf = "256KB", rcv_autotune = true, rcv_buf_init = "128KB", init_cwnd = 10, rack = true, ssthresh_rule = "flight_size", prr_rule = "linux", hystart_rule = "rfc9406", mss = "1000B" }"#,
    },
    Template { name: "transport/udp", at: "flows[1].transport", config: r#"{ kind = "udp" }"# },
    Template { name: "transport/rtp", at: "flows[1].transport", config: r#"{ kind = "rtp" }"# },
    Template {
        name: "transport/tfrc",
        at: "flows[1].transport",
        config: r#"{ kind = "tfrc", send_buffer = "100p", oscillation_prevention = true, history_discounting = true, t_mbi = "64s", segment_size = "mss" }"#,
    },
    // Applications (stream ones on flow 0, TCP; datagram ones on flow 1, UDP).
    Template { name: "app/bulk", at: "flows[0].app", config: r#"{ kind = "bulk", bytes = "1MB" }"# },
    Template {
        name: "app/web",
        at: "flows[0].app",
        config: r#"{ kind = "web", size = "50KB", dist = "pareto", alpha = 1.5, think = "10ms" }"#,
    },
    Template {
        name: "app/http_client",
        at: "flows[0].app",
        config: r#"{ kind = "http_client", size = "50KB", dist = "exponential", alpha = 1.5, objects = 3, request = "300B", think = "5ms" }"#,
    },
    Template {
        name: "app/http_server",
        at: "flows[0].peer_app",
        config: r#"{ kind = "http_server", header = "200B" }"#,
    },
    Template { name: "app/cbr", at: "flows[1].app", config: r#"{ kind = "cbr", rate = "1Mbps", payload = "1000B" }"# },
    Template {
        name: "app/poisson",
        at: "flows[1].app",
        config: r#"{ kind = "poisson", rate = "1Mbps", payload = "1000B" }"#,
    },
    Template {
        name: "app/on_off",
        at: "flows[1].app",
        config: r#"{ kind = "on_off", rate = "2Mbps", payload = "1000B", on = "50ms", off = "50ms", dist = "pareto", alpha = 1.5 }"#,
    },
    Template {
        name: "app/video",
        at: "flows[1].app",
        config: r#"{ kind = "video", trace = "t.csv", max_payload = "1000B", loop = true, offset = "0ms", pacing = "frame", source_jitter = "1ms", peak_rate = "20Mbps", tfd = { source = "encoder", horizon_kind = "constant", horizon = "500ms", attach = "per_horizon", buffer_depth = "1s", ewma_alpha = 0.5, scene_ratio = 2.0, min_horizon = "100ms", max_horizon = "2s" }, rsvp = { rate = "2Mbps", peak = "4Mbps", bucket = "10KB", refresh = "30s", teardown = true } }"#,
    },
    Template {
        name: "app/dash",
        at: "flows[0].app",
        config: r#"{ kind = "dash", mpd = "d.mpd", segments = "d.csv", abr = { kind = "throughput", window = 5, safety = 0.9 }, startup = "6s", rebuffer = "6s", max_buffer = "30s", request = "300B", loops = 1, bandwidth = "mpd" }"#,
    },
    Template {
        name: "app/transcoder",
        at: "flows[0].app",
        config: r#"{ kind = "transcoder", ladder = "l.csv.gz", interactive = true, backoff = 0.55, recovery = "100kbps", frame_rate = 30.0, frames = 300, backoff_rule = "per_timeout" }"#,
    },
    // ABR policies (of the dash player in flows[0]).
    Template {
        name: "abr/throughput",
        at: "flows[0].app.abr",
        config: r#"{ kind = "throughput", window = 3, safety = 0.8 }"#,
    },
    Template {
        name: "abr/bba",
        at: "flows[0].app.abr",
        config: r#"{ kind = "bba", reservoir = "6s", cushion = "12s" }"#,
    },
    Template { name: "abr/bola", at: "flows[0].app.abr", config: r#"{ kind = "bola", gamma_p = 5.0 }"# },
    Template { name: "abr/vlc", at: "flows[0].app.abr", config: r#"{ kind = "vlc" }"# },
    // Loss models.
    Template { name: "loss/none", at: "links[0].loss_ab", config: r#"{ kind = "none" }"# },
    Template { name: "loss/bernoulli", at: "links[0].loss_ab", config: r#"{ kind = "bernoulli", p = 0.01 }"# },
    Template {
        name: "loss/gilbert_elliott",
        at: "links[0].loss_ab",
        config: r#"{ kind = "gilbert_elliott", p = 0.01, r = 0.3, loss_good = 0.0, loss_bad = 1.0, step = "5ms" }"#,
    },
    // Channels.
    Template { name: "channel/point_to_point", at: "links[0].channel", config: r#"{ kind = "point_to_point" }"# },
    Template {
        name: "channel/tdd",
        at: "links[0].channel",
        config: r#"{ kind = "tdd", frame = "5ms", slot_ab = { start = "0ms", end = "3ms" }, slot_ba = { start = "3ms", end = "5ms" }, medium = "cell" }"#,
    },
    Template {
        name: "channel/wimax",
        at: "links[0].channel",
        config: r#"{ kind = "wimax", medium = "bs", frame = "5ms", dl_ul = "1:3", symbol = "136us", dl_overhead_symbols = 3, ul_overhead_symbols = 3, mac_overhead = 10, class = "rtps", grants = { kind = "round_robin" } }"#,
    },
];

/// A two-node scenario with a TCP flow (0) and a UDP flow (1): every template slots into it.
const BASE: &str = r#"
[sim]
duration = "200ms"
seed = 3

[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"

[[flows]]
name = "tcp"
src = "A"
dst = "B"
transport = { kind = "tcp" }
app = { kind = "bulk" }

[[flows]]
name = "udp"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
"#;

/// A valid 4-frame trace for the video template.
const TRACE: &str =
    "nal,frame,display,type,size_bytes,ts_ms\n0,0,0,I,3000,0\n1,1,2,P,900,40\n2,2,1,B,400,80\n3,3,3,P,900,120\n";

fn workdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qoelab-hardcore-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("t.csv"), TRACE).unwrap();
    // The bundled 6-s DASH ladder, for the dash and ABR templates.
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
    std::fs::copy(traces.join("dash_hevc_6s.mpd"), d.join("d.mpd")).unwrap();
    std::fs::copy(traces.join("dash_hevc.segments.csv"), d.join("d.csv")).unwrap();
    // The bundled MPEG-2 ladder, for the transcoder template.
    std::fs::copy(traces.join("mpeg2_ladder.frames.csv.gz"), d.join("l.csv.gz")).unwrap();
    d
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Parses `a.b[1].c` into steps.
fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, None), |(k, r)| (k, Some(r)));
        out.push(Step::Key(key.to_string()));
        if let Some(r) = rest {
            out.push(Step::Index(r.trim_end_matches(']').parse().unwrap()));
        }
    }
    out
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => {
            let t = v.as_table_mut().unwrap();
            t.entry(k.clone()).or_insert(Value::Boolean(false))
        }
        Step::Index(i) => &mut v.as_array_mut().unwrap()[*i],
    })
}

fn get<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, s| match s {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(*i),
    })
}

/// The scenario with the template's config in place.
fn with_template(t: &Template) -> Value {
    let mut doc: Value = toml::from_str(BASE).unwrap();
    let cfg: Value = toml::from_str::<Value>(&format!("x = {}", t.config)).unwrap()["x"].clone();
    if t.name.starts_with("app/video") || t.name.starts_with("transport/rtp") {
        *at(&mut doc, &steps("flows[1].transport")) =
            toml::from_str::<Value>("x = { kind = \"rtp\" }").unwrap()["x"].clone();
    }
    if t.name == "app/http_server" {
        *at(&mut doc, &steps("flows[0].app")) =
            toml::from_str::<Value>("x = { kind = \"http_client\", size = \"20KB\" }").unwrap()["x"].clone();
    }
    if t.name.starts_with("app/dash") || t.name.starts_with("abr/") {
        // The player fetches from an http_server at the other end.
        *at(&mut doc, &steps("flows[0].peer_app")) =
            toml::from_str::<Value>("x = { kind = \"http_server\" }").unwrap()["x"].clone();
        if t.name.starts_with("abr/") {
            *at(&mut doc, &steps("flows[0].app")) =
                toml::from_str::<Value>("x = { kind = \"dash\", mpd = \"d.mpd\", segments = \"d.csv\" }").unwrap()["x"]
                    .clone();
        }
    }
    if t.name == "channel/wimax" {
        // A WiMAX link carries packets of at most 1024 B (one SDU per PDU).
        *at(&mut doc, &steps("links[0].mtu")) = Value::Integer(1024);
        *at(&mut doc, &steps("flows[1].app.payload")) = Value::String("900B".into());
    }
    if t.name == "queue/tfd" {
        // The TFD router needs video senders to act on; it also runs without them.
    }
    *at(&mut doc, &steps(t.at)) = cfg;
    doc
}

/// Every scalar leaf under `v`, as paths relative to it.
fn leaves(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                if k == "kind" {
                    continue;
                }
                path.push(Step::Key(k.clone()));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Step::Index(i));
                leaves(x, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

fn show(path: &[Step]) -> String {
    let mut s = String::new();
    for p in path {
        match p {
            Step::Key(k) if s.is_empty() => s.push_str(k),
            Step::Key(k) => s.push_str(&format!(".{k}")),
            Step::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Zero, negative, tiny, huge, not-a-number, wrong unit and wrong type, for any leaf.
fn edge_values(v: &Value) -> Vec<Value> {
    let s = |x: &str| Value::String(x.into());
    let strings = [
        "",
        "0",
        "0B",
        "0ns",
        "0s",
        "0p",
        "0bps",
        "-1ms",
        "-5B",
        "-1p",
        "-1bps",
        "0.4ns",
        "0.4B",
        "0.4bps",
        "1ns",
        "1B",
        "1p",
        "1bps",
        "nan",
        "inf",
        "-inf",
        "1e30s",
        "1e30B",
        "1e30bps",
        "1e30p",
        "99999999999999999999p",
        "5furlongs",
        "5",
        "1e-300s",
    ];
    let numbers = [
        Value::Integer(0),
        Value::Integer(-1),
        Value::Integer(1),
        Value::Integer(i64::MAX),
        Value::Integer(i64::MIN),
        Value::Float(0.0),
        Value::Float(-0.0),
        Value::Float(0.5),
        Value::Float(1e300),
        Value::Float(-1e300),
        Value::Float(f64::NAN),
        Value::Float(f64::INFINITY),
        Value::Float(f64::NEG_INFINITY),
        Value::Float(f64::MIN_POSITIVE),
    ];
    match v {
        Value::String(_) => strings.iter().map(|x| s(x)).chain(numbers.iter().take(2).cloned()).collect(),
        Value::Integer(_) | Value::Float(_) => numbers.iter().cloned().chain([s("x"), s("0"), s("1e3")]).collect(),
        Value::Boolean(b) => vec![Value::Boolean(!b), Value::Integer(0), s("true")],
        _ => vec![],
    }
}

/// Most events a mutated 200 ms run may dispatch: a run beyond this is a near-spin (a timer
/// of a few nanoseconds) that validation should have refused.
const EVENT_BUDGET: u64 = 20_000_000;

/// Parses, builds and runs one mutated scenario. `Ok(None)`: it ran to its end; `Ok(Some(e))`:
/// refused with error `e`; `Err`: a defect (panic, stall, runaway).
fn try_one(text: &str, base: &Path) -> Result<Option<String>, String> {
    let out = catch_unwind(AssertUnwindSafe(|| -> Result<Option<String>, String> {
        let sc = match Scenario::from_toml(text) {
            Ok(sc) => sc,
            Err(e) => return Ok(Some(e.to_string())),
        };
        let mut sim = match sc.build(&BuildOptions { base_dir: Some(base), pcap_dir: None }) {
            Ok(s) => s,
            Err(e) => return Ok(Some(e.to_string())),
        };
        sim.set_max_instant_events(1_000_000);
        let end = sim.end();
        for k in 1..=20u64 {
            sim.run_until(qoelab_core::time::SimTime(end.0 / 20 * k));
            if let Some(e) = sim.aborted() {
                return Err(format!("aborted: {e}"));
            }
            if sim.events_dispatched() > EVENT_BUDGET {
                return Err(format!("runaway: {} events by {}", sim.events_dispatched(), sim.now()));
            }
        }
        sim.run();
        let _ = sim.results();
        Ok(None)
    }));
    out.unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panicked: {what}"))
    })
}

#[test]
fn every_registered_kind_has_a_template_with_every_key() {
    let names: BTreeSet<&str> = TEMPLATES.iter().map(|t| t.name).collect();
    for (registry, kinds) in [
        ("queue", QueueConfig::NAMES),
        ("cc", CcConfig::NAMES),
        ("app", AppConfig::NAMES),
        ("loss", LossConfig::NAMES),
        ("channel", ChannelConfig::NAMES),
        ("abr", AbrConfig::NAMES),
        ("transport", &["tcp", "udp", "rtp", "tfrc"][..]),
    ] {
        for k in kinds {
            assert!(names.contains(format!("{registry}/{k}").as_str()), "no template for {registry} kind {k:?}");
        }
    }
    // Each template parses, and its config serialises to no key the template lacks: a new
    // field added to a config without its template fails here.
    let dir = workdir("keys");
    for t in TEMPLATES {
        let doc = with_template(t);
        let text = toml::to_string(&doc).unwrap();
        let sc = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", t.name));
        let mut sim = sc
            .build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None })
            .unwrap_or_else(|e| panic!("{}: {e}", t.name));
        sim.run();
        assert!(sim.aborted().is_none(), "{}", t.name);
        let back: Value = toml::from_str(&sc.to_toml()).unwrap();
        let mut b = back.clone();
        let mut d = doc.clone();
        let mine = at(&mut d, &steps(t.at)).clone();
        // A config equal to its default may be left out when serialised (`channel`).
        let theirs = get(&b, &steps(t.at)).cloned().unwrap_or(Value::Table(Default::default()));
        let _ = &mut b;
        let (mut a, mut z) = (Vec::new(), Vec::new());
        leaves(&mine, &mut Vec::new(), &mut a);
        leaves(&theirs, &mut Vec::new(), &mut z);
        let mine: BTreeSet<String> = a.iter().map(|p| show(p)).collect();
        // A transport's `cc` is a registry of its own, covered by the cc templates.
        for k in z.iter().map(|p| show(p)).filter(|k| !k.starts_with("cc.")) {
            assert!(mine.contains(&k), "{}: key {k} is not in the template", t.name);
        }
    }
}

#[test]
fn no_value_of_any_registered_kind_panics_hangs_or_errs_without_its_key_path() {
    std::panic::set_hook(Box::new(|_| {}));
    let dir = workdir("mutate");
    let (mut tried, mut refused, mut defects) = (0, 0, Vec::new());
    let mut accepted_zero = Vec::new();
    for t in TEMPLATES {
        let base = with_template(t);
        let mut cfg_paths = Vec::new();
        let mut b = base.clone();
        leaves(at(&mut b, &steps(t.at)), &mut Vec::new(), &mut cfg_paths);
        for rel in cfg_paths {
            let mut full = steps(t.at);
            full.extend(rel.iter().cloned());
            let key = format!("{}.{}", t.at, show(&rel));
            let original = at(&mut base.clone(), &full).clone();
            for e in edge_values(&original) {
                let mut doc = base.clone();
                *at(&mut doc, &full) = e.clone();
                let text = toml::to_string(&doc).unwrap();
                tried += 1;
                match try_one(&text, &dir) {
                    Ok(None) => {
                        if matches!(&e, Value::String(s) if s.starts_with("0") && s != "0.4B")
                            || matches!(&e, Value::Integer(0))
                        {
                            accepted_zero.push(format!("{key} = {e}"));
                        }
                    }
                    Ok(Some(msg)) => {
                        refused += 1;
                        // One line, naming the mutated key (or, for a config-wide check, the
                        // config), and never empty.
                        let leaf = show(&rel);
                        let leaf_key = leaf.rsplit('.').next().unwrap();
                        if msg.contains('\n') {
                            defects.push(format!("{key} = {e}: multi-line error {msg:?}"));
                        } else if !(msg.starts_with(&key)
                            || msg.starts_with(t.at) && msg.contains(leaf_key)
                            || msg.split_once(": ").is_some_and(|(p, _)| p.starts_with(t.at) && key.starts_with(p)))
                        {
                            defects.push(format!("{key} = {e}: error does not name the key: {msg}"));
                        }
                    }
                    Err(d) => defects.push(format!("{}: {key} = {e}: {d}", t.name)),
                }
            }
        }
    }
    let _ = std::panic::take_hook();
    eprintln!("{tried} mutations over {} kinds, {refused} refused, {} defects", TEMPLATES.len(), defects.len());
    if std::env::var_os("QOELAB_MUTATIONS_VERBOSE").is_some() {
        eprintln!("accepted zero values:\n{}", accepted_zero.join("\n"));
    }
    assert!(tried > 1500, "the mutation set shrank to {tried}");
    assert!(defects.is_empty(), "{}", defects.join("\n"));
}

/// The known zero-value cases of issue 15, each refused with its key path and range.
#[test]
fn zero_quanta_intervals_and_timers_are_refused_with_their_range() {
    let dir = workdir("zeros");
    for (t, key, value, want) in [
        ("queue/drr", "links[0].queue.quantum", "\"0B\"", "links[0].queue.quantum: must be ≥ 1 B"),
        ("queue/fq_codel", "links[0].queue.quantum", "\"0B\"", "links[0].queue.quantum: must be ≥ 1 B"),
        ("queue/fq_codel", "links[0].queue.interval", "\"0s\"", "links[0].queue.interval: must be ≥ 1 ns"),
        ("transport/tcp", "flows[0].transport.min_rto", "\"0s\"", "flows[0].transport.initial_rto"),
        ("transport/tcp", "flows[0].transport.max_rto", "\"0s\"", "flows[0].transport.max_rto: must be ≥ 1 µs"),
    ] {
        let t = TEMPLATES.iter().find(|x| x.name == t).unwrap();
        let mut doc = with_template(t);
        if key.ends_with("min_rto") {
            // Both bounds zero: the case that looped at simulated time 0.
            *at(&mut doc, &steps("flows[0].transport.max_rto")) = Value::String("0s".into());
            *at(&mut doc, &steps("flows[0].transport.initial_rto")) = Value::String("0s".into());
        }
        *at(&mut doc, &steps(key)) = toml::from_str::<Value>(&format!("x = {value}")).unwrap()["x"].clone();
        let msg = try_one(&toml::to_string(&doc).unwrap(), &dir).unwrap().expect("refused");
        assert!(msg.starts_with(want), "{key} = {value}: {msg}");
    }
}

// ---- Engine guards ----------------------------------------------------------------------------

/// A run whose time stops advancing ends with `RunError::Stalled` instead of spinning. Zero
/// timers are refused at build, so the stall is provoked with a bound lower than the run's own
/// events at its first instant (every flow starts at 0).
#[test]
fn a_run_that_stops_advancing_ends_with_a_stall_error() {
    let dir = workdir("stall");
    let sc = Scenario::from_toml(BASE).unwrap();
    let mut sim = sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).unwrap();
    sim.set_max_instant_events(1);
    sim.run();
    match sim.aborted() {
        Some(RunError::Stalled { time, events }) => {
            assert_eq!(time.0, 0);
            assert_eq!(*events, 2);
        }
        other => panic!("expected a stall, got {other:?}"),
    }
    // The error is a scenario error on `sim`, one line.
    let e: qoelab_core::ScenarioError = sim.aborted().unwrap().clone().into();
    assert!(e.to_string().starts_with("sim: the run stalled at simulated time 0.000000000s"), "{e}");
    // And a normal bound lets the same run finish.
    let mut sim = sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).unwrap();
    sim.run();
    assert!(sim.aborted().is_none());
    assert_eq!(sim.now(), sim.end());
}

/// `packet_trace` on a run longer than the cap: the run ends with `PacketLogFull` once the log
/// holds the cap (overshooting by at most one instant's packets), not when memory runs out.
#[test]
fn the_packet_log_is_capped_with_a_clear_error() {
    let dir = workdir("logcap");
    let text = format!("{BASE}\n[output]\npacket_trace = true\n");
    let sc = Scenario::from_toml(&text).unwrap();
    let mut full = sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).unwrap();
    full.run();
    assert!(full.aborted().is_none());
    let rows: usize = full.flows.iter().map(|f| f.log.as_ref().map_or(0, |l| l.seq.len())).sum();
    assert!(rows > 200, "{rows}: well over the cap of 100 below");
    let mut capped = sc.build(&BuildOptions { base_dir: Some(&dir), pcap_dir: None }).unwrap();
    capped.set_max_packet_log_rows(100);
    capped.run();
    let Some(RunError::PacketLogFull { rows, time }) = capped.aborted() else {
        panic!("expected PacketLogFull, got {:?}", capped.aborted())
    };
    assert_eq!(*rows, 101);
    assert!(*time < capped.end());
    let kept: usize = capped.flows.iter().map(|f| f.log.as_ref().map_or(0, |l| l.seq.len())).sum();
    assert!((101..110).contains(&kept), "{kept}");
    let e: qoelab_core::ScenarioError = capped.aborted().unwrap().clone().into();
    assert!(e.to_string().starts_with("output.packet_trace: the packet log reached 101 rows"), "{e}");
}

// ---- Large topologies -------------------------------------------------------------------------

/// `hosts` hosts on each side of a two-router dumbbell (2 · hosts + 1 links), one CBR flow per
/// host pair for the first `flows` pairs.
pub fn big_dumbbell(hosts: u32, flows: u32, duration: &str) -> String {
    format!(
        r#"
[sim]
duration = "{duration}"

[[links]]
a = "L{{i}}"
b = "R1"
count = {hosts}
rate = "100Mbps"
delay = "1ms"

[[links]]
a = "R1"
b = "R2"
rate = "1Gbps"
delay = "10ms"
queue = {{ kind = "fifo", limit = "100000p" }}

[[links]]
a = "R2"
b = "D{{i}}"
count = {hosts}
rate = "100Mbps"
delay = "1ms"

[[flows]]
name = "f{{i}}"
count = {flows}
src = "L{{i}}"
dst = "D{{i}}"
transport = {{ kind = "udp" }}
app = {{ kind = "cbr", rate = "100kbps", payload = "500B" }}
"#
    )
}

/// 10^5 links build and run: the routing state no longer grows with nodes × nodes (which was
/// 40 GB here and aborted), and every flow's packets arrive.
#[test]
fn a_hundred_thousand_links_build_and_run() {
    let sc = Scenario::from_toml(&big_dumbbell(50_000, 1_000, "70ms")).unwrap();
    let mut sim = sc.build(&BuildOptions::default()).unwrap();
    assert_eq!(sim.ports.len(), 2 * 100_001);
    sim.run();
    assert!(sim.aborted().is_none());
    let r = sim.results();
    let flows = r.tables.iter().find(|t| t.name == "flows").unwrap();
    let col = |name: &str| flows.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c).unwrap();
    let (qoelab_core::trace::Column::U64(sent), qoelab_core::trace::Column::U64(recv)) =
        (col("sent_pkts"), col("recv_pkts"))
    else {
        panic!("sent_pkts / recv_pkts are counts")
    };
    assert_eq!(sent.len(), 1_000);
    // 100 kbit/s of 500-byte datagrams (one per 40 ms) for 70 ms: 2 each, all delivered before
    // the end (12 ms of delay, 4 ms for the burst at R1).
    assert!(sent.iter().all(|&s| s >= 1), "{sent:?}");
    assert_eq!(recv.iter().sum::<u64>(), sent.iter().sum::<u64>());
}

// ---- Fuzzing on stable: corpus replay and deterministic random inputs --------------------------

#[path = "../fuzz/fuzz_targets/input_check.rs"]
mod input_check;

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// xorshift64*: a fixed stream, so every run of the suite tries the same inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One to four random edits of `seed`: byte flips, deletions, duplications, and splices of
/// tokens that matter to the readers.
fn mutate(seed: &[u8], rng: &mut Rng, tokens: &[&str]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = if v.is_empty() { 0 } else { rng.below(v.len()) };
        match rng.below(5) {
            0 if !v.is_empty() => v[at] = rng.next() as u8,
            1 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at..end);
            }
            2 if !v.is_empty() => {
                let end = (at + 1 + rng.below(32)).min(v.len());
                let piece = v[at..end].to_vec();
                let to = rng.below(v.len() + 1);
                v.splice(to..to, piece);
            }
            _ => {
                let t = tokens[rng.below(tokens.len())].as_bytes();
                v.splice(at..at, t.iter().copied());
            }
        }
    }
    v
}

#[test]
fn the_trace_reader_holds_its_properties_on_the_corpus_and_random_inputs() {
    let seeds = corpus("trace_read");
    assert!(seeds.len() >= 6);
    for s in &seeds {
        input_check::trace(s);
    }
    let tokens = [
        ",",
        "\n",
        "\r\n",
        "-",
        "0",
        "1",
        "99999999999999999999",
        "4294967296",
        "nan",
        "1e308",
        "I",
        "X",
        "B",
        "frame",
        "display",
        "nal",
        " ",
        "\t",
        "\u{e9}",
        "\0",
        "root:x:0:0:secret",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let seed = &seeds[rng.below(seeds.len())];
        input_check::trace(&mutate(seed, &mut rng, &tokens));
    }
}

#[test]
fn the_scenario_loader_holds_its_properties_on_the_corpus_and_random_inputs() {
    std::panic::set_hook(Box::new(|_| {}));
    let seeds = corpus("scenario_load");
    assert!(seeds.len() >= 8);
    let tokens = [
        "0",
        "-1",
        "\"0s\"",
        "\"0B\"",
        "\"0p\"",
        "\"0bps\"",
        "\"nan\"",
        "1e400",
        "9223372036854775807",
        "\"\"",
        "[",
        "]",
        "{",
        "}",
        "=",
        "\n",
        "kind = \"drr\"",
        "kind = \"fq_codel\"",
        "kind = \"tdd\"",
        "count = 3",
        "\"{i}\"",
        "x",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut failures = Vec::new();
    let mut check = |input: &[u8]| {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| input_check::scenario(input))) {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("{what:?} on:\n{}", String::from_utf8_lossy(input)));
        }
    };
    for s in &seeds {
        check(s);
    }
    for _ in 0..3_000 {
        let seed = &seeds[rng.below(seeds.len())];
        check(&mutate(seed, &mut rng, &tokens));
    }
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{} failures; first: {}", failures.len(), failures[0]);
}

/// Replays a reader's corpus, then `n` deterministic mutations of it, through `check`; every
/// panic (a failed property included) is collected and reported with its input.
fn replay(name: &str, min_seeds: usize, n: usize, seed: u64, tokens: &[&str], check: fn(&[u8])) {
    std::panic::set_hook(Box::new(|_| {}));
    let seeds = corpus(name);
    assert!(seeds.len() >= min_seeds, "{name}: {} seeds", seeds.len());
    let mut failures = Vec::new();
    let mut one = |input: &[u8]| {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| check(input))) {
            let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("{what:?} on:\n{}", String::from_utf8_lossy(input)));
        }
    };
    for s in &seeds {
        one(s);
    }
    let mut rng = Rng(seed);
    for _ in 0..n {
        let s = &seeds[rng.below(seeds.len())];
        one(&mutate(s, &mut rng, tokens));
    }
    let _ = std::panic::take_hook();
    assert!(failures.is_empty(), "{name}: {} failures; first: {}", failures.len(), failures[0]);
}

/// Tokens that matter to the numeric fields of every reader.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "99999999999999999999999999999999",
    "1e308",
    "nan",
    "inf",
    ".",
    "\n",
    ",",
    "\"",
    "\0",
    "\u{e9}",
    "root:x:0:0:secret-token",
];

#[test]
fn the_mpd_reader_holds_its_properties_on_the_corpus_and_random_inputs() {
    let mut tokens = NUMBERS.to_vec();
    tokens.extend([
        "PT1000000S",
        "P100000D",
        "PT0.001S",
        "duration=\"1\"",
        "timescale=\"1000000000\"",
        "<Representation id=\"x\" bandwidth=\"1\"/>",
        "<Period>",
        "</Period>",
        "<AdaptationSet>",
        "<SegmentTimeline/>",
        "<",
        ">",
        "/>",
        "type=\"dynamic\"",
        "<!--",
    ]);
    replay("mpd_read", 4, 20_000, 0x5151_7a7a_0042_0001, &tokens, input_check::mpd);
}

#[test]
fn the_segments_reader_holds_its_properties_on_the_corpus_and_random_inputs() {
    let mut tokens = NUMBERS.to_vec();
    tokens.extend(["720p_2M", "1080p_6M", "2160p_20M", "6", "segment_s", "size_bytes", "duration_s", "\r\n"]);
    replay("segments_read", 3, 20_000, 0x5151_7a7a_0042_0002, &tokens, input_check::segments);
}

#[test]
fn the_ladder_reader_holds_its_properties_on_the_corpus_and_random_inputs() {
    let mut tokens = NUMBERS.to_vec();
    tokens.extend(["I", "P", "B", "rung", "target_bps", "frame", "type", "size_bytes", "\r\n"]);
    replay("ladder_read", 2, 20_000, 0x5151_7a7a_0042_0003, &tokens, input_check::ladder);
}
