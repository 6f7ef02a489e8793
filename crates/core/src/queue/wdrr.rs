//! Weighted classes by DSCP: Deficit Round Robin across classes, each with its own quantum
//! (Linux `drr` qdisc with per-class `quantum`, `net/sched/sch_drr.c`; the DRR bands of
//! `sch_ets.c`). A class is a drop-tail FIFO taking the code points it lists; under saturation
//! class *i* gets the share `quantum_i / Σ quantum` of the link's bytes, and an idle class's
//! share goes to the others in the same proportions.
//!
//! Reading list: M. Shreedhar, G. Varghese, "Efficient Fair Queuing using Deficit Round Robin",
//! SIGCOMM 1995 (§3: "a quantum of service … proportional to the weight"); Linux `tc-drr(8)`,
//! `tc-ets(8)`; RFC 2597 (AF classes), RFC 4594 §2; `docs/models/wdrr.md`.
//!
//! The round is `drr`'s (`DeficitRound` in `drr.rs`): a class that becomes active joins the tail with one
//! quantum, the head sends while its head packet fits its deficit, then gains a quantum and
//! moves to the tail; an emptied class leaves the round with its credit.
//!
//! Not modelled: Linux's `tc filter` classification (we classify by DSCP, as `prio` does),
//! child disciplines other than a drop-tail FIFO, `ets`'s strict bands (use `prio` above
//! or `htb` for a guaranteed class).

use super::drr::DeficitRound;
use super::fifo::Fifo;
use super::{Backlog, Build, BuildCtx, QueueCtx, QueueDisc, Verdict};
use crate::ip::dscp::Dscp;
use crate::packet::{Packet, PacketData};
use crate::units::{serde_units, Limit};
use serde::{Deserialize, Serialize};

/// Most classes.
pub const MAX_CLASSES: usize = 64;

/// `kind = "wdrr"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WdrrConfig {
    /// The classes, 1–64, in round order (which decides who starts a round, not the shares).
    pub classes: Vec<WdrrClassConfig>,
    /// Index of the class that takes every code point no class lists. Default: the last class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<usize>,
    /// Buffer limit of each class, in packets (`"100p"`) or bytes. Default `"100p"`.
    #[serde(with = "serde_units::limit", default = "default_limit")]
    pub limit: Limit,
}

/// One class of a [`WdrrConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WdrrClassConfig {
    /// Bytes of credit per round, ≥ 1 B (its weight). Default: the link MTU (Linux `drr`:
    /// the device's MTU).
    #[serde(default, with = "serde_units::opt_bytes", skip_serializing_if = "Option::is_none")]
    pub quantum: Option<u64>,
    /// Code points this class takes (`["EF", "AF41", 10]`); each belongs to one class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dscp: Vec<Dscp>,
}

fn default_limit() -> Limit {
    Limit::Packets(100)
}

impl WdrrConfig {
    /// The class of every code point.
    fn table(&self) -> Result<[u8; 64], (&'static str, String)> {
        let n = self.classes.len();
        if n == 0 || n > MAX_CLASSES {
            return Err(("classes", format!("needs 1..=64 classes, got {n}")));
        }
        let def = self.default.unwrap_or(n - 1);
        if def >= n {
            return Err(("default", format!("must be a class index 0..{}, got {def}", n - 1)));
        }
        let mut t = [u8::MAX; 64];
        for (i, c) in self.classes.iter().enumerate() {
            if c.quantum == Some(0) {
                return Err(("classes", format!("classes[{i}].quantum: must be ≥ 1 B, got 0 B")));
            }
            for d in &c.dscp {
                let slot = &mut t[d.value() as usize];
                if *slot != u8::MAX {
                    return Err(("classes", format!("classes[{i}].dscp: {d} already belongs to classes[{slot}]")));
                }
                *slot = i as u8;
            }
        }
        for s in t.iter_mut().filter(|s| **s == u8::MAX) {
            *s = def as u8;
        }
        Ok(t)
    }
}

/// Weighted DRR state.
pub struct Wdrr {
    class_of: [u8; 64],
    quantum: Vec<u64>,
    queues: Vec<Fifo>,
    round: DeficitRound<usize>,
}

impl Wdrr {
    /// # Panics
    /// If a quantum is 0, or `class_of` names a class beyond `quanta`.
    pub fn new(quanta: Vec<u64>, limit: Limit, class_of: [u8; 64]) -> Self {
        assert!(quanta.iter().all(|&q| q > 0), "wdrr quanta must be ≥ 1 B");
        assert!(class_of.iter().all(|&c| (c as usize) < quanta.len()), "wdrr map names a missing class");
        let queues = quanta.iter().map(|_| Fifo::new(limit)).collect();
        Wdrr { class_of, quantum: quanta, queues, round: DeficitRound::new() }
    }

    /// The class a packet joins (by its DSCP).
    pub fn class(&self, pkt: &PacketData) -> usize {
        self.class_of[(pkt.ip.dscp & 63) as usize] as usize
    }
}

impl QueueDisc for Wdrr {
    fn enqueue(&mut self, pkt: Packet, cx: &mut QueueCtx) -> Verdict {
        let c = self.class(&pkt);
        let was_idle = self.queues[c].backlog().packets == 0;
        let v = self.queues[c].enqueue(pkt, cx);
        if was_idle && matches!(v, Verdict::Enqueued) {
            self.round.join(c, self.quantum[c]);
        }
        v
    }

    fn dequeue(&mut self, cx: &mut QueueCtx) -> Option<Packet> {
        let (queues, quantum) = (&self.queues, &self.quantum);
        let head = |c: usize| queues[c].front().expect("active classes are non-empty").size_bytes as u64;
        let c = self.round.next(head, |c| quantum[c])?;
        let p = self.queues[c].dequeue(cx).expect("active classes are non-empty");
        if self.queues[c].backlog().packets == 0 {
            self.round.emptied();
        }
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        self.queues.iter().map(|q| q.backlog()).fold(Backlog::default(), |a, b| Backlog {
            packets: a.packets + b.packets,
            bytes: a.bytes + b.bytes,
        })
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&PacketData)) {
        self.queues.iter().for_each(|q| q.for_each_packet(f))
    }
}

impl Build for WdrrConfig {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        self.table().map(|_| ())
    }
    fn build(&self, cx: &BuildCtx) -> Box<dyn QueueDisc> {
        let t = self.table().expect("validated before build");
        let quanta = self.classes.iter().map(|c| c.quantum.unwrap_or(cx.mtu_bytes as u64)).collect();
        Box::new(Wdrr::new(quanta, self.limit, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{cx, drive, ops, pkt, Marking};
    use proptest::prelude::*;

    const MARKS: [Dscp; 3] = [Dscp::EF, Dscp::af(4, 1), Dscp::BE];

    fn marked(flow: u32, size: u32, seq: u64) -> Packet {
        let mut p = pkt(flow, size, seq);
        p.ip.dscp = MARKS[flow as usize % 3].value();
        p
    }

    fn wdrr(quanta: &[u64]) -> Wdrr {
        let cfg = WdrrConfig {
            classes: (0..quanta.len())
                .map(|i| WdrrClassConfig { quantum: Some(quanta[i]), dscp: vec![MARKS[i]] })
                .collect(),
            default: None,
            limit: Limit::Packets(10_000),
        };
        Wdrr::new(quanta.to_vec(), cfg.limit, cfg.table().unwrap())
    }

    /// Keeps the classes in `busy` backlogged (≥ 4 packets, sizes cycling through `sizes`) and
    /// serves `n` packets; returns the bytes each class sent.
    fn saturate(q: &mut Wdrr, busy: &[u32], sizes: &[u32], n: usize) -> [u64; 3] {
        let mut d = Vec::new();
        let (mut seq, mut next) = (0u64, 0usize);
        let mut queued = [0u32; 3];
        let mut sent = [0u64; 3];
        let mut add = |q: &mut Wdrr, f: u32, seq: &mut u64, next: &mut usize, queued: &mut [u32; 3]| {
            q.enqueue(marked(f, sizes[(*next + 7 * f as usize) % sizes.len()], *seq), &mut cx(&mut d));
            *seq += 1;
            *next += 1;
            queued[f as usize] += 1;
        };
        for &f in busy {
            for _ in 0..4 {
                add(q, f, &mut seq, &mut next, &mut queued);
            }
        }
        let mut d2 = Vec::new();
        for _ in 0..n {
            let p = q.dequeue(&mut cx(&mut d2)).unwrap();
            sent[p.flow as usize] += p.size_bytes as u64;
            queued[p.flow as usize] -= 1;
            if queued[p.flow as usize] < 4 {
                add(q, p.flow, &mut seq, &mut next, &mut queued);
            }
        }
        sent
    }

    /// Shreedhar–Varghese §3: under saturation each class's bytes are in the ratio of the
    /// quanta, 3000 : 1500 : 500 = 0.6 : 0.3 : 0.1, whatever the packet sizes (within one
    /// maximum packet per class per round; 1 % over 30 000 packets).
    #[test]
    fn byte_shares_follow_the_quanta_under_saturation() {
        let sizes: Vec<u32> = (0..97).map(|i| 40 + (i * 379) % 1461).collect();
        let s = saturate(&mut wdrr(&[3000, 1500, 500]), &[0, 1, 2], &sizes, 30_000);
        let total: u64 = s.iter().sum();
        for (i, want) in [0.6, 0.3, 0.1].into_iter().enumerate() {
            let got = s[i] as f64 / total as f64;
            assert!((got - want).abs() < 0.01 * want, "class {i}: {got:.4} vs {want}");
        }
    }

    /// An idle class's share goes to the others in their own ratio: class 1 idle, classes 0
    /// and 2 split 3000 : 500 = 6/7 : 1/7.
    #[test]
    fn an_idle_classs_share_is_redistributed_in_proportion() {
        let s = saturate(&mut wdrr(&[3000, 1500, 500]), &[0, 2], &[1500, 1000, 200], 20_000);
        assert_eq!(s[1], 0);
        let share = s[0] as f64 / (s[0] + s[2]) as f64;
        assert!((share - 6.0 / 7.0).abs() < 0.01 * 6.0 / 7.0, "{share}");
    }

    /// A hand-computed round: quanta 3000 and 1500, 1500-B packets, both backlogged from t = 0:
    /// class 0 sends two per round, class 1 one.
    #[test]
    fn hand_computed_round() {
        let mut q = wdrr(&[3000, 1500]);
        let mut d = Vec::new();
        for s in 0..6 {
            q.enqueue(marked(0, 1500, s), &mut cx(&mut d));
            q.enqueue(marked(1, 1500, 100 + s), &mut cx(&mut d));
        }
        let order: Vec<u32> = (0..9).map(|_| q.dequeue(&mut cx(&mut d)).unwrap().flow).collect();
        assert_eq!(order, vec![0, 0, 1, 0, 0, 1, 0, 0, 1]);
        // Unlisted code points join the default (last) class.
        assert_eq!(q.class(&pkt(0, 100, 0)), 1);
    }

    #[test]
    fn bad_parameters_are_refused_with_their_key() {
        let c = |q: Option<u64>| WdrrClassConfig { quantum: q, dscp: vec![] };
        let bad = |cfg: WdrrConfig| cfg.validate().unwrap_err();
        let base = || WdrrConfig { classes: vec![c(None), c(None)], default: None, limit: Limit::Packets(10) };
        assert_eq!(bad(WdrrConfig { classes: vec![], ..base() }).0, "classes");
        assert_eq!(bad(WdrrConfig { default: Some(2), ..base() }).0, "default");
        let e = bad(WdrrConfig { classes: vec![c(Some(0)), c(None)], ..base() });
        assert!(e.1.starts_with("classes[0].quantum"), "{e:?}");
        let mut cfg = base();
        cfg.classes[0].dscp = vec![Dscp::EF];
        cfg.classes[1].dscp = vec![Dscp::EF];
        assert!(bad(cfg).1.contains("already belongs to classes[0]"));
    }

    proptest! {
        /// Conservation, work conservation and FIFO order within a flow.
        #[test]
        fn wdrr_conserves(seq in ops(5, 400), q0 in 1u64..3000, q1 in 1u64..3000) {
            let mut q = Marking(Wdrr::new(vec![q0, q1, 700], Limit::Packets(15), {
                let mut t = [2u8; 64];
                t[MARKS[0].value() as usize] = 0;
                t[MARKS[1].value() as usize] = 1;
                t
            }), &MARKS);
            let mut last = [None::<u64>; 8];
            drive(&mut q, &seq, |_, _, o| {
                if let Some(p) = &o.served {
                    if let Some(prev) = last[p.flow as usize] {
                        prop_assert!(p.seq_in_flow > prev);
                    }
                    last[p.flow as usize] = Some(p.seq_in_flow);
                }
                Ok(())
            })?;
        }
    }
}
