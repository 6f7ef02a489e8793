#!/usr/bin/env python3
"""Lists import cycles between the modules of the Rust core and of the Python package.

Usage: `module_cycles.py [--lang rust|python|all] [--python-root DIR]`. Prints one line per cycle
(a strongly connected component of more than one module) and exits 1 if there is any, 0 otherwise,
so CI can run it (`make test`: the Rust half in `test-rust`, the Python half in `test-python`).
Stdlib only.

Rust (`crates/core/src`, each file a module): a file depends on another when it names it by path:
`crate::a::b`, `super::x`, `use super::{x, y}` (siblings), or `self::x`. Type re-exports through a
parent `mod.rs` count as a dependency on that `mod.rs`. Comments and the trailing
`#[cfg(test)] mod tests` are skipped.

Python (`python/qoelab`, each `.py` file a module, a package being its `__init__.py`, a native
extension being its `.pyi` stub): the graph
is read from the syntax tree, not by importing anything. Every `import` and `from … import`
statement is an edge, wherever it stands: at module level, inside a function, a method or a `try`.
A function-level import that only postpones a circle is still a circle in design terms (the two
modules still need each other), so it is counted. The rules:

- `import a.b.c` and `from a.b.c import name` are edges to `a.b.c`; `from a.b import c` is an edge to
  the module `a.b.c` when that file exists, else to `a.b` (the name is an attribute of `a.b`).
  Relative imports are resolved against the importing module's package.
- The parent packages that Python executes on the way (`a`, `a.b` for `import a.b.c`) are not
  edges: every child of a package would otherwise be in a circle with a parent `__init__.py` that
  re-exports it. A module that imports a name *from* its parent package is an edge to the parent.
- Imports inside `if TYPE_CHECKING:` (or `if typing.TYPE_CHECKING:`) are not edges: they exist only
  for the type checker and never run. Their `else:` branch does run, and counts.
- Imports of modules outside the package are ignored, and so are dynamic imports by computed name
  (`importlib.import_module(name)`): the lazy CLI command groups and the verify suites load by name.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUST_ROOT = REPO / "crates" / "core" / "src"
PYTHON_ROOT = REPO / "python" / "qoelab"

Graph = Mapping[str, Iterable[str]]


# ---------------------------------------------------------------------------------------- Rust


def rust_deps(root: Path = RUST_ROOT) -> dict[str, set[str]]:
    """The module graph of a Rust crate's `src/`, keyed by `a/b` paths (`lib` for the root)."""

    def module_of(path: Path) -> tuple[str, ...]:
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        return tuple(parts)

    files = {module_of(p): p for p in root.rglob("*.rs")}
    deps: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in files}

    def resolve(base: tuple[str, ...], names: list[str]) -> tuple[str, ...] | None:
        # The longest prefix of base + names that is a file.
        cand = base + tuple(names)
        for k in range(len(cand), len(base), -1):
            if cand[:k] in files:
                return cand[:k]
        return None

    for m, p in files.items():
        text = p.read_text()
        # Drop comments (doc links are not dependencies) and test modules (dev-only edges).
        text = re.sub(r"//[^\n]*", "", text)
        cut = text.find("#[cfg(test)]\nmod tests")
        if cut >= 0:
            text = text[:cut]
        is_dir_mod = p.name == "mod.rs"
        parent = m if is_dir_mod else m[:-1]
        for path in re.findall(r"\bcrate::((?:\w+::)*\w+)", text):
            t = resolve((), path.split("::"))
            if t and t != m and t != ():
                deps[m].add(t)
        for grp in re.findall(r"\bsuper::\{([^}]*)\}", text):
            for name in re.findall(r"\b(\w+)\b", grp):
                t = resolve(parent[:-1] if is_dir_mod else parent, [name])
                if t and t != m:
                    deps[m].add(t)
        for path in re.findall(r"\bsuper::((?:\w+::)*\w+)", text):
            base = parent[:-1] if is_dir_mod else parent
            t = resolve(base, path.split("::"))
            if t and t != m:
                deps[m].add(t)

    def name(m: tuple[str, ...]) -> str:
        return "/".join(m) or "lib"

    return {name(m): {name(t) for t in ts} for m, ts in deps.items()}


# -------------------------------------------------------------------------------------- Python


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at any depth, except under `if TYPE_CHECKING:`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def python_deps(root: Path = PYTHON_ROOT) -> dict[str, set[str]]:
    """The import graph of the package at `root` (a folder with `__init__.py`), keyed by dotted
    module names (`qoelab.video.traces.trace`); the rules are in this file's docstring."""
    pkg = root.name
    modules: dict[str, tuple[Path, bool]] = {}  # name -> (file, is a package)
    files = sorted(root.rglob("*.py"))
    # A native extension module is known by its stub (`_native.pyi`): a leaf, but a module.
    files += sorted(p for p in root.rglob("*.pyi") if not p.with_suffix(".py").exists())
    for p in files:
        parts = (pkg,) + p.relative_to(root).with_suffix("").parts
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        modules[".".join(parts)] = (p, is_pkg)
    deps: dict[str, set[str]] = {m: set() for m in modules}
    for m, (p, is_pkg) in modules.items():
        here = m if is_pkg else m.rpartition(".")[0]  # the package relative imports start from
        for node in _imports(ast.parse(p.read_bytes(), filename=str(p))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = here.split(".")
                    if node.level - 1 >= len(base):
                        continue  # above the top-level package: not ours
                    base = base[: len(base) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = []
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    targets.append(sub if a.name != "*" and sub in modules else mod)
            for t in targets:
                if t in modules and t != m:
                    deps[m].add(t)
    return deps


# ---------------------------------------------------------------------------------------- both


def cycles(deps: Graph) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted, in order."""
    graph = {v: sorted(ws) for v, ws in deps.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def report(label: str, deps: Graph) -> int:
    """Prints each cycle of `deps` with the edges that close it; the number of cycles."""
    found = cycles(deps)
    for comp in found:
        members = set(comp)
        edges = [f"{a} -> {b}" for a in comp for b in sorted(deps[a]) if b in members]
        print(f"{label} cycle ({len(comp)} modules): " + ", ".join(comp))
        print("    edges: " + "; ".join(edges))
    print(f"{label}: {len(deps)} modules, {len(found)} cycle(s)")
    return len(found)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", choices=("rust", "python", "all"), default="all")
    ap.add_argument("--python-root", type=Path, default=PYTHON_ROOT,
                    help="the package folder to check (default: python/qoelab)")
    args = ap.parse_args(argv)
    n = 0
    if args.lang in ("rust", "all"):
        n += report("rust", rust_deps())
    if args.lang in ("python", "all"):
        root = args.python_root
        if not (root / "__init__.py").is_file():
            print(f"module_cycles: {root}: not a Python package (no __init__.py)", file=sys.stderr)
            return 2
        n += report("python", python_deps(root))
    return 1 if n else 0


if __name__ == "__main__":
    sys.exit(main())
