"""Where a report's numbers come from: the code that ran its runs and the code that wrote it.

Every run records the code it ran with (``timing.json``: the git commit, ``-dirty`` when the
checkout had uncommitted changes; :func:`qoelab.sweep.timing` lists them). A report's
``provenance`` (:func:`of`) names them, the code that wrote the report, and a ``status``:

- ``clean``: one commit, without uncommitted changes, ran every run and wrote the report;
- ``mixed``: the runs come from several commits, or a commit with uncommitted changes, or the
  report was written by other code than the runs';
- ``unrecorded``: a run's code version is not known.

**Committed results** (a folder under ``scenarios/*/expected/`` of the repository) must be
``clean``: :func:`check_committable` refuses anything else with one line naming the folder and
the versions, and :func:`qoelab.experiment.tables.publish` calls it for such a folder. Folders
committed before this rule whose runs are gone are *legacy*: each carries a ``PROVENANCE.md``
saying what is known (:func:`legacy_note`), and ``tests/experiment/test_provenance.py`` holds
the list of them, so a new folder cannot be legacy silently.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterable

from qoelab.errors import QoelabError

#: The file a legacy committed folder carries (:func:`legacy_note`).
LEGACY_FILE = "PROVENANCE.md"


def code_version() -> str | None:
    """The commit of this checkout (``-dirty`` with uncommitted changes to tracked files), or
    None outside a git checkout: what a run records in its ``timing.json``."""
    from qoelab import paths

    root = paths.root()
    try:
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if r.returncode != 0:
            return None
        head = r.stdout.strip()
        d = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10)
        return head + ("-dirty" if d.returncode == 0 and d.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def command(paper: str, *, quick: bool, sensitivity: bool, reps: int | None = None) -> str:
    """The ``qoelab reproduce`` command line that reruns a report, for its provenance: with
    ``--reps`` when the run was given one (a default count is the plan's and needs none)."""
    return (f"qoelab reproduce {paper}" + (" --quick" if quick else "") + (" --sensitivity" if sensitivity else "")
            + (f" --reps {reps}" if reps is not None else ""))


def of(versions: Iterable[str], writer: str | None = None, **extra: Any) -> dict[str, Any]:
    """A report's ``provenance``: ``runs_code`` (the versions its runs ran with, in first-use
    order), ``report_code`` (``writer``, default this checkout's :func:`code_version`) and the
    ``status`` (module doc); ``extra`` keys (command, seeds) are kept."""
    vs = list(dict.fromkeys(v for v in versions))
    writer = code_version() if writer is None else writer
    if not vs or any(v in ("", "?") or v.startswith("0.") for v in vs) or writer is None:
        status = "unrecorded"
    elif len(vs) == 1 and not vs[0].endswith("-dirty") and vs[0] == writer:
        status = "clean"
    else:
        status = "mixed"
    return {**extra, "runs_code": vs, "report_code": writer, "status": status}


def describe(p: dict[str, Any]) -> str:
    """One sentence for a report: the status and the commits."""
    vs = p.get("runs_code") or []
    if p.get("status") == "clean":
        return f"One clean commit, {vs[0][:12]}, ran every run and wrote this report."
    if p.get("status") == "legacy":
        return ("Provenance legacy: committed before results had to come from one clean commit; see PROVENANCE.md in "
                "this folder. Findings recomputed from the committed tables by " + str(p.get("report_code") or "?")[:18]
                + ".")
    dirty = sum(v.endswith("-dirty") for v in vs)
    return (f"Provenance {p.get('status', 'unrecorded')}: the runs come from {len(vs)} code version(s)"
            + (f", {dirty} with uncommitted changes" if dirty else "")
            + f" ({', '.join(v[:12] + ('-dirty' if v.endswith('-dirty') else '') for v in vs) or 'unrecorded'}); "
            f"the report was written by {str(p.get('report_code') or 'unrecorded code')[:18]}. "
            "Not fit to be committed as a result (docs/experiments.md, Provenance).")


def committed_folder(folder: Path) -> bool:
    """Whether ``folder`` is (inside) a committed results folder of this repository:
    ``scenarios/<name>/expected/…``."""
    from qoelab import paths

    try:
        rel = Path(folder).resolve().relative_to((paths.root() / "scenarios").resolve())
    except ValueError:
        return False
    return len(rel.parts) >= 2 and rel.parts[1] == "expected"


def check_committable(p: dict[str, Any], folder: Path) -> None:
    """Refuses (:class:`QoelabError`, one line) a report whose provenance is not ``clean`` for
    a committed results folder: runs from several code versions, with uncommitted changes, or a
    report written by other code than its runs'. A ``legacy`` report is let through only in a
    folder that says so (its :data:`LEGACY_FILE`, :func:`legacy_note`)."""
    if p.get("status") == "legacy" and (Path(folder) / LEGACY_FILE).is_file():
        return
    if p.get("status") != "clean":
        raise QoelabError(f"{folder}: a committed result must come from one clean commit; "
                          + describe(p).removesuffix(" Not fit to be committed as a result (docs/experiments.md, "
                                                     "Provenance)."))


def legacy_note(folder: Path, *, versions: list[str] | None, what: str, recomputed: str) -> Path:
    """Writes ``folder/PROVENANCE.md`` for a committed folder from before the one-clean-commit
    rule whose runs are gone: what is known of its code (``versions``; None: unrecorded), what
    the folder is (``what``) and what was recomputed from its committed tables (``recomputed``)."""
    if versions is None:
        code = "Its runs' code versions were not recorded."
    else:
        dirty = sum(v.endswith("-dirty") for v in versions)
        code = (f"Its runs come from {len(versions)} code versions" + (f", {dirty} with uncommitted changes" if dirty else "")
                + ": " + ", ".join(f"`{v}`" for v in versions) + ".")
    text = ("# Provenance: legacy (mixed or unrecorded)\n\n"
            f"{what}\n\n{code} It was committed before results had to come from one clean commit "
            "(docs/experiments.md, Provenance), and its runs are not kept, so it cannot be regenerated here; "
            "it stays as a record, marked as such, until its full run is redone from one clean commit.\n\n"
            f"{recomputed}\n")
    from qoelab.outdir import write_atomic

    return write_atomic(Path(folder) / LEGACY_FILE, text)
