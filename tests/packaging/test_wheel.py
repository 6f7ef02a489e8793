"""The wheel works outside the repository, and on older Linux.

Builds the wheel (scripts/build_wheel.sh: maturin links through zig against glibc 2.28), checks
with auditwheel that it is a `manylinux_2_28` wheel that needs no glibc symbol newer than 2.28
(RHEL/Rocky 8, Ubuntu 20.04 and later), installs it into a fresh virtual environment in a
temporary folder with its `notebooks` extra, resolved without an index against this interpreter's
site-packages (`--system-site-packages`, `--no-index`, constrained by requirements.lock: the test
needs no network, and a dependency missing here or off the lock fails the install), and from
another temporary folder, with no `cargo` on PATH and no checkout in reach, runs `qoelab demo`, a
three-cell sweep, `qoelab examples`, the README's Python snippet, and every notebook that
`qoelab examples` copied out, each executed in a kernel of that venv (QOELAB_QUICK=1, as
tests/test_notebooks.py does for the checkout). The installed package must be the wheel's, not
this checkout's, in the kernels too; and every library a notebook imports must come with
`qoelab[notebooks]` (the venv sees this interpreter's packages, so a missing one would otherwise
go unnoticed).
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
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--disable-pip-version-check", "-q",
                        "-c", str(root() / "requirements.lock"), f"{wheel}[notebooks]"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return env_dir


def _env(venv: Path) -> dict[str, str]:
    """This process's environment without what could lead to the checkout, and no Rust toolchain:
    only the venv and the system's basic tools on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOELAB_HOME", "JUPYTER_PATH")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), "/usr/bin", "/bin"])
    assert shutil.which("cargo", path=env["PATH"]) is None
    return env


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "qoelab"), *args], cwd=cwd, env=_env(venv), capture_output=True,
                          text=True, timeout=900)


def test_installed_package_is_the_wheels_and_finds_its_bundle(venv: Path, tmp_path: Path) -> None:
    env = _env(venv)
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
    env = _env(venv)
    code = snippet + "\nimport qoelab; print(qoelab.__file__, res.flows.num_rows)\n"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    pkg, rows = r.stdout.split()[-2:]
    assert Path(pkg).is_relative_to(venv) and int(rows) == 9, r.stdout


# Run by the venv's interpreter: executes one notebook (argv[1]) in a kernel of that venv, with the
# notebook's folder as working directory, then prints, as JSON, where the kernel found qoelab and
# Python, and the libraries the notebook's code imports that do not come with qoelab[notebooks]
# (the closure of its requirements, read from the installed distributions' metadata).
_EXECUTE = r"""
import ast, json, sys
import importlib.metadata as md
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

path = Path(sys.argv[1])
nb = nbformat.read(path, as_version=4)
code = [c.source for c in nb.cells if c.cell_type == "code"]
assert code, f"{path.name} has no code"
probe = "import json, sys, qoelab; print(json.dumps([qoelab.__file__, sys.executable]))"
nb.cells.append(nbformat.v4.new_code_cell(probe))
NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
(out,) = [o for o in nb.cells[-1].outputs if o.get("name") == "stdout"]
qoelab_file, kernel_python = json.loads(out.text)

imported = set()
for src in code:
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
imported -= set(sys.stdlib_module_names) | {"qoelab"}

closure, todo = set(), [("qoelab", {"notebooks"})]
while todo:
    name, extras = todo.pop()
    closure.add(canonicalize_name(name))
    for line in md.requires(name) or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
            if canonicalize_name(req.name) not in closure:
                todo.append((req.name, set(req.extras)))
dists = md.packages_distributions()
outside = sorted(m for m in imported if not {canonicalize_name(d) for d in dists.get(m, [m])} & closure)
print(json.dumps({"qoelab": qoelab_file, "python": kernel_python, "outside": outside}))
"""


@pytest.fixture(scope="module")
def examples(venv: Path, tmp_path_factory) -> Path:
    """The folder `qoelab examples` fills, run from a temporary folder against the wheel."""
    where = tmp_path_factory.mktemp("examples")
    r = _run(venv, where, "examples", "ex")
    assert r.returncode == 0, r.stderr[-3000:]
    return where / "ex"


NOTEBOOKS = sorted(p.name for p in (root() / "examples").glob("*.ipynb"))


@pytest.mark.parametrize("name", NOTEBOOKS, ids=[Path(n).stem for n in NOTEBOOKS])
def test_each_shipped_notebook_runs_against_the_wheel_from_the_examples_folder(venv: Path, examples: Path,
                                                                                   name: str) -> None:
    """Each notebook `qoelab examples` copied runs top to bottom in a kernel of the wheel's venv,
    from the copied examples/ folder: data it reads and libraries it imports must travel with the
    wheel and its `notebooks` extra."""
    path = examples / "examples" / name
    assert path.is_file(), f"qoelab examples did not copy {name}"
    env = _env(venv) | {"QOELAB_QUICK": "1", "MPLBACKEND": "Agg",
                        # kernelspecs only from the venv: no user's or system's python3 kernel
                        "JUPYTER_DATA_DIR": str(examples / ".jupyter")}
    r = subprocess.run([str(venv / "bin" / "python"), "-c", _EXECUTE, str(path)], cwd=path.parent, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-5000:]
    seen = json.loads(r.stdout.splitlines()[-1])
    assert Path(seen["qoelab"]).is_relative_to(venv), seen
    assert Path(seen["python"]).is_relative_to(venv), seen
    assert seen["outside"] == [], f"{name} imports {seen['outside']}, which qoelab[notebooks] does not bring"
