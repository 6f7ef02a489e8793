"""`_native.pyi` (what type checkers and editors see) matches the compiled binding."""

from __future__ import annotations

import ast
import inspect

import qoelab._native as native
from qoelab.paths import root


def _stub_functions() -> dict[str, list[tuple[str, bool]]]:
    tree = ast.parse((root() / "python" / "qoelab" / "_native.pyi").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            n_default = len(node.args.defaults)
            out[node.name] = [(a.arg, i >= len(args) - n_default) for i, a in enumerate(args)]
    return out


def test_stub_signatures_match_the_binding() -> None:
    stub = _stub_functions()
    public = {n for n in dir(native) if not n.startswith("_") and callable(getattr(native, n))
              and not isinstance(getattr(native, n), type)}
    assert set(stub) == public, (set(stub) ^ public)
    for name, params in stub.items():
        sig = inspect.signature(getattr(native, name))
        real = [(p.name, p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]
        assert params == real, f"_native.pyi: {name}{params} but the binding has {real}"


def test_stub_lists_the_bindings_exception_classes() -> None:
    tree = ast.parse((root() / "python" / "qoelab" / "_native.pyi").read_text())
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    real = {n for n in dir(native) if isinstance(getattr(native, n), type)
            and issubclass(getattr(native, n), BaseException)}
    assert classes == real
