"""Run results: columnar tables from the core, Parquet output, summaries and plots."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from qoelab.scenario import Scenario

TABLES = ("flows", "links", "throughput", "queues", "packets")
# Filled only when the scenario asks for them (`packet_trace`, a discipline's `flow_sample`).
OPTIONAL_TABLES = ("packets", "flow_queues", "messages", "real_rejects", "commands")


def _summary_value(key: str, v: float) -> float | int:
    """Summary keys with a unit (`qoelab.outputs.column_unit`: seconds, rates, ratios) and
    indices are measurements; every other key counts something (seed, events, nodes, links,
    flows, jain_flows, rsvp_sent, …) and is an integer."""
    from qoelab.outputs import column_unit

    if column_unit(key) is not None or key.endswith("_index") or not math.isfinite(v) or not v.is_integer():
        return clean_float(v)
    return int(v)


def clean_float(v: float) -> float:
    """``v`` without binary representation noise: the shortest decimal of at most 15
    significant digits, when it is within 2 ulp of ``v`` (``30.000000000000004``, the core's
    30 s as ``ns × 1e-9``, is 1 ulp from 30.0); otherwise ``v`` unchanged, so a value carrying
    real 16- or 17-digit precision keeps it."""
    if not math.isfinite(v) or v == 0.0:
        return v
    r = float(f"{v:.15g}")
    return r if abs(r - v) <= 2 * math.ulp(v) else v


#: The categories of `packets.drop`, indexed by the core's code (`trace::PacketLog::drop`):
#: delivered or still in flight, dropped by a queue discipline, lost on a channel (a loss model,
#: a WiMAX burst, an outage).
DROP_CATEGORIES = ("none", "queue", "channel")


def drop_column(codes: np.ndarray) -> pa.DictionaryArray:
    """The core's 0/1/2 drop codes as a categorical (Arrow dictionary) column, which pandas reads
    as a ``category`` and Parquet keeps."""
    codes = np.asarray(codes)
    if codes.size and int(codes.max()) >= len(DROP_CATEGORIES):
        raise ValueError(f"packets.drop: unknown drop code {int(codes.max())}")
    from qoelab.outputs import arrow_array

    return pa.DictionaryArray.from_arrays(arrow_array(codes.astype(np.int8)), arrow_array(list(DROP_CATEGORIES)))


class Results:
    """The tables of one run, as pyarrow Tables (``res.flows``, ``res.links``, …)."""

    def __init__(self, native: dict[str, dict[str, Any]], scenario: "Scenario | None" = None):
        from qoelab.outputs import arrow_array

        self.scenario = scenario
        self.tables: dict[str, pa.Table] = {}
        for name, cols in native.items():
            if name == "summary":
                continue
            arrays = {k: arrow_array(v, type=None if isinstance(v, np.ndarray) else pa.string()) for k, v in cols.items()}
            if name == "packets":
                # The core marks "not received" as -1; the receive-log format uses null.
                r = np.asarray(cols["recv_ns"], dtype=np.int64)
                arrays["recv_ns"] = arrow_array(r, mask=r < 0)
                arrays["drop"] = drop_column(cols["drop"])
            elif name in ("flows", "subflows"):
                from qoelab.outputs import COUNTERS, counter_column

                for k in COUNTERS[name] & arrays.keys():
                    arrays[k] = counter_column(k, cols[k], name)
            self.tables[name] = pa.table(arrays)
        s = native["summary"]
        self.summary: dict[str, float | int] = {k: _summary_value(k, float(v)) for k, v in zip(s["key"], s["value"])}

    def __getattr__(self, name: str) -> pa.Table:
        # Every table of the run by name: flows, links, throughput, queues, packets,
        # flow_queues, probe_<kind>.
        if "tables" not in self.__dict__:  # during unpickling / before __init__
            raise AttributeError(name)
        try:
            return self._table(name)
        except KeyError as e:
            raise AttributeError(e.args[0]) from None

    def to_pandas(self, table: str = "flows"):
        """One table as a pandas DataFrame (``res.to_pandas("links")``). Needs pandas
        (``pip install 'qoelab[notebooks]'``)."""
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install 'qoelab[notebooks]' (or pandas)") from None
        return self._table(table).to_pandas()

    def to_polars(self, table: str = "flows"):
        """One table as a polars DataFrame, zero-copy where Arrow allows. Needs polars."""
        try:
            import polars as pl
        except ImportError:
            raise ImportError("to_polars() needs polars: pip install polars") from None
        return pl.from_arrow(self._table(table))

    def _table(self, name: str) -> pa.Table:
        if name not in self.tables:
            raise KeyError(f"no table {name!r} in these results (tables: {', '.join(sorted(self.tables))})")
        return self.tables[name]

    def series(self, name: str, flow: str | None = None, *, link: str | None = None) -> pa.Table:
        """The events of probe ``name`` (enabled by ``[output] probes``), in time order, as a
        pyarrow Table whose first column ``t_s`` is the time in seconds; ``flow`` and ``link``
        keep only that flow's (or link direction's) rows.

        The columns after ``t_s`` are those of the ``probe_<name>`` table: ``t_ns`` (exact
        time), ``flow``, ``end`` (0 at the flow's source, 1 at its destination) and the
        probe's values, e.g. ``cwnd_bytes, ssthresh_bytes`` for ``cwnd``, one row per change,
        and ``rto_ns, backoff`` for ``rto``, one row per timeout.

        ```pycon
        >>> from qoelab import Scenario
        >>> sc = Scenario.from_dict({
        ...     "sim": {"duration": "3s"},
        ...     "links": [{"a": "S", "b": "D", "rate": "10Mbps", "delay": "20ms",
        ...                "queue": {"kind": "fifo", "limit": "20p"}}],
        ...     "flows": [{"name": "tcp1", "src": "S", "dst": "D", "app": {"kind": "bulk"},
        ...                "transport": {"kind": "tcp", "cc": "newreno"}}],
        ...     "output": {"probes": ["cwnd", "rto"]}})
        >>> res = sc.run()
        >>> cw = res.series("cwnd", flow="tcp1")
        >>> cw.column_names
        ['t_s', 't_ns', 'flow', 'end', 'cwnd_bytes', 'ssthresh_bytes']
        >>> cw["cwnd_bytes"][0].as_py()  # the initial window: 10 segments of 1448 B
        14480
        >>> cw["cwnd_bytes"][-1].as_py() == res.flow("tcp1")["cwnd_bytes"]
        True
        >>> res.series("rto", flow="tcp1").num_rows == res.flow("tcp1")["rto_count"]
        True

        ```
        """
        table = f"probe_{name}"
        if table not in self.tables:
            have = sorted(t[len("probe_"):] for t in self.tables if t.startswith("probe_"))
            raise KeyError(
                f"no probe {name!r} in these results (recorded: {', '.join(have) or 'none'}); "
                "enable it with [output] probes = [...]"
            )
        t = self.tables[table]
        for col, value in (("flow", flow), ("link", link)):
            if value is None:
                continue
            if col not in t.column_names:
                raise KeyError(f"probe {name!r} has no {col} column")
            t = t.filter(pc.equal(t[col], value))
        t_s = pc.divide(pc.cast(t["t_ns"], pa.float64()), 1e9)
        t = t.add_column(0, "t_s", t_s)
        # Port probes are grouped by link direction; a stable sort keeps each one's order.
        return t.sort_by([("t_ns", "ascending")]) if name in ("queue", "drops") else t

    def flow(self, name: str) -> dict[str, Any]:
        """One row of the flows table as a dict."""
        t = self.tables["flows"]
        names = t.column("flow").to_pylist()
        if name not in names:
            raise KeyError(f"no flow {name!r} (flows: {', '.join(names)})")
        i = names.index(name)
        return {c: t.column(c)[i].as_py() for c in t.column_names}

    def jain(self, flows: list[str]) -> float:
        """Jain's fairness index over the named flows' throughput (goodput for stream flows)."""
        x = []
        for f in flows:
            r = self.flow(f)
            g = r["goodput_bps"]
            x.append(r["throughput_bps"] if g is None or math.isnan(g) else g)
        a = np.asarray(x, dtype=float)
        return float(a.sum() ** 2 / (len(a) * (a**2).sum())) if (a**2).sum() > 0 else 1.0

    def write(self, out_dir: Path, *, plot: bool = True) -> Path:
        """Writes Parquet tables, ``summary.json``, the normalised scenario and plots.

        The files go to a temporary sibling folder that then replaces ``out_dir`` as a whole
        (see :mod:`qoelab.outdir`): an interrupted write never looks finished, and no file of an
        earlier run is left beside the new ones."""
        from qoelab import outdir

        out_dir = outdir.check(Path(out_dir), "output folder")
        with outdir.staged(out_dir) as tmp:
            self.write_into(tmp, plot=plot)
        return out_dir

    def write_into(self, d: Path, *, plot: bool = True) -> None:
        from qoelab.outputs import parquet_metadata

        toml = self.scenario.to_toml() if self.scenario is not None else None
        for name, t in self.tables.items():
            # Tables only some runs fill (the packet log, per-flow backlog samples) are not
            # written when empty: no file means the run did not record them.
            if name in OPTIONAL_TABLES and t.num_rows == 0:
                continue
            meta = {**(t.schema.metadata or {}), **parquet_metadata(name, t.column_names, toml)}
            pq.write_table(t.replace_schema_metadata(meta), d / f"{name}.parquet", compression="zstd")
        # Strict JSON: a statistic with no value (Jain's index without TCP flows) is null, not NaN.
        summary = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in self.summary.items()}
        (d / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n")
        if toml is not None:
            (d / "scenario.toml").write_text(toml)
        if plot:
            from qoelab.report.plots import plot_run

            plot_run(self, d / "run.png")
