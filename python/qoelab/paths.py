"""Where bundled files live: the repository's `scenarios/` and `data/` folders.

The package is installed in editable mode from the repository (see README), so these are found
relative to the package. ``QOELAB_HOME`` overrides the repository root.
"""

from __future__ import annotations

import os
from pathlib import Path

from qoelab.errors import QoelabError


def root() -> Path:
    env = os.environ.get("QOELAB_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2]


def scenario_path(name: str) -> Path:
    """A bundled scenario by name (``bench/dumbbell-10m``) or a path to a file."""
    p = Path(name)
    if p.suffix == ".toml" or p.exists():
        return p
    cand = root() / "scenarios" / name
    for c in (cand / "scenario.toml", cand.with_suffix(".toml")):
        if c.exists():
            return c
    raise QoelabError(f"{name}: no such scenario file or bundled scenario (looked in {root() / 'scenarios'})")
