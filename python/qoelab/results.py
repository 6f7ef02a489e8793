"""Run results: columnar tables from the core, Parquet output, summaries and plots."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from qoelab.scenario import Scenario

TABLES = ("flows", "links", "throughput", "queues", "packets")


class Results:
    """The tables of one run, as pyarrow Tables (``res.flows``, ``res.links``, …)."""

    def __init__(self, native: dict[str, dict[str, Any]], scenario: "Scenario | None" = None):
        self.scenario = scenario
        self.tables: dict[str, pa.Table] = {}
        for name, cols in native.items():
            if name == "summary":
                continue
            arrays = {k: (v if isinstance(v, np.ndarray) else pa.array(v, pa.string())) for k, v in cols.items()}
            if name == "packets":
                # The core marks "not received" as -1; the receive-log format uses null.
                r = cols["recv_ns"]
                arrays["recv_ns"] = pa.array(r, pa.int64(), mask=r < 0)
            self.tables[name] = pa.table(arrays)
        s = native["summary"]
        self.summary: dict[str, float] = {k: float(v) for k, v in zip(s["key"], s["value"])}

    def __getattr__(self, name: str) -> pa.Table:
        if name in TABLES:
            return self.tables[name]
        raise AttributeError(name)

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

        Files go to a temporary sibling directory first, which is renamed to ``out_dir`` only
        when complete, so an interrupted write never looks finished."""
        out_dir = Path(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
        try:
            self.write_into(tmp, plot=plot)
            if out_dir.exists():
                # Keep what another step placed there (e.g. pcap files), replace our own files.
                for f in tmp.iterdir():
                    os.replace(f, out_dir / f.name)
                tmp.rmdir()
            else:
                os.replace(tmp, out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out_dir

    def write_into(self, d: Path, *, plot: bool = True) -> None:
        for name, t in self.tables.items():
            if name == "packets" and t.num_rows == 0:
                continue
            pq.write_table(t, d / f"{name}.parquet", compression="zstd")
        (d / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        if self.scenario is not None:
            (d / "scenario.toml").write_text(self.scenario.to_toml())
        if plot:
            from qoelab.report.plots import plot_run

            plot_run(self, d / "run.png")
