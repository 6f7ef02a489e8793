//! Multipath TCP (RFC 8684): one connection over several paths, each a TCP subflow.
//!
//! Reading list: RFC 8684 §2 (operation overview), §3.1 (MP_CAPABLE), §3.2 (MP_JOIN), §3.3
//! (DSS: data sequence mappings, DATA_ACK, the connection-level receive window), §3.3.6
//! (reinjection: data may be sent again on another subflow); RFC 6356 (coupled congestion
//! control, [`coupled`]); Raiciu et al., "How hard can it be? Designing and implementing a
//! deployable multipath TCP", NSDI 2012, §4.2 (opportunistic retransmission and penalising
//! slow subflows); Linux `net/mptcp/` (protocol.c: the scheduler, `__mptcp_retrans`;
//! subflow.c) and the out-of-tree kernel's `mptcp_output.c` (`mptcp_rcv_buf_optimization`).
//!
//! The connection is full duplex: each end ([`conn::MptcpSocket`]) drives one full-duplex
//! [`TcpSocket`](super::tcp::socket::TcpSocket) per path, and each subflow keeps its own
//! handshake, sequence space per direction, cwnd, RTT estimator, SACK scoreboard, RACK and
//! retransmissions. The connection layer above them maps each end's data sequence numbers onto
//! the subflows ([`sched`] picks the subflow), reassembles the peer's data and acknowledges it
//! with DATA_ACKs. What is not modelled is listed in `docs/models/mptcp.md`.

pub mod conn;
pub mod coupled;
pub mod sched;

use super::tcp::cc::CcConfig;
use super::tcp::TcpConfig;
use super::{Endpoint, EndpointSetup};
use coupled::CoupledConfig;
use sched::SchedulerConfig;
use serde::{Deserialize, Deserializer, Serialize};

/// Bytes of the DSS option on a data segment: DATA_ACK (8) and a mapping with a 64-bit DSN
/// (14) after the 4-byte header (RFC 8684 §3.3), padded to 28. The subflows' MSS leaves room
/// for it, as Linux's does.
pub const DSS_DATA_BYTES: u32 = 28;

/// MPTCP parameters, `kind = "mptcp"` in a scenario's transport table, on a flow whose
/// `subflows` give the paths (one subflow per path, full mesh over the declared paths).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MptcpConfig {
    /// Packet scheduler: `"min_rtt"` (default, Linux's), `"round_robin"` or `"redundant"`.
    pub scheduler: SchedulerConfig,
    /// Coupled congestion control: `"lia"` (default, RFC 6356), `"olia"`, or `"uncoupled"`
    /// (each subflow runs its own `tcp.cc`, CUBIC by default, unaware of the others). With
    /// `lia` and `olia` each subflow runs Reno slow start and halving (`newreno`) and the
    /// coupled increase in congestion avoidance.
    #[serde(deserialize_with = "deserialize_coupled")]
    #[schemars(schema_with = "CoupledConfig::name_or_table_schema")]
    pub coupled: CoupledConfig,
    /// What a coupled increase counts as acknowledged: `"bytes"` (default, RFC 6356 §3's
    /// `bytes_acked`) or `"acks"` (Linux's `mptcp_coupled.c`, `mptcp_olia.c`,
    /// `mptcp_balia.c`: one MSS per ACK, whatever it covers, so delayed ACKs halve the
    /// growth). Ignored with `coupled = "uncoupled"`.
    pub coupled_counting: CoupledCounting,
    /// Reinjection: when a subflow's retransmission timer fires, the data it holds that is not
    /// yet DATA_ACKed is sent again on the other subflows (RFC 8684 §3.3.6). Default true.
    pub reinject: bool,
    /// Opportunistic retransmission and penalisation (Raiciu et al. §4.2, Linux): when the
    /// connection-level window blocks new data, the segment holding it back is sent again on
    /// a subflow with room, and the subflow that holds it has its cwnd halved (at most once
    /// per its RTT). Default true.
    pub penalise: bool,
    /// The subflows' TCP (every key of `kind = "tcp"`). Its MSS default leaves room for the
    /// DSS option (1420 B for MTU 1500 with timestamps). The receive buffer is the
    /// connection's (Linux's `msk` `sk_rcvbuf`): without `rcv_autotune` the connection-level
    /// window is `rcv_buf` throughout (default 4 MiB); with it (the `linux` profile's
    /// default) the buffer starts at `rcv_buf_init` (`tcp_rmem[1]`, 128 KiB) and grows once per
    /// the slowest subflow's receiver RTT up to `rcv_buf` (`tcp_rmem[2]`, 32 MiB), and the
    /// window every subflow advertises is the connection's (see [`conn`]).
    pub tcp: TcpConfig,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        MptcpConfig {
            scheduler: SchedulerConfig::default(),
            coupled: CoupledConfig::default(),
            coupled_counting: CoupledCounting::Bytes,
            reinject: true,
            penalise: true,
            tcp: TcpConfig::default(),
        }
    }
}

impl MptcpConfig {
    /// The subflows' TCP config for a first hop of `mtu_bytes`: the MSS less the DSS option,
    /// and NewReno under a coupled increase.
    pub fn subflow_tcp(&self, mtu_bytes: u32) -> TcpConfig {
        let mut t = self.tcp.clone();
        // The receive buffer is the connection's: the subflows keep no autotuning state of their
        // own; with the connection's autotuning they accept up to its largest buffer (the
        // connection stamps its own window on their segments).
        if self.rcv_autotune() {
            t.rcv_buf = Some(self.tcp.rcv_buf_bytes());
            t.rcv_buf_init = None;
        }
        t.rcv_autotune = Some(false);
        // The connection's scheduler decides what each subflow sends: no TSO buffers of their
        // own, whatever the profile's default (`validate` refuses an explicit `tso = true`).
        t.tso = Some(false);
        if t.mss.is_none() {
            t.mss = Some(t.mss_for(mtu_bytes).saturating_sub(DSS_DATA_BYTES as u64));
        }
        if self.is_coupled() {
            t.cc = CcConfig::NewReno(Default::default());
            t.hystart = None;
        }
        t
    }

    /// Whether the connection-level receive buffer is autotuned (`tcp.rcv_autotune`, by
    /// default the profile's: on in `linux`).
    pub fn rcv_autotune(&self) -> bool {
        self.tcp.resolved().rcv_autotune
    }

    /// Whether a coupled increase replaces the subflows' own congestion avoidance.
    pub fn is_coupled(&self) -> bool {
        !matches!(self.coupled, CoupledConfig::Uncoupled(_))
    }

    /// Checks the subflows' TCP; errors name the field (`tcp.mss: ...`).
    pub fn validate(&self, mtu_bytes: u32) -> Result<(), String> {
        if self.is_coupled() && self.tcp.hystart == Some(true) {
            return Err("tcp.hystart: only with coupled = \"uncoupled\" (coupled subflows run NewReno)".into());
        }
        if self.tcp.pacing == Some(true) {
            return Err("tcp.pacing: not available on MPTCP subflows".into());
        }
        if self.tcp.tso == Some(true) {
            return Err(
                "tcp.tso: not available on MPTCP subflows (their sending is the connection's scheduler's)".into()
            );
        }
        if self.tcp.overhead.is_some_and(|o| o > crate::time::Dur::ZERO) {
            return Err(
                "tcp.overhead: not available on MPTCP subflows (their sending is the connection's scheduler's)".into(),
            );
        }
        if self.tcp.cc.build().rate_based() {
            return Err(format!(
                "tcp.cc: {:?} is not available on MPTCP subflows (it paces every segment; their sending is the \
                 connection's scheduler's)",
                self.tcp.cc.kind()
            ));
        }
        let t = self.subflow_tcp(mtu_bytes);
        // The connection-level buffer's own limits (`rcv_buf`, `rcv_buf_init`), for the
        // subflows' segment size.
        self.tcp.validate_rcv_buf(t.mss_for(mtu_bytes)).map_err(|e| format!("tcp.{e}"))?;
        t.validate(mtu_bytes.saturating_sub(DSS_DATA_BYTES)).map_err(|e| format!("tcp.{e}"))
    }

    pub fn build(&self, s: &EndpointSetup) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
        let ends: (Box<dyn Endpoint>, Box<dyn Endpoint>) =
            (Box::new(conn::MptcpSocket::active(self, s)), Box::new(conn::MptcpSocket::passive(self, s)));
        // The host's send-path jitter of the subflows' profile delays the whole connection's
        // packets (one host stack sends them all).
        super::tcp::jitter::wrap(ends, self.tcp.resolved().host_jitter, s.seed, &s.flow_name)
    }
}

/// What a coupled increase counts (see [`MptcpConfig::coupled_counting`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CoupledCounting {
    /// RFC 6356 §3: the bytes each ACK newly acknowledges.
    #[default]
    Bytes,
    /// Linux (out-of-tree MPTCP, v0.86–v0.96): one MSS per ACK.
    Acks,
}

/// `coupled = "lia"`, or the tagged table `{ kind = "lia" }`.
fn deserialize_coupled<'de, D: Deserializer<'de>>(d: D) -> Result<CoupledConfig, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = CoupledConfig;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "one of {:?} or a table with `kind`", CoupledConfig::NAMES)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CoupledConfig, E> {
            if !CoupledConfig::NAMES.contains(&v) {
                return Err(E::custom(format!(
                    "unknown coupled congestion control {v:?}, expected one of {:?}",
                    CoupledConfig::NAMES
                )));
            }
            CoupledConfig::deserialize(serde::de::value::MapDeserializer::new(std::iter::once(("kind", v))))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<CoupledConfig, A::Error> {
            CoupledConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}
