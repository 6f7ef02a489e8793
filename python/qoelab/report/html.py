"""One static ``index.html`` for all five papers, from their ``report.json`` (``docs/html-report.md``).

:func:`render` turns the loaded reports (``docs/report-format.md``) into one self-contained page:
the status table of every paper of :data:`qoelab.reproduce.papers.PAPERS`, then a section per
paper with its question, our tables beside the paper's, figures, findings, the reading, compute
cost and provenance. The page needs no server and no network: CSS is inline, figures are embedded
as ``data:`` PNG, there is no script. Every string from a report is escaped (Markdown fields are
rendered by markdown-it-py with raw HTML off), so a report cannot inject markup. The same reports
give a byte-identical page: nothing here reads a clock.
"""

from __future__ import annotations

import base64
import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qoelab.reproduce.papers import PAPERS, Paper

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem;color:#1d2125}
h1{font-size:1.6rem}h2{border-top:2px solid #d0d4d8;padding-top:1rem;margin-top:2.5rem}
h3{font-size:1.2rem;margin-top:1.8rem}h4{font-size:1rem;margin:1.2rem 0 .3rem}h5,h6{font-size:.95rem}
.scroll{max-width:100%;overflow-x:auto;margin:.6rem 0}.scroll>table{margin:0}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #c8ccd0;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef0f2}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th.paper,td.paper{background:#fff6dd;font-style:italic}
th.paper::after{content:" (paper)";font-weight:normal}
.v-holds{background:#dff3e3}.v-does-not-hold{background:#fbe0e0}.v-inconclusive{background:#fff2cc}
.v-untestable{background:#eceff1}
.s-reproduced{color:#17692c;font-weight:600}.s-partly{color:#8a6100;font-weight:600}
.s-failed{color:#a31515;font-weight:600}.s-not-yet{color:#5b6670}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #d0d4d8}
figcaption{font-size:.85rem;color:#4a545c}
.meta{font-size:.85rem;color:#4a545c}
.error{background:#fbe0e0;padding:.5rem;border-left:4px solid #a31515;white-space:pre-wrap}
td.quick{background-image:repeating-linear-gradient(135deg,transparent 0 6px,#f3e3b6 6px 8px)}
.qflag{font-size:.7rem;font-weight:600;color:#8a6100;border:1px solid #c9a227;border-radius:3px;padding:0 .2rem;
margin-left:.3rem;white-space:nowrap}
.legend{font-size:.85rem;color:#4a545c;border-left:3px solid #c9a227;padding-left:.5rem}
"""


@dataclass(frozen=True)
class Entry:
    """What the page shows for one paper: its loaded report and folder, or the one-line error of
    a run that failed (or of a report that would not load), or neither (not yet reproduced)."""

    paper: Paper
    report: dict[str, Any] | None = None
    folder: Path | None = None
    error: str | None = None


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _md(text: str | None, top: int = 4) -> str:
    """Markdown from a report as HTML; raw HTML in it is escaped, not passed through. Its
    headings are renumbered from ``h<top>`` down (by rank, at most ``h6``, never more than one
    level below the heading before), so a report's own "# …" cannot break the page's hierarchy
    (paper, section, table). Its tables scroll in their own box."""
    if not text:
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    # Links keep only safe schemes (markdown-it's validateLink refuses javascript:, vbscript:,
    # file: and data: other than images), so a link cannot run code either.
    tokens = md.parse(text)
    rank = {lv: i for i, lv in enumerate(sorted({int(t.tag[1]) for t in tokens if t.type == "heading_open"}))}
    prev, level = top - 1, top
    for t in tokens:
        if t.type == "heading_open":
            # its rank among the text's heading levels, never more than one below the heading before
            level = min(6, top + rank[int(t.tag[1])], prev + 1)
            prev = level
            t.tag = f"h{level}"
        elif t.type == "heading_close":
            t.tag = f"h{level}"
        elif t.type == "table_open":
            t.attrSet("class", "md")
    out = md.renderer.render(tokens, md.options, {})
    return out.replace('<table class="md">', '<div class="scroll"><table class="md">').replace("</table>", "</table></div>")


#: The longest number the page prints as it is; a longer one (or one beyond 1e6 or below
#: 1e-3) is printed with three significant digits and an exponent (3.05e+29).
MAX_DIGITS = 12


def _num(x: float | int) -> str:
    """A number for the page: integers as they are (up to :data:`MAX_DIGITS` characters), others
    to three significant digits, one decimal from 100 on, none from 1000 on; beyond 1e6 (or
    below 1e-3) with an exponent, so no printed number is longer than :data:`MAX_DIGITS`."""
    a = abs(x)
    if isinstance(x, int) and len(str(x)) <= MAX_DIGITS:
        return str(x)
    if a == 0:
        return "0"
    if a >= 1e6 or a < 1e-3:
        return f"{x:.3g}"
    if a >= 1000:
        return f"{x:.0f}"
    if a >= 1:
        return f"{x:.3g}" if a < 100 else f"{x:.1f}"
    return f"{x:.3g}"


#: Fewer repetitions than this make an estimate "quick: not evidence" (the layer's
#: ``qoelab.experiment.findings.MIN_EVIDENCE_REPS``).
QUICK_BELOW = 10


def quick_cell(v: Any) -> bool:
    """Whether a cell is an estimate over fewer than :data:`QUICK_BELOW` repetitions."""
    return isinstance(v, dict) and isinstance(v.get("n"), int) and v["n"] < QUICK_BELOW


def fmt_cell(v: Any) -> str:
    """A table cell as text: an estimate is ``mean ± half-width (n=…)`` (``not independent``
    when its repetitions' outputs were identical); ``null`` is an en dash."""
    if v is None:
        return "–"
    if isinstance(v, dict):
        mean, lo, hi, n = v.get("mean"), v.get("lo"), v.get("hi"), v.get("n")
        if mean is None:
            return f"– (n={n})"
        if v.get("independent") is False:
            return f"{_num(mean)} (n={n}, not independent)"
        if lo is None or hi is None:
            return f"{_num(mean)} (n={n})"
        return f"{_num(mean)} ± {_num((hi - lo) / 2)} (n={n})"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _num(v)
    return str(v)


def _slug(x: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in x.lower())


def status(entry: Entry) -> tuple[str, str]:
    """(css class, text) of a paper's status: reproduced (every tested substantive finding
    holds), partly, failed, or not yet reproduced (with its issue)."""
    if entry.error is not None:
        return "s-failed", "failed"
    if entry.report is None:
        issue = f" (issue {entry.paper.issue})" if entry.paper.issue else ""
        return "s-not-yet", f"not yet reproduced{issue}"
    subs = [f for f in entry.report["findings"] if f["label"] == "substantive" and f["verdict"] != "untestable"]
    if subs and all(holds_everywhere(f) for f in subs):
        return "s-reproduced", "reproduced"
    return "s-partly", "partly"


def holds_everywhere(f: dict[str, Any]) -> bool:
    """A finding holds, and under every alternative its sensitivity ran (the layer's count)."""
    under = ((f.get("sensitivity") or {}).get("under") or {}).values()
    return f["verdict"] == "holds" and all(v == "holds" for v in under)


def finding_counts(report: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(label, held under every alternative run, tested) per label present, in the format's
    label order; tested is every verdict but untestable."""
    from qoelab.experiment.report import LABELS

    out = []
    for lab in LABELS:
        fs = [f for f in report["findings"] if f["label"] == lab]
        if fs:
            out.append((lab, sum(holds_everywhere(f) for f in fs), sum(f["verdict"] != "untestable" for f in fs)))
    return out


def _duration(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _cost(report: dict[str, Any]) -> str:
    """A report's cost line: its runs and every stage it timed (decoding, picture measurements,
    the report itself), wall and CPU, and the stages by name."""
    c = report.get("cost") or {}
    parts = []
    if isinstance(c.get("runs"), int):
        parts.append(f"{c['runs']} runs")
    wall = c.get("wall_s", c.get("sim_wall_s"))
    if isinstance(wall, (int, float)):
        parts.append(f"{_duration(wall)} wall")
    if isinstance(c.get("cpu_s"), (int, float)):
        parts.append(f"{_duration(c['cpu_s'])} CPU")
    st = c.get("stages")
    if isinstance(st, dict) and st:
        parts.append("of which " + ", ".join(f"{_e(k)} {_duration(v.get('wall_s'))}" for k, v in st.items()
                                              if isinstance(v, dict)))
    return ", ".join(parts) or "–"


def _status_table(entries: list[Entry]) -> str:
    rows = []
    for en in entries:
        cls, text = status(en)
        if en.report is not None:
            counts = "; ".join(f"{lab}: {h}/{d} hold" for lab, h, d in finding_counts(en.report)) or "–"
            mode, cost = _e(en.report["mode"]), _e(_cost(en.report))
        else:
            counts, mode, cost = "–", "–", "–"
            if en.error is not None:
                text = f"failed: {en.error}"
        rows.append(f'<tr id="status-{_e(en.paper.key)}"><td><a href="#paper-{_e(en.paper.key)}">{_e(en.paper.title)}</a></td>'
                    f"<td>{_e(en.paper.question)}</td><td class=\"{cls}\">{_e(text)}</td><td>{_e(counts)}</td>"
                    f"<td>{mode}</td><td>{cost}</td></tr>")
    return ('<div class="scroll"><table id="status"><thead><tr><th>paper</th><th>question</th><th>status</th>'
            "<th>findings held / tested</th><th>mode</th><th>compute</th></tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table></div>")


def _table(t: dict[str, Any]) -> str:
    """A report table (``h4`` heading), in a box that scrolls when the table is wider than the
    page's column; an estimate over fewer than 10 repetitions is hatched and flagged "quick"."""
    cols = t["columns"]
    head = []
    for c in cols:
        side = c.get("side")
        unit = f" ({c['unit']})" if c.get("unit") else ""
        head.append(f'<th class="{_e(side or "index")}">{_e(c["title"] + unit)}</th>')
    body = []
    for row in t["rows"]:
        cells = []
        for c in cols:
            v = row.get(c["key"])
            num = isinstance(v, (int, float, dict)) and not isinstance(v, bool)
            q = quick_cell(v)
            cls = " ".join(x for x in (c.get("side") or "", "num" if num else "", "quick" if q else "") if x)
            flag = _QFLAG if q else ""
            cells.append(f'<td class="{cls}">{_e(fmt_cell(v))}{flag}</td>' if cls else f"<td>{_e(fmt_cell(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    src = f' <span class="meta">({_e(t["source"])})</span>' if t.get("source") else ""
    csv = f' <span class="meta">CSV: <code>{_e(t["csv"])}</code></span>' if t.get("csv") else ""
    note = _md(t.get("note"), 5)
    return (f'<h4 id="{_e(t["id"])}">{_e(t["title"])}{src}{csv}</h4>\n<div class="scroll"><table class="data"><thead><tr>'
            + "".join(head) + "</tr></thead><tbody>\n" + "\n".join(body) + "\n</tbody></table></div>\n" + note)


_QFLAG = '<span class="qflag" title="quick: not evidence (fewer than 10 repetitions)">quick</span>'


_MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def _figure(f: dict[str, Any], folder: Path) -> str:
    p = folder / f["path"]
    mime = _MIME.get(p.suffix.lower())
    src = f' <span class="meta">({_e(f["source"])})</span>' if f.get("source") else ""
    if mime is None:
        return f'<p class="error">figure {_e(f["path"])}: not a PNG, SVG or JPEG, not shown</p>'
    data = base64.b64encode(p.read_bytes()).decode("ascii")
    return (f'<figure id="{_e(f["id"])}"><img alt="{_e(f["title"])}" src="data:{mime};base64,{data}">'
            f"<figcaption>{_e(f['title'])}{src}</figcaption></figure>")


def _findings(fs: list[dict[str, Any]]) -> str:
    """The findings table: claim, label, statistic, estimate (flagged when quick), the verdict
    with its note, and the sensitivity (robust, depends on a choice, or not run)."""
    if not fs:
        return "<p>No findings.</p>"
    rows = []
    for f in fs:
        est = f.get("estimate")
        interval = "–"
        if isinstance(est, dict):
            unit = f" {f['unit']}" if f.get("unit") else ""
            lohi = "" if est.get("lo") is None else f", 95 % CI [{_num(est['lo'])}, {_num(est['hi'])}]"
            interval = f"{fmt_cell(est)}{lohi}{unit}"
        v = f["verdict"]
        quick = _QFLAG.replace(">quick<", ">quick: not evidence<") if f.get("quick") else ""
        sens = (f.get("sensitivity") or {}).get("text", "not run")
        rows.append(f'<tr class="v-{_slug(v)}"><td>{_e(f["claim"])}'
                    + (f' <span class="meta">({_e(f["source"])})</span>' if f.get("source") else "")
                    + f"</td><td>{_e(f['label'])}</td><td>{_e(f.get('statistic') or '–')}</td>"
                      f"<td class=\"num{' quick' if quick else ''}\">{_e(interval)}{quick}</td>"
                      f"<td><strong>{_e(v)}</strong><br><span class=\"meta\">{_e(f.get('rule') or '')}: "
                      f"{_e(f.get('note') or '')}</span></td><td>{_e(sens)}</td></tr>")
    return ('<div class="scroll"><table class="findings"><thead><tr><th>claim</th><th>label</th><th>statistic</th>'
            "<th>estimate</th><th>verdict</th><th>sensitivity</th></tr></thead><tbody>\n" + "\n".join(rows)
            + "\n</tbody></table></div>")


def _choices(cs: list[dict[str, Any]]) -> str:
    """The choices the paper leaves open, as the reproduction declares them."""
    if not cs:
        return ""
    rows = []
    for c in cs:
        alts = [str(a) for a in c.get("alternatives", [])]
        alts += [f"{k} (not available yet: {why})" for k, why in (c.get("unavailable") or {}).items()]
        rows.append(f"<tr><td><code>{_e(c['name'])}</code></td><td>{_e(c.get('default'))}</td>"
                    f"<td>{_e('; '.join(alts) or '–')}</td><td>{_e(c['why'])}</td></tr>")
    return ('<h3>Open choices</h3><div class="scroll"><table class="choices"><thead><tr><th>choice</th>'
            "<th>our default</th><th>alternatives</th><th>why the default</th></tr></thead><tbody>\n"
            + "\n".join(rows) + "\n</tbody></table></div>")


def _provenance(report: dict[str, Any]) -> str:
    p = report.get("provenance") or {}
    if not p:
        return ""
    items = "".join(f"<dt>{_e(k)}</dt><dd><code>{_e(v)}</code></dd>" for k, v in sorted(p.items()))
    return f"<h3>Provenance</h3><dl class=\"meta\">{items}</dl>"


def _section(en: Entry) -> str:
    p = en.paper
    cls, text = status(en)
    authors = ", ".join(x for x in (p.authors, p.venue) if x)
    out = [f'<section id="paper-{_e(p.key)}"><h2>{_e(p.title)}</h2>',
           f'<p class="meta">{_e(authors)} · <code>qoelab reproduce {_e(p.key)}</code> · '
           f'status: <span class="{cls}">{_e(text)}</span></p>',
           f"<p><strong>Question.</strong> {_e(p.question)}</p>"]
    if en.error is not None:
        out.append(f'<p class="error">The run failed: {_e(en.error)}</p>')
    elif en.report is None:
        issue = f" Its reproduction is tracked in issue {p.issue}." if p.issue else ""
        out.append(f"<p>Not yet reproduced.{_e(issue)}</p>")
    else:
        r, folder = en.report, en.folder or Path(".")
        out.append(f"<p><strong>{_e(r['title'])}</strong> <span class=\"meta\">(mode {_e(r['mode'])})</span></p>")
        out.append(_md(r.get("summary")))
        if any(f.get("quick") for f in r["findings"]) or any(quick_cell(v) for t in r["tables"] for row in t["rows"]
                                                               for v in row.values()):
            out.append(f'<p class="legend">{_QFLAG} hatched cells and findings rest on fewer than {QUICK_BELOW} '
                       "repetitions: <em>quick, not evidence</em>.</p>")
        if r.get("setup"):
            out.append("<h3>Setup</h3>" + _md(r["setup"]))
        out.append(_choices(r.get("choices") or []))
        if r["tables"]:
            out.append("<h3>Tables</h3>" + "\n".join(_table(t) for t in r["tables"]))
        if r["figures"]:
            out.append("<h3>Figures</h3>" + "\n".join(_figure(f, folder) for f in r["figures"]))
        out.append("<h3>Findings</h3>" + _findings(r["findings"]))
        out.append("<h3>Reading</h3>" + _md(r["reading"]))
        out.append(f"<h3>Compute cost</h3><p>{_e(_cost(r))}</p>")
        out.append(_provenance(r))
    out.append('<p class="meta"><a href="#status">back to the status table</a></p></section>')
    return "\n".join(x for x in out if x)


def render(entries: list[Entry]) -> str:
    """The page for ``entries`` (one per paper, in the order given) as one HTML string."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
            # No request may leave the file: forbid everything but inline style and data: images.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">"
            f"<title>qoelab reproductions</title><style>{_CSS}</style></head><body>\n"
            "<h1>qoelab: reproductions of five papers</h1>\n"
            "<p>One section per paper: its question, our tables beside the paper's (paper columns in "
            "italics on yellow), figures, findings with their labels and 95 % intervals, the reading and "
            "what it cost. Estimates read <em>mean ± half-width (n = repetitions)</em>; those over fewer than "
            f"{QUICK_BELOW} repetitions are flagged {_QFLAG} (quick: not evidence).</p>\n"
            + _status_table(entries) + "\n" + "\n".join(_section(en) for en in entries)
            + "\n</body></html>\n")


def entries_from(out: Path, errors: dict[str, str] | None = None) -> list[Entry]:
    """One :class:`Entry` per paper of :data:`PAPERS` from the folders ``out/<key>/``: a paper with
    a module whose ``report.json`` loads shows it; one whose run failed (``errors[key]``) or whose
    report does not load shows that one line; a paper without a module is not yet reproduced."""
    from qoelab.errors import QoelabError
    from qoelab.experiment.report import load_report

    errors = errors or {}
    entries = []
    for p in PAPERS:
        if p.key in errors:
            entries.append(Entry(p, error=errors[p.key]))
        elif p.module is None:
            entries.append(Entry(p))
        else:
            folder = Path(out) / p.key
            try:
                entries.append(Entry(p, report=load_report(folder / "report.json"), folder=folder))
            except QoelabError as e:
                entries.append(Entry(p, error=str(e)))
    return entries


def write_index(out: Path, entries: list[Entry]) -> Path:
    """Writes ``out/index.html`` atomically and returns its path."""
    out = Path(out)
    text = render(entries)
    tmp = out / ".index.html.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out / "index.html")
    return out / "index.html"
