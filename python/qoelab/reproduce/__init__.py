"""Reproductions of published experiments (`qoelab reproduce ...`)."""

# Not named `papers`: the submodule `qoelab.reproduce.papers` (the five papers as data) replaces
# that attribute of the package as soon as it is imported.
def paper_group(subparsers):
    """The sub-command group of ``qoelab reproduce``: the one an earlier ``register`` created,
    or a new one. Each paper's module adds its own parser to it (``reproduce sqf``, ``reproduce
    tfd``, …)."""
    import argparse

    rep = subparsers.choices.get("reproduce")
    if rep is None:
        rep = subparsers.add_parser("reproduce", help="rerun a paper's experiments and write a report")
        return rep.add_subparsers(dest="paper", required=True)
    for action in rep._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise RuntimeError("the `reproduce` parser has no sub-commands")


def add_paper_command(subparsers, name: str, help: str, run, *, quick_help: str, reps_help: str | None = None,
                      jobs_help: str = "parallel runs (default 1; 0 = one per CPU)", label: str | None = None,
                      unit: str | None = None, options=None, done=None):
    """Adds ``qoelab reproduce NAME`` with the options every reproduction on the layer shares:
    ``--quick``, ``--sensitivity``, ``--reps`` (if `reps_help` is given), ``-j/--jobs``, ``-o/--output`` (default
    ``results/reproduce-NAME[-quick]``, checked before anything runs) and the executor options
    (``docs/sweeps.md``). The command calls ``run(out, quick=…, sensitivity=…, [reps=…,] jobs=…,
    progress=…, executor=…)`` under one progress display and prints the shard note of a sharded run.
    Returns the parser, for options of the paper's own: ``options(args)`` turns them into more
    keyword arguments of ``run`` (a ``report_only`` one that is true hides the progress display:
    nothing runs), and ``done(result, out)`` prints what a finished run has to say."""
    import argparse
    from pathlib import Path

    from qoelab.errors import QoelabError
    from qoelab.executors import add_arguments

    t = paper_group(subparsers).add_parser(name, help=help)
    t.add_argument("--quick", action="store_true", help=quick_help)
    t.add_argument("--sensitivity", action="store_true",
                   help="also run every finding under each alternative of the paper's declared choices (its CHOICES; "
                        "results in DIR/sensitivity/) and mark each finding robust or dependent on a choice")
    if reps_help is not None:
        t.add_argument("--reps", type=int, default=None, help=reps_help)
    t.add_argument("-j", "--jobs", type=int, default=1, help=jobs_help)
    t.add_argument("-o", "--output", metavar="DIR", help=f"report folder (default results/reproduce-{name}[-quick])")
    add_arguments(t)

    def cmd(a: argparse.Namespace) -> int:
        from rich.console import Console

        from qoelab.executors import open_from_args, shard_note
        from qoelab.outdir import check_folder
        from qoelab.progress import progress
        from qoelab.executors import resolve_jobs

        kw = dict(options(a)) if options else {}
        if reps_help is not None:
            if a.reps is not None and a.reps < 1:
                raise QoelabError(f"--reps {a.reps}: must be at least 1")
            kw["reps"] = a.reps
        out = Path(a.output) if a.output else Path("results") / (f"reproduce-{name}-quick" if a.quick else f"reproduce-{name}")
        check_folder(out)
        bar = progress(Console(stderr=True), label or f"{name} reproduction", unit=unit or "runs",
                       disable=bool(kw.get("report_only")))
        with open_from_args(a) as ex, bar as update:
            r = run(out, quick=a.quick, sensitivity=a.sensitivity, jobs=resolve_jobs(a.jobs), progress=update,
                    executor=ex, **kw)
        if "shard" in r:
            print(shard_note(r["shard"]))
        elif done:
            done(r, out)
        return 0

    t.set_defaults(func=cmd)
    return t
