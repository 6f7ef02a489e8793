"""Checks that this machine computes the same bytes as the one that packed a carried run's
parts (scripts/carried_run.sh): re-runs the cheapest and a median-cost run of each part with the pinned code
(the interpreter running this script) and compares every table the run kept with the SHA-256
its done marker records. Exit 1 on any difference. Usage: carried_check.py WORK PART..."""

import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath


def packed_runs(part: Path) -> list[str]:
    """The run folders a part holds (the pinned code may predate ``qoelab.runpack``)."""
    with tarfile.open(part) as tar:
        return [str(PurePosixPath(m.name).parent) for m in tar if PurePosixPath(m.name).name == "done"]


def main(work: Path, parts: list[Path]) -> int:
    bad = 0
    for part in parts:
        runs = []
        for rel in sorted(packed_runs(part)):
            t = json.loads((work / rel / "timing.json").read_text())
            if "reused_from" not in t:
                runs.append((t["cpu_s"], rel))
        runs.sort()
        for _, rel in dict.fromkeys(r for r in (runs[:1] + runs[len(runs) // 2:][:1])):
            d = work / rel
            marker = json.loads((d / "done").read_text())["files"]
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run([sys.executable, "-m", "qoelab.cli", "run", str(d / "scenario.toml"), "-o", f"{tmp}/r"],
                               check=True, stdout=subprocess.DEVNULL)
                for name in sorted(n for n in marker if n.endswith(".parquet")):
                    got = hashlib.sha256((Path(tmp) / "r" / name).read_bytes()).hexdigest()
                    same = got == marker[name]["sha256"]
                    bad += not same
                    print(f"{part.name}: {rel}/{name}: {'same bytes' if same else 'DIFFERS'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]))
