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

    /// Reports the state if it changed since the last report.
    pub(super) fn probe_state(&mut self, cx: &mut FlowCtx) {
        let s = self.state_name();
        if s != self.probed_state {
            self.probed_state = s;
            cx.probe(ProbeEvent::TcpState { flow: cx.flow, end: cx.end(), state: s });
        }
    }
}
