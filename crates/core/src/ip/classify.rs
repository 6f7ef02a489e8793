//! Edge classifier: a DiffServ boundary node's multi-field classifier and marker (RFC 2475
//! §2.3.1, §2.3.3.3): an ordered list of 5-tuple rules; the first rule a packet matches sets its
//! DSCP, and a packet matching none keeps the one it carries.
//!
//! Reading list: RFC 2475 §2.3 (classifiers and markers at the DS boundary); RFC 2474 §3 (the
//! field); Linux `tc filter … u32` + `skbedit`/`pedit` or iptables `DSCP --set-dscp`, which a
//! Mininet user would write for the same thing. `docs/models/diffserv.md`.
//!
//! A rule's fields are all optional (absent = any): `src` and `dst` (a node name, matching every
//! address of that node, or a dotted-quad address), `protocol` (`"tcp"`, `"udp"` or an IANA
//! number), `src_port`, `dst_port`; `dscp` is the mark. The node applies its rules to every
//! packet it forwards (not to packets it originates or delivers), before routing it on.
//!
//! Not modelled: metering (policers, RFC 2697/2698) and classification by DSCP or by interface.

use super::dscp::Dscp;
use crate::node::{Addr, Fib, NodeId};
use crate::packet::PacketData;
use serde::{Deserialize, Serialize};

/// One rule of `nodes[].classify`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassifyRule {
    /// Source: a node name (any of its addresses) or an IPv4 address. Default: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Destination: a node name (any of its addresses) or an IPv4 address. Default: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<String>,
    /// IP protocol: `"tcp"`, `"udp"` or a number 0–255. Default: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Transport source port (TCP and UDP). Default: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// Transport destination port (TCP and UDP). Default: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
    /// The code point a matching packet gets (a number 0–63 or a name such as `"EF"`).
    pub dscp: Dscp,
}

/// A rule's protocol: by name or IANA number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Protocol {
    Name(ProtoName),
    Number(u8),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProtoName {
    Tcp,
    Udp,
}

impl Protocol {
    fn number(self) -> u8 {
        match self {
            Protocol::Name(ProtoName::Tcp) => super::proto::TCP,
            Protocol::Name(ProtoName::Udp) => super::proto::UDP,
            Protocol::Number(n) => n,
        }
    }
}

/// Where an address rule points: every address of a node, or one address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum AddrMatch {
    Any,
    Node(NodeId),
    Addr(Addr),
}

impl AddrMatch {
    fn matches(self, a: Addr, fib: &Fib) -> bool {
        match self {
            AddrMatch::Any => true,
            AddrMatch::Node(n) => fib.owner(a) == Some(n),
            AddrMatch::Addr(x) => x == a,
        }
    }
}

#[derive(Clone, Debug)]
struct Rule {
    src: AddrMatch,
    dst: AddrMatch,
    protocol: Option<u8>,
    src_port: Option<u16>,
    dst_port: Option<u16>,
    dscp: u8,
}

/// A node's compiled rules.
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    rules: Vec<Rule>,
}

impl Classifier {
    /// Compiles `rules`, resolving node names with `node`. `Err((index, field, reason))` names
    /// the rule and key that is wrong.
    pub fn new(
        rules: &[ClassifyRule],
        node: impl Fn(&str) -> Option<NodeId>,
    ) -> Result<Classifier, (usize, &'static str, String)> {
        let addr = |k: usize, field: &'static str, v: &Option<String>| -> Result<AddrMatch, _> {
            let Some(s) = v else { return Ok(AddrMatch::Any) };
            if let Some(n) = node(s) {
                return Ok(AddrMatch::Node(n));
            }
            Addr::parse(s)
                .map(AddrMatch::Addr)
                .ok_or_else(|| (k, field, format!("{s:?} is neither a node name nor an IPv4 address")))
        };
        let rules = rules
            .iter()
            .enumerate()
            .map(|(k, r)| {
                Ok(Rule {
                    src: addr(k, "src", &r.src)?,
                    dst: addr(k, "dst", &r.dst)?,
                    protocol: r.protocol.map(Protocol::number),
                    src_port: r.src_port,
                    dst_port: r.dst_port,
                    dscp: r.dscp.value(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Classifier { rules })
    }

    /// Re-marks `pkt` by the first rule it matches (RFC 2475 §2.3.1: rules are ordered).
    pub fn mark(&self, pkt: &mut PacketData, fib: &Fib) {
        let proto = pkt.l4.protocol();
        let ports = pkt.l4.ports();
        let (sport, dport) = (ports.map(|p| p.0), ports.map(|p| p.1));
        let port_ok = |want: Option<u16>, have: Option<u16>| want.is_none() || want == have;
        if let Some(r) = self.rules.iter().find(|r| {
            r.protocol.is_none_or(|p| p == proto)
                && port_ok(r.src_port, sport)
                && port_ok(r.dst_port, dport)
                && r.src.matches(pkt.src, fib)
                && r.dst.matches(pkt.dst, fib)
        }) {
            pkt.ip.dscp = r.dscp;
        }
    }
}
