"""The figures' common parts: drawing functions for a report's :class:`~qoelab.experiment.tables.Figure`
built from a layer :class:`~qoelab.experiment.tables.Table` (estimates as bars or points with
their 95 % intervals, the paper's values as markers), so a reproduction declares what to draw,
not how.

- :func:`bars`: grouped bars, one group per row, one bar per column, the paper's column as ×.
- :func:`lines`, :func:`lines_on`: one line per group of rows against a numeric column, with
  error bars (a log axis draws zeros at a floor), in a figure of its own or an axis given.
- :func:`heatmap`: a grid of one value per (row, column), e.g. ours minus the paper's.
- :func:`panels`: one panel per metric (each its own unit), bars per row and series with
  their intervals: a comparison of mechanisms on several measures at once.
- :func:`save`: the common ending (layout, file, close).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from qoelab.experiment.stats import Estimate


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (reports are drawn without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mean_of(v: Any, scale: float = 1.0) -> float:
    """An estimate's (or a number's) value for plotting; NaN for anything else."""
    if isinstance(v, Estimate):
        return v.mean * scale
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v) * scale
    return float("nan")


def error_of(v: Any, scale: float = 1.0) -> float:
    """An estimate's half-width for an error bar (0 without an interval)."""
    if isinstance(v, Estimate) and math.isfinite(v.half_width):
        return v.half_width * scale
    return 0.0


def save(fig: Any, path: Path, dpi: int = 110) -> None:
    plt = pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def bars(rows: Sequence[dict[str, Any]], keys: Sequence[tuple[str, str]], paper: str | None, ylabel: str, title: str,
         tick: Callable[[dict[str, Any]], str], *, log: bool = False, scale: float = 1.0,
         rotate: bool = True) -> Callable[[Path], None]:
    """Grouped bars: one group per row (labelled ``tick(row)``), a bar per ``(key, label)`` with
    its 95 % interval, the row's ``paper`` value as a black ×."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(rows) + 2), 4.2))
        w = 0.8 / len(keys)
        for j, (k, lab) in enumerate(keys):
            xs = [i + (j - (len(keys) - 1) / 2) * w for i in range(len(rows))]
            ax.bar(xs, [mean_of(r.get(k), scale) for r in rows], w, yerr=[error_of(r.get(k), scale) for r in rows],
                   capsize=2, label=lab, color=f"C{j}")
        if paper:
            ax.plot(range(len(rows)), [mean_of(r.get(paper)) for r in rows], "kx", ms=7, label="paper")
        ax.set_xticks(range(len(rows)), [tick(r) for r in rows], fontsize=6 if rotate else 7,
                      rotation=90 if rotate else 0)
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
        save(fig, path)

    return draw


def panels(rows: Sequence[dict[str, Any]], metrics: Sequence[tuple[str, str]], tick: Callable[[dict[str, Any]], str],
           title: str, *, series: str | None = None, labels: Mapping[Any, str] | None = None,
           columns: int = 3) -> Callable[[Path], None]:
    """One panel per ``(key, heading)`` of ``metrics``, ``columns`` to a line: a bar per distinct
    ``tick(row)`` (first-seen order) with its 95 % interval, one bar series per value of the
    ``series`` key (legend ``labels[value]``); a panel without a finite value is left out."""

    def draw(path: Path) -> None:
        plt = pyplot()
        shown = [(k, h) for k, h in metrics if any(math.isfinite(mean_of(r.get(k))) for r in rows)]
        ticks = list(dict.fromkeys(tick(r) for r in rows))
        groups = list(dict.fromkeys(r[series] for r in rows)) if series else [None]
        ncol = min(columns, len(shown))
        nrow = math.ceil(len(shown) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 3.3 * nrow), squeeze=False)
        w = 0.8 / len(groups)
        for ax, (k, heading) in zip(axes.flat, shown):
            for j, g in enumerate(groups):
                by = {tick(r): r for r in rows if series is None or r[series] == g}
                xs = [i + (j - (len(groups) - 1) / 2) * w for i in range(len(ticks))]
                ax.bar(xs, [mean_of(by[t].get(k)) if t in by else math.nan for t in ticks], w,
                       yerr=[error_of(by[t].get(k)) if t in by else 0.0 for t in ticks], capsize=2, color=f"C{j}",
                       label=None if g is None else (labels or {}).get(g, str(g)))
            ax.set_xticks(range(len(ticks)), ticks, rotation=40, ha="right", fontsize=7)
            ax.set_title(heading, fontsize=9)
            ax.grid(axis="y", alpha=0.3)
            if series and k == shown[0][0]:
                ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(shown):]:
            ax.axis("off")
        fig.suptitle(title, fontsize=10)
        save(fig, path)

    return draw


def lines(groups: Mapping[str, Sequence[dict[str, Any]]], x: str, y: str, xlabel: str, ylabel: str, title: str, *,
          scale: float = 1.0, log: bool = False, floor: float = 1e-3, paper: str | None = None) -> Callable[[Path], None]:
    """One line per group (its label → its rows) of ``y`` against ``x`` with 95 % error bars
    (and the paper's ``paper`` column dashed): :func:`lines_on` in a figure of its own."""

    def draw(path: Path) -> None:
        plt = pyplot()
        fig, a = plt.subplots(figsize=(6.5, 4))
        lines_on(a, groups, x, y, xlabel, ylabel, title, scale=scale, log=log, floor=floor, paper=paper)
        save(fig, path)

    return draw


def lines_on(a: Any, groups: Mapping[str, Sequence[dict[str, Any]]], x: str, y: str, xlabel: str, ylabel: str,
             title: str, *, scale: float = 1.0, log: bool = False, floor: float = 1e-3, paper: str | None = None) -> None:
    """:func:`lines` into the axis ``a``. On a log axis a zero is drawn at ``floor`` and an error
    bar never reaches below it."""
    for k, (label, rs) in enumerate(groups.items()):
        if not rs:
            continue
        xs = [r[x] for r in rs]
        ys = [mean_of(r.get(y), scale) for r in rs]
        err = [error_of(r.get(y), scale) for r in rs]
        if log:
            ys = [max(v, floor) if math.isfinite(v) else v for v in ys]
            err = [min(e, v - floor * 0.999) if math.isfinite(v) else 0 for e, v in zip(err, ys)]
        a.errorbar(xs, ys, yerr=err, marker="o", ms=3, capsize=2, label=label, color=f"C{k}")
        if paper:
            a.plot(xs, [mean_of(r.get(paper)) for r in rs], ls="--", marker="x", color=f"C{k}",
                   label=f"{label} (paper)")
    if log:
        a.set_yscale("log")
    a.set_xlabel(xlabel)
    a.set_ylabel(ylabel)
    a.set_title(title, fontsize=9)
    a.grid(alpha=0.3, which="both")
    a.legend(fontsize=7)


def heatmap(ax: Any, values: Sequence[Sequence[float]], xs: Sequence[Any], ys: Sequence[Any], xlabel: str, ylabel: str,
            title: str, *, symmetric: bool = True) -> Any:
    """``values[i][j]`` (row ``ys[i]``, column ``xs[j]``) as colours on ``ax``, centred on 0 when
    ``symmetric``; returns the image (for a colour bar)."""
    import numpy as np

    d = np.asarray(values, dtype=float)
    lim = float(np.nanmax(np.abs(d))) if np.isfinite(d).any() else 0.0
    lim = lim or 1.0
    im = ax.imshow(d, cmap="RdBu_r" if symmetric else "viridis", vmin=-lim if symmetric else None,
                   vmax=lim if symmetric else None, aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return im
