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
