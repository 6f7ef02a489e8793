"""Shared fixtures: small real encodes of the bundled clip, made once per session."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))
try:
    importlib.import_module("qoelab")
except ImportError:
    # `qoelab.video` needs no native module, but the package's __init__ imports it. Before the
    # extension is built, stand in a bare package so that the video tests still run.
    sys.modules.pop("qoelab", None)
    _pkg = types.ModuleType("qoelab")
    _pkg.__path__ = [str(REPO / "python" / "qoelab")]
    sys.modules["qoelab"] = _pkg

TRACES = REPO / "data" / "traces"


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than ~30 s on two cores")


@pytest.fixture(scope="session")
def short_clip(tmp_path_factory):
    """60 CIF frames of the bundled clip, H.264 QP 26, GOP 15 IBBP, 900-byte slices, bitstream kept."""
    from qoelab.video.sources.bundle import cif_config
    from qoelab.video.sources.encode import encode
    from qoelab.video.sources.source import CLIP

    out = tmp_path_factory.mktemp("short")
    r = encode(cif_config(CLIP, frames=60), out, "short")
    return r


@pytest.fixture(scope="session")
def cif_clip(tmp_path_factory):
    """The bundled CIF trace's encode, regenerated with its bitstream (about 6 s)."""
    from qoelab.video.sources.bundle import build_cif

    out = tmp_path_factory.mktemp("cif")
    return build_cif(out, keep_bitstream=True)
