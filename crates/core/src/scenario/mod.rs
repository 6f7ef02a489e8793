//! Scenarios: plain-data descriptions (TOML or the Python API's dicts) compiled once into a
//! [`Simulation`](crate::sim::Simulation).
//!
//! Every mistake is reported at build time with the key path that caused it, e.g.
//! `links[2].queue.limit: expected a limit like "50p" or "64KB", got "50"`.
//!
//! Repetition: a link or flow entry with `count = N` stands for N entries; `{i}` in its string
//! fields is replaced by 0..N-1 (plus `index_base`), and a flow's start advances by
//! `start_step` per instance.

use crate::app::AppConfig;
use crate::link::channel::ChannelConfig;
use crate::link::loss::LossConfig;
use crate::queue::QueueConfig;
use crate::time::Dur;
use crate::transport::TransportConfig;
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};

/// A build-time error with its key path.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ScenarioError {
    pub path: String,
    pub reason: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        ScenarioError { path: path.into(), reason: reason.into() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free-form name, used in reports.
    #[serde(default)]
    pub name: String,
    /// Free-form description.
    #[serde(default)]
    pub description: String,
    pub sim: SimConfig,
    /// Optional explicit node list (nodes are also implied by links).
    #[serde(default)]
    pub nodes: Vec<NodeConfig>,
    pub links: Vec<LinkConfig>,
    /// The simulated flows (at least one, unless a node is real).
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    /// Intervals when link directions are down (the congestion injector); see
    /// [`crate::link::outage`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<crate::link::outage::OutageConfig>,
    /// Scheduled handovers: link directions whose rate, delay or loss change at given times,
    /// each after an association gap (a mobile host moving between access points); see
    /// [`crate::link::handover`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handovers: Vec<crate::link::handover::HandoverConfig>,
    #[serde(default)]
    pub output: OutputConfig,
    /// Metadata for `qoelab bench` (ignored by runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench: Option<BenchMeta>,
}

/// `[bench]`: which link direction is the bottleneck whose packets `qoelab bench` counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchMeta {
    pub bottleneck: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Simulated duration, e.g. `"60s"`.
    #[serde(with = "serde_units::time")]
    pub duration: Dur,
    /// Seed of every random stream (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_seed() -> u64 {
    1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// A real host (emulation, `qoelab emulate`): a Linux network namespace whose kernel and
    /// applications send and receive through the simulated network in real time (default
    /// false). A simulated flow cannot end at a real node, and `qoelab run` refuses a scenario
    /// with one. See `docs/models/emulation.md`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub real: bool,
    /// Edge classifier (RFC 2475 §2.3): 5-tuple rules, first match wins, that set the DSCP of
    /// every packet this node forwards, e.g. `[{ dst_port = 5004, protocol = "udp", dscp = "EF" }]`
    /// (default none). See [`crate::ip::classify`] and `docs/models/diffserv.md`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classify: Vec<crate::ip::classify::ClassifyRule>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Node at end A.
    pub a: String,
    /// Node at end B.
    pub b: String,
    /// Rate of each direction.
    #[serde(with = "serde_units::rate")]
    pub rate: Rate,
    /// One-way propagation delay.
    #[serde(with = "serde_units::time")]
    pub delay: Dur,
    /// MTU in bytes (largest IP datagram), default 1500.
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Queue discipline of both directions (default `fifo` with `limit = "100p"`).
    #[serde(default)]
    pub queue: QueueConfig,
    /// Overrides `queue` for the A→B direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ab: Option<QueueConfig>,
    /// Overrides `queue` for the B→A direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ba: Option<QueueConfig>,
    /// A NIC transmit ring below the queue discipline of each direction, in descriptors
    /// (packets, the one on the wire included; 1..=65536; default none: the discipline hands
    /// each packet straight to the line). The discipline fills free descriptors at once, so
    /// packets in the ring can no longer be reordered or dropped by it: 2011-era drivers had
    /// 64–256 (see `crate::queue::ring`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_ring: Option<u32>,
    /// GRO on node A's receiving interface on this link (default none: every packet is handed
    /// to A as it arrives), e.g. `a_gro = { poll = "50us" }`: the interface is polled at most
    /// once per `poll`, and each poll merges consecutive in-order TCP segments of a connection
    /// into one packet of up to `max_bytes`, which A routes and queues as one packet and sends
    /// on as its segments (see `crate::link::gro`, `docs/models/gro.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_gro: Option<crate::link::gro::GroConfig>,
    /// GRO on node B's receiving interface on this link (see `a_gro`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_gro: Option<crate::link::gro::GroConfig>,
    /// An interface address of node A on this link (dotted quad, default none): packets sent
    /// to it reach A through this link, and packets A sends from it leave on this link. Every
    /// node also has its primary address (see `crate::node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_addr: Option<String>,
    /// An interface address of node B on this link (see `a_addr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_addr: Option<String>,
    /// The channel of both directions (default `point_to_point`: a dedicated wire of `rate`
    /// and `delay`); a shared medium such as `tdd` grants each direction its slots.
    #[serde(default, skip_serializing_if = "ChannelConfig::is_default")]
    pub channel: ChannelConfig,
    /// Loss model of the A→B direction (default none).
    #[serde(default = "no_loss")]
    pub loss_ab: LossConfig,
    /// Loss model of the B→A direction (default none).
    #[serde(default = "no_loss")]
    pub loss_ba: LossConfig,
    /// Repeat this entry N times, substituting `{i}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// First value of `{i}` (default 0).
    #[serde(default)]
    pub index_base: u32,
}

fn default_mtu() -> u32 {
    1500
}
fn no_loss() -> LossConfig {
    LossConfig::default()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Unique flow name (with `{i}` when `count` is set).
    pub name: String,
    pub src: String,
    pub dst: String,
    pub transport: TransportConfig,
    /// The application at `src`, which opens the connection.
    pub app: AppConfig,
    /// An application at `dst`, on the same connection (default: none; the destination only
    /// receives). It starts at `start` too, and receives the transport's notices at its end and
    /// the messages the source's application writes (e.g. an HTTP server answering a client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_app: Option<AppConfig>,
    /// Start time (default 0 s).
    #[serde(default, with = "serde_units::time")]
    pub start: Dur,
    /// Stop time for new application data (default: the end of the run).
    #[serde(default, with = "serde_units::opt_time", skip_serializing_if = "Option::is_none")]
    pub stop: Option<Dur>,
    /// The source end's address: one of `src`'s interface addresses (default: its primary
    /// address). The connection then leaves and returns through that interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_addr: Option<String>,
    /// The destination end's address: one of `dst`'s interface addresses (default: its
    /// primary address). Packets to it are routed to that interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_addr: Option<String>,
    /// Explicit route as a node list from `src` to `dst` (default: shortest path). The reverse
    /// direction uses the reversed list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<String>>,
    /// The connection's paths, at most [`MAX_PATHS`](crate::subflow::MAX_PATHS), each with its
    /// own `src_addr`, `dst_addr` and `route` (default: one path, given by the flow's own
    /// fields, which a flow with subflows leaves out). See [`crate::subflow`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subflows: Option<Vec<crate::subflow::SubflowConfig>>,
    /// DiffServ code point of the packets the source end sends: a number 0-63 or a name
    /// (`"EF"`, `"AF41"`, `"CS5"`, `"BE"`; see [`crate::ip::dscp`]), as a socket with `IP_TOS`
    /// set. Default: none (0, best effort). The destination end's packets (ACKs, requests) stay
    /// best effort; an edge classifier (`nodes[].classify`) can re-mark either direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<crate::ip::dscp::Dscp>,
    /// Record one row per packet of this flow (the receive log the video evaluator reads).
    #[serde(default)]
    pub packet_log: bool,
    /// Include this flow in Jain's fairness index (default: all stream flows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default)]
    pub index_base: u32,
    /// Added to `start` per instance when `count` is set.
    #[serde(default, with = "serde_units::time")]
    pub start_step: Dur,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Throughput-series bin width (default 100 ms).
    #[serde(default = "default_bin", with = "serde_units::time")]
    pub throughput_bin: Dur,
    /// Queue-occupancy sampling interval (default 10 ms).
    #[serde(default = "default_sample", with = "serde_units::time")]
    pub queue_sample: Dur,
    /// Link directions to capture as pcap, by name (`"R1->R2"`).
    #[serde(default)]
    pub pcap: Vec<String>,
    /// Record every packet of every flow (as if each had `packet_log = true`).
    #[serde(default)]
    pub packet_trace: bool,
    /// Typed probes to record, each into a result table `probe_<name>` (default none):
    /// `"queue"`, `"drops"`, `"cwnd"`, `"rto"`, `"retransmit"`, `"tcp_state"`, `"app"`, `"tfrc"`,
    /// `"subflow"`, `"tcp_events"`, `"bbr"`; see
    /// [`crate::trace::probe`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<crate::trace::probe::ProbeKind>,
}

fn default_bin() -> Dur {
    Dur::from_millis(100)
}
fn default_sample() -> Dur {
    Dur::from_millis(10)
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            throughput_bin: default_bin(),
            queue_sample: default_sample(),
            pcap: Vec::new(),
            packet_trace: false,
            probes: Vec::new(),
        }
    }
}

impl Scenario {
    /// Parses TOML text. Errors carry the key path (or the line, for syntax errors).
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        // Syntax errors are found before any value is read, so they have no key path.
        let de = toml::Deserializer::parse(text).map_err(|e| toml_error(text, String::new(), &e))?;
        serde_path_to_error::deserialize(de).map_err(|e| {
            let outer = e.path().to_string();
            toml_error(text, outer, &e.into_inner())
        })
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("scenario types always serialise")
    }
}

/// One-line [`ScenarioError`] for a toml error met at key path `outer` of `text`.
fn toml_error(text: &str, outer: String, inner: &toml::de::Error) -> ScenarioError {
    // A registry's config reports the path inside it (see `registry::PATH_MARK`).
    let (within, message) = crate::registry::split_marked(inner.message());
    let path = match within {
        Some(w) => crate::registry::join_path(&outer, w),
        None => outer,
    };
    // One line: toml's messages may span several.
    let msg = with_suggestion(message.split_whitespace().collect::<Vec<_>>().join(" "));
    // Syntax errors have no key path: report the line instead.
    if path == "." || path.is_empty() {
        if let Some(span) = inner.span() {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            return ScenarioError::new(format!("line {line}"), msg);
        }
        return ScenarioError::new("(top level)", msg);
    }
    ScenarioError::new(path, msg)
}

/// Serde's ``unknown field `x`, expected `a` or `b` `` (or ``unknown variant``) with the
/// closest expected name suggested: ``…; did you mean `a`?``. A name is suggested when at most
/// a third of the longer name's characters must change (about `difflib`'s default cutoff), so a
/// one- or two-letter name gets none (`q` is not a misspelled `p`).
fn with_suggestion(msg: String) -> String {
    let Some((head, expected)) = msg.split_once(", expected ") else { return msg };
    let Some(given) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| head.strip_prefix(p))
        .and_then(|r| r.strip_suffix('`'))
    else {
        return msg;
    };
    let best = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|c| (edit_distance(given, c), c))
        .filter(|(d, c)| *d > 0 && *d <= given.chars().count().max(c.chars().count()) / 3)
        .min_by_key(|(d, _)| *d);
    match best {
        Some((_, c)) => format!("{msg}; did you mean `{c}`?"),
        None => msg,
    }
}

/// Levenshtein distance between two short names (characters, not bytes).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod suggestion_tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = Scenario::from_toml(text).unwrap_err();
        format!("{}: {}", e.path, e.reason)
    }

    #[test]
    fn a_misspelled_key_or_kind_gets_the_closest_name() {
        let e = err("[sim]\ndurationn = \"1s\"\n");
        assert!(
            e.ends_with("unknown field `durationn`, expected `duration` or `seed`; did you mean `duration`?"),
            "{e}"
        );
        let e =
            err("[[links]]\na = \"A\"\nb = \"B\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"fifp\" }\n");
        assert!(
            e.contains("links[0].queue.kind: unknown variant `fifp`") && e.ends_with("did you mean `fifo`?"),
            "{e}"
        );
        // Nothing close: no suggestion.
        let e = err("[sim]\ncolour = 1\n");
        assert!(e.contains("unknown field `colour`") && !e.contains("did you mean"), "{e}");
        let e = err("[sim]\nsed = 1\n");
        assert!(e.ends_with("did you mean `seed`?"), "{e}");
        let e = err("[[links]]\na = \"A\"\nb = \"B\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\nloss_ab = { kind = \"gilbert_elliott\", p = 0.1, r = 0.2, q = 1 }\n");
        assert!(e.contains("unknown field `q`") && !e.contains("did you mean"), "{e}");
        assert_eq!(edit_distance("seed", "sede"), 2);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}

pub mod build;
pub mod expand;
pub use build::BuildOptions;
