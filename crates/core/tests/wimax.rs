//! Validation of the WiMAX channel (`kind = "wimax"`, `docs/models/wimax.md`): the stations of
//! one base station driven at the port level with packet timestamps, then in whole runs.
//!
//! - a saturated uplink delivers the per-frame capacity within 1 % for every frame length,
//!   1–10 stations, DL:UL 1:1 and 1:3, shared round robin within 1 %;
//! - a packet that arrives (is requested) in frame k is served in frame k+1;
//! - rtPS before nrtPS;
//! - a lone light-load source waits what the frame structure predicts;
//! - Gilbert–Elliott loss on the uplink: the stationary loss rate and the mean bad-state burst
//!   within 5 %;
//! - the medium costs no event while idle; scenario mistakes name their key path.

use qoelab_core::engine::SimRng;
use qoelab_core::link::channel::wimax::{ServiceClass, WimaxConfig};
use qoelab_core::link::channel::{ChannelConfig, LinkDir, LinkPhy, Media};
use qoelab_core::link::loss::LossConfig;
use qoelab_core::link::Port;
use qoelab_core::node::Addr;
use qoelab_core::packet::{Dir, IpHdr, Packet, PacketData, UdpHdr, L4, NO_ROUTE};
use qoelab_core::queue::{BuildCtx, QueueConfig};
use qoelab_core::time::{Dur, SimTime};
use qoelab_core::units::Rate;
use qoelab_core::{BuildOptions, Scenario};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// 1440 bits per 136 µs symbol: 16-QAM 1/2 on 720 data subcarriers (docs/models/wimax.md).
const RATE: Rate = Rate(10_588_236);
const OVERHEAD: u64 = 10;

fn pkt(flow: u32, size: u32, seq: u64, now: SimTime) -> Packet {
    Box::new(PacketData {
        flow,
        dir: Dir::Fwd,
        src: Addr::primary(0),
        dst: Addr::primary(1),
        seq_in_flow: seq,
        size_bytes: size,
        sent_at: now,
        hop: 0,
        route: NO_ROUTE,
        path: 0,
        ip: IpHdr::default(),
        l4: L4::Udp(UdpHdr::default()),
        gro: None,
    })
}

/// A packet delivered: station, size, when it arrived at the station, when its last bit left.
#[derive(Clone, Debug)]
struct Sent {
    station: usize,
    size: u32,
    arrived: u64,
    end: u64,
}

/// What a run of the harness gives: packets delivered, channel losses per station, events.
struct Outcome {
    sent: Vec<Sent>,
    lost: Vec<Vec<bool>>,
    events: u64,
}

/// Stations of one medium (`cfgs[i]` for station `i`), each with a 50-packet drop-tail queue,
/// fed the packets `arrivals[i]` (time in ns, size), run until `end` ns. The link delay is zero,
/// so a packet's arrival at the base station is the end of its serialisation.
fn drive(
    cfgs: &[WimaxConfig],
    dir: LinkDir,
    loss: Option<&LossConfig>,
    arrivals: &[Vec<(u64, u32)>],
    end: u64,
) -> Outcome {
    let media = Media::default();
    let phy = LinkPhy { rate: RATE, delay: Dur(0) };
    let q: QueueConfig = toml::from_str("kind = 'fifo'\nlimit = '50p'").expect("queue parses");
    let mut ports: Vec<Port> = cfgs
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let ch = ChannelConfig::Wimax(c.clone()).device_in(
                phy,
                dir,
                loss.and_then(|l| l.build()),
                SimRng::stream(7, &format!("ss{i}")),
                &media,
            );
            Port::new(
                format!("ss{i}"),
                i as u32 + 1,
                0,
                1024,
                q.build(&BuildCtx { mtu_bytes: 1024, rate: RATE, seed: 1 }),
                ch,
                None,
            )
        })
        .collect();
    // (time, seq, kind 0 arrival / 1 wake / 2 delivery, station, index into arrivals)
    let mut ev: BinaryHeap<Reverse<(u64, u64, u8, usize, usize)>> = BinaryHeap::new();
    let mut seq = 0u64;
    for (i, a) in arrivals.iter().enumerate() {
        if let Some(&(t, _)) = a.first() {
            ev.push(Reverse((t, seq, 0, i, 0)));
            seq += 1;
        }
    }
    let mut out = Outcome { sent: Vec::new(), lost: vec![Vec::new(); cfgs.len()], events: 0 };
    let mut drops = Vec::new();
    while let Some(Reverse((t, _, kind, i, k))) = ev.pop() {
        if t > end {
            break;
        }
        out.events += 1;
        let now = SimTime(t);
        let before = ports[i].stats.channel_drop_pkts;
        let tx_before = ports[i].stats.tx_pkts;
        let o = match kind {
            0 => {
                let (at, size) = arrivals[i][k];
                if let Some(&(next, _)) = arrivals[i].get(k + 1) {
                    ev.push(Reverse((next, seq, 0, i, k + 1)));
                    seq += 1;
                }
                ports[i].enqueue(pkt(i as u32, size, k as u64, SimTime(at)), now, &mut drops)
            }
            1 => ports[i].tx_done(now, &mut drops),
            _ => {
                let (p, next) = ports[i].arrival(now);
                out.sent.push(Sent { station: i, size: p.size_bytes, arrived: p.sent_at.0, end: t });
                if let Some(n) = next {
                    ev.push(Reverse((n.0, seq, 2, i, 0)));
                    seq += 1;
                }
                Default::default()
            }
        };
        if ports[i].stats.tx_pkts > tx_before {
            out.lost[i].push(ports[i].stats.channel_drop_pkts > before);
        }
        if let Some(n) = o.tx_done_at {
            ev.push(Reverse((n.0, seq, 1, i, 0)));
            seq += 1;
        }
        if let Some(n) = o.arrival_at {
            ev.push(Reverse((n.0, seq, 2, i, 0)));
            seq += 1;
        }
    }
    out
}

fn cfg(frame_us: u64, split: &str, class: ServiceClass) -> WimaxConfig {
    WimaxConfig { frame: Dur::from_micros(frame_us), dl_ul: split.into(), class, ..WimaxConfig::new("bs") }
}

/// Saturating arrivals: a 1000 B packet every `gap` ns from 0 to `end`.
fn cbr(gap: u64, end: u64, size: u32) -> Vec<(u64, u32)> {
    (0..end / gap).map(|i| (i * gap, size)).collect()
}

/// Saturated stations take the whole per-frame capacity of their direction, within 1 %,
/// shared equally within 1 %, for every frame length, 1–10 stations, 1:1 and 1:3, uplink and
/// downlink.
#[test]
fn saturated_medium_delivers_the_frame_capacity_round_robin() {
    let end = 4_000_000_000u64;
    for frame_us in [5_000, 8_000, 10_000, 12_500, 20_000] {
        for split in ["1:1", "1:3"] {
            for (n, dir) in [(1, LinkDir::Ab), (3, LinkDir::Ab), (10, LinkDir::Ab), (4, LinkDir::Ba)] {
                let cfgs: Vec<_> = (0..n).map(|_| cfg(frame_us, split, ServiceClass::Rtps)).collect();
                let layout = cfgs[0].layout(RATE);
                let cap = if dir == LinkDir::Ab { layout.ul.cap } else { layout.dl.cap };
                // Each station offered twice the whole capacity.
                let gap = (layout.frame * 1000 / (2 * cap)).max(1000);
                let arrivals: Vec<_> = (0..n).map(|_| cbr(gap, end, 1000)).collect();
                let o = drive(&cfgs, dir, None, &arrivals, end);
                // Frames 10 .. end−1 (past the start-up), bytes on the air per frame.
                let (f0, f1) = (10u64, end / layout.frame - 1);
                let mut per = vec![0u64; n];
                for s in o.sent.iter().filter(|s| (f0 * layout.frame..f1 * layout.frame).contains(&s.end)) {
                    per[s.station] += s.size as u64 + OVERHEAD;
                }
                let total: u64 = per.iter().sum();
                let want = (cap * (f1 - f0)) as f64;
                let what = format!("{frame_us} µs, {split}, {n} stations, {dir:?}");
                assert!((total as f64 / want - 1.0).abs() < 0.01, "{what}: {total} B on the air, capacity {want}");
                for (i, b) in per.iter().enumerate() {
                    let fair = total as f64 / n as f64;
                    assert!((*b as f64 / fair - 1.0).abs() < 0.01, "{what}: station {i} sent {b} B, fair share {fair}");
                }
            }
        }
    }
}

/// A packet that reaches an idle station in frame k (its request) leaves in frame k+1, inside
/// the subframe's data region; no earlier, and no later when the medium is lightly loaded.
#[test]
fn request_in_frame_k_is_served_in_frame_k_plus_1() {
    for frame_us in [5_000u64, 20_000] {
        for dir in [LinkDir::Ab, LinkDir::Ba] {
            let c = cfg(frame_us, "1:3", ServiceClass::Rtps);
            let l = c.layout(RATE);
            let sub = if dir == LinkDir::Ab { l.ul } else { l.dl };
            // Three stations, arrivals 2.37 frames apart at offsets that sweep the frame.
            let arrivals: Vec<Vec<(u64, u32)>> = (0..3u64)
                .map(|i| (0..300u64).map(|k| (k * l.frame * 237 / 100 + i * 997_331, 200)).collect())
                .collect();
            let o = drive(&[c.clone(), c.clone(), c.clone()], dir, None, &arrivals, 800 * l.frame);
            assert!(o.sent.len() > 800, "{} packets", o.sent.len());
            for s in &o.sent {
                let tx = RATE.tx_time(s.size as u64 + OVERHEAD).0;
                let start = s.end - tx;
                let (k, served) = (s.arrived / l.frame, start / l.frame);
                assert_eq!(served, k + 1, "{frame_us} µs {dir:?}: arrived in frame {k}, sent at {start} ns");
                assert!(start % l.frame >= sub.data_start, "sent at {start} ns, before the data region");
            }
        }
    }
}

/// nrtPS gets only what rtPS leaves: two saturated rtPS stations starve a saturated nrtPS one;
/// with light rtPS load the nrtPS station takes the rest of the frame.
#[test]
fn rtps_before_nrtps() {
    let end = 2_000_000_000u64;
    let (rt, nrt) = (cfg(5_000, "1:3", ServiceClass::Rtps), cfg(5_000, "1:3", ServiceClass::Nrtps));
    let cap = rt.layout(RATE).ul.cap;
    let sat = cbr(200_000, end, 1000); // 40 Mbit/s offered
    let o =
        drive(&[rt.clone(), rt.clone(), nrt.clone()], LinkDir::Ab, None, &[sat.clone(), sat.clone(), sat.clone()], end);
    assert_eq!(o.sent.iter().filter(|s| s.station == 2).count(), 0, "nrtPS served while rtPS was saturated");
    // rtPS offered 1010 B per frame: nrtPS gets cap − 1010 B per frame.
    let light = cbr(5_000_000, end, 1000);
    let o = drive(&[rt, nrt], LinkDir::Ab, None, &[light, sat], end);
    let frames = end / 5_000_000 - 20;
    let nrt_bytes: u64 = o
        .sent
        .iter()
        .filter(|s| s.station == 1 && s.end >= 20 * 5_000_000 && s.end < end)
        .map(|s| s.size as u64 + OVERHEAD)
        .sum();
    let want = ((cap - 1010) * frames) as f64;
    assert!((nrt_bytes as f64 / want - 1.0).abs() < 0.01, "nrtPS {nrt_bytes} B, want {want}");
}

/// `grants = "round_robin"` (the WiMAX paper's Sec. 3.1): the same saturated two rtPS and one
/// nrtPS stations share each frame equally, within 1 %, class ignored; the light rtPS station
/// still gets all it asks for and the saturated nrtPS station the rest.
#[test]
fn round_robin_ignores_the_class() {
    use qoelab_core::link::channel::wimax::grants::{GrantsConfig, RoundRobinConfig};
    let end = 2_000_000_000u64;
    let rr = GrantsConfig::RoundRobin(RoundRobinConfig::default());
    let rt = WimaxConfig { grants: rr.clone(), ..cfg(5_000, "1:3", ServiceClass::Rtps) };
    let nrt = WimaxConfig { grants: rr, ..cfg(5_000, "1:3", ServiceClass::Nrtps) };
    let cap = rt.layout(RATE).ul.cap;
    let sat = cbr(200_000, end, 1000);
    let o =
        drive(&[rt.clone(), rt.clone(), nrt.clone()], LinkDir::Ab, None, &[sat.clone(), sat.clone(), sat.clone()], end);
    let frames = end / 5_000_000 - 20;
    let bytes = |o: &Outcome, st: usize| -> u64 {
        o.sent
            .iter()
            .filter(|s| s.station == st && s.end >= 20 * 5_000_000 && s.end < end)
            .map(|s| s.size as u64 + OVERHEAD)
            .sum()
    };
    for st in 0..3 {
        let want = (cap * frames) as f64 / 3.0;
        assert!(
            (bytes(&o, st) as f64 / want - 1.0).abs() < 0.01,
            "station {st}: {} B, a third is {want}",
            bytes(&o, st)
        );
    }
    let light = cbr(5_000_000, end, 1000);
    let o = drive(&[rt, nrt], LinkDir::Ab, None, &[light, sat], end);
    let want = ((cap - 1010) * frames) as f64;
    assert!((bytes(&o, 1) as f64 / want - 1.0).abs() < 0.01, "nrtPS {} B, want {want}", bytes(&o, 1));
}

/// A lone Poisson source at light load: a packet arriving uniformly in frame k waits for the
/// end of the frame (F/2 on average), then for the data region of frame k+1 (`data_start`),
/// then its transmission: E[D] = F/2 + data_start + (L + overhead)/R. Within 2 % (queueing
/// behind another packet of the same frame is rare below 1 % of the capacity). The medium costs
/// at most four events per packet (arrival, a wake-up at the next frame's start, one at its
/// burst, delivery): none while idle.
#[test]
fn light_load_delay_follows_the_frame_structure() {
    for frame_us in [5_000u64, 8_000, 10_000, 12_500, 20_000] {
        let c = cfg(frame_us, "1:3", ServiceClass::Rtps);
        let l = c.layout(RATE);
        let mut rng = SimRng::stream(3, "poisson");
        let mean_gap = 25.0 * l.frame as f64;
        let (mut t, mut a) = (0.0, Vec::new());
        while a.len() < 20_000 {
            t += rng.exponential(mean_gap);
            a.push((t as u64, 500));
        }
        let end = t as u64 + 10 * l.frame;
        let o = drive(&[c], LinkDir::Ab, None, &[a.clone()], end);
        assert_eq!(o.sent.len(), a.len());
        let mean = o.sent.iter().map(|s| (s.end - s.arrived) as f64).sum::<f64>() / o.sent.len() as f64;
        let want = l.frame as f64 / 2.0 + l.ul.data_start as f64 + RATE.tx_time(510).0 as f64;
        assert!((mean / want - 1.0).abs() < 0.02, "{frame_us} µs: mean access delay {mean} ns, predicted {want}");
        assert!(o.events <= 4 * a.len() as u64, "{frame_us} µs: {} events for {} packets", o.events, a.len());
    }
}

/// Gilbert–Elliott on the uplink, stepped per PDU, with the paper's parameters (p_gg = 0.95,
/// p_bb = 0.94, loss 0.01 / 0.05): loss rate = (r·0.01 + p·0.05)/(p + r) with p = 1 − p_gg,
/// r = 1 − p_bb, within 5 %; with loss 0 / 1 (Gilbert) the mean loss burst is 1/(1 − p_bb)
/// within 5 %.
#[test]
fn gilbert_elliott_on_the_uplink_matches_its_closed_forms() {
    let (p, r) = (0.05, 0.06);
    let end = 80_000_000_000u64;
    let c = cfg(5_000, "1:3", ServiceClass::Rtps);
    let sat: Vec<_> = (0..2).map(|_| cbr(20_000, end, 100)).collect();
    let ge = |lg: f64, lb: f64| -> LossConfig {
        toml::from_str(&format!("kind = 'gilbert_elliott'\np = {p}\nr = {r}\nloss_good = {lg}\nloss_bad = {lb}"))
            .expect("loss parses")
    };
    let o = drive(&[c.clone(), c.clone()], LinkDir::Ab, Some(&ge(0.01, 0.05)), &sat, end);
    let judged: Vec<bool> = o.lost.concat();
    assert!(judged.len() > 500_000, "{} PDUs", judged.len());
    let rate = judged.iter().filter(|&&l| l).count() as f64 / judged.len() as f64;
    let want = (r * 0.01 + p * 0.05) / (p + r);
    assert!((rate / want - 1.0).abs() < 0.05, "loss {rate}, stationary {want}");

    let o = drive(&[c.clone(), c], LinkDir::Ab, Some(&ge(0.0, 1.0)), &sat, end);
    for lost in &o.lost {
        let (mut bursts, mut losses, mut prev) = (0u64, 0u64, false);
        for &l in lost {
            losses += l as u64;
            bursts += (l && !prev) as u64;
            prev = l;
        }
        let burst = losses as f64 / bursts as f64;
        assert!((burst * r - 1.0).abs() < 0.05, "mean burst {burst} PDUs, want {}", 1.0 / r);
        assert!((losses as f64 / lost.len() as f64 / (p / (p + r)) - 1.0).abs() < 0.05);
    }
}

fn scenario_err(channel: &str, mtu: u32) -> String {
    let toml = format!(
        "[sim]\nduration = \"1s\"\n[[links]]\na = \"ss\"\nb = \"bs\"\nrate = \"10.588Mbps\"\ndelay = \"1ms\"\nmtu = {mtu}\nchannel = {channel}\n\
         [[links]]\na = \"ss2\"\nb = \"bs\"\nrate = \"10.588Mbps\"\ndelay = \"1ms\"\nmtu = 1024\nchannel = {{ kind = \"wimax\", medium = \"bs\" }}\n\
         [[flows]]\nname = \"f\"\nsrc = \"ss\"\ndst = \"bs\"\ntransport = {{ kind = \"udp\" }}\napp = {{ kind = \"cbr\", rate = \"1Mbps\", payload = \"500B\" }}\n"
    );
    match Scenario::from_toml(&toml).and_then(|s| s.build(&BuildOptions::default()).map(|_| ())) {
        Ok(()) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// Mistakes name their key path; a valid WiMAX scenario runs and delivers.
#[test]
fn scenario_mistakes_name_their_key() {
    assert_eq!(scenario_err("{ kind = \"wimax\", medium = \"bs\" }", 1024), "");
    let e = scenario_err("{ kind = \"wimax\", medium = \"bs\", frame = \"6ms\" }", 1024);
    assert!(e.contains("links[0].channel.frame") && e.contains("5, 8, 10, 12.5 or 20 ms"), "{e}");
    let e = scenario_err("{ kind = \"wimax\", medium = \"bs\" }", 1500);
    assert!(e.contains("links[0].mtu") && e.contains("1024"), "{e}");
    let e = scenario_err("{ kind = \"wimax\", medium = \"bs\", dl_ul = \"1:1\" }", 1024);
    assert!(e.contains("links[1].channel") && e.contains("dl_ul 1:1"), "{e}");
    let e = scenario_err("{ kind = \"wimax\", medium = \"bs\", frame = \"20ms\" }", 1024);
    assert!(e.contains("links[1].channel.frame"), "{e}");
    let e = scenario_err("{ kind = \"wimax\", medium = \"bs\", class = \"ugs\" }", 1024);
    assert!(e.contains("links[0].channel") && e.contains("ugs"), "{e}");
}

/// In a whole run: three stations of one base station, each offered 5 Mbit/s of UDP in
/// 1000 B packets, share the uplink's capacity equally (within 1 %) and the medium is
/// saturated (each drops at its 50-packet queue).
#[test]
fn whole_run_stations_share_the_uplink() {
    let mut s = String::from("[sim]\nduration = \"10s\"\nseed = 3\n");
    for i in 0..3 {
        s += &format!(
            "[[links]]\na = \"ss{i}\"\nb = \"bs\"\nrate = \"10.588236Mbps\"\ndelay = \"1ms\"\nmtu = 1024\n\
             queue = {{ kind = \"fifo\", limit = \"50p\" }}\nchannel = {{ kind = \"wimax\", medium = \"bs\", frame = \"10ms\" }}\n\
             [[flows]]\nname = \"up{i}\"\nsrc = \"ss{i}\"\ndst = \"bs\"\ntransport = {{ kind = \"udp\" }}\n\
             app = {{ kind = \"cbr\", rate = \"5Mbps\", payload = \"972B\" }}\n"
        );
    }
    let r = qoelab_core::run_toml(&s, &BuildOptions::default()).expect("runs");
    let cap = cfg(10_000, "1:3", ServiceClass::Rtps).layout(RATE).ul.cap as f64;
    // 10 s of frames, each carrying `cap` bytes of 1000 B packets plus 10 B of MAC overhead.
    let want = cap * 1000.0 / 1010.0 * 1000.0 / 3.0;
    let l = r.table("links");
    let (names, tx) = (l.strs("link"), l.f64s("tx_bytes"));
    for i in 0..3 {
        let k = names.iter().position(|n| *n == format!("ss{i}->bs")).expect("station link");
        assert!((tx[k] / want - 1.0).abs() < 0.01, "ss{i}: {} B, want {want}", tx[k]);
        assert!(r.flow_value(&format!("up{i}"), "drop_queue_pkts") > 0.0, "ss{i} was not saturated");
    }
}
