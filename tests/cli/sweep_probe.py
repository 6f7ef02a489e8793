"""Counting what sweeps really execute, from outside the sweep code (issue 17).

:func:`install` writes a ``sitecustomize.py`` that every Python process started with its
folder on ``PYTHONPATH`` (a ``qoelab sweep``, a ``dask worker``, a LocalCluster's workers) loads
at start-up. It wraps two functions the sweep code does not control the counting of:

- ``Scenario.run``: a ``start`` line before a simulation and an ``end`` line after it returns,
  with the seed, the first link's rate and the pid;
- ``outdir.replace``: a ``commit`` line each time a finished folder is renamed into place,
  with the target.

Lines go to ``$QOELAB_PROBE_LOG`` with ``O_APPEND`` (one ``write`` per line, so lines of
concurrent processes do not interleave). :func:`read` parses them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SITE = r'''
import json, os

def _log(**kw):
    kw["pid"] = os.getpid()
    fd = os.open(os.environ["QOELAB_PROBE_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(kw, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)

if os.environ.get("QOELAB_PROBE_LOG"):
    from qoelab import outdir, scenario

    _run, _replace = scenario.Scenario.run, outdir.replace

    def _key(sc):
        return {"seed": sc.data.get("sim", {}).get("seed"), "rate": sc.data["links"][0]["rate"]}

    def run(self, *a, **kw):
        _log(what="start", **_key(self))
        res = _run(self, *a, **kw)
        _log(what="end", **_key(self))
        return res

    def replace(tmp, target):
        _replace(tmp, target)
        _log(what="commit", target=str(target))

    scenario.Scenario.run, outdir.replace = run, replace
'''


def install(tmp: Path) -> dict[str, str]:
    """Writes the hook under ``tmp``; returns an environment for subprocesses that loads it."""
    site = tmp / "probe-site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITE)
    log = tmp / "probe.log"
    log.touch()
    path = os.pathsep.join([str(site), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])
    return dict(os.environ, PYTHONPATH=path, QOELAB_PROBE_LOG=str(log), COLUMNS="200")


def read(tmp: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp / "probe.log").read_text().splitlines() if line.strip()]


def commits(lines: list[dict], runs: Path) -> dict[str, int]:
    """How many times each run folder under ``runs`` was committed."""
    out: dict[str, int] = {}
    for d in lines:
        if d["what"] == "commit" and Path(d["target"]).parent == runs:
            out[Path(d["target"]).name] = out.get(Path(d["target"]).name, 0) + 1
    return out


def python() -> str:
    return sys.executable


#: A one-link scenario of saturating UDP for the sweep tests: about 0.25 s of wall time per
#: simulated second on one core (900 Mbit/s of 1000-B datagrams). Tests change the duration
#: with ``.replace('"1s"', ...)``.
UDP_SCENARIO = """
[sim]
duration = "1s"
seed = 1
[[links]]
a = "A"
b = "B"
rate = "1Gbps"
delay = "5ms"
queue = { kind = "fifo", limit = "100p" }
[[flows]]
name = "p"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "poisson", rate = "900Mbps", payload = "1000B" }
"""
