"""Issue 35: a reproduction is a declaration (the paper's values, scenario builder, choices and
findings); tables, statistics, reports and progress live in the experiment layer. The bound
that keeps it so: no file of ``python/qoelab/reproduce`` over 600 lines."""

from __future__ import annotations

from pathlib import Path

LIMIT = 600
REPRODUCE = Path(__file__).resolve().parents[2] / "python" / "qoelab" / "reproduce"


def test_no_reproduction_file_is_over_600_lines():
    files = sorted(REPRODUCE.rglob("*.py"))
    assert len(files) > 10, REPRODUCE
    long = {str(p.relative_to(REPRODUCE)): n for p in files if (n := len(p.read_text().splitlines())) > LIMIT}
    assert not long, f"over {LIMIT} lines (move tables, statistics or prose into the layer or a sub-module): {long}"
