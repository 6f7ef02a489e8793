//! Host send-path jitter (`host_jitter`): the random time a real host takes between TCP's
//! transmit and the packet's departure on the wire.
//!
//! Reading list:
//! - S. Floyd, V. Jacobson, "On Traffic Phase Effects in Packet-Switched Gateways",
//!   Internetworking: Research and Experience 3(3), 1992: with exact timing, which flow finds a
//!   full drop-tail queue is decided by the phase of its packets against the bottleneck's
//!   service; a little randomness at the sources removes the bias, and in a real network it is
//!   always there.
//! - Linux's transmit path after `tcp_transmit_skb`: `ip_output`, the qdisc (`__dev_queue_xmit`),
//!   the driver and, on the ACK side, the interrupt, NAPI poll and softirq that run
//!   `tcp_v4_rcv` before `tcp_ack` releases new segments. Each takes microseconds, and how many
//!   depends on what else the CPU is doing; interrupt moderation (`ethtool -C rx-usecs`, tens
//!   of µs on common NICs) adds as much again.
//!
//! Model: a decorator around an [`Endpoint`]. Everything the endpoint emits in one call (one
//! event: an ACK's arrival, a timer, the application's write) leaves after one delay drawn
//! uniformly from [0, `max`] from the endpoint's own seeded stream, and never before what it
//! emitted earlier (FIFO: an end's segments and ACKs are never reordered). The endpoint itself
//! is unaware: its timestamps, RTT samples and timers are those of the transmit instant, as a
//! host's are. So the data segments an ACK releases and the ACKs a receiver returns both wait a
//! random few µs, and runs with different seeds are independent samples of a drop-tail queue's
//! phase, as kernel runs are; with the same seed they are byte-identical.
//!
//! Magnitude (the `linux` profile's 50 µs): see `docs/models/tcp.md`, "Host jitter", for the
//! kernel measurements behind it. Cost: one timer event per call that sends.
//!
//! Not modelled: correlation between the flows of one host (each end draws from its own stream,
//! so adding a flow never changes another's draws), delays that depend on load, and jitter on
//! the receive path (its effect on the wire, a later ACK, is the same as a later send).

use crate::engine::{SimRng, TimerKind};
use crate::packet::PacketData;
use crate::time::{Dur, SimTime};
use crate::transport::{Datagram, Endpoint, FlowCtx, Outgoing, Service, SocketInfo};
use std::collections::VecDeque;

/// The largest `host_jitter` a scenario may give.
pub const MAX_JITTER: Dur = Dur::from_secs(1);

/// An endpoint whose emissions leave after a random delay (see the module docs).
pub struct Jittered {
    inner: Box<dyn Endpoint>,
    /// The largest delay, ns (delays are uniform on 0..=max_ns).
    max_ns: u64,
    rng: SimRng,
    /// Packets held, with the time each leaves (non-decreasing).
    held: VecDeque<(SimTime, Outgoing)>,
    /// When the last batch leaves (no later batch leaves before it).
    last_release: SimTime,
    /// Our timer: the kind after the inner endpoint's.
    kind: TimerKind,
}

impl Jittered {
    /// Wraps `inner`, delaying what it sends by up to `max`, drawn from `rng`.
    ///
    /// # Panics
    /// If `max` is zero (no jitter is built as no decorator) or the inner endpoint declares 255
    /// timer kinds.
    pub fn new(inner: Box<dyn Endpoint>, max: Dur, rng: SimRng) -> Self {
        assert!(max > Dur::ZERO, "a jitter of zero is built as none");
        let kinds = inner.timer_kinds();
        assert!(kinds < u8::MAX, "no timer kind left for the jitter");
        Jittered {
            inner,
            max_ns: max.as_nanos(),
            rng,
            held: VecDeque::new(),
            last_release: SimTime::ZERO,
            kind: TimerKind(kinds),
        }
    }

    /// A delay uniform on 0..=max ns. The modulo's bias is below 2⁻³³ for any `max` ≤
    /// [`MAX_JITTER`].
    fn draw(&mut self) -> Dur {
        Dur::from_nanos(self.rng.next_u64() % (self.max_ns + 1))
    }

    /// Takes what the inner endpoint queued from `start` on and holds it for one delay.
    fn hold(&mut self, start: usize, cx: &mut FlowCtx) {
        if cx.out.len() == start {
            return;
        }
        let at = (cx.now + self.draw()).max(self.last_release);
        self.last_release = at;
        let was_empty = self.held.is_empty();
        self.held.extend(cx.out.drain(start..).map(|o| (at, o)));
        if was_empty {
            cx.set_timer(self.kind, at);
        }
    }

    /// Our timer fired: send what is due, re-arm for the rest.
    fn release(&mut self, cx: &mut FlowCtx) {
        while let Some((at, _)) = self.held.front() {
            if *at > cx.now {
                cx.set_timer(self.kind, *at);
                return;
            }
            let (_, o) = self.held.pop_front().expect("front exists");
            cx.send(o);
        }
    }

    /// Packets held now (for tests).
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

impl Endpoint for Jittered {
    fn service(&self) -> Service {
        self.inner.service()
    }
    fn max_datagram_payload(&self) -> u32 {
        self.inner.max_datagram_payload()
    }
    fn send_datagram(&mut self, d: Datagram, cx: &mut FlowCtx) {
        let start = cx.out.len();
        self.inner.send_datagram(d, cx);
        self.hold(start, cx);
    }
    fn write(&mut self, bytes: u64, cx: &mut FlowCtx) {
        let start = cx.out.len();
        self.inner.write(bytes, cx);
        self.hold(start, cx);
    }
    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let start = cx.out.len();
        self.inner.on_packet(pkt, cx);
        self.hold(start, cx);
    }
    fn timer_kinds(&self) -> u8 {
        self.kind.0 + 1
    }
    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        if kind == self.kind {
            return self.release(cx);
        }
        let start = cx.out.len();
        self.inner.on_timer(kind, cx);
        self.hold(start, cx);
    }
    fn delivered_bytes(&self) -> Option<u64> {
        self.inner.delivered_bytes()
    }
    fn reorder_held_bytes(&self) -> u64 {
        self.inner.reorder_held_bytes()
    }
    fn summary(&self) -> Vec<(&'static str, f64)> {
        self.inner.summary()
    }
    fn path_summary(&self, k: usize) -> Vec<(&'static str, f64)> {
        self.inner.path_summary(k)
    }
    fn info(&self) -> Option<SocketInfo> {
        self.inner.info()
    }
}

/// Wraps both ends of a flow in [`Jittered`] when `max` is above zero, each with its own stream
/// (`flow:NAME:jitter:src`, `flow:NAME:jitter:dst` under the scenario seed).
pub fn wrap(
    ends: (Box<dyn Endpoint>, Box<dyn Endpoint>),
    max: Dur,
    seed: u64,
    flow: &str,
) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    if max == Dur::ZERO {
        return ends;
    }
    let (a, b) = ends;
    let stream = |end: &str| SimRng::stream(seed, &format!("flow:{flow}:jitter:{end}"));
    (Box::new(Jittered::new(a, max, stream("src"))), Box::new(Jittered::new(b, max, stream("dst"))))
}
