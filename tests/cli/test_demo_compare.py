"""`qoelab demo`: the demo scenario under each queue discipline side by side (issue 40 item 6)."""

from __future__ import annotations

import csv
import json
import math
import tomllib
from pathlib import Path

import pytest

from qoelab import demo
from qoelab.cli import _load, main


def test_demo_writes_the_comparison_of_every_mechanism(tmp_path: Path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "-o", str(out), "--set", "sim.duration=4s", "--no-decode"]) == 0
    text = capsys.readouterr().out
    for m in demo.MECHANISMS:
        assert m.label in text
        run = json.loads((out / "compare" / m.name / "summary.json").read_text())
        assert run["duration_s"] == 4.0  # the user's --set reaches every mechanism's run
    rows = list(csv.DictReader((out / "comparison.csv").open()))
    assert [r["mechanism"] for r in rows] == [m.name for m in demo.MECHANISMS]
    assert "video_psnr_db" not in rows[0]  # no decode, no PSNR column
    doc = json.loads((out / "comparison.json").read_text())
    assert all("trace" not in r for r in doc)
    assert (out / "comparison.png").stat().st_size > 10_000
    assert (out / "flows.parquet").is_file()  # the demo scenario's own run stays where it was


def test_only_the_bottleneck_queue_differs(tmp_path: Path):
    # The same seed, flows and links; the bottleneck's discipline is the one change, so a
    # flow-isolating scheduler keeps the low-rate video's loss below drop-tail's.
    rows = demo.compare(tmp_path, lambda: _load("demo", ["sim.duration=12s"]), decode=False, log=lambda m: None)
    by = {r["mechanism"]: r for r in rows}
    first = tomllib.loads((tmp_path / demo.MECHANISMS[0].name / "scenario.toml").read_text())
    for m in demo.MECHANISMS:
        sc = tomllib.loads((tmp_path / m.name / "scenario.toml").read_text())
        assert sc["links"][demo.BOTTLENECK]["queue"] == m.queue
        assert sc["sim"] == first["sim"]
        # Only the mechanism's own flow keys (DiffServ's marking) differ.
        assert [{k: v for k, v in f.items() if k not in m.flow_sets.get(f["name"], {})} for f in sc["flows"]] == \
            first["flows"]
        assert [x for i, x in enumerate(sc["links"]) if i != demo.BOTTLENECK] == \
            [x for i, x in enumerate(first["links"]) if i != demo.BOTTLENECK]
    assert by["fq_codel"]["video_loss_pct"] < by["fifo"]["video_loss_pct"]
    assert by["diffserv_ef"]["video_loss_pct"] == 0.0  # EF is served first and has its own band
    assert all(0 < r["downloads_goodput_mbps"] <= 10.0 and 0 < r["downloads_jain"] <= 1 for r in rows)


def test_a_demo_without_the_video_flow_is_a_clear_error(tmp_path: Path):
    from qoelab.errors import QoelabError

    with pytest.raises(QoelabError, match="no flow named 'video'"):
        demo.compare(tmp_path, lambda: _load("demo", ["sim.duration=1s", "flows[0].name=clip"]), decode=False,
                     log=lambda m: None)


def test_the_psnr_comes_from_a_real_decode(tmp_path: Path):
    mech = tuple(m for m in demo.MECHANISMS if m.name in ("fifo", "fq_codel"))
    rows = demo.compare(tmp_path, lambda: _load("demo", ["sim.duration=12s"]), mechanisms=mech, log=lambda m: None)
    psnr = {r["mechanism"]: r["video_psnr_db"] for r in rows}
    assert all(math.isfinite(v) and 10 < v < 60 for v in psnr.values())
    # FQ-CoDel loses almost nothing of the video here; drop-tail loses frames the decoder conceals.
    assert psnr["fq_codel"] > psnr["fifo"]
    assert (tmp_path / "video" / "cif_bbb_qp26.h264").is_file()


def test_a_renamed_video_flow_is_a_clear_error_not_a_traceback(tmp_path: Path, capsys):
    assert main(["demo", "-o", str(tmp_path / "d"), "--set", "sim.duration=1s", "--set", "flows[0].name=clip",
                 "--no-decode"]) == 2
    assert "needs one flow named 'video'" in capsys.readouterr().err
