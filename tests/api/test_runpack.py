"""``qoelab runs pack`` / ``unpack``: finished runs carried to another machine, the bulky time
series optionally left out, resumed there as finished; hostile or damaged archives refused
before anything is written."""

from __future__ import annotations

import copy
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from qoelab.cli import main
from qoelab.errors import QoelabError
from qoelab.runpack import INDEX, pack, packed_runs, unpack
from qoelab.scenario import Scenario
from qoelab.sweep import damage, is_done, run_sweep
from tests.conftest import one_link_udp

SCEN = one_link_udp("runpack")
AXES = [("links[0].rate", ["5Mbps", "10Mbps"])]


def _sweep(out: Path, reps: int = 2) -> dict:
    return run_sweep(Scenario(copy.deepcopy(SCEN), "grid.toml"), AXES, reps, out, 1)


def _run_dirs(root: Path) -> list[str]:
    return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("done"))


def test_packed_runs_resume_as_finished_without_the_dropped_files(tmp_path: Path):
    src = tmp_path / "here" / "sw"
    _sweep(src)
    names = _run_dirs(tmp_path / "here")
    assert len(names) == 4
    c = pack(tmp_path / "here", tmp_path / "p.tar.xz", drop=["queues.parquet"])
    assert c == {"runs": 4, "skipped": 0, "damaged": 0, "sweeps": 1, "dropped": {"queues.parquet": 4}}
    assert packed_runs(tmp_path / "p.tar.xz") == set(names)

    there = tmp_path / "there"
    assert unpack(tmp_path / "p.tar.xz", there) == {"runs": 4, "present": 0, "sweeps": 1}
    assert _run_dirs(there) == names
    for rel in names:
        d, orig = there / rel, tmp_path / "here" / rel
        assert damage(d) is None and not (d / "queues.parquet").exists()
        assert (d / "flows.parquet").read_bytes() == (orig / "flows.parquet").read_bytes()
        marker, full = json.loads((d / "done").read_text()), json.loads((orig / "done").read_text())
        # What was left out stays on record: its size and SHA-256 as the run wrote it.
        assert marker["dropped"] == {"queues.parquet": full["files"]["queues.parquet"]}
        assert {**marker["files"], **marker["dropped"]} == full["files"]
    assert (there / "sw" / "sweep.json").read_bytes() == (src / "sweep.json").read_bytes()
    # The sweep resumed there takes them as finished and runs only what is new.
    again = _sweep(there / "sw", reps=3)
    assert (again["skipped"], again["ran"]) == (4, 2)


def test_parts_hold_only_the_runs_finished_since_the_last(tmp_path: Path):
    root = tmp_path / "r"
    _sweep(root / "sw", reps=1)
    pack(root, tmp_path / "part-01.tar.xz")
    _sweep(root / "sw", reps=2)
    c = pack(root, tmp_path / "part-02.tar.xz", after=[tmp_path / "part-01.tar.xz"])
    assert (c["runs"], c["skipped"]) == (2, 2)
    assert packed_runs(tmp_path / "part-01.tar.xz").isdisjoint(packed_runs(tmp_path / "part-02.tar.xz"))
    there = tmp_path / "there"
    unpack(tmp_path / "part-01.tar.xz", there)
    assert unpack(tmp_path / "part-02.tar.xz", there)["runs"] == 2
    # Unpacking again keeps what is there.
    assert unpack(tmp_path / "part-01.tar.xz", there) == {"runs": 0, "present": 2, "sweeps": 0}
    assert _run_dirs(there) == _run_dirs(root)


def test_a_damaged_run_is_left_out_and_a_planted_symlink_is_not_followed(tmp_path: Path):
    root = tmp_path / "r"
    _sweep(root / "sw", reps=1)
    first = sorted((root / "sw" / "runs").iterdir())[0]
    with open(first / "flows.parquet", "ab") as fh:
        fh.write(b"x")
    os.symlink(tmp_path, root / "sw" / "runs" / "cell=planted")
    c = pack(root, tmp_path / "p.tar.xz")
    assert (c["runs"], c["damaged"]) == (1, 1)
    assert all("planted" not in r for r in packed_runs(tmp_path / "p.tar.xz"))


def _archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], index: bool = True) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        if index:
            data = b'{"format": 1}\n'
            info = tarfile.TarInfo(INDEX)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def _kind(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize("members, why", [
    ([(_file("../evil/done"), b"{}")], "not a plain relative path"),
    ([(_file("/tmp/evil/done"), b"{}")], "not a plain relative path"),
    ([(_file("a/.hidden/done"), b"{}")], "not a plain relative path"),
    ([(_kind("a/flows.parquet", tarfile.SYMTYPE, "/etc/passwd"), None)], "neither a regular file nor a hard link"),
    ([(_kind("a/flows.parquet", tarfile.LNKTYPE, "b/x"), None)], "no earlier member"),
    ([(_kind("a/dev", tarfile.CHRTYPE), None)], "neither a regular file nor a hard link"),
    ([(_file("a/flows.parquet"), b"x"), (_file("a/flows.parquet"), b"y")], "appears twice"),
    ([(_file("a/done"), b"{}"), (_file("a/flows.parquet"), b"x")], "its done marker is not its last member"),
])
def test_hostile_archives_are_refused_before_anything_is_written(tmp_path: Path, members, why):
    a = _archive(tmp_path / "bad.tar.xz", members)
    with pytest.raises(QoelabError, match=why) as e:
        unpack(a, tmp_path / "out")
    assert str(a) in str(e.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil").exists()


def test_an_archive_without_its_index_or_not_an_archive_at_all_is_refused(tmp_path: Path):
    with pytest.raises(QoelabError, match="not a qoelab runs archive"):
        unpack(_archive(tmp_path / "a.tar.xz", [(_file("a/done"), b"{}")], index=False), tmp_path / "out")
    (tmp_path / "junk.tar.xz").write_bytes(b"\xfd7zXZ\x00 not really")
    with pytest.raises(QoelabError, match="junk.tar.xz"):
        unpack(tmp_path / "junk.tar.xz", tmp_path / "out")
    with pytest.raises(QoelabError, match="missing.tar.xz"):
        unpack(tmp_path / "missing.tar.xz", tmp_path / "out")


def test_a_run_whose_files_differ_from_its_marker_is_not_restored(tmp_path: Path):
    root = tmp_path / "r"
    _sweep(root / "sw", reps=1)
    pack(root, tmp_path / "p.tar.xz")
    # Rewrite the archive with one run's flows table changed (its marker unchanged).
    members = []
    with tarfile.open(tmp_path / "p.tar.xz") as tar:
        for m in tar:
            data = tar.extractfile(m).read() if m.isfile() else None
            if m.name.endswith("flows.parquet") and not members_changed(members):
                data = data[:-1] + bytes([data[-1] ^ 1])
            members.append((m, data))
    bad = tmp_path / "bad.tar.xz"
    with tarfile.open(bad, "w:xz") as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
    with pytest.raises(QoelabError, match="does not match its done marker"):
        unpack(bad, tmp_path / "out")
    assert not any(is_done(p.parent) for p in (tmp_path / "out").rglob("done"))
    assert not list((tmp_path / "out").rglob(".*partial*"))


def members_changed(members: list) -> bool:
    return any(m.name.endswith("flows.parquet") for m, _ in members)


def test_a_folder_holding_another_sweep_is_refused(tmp_path: Path):
    root = tmp_path / "r"
    _sweep(root / "sw", reps=1)
    pack(root, tmp_path / "p.tar.xz")
    there = tmp_path / "there" / "sw"
    there.mkdir(parents=True)
    (there / "sweep.json").write_text('{"scenario_sha256": "other"}\n')
    with pytest.raises(QoelabError, match="records another sweep"):
        unpack(tmp_path / "p.tar.xz", tmp_path / "there")


def test_pack_refuses_to_drop_what_every_run_keeps(tmp_path: Path):
    for name in ("done", "timing.json", "a/b", ""):
        with pytest.raises(QoelabError, match="--drop"):
            pack(tmp_path, tmp_path / "p.tar.xz", drop=[name])


def test_cli(tmp_path: Path, capsys):
    root = tmp_path / "r"
    _sweep(root / "sw", reps=1)
    assert main(["runs", "pack", str(root), "-o", str(tmp_path / "p.tar.xz"), "--drop", "queues.parquet"]) == 0
    said = capsys.readouterr().out
    assert "2 finished runs and 1 sweep records packed" in said and "left out of every run: queues.parquet" in said
    assert "held by no packed run" not in said
    # A name no run holds is said to be so, not claimed as left out.
    assert main(["runs", "pack", str(root), "-o", str(tmp_path / "n.tar.xz"), "--drop", "nosuch.parquet"]) == 0
    said = capsys.readouterr().out
    assert "held by no packed run (nothing left out): nosuch.parquet" in said and "left out of every run" not in said
    assert main(["runs", "unpack", str(tmp_path / "p.tar.xz"), "-o", str(tmp_path / "u")]) == 0
    assert "2 runs unpacked" in capsys.readouterr().out
    assert main(["runs", "unpack", str(tmp_path / "nope.tar.xz"), "-o", str(tmp_path / "u")]) == 2
    err = capsys.readouterr().err
    assert "nope.tar.xz" in err and "Traceback" not in err
    assert main(["runs", "pack", str(tmp_path / "nope"), "-o", str(tmp_path / "q.tar.xz")]) == 2
    assert "not a folder of runs" in capsys.readouterr().err


def test_sizes_are_bounded_from_the_headers(tmp_path: Path, monkeypatch):
    import qoelab.runpack as rp

    a = _archive(tmp_path / "big.tar.xz", [(_file("a/flows.parquet"), b"x" * 100), (_file("a/done"), b"{}")])
    monkeypatch.setattr(rp, "MAX_MEMBER_BYTES", 50)
    with pytest.raises(QoelabError, match="more than the 50 allowed"):
        unpack(a, tmp_path / "out")
    monkeypatch.setattr(rp, "MAX_MEMBER_BYTES", 1000)
    monkeypatch.setattr(rp, "MAX_TOTAL_BYTES", 60)
    with pytest.raises(QoelabError, match="more than the 60 bytes allowed"):
        unpack(a, tmp_path / "out")
    assert not (tmp_path / "out").exists()
