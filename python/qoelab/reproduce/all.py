"""``qoelab reproduce all``: every paper with a reproduction, each into ``DIR/<key>/``, then one
``DIR/index.html`` (:mod:`qoelab.report.html`); ``qoelab report html DIR`` rebuilds the page only.

A paper folder whose ``report.json`` loads is reused unless ``--force`` (resume after a stop). A
paper whose run fails is shown as failed with its error's one line, the other papers still run,
and the command exits 1 at the end.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any, Callable

from qoelab.errors import QoelabError
from qoelab.reproduce.papers import PAPERS


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    head = text[0] if text else ""
    return head if isinstance(e, QoelabError) else f"{type(e).__name__}: {head}"


def run_all(out: Path, *, quick: bool = False, jobs: int = 1, force: bool = False,
            progress: Callable[..., None] | None = None, executor: Any = None,
            log: Callable[[str], None] = print, sensitivity: bool = False) -> dict[str, str]:
    """Runs every paper whose ``module`` is set into ``out/<key>/`` (reusing a folder whose
    ``report.json`` loads, unless ``force``) and writes ``out/index.html``. One progress display
    covers every paper to run and every stage of each (runs, decoding, picture measurements):
    its total, the sum of the papers' ``size(quick, sensitivity)``, is known before the first
    run, and a paper that fails still counts as done. Returns the one-line errors of the papers
    that failed, by key (empty: all ran)."""
    from qoelab import outdir
    from qoelab.experiment.report import load_report
    from qoelab.report.html import entries_from, write_index

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = []
    for p in PAPERS:
        if p.module is None:
            continue
        folder = outdir.refuse_symlink(out / p.key)  # never written through a planted link
        if not force:
            try:
                load_report(folder / "report.json")
                log(f"{p.key}: reusing the finished report in {folder}")
                continue
            except QoelabError:
                pass
        todo.append((p, folder, importlib.import_module(f"qoelab.reproduce.{p.module}")))
    sizes = [mod.size(quick, sensitivity) for _, _, mod in todo]
    total, base = sum(sizes), 0
    errors: dict[str, str] = {}
    for (p, folder, mod), n in zip(todo, sizes):
        def update(done: int, _total: int, reused: int = 0, base: int = base) -> None:
            if progress:
                progress(base + min(done, n), total, reused=reused)

        try:
            kw = {"sensitivity": True} if sensitivity else {}
            mod.run(folder, quick=quick, jobs=jobs, progress=update, executor=executor, **kw)
            load_report(folder / "report.json")
        except KeyboardInterrupt:
            raise
        except Exception as e:  # one paper's failure must not stop the others; it is shown in the page
            errors[p.key] = _one_line(e)
            log(f"{p.key}: failed: {errors[p.key]}")
        finally:
            base += n
            if progress:
                progress(base, total)
    write_index(out, entries_from(out, errors))
    return errors


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds ``reproduce all`` (under the ``reproduce`` group) and ``report html``."""
    from qoelab.reproduce import paper_group

    sub = paper_group(subparsers)
    s = sub.add_parser("all", help="every reproduction, each into DIR/<paper>/, and one DIR/index.html (resumable)")
    s.add_argument("--quick", action="store_true", help="the quick version of each reproduction (CI)")
    s.add_argument("-o", "--output", metavar="DIR", required=True, help="folder of the paper folders and index.html")
    s.add_argument("-j", "--jobs", type=int, default=1, help="parallel runs (default 1; 0 = one per CPU)")
    s.add_argument("--force", action="store_true", help="rerun papers whose report.json already loads")
    s.add_argument("--sensitivity", action="store_true",
                   help="also run each paper's findings under every alternative of its declared choices")
    s.add_argument("--report-only", action="store_true", help="run nothing; rebuild index.html from the paper folders")
    from qoelab.executors import add_arguments

    add_arguments(s)

    def cmd(a: argparse.Namespace) -> int:
        from qoelab.outdir import check_folder, output_arg

        out = check_folder(output_arg(a.output) or Path(a.output))
        if a.report_only:
            return _report_only(out)
        from rich.console import Console

        from qoelab.executors import open_from_args
        from qoelab.progress import progress
        from qoelab.executors import resolve_jobs

        console = Console(stderr=True)
        with open_from_args(a) as ex, progress(console, "reproduce all") as update:
            errors = run_all(out, quick=a.quick, jobs=resolve_jobs(a.jobs), force=a.force, progress=update,
                             executor=ex, log=lambda s: console.print(s, markup=False, highlight=False),
                             sensitivity=a.sensitivity)
        print(out / "index.html")
        if errors:
            print(f"{len(errors)} of {sum(p.module is not None for p in PAPERS)} reproductions failed: "
                  + ", ".join(errors))
            return 1
        return 0

    s.set_defaults(func=cmd)

    rep = subparsers.choices.get("report") or subparsers.add_parser("report", help="reports built from finished runs")
    rsub = rep.add_subparsers(dest="kind", required=True)
    h = rsub.add_parser("html", help="rebuild DIR/index.html from the paper folders of `reproduce all`")
    h.add_argument("dir", metavar="DIR", help="the folder `qoelab reproduce all -o DIR` wrote")
    h.set_defaults(func=lambda a: _report_only(Path(a.dir), must_exist=True))


def _report_only(out: Path, must_exist: bool = False) -> int:
    from qoelab.outdir import check_folder
    from qoelab.report.html import entries_from, write_index

    check_folder(out, "DIR" if must_exist else "-o/--output")
    if not out.is_dir():
        raise QoelabError(f"{out}: no such folder (run `qoelab reproduce all -o {out}` first)")
    entries = entries_from(out)
    write_index(out, entries)
    print(out / "index.html")
    bad = [e.paper.key for e in entries if e.error is not None]
    if bad:
        print(f"no loadable report.json for: {', '.join(bad)}")
        return 1
    return 0
