//! The RSVP agent on every node: path state, RESV hop by hop, reservations on the data port.
//!
//! Reading list: RFC 2205 §1.2 (PATH downstream along the data's route, RESV upstream hop by
//! hop along the reverse of that route), §3.1.3 (PATH: path state keyed by session and sender,
//! with the previous hop from RSVP_HOP), §3.1.4 (RESV: installs on the outgoing interface of
//! the data and goes on to the previous hop), §3.1.5 (PathTear removes path state and the
//! reservations that depend on it, downstream), §3.7 (soft state: lifetime
//! L = (K + 0.5) · 1.5 · R). The messages and the lifetime rule are in [`crate::ip::rsvp`];
//! the application's side (PATH refreshes, PathTear) in [`crate::app::rsvp`].
//!
//! What a node does:
//! - PATH: records path state for (session, sender): the previous hop (the message's RSVP_HOP;
//!   none at the sender's own node) and the port this node forwards the session's data on
//!   (none at the receiver); forwards the PATH on that port, writing itself into RSVP_HOP. At
//!   the receiver, the receiver's agent answers every PATH with a RESV whose Guaranteed rate
//!   R equals the Tspec rate r, sent to the previous hop.
//! - RESV: installs (or refreshes) the reservation, keyed by the data's 5-tuple, on the port
//!   the path state names — the sender's own access port included — with lifetime L, and sends
//!   the RESV on to the previous hop. A RESV without path state is discarded (the ResvErr a
//!   real node would send is not modelled).
//! - PathTear: removes path state and the reservation on the data port, and travels on to the
//!   receiver.
//! - Path state not refreshed within L is deleted (one timer per agent, at the earliest
//!   expiry). Reservation state times out in the port's discipline on its own lifetime.
//!
//! Not modelled: see [`crate::ip::rsvp`] and `docs/models/rsvp.md`.

use super::{AgentCtx, NodeAgent};
use crate::engine::TimerKind;
use crate::ip::rsvp::{RsvpKind, RsvpMsg};
use crate::ip::{proto, Addr};
use crate::packet::{NodeId, Packet, PortId, L4};
use crate::queue::{FlowKey, Reservation};
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// The agent's one timer kind: delete path state that was not refreshed.
const CLEANUP: TimerKind = TimerKind(0);

/// RFC 2205 §3.1.3 path state of one (session, sender).
#[derive(Clone, Debug, PartialEq, Eq)]
struct PathState {
    /// Previous hop (the node that sent the PATH); `None` on the sender's node.
    phop: Option<Addr>,
    /// Port the session's data leaves this node on; `None` on the receiver's node.
    out: Option<PortId>,
    /// When the state is deleted unless refreshed (§3.7).
    expires: SimTime,
}

/// The RSVP agent of one node.
pub struct RsvpAgent {
    node: NodeId,
    /// Keyed by the data's 5-tuple (session and sender). Ordered: expiry ties break by key.
    paths: BTreeMap<FlowKey, PathState>,
    /// (expiry when filed, key), at most one entry per path state; refreshed entries are
    /// re-filed when they come up.
    expiry: BinaryHeap<Reverse<(SimTime, FlowKey)>>,
    sent: u64,
    /// RESV messages that found no path state.
    resv_without_path: u64,
}

impl RsvpAgent {
    pub fn new(node: NodeId) -> Self {
        RsvpAgent { node, paths: BTreeMap::new(), expiry: BinaryHeap::new(), sent: 0, resv_without_path: 0 }
    }

    /// Path states held (for tests and inspection).
    pub fn path_states(&self) -> usize {
        self.paths.len()
    }

    /// RESV messages discarded for want of path state.
    pub fn resv_without_path(&self) -> u64 {
        self.resv_without_path
    }

    fn handle(&mut self, mut pkt: Packet, local: bool, cx: &mut AgentCtx) {
        let L4::Rsvp(m) = &mut pkt.l4 else { unreachable!("RSVP agent offered protocol {}", pkt.l4.protocol()) };
        let me = cx.addr();
        let key = m.key();
        let now = cx.now;
        match m.kind {
            RsvpKind::Path => {
                // §3.1.3: the data's outgoing port, and the previous hop from RSVP_HOP.
                let out = cx.port_for(key, m.session.dst);
                let phop = (!local).then_some(m.hop);
                let expires = SimTime(now.0 + m.lifetime_ns());
                let fresh = self.paths.insert(key, PathState { phop, out, expires }).is_none();
                if fresh {
                    self.expiry.push(Reverse((expires, key)));
                    self.arm(cx);
                }
                if m.session.dst == me {
                    // The receiver reserves what the sender's Tspec asks for (Rspec R = Tspec r)
                    // and answers every PATH (refreshes included) with a RESV.
                    let resv = RsvpMsg { kind: RsvpKind::Resv, hop: me, ..m.clone() };
                    self.sent += 1;
                    if let Some(phop) = phop {
                        self.send_to_hop(phop, resv, cx);
                    }
                } else if let Some(p) = out {
                    m.hop = me;
                    cx.send(p, pkt);
                }
            }
            RsvpKind::Resv => {
                let Some(ps) = self.paths.get(&key) else {
                    self.resv_without_path += 1;
                    return;
                };
                let (out, phop) = (ps.out, ps.phop);
                if let Some(p) = out {
                    // §3.1.4, §3.7: install or refresh on the data's port, held for L.
                    // The FLOWSPEC's Tspec travels with it: a policing port checks the data
                    // against its token bucket (r, b).
                    let req = Reservation::Install {
                        key,
                        rate_bps: m.rate_bps,
                        bucket_bytes: u64::from(m.bucket_bytes),
                        expires: SimTime(now.0 + m.lifetime_ns()),
                    };
                    if let Some(t) = cx.reservations(p) {
                        t.reserve(&req, now);
                    }
                }
                if let Some(phop) = phop {
                    let mut m = m.clone();
                    m.hop = me;
                    self.send_to_hop(phop, m, cx);
                }
            }
            RsvpKind::PathTear => {
                // §3.1.5: delete path state and the reservation that depends on it, then go on
                // downstream as the data does.
                let out = match self.paths.remove(&key) {
                    Some(ps) => ps.out,
                    None => cx.port_for(key, m.session.dst),
                };
                if let Some(p) = out {
                    if let Some(t) = cx.reservations(p) {
                        t.reserve(&Reservation::Remove { key }, now);
                    }
                    m.hop = me;
                    cx.send(p, pkt);
                }
            }
        }
    }

    /// Sends `m` to the neighbouring node `hop` (RESV travels hop by hop, §1.2).
    fn send_to_hop(&mut self, hop: Addr, m: RsvpMsg, cx: &mut AgentCtx) {
        if let Some(p) = cx.port_towards(hop) {
            let pkt = cx.packet(hop, m.ip_bytes(), L4::Rsvp(m));
            cx.send(p, pkt);
        }
    }

    fn arm(&self, cx: &mut AgentCtx) {
        if let Some(&Reverse((t, _))) = self.expiry.peek() {
            cx.set_timer(CLEANUP, t);
        }
    }
}

impl NodeAgent for RsvpAgent {
    fn protocols(&self) -> &'static [u8] {
        &[proto::RSVP]
    }

    fn timer_kinds(&self) -> u8 {
        1
    }

    fn on_packet(&mut self, pkt: Packet, cx: &mut AgentCtx) -> Option<Packet> {
        debug_assert_eq!(cx.node, self.node);
        self.handle(pkt, false, cx);
        None
    }

    fn on_local(&mut self, pkt: Packet, cx: &mut AgentCtx) {
        self.sent += 1;
        self.handle(pkt, true, cx);
    }

    fn on_timer(&mut self, _kind: TimerKind, cx: &mut AgentCtx) {
        // §3.7: delete path state whose lifetime passed without a refresh.
        let now = cx.now;
        while let Some(&Reverse((t, key))) = self.expiry.peek() {
            if t > now {
                break;
            }
            self.expiry.pop();
            match self.paths.get(&key) {
                Some(ps) if ps.expires > now => self.expiry.push(Reverse((ps.expires, key))),
                Some(_) => {
                    self.paths.remove(&key);
                }
                None => {}
            }
        }
        self.arm(cx);
    }

    fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use crate::ip::rsvp::{RsvpKind, RsvpMsg, Sender, Session};
    use crate::ip::{addr, proto};
    use crate::packet::{NodeId, L4};
    use crate::time::SimTime;
    use crate::units::Rate;
    use crate::{BuildOptions, Scenario, Simulation};

    const MS: u64 = 1_000_000;

    /// S - R1 - R2 - D, every port a TFD scheduler with signalled reservations only; a 1 Mbit/s
    /// UDP probe S → D (ports 10000 → 5000) whose packets drive the ports' lazy expiry.
    fn world() -> Simulation {
        let link = |a: &str, b: &str| {
            format!(
                "[[links]]\na = \"{a}\"\nb = \"{b}\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\n\
                 queue = {{ kind = \"tfd\", read_option = false }}\n"
            )
        };
        let toml = format!(
            "[sim]\nduration = \"20s\"\n{}{}{}\
             [[flows]]\nname = \"probe\"\nsrc = \"S\"\ndst = \"D\"\ntransport = {{ kind = \"udp\" }}\n\
             app = {{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }}\n",
            link("S", "R1"),
            link("R1", "R2"),
            link("R2", "D")
        );
        Scenario::from_toml(&toml).unwrap().build(&BuildOptions { base_dir: None, pcap_dir: None }).unwrap()
    }

    fn node(sim: &Simulation, name: &str) -> NodeId {
        sim.node_names.iter().position(|n| n == name).unwrap() as NodeId
    }

    /// A message of session (D, UDP, `dport`) from sender (S, `sport`), R = 1 s.
    fn msg(sim: &Simulation, kind: RsvpKind, sport: u16, dport: u16, rate_bps: u64) -> RsvpMsg {
        RsvpMsg {
            kind,
            session: Session { dst: addr(node(sim, "D")), proto: proto::UDP, dport },
            sender: Sender { src: addr(node(sim, "S")), sport },
            hop: addr(node(sim, "S")),
            rate_bps,
            peak_bps: rate_bps,
            bucket_bytes: 0,
            refresh_ms: 1_000,
        }
    }

    /// The sender's application hands `m` to the RSVP agent on S.
    fn send(sim: &mut Simulation, m: RsvpMsg) {
        let s = node(sim, "S");
        sim.originate(s, m.ip_bytes(), m.session.dst, L4::Rsvp(m));
    }

    /// The rate reserved for `m`'s data on each port, in port order, by port name.
    fn held(sim: &Simulation, m: &RsvpMsg) -> Vec<(String, Option<Rate>)> {
        sim.ports.iter().map(|p| (p.name.clone(), p.reservation(m.key()))).collect()
    }

    fn on(sim: &Simulation, m: &RsvpMsg, port: &str) -> Option<Rate> {
        held(sim, m).into_iter().find(|(n, _)| n == port).unwrap().1
    }

    const DATA_PATH: [&str; 3] = ["S->R1", "R1->R2", "R2->D"];

    #[test]
    fn resv_installs_on_exactly_the_data_ports_is_refreshed_expires_and_is_torn_down() {
        let mut sim = world();
        sim.run_until(SimTime(100 * MS));
        // Nobody sends data on ports 20000 → 6000: the reservation installs by key all the same.
        let m = msg(&sim, RsvpKind::Path, 20_000, 6_000, 5_000_000);
        send(&mut sim, m.clone());
        sim.run_until(SimTime(200 * MS));
        for (name, r) in held(&sim, &m) {
            let want = DATA_PATH.contains(&name.as_str()).then_some(Rate(5_000_000));
            assert_eq!(r, want, "{name}: the data's ports (sender's access port included), and no other");
        }
        assert_eq!(sim.rsvp_sent(), 2, "PATH from S, RESV from D");
        // L = (3 + 0.5) · 1.5 · 1 s = 5.25 s (RFC 2205 §3.7). A refresh at 3 s carries the state
        // past 0.1 s + L; without further refreshes it is gone by 3 s + L.
        sim.run_until(SimTime(3_000 * MS));
        send(&mut sim, m.clone());
        sim.run_until(SimTime(5_500 * MS));
        for p in DATA_PATH {
            assert_eq!(on(&sim, &m, p), Some(Rate(5_000_000)), "{p}: refreshed at 3 s");
        }
        sim.run_until(SimTime(8_400 * MS));
        for p in DATA_PATH {
            assert_eq!(on(&sim, &m, p), None, "{p}: expired L after the last refresh");
        }
        // Re-established, then torn down by PathTear.
        send(&mut sim, m.clone());
        sim.run_until(SimTime(8_600 * MS));
        assert_eq!(on(&sim, &m, "R1->R2"), Some(Rate(5_000_000)));
        send(&mut sim, RsvpMsg { kind: RsvpKind::PathTear, ..m.clone() });
        sim.run_until(SimTime(8_700 * MS));
        for (name, r) in held(&sim, &m) {
            assert_eq!(r, None, "{name}: PathTear removed the reservation");
        }
        assert_eq!(sim.rsvp_dropped(), 0);
    }

    #[test]
    fn two_flows_between_the_same_hosts_with_different_ports_get_separate_reservations() {
        let mut sim = world();
        sim.run_until(SimTime(100 * MS));
        let a = msg(&sim, RsvpKind::Path, 20_000, 6_000, 5_000_000);
        let b = msg(&sim, RsvpKind::Path, 20_001, 6_001, 7_000_000);
        assert_ne!(a.key(), b.key());
        send(&mut sim, a.clone());
        send(&mut sim, b.clone());
        sim.run_until(SimTime(200 * MS));
        for p in DATA_PATH {
            assert_eq!(on(&sim, &a, p), Some(Rate(5_000_000)), "{p}: a");
            assert_eq!(on(&sim, &b, p), Some(Rate(7_000_000)), "{p}: b");
        }
        // The probe between the same hosts holds nothing.
        assert_eq!(sim.ports.iter().find(|p| p.name == "R1->R2").unwrap().reservation(sim.data_key(0)), None);
        send(&mut sim, RsvpMsg { kind: RsvpKind::PathTear, ..a.clone() });
        sim.run_until(SimTime(300 * MS));
        for p in DATA_PATH {
            assert_eq!(on(&sim, &a, p), None, "{p}: a torn down");
            assert_eq!(on(&sim, &b, p), Some(Rate(7_000_000)), "{p}: b untouched");
        }
    }
}
