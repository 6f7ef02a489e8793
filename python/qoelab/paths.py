"""Where bundled files live: the `scenarios/` and `data/` folders.

In a checkout (the editable install of the README) they are the repository's. A wheel
(`scripts/build_wheel.sh`) carries copies of both inside the package, in `qoelab/_bundle/`, so
an installed qoelab finds them without a checkout; `qoelab examples DIR` copies them out for
editing. ``QOELAB_HOME`` overrides both: a folder holding `scenarios/` and `data/`.
"""

from __future__ import annotations

import os
from pathlib import Path

from qoelab.errors import QoelabError


#: The copies a wheel carries (absent in a checkout: the build script makes them).
BUNDLE = Path(__file__).resolve().parent / "_bundle"


def root() -> Path:
    """The folder holding `scenarios/` and `data/`: ``QOELAB_HOME``, the wheel's bundle, or
    the repository of a checkout."""
    env = os.environ.get("QOELAB_HOME")
    if env:
        return Path(env)
    if (BUNDLE / "scenarios").is_dir():
        return BUNDLE
    return Path(__file__).resolve().parents[2]


def in_checkout() -> bool:
    """Whether this qoelab runs from a repository checkout (docs, tests, git are there)."""
    return (Path(__file__).resolve().parents[2] / "Cargo.toml").is_file()


def scenario_path(name: str) -> Path:
    """A bundled scenario by name (``bench/dumbbell-10m``) or a path to a file."""
    p = Path(name)
    if p.suffix == ".toml" or p.is_file():
        return p
    cand = root() / "scenarios" / name
    for c in (cand / "scenario.toml", cand.with_suffix(".toml")):
        if c.exists():
            return c
    if p.exists():
        return p  # a folder or a device that names no bundled scenario: the loader says what it is
    raise QoelabError(f"{name}: no such scenario file or bundled scenario (looked in {root() / 'scenarios'})")
