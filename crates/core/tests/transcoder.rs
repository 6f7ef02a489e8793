//! The symbiotic transcoder (`docs/models/transcoder.md`) on the bundled MPEG-2 ladder, over
//! TCP Interactive across the congestion injector: transcoder S → R → client C, R–C down.
//!
//! Checked: (a) on one 3-s outage the interactive transcoder cuts its rate at the first GOP
//! start after the first timeout (within one GOP) and then follows the stated rules GOP by GOP
//! (lazy binary back-off, additive recovery once the timeout series is over) back to 2 Mbit/s,
//! each GOP's rung the highest whose rate fits the target; (b) classic mode never leaves the
//! top rung and its send backlog grows through the outage; (c) the FreeBSD profile's timeouts
//! per 3-s outage against its RTO arithmetic; (d) determinism; (e) the last frame's delivery
//! time over 3 outages, classic against interactive; bad parameters are errors at their key.

use qoelab_core::app::transcoder::{read_ladder, Ladder};
use qoelab_core::trace::Column;
use qoelab_core::{BuildOptions, RunResults, Scenario};
use std::path::PathBuf;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// Frame interval and GOP of the bundled ladder (30 fps, closed GOPs of 15 frames).
const GOP: usize = 15;
const GOP_NS: f64 = 0.5e9;
/// The outage of the single-outage tests: R–C both ways, 10 s to 13 s.
const DOWN: (u64, u64) = (10 * S, 13 * S);
const TOP: u64 = 2_000_000;

fn ladder_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/traces/mpeg2_ladder.frames.csv.gz")
}

fn ladder() -> Ladder {
    read_ladder(&ladder_path()).expect("the bundled ladder reads")
}

/// S–R 100 Mbit/s 5 ms; R–C 3 Mbit/s (1.5× the top rung) 15 ms, a 100-packet FIFO; the
/// transcoder's flow over TCP with `transport`.
fn scenario(transport: &str, app: &str, outages: &str, duration: &str, seed: u64) -> Scenario {
    scenario_at("3Mbps", transport, app, outages, duration, seed)
}

fn scenario_at(rc: &str, transport: &str, app: &str, outages: &str, duration: &str, seed: u64) -> Scenario {
    let text = format!(
        r#"
        [sim]
        duration = "{duration}"
        seed = {seed}
        [[links]]
        a = "S"
        b = "R"
        rate = "100Mbps"
        delay = "5ms"
        [[links]]
        a = "R"
        b = "C"
        rate = "{rc}"
        delay = "15ms"
        queue = {{ kind = "fifo", limit = "100p" }}
        [[flows]]
        name = "v"
        src = "S"
        dst = "C"
        transport = {transport}
        app = {{ kind = "transcoder", ladder = "{}"{app} }}
        packet_log = true
        {outages}
        [output]
        probes = ["app", "rto"]
        "#,
        ladder_path().display()
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("test scenario: {e}"))
}

const FREEBSD: &str = r#"{ kind = "tcp", cc = "newreno", profile = "freebsd" }"#;
const FREEBSD_OLD: &str = r#"{ kind = "tcp", cc = "newreno", profile = "freebsd", min_rto = "1s" }"#;

fn one_outage() -> String {
    format!(
        "[[outages]]\nlinks = [\"R->C\", \"C->R\"]\nat = \"{}s\"\nduration = \"{}s\"\n",
        DOWN.0 / S,
        (DOWN.1 - DOWN.0) / S
    )
}

fn run(sc: &Scenario) -> RunResults {
    let mut sim = sc.build(&BuildOptions::default()).expect("test scenario builds");
    sim.run();
    sim.results()
}

/// `app` probe rows named `name`: (t_ns, value).
fn probe(r: &RunResults, name: &str) -> Vec<(u64, f64)> {
    let app = r.table("probe_app");
    let (t, n, v) = (app.f64s("t_ns"), app.strs("name"), app.f64s("value"));
    (0..n.len()).filter(|&i| n[i] == name).map(|i| (t[i] as u64, v[i])).collect()
}

/// Per GOP: (start time, target, rung) from the per-frame probes.
fn gops(r: &RunResults) -> Vec<(u64, u64, usize)> {
    let (frames, targets, rungs) = (probe(r, "tc_frame"), probe(r, "tc_target_bps"), probe(r, "tc_rung"));
    assert_eq!(frames.len(), targets.len());
    (0..frames.len())
        .filter(|&i| frames[i].1 as usize % GOP == 0)
        .map(|i| (frames[i].0, targets[i].1 as u64, rungs[i].1 as usize))
        .collect()
}

/// The `messages` rows: (tag, written_ns, delivered_ns).
fn messages(r: &RunResults) -> Vec<(u64, u64, u64)> {
    let t = r.table("messages");
    let col = |c: &str| -> Vec<u64> {
        match t.get(c) {
            Some(Column::U64(v)) => v.clone(),
            Some(Column::I64(v)) => v.iter().map(|&x| x as u64).collect(),
            _ => panic!("messages: no integer column {c}"),
        }
    };
    let (tag, w, d) = (col("tag"), col("written_ns"), col("delivered_ns"));
    (0..tag.len()).map(|i| (tag[i], w[i], d[i])).collect()
}

#[test]
fn interactive_cuts_within_a_gop_of_the_first_timeout_and_recovers_additively() {
    let lad = ladder();
    let (a, step) = (0.55, 100_000u64);
    let r = run(&scenario(
        FREEBSD_OLD,
        ", interactive = true, backoff = 0.55, recovery = \"100kbps\"",
        &one_outage(),
        "75s",
        1,
    ));
    let g = gops(&r);
    assert_eq!(g.len(), lad.frames() / GOP, "every GOP is written");
    let timeouts: Vec<u64> = probe(&r, "tc_timeout").iter().map(|x| x.0).collect();
    let rto: Vec<u64> = r.table("probe_rto").f64s("t_ns").iter().map(|&t| t as u64).collect();
    assert_eq!(timeouts, rto, "the transcoder hears every timeout TCP records, when it fires");
    assert!(!timeouts.is_empty() && timeouts[0] > DOWN.0);
    // Every GOP's rung is the highest whose rate is at most the target (the lowest if none).
    for &(t, target, rung) in &g {
        assert_eq!(rung, lad.rung_for(target), "GOP at {t}: rung {rung} for target {target}");
    }
    // Before the first timeout: the top rung.
    assert!(g.iter().filter(|x| x.0 < timeouts[0]).all(|x| x.1 == TOP && x.2 == 0));
    // The cut takes effect at the first GOP start after the first timeout, within one GOP.
    let first = g.iter().find(|x| x.0 > timeouts[0]).unwrap();
    assert!((first.0 - timeouts[0]) as f64 <= GOP_NS);
    assert_eq!(first.1, (TOP as f64 * a).round() as u64);
    assert_eq!(first.2, 2, "1.1 Mbit/s is the third rung");
    // Replay the rules GOP by GOP against the timeouts (lazy cut: one per GOP; recovery once the
    // series is over). The series ends when the retransmission after the outage is acknowledged:
    // the first delivery after the outage plus a FreeBSD delayed ACK (100 ms) and the way back.
    let m = messages(&r);
    let back = m.iter().map(|x| x.2).find(|&d| d >= DOWN.1).expect("deliveries resume");
    let (mut target, mut pending, mut k) = (TOP, false, 0);
    let bottom = *lad.rates_bps.last().unwrap();
    for &(t, got, _) in &g {
        while k < timeouts.len() && timeouts[k] < t {
            if !pending {
                target = ((target as f64 * a).round() as u64).max(bottom);
                pending = true;
            }
            k += 1;
        }
        if pending {
            pending = false;
            assert_eq!(got, target, "GOP at {t}: the cut takes effect");
        } else if got == target && target < TOP {
            // Holding is allowed only while the timeout series may still be open.
            assert!(t >= timeouts[0] && t <= back + 200 * MS, "GOP at {t}: target held at {got} after recovery");
        } else {
            assert_eq!(got, (target + step).min(TOP), "GOP at {t}: additive recovery by {step} bit/s");
            target = got;
        }
    }
    assert_eq!(target, TOP, "back at the top rate by the end");
    // Recovery from the lowest target to the top takes exactly ⌈(top − low) / step⌉ GOPs.
    let low = g.iter().map(|x| x.1).min().unwrap();
    let i_low = g.iter().rposition(|x| x.1 == low).unwrap();
    let i_top = i_low + g[i_low..].iter().position(|x| x.1 == TOP).unwrap();
    assert_eq!((i_top - i_low) as u64, (TOP - low).div_ceil(step));
    assert_eq!(r.flow_value("v", "tc_timeouts") as usize, timeouts.len());
}

#[test]
fn classic_mode_never_changes_rung_and_its_backlog_grows_during_the_outage() {
    let r = run(&scenario(FREEBSD_OLD, "", &one_outage(), "75s", 1));
    let g = gops(&r);
    assert!(g.iter().all(|x| x.1 == TOP && x.2 == 0), "classic stays at 2 Mbit/s");
    assert!(probe(&r, "tc_timeout").is_empty(), "classic does not subscribe");
    assert!(r.table("probe_rto").rows() >= 2, "yet TCP timed out");
    // Bytes written but not yet delivered, at the outage's start and end: the 3 s of frames
    // written meanwhile (about 750 kB at 2 Mbit/s) pile up in TCP's buffer.
    let lad = ladder();
    let m = messages(&r);
    let pending =
        |at: u64| -> u64 { m.iter().filter(|x| x.1 <= at && x.2 > at).map(|x| lad.sizes[0][x.0 as usize]).sum() };
    let (before, after) = (pending(DOWN.0), pending(DOWN.1));
    assert!(before < 50_000, "{before} B pending before the outage");
    assert!(after > 650_000, "{after} B pending at the outage's end");
    // Every frame is delivered, from the top rung, in order.
    assert_eq!(m.len(), lad.frames());
    assert!(m.iter().enumerate().all(|(k, x)| x.0 == k as u64));
}

/// FreeBSD's RTO is `max(SRTT + 4·RTTVAR, floor) + 200 ms` (`TCPT_RANGESET`'s slop), doubled per
/// backoff (`tcp_backoff[]`). Here SRTT is about 45 ms (40 ms of propagation plus a frame's
/// serialisation), so R₀ ≈ floor + 0.2–0.3 s. The first timeout fires R₀ after the last
/// segment sent before the outage, and the k-th at T₁ + R₀·(2ᵏ⁻¹ − 1)·2; each retransmission is
/// lost until the link is back, and the first that gets through ends the series. Today's floor
/// (30 ms): R₀ ≈ 0.25–0.35 s → timeouts at ≈ 0.3, 0.9, 2.1 s into the outage and one at ≈ 4.5 s
/// that succeeds: 4. The paper's era (1-s floor, `min_rto = "1s"`): R₀ ≈ 1.2–1.3 s → ≈ 1.2 s,
/// then ≈ 3.6 s (after the link is back): 2, as its Fig. 4 (12 timeouts in 6 bursts) implies.
#[test]
fn freebsd_timeouts_per_three_second_outage_follow_its_rto_arithmetic() {
    let mut seen = Vec::new();
    for (transport, floor) in [(FREEBSD, 30 * MS), (FREEBSD_OLD, S)] {
        let r = run(&scenario(transport, ", interactive = true", &one_outage(), "40s", 1));
        let t: Vec<u64> = probe(&r, "tc_timeout").iter().map(|x| x.0).collect();
        let rto = r.table("probe_rto").f64s("rto_ns");
        let r0 = rto[0] as u64 / 2;
        assert!(r0 >= floor + 200 * MS && r0 <= floor.max(150 * MS) + 400 * MS, "{transport}: R0 {r0}");
        let predicted = (1..64u32).take_while(|&k| t[0] + r0 * ((1 << k) - 2) + 6 * MS < DOWN.1).count() + 1;
        assert_eq!(t.len(), predicted, "{transport}: timeouts at {t:?}");
        seen.push(t.len());
    }
    assert_eq!(seen, vec![4, 2], "today's FreeBSD, and with the 1-s floor of the paper's era");
}

#[test]
fn runs_are_deterministic_and_interactivity_changes_them() {
    let sc = scenario(FREEBSD_OLD, ", interactive = true", &one_outage(), "40s", 3);
    let (x, y) = (run(&sc), run(&sc));
    assert_eq!(x.digest(), y.digest());
    assert_eq!(messages(&x), messages(&y));
    let classic = run(&scenario(FREEBSD_OLD, "", &one_outage(), "40s", 3));
    assert_ne!(x.digest(), classic.digest());
}

/// Three outages at seeded random gaps (as the paper's injector). On a bottleneck of 2.2 Mbit/s
/// (10 % above the top rung) classic mode's backlog from each outage drains at only the spare
/// 0.2 Mbit/s, so its last frame arrives seconds after it was written; the interactive
/// transcoder writes less after each timeout, so the last frame arrives sooner (the paper's
/// Fig. 7 claim). Measured (seeds 1–3): 68.33 / 68.20 / 68.19 s classic, 60.15 s interactive.
/// On 3 Mbit/s both backlogs drain before the video ends and the claim is void: both deliver
/// the last frame within a frame interval of its write.
#[test]
fn over_three_outages_interactive_delivers_the_last_frame_sooner_on_a_tight_bottleneck() {
    let outages = "[[outages]]\nlinks = [\"R->C\", \"C->R\"]\ncount = 3\nduration = \"3s\"\nmin_gap = \"5s\"\nmax_gap = \"15s\"\nafter = \"2s\"\n";
    let last_written = (ladder().frames() as f64 - 1.0) / 30.0 * 1e9;
    let last = |rc: &str, seed: u64, app: &str| {
        let r = run(&scenario_at(rc, FREEBSD_OLD, app, outages, "200s", seed));
        let m = messages(&r);
        assert_eq!(m.len(), ladder().frames(), "{rc} seed {seed}{app}: every frame delivered");
        assert!(r.table("outages").rows() == 6, "three outages, two directions each");
        m.iter().map(|x| x.2).max().unwrap() as f64
    };
    for seed in 1..=3 {
        let (classic, inter) = (last("2.2Mbps", seed, ""), last("2.2Mbps", seed, ", interactive = true"));
        eprintln!(
            "2.2 Mbit/s seed {seed}: last frame delivered at {:.3} s classic, {:.3} s interactive",
            classic / 1e9,
            inter / 1e9
        );
        assert!(inter + 1e9 < classic, "seed {seed}: interactive {inter} ns, classic {classic} ns");
        assert!(classic - last_written > 2e9, "seed {seed}: classic ends with a backlog");
    }
    for app in ["", ", interactive = true"] {
        let t = last("3Mbps", 1, app);
        assert!(t - last_written < 1e9 / 30.0, "3 Mbit/s{app}: last frame at {t} ns");
    }
}

#[test]
fn bad_parameters_are_errors_at_their_key() {
    for (app, want) in [
        (", backoff = 1.0", "backoff: must be in (0, 1)"),
        (", backoff = 0.0", "backoff: must be in (0, 1)"),
        (", frame_rate = 0.0", "frame_rate: must be in (0, 240]"),
        (", frames = 0", "frames: must be at least 1"),
        (", frames = 5000", "frames: 5000 is more than the ladder's 1800 frames"),
        (", recovery = \"3Mbps\"", "recovery: 3000000 bit/s per GOP is more than the top rung's"),
    ] {
        let err = match scenario(FREEBSD, app, "", "1s", 1).build(&BuildOptions::default()) {
            Ok(_) => panic!("{app} builds"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("flows[0].app.") && err.contains(want), "{app}: {err}");
    }
    let missing = Scenario::from_toml(
        "[sim]\nduration = \"1s\"\n[[links]]\na = \"S\"\nb = \"C\"\nrate = \"1Mbps\"\ndelay = \"1ms\"\n[[flows]]\nname = \"v\"\nsrc = \"S\"\ndst = \"C\"\ntransport = { kind = \"tcp\" }\napp = { kind = \"transcoder\", ladder = \"/nonexistent/l.csv.gz\" }\n",
    )
    .unwrap()
    .build(&BuildOptions::default());
    let err = missing.err().expect("a missing ladder is an error").to_string();
    assert!(err.contains("flows[0].app.ladder") && err.contains("no such file"), "{err}");
}

#[test]
fn per_timeout_cuts_at_every_timeout_where_lazy_cuts_once_per_gop() {
    let lad = ladder();
    let bottom = *lad.rates_bps.last().unwrap();
    let a = 0.75;
    let app = |rule: &str| format!(", interactive = true, backoff = {a}, backoff_rule = \"{rule}\"");
    // Linux's TCP with a 50-ms RTO floor on an uncongested 30-Mbit/s path (no delayed-ACK
    // inflation of the variance): the outage's first timeouts come a fraction of a GOP apart.
    let fast = r#"{ kind = "tcp", cc = "newreno", profile = "linux", min_rto = "50ms" }"#;
    let every = run(&scenario_at("30Mbps", &fast, &app("per_timeout"), &one_outage(), "40s", 1));
    let lazy = run(&scenario_at("30Mbps", &fast, &app("lazy"), &one_outage(), "40s", 1));
    // per_timeout: each timeout multiplies the target by A (down to the bottom rung's rate).
    let cuts: Vec<f64> = probe(&every, "tc_cut_bps").iter().map(|x| x.1).collect();
    assert!(cuts.len() >= 3, "the outage gives several timeouts: {cuts:?}");
    let mut target = TOP;
    for (i, &c) in cuts.iter().enumerate() {
        target = ((target as f64 * a).round() as u64).max(bottom);
        assert_eq!(c as u64, target, "timeout {i}: cut to A × the previous target");
    }
    assert_eq!(every.flow_value("v", "tc_cuts"), every.flow_value("v", "tc_timeouts"));
    // lazy: timeouts within a GOP already cut are only counted, so it cuts less often and less deep.
    assert!(
        lazy.flow_value("v", "tc_cuts") < lazy.flow_value("v", "tc_timeouts"),
        "some timeouts share a GOP: {:?}",
        probe(&lazy, "tc_timeout")
    );
    // Timeout by timeout, per_timeout's target is never above lazy's and is below it after
    // some (both may reach the bottom rung in the end: a retransmission sent just before the
    // outage ends times out once more after it).
    let targets = |r: &RunResults| probe(r, "tc_cut_bps").iter().map(|x| x.1).collect::<Vec<f64>>();
    let (te, tl) = (targets(&every), targets(&lazy));
    assert_eq!(te.len(), tl.len(), "the same timeouts: {te:?} vs {tl:?}");
    assert!(te.iter().zip(&tl).all(|(e, l)| e <= l), "per_timeout is never above lazy: {te:?} vs {tl:?}");
    assert!(te.iter().zip(&tl).any(|(e, l)| e < l), "per_timeout reaches lower targets: {te:?} vs {tl:?}");
    // With FreeBSD's 1-s floor the timeouts are at least 1 s apart, longer than a 0.5-s GOP: every
    // timeout starts a GOP of its own and the two rules make the same run.
    let slow = |rule: &str| run(&scenario(FREEBSD_OLD, &app(rule), &one_outage(), "40s", 1));
    let (e, l) = (slow("per_timeout"), slow("lazy"));
    assert_eq!(e.flow_value("v", "tc_cuts"), l.flow_value("v", "tc_cuts"));
    assert_eq!(probe(&e, "tc_cut_bps"), probe(&l, "tc_cut_bps"));
}
