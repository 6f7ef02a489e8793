"""Plots of one run: per-flow throughput over time and queue occupancy of busy links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:
    from qoelab.results import Results

MAX_FLOWS = 12
#: Queue panels drawn: the links with the most queue drops, then the largest backlog.
MAX_LINKS = 3


def busiest_links(drops: np.ndarray, max_backlog: np.ndarray, n: int = MAX_LINKS) -> list[int]:
    """Indices of the `n` links with the most queue drops, ties broken by the largest backlog,
    then by table order; links that never held a packet are left out. The columns are unsigned
    counters: they are widened to signed 64-bit before sorting (negating a uint64 wraps, which
    once ranked idle links first)."""
    d = np.asarray(drops).astype(np.int64)
    b = np.asarray(max_backlog).astype(np.int64)
    order = np.lexsort((np.arange(len(d)), -b, -d))
    return [int(i) for i in order if b[i] > 0 or d[i] > 0][:n]


def text(s: object) -> str:
    """A user-supplied name (scenario, flow, link) as matplotlib draws it literally: ``$`` is
    escaped, so no name is parsed as mathtext (``$\\frac{$`` once failed the plot after the
    run), and a leading ``_``, which hides a legend entry, is kept visible."""
    t = str(s).replace("$", r"\$")
    return "\u200b" + t if t.startswith("_") else t


def flow_colors(n: int) -> list:
    """`n` distinct colours: tab10 up to 10 flows, tab20 up to 20, then evenly spaced hues."""
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:
        return [plt.get_cmap("tab20")(i) for i in range(n)]
    return [plt.get_cmap("hsv")(i / n) for i in range(n)]


def plot_run(res: "Results", path: "Path | IO[bytes]") -> "Path | IO[bytes]":
    """``run.png`` of a run in memory."""
    title = res.scenario.data.get("name", "") if res.scenario is not None else ""
    return plot_tables(res.tables, title, path)


#: The tables :func:`plot_tables` reads.
PLOT_TABLES = ("throughput", "queues", "links")


def plot_folder(folder: Path, path: "Path | IO[bytes]") -> "Path | IO[bytes]":
    """``run.png`` of a finished run folder (``qoelab plot``): its Parquet tables and the
    scenario's name from its ``scenario.toml``."""
    import tomllib

    import pyarrow.parquet as pq

    from qoelab.errors import QoelabError

    from qoelab.paths import arrow_source, open_inside

    tables = {}
    for name in PLOT_TABLES:
        f = folder / f"{name}.parquet"
        if not os.path.lexists(f):
            raise QoelabError(f"{f}: missing; is {folder} the output folder of `qoelab run`?")
        # Regular files of the folder only, never through a symlink planted in it.
        with open_inside(folder, f.name, "table") as fh:
            try:
                tables[name] = pq.read_table(arrow_source(fh))
            except Exception as e:  # a damaged or foreign file: pyarrow raises several kinds
                raise QoelabError(f"{f}: not a readable Parquet table: {e}") from None
    title = ""
    if os.path.lexists(folder / "scenario.toml"):
        try:
            with open_inside(folder, "scenario.toml", "scenario") as fh:
                title = str(tomllib.loads(fh.read(1 << 20).decode("utf-8")).get("name", ""))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, RecursionError, QoelabError):
            title = ""  # the title is cosmetic; the tables are what is plotted
    try:
        return plot_tables(tables, title, path)
    except KeyError as e:
        raise QoelabError(f"{folder}: a table lacks column {e.args[0]!r}; not written by this qoelab version?") from None


def plot_tables(tables: "dict[str, Any]", title: str, path: "Path | IO[bytes]") -> "Path | IO[bytes]":
    """Per-flow throughput over time, and the queue occupancy of the busiest links."""
    th = tables["throughput"]
    flows = th.column("flow").to_numpy(zero_copy_only=False)
    t = th.column("t_s").to_numpy()
    bps = th.column("bps").to_numpy()
    q = tables["queues"]
    links = tables["links"]
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    names = list(dict.fromkeys(flows.tolist()))
    shown = names[:MAX_FLOWS]
    for name, color in zip(shown, flow_colors(len(shown))):
        m = flows == name
        a1.plot(t[m], bps[m] / 1e6, lw=1, label=text(name), color=color)
    if len(names) > MAX_FLOWS:
        a1.set_title(f"first {MAX_FLOWS} of {len(names)} flows")
    a1.set_ylabel("received (Mbit/s)")
    a1.legend(fontsize=7, ncol=3, loc="upper right")
    a1.grid(alpha=0.3)
    # Queue occupancy of the (up to 3) links with the most drops or the largest backlog.
    drops = links.column("drop_queue_pkts").to_numpy()
    maxb = links.column("max_backlog_pkts").to_numpy()
    order = busiest_links(drops, maxb)
    ql = q.column("link").to_numpy(zero_copy_only=False)
    qt = q.column("t_s").to_numpy()
    qp = q.column("packets").to_numpy()
    for i in order:
        name = links.column("link")[int(i)].as_py()
        m = ql == name
        if m.any():
            a2.step(qt[m], qp[m], where="post", lw=1, label=text(name))
    a2.set_ylabel("queue (packets)")
    a2.set_xlabel("time (s)")
    a2.legend(fontsize=7)
    a2.grid(alpha=0.3)
    fig.suptitle(text(title) if title else "qoelab run")
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)
    return path
