"""No file outside the output folder is written or read through a symbolic link planted where
qoelab writes (issue 42): `run`, `sweep`, `plot`, `report html` and `video calibrate`. Each
test plants a link to a "victim" outside the folder and checks that the victim is untouched
(and, for reads, that none of its bytes reach an output), and that a link where qoelab would
write is refused with one line and exit code 2."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from qoelab.cli import main

SCEN = """
name = "planted"
[sim]
duration = "300ms"
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

SECRET = "secret-victim-bytes-42"


def _scen(tmp_path: Path) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(SCEN)
    return p


def _victim(tmp_path: Path, name: str = "victim.txt", data: bytes = SECRET.encode()) -> Path:
    v = tmp_path / "outside" / name
    v.parent.mkdir(exist_ok=True)
    v.write_bytes(data)
    return v


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("qoelab: ") and "Traceback" not in err, err
    return lines[0]


def _listing(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file() and not p.is_symlink()}


# --- run -----------------------------------------------------------------------------------------

def test_run_refuses_an_output_folder_that_is_a_symlink(tmp_path, capsys):
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.symlink_to(elsewhere)
    assert main(["run", str(_scen(tmp_path)), "-o", str(out), "--no-plot"]) == 2
    assert "is a symbolic link" in _one_line(capsys)
    assert list(elsewhere.iterdir()) == [] and out.is_symlink()


def test_run_refuses_a_dangling_symlink_before_simulating(tmp_path, capsys):
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    assert main(["run", str(_scen(tmp_path)), "-o", str(out), "--no-plot"]) == 2
    captured = capsys.readouterr()
    assert "is a symbolic link" in captured.err and "simulated" not in captured.out
    assert not (tmp_path / "nowhere").exists()


def test_run_replaces_a_folder_holding_planted_links_without_following_them(tmp_path, capsys):
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}")  # an earlier run's folder: replaced as a whole
    for name in ("run.png", "flows.parquet", ".run.png.tmp.png"):
        (out / name).symlink_to(victim)
    assert main(["run", str(_scen(tmp_path)), "-o", str(out), "--plot"]) == 0
    assert victim.read_bytes() == SECRET.encode()
    assert not any(p.is_symlink() for p in out.iterdir())
    assert (out / "run.png").read_bytes().startswith(b"\x89PNG")


# --- plot ----------------------------------------------------------------------------------------

@pytest.fixture
def run_folder(tmp_path):
    out = tmp_path / "run"
    assert main(["run", str(_scen(tmp_path)), "-o", str(out), "--no-plot"]) == 0
    return out


def test_plot_refuses_run_png_that_is_a_symlink(run_folder, tmp_path, capsys):
    victim = _victim(tmp_path)
    (run_folder / "run.png").symlink_to(victim)
    capsys.readouterr()
    assert main(["plot", str(run_folder)]) == 2
    assert f"{run_folder}/run.png: is a symbolic link" in _one_line(capsys)
    assert victim.read_bytes() == SECRET.encode()


def test_plot_never_writes_through_a_planted_temporary_name(run_folder, tmp_path):
    victim = _victim(tmp_path)
    for name in (".run.png.tmp.png", ".run.png.tmp", ".run.png.partial"):
        (run_folder / name).symlink_to(victim)
    assert main(["plot", str(run_folder)]) == 0
    assert victim.read_bytes() == SECRET.encode()
    assert (run_folder / "run.png").read_bytes().startswith(b"\x89PNG")


def test_plot_reads_no_table_through_a_symlink(run_folder, tmp_path, capsys):
    # A valid table outside the folder: refused because of the link, not because of its bytes.
    outside = tmp_path / "outside"
    outside.mkdir()
    os.replace(run_folder / "queues.parquet", outside / "queues.parquet")
    (run_folder / "queues.parquet").symlink_to(outside / "queues.parquet")
    capsys.readouterr()
    assert main(["plot", str(run_folder)]) == 2
    assert "queues.parquet: cannot read table: a symbolic link, not followed" in _one_line(capsys)
    assert not (run_folder / "run.png").exists()


# --- sweep ---------------------------------------------------------------------------------------

def test_sweep_refuses_runs_claims_and_its_files_as_symlinks(tmp_path, capsys):
    scen = _scen(tmp_path)
    victim = _victim(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name, target in (("runs", elsewhere), (".claims", elsewhere), ("sweep.json", victim),
                         ("flows.parquet", victim), ("summary.parquet", victim)):
        out = tmp_path / f"out-{name.strip('.')}"
        out.mkdir()
        (out / name).symlink_to(target)
        capsys.readouterr()
        assert main(["sweep", str(scen), "--grid", "sim.seed=1,2", "-o", str(out)]) == 2, name
        assert f"{out}/{name}: is a symbolic link" in _one_line(capsys)
        assert list(elsewhere.iterdir()) == [] and victim.read_bytes() == SECRET.encode()
    out = tmp_path / "out-link"
    out.symlink_to(elsewhere)
    assert main(["sweep", str(scen), "-o", str(out)]) == 2
    assert "is a symbolic link" in _one_line(capsys)
    assert list(elsewhere.iterdir()) == []


def test_sweep_redoes_a_run_whose_files_are_planted_links_without_reading_them(tmp_path, capsys):
    scen = _scen(tmp_path)
    out = tmp_path / "out"
    assert main(["sweep", str(scen), "--grid", "sim.seed=1,2", "-o", str(out)]) == 0
    victim = _victim(tmp_path, "victim.parquet", (out / "runs").iterdir().__next__().joinpath("flows.parquet").read_bytes())
    run = sorted((out / "runs").iterdir())[0]
    (run / "flows.parquet").unlink()
    (run / "flows.parquet").symlink_to(victim)  # same bytes: only the link makes it damaged
    before = victim.stat().st_atime_ns, victim.read_bytes()
    capsys.readouterr()
    assert main(["sweep", str(scen), "--grid", "sim.seed=1,2", "-o", str(out)]) == 0
    assert "flows.parquet is a symbolic link; running it again" in capsys.readouterr().err
    assert not (run / "flows.parquet").is_symlink() and victim.read_bytes() == before[1]
    # A planted link in place of a whole run folder is refused, not followed or removed.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    import shutil

    shutil.rmtree(run)
    run.symlink_to(elsewhere)
    assert main(["sweep", str(scen), "--grid", "sim.seed=1,2", "-o", str(out)]) == 2
    assert f"{run}: is a symbolic link" in _one_line(capsys)
    assert list(elsewhere.iterdir()) == [] and run.is_symlink()


# --- report html ---------------------------------------------------------------------------------

def _png(path: Path, text: str) -> bytes:
    """A real PNG holding `text` in a tEXt chunk, so a leak of its bytes would be detectable."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x00\x00\x00\x00"
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"tEXt", b"Comment\x00" + text.encode()) + chunk(b"IDAT", zlib.compress(raw[:4]))
            + chunk(b"IEND", b""))
    path.write_bytes(data)
    return data


@pytest.fixture
def report_dir(tmp_path):
    from tests.report.reports import make_folder

    rep = tmp_path / "rep"
    make_folder(rep / "sqf", "sqf")
    return rep


def test_report_html_embeds_no_figure_through_a_symlink(report_dir, tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = _png(outside / "secret.png", SECRET)
    (report_dir / "sqf" / "f1.png").unlink()
    (report_dir / "sqf" / "f1.png").symlink_to(outside / "secret.png")
    main(["report", "html", str(report_dir)])
    page = (report_dir / "index.html").read_text()
    assert base64.b64encode(secret).decode() not in page and SECRET not in page
    assert "figure f1.png: cannot read figure: a symbolic link, not followed, not shown" in page
    assert page.count("data:image/png;base64,") == 1  # f2.png, a regular file of the folder


def test_report_html_embeds_only_images_of_bounded_size(report_dir):
    from qoelab.report import html as H

    (report_dir / "sqf" / "f1.png").write_bytes(SECRET.encode() * 10)  # not a PNG
    big = report_dir / "sqf" / "f2.png"
    with open(big, "r+b") as fh:
        fh.truncate(H.MAX_FIGURE_BYTES + 1)
    page = H.render(H.entries_from(report_dir))
    assert SECRET not in page and base64.b64encode(SECRET.encode() * 10).decode() not in page
    assert "figure f1.png: its bytes are not a PNG image, not shown" in page
    assert "figure f2.png: larger than 16 MiB, not shown" in page


def test_report_html_follows_no_paper_folder_or_report_link(report_dir, tmp_path):
    from qoelab.report import html as H

    outside = tmp_path / "outside"
    os.replace(report_dir / "sqf", outside)
    (report_dir / "sqf").symlink_to(outside)
    page = H.render(H.entries_from(report_dir))
    assert "a symbolic link, not followed" in page and "data:image/png" not in page


def test_report_html_refuses_index_links_and_leaves_planted_names_alone(report_dir, tmp_path, capsys):
    victim = _victim(tmp_path)
    (report_dir / ".index.html.tmp").symlink_to(victim)
    main(["report", "html", str(report_dir)])
    assert victim.read_bytes() == SECRET.encode() and not (report_dir / "index.html").is_symlink()
    os.unlink(report_dir / "index.html")
    (report_dir / "index.html").symlink_to(victim)
    capsys.readouterr()
    assert main(["report", "html", str(report_dir)]) == 2
    assert f"{report_dir}/index.html: is a symbolic link" in _one_line(capsys)
    assert victim.read_bytes() == SECRET.encode()


# --- video calibrate -----------------------------------------------------------------------------

def test_video_calibrate_refuses_a_calibration_file_that_is_a_symlink(tmp_path, capsys):
    d = tmp_path / "v"
    d.mkdir()
    (d / "clip.trace.csv").write_text("frame,type,size_bytes,ts_ms\n0,I,100,0\n1,P,50,40\n")
    (d / "clip.recipe.toml").write_text("x = 1\n")
    (d / "clip.frames.csv").write_text("x\n")
    (d / "clip.264").write_bytes(b"")
    victim = _victim(tmp_path)
    (d / "clip.calibration.toml").symlink_to(victim)
    assert main(["video", "calibrate", str(d / "clip.trace.csv"), str(d / "clip.264")]) == 2
    # Refused before any decoding, and the victim is as it was.
    assert f"{d}/clip.calibration.toml: is a symbolic link" in _one_line(capsys)
    assert victim.read_bytes() == SECRET.encode()


def test_write_calibration_never_writes_through_a_link(tmp_path):
    from qoelab.errors import QoelabError
    from qoelab.video.quality.calibrate import Calibration, write_calibration

    victim = _victim(tmp_path)
    link = tmp_path / "c.calibration.toml"
    link.symlink_to(victim)
    c = Calibration(0.9, 0.9, 1.0, 1.0, 2.0, "0" * 64, 4, [])
    with pytest.raises(QoelabError, match="is a symbolic link"):
        write_calibration(link, c)
    assert victim.read_bytes() == SECRET.encode()
