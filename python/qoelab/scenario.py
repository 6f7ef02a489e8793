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
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Callable

import tomli_w

from qoelab import _native
from qoelab.errors import QoelabError, ScenarioError
from qoelab.results import Results

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\.(\d+)(?=\.|\[|$)")


class Named(str):
    """A list item chosen by name in a key path: ``flows[video]`` (the flow whose ``name`` is
    ``video``), ``links[R1-R2]`` (the link between nodes R1 and R2, either way round)."""


def parse_key_path(path: str) -> list[str | int]:
    """Splits ``links[2].queue.limit`` (or ``links.2.queue.limit``) into keys and indices; a
    bracket holding anything but digits selects a list item by name (:class:`Named`)."""
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
        m = re.match(r"\[([^\[\]]+)\]", s[pos:])
        if m and parts:
            parts.append(Named(m.group(1).strip()))
            pos += m.end()
            continue
        raise ValueError(f"malformed key path {path!r} at position {pos}")
    if not parts or not isinstance(parts[0], str) or isinstance(parts[0], Named):
        raise ValueError(f"malformed key path {path!r}")
    return parts


def _select(items: list[Any], sel: Named, where: str) -> int:
    """Index of the item `sel` names in `items`: by its `name`, or for a link (`a`/`b`) by
    `A-B` / `A->B` (either order). None or several matches are errors naming the candidates."""
    hits = [i for i, it in enumerate(items) if isinstance(it, dict) and it.get("name") == sel]
    if not hits:
        ends = re.fullmatch(r"(.+?)\s*(?:->|-)\s*(.+)", sel)
        if ends:
            pair = {ends.group(1), ends.group(2)}
            hits = [i for i, it in enumerate(items)
                    if isinstance(it, dict) and {it.get("a"), it.get("b")} == pair]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise KeyError(f"{where}[{sel}] is ambiguous: items {', '.join(map(str, hits))} match; use an index")
    names = [str(it.get("name") or (f"{it.get('a')}-{it.get('b')}" if "a" in it else "")) for it in items
             if isinstance(it, dict)]
    known = ", ".join(n for n in names if n) or "none named"
    raise KeyError(f"{where}[{sel}]: no item named {sel!r} (items: {known})")


def _step(node: Any, key: str | int, where: str) -> Any:
    """One key of a path: a Named key becomes the index of the item it names."""
    if isinstance(key, Named):
        if not isinstance(node, list):
            raise KeyError(f"{where} is not a list")
        return _select(node, key, where)
    return key


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML literal if it parses as one (``5``, ``true``, ``[1, 2]``,
    ``{kind = "fifo"}``), otherwise the string itself (``20Mbps``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise ValueError(f"{_short(text)}: nested deeper than {MAX_DEPTH} levels") from None


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
        """Reads a scenario file: a regular file of at most :data:`MAX_FILE_BYTES`, UTF-8
        TOML nested at most :data:`MAX_DEPTH` deep, integers within 64 bits.

        ``path`` is a file, or the name of a bundled scenario as the CLI takes it (``"demo"``,
        ``"sqf/model-check"``), found wherever qoelab is installed, whatever the current folder."""
        from qoelab.paths import scenario_path

        try:
            p = scenario_path(os.fspath(path))
        except QoelabError as e:
            raise ScenarioError("", str(e)) from None
        data = parse_toml(read_text_file(p, "scenario"), str(p))
        return cls(data, str(p), p.resolve().parent)

    def copy(self) -> "Scenario":
        return Scenario(copy.deepcopy(self.data), self.source, self.base_dir)

    def get(self, path: str) -> Any:
        node: Any = self.data
        keys = parse_key_path(path)
        for i, k in enumerate(keys):
            try:
                node = node[_step(node, k, _fmt(keys[:i]))]
            except KeyError as e:
                if isinstance(k, Named):
                    raise ScenarioError(self.source, f"{path}: {e.args[0]}") from None
                raise ScenarioError(self.source, f"{path}: no such key") from None
            except (IndexError, TypeError):
                raise ScenarioError(self.source, f"{path}: no such key") from None
        return node

    def set(self, path: str, value: Any) -> None:
        """Sets a value by key path. The parent must exist; the leaf may be new (the core
        rejects unknown keys when the scenario is built). The value is checked as a loaded
        file is (nesting depth, 64-bit integers); an error names the key path and value."""
        try:
            keys = parse_key_path(path)
        except ValueError as e:
            raise ScenarioError(self.source, str(e)) from None
        problem = check_data(value, keys)
        if problem:
            raise ScenarioError(self.source, f"{path} = {_short(value)}: {problem[1]}")
        node: Any = self.data
        for i, k in enumerate(keys[:-1]):
            try:
                node = node[_step(node, k, _fmt(keys[:i]))]
            except KeyError as e:
                if isinstance(k, Named):
                    raise ScenarioError(self.source, f"{path}: {e.args[0]}") from None
                raise ScenarioError(self.source, f"{path}: {_fmt(keys[: i + 1])} does not exist"
                                    + _how_to_create(node, keys, i, value)) from None
            except (IndexError, TypeError):
                prefix = _fmt(keys[: i + 1])
                raise ScenarioError(self.source, f"{path}: {prefix} does not exist") from None
        last = keys[-1]
        if isinstance(last, Named):
            try:
                last = _step(node, last, _fmt(keys[:-1]))
            except KeyError as e:
                raise ScenarioError(self.source, f"{path}: {e.args[0]}") from None
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


#: Largest scenario file read (bytes). Bundled scenarios are a few kB; a topology of 10^5
#: explicit links is 6.6 MB and takes about 10 s to parse and re-serialise (``count`` expands
#: repeated entries without text, so larger networks need no larger files).
MAX_FILE_BYTES = 16 * 1024 * 1024

#: Deepest nesting of tables and arrays in a scenario (the bundled ones reach 5).
MAX_DEPTH = 32

_I64 = (-(2**63), 2**63 - 1)


def read_text_file(p: Path, what: str, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes (:func:`qoelab.paths.read_text`:
    devices, FIFOs and folders are refused without blocking); errors name the file."""
    from qoelab.paths import read_text

    return read_text(p, f"{what} file", limit, ScenarioError)


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """Parses scenario TOML and checks it with :func:`check_data`. The error names the
    position (tomllib's line and column), never the file's text."""
    import sys

    # tomllib recurses once per nesting level, a few frames each: leave room for MAX_DEPTH
    # and report anything deeper as too deep rather than as a RecursionError.
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(source, f"malformed TOML: {e}") from None
    except RecursionError:
        raise ScenarioError(source, f"nested deeper than {MAX_DEPTH} levels (the limit is "
                            f"{MAX_DEPTH}; Python's recursion limit is {sys.getrecursionlimit()})") from None
    problem = check_data(data, [])
    if problem:
        raise ScenarioError(source, f"{problem[0]}: {problem[1]}")
    return data


def check_data(value: Any, at: list[str | int]) -> tuple[str, str] | None:
    """What is wrong with scenario data ``value`` found at key path ``at`` (the key path and
    the reason), or None: nesting
    deeper than :data:`MAX_DEPTH`, or an integer outside 64 bits (TOML's range; the core could
    only name a line of the re-serialised text). Iterative, so depth costs no stack."""
    stack: list[tuple[Any, list[str | int]]] = [(value, list(at))]
    while stack:
        v, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return f"{_fmt(path[:MAX_DEPTH])}…", f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if not _I64[0] <= v <= _I64[1]:
                return _fmt(path), f"integer {_short(v)} is outside the 64-bit range TOML allows"
        elif isinstance(v, dict):
            stack.extend((x, path + [k]) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, path + [i]) for i, x in enumerate(v))
    return None


def _how_to_create(node: Any, keys: list[str | int], i: int, value: Any) -> str:
    """What to write instead when ``set`` meets a missing table at ``keys[i]`` of a table
    ``node``: the closest existing key if it looks misspelled, else the whole table set at once
    (``output.probes`` on a scenario without ``[output]``: set ``output = {probes = […]}``)."""
    import difflib

    k = keys[i]
    if not isinstance(node, dict) or not isinstance(k, str) or isinstance(k, Named):
        return ""
    close = difflib.get_close_matches(k, [str(x) for x in node], n=1)
    if close:
        return f"; did you mean {_fmt(keys[:i] + [close[0]])}?"
    rest = keys[i + 1:]
    if any(isinstance(r, int) for r in rest):
        return ""
    inline = _inline(value)
    for r in reversed(rest):
        inline = f"{{{r} = {inline}}}"
    if len(inline) > 80:
        inline = inline[:79] + "…"
    return f"; set the whole table instead: {_fmt(keys[: i + 1])} = {inline}"


def _inline(v: Any) -> str:
    """``v`` as an inline TOML value (for a suggestion; tomli_w writes documents, not values)."""
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_inline(x)}" for k, x in v.items()) + "}"
    return _short(v)


def _short(v: Any, n: int = 40) -> str:
    """A value as an error message shows it: at most ``n`` characters."""
    try:
        s = repr(v)
    except (RecursionError, ValueError):
        s = f"<{type(v).__name__}>"
    return s if len(s) <= n else s[: n - 1] + "…"


def _fmt(keys: list[str | int]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, (int, Named)) else (f".{k}" if out else k)
    return out
