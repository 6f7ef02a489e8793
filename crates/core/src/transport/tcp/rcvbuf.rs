//! Linux receive-buffer autotuning (`rcv_autotune`): the receive window starts small and grows
//! with what the application reads.
//!
//! Reading list (Linux 6.18 as shipped in 6.18.44, `net/ipv4/tcp_output.c` and `tcp_input.c`;
//! RFC 7323 §2). Linux 6.16 rewrote Dynamic Right-Sizing (Eric Dumazet's May 2025 series), and
//! "tcp: fix too slow tcp_rcvbuf_grow() action" (Oct 2025, backported to 6.18) gave it its
//! present form; both were checked against this machine's kernel with the `tcp:tcp_rcvbuf_grow`
//! tracepoint (docs/models/tcp.md).
//! - `tcp_select_initial_window`: the SYN's window, the largest multiple of the MSS within
//!   `tcp_win_from_space(tcp_rmem[1])` and 16 bits; the window-scale shift from the *largest*
//!   buffer (`tcp_rmem[2]`, 32 MiB since 6.16), so the window can grow to it later (RFC 7323
//!   §2.2: the shift is fixed on the SYN).
//! - `tcp_init_buffer_space`: `window_clamp` = the full space less one `advmss` ("force
//!   reservation of one segment"), `rcv_ssthresh` ≤ `window_clamp`, and the first DRS estimate
//!   `rcvq_space.space` = min(`rcv_ssthresh`, `rcv_wnd`, 10 segments of payload).
//! - `tcp_initialize_rcv_mss` / `tcp_measure_rcv_mss`: the segment size the receiver expects
//!   (`icsk_ack.rcv_mss`) starts at 536 B and rises to the first larger segment; each rise
//!   re-measures `scaling_ratio`, the share of the buffer that is window, as payload / `truesize`
//!   of that segment, and moves `window_clamp` to the new share of the buffer
//!   (`tcp_set_window_clamp`).
//! - `tcp_grow_window` (from `tcp_event_data_recv`, and for out-of-order data with SACK from
//!   `tcp_data_queue_ofo`): each segment of ≥ 128 bytes raises `rcv_ssthresh` by 2 `advmss`
//!   up to min(`window_clamp`, `tcp_space`), and asks for a quick ACK (`icsk_ack.quick |= 1`).
//!   `tcp_space` is the buffer less what it holds, the arriving segment included.
//! - `tcp_rcv_rtt_measure_ts` / `tcp_rcv_rtt_measure` / `tcp_rcv_rtt_update`: the receiver's
//!   RTT estimate, from the timestamp echo of full-sized segments or, without timestamps, from
//!   the time a window's worth of data takes to arrive. Since 6.16 a smaller sample is taken at
//!   once ("always seek for minimal rtt"); a larger one moves a timestamp estimate by 1/8 and is
//!   ignored by the window-based one.
//! - `tcp_rcv_space_adjust` → `tcp_rcvbuf_grow` (Dynamic Right-Sizing, from `tcp_recvmsg`):
//!   once per receiver RTT, if the application read more (`copied`, less what still waits in
//!   the receive queue) than in the previous RTT (`space`), the window to provision is twice
//!   `copied` ("DRS is always one RTT late"), plus twice that again scaled by the growth
//!   (copied − space)/space ("slow start: allow the sender to double its rate"), plus the span
//!   of out-of-order data held; the buffer grows to `tcp_space_from_win` of it, at most
//!   `tcp_rmem[2]`; `window_clamp` follows. Out-of-order data also calls `tcp_rcvbuf_grow`
//!   with the unchanged `space` (`tcp_data_queue_ofo`: "adjust rcvbuf in presence of
//!   reorders").
//! - `__tcp_select_window` / `tcp_select_window`: the window offered is the free space capped by
//!   `rcv_ssthresh`, rounded up to the scale unit; the right edge never moves left (no shrinking,
//!   `net.ipv4.tcp_shrink_window = 0`).
//! - `tcp_cleanup_rbuf`: after a read, an ACK goes out at once if the window it would offer is at
//!   least twice what the peer has left.
//!
//! Not modelled: the buffer's accounting in `truesize` beyond the scaling ratio: a segment's
//! `truesize` is that of a driver receiving each frame into a 2-KiB buffer (the frame rounded
//! up to 2 KiB, plus the 256-byte `struct sk_buff`), which gives the ratio 160/256 that this
//! machine's kernel measures for 1448-byte segments (the default before any measurement,
//! `TCP_DEFAULT_SCALING_RATIO`, is 128); `tcp_measure_rcv_mss`'s lowering of `rcv_mss` for a
//! peer that sends smaller segments; memory pressure (`tcp_mem`), `tcp_clamp_window` and
//! pruning; `net.core.rmem_max` in the window-scale choice; the timestamp clock's 1 ms tick
//! (ours is 1 µs). The application reads every in-order byte the moment it arrives, so
//! `copied_seq` = `rcv_nxt` and only out-of-order data occupies the buffer after a segment has
//! been processed.

use crate::time::{Dur, SimTime};

/// Linux's default `tcp_rmem[1]`: the buffer a connection starts with, bytes.
pub const TCP_RMEM_DEFAULT: u64 = 131_072;
/// Linux's default `tcp_rmem[2]`: the largest buffer autotuning grows to, bytes (32 MiB since
/// 6.16, "tcp: increase `tcp_rmem[2]` to 32 MB"; 6 MiB before).
pub const TCP_RMEM_MAX: u64 = 32 << 20;
/// `TCP_INIT_CWND`, used for the first DRS estimate (`tcp_init_buffer_space`).
const TCP_INIT_CWND: u64 = 10;
/// The window share of the buffer, out of 256, before any segment is measured
/// (`TCP_DEFAULT_SCALING_RATIO`).
const SCALING_RATIO: u64 = 128;
/// `TCP_MSS_DEFAULT` and `TCP_MIN_MSS`: the bounds of the first `rcv_mss` guess.
const TCP_MSS_DEFAULT: u64 = 536;
const TCP_MIN_MSS: u64 = 88;
/// `SOCK_MIN_RCVBUF`: 2 KiB plus one `struct sk_buff`; `tcp_set_window_clamp` keeps the clamp at
/// half of it or more.
const SOCK_MIN_RCVBUF: u64 = 2048 + 256;

/// `tcp_win_from_space` at the default ratio: the window a buffer of `space` bytes offers.
pub fn win_from_space(space: u64) -> u64 {
    win_from_space_at(space, SCALING_RATIO)
}

fn win_from_space_at(space: u64, ratio: u64) -> u64 {
    space * ratio >> 8
}

/// `skb->truesize` of a received segment of `len` payload bytes: a frame (payload, 66 bytes of
/// Ethernet, IP and TCP headers with timestamps, and `NET_SKB_PAD`'s 64) in 2-KiB receive
/// buffers, plus the 256-byte `struct sk_buff`: 2304 for a 1448-byte segment.
fn truesize(len: u64) -> u64 {
    (len + 66 + 64).div_ceil(2048) * 2048 + 256
}

/// The `scaling_ratio` `tcp_measure_rcv_mss` measures on a segment of `len` bytes:
/// `len << TCP_RMEM_TO_WIN_SCALE / truesize`, at least 1 (160 for 1448 bytes).
fn measured_ratio(len: u64) -> u64 {
    ((len << 8) / truesize(len)).clamp(1, 255)
}

/// `tcp_select_initial_window`: the window on a SYN or SYN-ACK, bytes, for a starting buffer of
/// `init_buf` bytes and segments of `rcv_mss` bytes (the MSS less the timestamp option).
pub fn initial_window(init_buf: u64, rcv_mss: u64) -> u64 {
    let mut space = win_from_space(init_buf);
    if space > rcv_mss {
        space -= space % rcv_mss;
    }
    // net.ipv4.tcp_workaround_signed_windows = 0: up to U16_MAX unscaled.
    space.min(0xffff)
}

/// The receive-window state of one receiving end under autotuning. All sizes in bytes.
#[derive(Clone, Debug)]
pub struct RcvBuf {
    /// `sk_rcvbuf` and `tcp_rmem[2]`.
    rcvbuf: u64,
    rmem_max: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// Our MSS option (`advmss`) and the segment size we expect (`icsk_ack.rcv_mss`).
    advmss: u64,
    rcv_mss: u64,
    /// The share of the buffer that is window, out of 256 (`scaling_ratio`).
    scaling_ratio: u64,
    wscale: u8,
    /// The last window offered and `rcv_nxt` when it was (`rcv_wnd`, `rcv_wup`).
    rcv_wnd: u64,
    rcv_wup: u64,
    /// DRS (`rcvq_space`): the last RTT's reads, and where and when the current one began.
    space: u64,
    space_seq: u64,
    space_time: Option<SimTime>,
    /// `rcv_rtt_est`.
    rtt: RcvRtt,
}

/// The receiver's RTT estimate of one TCP connection or MPTCP subflow (`rcv_rtt_est`,
/// `tcp_rcv_rtt_measure_ts` / `tcp_rcv_rtt_measure` / `tcp_rcv_rtt_update`).
#[derive(Clone, Debug, Default)]
pub struct RcvRtt {
    /// The estimate in µs × 8 (0: none yet), and the window-based probe (sequence and start)
    /// used without timestamps; the last TSecr sampled.
    rtt_us8: u64,
    rtt_seq: u64,
    rtt_time: Option<SimTime>,
    last_tsecr: u32,
}

impl RcvRtt {
    /// The estimate in µs × 8 (`rcv_rtt_est.rtt_us`; 0 before the first sample).
    pub fn us8(&self) -> u64 {
        self.rtt_us8
    }

    /// `tcp_rcv_rtt_measure_ts`: a data segment of `len` bytes echoing our timestamp `tsecr`
    /// (µs, as `super::ts_now`) arrived when our clock read `ts_now`; only segments of at least
    /// `rcv_mss` bytes are sampled.
    pub fn measure_ts(&mut self, tsecr: u32, ts_now: u32, len: u64, rcv_mss: u64) {
        if tsecr == self.last_tsecr {
            return;
        }
        self.last_tsecr = tsecr;
        if len >= rcv_mss {
            let delta = ts_now.wrapping_sub(tsecr) as i32;
            if delta > 0 {
                self.update(delta as u64, false);
            }
        }
    }

    /// `tcp_rcv_rtt_measure` (no timestamps): the time from when a window's right edge
    /// (`rcv_nxt + rcv_wnd`) was noted to when `rcv_nxt` passes it, once per window.
    pub fn measure(&mut self, rcv_nxt: u64, rcv_wnd: u64, now: SimTime) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let us = (now.since(t).as_nanos() / 1_000).max(1);
            self.update(us, true);
        }
        self.rtt_seq = rcv_nxt + rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_rcv_rtt_update` (Linux 6.16+, "always seek for minimal rtt"): a sample below the
    /// estimate is taken at once; a larger one moves a timestamp estimate by 1/8 (EWMA) and is
    /// ignored by the window-based one (it includes the sender's idle time).
    fn update(&mut self, sample_us: u64, win_dep: bool) {
        let m8 = sample_us.saturating_mul(8);
        if self.rtt_us8 == 0 || m8 < self.rtt_us8 {
            self.rtt_us8 = m8;
        } else if !win_dep {
            self.rtt_us8 = self.rtt_us8 - (self.rtt_us8 >> 3) + sample_us;
        }
    }
}

impl RcvBuf {
    /// The state after the handshake (`tcp_select_initial_window` then `tcp_init_buffer_space`)
    /// for a buffer that starts at `init_buf` and may grow to `max_buf`, window-scale shift
    /// `wscale`, MSS option `advmss` and segments of `seg_mss` payload bytes.
    pub fn new(init_buf: u64, max_buf: u64, wscale: u8, advmss: u64, seg_mss: u64) -> Self {
        let rcv_wnd = initial_window(init_buf, seg_mss);
        let maxwin = win_from_space(init_buf);
        // tcp_select_initial_window: the clamp is what the shift can express; then
        // tcp_init_buffer_space brings it to the full space less one segment.
        let mut window_clamp = (0xffffu64 << wscale).min(maxwin);
        if window_clamp > 2 * advmss && window_clamp + advmss > maxwin {
            window_clamp = (2 * advmss).max(maxwin - advmss);
        }
        let rcv_ssthresh = rcv_wnd.min(window_clamp);
        // `tcp_initialize_rcv_mss`: "It's better to underestimate the RCV_MSS rather than
        // overestimate."
        let rcv_mss = advmss.min(seg_mss).min(rcv_wnd / 2).min(TCP_MSS_DEFAULT).max(TCP_MIN_MSS);
        RcvBuf {
            rcvbuf: init_buf,
            rmem_max: max_buf,
            window_clamp,
            rcv_ssthresh,
            advmss,
            rcv_mss,
            scaling_ratio: SCALING_RATIO,
            wscale,
            rcv_wnd,
            rcv_wup: 1,
            // "tcp: fix initial tp->rcvq_space.space value for passive TS enabled flows": ten
            // segments of payload, options excluded.
            space: rcv_ssthresh.min(rcv_wnd).min(TCP_INIT_CWND * seg_mss),
            space_seq: 1,
            space_time: None,
            rtt: RcvRtt::default(),
        }
    }

    /// The receive buffer now (`sk_rcvbuf`).
    pub fn rcvbuf(&self) -> u64 {
        self.rcvbuf
    }
    /// The window last offered.
    pub fn rcv_wnd(&self) -> u64 {
        self.rcv_wnd
    }
    /// The right edge of the window last offered (`rcv_wup + rcv_wnd`).
    pub fn right_edge(&self) -> u64 {
        self.rcv_wup + self.rcv_wnd
    }
    /// The receiver's RTT estimate (`rcv_rtt_est`), once measured.
    pub fn rcv_rtt(&self) -> Option<Dur> {
        (self.rtt.rtt_us8 > 0).then(|| Dur::from_micros(self.rtt.rtt_us8 / 8))
    }

    /// `tcp_space`: the free buffer as window; `held` bytes of data occupy it (a held segment
    /// takes its own size in window: that is what the scaling ratio measures).
    fn free_space(&self, held: u64) -> u64 {
        self.win(self.rcvbuf).saturating_sub(held)
    }

    /// `tcp_win_from_space` at this connection's ratio: the window a buffer of `space` offers.
    fn win(&self, space: u64) -> u64 {
        win_from_space_at(space, self.scaling_ratio)
    }

    /// The share of the buffer that is window, out of 256 (`scaling_ratio`).
    pub fn scaling_ratio(&self) -> u64 {
        self.scaling_ratio
    }

    /// The segment size the receiver expects (`icsk_ack.rcv_mss`).
    pub fn rcv_mss(&self) -> u64 {
        self.rcv_mss
    }

    /// `tcp_measure_rcv_mss` on an in-order data segment of `len` bytes (from
    /// `tcp_event_data_recv`): a segment at least as large as `rcv_mss` becomes the new
    /// `rcv_mss` (at most `advmss`); if its size differs, the scaling ratio is re-measured on it
    /// and, when it changes, the window clamp moves to the buffer's new window share
    /// (`tcp_set_window_clamp`: a larger clamp lifts `rcv_ssthresh` to the window last offered,
    /// a smaller one lowers it) and `space` is kept within the clamp.
    pub fn measure_rcv_mss(&mut self, len: u64) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            let ratio = measured_ratio(len);
            if ratio != self.scaling_ratio {
                self.scaling_ratio = ratio;
                let clamp = self.win(self.rcvbuf).max(SOCK_MIN_RCVBUF / 2);
                if clamp > self.window_clamp {
                    self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
                } else {
                    self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
                }
                self.window_clamp = clamp;
                self.space = self.space.min(clamp);
            }
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// The first data segment of the connection arrived at `now` (`tcp_init_transfer` runs
    /// `tcp_init_buffer_space` when the connection is established: the handshake's final ACK
    /// rides on this segment).
    pub fn on_established(&mut self, now: SimTime) {
        if self.space_time.is_none() {
            self.space_time = Some(now);
        }
    }

    /// `tcp_rcv_rtt_measure_ts` on our own estimate (see [`RcvRtt::measure_ts`]).
    pub fn rtt_measure_ts(&mut self, tsecr: u32, ts_now: u32, len: u64) {
        self.rtt.measure_ts(tsecr, ts_now, len, self.rcv_mss);
    }

    /// `tcp_rcv_rtt_measure` on our own estimate, against the window last offered (see
    /// [`RcvRtt::measure`]).
    pub fn rtt_measure(&mut self, rcv_nxt: u64, now: SimTime) {
        self.rtt.measure(rcv_nxt, self.rcv_wnd, now);
    }

    /// Replaces the receiver's RTT estimate (µs × 8) by one measured elsewhere: an MPTCP
    /// connection's buffer is tuned over the slowest subflow's estimate (`mptcp_check_rtt` in
    /// the out-of-tree kernel, `mptcp_rcv_space_adjust` upstream: the maximum over subflows).
    pub fn set_rtt_us8(&mut self, rtt_us8: u64) {
        self.rtt.rtt_us8 = rtt_us8;
    }

    /// `tcp_grow_window`: a segment of `len` bytes was queued and `held` bytes (that segment
    /// included) occupy the buffer. Returns whether `rcv_ssthresh` grew (Linux then asks for a
    /// quick ACK).
    pub fn grow(&mut self, len: u64, held: u64) -> bool {
        if len < 128 {
            return false;
        }
        let limit = self.window_clamp.min(self.free_space(held));
        if limit <= self.rcv_ssthresh {
            return false;
        }
        // Every segment's overhead fits the scaling ratio (no truesize), so "Check #2" always
        // passes: incr = max(2 advmss, 2 len) = 2 advmss.
        let incr = (2 * self.advmss).max(2 * len);
        self.rcv_ssthresh += (limit - self.rcv_ssthresh).min(incr);
        true
    }

    /// `tcp_rcv_space_adjust` (Dynamic Right-Sizing): the application has read up to
    /// `copied_seq` by `now`; the out-of-order data held ends `ooo_span` bytes beyond it.
    pub fn space_adjust(&mut self, copied_seq: u64, ooo_span: u64, now: SimTime) {
        let Some(t) = self.space_time else {
            return;
        };
        if self.rtt.rtt_us8 == 0 || now.since(t) < Dur::from_micros(self.rtt.rtt_us8 >> 3) {
            return;
        }
        // Bytes copied to the user in the last RTT (less what waits in the receive queue: none,
        // as the application reads at once).
        let copied = copied_seq - self.space_seq;
        if copied > self.space {
            self.rcvbuf_grow(copied, ooo_span);
        }
        self.space_seq = copied_seq;
        self.space_time = Some(now);
    }

    /// `tcp_rcvbuf_grow(sk, newval)`: `space` becomes `newval`; the buffer grows to hold twice
    /// `newval`, plus twice that scaled by the growth since the last `space`, plus the
    /// out-of-order span; at most `tcp_rmem[2]`; `window_clamp` follows.
    fn rcvbuf_grow(&mut self, newval: u64, ooo_span: u64) {
        let oldval = self.space.max(1);
        self.space = newval;
        // "DRS is always one RTT late."
        let mut rcvwin = newval << 1;
        // "slow start: allow the sender to double its rate."
        let grow = rcvwin as u128 * newval.saturating_sub(oldval) as u128 / oldval as u128;
        rcvwin = rcvwin.saturating_add((grow.min(u64::MAX as u128) as u64).saturating_mul(2));
        rcvwin = rcvwin.saturating_add(ooo_span);
        // `tcp_space_from_win`.
        let rcvbuf = ((rcvwin.min(u64::MAX >> 9) << 8) / self.scaling_ratio).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            // "Make the window clamp follow along."
            self.window_clamp = self.win(rcvbuf);
        }
    }

    /// `tcp_data_queue_ofo`'s call of `tcp_rcvbuf_grow` with the unchanged `space`: the buffer
    /// makes room for the out-of-order data held, ending `ooo_span` bytes beyond `rcv_nxt`.
    pub fn ofo_grow(&mut self, ooo_span: u64) {
        self.rcvbuf_grow(self.space, ooo_span);
    }

    /// `__tcp_select_window`: the window we would offer now, before the no-shrink rule.
    /// Returns (window, whether the free space fell below half the full space, which ends
    /// quick-ACK mode).
    fn compute_window(&self, ooo: u64) -> (u64, bool) {
        let free = self.free_space(ooo);
        let allowed = self.win(self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mss = self.rcv_mss.min(full);
        let unit = 1u64 << self.wscale;
        let mut free_space = free;
        let mut low = false;
        if free_space < full / 2 {
            low = true;
            free_space -= free_space % unit;
            if free_space < allowed >> 4 || free_space < mss {
                return (0, true);
            }
        }
        free_space = free_space.min(self.rcv_ssthresh);
        if self.wscale > 0 {
            // "Advertise enough space so that it won't get scaled away."
            return (free_space.div_ceil(unit) * unit, low);
        }
        // Unscaled: the largest multiple of the MSS, unless the current offer is within one
        // segment of the free space.
        let mut window = self.rcv_wnd;
        if window + mss <= free_space || window > free_space {
            window = if mss > 0 { free_space - free_space % mss } else { free_space };
        } else if mss == full && free_space > window + full / 2 {
            window = free_space;
        }
        (window, low)
    }

    /// `tcp_select_window`: the window for a segment we send now, with `rcv_nxt` and `ooo`
    /// bytes held out of order, in bytes as the peer reads it (a multiple of the scale unit,
    /// at most 65535 units). The offered right edge never moves left. Returns (window, whether
    /// quick-ACK mode ends).
    pub fn select(&mut self, rcv_nxt: u64, ooo: u64) -> (u32, bool) {
        let cur = self.right_edge().saturating_sub(rcv_nxt);
        let (mut new, low) = self.compute_window(ooo);
        if new < cur {
            // Never shrink the offered window.
            let unit = 1u64 << self.wscale;
            new = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new;
        self.rcv_wup = rcv_nxt;
        let wire = new.min(0xffffu64 << self.wscale) >> self.wscale << self.wscale;
        (wire.min(u32::MAX as u64) as u32, low)
    }

    /// `tcp_cleanup_rbuf`: after a read, whether a window update is due (the window we would
    /// offer is at least twice what the peer has left, which is at most half the clamp).
    pub fn update_due(&self, rcv_nxt: u64, ooo: u64) -> bool {
        let now = self.right_edge().saturating_sub(rcv_nxt);
        if 2 * now > self.window_clamp {
            return false;
        }
        let (new, _) = self.compute_window(ooo);
        new > 0 && new >= 2 * now
    }

    /// Quick ACKs allowed by `tcp_incr_quickack`: half the current window in segments.
    pub fn quickack_budget(&self) -> u64 {
        self.rcv_wnd / (2 * self.rcv_mss.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> SimTime {
        SimTime::ZERO + Dur::from_millis(n)
    }

    /// Linux's numbers for MSS 1460 with timestamps (segments of 1448), tcp_rmem defaults: the
    /// SYN's 65160 (45 segments, the "win 65160" of every Linux SYN on Ethernet), shift 10 for
    /// 32 MiB, a clamp of 65536 − 1460 and the first window rounded up to 1 KiB; the first DRS
    /// estimate is ten segments of payload (14480, as the kernel's `tcp_rcvbuf_grow` trace shows).
    #[test]
    fn initial_values_are_linuxs() {
        assert_eq!(initial_window(TCP_RMEM_DEFAULT, 1448), 65160);
        assert_eq!(super::super::window_shift(TCP_RMEM_MAX), 10);
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, TCP_RMEM_MAX, 10, 1460, 1448);
        assert_eq!(r.window_clamp, 64076);
        assert_eq!(r.rcv_ssthresh, 64076);
        assert_eq!(r.space, 14480);
        assert_eq!((r.rcv_mss(), r.scaling_ratio()), (536, 128), "tcp_initialize_rcv_mss");
        // Before any data the SYN-ACK's edge (1 + 65160) is further out than 64076: it is kept,
        // rounded up to the scale unit (no shrinking).
        let (w, low) = r.select(1, 0);
        assert!(!low);
        assert_eq!(w, 65536);
        // After two segments, rcv_ssthresh rounded up to 1 KiB is beyond the old edge.
        assert_eq!(r.select(2897, 0).0, 64512);
    }

    /// The kernel's `tcp:tcp_rcvbuf_grow` trace of one CUBIC flow at RTT 40 ms on this machine
    /// (Linux 6.18.44): scaling_ratio 160 after the first full segment, window_clamp 81920 on the
    /// 128-KiB buffer; then reads of 15928, 28960 and 57920 bytes per RTT give buffers of 131072
    /// (unchanged), 244316 and 556032 bytes.
    #[test]
    fn drs_follows_the_kernels_trace() {
        assert_eq!(measured_ratio(1448), 160);
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, TCP_RMEM_MAX, 10, 1460, 1448);
        r.measure_rcv_mss(37);
        assert_eq!((r.rcv_mss(), r.scaling_ratio()), (536, 128), "a small segment measures nothing");
        r.measure_rcv_mss(1448);
        assert_eq!((r.rcv_mss(), r.scaling_ratio(), r.window_clamp), (1448, 160, 81920));
        // rcv_ssthresh grows two segments at a time to the clamp less the segment held.
        let mut quick = 0;
        while r.grow(1448, 1448) {
            quick += 1;
        }
        assert_eq!((quick, r.rcv_ssthresh), (6, 81920 - 1448));
        r.on_established(SimTime::ZERO);
        r.rtt.update(42_000, false);
        let mut seq = 1;
        for (t, copied, buf) in [(44, 15928, 131072), (87, 28960, 244316), (135, 57920, 556032)] {
            seq += copied;
            r.space_adjust(seq, 0, ms(t));
            assert_eq!((r.space, r.rcvbuf()), (copied, buf), "after {copied} B");
        }
        assert_eq!(r.window_clamp, 347520);
        // A larger buffer opens room again: the next segments are quick-ACKed.
        assert!(r.grow(1448, 1448));
        // A read no larger than the last RTT's leaves the buffer alone.
        r.space_adjust(seq + 57920, 0, ms(180));
        assert_eq!(r.rcvbuf(), 556032);
    }

    #[test]
    fn out_of_order_span_grows_the_buffer() {
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, TCP_RMEM_MAX, 10, 1460, 1448);
        r.measure_rcv_mss(1448);
        // space 14480: rcvwin 2·14480 + 300000 of out-of-order span.
        r.ofo_grow(300_000);
        assert_eq!(r.rcvbuf(), (2 * 14480 + 300_000) * 256 / 160);
        assert_eq!(r.space, 14480, "space unchanged");
    }

    #[test]
    fn buffer_never_exceeds_the_maximum() {
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, 1 << 20, 5, 1460, 1448);
        r.on_established(SimTime::ZERO);
        r.rtt.update(10_000, false);
        r.measure_rcv_mss(1448);
        let mut seq = 1;
        for i in 1..50u64 {
            seq += 1 << (10 + i.min(20));
            r.space_adjust(seq, 0, ms(10 * i));
            for _ in 0..1000 {
                r.grow(1448, 0);
            }
            assert!(r.rcvbuf() <= 1 << 20);
            let (w, _) = r.select(seq, 0);
            assert!(w as u64 <= win_from_space_at(1 << 20, 160), "{w}");
        }
        assert_eq!(r.rcvbuf(), 1 << 20);
    }

    #[test]
    fn out_of_order_data_eats_the_window_but_never_shrinks_it() {
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, TCP_RMEM_MAX, 10, 1460, 1448);
        let (w0, _) = r.select(100_000, 0);
        // 40000 B held out of order: the free space (65536 − 40000) is below half the clamp.
        let (w1, low) = r.select(100_000, 40_000);
        assert!(low);
        assert_eq!(w1, w0, "the right edge stays");
        assert!(!r.grow(1448, 40_000) || r.rcv_ssthresh <= 65536 - 40_000);
    }

    #[test]
    fn rtt_without_timestamps_is_the_minimum() {
        let mut r = RcvBuf::new(TCP_RMEM_DEFAULT, TCP_RMEM_MAX, 10, 1460, 1448);
        r.rtt_measure(1, SimTime::ZERO);
        r.rtt_measure(1000, ms(30));
        assert_eq!(r.rcv_rtt(), None, "the window has not been crossed");
        r.rtt_measure(70_000, ms(60));
        assert_eq!(r.rcv_rtt(), Some(Dur::from_millis(60)));
        r.rtt_measure(140_000, ms(140));
        assert_eq!(r.rcv_rtt(), Some(Dur::from_millis(60)), "a longer sample does not raise it");
        r.rtt_measure(300_000, ms(180));
        assert_eq!(r.rcv_rtt(), Some(Dur::from_millis(40)), "a shorter one is taken at once");
    }

    /// Linux 6.16's `tcp_rcv_rtt_update` with timestamps: a smaller sample latches at once, a
    /// larger one moves the estimate by 1/8.
    #[test]
    fn timestamp_rtt_latches_the_minimum() {
        let mut t = RcvRtt::default();
        t.update(40_000, false);
        t.update(80_000, false);
        assert_eq!(t.us8(), 8 * 40_000 - 40_000 + 80_000);
        t.update(30_000, false);
        assert_eq!(t.us8(), 8 * 30_000);
    }
}
