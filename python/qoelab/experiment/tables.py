"""Tables, the paper's values, the reading skeleton and the report, from one declaration.

A :class:`Table` is columns and rows; a cell is a string, a number, None or an
:class:`~qoelab.experiment.stats.Estimate`. The same table renders as Markdown
(:meth:`Table.markdown`), CSV (:meth:`Table.write_csv`: an estimate becomes ``mean``, ``lo``,
``hi``, ``n`` columns, or ``mean`` and the half-width ``_ci`` with one ``reps`` column, as
``ci = "half_width"`` asks) and a ``report.json`` table (:meth:`Table.json`: an estimate becomes
:func:`~qoelab.experiment.report.estimate_cell`), so the three never disagree.

The paper's values are typed once, as :class:`PaperValues` (a source such as "Table I" and a
value per row key), and join a table as a ``side = "paper"`` column (:meth:`PaperValues.column`).
A wide view for reading (a value per row and one column per value of a parameter, e.g. "n = 1",
"n = 5") is :func:`pivot`, itself a :class:`Table`. A :class:`Figure` is a drawing function with
its file name and source; :meth:`Figure.write` draws it and gives its ``report.json`` entry.
:func:`findings_md` lists findings with their label, verdict and interval: the skeleton of a
reading, which quotes only computed numbers. :func:`report` assembles ``report.json``.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from qoelab.experiment.choices import Choice, choices_md
from qoelab.experiment.findings import MIN_EVIDENCE_REPS, Finding
from qoelab.experiment.report import estimate_cell, write_report
from qoelab.experiment.stats import Estimate, portable


#: The note under a table whose intervals rest on fewer than ``MIN_EVIDENCE_REPS`` repetitions.
QUICK_NOTE = (f"*Quick: not evidence.* Estimates here rest on fewer than {MIN_EVIDENCE_REPS} repetitions (n in the "
              "CSV); their intervals are indications, not evidence.")


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


def _csv_num(x: float) -> str:
    return "nan" if math.isnan(x) else repr(portable(x))


def _num(x: float, digits: int) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}g}"


def cell_md(v: Any, c: Column) -> str:
    """A cell in Markdown: an estimate as ``mean ± half-width`` (``mean`` alone when n < 2)."""
    if v is None:
        return "–"
    if isinstance(v, Estimate):
        m = _num(v.mean * c.scale, c.digits)
        if not v.independent:
            return f"{m} (not independent)"
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
    #: How an estimate column goes to CSV: ``"interval"`` (``k``, ``k_lo``, ``k_hi``, ``k_n``) or
    #: ``"half_width"`` (``k``, ``k_ci`` the 95 % half-width, and one ``reps`` column last: the
    #: row's largest ``n``).
    ci: str = "interval"

    @classmethod
    def of_rows(cls, id: str, title: str, rows: list[dict[str, Any]], **kw: Any) -> "Table":
        """A table with a column per key of ``rows`` (in first-seen order), titled by the key."""
        keys: dict[str, None] = {}
        for r in rows:
            keys.update(dict.fromkeys(r))
        return cls(id, title, [Column(k, k) for k in keys], rows, **kw)

    def markdown(self, title: bool = True) -> str:
        """The table in Markdown, under its bold title (``title=False``: without it, for a
        report that already heads the table with its own words)."""
        head = [f"{c.title} ({c.unit})" if c.unit else c.title for c in self.columns]
        lines = [f"**{self.title}**", ""] if title else []
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cell_md(r.get(c.key), c) for c in self.columns) + " |" for r in self.rows]
        if self.note:
            lines += ["", self.note]
        if self.quick_intervals():
            lines += ["", QUICK_NOTE]
        return "\n".join(lines) + "\n"

    def quick_intervals(self) -> bool:
        """Whether an estimate the table shows rests on fewer than ``MIN_EVIDENCE_REPS``
        repetitions (a row's other keys, e.g. a metric defined only in runs where its event
        happened, are not the table's: they do not flag it)."""
        return any(isinstance(v, Estimate) and v.n < MIN_EVIDENCE_REPS
                   for r in self.rows for v in (r.get(c.key) for c in self.columns))

    def csv_text(self) -> str:
        """One header row; an estimate column ``k`` becomes ``k``, ``k_lo``, ``k_hi``, ``k_n``
        (or ``k``, ``k_ci`` and a last ``reps`` column, see :attr:`ci`)."""
        if self.ci not in ("interval", "half_width"):
            raise ValueError(f"table {self.id}: ci must be 'interval' or 'half_width', got {self.ci!r}")
        est = {c.key for c in self.columns if any(isinstance(r.get(c.key), Estimate) for r in self.rows)}
        hw = self.ci == "half_width"
        header = []
        for c in self.columns:
            if c.key not in est:
                header.append(c.key)
            else:
                header += [c.key, f"{c.key}_ci"] if hw else [c.key, f"{c.key}_lo", f"{c.key}_hi", f"{c.key}_n"]
        if hw and est:
            header.append("reps")
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for r in self.rows:
            line: list[Any] = []
            for c in self.columns:
                v = r.get(c.key)
                if c.key in est and hw:
                    line += ([_csv_num(v.mean * c.scale), _csv_num(v.half_width * c.scale)]
                             if isinstance(v, Estimate) else ["", ""])
                elif c.key in est:
                    e = estimate_cell(v, c.scale) if isinstance(v, Estimate) else None
                    line += ["" if e is None else ("" if e[k] is None else repr(e[k])) for k in ("mean", "lo", "hi")]  # portable already
                    line.append("" if e is None else e["n"])
                elif isinstance(v, float):  # float() first: a NumPy scalar's repr names its type
                    line.append("" if math.isnan(v) else repr(portable(v * c.scale)))
                else:
                    line.append("" if v is None else v)
            if hw and est:
                line.append(max((r[k].n for k in est if isinstance(r.get(k), Estimate)), default=0))
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
                return None if math.isnan(v) else portable(v * c.scale)
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


def pivot(id: str, title: str, rows: list[dict[str, Any]], index: tuple[Column, ...], across: str,
          values: list[Any], cell: Callable[[dict[str, Any]], str], *, label: Callable[[Any], str] = str,
          missing: str | None = None, keys: Sequence[tuple] | None = None, **kw: Any) -> Table:
    """A wide view of ``rows`` for reading: one row per distinct ``index`` tuple (first-seen
    order; or per tuple of ``keys``, in that order, e.g. every value of a grid's axis, with or
    without rows), one column per value of ``across`` in ``values`` (titled ``label(value)``),
    each cell ``cell(row)`` of the row with those index values and that value (``missing`` where
    there is none; None renders "–"). The cells are text: the numbers stay in the long table it
    is made from."""
    index_keys = tuple(c.key for c in index)
    by: dict[tuple, dict[Any, dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(tuple(r[k] for k in index_keys), {})[r[across]] = r
    cols = list(index) + [Column(f"{across}={v}", label(v)) for v in values]
    out = []
    for k in by if keys is None else [tuple(x) for x in keys]:
        got = by.get(k, {})
        row: dict[str, Any] = dict(zip(index_keys, k))
        row.update({f"{across}={v}": cell(got[v]) if v in got else missing for v in values})
        out.append(row)
    return Table(id, title, cols, out, **kw)


@dataclass(frozen=True)
class Figure:
    """A figure of a report: ``draw(path)`` writes the file ``path`` (relative to the report
    folder) shows; ``source`` names the paper's figure it stands beside."""

    id: str
    title: str
    path: str
    draw: Callable[[Path], Any]
    source: str = ""

    def write(self, folder: Path) -> dict[str, str]:
        """Draws the figure into ``folder`` and returns its ``report.json`` entry. A drawing
        function that writes no file is a bug of the reproduction: :class:`ValueError`."""
        target = Path(folder) / self.path
        self.draw(target)
        if not target.is_file() or target.stat().st_size == 0:
            raise ValueError(f"figure {self.id}: its drawing wrote no {target}")
        d = {"id": self.id, "title": self.title, "path": self.path}
        if self.source:
            d["source"] = self.source
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


def interval_str(e: Estimate | None, scale: float = 1.0, digits: int = 3, unit: str = "") -> str:
    """An estimate as ``mean [lo, hi]unit (n = …)`` (``mean unit (n = 1)`` without an interval)."""
    if e is None or math.isnan(e.mean):
        return "n/a"
    m = _num(e.mean * scale, digits)
    if not e.independent:
        return f"{m}{unit} (n = {e.n}, not independent: no interval)"
    if e.n < 2 or math.isnan(e.half_width):
        return f"{m}{unit} (n = {e.n})"
    return f"{m} [{_num(e.low * scale, digits)}, {_num(e.high * scale, digits)}]{unit} (n = {e.n})"


def _pm_decimals(half_width: float) -> int:
    """Decimals that show a half-width to two significant figures (at least 4)."""
    if not half_width > 0 or not math.isfinite(half_width):
        return 4
    return max(4, 1 - math.floor(math.log10(half_width)))


def pm_str(e: Estimate | None) -> str:
    """A signed difference as ``+mean ± half-width (n = …)`` in fixed decimals chosen from the
    half-width (two significant figures, at least 4 decimals), so the printed interval agrees with
    a verdict drawn from it: -0.000068 ± 0.000067 excludes 0, its 4-decimal rounding
    -0.0001 ± 0.0001 seems not to. One repetition: ``+mean (1 sample)``; no estimate: "–"."""
    if e is None:
        return "–"
    if not e.independent:
        return f"{e.mean:+.{_pm_decimals(abs(e.mean) / 10 if e.mean else 0)}f} (n = {e.n}, not independent)"
    if e.n < 2 or math.isnan(e.half_width):
        return f"{e.mean:+.{_pm_decimals(abs(e.mean) / 10 if e.mean else 0)}f} (1 sample)"
    d = _pm_decimals(e.half_width)
    return f"{e.mean:+.{d}f} ± {e.half_width:.{d}f} (n = {e.n})"


def duration_str(seconds: float) -> str:
    """A compute time in the unit that suits it: seconds below 2 min, minutes below 2 h, else
    hours (a quick grid's seconds of CPU and a full grid's tens of hours both read); NaN or
    infinite: "unrecorded"."""
    if not math.isfinite(seconds):
        return "unrecorded"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def finding_line(f: Finding, *, why: bool = False) -> str:
    """One finding as a Markdown list item: verdict, label, claim, the statistic's interval, the
    rule, the verdict's note, the quick flag and the sensitivity (numbers × the finding's
    ``scale``, with its ``unit``); ``why`` appends its ``why`` (typed prose, no numbers)."""
    parts = [f"- **{f.verdict.value}** ({f.label.value}) {f.claim}"]
    if f.statistic or f.estimate:
        parts[0] += f"; {f.statistic} = {interval_str(f.estimate, f.scale, unit=f.unit)}"
    parts[0] += f"; claim {'for each part ' if f.parts else ''}{f.rule.text(f.scale, f.unit)}: {f.note.rstrip('.')}."
    if f.quick:
        parts.append("**quick: not evidence**.")
    if f.under:
        parts.append(f"Sensitivity: {f.sensitivity_text()}.")
    if why and f.why:
        parts.append(f.why)
    return " ".join(parts)


def findings_md(findings: list[Finding], *, why: bool = False) -> str:
    """The reading's skeleton: one line per finding (:func:`finding_line`), all from the computed
    :class:`Finding`."""
    return "".join(finding_line(f, why=why) + "\n" for f in findings)


def finding_json(f: Finding, *, group: str | None = None, source: str | None = None, unit: str | None = None,
                 scale: float | None = None) -> dict[str, Any]:
    """A finding as ``report.json`` holds it (``docs/report-format.md``): its estimate, rule and
    note in the unit the finding shows (its ``scale``/``unit``, or those given)."""
    sc = f.scale if scale is None else scale
    un = (f.unit.strip() or None) if unit is None else unit
    d: dict[str, Any] = {"key": f.key, "claim": f.claim, "label": f.label.value, "verdict": f.verdict.value,
                         "statistic": f.statistic, "estimate": estimate_cell(f.estimate, sc),
                         "rule": f.rule.text(sc, f.unit), "note": f.note, "n": f.n, "quick": f.quick,
                         "premises": [{"name": p.name, "holds": p.holds, "detail": p.detail} for p in f.premises],
                         "sensitivity": {"text": f.sensitivity_text(), "robust": f.robust,
                                         "under": {k: v.value for k, v in f.under}}}
    if f.on_cells:
        d["sensitivity"]["on_cells"] = list(f.on_cells)
    for k, v in (("group", group if group is not None else (f.group or None)), ("source", source), ("unit", un)):
        if v is not None:
            d[k] = v
    return d


def report(folder: Path, *, paper: str, mode: str, title: str, tables: list[Table], findings: list[dict[str, Any]],
           reading: str, figures: Sequence[dict[str, str] | Figure] = (), summary: str | None = None,
           setup: str | None = None, cost: dict[str, Any] | None = None,
           provenance: dict[str, Any] | None = None, choices: Sequence[Choice] | None = None) -> Path:
    """Writes ``folder/report.json`` (:func:`~qoelab.experiment.report.write_report`) from the
    tables (any number, in order), figures (a :class:`Figure`, drawn here, or an entry
    ``{id, title, path[, source]}`` of a file already drawn), findings (:func:`finding_json`) and
    the paper's declared choices. A committed results folder (``scenarios/*/expected/``) is
    refused unless its ``provenance`` is one clean commit
    (:func:`qoelab.experiment.provenance.check_committable`)."""
    from qoelab.experiment.provenance import check_committable, committed_folder

    if committed_folder(folder):
        check_committable(provenance or {}, folder)
    figs = [f.write(folder) if isinstance(f, Figure) else f for f in figures]
    doc: dict[str, Any] = {"paper": paper, "mode": mode, "title": title, "tables": [t.json() for t in tables],
                           "figures": figs, "findings": findings, "reading": reading}
    if choices is not None:
        doc["choices"] = [c.json() for c in choices]
    for k, v in (("summary", summary), ("setup", setup), ("cost", cost), ("provenance", provenance)):
        if v is not None:
            doc[k] = v
    return write_report(folder, doc)


def mean_str(v: Any, digits: int = 3) -> str:
    """A table cell's value for a reading's prose: an estimate's mean or a number to ``digits``
    significant digits, a word cell (e.g. "not run") as it is, anything else "n/a"."""
    if isinstance(v, Estimate):
        return "n/a" if math.isnan(v.mean) else f"{v.mean:.{digits}g}"
    if isinstance(v, (int, float)):
        return f"{v:.{digits}g}"
    return v if isinstance(v, str) else "n/a"


def series_str(rows: Sequence[dict[str, Any]], key: str, digits: int = 3, scale: float = 1.0) -> str:
    """The values of ``key`` in ``rows`` for prose, as ``a, b, c`` (means of estimates; "n/a"
    where missing)."""
    vals = []
    for r in rows:
        v = r.get(key)
        x = v.mean if isinstance(v, Estimate) else v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        vals.append("n/a" if x is None or math.isnan(x) else f"{x * scale:.{digits}g}")
    return ", ".join(vals)


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (:func:`qoelab.experiment.figures.pyplot`)."""
    from qoelab.experiment.figures import pyplot as plt

    return plt()


def write_repetitions(folder: Path, rows: list[dict[str, Any]], first: Sequence[str], name: str = "repetitions.csv") -> Path:
    """``folder/name``: one row per run, the columns ``first`` (e.g. the treatments), then
    ``rep``, ``seed``, ``output`` and every other key in first-seen order; floats by ``repr``
    of their :func:`~qoelab.experiment.stats.portable` value (they read back exactly), NaN as ``nan``."""
    cols = list(dict.fromkeys([*first, "rep", "seed", "output", *(k for r in rows for k in r)]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([repr(portable(v)) if isinstance(v, float) else ("" if v is None else v) for v in (r.get(c) for c in cols)])
    path = Path(folder) / name
    path.write_text(buf.getvalue())
    return path


def report_md(folder: Path, *, heading: str, summary: str, setup: str, tables: Sequence[Table],
              figures: Sequence[dict[str, str] | Figure], reading: str, choices: Sequence[Choice] = (),
              provenance: dict[str, Any] | None = None) -> Path:
    """Writes ``folder/report.md``: the heading, summary and setup, the declared choices, each
    table with its CSV file, the figures, the reading and the provenance."""
    figs = [(f.title, f.path) if isinstance(f, Figure) else (f["title"], f["path"]) for f in figures]
    md = [f"# {heading}", "", summary, "", "## Setup", "", setup, ""]
    if choices:
        md += ["## Open choices", "", "What the paper leaves open and we chose (`--sensitivity` runs every finding "
               "under each alternative):", "", choices_md(tuple(choices))]
    for t in tables:
        md += [t.markdown(), f"CSV: `{t.csv}`", ""]
    md += ["## Figures", ""] + [f"![{title}]({path})" for title, path in figs] + ["", "## Reading", "", reading]
    if provenance is not None:
        md += [provenance_md(provenance)]
    path = Path(folder) / "report.md"
    path.write_text("\n".join(md))
    return path


def provenance_md(p: dict[str, Any]) -> str:
    """A report's provenance section (one line each: the code, and the command)."""
    from qoelab.experiment.provenance import describe

    return "\n".join(["", "## Provenance", "", describe(p)] + ([f"Command: `{p['command']}`."] if p.get("command") else []))


def publish(folder: Path, *, paper: str, quick: bool, title: str, tables: Sequence[Table], findings: Sequence[Any],
            source: str, figures: Sequence[dict[str, str] | Figure], reading: str, summary: str, setup: str,
            cost: dict[str, Any], seeds: list[int], group: str | None = None, command: str | None = None,
            choices: Sequence[Choice] = (), versions: Sequence[str] = ()) -> None:
    """Writes a reproduction's ``report.json`` (:func:`report`; figures drawn there) and
    ``report.md`` (:func:`report_md`) from the same parts: ``findings`` are
    :class:`~qoelab.experiment.findings.Finding` s, each cited to ``source``; the command in the
    provenance is ``qoelab reproduce <paper> [--quick]`` unless ``command`` gives it; ``group``
    names the findings' group (e.g. the calibration they were measured in); ``versions`` are the
    code versions the runs ran with (:func:`qoelab.experiment.runner.versions`), named in the
    provenance with the code that writes the report (:mod:`qoelab.experiment.provenance`)."""
    from qoelab.experiment import provenance as prov

    mode = "quick" if quick else "full"
    p = prov.of(versions, command=command or f"qoelab reproduce {paper}{' --quick' if quick else ''}", seeds=seeds)
    figs = [f.write(folder) if isinstance(f, Figure) else f for f in figures]
    report(folder, paper=paper, mode=mode, title=title, tables=list(tables),
           findings=[finding_json(f, group=group, source=source) for f in findings], reading=reading, figures=figs,
           summary=summary, setup=setup, cost=cost, choices=choices, provenance=p)
    report_md(folder, heading=f"{title}: {mode} reproduction", summary=summary, setup=setup, tables=tables,
              figures=figs, reading=reading, choices=choices, provenance=p)

