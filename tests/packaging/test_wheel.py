"""The wheel works outside the repository, and on older Linux.

Builds the wheel (scripts/build_wheel.sh: maturin links through zig against glibc 2.28), checks
with auditwheel that it is a `manylinux_2_28` wheel that needs no glibc symbol newer than 2.28
(RHEL/Rocky 8, Ubuntu 20.04 and later), installs it into a fresh virtual environment in a
temporary folder with `--no-deps` (its dependencies come from this interpreter's site-packages:
`--system-site-packages`, so the test needs no network), and from another temporary folder, with
no `cargo` on PATH and no checkout in reach, runs `qoelab demo`, a three-cell sweep and
`qoelab examples`. The installed package must be the wheel's, not this checkout's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from qoelab.paths import root

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list the tracked files")


# The oldest glibc the wheel supports: its platform tag and the ceiling of its symbol versions.
GLIBC = (2, 28)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("maturin")
    wheels = tmp_path_factory.mktemp("wheels")
    r = subprocess.run(["bash", str(root() / "scripts" / "build_wheel.sh"), str(wheels)],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    (whl,) = wheels.glob("qoelab-*.whl")
    return whl


def _version(name: str, prefix: str) -> tuple[int, ...]:
    """(2, 28) from "GLIBC_2.28" with prefix "GLIBC_", or from "manylinux_2_28_x86_64" with "manylinux_"."""
    return tuple(int(x) for x in re.split(r"[._]", name.removeprefix(prefix))[:2])


def test_the_wheel_is_manylinux_2_28_by_auditwheel(wheel: Path) -> None:
    """The tag says glibc 2.28, and auditwheel finds no symbol version above it (a wheel linked
    against this machine's glibc needs GLIBC_2.34 and is tagged manylinux_2_34: this fails)."""
    pytest.importorskip("auditwheel")
    assert wheel.name.endswith("-manylinux_2_28_x86_64.whl"), wheel.name
    r = subprocess.run([sys.executable, "-m", "auditwheel", "show", "--json", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    glibc = [v for versions in report["versioned_symbols"].values() for v in versions if v.startswith("GLIBC_")]
    assert glibc, report  # the check below would pass vacuously on an unreadable report
    highest = max(glibc, key=lambda v: _version(v, "GLIBC_"))
    assert _version(highest, "GLIBC_") <= GLIBC, f"needs {highest}: {report['versioned_symbols']}"
    assert _version(report["sym_tag"], "manylinux_") <= GLIBC, report["sym_tag"]
    assert report["overall_tag"].startswith("manylinux_") and _version(report["overall_tag"], "manylinux_") <= GLIBC
    assert report["external_libs"] == {}, report["external_libs"]  # nothing to bundle: only the manylinux set


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return env_dir


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOELAB_HOME")}
    # no Rust toolchain: only the venv and the system's basic tools
    env["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])
    assert shutil.which("cargo", path=env["PATH"]) is None
    return subprocess.run([str(venv / "bin" / "qoelab"), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)


def test_installed_package_is_the_wheels_and_finds_its_bundle(venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOELAB_HOME")}
    code = "import qoelab, qoelab.paths as p, json; print(json.dumps([qoelab.__file__, str(p.root()), p.in_checkout()]))"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    pkg, bundle, checkout = json.loads(r.stdout)
    assert Path(pkg).is_relative_to(venv), pkg
    assert Path(bundle).is_relative_to(venv) and Path(bundle, "scenarios", "demo", "scenario.toml").is_file()
    assert checkout is False


def test_demo_sweep_and_examples_run_from_anywhere(venv: Path, tmp_path: Path) -> None:
    r = _run(venv, tmp_path, "demo", "--set", "sim.duration=3s", "-o", "demo")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "demo" / "flows.parquet").is_file() and (tmp_path / "demo" / "video_quality.json").is_file()
    r = _run(venv, tmp_path, "sweep", "bench/dumbbell-10m", "--set", "sim.duration=1s",
             "--grid", "links[R1-R2].rate=5Mbps,10Mbps,20Mbps", "-o", "sw")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "3 runs (0 already done, 3 run now)" in r.stdout
    r = _run(venv, tmp_path, "examples", "ex")
    assert r.returncode == 0, r.stderr[-3000:]
    r = _run(venv, tmp_path, "validate", "ex/scenarios/demo/scenario.toml")
    assert r.returncode == 0, r.stderr[-3000:]
    # the notebooks travel in the wheel and come out with the scenarios
    shipped = {p.name for p in (root() / "examples").glob("*.ipynb")}
    assert shipped and {p.name for p in (tmp_path / "ex" / "examples").glob("*.ipynb")} == shipped


def test_readme_snippet_runs_against_the_wheel_from_a_temporary_folder(venv: Path, tmp_path: Path) -> None:
    (snippet,) = re.findall(r"```python\n(.*?)```", (root() / "README.md").read_text(), re.S)[:1]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOELAB_HOME")}
    code = snippet + "\nimport qoelab; print(qoelab.__file__, res.flows.num_rows)\n"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    pkg, rows = r.stdout.split()[-2:]
    assert Path(pkg).is_relative_to(venv) and int(rows) == 9, r.stdout
