//! What the TCP sender reports to the probe layer ([`crate::trace::probe`]) beyond the events
//! it emits inline (`cwnd` on every change of cwnd or ssthresh, `retransmit` per retransmitted
//! segment): RTO records and the connection's state.
//!
//! States (`tcp_state` probe), derived from the sender's variables at the end of every callback
//! and reported when they change, after Linux's `ca_state` where it applies:
//! - `"syn_sent"`: the SYN is out (RFC 9293 §3.3.2);
//! - `"open"`: established, no loss being repaired;
//! - `"recovery"`: fast retransmit / fast recovery (RFC 6582, RFC 6675);
//! - `"loss"`: after a retransmission timeout, until everything sent before it is
//!   acknowledged (`snd_una >= recover`, RFC 6582 §3.2 step 1).
//!
//! A controller with state to show ([`CongestionControl::info`](super::cc::CongestionControl::info),
//! BBR) is reported to the `bbr` probe at every change of its mode and every new round.

use super::{State, TcpSender};
use crate::trace::probe::ProbeEvent;
use crate::transport::FlowCtx;

impl TcpSender {
    /// One `rto` record: the timeout just fired, with the RTO after backoff.
    pub(super) fn probe_rto(&self, cx: &mut FlowCtx) {
        let (rto_ns, backoff) = (self.rtt.rto().as_nanos(), self.consecutive_rtos);
        cx.probe(ProbeEvent::Rto { flow: cx.flow, end: cx.end(), rto_ns, backoff });
    }

    fn state_name(&self) -> &'static str {
        match self.state {
            State::Closed => "closed",
            State::SynSent => "syn_sent",
            State::Established if self.tcb.in_recovery => "recovery",
            State::Established if self.tcb.snd_una < self.recover => "loss",
            State::Established => "open",
        }
    }

    /// Reports the controller's state if its mode or round changed since the last report.
    pub(super) fn probe_cc(&mut self, cx: &mut FlowCtx) {
        let Some(i) = self.cc.info(&self.tcb) else { return };
        if (i.mode, i.round) == self.probed_cc {
            return;
        }
        self.probed_cc = (i.mode, i.round);
        cx.probe(ProbeEvent::Bbr {
            flow: cx.flow,
            end: cx.end(),
            mode: i.mode,
            round: i.round,
            bw_bps: i.bw_bps,
            min_rtt_ns: i.min_rtt.map_or(0, |d| d.as_nanos()),
            pacing_gain: i.pacing_gain,
            cwnd_gain: i.cwnd_gain,
            pacing_rate_bps: i.pacing_rate_bps,
            cwnd_bytes: self.tcb.cwnd,
        });
    }

    /// Reports the state if it changed since the last report.
    pub(super) fn probe_state(&mut self, cx: &mut FlowCtx) {
        let s = self.state_name();
        if s != self.probed_state {
            self.probed_state = s;
            cx.probe(ProbeEvent::TcpState { flow: cx.flow, end: cx.end(), state: s });
        }
    }
}
