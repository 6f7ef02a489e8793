"""The ``qoelab`` command line.

Every user mistake ends in one line on stderr naming the file, key path and reason, and exit
code 2; an internal error (a bug) ends in exit code 3 with a request to report it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, NoReturn, Sequence

from rich.console import Console
from rich.table import Table

from qoelab.errors import QoelabError

out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)


def fail(msg: str) -> None:
    """One unwrapped line on stderr."""
    sys.stderr.write(msg.replace("\n", " ") + "\n")

EXIT_USAGE = 2
EXIT_BUG = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        fail(f"qoelab: {message} (see `{self.prog} --help`)")
        raise SystemExit(EXIT_USAGE)


def _fmt(v: Any, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}{unit}" if abs(v) < 1000 else f"{v:,.0f}{unit}"
    return f"{v}{unit}"


def print_summary(res: Any, title: str = "") -> None:
    f = res.tables["flows"]
    t = Table(title=title or None, show_lines=False)
    cols = [
        ("flow", "flow", ""),
        ("transport", "transport", ""),
        ("throughput_bps", "Mbit/s", "mbps"),
        ("goodput_bps", "goodput Mbit/s", "mbps"),
        ("loss_ratio", "loss %", "pct"),
        ("delay_mean_s", "delay ms", "ms"),
        ("delay_p99_s", "p99 ms", "ms"),
        ("jitter_rfc3550_s", "jitter ms", "ms"),
        ("ipdv_mean_abs_s", "|IPDV| ms", "ms"),
    ]
    for _, h, _ in cols:
        t.add_column(h, justify="left" if h in ("flow", "transport") else "right")
    n = f.num_rows
    limit = 25
    for i in range(min(n, limit)):
        row = []
        for c, _, kind in cols:
            v = f.column(c)[i].as_py()
            if kind == "mbps" and v is not None:
                v = v / 1e6
            if kind == "pct" and v is not None:
                v = v * 100
            if kind == "ms" and v is not None:
                v = v * 1e3
            row.append(_fmt(v))
        t.add_row(*row)
    out.print(t)
    if n > limit:
        out.print(f"… {n - limit} more flows in flows.parquet")
    s = res.summary
    jain = s.get("jain_index", float("nan"))
    out.print(
        f"simulated {s['duration_s']:.3f} s, {int(s['events']):,} events"
        + (f", Jain's index over {int(s['jain_flows'])} flow{'' if int(s['jain_flows']) == 1 else 's'}: {jain:.4f}"
           if not math.isnan(jain) else "")
    )
    idle = [n for n, st in zip(f.column("flow").to_pylist(), f.column("start_s").to_pylist())
            if st >= s["duration_s"]]
    if idle:
        out.print(f"warning: {len(idle)} flow{'' if len(idle) == 1 else 's'} never started (start at or after "
                  f"the end of the run, {s['duration_s']:g} s): {', '.join(idle[:10])}"
                  + (" …" if len(idle) > 10 else "") + "; Jain's index leaves them out")


def _load(path: str, sets: Sequence[str]) -> Any:
    from qoelab.errors import ScenarioError
    from qoelab.paths import scenario_path
    from qoelab.scenario import Scenario, parse_value

    sc = Scenario.load(scenario_path(path))
    for s in sets or []:
        if "=" not in s:
            raise QoelabError(f"--set {s!r}: expected key.path=value")
        k, v = s.split("=", 1)
        try:
            sc.set(k.strip(), parse_value(v.strip()))
        except ValueError as e:  # ScenarioError included: it names the key path
            msg = e.message if isinstance(e, ScenarioError) else f"{k.strip()} = {e}"
            raise ScenarioError(sc.source, f"--set {msg}") from None
    return sc


def _shown(sc: Any) -> str:
    """The scenario file as a progress label names it: a bundled scenario relative to the
    bundle's `scenarios/` (``demo/scenario.toml``), another file relative to the current folder
    when it is below it, else as given (:func:`qoelab.progress.shorten` cuts what is too long)."""
    from qoelab.paths import root

    src = Path(sc.source)
    for base in (root() / "scenarios", Path.cwd()):
        try:
            return str(src.resolve().relative_to(base.resolve()))
        except (ValueError, OSError):
            continue
    return sc.source


def default_output(sc: Any, suffix: str = "") -> Path:
    """``results/<name>``: the scenario file's own name (its stem; ``scenario.toml`` takes its
    folder's name), so two scenarios of one folder do not share a results folder; distinct
    names give distinct folders, whatever their letters (:func:`qoelab.outdir.unique_name`)."""
    from qoelab.outdir import unique_name

    src = Path(sc.source)
    name = src.parent.name if src.name == "scenario.toml" else src.stem
    return Path("results") / (unique_name(name or "scenario") + suffix)


def _output_arg(value: str | None) -> Path | None:
    from qoelab.outdir import output_arg

    return output_arg(value)


def cmd_run(a: argparse.Namespace) -> int:
    from qoelab import outdir
    from qoelab.progress import progress

    sc = _load(a.scenario, a.set)
    out_dir = outdir.check(_output_arg(a.output) or default_output(sc))
    t0 = time.perf_counter()
    with outdir.staged(out_dir) as tmp:
        # Captures and tables go to the temporary folder, which replaces out_dir when complete.
        with progress(err, f"running {_shown(sc)}", unit="s simulated", fmt=lambda x: f"{x:.1f}", transient=True) as update:
            res = sc.run(tmp, progress=update)
        wall = time.perf_counter() - t0
        res.write_into(tmp, plot=False)
    print_summary(res, title=sc.data.get("name") or sc.source)
    _series_note(res.summary, sc)
    out.print(f"wall {wall:.2f} s; results in {out_dir}/")
    return _plot_after_run(res, out_dir) if a.plot else 0


def _plot_after_run(res: Any, out_dir: Path) -> int:
    """Draws ``run.png`` into a finished run's folder. A failure leaves the results as they are
    and says so in one line (exit 2 for an unwritable place, 3 for anything else, a bug)."""
    from qoelab.outdir import atomic_file
    from qoelab.report.plots import plot_run

    try:
        with atomic_file(out_dir / "run.png") as fh:
            plot_run(res, fh)
    except Exception as e:
        fail(f"qoelab: {out_dir}: the run finished and its results are written, but run.png could not be drawn "
             f"({type(e).__name__}: {e}); `qoelab plot {out_dir}` tries again")
        return EXIT_USAGE if isinstance(e, QoelabError) else EXIT_BUG
    return 0


def _series_note(summary: dict[str, Any], sc: Any) -> None:
    """Says when a series was kept coarser than asked to fit its memory budget."""
    notes = []
    asked = sc.data.get("output") if isinstance(sc.data.get("output"), dict) else {}
    if "throughput_bin_s" in summary:
        notes.append(f"throughput bins of {summary['throughput_bin_s']:g} s (asked {asked.get('throughput_bin', '100ms')})")
    if "queue_sample_max_s" in summary:
        notes.append(f"queue samples down to one per {summary['queue_sample_max_s']:g} s on the busiest links "
                     f"(asked {asked.get('queue_sample', '10ms')})")
    if notes:
        out.print("note: " + "; ".join(notes) + " — each series has a fixed memory budget (docs/reliability.md)")


def cmd_plot(a: argparse.Namespace) -> int:
    from qoelab.outdir import atomic_file, refuse_symlink

    folder = Path(a.folder)
    if not folder.is_dir():
        raise QoelabError(f"{folder}: not a folder")
    dest = _check_out_file(a.output, "-o/--output") if a.output else folder / "run.png"
    if dest.suffix.lower() != ".png":
        raise QoelabError(f"{dest}: the plot is a PNG; name the file *.png")
    refuse_symlink(dest, "-o/--output" if a.output else "")
    from qoelab.report.plots import plot_folder

    with atomic_file(dest) as fh:  # a temporary file of a random name, renamed into place
        plot_folder(folder, fh)
    out.print(f"wrote {dest}")
    return 0


def cmd_validate(a: argparse.Namespace) -> int:
    sc = _load(a.scenario, a.set)
    sc.validate()
    out.print(f"{sc.source}: ok")
    return 0


def cmd_sweep(a: argparse.Namespace) -> int:
    from qoelab.executors import spec_from_args
    from qoelab.progress import progress
    from qoelab.sweep import parse_grid, run_sweep

    from qoelab.sweep import check_reps

    check_reps(a.reps)
    spec = spec_from_args(a)
    sc = _load(a.scenario, a.set)
    axes = parse_grid(a.grid or [])
    from qoelab.outdir import check_folder

    out_dir = check_folder(_output_arg(a.output) or default_output(sc, "-sweep"))
    with progress(err, f"sweep {_shown(sc)}") as update:
        counts = run_sweep(sc, axes, a.reps, out_dir, a.jobs, update, executor=spec)
    repaired = f", {counts['repaired']} of them damaged and redone" if counts.get("repaired") else ""
    others = f", {counts['others']} run by another sweep" if counts.get("others") else ""
    shard = f"shard {spec.shard[0]}/{spec.shard[1]}: " if spec.shard else ""
    out.print(f"{shard}{counts['total']} runs ({counts['skipped']} already done, {counts['ran']} run now{repaired}{others}); "
              f"tables in {out_dir}/")
    return 0


def cmd_runs_pack(a: argparse.Namespace) -> int:
    from qoelab.outdir import output_arg
    from qoelab.progress import progress
    from qoelab.runpack import pack

    archive = output_arg(a.output)
    assert archive is not None  # required
    with progress(err, f"pack {a.folder}") as update:
        c = pack(Path(a.folder), archive, a.drop or (), [Path(x) for x in a.after or ()], update)
    damaged = f", {c['damaged']} damaged left out (the sweep redoes them)" if c["damaged"] else ""
    skipped = f", {c['skipped']} in the earlier parts left out" if c["skipped"] else ""
    held = sorted(n for n, k in c["dropped"].items() if k)
    unheld = sorted(n for n, k in c["dropped"].items() if not k)
    out.print(f"{c['runs']} finished runs and {c['sweeps']} sweep records packed into {archive}{skipped}{damaged}"
              + (f"; left out of every run: {', '.join(held)}" if held else "")
              + (f"; held by no packed run (nothing left out): {', '.join(unheld)}" if unheld else ""))
    return 0


def cmd_runs_unpack(a: argparse.Namespace) -> int:
    from qoelab.outdir import output_arg
    from qoelab.progress import progress
    from qoelab.runpack import unpack

    dest = output_arg(a.output)
    assert dest is not None  # required
    total = {"runs": 0, "present": 0, "sweeps": 0}
    for archive in a.archive:
        with progress(err, f"unpack {archive}") as update:
            c = unpack(Path(archive), dest, update)
        for k in total:
            total[k] += c[k]
    out.print(f"{total['runs']} runs unpacked into {dest} ({total['present']} were there already, "
              f"{total['sweeps']} sweep records written); resume with the command that made them")
    return 0


def cmd_bench(a: argparse.Namespace) -> int:
    from qoelab.bench import bench_one, bench_paths, ns3_reference

    from qoelab.sweep import check_reps

    check_reps(a.reps)
    json_out = _check_out_file(a.json, "--json") if a.json else None
    paths = bench_paths(a.scenario)
    ref = ns3_reference()
    rows = []
    for p in paths:
        with err.status(f"bench {p.stem} …"):
            rows.append(bench_one(p, a.reps))
    t = Table(title="qoelab bench")
    for h in ["scenario", "wall s", "events", "events/s", "bottleneck pkts", "bn pkts/wall-s", "sim-s/wall-s", "TCP goodput Mbit/s", "UDP loss %", "ns-3 wall s", "speed-up"]:
        t.add_column(h, justify="right")
    for r in rows:
        n = ref.get(r["scenario"].lower().replace("-10m", "-10m").replace("1g", "1g"), ref.get(r["scenario"].upper(), {}))
        n = n or next((v for k, v in ref.items() if k.lower() == r["scenario"].lower()), {})
        t.add_row(
            r["scenario"], f"{r['wall_s']:.3f}", f"{r['events']:,}", f"{r['events_per_s']:,.0f}", f"{r['bn_fwd_pkts']:,}",
            f"{r['bn_fwd_pkts_per_wall_s']:,.0f}", f"{r['sim_s_per_wall_s']:.2f}", _fmt(r["tcp_goodput_mbps"]),
            _fmt(r["udp_loss"] * 100), _fmt(n.get("wall_s")), _fmt(n["wall_s"] / r["wall_s"]) + "×" if n else "-",
        )
    out.print(t)
    if json_out:
        _write_file(json_out, json.dumps({"qoelab": rows, "ns3": ref}, indent=2) + "\n", "--json")
    return 0


def _check_out_file(name: str, what: str) -> Path:
    """An output file named on the command line, checked before any work: not a folder or a
    device, in an existing writable folder."""
    import os
    import stat

    p = Path(name)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise QoelabError(f"{what} {p}: {e.strerror or e}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise QoelabError(f"{what} {p}: exists and is not a regular file")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise QoelabError(f"{what} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise QoelabError(f"{what} {p}: folder {parent} is not writable")
    return p


def _write_file(p: Path, text: str, what: str) -> None:
    """Writes through a temporary file renamed into place (never a half-written file, never
    through a symbolic link)."""
    from qoelab.outdir import write_atomic

    write_atomic(p, text, what)


def cmd_examples(a: argparse.Namespace) -> int:
    """Copies `scenarios/` and `data/` (the scenarios refer to traces as `../../data/…`, so both
    keep their layout) and the example notebooks (`examples/*.ipynb`) into a new or empty folder."""
    import shutil

    from qoelab.paths import root

    dest = Path(a.directory)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise QoelabError(f"{dest}: exists and is not an empty folder; give a new or empty one")
    src = root()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("scenarios", "data", "examples"):
            if name == "examples" and not (src / name).is_dir():
                continue  # a bundle built before the notebooks were shipped
            # bundled files only: no symlinks followed out of the bundle, no caches
            shutil.copytree(src / name, dest / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    except OSError as e:
        raise QoelabError(f"{dest}: cannot copy the examples: {e.strerror or e}") from None
    n = sum(1 for _ in (dest / "scenarios").rglob("*.toml"))
    nb = sum(1 for _ in (dest / "examples").glob("*.ipynb")) if (dest / "examples").is_dir() else 0
    out.print(f"copied {n} scenarios, their data and {nb} notebooks (examples/; pip install 'qoelab[notebooks]') "
              f"into {dest}/ — e.g. qoelab run {dest}/scenarios/demo/scenario.toml", markup=False)
    return 0


def cmd_schema(a: argparse.Namespace) -> int:
    """Prints the scenario JSON Schema, or the reference page generated from it."""
    from qoelab.schema import reference_markdown, scenario_schema_text

    text = reference_markdown() if a.markdown else scenario_schema_text()
    if a.output is None:
        sys.stdout.write(text)
        return 0
    dest = Path(a.output)
    if dest.is_dir():
        raise QoelabError(f"{dest}: is a folder; give a file name, e.g. {dest / 'scenario.schema.json'}")
    if not dest.parent.is_dir():
        raise QoelabError(f"{dest}: folder {dest.parent} does not exist")
    from qoelab.outdir import write_atomic

    write_atomic(dest, text)  # never through a symbolic link, never half-written
    out.print(f"wrote {dest}")
    return 0


def cmd_demo(a: argparse.Namespace) -> int:
    a.scenario = "demo"
    a.set = a.set or []
    a.output = a.output or "results/demo"
    a.plot = True
    code = cmd_run(a)
    if code != 0:
        return code
    video_quality(Path(a.output), "video")
    if a.no_compare:
        return 0
    from qoelab import demo
    from qoelab.outdir import atomic_file

    dest = Path(a.output)
    out.print(f"the same bottleneck under {len(demo.MECHANISMS)} queue disciplines (runs in {dest / 'compare'}/):")
    rows = demo.compare(dest / "compare", lambda: _load("demo", a.set), decode=not a.no_decode, log=out.print)
    demo.write(dest, rows)
    t = Table(title="the video and the downloads, per queue discipline on the 10 Mbit/s bottleneck")
    cols = demo.shown_columns(rows)
    for k, name, unit, _ in cols:
        t.add_column(f"{name} {unit}".strip(), justify="left" if k == "label" else "right")
    for r in rows:
        t.add_row(*(r["label"] if k == "label" else "-" if not math.isfinite(r.get(k, math.nan)) else format(r[k], f)
                    for k, _, _, f in cols))
    out.print(t)
    with atomic_file(dest / "comparison.png") as fh:
        demo.figure(rows, fh)
    out.print(f"wrote {dest / 'comparison.csv'}, comparison.json and comparison.png"
              + ("" if a.no_decode else f" (PSNR-Y against the source: a real decode of what arrived within "
                                        f"{demo.PLAYOUT_DELAY_S * 1e3:.0f} ms)"))
    return 0


def video_quality(out_dir: Path, flow: str, playout_delay_s: float = 0.5) -> dict[str, Any]:
    """Estimates what the viewer of `flow` saw from the run's receive log (fast estimator: no
    decoding; `qoelab video evaluate` decodes for real). Prints and writes `video_quality.json`."""
    import tomllib

    from qoelab.video.quality.estimate import estimate
    from qoelab.video.receiver.recvlog import deliver, read_receive_log
    from qoelab.video.sources.encode import read_frames_csv
    from qoelab.video.traces.trace import read_trace

    sc = tomllib.loads((out_dir / "scenario.toml").read_text())
    found = [f for f in sc.get("flows", []) if isinstance(f, dict) and f.get("name") == flow]
    if len(found) != 1 or not isinstance(found[0].get("app"), dict) or "trace" not in found[0]["app"]:
        raise QoelabError(f"{out_dir}: the demo's video quality needs one flow named {flow!r} with a video trace "
                          "(renamed or removed by --set?)")
    (f,) = found
    from qoelab.paths import scenario_path

    base = scenario_path("demo").parent
    trace_path = (base / f["app"]["trace"]).resolve()
    trace = read_trace(trace_path)
    log = read_receive_log(out_dir / "packets.parquet", [flow])
    d = deliver(trace, log, playout_delay_s)
    frames_path = trace_path.with_name(trace_path.name.replace(".trace.csv", ".frames.csv"))
    frames = read_frames_csv(frames_path) if frames_path.exists() else None
    summary = estimate(trace, d.received, frames).summary()
    (out_dir / "video_quality.json").write_text(json.dumps(summary, indent=2, default=float) + "\n")
    t = Table(title=f"video quality of {flow!r} (estimated, playout delay {playout_delay_s * 1e3:.0f} ms)")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in summary.items():
        t.add_row(k, f"{v:.3f}" if isinstance(v, float) else str(v))
    out.print(t)
    return summary


#: Command groups whose modules are slow to import (numpy, pyarrow, every reproduction): the
#: real parsers are built only when the command line asks for the group; otherwise the group
#: appears in ``qoelab --help`` with its one-line help, and nothing of it is imported. Each module
#: has a ``register(subparsers)``; a new reproduction is one more module name here.
LAZY_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "reproduce": ("rerun a paper's experiments and write a report",
                  ("qoelab.reproduce.sqf", "qoelab.reproduce.tfd", "qoelab.reproduce.wimax", "qoelab.reproduce.mptcp",
                   "qoelab.reproduce.interactive", "qoelab.reproduce.qos", "qoelab.reproduce.all")),
    "report": ("reports built from finished runs", ("qoelab.reproduce.all",)),
    "verify": ("run the model-validation suite (closed forms, ns-3 anchor)", ("qoelab.verify.cli",)),
    "emulate": ("run real hosts and real applications through the simulated network (root)",
                ("qoelab.emulate.cli",)),
    "tfd-send": ("send a video trace over UDP/RTP announcing it in the TFD IP option (root; emulation)",
                 ("qoelab.emulate.tfdsend",)),
}


def _command(argv: Sequence[str]) -> str | None:
    """The sub-command the command line names: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def _register_groups(sub: argparse._SubParsersAction, argv: Sequence[str] | None) -> None:
    import importlib

    cmd = _command(sys.argv[1:] if argv is None else argv)
    if cmd in LAZY_GROUPS:
        for m in LAZY_GROUPS[cmd][1]:
            importlib.import_module(m).register(sub)
    for name, (help_text, _) in LAZY_GROUPS.items():
        if name not in sub.choices:  # a module above may have made it (`reproduce.all` adds `report`)
            sub.add_parser(name, help=help_text)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser for ``argv`` (default ``sys.argv[1:]``), which decides which lazy
    command groups are built for real (:data:`LAZY_GROUPS`)."""
    p = _Parser(prog="qoelab", description="Measure how network QoS mechanisms change streamed-video quality.")
    from qoelab import __version__

    p.add_argument("--version", action="version", version=f"qoelab {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    def scen(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("scenario", help="scenario file, or a bundled scenario name (e.g. bench/dumbbell-10m)")
        sp.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a value, e.g. links[1].rate=20Mbps (repeatable)")

    r = sub.add_parser("run", help="run one scenario")
    scen(r)
    r.add_argument("-o", "--output", metavar="DIR", help="results directory, replaced whole (default results/<scenario file stem>)")
    pl = r.add_mutually_exclusive_group()
    pl.add_argument("--plot", action="store_true",
                    help="also write run.png (throughput and queues; about 0.6 s more: matplotlib); or later: qoelab plot DIR")
    pl.add_argument("--no-plot", action="store_false", dest="plot", help="no run.png (the default)")
    r.set_defaults(func=cmd_run)

    pp = sub.add_parser("plot", help="draw run.png (throughput per flow, busiest queues) of a finished run folder")
    pp.add_argument("folder", metavar="DIR", help="the output folder of `qoelab run`")
    pp.add_argument("-o", "--output", metavar="FILE", help="the PNG to write (default DIR/run.png)")
    pp.set_defaults(func=cmd_plot)

    v = sub.add_parser("validate", help="check a scenario without running it")
    scen(v)
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("sweep", help="run a parameter grid on a process pool or a Dask cluster (resumable)")
    scen(s)
    s.add_argument("--grid", action="append", metavar="KEY.PATH=V1,V2,…", help="an axis of the grid (repeatable)")
    s.add_argument("--reps", type=int, default=1, help="repetitions per cell, seeds base+0..R-1 (default 1)")
    s.add_argument("-j", "--jobs", type=int, default=1, help="parallel runs (default 1; 0 = one per CPU)")
    s.add_argument("-o", "--output", metavar="DIR",
                   help="sweep folder: one run folder per cell and repetition plus the tables; an existing sweep's "
                        "folder resumes it (default results/<scenario file stem>-sweep)")
    from qoelab.executors import add_arguments

    add_arguments(s)
    s.set_defaults(func=cmd_sweep)

    ru = sub.add_parser("runs", help="carry the finished runs of a sweep or reproduction to another machine (pack, unpack)")
    rsub = ru.add_subparsers(dest="runs_cmd", required=True, parser_class=_Parser)
    rp = rsub.add_parser("pack", help="write every finished run under a folder into one .tar.xz, optionally without "
                                      "its bulky time series")
    rp.add_argument("folder", metavar="DIR", help="a sweep or reproduction output folder")
    rp.add_argument("-o", "--output", metavar="FILE", required=True, help="the archive to write (.tar.xz)")
    rp.add_argument("--drop", action="append", metavar="NAME",
                    help="a file to leave out of every run, e.g. queues.parquet (repeatable); its size and SHA-256 "
                         "stay in the run's done marker. Only files the report does not read may be dropped")
    rp.add_argument("--after", action="append", metavar="FILE",
                    help="an earlier archive of the same folder: its runs are not packed again (repeatable)")
    rp.set_defaults(func=cmd_runs_pack)
    rupk = rsub.add_parser("unpack", help="restore the runs of one or more archives into a folder; runs finished "
                                          "there already are kept")
    rupk.add_argument("archive", nargs="+", metavar="FILE", help="archives written by `qoelab runs pack`")
    rupk.add_argument("-o", "--output", metavar="DIR", required=True, help="the folder to restore into")
    rupk.set_defaults(func=cmd_runs_unpack)

    b = sub.add_parser("bench", help="measure simulator speed on scenarios/bench/")
    b.add_argument("scenario", nargs="*", help="bench scenario names (default: all canonical)")
    b.add_argument("--reps", type=int, default=1, help="runs per scenario; the median wall time is reported")
    b.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    b.set_defaults(func=cmd_bench)

    d = sub.add_parser("demo", help="run the bundled default scenario, print a summary, write results and a plot, "
                                     "then the same bottleneck under FIFO, SQF, FQ-CoDel, PIE and DiffServ EF side by side")
    d.add_argument("-o", "--output", metavar="DIR", help="results directory (default results/demo)")
    d.add_argument("--set", action="append", metavar="KEY.PATH=VALUE", help="override a value, e.g. flows[1].count=8 (repeatable)")
    d.add_argument("--no-compare", action="store_true",
                   help="run the demo scenario alone, without the side-by-side queue disciplines")
    d.add_argument("--no-decode", action="store_true",
                   help="compare without the real decode of each delivery (no PSNR column; saves about 30 s)")
    d.set_defaults(func=cmd_demo)

    e = sub.add_parser("examples", help="copy the bundled scenarios, data (traces, clips) and example notebooks into DIR for editing")
    e.add_argument("directory", metavar="DIR", help="a new or empty folder")
    e.set_defaults(func=cmd_examples)

    sc = sub.add_parser("schema", help="print the scenario file's JSON Schema (for editors), or its reference page")
    sc.add_argument("--markdown", action="store_true", help="print the key-by-key reference (docs/scenarios.md) instead")
    sc.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    sc.set_defaults(func=cmd_schema)

    try:
        from qoelab.video import cli as video_cli
    except ImportError:
        pass
    else:
        if hasattr(video_cli, "register"):
            video_cli.register(sub)
    _register_groups(sub, argv)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from qoelab.errors import NativeScenarioError

    try:
        parser = build_parser(argv)
        a = parser.parse_args(argv)
        return int(a.func(a) or 0)
    except SystemExit as e:
        return int(e.code or 0)
    except KeyboardInterrupt:
        err.print("qoelab: interrupted")
        return 130
    except (QoelabError, NativeScenarioError) as e:
        fail(f"qoelab: {e}")
        return EXIT_USAGE
    except Exception as e:  # a bug: say so, briefly, with the type
        if type(e).__name__ in ("VideoInputError",):
            fail(f"qoelab: {e}")
            return EXIT_USAGE
        fail(f"qoelab: internal error ({type(e).__name__}: {e}); please report it")
        return EXIT_BUG
    except BaseException as e:  # pyo3 PanicException derives from BaseException
        fail(f"qoelab: internal error ({type(e).__name__}: {e}); please report it")
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
