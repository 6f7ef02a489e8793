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
    for f in ("report.md", "testbed.csv", "testbed_paced_video.csv", "fig8_jitter.csv", "model_check.csv", "sensitivity.csv",
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



def _sens(report: Path, source: str, tcp: str) -> dict[int, float]:
    return {int(r["n"]): float(r["video_loss"]) for r in _rows(report / "sensitivity.csv")
            if r["video_source"] == source and r["tcp"] == tcp}


def test_sensitivity_smooth_video_is_protected_for_every_n_and_tcp_variant(report: Path):
    """The paper's headline for a video that never queues two packets: CBR at 5 Mbit/s."""
    ns = set(sqf.plan(True).sens_n)
    for tcp, _ in sqf.SENS_TCP:
        loss = _sens(report, "CBR 5 Mbit/s", tcp)
        assert set(loss) == ns and max(loss.values()) < 1e-3, (tcp, loss)
    assert _sens(report, "CBR 5 Mbit/s", "no downloads") == {0: 0.0}


def test_sensitivity_sqf_compares_bytes_so_tcp_aggregates_keep_the_video_shortest(report: Path):
    """With 64 kB TCP aggregates (GRO) a Poisson or peak-limited video always has fewer bytes
    queued than any active download, so SQF protects it for every n; with MTU segments the same
    Poisson video is de-prioritised at n = 20 (a scheduler counting packets, or serving the
    longest queue, would fail one of the two)."""
    gro = next(t for t, _ in sqf.SENS_TCP if "GRO" in t)
    mtu = sqf.SENS_TCP[0][0]
    for src in ("Poisson 5 Mbit/s", f"trace, peak {sqf.SMOOTH_PEAK}"):
        assert max(_sens(report, src, gro).values()) < 1e-3, src
    assert _sens(report, "Poisson 5 Mbit/s", mtu)[20] > 0.5


def test_sensitivity_frame_paced_trace_overflows_the_line_by_itself(report: Path):
    """The reading's claim that the bundled frame-paced sender loses video with no competing
    traffic at all (its I-frames leave at ~45 Mbit/s into 10 Mbit/s)."""
    assert _sens(report, "trace, frame-paced", "no downloads")[0] > 0.1


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


def test_committed_report_carries_the_current_reading():
    # The reading is prose about the full run, kept in sqf_reading.md and appended to every
    # report; the committed expected/report.md once kept an older version of it after the
    # reading was revised.
    from qoelab import paths

    reading = (Path(sqf.__file__).with_name("sqf_reading.md")).read_text()
    committed = (paths.root() / "scenarios" / "sqf" / "expected" / "report.md").read_text()
    assert reading.strip() in committed, "scenarios/sqf/expected/report.md is stale: re-run `qoelab reproduce sqf` and copy it"


def test_report_json_is_strict(report: Path, strict_json_tree):
    """summary.json and every run's JSON are strict JSON of native types (issue 22 item 6)."""
    assert strict_json_tree(report) >= 1
