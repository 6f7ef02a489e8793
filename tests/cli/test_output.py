"""Output folders (issue 15, items 4 and 7): checked before the run, replaced whole, named
after the scenario, and never escaped by names taken from the scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

SCEN = """
[sim]
duration = "500ms"
[[links]]
a = "A"
b = "B"
rate = "10Mbps"
delay = "5ms"
[[flows]]
name = "p"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "cbr", rate = "1Mbps", payload = "1000B" }
"""


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


def test_a_reused_folder_keeps_no_file_of_the_earlier_run(tmp_path: Path):
    scen = tmp_path / "s.toml"
    scen.write_text(SCEN + '[output]\npcap = ["A->B"]\n')
    out = tmp_path / "r"
    assert run_cli("run", str(scen), "-o", str(out), "--no-plot")[0] == 0
    assert (out / "A_to_B.pcap").exists()
    scen.write_text(SCEN)
    code, _, err = run_cli("run", str(scen), "-o", str(out), "--no-plot")
    assert code == 0, err
    assert not (out / "A_to_B.pcap").exists(), "the earlier run's capture is gone"
    assert (out / "flows.parquet").exists() and (out / "summary.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [], "no temporary folder left"


@pytest.mark.parametrize("target, reason", [
    ("{file}", "exists and is not a directory"),
    ("/dev/null", "exists and is not a directory"),
    ("{file}/sub", "Not a directory"),
    ("/proc/qoelab-out", "cannot write in /proc"),
    ("{foreign}", "holds no earlier qoelab results"),
    ("", "empty folder name"),
])
def test_an_unusable_output_folder_fails_before_the_run(tmp_path: Path, target: str, reason: str):
    scen = tmp_path / "s.toml"
    # Long enough (simulated 10^4 s) that a run before the check would be noticed as slow.
    scen.write_text(SCEN.replace('duration = "500ms"', 'duration = "10000s"'))
    f = tmp_path / "file"
    f.write_text("keep me")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    target = target.format(file=f, foreign=foreign)
    code, out, err = run_cli("run", str(scen), "-o", target)
    assert code == 2, (out, err)
    line = one_line(err)
    assert line.startswith(f"qoelab: -o/--output {target}".rstrip()) and reason in line, line
    assert "simulated" not in out
    assert f.read_text() == "keep me" and (foreign / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_default_output_folder_is_named_after_the_scenario(tmp_path: Path):
    d = tmp_path / "exp"
    d.mkdir()
    for name in ("a", "b"):
        (d / f"{name}.toml").write_text(SCEN)
        code, out, err = run_cli("run", str(d / f"{name}.toml"), "--no-plot", cwd=tmp_path)
        assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["a", "b"]
    weird = d / "...toml"  # stem ".." must not climb out of results/
    weird.write_text(SCEN)
    code, out, err = run_cli("run", str(weird), "--no-plot", cwd=tmp_path)
    assert code == 0, err
    names = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert names[1:] == ["a", "b"] and names[0].startswith("_.+"), names


def test_default_output_folders_of_distinct_names_are_distinct(tmp_path: Path):
    """Names that differ only in non-ASCII letters (or in characters a file name cannot keep)
    once shared one folder, and the second run replaced the first (issue 42)."""
    from qoelab.cli import default_output
    from qoelab.scenario import Scenario

    names = ["café", "cafè", "caf_", "caf ", "caf?", "ünï", "üni", "e\u0301", "\u00e9", "a_b", "a b"]
    folders = [default_output(Scenario.from_dict({}, source=str(tmp_path / f"{n}.toml"))) for n in names]
    assert len(set(folders)) == len(names), folders
    assert default_output(Scenario.from_dict({}, source=str(tmp_path / "a_b.toml"))) == Path("results/a_b")


def test_a_failed_write_leaves_the_earlier_results(tmp_path: Path, monkeypatch):
    from qoelab.results import Results
    from qoelab.scenario import Scenario

    sc = Scenario.load(_write(tmp_path / "s.toml", SCEN))
    out = tmp_path / "r"
    sc.run().write(out, plot=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(self, d, *, plot=True):
        (d / "flows.parquet").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Results, "write_into", broken)
    with pytest.raises(OSError):
        sc.run().write(out, plot=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_node_name_cannot_place_a_capture_outside_the_output_folder(tmp_path: Path):
    """Before: a node named ../../x wrote (and truncated) x_to_B.pcap two folders up."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    scen = work / "s.toml"
    scen.write_text(SCEN.replace('"A"', '"../../x"') + '[output]\npcap = ["../../x->B"]\n')
    victim = tmp_path / "x_to_B.pcap"
    victim.write_text("precious")
    code, _, err = run_cli("run", str(scen), "-o", str(work / "out"))
    assert code == 2
    line = one_line(err)
    assert f"{scen}: links[0].a: node name" in line and "may not hold slashes" in line, line
    assert victim.read_text() == "precious"
    assert not (work / "out").exists()


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p
