//! BBR v1 congestion control, as Linux `net/ipv4/tcp_bbr.c` (6.x) does it.
//!
//! Reading list: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson, "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-
//! congestion-control-00 (BBR v1); Linux `net/ipv4/tcp_bbr.c` (the algorithm implemented here,
//! function by function: the names in comments are its functions), `lib/win_minmax.c` (the
//! windowed max filter), `net/ipv4/tcp_rate.c` (the rate samples, [`super::super::rate`]) and
//! `tcp_output.c` (`tcp_update_skb_after_send`: the internal pacing the sender applies at
//! [`pacing_rate`](CongestionControl::pacing_rate)).
//!
//! The model, on every ACK (`bbr_main`): the bottleneck bandwidth is the windowed maximum of the
//! delivery-rate samples over 10 packet-timed rounds; the propagation RTT the minimum RTT
//! sample over 10 s. The pacing rate is pacing_gain × bw × 99 %; cwnd is cwnd_gain × bw ×
//! min_rtt plus 3 TSO-sized buffers (`bbr_quantization_budget`), approached by growing with
//! every packet delivered. STARTUP paces and windows at 2/ln 2 until three rounds bring less
//! than 25 % more bandwidth; DRAIN paces at ln 2 / 2 until what is in flight is one BDP;
//! PROBE_BW cycles the pacing gain through 1.25, 0.75 and six phases of 1, each about one min_rtt
//! long, starting at a random phase (not the 0.75 one) from the end's seeded stream; when the
//! min_rtt estimate is 10 s old, PROBE_RTT caps cwnd at 4 packets for 200 ms and a round. On
//! entering loss recovery cwnd follows packet conservation for a round, then grows by what is
//! delivered, and the cwnd from before the recovery is restored when it ends
//! (`bbr_set_cwnd_to_recover_or_restore`). Long-term bandwidth sampling detects token-bucket
//! policers (two intervals of 4+ rounds with ≥ 20 % loss and consistent throughput) and then
//! paces at their average for 48 rounds. The ACK-aggregation allowance (`extra_acked`) adds the
//! largest recent excess of data acked over the bandwidth estimate to cwnd.
//!
//! Arithmetic is Linux's fixed point: bandwidth in packets per µs << 24, gains in 1/256, times in
//! µs. Counts are packets of SMSS bytes; `tcb.cwnd` holds cwnd × SMSS.
//!
//! Not modelled: `undo_cwnd` (our TCP does not undo spurious recoveries), `snd_cwnd_clamp`,
//! `sk_max_pacing_rate` (both unlimited by default), and `bbr_min_tso_segs`'s effect on the
//! sender's TSO buffers (with `tso` on, buffers take TCP's own minimum of 2 segments); the TSO
//! goal in the cwnd budget (`bbr_tso_segs_goal`) is computed as Linux does, whether or not `tso`
//! models the buffers on the wire. Timers run on nanosecond time, not jiffies.

use super::{AckSample, BuildCc, CaState, CcInfo, CongestionControl, LossEvent, RateSample, RtoEvent, TxStart};
use crate::engine::SimRng;
use crate::time::{Dur, SimTime};
use crate::transport::tcp::{Behaviours, Tcb, INITIAL_SSTHRESH};
use crate::units::{serde_units, Rate};
use serde::{Deserialize, Serialize};

/// Bandwidth unit: packets per µs << 24 (`BW_SCALE`).
const BW_SCALE: u32 = 24;
const BW_UNIT: u64 = 1 << BW_SCALE;
/// Gain unit: 1/256 (`BBR_SCALE`).
const BBR_SCALE: u32 = 8;
const BBR_UNIT: u64 = 1 << BBR_SCALE;
/// Phases of the PROBE_BW gain cycle, and their pacing gains (`bbr_pacing_gain`).
const CYCLE_LEN: usize = 8;
const PACING_GAIN: [u64; CYCLE_LEN] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// The first phase is drawn from the phases other than the draining one (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Fewest packets kept in flight, and PROBE_RTT's cwnd (`bbr_cwnd_min_target`).
const CWND_MIN_TARGET: u64 = 4;
/// STARTUP ends after `FULL_BW_CNT` rounds without `FULL_BW_THRESH` (1.25×) growth.
const FULL_BW_THRESH: u64 = BBR_UNIT * 5 / 4;
const FULL_BW_CNT: u32 = 3;
/// Below this pacing rate (bit/s) one-segment TSO buffers suffice (`bbr_min_tso_rate`).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// `sk_pacing_shift`: a TSO buffer holds about 1 ms at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER` (MAX_TCP_HEADER = 320 bytes on x86-64).
const GSO_MAX_BYTES: u64 = 65_536 - 1 - 320;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;
/// Long-term sampling (`bbr_lt_*`): rounds per interval (at least 4, at most 16), the loss ratio
/// that makes an interval lossy (50/256 ≈ 20 %), the consistency bounds of two intervals'
/// bandwidths (1/8 apart, or 4 kbit/s), and how long lt_bw serves (48 rounds).
const LT_INTVL_MIN_RTTS: u32 = 4;
const LT_LOSS_THRESH: u64 = 50;
const LT_BW_RATIO: u64 = BBR_UNIT / 8;
const LT_BW_DIFF_BYTES_PER_S: u64 = 4000 / 8;
const LT_BW_MAX_RTTS: u32 = 48;
/// ACK aggregation (`bbr_extra_acked_*`): window of the max filter in rounds, the epoch reset
/// threshold, and the cap of the allowance (100 ms at the bandwidth estimate).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u64 = 1 << 20;
const EXTRA_ACKED_MAX_US: u64 = 100_000;

/// BBR parameters (Linux `tcp_bbr.c` constants as defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BbrConfig {
    /// STARTUP's pacing and cwnd gain; DRAIN paces at its inverse. Default 2.885 (2/ln 2,
    /// `bbr_high_gain`, applied as 739/256). Range: above 1, below 4.
    pub high_gain: f64,
    /// PROBE_BW's cwnd gain. Default 2 (`bbr_cwnd_gain`). Range: above 0, below 4.
    pub cwnd_gain: f64,
    /// Window of the max-bandwidth filter, packet-timed rounds. Default 10 (`bbr_bw_rtts`).
    /// Range: 1 to 1000.
    pub bw_window_rounds: u32,
    /// Window of the min-RTT filter, time. Default `"10s"` (`bbr_min_rtt_win_sec`). Range: 1 ms to
    /// 1 h.
    #[serde(with = "serde_units::time")]
    pub min_rtt_window: Dur,
    /// Least time spent at 4 packets in PROBE_RTT, time. Default `"200ms"`
    /// (`bbr_probe_rtt_mode_ms`); `"0s"` turns PROBE_RTT off. Range: at most `min_rtt_window`.
    #[serde(with = "serde_units::time")]
    pub probe_rtt_time: Dur,
    /// How far below the bandwidth estimate to pace, percent. Default 1
    /// (`bbr_pacing_margin_percent`). Range: 0 to 99.
    pub pacing_margin_pct: u32,
    /// Long-term bandwidth sampling and policer detection (`bbr_lt_bw_sampling`). Default true.
    pub lt_bw: bool,
    /// The ACK-aggregation allowance in cwnd (`bbr_extra_acked_gain`). Default true.
    pub ack_aggregation: bool,
}

impl Default for BbrConfig {
    fn default() -> Self {
        BbrConfig {
            high_gain: 2.885,
            cwnd_gain: 2.0,
            bw_window_rounds: 10,
            min_rtt_window: Dur::from_secs(10),
            probe_rtt_time: Dur::from_millis(200),
            pacing_margin_pct: 1,
            lt_bw: true,
            ack_aggregation: true,
        }
    }
}

/// A gain in 1/256 units, as Linux's constants round them (2.885 → 739).
fn gain_units(g: f64) -> u64 {
    (g * BBR_UNIT as f64).round() as u64
}

impl BuildCc for BbrConfig {
    fn build(&self) -> Box<dyn CongestionControl> {
        Box::new(Bbr::new(self, SimRng::stream(0, "bbr")))
    }
    fn build_seeded(&self, _b: &Behaviours, rng: SimRng) -> Box<dyn CongestionControl> {
        Box::new(Bbr::new(self, rng))
    }
    fn validate(&self) -> Result<(), String> {
        if !(self.high_gain > 1.0 && self.high_gain < 4.0) {
            return Err(format!("cc.high_gain: must be above 1 and below 4, got {}", self.high_gain));
        }
        if !(self.cwnd_gain > 0.0 && self.cwnd_gain < 4.0) {
            return Err(format!("cc.cwnd_gain: must be above 0 and below 4, got {}", self.cwnd_gain));
        }
        if !(1..=1000).contains(&self.bw_window_rounds) {
            return Err(format!("cc.bw_window_rounds: must be 1 to 1000 rounds, got {}", self.bw_window_rounds));
        }
        if self.min_rtt_window < Dur::from_millis(1) || self.min_rtt_window > Dur::from_secs(3600) {
            return Err(format!("cc.min_rtt_window: must be 1ms to 1h, got {}s", self.min_rtt_window.as_secs_f64()));
        }
        if self.probe_rtt_time > self.min_rtt_window {
            return Err(format!(
                "cc.probe_rtt_time: must be at most min_rtt_window ({}s), got {}s",
                self.min_rtt_window.as_secs_f64(),
                self.probe_rtt_time.as_secs_f64()
            ));
        }
        if self.pacing_margin_pct > 99 {
            return Err(format!("cc.pacing_margin_pct: must be 0 to 99 percent, got {}", self.pacing_margin_pct));
        }
        Ok(())
    }
}

/// BBR's modes (`enum bbr_mode`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Discover and share bandwidth: pace around the estimate.
    ProbeBw,
    /// Cut what is in flight to re-measure the propagation RTT.
    ProbeRtt,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Kathleen Nichols' windowed max filter (`lib/win_minmax.c`): the best, second and third best
/// samples, (time, value), with times in rounds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowedMax {
    s: [(u64, u64); 3],
}

impl WindowedMax {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }
    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }
    /// `minmax_running_max`: takes the sample `v` at time `t`; returns the windowed max.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = (t, v);
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v); // a new max, or nothing left in the window
        }
        if v >= self.s[1].1 {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].1 {
            self.s[2] = val;
        }
        // `minmax_subwin_update`: as time passes, promote the 2nd and 3rd choices.
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// BBR's state (`struct bbr`), with its parameters.
#[derive(Clone, Debug)]
pub struct Bbr {
    // Parameters, in Linux's units.
    high_gain: u64,
    drain_gain: u64,
    cwnd_gain_probe_bw: u64,
    bw_rtts: u64,
    min_rtt_win: Dur,
    probe_rtt_time: Dur,
    margin_pct: u64,
    lt_enabled: bool,
    extra_acked_enabled: bool,
    rng: SimRng,
    /// `bbr_init` has run (at the first data sent, or the first ACK).
    started: bool,
    // `struct bbr`.
    min_rtt_us: Option<u64>,
    min_rtt_stamp: SimTime,
    probe_rtt_done_stamp: Option<SimTime>,
    bw: WindowedMax,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: SimTime,
    mode: Mode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_delivered: u64,
    lt_last_stamp_ms: u64,
    lt_last_lost: u64,
    pacing_gain: u64,
    cwnd_gain: u64,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: usize,
    has_seen_rtt: bool,
    /// cwnd before a recovery or PROBE_RTT cut it, packets.
    prior_cwnd: u64,
    full_bw: u64,
    ack_epoch_mstamp: SimTime,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    // What BBR sets in the socket: `sk_pacing_rate` (payload bytes/s; `None` before
    // `bbr_init`), and ssthresh (bytes), which the transport's timeout must not change.
    pacing_rate: Option<u64>,
    ssthresh: u64,
    /// PROBE_RTT asked for the coming samples to be application-limited.
    mark_app_limited: bool,
}

impl Bbr {
    pub fn new(c: &BbrConfig, rng: SimRng) -> Self {
        let high_gain = gain_units(c.high_gain);
        Bbr {
            high_gain,
            // `bbr_drain_gain` = BBR_UNIT * 1000 / 2885: the inverse of the high gain (88/256).
            drain_gain: BBR_UNIT * BBR_UNIT / high_gain,
            cwnd_gain_probe_bw: gain_units(c.cwnd_gain),
            bw_rtts: c.bw_window_rounds as u64,
            min_rtt_win: c.min_rtt_window,
            probe_rtt_time: c.probe_rtt_time,
            margin_pct: c.pacing_margin_pct as u64,
            lt_enabled: c.lt_bw,
            extra_acked_enabled: c.ack_aggregation,
            rng,
            started: false,
            min_rtt_us: None,
            min_rtt_stamp: SimTime::ZERO,
            probe_rtt_done_stamp: None,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: SimTime::ZERO,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp_ms: 0,
            lt_last_lost: 0,
            pacing_gain: high_gain,
            cwnd_gain: high_gain,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: SimTime::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            pacing_rate: None,
            ssthresh: INITIAL_SSTHRESH,
            mark_app_limited: false,
        }
    }

    // ---- Queries. ----

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// Packet-timed rounds so far (`rtt_cnt`).
    pub fn round(&self) -> u64 {
        self.rtt_cnt
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// The windowed max bandwidth, packets/µs << 24.
    pub fn max_bw(&self) -> u64 {
        self.bw.get()
    }
    /// The bandwidth in use: the long-term estimate while policed, else the windowed max.
    pub fn bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    pub fn min_rtt_us(&self) -> Option<u64> {
        self.min_rtt_us
    }
    /// Pacing and cwnd gains, 1/256 units.
    pub fn gains(&self) -> (u64, u64) {
        (self.pacing_gain, self.cwnd_gain)
    }
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    /// The pacing rate, payload bytes per second (`sk_pacing_rate`).
    pub fn pacing_rate_bytes(&self) -> Option<u64> {
        self.pacing_rate
    }

    // ---- Units. ----

    /// `bbr_rate_bytes_per_sec`: a bandwidth (packets/µs << 24) times a gain, less the pacing
    /// margin, in payload bytes per second.
    fn rate_bytes_per_sec(&self, rate: u64, gain: u64, mss: u64) -> u64 {
        let r = rate as u128 * mss as u128 * gain as u128 >> BBR_SCALE;
        let r = r * (1_000_000 / 100 * (100 - self.margin_pct as u128));
        (r >> BW_SCALE).min(u64::MAX as u128) as u64
    }

    /// `bbr_init_pacing_rate_from_rtt`'s rate: high_gain × cwnd / SRTT (1 ms before any RTT
    /// sample; the caller notes `has_seen_rtt`).
    fn initial_pacing_rate(&self, tcb: &Tcb) -> u64 {
        let rtt_us = tcb.srtt.map_or(1_000, |s| (s.as_nanos() / 1_000).max(1));
        let bw = cwnd_pkts(tcb) * BW_UNIT / rtt_us;
        self.rate_bytes_per_sec(bw, self.high_gain, tcb.mss)
    }

    /// `bbr_set_pacing_rate`: pace at bw × gain, never lower in STARTUP.
    fn set_pacing_rate(&mut self, bw: u64, gain: u64, tcb: &Tcb) {
        let rate = self.rate_bytes_per_sec(bw, gain, tcb.mss);
        if !self.has_seen_rtt && tcb.srtt.is_some() {
            self.pacing_rate = Some(self.initial_pacing_rate(tcb));
            self.has_seen_rtt = true;
        }
        if self.full_bw_reached || self.pacing_rate.map_or(true, |p| rate > p) {
            self.pacing_rate = Some(rate);
        }
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self) -> u64 {
        if self.pacing_rate.unwrap_or(0) < MIN_TSO_RATE_BPS / 8 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: segments per TSO buffer, about 1 ms at the pacing rate.
    pub fn tso_segs_goal(&self, mss: u64) -> u64 {
        let bytes = (self.pacing_rate.unwrap_or(0) >> PACING_SHIFT).min(GSO_MAX_BYTES);
        (bytes / mss.max(1)).max(self.min_tso_segs()).min(0x7f)
    }

    /// `bbr_save_cwnd`: the last known good cwnd, restored after a recovery or PROBE_RTT.
    fn save_cwnd(&mut self, cwnd: u64) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ⌈bw × min_rtt × gain⌉ packets (the initial window before any RTT sample).
    pub fn bdp(&self, bw: u64, gain: u64) -> u64 {
        let Some(min_rtt) = self.min_rtt_us else {
            return TCP_INIT_CWND;
        };
        let w = bw as u128 * min_rtt as u128;
        (((w * gain as u128) >> BBR_SCALE) + BW_UNIT as u128 - 1).div_euclid(BW_UNIT as u128) as u64
    }

    /// `bbr_quantization_budget`: room for 3 TSO buffers, rounded up to even, +2 in the probing
    /// phase so that even a small BDP gets above the target.
    fn quantization_budget(&self, cwnd: u64, mss: u64) -> u64 {
        let cwnd = cwnd + 3 * self.tso_segs_goal(mss);
        let cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd + 2
        } else {
            cwnd
        }
    }

    /// `bbr_inflight`: the in-flight target for `bw` and `gain`, packets.
    pub fn inflight(&self, bw: u64, gain: u64, mss: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain), mss)
    }

    /// `bbr_packets_in_net_at_edt`: what will still be in the network when the next segment
    /// leaves under pacing (with that segment's buffer when probing upwards).
    fn packets_in_net_at_edt(&self, inflight_now: u64, rs: &RateSample, mss: u64) -> u64 {
        let edt = rs.next_departure.max(rs.now);
        let interval_us = edt.since(rs.now).as_nanos() / 1_000;
        let interval_delivered = (self.bw() as u128 * interval_us as u128 >> BW_SCALE) as u64;
        let mut at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            at_edt += self.tso_segs_goal(mss);
        }
        at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`: the allowance for ACK aggregation, once the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.extra_acked_enabled || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = (self.bw() as u128 * EXTRA_ACKED_MAX_US as u128 / BW_UNIT as u128) as u64;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    // ---- cwnd. ----

    /// `bbr_set_cwnd_to_recover_or_restore`: returns the cwnd to apply and whether packet
    /// conservation decides it. `delivered`: `tp->delivered` (this ACK's deliveries counted).
    fn recover_or_restore(&mut self, rs: &RateSample, acked: u64, cwnd: u64, delivered: u64) -> (u64, bool) {
        let (prev, state) = (self.prev_ca_state, rs.ca_state);
        let mut cwnd = cwnd;
        // An ACK for P packets releases at most 2P: first take the losses off.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // The first round of recovery: packet conservation, from what is really in flight.
            self.packet_conservation = true;
            self.next_rtt_delivered = delivered; // start a round now
            cwnd = rs.in_flight + acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            // Recovery is over: restore the cwnd from before it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(rs.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// The cwnd `bbr_set_cwnd` aims at: gain × BDP, the ACK-aggregation allowance, and the
    /// quantization budget.
    pub fn target_cwnd(&self, bw: u64, gain: u64, mss: u64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd(), mss)
    }

    /// `bbr_set_cwnd`: slow-start toward the target (or snap down to it once the pipe was full).
    fn set_cwnd(&mut self, rs: &RateSample, acked: u64, bw: u64, gain: u64, tcb: &mut Tcb, delivered: u64) {
        let mut cwnd = cwnd_pkts(tcb);
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(rs, acked, cwnd, delivered);
            cwnd = c;
            if !conserving {
                let target = self.target_cwnd(bw, gain, tcb.mss);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET);
        }
        tcb.cwnd = cwnd.max(1) * tcb.mss;
    }

    // ---- The gain cycle. ----

    /// `bbr_is_next_cycle_phase`: a phase lasts a min_rtt, a probing phase until in flight reached
    /// its target (or losses), a draining one no longer than until in flight is down to a BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample, tcb: &Tcb) -> bool {
        let min_rtt = self.min_rtt_us.unwrap_or(u64::MAX);
        let is_full_length = tcb.delivered_mstamp.since(self.cycle_mstamp).as_nanos() / 1_000 > min_rtt;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight, rs, tcb.mss);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain, tcb.mss));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT, tcb.mss)
    }

    fn advance_cycle_phase(&mut self, tcb: &Tcb) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = tcb.delivered_mstamp;
    }

    /// `bbr_reset_probe_bw_mode`: PROBE_BW at a random phase other than the draining one.
    fn reset_probe_bw_mode(&mut self, tcb: &Tcb) {
        self.mode = Mode::ProbeBw;
        let r = ((self.rng.uniform() * CYCLE_RAND as f64) as u64).min(CYCLE_RAND - 1);
        self.cycle_idx = CYCLE_LEN - 1 - r as usize;
        self.advance_cycle_phase(tcb);
    }

    fn reset_mode(&mut self, tcb: &Tcb) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(tcb);
        } else {
            self.mode = Mode::Startup;
        }
    }

    // ---- Long-term bandwidth (policer detection). ----

    fn reset_lt_bw_sampling_interval(&mut self, tcb: &Tcb) {
        self.lt_last_stamp_ms = tcb.delivered_mstamp.as_nanos() / 1_000_000;
        self.lt_last_delivered = tcb.delivered;
        self.lt_last_lost = tcb.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, tcb: &Tcb) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals mean a policer.
    fn lt_bw_interval_done(&mut self, bw: u64, tcb: &Tcb) {
        if self.lt_bw > 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(diff, BBR_UNIT, tcb.mss) <= LT_BW_DIFF_BYTES_PER_S
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tcb);
    }

    /// `bbr_lt_bw_sampling`, with the sample's losses and application-limited flag.
    fn lt_bw_sampling(&mut self, losses: u64, app_limited: bool, tcb: &Tcb) {
        if !self.lt_enabled {
            return;
        }
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tcb);
                    self.reset_probe_bw_mode(tcb);
                }
            }
            return;
        }
        // Sampling starts at the first loss, once a policer would have spent its tokens.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tcb);
            self.lt_is_sampling = true;
        }
        if app_limited {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tcb);
            return;
        }
        // The interval ends at a loss (the tokens are spent).
        if losses == 0 {
            return;
        }
        let lost = tcb.lost - self.lt_last_lost;
        let delivered = tcb.delivered - self.lt_last_delivered;
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t_ms = (tcb.delivered_mstamp.as_nanos() / 1_000_000).saturating_sub(self.lt_last_stamp_ms);
        if t_ms < 1 {
            return;
        }
        let bw = delivered * BW_UNIT / (t_ms * 1_000);
        self.lt_bw_interval_done(bw, tcb);
    }

    // ---- The model. ----

    /// `bbr_update_bw`: rounds, and the max filter.
    fn update_bw(&mut self, rs: &RateSample, tcb: &Tcb) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        let interval_us = interval.as_nanos() / 1_000;
        if interval_us == 0 {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcb.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs.losses, rs.is_app_limited, tcb);
        let bw = delivered * BW_UNIT / interval_us;
        // An application-limited sample only counts if it shows at least the current estimate.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(self.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: the largest recent excess of data acked over bw × time.
    fn update_ack_aggregation(&mut self, rs: &RateSample, tcb: &Tcb) {
        if !self.extra_acked_enabled || rs.acked_sacked == 0 || rs.delivered.is_none() {
            return;
        }
        if rs.interval.map_or(true, |i| i.as_nanos() / 1_000 == 0) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = tcb.delivered_mstamp.since(self.ack_epoch_mstamp).as_nanos() / 1_000;
        let mut expected = (self.bw() as u128 * epoch_us as u128 / BW_UNIT as u128) as u64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tcb.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(cwnd_pkts(tcb));
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_check_full_bw_reached`: three rounds without 25 % more bandwidth fill the pipe.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let thresh = self.full_bw * FULL_BW_THRESH >> BBR_SCALE;
        if self.max_bw() >= thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP → DRAIN once the pipe is full, DRAIN → PROBE_BW once the queue
    /// it built is gone.
    fn check_drain(&mut self, rs: &RateSample, tcb: &mut Tcb) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), BBR_UNIT, tcb.mss) * tcb.mss;
            tcb.ssthresh = self.ssthresh;
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(rs.in_flight, rs, tcb.mss) <= self.inflight(self.max_bw(), BBR_UNIT, tcb.mss)
        {
            self.reset_probe_bw_mode(tcb);
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: SimTime, tcb: &mut Tcb) {
        if !self.probe_rtt_done_stamp.is_some_and(|d| now > d) {
            return;
        }
        self.min_rtt_stamp = now; // wait a while until the next PROBE_RTT
        tcb.cwnd = tcb.cwnd.max(self.prior_cwnd * tcb.mss);
        self.reset_mode(tcb);
    }

    /// `bbr_update_min_rtt`: the min-RTT filter, and PROBE_RTT.
    fn update_min_rtt(&mut self, rs: &RateSample, tcb: &mut Tcb) {
        let now = rs.now;
        let filter_expired = now > self.min_rtt_stamp + self.min_rtt_win;
        if let Some(rtt) = rs.rtt {
            let rtt_us = rtt.as_nanos() / 1_000;
            if self.min_rtt_us.map_or(true, |m| rtt_us <= m) || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = Some(rtt_us);
                self.min_rtt_stamp = now;
            }
        }
        if self.probe_rtt_time > Dur::ZERO && filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt; // dip: drain the queue
            self.save_cwnd(cwnd_pkts(tcb));
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Samples taken while in flight is cut say nothing of the path's bandwidth.
            self.mark_app_limited = true;
            if self.probe_rtt_done_stamp.is_none() && rs.in_flight <= CWND_MIN_TARGET {
                // At most 4 packets in flight: hold for probe_rtt_time and a round.
                self.probe_rtt_done_stamp = Some(now + self.probe_rtt_time);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tcb.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, tcb);
                }
            }
        }
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.high_gain, self.high_gain),
            Mode::Drain => (self.drain_gain, self.high_gain),
            Mode::ProbeBw => {
                (if self.lt_use_bw { BBR_UNIT } else { PACING_GAIN[self.cycle_idx] }, self.cwnd_gain_probe_bw)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_init`, when the connection starts sending (Linux runs it once established).
    fn start(&mut self, now: SimTime, tcb: &Tcb) {
        if self.started {
            return;
        }
        self.started = true;
        self.min_rtt_us = tcb.min_rtt.map(|r| r.as_nanos() / 1_000);
        self.min_rtt_stamp = now;
        self.pacing_rate = Some(self.initial_pacing_rate(tcb));
        self.has_seen_rtt = tcb.srtt.is_some();
        self.ack_epoch_mstamp = now;
        self.reset_lt_bw_sampling_interval(tcb);
    }
}

/// cwnd in packets.
fn cwnd_pkts(tcb: &Tcb) -> u64 {
    (tcb.cwnd / tcb.mss.max(1)).max(1)
}

impl CongestionControl for Bbr {
    /// BBR sets cwnd from its rate samples ([`on_rate_sample`](Self::on_rate_sample)).
    fn on_ack(&mut self, _ack: &AckSample, _tcb: &mut Tcb) {}

    /// `bbr_ssthresh`: remember the cwnd for after the recovery; cwnd and ssthresh stay.
    fn on_loss(&mut self, _loss: &LossEvent, tcb: &mut Tcb) {
        self.save_cwnd(cwnd_pkts(tcb));
    }

    /// `tcp_enter_loss` (`bbr_ssthresh` on the first timeout) and `bbr_set_state(TCP_CA_Loss)`:
    /// the round ends, full-pipe detection starts over, and long-term sampling sees a loss.
    fn on_rto(&mut self, rto: &RtoEvent, tcb: &mut Tcb) {
        self.start(rto.now, tcb);
        if rto.consecutive == 1 && !tcb.in_recovery {
            self.save_cwnd((rto.prior_cwnd / tcb.mss.max(1)).max(1));
        }
        tcb.ssthresh = self.ssthresh; // BBR's ssthresh is its own (the transport halved it)
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0;
        self.round_start = true;
        self.lt_bw_sampling(1, false, tcb);
    }

    fn pacing_rate(&self, tcb: &Tcb) -> Option<Rate> {
        let bytes = match self.pacing_rate {
            Some(r) => r,
            // Before `bbr_init`: what it will set.
            None => self.initial_pacing_rate(tcb),
        };
        Some(Rate(bytes.saturating_mul(8)))
    }

    fn rate_based(&self) -> bool {
        true
    }

    /// `bbr_main`.
    fn on_rate_sample(&mut self, rs: &RateSample, tcb: &mut Tcb) {
        self.start(rs.now, tcb);
        self.mark_app_limited = false;
        // `bbr_update_model`.
        self.update_bw(rs, tcb);
        self.update_ack_aggregation(rs, tcb);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs, tcb) {
            self.advance_cycle_phase(tcb);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(rs, tcb);
        self.update_min_rtt(rs, tcb);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, tcb);
        let delivered = tcb.delivered;
        self.set_cwnd(rs, rs.acked_sacked, bw, self.cwnd_gain, tcb, delivered);
    }

    fn app_limited(&self) -> bool {
        self.mark_app_limited
    }

    /// `bbr_cwnd_event(CA_EVENT_TX_START)`: restarting from idle, pace at the estimate (no
    /// need to go faster), and end a PROBE_RTT that idling has already served.
    fn on_tx_start(&mut self, ev: &TxStart, tcb: &mut Tcb) {
        self.start(ev.now, tcb);
        if !ev.app_limited {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = ev.now;
        self.ack_epoch_acked = 0;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), BBR_UNIT, tcb),
            Mode::ProbeRtt => self.check_probe_rtt_done(ev.now, tcb),
            _ => {}
        }
    }

    /// `bbr_get_info`.
    fn info(&self, tcb: &Tcb) -> Option<CcInfo> {
        let mss = tcb.mss as f64;
        Some(CcInfo {
            mode: self.mode.name(),
            round: self.rtt_cnt,
            bw_bps: self.bw() as f64 * mss * 8.0 * 1e6 / BW_UNIT as f64,
            min_rtt: self.min_rtt_us.map(|us| Dur::from_micros(us)),
            pacing_gain: self.pacing_gain as f64 / BBR_UNIT as f64,
            cwnd_gain: self.cwnd_gain as f64 / BBR_UNIT as f64,
            pacing_rate_bps: self.pacing_rate.unwrap_or(0) as f64 * 8.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    /// Drives BBR with synthetic ACKs: each delivers one packet, `1 / bw` after the previous, and
    /// samples `bw` over one `rtt` (so a round is bw × rtt ACKs long).
    struct Drive {
        bbr: Bbr,
        tcb: Tcb,
        now: SimTime,
    }

    impl Drive {
        fn new(seed: u64) -> Self {
            Drive::with(&BbrConfig::default(), seed)
        }
        fn with(c: &BbrConfig, seed: u64) -> Self {
            let mut tcb = Tcb::for_test(MSS, 10 * MSS);
            tcb.srtt = Some(Dur::from_millis(40));
            tcb.min_rtt = Some(Dur::from_millis(40));
            let mut bbr = Bbr::new(c, SimRng::stream(seed, "bbr-test"));
            bbr.on_tx_start(&TxStart { now: SimTime::ZERO, app_limited: true, idle: Dur::ZERO }, &mut tcb);
            Drive { bbr, tcb, now: SimTime::ZERO }
        }
        fn cwnd(&self) -> u64 {
            self.tcb.cwnd / MSS
        }
        /// One ACK at `bw_pps` packets/s over an RTT of `rtt`, with `in_flight` packets left.
        fn ack(&mut self, bw_pps: f64, rtt: Dur, in_flight: u64, f: impl FnOnce(&mut RateSample)) {
            self.now = self.now + Dur::from_secs_f64(1.0 / bw_pps);
            self.tcb.delivered += 1;
            self.tcb.delivered_mstamp = self.now;
            let per_rtt = (bw_pps * rtt.as_secs_f64()).round().max(1.0) as u64;
            let mut rs = RateSample {
                now: self.now,
                delivered: Some(per_rtt),
                interval: Some(Dur::from_secs_f64(per_rtt as f64 / bw_pps)),
                prior_delivered: self.tcb.delivered.saturating_sub(per_rtt),
                acked_sacked: 1,
                losses: 0,
                prior_in_flight: in_flight + 1,
                in_flight,
                is_app_limited: false,
                is_ack_delayed: false,
                rtt: Some(rtt),
                ca_state: CaState::Open,
                next_departure: self.now,
            };
            f(&mut rs);
            self.tcb.lost += rs.losses;
            self.bbr.on_rate_sample(&rs, &mut self.tcb);
        }
        /// What a paced sender has in flight: cwnd − 1, or a pacing rate's worth of one RTT.
        fn in_flight(&self, rtt: Dur) -> u64 {
            let pps = self.bbr.pacing_rate_bytes().unwrap_or(u64::MAX) as f64 / MSS as f64;
            self.cwnd().saturating_sub(1).min((pps * rtt.as_secs_f64()).ceil() as u64)
        }
        /// ACKs for `secs` seconds at `bw_pps`, with [`in_flight`](Self::in_flight).
        fn run(&mut self, secs: f64, bw_pps: f64, rtt: Dur) {
            self.run_with(secs, bw_pps, rtt, |_| {});
        }
        fn run_with(&mut self, secs: f64, bw_pps: f64, rtt: Dur, f: impl Fn(&mut RateSample)) {
            let end = self.now + Dur::from_secs_f64(secs);
            while self.now < end {
                let inf = self.in_flight(rtt);
                self.ack(bw_pps, rtt, inf, &f);
            }
        }
    }

    /// 10 Mbit/s of 1500-byte packets (payload 1448 B): 833.3 packets/s.
    const PPS: f64 = 10e6 / 8.0 / 1500.0;

    #[test]
    fn windowed_max_keeps_the_max_for_its_window_then_forgets_it() {
        let mut m = WindowedMax::default();
        assert_eq!(m.update(10, 0, 100), 100);
        for t in 1..=10 {
            assert_eq!(m.update(10, t, 50 + t), 100, "round {t}: still in the window");
        }
        // Round 11: the max is 11 rounds old; the best of the later samples takes over (the
        // filter keeps subwindow choices, so this is one of 51..=60, the 3rd choice or newer).
        let v = m.update(10, 11, 40);
        assert!((56..=60).contains(&v), "{v}");
        // A new max replaces everything at once.
        assert_eq!(m.update(10, 12, 200), 200);
        assert_eq!(m.update(10, 13, 10), 200);
        // Nothing left in the window: the sample itself.
        assert_eq!(m.update(10, 40, 7), 7);
    }

    /// STARTUP: the bandwidth estimate doubles each round while the window does; three rounds
    /// without 25 % growth end it (`bbr_full_bw_cnt`), DRAIN takes in flight down to one BDP
    /// (ssthresh set to it), and PROBE_BW follows.
    #[test]
    fn startup_ends_three_rounds_after_the_bandwidth_stops_growing() {
        let mut d = Drive::new(1);
        let rtt = Dur::from_millis(40);
        let mut bw = 40.0;
        let mut flat_from = None;
        let mut drain_round = None;
        for _ in 0..5000 {
            if d.bbr.mode() != Mode::Startup {
                drain_round = Some(d.bbr.round());
                break;
            }
            // Before the pipe is full the rate follows the window (cwnd per RTT), capped at PPS.
            bw = (d.cwnd() as f64 / rtt.as_secs_f64()).min(PPS).max(bw);
            if bw >= PPS && flat_from.is_none() {
                flat_from = Some(d.bbr.round());
            }
            let inf = d.cwnd().saturating_sub(1);
            d.ack(bw, rtt, inf, |_| {});
        }
        let (flat, drain) = (flat_from.unwrap(), drain_round.expect("STARTUP ended"));
        assert!(d.bbr.full_bw_reached());
        assert!((flat + 2..=flat + 4).contains(&drain), "bandwidth flat from round {flat}, STARTUP ended in round {drain}");
        assert_eq!(d.bbr.mode(), Mode::Drain, "in flight is still above one BDP");
        let bdp_target = d.bbr.inflight(d.bbr.max_bw(), BBR_UNIT, MSS);
        assert_eq!(d.tcb.ssthresh, bdp_target * MSS, "bbr_check_drain sets ssthresh to the BDP target");
        assert_eq!(d.bbr.gains(), (88, 739), "DRAIN paces at 1/high_gain and keeps the high cwnd gain");
        // In flight falls to the target: PROBE_BW.
        d.ack(PPS, rtt, bdp_target, |_| {});
        assert_eq!(d.bbr.mode(), Mode::ProbeBw);
    }

    /// cwnd in PROBE_BW = 2 × BDP + 3 TSO goals, rounded up to even (`bbr_quantization_budget`),
    /// + 2 in the probing phase; the pacing rate = gain × bw × 99 %.
    #[test]
    fn probe_bw_cwnd_and_pacing_rate_follow_the_model() {
        let mut d = Drive::with(&BbrConfig { ack_aggregation: false, ..Default::default() }, 3);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        assert_eq!(d.bbr.mode(), Mode::ProbeBw);
        // bw = 33 packets over 39.6 ms; BDP = bw × 40 ms = 33.33 packets.
        let bw_pps = d.bbr.max_bw() as f64 * 1e6 / BW_UNIT as f64;
        assert!((bw_pps / PPS - 1.0).abs() < 0.01, "{bw_pps}");
        let bdp = bw_pps * 0.040;
        // TSO goal: pacing ≈ 1.2 MB/s, >> 10 = 1.2 kB < 1 segment, so the minimum of 2 (rate ≥
        // 1.2 Mbit/s): 3 × 2 = 6 packets.
        assert_eq!(d.bbr.tso_segs_goal(MSS), 2);
        let want = |gain: f64, probing: bool| {
            let c = (gain * bdp).ceil() as u64 + 6;
            (c + 1) / 2 * 2 + if probing { 2 } else { 0 }
        };
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..4000 {
            let inf = d.cwnd().saturating_sub(1);
            d.ack(PPS, rtt, inf, |_| {});
            let probing = d.bbr.cycle_idx() == 0;
            // Entering the probing phase cwnd grows to its +2 by one packet per ACK; leaving it,
            // cwnd snaps back down.
            let w = want(2.0, probing);
            assert!(d.cwnd() == w || (probing && d.cwnd() + 2 >= w && d.cwnd() < w), "cycle phase {}: {} vs {w}", d.bbr.cycle_idx(), d.cwnd());
            let (pg, _) = d.bbr.gains();
            let rate = d.bbr.pacing_rate_bytes().unwrap() as f64;
            let model = pg as f64 / 256.0 * bw_pps * MSS as f64 * 0.99;
            assert!((rate / model - 1.0).abs() < 1e-3, "pacing {rate} vs {model}");
            seen.insert(pg);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![192, 256, 320], "gains 0.75, 1, 1.25");
        // A 1 % pacing margin: pacing_margin_pct = 0 paces at the estimate itself.
        let mut d0 = Drive::with(&BbrConfig { pacing_margin_pct: 0, ..Default::default() }, 3);
        d0.run(3.0, PPS, rtt);
        let r0 = d0.bbr.rate_bytes_per_sec(d0.bbr.max_bw(), BBR_UNIT, MSS) as f64;
        let r1 = d.bbr.rate_bytes_per_sec(d0.bbr.max_bw(), BBR_UNIT, MSS) as f64;
        assert!((r1 / r0 - 0.99).abs() < 1e-6);
    }

    /// The gain cycle: 1.25, 0.75, then six phases of 1, each at least one min_rtt of
    /// deliveries long; the probing phase lasts until in flight reaches 1.25 × BDP (+ budget),
    /// the draining one ends as soon as in flight is down to one BDP (+ budget).
    #[test]
    fn probe_bw_cycles_its_eight_gains() {
        let mut d = Drive::new(5);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        let target = |d: &Drive, g: u64| d.bbr.inflight(d.bbr.max_bw(), g, MSS);
        // Follow 24 phases: in flight at the 1.25 target while probing, at the BDP target
        // while draining, and in between at cruise.
        let mut phases: Vec<(u64, SimTime)> = vec![(d.bbr.gains().0, d.now)];
        while phases.len() < 25 {
            let (g, idx) = (d.bbr.gains().0, d.bbr.cycle_idx());
            // (The sample's prior in flight is one more than what is left.)
            let inf = match g {
                320 => target(&d, 320),
                192 => target(&d, 256) - 1,
                _ => target(&d, 256) + 1,
            };
            d.ack(PPS, rtt, inf, |_| {});
            if d.bbr.cycle_idx() != idx {
                phases.push((d.bbr.gains().0, d.now));
            }
        }
        let gains: Vec<u64> = phases.iter().map(|p| p.0).collect();
        // (phases[0] is where the test started, mid-phase: the first whole phase is phases[1].)
        let i = 1 + gains[1..].iter().position(|&g| g == 320).unwrap();
        assert_eq!(&gains[i..i + 9], &[320, 192, 256, 256, 256, 256, 256, 256, 320], "{gains:?}");
        // The draining phase ends at once (in flight is at the BDP target already); the others
        // last a min_rtt (40 ms) of deliveries.
        let len = |k: usize| phases[k + 1].1.since(phases[k].1);
        assert!(len(i + 1) < Dur::from_millis(5), "drain phase {:?}", len(i + 1));
        for k in [i, i + 2, i + 3] {
            assert!(len(k) >= Dur::from_millis(40) && len(k) <= Dur::from_millis(42), "phase {k}: {:?}", len(k));
        }
    }

    /// PROBE_BW starts at a random phase drawn from the end's stream: never the draining phase
    /// (index 1), each of the other seven about equally often.
    #[test]
    fn the_first_gain_phase_is_random_but_never_the_draining_one() {
        let mut count = [0u32; CYCLE_LEN];
        for seed in 0..700 {
            let mut d = Drive::new(seed);
            d.run(1.5, PPS, Dur::from_millis(40));
            assert_eq!(d.bbr.mode(), Mode::ProbeBw);
            // The phase PROBE_BW began in: reset_probe_bw_mode ran once; replay it.
            let mut b = Bbr::new(&BbrConfig::default(), SimRng::stream(seed, "bbr-test"));
            b.reset_probe_bw_mode(&d.tcb);
            count[b.cycle_idx()] += 1;
        }
        assert_eq!(count[1], 0);
        for (i, c) in count.iter().enumerate().filter(|(i, _)| *i != 1) {
            assert!((70..=130).contains(c), "phase {i} drawn {c} times of 700");
        }
        // The same seed gives the same phase.
        let a = Drive::new(9);
        let b = Drive::new(9);
        assert_eq!(a.bbr.rng.clone().next_u64(), b.bbr.rng.clone().next_u64());
    }

    /// PROBE_RTT: once the min_rtt estimate is 10 s old, cwnd drops to 4 packets; after 200 ms
    /// at ≤ 4 in flight and a round, the cwnd from before is restored and PROBE_BW resumes; the
    /// next PROBE_RTT comes 10 s after the end of this one.
    #[test]
    fn probe_rtt_every_ten_seconds_for_200_ms_at_four_packets() {
        let mut d = Drive::new(2);
        // The handshake measured 40 ms; data sees 42 ms (a queue), 41 ms in PROBE_RTT, so
        // min_rtt is refreshed only by PROBE_RTT.
        let rtt_of = |m: Mode| Dur::from_millis(if m == Mode::ProbeRtt { 41 } else { 42 });
        let mut entries = vec![];
        let mut exits = vec![];
        let mut prior = 0;
        let end = SimTime(Dur::from_secs(31).as_nanos());
        while d.now < end {
            let before = d.bbr.mode();
            let before_cwnd = d.cwnd();
            let rtt = rtt_of(before);
            let inf = d.in_flight(rtt);
            d.ack(PPS, rtt, inf, |_| {});
            match (before, d.bbr.mode()) {
                (b, Mode::ProbeRtt) if b != Mode::ProbeRtt => {
                    entries.push(d.now);
                    prior = before_cwnd;
                    assert_eq!(d.cwnd(), 4, "cwnd capped at 4 packets");
                }
                (Mode::ProbeRtt, m) if m != Mode::ProbeRtt => {
                    exits.push(d.now);
                    assert_eq!(m, Mode::ProbeBw);
                    // The saved cwnd comes back (+ this ACK), capped by PROBE_BW's target at once.
                    let target = d.bbr.target_cwnd(d.bbr.max_bw(), 2 * BBR_UNIT, MSS);
                    assert_eq!(d.cwnd(), (prior + 1).min(target));
                }
                (Mode::ProbeRtt, Mode::ProbeRtt) => assert!(d.cwnd() <= 4),
                _ => {}
            }
        }
        assert_eq!(entries.len(), 3, "PROBE_RTT at {entries:?}");
        assert_eq!(exits.len(), 3);
        // The first at 10 s after the handshake sample (bbr_init at t = 0).
        assert!((entries[0].as_secs_f64() - 10.0).abs() < 0.01, "{:?}", entries[0]);
        for k in 0..3 {
            let held = exits[k].since(entries[k]);
            assert!(held > Dur::from_millis(200) && held < Dur::from_millis(260), "PROBE_RTT {k} held {held:?}");
        }
        for k in 1..3 {
            let gap = entries[k].since(exits[k - 1]);
            assert!((gap.as_secs_f64() - 10.0).abs() < 0.05, "next PROBE_RTT {gap:?} after the last ended");
        }
        // The 41 ms sample taken once the filter expired is the new min_rtt.
        assert_eq!(d.bbr.min_rtt_us(), Some(41_000));
        // PROBE_RTT off: never.
        let mut off = Drive::with(&BbrConfig { probe_rtt_time: Dur::ZERO, ..Default::default() }, 2);
        while off.now < end {
            let rtt = rtt_of(Mode::ProbeBw);
            let inf = off.in_flight(rtt);
            off.ack(PPS, rtt, inf, |_| {});
            assert_ne!(off.bbr.mode(), Mode::ProbeRtt);
        }
    }

    /// Loss recovery (`bbr_set_cwnd_to_recover_or_restore`): entering it, cwnd = in flight +
    /// delivered (packet conservation) for a round, less any new losses; after that round cwnd
    /// grows by what is delivered; leaving it restores the cwnd saved on entry.
    #[test]
    fn recovery_conserves_packets_then_restores_the_prior_cwnd() {
        let mut d = Drive::new(4);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        let before = d.cwnd();
        assert!(before > 60, "{before}");
        // Fast retransmit: the transport asks for ssthresh; BBR saves cwnd, changes nothing.
        let ev = LossEvent { now: d.now, kind: super::super::LossKind::FastRetransmit, flight_size: 0, base: 0 };
        d.tcb.in_recovery = true;
        d.bbr.on_loss(&ev, &mut d.tcb);
        assert_eq!(d.cwnd(), before);
        // The first ACK in recovery: 3 losses marked, 40 in flight.
        d.ack(PPS, rtt, 40, |rs| {
            rs.ca_state = CaState::Recovery;
            rs.losses = 3;
        });
        assert_eq!(d.cwnd(), 41, "packet conservation: in flight + delivered");
        d.ack(PPS, rtt, 40, |rs| rs.ca_state = CaState::Recovery);
        assert_eq!(d.cwnd(), 41);
        // A later loss in the same round: cwnd − losses, but never below in flight + delivered.
        d.ack(PPS, rtt, 38, |rs| {
            rs.ca_state = CaState::Recovery;
            rs.losses = 2;
        });
        assert_eq!(d.cwnd(), 39);
        // Past a round, conservation ends: cwnd grows by what each ACK delivers.
        for _ in 0..40 {
            d.ack(PPS, rtt, 30, |rs| rs.ca_state = CaState::Recovery);
        }
        let grown = d.cwnd();
        d.ack(PPS, rtt, 30, |rs| rs.ca_state = CaState::Recovery);
        assert_eq!(d.cwnd(), grown + 1);
        // Recovery ends: the saved cwnd comes back (+ this ACK), capped by the target.
        d.tcb.in_recovery = false;
        d.ack(PPS, rtt, 30, |_| {});
        let target = d.bbr.target_cwnd(d.bbr.max_bw(), 2 * BBR_UNIT, MSS);
        assert!(grown + 1 < before);
        assert_eq!(d.cwnd(), (before + 1).min(target), "restored to the saved cwnd {before}");
    }

    /// A timeout: the round ends, full-pipe detection starts over (full_bw = 0), and BBR's
    /// ssthresh stands (the transport halved it); cwnd then grows back by what is delivered.
    #[test]
    fn a_timeout_keeps_bbrs_ssthresh_and_regrows_the_window() {
        let mut d = Drive::new(6);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        let ssthresh = d.tcb.ssthresh;
        let prior = d.tcb.cwnd;
        d.tcb.cwnd = MSS;
        d.tcb.ssthresh = 2 * MSS;
        d.bbr.on_rto(&RtoEvent { now: d.now, flight_size: prior, prior_cwnd: prior, prior_ssthresh: u64::MAX, consecutive: 1 }, &mut d.tcb);
        assert_eq!(d.tcb.ssthresh, ssthresh);
        assert_eq!(d.bbr.full_bw, 0);
        assert!(d.bbr.full_bw_reached(), "the pipe stays known to be full");
        for k in 0..10 {
            d.ack(PPS, rtt, k, |rs| rs.ca_state = CaState::Loss);
        }
        assert_eq!(d.cwnd(), 13, "at least 4 (bbr_cwnd_min_target), then one more per packet delivered");
        d.ack(PPS, rtt, 10, |_| {});
        assert_eq!(d.cwnd(), prior / MSS, "leaving the loss state restores the saved cwnd");
    }

    /// Application-limited samples lower no estimate: a sample below the max only counts when
    /// it is not application-limited.
    #[test]
    fn app_limited_samples_only_raise_the_estimate() {
        let mut d = Drive::new(7);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        let bw = d.bbr.max_bw();
        // 11 rounds of half-rate, app-limited samples: the estimate stays.
        d.run_with(12.0 * 0.04, PPS / 2.0, rtt, |rs| rs.is_app_limited = true);
        assert_eq!(d.bbr.max_bw(), bw);
        // The same, not app-limited: the old max leaves the 10-round window.
        d.run_with(12.0 * 0.04, PPS / 2.0, rtt, |_| {});
        assert!(d.bbr.max_bw() < bw * 6 / 10, "{} vs {bw}", d.bbr.max_bw());
    }

    /// Long-term sampling: two intervals of 4+ rounds with ≥ 20 % loss and consistent delivery
    /// rates mean a token-bucket policer; BBR then paces at their average with gain 1 for 48
    /// rounds, and starts over after.
    #[test]
    fn a_policer_is_detected_and_its_rate_used() {
        let mut d = Drive::new(8);
        let rtt = Dur::from_millis(40);
        d.run(3.0, PPS, rtt);
        assert!(!d.bbr.lt_use_bw());
        // The policer lets PPS / 2 through and drops a quarter of what arrives.
        let policed = PPS / 2.0;
        let mut n = 0u64;
        let end = d.now + Dur::from_secs(2);
        while d.now < end && !d.bbr.lt_use_bw() {
            n += 1;
            let inf = d.in_flight(rtt);
            d.ack(policed, rtt, inf, |rs| rs.losses = (n % 3 == 0) as u64);
        }
        assert!(d.bbr.lt_use_bw(), "policer not detected in 2 s");
        let lt_pps = d.bbr.bw() as f64 * 1e6 / BW_UNIT as f64;
        assert!((lt_pps / policed - 1.0).abs() < 0.05, "lt_bw {lt_pps:.1} packets/s vs {policed:.1}");
        assert_eq!(d.bbr.gains().0, BBR_UNIT, "pacing gain 1 while policed");
        // 48 rounds later the long-term estimate is dropped.
        d.run(49.0 * 0.045, policed, rtt);
        assert!(!d.bbr.lt_use_bw());
        // Off by the key: never.
        let mut off = Drive::with(&BbrConfig { lt_bw: false, ..Default::default() }, 8);
        off.run(3.0, PPS, rtt);
        let end = off.now + Dur::from_secs(2);
        let mut n = 0u64;
        while off.now < end {
            n += 1;
            let inf = off.in_flight(rtt);
            off.ack(policed, rtt, inf, |rs| rs.losses = (n % 3 == 0) as u64);
        }
        assert!(!off.bbr.lt_use_bw());
    }

    #[test]
    fn bad_parameters_are_refused_with_the_key() {
        let bad = [
            (BbrConfig { high_gain: 1.0, ..Default::default() }, "cc.high_gain"),
            (BbrConfig { high_gain: f64::NAN, ..Default::default() }, "cc.high_gain"),
            (BbrConfig { cwnd_gain: 0.0, ..Default::default() }, "cc.cwnd_gain"),
            (BbrConfig { cwnd_gain: 4.0, ..Default::default() }, "cc.cwnd_gain"),
            (BbrConfig { bw_window_rounds: 0, ..Default::default() }, "cc.bw_window_rounds"),
            (BbrConfig { min_rtt_window: Dur::ZERO, ..Default::default() }, "cc.min_rtt_window"),
            (BbrConfig { probe_rtt_time: Dur::from_secs(11), ..Default::default() }, "cc.probe_rtt_time"),
            (BbrConfig { pacing_margin_pct: 100, ..Default::default() }, "cc.pacing_margin_pct"),
        ];
        for (c, key) in bad {
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(key), "{e}");
        }
        assert!(BbrConfig::default().validate().is_ok());
        assert_eq!(gain_units(2.885), 739, "bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1");
        assert_eq!(Bbr::new(&BbrConfig::default(), SimRng::stream(0, "x")).drain_gain, 88, "bbr_drain_gain");
    }

}
