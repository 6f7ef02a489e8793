//! TFRC, TCP-Friendly Rate Control (RFC 5348): an equation-based, rate-paced datagram
//! transport. Any datagram application (video, cbr, poisson, on/off) runs over it.
//!
//! Reading list:
//! - RFC 5348 §3 (the throughput equation, b = 1, t_RTO = 4R), §4 (sender: initial rate §4.2,
//!   feedback §4.3, no-feedback timer §4.4, oscillation prevention §4.5, pacing §4.6), §5 (loss
//!   events and the average loss interval, history discounting §5.5), §6 (receiver, feedback,
//!   the first loss interval §6.3.1);
//! - RFC 4342 (DCCP CCID-3) wraps the same algorithm in DCCP's options; nothing of it is
//!   modelled here (no DCCP handshake, ack vectors or Loss Intervals option).
//!
//! On the wire a TFRC packet is a UDP datagram whose first bytes are a TFRC header (RFC 5348
//! §3.2.1 lists its fields without a format): data packets carry [`DATA_HEADER`] bytes
//! (sequence number, timestamp, the sender's RTT estimate), feedback packets [`FEEDBACK_HEADER`]
//! bytes (timestamp echo, t_delay, X_recv, p). Sizes in the equation (`s`, `X`, `X_recv`) count
//! application payload, as RFC 5348 §3.1 defines `s` (excluding IP and transport headers).
//!
//! Not modelled: the data-limited interval rules of §4.3/§8.2 (the sender always takes the
//! maximum of the X_recv set, so a data-limited sender is held to twice what it actually got
//! through), ECN, the receiver's NDUPACK wait for reordering (§5.1: a sequence gap counts as a
//! loss at once; the simulator's paths do not reorder a flow's packets, and a late packet
//! already counted lost is ignored), and of RFC 4828's small-packet variant only its rate rule
//! (the nominal 1460-B segment and the 10-ms minimum interval, `segment_size = "small-packet"`),
//! not its loss-event changes (§4.4 of RFC 4828, counting lost packets rather than events for
//! short intervals).
//!
//! The segment size `s` (RFC 5348 §4.1): the equation, the initial window (§4.2), the minimum
//! rate and the no-feedback timer use one nominal `s` ([`SegmentSize`]), by default the flow's
//! maximum payload (the MSS-based `s`, Linux CCID-3's default among §4.1's three readings). The
//! running mean of the payloads sent (`"mean"`) is kept for comparison only: a video whose
//! every GOP opens with 6-, 29- and 9-byte parameter sets starts at W_init = 4·s ≈ 24 B per RTT
//! with it, and one early loss then leaves the flow crawling for tens of seconds (issue 38;
//! `tests/tfrc.rs`, `tiny_first_packets_start_at_the_nominal_initial_rate`).

mod receiver;
mod sender;

pub use receiver::{LossHistory, TfrcReceiver, WEIGHTS};
pub use sender::TfrcSender;

use super::{Endpoint, EndpointSetup};
pub use crate::packet::TfrcHdr;
use crate::packet::{IPV4_HEADER, UDP_HEADER};
use crate::time::Dur;
use crate::units::{parse_bytes, serde_units, Limit};
use serde::{Deserialize, Serialize};

/// TFRC data-packet header on top of UDP: sequence number, timestamp and RTT estimate
/// (RFC 5348 §3.2.1), 4 bytes each.
pub const DATA_HEADER: u32 = 12;
/// TFRC feedback header on top of UDP: timestamp echo, t_delay, X_recv and p (RFC 5348
/// §3.2.2), 4 bytes each.
pub const FEEDBACK_HEADER: u32 = 16;

/// TFRC parameters, `kind = "tfrc"` in a scenario's transport table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TfrcConfig {
    /// The sender's buffer for datagrams waiting for their paced send time, packets (`"100p"`)
    /// or bytes. A datagram arriving to a full buffer is dropped at the sender (drop-tail) and
    /// counted (`tfrc_buffer_drops`). Default `"100p"`.
    #[serde(with = "serde_units::limit")]
    pub send_buffer: Limit,
    /// Oscillation prevention (RFC 5348 §4.5): the inter-packet interval scaled by
    /// `sqrt(R_sample) / R_sqmean`. Optional in the RFC; default false.
    pub oscillation_prevention: bool,
    /// History discounting (RFC 5348 §5.5) of old loss intervals when the open interval grows
    /// beyond twice the average. Optional in the RFC; default false.
    pub history_discounting: bool,
    /// t_mbi, the maximum back-off interval: X never drops below `s / t_mbi` (RFC 5348 §4.3).
    /// Default `"64s"`.
    #[serde(with = "serde_units::time")]
    pub t_mbi: Dur,
    /// The segment size `s` of RFC 5348 §4.1: `"mss"` (default: the flow's maximum payload, the
    /// first hop's MTU less the IP, UDP and TFRC headers), a size such as `"1000B"` (the
    /// application's nominal packet), `"mean"` (the running mean of the payloads sent, as
    /// before issue 38: a stream whose first packets are tiny starts at a tiny rate) or
    /// `"small-packet"` (RFC 4828 TFRC-SP: the equation with s = 1460 B gives a packet rate,
    /// each packet whatever its size paced at 1460 B / X and at least 10 ms apart).
    pub segment_size: String,
}

/// The segment size `s` a TFRC flow uses (the key `segment_size`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SegmentSize {
    /// The flow's maximum payload (MTU − IP − UDP − TFRC headers).
    Mss,
    /// A configured nominal size, bytes.
    Fixed(u32),
    /// The running mean of the payloads sent (receiver: received).
    Mean,
    /// RFC 4828: nominal [`SMALL_PACKET_S`], packets paced at `s / X` and ≥ [`SMALL_PACKET_MIN_GAP`].
    SmallPacket,
}

/// RFC 4828 §4.1: the nominal segment size of TFRC-SP, bytes.
pub const SMALL_PACKET_S: f64 = 1460.0;
/// RFC 4828 §4.1: TFRC-SP's minimum interval between packets (at most 100 packets/s).
pub const SMALL_PACKET_MIN_GAP: Dur = Dur(10_000_000);

impl SegmentSize {
    /// Parses the `segment_size` key.
    pub fn parse(s: &str) -> Result<SegmentSize, String> {
        match s.trim() {
            "mss" => Ok(SegmentSize::Mss),
            "mean" => Ok(SegmentSize::Mean),
            "small-packet" => Ok(SegmentSize::SmallPacket),
            t => match parse_bytes(t) {
                Ok(b) if (1..=65_535).contains(&b) => Ok(SegmentSize::Fixed(b as u32)),
                _ => {
                    Err(format!("expected \"mss\", \"mean\", \"small-packet\" or a size from 1B to 65535B, got {s:?}"))
                }
            },
        }
    }

    /// The nominal `s` in bytes for a flow whose largest payload is `max_payload`; `None` for
    /// [`SegmentSize::Mean`], whose `s` is measured.
    pub fn nominal(self, max_payload: u32) -> Option<f64> {
        match self {
            SegmentSize::Mss => Some(max_payload as f64),
            SegmentSize::Fixed(b) => Some(b as f64),
            SegmentSize::SmallPacket => Some(SMALL_PACKET_S),
            SegmentSize::Mean => None,
        }
    }
}

impl Default for TfrcConfig {
    fn default() -> Self {
        TfrcConfig {
            send_buffer: Limit::Packets(100),
            oscillation_prevention: false,
            history_discounting: false,
            t_mbi: Dur::from_secs(64),
            segment_size: "mss".into(),
        }
    }
}

impl TfrcConfig {
    /// Checks the config against the first hop's MTU. Errors read `field: reason`.
    pub fn validate(&self, mtu_bytes: u32) -> Result<(), String> {
        let overhead = IPV4_HEADER + UDP_HEADER + DATA_HEADER;
        if mtu_bytes <= overhead {
            return Err(format!("kind: MTU {mtu_bytes} B leaves no room for a TFRC payload ({overhead} B of headers)"));
        }
        if let Limit::Bytes(b) = self.send_buffer {
            if b < (mtu_bytes - overhead) as u64 {
                return Err(format!("send_buffer: {b} B is smaller than one datagram ({} B)", mtu_bytes - overhead));
            }
        }
        if self.t_mbi < Dur::from_millis(1) {
            return Err(format!("t_mbi: must be ≥ 1 ms, got {:?}", self.t_mbi));
        }
        SegmentSize::parse(&self.segment_size).map_err(|e| format!("segment_size: {e}"))?;
        Ok(())
    }

    /// The parsed `segment_size`.
    ///
    /// # Panics
    /// On a value [`TfrcConfig::validate`] rejects.
    pub fn segment(&self) -> SegmentSize {
        SegmentSize::parse(&self.segment_size).expect("segment_size validated at build")
    }

    /// Builds the sender (at the flow's source) and the receiver.
    pub fn build(&self, s: &EndpointSetup) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
        (Box::new(TfrcSender::new(self, s)), Box::new(TfrcReceiver::new(self, s)))
    }
}

/// The TCP throughput equation of RFC 5348 §3.1 with b = 1 and t_RTO = 4R: the allowed rate
/// in bytes per second for segment size `s` bytes, round-trip time `r` seconds and loss event
/// rate `p` (0 < p ≤ 1).
pub fn equation(s: f64, r: f64, p: f64) -> f64 {
    let t_rto = 4.0 * r;
    s / (r * (2.0 * p / 3.0).sqrt() + t_rto * (3.0 * (3.0 * p / 8.0).sqrt()) * p * (1.0 + 32.0 * p * p))
}

/// The loss event rate `p` at which [`equation`] gives `x` bytes/s (RFC 5348 §6.3.1, used to
/// seed the first loss interval), by bisection (the equation falls monotonically in `p`).
pub fn inverse_equation(s: f64, r: f64, x: f64) -> f64 {
    let (mut lo, mut hi) = (1e-12_f64, 1.0_f64);
    if equation(s, r, hi) >= x {
        return hi;
    }
    if equation(s, r, lo) <= x {
        return lo;
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if equation(s, r, mid) > x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equation_matches_a_hand_computation() {
        // s = 1000 B, R = 0.1 s, p = 0.01: sqrt(2p/3) = 0.08165, 3·sqrt(3p/8) = 0.18371,
        // t_RTO = 0.4 → denominator 0.008165 + 0.4·0.18371·0.01·1.0032 = 0.0089022.
        let x = equation(1000.0, 0.1, 0.01);
        assert!((x - 112_332.0).abs() < 50.0, "{x}");
        // Halving R doubles X; the rate falls as p grows.
        assert!((equation(1000.0, 0.05, 0.01) / x - 2.0).abs() < 1e-9);
        assert!(equation(1000.0, 0.1, 0.02) < x);
    }

    #[test]
    fn inverse_equation_inverts() {
        for p in [1e-4, 0.003, 0.05, 0.3] {
            let x = equation(1200.0, 0.07, p);
            let q = inverse_equation(1200.0, 0.07, x);
            assert!((q / p - 1.0).abs() < 1e-6, "{p} → {q}");
        }
    }

    #[test]
    fn config_errors_name_their_key() {
        let c = TfrcConfig { t_mbi: Dur::ZERO, ..Default::default() };
        assert!(c.validate(1500).unwrap_err().starts_with("t_mbi:"));
        let c = TfrcConfig { send_buffer: Limit::Bytes(10), ..Default::default() };
        assert!(c.validate(1500).unwrap_err().starts_with("send_buffer:"));
        assert!(TfrcConfig::default().validate(40).unwrap_err().starts_with("kind:"));
        assert!(TfrcConfig::default().validate(1500).is_ok());
        let c = TfrcConfig { segment_size: "big".into(), ..Default::default() };
        assert!(c.validate(1500).unwrap_err().starts_with("segment_size:"));
        let c = TfrcConfig { segment_size: "0B".into(), ..Default::default() };
        assert!(c.validate(1500).unwrap_err().starts_with("segment_size:"));
    }

    #[test]
    fn segment_sizes_parse() {
        assert_eq!(SegmentSize::parse("mss"), Ok(SegmentSize::Mss));
        assert_eq!(SegmentSize::parse("1000B"), Ok(SegmentSize::Fixed(1000)));
        assert_eq!(SegmentSize::parse("small-packet").unwrap().nominal(984), Some(1460.0));
        assert_eq!(SegmentSize::Mss.nominal(984), Some(984.0));
        assert_eq!(SegmentSize::Mean.nominal(984), None);
    }
}
