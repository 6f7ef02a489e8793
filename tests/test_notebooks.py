"""The example notebooks (examples/*.ipynb) run top to bottom on quick settings.

Each is executed in a fresh kernel with QOELAB_QUICK=1 from a temporary working directory; a
cell that raises fails the test with the cell's traceback. The outputs are not compared: the
notebooks' own cells print and plot what the reader looks at.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qoelab.paths import root

NOTEBOOKS = sorted((root() / "examples").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    monkeypatch.setenv("QOELAB_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    assert nb.cells, f"{path.name} is empty"
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    # every code cell ran
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def test_the_example_notebooks_are_there() -> None:
    assert {p.stem for p in NOTEBOOKS} >= {"sweep_to_dataframe", "video_quality_of_a_run", "open_a_reproduction"}
