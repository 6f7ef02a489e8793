"""The bad-input regression corpus (issue 15, item 9).

Every case is a command line (scenario text, files, arguments) with its expected exit code and
message fragments, listed as data in ``cases.toml``; this file expands the compact forms there
(one line per ``--set`` value gives a ``--set`` case and the same value written in the file)
and checks every case:

- the exit code is the expected one (2 for bad input, 0 where the input is valid);
- a rejection is one line on stderr, starting ``qoelab:``, holding every expected fragment (the
  file, the key path, the reason);
- nothing anywhere says ``Traceback``, ``panicked`` or ``internal error``;
- no case runs longer than :data:`TIMEOUT` seconds (a hang fails its case, not the suite);
- files a case must not create (``absent``) do not exist afterwards, and files it must not touch
  (``keep``: planted symlinks' targets, earlier results) are unchanged.

The cases run in-process (:func:`qoelab.cli.main`) in two worker processes (``runner.py``),
so the whole corpus takes well under a minute on two cores; a worker that stops answering is
killed and the case it was running fails as a hang.

``core_cases.toml`` holds the cases of the core half of issue 15 (Rust parameter ranges, panics,
stalls, the trace reader) and of the video commands' argument checks, in the same format;
``features_cases.toml`` those of issue 42 (MPDs, segment tables and ladders, special files,
planted symlinks, names in plots, unanswered schedulers, limits on every count).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
TIMEOUT = 60.0  # seconds per case: generous on a loaded two-core machine
WORKERS = 2
FORBIDDEN = ("Traceback", "panicked", "internal error", "RUST_BACKTRACE", "PanicException")


def _subst(text: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        text = text.replace("{" + k + "}", v)
    return text


def expand(path: Path) -> list[dict[str, Any]]:
    """The cases of one corpus file, compact forms expanded (see ``cases.toml``'s header)."""
    doc = tomllib.loads(path.read_text())
    templates: dict[str, str] = doc.get("template", {})
    out: list[dict[str, Any]] = []

    def scenario_of(c: dict[str, Any]) -> str | None:
        if "scenario" in c:
            return c["scenario"]
        if "template" not in c:
            return None
        text = templates[c["template"]]
        for old, new in c.get("replace", []):
            assert old in text, f"{c['id']}: {old!r} not in template {c['template']!r}"
            text = text.replace(old, new, 1)
        return text + c.get("append", "")

    for c in doc.get("case", []):
        case = {
            "id": c["id"],
            "args": c.get("args", ["validate", "{scen}"]),
            "scenario": scenario_of(c),
            "files": c.get("files"),
            "dirs": c.get("dirs"),
            "fifos": c.get("fifos"),
            "chmod": c.get("chmod"),
            "exit": c.get("exit", 2),
            "expect": c.get("expect", []) if isinstance(c.get("expect", []), list) else [c["expect"]],
            "absent": c.get("absent", []),
            "forbid": c.get("forbid", []),
            "keep": c.get("keep"),
            "symlinks": c.get("symlinks"),
            "listen": c.get("listen", False),
        }
        out.append(case)
    # One line per value: [template, key path, TOML value, fragment] → the value through --set,
    # and the same value written into the file (exit 2, naming the file and the key path).
    for t, key, value, frag in doc.get("bad_value", []):
        base = {"exit": 2, "files": None, "dirs": None, "fifos": None, "chmod": None, "absent": [], "forbid": []}
        out.append({**base, "id": f"set:{t}:{key}={value}", "args": ["validate", "{scen}", "--set", f"{key}={value}"],
                    "scenario": templates[t], "expect": ["{scen}", frag]})
        out.append({**base, "id": f"file:{t}:{key}={value}", "args": ["validate", "{scen}"],
                    "scenario": _with_value(templates[t], key, value), "expect": ["{scen}", frag]})
    for t, key, value in doc.get("good_value", []):
        base = {"exit": 0, "files": None, "dirs": None, "fifos": None, "chmod": None, "absent": [], "forbid": [], "expect": []}
        out.append({**base, "id": f"set-ok:{t}:{key}={value}", "args": ["validate", "{scen}", "--set", f"{key}={value}"],
                    "scenario": templates[t]})
    # Every key of a template given a value of the wrong type: the error names the key.
    for t, spec in doc.get("wrong_type", {}).items():
        for key in spec["keys"]:
            for value in spec["values"]:
                base = {"exit": 2, "files": None, "dirs": None, "fifos": None, "chmod": None, "absent": [], "forbid": []}
                out.append({**base, "id": f"type:{t}:{key}={value}", "args": ["validate", "{scen}", "--set", f"{key}={value}"],
                            "scenario": templates[t], "expect": ["{scen}", "~" + key]})
    ids = [c["id"] for c in out]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"{path.name}: duplicate case ids {sorted(dup)}"
    return out


def _with_value(text: str, key: str, value: str) -> str:
    """``text`` with the scenario value at ``key`` replaced by the TOML literal ``value``
    (written as text, so values the front end refuses to hold, like 2^70, reach the file)."""
    import tomli_w

    from qoelab.scenario import Scenario

    sc = Scenario.from_dict(tomllib.loads(text))
    sc.set(key, "@@corpus-value@@")
    literal = value if _is_literal(value) else tomli_w.dumps({"v": value})[4:].strip()
    out = tomli_w.dumps(sc.data)
    assert out.count('"@@corpus-value@@"') == 1
    return out.replace('"@@corpus-value@@"', literal)


def _is_literal(value: str) -> bool:
    try:
        tomllib.loads(f"v = {value}")
        return True
    except tomllib.TOMLDecodeError:
        return False


def run_all(cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Runs the cases in :data:`WORKERS` worker processes; returns results by case id."""
    results: dict[str, dict[str, Any]] = {}
    shares = [cases[i::WORKERS] for i in range(WORKERS)]
    with tempfile.TemporaryDirectory(prefix="qoelab-corpus-") as tmp:
        work = [_Worker(share, Path(tmp) / f"w{i}") for i, share in enumerate(shares) if share]
        while any(not w.finished for w in work):
            for w in work:
                w.poll()
            time.sleep(0.01)
        for w in work:
            results.update(w.results)
    return results


class _Worker:
    """One runner process over a share of the cases, restarted after a hang."""

    def __init__(self, cases: list[dict[str, Any]], d: Path):
        self.cases, self.d = cases, d
        d.mkdir()
        self.results: dict[str, dict[str, Any]] = {}
        self.next = 0
        self.finished = False
        self._start()

    def _start(self) -> None:
        rest = self.cases[self.next:]
        if not rest:
            self.finished = True
            return
        self.offset = self.next
        (self.d / "cases.json").write_text(json.dumps(rest))
        self.res_file = self.d / f"results-{self.next}.jsonl"
        self.p = subprocess.Popen([sys.executable, str(HERE / "runner.py"), str(self.d / "cases.json"), str(self.res_file)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.d,
                                  env=dict(os.environ, COLUMNS="200", PYTHONFAULTHANDLER="1"))
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.p.stdout, selectors.EVENT_READ)
        self.current: int | None = None
        self.since = time.monotonic()
        os.set_blocking(self.p.stdout.fileno(), False)
        self.buf = ""

    def poll(self) -> None:
        if self.finished:
            return
        if self.sel.select(timeout=0):
            chunk = self.p.stdout.read() or ""
            self.buf += chunk
            while "\n" in self.buf:
                line, self.buf = self.buf.split("\n", 1)
                if line.startswith("start "):
                    self.current = self.offset + int(line.split()[1])
                    self.since = time.monotonic()
                elif line == "end":
                    self._collect()
                    self.p.wait()
                    self.finished = True
                    return
            if not chunk and self.p.poll() is not None:  # the worker died
                self._collect()
                self._fail_current(f"worker exited with {self.p.returncode}: {self.p.stderr.read()[-2000:]}")
                return
        if self.current is not None and time.monotonic() - self.since > TIMEOUT:
            self.p.kill()
            self.p.wait()
            self._collect()
            self._fail_current(f"hang: no result within {TIMEOUT:.0f} s")

    def _collect(self) -> None:
        if self.res_file.exists():
            for line in self.res_file.read_text().splitlines():
                r = json.loads(line)
                case = self.cases[self.offset + r["index"]]
                self.results[case["id"]] = r
                self.next = max(self.next, self.offset + r["index"] + 1)

    def _fail_current(self, why: str) -> None:
        i = self.current if self.current is not None else self.next
        if i < len(self.cases):
            self.results[self.cases[i]["id"]] = {"code": why, "stdout": "", "stderr": why, "files": []}
        self.next = i + 1
        self.p.stdout.close()
        self.p.stderr.close()
        self._start()


def _enclosing(key: str) -> list[str]:
    """``key`` and the tables holding it, down to two components: ``links[1].queue.target``
    gives itself and ``links[1].queue`` (a message may name a deeper path, ``…queue[0]``). Errors inside a ``kind``-tagged table (queue, app,
    transport, loss, cc) name the table rather than the field (serde buffers tagged content
    without its path): the message still names the table and quotes the value, so a
    ``~key`` fragment accepts either."""
    parts = key.split(".")
    return [key] + [".".join(parts[:n]) for n in range(len(parts) - 1, 1, -1)]


def check(case: dict[str, Any], r: dict[str, Any]) -> None:
    """Asserts the properties every case must have (see the module docstring)."""
    subs = {"dir": r.get("dir", ""), "out": r.get("dir", "") + "/out", "scen": r.get("dir", "") + "/s.toml"}
    err, out = r["stderr"], r["stdout"]
    shown = f"\nexit {r['code']}\nstderr: {err[-1500:]}\nstdout: {out[-500:]}"
    for bad in FORBIDDEN:
        assert bad not in err and bad not in out, f"{bad!r} in the output{shown}"
    assert r["code"] == case["exit"], f"expected exit {case['exit']}{shown}"
    if case["exit"] == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("qoelab: "), f"not one qoelab: line{shown}"
        for frag in case["expect"]:
            if frag.startswith("~"):
                names = [p for p in _enclosing(frag[1:]) if any(f"{p}{c}" in lines[0] for c in ":[.")]
                assert names, f"neither {frag[1:]!r} nor a table holding it is named{shown}"
                continue
            frag = _subst(frag, subs)
            assert frag in lines[0], f"{frag!r} not in the message{shown}"
    for frag in case["forbid"]:
        assert _subst(frag, subs) not in err + out, f"{frag!r} echoed{shown}"
    for name in case["absent"]:
        assert name not in r["files"], f"{name} was created{shown}"
    for name in r.get("changed", []):
        raise AssertionError(f"{name} was changed, replaced or removed (it must be kept as it was){shown}")


CASE_FILES = [HERE / "cases.toml", HERE / "core_cases.toml", HERE / "features_cases.toml"]
CASES = [c for f in CASE_FILES for c in expand(f)]


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    return run_all(CASES)


def test_the_corpus_is_big_enough():
    """The issue asks for at least 300 cases."""
    assert len(expand(HERE / "cases.toml")) >= 300


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case: dict[str, Any], results: dict[str, dict[str, Any]]):
    assert case["id"] in results, "the case did not run"
    check(case, results[case["id"]])
