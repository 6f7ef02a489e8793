//! Scenario builders shared by the tests of switchable TCP behaviours (`pacing.rs`, `tso.rs`,
//! `rcvtune.rs`): each behaviour must be off by default where the profile says so, change the
//! run when turned on, and be refused on MPTCP subflows with its key named.
#![allow(dead_code)]

use qoelab_core::{run_toml, BuildOptions};

/// Digest of one bulk TCP flow over one 50 Mbit/s, 10-ms link for 3 s, under `profile`, with
/// `extra` appended to the transport table.
pub fn one_link_digest(profile: &str, extra: &str) -> u64 {
    let t = format!(
        r#"
        [sim]
        duration = "3s"
        [[links]]
        a = "S"
        b = "D"
        rate = "50Mbps"
        delay = "10ms"
        [[flows]]
        name = "tcp"
        src = "S"
        dst = "D"
        transport = {{ kind = "tcp", profile = "{profile}"{extra} }}
        app = {{ kind = "bulk" }}
        "#
    );
    run_toml(&t, &BuildOptions::default()).unwrap().digest()
}

/// The build error of an MPTCP flow whose subflows' TCP table is `tcp` (e.g. `pacing = true`).
pub fn mptcp_error(tcp: &str) -> String {
    let toml = format!(
        r#"
        [sim]
        duration = "1s"
        [[links]]
        a = "C"
        b = "S"
        rate = "10Mbps"
        delay = "5ms"
        [[flows]]
        name = "m"
        src = "C"
        dst = "S"
        transport = {{ kind = "mptcp", tcp = {{ {tcp} }} }}
        app = {{ kind = "bulk" }}
        "#
    );
    run_toml(&toml, &BuildOptions::default()).err().expect("refused").to_string()
}

/// `key` (a boolean TCP behaviour) is off by default in every profile, changes the run when
/// set, and runs with it set are deterministic.
pub fn assert_off_by_default(key: &str) {
    for profile in ["linux", "rfc", "ns3", "freebsd"] {
        let base = |extra: &str| one_link_digest(profile, extra);
        let (on, off) = (format!(", {key} = true"), format!(", {key} = false"));
        assert_eq!(base(""), base(&off), "{profile}: {key} is on by default");
        assert_ne!(base(""), base(&on), "{profile}: {key} = true changed nothing");
        assert_eq!(base(&on), base(&on), "{profile}: {key} = true is not deterministic");
    }
}
