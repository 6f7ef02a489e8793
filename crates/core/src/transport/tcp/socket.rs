//! A full-duplex TCP socket: one end of a connection that both sends and receives data.
//!
//! Reading list: RFC 9293 §3.5 (the three-way handshake), §3.10.7.3 (SYN-RECEIVED →
//! ESTABLISHED on the handshake's final ACK), §3.10.7.4 (segment processing: the
//! acknowledgment field, then the segment text), §3.8.6.3 (an ACK rides on outgoing data);
//! RFC 1122 §4.2.3.2 (delayed ACKs), RFC 7323 §4.3 (timestamps on every segment).
//!
//! A socket is a [`TcpSender`] half (our data, our congestion control) and a [`TcpReceiver`]
//! half (the peer's data, our ACKs and SACK blocks), sharing one timer block (kind
//! [`RTO`](super::RTO) and kind [`DELACK`](super::DELACK), and with RACK the sender's
//! [`RACK_REO`](super::RACK_REO) and [`TLP`](super::TLP)) and one four-tuple. The active end
//! (the flow's source) sends the SYN; the passive end's receiving half answers it with the
//! SYN-ACK, and its sending half opens when the handshake's final ACK arrives. Each incoming
//! segment goes to the sending half for its acknowledgment and window, then to the receiving
//! half for its text. Every segment we send carries our current acknowledgment number and
//! window: a data segment that goes out while an ACK is delayed carries that ACK, and the
//! delayed ACK is then not sent.
//!
//! A connection whose data flows one way (every bulk, web or video flow) sends exactly what the
//! separate sender and receiver did before this type existed: the golden digests check it.
//!
//! Not modelled: an ACK that is due *now* (not delayed) is sent as its own segment even if the
//! application will write data a moment later in the same instant (Linux would usually send
//! both in one); SACK blocks ride only on pure ACKs (a data segment carries none); FIN and
//! connection close; simultaneous open.

use super::{tcp_flags, TcpConfig, TcpReceiver, TcpSender};
use crate::engine::TimerKind;
use crate::packet::{PacketData, L4};
use crate::transport::{Endpoint, EndpointSetup, FlowCtx, Service, SocketInfo};

/// One end of a TCP connection. See the module docs.
#[derive(Debug)]
pub struct TcpSocket {
    snd: TcpSender,
    rcv: TcpReceiver,
    /// Whether this end opened the connection (sent the SYN).
    active: bool,
}

impl TcpSocket {
    /// The end at the flow's source, which opens the connection on its first write.
    pub fn active(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        TcpSocket { snd: TcpSender::new(cfg, s), rcv: TcpReceiver::new_active(cfg, s), active: true }
    }

    /// The end at the flow's destination, which answers the peer's SYN.
    pub fn passive(cfg: &TcpConfig, s: &EndpointSetup) -> Self {
        TcpSocket { snd: TcpSender::new_passive(cfg, s), rcv: TcpReceiver::new(cfg, s), active: false }
    }

    /// Our sending half.
    pub fn sender(&self) -> &TcpSender {
        &self.snd
    }
    /// Our receiving half.
    pub fn receiver(&self) -> &TcpReceiver {
        &self.rcv
    }
    /// Our sending half, for a connection that drives it (MPTCP's coupled increase and
    /// penalisation set its window).
    pub(crate) fn sender_mut(&mut self) -> &mut TcpSender {
        &mut self.snd
    }
    /// Whether this end opened the connection.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Stamps what the halves just queued (from `start` in the context's output) with what a
    /// segment from this socket says: our acknowledgment of the peer's data and our sequence
    /// number on pure ACKs; notes an ACK carried by data.
    fn stamp(&mut self, start: usize, cx: &mut FlowCtx) {
        if cx.out.len() == start || !self.rcv.synced() {
            return;
        }
        let (rcv_nxt, snd_max) = (self.rcv.rcv_nxt(), self.snd.snd_max());
        let mut carried = false;
        for o in &mut cx.out[start..] {
            let L4::Tcp(h) = &mut o.l4 else { continue };
            if h.flags & tcp_flags::SYN != 0 {
                continue;
            }
            if h.payload > 0 {
                // RFC 9293 §3.8.6.3: every data segment acknowledges what we have received
                // (its window is already ours: the sending half advertises the same buffer,
                // except under `rcv_autotune`, where the receiving half chooses it now).
                h.ack = rcv_nxt;
                if self.rcv.autotune().is_some() {
                    h.wnd = self.rcv.advertise(false);
                }
                carried = true;
            } else {
                // A pure ACK from the receiving half: its sequence number is our next byte.
                h.seq = snd_max;
            }
        }
        if carried {
            self.rcv.ack_carried(cx);
        }
    }
}

impl Endpoint for TcpSocket {
    fn service(&self) -> Service {
        Service::Stream
    }

    fn info(&self) -> Option<SocketInfo> {
        Some(self.snd.info())
    }

    fn write(&mut self, bytes: u64, cx: &mut FlowCtx) {
        let start = cx.out.len();
        self.snd.write(bytes, cx);
        self.stamp(start, cx);
    }

    fn on_packet(&mut self, pkt: &PacketData, cx: &mut FlowCtx) {
        let Some(h) = pkt.tcp() else { return };
        let start = cx.out.len();
        let syn = h.flags & tcp_flags::SYN != 0;
        if self.active {
            if syn && h.flags & tcp_flags::ACK != 0 && h.ack == 1 {
                // The SYN-ACK: the peer's sequence space starts (RFC 9293 §3.10.7.3).
                self.rcv.accept_syn_ack(h);
            }
            self.snd.on_packet(pkt, cx);
            if !syn && h.payload > 0 {
                self.rcv.on_packet(pkt, cx);
            }
        } else {
            if !syn && h.flags & tcp_flags::ACK != 0 && self.rcv.synced() && !self.snd.is_established() {
                // SYN-RECEIVED → ESTABLISHED on the first acceptable ACK (RFC 9293 §3.10.7.3).
                self.snd.establish_passive(h, cx);
            }
            if !syn && self.snd.sent_any() {
                self.snd.on_packet(pkt, cx);
            } else if !syn {
                // Nothing of ours to acknowledge yet: keep the peer's window and timestamp, so
                // our first data segment echoes a current one (RFC 7323 §4.3).
                self.snd.observe(h);
            }
            self.rcv.on_packet(pkt, cx);
        }
        self.stamp(start, cx);
    }

    /// The receiving half's delayed-ACK timer is kind 1; the sending half has the others (with
    /// RACK, its reorder and probe timers are kinds 2 and 3; with pacing, its pacing timer 4; with
    /// `overhead`, its overhead timer 5).
    fn timer_kinds(&self) -> u8 {
        self.snd.timer_kinds().max(2)
    }

    fn on_timer(&mut self, kind: TimerKind, cx: &mut FlowCtx) {
        let start = cx.out.len();
        if kind == super::DELACK {
            self.rcv.on_timer(kind, cx);
        } else {
            self.snd.on_timer(kind, cx);
        }
        self.stamp(start, cx);
    }

    fn delivered_bytes(&self) -> Option<u64> {
        self.rcv.delivered_bytes()
    }

    /// The half that works in a one-way flow reports under its usual names (the source's
    /// sending half, the destination's receiving half); the other half reports under `rev_`
    /// names, and only once data has flowed that way, so one-way flows have the columns they
    /// always had.
    fn summary(&self) -> Vec<(&'static str, f64)> {
        let (main, other, other_used) = if self.active {
            (self.snd.summary(), self.rcv.summary(), self.rcv.got_data())
        } else {
            (self.rcv.summary(), self.snd.summary(), self.snd.sent_any())
        };
        let mut v = main;
        if other_used {
            v.extend(other.into_iter().map(|(k, x)| (rev_name(k), x)));
        }
        v
    }
}

/// The `rev_` name of a counter of the half that serves the flow's reverse direction (TCP's,
/// and MPTCP's connection and subflow counters).
pub(crate) fn rev_name(k: &'static str) -> &'static str {
    match k {
        "segments_sent" => "rev_segments_sent",
        "bytes_sent" => "rev_bytes_sent",
        "retransmitted_segments" => "rev_retransmitted_segments",
        "retransmitted_bytes" => "rev_retransmitted_bytes",
        "rto_count" => "rev_rto_count",
        "fast_retransmits" => "rev_fast_retransmits",
        "acked_bytes" => "rev_acked_bytes",
        "cwnd_bytes" => "rev_cwnd_bytes",
        "srtt_s" => "rev_srtt_s",
        "min_rtt_s" => "rev_min_rtt_s",
        "mean_rtt_s" => "rev_mean_rtt_s",
        "rto_s" => "rev_rto_s",
        "acks_sent" => "rev_acks_sent",
        "duplicate_segments" => "rev_duplicate_segments",
        "out_of_order_segments" => "rev_out_of_order_segments",
        "reinjected_bytes" => "rev_reinjected_bytes",
        "penalisations" => "rev_penalisations",
        "duplicate_data_bytes" => "rev_duplicate_data_bytes",
        "rcvbuf_drop_pkts" => "rev_rcvbuf_drop_pkts",
        "rcv_buf_bytes" => "rev_rcv_buf_bytes",
        "scheduled_bytes" => "rev_scheduled_bytes",
        "subflow_in_order_bytes" => "rev_subflow_in_order_bytes",
        other => panic!("TCP counter {other:?} has no rev_ name (add it to rev_name)"),
    }
}
