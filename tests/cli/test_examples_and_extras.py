"""`qoelab examples DIR` ships the notebooks beside the scenarios and data; Dask is an extra
(`qoelab[dask]`), and without it a cluster sweep ends with one line naming the extra (issue 41)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import run_cli
from qoelab.paths import root


def test_examples_copies_the_notebooks_with_the_scenarios_and_data(tmp_path: Path) -> None:
    code, out, err = run_cli("examples", str(tmp_path / "ex"))
    assert code == 0, err
    shipped = {p.name for p in (root() / "examples").glob("*.ipynb")}
    assert shipped and {p.name for p in (tmp_path / "ex" / "examples").glob("*.ipynb")} == shipped
    assert (tmp_path / "ex" / "scenarios" / "demo" / "scenario.toml").is_file()
    assert f"{len(shipped)} notebooks" in out and "qoelab[notebooks]" in out


def test_the_wheel_bundles_the_notebooks() -> None:
    script = (root() / "scripts" / "build_wheel.sh").read_text()
    assert '"$tmp/examples"' in script and "_bundle/" in script


def test_dask_is_an_extra_not_a_dependency() -> None:
    meta = tomllib.loads((root() / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("dask") or d.startswith("distributed") for d in meta["dependencies"])
    assert any(d.startswith("dask[distributed]") for d in meta["optional-dependencies"]["dask"])
    assert "qoelab[dask]" in meta["optional-dependencies"]["test"]


def test_a_cluster_sweep_without_dask_names_the_extra(tmp_path: Path) -> None:
    """Dask hidden from the import system: `--cluster` fails with one line, exit 2, and a local
    sweep still runs (it never imports Dask)."""
    hide = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.split('.')[0] in ('dask', 'distributed'):\n"
            "            raise ImportError(name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from qoelab.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    base = ["sweep", "demo", "--set", "sim.duration=1s", "--grid", "sim.seed=1,2"]
    p = subprocess.run([sys.executable, "-c", hide, *base, "--cluster", "local:1", "-o", str(tmp_path / "c")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Dask is not installed" in p.stderr and "pip install 'qoelab[dask]'" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-c", hide, *base, "-o", str(tmp_path / "l")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
