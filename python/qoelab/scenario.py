"""Scenarios as plain data.

A :class:`Scenario` is a nested dict with the same shape as the TOML file. It is compiled once
by the core when run: no Python code runs per event. Values carry units as strings
(``"10Mbps"``, ``"20ms"``, ``"64KB"``, ``"50p"``), exactly as in the files.

>>> sc = Scenario.from_dict({
...     "sim": {"duration": "1s", "seed": 1},
...     "links": [{"a": "A", "b": "B", "rate": "10Mbps", "delay": "5ms"}],
...     "flows": [{"name": "f", "src": "A", "dst": "B", "transport": {"kind": "udp"},
...                "app": {"kind": "cbr", "rate": "1Mbps", "payload": "1000B"}}],
... })
>>> sc.set("links[0].rate", "20Mbps")
>>> res = sc.run()
>>> int(res.flows["sent_pkts"][0])
125
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

import tomli_w

from qoelab import _native
from qoelab.errors import ScenarioError
from qoelab.results import Results

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\.(\d+)(?=\.|\[|$)")


def parse_key_path(path: str) -> list[str | int]:
    """Splits ``links[2].queue.limit`` (or ``links.2.queue.limit``) into keys and indices."""
    parts: list[str | int] = []
    pos = 0
    s = path.strip()
    while pos < len(s):
        if s[pos] == "." and pos > 0:
            pos += 1
            if pos < len(s) and s[pos].isdigit():
                m = re.match(r"\d+", s[pos:])
                assert m
                parts.append(int(m.group()))
                pos += m.end()
                continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", s[pos:])
        if m:
            parts.append(m.group())
            pos += m.end()
            continue
        m = re.match(r"\[(\d+)\]", s[pos:])
        if m:
            parts.append(int(m.group(1)))
            pos += m.end()
            continue
        raise ValueError(f"malformed key path {path!r} at position {pos}")
    if not parts or not isinstance(parts[0], str):
        raise ValueError(f"malformed key path {path!r}")
    return parts


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML literal if it parses as one (``5``, ``true``, ``[1, 2]``,
    ``{kind = "fifo"}``), otherwise the string itself (``20Mbps``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


class Scenario:
    """A scenario: plain data plus where it came from (for error messages and relative paths)."""

    def __init__(self, data: dict[str, Any], source: str = "<scenario>", base_dir: Path | None = None):
        self.data = data
        self.source = source
        self.base_dir = base_dir or Path.cwd()

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<scenario>", base_dir: Path | None = None) -> "Scenario":
        return cls(copy.deepcopy(data), source, base_dir)

    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        p = Path(path)
        try:
            text = p.read_text()
        except OSError as e:
            raise ScenarioError(str(p), f"cannot read scenario: {e.strerror or e}") from None
        except UnicodeDecodeError:
            raise ScenarioError(str(p), "cannot read scenario: not UTF-8 text") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(str(p), f"malformed TOML: {e}") from None
        return cls(data, str(p), p.resolve().parent)

    def copy(self) -> "Scenario":
        return Scenario(copy.deepcopy(self.data), self.source, self.base_dir)

    def get(self, path: str) -> Any:
        node: Any = self.data
        for k in parse_key_path(path):
            try:
                node = node[k]
            except (KeyError, IndexError, TypeError):
                raise ScenarioError(self.source, f"{path}: no such key") from None
        return node

    def set(self, path: str, value: Any) -> None:
        """Sets a value by key path. The parent must exist; the leaf may be new (the core
        rejects unknown keys when the scenario is built)."""
        try:
            keys = parse_key_path(path)
        except ValueError as e:
            raise ScenarioError(self.source, str(e)) from None
        node: Any = self.data
        for i, k in enumerate(keys[:-1]):
            try:
                node = node[k]
            except (KeyError, IndexError, TypeError):
                prefix = _fmt(keys[: i + 1])
                raise ScenarioError(self.source, f"{path}: {prefix} does not exist") from None
        last = keys[-1]
        if isinstance(last, int):
            if not isinstance(node, list) or last >= len(node):
                raise ScenarioError(self.source, f"{path}: index {last} out of range")
        elif not isinstance(node, dict):
            raise ScenarioError(self.source, f"{path}: {_fmt(keys[:-1])} is not a table")
        node[last] = value

    def to_toml(self) -> str:
        return tomli_w.dumps(self.data)

    def validate(self) -> None:
        try:
            _native.validate(self.to_toml(), str(self.base_dir))
        except _native.ScenarioError as e:
            raise ScenarioError(self.source, str(e)) from None

    def run(self, out_dir: Path | None = None, progress: Callable[[float, float], Any] | None = None) -> Results:
        """Runs the scenario. ``out_dir`` receives captures (pcap) if the scenario asks for them.

        ``progress(simulated_s, end_s)``, if given, is called about ten times a second while the
        core runs (in steps of simulated time; the results are the same as without it). An
        exception it raises stops the run and propagates."""
        try:
            tables = _native.run(self.to_toml(), str(self.base_dir), str(out_dir) if out_dir else None, progress)
        except _native.ScenarioError as e:
            raise ScenarioError(self.source, str(e)) from None
        return Results(tables, self)


def _fmt(keys: list[str | int]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else k)
    return out
