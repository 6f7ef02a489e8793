"""requirements.lock pins every dependency pyproject.toml declares, inside its declared range.

pyproject.toml states ranges (so qoelab installs beside an existing notebook environment);
requirements.lock holds the exact versions that `make install` (and so CI) installs. A range
edited without re-locking, or a lock edited by hand outside a range, fails here.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _lock() -> dict[str, str]:
    pins: dict[str, str] = {}
    for n, line in enumerate((ROOT / "requirements.lock").read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        assert m, f"requirements.lock:{n}: not an exact pin: {line!r}"
        pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        reqs += [Requirement(r) for r in extra]
    # an extra may include another (`test` = … + `qoelab[notebooks]`): those are checked as theirs
    return [r for r in reqs if canonicalize_name(r.name) != canonicalize_name(project["name"])]


def test_pyproject_declares_ranges_not_exact_pins() -> None:
    for req in _declared():
        assert not any(s.operator in ("==", "===") for s in req.specifier), (
            f"pyproject.toml: {req}: exact pins belong in requirements.lock")
        assert req.specifier, f"pyproject.toml: {req.name} has no lower bound"


def test_lock_pins_every_declared_dependency_within_its_range() -> None:
    pins = _lock()
    for req in _declared():
        name = canonicalize_name(req.name)
        assert name in pins, f"requirements.lock lacks {req.name} (run `make lock`)"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject's {req.specifier}")
    # the extras' own dependencies (dask[distributed] → distributed) are locked too
    assert "distributed" in pins
