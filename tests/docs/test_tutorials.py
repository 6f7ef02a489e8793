"""The tutorials under docs/tutorials/ are executed as written.

A page marks what the test does with a block by an HTML comment on the line before its fence
(invisible on the site and on GitHub):

- ``<!-- run -->`` before a ``sh`` or ``python`` block: run it. A page's run blocks make one bash
  script, in order (a ``python`` block becomes ``python - <<'PY'``), so ``cd`` carries over; it
  runs with ``set -euo pipefail`` in a fresh temporary folder against the installed package.
- ``<!-- file: NAME -->``: write the block's text to NAME in that folder before the script runs.
- ``<!-- same-as: PATH -->``: the block must be byte-identical to PATH in the repository (a Rust
  file the page shows, which ``make install`` compiled into the package under test).
- ``<!-- line-in: PATH -->``: each line of the block is a line of PATH (a registry line).
"""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = REPO / "docs" / "tutorials"
MARK = re.compile(r"^<!-- (run|file: (?P<file>\S+)|same-as: (?P<same>\S+)|line-in: (?P<line>\S+)) -->\n"
                  r"```(?P<lang>[\w-]*)\n(?P<body>.*?)^```\n", re.M | re.S)


def marked_blocks(page: Path) -> list[dict[str, str]]:
    """Every marked block of a page, in order: its marker, language and text."""
    text = page.read_text()
    blocks = [m.groupdict() | {"mark": m.group(1).split(":")[0]} for m in MARK.finditer(text)]
    # A marker must sit right above a fence: a marker the pattern skipped would be a block not run.
    assert len(re.findall(r"^<!-- (run|file|same-as|line-in)\b", text, re.M)) == len(blocks), \
        f"{page.name}: a marker not directly above a fenced block"
    return blocks


def script(blocks: list[dict[str, str]]) -> str:
    parts = ["set -euo pipefail"]
    for b in blocks:
        if b["mark"] != "run":
            continue
        if b["lang"] in ("sh", "bash", "console"):
            parts.append(b["body"])
        elif b["lang"] == "python":
            assert "\nPY\n" not in "\n" + b["body"], "a python block may not contain a line PY"
            parts.append(f"{sys.executable} - <<'PY'\n{b['body']}PY")
        else:
            raise AssertionError(f"cannot run a {b['lang']!r} block")
    return "\n".join(parts) + "\n"


def run_page(page: Path, tmp_path: Path) -> str:
    blocks = marked_blocks(page)
    assert any(b["mark"] == "run" for b in blocks), f"{page.name} runs nothing"
    for b in blocks:
        if b["mark"] == "file":
            (tmp_path / b["file"]).write_text(b["body"])
        elif b["mark"] == "same-as":
            assert b["body"] == (REPO / b["same"]).read_text(), f"{page.name}: the block shown differs from {b['same']}"
        elif b["mark"] == "line-in":
            lines = {ln.strip() for ln in (REPO / b["line"]).read_text().splitlines()}
            for ln in b["body"].splitlines():
                assert ln.strip() in lines, f"{page.name}: {ln.strip()!r} is not a line of {b['line']}"
    bindir = str(Path(sys.executable).parent)  # the venv's qoelab and python first
    env = {"PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "MPLBACKEND": "Agg"}
    p = subprocess.run(["bash", "-c", script(blocks)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, f"{page.name} failed (exit {p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    return p.stdout


def test_script_from_marked_blocks():
    text = ("<!-- run -->\n```sh\necho a\n```\n\n```sh\nnot run\n```\n"
            "<!-- run -->\n```python\nprint(1)\n```\n")
    blocks = [m.groupdict() | {"mark": m.group(1).split(":")[0]} for m in MARK.finditer(text)]
    s = script(blocks)
    assert "echo a" in s and "print(1)" in s and "not run" not in s


def test_first_experiment(tmp_path):
    out = run_page(TUTORIALS / "first-experiment.md", tmp_path)
    lab = tmp_path / "lab"
    for f in ["out/demo/flows.parquet", "out/demo/run.png", "out/throughput.png", "out/estimate.json",
              "out/compare/comparison.csv", "out/evaluate.json"]:
        assert (lab / f).is_file(), f
    assert "video packets logged" in out


def test_add_a_queue_discipline(tmp_path):
    out = run_page(TUTORIALS / "add-a-queue-discipline.md", tmp_path)
    assert "toy and fifo agree" in out
