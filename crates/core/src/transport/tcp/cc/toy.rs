//! A toy congestion controller, compiled for tests only: a fixed window of `window_pkts`
//! segments, never grown and never reduced.
//!
//! It exists to check that a controller is one file plus one registry line in `cc/mod.rs`
//! (`docs/registries.md` records the measurement). It is not shipped: its registry line is
//! `#[cfg(test)]`, so `cc = "toy"` is unknown outside this crate's unit tests.

use super::{AckSample, BuildCc, CongestionControl, LossEvent, RtoEvent};
use crate::transport::tcp::Tcb;
use serde::{Deserialize, Serialize};

/// `kind = "toy"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ToyConfig {
    /// The window, in segments of SMSS bytes. Default 20; at least 1.
    pub window_pkts: u64,
}

impl Default for ToyConfig {
    fn default() -> Self {
        ToyConfig { window_pkts: 20 }
    }
}

impl BuildCc for ToyConfig {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Toy { window_pkts: self.window_pkts })
    }
    fn validate(&self) -> Result<(), String> {
        if self.window_pkts == 0 {
            return Err("cc.window_pkts: must be at least 1 segment".into());
        }
        Ok(())
    }
}

/// The fixed-window controller.
#[derive(Clone, Debug)]
pub struct Toy {
    window_pkts: u64,
}

impl Toy {
    fn pin(&self, tcb: &mut Tcb) {
        tcb.cwnd = self.window_pkts * tcb.mss;
        tcb.ssthresh = tcb.cwnd;
    }
}

impl CongestionControl for Toy {
    fn on_ack(&mut self, _ack: &AckSample, tcb: &mut Tcb) {
        self.pin(tcb);
    }
    fn on_loss(&mut self, _loss: &LossEvent, tcb: &mut Tcb) {
        self.pin(tcb);
    }
    fn on_rto(&mut self, _rto: &RtoEvent, tcb: &mut Tcb) {
        self.pin(tcb);
    }
}

#[cfg(test)]
mod tests {
    use crate::{run_toml, BuildOptions, RunResults};

    /// One bulk TCP flow with controller `cc` over an uncongested 100 Mbit/s path, 10 ms each
    /// way, for 10 s.
    fn bulk(cc: &str) -> RunResults {
        let text = format!(
            r#"
            [sim]
            duration = "10s"
            [[links]]
            a = "S"
            b = "D"
            rate = "100Mbps"
            delay = "10ms"
            queue = {{ kind = "fifo", limit = "1000p" }}
            [[flows]]
            name = "tcp"
            src = "S"
            dst = "D"
            transport = {{ kind = "tcp", cc = {cc}, mss = "1000B" }}
            app = {{ kind = "bulk" }}
            "#
        );
        run_toml(&text, &BuildOptions::default()).unwrap_or_else(|e| panic!("{cc}: {e}"))
    }

    /// `cc = "toy"` (bare name, default window) and the table form both parse and run; cwnd
    /// ends at the configured window, and the flow delivers one window per round trip:
    /// acked bytes over the run within 2 % of W·MSS / min RTT (measured: 0.9 % below; the
    /// handshake, the first round trip at the initial window of 10 segments and the window still
    /// unacknowledged at the end each cost about one round trip, 0.2 % of 10 s).
    #[test]
    fn toy_cc_keeps_its_window() {
        for (cc, window) in [(r#""toy""#, 20u64), (r#"{ kind = "toy", window_pkts = 40 }"#, 40)] {
            let r = bulk(cc);
            let mss = 1000.0;
            assert_eq!(r.flow_value("tcp", "cwnd_bytes"), window as f64 * mss, "{cc}");
            let rtt = r.flow_value("tcp", "min_rtt_s");
            let want_bps = window as f64 * mss * 8.0 / rtt;
            let got_bps = r.flow_value("tcp", "acked_bytes") * 8.0 / 10.0;
            eprintln!("toy cc {cc}: {got_bps:.0} bit/s vs W·MSS/RTT = {want_bps:.0} bit/s (min RTT {rtt:.6} s)");
            assert!((got_bps / want_bps - 1.0).abs() < 0.02, "{cc}: {got_bps:.0} bit/s vs {want_bps:.0} bit/s");
            assert_eq!(r.flow_value("tcp", "retransmitted_segments"), 0.0, "{cc}: no loss on this path");
        }
    }
}
