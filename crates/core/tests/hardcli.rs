//! File names built from scenario data stay in the output folder (issue 15, item 7): node
//! names that could form a path are refused, and capture file names are sanitised anyway.

use qoelab_core::scenario::build::capture_file_name;
use qoelab_core::{BuildOptions, Scenario};
use std::path::Path;

/// A two-node scenario whose first node is called `a` (a TOML basic string, escaped by
/// `{:?}`), with `extra` appended and the given captures.
fn scenario(a: &str, extra: &str, pcap: &[String]) -> String {
    format!(
        r#"
[sim]
duration = "100ms"
[[links]]
a = {a:?}
b = "B"
rate = "10Mbps"
delay = "1ms"
{extra}
[[flows]]
name = "f"
src = {a:?}
dst = "B"
transport = {{ kind = "udp" }}
app = {{ kind = "cbr", rate = "1Mbps", payload = "1000B" }}
[output]
pcap = {pcap:?}
"#
    )
}

fn build(toml: &str, dir: &Path) -> Result<(), String> {
    let sc = Scenario::from_toml(toml).map_err(|e| e.to_string())?;
    let mut sim = sc.build(&BuildOptions { base_dir: None, pcap_dir: Some(dir) }).map_err(|e| e.to_string())?;
    sim.run();
    Ok(())
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("qoelab-hardcli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("out")).unwrap();
    d
}

#[test]
fn a_node_name_with_a_slash_is_refused_before_any_file_is_written() {
    let d = tmp("slash");
    for bad in ["../../x", "a/b", "..\\x", "x\ny", "/etc/passwd"] {
        let e = build(&scenario(bad, "", &[format!("{bad}->B")]), &d.join("out")).unwrap_err();
        assert!(
            e.starts_with("links[0].a") && e.contains("may not hold slashes or control characters"),
            "{bad:?}: {e}"
        );
    }
    let e = build(
        &scenario("A", "[[links]]\na = \"B\"\nb = \"../C\"\nrate = \"1Mbps\"\ndelay = \"1ms\"", &[]),
        &d.join("out"),
    )
    .unwrap_err();
    assert!(e.starts_with("links[1].b"), "{e}");
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "only the output folder exists");
    assert_eq!(std::fs::read_dir(d.join("out")).unwrap().count(), 0, "nothing written");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn capture_names_are_plain_file_names() {
    assert_eq!(capture_file_name("R1->R2"), "R1_to_R2.pcap");
    assert_eq!(capture_file_name("..->B"), "_._to_B.pcap");
    assert_eq!(capture_file_name("a b->c:d"), "a_b_to_c_d.pcap");
    assert_eq!(capture_file_name("é->B"), "__to_B.pcap");
    for n in ["..->..", ".->.", "x->y", "\u{0}->B", "~->$HOME"] {
        let f = capture_file_name(n);
        assert!(!f.contains('/') && !f.starts_with('.') && f.ends_with(".pcap"), "{n:?} -> {f}");
    }
}

#[test]
fn a_capture_of_oddly_named_nodes_lands_in_the_output_folder() {
    let d = tmp("odd");
    build(&scenario("..", "", &["..->B".into()]), &d.join("out")).unwrap();
    let files: Vec<_> = std::fs::read_dir(d.join("out")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, vec![std::ffi::OsString::from("_._to_B.pcap")]);
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn two_captures_that_would_share_a_file_are_an_error() {
    let d = tmp("clash");
    let extra = "[[links]]\na = \"B\"\nb = \"A B\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n[[links]]\na = \"B\"\nb = \"A_B\"\nrate = \"1Mbps\"\ndelay = \"1ms\"";
    let e = build(&scenario("A", extra, &["B->A B".into(), "B->A_B".into()]), &d.join("out")).unwrap_err();
    assert!(e.starts_with("output.pcap[1]") && e.contains("B_to_A_B.pcap"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}
