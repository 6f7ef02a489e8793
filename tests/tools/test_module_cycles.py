"""`scripts/module_cycles.py`, the import-circle check CI runs on the Rust core and the Python
package: its Python half on small packages built here (a circle is found and named, a DAG passes,
each rule of its docstring holds), then on `python/qoelab` itself, whose video stages must also
import each other one way only."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "module_cycles.py"

_spec = importlib.util.spec_from_file_location("module_cycles", SCRIPT)
assert _spec is not None and _spec.loader is not None
mc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mc)


def make_package(tmp_path: Path, files: dict[str, str], name: str = "pkg") -> Path:
    """A package `name` under tmp_path from {relative path: source}; every folder gets an
    `__init__.py` (empty unless given)."""
    root = tmp_path / name
    for rel, src in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(src))
    for d in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        (d / "__init__.py").touch()
    return root


def run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--lang", "python", "--python-root", str(root)],
                          capture_output=True, text=True, check=False)


def test_a_circle_is_found_and_named(tmp_path):
    root = make_package(tmp_path, {
        "a.py": "from pkg import b\n",
        "b.py": "from pkg.c import f\n",
        "c.py": "import pkg.a\n",
        "d.py": "from pkg import a\n",  # depends on the circle, is not in it
    })
    assert mc.cycles(mc.python_deps(root)) == [["pkg.a", "pkg.b", "pkg.c"]]
    r = run(root)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "python cycle (3 modules): pkg.a, pkg.b, pkg.c" in r.stdout
    assert "pkg.a -> pkg.b; pkg.b -> pkg.c; pkg.c -> pkg.a" in r.stdout
    assert "1 cycle(s)" in r.stdout


def test_a_dag_passes(tmp_path):
    root = make_package(tmp_path, {
        "low.py": "import os\nimport numpy\n",
        "mid.py": "from .low import x\nfrom . import low\n",
        "sub/top.py": "from ..mid import y\nfrom pkg.low import z\nfrom pkg import mid\n",
    })
    deps = mc.python_deps(root)
    assert deps["pkg.sub.top"] == {"pkg.low", "pkg.mid"} and deps["pkg.mid"] == {"pkg.low"}
    assert deps["pkg.low"] == set()  # modules outside the package are not nodes
    r = run(root)
    assert r.returncode == 0 and "0 cycle(s)" in r.stdout, r.stdout + r.stderr


def test_function_level_imports_count(tmp_path):
    # Postponing an import into a function does not remove the circle it closes.
    root = make_package(tmp_path, {
        "a.py": "from pkg import b\n",
        "b.py": "def f():\n    from pkg.a import g\n    return g\n",
    })
    assert mc.cycles(mc.python_deps(root)) == [["pkg.a", "pkg.b"]]


def test_type_checking_imports_do_not_count_but_their_else_does(tmp_path):
    files = {
        "a.py": "from pkg import b\n",
        "b.py": textwrap.dedent("""\
            import typing
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from pkg.a import A
            if typing.TYPE_CHECKING:
                from pkg import a
            """),
    }
    assert mc.cycles(mc.python_deps(make_package(tmp_path / "1", files))) == []
    files["b.py"] += "else:\n    from pkg.a import A\n"
    assert mc.cycles(mc.python_deps(make_package(tmp_path / "2", files))) == [["pkg.a", "pkg.b"]]


def test_relative_imports_resolve_from_the_package(tmp_path):
    root = make_package(tmp_path, {
        "x.py": "",
        "sub/__init__.py": "from .y import f\n",  # a package's __init__ resolves `.` to itself
        "sub/y.py": "from .. import x\nfrom ..sub import z\n",
        "sub/z.py": "from . import y\n",
    })
    deps = mc.python_deps(root)
    assert deps["pkg.sub"] == {"pkg.sub.y"}
    assert deps["pkg.sub.y"] == {"pkg.x", "pkg.sub.z"} and deps["pkg.sub.z"] == {"pkg.sub.y"}
    assert mc.cycles(deps) == [["pkg.sub.y", "pkg.sub.z"]]


def test_parents_run_on_the_way_are_not_edges_but_names_from_them_are(tmp_path):
    # `sub/__init__` re-exports its child; the child importing a sibling by its full path is no
    # circle, but taking a name from the parent package is.
    files = {"sub/__init__.py": "from .child import C\n", "sub/child.py": "import pkg.sub.other\n", "sub/other.py": ""}
    assert mc.cycles(mc.python_deps(make_package(tmp_path / "1", files))) == []
    files["sub/other.py"] = "from pkg.sub import C\n"
    assert mc.cycles(mc.python_deps(make_package(tmp_path / "2", files))) == [["pkg.sub", "pkg.sub.child", "pkg.sub.other"]]


def test_a_native_stub_is_a_module(tmp_path):
    # `from pkg import _native` names the extension module (its stub), not the package __init__.
    root = make_package(tmp_path, {"__init__.py": "from pkg.a import A\n", "a.py": "from pkg import _native\n",
                                   "_native.pyi": "def f() -> int: ...\n"})
    deps = mc.python_deps(root)
    assert deps["pkg.a"] == {"pkg._native"} and mc.cycles(deps) == []


def test_not_a_package_is_refused(tmp_path):
    r = run(tmp_path)
    assert r.returncode == 2 and "not a Python package" in r.stderr


def test_qoelab_has_no_import_circle():
    deps = mc.python_deps(ROOT / "python" / "qoelab")
    assert "qoelab.video.traces.trace" in deps  # the graph is the real package's
    assert mc.cycles(deps) == []


#: The video pipeline's stages, lowest first (docstring of `qoelab.video`): a stage may import
#: only the stages before it, and `errors`/`tools`, which every stage may use.
VIDEO_STAGES = ["errors", "tools", "traces", "pictures", "sources", "receiver", "quality", "cli"]


def test_video_stages_import_downward_only():
    deps = mc.python_deps(ROOT / "python" / "qoelab")

    def stage(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["qoelab", "video"] else None

    stages = {s for m in deps if (s := stage(m))}
    assert stages == set(VIDEO_STAGES), "a new module or sub-package of qoelab.video: give it its place in VIDEO_STAGES"
    upward = [f"{a} -> {b}" for a, bs in deps.items() for b in bs
              if (sa := stage(a)) and (sb := stage(b)) and VIDEO_STAGES.index(sb) > VIDEO_STAGES.index(sa)]
    assert not upward, "video stages importing later stages: " + "; ".join(sorted(upward))
