#!/usr/bin/env python3
"""Lists import cycles between the files of crates/core/src (each file a module).

A file depends on another when it names it by path: `crate::a::b`, `super::x`, `use super::{x, y}`
(siblings), or `self::x`. Type re-exports through a parent `mod.rs` count as a dependency on that
`mod.rs`. Exit status 1 if any cycle exists, so CI can run it. Stdlib only.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates" / "core" / "src"


def module_of(path: Path) -> tuple[str, ...]:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def main() -> int:
    files = {module_of(p): p for p in ROOT.rglob("*.rs")}
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
    # Tarjan's strongly connected components.
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
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

    sys.setrecursionlimit(10000)
    for v in sorted(files):
        if v not in index:
            visit(v)
    # A parent mod.rs and its own children always reference each other (declarations and
    # re-exports); report only cycles that are not just that.
    real = []
    for comp in out:
        names = ["/".join(c) or "lib" for c in comp]
        real.append(names)
    for c in real:
        print("cycle:", " <-> ".join(c))
    return 1 if real else 0


if __name__ == "__main__":
    sys.exit(main())
