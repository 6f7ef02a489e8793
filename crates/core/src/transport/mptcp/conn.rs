//! The MPTCP connection: one [`MptcpSocket`] at each end, each driving one full-duplex
//! [`TcpSocket`] per path, so that data flows both ways on the one connection (RFC 8684 §2: each
//! end sends and receives at the data level).
//!
//! Opening: the active end (the flow's source) opens subflow 0 with MP_CAPABLE on its first
//! write (RFC 8684 §3.1); once it is established the active end opens every other path with
//! MP_JOIN (§3.2: full mesh over the declared paths). The passive end answers (SYN-ACK with its
//! key, or with its HMAC for a join) and sends on a subflow once that subflow is established
//! (its TCP sending half opens on the handshake's final ACK, as in [`TcpSocket`]).
//!
//! Sending (each end, for its own data): the application's bytes take data sequence numbers
//! (DSN) 0, 1, … in the end's own DSN space; the connection hands them out one chunk (≤ one
//! MSS) at a time: the end's scheduler ([`super::sched`]) picks the subflow(s) whose congestion
//! window has room, the chunk is appended to that subflow's byte stream, and the mapping (DSN,
//! subflow sequence number, length) rides in the DSS option of every segment that carries it
//! (§3.3.1). A chunk is never queued in a subflow without window space, so data is not stranded
//! behind a slow path. DATA_ACKs from the peer (§3.3.2) advance `data_una`; the send window is
//! `data_una + rcv_buf` (§3.3.4, connection-level).
//!
//! Reinjection (§3.3.6): when a subflow's retransmission timer fires, the data it holds that
//! is not DATA_ACKed is queued to be sent again on the other subflows, ahead of new data; the
//! subflow takes no new data while in timeout recovery. Opportunistic retransmission and
//! penalisation (Raiciu et al., NSDI 2012, §4.2): when the connection window blocks new data,
//! the chunk at `data_una` is sent again on a subflow with room and a smaller SRTT than the
//! subflow that holds it, and that slower subflow has its cwnd halved, at most once per its
//! SRTT and only outside loss recovery (the out-of-tree Linux kernel's
//! `mptcp_rcv_buf_optimization`).
//!
//! Coupled congestion control: with `lia`, `olia` or `balia` the subflows' sending halves leave
//! their congestion-avoidance increase to the connection, which applies
//! [`CoupledIncrease::adjust`] over a view of every subflow after each ACK that arrived while
//! the subflow's window was the limit (Linux `tcp_is_cwnd_limited`), counting bytes (RFC 6356
//! §3) or one MSS per ACK (Linux, `coupled_counting = "acks"`); slow start and the decrease stay
//! each subflow's own (RFC 6356 §3), except that a coupled decrease (BALIA's) scales the
//! `ssthresh` the subflow set on a loss. Each end couples its own sending direction's windows.
//!
//! Receiving (each end, for the peer's data): each subflow's receiving half acknowledges and
//! SACKs its own sequence space. Bytes a subflow has received in order are mapped back to DSNs
//! through the mappings its segments carried and enter the connection-level receive buffer,
//! which reorders across subflows, delivers in DSN order, and drops copies (reinjected or
//! redundant data) already received. Every segment after the handshake carries the DATA_ACK of
//! the peer's data (the next DSN expected): a data segment carries it beside the mapping of our
//! data (and, as in [`TcpSocket`], the subflow ACK); a pure ACK keeps one SACK block, the most
//! that fits beside timestamps and the DSS option in 40 option bytes (as Linux sends).
//!
//! Both directions use the same configuration: the scheduler, coupled increase, reinjection and
//! penalisation of the flow's `transport` table govern each end's sending, and `tcp.rcv_buf` is
//! each end's connection-level receive window. A connection whose data flows one way (every
//! bulk flow) sends exactly the packets the one-way model sent before this type existed
//! (`tests/mptcp_oneway.rs` checks the digests).
//!
//! Not modelled: a DATA_FIN and connection close; the passive end opening subflows (ADD_ADDR,
//! §3.4: only the active end joins paths); a subflow ACK that is due now is sent as its own
//! segment even if data follows in the same instant (as [`TcpSocket`]).

use super::coupled::{CoupledIncrease, SubflowState, SubflowsView};
use super::sched::{SchedView, Scheduler};
use super::MptcpConfig;
use crate::engine::{SimRng, TimerKind};
use crate::packet::{tcp_flags, DssMap, MptcpOption, PacketData, L4};
use crate::time::SimTime;
use crate::trace::probe::{ProbeEvent, ProbeKind};
use crate::transport::tcp::rcvbuf::{RcvBuf, RcvRtt};
use crate::transport::tcp::sack::RangeSet;
use crate::transport::tcp::socket::{rev_name, TcpSocket};
use crate::transport::tcp::{mss_option, ts_now, window_shift, TcpSender};
use crate::transport::{notice_mask, Endpoint, EndpointSetup, FlowCtx, Service, TransportEvent};
use std::collections::{BTreeMap, VecDeque};

/// Timer kinds per subflow, as [`TcpSocket`] numbers them: RTO, delayed ACK (the receiving
/// half's), RACK reorder, TLP.
const KINDS: u8 = 4;

/// A 64-bit key of the connection (MP_CAPABLE §3.1), drawn from the scenario seed.
fn key(s: &EndpointSetup, end: &str) -> u64 {
    let mut r = SimRng::stream(s.seed, &format!("flow:{}:mptcp:{end}", s.flow_name));
    (r.uniform() * (1u64 << 53) as f64) as u64
}

/// What one call into a subflow does.
enum Op<'p> {
    Write(u64),
    Packet(&'p PacketData),
    Timer(TimerKind),
}

/// Per-subflow counters of one end's sending direction, for the `subflows` table.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubflowCounters {
    /// Application bytes scheduled on the subflow (new data, reinjections and opportunistic
    /// retransmissions), bytes.
    pub scheduled_bytes: u64,
    /// Of those, bytes sent again after another subflow's timeout or opportunistically.
    pub reinjected_bytes: u64,
    /// Times the subflow's cwnd was halved by penalisation.
    pub penalisations: u64,
}

/// The connection's bookkeeping of one subflow's sending half.
#[derive(Clone, Debug, Default)]
struct SndSub {
    opened: bool,
    established: bool,
    /// Subflow sequence number of the next byte appended (the subflow's write end).
    ssn_end: u64,
    /// Mappings not yet acknowledged on the subflow, by subflow sequence number.
    maps: VecDeque<DssMap>,
    /// The subflow's RTO and fast-retransmit counts last seen (a change is a loss event).
    rtos: u64,
    losses: u64,
    /// OLIA's inter-loss bytes: between the last two losses, and since the last one.
    l1: u64,
    l2: u64,
    acked: u64,
    last_penalised: Option<SimTime>,
    c: SubflowCounters,
    /// (cwnd, ssthresh) last reported to the `subflow` probe.
    probed: (u64, u64),
    /// cwnd at the end of the last call into the subflow (its window before a loss).
    last_cwnd: u64,
}

/// The connection's bookkeeping of one subflow's receiving half.
#[derive(Clone, Debug, Default)]
struct RcvSub {
    /// Mappings the subflow's segments carried, by subflow sequence number.
    maps: BTreeMap<u64, DssMap>,
    /// Subflow sequence number up to which in-order bytes went to the connection.
    consumed: u64,
    /// The subflow's receiver RTT estimate (`rcv_rtt_est`), for the connection's autotuning.
    rtt: RcvRtt,
}

/// One end of an MPTCP connection. See the module docs.
#[derive(Debug)]
pub struct MptcpSocket {
    /// Whether this end opened the connection (the flow's source).
    active: bool,
    subs: Vec<TcpSocket>,
    keys: [u64; 2],
    // ---- Our data (the sending direction). ----
    st: Vec<SndSub>,
    sched: Box<dyn Scheduler>,
    coupled: Option<Box<dyn CoupledIncrease>>,
    /// The coupled increase counts ACKs (one MSS each) rather than bytes (Linux).
    per_ack: bool,
    reinject: bool,
    penalise: bool,
    mss: u64,
    conn_wnd: u64,
    /// End (exclusive) of the application's bytes, the next DSN to schedule, the DATA_ACK.
    write_end: u64,
    dsn_next: u64,
    data_una: u64,
    /// DSN ranges to send again and the subflows not to use for them (bit mask).
    reinject_q: VecDeque<(u64, u64, u8)>,
    reinjected: RangeSet,
    /// `data_una` when the last opportunistic retransmission was made.
    opportunistic_at: Option<u64>,
    // ---- The peer's data (the receiving direction). ----
    rst: Vec<RcvSub>,
    /// Next DSN expected (our DATA_ACK) and the data held above it.
    data_rcv_nxt: u64,
    ooo: RangeSet,
    /// Bytes that reached the connection level more than once (reinjected or redundant copies).
    dup_bytes: u64,
    /// Bytes held in `ooo`.
    ooo_bytes: u64,
    /// The connection-level receive buffer under autotuning (`tcp.rcv_autotune`): its window
    /// state over DSN + 1 (the subflows' segment size, timestamps on the subflows). `None`:
    /// the window is `conn_wnd` throughout.
    tune: Option<Box<RcvBuf>>,
    timestamps: bool,
    /// Data segments dropped at a subflow because their data lay beyond the connection-level
    /// window offered (the buffer was full).
    rcvbuf_drops: u64,
    // ---- The peer's window over our data (with autotuning). ----
    /// The right edge of the connection-level window the peer offered, DSN (`wnd_end`).
    wnd_end: u64,
}

impl MptcpSocket {
    /// The end at the flow's source, which opens the connection on its first write.
    pub fn active(cfg: &MptcpConfig, s: &EndpointSetup) -> Self {
        Self::new(cfg, s, true)
    }

    /// The end at the flow's destination, which answers the peer's subflows.
    pub fn passive(cfg: &MptcpConfig, s: &EndpointSetup) -> Self {
        Self::new(cfg, s, false)
    }

    fn new(cfg: &MptcpConfig, s: &EndpointSetup, active: bool) -> Self {
        let tcp = cfg.subflow_tcp(s.mtu_bytes);
        let n = s.paths.max(1) as usize;
        let subs: Vec<TcpSocket> = (0..n)
            .map(|_| {
                let mut t = if active { TcpSocket::active(&tcp, s) } else { TcpSocket::passive(&tcp, s) };
                if cfg.is_coupled() {
                    t.sender_mut().set_coupled_ca();
                }
                t
            })
            .collect();
        let mss = subs[0].sender().mss();
        let tune = cfg.rcv_autotune().then(|| {
            let max = cfg.tcp.rcv_buf_bytes();
            let advmss = mss_option(mss, tcp.option_bytes()) as u64;
            Box::new(RcvBuf::new(cfg.tcp.rcv_buf_init_bytes(mss), max, window_shift(max), advmss, mss))
        });
        MptcpSocket {
            active,
            subs,
            keys: [key(s, "a"), key(s, "b")],
            st: vec![SndSub { ssn_end: 1, ..Default::default() }; n],
            sched: cfg.scheduler.build(),
            coupled: cfg.is_coupled().then(|| cfg.coupled.build()),
            per_ack: cfg.coupled_counting == super::CoupledCounting::Acks,
            reinject: cfg.reinject,
            penalise: cfg.penalise,
            mss,
            conn_wnd: tcp.rcv_buf_bytes(),
            write_end: 0,
            dsn_next: 0,
            data_una: 0,
            reinject_q: VecDeque::new(),
            reinjected: RangeSet::default(),
            opportunistic_at: None,
            rst: vec![RcvSub { consumed: 1, ..Default::default() }; n],
            data_rcv_nxt: 0,
            ooo: RangeSet::default(),
            dup_bytes: 0,
            ooo_bytes: 0,
            wnd_end: tune.as_deref().map_or(0, |t| t.rcv_wnd()),
            tune,
            timestamps: tcp.timestamps,
            rcvbuf_drops: 0,
        }
    }

    /// The subflows' TCP sockets, by path.
    pub fn subflows(&self) -> &[TcpSocket] {
        &self.subs
    }
    /// Per-subflow counters of our sending direction, by path.
    pub fn counters(&self) -> Vec<SubflowCounters> {
        self.st.iter().map(|s| s.c).collect()
    }
    /// The DATA_ACK of our data: our application's bytes acknowledged by the peer.
    pub fn data_acked(&self) -> u64 {
        self.data_una
    }
    /// Bytes our application has written.
    pub fn data_written(&self) -> u64 {
        self.write_end
    }
    /// The peer's application bytes delivered to us in order.
    pub fn data_delivered(&self) -> u64 {
        self.data_rcv_nxt
    }
    /// Bytes of the peer's data received more than once at the connection level (and dropped).
    pub fn duplicate_bytes(&self) -> u64 {
        self.dup_bytes
    }
    /// The connection-level receive buffer's autotuning state (`tcp.rcv_autotune`).
    pub fn autotune(&self) -> Option<&RcvBuf> {
        self.tune.as_deref()
    }
    /// The connection-level receive buffer now, bytes (fixed without autotuning).
    pub fn rcv_buf(&self) -> u64 {
        self.tune.as_deref().map_or(self.conn_wnd, |t| t.rcvbuf())
    }
    /// Data segments of the peer dropped because the connection-level buffer had no room.
    pub fn rcvbuf_drops(&self) -> u64 {
        self.rcvbuf_drops
    }
    /// DSN ranges of the peer's data held out of order (the connection-level receive buffer).
    pub fn ooo_ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ooo.iter()
    }

    fn snd(&self, i: usize) -> &TcpSender {
        self.subs[i].sender()
    }

    /// Runs `op` on subflow `i` with its own timer kinds, hands the peer's new in-order bytes
    /// to the connection, then stamps what the subflow sent with the path and the MPTCP option;
    /// the subflow's notices are dropped (the connection reports its own).
    fn run(&mut self, i: usize, op: Op, cx: &mut FlowCtx) {
        let (start, notes, base) = (cx.out.len(), cx.notices.len(), cx.timer_base);
        cx.timer_base = base + i as u8 * KINDS;
        let sub = &mut self.subs[i];
        match op {
            Op::Write(b) => sub.write(b, cx),
            Op::Packet(p) => sub.on_packet(p, cx),
            Op::Timer(k) => sub.on_timer(k, cx),
        }
        cx.timer_base = base;
        cx.notices.truncate(notes);
        self.consume(i, cx);
        self.stamp(i, start, cx);
    }

    /// The MPTCP option of each segment subflow `i` just queued (from `start`).
    fn stamp(&mut self, i: usize, start: usize, cx: &mut FlowCtx) {
        // A pure ACK of the active end before the peer sent data on the subflow is the
        // handshake's third ACK (the receiving half has acknowledged nothing yet).
        let handshake_ack = self.active && !self.subs[i].receiver().got_data();
        let st = &self.st[i];
        for o in &mut cx.out[start..] {
            o.path = i as u8;
            let L4::Tcp(h) = &mut o.l4 else { continue };
            let opt = if h.flags & tcp_flags::SYN != 0 {
                match (self.active, i) {
                    (true, 0) => MptcpOption::Capable { keys: [None, None] },
                    (true, _) => MptcpOption::Join {
                        stage: 0,
                        addr_id: i as u8,
                        token: self.keys[1] as u32,
                        nonce: i as u32,
                        hmac: 0,
                    },
                    (false, 0) => MptcpOption::Capable { keys: [Some(self.keys[1]), None] },
                    (false, _) => MptcpOption::Join {
                        stage: 1,
                        addr_id: i as u8,
                        token: 0,
                        nonce: i as u32,
                        hmac: self.keys[1] ^ i as u64,
                    },
                }
            } else if h.payload == 0 && handshake_ack {
                // The handshake's third ACK (§3.1: both keys; §3.2: the sender's HMAC).
                if i == 0 {
                    MptcpOption::Capable { keys: [Some(self.keys[0]), Some(self.keys[1])] }
                } else {
                    MptcpOption::Join { stage: 2, addr_id: i as u8, token: 0, nonce: 0, hmac: self.keys[0] ^ i as u64 }
                }
            } else if h.payload == 0 {
                if h.nsack > 1 {
                    // 40 option bytes: timestamps (12), DSS with DATA_ACK (12), one SACK block (12).
                    let old = (2 + 8 * h.nsack as u32).div_ceil(4) * 4;
                    h.nsack = 1;
                    o.size_bytes -= old - 12;
                }
                MptcpOption::Dss { data_ack: Some(self.data_rcv_nxt), maps: vec![] }
            } else {
                let (s, e) = (h.seq, h.seq + h.payload as u64);
                let maps: Vec<DssMap> = st.maps.iter().filter(|m| m.ssn < e && m.ssn + m.len > s).copied().collect();
                assert!(
                    maps.first().is_some_and(|m| m.ssn <= s),
                    "{}: flow {} end {} subflow {i}: segment {s}..{e} has no DSS mapping",
                    cx.now,
                    cx.flow,
                    cx.end()
                );
                MptcpOption::Dss { data_ack: Some(self.data_rcv_nxt), maps }
            };
            o.size_bytes += opt.padded_len();
            h.mptcp = Some(Box::new(opt));
            if let Some(t) = self.tune.as_deref_mut() {
                // RFC 8684 §3.3.4, Linux `mptcp_space` in `__tcp_select_window`: every subflow
                // offers the connection-level window, relative to the DATA_ACK; a SYN its
                // initial window (`tcp_select_initial_window`).
                h.wnd = if h.flags & tcp_flags::SYN != 0 {
                    t.rcv_wnd() as u32
                } else {
                    t.select(self.data_rcv_nxt + 1, self.ooo_bytes).0
                };
            }
        }
    }

    // ---- Sending: scheduler, reinjection, penalisation, coupled increase. ----

    /// Space of subflow `i` for new chunks, bytes: what its congestion window and its send
    /// window would let it send now, less what it holds unsent.
    fn room(&self, i: usize) -> u64 {
        let s = self.snd(i);
        let wnd = s.snd_wnd().saturating_sub(s.unacked_bytes());
        self.cwnd_room(i).min(wnd.saturating_sub(s.unsent_bytes()))
    }

    /// Congestion-window space of subflow `i`, bytes.
    fn cwnd_room(&self, i: usize) -> u64 {
        let s = self.snd(i);
        s.cwnd().saturating_sub(s.in_flight() + s.unsent_bytes())
    }

    fn views(&self, len: u64, exclude: u8) -> Vec<SchedView> {
        (0..self.subs.len())
            .map(|i| {
                let s = self.snd(i);
                // A subflow in timeout recovery takes no new data; one whose only timeout was its
                // SYN's (RFC 6298 §5.7: consecutive_rtos counts it until an ACK of data) holds
                // none and would otherwise never be used (a join whose SYN was lost).
                let timed_out = s.consecutive_rtos() > 0 && !self.st[i].maps.is_empty();
                let usable = self.st[i].established && !timed_out && exclude & (1 << i) == 0;
                SchedView::new(usable, self.room(i) >= len, s.srtt())
            })
            .collect()
    }

    /// Appends DSN `[dsn, dsn + len)` to subflow `i`'s stream and lets it send.
    fn assign(&mut self, i: usize, dsn: u64, len: u64, again: bool, cx: &mut FlowCtx) {
        let st = &mut self.st[i];
        st.maps.push_back(DssMap { dsn, ssn: st.ssn_end, len });
        st.ssn_end += len;
        st.c.scheduled_bytes += len;
        if again {
            st.c.reinjected_bytes += len;
        }
        self.run(i, Op::Write(len), cx);
    }

    /// The scheduling loop: reinjections first, then new data within the connection window.
    /// A subflow left without room while data waits is window-limited (its controller grows
    /// the window only then).
    ///
    /// The scheduler hands out one segment at a time; each subflow keeps its buffer open
    /// through the pass, so that what it is given in one pass leaves in GSO-sized buffers (with
    /// PSH on each buffer's last segment), as Linux's `mptcp_push_pending` appends to the
    /// subflow's tail buffer and then pushes.
    fn push(&mut self, cx: &mut FlowCtx) {
        for s in &mut self.subs {
            s.sender_mut().begin_batch();
        }
        self.schedule(cx);
        // Closing a buffer only marks a segment already queued (subflows do not pace): no
        // subflow call is needed.
        for s in &mut self.subs {
            s.sender_mut().end_batch(cx);
        }
        let waiting = !self.reinject_q.is_empty() || self.dsn_next < self.write_end;
        if waiting {
            for i in 0..self.subs.len() {
                if self.st[i].established && self.cwnd_room(i) < self.mss {
                    self.subs[i].sender_mut().mark_cwnd_limited();
                }
            }
        }
    }

    fn schedule(&mut self, cx: &mut FlowCtx) {
        loop {
            while let Some(&(a, b, _)) = self.reinject_q.front() {
                if b <= self.data_una {
                    self.reinject_q.pop_front();
                } else {
                    if a < self.data_una {
                        self.reinject_q[0].0 = self.data_una;
                    }
                    break;
                }
            }
            let (dsn, avail, exclude, again) = if let Some(&(a, b, x)) = self.reinject_q.front() {
                (a, b - a, x, true)
            } else {
                // RFC 8684 §3.3.4: the connection-level window, from the DATA_ACK.
                let edge = match self.tune {
                    Some(_) => self.wnd_end.max(self.data_una),
                    None => self.data_una + self.conn_wnd,
                };
                let limit = self.write_end.min(edge);
                if self.dsn_next >= limit {
                    if self.dsn_next < self.write_end && self.penalise {
                        self.opportunistic(cx);
                    }
                    return;
                }
                (self.dsn_next, limit - self.dsn_next, 0, false)
            };
            let len = avail.min(self.mss);
            let mask = self.sched.pick(&self.views(len, exclude));
            if mask == 0 {
                return;
            }
            for i in 0..self.subs.len() {
                if mask & (1 << i) != 0 {
                    self.assign(i, dsn, len, again, cx);
                }
            }
            if again {
                self.reinject_q[0].0 += len;
                if self.reinject_q[0].0 >= self.reinject_q[0].1 {
                    self.reinject_q.pop_front();
                }
            } else {
                self.dsn_next += len;
            }
        }
    }

    /// The subflow whose unacknowledged data holds DSN `x`, if any.
    fn holder(&self, x: u64) -> Option<usize> {
        (0..self.subs.len()).find(|&j| {
            let una = self.snd(j).snd_una();
            self.st[j].maps.iter().any(|m| m.dsn <= x && x < m.dsn + m.len && m.ssn + m.len > una)
        })
    }

    /// Raiciu et al. §4.2: the connection window is full; resend the chunk at `data_una` on
    /// another subflow and penalise the one that holds it.
    fn opportunistic(&mut self, cx: &mut FlowCtx) {
        let una = self.data_una;
        if self.opportunistic_at == Some(una) {
            return;
        }
        let Some(j) = self.holder(una) else { return };
        let len = self.mss.min(self.dsn_next - una);
        let mask = self.sched.pick(&self.views(len, 1 << j));
        if mask == 0 {
            return;
        }
        let i = mask.trailing_zeros() as usize;
        // Only a faster subflow takes the chunk over, and penalises the slower holder (the
        // out-of-tree kernel compares SRTTs): when the holder is the fast path, the window is
        // simply full.
        let (si, sj) = (self.snd(i).srtt(), self.snd(j).srtt());
        if !matches!((si, sj), (Some(a), Some(b)) if a < b) {
            return;
        }
        self.opportunistic_at = Some(una);
        self.assign(i, una, len, true, cx);
        let srtt = sj.unwrap_or_default();
        let open = !self.snd(j).in_recovery() && self.snd(j).consecutive_rtos() == 0;
        let st = &mut self.st[j];
        if open && st.last_penalised.is_none_or(|t| cx.now.since(t) >= srtt) {
            st.last_penalised = Some(cx.now);
            st.c.penalisations += 1;
            let tcb = self.subs[j].sender_mut().tcb_mut();
            tcb.cwnd = (tcb.cwnd / 2).max(tcb.mss);
            tcb.ssthresh = tcb.cwnd.max(2 * tcb.mss);
        }
    }

    /// After subflow `i` processed something: its handshake, loss events, coupled increase,
    /// reinjection after a timeout, and mappings it no longer needs.
    fn after(&mut self, i: usize, cx: &mut FlowCtx) {
        if !self.st[i].established && self.snd(i).is_established() {
            self.st[i].established = true;
            if i == 0 && self.active {
                // §3.2: the other paths join once the first subflow is up (full mesh).
                for k in 1..self.subs.len() {
                    self.st[k].opened = true;
                    self.run(k, Op::Write(0), cx);
                }
            }
        }
        let s = self.snd(i);
        let (rtos, losses, acked) = (s.rto_count(), s.rto_count() + s.fast_retransmit_count(), s.acked_bytes());
        let st = &mut self.st[i];
        st.l2 += acked - st.acked;
        st.acked = acked;
        let lost = losses != st.losses;
        if lost {
            st.losses = losses;
            st.l1 = st.l2;
            st.l2 = 0;
        }
        let timed_out = rtos != st.rtos;
        st.rtos = rtos;
        let (ca_bytes, ca_acks) = self.subs[i].sender_mut().take_ca_acked();
        let ca = if self.per_ack { ca_acks * self.mss } else { ca_bytes };
        if let Some(c) = self.coupled.as_deref().filter(|_| ca > 0 || lost) {
            let mut all: Vec<SubflowState> = (0..self.subs.len())
                .map(|k| {
                    let s = self.snd(k);
                    SubflowState::from_tcb(s.tcb(), s.in_flight()).with_loss_interval(self.st[k].l1.max(self.st[k].l2))
                })
                .collect();
            if ca > 0 {
                let d = c.adjust(i, ca, &SubflowsView::new(&all));
                let tcb = self.subs[i].sender_mut().tcb_mut();
                tcb.cwnd = (tcb.cwnd as i64 + d).max(tcb.mss as i64) as u64;
            }
            if lost {
                // The subflow's TCP has set its ssthresh to half its flight (RFC 5681 §3.2
                // eq. (4)); a coupled decrease (BALIA) keeps another share of the window it had.
                all[i].cwnd = self.st[i].last_cwnd.max(all[i].mss);
                let keep = c.keep_after_loss(i, &SubflowsView::new(&all));
                if keep != 0.5 {
                    let tcb = self.subs[i].sender_mut().tcb_mut();
                    // Recovery (PRR, or NewReno's deflation) then brings cwnd down to it.
                    tcb.ssthresh = ((tcb.ssthresh as f64 * keep / 0.5) as u64).max(2 * tcb.mss);
                }
            }
        }
        if timed_out && self.reinject {
            self.reinject_from(i);
        }
        // The probe follows the end's sending direction once it has data (an end that only
        // receives reports nothing, as a one-way connection's destination never did).
        if self.write_end > 0 && cx.probing(ProbeKind::Subflow) {
            for k in 0..self.subs.len() {
                let s = self.subs[k].sender();
                let now = (s.cwnd(), s.ssthresh());
                if self.st[k].established && now != self.st[k].probed {
                    self.st[k].probed = now;
                    cx.probe(ProbeEvent::Subflow {
                        flow: cx.flow,
                        end: cx.end(),
                        path: k as u8,
                        cwnd_bytes: now.0,
                        ssthresh_bytes: now.1,
                        srtt_ns: s.srtt().map_or(0, |d| d.as_nanos()),
                        in_flight_bytes: s.in_flight(),
                    });
                }
            }
        }
        self.st[i].last_cwnd = self.snd(i).cwnd();
        let una = self.snd(i).snd_una();
        let st = &mut self.st[i];
        while st.maps.front().is_some_and(|m| m.ssn + m.len <= una) {
            st.maps.pop_front();
        }
    }

    /// RFC 8684 §3.3.6: subflow `i` timed out; what it holds beyond the DATA_ACK goes again
    /// on the others (once per byte).
    fn reinject_from(&mut self, i: usize) {
        let una = self.snd(i).snd_una();
        let ranges: Vec<(u64, u64)> = self.st[i]
            .maps
            .iter()
            .filter(|m| m.ssn + m.len > una)
            .map(|m| (m.dsn.max(self.data_una), m.dsn + m.len))
            .filter(|(a, b)| a < b)
            .collect();
        for (a, b) in ranges {
            let mut fresh = vec![];
            self.reinjected.insert(a, b, |x, y| fresh.push((x, y)));
            self.reinject_q.extend(fresh.into_iter().map(|(x, y)| (x, y, 1 << i)));
        }
    }

    fn on_data_ack(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let Some(MptcpOption::Dss { data_ack: Some(a), .. }) = pkt.tcp().and_then(|h| h.mptcp.as_deref()) else {
            return;
        };
        if self.tune.is_some() && *a <= self.dsn_next.max(self.write_end) {
            // Linux `ack_update_msk`: the window's right edge only moves right.
            let wnd = pkt.tcp().map_or(0, |h| h.wnd as u64);
            self.wnd_end = self.wnd_end.max(*a + wnd);
        }
        if *a > self.data_una && *a <= self.dsn_next.max(self.write_end) {
            self.data_una = *a;
            self.reinjected.remove_below(self.data_una, |_, _| {});
            cx.notify(TransportEvent::Acked { total_bytes: self.data_una });
        }
    }

    // ---- Receiving: the connection-level receive buffer. ----

    /// Whether the connection-level buffer has room for a data segment: the DSN its bytes map
    /// to ends within the window offered (upstream `mptcp_data_queue_ofo`: data beyond
    /// `rcv_wnd_sent` is dropped, `MPTCP_MIB_NODSSWINDOW`). Out-of-order data is held only
    /// inside that window, so the window bounds the out-of-order queue. A sender that keeps to
    /// the window never meets this; Linux drops such data after the subflow acknowledged it
    /// and recovers it with the connection-level retransmission timer, which is not modelled,
    /// so here it is dropped before the subflow takes it (the subflow sends it again).
    fn admits(&self, h: &crate::packet::TcpHdr) -> bool {
        let (s, e) = (h.seq, h.seq + h.payload as u64);
        let Some(MptcpOption::Dss { maps, .. }) = h.mptcp.as_deref() else { return true };
        let end = maps
            .iter()
            .filter(|m| m.ssn < e && m.ssn + m.len > s)
            .map(|m| m.dsn + (e.min(m.ssn + m.len) - m.ssn))
            .max()
            .unwrap_or(0);
        let edge = match self.tune.as_deref() {
            Some(t) => t.right_edge() - 1,
            None => self.data_rcv_nxt + self.conn_wnd,
        };
        end <= edge.max(self.data_rcv_nxt)
    }

    /// Autotuning after a data segment of `len` bytes on subflow `i` (`before`: the DATA_ACK
    /// before it): the window-based receiver RTT without timestamps, `tcp_grow_window`, and
    /// Dynamic Right-Sizing over the slowest subflow's receiver RTT (`mptcp_rcv_space_adjust`
    /// upstream, `mptcp_check_rtt` in the out-of-tree kernel: "we take the max delay across all
    /// flows, in order to take into account meta-reordering buffers"). The application reads
    /// in-order data at once.
    fn tune_after_data(&mut self, i: usize, len: u64, before: u64, now: SimTime) {
        let Some(t) = self.tune.as_deref_mut() else { return };
        if !self.timestamps {
            let nxt = self.subs[i].receiver().rcv_nxt();
            self.rst[i].rtt.measure(nxt, t.rcv_wnd(), now);
        }
        t.measure_rcv_mss(len);
        t.grow(len, self.ooo_bytes);
        t.set_rtt_us8(self.rst.iter().map(|r| r.rtt.us8()).max().unwrap_or(0));
        let span = self.ooo.span_from(self.data_rcv_nxt);
        if self.data_rcv_nxt > before {
            t.space_adjust(self.data_rcv_nxt + 1, span, now);
        } else if span > 0 {
            t.ofo_grow(span);
        }
    }

    /// DSN `[a, b)` of the peer's data reached the connection level.
    fn deliver(&mut self, a: u64, b: u64) {
        let nxt = self.data_rcv_nxt;
        if b <= nxt {
            self.dup_bytes += b - a;
            return;
        }
        if a > nxt {
            let new = self.ooo.insert(a, b, |_, _| {});
            self.dup_bytes += (b - a) - new;
            self.ooo_bytes += new;
            return;
        }
        self.dup_bytes += nxt - a;
        self.data_rcv_nxt = b;
        while let Some((s, e)) = self.ooo.first() {
            if s > self.data_rcv_nxt {
                break;
            }
            self.dup_bytes += self.data_rcv_nxt.min(e) - s;
            self.data_rcv_nxt = self.data_rcv_nxt.max(e);
            let mut removed = 0;
            self.ooo.remove_below(self.data_rcv_nxt, |x, y| removed += y - x);
            self.ooo_bytes -= removed;
        }
    }

    /// Hands subflow `p`'s new in-order bytes to the connection through their mappings.
    fn consume(&mut self, p: usize, cx: &FlowCtx) {
        let nxt = self.subs[p].receiver().rcv_nxt();
        while self.rst[p].consumed < nxt {
            let x = self.rst[p].consumed;
            let m = match self.rst[p].maps.range(..=x).next_back() {
                Some((_, m)) if m.ssn + m.len > x => *m,
                _ => panic!(
                    "{}: flow {} end {} subflow {p}: byte {x} arrived without a DSS mapping",
                    cx.now,
                    cx.flow,
                    cx.end()
                ),
            };
            let end = (m.ssn + m.len).min(nxt);
            let d = m.dsn + (x - m.ssn);
            self.deliver(d, d + (end - x));
            self.rst[p].consumed = end;
            if end == m.ssn + m.len {
                self.rst[p].maps.remove(&m.ssn);
            }
        }
    }

    /// Whether the peer's data has reached this end (its receiving direction is in use).
    fn received_any(&self) -> bool {
        self.subs.iter().any(|s| s.receiver().got_data())
    }

    /// Whether this end has sent data of its own.
    fn sent_any(&self) -> bool {
        self.st.iter().any(|s| s.c.scheduled_bytes > 0)
    }

    /// Counters of our sending direction, under the names a one-way source reported.
    fn send_summary(&self) -> Vec<(&'static str, f64)> {
        let sum = |f: &dyn Fn(&TcpSender) -> u64| self.subs.iter().map(|s| f(s.sender())).sum::<u64>() as f64;
        let srtt = self.subs.iter().filter_map(|s| s.sender().srtt()).min();
        vec![
            ("segments_sent", sum(&|s| s.summary_value("segments_sent"))),
            ("bytes_sent", sum(&|s| s.summary_value("bytes_sent"))),
            ("retransmitted_segments", sum(&|s| s.retransmitted_segments())),
            ("retransmitted_bytes", sum(&|s| s.summary_value("retransmitted_bytes"))),
            ("rto_count", sum(&|s| s.rto_count())),
            ("fast_retransmits", sum(&|s| s.fast_retransmit_count())),
            ("acked_bytes", self.data_una as f64),
            ("cwnd_bytes", sum(&|s| s.cwnd())),
            ("srtt_s", srtt.map_or(f64::NAN, |d| d.as_secs_f64())),
            ("reinjected_bytes", self.st.iter().map(|s| s.c.reinjected_bytes).sum::<u64>() as f64),
            ("penalisations", self.st.iter().map(|s| s.c.penalisations).sum::<u64>() as f64),
        ]
    }

    /// Counters of our receiving direction, under the names a one-way destination reported.
    fn recv_summary(&self) -> Vec<(&'static str, f64)> {
        let sum = |k: &str| {
            self.subs
                .iter()
                .map(|s| s.receiver().summary().into_iter().find(|x| x.0 == k).map_or(0.0, |x| x.1))
                .sum::<f64>()
        };
        vec![
            ("acks_sent", sum("acks_sent")),
            ("duplicate_segments", sum("duplicate_segments")),
            ("out_of_order_segments", sum("out_of_order_segments")),
            ("duplicate_data_bytes", self.dup_bytes as f64),
            ("rcvbuf_drop_pkts", self.rcvbuf_drops as f64),
            ("rcv_buf_bytes", self.rcv_buf() as f64),
        ]
    }

    /// Per-subflow counters of our sending direction.
    fn send_path_summary(&self, k: usize) -> Vec<(&'static str, f64)> {
        let (s, st) = (self.snd(k), &self.st[k]);
        vec![
            ("scheduled_bytes", st.c.scheduled_bytes as f64),
            ("reinjected_bytes", st.c.reinjected_bytes as f64),
            ("penalisations", st.c.penalisations as f64),
            ("acked_bytes", s.acked_bytes() as f64),
            ("retransmitted_segments", s.retransmitted_segments() as f64),
            ("rto_count", s.rto_count() as f64),
            ("fast_retransmits", s.fast_retransmit_count() as f64),
            ("cwnd_bytes", s.cwnd() as f64),
            ("srtt_s", s.srtt().map_or(f64::NAN, |d| d.as_secs_f64())),
            ("min_rtt_s", s.tcb().min_rtt.map_or(f64::NAN, |d| d.as_secs_f64())),
        ]
    }

    /// Per-subflow counters of our receiving direction: in-order bytes of the subflow handed to
    /// the connection (copies included).
    fn recv_path_summary(&self, k: usize) -> Vec<(&'static str, f64)> {
        vec![("subflow_in_order_bytes", self.rst[k].consumed.saturating_sub(1) as f64)]
    }

    /// The direction a one-way flow uses reports under its usual names (the source's sending,
    /// the destination's receiving); the other under `rev_` names, and only once data has flowed
    /// that way, so one-way flows have the columns they always had (as [`TcpSocket`]).
    fn by_direction(&self, send: Vec<(&'static str, f64)>, recv: Vec<(&'static str, f64)>) -> Vec<(&'static str, f64)> {
        let (mut main, other, used) =
            if self.active { (send, recv, self.received_any()) } else { (recv, send, self.sent_any()) };
        if used {
            main.extend(other.into_iter().map(|(k, x)| (rev_name(k), x)));
        }
        main
    }
}

impl Endpoint for MptcpSocket {
    fn service(&self) -> Service {
        Service::Stream
    }

    fn write(&mut self, bytes: u64, cx: &mut FlowCtx) {
        self.write_end += bytes;
        if self.active && !self.st[0].opened {
            self.st[0].opened = true;
            self.run(0, Op::Write(0), cx); // the SYN with MP_CAPABLE
        }
        self.push(cx);
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let i = pkt.path as usize;
        let Some(h) = pkt.tcp() else { return };
        if i >= self.subs.len() {
            return;
        }
        if let Some(MptcpOption::Dss { maps, .. }) = h.mptcp.as_deref() {
            for m in maps {
                self.rst[i].maps.entry(m.ssn).or_insert(*m);
            }
        }
        let before = self.data_rcv_nxt;
        self.on_data_ack(pkt, cx);
        let data = h.payload as u64 * u64::from(h.flags & tcp_flags::SYN == 0);
        if data > 0 && !self.admits(h) {
            // The connection-level buffer has no room for it: dropped at the subflow before
            // the subflow acknowledges it, so the subflow sends it again (see `admits`).
            self.rcvbuf_drops += 1;
            self.push(cx);
            return;
        }
        if let Some(t) = self.tune.as_deref_mut().filter(|_| data > 0) {
            // `tcp_init_transfer` once; the subflow's `tcp_rcv_rtt_measure_ts`.
            t.on_established(cx.now);
            if self.timestamps {
                self.rst[i].rtt.measure_ts(h.ts_ecr, ts_now(cx.now), data, self.mss);
            }
        }
        self.run(i, Op::Packet(pkt), cx);
        if data > 0 {
            self.tune_after_data(i, data, before, cx.now);
        }
        self.after(i, cx);
        self.push(cx);
        if self.data_rcv_nxt > before && cx.wants(notice_mask::DELIVERED) {
            cx.notify(TransportEvent::Delivered { total_bytes: self.data_rcv_nxt });
        }
    }

    fn timer_kinds(&self) -> u8 {
        KINDS * self.subs.len() as u8
    }

    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        let i = (kind.0 / KINDS) as usize;
        self.run(i, Op::Timer(TimerKind(kind.0 % KINDS)), cx);
        self.after(i, cx);
        self.push(cx);
    }

    fn delivered_bytes(&self) -> Option<u64> {
        Some(self.data_rcv_nxt)
    }

    fn reorder_held_bytes(&self) -> u64 {
        self.ooo.iter().map(|(a, b)| b - a).sum()
    }

    fn path_summary(&self, k: usize) -> Vec<(&'static str, f64)> {
        if k >= self.subs.len() {
            return Vec::new();
        }
        self.by_direction(self.send_path_summary(k), self.recv_path_summary(k))
    }

    fn summary(&self) -> Vec<(&'static str, f64)> {
        self.by_direction(self.send_summary(), self.recv_summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::pcap::tests::parse_tcp;
    use crate::{BuildOptions, Scenario};

    fn setup(paths: u8) -> EndpointSetup {
        EndpointSetup { flow_name: "t".into(), mtu_bytes: 1500, src_port: 1, dst_port: 2, seed: 1, paths }
    }

    /// The connection-level buffer reorders across subflows, delivers in DSN order, and counts
    /// every byte that arrives again (whole or in part) as a copy.
    #[test]
    fn receive_buffer_reorders_and_drops_copies() {
        let mut r = MptcpSocket::passive(&MptcpConfig::default(), &setup(2));
        r.deliver(1_000, 2_000); // from the slow subflow, ahead of the gap
        assert_eq!((r.data_delivered(), r.ooo_ranges().collect::<Vec<_>>()), (0, vec![(1_000, 2_000)]));
        r.deliver(1_500, 2_500); // half a copy
        assert_eq!(r.duplicate_bytes(), 500);
        r.deliver(0, 1_000); // fills the gap: everything up to 2 500 goes up in order
        assert_eq!((r.data_delivered(), r.ooo_ranges().count()), (2_500, 0));
        r.deliver(0, 2_000); // a reinjected copy of delivered data
        assert_eq!((r.data_delivered(), r.duplicate_bytes()), (2_500, 2_500));
        r.deliver(2_000, 3_000); // overlaps the in-order point
        assert_eq!((r.data_delivered(), r.duplicate_bytes()), (3_000, 3_000));
    }

    /// The linux profile's connection-level buffer: tcp_rmem[1] = 128 KiB to start, grown once
    /// per the *slowest* subflow's receiver RTT by Dynamic Right-Sizing (Linux 6.18's
    /// `tcp_rcvbuf_grow`). Hand-computed with the subflows' MSS 1420: the first window 46 × 1420
    /// = 65320, the first DRS estimate 10 × 1420 = 14200; the first full segment measures the
    /// scaling ratio 1420·256/2304 = 157.
    #[test]
    fn autotuned_buffer_grows_per_slowest_rtt() {
        use crate::time::Dur;
        let ms = |n: u64| SimTime::ZERO + Dur::from_millis(n);
        let mut r = MptcpSocket::passive(&MptcpConfig::default(), &setup(2));
        let t = r.autotune().expect("the linux profile autotunes the connection's buffer");
        assert_eq!((t.rcvbuf(), t.rcv_wnd()), (131_072, 65_320));
        r.tune.as_deref_mut().unwrap().on_established(SimTime::ZERO);
        // Receiver RTTs from timestamps: 10 ms on the fast subflow, 100 ms on the slow one.
        r.rst[0].rtt.measure_ts(1, 1 + 10_000, 1420, 1420);
        r.rst[1].rtt.measure_ts(1, 1 + 100_000, 1420, 1420);
        // 28640 B read by 50 ms: a fast subflow's RTT has passed, the slowest one's has not.
        r.deliver(0, 28_640);
        r.tune_after_data(0, 1420, 0, ms(50));
        assert_eq!(r.rcv_buf(), 131_072, "measured over the slowest subflow's RTT");
        assert_eq!(r.autotune().unwrap().scaling_ratio(), 157);
        // At 100 ms: copied 28640 > 14200: rcvwin = 2·28640 = 57280, plus
        // 2·⌊57280·(28640 − 14200)/14200⌋ = 2·58248 → 173776; the buffer 173776·256/157.
        r.tune_after_data(0, 1420, 0, ms(100));
        assert_eq!(r.rcv_buf(), 173_776 * 256 / 157);
        // One RTT later 57280 B more: rcvwin = 114560 + 2·114560 = 343680.
        r.deliver(28_640, 85_920);
        r.tune_after_data(0, 1420, 28_640, ms(200));
        assert_eq!(r.rcv_buf(), 343_680 * 256 / 157);
        // Without autotuning the buffer is fixed.
        let fixed = MptcpConfig {
            tcp: crate::transport::tcp::TcpConfig { rcv_autotune: Some(false), ..Default::default() },
            ..Default::default()
        };
        let f = MptcpSocket::passive(&fixed, &setup(2));
        assert!(f.autotune().is_none());
        assert_eq!(f.rcv_buf(), 4 << 20);
    }

    /// A slow subflow holds the first chunk: what the fast one delivers waits out of order and
    /// fills the buffer, the window's right edge stays where it was offered, data beyond it is
    /// refused (and counted), and the edge moves once the slow chunk arrives.
    #[test]
    fn out_of_order_data_is_bounded_by_the_window() {
        use crate::packet::TcpHdr;
        let mut r = MptcpSocket::passive(&MptcpConfig::default(), &setup(2));
        let seg = |dsn: u64| TcpHdr {
            seq: 1,
            payload: 1420,
            mptcp: Some(Box::new(MptcpOption::Dss { data_ack: None, maps: vec![DssMap { dsn, ssn: 1, len: 1420 }] })),
            ..TcpHdr::default()
        };
        fn window(r: &mut MptcpSocket) -> u64 {
            let (nxt, ooo) = (r.data_rcv_nxt, r.ooo_bytes);
            r.tune.as_deref_mut().unwrap().select(nxt + 1, ooo).0 as u64
        }
        // The first window offered: 65320 rounded up to the scale unit (1 KiB).
        assert_eq!(window(&mut r), 65_536);
        // The fast subflow delivers DSN 1420..62480 (43 segments) while 0..1420 is on the slow one.
        r.deliver(1_420, 62_480);
        assert_eq!(r.ooo_bytes, 61_060);
        // Free space 65536 − 61060 = 4476 is below half the buffer's window; the offer does not
        // shrink, so the right edge (DSN 65536) stays put.
        assert_eq!(window(&mut r), 65_536);
        assert!(r.admits(&seg(64_000)), "ends at 65420, inside the window");
        assert!(!r.admits(&seg(64_200)), "ends at 65620, beyond it");
        // The slow chunk arrives: everything goes up in order and the window opens again
        // (rcv_ssthresh 64104 rounded up to 1 KiB, from DSN 62480).
        r.deliver(0, 1_420);
        assert_eq!((r.data_delivered(), r.ooo_bytes), (62_480, 0));
        let w = window(&mut r);
        assert_eq!(w, 64_512);
        assert!(r.admits(&seg(64_200)));
    }

    /// A captured MPTCP connection: every segment's bytes are exactly its counted size with a
    /// well-formed options area (`parse_tcp`), and the MPTCP options are where RFC 8684 puts
    /// them with their lengths: MP_CAPABLE 4/12/20 on subflow 0's handshake, MP_JOIN 12/16/24 on
    /// subflow 1's, DSS with DATA_ACK and mapping (26) on data, DATA_ACK alone (12) on ACKs,
    /// and at most one SACK block beside it.
    #[test]
    fn pcap_carries_the_mptcp_options_counted_in_the_sizes() {
        let dir = std::env::temp_dir().join(format!("qoelab-mptcp-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let toml = r#"
            [sim]
            duration = "3s"
            [[links]]
            a = "A"
            b = "R1"
            rate = "10Mbps"
            delay = "5ms"
            a_addr = "10.1.0.1"
            queue = { kind = "fifo", limit = "20p" }
            [[links]]
            a = "R1"
            b = "B"
            rate = "1Gbps"
            delay = "1ms"
            b_addr = "10.2.0.1"
            [[links]]
            a = "A"
            b = "R2"
            rate = "5Mbps"
            delay = "5ms"
            a_addr = "10.1.1.1"
            queue = { kind = "fifo", limit = "20p" }
            [[links]]
            a = "R2"
            b = "B"
            rate = "1Gbps"
            delay = "1ms"
            b_addr = "10.2.1.1"
            [[flows]]
            name = "mp"
            src = "A"
            dst = "B"
            app = { kind = "bulk", bytes = "2MB" }
            transport = { kind = "mptcp" }
            subflows = [{ src_addr = "10.1.0.1", dst_addr = "10.2.0.1" }, { src_addr = "10.1.1.1", dst_addr = "10.2.1.1" }]
            [output]
            pcap = ["A->R1", "R1->A", "A->R2", "R2->A"]
        "#;
        let sc = Scenario::from_toml(toml).unwrap();
        let mut sim = sc.build(&BuildOptions { base_dir: None, pcap_dir: Some(&dir) }).unwrap();
        sim.run();
        assert_eq!(sim.flows[0].receiver().delivered_bytes(), Some(2_000_000));
        drop(sim);
        let mut mp_lens: Vec<(bool, bool, usize)> = vec![]; // (syn, ack flag, option length)
        let (mut data, mut acks) = (0, 0);
        for f in ["A_to_R1.pcap", "R1_to_A.pcap", "A_to_R2.pcap", "R2_to_A.pcap"] {
            let b = std::fs::read(dir.join(f)).unwrap();
            let mut i = 24;
            while i < b.len() {
                let n = u32::from_le_bytes(b[i + 8..i + 12].try_into().unwrap()) as usize;
                let pkt = &b[i + 16..i + 16 + n];
                i += 16 + n;
                let p = parse_tcp(pkt);
                let flags = pkt[20 + 13];
                let m = p.option(30).expect("every segment of the connection carries an MPTCP option");
                let len = m.len() + 2;
                let syn = flags & tcp_flags::SYN != 0;
                if syn || (p.payload == 0 && len > 12) {
                    mp_lens.push((syn, flags & tcp_flags::ACK != 0, len));
                    continue;
                }
                let subtype = m[0] >> 4;
                assert_eq!(subtype, 2, "DSS");
                if p.payload > 0 {
                    data += 1;
                    assert_eq!((len, m[1]), (26, 0x0f), "DATA_ACK and a 64-bit mapping");
                    // Value: subtype, flags, DATA_ACK (8), DSN (8), subflow seq (4), length (2).
                    let ssn = u32::from_be_bytes(m[18..22].try_into().unwrap());
                    let dlen = u16::from_be_bytes([m[22], m[23]]) as u32;
                    let seq = u32::from_be_bytes(pkt[24..28].try_into().unwrap());
                    assert!(ssn <= seq && seq < ssn + dlen, "the mapping holds the segment's first byte");
                } else {
                    acks += 1;
                    assert_eq!((len, m[1]), (12, 0x03), "DATA_ACK alone");
                    assert!(p.option(5).map_or(0, |v| v.len() / 8) <= 1, "one SACK block fits");
                }
                assert!(p.hdr_len <= 60, "40 option bytes at most");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        mp_lens.sort();
        // MP_CAPABLE: SYN 4, SYN-ACK 12, ACK 20; MP_JOIN: SYN 12, SYN-ACK 16, ACK 24.
        assert_eq!(
            mp_lens,
            [
                (false, true, 20),
                (false, true, 24),
                (true, false, 4),
                (true, false, 12),
                (true, true, 12),
                (true, true, 16)
            ]
        );
        assert!(data > 1_000 && acks > 100, "{data} data segments, {acks} ACKs");
    }
}
