//! Emulation (Linux): TUN devices in namespaces and the real-time run, over `qoelab-emu`.
//! The front end (`qoelab.emulate`) makes the namespaces and runs the commands.

use crate::{finished, results, scenario_err, EmuError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoelab_core::{BuildOptions, Scenario};
use qoelab_emu::driver::{extend_summary, Options};
use qoelab_emu::Tap;
use std::os::fd::{BorrowedFd, IntoRawFd};
use std::path::PathBuf;

/// Every node of a scenario (TOML text), in node order: `[{name, node, real, addrs, mtu}]`
/// (`addrs` primary first; `mtu` what a real node's device gets).
#[pyfunction]
#[pyo3(signature = (text, base_dir=None))]
pub fn emu_hosts<'py>(py: Python<'py>, text: &str, base_dir: Option<PathBuf>) -> PyResult<Bound<'py, PyList>> {
    crate::guarded(|| {
        let sim = py
            .detach(|| {
                let mut sc = Scenario::from_toml(text)?;
                // Captures are the run's business: no folder is needed to list the hosts.
                sc.output.pcap.clear();
                sc.build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: None })
            })
            .map_err(scenario_err)?;
        let real = sim.real_nodes();
        let out = PyList::empty(py);
        for (n, name) in sim.node_names.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("name", name)?;
            d.set_item("node", n)?;
            d.set_item("real", real.contains(&(n as u32)))?;
            d.set_item("addrs", sim.node_addresses(n as u32).iter().map(|a| a.to_string()).collect::<Vec<_>>())?;
            d.set_item("mtu", sim.device_mtu())?;
            out.append(d)?;
        }
        Ok(out)
    })
}

/// Creates the TUN device `name` in the network namespace at `netns` (a path such as
/// `/run/netns/NAME`); returns its descriptor, which the caller owns and closes (the device
/// disappears with it). Raises `EmuError`.
#[pyfunction]
pub fn open_tun(netns: PathBuf, name: &str) -> PyResult<i32> {
    crate::guarded(|| {
        let fd = qoelab_emu::tun::open_in(Some(&netns), name).map_err(|e| EmuError::new_err(e.to_string()))?;
        Ok(fd.into_raw_fd())
    })
}

/// Runs a scenario in real time: `taps` pairs each real node's name with its device's
/// descriptor (borrowed; not closed). The run ends at the scenario's end, or when `stop_fd`
/// becomes readable; the loop runs under `SCHED_FIFO` at `rt_priority` where allowed (0: not).
/// Returns the tables of `run` plus `lag`, `real_flows`, `real_rejects`.
/// The GIL is released while the network runs.
#[pyfunction]
#[pyo3(signature = (text, taps, base_dir=None, out_dir=None, stop_fd=None, spin_us=0, lag_interval_s=1.0, rt_priority=0))]
#[allow(clippy::too_many_arguments)]
pub fn emulate<'py>(
    py: Python<'py>,
    text: &str,
    taps: Vec<(String, i32)>,
    base_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    stop_fd: Option<i32>,
    spin_us: u64,
    lag_interval_s: f64,
    rt_priority: i32,
) -> PyResult<Bound<'py, PyDict>> {
    crate::guarded(|| {
        // NumPy's C API was fetched when the module was imported (`_native`'s init): a pending
        // KeyboardInterrupt (Ctrl-C or SIGTERM) cannot fail that import here any more.
        if !(lag_interval_s.is_finite() && lag_interval_s >= 1e-3) {
            return Err(EmuError::new_err(format!("lag interval {lag_interval_s} s: at least 1 ms")));
        }
        let sc = Scenario::from_toml(text).map_err(scenario_err)?;
        let mut sim = sc
            .build(&BuildOptions { base_dir: base_dir.as_deref(), pcap_dir: out_dir.as_deref() })
            .map_err(scenario_err)?;
        let real = sim.real_nodes();
        let mut tap_list = Vec::with_capacity(taps.len());
        for (name, fd) in &taps {
            let node = sim.node_names.iter().position(|n| n == name).map(|n| n as u32);
            let node = node
                .filter(|n| real.contains(n))
                .ok_or_else(|| EmuError::new_err(format!("{name:?} is not a real node of the scenario")))?;
            // SAFETY: the caller keeps the descriptor open for the duration of the call.
            tap_list.push(Tap { node, fd: unsafe { BorrowedFd::borrow_raw(*fd) } });
        }
        // SAFETY: likewise.
        let stop = stop_fd.map(|fd| unsafe { BorrowedFd::borrow_raw(fd) });
        let opts = Options {
            spin_ns: spin_us.saturating_mul(1000),
            lag_interval_ns: (lag_interval_s * 1e9) as u64,
            rt_priority,
        };
        let (out, r) = py
            .detach(|| {
                let out = qoelab_emu::run(&mut sim, &tap_list, stop, &opts)?;
                Ok::<_, std::io::Error>((out, sim.results()))
            })
            .map_err(|e| EmuError::new_err(format!("emulation failed: {e}")))?;
        finished(&sim).map_err(scenario_err)?;
        let mut tables = r.tables;
        extend_summary(&mut tables, &out.summary());
        tables.extend(out.tables());
        results(py, qoelab_core::RunResults { tables })
    })
}
