//! Components from outside the crate: applications with timer kinds of their own, at either
//! end of a flow, joined to a run with `Simulation::attach_app`. Nothing here edits the engine,
//! the world or a registry: that is what these tests show (issue 14, must-show (c) and (d)).

use qoelab_core::app::{AppCtx, AppEvent, Application, WAKE};
use qoelab_core::engine::TimerKind;
use qoelab_core::packet::MediaTag;
use qoelab_core::time::{Dur, SimTime};
use qoelab_core::transport::{notice_mask, TransportEvent};
use qoelab_core::{BuildOptions, Scenario, Simulation};
use std::sync::{Arc, Mutex};

fn build(toml: &str) -> Simulation {
    let sc = Scenario::from_toml(toml).unwrap_or_else(|e| panic!("{e}"));
    sc.build(&BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// Two hosts over one 10 Mbit/s, 10 ms link, one flow on `transport` with a placeholder app.
fn two_hosts(transport: &str, app: &str, secs: u32) -> String {
    format!(
        r#"
        [sim]
        duration = "{secs}s"
        [[links]]
        a = "A"
        b = "B"
        rate = "10Mbps"
        delay = "10ms"
        queue = {{ kind = "fifo", limit = "1000p" }}
        [[flows]]
        name = "f"
        src = "A"
        dst = "B"
        transport = {transport}
        app = {app}
        "#
    )
}

/// A test-only source with three timer kinds of its own: WAKE starts it, TICK sends a 100-byte
/// datagram every 10 ms, TOCK a 300-byte one every 25 ms.
struct Metronome {
    fired: Arc<Mutex<[u64; 3]>>,
}
const TICK: TimerKind = TimerKind(1);
const TOCK: TimerKind = TimerKind(2);

impl Application for Metronome {
    fn timer_kinds(&self) -> u8 {
        3
    }
    fn start(&mut self, cx: &mut AppCtx) {
        self.fired.lock().unwrap()[0] += 1;
        cx.wake_kind_at(TICK, cx.now);
        cx.wake_kind_at(TOCK, cx.now);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        let AppEvent::Timer(k) = ev else { return };
        self.fired.lock().unwrap()[k.0 as usize] += 1;
        let (payload, period) = match k {
            TICK => (100, Dur::from_millis(10)),
            TOCK => (300, Dur::from_millis(25)),
            other => panic!("unexpected timer kind {other:?}"),
        };
        cx.send(payload, MediaTag::default(), 0, false);
        cx.wake_kind_at(k, cx.now + period);
    }
}

/// (d) A component with its own timer kinds runs without any edit to engine files: each kind
/// fires on its own schedule and the datagrams it sends are what the results count.
#[test]
fn a_component_with_its_own_timer_kinds_runs_unchanged_engine() {
    let mut sim = build(&two_hosts(r#"{ kind = "udp" }"#, r#"{ kind = "cbr", rate = "1kbps", payload = "100B" }"#, 1));
    let fired = Arc::new(Mutex::new([0u64; 3]));
    sim.attach_app("f", 0, "metronome", Box::new(Metronome { fired: fired.clone() })).unwrap();
    sim.run();
    let f = *fired.lock().unwrap();
    // Started once; TICK at 0, 10, …, 990 ms (100 times), TOCK at 0, 25, …, 975 ms (40 times).
    assert_eq!(f, [1, 100, 40]);
    let r = sim.results();
    assert_eq!(r.flow_value("f", "sent_pkts"), 140.0);
    // IP datagrams: 20 + 8 bytes of headers on each payload.
    assert_eq!(r.flow_value("f", "sent_bytes"), (100.0 * 128.0) + (40.0 * 328.0));
    // The replaced CBR source sent nothing.
    assert_eq!(r.table("flows").strs("app")[0], "metronome");
}

/// A source that writes `sizes` as messages, one every `gap`, recording when each was written.
struct ObjectWriter {
    sizes: Vec<u64>,
    gap: Dur,
    next: usize,
    written_at: Arc<Mutex<Vec<SimTime>>>,
}

impl Application for ObjectWriter {
    fn start(&mut self, cx: &mut AppCtx) {
        self.on_event(AppEvent::Timer(WAKE), cx);
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        if !matches!(ev, AppEvent::Timer(_)) {
            return;
        }
        if let Some(&b) = self.sizes.get(self.next) {
            cx.send_message(b, self.next as u64);
            self.written_at.lock().unwrap().push(cx.now);
            self.next += 1;
            cx.wake_at(cx.now + self.gap);
        }
    }
}

/// A receiver-side application with a timer of its own (a 100 ms "playout" tick) that records
/// per-object arrival times and the in-order bytes it was told about.
#[derive(Default)]
struct Recorder {
    log: Arc<Mutex<RecorderLog>>,
}
#[derive(Default, Debug)]
struct RecorderLog {
    objects: Vec<(u64, u64, SimTime)>,
    ticks: u64,
    delivered: u64,
}
const PLAYOUT: TimerKind = TimerKind(1);

impl Application for Recorder {
    fn timer_kinds(&self) -> u8 {
        2
    }
    fn subscriptions(&self) -> u32 {
        notice_mask::DELIVERED
    }
    fn start(&mut self, cx: &mut AppCtx) {
        cx.wake_kind_at(PLAYOUT, cx.now + Dur::from_millis(100));
    }
    fn on_event(&mut self, ev: AppEvent, cx: &mut AppCtx) {
        let mut log = self.log.lock().unwrap();
        match ev {
            AppEvent::Message { bytes, tag } => log.objects.push((tag, bytes, cx.now)),
            AppEvent::Transport(TransportEvent::Delivered { total_bytes }) => {
                assert!(total_bytes >= log.delivered, "delivered bytes went back");
                log.delivered = total_bytes;
            }
            AppEvent::Timer(PLAYOUT) => {
                log.ticks += 1;
                cx.wake_kind_at(PLAYOUT, cx.now + Dur::from_millis(100));
            }
            _ => {}
        }
    }
}

/// (c) A receiver-side application with its own timers consumes a TCP byte stream: every object
/// arrives once, in order, no earlier than the link allows, and its timer keeps its period.
#[test]
fn a_receiver_side_app_records_object_arrivals() {
    let mut sim = build(&two_hosts(r#"{ kind = "tcp" }"#, r#"{ kind = "bulk" }"#, 5));
    // 30 objects of 1..60 kB (a fixed pseudo-random sequence), one every 50 ms.
    let sizes: Vec<u64> = (0..30u64).map(|i| 1_000 + (i * 7_919) % 59_000).collect();
    let written_at = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::new(Mutex::new(RecorderLog::default()));
    let writer =
        ObjectWriter { sizes: sizes.clone(), gap: Dur::from_millis(50), next: 0, written_at: written_at.clone() };
    sim.attach_app("f", 0, "writer", Box::new(writer)).unwrap();
    sim.attach_app("f", 1, "recorder", Box::new(Recorder { log: log.clone() })).unwrap();
    sim.run();
    let log = log.lock().unwrap();
    let written_at = written_at.lock().unwrap();
    assert_eq!(log.objects.len(), sizes.len(), "every object arrives once");
    let total: u64 = sizes.iter().sum();
    assert_eq!(log.delivered, total, "the stream delivers every byte");
    for (k, &(tag, bytes, at)) in log.objects.iter().enumerate() {
        assert_eq!(tag, k as u64, "objects arrive in order");
        assert_eq!(bytes, sizes[k]);
        // No earlier than propagation plus the serialisation of its own payload at 10 Mbit/s.
        let floor = written_at[k] + Dur::from_millis(10) + Dur::from_secs_f64(bytes as f64 * 8.0 / 10e6);
        assert!(at >= floor, "object {k} at {at} before {floor}");
        if k > 0 {
            assert!(at >= log.objects[k - 1].2);
        }
    }
    // The playout tick ran every 100 ms from 100 ms to 4.9 s (49 times) whatever the stream did.
    assert_eq!(log.ticks, 49);
}

#[test]
fn attach_app_refuses_bad_requests() {
    use qoelab_core::sim::AttachError;
    let mut sim = build(&two_hosts(r#"{ kind = "udp" }"#, r#"{ kind = "cbr", rate = "1kbps", payload = "100B" }"#, 1));
    let app = || Box::new(Recorder::default());
    assert_eq!(sim.attach_app("nope", 0, "x", app()), Err(AttachError::NoFlow("nope".into())));
    assert_eq!(sim.attach_app("f", 2, "x", app()), Err(AttachError::NoEnd(2)));
    sim.run_until(SimTime(1));
    sim.run_until(SimTime(2_000_000));
    assert_eq!(sim.attach_app("f", 1, "x", app()), Err(AttachError::Started));
}
