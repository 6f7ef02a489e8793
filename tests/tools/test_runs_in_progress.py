"""The committed parts of a run in progress (runs-in-progress/) are archives `qoelab runs unpack`
accepts, the pinned commit is in the history, and scripts/carried_run.sh refuses what it does
not know (exit 2)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from qoelab.runpack import packed_runs

ROOT = Path(__file__).resolve().parents[2]
CARRIED = sorted(p.parent for p in (ROOT / "runs-in-progress").glob("*/run.conf"))


@pytest.mark.parametrize("folder", CARRIED, ids=[p.name for p in CARRIED])
def test_each_carried_run_is_pinned_to_a_commit_and_its_parts_unpack(folder: Path):
    conf = (folder / "run.conf").read_text()
    pin = re.search(r"^PIN=([0-9a-f]{40})$", conf, re.M)
    assert pin, f"{folder}/run.conf: no PIN=<40 hex digits>"
    if (ROOT / ".git").exists():
        assert subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", pin.group(1) + "^{commit}"]).returncode == 0
    seen: set[str] = set()
    for part in sorted(folder.glob("part-*.tar.xz")):
        runs = packed_runs(part)  # every header checked as unpack checks it
        assert runs and not runs & seen, f"{part.name}: empty, or repeats runs of an earlier part"
        seen |= runs


def test_carried_run_refuses_an_unknown_run(tmp_path: Path):
    r = subprocess.run(["bash", str(ROOT / "scripts" / "carried_run.sh"), "no-such-run"], capture_output=True, text=True)
    assert r.returncode == 2 and "no-such-run/run.conf: no such carried run" in r.stderr
