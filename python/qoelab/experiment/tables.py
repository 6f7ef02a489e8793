"""Tables, the paper's values, the reading skeleton and the report, from one declaration.

A :class:`Table` is columns and rows; a cell is a string, a number, None or an
:class:`~qoelab.experiment.stats.Estimate`. The same table renders as Markdown
(:meth:`Table.markdown`), CSV (:meth:`Table.write_csv`: an estimate becomes ``mean``, ``lo``,
``hi`` columns) and a ``report.json`` table (:meth:`Table.json`: an estimate becomes
:func:`~qoelab.experiment.report.estimate_cell`), so the three never disagree.

The paper's values are typed once, as :class:`PaperValues` (a source such as "Table I" and a
value per row key), and join a table as a ``side = "paper"`` column (:meth:`PaperValues.column`).
:func:`findings_md` lists findings with their label, verdict and interval: the skeleton of a
reading, which quotes only computed numbers. :func:`report` assembles ``report.json``.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qoelab.experiment.findings import Finding
from qoelab.experiment.report import estimate_cell, write_report
from qoelab.experiment.stats import Estimate


@dataclass(frozen=True)
class Column:
    """``key`` in the rows, ``title`` in the header; ``scale`` multiplies numbers (100: percent),
    ``digits`` significant digits in Markdown; ``side`` ``"ours"``/``"paper"`` or None."""

    key: str
    title: str
    unit: str = ""
    side: str | None = None
    scale: float = 1.0
    digits: int = 3


def _num(x: float, digits: int) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}g}"


def cell_md(v: Any, c: Column) -> str:
    """A cell in Markdown: an estimate as ``mean ± half-width`` (``mean`` alone when n < 2)."""
    if v is None:
        return "–"
    if isinstance(v, Estimate):
        m = _num(v.mean * c.scale, c.digits)
        return m if v.n < 2 or math.isnan(v.half_width) else f"{m} ± {_num(v.half_width * c.scale, 2)}"
    if isinstance(v, float):
        return _num(v * c.scale, c.digits)
    return str(v)


@dataclass
class Table:
    id: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    source: str = ""
    note: str = ""
    csv: str | None = None

    def markdown(self) -> str:
        head = [f"{c.title} ({c.unit})" if c.unit else c.title for c in self.columns]
        lines = [f"**{self.title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cell_md(r.get(c.key), c) for c in self.columns) + " |" for r in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines) + "\n"

    def csv_text(self) -> str:
        """One header row; an estimate column ``k`` becomes ``k``, ``k_lo``, ``k_hi``, ``k_n``."""
        est = {c.key for c in self.columns if any(isinstance(r.get(c.key), Estimate) for r in self.rows)}
        header = []
        for c in self.columns:
            header += [c.key, f"{c.key}_lo", f"{c.key}_hi", f"{c.key}_n"] if c.key in est else [c.key]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for r in self.rows:
            line: list[Any] = []
            for c in self.columns:
                v = r.get(c.key)
                if c.key in est:
                    e = estimate_cell(v, c.scale) if isinstance(v, Estimate) else None
                    line += ["" if e is None else ("" if e[k] is None else repr(e[k])) for k in ("mean", "lo", "hi")]
                    line.append("" if e is None else e["n"])
                elif isinstance(v, float):
                    line.append("" if math.isnan(v) else repr(v * c.scale))
                else:
                    line.append("" if v is None else v)
            w.writerow(line)
        return buf.getvalue()

    def write_csv(self, folder: Path, name: str) -> Path:
        self.csv = name
        (folder / name).write_text(self.csv_text())
        return folder / name

    def json(self) -> dict[str, Any]:
        def cell(v: Any, c: Column) -> Any:
            if isinstance(v, Estimate):
                return estimate_cell(v, c.scale)
            if isinstance(v, float):
                return None if math.isnan(v) else v * c.scale
            return v

        cols = []
        for c in self.columns:
            col: dict[str, Any] = {"key": c.key, "title": c.title}
            if c.unit:
                col["unit"] = c.unit
            if c.side:
                col["side"] = c.side
            cols.append(col)
        d: dict[str, Any] = {"id": self.id, "title": self.title, "columns": cols,
                             "rows": [{c.key: cell(r.get(c.key), c) for c in self.columns} for r in self.rows]}
        if self.source:
            d["source"] = self.source
        if self.csv:
            d["csv"] = self.csv
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class PaperValues:
    """The paper's values of one quantity, typed once: ``source`` (e.g. "Table I"), and a value
    per row key (a tuple of the table's index values)."""

    source: str
    keys: tuple[str, ...]
    values: dict[tuple, float] = field(default_factory=dict)

    def column(self, key: str, title: str, unit: str = "", digits: int = 3) -> Column:
        return Column(key, title, unit, "paper", 1.0, digits)

    def join(self, rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        """``rows`` with the paper's value (None where the paper gives none) under ``key``."""
        return [{**r, key: self.values.get(tuple(r[k] for k in self.keys))} for r in rows]


def interval_str(e: Estimate | None, scale: float = 1.0, digits: int = 3) -> str:
    if e is None or math.isnan(e.mean):
        return "n/a"
    m = _num(e.mean * scale, digits)
    if e.n < 2 or math.isnan(e.half_width):
        return f"{m} (n = {e.n})"
    return f"{m} [{_num(e.low * scale, digits)}, {_num(e.high * scale, digits)}] (n = {e.n})"


def findings_md(findings: list[Finding], scale: float = 1.0) -> str:
    """The reading's skeleton: one line per finding with its label, verdict, statistic and 95 %
    interval, all from the computed :class:`Finding`."""
    lines = []
    for f in findings:
        stat = f"; {f.statistic} = {interval_str(f.estimate, scale)}" if f.statistic or f.estimate else ""
        lines.append(f"- **{f.verdict.value}** ({f.label.value}) {f.claim}{stat}")
    return "\n".join(lines) + ("\n" if lines else "")


def finding_json(f: Finding, *, group: str | None = None, source: str | None = None, unit: str | None = None,
                 scale: float = 1.0) -> dict[str, Any]:
    d: dict[str, Any] = {"key": f.key, "claim": f.claim, "label": f.label.value, "verdict": f.verdict.value,
                         "statistic": f.statistic, "estimate": estimate_cell(f.estimate, scale)}
    for k, v in (("group", group), ("source", source), ("unit", unit)):
        if v is not None:
            d[k] = v
    return d


def report(folder: Path, *, paper: str, mode: str, title: str, tables: list[Table], findings: list[dict[str, Any]],
           reading: str, figures: list[dict[str, str]] = (), summary: str | None = None, setup: str | None = None,
           cost: dict[str, Any] | None = None, provenance: dict[str, Any] | None = None) -> Path:
    """Writes ``folder/report.json`` (:func:`~qoelab.experiment.report.write_report`) from the
    tables, figures (``{id, title, path[, source]}``) and findings (:func:`finding_json`)."""
    doc: dict[str, Any] = {"paper": paper, "mode": mode, "title": title, "tables": [t.json() for t in tables],
                           "figures": list(figures), "findings": findings, "reading": reading}
    for k, v in (("summary", summary), ("setup", setup), ("cost", cost), ("provenance", provenance)):
        if v is not None:
            doc[k] = v
    return write_report(folder, doc)
