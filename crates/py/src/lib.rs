//! Thin PyO3 layer over `qoelab-core`: conversions and exceptions only. The Python package
//! (`python/qoelab`) wraps this private `_native` module in its public API.

use numpy::PyArray1;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use qoelab_core::ip::tfd::{decode_ipv4, decode_ipv6, NextData, TfdFlags, TfdOption};
use qoelab_core::trace::{Column, Table};
use qoelab_core::{BuildOptions, RunResults, Scenario};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Mutex;

// Named `qoelab._native.X` so that pickle finds them (a sweep worker raises them).
create_exception!(qoelab._native, ScenarioError, PyValueError, "A scenario mistake: `path: reason`.");
create_exception!(qoelab._native, TfdError, PyValueError, "An invalid TFD option or option bytes.");
create_exception!(qoelab._native, TraceError, PyValueError, "An invalid video trace: `line N: reason`.");
create_exception!(
    qoelab._native,
    EmuError,
    PyException,
    "Emulation could not run: a device, namespace or the real-time loop failed (one line)."
);

#[cfg(target_os = "linux")]
mod emu;
create_exception!(
    qoelab._native,
    InternalError,
    PyException,
    "A bug in the simulator core: a Rust panic, caught at the binding (never a scenario mistake)."
);

fn scenario_err(e: qoelab_core::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// The last panic's message and location, recorded by the hook [`_native`] installs (the
/// payload alone carries no location).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Turns a caught panic into [`InternalError`]: one line, with the core's message.
fn internal_err(payload: Box<dyn Any + Send>) -> PyErr {
    let recorded = LAST_PANIC.lock().map(|mut g| g.take()).unwrap_or(None);
    let msg = recorded.unwrap_or_else(|| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic with a non-text payload".into())
    });
    let one_line = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    InternalError::new_err(format!("qoelab-core bug: {one_line}"))
}

/// Runs `f`, turning a panic inside it into [`InternalError`] (PyO3's own `PanicException`
/// derives from `BaseException`, so `except Exception` would not catch it).
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(internal_err(p)))
}

/// `qoelab run` (and `bench`) simulate only: a scenario with real nodes needs `qoelab emulate`.
fn simulated_only(sim: &qoelab_core::Simulation) -> Result<(), qoelab_core::ScenarioError> {
    match sim.real_nodes().first() {
        // Real nodes are declared in `[[nodes]]`, which number the first nodes.
        Some(&n) => Err(qoelab_core::ScenarioError::new(
            format!("nodes[{n}].real"),
            "a real node needs `qoelab emulate` (`qoelab run` simulates only)",
        )),
        None => Ok(()),
    }
}

/// A run that stopped because simulated time stopped advancing is an error, not a result.
fn finished(sim: &qoelab_core::Simulation) -> Result<(), qoelab_core::ScenarioError> {
    match sim.aborted() {
        Some(s) => Err(s.clone().into()),
        None => Ok(()),
    }
}

fn column<'py>(py: Python<'py>, c: Column) -> PyResult<Bound<'py, PyAny>> {
    Ok(match c {
        Column::U64(v) => PyArray1::from_vec(py, v).into_any(),
        Column::I64(v) => PyArray1::from_vec(py, v).into_any(),
        Column::F64(v) => PyArray1::from_vec(py, v).into_any(),
        Column::Str(v) => {
            // Series rows repeat their flow's or link's name: consecutive equal strings share
            // one Python object (8 bytes a row instead of a string each).
            let mut items: Vec<Bound<'py, PyString>> = Vec::with_capacity(v.len());
            for (i, s) in v.iter().enumerate() {
                let same = i > 0 && v[i - 1] == *s;
                items.push(if same { items[i - 1].clone() } else { PyString::new(py, s) });
            }
            PyList::new(py, items)?.into_any()
        }
    })
}

fn table<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, c) in t.columns {
        d.set_item(name, column(py, c)?)?;
    }
    Ok(d)
}

fn results<'py>(py: Python<'py>, r: RunResults) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for t in r.tables {
        let name = t.name.clone();
        d.set_item(name, table(py, t)?)?;
    }
    Ok(d)
}

/// Checks a scenario (TOML text) without running it. Raises `ScenarioError`.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None))]
fn validate(py: Python<'_>, text: &str, base_dir: Option<PathBuf>) -> PyResult<()> {
    guarded(|| validate_inner(py, text, base_dir))
}

fn validate_inner(py: Python<'_>, text: &str, base_dir: Option<PathBuf>) -> PyResult<()> {
    py.detach(|| {
        let sc = Scenario::from_toml(text)?;
        sc.build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: None }).map(|_| ())
    })
    .or_else(|e| {
        // A scenario asking for captures cannot be built without an output directory; that is
        // not a mistake in the scenario itself.
        if e.path.starts_with("output.pcap") && e.reason.contains("no output directory") {
            Ok(())
        } else {
            Err(scenario_err(e))
        }
    })
}

/// Runs a scenario given as TOML text; returns `{table: {column: array}}`. The GIL is released
/// while the simulation runs.
///
/// With `progress`, the simulation runs on a worker thread in 200 steps of simulated time and
/// `progress(simulated_s, end_s)` is called from this thread about ten times a second (never
/// per event). Stepping changes nothing in the results: `run_until` only stops popping events
/// at a step's end, and the next step pops the same events in the same `(time, seq)` order.
#[pyfunction]
#[pyo3(signature = (text, base_dir=None, out_dir=None, progress=None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    base_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| run_inner(py, text, base_dir, out_dir, progress))
}

fn run_inner<'py>(
    py: Python<'py>,
    text: &str,
    base_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(progress) = progress else {
        let r = py
            .detach(|| {
                let sc = Scenario::from_toml(text)?;
                let mut sim =
                    sc.build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: out_dir.as_deref() })?;
                simulated_only(&sim)?;
                sim.run();
                finished(&sim)?;
                Ok::<_, qoelab_core::ScenarioError>(sim.results())
            })
            .map_err(scenario_err)?;
        return results(py, r);
    };
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const STEPS: u64 = 200;
    let cancel = AtomicBool::new(false);
    let now_ns = AtomicU64::new(0);
    let end_ns = AtomicU64::new(u64::MAX);
    let r = std::thread::scope(|scope| -> PyResult<Result<RunResults, qoelab_core::ScenarioError>> {
        let worker = scope.spawn(|| {
            let sc = Scenario::from_toml(text)?;
            let mut sim = sc.build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: out_dir.as_deref() })?;
            simulated_only(&sim)?;
            let end = sim.end().0;
            end_ns.store(end, Ordering::Relaxed);
            for i in 1..=STEPS {
                if cancel.load(Ordering::Relaxed) {
                    // The callback raised (Ctrl-C, say): stop at a step boundary; the error
                    // that the caller sees is the callback's.
                    break;
                }
                let t = qoelab_core::time::SimTime(((end as u128 * i as u128) / STEPS as u128) as u64);
                sim.run_until(t);
                finished(&sim)?;
                now_ns.store(t.0, Ordering::Relaxed);
            }
            Ok::<_, qoelab_core::ScenarioError>(sim.results())
        });
        loop {
            let done = py.detach(|| {
                for _ in 0..10 {
                    if worker.is_finished() {
                        return true;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                false
            });
            let end = end_ns.load(Ordering::Relaxed);
            if end != u64::MAX {
                if let Err(e) = progress.call1((now_ns.load(Ordering::Relaxed) as f64 / 1e9, end as f64 / 1e9)) {
                    cancel.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            if done {
                break;
            }
        }
        worker.join().map_err(internal_err)
    })?;
    results(py, r.map_err(scenario_err)?)
}

/// Runs a scenario and reports only speed counters: `(events, wall_seconds, results)`.
#[pyfunction]
#[pyo3(name = "bench", signature = (text, base_dir=None))]
fn bench_run<'py>(py: Python<'py>, text: &str, base_dir: Option<PathBuf>) -> PyResult<(u64, f64, Bound<'py, PyDict>)> {
    guarded(|| bench_inner(py, text, base_dir))
}

fn bench_inner<'py>(
    py: Python<'py>,
    text: &str,
    base_dir: Option<PathBuf>,
) -> PyResult<(u64, f64, Bound<'py, PyDict>)> {
    let (events, wall, r) = py
        .detach(|| {
            let sc = Scenario::from_toml(text)?;
            let mut sim = sc.build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: None })?;
            simulated_only(&sim)?;
            // Wall time is measured here only for `qoelab bench`; it never enters result files.
            let t0 = std::time::Instant::now();
            sim.run();
            let wall = t0.elapsed().as_secs_f64();
            finished(&sim)?;
            let events = sim.events_dispatched();
            Ok::<_, qoelab_core::ScenarioError>((events, wall, sim.results()))
        })
        .map_err(scenario_err)?;
    Ok((events, wall, results(py, r)?))
}

/// Normalises a scenario: parses it and prints it back with every default filled in.
/// The JSON Schema of a scenario file (draft-07), generated from the config types.
#[pyfunction]
fn scenario_schema() -> String {
    qoelab_core::schema::scenario_schema_json()
}

#[pyfunction]
fn normalize(text: &str) -> PyResult<String> {
    guarded(|| Scenario::from_toml(text).map(|s| s.to_toml()).map_err(scenario_err))
}

/// Reads and validates a video trace with the simulator's reader (the one grammar of
/// `docs/models/video.md`); returns columns `nal`, `frame`, `display`, `type_code` (0 = I,
/// 1 = P, 2 = B, 3 = X), `size_bytes`, `ts_ms`. Raises `TraceError("line N: reason")`; the
/// message never quotes the file.
#[pyfunction]
fn read_trace<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| {
        let t = py.detach(|| qoelab_core::app::nal::read_trace_table(&path)).map_err(TraceError::new_err)?;
        let code: Vec<i8> = t
            .kind
            .iter()
            .map(|k| match k {
                b'I' => 0,
                b'P' => 1,
                b'B' => 2,
                _ => 3,
            })
            .collect();
        let d = PyDict::new(py);
        d.set_item("nal", PyArray1::from_vec(py, t.nal))?;
        d.set_item("frame", PyArray1::from_vec(py, t.frame))?;
        d.set_item("display", PyArray1::from_vec(py, t.display))?;
        d.set_item("type_code", PyArray1::from_vec(py, code))?;
        d.set_item("size_bytes", PyArray1::from_vec(py, t.size_bytes.into_iter().map(i64::from).collect()))?;
        d.set_item("ts_ms", PyArray1::from_vec(py, t.ts_ms))?;
        Ok(d)
    })
}

/// Panics with `message`, for tests of the panic conversion: the same path a bug in the core
/// takes (a panic under [`guarded`]), without a bug to trigger it.
#[pyfunction]
fn _panic_for_test(message: &str) -> PyResult<()> {
    guarded(|| panic!("{message}"))
}

const TFD_FLAGS: [(&str, TfdFlags); 7] = [
    ("B", TfdFlags::BUFFER),
    ("F", TfdFlags::FORECAST),
    ("D", TfdFlags::DATA_FLOAT),
    ("M", TfdFlags::MAXIMUM),
    ("L", TfdFlags::LARGE),
    ("S", TfdFlags::STREAM),
    ("E", TfdFlags::ELASTIC),
];

/// Encodes a TFD option. `flags` is a string of flag letters (e.g. `"BS"`); a float
/// `next_data` sets flag D. Returns the 12 option bytes (IPv4 or IPv6 hop-by-hop form).
#[pyfunction]
#[pyo3(signature = (flags, next_data, next_time_ms, ipv6=false))]
fn tfd_encode<'py>(
    py: Python<'py>,
    flags: &str,
    next_data: &Bound<'py, PyAny>,
    next_time_ms: u32,
    ipv6: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(|| tfd_encode_inner(py, flags, next_data, next_time_ms, ipv6))
}

fn tfd_encode_inner<'py>(
    py: Python<'py>,
    flags: &str,
    next_data: &Bound<'py, PyAny>,
    next_time_ms: u32,
    ipv6: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut f = TfdFlags::empty();
    for c in flags.chars() {
        let (_, bit) = TFD_FLAGS
            .iter()
            .find(|(n, _)| n.starts_with(c))
            .ok_or_else(|| TfdError::new_err(format!("flags: unknown flag {c:?} (known: BFDMLSE)")))?;
        f = f.union(*bit);
    }
    let data = if next_data.is_instance_of::<pyo3::types::PyFloat>() {
        f = f.union(TfdFlags::DATA_FLOAT);
        NextData::Float(next_data.extract::<f32>()?)
    } else {
        NextData::Bytes(
            next_data
                .extract::<u32>()
                .map_err(|_| TfdError::new_err("next_data: expected bytes as 0..2^32-1 or a float"))?,
        )
    };
    let opt = TfdOption::new(f, data, next_time_ms).map_err(|e| TfdError::new_err(e.to_string()))?;
    let bytes = if ipv6 { opt.ipv6_bytes() } else { opt.ipv4_bytes() };
    Ok(PyBytes::new(py, &bytes))
}

/// Decodes 12 TFD option bytes strictly; returns `{flags, next_data, next_time_ms, source,
/// rate_bps}`. Raises `TfdError` naming what is wrong.
#[pyfunction]
#[pyo3(signature = (data, ipv6=false))]
fn tfd_decode<'py>(py: Python<'py>, data: &[u8], ipv6: bool) -> PyResult<Bound<'py, PyDict>> {
    guarded(|| tfd_decode_inner(py, data, ipv6))
}

fn tfd_decode_inner<'py>(py: Python<'py>, data: &[u8], ipv6: bool) -> PyResult<Bound<'py, PyDict>> {
    let opt = if ipv6 { decode_ipv6(data) } else { decode_ipv4(data) }.map_err(|e| TfdError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    let flags: String = TFD_FLAGS.iter().filter(|(_, b)| opt.flags().contains(*b)).map(|(n, _)| *n).collect();
    d.set_item("flags", flags)?;
    match opt.next_data() {
        NextData::Bytes(b) => d.set_item("next_data", b)?,
        NextData::Float(x) => d.set_item("next_data", x as f64)?,
    }
    d.set_item("next_time_ms", opt.next_time_ms())?;
    d.set_item("source", format!("{:?}", opt.source()).to_lowercase())?;
    d.set_item("rate_bps", opt.rate_bps())?;
    Ok(d)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("TfdError", m.py().get_type::<TfdError>())?;
    m.add("InternalError", m.py().get_type::<InternalError>())?;
    m.add("TraceError", m.py().get_type::<TraceError>())?;
    m.add("EmuError", m.py().get_type::<EmuError>())?;
    #[cfg(target_os = "linux")]
    {
        m.add_function(wrap_pyfunction!(emu::emu_hosts, m)?)?;
        m.add_function(wrap_pyfunction!(emu::open_tun, m)?)?;
        m.add_function(wrap_pyfunction!(emu::emulate, m)?)?;
    }
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    // Fetch NumPy's C API now, at import, once: rust-numpy imports NumPy's core on the first
    // array made and panics if that import fails, which it does when a signal handler raises
    // in it (a SIGTERM that arrives just as `emulate` starts would make the first array of the
    // process a bug report instead of a clean interruption). Later arrays reuse the API.
    let _ = numpy::PyArray1::<f64>::zeros(m.py(), 0, false);
    // Record a panic's message for `InternalError` instead of printing it: the CLI reports a
    // bug in one line. With RUST_BACKTRACE set the default report (and backtrace) follows too.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()));
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut g) = LAST_PANIC.lock() {
            *g = Some(format!("{}{at}", text.unwrap_or_else(|| "panic".into())));
        }
        if std::env::var_os("RUST_BACKTRACE").is_some() {
            previous(info);
        }
    }));
    m.add_function(wrap_pyfunction!(tfd_encode, m)?)?;
    m.add_function(wrap_pyfunction!(tfd_decode, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(bench_run, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_schema, m)?)?;
    Ok(())
}
