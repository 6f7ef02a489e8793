"""``report.json``: the machine-readable report of a reproduction (``docs/report-format.md``).

:func:`write_report` checks a report against the format, turns NaN into ``null`` and writes it
atomically (a folder with a ``report.json`` is a finished report); :func:`load_report` reads one
back and refuses anything off the format with the file, the key path and the reason.
:func:`check_report` returns every problem it finds, as ``key.path: reason`` lines.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path, PurePosixPath
from typing import Any

from qoelab.errors import QoelabError
from qoelab.experiment.findings import Label, Verdict
from qoelab.experiment.stats import Estimate, portable

FORMAT = "qoelab.report/2"
LABELS = tuple(x.value for x in Label)
VERDICTS = tuple(x.value for x in Verdict)
SIDES = ("ours", "paper")
_REQUIRED = {"format": str, "paper": str, "mode": str, "title": str, "tables": list, "figures": list,
             "findings": list, "reading": str}
_OPTIONAL = {"summary": str, "setup": str, "cost": dict, "provenance": dict, "choices": list}


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def estimate_cell(e: Estimate | None, scale: float = 1.0) -> dict[str, Any] | None:
    """A table cell (or a finding's ``estimate``) from an :class:`Estimate`: mean and the 95 %
    interval's ends, ``null`` where they do not exist (``n < 2``, or repetitions that are not
    independent, which also adds ``"independent": false``); ``scale`` multiplies them (e.g. 100
    for percent)."""
    if e is None:
        return None
    mean = _finite(e.mean)
    hw = _finite(e.half_width) if e.independent else None
    d = {"mean": None if mean is None else portable(mean * scale),
         "lo": None if mean is None or hw is None else portable((mean - hw) * scale),
         "hi": None if mean is None or hw is None else portable((mean + hw) * scale),
         "n": e.n}
    if not e.independent:
        d["independent"] = False
    return d


def _clean(x: Any) -> Any:
    """NaN and infinities become ``null``; tuples become lists; other values are kept."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _is_cell(v: Any) -> bool:
    if v is None or isinstance(v, (str, int, float)) and not isinstance(v, bool):
        return not (isinstance(v, float) and not math.isfinite(v))
    if isinstance(v, dict):
        return (set(v) - {"independent"} == {"mean", "lo", "hi", "n"}
                and all(_is_cell(v[k]) and not isinstance(v[k], str) for k in ("mean", "lo", "hi"))
                and isinstance(v["n"], int) and not isinstance(v["n"], bool) and v["n"] >= 0
                and v.get("independent", False) is False)
    return False


def _rel_path(p: Any, folder: Path | None) -> str | None:
    """Why ``p`` is not a usable relative path inside ``folder`` (None when it is)."""
    if not isinstance(p, str) or not p:
        return "must be a non-empty string"
    pp = PurePosixPath(p)
    if pp.is_absolute() or ".." in pp.parts or "\\" in p:
        return f"must be a relative path inside the report folder, got {p!r}"
    if folder is not None and not (folder / p).is_file():
        return f"names {p!r}, which is not a file in {folder}"
    return None


def _list(v: Any) -> list[Any]:
    """``v`` if it is a list, else an empty one (a wrong type is reported on its own)."""
    return v if isinstance(v, list) else []


def check_report(doc: Any, folder: Path | None = None) -> list[str]:
    """Every way ``doc`` departs from the format, as ``key.path: reason`` lines (empty: valid).
    With ``folder``, the files that tables and figures name must exist in it."""
    if not isinstance(doc, dict):
        return [f"(top): must be an object, got {type(doc).__name__}"]
    errs: list[str] = []
    for k, t in _REQUIRED.items():
        if k not in doc:
            errs.append(f"{k}: missing")
        elif not isinstance(doc[k], t):
            errs.append(f"{k}: must be a {t.__name__}, got {type(doc[k]).__name__}")
    for k, t in _OPTIONAL.items():
        if k in doc and not isinstance(doc[k], t):
            errs.append(f"{k}: must be a {t.__name__}, got {type(doc[k]).__name__}")
    for k in doc:
        if k not in _REQUIRED and k not in _OPTIONAL:
            errs.append(f"{k}: unknown key")
    if doc.get("format") not in (None, FORMAT) and isinstance(doc.get("format"), str):
        errs.append(f"format: expected {FORMAT!r}, got {doc['format']!r}")
    if isinstance(doc.get("paper"), str):
        from qoelab.reproduce.papers import BY_KEY

        if doc["paper"] not in BY_KEY:
            errs.append(f"paper: unknown paper {doc['paper']!r}, expected one of {', '.join(BY_KEY)}")
    for i, t in enumerate(_list(doc.get("tables"))):
        at = f"tables[{i}]"
        if not isinstance(t, dict):
            errs.append(f"{at}: must be an object")
            continue
        for k in ("id", "title"):
            if not isinstance(t.get(k), str) or not t.get(k):
                errs.append(f"{at}.{k}: must be a non-empty string")
        cols = t.get("columns")
        if not isinstance(cols, list) or not cols:
            errs.append(f"{at}.columns: must be a non-empty list")
            cols = []
        keys = []
        for j, c in enumerate(cols):
            if not isinstance(c, dict) or not isinstance(c.get("key"), str) or not isinstance(c.get("title"), str):
                errs.append(f"{at}.columns[{j}]: must be an object with string `key` and `title`")
                continue
            if c.get("side") is not None and c.get("side") not in SIDES:
                errs.append(f"{at}.columns[{j}].side: must be one of {', '.join(SIDES)}, got {c.get('side')!r}")
            keys.append(c["key"])
        if len(set(keys)) != len(keys):
            errs.append(f"{at}.columns: duplicate keys")
        rows = t.get("rows")
        if not isinstance(rows, list):
            errs.append(f"{at}.rows: must be a list")
            rows = []
        for r, row in enumerate(rows):
            if not isinstance(row, dict):
                errs.append(f"{at}.rows[{r}]: must be an object")
                continue
            for k, v in row.items():
                if k not in keys:
                    errs.append(f"{at}.rows[{r}].{k}: not a column of the table")
                elif not _is_cell(v):
                    errs.append(f"{at}.rows[{r}].{k}: must be a string, a finite number, null or "
                                f"{{mean, lo, hi, n}}, got {v!r}"[:200])
        if "csv" in t and (why := _rel_path(t["csv"], folder)):
            errs.append(f"{at}.csv: {why}")
    for i, f in enumerate(_list(doc.get("figures"))):
        at = f"figures[{i}]"
        if not isinstance(f, dict) or not isinstance(f.get("id"), str) or not isinstance(f.get("title"), str):
            errs.append(f"{at}: must be an object with string `id` and `title`")
            continue
        if why := _rel_path(f.get("path"), folder):
            errs.append(f"{at}.path: {why}")
    for i, f in enumerate(_list(doc.get("findings"))):
        at = f"findings[{i}]"
        if not isinstance(f, dict):
            errs.append(f"{at}: must be an object")
            continue
        for k in ("key", "claim"):
            if not isinstance(f.get(k), str) or not f.get(k):
                errs.append(f"{at}.{k}: must be a non-empty string")
        if f.get("label") not in LABELS:
            errs.append(f"{at}.label: must be one of {', '.join(LABELS)}, got {f.get('label')!r}")
        if f.get("verdict") not in VERDICTS:
            errs.append(f"{at}.verdict: must be one of {', '.join(VERDICTS)}, got {f.get('verdict')!r}")
        if f.get("estimate") is not None and not (isinstance(f["estimate"], dict) and _is_cell(f["estimate"])):
            errs.append(f"{at}.estimate: must be null or {{mean, lo, hi, n}}")
        kinds: tuple[tuple[str, type], ...] = (("rule", str), ("note", str), ("quick", bool), ("n", int),
                                               ("premises", list), ("sensitivity", dict))
        for k, kind in kinds:
            if not isinstance(f.get(k), kind) or (kind is int and isinstance(f.get(k), bool)):
                errs.append(f"{at}.{k}: must be a {kind.__name__}")
        sens = f.get("sensitivity")
        if isinstance(sens, dict):
            if not isinstance(sens.get("text"), str) or sens.get("robust") not in (True, False, None):
                errs.append(f"{at}.sensitivity: must hold `text` (a string) and `robust` (true, false or null)")
            under = sens.get("under")
            if not isinstance(under, dict) or any(v not in VERDICTS for v in under.values()):
                errs.append(f"{at}.sensitivity.under: must map each variant to a verdict")
            cells = sens.get("on_cells", [])
            if not isinstance(cells, list) or not all(isinstance(c, str) and isinstance(under, dict) and c in under
                                                      for c in cells):
                errs.append(f"{at}.sensitivity.on_cells: must list variants of `under`")
    for i, c in enumerate(_list(doc.get("choices"))):
        at = f"choices[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("why"), str) \
                or not isinstance(c.get("alternatives"), list) or not isinstance(c.get("unavailable"), dict):
            errs.append(f"{at}: must be an object with `name`, `default`, `alternatives`, `why` and `unavailable`")
    return errs


def write_report(folder: Path, doc: dict[str, Any]) -> Path:
    """Checks ``doc`` (NaN already turned into ``null``) against the format and the files of
    ``folder``, then writes ``folder/report.json`` atomically. A report that is off the format is
    a bug of the reproduction that wrote it: :class:`ValueError` with every problem."""
    folder = Path(folder)
    doc = _clean(doc)
    doc.setdefault("format", FORMAT)
    errs = check_report(doc, folder)
    if errs:
        raise ValueError(f"{folder / 'report.json'}: not a valid report:\n  " + "\n  ".join(errs))
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    from qoelab.outdir import write_atomic

    return write_atomic(folder / "report.json", text)


def load_report_any(path: Path) -> dict[str, Any]:
    """A ``report.json`` of any format version as plain JSON, unchecked: for rewriting a
    committed report of an earlier format (its findings recomputed), never for reading results."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_report(path: Path) -> dict[str, Any]:
    """Reads a ``report.json`` and checks it; a damaged or foreign file is a :class:`QoelabError`
    naming the file, the key path and the reason (the first three problems)."""
    from qoelab.paths import read_text

    path = Path(path)
    if not os.path.lexists(path):
        raise QoelabError(f"{path}: no such report")
    text = read_text(path, "report", 64 * 2**20)  # a regular file only: a FIFO would never end
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise QoelabError(f"{path}: not JSON ({e})") from None
    except RecursionError:
        raise QoelabError(f"{path}: not a report (JSON nested too deeply)") from None
    errs = check_report(doc, path.parent)
    if errs:
        more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
        raise QoelabError(f"{path}: " + "; ".join(errs[:3]) + more)
    return doc
