import json
import math
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root() -> Path:
    return ROOT


def one_link_udp(name: str) -> dict:
    """The smallest scenario a sweep can run: one 1-s CBR/UDP flow over one 10 Mbit/s link
    (tests of the sweep machinery, not of a model)."""
    return {
        "name": name,
        "sim": {"duration": "1s", "seed": 4},
        "links": [{"a": "A", "b": "B", "rate": "10Mbps", "delay": "5ms"}],
        "flows": [{"name": "p", "src": "A", "dst": "B", "transport": {"kind": "udp"},
                   "app": {"kind": "cbr", "rate": "1Mbps", "payload": "1000B"}}],
    }


def run_cli(*args: str, cwd: Path | None = None):
    """Runs the installed `qoelab` entry point in a subprocess; returns (code, stdout, stderr)."""
    import subprocess

    env = dict(os.environ, COLUMNS="200")
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def _refuse_constant(name: str) -> None:
    raise ValueError(f"non-finite constant {name} in JSON")


def _native(v: object, where: str) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            assert isinstance(k, str), f"{where}: key {k!r}"
            _native(x, f"{where}.{k}")
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _native(x, f"{where}[{i}]")
    elif isinstance(v, float):
        assert math.isfinite(v), f"{where}: {v}"
    else:
        assert v is None or isinstance(v, (str, bool, int)), f"{where}: {type(v).__name__}"


def check_json_tree(root: Path) -> int:
    """Loads every `*.json` file and sweep `done` marker under `root` as strict JSON of native
    types (no NaN/Infinity, no numpy scalars); returns how many it checked."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix == ".json" or p.name == "done"))
    for p in files:
        try:
            doc = json.loads(p.read_text(), parse_constant=_refuse_constant)
        except ValueError as e:
            raise AssertionError(f"{p.relative_to(root)}: {e}") from None
        _native(doc, str(p.relative_to(root)))
    return len(files)


@pytest.fixture
def strict_json_tree():
    """:func:`check_json_tree` as a fixture (test folders have conftest modules of their own, so
    importing it by module name is ambiguous)."""
    return check_json_tree


@pytest.fixture(scope="session")
def emulation() -> None:
    """Skips a test that needs emulation (root, network namespaces, TUN devices) where this
    machine cannot run one, with the reason; under ``CI=true`` that is a failure instead (CI runs
    as root on a machine that can)."""
    from qoelab.emulate import unavailable

    why = unavailable()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true, but emulation cannot run here: {why}")
        pytest.skip(why)


def without_provenance(text: str) -> str:
    """A report with its provenance sentence (the commit that ran and wrote it, and whether that
    checkout was clean: qoelab.experiment.provenance.describe) blanked, for comparing a fresh
    run's report with a committed one."""
    import re

    return re.sub(r"One clean commit, \S+, ran every run and wrote this report\.|Provenance (mixed|unrecorded|legacy)"
                  r"[^\n]*", "Provenance: –", text)
