"""Synthetic report folders for the HTML index tests: valid ``report.json`` files written with
:func:`qoelab.experiment.report.write_report`, with real PNG figures drawn by matplotlib and an
HTML injection attempt in every kind of string a report carries."""

from __future__ import annotations

from pathlib import Path

INJECT = "<script>window.__pwned = 1</script><img src=x onerror=alert(1)>"


def png(path: Path, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 2.5), dpi=60)
    ax.plot([1, 2, 3, 4], [seed, seed + 1, seed * 2, 1])
    ax.set_title(f"figure {seed}")
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)


def finding(key: str, claim: str, label: str, verdict: str, estimate: dict | None, **kw) -> dict:
    """A finding as report.json holds it (format 2): quick when its n is below 10."""
    n = estimate["n"] if estimate else 0
    return {"key": key, "claim": claim, "label": label, "verdict": verdict, "estimate": estimate, "rule": "> 0",
            "note": "why " + claim, "n": n, "quick": verdict != "untestable" and n < 10, "premises": [],
            "sensitivity": {"text": "not run", "robust": None, "under": {}}, "statistic": "", **kw}


#: Columns of the wide table every synthetic report carries (what the HTML must scroll in its box).
WIDE = 16


def report(paper: str, *, holds: bool, n_rows: int) -> dict:
    rows = [{"scheduler": f"S{i}", "n": i + 1,
             "share": {"mean": 9.1 + i, "lo": 9.0 + i, "hi": 9.2 + i, "n": 5},
             "paper_share": 9.3 + i} for i in range(n_rows)]
    rows[0]["scheduler"] = INJECT  # a string cell
    wide = {"id": f"{paper}-wide", "title": "A wide table of long numbers", "source": "ours",
            "columns": [{"key": f"c{j}", "title": f"a rather long column title number {j}", "unit": "Mbit/s",
                         "side": "ours"} for j in range(WIDE)],
            "rows": [{f"c{j}": {"mean": 3.05e29 * (j + 1), "lo": 3.0e29, "hi": 3.1e29 * (j + 1), "n": 2}
                      for j in range(WIDE)},
                     {f"c{j}": 123456789.123456 + j for j in range(WIDE)}]}
    return {
        "paper": paper, "mode": "quick", "title": f"{paper} reproduction " + INJECT,
        "summary": "We ran **two** schedulers. " + INJECT,
        "setup": "5 repetitions, seeds 1-5",
        "tables": [{"id": f"{paper}-t1", "title": "Table I " + INJECT, "source": "paper Table I",
                    "columns": [{"key": "scheduler", "title": "scheduler"}, {"key": "n", "title": "n"},
                                {"key": "share", "title": "data share", "unit": "Mbit/s", "side": "ours"},
                                {"key": "paper_share", "title": "data share", "unit": "Mbit/s", "side": "paper"}],
                    "rows": rows, "csv": "t1.csv", "note": "note *under* the table\n\n# a heading in a note"},
                   wide],
        "figures": [{"id": f"{paper}-f1", "title": "Fig. 1 " + INJECT, "path": "f1.png", "source": "paper Fig. 1"},
                    {"id": f"{paper}-f2", "title": "Fig. 2", "path": "f2.png"}],
        "findings": [
            finding("a", "claim A " + INJECT, "substantive", "holds", {"mean": 0.12, "lo": 0.08, "hi": 0.16, "n": 5},
                    statistic="paired difference", source="Sec. V", unit="fraction"),
            finding("b", "claim B", "substantive", "holds" if holds else "inconclusive",
                    {"mean": -0.01, "lo": -0.03, "hi": 0.01, "n": 5}, statistic="difference"),
            finding("c", "claim C", "by construction", "untestable", None),
            finding("d", "claim D", "substantive", "holds", {"mean": 3.05e29, "lo": 3.0e29, "hi": 3.1e29, "n": 12},
                    sensitivity={"text": "robust", "robust": True, "under": {"coupled=olia": "holds"}} if holds else
                    {"text": "depends on coupled (default: holds; olia: does not hold)", "robust": False,
                     "under": {"coupled=olia": "does not hold"}}),
        ],
        "choices": [{"name": "coupled", "default": "lia", "alternatives": ["olia"], "why": "why " + INJECT,
                     "unavailable": {"balia": "not implemented yet (issue 37)"}}],
        "reading": "## Reading\n\nSQF keeps loss at *0.12* [a link](https://example.org).\n\n" + INJECT
                   + "\n\n[bad](javascript:alert(1))\n\n# A top-level heading in the reading\n\n"
                   + "| a | b |\n|---|---|\n| " + " ".join(["wide"] * 80) + " | 2 |",
        "cost": {"runs": 120, "sim_wall_s": 812.4, "cpu_s": 1600.0},
        "provenance": {"qoelab": "0.1.0", "git": "5423afe", "command": f"qoelab reproduce {paper} --quick", "seeds": [1, 2]},
    }


def make_folder(folder: Path, paper: str, *, holds: bool = True, n_rows: int = 3, seed: int = 1) -> Path:
    from qoelab.experiment.report import write_report

    folder.mkdir(parents=True, exist_ok=True)
    png(folder / "f1.png", seed)
    png(folder / "f2.png", seed + 1)
    (folder / "t1.csv").write_text("scheduler,n\n")
    write_report(folder, report(paper, holds=holds, n_rows=n_rows))
    return folder


def make_all(out: Path) -> Path:
    """``out/tfd`` (partly: one substantive finding within noise, 4 rows), ``out/sqf``
    (reproduced, 3 rows), ``out/wimax`` (reproduced, 2 rows), ``out/mptcp``, ``out/interactive``
    and ``out/qos`` (reproduced, 2 rows each), as ``reproduce all -o out`` would leave them."""
    make_folder(out / "tfd", "tfd", holds=False, n_rows=4, seed=1)
    make_folder(out / "sqf", "sqf", holds=True, n_rows=3, seed=3)
    make_folder(out / "wimax", "wimax", holds=True, n_rows=2, seed=5)
    make_folder(out / "mptcp", "mptcp", holds=True, n_rows=2, seed=7)
    make_folder(out / "interactive", "interactive", holds=True, n_rows=2, seed=9)
    make_folder(out / "qos", "qos", holds=True, n_rows=2, seed=11)
    return out
