//! TSO/GSO-sized sending, as Linux builds and releases its super-segments (the `tso` key).
//!
//! A Linux sender does not hand segments to the device one by one: `tcp_write_xmit` sends
//! socket buffers of up to [`autosize`] segments (`tcp_tso_autosize`, `tcp_tso_segs`), which
//! the NIC (TSO) or the stack just below TCP (GSO) cuts into MSS-sized packets that leave back
//! to back at line rate. Two consequences are visible on the wire and are what this module
//! models:
//!
//! - **Deferral** (`tcp_tso_should_defer`, [`should_defer`]): when the window lets out less than
//!   a full buffer, the sender may wait for the next ACK to send a bigger one, instead of
//!   dribbling out a segment or two per ACK.
//! - **Bursts under pacing**: `fq` paces per buffer, so a paced sender emits [`autosize`]
//!   segments back to back, then waits their length over the pacing rate.
//!
//! Sources: `net/ipv4/tcp_output.c` (`tcp_tso_autosize`, `tcp_tso_segs`,
//! `tcp_tso_should_defer`, `tcp_write_xmit`) with the sysctl defaults `tcp_min_tso_segs` = 2,
//! `tcp_tso_rtt_log` = 9, `tcp_tso_win_divisor` = 3, `sk_pacing_shift` = 10 and
//! `GSO_LEGACY_MAX_SIZE` = 65,536 bytes. Not modelled: TCP Small Queues (the limit on bytes
//! queued below the socket), the device's own queue and completion timing, and buffers that
//! an application's writes leave short of the size goal (every buffer but the last of the
//! written data is taken to be full).

use crate::time::{Dur, SimTime};

/// `GSO_LEGACY_MAX_SIZE`: the largest buffer handed to the device, bytes.
pub const GSO_MAX_BYTES: u64 = 65_536;
/// `net.ipv4.tcp_min_tso_segs`.
pub const MIN_TSO_SEGS: u64 = 2;
/// `sk_pacing_shift` (TCP's default): a buffer holds about 2^-10 s ≈ 1 ms at the pacing rate.
pub const PACING_SHIFT: u32 = 10;
/// `net.ipv4.tcp_tso_rtt_log`: on paths with a minimum RTT below 2^9 µs the buffer grows
/// toward [`GSO_MAX_BYTES`] (64 kB >> (min RTT in µs >> 9)).
pub const TSO_RTT_LOG: u32 = 9;
/// `net.ipv4.tcp_tso_win_divisor`: a third of the window is worth sending without waiting.
pub const WIN_DIVISOR: u64 = 3;

/// Segments per buffer (`tcp_tso_autosize`): about 1 ms of data at the pacing rate
/// (`pacing_rate` bytes per second, `None` before the first RTT sample, when Linux's rate is
/// unlimited), plus 64 kB >> (min RTT µs >> 9) on short paths, at most 64 kB, at least 2.
pub fn autosize(pacing_rate: Option<u64>, min_rtt: Option<Dur>, mss: u64) -> u64 {
    let mut bytes = pacing_rate.map_or(u64::MAX, |r| r >> PACING_SHIFT);
    if let Some(m) = min_rtt {
        let r = (m.as_nanos() / 1_000) >> TSO_RTT_LOG;
        if r < 32 {
            bytes = bytes.saturating_add(GSO_MAX_BYTES >> r);
        }
    }
    (bytes.min(GSO_MAX_BYTES) / mss.max(1)).max(MIN_TSO_SEGS)
}

/// What [`should_defer`] sees of the sender when new data could go out now.
#[derive(Clone, Copy, Debug)]
pub struct DeferInput {
    pub now: SimTime,
    /// When the last segment left (`tcp_wstamp_ns`); `None` before the first.
    pub last_tx: Option<SimTime>,
    /// In fast recovery or recovering from a timeout (`icsk_ca_state >= TCP_CA_Recovery`).
    pub recovering: bool,
    pub cwnd: u64,
    pub in_flight: u64,
    /// Bytes from the next segment to the end of the peer's window (`tcp_wnd_end − seq`).
    pub send_win: u64,
    /// The peer's whole window (`snd_wnd`), bytes.
    pub snd_wnd: u64,
    pub mss: u64,
    /// [`autosize`] for this buffer, segments.
    pub max_segs: u64,
    /// Bytes written and not yet sent from this sequence number on.
    pub unsent: u64,
    /// When the oldest unacknowledged segment was last sent (`tcp_rtx_queue_head` `tstamp`).
    pub head_tx: Option<SimTime>,
    pub srtt: Option<Dur>,
}

/// The answer of [`should_defer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defer {
    SendNow,
    /// Wait for the next ACK; `cwnd_limited` as `tcp_tso_should_defer` reports it.
    Wait {
        cwnd_limited: bool,
    },
}

/// `tcp_tso_should_defer`: whether to hold new data for a bigger buffer at the next ACK.
pub fn should_defer(i: &DeferInput) -> Defer {
    if i.recovering {
        return Defer::SendNow;
    }
    // "Avoid bursty behavior by allowing defer only if the last write was recent (1 ms)."
    match i.last_tx {
        Some(t) if i.now.since(t) <= Dur::from_millis(1) => {}
        _ => return Defer::SendNow,
    }
    let cong_win = i.cwnd.saturating_sub(i.in_flight);
    let limit = i.send_win.min(cong_win);
    let full = i.max_segs * i.mss;
    // A full-sized buffer can be sent.
    if limit >= full {
        return Defer::SendNow;
    }
    // The buffer at this sequence number: full-sized unless it is the last of the data written
    // ("Middle in queue won't get any more data, full sendable already?": covered above).
    let skb_len = i.unsent.min(full);
    // "If at least some fraction of a window is available, just use it."
    if limit >= i.snd_wnd.min(i.cwnd) / WIN_DIVISOR {
        return Defer::SendNow;
    }
    // "If next ACK is likely to come too late, ie in more than min(1ms, half srtt), do not
    // defer": the ACK is expected one SRTT after the oldest unacknowledged segment left
    // (Linux 6.18; before, until late 2025, the rule was half an SRTT of age, whatever the RTT).
    let (Some(head), Some(srtt)) = (i.head_tx, i.srtt) else {
        return Defer::SendNow;
    };
    let expected_ack = head.as_nanos() as i128 + srtt.as_nanos() as i128;
    let how_far = expected_ack - i.now.as_nanos() as i128;
    let threshold = (srtt.as_nanos() / 2).min(Dur::from_millis(1).as_nanos()) as i128;
    if how_far > threshold {
        return Defer::SendNow;
    }
    let cwnd_limited = cong_win < i.send_win && cong_win <= skb_len;
    Defer::Wait { cwnd_limited }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    #[test]
    fn autosize_follows_linux_arithmetic() {
        let ms = Dur::from_millis;
        // 1 Gbit/s = 125e6 B/s: 122,070 B per 2^-10 s, capped at 64 kB: 45 segments.
        assert_eq!(autosize(Some(125_000_000), Some(ms(10)), MSS), 45);
        // 10 Mbit/s: 1,220 B per slot, 20 ms RTT adds nothing (20,000 >> 9 = 39 ≥ 32): the floor 2.
        assert_eq!(autosize(Some(1_250_000), Some(ms(20)), MSS), 2);
        // 100 Mbit/s: 12,207 B → 8 segments.
        assert_eq!(autosize(Some(12_500_000), Some(ms(20)), MSS), 8);
        // A 2-ms path (2,000 >> 9 = 3): + 65,536 >> 3 = 8,192 B: (1,220 + 8,192) / 1,448 = 6.
        assert_eq!(autosize(Some(1_250_000), Some(ms(2)), MSS), 6);
        // A 100-µs path (r = 0): + 64 kB, capped at 64 kB.
        assert_eq!(autosize(Some(1_250_000), Some(Dur::from_micros(100)), MSS), 45);
        // Before an RTT sample the rate is unlimited: the cap.
        assert_eq!(autosize(None, None, MSS), 45);
        assert_eq!(autosize(Some(0), None, 9000), 2);
    }

    fn base() -> DeferInput {
        let t = SimTime(1_000_000_000);
        DeferInput {
            now: t,
            last_tx: Some(t),
            recovering: false,
            cwnd: 100 * MSS,
            in_flight: 96 * MSS,
            send_win: 1 << 30,
            snd_wnd: 1 << 30,
            mss: MSS,
            max_segs: 45,
            unsent: 1 << 30,
            // The oldest segment left 39.5 ms ago: its ACK is due in 0.5 ms.
            head_tx: Some(SimTime(1_000_000_000 - 39_500_000)),
            srtt: Some(Dur::from_millis(40)),
        }
    }

    #[test]
    fn defers_a_small_window_when_an_ack_is_due() {
        // 4 segments of room, a third of the window is 33: wait; cwnd is the limit.
        assert_eq!(should_defer(&base()), Defer::Wait { cwnd_limited: true });
    }

    #[test]
    fn each_rule_that_sends_now() {
        let b = base();
        assert_eq!(should_defer(&DeferInput { recovering: true, ..b }), Defer::SendNow);
        // The last write was more than 1 ms ago, or there was none.
        let late = SimTime(b.now.as_nanos() - 1_000_001);
        assert_eq!(should_defer(&DeferInput { last_tx: Some(late), ..b }), Defer::SendNow);
        assert_eq!(should_defer(&DeferInput { last_tx: None, ..b }), Defer::SendNow);
        // A full buffer fits.
        assert_eq!(should_defer(&DeferInput { in_flight: 55 * MSS, ..b }), Defer::SendNow);
        // A third of the window fits (34 ≥ 100/3 segments), short of a full buffer (45).
        assert_eq!(should_defer(&DeferInput { in_flight: 66 * MSS, ..b }), Defer::SendNow);
        assert!(matches!(should_defer(&DeferInput { in_flight: 67 * MSS, ..b }), Defer::Wait { .. }));
        // The next ACK (one SRTT after the oldest segment left) is more than min(1 ms, SRTT/2)
        // away: 1 ms + 1 ns sends, exactly 1 ms waits.
        let at = |ago_ns: u64| Some(SimTime(b.now.as_nanos() - ago_ns));
        assert_eq!(should_defer(&DeferInput { head_tx: at(38_999_999), ..b }), Defer::SendNow);
        assert!(matches!(should_defer(&DeferInput { head_tx: at(39_000_000), ..b }), Defer::Wait { .. }));
        // Before Linux 6.18 half an SRTT of age was enough (20 ms here); now it is not.
        assert_eq!(should_defer(&DeferInput { head_tx: at(20_000_000), ..b }), Defer::SendNow);
        // On a 1-ms path the threshold is half the SRTT: 0.5 ms.
        let short = DeferInput { srtt: Some(Dur::from_millis(1)), ..b };
        assert_eq!(should_defer(&DeferInput { head_tx: at(499_999), ..short }), Defer::SendNow);
        assert!(matches!(should_defer(&DeferInput { head_tx: at(500_000), ..short }), Defer::Wait { .. }));
        assert_eq!(should_defer(&DeferInput { head_tx: None, ..b }), Defer::SendNow);
        assert_eq!(should_defer(&DeferInput { srtt: None, ..b }), Defer::SendNow);
    }

    #[test]
    fn the_peer_window_can_be_the_limit() {
        // 4 segments of room in the peer's window, plenty of cwnd: wait, not cwnd-limited.
        let b = base();
        let w = DeferInput { in_flight: 0, send_win: 4 * MSS, snd_wnd: 100 * MSS, ..b };
        assert_eq!(should_defer(&w), Defer::Wait { cwnd_limited: false });
    }
}
