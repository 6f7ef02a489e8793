"""``qoelab emulate SCENARIO [-o DIR] [--exec NODE=COMMAND]… [--daemon NODE=COMMAND]…`` and
``qoelab emulate --cleanup``.

Runs the scenario's network in real time with its real nodes as Linux network namespaces,
each command inside its node's namespace (``sh -c``), and writes the usual outputs of
``qoelab run`` (flows, links, queues, probes, captures) plus ``real_flows`` (real traffic by
5-tuple), ``real_rejects``, ``lag`` (how late the engine ran each event) and ``commands``;
commands' output goes to ``DIR/exec/NODE-K.log``. The network runs for the scenario's duration
or until every ``--exec`` command has ended; ``--daemon`` commands (servers) run in the
background and are stopped at the end. Needs root.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

from qoelab.errors import QoelabError


def register(sub: Any) -> None:
    e = sub.add_parser("emulate", help="run real hosts and real applications through the simulated network (root)")
    e.add_argument("scenario", nargs="?", help="scenario file (real hosts: [[nodes]] name = …, real = true)")
    e.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a value (repeatable)")
    e.add_argument("-o", "--output", metavar="DIR", help="results directory, replaced whole (default results/<scenario file stem>)")
    e.add_argument("--exec", action="append", default=[], metavar="NODE=COMMAND", dest="execs",
                   help="run COMMAND in real node NODE's namespace and wait for it (repeatable; the run ends when all have ended)")
    e.add_argument("--daemon", action="append", default=[], metavar="NODE=COMMAND", dest="daemons",
                   help="run COMMAND in NODE's namespace in the background, started first, stopped at the end (a server)")
    e.add_argument("--spin-us", type=int, default=0, metavar="US",
                   help="busy-wait this many µs before each due event instead of sleeping (less lag, one busy CPU; default 0)")
    e.add_argument("--rt-priority", type=int, default=10, metavar="N",
                   help="run the engine's loop under SCHED_FIFO at priority N, 1-99, so a busy host delays it less "
                        "(0: the normal scheduler; commands never inherit it; default 10)")
    e.add_argument("--cleanup", action="store_true",
                   help="remove the namespaces of emulations that are no longer running (qoelab-<run id>-… only), and exit")
    e.set_defaults(func=cmd_emulate)


def cmd_emulate(a: argparse.Namespace) -> int:
    from qoelab.cli import _load, _output_arg, default_output, err, out
    from qoelab.emulate import check_commands, emulate, hosts_of, parse_exec, unavailable

    if a.cleanup:
        if a.scenario or a.execs or a.daemons:
            raise QoelabError("--cleanup takes no scenario, --exec or --daemon")
        return _cleanup(out)
    if not a.scenario:
        raise QoelabError("emulate: a scenario is required (or --cleanup)")
    if a.spin_us < 0 or a.spin_us > 1_000_000:
        raise QoelabError(f"--spin-us {a.spin_us}: expected 0 to 1000000 µs")
    if not 0 <= a.rt_priority <= 99:
        raise QoelabError(f"--rt-priority {a.rt_priority}: expected 0 to 99")
    from qoelab import outdir
    from qoelab.progress import progress

    sc = _load(a.scenario, a.set)
    execs = [parse_exec(s, "--exec") for s in a.execs]
    daemons = [parse_exec(s, "--daemon") for s in a.daemons]
    # Bad input first (exit 2 whoever runs it), then the machine.
    check_commands(sc, hosts_of(sc), [("--daemon", n, c) for n, c in daemons] + [("--exec", n, c) for n, c in execs])
    out_dir = outdir.check(_output_arg(a.output) or default_output(sc))
    why = unavailable()
    if why:
        raise QoelabError(why)
    t0 = time.perf_counter()
    try:
        with outdir.staged(out_dir) as tmp:
            with progress(err, f"emulating {sc.source}", unit="s", fmt=lambda x: f"{x:.1f}", transient=True) as update:
                em = emulate(sc, tmp, execs, daemons, spin_us=a.spin_us, rt_priority=a.rt_priority, tick=update)
            em.results.write_into(tmp, plot=False)
    except KeyboardInterrupt:
        err.print("qoelab: emulation interrupted; namespaces removed, no results written")
        return 130
    print_emulation(em, out)
    out.print(f"wall {time.perf_counter() - t0:.2f} s; results in {out_dir}/")
    return 0


def _cleanup(out: Any) -> int:
    from qoelab.emulate.hosts import unavailable
    from qoelab.emulate.watchdog import cleanup_stale

    why = unavailable()
    if why:
        raise QoelabError(why)
    removed = cleanup_stale()
    out.print(f"removed {len(removed)} namespace{'' if len(removed) == 1 else 's'} of stopped emulations"
              + (": " + ", ".join(removed) if removed else ""))
    return 0


def print_emulation(em: Any, out: Any) -> None:
    """The summary of an emulation: simulated flows (if any), real flows, commands, lag."""
    from rich.table import Table

    from qoelab.cli import _fmt, print_summary

    res = em.results
    if res.tables["flows"].num_rows:
        print_summary(res)
    rf = res.tables["real_flows"]
    t = Table(title="real flows", show_lines=False)
    for h in ("flow", "from", "to", "sent", "recv", "drops q/ch/rt", "Mbit/s", "delay ms", "p99 ms"):
        t.add_column(h, justify="left" if h in ("flow", "from", "to") else "right")
    rows = rf.to_pylist()
    rows.sort(key=lambda r: -r["recv_bytes"])
    for r in rows[:20]:
        t.add_row(r["flow"], r["from_node"], r["to_node"], str(r["sent_pkts"]), str(r["recv_pkts"]),
                  f"{r['drop_queue_pkts']}/{r['drop_channel_pkts']}/{r['drop_router_pkts']}",
                  _fmt(r["throughput_bps"] / 1e6), _fmt(r["delay_mean_s"] * 1e3), _fmt(r["delay_p99_s"] * 1e3))
    out.print(t)
    if len(rows) > 20:
        out.print(f"… {len(rows) - 20} more real flows in real_flows.parquet")
    for c in em.commands:
        state = "stopped at the end" if c.stopped else f"exit {c.exit_code}"
        out.print(f"{'exec' if c.wait else 'daemon'} {c.node}: {c.command!r}: {state} (log {c.log.name})")
    s = res.summary
    ms = lambda k: s[k] * 1e3 if isinstance(s[k], float) and math.isfinite(s[k]) else float("nan")  # noqa: E731
    out.print(f"emulated {s['duration_s']:.3f} s ({'every command ended' if em.ended == 'commands' else 'the scenario duration'}), "
              f"{int(s['events']):,} events; lag p50 {ms('lag_p50_s'):.3f} ms, p99 {ms('lag_p99_s'):.3f} ms, "
              f"max {ms('lag_max_s'):.3f} ms, {int(s['lag_late_events'])} events over 1 ms late")
    if s["lag_behind_intervals"]:
        out.print(f"warning: the engine could not keep up with real time in {int(s['lag_behind_intervals'])} "
                  f"interval{'' if s['lag_behind_intervals'] == 1 else 's'} of {s['lag_interval_s']:g} s (over 1 % of "
                  "their events more than 1 ms late; lag.parquet's `behind` column): delays measured there include it")
    if s.get("emu_host_tx_dropped_pkts"):
        out.print(f"warning: the hosts' kernels dropped {int(s['emu_host_tx_dropped_pkts'])} datagrams the engine did not "
                  "read in time (their devices' queues were full)")
    if s.get("real_rejected_pkts"):
        out.print(f"note: {int(s['real_rejected_pkts'])} datagrams from the hosts were refused (real_rejects.parquet)")
