"""The README's Python snippet runs as printed from any folder: a new user copies it into a
script outside the checkout, where no `scenarios/` folder is beside them."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from qoelab.paths import root


def _snippet() -> str:
    text = (root() / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no ```python block"
    return blocks[0]


def test_readme_python_snippet_runs_from_a_folder_outside_the_checkout(tmp_path) -> None:
    code = _snippet() + "\nassert res.flows.num_rows == 9, res.flows.num_rows  # the video and 8 downloads\nprint('ok', res.flow('video')['loss_ratio'])\n"
    env = {k: v for k, v in os.environ.items() if k != "QOELAB_HOME"}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok "), r.stdout
    assert not (tmp_path / "scenarios").exists() and str(root()) not in str(tmp_path)
