"""mypy is clean on `python/qoelab`, every package of it (`NOT_YET_CLEAN` is empty).

Runs mypy in-process (`mypy.api.run`) with the `[tool.mypy]` configuration of pyproject.toml,
exactly what `python -m mypy` does from the repository root, and fails on any error reported in
a module outside `NOT_YET_CLEAN` (and if mypy itself fails to run). The cache lives in pytest's
cache folder, so a second run is quick.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]

#: Packages whose mypy errors are not fixed yet. It held `qoelab.reproduce` and
#: `qoelab.experiment` until both were made clean; it stays empty: never add one.
NOT_YET_CLEAN: tuple[str, ...] = ()

_ERROR = re.compile(r"(?P<path>[^:]+\.pyi?):(?P<line>\d+): error: (?P<msg>.*)")


def _module(path: str) -> str:
    """Dotted module name of a reported file, e.g. `python/qoelab/video/cli.py` → `qoelab.video.cli`."""
    parts = Path(path).with_suffix("").parts
    assert "qoelab" in parts, f"mypy reported a file outside the package: {path}"
    mod = list(parts[parts.index("qoelab"):])
    if mod[-1] == "__init__":
        mod.pop()
    return ".".join(mod)


def _not_yet_clean(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in NOT_YET_CLEAN)


def test_mypy_clean(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_provider = getattr(request.config, "cache", None)
    cache = cache_provider.mkdir("mypy") if cache_provider is not None else tmp_path
    monkeypatch.chdir(ROOT)  # `files` in [tool.mypy] are relative to the repository root
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(cache)])
    # 0: no errors, 1: errors found, 2: mypy could not run (bad config, crash)
    assert status in (0, 1), f"mypy did not run (exit {status}):\n{stderr}{stdout}"
    lines = stdout.splitlines()
    assert lines and re.match(r"(Success: no issues found in|Found \d+ errors? in \d+ files? \(checked) \d+ source files",
                                 lines[-1]), stdout
    errors = [m for m in map(_ERROR.fullmatch, lines) if m]
    # Every "error:" line must have been understood, or an error could slip past the filter.
    assert len(errors) == sum(": error: " in ln for ln in lines), stdout
    if status == 1:
        assert errors, f"mypy failed without a parsable error line:\n{stdout}"
    bad = [m.group(0) for m in errors if not _not_yet_clean(_module(m.group("path")))]
    assert not bad, f"{len(bad)} mypy error(s):\n" + "\n".join(bad)
    assert status == 0 and not errors
