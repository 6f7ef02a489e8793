//! Coupled congestion control: how one subflow's window grows, seeing every subflow of its
//! connection.
//!
//! Reading list: RFC 6356 (LIA, the coupled increase of MPTCP), §2 (the design goals) and §3
//! (the algorithm); RFC 6824 / RFC 8684 (MPTCP); Khalili et al., "MPTCP is not Pareto-optimal"
//! (OLIA), IEEE/ACM ToN 2013; Peng et al., "Multipath TCP: Analysis, Design, and
//! Implementation" (BALIA), IEEE/ACM ToN 2016; the out-of-tree Linux kernel's
//! `net/mptcp/mptcp_coupled.c`, `mptcp_olia.c`, `mptcp_balia.c` (v0.92, the kernel of the
//! MPTCP/DASH paper).
//!
//! How Linux applies them, and how the connection does ([`super::conn`]): every module returns
//! at once unless `tcp_is_cwnd_limited` (a subflow that is not using its window does not grow;
//! always applied here, as the subflows' own NewReno does), and counts the increase per ACK
//! (`snd_cwnd_cnt++` once per call, whatever the ACK covers), where RFC 6356 §3 counts
//! `bytes_acked`: with delayed ACKs Linux's coupled subflows grow about half as fast as the
//! RFC's. `MptcpConfig::coupled_counting` selects `"bytes"` (RFC, the default) or `"acks"`
//! (Linux: each ACK counts as one MSS acknowledged).
//!
//! A coupled algorithm only replaces the congestion-avoidance increase of each subflow: slow
//! start, loss detection and the multiplicative decrease stay the subflow's own TCP's
//! (RFC 6356 §3: "the algorithm only applies to the increase phase of the congestion
//! avoidance state"). So the trait is one query, [`CoupledIncrease::increase`], over a
//! read-only [`SubflowsView`] of every subflow's state (cwnd, ssthresh, SRTT, MSS, bytes in
//! flight), as the subflows' `Tcb`s hold it. A controller keeps only its own parameters.
//!
//! Adding one: a file here with `FooConfig` (serde, `deny_unknown_fields`, `Default`) and
//! `impl BuildCoupled for FooConfig`, then one line in the [`CoupledConfig`] registry.
//!
//! The transport that calls it is the MPTCP connection ([`super::conn`]).

use crate::registry::registry;
use crate::time::Dur;
use std::fmt;

registry! {
    /// Coupled increase selection, by `kind` in scenario files.
    pub enum CoupledConfig: dyn BuildCoupled {
        // Each subflow grows like Reno on its own (RFC 5681 §3.1): the baseline, not fair to TCP.
        uncoupled::Uncoupled(UncoupledConfig) = "uncoupled",
        // RFC 6356 §3, the Linked Increases Algorithm.
        lia::Lia(LiaConfig) = "lia",
        // Khalili et al., CoNEXT 2012: LIA's goals, Pareto-optimal.
        olia::Olia(OliaConfig) = "olia",
        // Peng et al., IEEE/ACM ToN 2016: balances responsiveness and TCP-friendliness.
        balia::Balia(BaliaConfig) = "balia",
    }
}

/// Builds a coupled increase from its config; every [`CoupledConfig`] kind implements it.
pub trait BuildCoupled {
    fn build(&self) -> Box<dyn CoupledIncrease>;
}

impl Default for CoupledConfig {
    /// LIA: the coupled increase RFC 6356 specifies for MPTCP.
    fn default() -> Self {
        CoupledConfig::Lia(LiaConfig::default())
    }
}

impl CoupledConfig {
    pub fn build(&self) -> Box<dyn CoupledIncrease> {
        self.config().build()
    }
}

/// A subflow's index within its connection (its path, [`crate::packet::PacketData::path`]).
pub type SubflowId = usize;

/// What a coupled controller may read of one subflow: the shared variables of its `Tcb`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubflowState {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Smoothed RTT (RFC 6298), once sampled.
    pub srtt: Option<Dur>,
    /// Sender maximum segment size, bytes.
    pub mss: u64,
    /// Bytes in flight (RFC 6675 pipe or RFC 5681 FlightSize).
    pub in_flight: u64,
    /// Bytes acknowledged between the subflow's last two losses, or since the last one if
    /// more (OLIA's `l_r`); 0 unless the connection tracks it.
    pub loss_interval: u64,
}

impl SubflowState {
    pub fn new(cwnd: u64, ssthresh: u64, srtt: Option<Dur>, mss: u64, in_flight: u64) -> Self {
        SubflowState { cwnd, ssthresh, srtt, mss, in_flight, loss_interval: 0 }
    }
    /// The same state with OLIA's `l_r`, bytes.
    pub fn with_loss_interval(mut self, bytes: u64) -> Self {
        self.loss_interval = bytes;
        self
    }
    /// The state of a subflow whose TCP control block is `tcb`, with `in_flight` bytes out.
    pub fn from_tcb(tcb: &crate::transport::tcp::Tcb, in_flight: u64) -> Self {
        SubflowState::new(tcb.cwnd, tcb.ssthresh, tcb.srtt, tcb.mss, in_flight)
    }
}

/// Every subflow of one connection, read-only, indexed by [`SubflowId`].
#[derive(Copy, Clone, Debug)]
pub struct SubflowsView<'a> {
    subflows: &'a [SubflowState],
}

impl<'a> SubflowsView<'a> {
    /// # Panics
    /// If `subflows` is empty (a connection has at least one).
    pub fn new(subflows: &'a [SubflowState]) -> Self {
        assert!(!subflows.is_empty(), "a connection has at least one subflow");
        SubflowsView { subflows }
    }
    pub fn len(&self) -> usize {
        self.subflows.len()
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    /// Subflow `id`.
    ///
    /// # Panics
    /// If the connection has no subflow `id`.
    pub fn get(&self, id: SubflowId) -> &'a SubflowState {
        &self.subflows[id]
    }
    pub fn iter(&self) -> impl Iterator<Item = &'a SubflowState> {
        self.subflows.iter()
    }
    /// The sum of every subflow's cwnd, bytes (RFC 6356's `cwnd_total`).
    pub fn cwnd_total(&self) -> u64 {
        self.subflows.iter().map(|s| s.cwnd).sum()
    }
}

/// A coupled congestion-avoidance increase (see the module docs).
pub trait CoupledIncrease: Send + fmt::Debug {
    /// Bytes to add to subflow `id`'s cwnd for an ACK that newly acknowledged `acked_bytes` on
    /// it while in congestion avoidance, given every subflow's state `all` (which includes
    /// `id`'s, before the increase). Fractions of a byte are dropped.
    fn increase(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> u64;
    /// The change of subflow `id`'s cwnd, bytes, for the same ACK: [`increase`](Self::increase)
    /// unless the algorithm may also shrink a window in congestion avoidance (OLIA's `α_r`).
    fn adjust(&self, id: SubflowId, acked_bytes: u64, all: &SubflowsView) -> i64 {
        self.increase(id, acked_bytes, all) as i64
    }
    /// The fraction of its window subflow `id` keeps after a loss, given every subflow's state
    /// just before it: one half (the subflow's own TCP halving, RFC 6356 §3), unless the
    /// algorithm couples the decrease too (BALIA). The connection scales the subflow's
    /// post-loss `ssthresh` by `keep / 0.5`.
    fn keep_after_loss(&self, _id: SubflowId, _all: &SubflowsView) -> f64 {
        0.5
    }
}

/// Reno's congestion-avoidance increase with byte counting: `acked · MSS / cwnd` bytes per ACK,
/// so about one MSS per RTT (RFC 5681 §3.1 eq. (3), RFC 3465 §2.1). The bound a coupled
/// increase must stay under (RFC 6356 §2 goal 2).
pub fn reno_increase(s: &SubflowState, acked_bytes: u64) -> u64 {
    (acked_bytes as u128 * s.mss as u128 / s.cwnd.max(1) as u128) as u64
}

/// Whole bytes of an increase computed in `f64`: fractions are dropped, but a value within
/// 1e-9 (relative) of a whole number is that number (0.75 · 1e6 / 30 000 is 24.999… in `f64`).
pub(crate) fn whole_bytes(x: f64) -> u64 {
    let r = x.round();
    if (x - r).abs() <= 1e-9 * r.max(1.0) {
        r as u64
    } else {
        x.floor() as u64
    }
}

/// A subflow of `cwnd` bytes, all in flight, with an RTT sample of `rtt_ms` (MSS 1000 B), for
/// the controllers' hand-computed tests.
#[cfg(test)]
pub(crate) fn sampled(cwnd: u64, rtt_ms: u64) -> SubflowState {
    SubflowState::new(cwnd, 1_000, Some(Dur::from_millis(rtt_ms)), 1_000, cwnd)
}

/// Deterministic draws in `1..=m` (xorshift64 from `seed`), for the controllers' property tests.
#[cfg(test)]
pub(crate) fn draws(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        1 + x % m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_selects_by_kind() {
        assert_eq!(CoupledConfig::NAMES, &["uncoupled", "lia", "olia", "balia"]);
        let c: CoupledConfig = toml::from_str(r#"kind = "uncoupled""#).unwrap();
        assert_eq!(c.kind(), "uncoupled");
        assert_eq!(CoupledConfig::default().kind(), "lia");
        let e = toml::from_str::<CoupledConfig>(r#"kind = "wvegas""#).unwrap_err().to_string();
        assert!(e.contains("unknown variant `wvegas`, expected one of `uncoupled`, `lia`, `olia`, `balia`"), "{e}");
        let s = [SubflowState::new(10_000, 0, None, 1_000, 0)];
        assert_eq!(c.build().increase(0, 1_000, &SubflowsView::new(&s)), 100);
    }
}
