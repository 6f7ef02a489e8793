//! ECN end to end (RFC 3168; `docs/models/ecn.md`): an ECN-capable TCP flow through a CoDel or
//! RED bottleneck with `ecn = true` is marked instead of dropped (no queue drop below the hard
//! limit) and keeps a goodput comparable with the drop case; a Not-ECT flow through the same
//! discipline is still dropped; the bottleneck's pcap shows ECT(0) and CE in the TOS byte; a
//! scenario without ECN keeps its results' shape (no `ce_marks_pkts` column).

use qoelab_core::{run_toml, BuildOptions, RunResults};
use std::path::PathBuf;

/// One bulk TCP flow S → D over a 10 Mbit/s, 20-ms link whose S → D queue is `queue`, for 20 s.
fn scenario(queue: &str, tcp_ecn: bool) -> String {
    format!(
        r#"
        [sim]
        duration = "20s"
        [output]
        pcap = ["S->D"]
        [[links]]
        a = "S"
        b = "D"
        rate = "10Mbps"
        delay = "20ms"
        queue = {queue}
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp", ecn = {tcp_ecn} }}
        app = {{ kind = "bulk" }}
        "#
    )
}

/// Runs `toml` with a pcap of S → D; returns the results and the count of data packets (IP
/// length above 100 bytes) per ECN codepoint on the wire [Not-ECT, ECT(1), ECT(0), CE].
fn run(toml: &str, tag: &str) -> (RunResults, [u64; 4]) {
    let dir: PathBuf = std::env::temp_dir().join(format!("qoelab-ecn-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let r = run_toml(toml, &BuildOptions { base_dir: None, pcap_dir: Some(&dir) })
        .unwrap_or_else(|e| panic!("scenario failed: {e}"));
    let b = std::fs::read(dir.join("S_to_D.pcap")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let u32le = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let (mut i, mut counts) = (24, [0u64; 4]);
    while i + 16 <= b.len() {
        let len = u32le(i + 8) as usize;
        let ip = &b[i + 16..i + 16 + len];
        i += 16 + len;
        if u16::from_be_bytes([ip[2], ip[3]]) > 100 {
            counts[(ip[1] & 3) as usize] += 1;
        }
    }
    (r, counts)
}

fn link(r: &RunResults, col: &str) -> f64 {
    let t = r.table("links");
    let i = t.strs("link").iter().position(|l| l == "S->D").unwrap();
    t.f64s(col)[i]
}

const CODEL: &str = r#"{ kind = "codel", limit = "1000p", ecn = true }"#;
const CODEL_DROP: &str = r#"{ kind = "codel", limit = "1000p" }"#;
const RED: &str = r#"{ kind = "red", limit = "100p", min_th = "5p", max_th = "15p", ecn = true }"#;
const RED_DROP: &str = r#"{ kind = "red", limit = "100p", min_th = "5p", max_th = "15p" }"#;

/// The Must-show of issue 40: marks replace drops below the hard limit, and goodput stays
/// within 10 % of the drop case (CoDel and RED). The pcap shows the data ECT(0) and the marks
/// as CE; the sender's retransmissions are gone.
#[test]
fn an_ecn_flow_is_marked_not_dropped() {
    for (name, q, q_drop) in [("codel", CODEL, CODEL_DROP), ("red", RED, RED_DROP)] {
        let (r, wire) = run(&scenario(q, true), &format!("{name}-ecn"));
        let (d, _) = run(&scenario(q_drop, true), &format!("{name}-drop"));
        let marks = link(&r, "ce_marks_pkts");
        assert!(marks >= 10.0, "{name}: {marks} marks");
        assert_eq!(link(&r, "drop_queue_pkts"), 0.0, "{name}: nothing dropped below the hard limit");
        assert!(link(&d, "drop_queue_pkts") >= 10.0, "{name}: the drop case drops");
        assert_eq!(r.flow_value("tcp", "retransmitted_segments"), 0.0, "{name}: nothing to retransmit");
        let (g, g_drop) = (r.flow_value("tcp", "goodput_bps"), d.flow_value("tcp", "goodput_bps"));
        assert!((g / g_drop - 1.0).abs() < 0.1, "{name}: goodput {g} with ECN, {g_drop} with drops");
        assert!(g > 8e6, "{name}: goodput {g}");
        eprintln!(
            "{name}: {marks} marks, goodput {g:.0} b/s (drops: {} drops, {g_drop:.0} b/s)",
            link(&d, "drop_queue_pkts")
        );
        // On the wire (after the queue): data ECT(0), the marked ones CE, none Not-ECT.
        assert_eq!(wire[0], 0, "{name}: {wire:?}");
        assert_eq!(wire[1], 0, "{name}: {wire:?}");
        assert!(wire[2] > 10_000, "{name}: {wire:?}");
        assert_eq!(wire[3] as f64, marks, "{name}: every mark is a CE packet on the wire");
    }
}

/// A Not-ECT flow through an `ecn = true` discipline is dropped as before: the same results as
/// without the key but for the (zero) marks column.
#[test]
fn a_not_ect_flow_is_still_dropped() {
    for (name, q, q_drop) in [("codel", CODEL, CODEL_DROP), ("red", RED, RED_DROP)] {
        let (r, wire) = run(&scenario(q, false), &format!("{name}-notect"));
        let (d, _) = run(&scenario(q_drop, false), &format!("{name}-notect-drop"));
        assert_eq!(link(&r, "ce_marks_pkts"), 0.0, "{name}");
        assert!(link(&r, "drop_queue_pkts") >= 10.0, "{name}");
        assert_eq!(link(&r, "drop_queue_pkts"), link(&d, "drop_queue_pkts"), "{name}");
        assert_eq!(r.flow_value("tcp", "goodput_bps"), d.flow_value("tcp", "goodput_bps"), "{name}");
        assert_eq!(wire[1] + wire[2] + wire[3], 0, "{name}: {wire:?}");
    }
}

/// Without `ecn` anywhere the links table has no `ce_marks_pkts` column; an ECN flow through
/// FQ-CoDel (ECN on by default, as in Linux) is marked and gets the column.
#[test]
fn the_marks_column_appears_only_with_ecn() {
    let (r, _) = run(&scenario(CODEL_DROP, false), "plain");
    assert!(r.table("links").get("ce_marks_pkts").is_none());
    let (f, _) = run(&scenario(r#"{ kind = "fq_codel" }"#, true), "fq");
    assert!(link(&f, "ce_marks_pkts") >= 10.0);
    assert_eq!(link(&f, "drop_queue_pkts"), 0.0);
    let (n, _) = run(&scenario(r#"{ kind = "fq_codel", ecn = false }"#, true), "fq-noecn");
    assert!(n.table("links").get("ce_marks_pkts").is_none());
    assert!(link(&n, "drop_queue_pkts") >= 10.0);
}
