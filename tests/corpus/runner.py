"""Runs regression-corpus cases in-process, in a worker that the test can kill on a hang.

``python runner.py CASES.json RESULTS.jsonl`` runs each case of the JSON list with
:func:`qoelab.cli.main` in this process (fast: no interpreter start per case), with file
descriptors 1 and 2 redirected to files so that anything written at the C or Rust level (a
panic message) is captured too. Before each case it prints ``start <index>`` on its original
stdout and after it appends the result as one JSON line to RESULTS, so the parent knows which
case hung if the worker stops answering.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path


def prepare(case: dict, d: Path, listener: socket.socket | None = None) -> dict[str, str]:
    """Writes the case's files into ``d``; returns the placeholders for its arguments."""
    from qoelab.paths import root

    subs = {"dir": str(d), "out": str(d / "out"), "scen": str(d / "s.toml"), "data": str(root() / "data")}
    if listener is not None:
        subs["port"] = str(listener.getsockname()[1])
    if case.get("scenario") is not None:
        text = case["scenario"].replace("{data}", subs["data"])
        (d / "s.toml").write_bytes(text.encode("utf-8", "surrogateescape"))
    for name, content in (case.get("files") or {}).items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict) and "hex" in content:
            p.write_bytes(bytes.fromhex(content["hex"]))
        elif isinstance(content, dict) and "repeat" in content:  # big files without big case data
            with open(p, "w") as fh:
                fh.write(content.get("prefix", ""))
                for _ in range(content["times"]):
                    fh.write(content["repeat"])
        else:
            text = content if isinstance(content, str) else json.dumps(content)
            for k, v in subs.items():
                text = text.replace("{" + k + "}", v)
            p.write_text(text)
    for name, content in (case.get("keep") or {}).items():  # files that must not change
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(content)
    for name in case.get("dirs") or []:
        (d / name).mkdir(parents=True, exist_ok=True)
    for name, target in (case.get("symlinks") or {}).items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        for k, v in subs.items():
            target = target.replace("{" + k + "}", v)
        os.symlink(target, d / name)
    for name in case.get("fifos") or []:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(d / name)
    for name, mode in (case.get("chmod") or {}).items():
        os.chmod(d / name, int(mode, 8))
    return subs


def run_case(case: dict, base: Path) -> dict:
    from qoelab.cli import main

    d = Path(tempfile.mkdtemp(prefix="case-", dir=base))
    # A port that accepts connections and never speaks (a scheduler that does not answer): the
    # kernel completes the handshake of a listening socket without accept().
    listener = None
    if case.get("listen"):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
    subs = prepare(case, d, listener)
    argv = []
    for a in case["args"]:
        for k, v in subs.items():
            a = a.replace("{" + k + "}", v)
        argv.append(a)
    outs = [tempfile.TemporaryFile(dir=base) for _ in range(2)]
    saved = [os.dup(1), os.dup(2)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(outs[0].fileno(), 1)
    os.dup2(outs[1].fileno(), 2)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        code = main(argv)
    except BaseException as e:  # main must never raise: record it as a failure of the case
        code = f"raised {type(e).__name__}: {e}"
    finally:
        os.chdir(cwd)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
    texts = []
    for f in outs:
        f.seek(0)
        texts.append(f.read().decode("utf-8", "replace"))
        f.close()
    for name in case.get("chmod") or {}:
        os.chmod(d / name, 0o755)
    if listener is not None:
        listener.close()
    changed = sorted(name for name, content in (case.get("keep") or {}).items()
                     if os.path.islink(d / name) or not (d / name).is_file() or (d / name).read_text() != content)
    listing = sorted(str(p.relative_to(d)) for p in d.rglob("*"))
    shutil.rmtree(d, ignore_errors=True)
    return {"code": code, "stdout": texts[0], "stderr": texts[1], "dir": str(d), "files": listing, "changed": changed}


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    results = Path(sys.argv[2])
    base = Path(tempfile.mkdtemp(prefix="qoelab-corpus-"))
    report = os.fdopen(os.dup(1), "w", buffering=1)
    try:
        for i, case in enumerate(cases):
            report.write(f"start {i}\n")
            r = run_case(case, base)
            with open(results, "a") as fh:
                fh.write(json.dumps({"index": i, **r}) + "\n")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    report.write("end\n")


if __name__ == "__main__":
    main()
