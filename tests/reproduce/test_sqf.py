"""`qoelab reproduce sqf --quick`: the report is written and the paper's trends that the quick
grid (60 s runs, n = 1, 5, 10, 20) supports are asserted on our measurements.

Trends of BMO11 that our reproduction does *not* show (SQF protecting the video for every
n <= 20, the constant SQF data share) are not asserted; the report explains them. Two that held
with the earlier trace and no longer do are kept as strict xfails at the end."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from qoelab.cli import main
from qoelab.reproduce import sqf


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reproduce-sqf")
    assert main(["reproduce", "sqf", "--quick", "-o", str(out), "-j", "2"]) == 0
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _get(rows, q: str, n: int, key: str) -> float:
    (r,) = [r for r in rows if r["discipline"] == q and int(r["n"]) == n]
    return float(r[key])


def test_report_folder(report: Path):
    for f in ("report.md", "testbed.csv", "testbed_paced_video.csv", "fig8_jitter.csv", "model_check.csv",
              "paper_table1.csv", "fig3_analytic.csv", "fig4_analytic.csv", "fig6_loss.png", "fig7_jitter.png",
              "fig8_jitter.png", "fig3_analytic.png", "fig4_analytic.png"):
        assert (report / f).stat().st_size > 0, f
    md = (report / "report.md").read_text()
    assert "(paper)" in md and "(ours)" in md
    rows = _rows(report / "testbed.csv")
    assert {r["discipline"] for r in rows} == set(sqf.DISCIPLINES)
    assert {int(r["n"]) for r in rows} == set(sqf.plan(True).n_values)


@pytest.mark.parametrize("csv_name", ["testbed.csv", "testbed_paced_video.csv"])
def test_fifo_loss_grows_with_n_and_fq_protects_only_audio(report: Path, csv_name: str):
    rows = _rows(report / csv_name)
    for stream in ("audio", "video"):
        assert _get(rows, "fifo", 20, f"{stream}_loss") > _get(rows, "fifo", 1, f"{stream}_loss") + 0.02
    for n in (1, 5, 10, 20):
        # 64 kbit/s is below the fair share: FQ (and SQF) keep the audio loss-free.
        assert _get(rows, "drr", n, "audio_loss") < 1e-3
        assert _get(rows, "sqf", n, "audio_loss") < 1e-3
    for n in (5, 10, 20):
        # 5 Mbit/s is above the fair share once n > 1: FQ drops video.
        assert _get(rows, "drr", n, "video_loss") > 0.1


def test_data_share_grows_with_n_under_fifo_and_fq(report: Path):
    rows = _rows(report / "testbed.csv")
    for q in ("fifo", "drr"):
        assert _get(rows, q, 20, "data_share_mbps") > _get(rows, q, 1, "data_share_mbps")


def test_sqf_protects_a_peak_rate_limited_video_against_one_download(report: Path):
    rows = _rows(report / "testbed_paced_video.csv")
    for n in (1,):
        assert _get(rows, "sqf", n, "video_loss") < 1e-3
        assert _get(rows, "sqf", n, "video_loss") < _get(rows, "drr", n, "video_loss")
        assert _get(rows, "sqf", n, "video_loss") < _get(rows, "fifo", n, "video_loss")



# The two trends below held with the earlier trace (GOP 60, VBV 10 Mbit) and no longer hold with
# the MPEG-2-like one (GOP 15, MP@ML VBV): its 190-kB I frames come four times as often, so the
# 8 Mbit/s-limited sender spends ~40 % of the time at its peak instead of ~15 %, and SQF
# de-prioritises it against five downloads whose backlogs our ACK-clocked TCP keeps at one or two
# packets (sqf_reading.md, points 1 and 2). strict: if they start to hold, this fails and the
# reading must be revised.
@pytest.mark.xfail(strict=True, reason="not reproduced with the MPEG-2-like trace; see sqf_reading.md")
def test_sqf_protects_a_peak_rate_limited_video_against_five_downloads(report: Path):
    rows = _rows(report / "testbed_paced_video.csv")
    assert _get(rows, "sqf", 5, "video_loss") < 1e-3


@pytest.mark.xfail(strict=True, reason="not reproduced with the MPEG-2-like trace; see sqf_reading.md")
def test_source_jitter_threshold_on_10mbps(report: Path):
    rows = [r for r in _rows(report / "fig8_jitter.csv") if r["access_rate"] == "10Mbps"]
    loss = {float(r["delta_ms"]): float(r["video_loss"]) for r in rows}
    assert loss[0.0] < 1e-3
    assert max(v for d, v in loss.items() if d >= 5) > 0.01
