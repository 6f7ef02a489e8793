"""The CLI starts without importing what the chosen command does not need: numpy, pyarrow and
the reproductions are loaded only by the commands that use them (`qoelab --help` and the light
sub-commands stay quick), and the lazily built groups still parse and dispatch."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "pyarrow", "qoelab.results", "qoelab.reproduce.sqf", "qoelab.reproduce.tfd",
         "qoelab.reproduce.wimax", "qoelab.reproduce.mptcp", "qoelab.verify.core", "qoelab.experiment")


def _loaded_after(argv: list[str]) -> set[str]:
    code = ("import sys\nfrom qoelab.cli import build_parser\nbuild_parser(%r)\n"
            "print('\\n'.join(sorted(sys.modules)))" % (argv,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("argv", [["--help"], ["validate", "x.toml"], ["examples", "d"]])
def test_light_commands_import_nothing_heavy(argv):
    loaded = _loaded_after(argv)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_the_reproduce_group_is_built_only_when_asked_for():
    assert "qoelab.reproduce.sqf" in _loaded_after(["reproduce", "sqf", "--quick"])
    assert "qoelab.verify.core" in _loaded_after(["verify", "--quick"])


def test_lazy_groups_are_listed_and_parse_for_real():
    from qoelab.cli import LAZY_GROUPS, build_parser

    top = build_parser(["--help"])
    sub = next(a for a in top._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    assert set(LAZY_GROUPS) <= set(sub.choices)
    a = build_parser(["reproduce", "wimax", "--quick"]).parse_args(["reproduce", "wimax", "--quick"])
    assert a.paper == "wimax" and a.quick and callable(a.func)
    a = build_parser(["report", "html", "d"]).parse_args(["report", "html", "d"])
    assert callable(a.func)
    a = build_parser(["verify", "--quick"]).parse_args(["verify", "--quick"])
    assert a.quick and callable(a.func)


def test_a_plain_run_imports_neither_pandas_nor_matplotlib(tmp_path):
    # `qoelab run` builds its Arrow tables without pyarrow's pandas probe and plots only on
    # `--plot`: about 0.2 s (pandas) and 0.7 s (matplotlib and the drawing) a run does not wait for.
    out = tmp_path / "r"
    code = ("import sys\nfrom qoelab.cli import main\n"
            "rc = main(['run', 'bench/dumbbell-10m', '--set', 'sim.duration=2s', '-o', %r])\n"
            "print('LOADED', ' '.join(sorted(sys.modules)))\nsys.exit(rc)" % (str(out),))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    loaded = set(p.stdout.split("LOADED", 1)[1].split())
    assert "pyarrow" in loaded and (out / "flows.parquet").is_file()
    assert not {m for m in loaded if m.split(".")[0] in ("pandas", "matplotlib")}
    assert not (out / "run.png").exists()
