//! Micro- and macro-benchmarks of the core (criterion): `cargo bench -p qoelab-core`.
//!
//! - `engine/hold/N`: the classic "hold" model of event-set benchmarks (Jones, CACM 1986): N
//!   pending events; each operation pops the earliest and schedules one at its time plus a random
//!   increment. N spans what our scenarios hold (tens) up to large topologies.
//! - `qdisc/KIND`: one arrival and one departure on a discipline holding a steady backlog of
//!   200 packets from 16 flows (TFD: half the flows carry a TFD option and hold reservations).
//! - `scenario/NAME`: whole runs of bundled scenarios (build excluded), the cost users see.
//! - `validate/star/N`, `validate/transcoder/N`: building (what `qoelab validate` does) a star of
//!   N links around one hub, and N symbiotic-transcoder flows on the bundled ladder. Time per
//!   link or flow must stay flat as N grows tenfold (validation is linear; issue 42 measured a
//!   quadratic star and a ladder parsed once per flow).
//!
//! Figures measured on the project machine are in docs/performance.md.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use qoelab_core::engine::{Event, EventQueue};
use qoelab_core::ip::tfd::{NextData, TfdFlags, TfdOption};
use qoelab_core::ip::Addr;
use qoelab_core::packet::{Dir, IpHdr, Packet, PacketData, UdpHdr, L4, NO_ROUTE};
use qoelab_core::queue::{BuildCtx, QueueConfig, QueueCtx, QueueDisc};
use qoelab_core::time::{Dur, SimTime};
use qoelab_core::units::Rate;
use qoelab_core::{BuildOptions, Scenario};
use std::hint::black_box;
use std::path::Path;

/// A small deterministic generator (SplitMix64), so every run benchmarks the same sequence.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn hold(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine/hold");
    g.throughput(Throughput::Elements(1));
    for n in [16usize, 128, 1024] {
        let mut q = EventQueue::new();
        let mut rng = Mix(n as u64);
        for i in 0..n {
            // Increments up to 1 ms, as propagation and serialisation times are.
            q.push(SimTime(rng.next() % 1_000_000), Event::PortTxDone(i as u32));
        }
        g.bench_function(n.to_string(), |b| {
            b.iter(|| {
                let (t, e) = q.pop_until(SimTime::NEVER).expect("hold keeps n events");
                q.push(SimTime(t.0 + rng.next() % 1_000_000), e);
                black_box(t)
            })
        });
    }
    g.finish();
}

fn packet(flow: u32, seq: u64, tfd: bool) -> Packet {
    let mut ip = IpHdr { ttl: 64, ..Default::default() };
    if tfd {
        // 300 ms horizon, 40 Mbit/s: the TFD paper's HD stream.
        ip.tfd = Some(TfdOption::new(TfdFlags::empty(), NextData::Bytes(1_500_000), 300).expect("valid"));
        ip.opt_bytes = 12;
    }
    Box::new(PacketData {
        flow,
        dir: Dir::Fwd,
        src: Addr::primary(flow),
        dst: Addr::primary(100),
        seq_in_flow: seq,
        size_bytes: 1500,
        sent_at: SimTime::ZERO,
        hop: 0,
        route: NO_ROUTE,
        path: 0,
        ip,
        l4: L4::Udp(UdpHdr { src_port: 1000 + flow as u16, dst_port: 5000, ..Default::default() }),
        gro: None,
    })
}

fn qdiscs(c: &mut Criterion) {
    const FLOWS: u32 = 16;
    const BACKLOG: u64 = 200;
    let mut g = c.benchmark_group("qdisc");
    g.throughput(Throughput::Elements(1));
    let kinds = [
        "kind = \"fifo\"\nlimit = \"1000p\"",
        "kind = \"drr\"\nlimit = \"1000p\"",
        "kind = \"sqf\"\nlimit = \"1000p\"",
        "kind = \"pfq\"\nlimit = \"1000p\"",
        "kind = \"fq_codel\"\nlimit = \"1000p\"",
        "kind = \"tfd\"\nlimit = \"1000p\"",
    ];
    let cx = BuildCtx { mtu_bytes: 1500, rate: Rate(1_000_000_000), seed: 1 };
    let tx = Rate(1_000_000_000).tx_time(1500);
    for text in kinds {
        let cfg: QueueConfig = toml::from_str(text).expect("valid queue config");
        let name = text.split('"').nth(1).expect("kind").to_string();
        let is_tfd = name == "tfd";
        let mut q: Box<dyn QueueDisc> = cfg.build(&cx);
        let mut dropped = Vec::new();
        let mut now = SimTime::ZERO;
        let mut seq = 0u64;
        // Fill to the steady backlog.
        for _ in 0..BACKLOG {
            let f = (seq % FLOWS as u64) as u32;
            let mut qc = QueueCtx::new(now, &mut dropped);
            black_box(q.enqueue(packet(f, seq, is_tfd && f.is_multiple_of(2)), &mut qc));
            seq += 1;
        }
        g.bench_function(name, |b| {
            b.iter(|| {
                now += tx;
                let f = (seq % FLOWS as u64) as u32;
                let mut qc = QueueCtx::new(now, &mut dropped);
                black_box(q.enqueue(packet(f, seq, is_tfd && f.is_multiple_of(2)), &mut qc));
                seq += 1;
                let out = q.dequeue(&mut qc);
                dropped.clear();
                black_box(out)
            })
        });
    }
    g.finish();
}

fn scenarios(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut g = c.benchmark_group("scenario");
    g.sample_size(10);
    for (file, secs) in [("bench/dumbbell-10m.toml", 10.0), ("bench/tfd-1g.toml", 1.0), ("tfd/s4-n5-k5.toml", 1.0)] {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut sc = Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        sc.sim.duration = Dur::from_secs_f64(secs);
        let base = path.parent().map(Path::to_path_buf);
        let build = || sc.build(&BuildOptions { base_dir: base.as_deref(), pcap_dir: None }).expect("builds");
        let events = {
            let mut s = build();
            s.run();
            s.events_dispatched()
        };
        g.throughput(Throughput::Elements(events));
        g.bench_function(format!("{file}@{secs}s"), |b| {
            b.iter_batched(
                build,
                |mut s| {
                    s.run();
                    black_box(s.events_dispatched())
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// Building (validating) large scenarios: a star of `n` links, and `n` transcoder flows sharing
/// the bundled ladder. Throughput is per link or flow, so linear cost reads as a flat figure.
fn validation(c: &mut Criterion) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
    let ladder = data.join("mpeg2_ladder.frames.csv.gz");
    let star = |n: u64| {
        format!(
            "[sim]\nduration = \"1s\"\n[[links]]\na = \"H\"\nb = \"L{{i}}\"\ncount = {n}\nrate = \"10Mbps\"\n\
             delay = \"1ms\"\n[[flows]]\nname = \"f\"\nsrc = \"L0\"\ndst = \"L1\"\ntransport = {{ kind = \"udp\" }}\n\
             app = {{ kind = \"cbr\", rate = \"1Mbps\", payload = \"1000B\" }}\n"
        )
    };
    // Flows between one pair of hosts share its 16-bit port space (flows 50,000 apart would
    // collide), so the flows are spread over groups of at most 25,000, each to its own client.
    let transcoders = |n: u64| {
        let group = 25_000;
        let mut text = String::from(
            "[sim]\nduration = \"120s\"\n[[links]]\na = \"T\"\nb = \"R\"\nrate = \"100Mbps\"\ndelay = \"5ms\"\n",
        );
        for (k, first) in (0..n).step_by(group as usize).enumerate() {
            let count = group.min(n - first);
            text += &format!(
                "[[links]]\na = \"R\"\nb = \"C{k}\"\nrate = \"2.2Mbps\"\ndelay = \"15ms\"\n[[flows]]\n\
                 name = \"v{k}_{{i}}\"\ncount = {count}\nsrc = \"T\"\ndst = \"C{k}\"\n\
                 transport = {{ kind = \"tcp\", cc = \"newreno\" }}\n\
                 app = {{ kind = \"transcoder\", ladder = {:?}, interactive = true }}\n",
                ladder.display().to_string()
            );
        }
        text
    };
    let mut g = c.benchmark_group("validate");
    g.sample_size(10);
    g.sampling_mode(criterion::SamplingMode::Flat);
    type Gen<'a> = &'a dyn Fn(u64) -> String;
    let cases: [(&str, Gen, &[u64]); 2] =
        [("star", &star, &[10_000, 100_000, 1_000_000]), ("transcoder", &transcoders, &[1_000, 10_000, 100_000])];
    for (name, make, sizes) in cases {
        for &n in sizes {
            let sc = Scenario::from_toml(&make(n)).expect("a valid scenario");
            g.throughput(Throughput::Elements(n));
            g.bench_function(format!("{name}/{n}"), |b| {
                b.iter(|| black_box(sc.build(&BuildOptions::default()).expect("builds").end()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, hold, qdiscs, scenarios, validation);
criterion_main!(benches);
