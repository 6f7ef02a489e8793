"""`qoelab.reproduce.add_paper_command`: the options every reproduction shares, and a paper's own
options passed to its ``run`` (``options``) with what it prints when done (``done``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from qoelab.errors import QoelabError
from qoelab.reproduce import add_paper_command


def _parser(run, **kw) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser()
    sub = top.add_subparsers(dest="cmd", required=True)
    t = add_paper_command(sub, "toy", "a toy paper", run, quick_help="quick", reps_help="reps", **kw)
    t.add_argument("--flavour", default="plain")
    t.add_argument("--report-only", action="store_true")
    return top


def test_a_papers_own_options_reach_its_run_and_done_prints_the_result(tmp_path: Path, capsys):
    calls = []

    def run(out, **k):
        calls.append((out, k))
        return {"said": f"{k['flavour']} x{k['reps']}"}

    def options(a):
        if a.flavour == "bad":
            raise QoelabError("--flavour bad: unknown flavour")
        return {"flavour": a.flavour, "report_only": a.report_only}

    p = _parser(run, options=options, done=lambda r, out: print(f"{r['said']} in {out.name}"))
    a = p.parse_args(["reproduce", "toy", "--quick", "--reps", "3", "--flavour", "salty", "-o", str(tmp_path / "o")])
    assert a.func(a) == 0
    (out, k), = calls
    assert out == tmp_path / "o" and k["quick"] is True and k["reps"] == 3 and k["jobs"] == 1
    assert (k["flavour"], k["report_only"]) == ("salty", False)
    assert capsys.readouterr().out == "salty x3 in o\n"
    # A bad option of the paper's own is refused before anything runs.
    a = p.parse_args(["reproduce", "toy", "--flavour", "bad", "-o", str(tmp_path / "o2")])
    with pytest.raises(QoelabError, match="unknown flavour"):
        a.func(a)
    assert len(calls) == 1


def test_a_sharded_run_prints_the_shard_note_not_done(tmp_path: Path, capsys):
    def run(out, **k):
        return {"shard": (1, 2)}

    p = _parser(run, done=lambda r, out: print("the report"))
    a = p.parse_args(["reproduce", "toy", "-o", str(tmp_path / "o")])
    assert a.func(a) == 0
    out = capsys.readouterr().out
    assert out.startswith("shard 1/2 done;") and "the report\n" not in out
