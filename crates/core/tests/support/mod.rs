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
