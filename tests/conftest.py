import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path | None = None):
    """Runs the installed `qoelab` entry point in a subprocess; returns (code, stdout, stderr)."""
    import subprocess

    env = dict(os.environ, COLUMNS="200")
    p = subprocess.run([sys.executable, "-m", "qoelab.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr
